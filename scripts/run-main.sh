#!/bin/sh
# flashref's main job (`make run`): the default verification suite against the fast kernels, with the stored
# regression cases, the run history, a JSON result and an HTML report in BUILD_DIR/report/.
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
exit $rc
