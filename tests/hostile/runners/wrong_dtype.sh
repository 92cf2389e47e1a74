#!/bin/sh
# Issue 28 row 15: attention_out of the right shape (the query's: Dv = Dk in the case used) in fp64 where the operator
# writes fp32: the judge's diagnosis must be `shape` (wrong dtype or shape), not error-status.
. "$FR_HOSTILE_LIB"
shape=$(head -c 200 "$1/query.npy" | tr -d '\000' | grep -ao "'shape': ([^)]*)" | sed "s/'shape': //")
n=$(echo "$shape" | tr -d '() ' | sed 's/,$//; s/,/*/g')
mknpy "$1/attention_out.npy" '<f8' "$shape" $(($n * 8))
exit 0
