/* Golden backward (spec 8.2, D13): P recomputed from the given softmax_max / softmax_sum (column 0), D_i from
 * the given attention_in. Two passes, no atomics:
 *   pre-pass, per (b, h, block of query rows): each row's D_i and dsink term (a part: only the rows it reads,
 *   fr_golden_bwd_need; the others are NaN, so a pass that used one would show it);
 *   pass A, per (b, h, block of query rows): dq, dq_rope;
 *   pass B, per (b, n2, block of keys): dk, dv, dk_rope, summing the G query heads of the group in order.
 * dsink_h sums the per-row terms of head h in (b, i) order after pass A. Every product goes through the blocked fp64
 * product of golden_gemm.h: dq is each element's fma chain over the keys in order, dk and dv over (query head of
 * the group, row) in order, so no result depends on the block sizes, the ISA variant or the thread count. */
#include "core/progress.h"
#include "golden/golden_alt.h"
#include "golden/golden_entry.h"
#include "golden/golden_internal.h"
#include "golden/golden_part.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct bwd_ws {
    double *Qc, *Qt, *qs, *dY, *dYt, *Dr_, *m, *l; /* query side, GD_BR rows: q | q_rope, its transpose, ... */
    double *Kc, *Kt, *V, *Vt, *ks, *vs;             /* key side, GD_BC keys: k | k_rope, its transpose, ... */
    double *x, *dp, *ds, *pz;                       /* [GD_BR x GD_BC] blocks, orientation per pass */
    double *gq, *gk, *gv, *tmp;                     /* gradient accumulators: [GD_BR][Dc], [GD_BC][Dc], [GD_BC][Dv] */
    int32_t *cnt;
} bwd_ws;

static size_t bwd_ws_bytes(const fr_problem *pb) {
    int64_t Dk = pb->Dk, Dr = pb->Drope, Dv = pb->Dv, Dc = Dk + Dr;
    int64_t D = Dk > Dv ? Dk : Dv;
    int64_t nd = GD_BR * (3 * Dc + 1 + 2 * Dv + 3) + GD_BC * (3 * Dc + 3 * Dv + 2) + 4 * GD_BR * GD_BC + D;
    return (size_t)nd * sizeof(double) + (size_t)(GD_BR * GD_BC) * sizeof(int32_t);
}

static bwd_ws bwd_ws_carve(const fr_problem *pb, char *mem) {
    int64_t Dk = pb->Dk, Dr = pb->Drope, Dv = pb->Dv, Dc = Dk + Dr;
    int64_t D = Dk > Dv ? Dk : Dv;
    bwd_ws w;
    double *d = (double *)mem;
    w.x = d; d += GD_BR * GD_BC;
    w.dp = d; d += GD_BR * GD_BC;
    w.ds = d; d += GD_BR * GD_BC;
    w.pz = d; d += GD_BR * GD_BC;
    w.Qc = d; d += GD_BR * Dc;
    w.Qt = d; d += GD_BR * Dc;
    w.gq = d; d += GD_BR * Dc;
    w.qs = d; d += GD_BR;
    w.dY = d; d += GD_BR * Dv;
    w.dYt = d; d += GD_BR * Dv;
    w.Dr_ = d; d += GD_BR;
    w.m = d; d += GD_BR;
    w.l = d; d += GD_BR;
    w.Kc = d; d += GD_BC * Dc;
    w.Kt = d; d += GD_BC * Dc;
    w.gk = d; d += GD_BC * Dc;
    w.V = d; d += GD_BC * Dv;
    w.Vt = d; d += GD_BC * Dv;
    w.gv = d; d += GD_BC * Dv;
    w.ks = d; d += GD_BC;
    w.vs = d; d += GD_BC;
    w.tmp = d; d += D;
    w.cnt = (int32_t *)d;
    return w;
}

/* Query-side data of rows [i0, i0+nr) of head h: q | q_rope, fp8 scales, dY, D_i (from Dsaved: [nr], the pre-pass's)
 * and the stored m, l (column 0). */
