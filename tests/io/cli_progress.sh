#!/bin/sh
# The progress line of a long `flashref run` / `flashref golden` (issue 28 row 14: a 16-minute golden run was silent,
# also on a terminal): on a terminal (here: `script`) a line "flashref run: golden fwd: 12.3% (1 of 94 blocks), ...
# left" redrawn in place and cleared at the end; FLASHREF_PROGRESS=1: plain lines into a file; stderr not a terminal:
# nothing; FLASHREF_PROGRESS=0: nothing even on a terminal. The outputs are the same with and without it.
# usage: cli_progress.sh FLASHREF
F=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
P="--S1 6000 --S2 6000 --D 64 --N1 2"   # about 2 s of golden on one thread: past the first second
FLASHREF_PROGRESS=1 "$F" golden --out "$T" --name c $P >/dev/null 2>"$T/g.txt" || { echo "FAIL: golden"; exit 1; }
grep -q "flashref golden: fwd: .*% (.* of .* blocks), .* blocks/s, .* spent, about .* left" "$T/g.txt" ||
    { echo "FAIL: golden with FLASHREF_PROGRESS=1: no progress line"; cat "$T/g.txt"; fail=1; }
FLASHREF_PROGRESS=1 "$F" run "$T/c" --engine golden --threads 1 --out "$T/o1" 2>"$T/f.txt" || fail=1
grep -q "flashref run: golden fwd: .*% (.* of 94 blocks)" "$T/f.txt" ||
    { echo "FAIL: FLASHREF_PROGRESS=1: no progress line"; cat "$T/f.txt"; fail=1; }
grep -q "$(printf '\r')" "$T/f.txt" && { echo "FAIL: FLASHREF_PROGRESS=1 wrote a carriage return"; fail=1; }
"$F" run "$T/c" --engine golden --threads 1 --out "$T/o2" 2>"$T/n.txt" || fail=1
[ ! -s "$T/n.txt" ] || { echo "FAIL: stderr not a terminal: something was printed"; cat "$T/n.txt"; fail=1; }
cmp -s "$T/o1/attention_out.npy" "$T/o2/attention_out.npy" && cmp -s "$T/c/attention_out.npy" "$T/o2/attention_out.npy" ||
    { echo "FAIL: the outputs differ with a progress line"; fail=1; }
if command -v script >/dev/null 2>&1; then
    script -qec "\"$F\" run \"$T/c\" --engine golden --threads 1 --out \"$T/o3\"" /dev/null >"$T/t.txt" 2>&1 || fail=1
    grep -q "$(printf '\r')flashref run: golden fwd: .*blocks/s" "$T/t.txt" ||
        { echo "FAIL: on a terminal: no progress line"; od -c "$T/t.txt" | head; fail=1; }
    tail -c 20 "$T/t.txt" | grep -q "$(printf '\033')\[K" || { echo "FAIL: on a terminal: the line was not cleared"; fail=1; }
    FLASHREF_PROGRESS=0 script -qec "\"$F\" run \"$T/c\" --engine golden --threads 1 --out \"$T/o4\"" /dev/null \
        >"$T/z.txt" 2>&1 || fail=1
    grep -q "blocks" "$T/z.txt" && { echo "FAIL: FLASHREF_PROGRESS=0 on a terminal printed a line"; fail=1; }
else
    echo "SKIP (loudly): no 'script' command (util-linux): the terminal case is not checked"
fi
# flashref suite into a log (issue 28 row 17: nothing was printed during a suite when stderr was not a terminal): a
# plain "N of M cases done" line at most every 30 s; FLASHREF_PROGRESS=1 every second (the 30 s default is not
# waited for here); a short run into a pipe prints none; --quiet none either.
FLASHREF_PROGRESS=1 "$F" suite --set quick --filter eq_ >/dev/null 2>"$T/s1.txt"
grep -q "^flashref: [0-9]* of [0-9]* cases done, [0-9]* FAIL so far" "$T/s1.txt" ||
    { echo "FAIL: suite with FLASHREF_PROGRESS=1: no progress line"; cat "$T/s1.txt"; fail=1; }
FLASHREF_PROGRESS=1 "$F" suite --set quick --filter eq_ --quiet >/dev/null 2>"$T/s2.txt"
grep -q "cases done" "$T/s2.txt" && { echo "FAIL: suite --quiet printed progress"; fail=1; }
"$F" suite --set quick --filter eq_fp32 >/dev/null 2>"$T/s3.txt"
grep -q "cases done" "$T/s3.txt" && { echo "FAIL: a short suite into a pipe printed progress"; fail=1; }
[ $fail = 0 ] && echo "cli_progress: PASS" || echo "cli_progress: FAIL"
exit $fail
