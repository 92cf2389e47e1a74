#!/bin/sh
# The hostile corpus (docs/verifier.md): one check per containment failure found and per hostile case since. Each check
# runs the flashref command under `timeout`, then asserts its exit status and message, that the sentinel folder
# outside the temporary area is unchanged, that no temporary case directory is left in TMPDIR, and that no process
# started by the run is still alive (every run carries FR_HOSTILE_TOKEN in its environment; /proc is searched for it).
# usage: run_hostile.sh FLASHREF PLUGIN_DIR RUNNER_DIR
F=$1; PLUG=$2; RUN=$3
HERE=$(cd "$(dirname "$0")" && pwd)
export FR_HOSTILE_LIB="$HERE/lib.sh"
. "$FR_HOSTILE_LIB"
hostile_setup || exit 1
# An AddressSanitizer build reserves terabytes of address space (no ulimit -v) and reports a plugin's SIGSEGV itself
# (the worker then exits 1 instead of dying by the signal).
ASAN=""; grep -qa "__asan_init" "$F" && ASAN=1
Q="--set quick"
ONE="--filter eq_fp32_bnsd"   # one small fp32 case
TWO="--filter eq_fp32"        # two

# ---- row 1: a plugin that segfaults: FAIL crash, the case named, summary, JSON and HTML written -------------------
go row1-plugin-segv 1 suite --impl plugin:"$PLUG/hostile_crash.so" $Q $TWO --json r.json --report r.html
has "FAIL *eq_fp32_bnsd_mha"; has "crash"; has "verification summary"; [ -n "$ASAN" ] || has "SIGSEGV"
json_ok "$T/r.json"; [ -s "$T/r.html" ] || fail "no HTML report"

# ---- row 2: a plugin that calls exit(0): FAIL crash, never exit 0 --------------------------------------------------
go row2-plugin-exit0 1 suite --impl plugin:"$PLUG/hostile_exit0.so" $Q $TWO --json r.json
has "crash"; has "exit status 0"; has "verification summary"; json_ok "$T/r.json"

# ---- row 3: a plugin that hangs: FAIL timeout per case, the run goes on -------------------------------------------
go row3-plugin-hang 1 suite --impl plugin:"$PLUG/hostile_hang.so" $Q $TWO --timeout 1
has "timeout"; has "verification summary"
[ "$(grep -c 'FAIL *eq_fp32.*timeout' "$OUT")" = 2 ] || fail "expected both cases to FAIL (timeout)"

# ---- row 4: a FIFO as an output: refused without blocking, the temp dir removed ------------------------------------
go row4-fifo-output 1 suite --impl exec:"sh $RUN/fifo_out.sh" $Q $ONE --timeout 20
has "attention_out.npy: not a regular file"

# ---- row 5: the runner swaps its case dir for a symlink to another folder: that folder survives ------------------
go row5-swap-symlink 1 suite --impl exec:"sh $RUN/swap_symlink.sh" $Q $ONE
[ -f "$FR_HOSTILE_OUTSIDE/keep/precious.txt" ] || fail "the outside folder lost its contents"

# ---- row 6: background children (plain, setsid, double fork) and a late writer are gone with the case ------------
go row6-bg-children 3 suite --impl exec:"sh $RUN/bg_children.sh" $Q $TWO
go row6-late-writer 3 suite --impl exec:"sh $RUN/late_writer.sh" $Q $ONE
sleep 2; [ -z "$(ls -A "$T/tmp")" ] || fail "a late writer recreated a temporary directory"

# ---- row 7: non-UTF-8 stderr: JSON loads with a strict parser, HTML is UTF-8 --------------------------------------
go row7-bad-utf8 1 suite --impl exec:"sh $RUN/bad_utf8.sh" $Q $ONE --json r.json --report r.html
json_ok "$T/r.json"; utf8_ok "$T/r.html"; grep -q 'bad bytes: \\\\xFF\\\\xFE' "$T/r.json" || fail "invalid bytes not escaped in JSON"