static void load_query_side(const gd_ctx *c, const fr_bwd_inputs *in, const gd_batch *bt, int64_t h, int64_t i0,
                            int64_t nr, const double *Dsaved, bwd_ws *w) {
    const fr_problem *pb = c->pb;
    const fr_layout L = pb->layout;
    const int64_t Dk = pb->Dk, Dv = pb->Dv, Dr = c->has_rope ? pb->Drope : 0, b = bt->b;
    gd_load_cat(&in->fwd.query, &in->fwd.query_rope, L, Dk, Dr, bt->q0, b, h, i0, nr, w->Qc);
    gd_load_rows(&in->dy, L, Dv, bt->q0, b, h, i0, nr, w->dY);
    for (int64_t r = 0; r < nr; r++) {
        int64_t i = i0 + r;
        w->qs[r] = gd_qscale(c, bt, h, i);
        w->Dr_[r] = Dsaved[r];
        w->m[r] = fr_load_f64(&in->softmax_max,
                              fr_softmax_offset(&in->softmax_max, L, c->p->softmax_layout, bt->q0, b, h, i, 0));
        w->l[r] = fr_load_f64(&in->softmax_sum,
                              fr_softmax_offset(&in->softmax_sum, L, c->p->softmax_layout, bt->q0, b, h, i, 0));
    }
}

/* Key-side data of keys [j0, j0+nc) of kv head n2: k | k_rope, v, fp8 scales. */
static void load_key_side(const gd_ctx *c, const fr_bwd_inputs *in, const gd_batch *bt, int64_t n2, int64_t j0,
                          int64_t nc, bwd_ws *w) {
    const fr_problem *pb = c->pb;
    const fr_layout L = pb->layout;
    const int64_t Dk = pb->Dk, Dv = pb->Dv, Dr = c->has_rope ? pb->Drope : 0, b = bt->b;
    gd_load_cat(&in->fwd.key, &in->fwd.key_rope, L, Dk, Dr, bt->kv0, b, n2, j0, nc, w->Kc);
    gd_load_rows(&in->fwd.value, L, Dv, bt->kv0, b, n2, j0, nc, w->V);
    for (int64_t col = 0; col < nc; col++) {
        w->ks[col] = gd_kscale(c, &in->fwd.d_scale_k, bt, n2, j0 + col);
        w->vs[col] = gd_kscale(c, &in->fwd.d_scale_v, bt, n2, j0 + col);
    }
}

/* For position (r, col) with multiplicity cnt: the probability p (one occurrence), the dropout factor z, and
 * dS = cnt * p * (z * dP - D) (every occurrence contributes); dyv = dy . v (raw). Returns dS; *pz = cnt * p * z. */
static double grad_point(const gd_ctx *c, const gd_batch *bt, int64_t h, int64_t i, int64_t j, int32_t cnt, double x,
                         double m, double l, double D, double dyv, double vs, double *pz) {
    double p = exp(x - m) / l;
    double z = c->drop ? gd_drop_z(c, bt, h, i, j) : 1.0;
    /* A dropped position has dP' = 0 whatever V holds (NaN/Inf there must not leak). */
    double dp = z == 0.0 ? 0.0 : z * (dyv * vs);
    *pz = (double)cnt * p * z;
    return (double)cnt * p * (dp - D);
}

/* Stores src[r][col0 .. col0+D) (row stride lds) * factor into rows [i0, i0+nr) of head n of t (row0: the batch's
 * first row in T). */
static void store_rows(const fr_tensor *t, fr_layout L, int64_t D, int64_t row0, int64_t b, int64_t n, int64_t i0,
                       int64_t nr, const double *src, int64_t lds, double factor) {
    if (!fr_tensor_present(t) || D == 0) return;
    int64_t sd = t->strides[t->ndim - 1];
    for (int64_t r = 0; r < nr; r++) {
        int64_t base = fr_layout_offset(t, L, D, row0, b, n, i0 + r, 0);
        for (int64_t d = 0; d < D; d++) fr_store_f64(t, base + d * sd, src[r * lds + d] * factor);
    }
}

