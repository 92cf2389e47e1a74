#!/bin/sh
# The hostile corpus, part 2 (issue 28: what a newcomer and an attacker broke): each check runs the flashref command
# as run_hostile.sh does (lib.sh: exit status, message, the sentinel folder outside the temporary area unchanged, no
# temporary directory or process left behind).
# usage: run_integrity.sh FLASHREF PLUGIN_DIR RUNNER_DIR
F=$1; PLUG=$2; RUN=$3
HERE=$(cd "$(dirname "$0")" && pwd)
export FR_HOSTILE_LIB="$HERE/lib.sh"
. "$FR_HOSTILE_LIB"
hostile_setup || exit 1
export FR_HOSTILE_FLASHREF="$F"
Q="--set quick"
ONE="--filter eq_fp32_bnsd"   # one small fp32 case
C="$BASE/cases"
"$F" golden --out "$C" --layout BNSD --dtype fp32 --B 1 --N1 2 --S1 8 --S2 8 --D 8 --name small >/dev/null 2>&1 ||
    { echo "FAIL: golden failed"; exit 1; }
rm -f "$C/small/attention_out.npy" "$C/small/softmax_max.npy" "$C/small/softmax_sum.npy"

# ---- row 2: outputs are never written through a link, case folders never merged ---------------------------------
# run: a symbolic link in place of an output file (to a file outside) is refused before computing, its target kept.
cp -r "$C/small" "$C/link_out" && ln -s "$FR_HOSTILE_OUTSIDE/secret.npy" "$C/link_out/attention_out.npy"
go row2-run-output-symlink 2 run "$C/link_out" --engine fast; has "attention_out.npy: is a symbolic link"
[ -L "$C/link_out/attention_out.npy" ] || fail "the link was replaced"
go row2-run-out-symlink 2 run "$C/small" --engine golden --out "$C/link_out"; has "is a symbolic link"
# run: a hard link in place of an output file: the run writes a new file, the other name keeps its content.
cp -r "$C/small" "$C/hard_out" && ln "$FR_HOSTILE_OUTSIDE/secret.npy" "$C/hard_out/softmax_max.npy" 2>/dev/null &&
{ go row2-run-output-hardlink 0 run "$C/hard_out" --engine fast
  [ "$(stat -c %h "$FR_HOSTILE_OUTSIDE/secret.npy")" = 1 ] || fail "the hard link still shares the outside file"; }
# golden PARAMETERS: DIR/<name> a symbolic link to a folder outside: refused, nothing written there.
mkdir -p "$BASE/g1" && ln -s "$FR_HOSTILE_OUTSIDE/keep" "$BASE/g1/one"
go row2-golden-case-symlink 2 golden --out "$BASE/g1" --name one --S1 4 --S2 4 --D 8; has "is a symbolic link"
go row2-golden-case-symlink-force 2 golden --out "$BASE/g1" --name one --S1 4 --S2 4 --D 8 --force
has "is a symbolic link"; [ -f "$FR_HOSTILE_OUTSIDE/keep/precious.txt" ] || fail "the linked folder lost its file"
# golden PARAMETERS: DIR/<name> holding a stale file: refused (never merged); --force replaces it.
mkdir -p "$BASE/g2/one" && echo stale > "$BASE/g2/one/dq.npy"
go row2-golden-case-stale 2 golden --out "$BASE/g2" --name one --S1 4 --S2 4 --D 8; has "not empty"; has "--force"
go row2-golden-case-force 0 golden --out "$BASE/g2" --name one --S1 4 --S2 4 --D 8 --force
[ ! -e "$BASE/g2/one/dq.npy" ] && [ -f "$BASE/g2/one/attention_out.npy" ] || fail "--force did not replace the case"
# golden --set: DIR must be new or empty; a case folder (or a file in one) that is a link to outside: refused
# without --force; with --force the links are removed, never followed, and the set is written.
mkdir -p "$BASE/g3" && ln -s "$FR_HOSTILE_OUTSIDE/keep" "$BASE/g3/eq_fp32_bnsd_mha"
go row2-golden-set-nonempty 2 golden --set quick --only eq_fp32_bnsd --out "$BASE/g3"; has "not empty"
mkdir -p "$BASE/g3/x" && ln -s "$FR_HOSTILE_OUTSIDE/secret.npy" "$BASE/g3/x/query.npy"
go row2-golden-set-force 0 golden --set quick --only eq_fp32_bnsd --out "$BASE/g3" --force
[ ! -L "$BASE/g3/eq_fp32_bnsd_mha" ] && [ -f "$BASE/g3/eq_fp32_bnsd_mha/golden/attention_out.npy" ] &&
    [ ! -e "$BASE/g3/x" ] || fail "--force: the set was not written in place of the links"
