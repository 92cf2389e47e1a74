#!/bin/sh
# Row 6: a background writer that recreates the case directory after the case ended.
(sleep 1; mkdir -p "$1"; echo late > "$1/late.txt") &
exit 77