/* Pre-pass: D_i = dy_i . attention_in_i of rows [i0, i0+nr) of head h into Dsave: [nr]; returns the block's dsink
 * term -sum_i p_sink_i * D_i (0 without a sink). dY: [nr][Dv] (workspace). */
static double row_terms(const gd_ctx *c, const fr_bwd_inputs *in, const gd_batch *bt, int64_t h, int64_t i0,
                        int64_t nr, double *Dsave, bwd_ws *w) {
    const fr_layout L = c->pb->layout;
    const int64_t Dv = c->pb->Dv, b = bt->b;
    gd_load_rows(&in->dy, L, Dv, bt->q0, b, h, i0, nr, w->dY);
    double part = 0.0, sink = c->has_sink ? gd_sink(c, h) : 0.0;
    for (int64_t r = 0; r < nr; r++) {
        int64_t i = i0 + r;
        gd_load_rows(&in->attention_in, L, Dv, bt->q0, b, h, i, 1, w->tmp);
        Dsave[r] = gd_dot(w->dY + r * Dv, w->tmp, Dv);
        if (!c->has_sink) continue;
        double m = fr_load_f64(&in->softmax_max,
                               fr_softmax_offset(&in->softmax_max, L, c->p->softmax_layout, bt->q0, b, h, i, 0));
        double l = fr_load_f64(&in->softmax_sum,
                               fr_softmax_offset(&in->softmax_sum, L, c->p->softmax_layout, bt->q0, b, h, i, 0));
        part -= exp(sink - m) / l * Dsave[r];
    }
    return part;
}

/* Pass A: dq, dq_rope of rows [i0, i0+nr) of head h (Dsaved: their D_i). Scores and dP are key-major here
 * ([nc][nr]): Q and dY are transposed once. Qt: [Dc][nr], dYt: [Dv][nr]; per key block Kc: [nc][Dc], V: [nc][Dv],
 * x, dp, ds: [nc][nr]; gq: [nr][Dc] += ds^T Kc. */
/* Alike golden_bwd.c:dkv_block: kept apart because this pass lays its blocks out key-major (x and dp are [nc][nr], K .
 * Q^T) and that one query-major ([nr][nc], Q . K^T); one loop would need an index transform in the innermost loop. */
static void dq_block(const gd_ctx *c, const fr_bwd_inputs *in, const fr_bwd_outputs *out, const gd_batch *bt,
                     int64_t h, int64_t i0, int64_t nr, const double *Dsaved, bwd_ws *w) {
    const fr_problem *pb = c->pb;
    const fr_layout L = pb->layout;
    const int64_t Dk = pb->Dk, Dv = pb->Dv, Dr = c->has_rope ? pb->Drope : 0, Dc = Dk + Dr, n2 = h / pb->G;
    load_query_side(c, in, bt, h, i0, nr, Dsaved, w);
    gd_transpose(w->Qc, nr, Dc, w->Qt);
    gd_transpose(w->dY, nr, Dv, w->dYt);
    memset(w->gq, 0, (size_t)(nr * Dc) * sizeof(double));
    for (int64_t j0 = 0; j0 < bt->S2; j0 += GD_BC) {
        int64_t nc = bt->S2 - j0 < GD_BC ? bt->S2 - j0 : GD_BC;
        load_key_side(c, in, bt, n2, j0, nc, w);
        /* x: [nc][nr] = Kc . Qt */
        if (gd_scores_mm(c, bt, h, i0, nr, j0, nc, w->Kc, w->Qt, Dc, true, w->qs, w->ks, w->x, w->cnt) == 0)
            continue;
        /* dp: [nc][nr] = V . dYt (dy . v of each position) */
        memset(w->dp, 0, (size_t)(nr * nc) * sizeof(double));
        c->mm(nc, nr, Dv, w->V, Dv, 1, w->dYt, nr, w->dp, nr);
        for (int64_t col = 0; col < nc; col++)
            for (int64_t r = 0; r < nr; r++) {
                int64_t k = col * nr + r;
                int32_t cn = w->cnt[k];
                double pz, ds = 0.0;
                if (cn)
                    ds = grad_point(c, bt, h, i0 + r, j0 + col, cn, w->x[k], w->m[r], w->l[r], w->Dr_[r], w->dp[k],
                                    w->vs[col], &pz);
                /* fp8: the gradient carries the dequant scale of the operand it multiplies (D13); fp8
                 * excludes rope, so one weight serves all Dc columns. */
                w->ds[k] = c->fp8 ? ds * w->ks[col] : ds;
            }
        /* gq: [nr][Dc] += dS: [nr][nc] (stored key-major) . Kc: [nc][Dc] */
        gd_mm(c->mm, nr, Dc, nc, w->ds, 1, nr, w->Kc, Dc, w->gq, Dc);
    }
    store_rows(&out->dq, L, Dk, bt->q0, bt->b, h, i0, nr, w->gq, Dc, c->scale);
    if (Dr) store_rows(&out->dq_rope, L, Dr, bt->q0, bt->b, h, i0, nr, w->gq + Dk, Dc, c->scale);
}

