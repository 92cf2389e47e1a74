/* Golden backward (spec 8.2, D13): P recomputed from the given softmax_max / softmax_sum (column 0), D_i from
 * the given attention_in. Two passes, no atomics:
 *   pass A, per (b, h, block of query rows): dq, dq_rope and each row's dsink term;
 *   pass B, per (b, n2, block of keys): dk, dv, dk_rope, summing the G query heads of the group in order.
 * dsink_h sums the per-row terms of head h in (b, i) order after pass A. Bit-identical for any thread count. */
#include "engine/engines.h"
#include "golden/golden_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct bwd_ws {
    double *Q, *Qr, *qs, *dY, *Dr_, *m, *l;       /* query side: GD_BR rows */
    double *K, *Kr, *V, *ks, *vs;                  /* key side: GD_BC rows */
    double *x, *dp, *gq, *gqr, *gk, *gkr, *gv, *tmp; /* scores, dy.v; gradient accumulators */
    int32_t *cnt;
} bwd_ws;

static size_t bwd_ws_bytes(const fr_problem *pb) {
    int64_t Dk = pb->Dk, Dr = pb->Drope, Dv = pb->Dv;
    int64_t D = Dk > Dv ? Dk : Dv;
    int64_t nd = GD_BR * (Dk + Dr + 1 + Dv + 3) + GD_BC * (Dk + Dr + Dv + 2) + 2 * GD_BR * GD_BC +
                 GD_BR * (Dk + Dr) + GD_BC * (Dk + Dr + Dv) + D;
    return (size_t)nd * sizeof(double) + (size_t)(GD_BR * GD_BC) * sizeof(int32_t);
}

static bwd_ws bwd_ws_carve(const fr_problem *pb, char *mem) {
    int64_t Dk = pb->Dk, Dr = pb->Drope, Dv = pb->Dv;
    int64_t D = Dk > Dv ? Dk : Dv;
    bwd_ws w;
    double *d = (double *)mem;
    w.Q = d; d += GD_BR * Dk;
    w.Qr = d; d += GD_BR * Dr;
    w.qs = d; d += GD_BR;
    w.dY = d; d += GD_BR * Dv;
    w.Dr_ = d; d += GD_BR;
    w.m = d; d += GD_BR;
    w.l = d; d += GD_BR;
    w.K = d; d += GD_BC * Dk;
    w.Kr = d; d += GD_BC * Dr;
    w.V = d; d += GD_BC * Dv;
    w.ks = d; d += GD_BC;
    w.vs = d; d += GD_BC;
    w.x = d; d += GD_BR * GD_BC;
    w.dp = d; d += GD_BR * GD_BC;
    w.gq = d; d += GD_BR * Dk;
    w.gqr = d; d += GD_BR * Dr;
    w.gk = d; d += GD_BC * Dk;
    w.gkr = d; d += GD_BC * Dr;
    w.gv = d; d += GD_BC * Dv;
    w.tmp = d; d += D;
    w.cnt = (int32_t *)d;
    return w;
}

/* Query-side data of rows [i0, i0+nr) of head h: Q, Q_rope, fp8 scales, dY, D_i = sum_d dY*attention_in, and the
 * stored m, l (column 0). */
static void load_query_side(const gd_ctx *c, const fr_bwd_inputs *in, const gd_batch *bt, int64_t h, int64_t i0,
                            int64_t nr, bwd_ws *w) {
    const fr_problem *pb = c->pb;
    const fr_layout L = pb->layout;
    const int64_t Dk = pb->Dk, Dv = pb->Dv, Dr = c->has_rope ? pb->Drope : 0, b = bt->b;
    gd_load_rows(&in->fwd.query, L, Dk, bt->q0, b, h, i0, nr, w->Q);
    if (Dr) gd_load_rows(&in->fwd.query_rope, L, Dr, bt->q0, b, h, i0, nr, w->Qr);
    gd_load_rows(&in->dy, L, Dv, bt->q0, b, h, i0, nr, w->dY);
    for (int64_t r = 0; r < nr; r++) {
        int64_t i = i0 + r;
        w->qs[r] = gd_qscale(c, bt, h, i);
        gd_load_rows(&in->attention_in, L, Dv, bt->q0, b, h, i, 1, w->tmp);
        w->Dr_[r] = gd_dot(w->dY + r * Dv, w->tmp, Dv);
        w->m[r] = fr_load_f64(&in->softmax_max,
                              fr_softmax_offset(&in->softmax_max, L, c->p->softmax_layout, bt->q0, b, h, i, 0));
        w->l[r] = fr_load_f64(&in->softmax_sum,
                              fr_softmax_offset(&in->softmax_sum, L, c->p->softmax_layout, bt->q0, b, h, i, 0));
    }
}

