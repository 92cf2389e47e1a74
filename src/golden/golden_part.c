/* The golden's task grid as row ranges (golden_part.h): the same blocks, in the same order, that golden_fwd.c and
 * golden_bwd.c walk (block starts per batch as gd_ctx_init counts them), so a part's rows here are exactly the
 * output rows that part computes. tests/dist/dist_bit_identical.sh fails if they ever differ (rows no rank writes
 * stay zero on disk). */
#include "golden/golden_internal.h"
#include "golden/golden_part.h"

#include <stdlib.h>

static int64_t clamp_len(int64_t v) { return v < 0 ? 0 : v; }

int fr_golden_part_rows(const fr_problem *pb, fr_golden_grid grid, const fr_golden_part *part,
                        int (*fn)(void *ud, const fr_golden_rows *r), void *ud) {
    const bool q = grid == FR_GOLDEN_GRID_Q;
    const int64_t B = pb->B, rows_per = q ? GD_BR : GD_BC, heads = q ? pb->N1 : pb->N2;
    int64_t *blk = malloc((size_t)(B + 1) * sizeof(int64_t)); /* [B+1]: first global block of batch b */
    if (!blk) return (int)FR_E_NOMEM;
    int64_t nb = 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t s0, len;
        if (q) fr_problem_q_rows(pb, b, &s0, &len);
        else fr_problem_kv_rows(pb, b, &s0, &len);
        blk[b] = nb;
        nb += (clamp_len(len) + rows_per - 1) / rows_per;
    }
    blk[B] = nb;
    int64_t ntasks, t0, t1;
    if (!fr_mul_ok(nb, heads, &ntasks)) {
        free(blk);
        return (int)FR_E_OVERFLOW;
    }
    fr_golden_part_range(part, ntasks, &t0, &t1);
    int rc = 0;
    int64_t b = 0;
    for (int64_t t = t0; t < t1 && !rc; t++) {
        int64_t h = t / nb, g = t % nb;
        if (t == t0 || g == 0) b = 0;
        while (b + 1 < B && blk[b + 1] <= g) b++; /* the batch whose blocks hold g (blocks in batch order) */
        fr_golden_rows r;
        int64_t len;
        if (q) fr_problem_q_rows(pb, b, &r.row0, &len);
        else fr_problem_kv_rows(pb, b, &r.row0, &len);
        len = clamp_len(len);
        r.head = h, r.b = b;
        r.i0 = (g - blk[b]) * rows_per;
        r.n = len - r.i0 < rows_per ? len - r.i0 : rows_per;
        rc = fn(ud, &r);
    }
    free(blk);
    return rc;
}
