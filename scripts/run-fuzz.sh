#!/bin/sh
# Runs every libFuzzer target of a -DFR_FUZZ=ON build for SECONDS each (`make fuzz` calls this).
#   usage: scripts/run-fuzz.sh BUILD_DIR [SECONDS]
# Targets are the executables BUILD_DIR/fuzz/*/fuzz_NAME; each starts from the committed seeds in
# fuzz/corpus/NAME (read only: new inputs go to a scratch corpus), with fuzz/dict/NAME.dict when present. Fails on any crash, leak, timeout or sanitizer
# report; crashing inputs are kept in BUILD_DIR/fuzz-artifacts/. Prints executions per target.
set -u
if [ $# -lt 1 ]; then
    echo "usage: $0 BUILD_DIR [SECONDS]" >&2
    exit 2
fi
build=$1
secs=${2:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
artifacts=$build/fuzz-artifacts
mkdir -p "$artifacts"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/flashref-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT INT TERM

targets=$(find "$build/fuzz" -type f -perm -u+x -name 'fuzz_*' 2>/dev/null | sort)
if [ -z "$targets" ]; then
    echo "run-fuzz: no fuzz targets under $build/fuzz (configure with CC=clang -DFR_FUZZ=ON)" >&2
    exit 2
fi

status=0
for exe in $targets; do
    name=$(basename "$exe")
    name=${name#fuzz_}
    seeds=$root/fuzz/corpus/$name
    corpus=$scratch/$name
    mkdir -p "$corpus"
    log=$scratch/$name.log
    set -- "$corpus"
    [ -d "$seeds" ] && set -- "$corpus" "$seeds"
    [ -f "$root/fuzz/dict/$name.dict" ] && set -- -dict="$root/fuzz/dict/$name.dict" "$@"
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        "$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$artifacts/$name-" "$@" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
    units=$(find "$corpus" -type f | wc -l)
    if [ $rc -eq 0 ]; then
        printf 'fuzz_%-12s ok    %10s executions in %ss (%s execs/s), %s, %s new corpus units\n' "$name" \
            "${execs:-?}" "$secs" "$(( ${execs:-0} / (secs > 0 ? secs : 1) ))" "${cov:-cov: ?}" "$units"
    else
        status=1
        printf 'fuzz_%-12s FAIL  exit %d after %s executions; log tail:\n' "$name" "$rc" "${execs:-?}"
        tail -n 40 "$log"
        ls "$artifacts" | sed "s|^|  artifact: $artifacts/|"
    fi
done
exit $status
