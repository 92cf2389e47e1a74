/* The golden's task grid as row ranges (golden_part.h): the same blocks, in the same order, that golden_fwd.c and
 * golden_bwd.c walk (block starts per batch as gd_ctx_init counts them), so a part's rows here are exactly the
 * output rows that part computes, and a backward part's need (fr_golden_bwd_need) exactly the input rows it reads.
 * tests/dist/dist_bit_identical.sh fails if they ever differ (rows no rank writes stay zero on disk, rows a rank
 * does not read are zeros in its buffers), and test_golden_part poisons the rows outside the need with NaN. */
#include "golden/golden_internal.h"
#include "golden/golden_part.h"

#include <stdlib.h>
#include <string.h>

static int64_t clamp_len(int64_t v) { return v < 0 ? 0 : v; }

/* blk: [B+1], the first global block of batch b in the Q (q = true) or KV grid; returns the block count. */
static int64_t grid_blocks(const fr_problem *pb, bool q, int64_t *blk) {
    const int64_t rows_per = q ? GD_BR : GD_BC;
    int64_t nb = 0;
    for (int64_t b = 0; b < pb->B; b++) {
        int64_t s0, len;
        if (q) fr_problem_q_rows(pb, b, &s0, &len);
        else fr_problem_kv_rows(pb, b, &s0, &len);
        blk[b] = nb;
        nb += (clamp_len(len) + rows_per - 1) / rows_per;
    }
    blk[pb->B] = nb;
    return nb;
}

/* Tasks [t0, t1) of a grid, those with need & mask (every one when need is NULL), in order. */
static int walk(const fr_problem *pb, bool q, const int64_t *blk, int64_t nb, int64_t t0, int64_t t1,
                const unsigned char *need, unsigned mask, int (*fn)(void *ud, const fr_golden_rows *r), void *ud) {
    const int64_t B = pb->B, rows_per = q ? GD_BR : GD_BC;
    int rc = 0;
    int64_t b = 0;
    for (int64_t t = t0; t < t1 && !rc; t++) {
        int64_t h = t / nb, g = t % nb;
        if (t == t0 || g == 0) b = 0;
        while (b + 1 < B && blk[b + 1] <= g) b++; /* the batch whose blocks hold g (blocks in batch order) */
        if (need && !(need[t] & mask)) continue;
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
    return rc;
}

int fr_golden_part_rows(const fr_problem *pb, fr_golden_grid grid, const fr_golden_part *part,
                        int (*fn)(void *ud, const fr_golden_rows *r), void *ud) {
    const bool q = grid == FR_GOLDEN_GRID_Q;
    int64_t *blk = malloc((size_t)(pb->B + 1) * sizeof(int64_t));
    if (!blk) return (int)FR_E_NOMEM;
    int64_t nb = grid_blocks(pb, q, blk), ntasks, t0, t1;
    if (!fr_mul_ok(nb, q ? pb->N1 : pb->N2, &ntasks)) {
        free(blk);
        return (int)FR_E_OVERFLOW;
    }
    fr_golden_part_range(part, ntasks, &t0, &t1);
    int rc = walk(pb, q, blk, nb, t0, t1, NULL, 0, fn, ud);
    free(blk);
    return rc;
}

unsigned char *fr_golden_bwd_need(const fr_problem *pb, const fr_golden_part *part, int64_t *n, int *rc) {
    *n = 0, *rc = 0;
    int64_t *qblk = malloc((size_t)(pb->B + 1) * sizeof(int64_t));
    int64_t *kvblk = malloc((size_t)(pb->B + 1) * sizeof(int64_t));
    unsigned char *need = NULL;
    int64_t TQ = 0, TK = 0, na = 0, nb = 0;
    if (qblk && kvblk) TQ = grid_blocks(pb, true, qblk), TK = grid_blocks(pb, false, kvblk);
    if (!qblk || !kvblk) *rc = (int)FR_E_NOMEM;
    else if (!fr_mul_ok(TQ, pb->N1, &na) || !fr_mul_ok(TK, pb->N2, &nb)) *rc = (int)FR_E_OVERFLOW;
    else if (!(need = calloc(na > 0 ? (size_t)na : 1, 1))) *rc = (int)FR_E_NOMEM;
    if (*rc) {
        free(qblk);
        free(kvblk);
        return NULL;
    }
    const unsigned both = FR_GOLDEN_NEED_Q | FR_GOLDEN_NEED_D;
    int64_t a0, a1, b0, b1;
    fr_golden_part_range(part, na, &a0, &a1);
    fr_golden_part_range(part, nb, &b0, &b1);
    for (int64_t t = a0; t < a1; t++) need[t] = (unsigned char)both;
    /* Pass B: consecutive tasks of one (kv head, batch) need the same rows, marked once. */
    int64_t last_n2 = -1, last_b = -1, b = 0;
    for (int64_t t = b0; t < b1; t++) {
        int64_t n2 = t / TK, g = t % TK;
        if (t == b0 || g == 0) b = 0;
        while (b + 1 < pb->B && kvblk[b + 1] <= g) b++;
        if (n2 == last_n2 && b == last_b) continue;
        last_n2 = n2, last_b = b;
        for (int64_t h = n2 * pb->G; h < (n2 + 1) * pb->G; h++)
            memset(need + h * TQ + qblk[b], (int)both, (size_t)(qblk[b + 1] - qblk[b]));
    }
    /* dsink (part 0) sums the D_i term of every row. */
    if (pb->has_sink && (!part || part->rank == 0))
        for (int64_t t = 0; t < na; t++) need[t] |= FR_GOLDEN_NEED_D;
    free(qblk);
    free(kvblk);
    *n = na;
    return need;
}

int fr_golden_need_rows(const fr_problem *pb, const unsigned char *need, unsigned mask,
                        int (*fn)(void *ud, const fr_golden_rows *r), void *ud) {
    int64_t *blk = malloc((size_t)(pb->B + 1) * sizeof(int64_t));
    if (!blk) return (int)FR_E_NOMEM;
    int64_t nb = grid_blocks(pb, true, blk), ntasks;
    int rc = fr_mul_ok(nb, pb->N1, &ntasks) ? walk(pb, true, blk, nb, 0, ntasks, need, mask, fn, ud)
                                            : (int)FR_E_OVERFLOW;
    free(blk);
    return rc;
}
