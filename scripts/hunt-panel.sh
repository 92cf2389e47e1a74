#!/bin/sh
# `make hunt`: hunts every installed panel runner (runners/) for HUNT_BUDGET and writes BUILD/hunt/<runner>/
# (findings.markdown, findings.json, cluster_K/case, cluster_K/repro.py). A runner whose framework is not installed, or
# that declares itself unavailable on this machine, is skipped loudly. Usage: hunt-panel.sh FLASHREF PYTHON OUTROOT
# BUDGET SEED RUNNER[:VARIANT]...
set -u
flashref=$1 py=$2 root=$3 budget=$4 seed=$5
shift 5
here=$(cd "$(dirname "$0")/.." && pwd)
rc=0
mkdir -p "$root"
for r in "$@"; do
  file=${r%%:*} variant=
  [ "$file" != "$r" ] && variant=${r#*:}
  name=$(basename "$file" .py)${variant:+_$variant}
  echo "== hunt: $r for $budget (seed $seed) -> $root/$name"
  if ! caps=$("$py" "$here/runners/$file" $variant --capabilities 2>/dev/null); then
    echo "   SKIP: $r cannot start (its framework is not installed?): $("$py" "$here/runners/$file" $variant --capabilities 2>&1 | tail -1)"
    continue
  fi
  case $caps in *'"unavailable"'*) echo "   SKIP: $r declares itself unavailable here: $caps"; continue ;; esac
  t=$(date +%s)
  "$flashref" hunt --impl "persistent:$py $here/runners/$file $variant" --budget "$budget" --seed "$seed" \
    --out "$root/$name" -q
  st=$?
  echo "   ($(( $(date +%s) - t )) s, exit $st)"
  case $st in
    0|1) ;;                                   # nothing found / findings: both a finished hunt
    3) echo "   nothing judged: every draw SKIPped" ;;
    *) rc=1 ;;
  esac
done
exit $rc
