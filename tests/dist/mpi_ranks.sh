#!/bin/sh
# Runs a test program under mpirun -n 1, 2 and 3 (oversubscribed: the ranks may outnumber the cores); fails when any
# run fails. The program checks its own results on every rank (mpirun fails when a rank exits nonzero).
# usage: mpi_ranks.sh MPIEXEC PROGRAM [ARG...]
set -u
MPI=$1
shift
fail=0
for n in 1 2 3; do
  "$MPI" --oversubscribe -n $n "$@" || { echo "FAIL: mpirun -n $n $*"; fail=1; }
done
[ $fail = 0 ] && echo "mpi_ranks: PASS" || echo "mpi_ranks: FAIL"
exit $fail
