#!/bin/sh
# mpirun -n R (R = 1, 2, 3, oversubscribed) of `flashref run DIR --engine golden` and `flashref golden` against one
# process: every output file must be byte-identical. The cases cover a forward (TND, dropout, ALiBi slopes, sparse
# mode 8), a backward (GQA, rope, sink, causal) and a forward with a band (mode 4) in BSH fp16, each with several
# golden tasks per rank, and every layout's row placement: BNSD (with rope) and SBH forwards, BSND (GQA, with rope)
# and SBH backwards, TND with an empty batch and softmax same_as_input. Under mpirun each rank reads only its
# query-side rows (src/dist/dist_read.c; a backward's q, dy, attention_in and softmax rows: those of its pass A
# blocks and of the group's heads of its pass B batches) and writes its own rows into the files rank 0 laid out
# (src/dist/dist_io.c): a rank that misses a row it needs (zeros in its buffer), writes rows it does not own
# (NaN-prefilled) or leaves a row unwritten (zeros on disk) fails the comparison. FLASHREF_DIST_STATS=1 reports the
# bytes each rank wrote and read: for R = 2, 3 every rank must have written some, together exactly the files' sizes
# (no byte written twice), and a forward's ranks each read a part of the query, together all of it once; a
# backward's each a part (less than the whole, more than nothing), together all of it at least once (pass B reads
# rows of other ranks' pass A blocks). An engine without a part grid (fast) runs on rank 0 alone; a symbolic link
# in place of an output file is refused, its target left untouched; a rank that cannot load the case stops them all
# before the run; ranks that read different files for the case (a digest of each file) stop before it too.
# usage: dist_bit_identical.sh FLASHREF MPIEXEC
set -u
F=$1
MPI=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
mpi() { n=$1; shift; "$MPI" --oversubscribe -n "$n" "$@"; }

"$F" golden --out "$T/in" --name fwd_tnd --layout TND --N1 3 --N2 1 --seq-q 100,1,257 --seq-kv 100,1,257 --D 24 \
  --keep-prob 0.8 --pse-type 2 --pse slopes-n --sparse-mode 8 --mask canonical --no-outputs >/dev/null || fail=1
"$F" golden --out "$T/in" --name bwd_gqa --B 2 --N1 4 --N2 2 --S1 300 --S2 200 --D 32 --Drope 8 --sink \
  --sparse-mode 3 --mask canonical --bwd --no-outputs >/dev/null || fail=1
"$F" golden --out "$T/in" --name fwd_band --layout BSH --dtype fp16 --B 1 --N1 2 --S1 390 --S2 333 --D 16 \
  --sparse-mode 4 --pre-tokens 100 --next-tokens 20 --mask canonical --no-outputs >/dev/null || fail=1
"$F" golden --out "$T/in" --name fwd_bnsd --layout BNSD --B 2 --N1 3 --S1 300 --S2 130 --D 16 --Drope 8 \
  --sparse-mode 2 --mask canonical --no-outputs >/dev/null || fail=1
"$F" golden --out "$T/in" --name fwd_sbh --layout SBH --B 2 --N1 2 --S1 270 --S2 90 --D 8 --no-outputs \
  >/dev/null || fail=1
"$F" golden --out "$T/in" --name fwd_tnd_same --layout TND --N1 2 --seq-q 130,0,140 --seq-kv 70,5,140 --D 8 \
  --softmax-layout same_as_input --no-outputs >/dev/null || fail=1
# Two kv heads (and three heads in the one-case golden below): with one group every rank whose pass B tasks span
# both batches reads the whole query, so no check could see a rank read less.
"$F" golden --out "$T/in" --name bwd_bsnd --layout BSND --B 2 --N1 4 --N2 2 --S1 260 --S2 150 --D 16 --Drope 8 \
  --bwd --no-outputs >/dev/null || fail=1
"$F" golden --out "$T/in" --name bwd_sbh --layout SBH --B 1 --N1 3 --S1 140 --S2 200 --D 8 --bwd --no-outputs \
  >/dev/null || fail=1
