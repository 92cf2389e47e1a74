#!/bin/sh
# golden_vs_numpy: the C golden engine against the independent numpy reference (tests/python/ref_attention.py).
#   1. flashref golden --set xcheck writes >= 50 cases with their golden outputs (the generator computes them);
#   2. the same set is written inputs-only and every case is computed by `flashref run CASE --engine golden`;
#   3. check_cases.py recomputes every case in numpy and compares (1e-10 relative) both copies;
#   3b. ref_runner.py (the reference as an exec implementation) writes operator-dtype outputs that check;
#   4. poisoned copies (NaN/Inf in K/V rows and Q rows that take part nowhere) must give the same, finite, results;
#   5. negative controls: a 1e-8 change, a wrong D1 value, a NaN, a wrong shape, a missing file must all fail.
# Fails (never skips) when FLASHREF_PYTHON is unset or has no numpy.
# usage: golden_vs_numpy.sh FLASHREF_BINARY TESTS_PYTHON_DIR     (seed: $FLASHREF_SEED, default 20261129)
set -u
FR="$1"
HERE="$2"
SEED="${FLASHREF_SEED:-20261129}"
echo "golden_vs_numpy: seed $SEED"
PY="${FLASHREF_PYTHON:-}"
if [ -z "$PY" ]; then
    echo "FAIL: FLASHREF_PYTHON is not set (make test sets it to build/venv/bin/python, a Python with numpy)"
    exit 1
fi
if ! "$PY" -c "import numpy" ; then
    echo "FAIL: $PY cannot import numpy"
    exit 1
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/golden_vs_numpy.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM

"$FR" golden --set xcheck --seed "$SEED" --out "$TMP/gen" > "$TMP/gen.log" 2>&1 || {
    cat "$TMP/gen.log"; echo "FAIL: flashref golden --set xcheck"; exit 1; }
N=$(find "$TMP/gen" -name case.json | wc -l)
echo "generator wrote $N cases with golden outputs"
if [ "$N" -lt 50 ]; then echo "FAIL: xcheck has $N < 50 cases"; exit 1; fi

"$FR" golden --set xcheck --seed "$SEED" --no-outputs --out "$TMP/run" > "$TMP/run.log" 2>&1 || {
    cat "$TMP/run.log"; echo "FAIL: flashref golden --set xcheck --no-outputs"; exit 1; }
for d in "$TMP"/run/*/; do
    if [ -f "$d/attention_out.npy" ] || [ -f "$d/dq.npy" ]; then
        echo "FAIL: --no-outputs wrote outputs into $d"; exit 1
    fi
    "$FR" run "$d" --engine golden > "$TMP/one.log" 2>&1 || {
        cat "$TMP/one.log"; echo "FAIL: flashref run $d --engine golden"; exit 1; }
done
echo "flashref run --engine golden computed $(ls -d "$TMP"/run/*/ | wc -l) cases"

# Cases described by command-line parameters (the other way to call the generator), including empty dimensions.
one() { "$FR" golden --seed "$SEED" --out "$TMP/cli" "$@" > "$TMP/one.log" 2>&1 || {
    cat "$TMP/one.log"; echo "FAIL: flashref golden $*"; exit 1; }; }
one --name tnd_bwd_sink_drop --bwd --layout TND --seq-q 3,0,4 --seq-kv 5,2,4 --N1 4 --N2 2 --D 8 --sparse-mode 3 \
    --mask canonical --keep-prob 0.6 --sink --dtype bf16
one --name bsh_pse1_band --layout BSH --B 2 --N1 2 --S1 6 --S2 9 --D 8 --pse-type 1 --pse bnss --mask ss \
    --pre-tokens 2 --next-tokens 3 --dtype fp16
one --name s2_zero --S1 3 --S2 0 --N1 2 --D 8
one --name s2_zero_bwd --bwd --S1 3 --S2 0 --N1 2 --D 8
one --name b_zero --B 0 --S1 3 --S2 4 --N1 2 --D 8
if "$FR" golden --seed "$SEED" --out "$TMP/bad" --name bad --layout TND --seq-q 3 --seq-kv 0 --N1 1 --D 8 \
    > "$TMP/one.log" 2>&1 || [ -e "$TMP/bad/bad/case.json" ]; then
    cat "$TMP/one.log"; echo "FAIL: an invalid case was accepted or left a case.json"; exit 1
