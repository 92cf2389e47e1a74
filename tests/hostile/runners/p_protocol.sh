#!/bin/sh
# Issue 28 row 5: persistent runners that break the pairing of answers and cases (MODE, the first argument):
#   early  a status line before reading anything (then answers each case once)
#   twice  each case answered twice
#   other  each case answered with the echo of another directory
#   echo   each case answered once with the echo of its own directory (correct)
#   0abc   "flashref-status: 0abc" (not a status number: a malformed line, never status 0)
# The outputs are flashref's fast engine's (FR_HOSTILE_FLASHREF), so only the protocol can fail a case.
[ "$1" = early ] && echo "flashref-status: 0"
while IFS= read -r dir; do
    "$FR_HOSTILE_FLASHREF" run "$dir" --engine fast >&2  # correct outputs: only the pairing can fail the case
    case "$1" in
    # one write: two echos may reach flashref in two reads under load, and the second is then caught before the
    # next case as an unsolicited line (also a protocol error, worded so), which is not what this row checks
    twice) printf 'flashref-status: 0\nflashref-status: 0\n' ;;
    other) printf 'flashref-status: 0\t%s\n' "/tmp/not-$$" ;;
    echo) printf 'flashref-status: 0\t%s\n' "$dir" ;;
    0abc) echo "flashref-status: 0abc" ;;
    *) echo "flashref-status: 0" ;;
    esac
done