[ -f "$FR_HOSTILE_OUTSIDE/keep/precious.txt" ] || fail "--force followed a link"
ln -s "$FR_HOSTILE_OUTSIDE/keep" "$BASE/g4"
go row2-golden-set-dir-symlink 2 golden --set quick --only eq_fp32_bnsd --out "$BASE/g4"; has "is a symbolic link"
# suite --write: the same rule.
mkdir -p "$BASE/w1" && echo stale > "$BASE/w1/old_case"
go row2-suite-write-nonempty 2 suite $Q $ONE --write "$BASE/w1"; has "not empty"
go row2-suite-write-force 0 suite $Q $ONE --write "$BASE/w1" --force
[ ! -e "$BASE/w1/old_case" ] && [ -d "$BASE/w1/eq_fp32_bnsd_mha" ] || fail "--write --force did not replace"
ln -s "$FR_HOSTILE_OUTSIDE/keep" "$BASE/w2"
go row2-suite-write-symlink 2 suite $Q $ONE --write "$BASE/w2"; has "is a symbolic link"

# ---- row 17: a 5M-entry prefix in a mode-0 case.json (10 MB, 450 MB to parse) was accepted ----------------------
# with_prefix N OUT: the small case's case.json with an N-entry prefix
with_prefix() {
    awk -v n="$1" '/"prefix":/ { printf "\t\t\"prefix\":\t["; for (i = 0; i < n; i++) printf "%s0", (i ? "," : "")
                                 print "],"; next } { print }' "$C/small/case.json" > "$2"
}
cp -r "$C/small" "$C/big_prefix" && with_prefix 5000000 "$C/big_prefix/case.json"
[ "$(stat -c %s "$C/big_prefix/case.json")" -gt 10000000 ] || fail "the 5M-entry case.json was not made"
go row17-prefix-5m 2 case check "$C/big_prefix"; has "larger than the limit"
cp -r "$C/small" "$C/long_prefix" && with_prefix 3000 "$C/long_prefix/case.json"
go row17-prefix-3000 2 case check "$C/long_prefix"; has "prefix: 3000 entries, more than any valid case has"
go row17-prefix-3000-run 2 run "$C/long_prefix" --engine fast; has "3000 entries"

# ---- row 1: whoever writes outputs into a case must not decide its golden ---------------------------------------
# zero_npy SRC DST DESCR ITEMSIZE: DST is an all-zero .npy of SRC's shape in DESCR
zero_npy() {
    shape=$(head -c 200 "$1" | tr -d '\000' | grep -ao "'shape': ([^)]*)" | sed "s/'shape': //")
    n=$(echo "$shape" | tr -d '() ' | sed 's/,$//; s/,/*/g')
    rm -f "$2"; mknpy "$2" "$3" "$shape" $(($n * $4))
}
W="$BASE/w_golden"; "$F" suite $Q $ONE --write "$W" >/dev/null 2>&1 || fail "suite --write failed"
CS="$W/eq_fp32_bnsd_mha"
for o in attention_out softmax_max softmax_sum; do
    zero_npy "$CS/golden/$o.npy" "$CS/$o.npy" '<f4' 4
    zero_npy "$CS/golden/$o.npy" "$CS/golden/$o.npy.z" '<f8' 8 && mv "$CS/golden/$o.npy.z" "$CS/golden/$o.npy"
done
go row1-zero-golden 2 verify "$CS"; has "input-error"; has "golden/attention_out.npy"; has "not this case's golden"
hasnt "^PASS"
cp -r "$C/small" "$C/gold_link" && mkdir -p "$C/gold_link/golden"
for o in attention_out softmax_max softmax_sum; do cp "$C/small/$o.npy" "$C/gold_link/golden/" 2>/dev/null; done
"$F" run "$C/small" --engine golden --out "$C/gold_link/golden" >/dev/null 2>&1 || fail "run --engine golden failed"
"$F" run "$C/small" --engine fast --out "$C/gold_link" >/dev/null 2>&1 || fail "run --engine fast failed"
rm "$C/gold_link/golden/attention_out.npy" && ln -s "$FR_HOSTILE_OUTSIDE/secret.npy" "$C/gold_link/golden/attention_out.npy"
go row1-golden-symlink-out 2 verify "$C/gold_link"; has "outside the case directory"; hasnt "^PASS"