/* Pass B: dk, dv, dk_rope of keys [j0, j0+nc) of kv head n2, summed over the group's G query heads. Scores and dP
 * are row-major here ([nr][nc]): K and V are transposed once. Kt: [Dc][nc], Vt: [Dv][nc]; per query block
 * Qc: [nr][Dc], dY: [nr][Dv], x, dp, ds, pz: [nr][nc]; gk: [nc][Dc] += ds^T Qc, gv: [nc][Dv] += pz^T dY.
 * Dall: [N1][TQ][GD_BR], the pre-pass's D_i. */
/* Alike golden_bwd.c:dq_block: kept apart because this pass lays its blocks out query-major (x and dp are [nr][nc], Q .
 * K^T) and that one key-major ([nc][nr], K . Q^T); one loop would need an index transform in the innermost loop. */
static void dkv_block(const gd_ctx *c, const fr_bwd_inputs *in, const fr_bwd_outputs *out, const gd_batch *bt,
                      int64_t n2, int64_t j0, int64_t nc, const double *Dall, int64_t TQ, bwd_ws *w) {
    const fr_problem *pb = c->pb;
    const fr_layout L = pb->layout;
    const int64_t Dk = pb->Dk, Dv = pb->Dv, Dr = c->has_rope ? pb->Drope : 0, Dc = Dk + Dr;
    load_key_side(c, in, bt, n2, j0, nc, w);
    gd_transpose(w->Kc, nc, Dc, w->Kt);
    gd_transpose(w->V, nc, Dv, w->Vt);
    memset(w->gk, 0, (size_t)(nc * Dc) * sizeof(double));
    memset(w->gv, 0, (size_t)(nc * Dv) * sizeof(double));
    for (int64_t g = 0; g < pb->G; g++) {
        int64_t h = n2 * pb->G + g;
        for (int64_t i0 = 0; i0 < bt->S1; i0 += GD_BR) {
            int64_t nr = bt->S1 - i0 < GD_BR ? bt->S1 - i0 : GD_BR;
            const double *Dsaved = Dall + (h * TQ + c->qblk[bt->b] + i0 / GD_BR) * GD_BR;
            load_query_side(c, in, bt, h, i0, nr, Dsaved, w);
            /* x: [nr][nc] = Qc . Kt */
            if (gd_scores_mm(c, bt, h, i0, nr, j0, nc, w->Qc, w->Kt, Dc, false, w->qs, w->ks, w->x, w->cnt) == 0)
                continue;
            /* dp: [nr][nc] = dY . Vt */
            memset(w->dp, 0, (size_t)(nr * nc) * sizeof(double));
            c->mm(nr, nc, Dv, w->dY, Dv, 1, w->Vt, nc, w->dp, nc);
            for (int64_t r = 0; r < nr; r++)
                for (int64_t col = 0; col < nc; col++) {
                    int64_t k = r * nc + col;
                    int32_t cn = w->cnt[k];
                    double pz = 0.0, ds = 0.0;
                    if (cn)
                        ds = grad_point(c, bt, h, i0 + r, j0 + col, cn, w->x[k], w->m[r], w->l[r], w->Dr_[r],
                                        w->dp[k], w->vs[col], &pz);
                    w->ds[k] = c->fp8 ? ds * w->qs[r] : ds;
                    w->pz[k] = pz;
                }
            /* gk: [nc][Dc] += dS^T: [nc][nr] . Qc: [nr][Dc];  gv: [nc][Dv] += Pz^T: [nc][nr] . dY: [nr][Dv] */
            gd_mm(c->mm, nc, Dc, nr, w->ds, 1, nc, w->Qc, Dc, w->gk, Dc);
            gd_mm(c->mm, nc, Dv, nr, w->pz, 1, nc, w->dY, Dv, w->gv, Dv);
        }
    }
    store_rows(&out->dk, L, Dk, bt->kv0, bt->b, n2, j0, nc, w->gk, Dc, c->scale);
    store_rows(&out->dv, L, Dv, bt->kv0, bt->b, n2, j0, nc, w->gv, Dv, 1.0);
    if (Dr) store_rows(&out->dk_rope, L, Dr, bt->kv0, bt->b, n2, j0, nc, w->gk + Dk, Dc, c->scale);
}

