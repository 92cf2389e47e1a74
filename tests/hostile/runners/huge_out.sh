#!/bin/sh
# Row 11: a 4 GB output of the wrong shape (sparse, so it costs no disk); FR_HOSTILE_HUGE_SHAPE sets the shape.
. "$FR_HOSTILE_LIB"
mknpy "$1/attention_out.npy" '<f4' "${FR_HOSTILE_HUGE_SHAPE:-(1024, 1024, 1024)}" "${FR_HOSTILE_HUGE_BYTES:-4294967296}"
exit 0
