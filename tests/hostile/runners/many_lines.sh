#!/bin/sh
# Row 8: 3000 lines of noise, then the line that matters.
i=0
while [ $i -lt 3000 ]; do echo "noise line $i of a chatty runtime" >&2; i=$((i + 1)); done
echo "THE REAL ERROR: device 0 is not responding" >&2
exit 3
