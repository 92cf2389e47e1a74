#!/bin/sh
# Row 17: supports nothing.
echo "all77: not supported" >&2
exit 77
