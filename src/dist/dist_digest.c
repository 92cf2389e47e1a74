/* Every rank of one case must have read the same case (dist.h fr_dist_same_case): a digest of case.json and of each
 * input file, read whole and streamed (a rank that reads only its query rows still hashes the whole file, with a
 * 1 MiB buffer: no memory grows with the file), gathered from every rank and compared before anything is computed.
 * Without it two ranks that read different files (a case folder that is not the same on every node) each computed
 * their rows of a different problem and the output was half of each, with exit 0. The digest (core/hash.h) is a
 * mistake detector, not a cryptographic one. */
#define _POSIX_C_SOURCE 200809L
#include "dist/dist.h"

#include "core/core.h"
#include "core/hash.h"
#include "io/casedir.h"
#include "io/io_util.h"

#include <fcntl.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NFILES (FR_CASE_NUM_INPUTS + 1) /* case.json, then the inputs in fr_case_input order */

/* Digest of the file at path (whole, streamed); 0 and a message on a read error. */
static fr_status digest_file(const char *path, uint64_t *out, fr_error *err) {
    FILE *f;
    int64_t size;
    fr_status st = fr_io_open_read(path, &f, &size, err);
    if (st != FR_OK) return st;
    enum { BUF = 1 << 20 };
    unsigned char *buf = malloc(BUF);
    if (!buf) {
        fclose(f);
        return fr_fail(err, FR_E_NOMEM, "dist: digest buffer");
    }
    uint64_t h = fr_hash_word(FR_HASH_SEED, (uint64_t)size), total = 0;
    size_t n;
    while ((n = fread(buf, 1, BUF, f)) > 0) { /* BUF is a multiple of 8: only the last piece has a tail */
        h = fr_hash_bytes(h, buf, n);
        total += n;
    }
    bool bad = ferror(f) || total != (uint64_t)size;
    fclose(f);
    free(buf);
    if (bad) return fr_fail(err, FR_E_IO, "%s: read error while comparing the ranks' inputs", path);
    *out = fr_hash_word(h, total);
    return FR_OK;
}

fr_status fr_dist_same_case(const fr_dist *d, const char *dir, const fr_case *c, fr_error *err) {
    if (!d || !dir) return fr_fail(err, FR_E_NULL, "dist: NULL argument");
    if (d->size <= 1) return c ? FR_OK : fr_fail(err, FR_E_NULL, "dist: no case");
    uint64_t mine[NFILES];
    memset(mine, 0, sizeof mine);
    /* c NULL: this rank could not load the case; it still takes part, so that no other rank waits for it */
    fr_status st = c ? FR_OK : fr_fail(err, FR_E_NULL, "dist: this rank has no case");
    for (int k = 0; c && k < NFILES && st == FR_OK; k++) {
        const char *name = k == 0 ? "case.json" : c->files[k - 1];
        if (!name) continue; /* an absent input: 0 on every rank that agrees it is absent */
        char *path = fr_io_join(dir, name);
        st = path ? digest_file(path, &mine[k], err) : fr_fail(err, FR_E_NOMEM, "dist: out of memory");
        mine[k] |= 1; /* present, whatever its digest */
        free(path);
    }
    if ((st = fr_dist_agree(d, st, err)) != FR_OK) return st;
    uint64_t *all = malloc(sizeof(uint64_t) * NFILES * (size_t)d->size);
    int ok = all != NULL, allok = 0;
    MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!allok) {
        free(all);
        return fr_fail(err, FR_E_NOMEM, "dist: cannot gather the ranks' input digests");
    }
    if (MPI_Allgather(mine, NFILES, MPI_UINT64_T, all, NFILES, MPI_UINT64_T, MPI_COMM_WORLD) != MPI_SUCCESS) {
        free(all);
        return fr_fail(err, FR_E_IO, "dist: cannot gather the ranks' input digests");
    }
    /* The first file (in case.json, then input order) on which a rank differs from rank 0: the same answer on
     * every rank, so every rank stops. */
    for (int k = 0; k < NFILES && st == FR_OK; k++)
        for (int r = 1; r < d->size; r++)
            if (all[(size_t)r * NFILES + k] != all[k]) {
                const char *name = k == 0 ? "case.json" : fr_case_input_name((fr_case_input)(k - 1));
                st = fr_fail(err, FR_E_FORMAT,
                             "dist: rank %d read a different %s%s than rank 0 under %s (digests %016llx, %016llx): "
                             "every rank must read the same case (a folder shared by the ranks); nothing was computed",
                             r, name, k == 0 ? "" : " input", dir, (unsigned long long)all[(size_t)r * NFILES + k],
                             (unsigned long long)all[k]);
                break;
            }
    free(all);
    return st;
}