# ---- row 8: the stderr tail keeps the last lines ----------------------------------------------------------------
go row8-tail-last-lines 1 suite --impl exec:"sh $RUN/many_lines.sh" $Q $ONE --json r.json
has "THE REAL ERROR: device 0 is not responding"; grep -q "THE REAL ERROR" "$T/r.json" || fail "JSON lacks the last line"

# ---- row 9: a stored golden of the wrong shape is that case's input error, with its path; the others are judged ---
R="$BASE/reg"; "$F" suite $Q $ONE --write "$R" >/dev/null 2>&1 || fail "suite --write failed"
mknpy "$R/eq_fp32_bnsd_mha/golden/attention_out.npy" '<f8' '(3, 3)' 72
go row9-golden-shape-suite 2 suite $Q $TWO --regression "$R"
has "golden/attention_out.npy: shape \[3,3\]"; has "PASS\|passed"; hasnt "FR_E_NOMEM"
grep -q "eq_fp32_pse1_bnss" "$OUT" || "$F" suite $Q $TWO --regression "$R" -v 2>&1 | grep -q "eq_fp32_pse1_bnss" \
    || fail "the other cases were not judged"
go row9-golden-shape-verify 2 verify "$R/eq_fp32_bnsd_mha"
has "golden/attention_out.npy: shape \[3,3\]"; hasnt "FR_E_NOMEM"

# ---- row 10: a FIFO as case.json or as an input: case check / run / verify refuse it at once ---------------------
C="$BASE/cases"; "$F" golden --out "$C" --layout BNSD --dtype fp32 --B 1 --N1 2 --S1 8 --S2 8 --D 8 --name small \
    >/dev/null 2>&1 || fail "golden failed"
mkdir -p "$C/fifo_json" && mkfifo "$C/fifo_json/case.json"
cp -r "$C/small" "$C/fifo_in" && rm "$C/fifo_in/query.npy" && mkfifo "$C/fifo_in/query.npy"
LIMIT=30 go row10-fifo-case-json 2 case check "$C/fifo_json"; has "not a regular file"
LIMIT=30 go row10-fifo-input-check 2 case check "$C/fifo_in"; has "query.npy: not a regular file"
LIMIT=30 go row10-fifo-input-run 2 run "$C/fifo_in" --engine fast --out "$T/o"; has "not a regular file"
LIMIT=30 go row10-fifo-input-verify 2 verify "$C/fifo_in"; has "not a regular file"

# ---- row 11: check before read: a 4 GB wrong-shaped output, S1 = 4194304, a 2 TB header -------------------------
# Without AddressSanitizer (which reserves terabytes of address space) the run gets 1.5 GB of address space: reading
# any of these whole would fail with NOMEM instead of the shape / limit message.
VLIM=""; [ -z "$ASAN" ] && VLIM="ulimit -v 1500000;"
F_REAL=$F; F=sh
go_v() { n=$1; w=$2; shift 2; go "$n" "$w" -c "$VLIM exec \"\$0\" \"\$@\"" "$F_REAL" "$@"; }
go_v row11-huge-output 1 suite --impl exec:"sh $RUN/huge_out.sh" $Q $ONE
has "attention_out.npy: shape \[1024,1024,1024\], expected"; hasnt "NOMEM"
cp -r "$C/small" "$C/huge_v" && mknpy "$C/huge_v/attention_out.npy" '<f4' '(1024, 1024, 1024)' 4294967296
go_v row11-huge-output-verify 1 verify "$C/huge_v"; has "attention_out: dtype fp32, expected dtype fp32 with 4 dims"
hasnt "NOMEM"
cp -r "$C/small" "$C/long_s1" && mknpy "$C/long_s1/query.npy" '<f4' '(1, 2, 4194304, 8)' 268435456
go_v row11-s1-limit 2 case check "$C/long_s1"; has "S1 = 4194304 exceeds 1048576"; hasnt "NOMEM"
go_v row11-s1-limit-run 2 run "$C/long_s1" --engine fast --out "$T/o"; has "S1 = 4194304 exceeds"
cp -r "$C/small" "$C/tera" && mknpy "$C/tera/query.npy" '<f4' '(1, 2, 8, 68719476736)' 0
go_v row11-2tb-header 2 case check "$C/tera"; hasnt "NOMEM"; has "query.npy"
FR_HOSTILE_HUGE_SHAPE='(1, 2, 1024, 68719476736)' FR_HOSTILE_HUGE_BYTES=0 \
    go_v row11-2tb-output 1 suite --impl exec:"sh $RUN/huge_out.sh" $Q $ONE
