#!/bin/sh
# Mine: a deep directory tree in the case directory; cleanup must remove all of it.
d="$1"
i=0
while [ $i -lt 100 ]; do d="$d/d"; i=$((i + 1)); done
mkdir -p "$d" && echo x > "$d/leaf"
exit 3
