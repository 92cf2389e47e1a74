#!/bin/sh
# An exec IUT for test_iut_exec: checks the case directory it was given, records its path in $FR_IUT_LOG (when set),
# then copies prepared outputs from $FR_IUT_SRC (or the directory named in $FR_IUT_SRC_FILE) into it.
dir="$1"
[ -f "$dir/case.json" ] && [ -f "$dir/query.npy" ] || { echo "copy_outputs: no case in '$dir'" >&2; exit 5; }
[ -n "$FR_IUT_LOG" ] && printf '%s\n' "$dir" >> "$FR_IUT_LOG"
echo "copy_outputs: stdout goes nowhere"
src="$FR_IUT_SRC"
[ -n "$FR_IUT_SRC_FILE" ] && [ -f "$FR_IUT_SRC_FILE" ] && src=$(cat "$FR_IUT_SRC_FILE")
cp "$src"/*.npy "$dir"/
