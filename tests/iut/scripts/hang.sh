#!/bin/sh
# Never finishes: a background child and a foreground one (the timeout must kill both).
echo "hang-marker: waiting for the device" >&2
sleep 30 &
sleep 30