# ---- row 12: an invalid case is the input's error (exit 2, the field named), not a FAIL blamed on the golden -------
cp -r "$C/small" "$C/heads3" && sed -i 's/"head_num":\t*2,/"head_num": 3,/' "$C/heads3/case.json"
go row12-verify-head-num 2 verify "$C/heads3"; has "head_num"; has "input-error"; hasnt "suite defect"
cp -r "$C/small" "$C/scale_inf" && sed -i 's/"scale_value":\t*[0-9.e-]*,/"scale_value": 1e400,/' "$C/scale_inf/case.json"
go row12-verify-scale 2 verify "$C/scale_inf"; has "scale_value"; hasnt "suite defect"

# ---- row 15: an external runner's output of the wrong shape or dtype is diagnosed `shape`, not error-status --------
FR_HOSTILE_HUGE_SHAPE='(3, 3)' FR_HOSTILE_HUGE_BYTES=36 \
    go row15-wrong-shape 1 suite --impl exec:"sh $RUN/huge_out.sh" $Q $ONE; has "] shape: FR_E_OUTPUT: shape: exec: attention_out.npy: shape \[3,3\]"
go row15-wrong-dtype 1 suite --impl exec:"sh $RUN/wrong_dtype.sh" $Q $ONE; has "] shape: FR_E_OUTPUT: shape: exec: attention_out.npy: dtype fp64"
go row15-wrong-dtype-persistent 1 suite --impl persistent:"sh $RUN/p_answer.sh wrong_dtype" $Q $ONE; has "] shape: FR_E_OUTPUT: shape: persistent: attention_out.npy: dtype fp64"

# ---- row 5: a persistent runner's answers are paired with its cases ---------------------------------------------
TWO="--filter eq_fp32"
go row5-echo-ok 0 suite --impl persistent:"sh $RUN/p_protocol.sh echo" $Q $TWO
go row5-status-before-reading 1 suite --impl persistent:"sh $RUN/p_protocol.sh early" $Q $TWO
has "protocol error: a 'flashref-status: 0' line came before case"; hasnt "^PASS"
go row5-answered-twice 1 suite --impl persistent:"sh $RUN/p_protocol.sh twice" $Q $TWO; has "was answered 2 times"
go row5-other-case 1 suite --impl persistent:"sh $RUN/p_protocol.sh other" $Q $TWO; has "the answer names case /tmp/not-"

# ---- row 6: a runner that segfaults is a crash naming SIGSEGV, not "error-status: exit status 139" ----------------
go row6-exec-segv 1 suite --impl exec:"sh $RUN/segv.sh" $Q $ONE; has "] crash: .*SIGSEGV"; hasnt "exit status 139"
go row6-exec-segv-compound 1 suite --impl exec:"true && sh $RUN/segv.sh" $Q $ONE; has "] crash: .*SIGSEGV"
go row6-persistent-segv 1 suite --impl persistent:"sh $RUN/segv.sh" $Q $ONE; has "] crash: .*SIGSEGV"

# ---- row 17: a plugin's failure in its own words; "flashref-status: 0abc" is no status 0 ---------------------------
go row17-plugin-crash-words 1 suite --impl plugin:"$PLUG/hostile_crash.so" $Q $ONE
has "plugin worker ended before finishing the case"; hasnt "status line"; hasnt "no stdout"
go row17-status-0abc 1 suite --impl persistent:"sh $RUN/p_protocol.sh 0abc" $Q $ONE; has "malformed status line"
hasnt "^PASS"

# ---- row 11: --promote FILE (a regular file) ran every draw, then exited 2 "cannot create directory" -------------
touch "$BASE/promfile"
LIMIT=60 go row11-promote-file 2 suite --impl golden --random 3 --promote "$BASE/promfile" --json r.json
has "--promote"; has "exists and is not a directory"; hasnt "random draws"; [ ! -e "$T/r.json" ] || fail "JSON written"

hostile_end "hostile corpus (issue 28)"
