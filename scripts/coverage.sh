#!/usr/bin/env bash
# Line and branch coverage of src/ (`make coverage`; docs/reliability.md, "Coverage").
#   usage: scripts/coverage.sh BUILD_DIR COV_DIR JOBS PYTHON MIN_LINES MIN_BRANCHES
# Builds COV_DIR with -DFR_COVERAGE=ON (gcov counters, -O1), runs the ctest set below there, writes an HTML report
# to BUILD_DIR/coverage/index.html and prints two lines
#   coverage: lines X % (a/b), branches Y % (c/d) of src/
#   coverage: lines X % (a/b), branches Y % (c/d) of src/ less the variants this CPU lacks (...)
# then fails when either share of the second (the code this CPU can run) is below its floor.
set -euo pipefail
if [ $# -lt 6 ]; then
    echo "usage: $0 BUILD_DIR COV_DIR JOBS PYTHON MIN_LINES MIN_BRANCHES" >&2
    exit 2
fi
build=$1 cov=$2 jobs=$3 py=$4 min_lines=$5 min_branches=$6
root=$(cd "$(dirname "$0")/.." && pwd)
gcovr=$(dirname "$py")/gcovr
if [ ! -x "$gcovr" ]; then
    echo "coverage: $gcovr missing (make venv installs gcovr)" >&2
    exit 2
fi
# A sample of make test, for time (the measured run must stay a few minutes in CI; it took 290 CPU seconds in all
# when measured): left out are the panel and the Python package's tests (other processes; the src/ lines they
# reach, the C tests reach too), the long and exhaustive labels, and the slowest tests whose paths quicker ones cover
# (selftest_quick: test_suite_quick; diagnosis_defects: test_suite_diag; golden_vs_numpy: test_golden_*;
# decision_sensitivity: test_golden_alt_rows; test_order_invariance and cli_progress: the suite and CLI tests). Those
# last three took 343 s of the sample's test time on a loaded machine and added 21 of src/'s 18804 branches. The
# build has the allocation hook (-DFR_ALLOC_HOOK=ON, as make asan's), so the fault sweeps of label oom run here and
# their out-of-memory and disk-full branches count (176 CPU seconds when measured).
exclude_labels="exhaustive|long|panel|python"
exclude_tests="^(selftest_quick|selftest_default|diagnosis_defects|golden_vs_numpy|decision_sensitivity|test_order_invariance|cli_progress)$"

t=$(date +%s)
cmake -S "$root" -B "$cov" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -g" -DFR_COVERAGE=ON \
    -DFR_ALLOC_HOOK=ON -DFR_BUILD_BENCH=OFF ${CMAKE_ARGS:-} >/dev/null
cmake --build "$cov" -j "$jobs"
echo "coverage: build $(( $(date +%s) - t )) s"

t=$(date +%s)
find "$cov" -name '*.gcda' -delete
rc=0
(cd "$cov" && FLASHREF_PYTHON="$py" ctest --output-on-failure -j "$jobs" -LE "$exclude_labels" -E "$exclude_tests") || rc=$?
echo "coverage: tests $(( $(date +%s) - t )) s"
if [ $rc -ne 0 ]; then
    echo "coverage: the instrumented tests failed (above)" >&2
    exit 1
fi

t=$(date +%s)
out=$build/coverage
rm -rf "$out"
mkdir -p "$out"
# Branches the compiler adds with no source-level decision in them (exception edges, none in C) are left out;
# unreachable-branch exclusion drops branches on lines gcov marks as never executable. The hit counts of the
# kernels' inner loops pass 10^10: real, not the gcov bug gcovr's suspicious-hits check looks for. The counts are
# searched for in COV_DIR only (by default gcovr searches the whole tree, other builds' counts included).
"$gcovr" --root "$root" --object-directory "$cov" --filter "$root/src/" -j "$jobs" \
    --exclude-unreachable-branches --gcov-suspicious-hits-threshold 0 \
    --html-details "$out/index.html" --json-summary "$out/summary.json" "$cov" >/dev/null
echo "coverage: report $(( $(date +%s) - t )) s"
# The floors hold over the code this CPU can run: the files of the ISA variants it lacks (core/variants.inc names
# each variant; its files end in _<name>.c or _<name>.h) cannot execute here, and their tests skip loudly. Which
# variants the CPU offers comes from `flashref version` (the library's own dispatcher). Both lines are printed.
offers=$("$cov/flashref" version | sed -n 's/.*this CPU offers:\(.*\)$/\1/p')
if [ -z "$offers" ]; then
    echo "coverage: cannot read the variants this CPU offers from '$cov/flashref version'" >&2
    exit 2
fi
# shellcheck disable=SC2086 # one argument per variant offered
"$py" - "$out/summary.json" "$min_lines" "$min_branches" "$out/index.html" "$root/src/core/variants.inc" $offers <<'EOF'
import json, os, re, sys
summary, ml, mb, html, variants_inc = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
offers = set(sys.argv[6:])
names = re.findall(r"^FR_VARIANT\((\w+),", open(variants_inc).read(), re.M)
lacking = [n for n in names if n not in offers]
files = json.load(open(summary))["files"]


def lacked(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    return any(stem.endswith("_" + n) for n in lacking)


def line(rows, what):
    lc, lt = sum(f["line_covered"] for f in rows), sum(f["line_total"] for f in rows)
    bc, bt = sum(f["branch_covered"] for f in rows), sum(f["branch_total"] for f in rows)
    lp, bp = 100.0 * lc / max(1, lt), 100.0 * bc / max(1, bt)
    print(f"coverage: lines {lp:.1f} % ({lc}/{lt}), branches {bp:.1f} % ({bc}/{bt}) of {what}")
    return lp, bp


line(files, f"src/  (report: {html})")
runnable = [f for f in files if not lacked(f["filename"])]
left = sorted(os.path.basename(f["filename"]) for f in files if lacked(f["filename"]))
if lacking:
    lp, bp = line(runnable, "src/ less the variants this CPU lacks (" + ", ".join(lacking) + ": " + ", ".join(left) + ")")
else:
    lp, bp = line(runnable, "src/, every variant (this CPU runs them all)")
bad = [f"lines {lp:.1f} % < {ml} %"] if lp < ml else []
bad += [f"branches {bp:.1f} % < {mb} %"] if bp < mb else []
if bad:
    print("coverage: below the floor: " + ", ".join(bad) + " (a test lost coverage; see the report)", file=sys.stderr)
    sys.exit(1)
print(f"coverage: the floors hold ({ml} % of lines, {mb} % of branches, of the code this CPU runs)")
EOF
