/* Golden forward (spec section 3, D1-D8, D10-D12): per (b, h, block of GD_BR query rows) one task; keys in blocks of
 * GD_BC with an exact-max online softmax in fp64 (rescaled when the max grows), so the working memory is O(rows x D)
 * and never S1 x S2. The two products of a block, S = Q K^T and O += P V, go through the blocked fp64 product of
 * golden_gemm.h (an fma chain per element in a fixed order, the same bits for every ISA variant). Each output row
 * has one owner and a fixed reduction order: bit-identical for any thread count. golden_rowref.c keeps the previous
 * row algorithm as the reference this one is tested against. */
#include "core/progress.h"
#include "golden/golden_alt.h"
#include "golden/golden_entry.h"
#include "golden/golden_internal.h"
#include "golden/golden_part.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct fwd_ws {
    double *Qc;          /* [GD_BR][Dc]: q | q_rope of each row, as loaded */
    double *Qt;          /* [Dc][GD_BR] = Qc^T */
    double *qs;          /* [GD_BR] fp8 dequant scale of q */
    double *acc;         /* [GD_BR][Dv] unnormalised output */
    double *m, *l, *bm;  /* [GD_BR] running max and sum, the block's max */
    double *Kc;          /* [GD_BC][Dc]: k | k_rope of each key */
    double *V;           /* [GD_BC][Dv] */
    double *ks, *vs;     /* [GD_BC] fp8 dequant scales of k, v */
    double *x, *P;       /* [GD_BC][GD_BR] scaled scores and weights p * z * vs, transposed (key-major) */
    int32_t *cnt;        /* [GD_BC][GD_BR] multiplicity of each position, transposed */
    int64_t *npart;      /* [GD_BR] positions that took part */
} fwd_ws;

static size_t fwd_ws_bytes(const fr_problem *pb) {
    int64_t Dk = pb->Dk, Dr = pb->Drope, Dv = pb->Dv, Dc = Dk + Dr;
    int64_t nd = GD_BR * (2 * Dc + 1 + Dv + 3) + GD_BC * (Dc + Dv + 2) + 2 * GD_BR * GD_BC;
    return (size_t)nd * sizeof(double) + (size_t)(GD_BR * GD_BC) * sizeof(int32_t) + GD_BR * sizeof(int64_t);
}

static fwd_ws fwd_ws_carve(const fr_problem *pb, char *mem) {
    int64_t Dk = pb->Dk, Dr = pb->Drope, Dv = pb->Dv, Dc = Dk + Dr;
    fwd_ws w;
    double *d = (double *)mem;
    w.x = d; d += GD_BR * GD_BC; /* first: 64-byte aligned like the workspace */
    w.P = d; d += GD_BR * GD_BC;
    w.Qc = d; d += GD_BR * Dc;
    w.Qt = d; d += GD_BR * Dc;
    w.qs = d; d += GD_BR;
    w.acc = d; d += GD_BR * Dv;
    w.m = d; d += GD_BR;
    w.l = d; d += GD_BR;
    w.bm = d; d += GD_BR;
    w.Kc = d; d += GD_BC * Dc;
    w.V = d; d += GD_BC * Dv;
    w.ks = d; d += GD_BC;
    w.vs = d; d += GD_BC;
    w.cnt = (int32_t *)d;
    w.npart = (int64_t *)(w.cnt + GD_BR * GD_BC);
    return w;
}

/* Rows [i0, i0+nr) of head h of batch bt: the whole forward of one task (nr <= GD_BR). Per key block of nc <= GD_BC:
 * Qc: [nr][Dc] -> Qt: [Dc][nr], Kc: [nc][Dc], x = Kc . Qt: [nc][nr], P: [nc][nr], V: [nc][Dv], acc: [nr][Dv] += P^T V;
 * m, l: [nr]. Writes attention_out [nr][Dv] and softmax max / sum [nr][8] of these rows. */
/* Alike golden_rowref.c:fwd_block (the row finish): kept apart because the row reference is the independent check
 * test_golden_long runs the blocked golden against; a shared output step would carry one bug into both. */
