#!/bin/sh
# flashref's main job (`make run`): the default verification suite against the fast kernels, with the stored
# regression cases, the run history, a JSON result and an HTML report in BUILD_DIR/report/; then a short random batch
# (RANDOM_DRAWS, default 20) drawn from the option matrix with a new seed each run.
# usage: scripts/run-main.sh BUILD_DIR [extra flashref suite options]
set -u
BUILD=${1:-build}
[ $# -gt 0 ] && shift
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$BUILD/flashref"
if [ ! -x "$BIN" ]; then
    echo "run-main: $BIN not found: build first (make build)" >&2
    exit 2
fi
OUT="$BUILD/report"
mkdir -p "$OUT"
"$BIN" suite --impl fast --set default --regression "$ROOT/tests/regression/cases" \
    --history "$OUT/history.jsonl" --json "$OUT/suite.json" --report "$OUT/suite.html" "$@"
rc=$?
echo "run-main: results in $OUT/suite.json, report $OUT/suite.html, history $OUT/history.jsonl (exit $rc)"
# A short random batch from the option matrix with a fresh seed every run (printed by flashref; RANDOM_SEED=S
# repeats one). A failing draw prints its configuration, its smallest failing form and the command that re-runs it;
# `--promote tests/regression/cases` on that command adds it to the regression set.
DRAWS=${RANDOM_DRAWS:-20}
if [ "$DRAWS" -gt 0 ]; then
    "$BIN" suite --impl fast --random "$DRAWS" ${RANDOM_SEED:+--seed "$RANDOM_SEED"} \
        --json "$OUT/random.json" --report "$OUT/random.html"
    rrc=$?
    echo "run-main: random batch results in $OUT/random.json, report $OUT/random.html (exit $rrc)"
    [ $rc -eq 0 ] && rc=$rrc
fi
exit $rc
