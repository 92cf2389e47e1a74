/* bench_dist: the message costs the scale model of docs/scale.md is calibrated with.
 *
 *   mpirun --oversubscribe -n R bench_dist [max_bytes]   (default 64 MiB; R >= 2)
 *
 * 1. ping-pong between ranks 0 and 1 for sizes 8 B .. max_bytes: half the round trip, best of a few repetitions;
 *    fits t(n) = alpha + n / beta (alpha from the smallest size, beta from the largest);
 * 2. the output merge of src/dist (fr_dist_merge_bytes: XOR of each rank's changes, reduced onto rank 0) of 1, 16
 *    and 64 MiB over all R ranks. */
#define _POSIX_C_SOURCE 200809L
#include "dist/dist.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    fr_dist d;
    setenv("OMPI_COMM_WORLD_SIZE", "1", 0); /* fr_dist_init initialises MPI only under mpirun */
    fr_dist_init(&argc, &argv, &d);
    size_t maxb = argc > 1 ? (size_t)atoll(argv[1]) : (size_t)64 << 20;
    if (d.size < 2) {
        fprintf(stderr, "bench_dist: run under mpirun -n 2 or more\n");
        fr_dist_finalize(&d);
        return 2;
    }
    char *buf = malloc(maxb), *base = malloc(maxb);
    if (!buf || !base) {
        fprintf(stderr, "bench_dist: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(buf, 1, maxb);
    memset(base, 0, maxb);
    if (d.rank == 0) printf("bench_dist: %d ranks\n%12s %14s %12s\n", d.size, "bytes", "one-way us", "MB/s");
    double a = 0, bw = 0;
    for (size_t n = 8; n <= maxb; n *= 4) {
        int reps = n < 65536 ? 200 : n < (4u << 20) ? 20 : 5;
        double best = 1e30;
        for (int k = 0; k < 3; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int r = 0; r < reps; r++) {
                if (d.rank == 0) {
                    MPI_Send(buf, (int)n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                    MPI_Recv(buf, (int)n, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (d.rank == 1) {
                    MPI_Recv(buf, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
                }
            }
            double t = (MPI_Wtime() - t0) / (2.0 * reps);
            if (t < best) best = t;
        }
        if (d.rank == 0) printf("%12zu %14.2f %12.1f\n", n, best * 1e6, (double)n / best * 1e-6);
        if (n == 8) a = best;
        bw = (double)n / best;
    }
    if (d.rank == 0) printf("fit: alpha = %.2f us, beta = %.0f MB/s\n", a * 1e6, bw * 1e-6);
    for (size_t mib = 1; mib <= 64 && (mib << 20) <= maxb; mib *= mib == 1 ? 16 : 4) {
        size_t n = mib << 20;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        fr_dist_merge_bytes(&d, buf, base, n);
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime() - t0;
        if (d.rank == 0)
            printf("merge of %zu MiB over %d ranks: %.3f s (%.1f MB/s of output)\n", mib, d.size, t,
                   (double)n / t * 1e-6);
    }
    free(buf);
    free(base);
    fr_dist_finalize(&d);
    return 0;
}