static fr_status bwd_run(const fr_problem *pb, const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out,
                         const fr_engine *e, const fr_golden_part *part, fr_golden_alt a, fr_error *err);

/* Alike golden_fwd.c:fr_golden_fwd, fr_golden_fwd_part and fr_golden_fwd_alt: kept apart because only the
 * entry shape is alike: the backward takes its own inputs and outputs and runs its own passes after the shared
 * gd_ctx_init. */
fr_status fr_golden_bwd(const fr_problem *pb, const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out,
                        const fr_engine *e, fr_error *err) {
    return fr_golden_bwd_part(pb, p, in, out, e, NULL, err);
}

fr_status fr_golden_bwd_part(const fr_problem *pb, const fr_params *p, const fr_bwd_inputs *in,
                             const fr_bwd_outputs *out, const fr_engine *e, const fr_golden_part *part,
                             fr_error *err) {
    return bwd_run(pb, p, in, out, e, part, FR_GALT_NONE, err);
}

fr_status fr_golden_bwd_alt(const fr_problem *pb, const fr_params *p, const fr_bwd_inputs *in,
                            const fr_bwd_outputs *out, const fr_engine *e, fr_golden_alt a, fr_error *err) {
    if ((unsigned)a >= FR_GALT_COUNT) return fr_fail(err, FR_E_INVALID_ARG, "golden: alternative %d unknown", (int)a);
    return bwd_run(pb, p, in, out, e, NULL, a, err);
}

