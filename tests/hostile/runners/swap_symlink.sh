#!/bin/sh
# Row 5: replaces its case directory by a symbolic link to another folder; cleanup must not delete that folder.
rm -rf "$1"
ln -s "$FR_HOSTILE_OUTSIDE" "$1"
exit 3
