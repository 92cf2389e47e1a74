#!/bin/sh
# flashref hunt end to end (docs/verifier.md, "The hunt"): a capped hunt of a mutant writes findings.markdown/.json and the
# shrunk case of each cluster and exits 1; usage errors exit 2; SIGINT during a persistent runner's case ends the
# hunt at once with exit 130, the runner and its children gone, no temporary folder left, nothing under --out.
# Usage: cli_hunt.sh FLASHREF SCRIPTS_DIR
fl=$1 scripts=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/log" ] && tail -20 "$tmp/log"; exit 1; }

"$fl" hunt --impl mutant:gqa-mod --budget 0 --max-draws 20 --seed 3 --max-shrink 1 --out "$tmp/out" -q >"$tmp/log" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "mutant hunt: exit $rc (expected 1: findings)"
grep -q "FAIL gqa-map" "$tmp/log" || fail "no gqa-map cluster"
grep -q '"flashref-hunt/1"' "$tmp/out/findings.json" || fail "findings.json"
grep -q '^# flashref hunt: mutant:gqa-mod' "$tmp/out/findings.markdown" || fail "findings.markdown"
[ -f "$tmp/out/cluster_1/case/case.json" ] && [ -d "$tmp/out/cluster_1/case/golden" ] || fail "cluster_1/case"
ls -a "$tmp/out" | grep -q '^\.hunt-' && fail "staging folder left in --out"

for bad in "--budget 0" "--budget 5x" "--max-draws 0" "--seed -1" "--bogus 1"; do
  # shellcheck disable=SC2086
  "$fl" hunt --impl mutant:gqa-mod $bad >"$tmp/log" 2>&1
  rc=$?
  [ $rc -eq 2 ] || fail "hunt $bad: exit $rc (expected 2)"
done
"$fl" hunt --budget 1 >"$tmp/log" 2>&1; [ $? -eq 2 ] || fail "no --impl: expected exit 2"

# SIGINT while a persistent runner hangs in its first case.
mkdir "$tmp/t" "$tmp/out2"
cp "$scripts/hang.sh" "$tmp/hang_$$.sh"
TMPDIR="$tmp/t" "$fl" hunt --impl "persistent:sh $tmp/hang_$$.sh" --budget 60 --seed 1 --out "$tmp/out2" -q \
  >"$tmp/log" 2>&1 &
pid=$!
sleep 3
kill -INT $pid
t0=$(date +%s)
wait $pid
rc=$?
[ $rc -eq 130 ] || fail "SIGINT: exit $rc (expected 130)"
[ $(( $(date +%s) - t0 )) -lt 20 ] || fail "SIGINT: the hunt waited for the case"
sleep 1
ps -eo args | grep -v grep | grep -q "hang_$$.sh" && fail "SIGINT: the runner outlived the hunt"
[ -z "$(ls -A "$tmp/t")" ] || fail "SIGINT: temporary files left: $(ls -A "$tmp/t")"
[ -z "$(ls -A "$tmp/out2")" ] || fail "SIGINT: files under --out: $(ls -A "$tmp/out2")"
echo "cli_hunt: PASS"