/* The backward's tasks of `part` (all when NULL) under reading a (golden_alt.h; FR_GALT_NONE: the decisions). */
static fr_status bwd_run(const fr_problem *pb, const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out,
                         const fr_engine *e, const fr_golden_part *part, fr_golden_alt a, fr_error *err) {
    gd_ctx c;
    fr_status st = gd_ctx_init(&c, pb, p, &in->fwd, err);
    if (st != FR_OK) return st;
    c.alt = (int)a;
    if ((st = gd_ctx_pick(&c, e, err)) != FR_OK) {
        gd_ctx_free(&c);
        return st;
    }
    const int64_t TQ = c.qblk[pb->B], TK = c.kvblk[pb->B];
    int64_t na, nb;
    if (!fr_mul_ok(TQ, pb->N1, &na) || !fr_mul_ok(TK, pb->N2, &nb)) {
        gd_ctx_free(&c);
        return fr_fail(err, FR_E_OVERFLOW, "golden: task count overflows (N1 = %lld)", (long long)pb->N1);
    }
    int64_t a0, a1, b0, b1;
    fr_golden_part_range(part, na, &a0, &a1);
    fr_golden_part_range(part, nb, &b0, &b1);
    int nt = gd_threads(e);
    int64_t most = na > nb ? na : nb;
    if (most < nt) nt = most > 0 ? (int)most : 1;
    size_t wsb = (bwd_ws_bytes(pb) + 63) & ~(size_t)63;
    char *mem = aligned_alloc(64, wsb * (size_t)nt);
    double *sinkp = malloc((size_t)(na > 0 ? na : 1) * sizeof(double));
    /* D_i of every (head, row), read by both passes: O(rows), 1/Dv of dy's size. */
    double *Dall = malloc((size_t)(na > 0 ? na : 1) * GD_BR * sizeof(double));
    /* A part's pre-pass computes only the rows it reads (its inputs may hold no others: src/dist reads per part). */
    unsigned char *need = NULL;
    int64_t nneed = na;
    int nrc = 0;
    if (part && part->size > 1) need = fr_golden_bwd_need(pb, part, &nneed, &nrc);
    if (!mem || !sinkp || !Dall || nrc || nneed != na) {
        free(mem);
        free(sinkp);
        free(Dall);
        free(need);
        gd_ctx_free(&c);
        if (nrc == (int)FR_E_OVERFLOW) return fr_fail(err, FR_E_OVERFLOW, "golden: task count overflows");
        if (!nrc && nneed != na) /* a need that failed (nrc) has no tasks: its status, not this */
            return fr_fail(err, FR_E_INTERNAL, "golden: the part's need has %lld tasks, not %lld", (long long)nneed,
                           (long long)na);
        return fr_fail(err, FR_E_NOMEM, "golden: cannot allocate %zu bytes of workspace", wsb * (size_t)nt);
    }
    fr_progress pr; /* passes A and B (the pre-pass is O(rows)) */
    fr_progress_start(&pr, e, (a1 - a0) + (b1 - b0));
#pragma omp parallel num_threads(nt)
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        bwd_ws w = bwd_ws_carve(pb, mem + wsb * (size_t)tid);
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < na; t++) {
            int64_t h = t / TQ, g = t % TQ;
            int64_t b = gd_find_batch(c.qblk, pb->B, g);
            gd_batch bt = gd_batch_of(&c, b);
            int64_t i0 = (g - c.qblk[b]) * GD_BR;
            int64_t nr = bt.S1 - i0 < GD_BR ? bt.S1 - i0 : GD_BR;
            if (need && !(need[t] & FR_GOLDEN_NEED_D)) {
                sinkp[t] = NAN;
                for (int64_t r = 0; r < GD_BR; r++) Dall[t * GD_BR + r] = NAN;
                continue;
            }
            sinkp[t] = row_terms(&c, in, &bt, h, i0, nr, Dall + t * GD_BR, &w);
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = a0; t < a1; t++) {
            int64_t h = t / TQ, g = t % TQ;
            int64_t b = gd_find_batch(c.qblk, pb->B, g);
            gd_batch bt = gd_batch_of(&c, b);
            int64_t i0 = (g - c.qblk[b]) * GD_BR;
            int64_t nr = bt.S1 - i0 < GD_BR ? bt.S1 - i0 : GD_BR;
            dq_block(&c, in, out, &bt, h, i0, nr, Dall + t * GD_BR, &w);
            fr_progress_add(&pr, 1);
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = b0; t < b1; t++) {
            int64_t n2 = t / TK, g = t % TK;
            int64_t b = gd_find_batch(c.kvblk, pb->B, g);
            gd_batch bt = gd_batch_of(&c, b);
            int64_t j0 = (g - c.kvblk[b]) * GD_BC;
            int64_t nc = bt.S2 - j0 < GD_BC ? bt.S2 - j0 : GD_BC;
            dkv_block(&c, in, out, &bt, n2, j0, nc, Dall, TQ, &w);
            fr_progress_add(&pr, 1);
        }
    }
    fr_progress_end(&pr);
    /* dsink_h: the row terms of head h in (b, i) order (tasks of head h are contiguous and ordered). */
    if (c.has_sink && fr_tensor_present(&out->dsink) && (!part || part->rank == 0))
        for (int64_t h = 0; h < pb->N1; h++) {
            double s = 0.0;
            for (int64_t g = 0; g < TQ; g++) s += sinkp[h * TQ + g];
            fr_store_f64(&out->dsink, h * out->dsink.strides[0], s);
        }
    free(need);
    free(Dall);
    free(sinkp);
    free(mem);
    gd_ctx_free(&c);
    return FR_OK;
}
