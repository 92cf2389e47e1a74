/* The suite across ranks: each rank runs the cases k with k % R == rank (src/verify/suite/suite_run.c), then rank 0 receives
 * every other rank's case results in case order, so its summary, JSON and HTML are those of a single run. */
#include "dist/dist.h"

#include "core/core.h"
#include "verify/suite/suite.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

fr_status fr_dist_gather_cases(void *ud, struct fr_suite_result *res, int total, const unsigned char *mine,
                               fr_status st, fr_error *err) {
    const fr_dist *d = ud;
    if (d->size <= 1) return st;
    /* Everyone agrees on the status first: a failed part stops the run on every rank, as a single run stops. */
    int bad = st != FR_OK ? d->rank : d->size, first = 0;
    MPI_Allreduce(&bad, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first != d->size) {
        int code = (int)st;
        MPI_Bcast(&code, 1, MPI_INT, first, MPI_COMM_WORLD);
        if (first != d->rank) fr_fail(err, (fr_status)code, "suite: rank %d of %d failed", first, d->size);
        return (fr_status)code;
    }
    int lost = -1; /* the first case whose row gains rank 0 could not hold */
    for (int k = 0; k < total; k++) {
        int owner = k % d->size;
        if (owner == 0) continue;
        fr_case_result *c = &res->cases[k];
        if (d->rank == owner) {
            long long ng = mine[k] ? c->j.n_gains : 0;
            MPI_Send(c, (int)sizeof *c, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            MPI_Send(&ng, 1, MPI_LONG_LONG, 0, 2, MPI_COMM_WORLD);
            if (ng > 0) MPI_Send(c->j.gains, (int)ng, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD);
        } else if (d->rank == 0) {
            long long ng = 0;
            MPI_Recv(c, (int)sizeof *c, MPI_BYTE, owner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Recv(&ng, 1, MPI_LONG_LONG, owner, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            c->j.gains = NULL; /* the sender's pointer */
            c->j.n_gains = 0;
            if (ng > 0) {
                double *g = malloc((size_t)ng * sizeof(double));
                if (g)
                    MPI_Recv(g, (int)ng, MPI_DOUBLE, owner, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                else
                    MPI_Recv(NULL, 0, MPI_DOUBLE, owner, 3, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE); /* drops them (truncation is returned, errors return) */
                c->j.gains = g;
                c->j.n_gains = g ? ng : 0;
                if (!g && lost < 0) lost = k;
            }
        }
    }
    /* Rank 0 received every case (no rank waits for it), but its reports would lack gains a single run has. */
    if (lost >= 0)
        return fr_fail(err, FR_E_NOMEM, "suite: cannot hold the row gains of case %d from rank %d", lost,
                       lost % d->size);
    return FR_OK;
}
