#!/bin/sh
# 3 KB of stderr before the line that matters: only the tail reaches the message.
i=0
while [ $i -lt 60 ]; do echo "exit3: some log line number $i, not interesting at all" >&2; i=$((i + 1)); done
echo "exit3-marker: cannot open /dev/npu0" >&2
exit 3
