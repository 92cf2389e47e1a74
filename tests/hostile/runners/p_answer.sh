#!/bin/sh
# Persistent: for each case directory read, runs the exec runner MODE.sh beside this script on it (MODE: the first
# argument) and answers "flashref-status: 0" (the exec runners' outputs through the persistent protocol).
here=$(dirname "$0")
while IFS= read -r dir; do
    sh "$here/$1.sh" "$dir" >&2
    echo "flashref-status: 0"
done
