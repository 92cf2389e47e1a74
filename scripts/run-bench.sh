#!/bin/sh
# make bench: run every benchmark binary built under BUILD_DIR/bench/ (one per area), each printing its own tables.
# Benchmarks measure speed only; correctness lives in the tests. Usage: scripts/run-bench.sh BUILD_DIR
set -u
build="${1:-build}"
if [ ! -d "$build/bench" ]; then
  echo "run-bench: $build/bench not found (configure with -DFR_BUILD_BENCH=ON and build first)" >&2
  exit 1
fi
# Idle OpenMP threads sleep instead of spinning: the benchmarks report rates per CPU-second (robust on a shared
# machine), which spinning threads would dilute. Override by setting OMP_WAIT_POLICY yourself.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
status=0
found=0
for exe in $(find "$build/bench" -type f -perm -u+x -name 'bench_*' ! -path '*/CMakeFiles/*' | sort); do
  found=1
  echo "=== $(basename "$exe") ==="
  if ! "$exe"; then
    echo "run-bench: $exe failed" >&2
    status=1
  fi
  echo
done
# The side-by-side table (flashref vs PyTorch SDPA vs OpenBLAS standard attention, with the peaks), torch from the
# venv of `make torch`; without torch it says so and prints the flashref columns only.
if [ -x "$build/bench/kernels/bench_kernels" ]; then
  echo "=== side_by_side (bench/kernels/side_by_side.py) ==="
  py="$build/venv/bin/python"
  [ -x "$py" ] || py=python3
  if [ -f "$build/venv/.torch-missing" ]; then
    echo "run-bench: WARNING: torch is missing ($(cat "$build/venv/.torch-missing")): PyTorch columns SKIPPED"
  fi
  if ! FLASHREF_BENCH_THREADS="${FLASHREF_BENCH_THREADS:-2}" "$py" "$(dirname "$0")/../bench/kernels/side_by_side.py" \
      "$build/bench/kernels/bench_kernels"; then
    echo "run-bench: side_by_side failed" >&2
    status=1
  fi
  echo
fi
if [ "$found" = 0 ]; then
  echo "run-bench: no bench_* executables under $build/bench" >&2
  exit 1
fi
exit $status