static void load_key_side(const gd_ctx *c, const fr_bwd_inputs *in, const gd_batch *bt, int64_t n2, int64_t j0,
                          int64_t nc, bool need_v, bwd_ws *w) {
    const fr_problem *pb = c->pb;
    const fr_layout L = pb->layout;
    const int64_t Dk = pb->Dk, Dv = pb->Dv, Dr = c->has_rope ? pb->Drope : 0, b = bt->b;
    gd_load_rows(&in->fwd.key, L, Dk, bt->kv0, b, n2, j0, nc, w->K);
    if (Dr) gd_load_rows(&in->fwd.key_rope, L, Dr, bt->kv0, b, n2, j0, nc, w->Kr);
    if (need_v) gd_load_rows(&in->fwd.value, L, Dv, bt->kv0, b, n2, j0, nc, w->V);
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
    double z = gd_drop_z(c, bt, h, i, j);
    /* A dropped position has dP' = 0 whatever V holds (NaN/Inf there must not leak). */
    double dp = z == 0.0 ? 0.0 : z * (dyv * vs);
    *pz = (double)cnt * p * z;
    return (double)cnt * p * (dp - D);
}

/* Stores src[r][0..D) * factor into rows [i0, i0+nr) of head n of t (row0: the batch's first row in T). */
static void store_rows(const fr_tensor *t, fr_layout L, int64_t D, int64_t row0, int64_t b, int64_t n, int64_t i0,
                       int64_t nr, const double *src, double factor) {
    if (!fr_tensor_present(t) || D == 0) return;
    int64_t sd = t->strides[t->ndim - 1];
    for (int64_t r = 0; r < nr; r++) {
        int64_t base = fr_layout_offset(t, L, D, row0, b, n, i0 + r, 0);
        for (int64_t d = 0; d < D; d++) fr_store_f64(t, base + d * sd, src[r * D + d] * factor);
    }
}

/* Pass A: dq, dq_rope of rows [i0, i0+nr) of head h; returns the block's dsink term -sum_i p_sink_i * D_i. */
static double dq_block(const gd_ctx *c, const fr_bwd_inputs *in, const fr_bwd_outputs *out, const gd_batch *bt,
                       int64_t h, int64_t i0, int64_t nr, bwd_ws *w) {
    const fr_problem *pb = c->pb;
    const fr_layout L = pb->layout;
    const int64_t Dk = pb->Dk, Dv = pb->Dv, Dr = c->has_rope ? pb->Drope : 0, n2 = h / pb->G;
    load_query_side(c, in, bt, h, i0, nr, w);
    memset(w->gq, 0, (size_t)(nr * Dk) * sizeof(double));
    if (Dr) memset(w->gqr, 0, (size_t)(nr * Dr) * sizeof(double));
    for (int64_t j0 = 0; j0 < bt->S2; j0 += GD_BC) {
        int64_t nc = bt->S2 - j0 < GD_BC ? bt->S2 - j0 : GD_BC;
        load_key_side(c, in, bt, n2, j0, nc, true, w);
        if (gd_scores(c, bt, h, i0, nr, j0, nc, w->Q, w->Qr, w->qs, w->K, w->Kr, w->ks, w->x, w->cnt) == 0) continue;
        gd_gemm_nt(w->dY, nr, w->V, nc, Dv, w->cnt, w->dp);
        for (int64_t r = 0; r < nr; r++)
            for (int64_t col = 0; col < nc; col++) {
                int32_t cn = w->cnt[r * nc + col];
                if (!cn) continue;
                double pz;
                double ds = grad_point(c, bt, h, i0 + r, j0 + col, cn, w->x[r * nc + col], w->m[r], w->l[r],
                                       w->Dr_[r], w->dp[r * nc + col], w->vs[col], &pz);
                /* fp8: the gradient carries the dequant scale of the operand it multiplies (D13). */
                double dk = ds * w->ks[col];
                const double *k = w->K + col * Dk;
                double *g = w->gq + r * Dk;
                for (int64_t d = 0; d < Dk; d++) g[d] += dk * k[d];
                if (Dr) {
                    const double *kr = w->Kr + col * Dr;
                    double *gr = w->gqr + r * Dr;
                    for (int64_t d = 0; d < Dr; d++) gr[d] += ds * kr[d];
                }
            }
    }
    store_rows(&out->dq, L, Dk, bt->q0, bt->b, h, i0, nr, w->gq, c->scale);
    if (Dr) store_rows(&out->dq_rope, L, Dr, bt->q0, bt->b, h, i0, nr, w->gqr, c->scale);
    double part = 0.0;
    if (c->has_sink) {
        double sink = gd_sink(c, h);
        for (int64_t r = 0; r < nr; r++) part -= exp(sink - w->m[r]) / w->l[r] * w->Dr_[r];
    }
    return part;
}

