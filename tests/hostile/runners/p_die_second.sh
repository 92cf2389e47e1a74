#!/bin/sh
# Mine, persistent: answers the first case, exits without answering the second (crash), then a fresh runner goes on.
n=0
[ -n "$FR_HOSTILE_COUNT" ] && n=$(cat "$FR_HOSTILE_COUNT" 2>/dev/null || echo 0)
while IFS= read -r dir; do
  n=$((n + 1)); [ -n "$FR_HOSTILE_COUNT" ] && echo $n > "$FR_HOSTILE_COUNT"
  if [ $n -eq 2 ]; then echo "p_die_second: going away" >&2; exit 0; fi
  echo "flashref-status: 77 p_die_second does not compute"
done