# The bytes each rank reports in file $1 (lines "... rank r of R wrote N bytes"): every rank > 0 bytes, and their
# sum the size of the .npy files in directory $2.
check_stats() {
  got=$(grep -c "dist: rank [0-9]* of $3 wrote [1-9][0-9]* bytes" "$1")
  [ "$got" = "$3" ] || { echo "FAIL: $4: $got of $3 ranks report nonzero bytes written"; cat "$1"; fail=1; }
  sum=$(sed -n 's/.*dist: rank [0-9]* of [0-9]* wrote \([0-9]*\) bytes.*/\1/p' "$1" | awk '{s += $1} END {print s + 0}')
  size=$(cat "$2"/*.npy | wc -c)
  [ "$sum" = "$size" ] || { echo "FAIL: $4: the ranks wrote $sum bytes, the files hold $size"; fail=1; }
}
# The query bytes each rank reports reading (lines "... rank r of R read N of M query bytes"), file $1, R = $2: a
# forward's ranks each read a nonzero share of the query, together exactly all of it once; a backward's ranks each
# less than the whole (more than nothing), together all of it at least once.
check_reads() {
  sed -n 's/.*dist: rank [0-9]* of [0-9]* read \([0-9]*\) of \([0-9]*\) query bytes.*/\1 \2/p' "$1" >"$T/reads"
  [ "$(wc -l <"$T/reads")" = "$2" ] || { echo "FAIL: $4: not every rank reports its query reads"; cat "$1"; fail=1; }
  case $3 in
  fwd*) awk -v R="$2" '{ if ($1 <= 0 || (R > 1 && $1 >= $2)) bad = 1; s += $1; m = $2 }
                       END { exit !(bad == 0 && s == m && m > 0) }' "$T/reads" ||
          { echo "FAIL: $4: the ranks did not read their own query rows, each once"; cat "$T/reads"; fail=1; } ;;
  *) awk -v R="$2" '{ if ($1 <= 0 || (R > 1 && $1 >= $2)) bad = 1; s += $1; m = $2 }
                    END { exit !(bad == 0 && s >= m && m > 0) }' "$T/reads" ||
       { echo "FAIL: $4: a backward rank read the whole query, or none, or the ranks missed some"; cat "$T/reads"
         fail=1; } ;;
  esac
}
for c in fwd_tnd bwd_gqa fwd_band fwd_bnsd fwd_sbh fwd_tnd_same bwd_bsnd bwd_sbh; do
  "$F" run "$T/in/$c" --engine golden --out "$T/ref/$c" 2>&1 || fail=1
  for R in 1 2 3; do
    mkdir -p "$T/r$R/$c"
    FLASHREF_DIST_STATS=1 mpi $R "$F" run "$T/in/$c" --engine golden --out "$T/r$R/$c" 2>"$T/stats" ||
      { echo "FAIL: mpirun -n $R run $c"; cat "$T/stats"; fail=1; }
    n=0
    for f in "$T/ref/$c"/*.npy; do
      n=$((n + 1))
      cmp -s "$f" "$T/r$R/$c/$(basename "$f")" || { echo "FAIL: $c, $R ranks: $(basename "$f") differs"; fail=1; }
    done
    [ "$n" -gt 0 ] || { echo "FAIL: $c: no output files"; fail=1; }
    [ "$(ls "$T/r$R/$c" | wc -l)" = "$n" ] || { echo "FAIL: $c, $R ranks: other files than one process's"; fail=1; }
    [ $R = 1 ] || check_stats "$T/stats" "$T/r$R/$c" $R "$c, $R ranks"
    [ $R = 1 ] || check_reads "$T/stats" $R $c "$c, $R ranks"
  done
  echo "$c: mpirun -n 1, 2, 3 run --engine golden: files identical to one process, each rank read and wrote its rows"
done
# The fast engine has no part grid: rank 0 computes and writes everything, the other ranks nothing.
"$F" run "$T/in/fwd_band" --engine fast --out "$T/fast1" 2>&1 || fail=1
FLASHREF_DIST_STATS=1 mpi 2 "$F" run "$T/in/fwd_band" --engine fast --out "$T/fast2" 2>"$T/stats" ||
  { echo "FAIL: mpirun -n 2 run --engine fast"; cat "$T/stats"; fail=1; }
diff -r "$T/fast1" "$T/fast2" >/dev/null || { echo "FAIL: mpirun -n 2 run --engine fast: files differ"; fail=1; }
grep -q "rank 1 of 2 wrote 0 bytes" "$T/stats" || { echo "FAIL: --engine fast: rank 1 wrote output"; fail=1; }
echo "fwd_band: mpirun -n 2 run --engine fast: rank 0 alone, files identical to one process"
# A symbolic link where an output goes is not followed (O_NOFOLLOW): the run fails, the link's target is untouched.
mkdir -p "$T/trap"
echo keep >"$T/victim"
ln -s "$T/victim" "$T/trap/attention_out.npy"
if mpi 2 "$F" run "$T/in/fwd_band" --engine golden --out "$T/trap" 2>"$T/stats"; then
  echo "FAIL: mpirun -n 2 run wrote through a symbolic link"; fail=1
fi
[ "$(cat "$T/victim")" = keep ] || { echo "FAIL: the symbolic link's target was written"; fail=1; }
grep -q "attention_out.npy: is a symbolic link" "$T/stats" ||
  { echo "FAIL: no 'is a symbolic link' message"; cat "$T/stats"; fail=1; }
[ ! -e "$T/trap/softmax_max.npy" ] || { echo "FAIL: a failed run left output files behind"; fail=1; }
echo "a symbolic link in place of an output file: refused, its target untouched"
# A rank that cannot load the case (here: given a missing directory, MPMD) stops every rank before the collective
# run, each with its message and exit status 2, and nothing is written.
"$MPI" --oversubscribe -n 1 "$F" run "$T/in/fwd_band" --engine golden --out "$T/mpmd" : \
  -n 1 "$F" run "$T/in/missing" --engine golden --out "$T/mpmd" >"$T/stats" 2>&1 &&
  { echo "FAIL: a rank's load failure did not fail the run"; fail=1; }
grep -q "missing/case.json: cannot open" "$T/stats" &&
  grep -q "rank 0: another rank could not load the case" "$T/stats" ||
  { echo "FAIL: a rank's load failure: messages"; cat "$T/stats"; fail=1; }
[ ! -e "$T/mpmd" ] || { echo "FAIL: a rank's load failure: outputs written"; fail=1; }
echo "one rank cannot load the case: every rank stops before the run, nothing written"
# Ranks that read different files for one case (a case folder that is not the same on every node; here MPMD: rank 1
# reads a copy whose query differs in its last byte) agree on a digest of what they read before computing: every
# rank stops with exit status 2 naming the file, nothing is written (issue 28 row 13: the output was half of each
# problem, exit 0).
cp -r "$T/in/fwd_band" "$T/in/other"
qs=$(stat -c %s "$T/in/other/query.npy")
printf '\177' | dd of="$T/in/other/query.npy" bs=1 seek=$((qs - 1)) conv=notrunc 2>/dev/null
"$MPI" --oversubscribe -n 1 "$F" run "$T/in/fwd_band" --engine golden --out "$T/mix" : \
  -n 1 "$F" run "$T/in/other" --engine golden --out "$T/mix" >"$T/stats" 2>&1 &&
  { echo "FAIL: ranks that read different query files ran"; fail=1; }
[ "$(grep -c "rank 1 read a different query input than rank 0" "$T/stats")" = 2 ] ||
  { echo "FAIL: different inputs: not every rank said which file differs"; cat "$T/stats"; fail=1; }
[ ! -e "$T/mix" ] || { echo "FAIL: different inputs: outputs written"; fail=1; }
echo "ranks that read different query files: every rank stops before the run, naming the file, nothing written"
# flashref golden: one case split across ranks, and a suite set's cases spread over ranks.
P="--name one --B 1 --N1 3 --S1 300 --S2 260 --D 40 --sparse-mode 2 --mask canonical --sink --bwd"
"$F" golden --out "$T/g1" $P >/dev/null || fail=1
for R in 2 3; do
  FLASHREF_DIST_STATS=1 mpi $R "$F" golden --out "$T/g$R" $P >/dev/null 2>"$T/stats" ||
    { echo "FAIL: mpirun -n $R golden (one case)"; cat "$T/stats"; fail=1; }
  diff -r "$T/g1" "$T/g$R" >/dev/null || { echo "FAIL: mpirun -n $R golden: one case differs"; fail=1; }
  # The inputs and case.json are rank 0's (written before the split): count only the outputs.
  mkdir -p "$T/gout$R"
  for f in dq dk dv dsink; do cp "$T/g$R/one/$f.npy" "$T/gout$R/"; done
  check_stats "$T/stats" "$T/gout$R" $R "golden one case, $R ranks"
  check_reads "$T/stats" $R bwd "golden one case, $R ranks"
done
"$F" golden --out "$T/s1" --set quick --only _b >/dev/null || fail=1
mpi 2 "$F" golden --out "$T/s2" --set quick --only _b >/dev/null || { echo "FAIL: mpirun -n 2 golden --set"; fail=1; }
diff -r "$T/s1" "$T/s2" >/dev/null || { echo "FAIL: mpirun -n 2 golden --set quick: directories differ"; fail=1; }
[ "$(ls "$T/s2" | wc -l)" -gt 0 ] || { echo "FAIL: golden --set wrote nothing"; fail=1; }
echo "golden: one case on 2 and 3 ranks and --set quick --only _b on 2 ranks: identical to one process"
# flashref suite: cases spread over ranks, one report gathered on rank 0 (identical but for the timings).
"$F" suite --set quick --filter bd_ --json "$T/j1.json" >"$T/o1.txt" 2>&1
rc1=$?
mpi 3 "$F" suite --set quick --filter bd_ --json "$T/j3.json" >"$T/o3.txt" 2>&1
rc3=$?
[ $rc1 = $rc3 ] || { echo "FAIL: suite exit status $rc1 (1 process) vs $rc3 (3 ranks)"; fail=1; }
grep -v '"seconds"' "$T/j1.json" >"$T/j1s"
grep -v '"seconds"' "$T/j3.json" >"$T/j3s"
[ -s "$T/j1s" ] && cmp -s "$T/j1s" "$T/j3s" || { echo "FAIL: suite JSON differs between 1 process and 3 ranks"; fail=1; }
grep -v 'time:\|json:' "$T/o1.txt" >"$T/o1s"
grep -v 'time:\|json:' "$T/o3.txt" >"$T/o3s"
cmp -s "$T/o1s" "$T/o3s" || { echo "FAIL: suite summary differs between 1 process and 3 ranks"; diff "$T/o1s" "$T/o3s" | head; fail=1; }
echo "suite --set quick --filter bd_ on 3 ranks: summary and JSON identical to one process (timings aside)"
[ $fail = 0 ] && echo "dist_bit_identical: PASS" || echo "dist_bit_identical: FAIL"
exit $fail
