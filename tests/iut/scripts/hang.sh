#!/bin/sh
# Never finishes: a background child and a foreground one (the timeout must kill both). Records its process group
# (field 5 of /proc/$$/stat) in $FR_IUT_LOG when set.
[ -n "$FR_IUT_LOG" ] && cut -d" " -f5 /proc/$$/stat > "$FR_IUT_LOG"
echo "hang-marker: waiting for the device" >&2
sleep 30 &
sleep 30
