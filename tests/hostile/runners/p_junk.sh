#!/bin/sh
# Mine, persistent: floods stdout with junk (a long line without newline, binary bytes), then answers 77.
while IFS= read -r dir; do
  head -c 200000 /dev/zero | tr '\0' 'x'
  printf '\n\377\376 junk\n'
  echo "flashref-status: 77 p_junk skips"
done
