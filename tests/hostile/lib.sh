# Shell helpers of the hostile corpus (sourced by run_hostile.sh and run_integrity.sh): hostile_setup makes the
# temporary area and the sentinel folder outside it; go runs one check and asserts the containment invariants.

# mknpy FILE DESCR SHAPE DATA_BYTES: a version 1.0 .npy header for DESCR and SHAPE (a Python tuple, e.g. "(3, 3)"),
# followed by DATA_BYTES zero bytes made with truncate (sparse: a 4 GB file costs no disk).
mknpy() {
    dict="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
    len=$((${#dict} + 1))
    total=$(( (10 + len + 63) / 64 * 64 ))
    hl=$((total - 10))
    pad=$((hl - len))
    lo=$((hl % 256)); hi=$((hl / 256))
    {
        printf '\223NUMPY\001\000'
        printf "\\$(printf %o $lo)\\$(printf %o $hi)"
        printf '%s' "$dict"
        printf "%${pad}s" ''
        printf '\n'
    } > "$1"
    truncate -s $((total + $4)) "$1"
}

# hostile_setup: BASE (the run's temporary area), FR_HOSTILE_OUTSIDE (the sentinel folder beside it, whose files'
# checksums every check compares), PY, the counters. F (the flashref command) must be set.
hostile_setup() {
    BASE=$(mktemp -d "${TMPDIR:-/tmp}/fr-hostile-XXXXXX") || return 1
    export FR_HOSTILE_OUTSIDE="$BASE/outside"
    mkdir -p "$FR_HOSTILE_OUTSIDE/keep" && echo "do not delete" > "$FR_HOSTILE_OUTSIDE/keep/precious.txt"
    mknpy "$FR_HOSTILE_OUTSIDE/secret.npy" '<f4' '(2, 8)' 64
    SUMS0=$(sums)
    PY=${FLASHREF_PYTHON:-python3}
    command -v "$PY" >/dev/null 2>&1 || PY=python3
    failures=0; checks=0
}
# hostile_end TITLE: removes the temporary area, prints the count, fails when a check did.
hostile_end() {
    rm -rf "$BASE"
    echo "$1: $checks checks, $failures failures"
    [ $failures = 0 ]
}
sums() { find "$FR_HOSTILE_OUTSIDE" -type f -exec cksum {} + | sort; }
fail() { echo "FAIL [$NAME]: $*"; failures=$((failures + 1)); }

# go NAME EXPECTED_RC ARGS...: runs flashref ARGS in a fresh TMPDIR; output in $OUT; checks the exit status and the
# containment invariants. LIMIT (seconds, default 240) bounds the run.
go() {
    NAME=$1; want=$2; shift 2
    checks=$((checks + 1))
    T="$BASE/t$checks"; mkdir -p "$T/tmp"
    TOKEN="fr-hostile-$$-$checks"
    OUT="$T/out.txt"
    (cd "$T" && env TMPDIR="$T/tmp" FR_HOSTILE_TOKEN="$TOKEN" timeout -s KILL "${LIMIT:-240}" "$F" "$@") > "$OUT" 2>&1
    rc=$?
    [ "$rc" = "$want" ] || fail "exit status $rc, expected $want: $(tail -c 600 "$OUT")"
    left=$(ls -A "$T/tmp")
    [ -z "$left" ] || fail "temporary directories left behind: $left"
    [ "$(sums)" = "$SUMS0" ] || fail "the folder outside the temporary area changed"
    live=""
    for e in /proc/[0-9]*/environ; do
        grep -qa "FR_HOSTILE_TOKEN=$TOKEN" "$e" 2>/dev/null && live="$live ${e#/proc/}"
    done
    [ -z "$live" ] || fail "processes of the run still alive: $(echo "$live" | sed 's|/environ||g')"
    echo "ok   [$NAME] exit $rc"
}
has() { grep -q -- "$1" "$OUT" || fail "output lacks '$1': $(tail -c 600 "$OUT")"; }
hasnt() { ! grep -q -- "$1" "$OUT" || fail "output has '$1'"; }
json_ok() { "$PY" -c 'import json,sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$1" 2>"$T/py.txt" \
                || fail "$1 is not valid UTF-8 JSON: $(cat "$T/py.txt")"; }
utf8_ok() { "$PY" -c 'import sys; open(sys.argv[1], encoding="utf-8").read()' "$1" 2>"$T/py.txt" \
                || fail "$1 is not valid UTF-8: $(cat "$T/py.txt")"; }