/* Pass B: dk, dv, dk_rope of keys [j0, j0+nc) of kv head n2, summed over the group's G query heads. */
static void dkv_block(const gd_ctx *c, const fr_bwd_inputs *in, const fr_bwd_outputs *out, const gd_batch *bt,
                      int64_t n2, int64_t j0, int64_t nc, bwd_ws *w) {
    const fr_problem *pb = c->pb;
    const fr_layout L = pb->layout;
    const int64_t Dk = pb->Dk, Dv = pb->Dv, Dr = c->has_rope ? pb->Drope : 0;
    load_key_side(c, in, bt, n2, j0, nc, true, w);
    memset(w->gk, 0, (size_t)(nc * Dk) * sizeof(double));
    memset(w->gv, 0, (size_t)(nc * Dv) * sizeof(double));
    if (Dr) memset(w->gkr, 0, (size_t)(nc * Dr) * sizeof(double));
    for (int64_t g = 0; g < pb->G; g++) {
        int64_t h = n2 * pb->G + g;
        for (int64_t i0 = 0; i0 < bt->S1; i0 += GD_BR) {
            int64_t nr = bt->S1 - i0 < GD_BR ? bt->S1 - i0 : GD_BR;
            load_query_side(c, in, bt, h, i0, nr, w);
            if (gd_scores(c, bt, h, i0, nr, j0, nc, w->Q, w->Qr, w->qs, w->K, w->Kr, w->ks, w->x, w->cnt) == 0)
                continue;
            gd_gemm_nt(w->dY, nr, w->V, nc, Dv, w->cnt, w->dp);
            for (int64_t r = 0; r < nr; r++)
                for (int64_t col = 0; col < nc; col++) {
                    int32_t cn = w->cnt[r * nc + col];
                    if (!cn) continue;
                    double pz;
                    double ds = grad_point(c, bt, h, i0 + r, j0 + col, cn, w->x[r * nc + col], w->m[r], w->l[r],
                                           w->Dr_[r], w->dp[r * nc + col], w->vs[col], &pz);
                    if (pz != 0.0) {
                        const double *dy = w->dY + r * Dv;
                        double *gv = w->gv + col * Dv;
                        for (int64_t d = 0; d < Dv; d++) gv[d] += pz * dy[d];
                    }
                    double dq = ds * w->qs[r];
                    const double *q = w->Q + r * Dk;
                    double *gk = w->gk + col * Dk;
                    for (int64_t d = 0; d < Dk; d++) gk[d] += dq * q[d];
                    if (Dr) {
                        const double *qr = w->Qr + r * Dr;
                        double *gkr = w->gkr + col * Dr;
                        for (int64_t d = 0; d < Dr; d++) gkr[d] += ds * qr[d];
                    }
                }
        }
    }
    store_rows(&out->dk, L, Dk, bt->kv0, bt->b, n2, j0, nc, w->gk, c->scale);
    store_rows(&out->dv, L, Dv, bt->kv0, bt->b, n2, j0, nc, w->gv, 1.0);
    if (Dr) store_rows(&out->dk_rope, L, Dr, bt->kv0, bt->b, n2, j0, nc, w->gkr, c->scale);
}

fr_status fr_golden_bwd(const fr_problem *pb, const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out,
                        const fr_engine *e, fr_error *err) {
    gd_ctx c;
    fr_status st = gd_ctx_init(&c, pb, p, &in->fwd, err);
    if (st != FR_OK) return st;
    const int64_t TQ = c.qblk[pb->B], TK = c.kvblk[pb->B];
    int64_t na, nb;
    if (!fr_mul_ok(TQ, pb->N1, &na) || !fr_mul_ok(TK, pb->N2, &nb)) {
        gd_ctx_free(&c);
        return fr_fail(err, FR_E_OVERFLOW, "golden: task count overflows (N1 = %lld)", (long long)pb->N1);
    }
    int nt = gd_threads(e);
    int64_t most = na > nb ? na : nb;
    if (most < nt) nt = most > 0 ? (int)most : 1;
    size_t wsb = (bwd_ws_bytes(pb) + 63) & ~(size_t)63;
    char *mem = malloc(wsb * (size_t)nt);
    double *part = malloc((size_t)(na > 0 ? na : 1) * sizeof(double));
    if (!mem || !part) {
        free(mem);
        free(part);
        gd_ctx_free(&c);
        return fr_fail(err, FR_E_NOMEM, "golden: cannot allocate %zu bytes of workspace", wsb * (size_t)nt);
    }
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
            part[t] = dq_block(&c, in, out, &bt, h, i0, nr, &w);
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < nb; t++) {
            int64_t n2 = t / TK, g = t % TK;
            int64_t b = gd_find_batch(c.kvblk, pb->B, g);
            gd_batch bt = gd_batch_of(&c, b);
            int64_t j0 = (g - c.kvblk[b]) * GD_BC;
            int64_t nc = bt.S2 - j0 < GD_BC ? bt.S2 - j0 : GD_BC;
            dkv_block(&c, in, out, &bt, n2, j0, nc, &w);
        }
    }
    /* dsink_h: the row terms of head h in (b, i) order (tasks of head h are contiguous and ordered). */
    if (c.has_sink && fr_tensor_present(&out->dsink))
        for (int64_t h = 0; h < pb->N1; h++) {
            double s = 0.0;
            for (int64_t g = 0; g < TQ; g++) s += part[h * TQ + g];
            fr_store_f64(&out->dsink, h * out->dsink.strides[0], s);
        }
    free(part);
    free(mem);
    gd_ctx_free(&c);
    return FR_OK;
}