static void fwd_block(const gd_ctx *c, const fr_fwd_outputs *out, const gd_batch *bt, int64_t h, int64_t i0,
                      int64_t nr, fwd_ws *w) {
    const fr_problem *pb = c->pb;
    const fr_fwd_inputs *in = c->in;
    const fr_layout L = pb->layout;
    const int64_t Dk = pb->Dk, Dv = pb->Dv, Dr = c->has_rope ? pb->Drope : 0, Dc = Dk + Dr, n2 = h / pb->G,
                  b = bt->b;
    gd_load_cat(&in->query, &in->query_rope, L, Dk, Dr, bt->q0, b, h, i0, nr, w->Qc);
    gd_transpose(w->Qc, nr, Dc, w->Qt);
    const double sink = c->has_sink ? gd_sink(c, h) : 0.0;
    for (int64_t r = 0; r < nr; r++) {
        w->qs[r] = gd_qscale(c, bt, h, i0 + r);
        /* With a sink the row starts with its one logit: m = sink, l = exp(sink - m) = 1 (D6). */
        w->m[r] = c->has_sink ? sink : -INFINITY;
        w->l[r] = c->has_sink ? 1.0 : 0.0;
        w->npart[r] = 0;
    }
    memset(w->acc, 0, (size_t)(nr * Dv) * sizeof(double));
    for (int64_t j0 = 0; j0 < bt->S2; j0 += GD_BC) {
        int64_t nc = bt->S2 - j0 < GD_BC ? bt->S2 - j0 : GD_BC;
        gd_load_cat(&in->key, &in->key_rope, L, Dk, Dr, bt->kv0, b, n2, j0, nc, w->Kc);
        for (int64_t col = 0; col < nc; col++) {
            w->ks[col] = gd_kscale(c, &in->d_scale_k, bt, n2, j0 + col);
            w->vs[col] = gd_kscale(c, &in->d_scale_v, bt, n2, j0 + col);
        }
        /* x: [nc][nr] = Kc . Qt */
        int64_t live = gd_scores_mm(c, bt, h, i0, nr, j0, nc, w->Kc, w->Qt, Dc, true, w->qs, w->ks, w->x, w->cnt);
        if (live == 0) continue;
        /* Every position takes part once (no mask in this block, no top-k): the same arithmetic without the tests. */
        const bool full = live == nr * nc && !c->has_topk;
        gd_load_rows(&in->value, L, Dv, bt->kv0, b, n2, j0, nc, w->V);
        /* The block's max of each row over its live positions; NaN scores must propagate: a NaN becomes the max. */
        int64_t np[GD_BR];
        double *bm = w->bm;
        for (int64_t r = 0; r < nr; r++) {
            bm[r] = -INFINITY;
            np[r] = full ? nc : 0;
        }
        for (int64_t col = 0; col < nc; col++) {
            const int32_t *cc = w->cnt + col * nr;
            const double *xc = w->x + col * nr;
            if (full)
                for (int64_t r = 0; r < nr; r++) bm[r] = !(xc[r] <= bm[r]) ? xc[r] : bm[r];
            else
                for (int64_t r = 0; r < nr; r++)
                    if (cc[r]) {
                        np[r]++;
                        if (!(xc[r] <= bm[r])) bm[r] = xc[r];
                    }
        }
        for (int64_t r = 0; r < nr; r++) {
            if (np[r] == 0) continue;
            w->npart[r] += np[r];
            if (!(bm[r] <= w->m[r])) {
                double alpha = exp(w->m[r] - bm[r]); /* 0 when m was -inf */
                w->l[r] *= alpha;
                double *acc = w->acc + r * Dv;
                for (int64_t d = 0; d < Dv; d++) acc[d] *= alpha;
                w->m[r] = bm[r];
            }
        }
        /* Weights, key by key (each row's sum l in key order). */
        const double *m = w->m;
        double *l = w->l;
        for (int64_t col = 0; col < nc; col++) {
            const int32_t *cc = w->cnt + col * nr;
            const double *xc = w->x + col * nr;
            double *pc = w->P + col * nr;
            if (full && !c->drop && !c->fp8) {
                for (int64_t r = 0; r < nr; r++) pc[r] = exp(xc[r] - m[r]);
                for (int64_t r = 0; r < nr; r++) l[r] += pc[r];
                continue;
            }
            for (int64_t r = 0; r < nr; r++) {
                pc[r] = 0.0;
                if (!cc[r]) continue;
                double e = (double)cc[r] * exp(xc[r] - m[r]);
                l[r] += e; /* the sum excludes dropout (spec 3 step 5) */
                double z = c->drop ? gd_drop_z(c, bt, h, i0 + r, j0 + col) : 1.0;
                /* A dropped position has weight exactly 0 and gd_mm skips it, whatever V holds. */
                pc[r] = e * z * w->vs[col];
            }
        }
        /* acc: [nr][Dv] += P: [nr][nc] (stored transposed) . V: [nc][Dv] */
        gd_mm(c->mm, nr, Dv, nc, w->P, 1, nr, w->V, Dv, w->acc, Dv);
    }
    for (int64_t r = 0; r < nr; r++) {
        int64_t i = i0 + r;
        double m = w->m[r], l = w->l[r];
        const double *acc = w->acc + r * Dv;
        bool empty = w->npart[r] == 0 && !c->has_sink; /* D1: no position takes part and no sink */
        /* A NaN score that took part (or +inf ones: exp(inf - inf)) leaves l NaN: the whole row is NaN, its max
         * too, wherever in the row the NaN was (the block max above does not keep a NaN once a later key beats it). */
        bool nan = isnan(l) || isnan(m);
        if (nan) {
            m = NAN;
            l = NAN;
        } else if (empty) {
            m = -FLT_MAX;
            l = FLT_MAX;
        }
        if (fr_tensor_present(&out->attention_out)) {
            const fr_tensor *o = &out->attention_out;
            int64_t base = fr_layout_offset(o, L, Dv, bt->q0, b, h, i, 0), sd = Dv ? o->strides[o->ndim - 1] : 0;
            for (int64_t d = 0; d < Dv; d++)
                fr_store_f64(o, base + d * sd, nan ? NAN : w->npart[r] == 0 ? 0.0 : acc[d] / l);
        }
        for (int64_t k = 0; k < 8; k++) {
            if (fr_tensor_present(&out->softmax_max))
                fr_store_f64(&out->softmax_max,
                             fr_softmax_offset(&out->softmax_max, L, c->p->softmax_layout, bt->q0, b, h, i, k), m);
            if (fr_tensor_present(&out->softmax_sum))
                fr_store_f64(&out->softmax_sum,
                             fr_softmax_offset(&out->softmax_sum, L, c->p->softmax_layout, bt->q0, b, h, i, k), l);
        }
    }
}