fi

"$PY" "$HERE/check_cases.py" --quiet "$TMP/gen" "$TMP/run" "$TMP/cli" || { echo "FAIL: golden and numpy disagree"; exit 1; }

# The reference as an implementation by command (ref_runner.py): operator dtypes, judged with each dtype's rounding.
mkdir "$TMP/runner" || exit 1
for c in fwd_bsh_bf16_mqa fwd_e4m3fn_bnsd fwd_sbh_fp16_gqa bwd_tnd_fp16_drop bwd_bsnd_bf16_sink topk_tnd_per_kv_fp32; do
    cp -r "$TMP/gen/$c" "$TMP/runner/$c" && "$PY" "$HERE/ref_runner.py" "$TMP/runner/$c" || {
        echo "FAIL: ref_runner.py $c"; exit 1; }
done
"$PY" "$HERE/check_cases.py" --quiet "$TMP/runner" || { echo "FAIL: ref_runner.py outputs"; exit 1; }

# NaN/Inf where they must not matter (verification-method.md 4): masked-everywhere K/V rows and fully masked Q rows.
# The already checked run/ copy is poisoned in place (cases with nothing to poison are removed).
mv "$TMP/run" "$TMP/poison" || exit 1
"$PY" "$HERE/poison_cases.py" "$TMP"/poison/*/ > "$TMP/poison.log" 2>&1 || {
    cat "$TMP/poison.log"; echo "FAIL: poison_cases.py"; exit 1; }
tail -n 1 "$TMP/poison.log"
for d in "$TMP"/poison/*/; do
    "$FR" run "$d" --engine golden > "$TMP/one.log" 2>&1 || {
        cat "$TMP/one.log"; echo "FAIL: flashref run $d --engine golden (poisoned)"; exit 1; }
done
"$PY" "$HERE/check_cases.py" --quiet "$TMP/poison" || { echo "FAIL: poisoned inputs leak into the golden"; exit 1; }

# Negative controls: the comparison must be able to fail. Each mutation of a correct case must be reported.
mutate() {  # mutate CASE FILE PYTHON-STATEMENT(a) WHAT
    rm -rf "$TMP/neg" && cp -r "$TMP/gen/$1" "$TMP/neg" || exit 1
    "$PY" -c "import sys, numpy as np
a = np.load(sys.argv[1])
$3
np.save(sys.argv[1], a)" "$TMP/neg/$2" || exit 1
    if "$PY" "$HERE/check_cases.py" --quiet "$TMP/neg" > "$TMP/neg.log" 2>&1; then
        cat "$TMP/neg.log"; echo "FAIL: negative control not reported: $4"; exit 1
    fi
    echo "negative control reported: $4"
}
mutate fwd_bnsd_fp32_gqa attention_out.npy "a.flat[5] *= 1 + 1e-8" "1e-8 relative change of one output"
mutate m3_s1_gt_s2_d1rows softmax_max.npy "a[0, 0, 0, :] = -1e38" "D1 row max -FLT_MAX replaced by -1e38"
mutate m3_s1_gt_s2_d1rows attention_out.npy "a[0, 0, 0, 0] = np.nan" "NaN in a fully masked row's output"
mutate bwd_bsh_bf16 dk.npy "a = a[:, :-1]" "dk of the wrong shape"
mutate bwd_bsnd_bf16_sink dsink.npy "a[1] = -a[1]" "dsink sign"
mutate topk_bsnd_bf16 attention_out.npy "a[0, 0, 0] = a[0, 0, 1]" "one head's output row replaced by another head's"
rm -rf "$TMP/neg" && cp -r "$TMP/gen/bwd_bsh_bf16" "$TMP/neg" && rm "$TMP/neg/dv.npy" || exit 1
if "$PY" "$HERE/check_cases.py" --quiet "$TMP/neg" > "$TMP/neg.log" 2>&1; then
    cat "$TMP/neg.log"; echo "FAIL: negative control not reported: missing dv.npy"; exit 1
fi
echo "negative control reported: missing dv.npy"
echo "PASS"
