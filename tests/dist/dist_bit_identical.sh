#!/bin/sh
# mpirun -n R (R = 1, 2, 3, oversubscribed) of `flashref run DIR --engine golden` and `flashref golden` against one
# process: every output file must be byte-identical. The cases cover a forward (TND, dropout, ALiBi slopes, sparse
# mode 8), a backward (GQA, rope, sink, causal) and a forward with a band (mode 4) in BSH fp16, each with several
# golden tasks per rank. A merge that dropped a rank's part (NaN-prefilled files) or counted a part twice (the XOR
# merge cancels it) fails here.
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
for c in fwd_tnd bwd_gqa fwd_band; do
  "$F" run "$T/in/$c" --engine golden --out "$T/ref/$c" 2>&1 || fail=1
  for R in 1 2 3; do
    mkdir -p "$T/r$R/$c"
    mpi $R "$F" run "$T/in/$c" --engine golden --out "$T/r$R/$c" || { echo "FAIL: mpirun -n $R run $c"; fail=1; }
    n=0
    for f in "$T/ref/$c"/*.npy; do
      n=$((n + 1))
      cmp -s "$f" "$T/r$R/$c/$(basename "$f")" || { echo "FAIL: $c, $R ranks: $(basename "$f") differs"; fail=1; }
    done
    [ "$n" -gt 0 ] || { echo "FAIL: $c: no output files"; fail=1; }
  done
  echo "$c: mpirun -n 1, 2, 3 run --engine golden: files identical to one process"
done
# flashref golden: one case split across ranks, and a suite set's cases spread over ranks.
P="--name one --B 1 --N1 2 --S1 300 --S2 260 --D 40 --sparse-mode 2 --mask canonical --sink --bwd"
"$F" golden --out "$T/g1" $P >/dev/null || fail=1
mpi 3 "$F" golden --out "$T/g3" $P >/dev/null || { echo "FAIL: mpirun -n 3 golden (one case)"; fail=1; }
diff -r "$T/g1" "$T/g3" >/dev/null || { echo "FAIL: mpirun -n 3 golden: one case differs"; fail=1; }
"$F" golden --out "$T/s1" --set quick --only _b >/dev/null || fail=1
mpi 2 "$F" golden --out "$T/s2" --set quick --only _b >/dev/null || { echo "FAIL: mpirun -n 2 golden --set"; fail=1; }
diff -r "$T/s1" "$T/s2" >/dev/null || { echo "FAIL: mpirun -n 2 golden --set quick: directories differ"; fail=1; }
[ "$(ls "$T/s2" | wc -l)" -gt 0 ] || { echo "FAIL: golden --set wrote nothing"; fail=1; }
echo "golden: one case on 3 ranks and --set quick --only _b on 2 ranks: identical to one process"
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