has "attention_out.npy"; hasnt "NOMEM"
F=$F_REAL

# ---- row 12: report paths are checked before the run, with the reason ------------------------------------------
mkdir -p "$BASE/ro" && chmod 555 "$BASE/ro"
if [ -w "$BASE/ro" ]; then
    echo "note [row12]: running as root: a read-only folder is writable to us; the missing-folder check stands in"
else
    go row12-json-readonly 2 suite $Q $ONE --json "$BASE/ro/s.json"; has "cannot write"; hasnt "verification summary"
fi
go row12-json-missing-dir 2 suite $Q $ONE --json "$BASE/nope/s.json"; has "No such file or directory"
hasnt "verification summary"
go row12-report-is-dir 2 suite $Q $ONE --report "$BASE"; has "is a directory"
chmod 755 "$BASE/ro"

# ---- row 13: golden --name cannot leave --out --------------------------------------------------------------------
go row13-name-escape 2 golden --out "$T/g" --name ../escape; has "--name"
[ ! -e "$T/escape" ] || fail "golden wrote outside --out"

# ---- row 14: out-of-range values are refused, not wrapped ---------------------------------------------------------
go row14-keep-prob-0 2 golden --out "$T/g" --keep-prob 0; has "--keep-prob"
go row14-seed-neg 2 golden --out "$T/g" --seed -1; has "--seed"
go row14-seed-2e64 2 golden --out "$T/g" --seed 18446744073709551616; has "--seed"
go row14-suite-seed-neg 2 suite $Q $ONE --seed -5; has "--seed"

# ---- row 15: a missing --regression folder and a directory as --history are input errors --------------------------
go row15-regression-missing 2 suite $Q $ONE --regression "$BASE/no-such-dir"; has "no-such-dir"
go row15-history-dir 2 suite $Q $ONE --history "$BASE"; has "is a directory"; hasnt "recorded in"

# ---- row 16: a symlink out of the case dir and a \u0000 in a file name are refused -------------------------------
cp -r "$C/small" "$C/link_out" && rm "$C/link_out/key.npy" && ln -s "$FR_HOSTILE_OUTSIDE/secret.npy" "$C/link_out/key.npy"
go row16-symlink-out 2 case check "$C/link_out"; has "outside the case directory"
cp -r "$C/small" "$C/nul_name" && sed -i 's/"query.npy"/"query.npy\\u0000.txt"/' "$C/nul_name/case.json"
go row16-nul-name 2 case check "$C/nul_name"; has "u0000"

# ---- row 17: a run that judged nothing exits 3 (or 0 with --allow-empty) -------------------------------------------
go row17-all-77 3 suite --impl exec:"sh $RUN/all77.sh" $Q $TWO; has "nothing was judged"
go row17-filter-typo 3 suite $Q --filter no-such-case; has "nothing was judged"
go row17-allow-empty 0 suite $Q --filter no-such-case --allow-empty