static fr_status fwd_run(const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                         const fr_engine *e, const fr_golden_part *part, fr_golden_alt a, fr_error *err);

/* Alike golden_bwd.c:fr_golden_bwd, fr_golden_bwd_part and fr_golden_bwd_alt: kept apart because only the
 * entry shape is alike: the forward takes its own inputs and outputs and runs its own blocks after the shared
 * gd_ctx_init. */
fr_status fr_golden_fwd(const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                        const fr_engine *e, fr_error *err) {
    return fr_golden_fwd_part(pb, p, in, out, e, NULL, err);
}

fr_status fr_golden_fwd_part(const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in,
                             const fr_fwd_outputs *out, const fr_engine *e, const fr_golden_part *part,
                             fr_error *err) {
    return fwd_run(pb, p, in, out, e, part, FR_GALT_NONE, err);
}

fr_status fr_golden_fwd_alt(const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in,
                            const fr_fwd_outputs *out, const fr_engine *e, fr_golden_alt a, fr_error *err) {
    if ((unsigned)a >= FR_GALT_COUNT) return fr_fail(err, FR_E_INVALID_ARG, "golden: alternative %d unknown", (int)a);
    return fwd_run(pb, p, in, out, e, NULL, a, err);
}

/* The forward's tasks of `part` (all when NULL) under reading a (golden_alt.h; FR_GALT_NONE: the decisions). */
static fr_status fwd_run(const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                         const fr_engine *e, const fr_golden_part *part, fr_golden_alt a, fr_error *err) {
    gd_ctx c;
    fr_status st = gd_ctx_init(&c, pb, p, in, err);
    if (st != FR_OK) return st;
    c.alt = (int)a;
    if ((st = gd_ctx_pick(&c, e, err)) != FR_OK) {
        gd_ctx_free(&c);
        return st;
    }
    const int64_t TB = c.qblk[pb->B];
    int64_t ntasks;
    if (!fr_mul_ok(TB, pb->N1, &ntasks)) {
        gd_ctx_free(&c);
        return fr_fail(err, FR_E_OVERFLOW, "golden: %lld row blocks x N1 = %lld overflows", (long long)TB,
                       (long long)pb->N1);
    }
    int64_t t0, t1;
    fr_golden_part_range(part, ntasks, &t0, &t1);
    int nt = gd_threads(e);
    if (t1 - t0 < nt) nt = t1 > t0 ? (int)(t1 - t0) : 1;
    size_t wsb = (fwd_ws_bytes(pb) + 63) & ~(size_t)63;
    char *mem = aligned_alloc(64, wsb * (size_t)nt);
    if (!mem) {
        gd_ctx_free(&c);
        return fr_fail(err, FR_E_NOMEM, "golden: cannot allocate %zu bytes of workspace", wsb * (size_t)nt);
    }
    fr_progress pr;
    fr_progress_start(&pr, e, t1 - t0);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int64_t t = t0; t < t1; t++) {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        fwd_ws w = fwd_ws_carve(pb, mem + wsb * (size_t)tid);
        int64_t h = t / TB, g = t % TB;
        int64_t b = gd_find_batch(c.qblk, pb->B, g);
        gd_batch bt = gd_batch_of(&c, b);
        int64_t i0 = (g - c.qblk[b]) * GD_BR;
        int64_t nr = bt.S1 - i0 < GD_BR ? bt.S1 - i0 : GD_BR;
        fwd_block(&c, out, &bt, h, i0, nr, &w);
        fr_progress_add(&pr, 1);
    }
    fr_progress_end(&pr);
    free(mem);
    gd_ctx_free(&c);
    return FR_OK;
}
