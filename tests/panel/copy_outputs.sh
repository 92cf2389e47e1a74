#!/bin/sh
# An exec: implementation for test_exec_optional_outputs: copies the prepared outputs in $FR_PANEL_SRC into the case
# directory, then removes the file named by $FR_PANEL_DROP (if set) to play a runner that forgot it.
dir="$1"
[ -f "$dir/case.json" ] || { echo "copy_outputs: no case in '$dir'" >&2; exit 5; }
cp "$FR_PANEL_SRC"/*.npy "$dir"/ || exit 6
[ -n "$FR_PANEL_DROP" ] && rm -f "$dir/$FR_PANEL_DROP"
exit 0
