#!/bin/sh
# Row 7: stderr that is not UTF-8 (and control characters): JSON and HTML must stay valid UTF-8.
printf 'bad bytes: \377\376 \300\200 \355\240\200 esc:\033[31m red \001 end\n' >&2
exit 3