# ---- row 18 (contain's part): TMPDIR broken is an input error; the help documents timeout, exit statuses, env -----
checks=$((checks + 1)); NAME=row18-tmpdir
env TMPDIR=/nonexistent "$F" suite --impl exec:"sh $RUN/all77.sh" $Q $ONE > "$BASE/tmpdir.txt" 2>&1
rc=$?; [ $rc = 2 ] || fail "TMPDIR=/nonexistent: exit $rc, expected 2"
grep -q "/nonexistent" "$BASE/tmpdir.txt" || fail "TMPDIR message lacks the path"; echo "ok   [$NAME] exit $rc"
go row18-help 0 suite --help; has "FLASHREF_EXEC_TIMEOUT"; has "FLASHREF_KEEP_TMP"; has "--timeout"; has "3 nothing judged"
go row18-golden-failed-out 2 golden --out "$T/gfail" --N1 3 --N2 2
[ ! -e "$T/gfail" ] || fail "a failed golden left its --out directory"
go row18-no-temp-path 1 suite --impl exec:"sh $RUN/huge_out.sh" $Q $ONE; hasnt "flashref-case-"

# ---- mine: more an attacker would try ---------------------------------------------------------------------------
go mine-symlink-output 1 suite --impl exec:"sh $RUN/symlink_out.sh" $Q $ONE; has "symbolic link"
go mine-dir-output 1 suite --impl exec:"sh $RUN/dir_out.sh" $Q $ONE; has "not a regular file"
go mine-locked-dir 1 suite --impl exec:"sh $RUN/lock_out.sh" $Q $ONE
go mine-deep-tree 1 suite --impl exec:"sh $RUN/deep_tree.sh" $Q $ONE
go mine-kill-supervisor 1 suite --impl exec:"sh $RUN/kill_parent.sh" $Q $ONE; has "crash\|FAIL"
go mine-plugin-crash-once 3 suite --impl plugin:"$PLUG/hostile_crash_once.so" $Q $TWO
has "crash"
touch "$BASE/once"
FR_HOSTILE_ONCE="$BASE/once" go mine-plugin-restart 1 suite --impl plugin:"$PLUG/hostile_crash_once.so" $Q $TWO -v
[ "$(grep -c 'FAIL *eq_fp32.*crash' "$OUT")" = 1 ] && [ "$(grep -c 'SKIP *eq_fp32' "$OUT")" = 1 ] \
    || fail "expected one crash, then a fresh worker that SKIPs the other case"
go mine-plugin-stdout 3 suite --impl plugin:"$PLUG/hostile_stdout.so" $Q $TWO
go mine-plugin-bg-child 3 suite --impl plugin:"$PLUG/hostile_bg_child.so" $Q $TWO
go mine-plugin-overrun 1 suite --impl plugin:"$PLUG/hostile_overrun.so" $Q $ONE; has "guard"
FR_HOSTILE_COUNT="$BASE/count" go mine-persistent-crash-restart2 1 suite --impl persistent:"sh $RUN/p_die_second.sh" \
    $Q $TWO -v
has "crash: the runner ended without a status line (exit status 0)"; has "p_die_second: going away"
go mine-persistent-silent 1 suite --impl persistent:"sh $RUN/p_silent.sh" $Q $ONE --timeout 2; has "timeout"
go mine-persistent-junk 3 suite --impl persistent:"sh $RUN/p_junk.sh" $Q $TWO
go mine-stop-early 4 suite --impl exec:"no-such-interpreter-xyz run.py" $Q; has "stopped early after 5"
checks=$((checks + 1)); NAME=mine-tmpdir-newline
NL="$BASE/new
line"; mkdir -p "$NL"
env TMPDIR="$NL" "$F" suite --impl persistent:"sh $RUN/all77.sh" $Q $ONE > "$BASE/nl.txt" 2>&1
rc=$?; [ $rc = 2 ] || fail "TMPDIR with a newline: exit $rc, expected 2"
grep -q "newline" "$BASE/nl.txt" || fail "TMPDIR newline message: $(cat "$BASE/nl.txt")"; echo "ok   [$NAME] exit $rc"
go mine-bad-timeout 2 suite $Q $ONE --timeout 0; has "--timeout"
go mine-timeout-builtin 2 suite $Q $ONE --timeout 5; has "runs in this process"

hostile_end "hostile corpus"
