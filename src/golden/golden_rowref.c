/* The row reference of the golden forward: the previous golden algorithm, kept as the plain reference the blocked
 * golden (golden_fwd.c) is tested against, e.g. on a few rows of an S2 = 65536 problem (tests/golden).
 * Per query row block: keys in blocks of GD_BC with an exact-max online softmax in fp64, each score a sequential
 * mul-then-add sum over d (gd_gemm_nt), each output acc[d] += p * v[d] one key at a time. No fma, no SIMD
 * intrinsics: it means the same everywhere (style.md 13). It computes any subset of rows: rows are independent. */
#include "golden/golden_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>


typedef struct fwd_ws {
    double *Q, *Qr, *qs, *K, *Kr, *V, *ks, *vs, *x, *acc, *m, *l;
    int32_t *cnt;
    int64_t *npart;
} fwd_ws;

static size_t fwd_ws_bytes(const fr_problem *pb) {
    int64_t Dk = pb->Dk, Dr = pb->Drope, Dv = pb->Dv;
    int64_t nd = GD_BR * (Dk + Dr + 1 + Dv + 2) + GD_BC * (Dk + Dr + Dv + 2) + GD_BR * GD_BC;
    return (size_t)nd * sizeof(double) + (size_t)(GD_BR * GD_BC) * sizeof(int32_t) + GD_BR * sizeof(int64_t);
}

static fwd_ws fwd_ws_carve(const fr_problem *pb, char *mem) {
    int64_t Dk = pb->Dk, Dr = pb->Drope, Dv = pb->Dv;
    fwd_ws w;
    double *d = (double *)mem;
    w.Q = d; d += GD_BR * Dk;
    w.Qr = d; d += GD_BR * Dr;
    w.qs = d; d += GD_BR;
    w.acc = d; d += GD_BR * Dv;
    w.m = d; d += GD_BR;
    w.l = d; d += GD_BR;
    w.K = d; d += GD_BC * Dk;
    w.Kr = d; d += GD_BC * Dr;
    w.V = d; d += GD_BC * Dv;
    w.ks = d; d += GD_BC;
    w.vs = d; d += GD_BC;
    w.x = d; d += GD_BR * GD_BC;
    w.cnt = (int32_t *)d;
    w.npart = (int64_t *)(w.cnt + GD_BR * GD_BC);
    return w;
}

/* Alike golden_fwd.c:fwd_block (the row finish): kept apart because this row reference is the independent check
 * test_golden_long runs the blocked golden against; a shared output step would carry one bug into both. */
static void fwd_block(const gd_ctx *c, const fr_fwd_outputs *out, const gd_batch *bt, int64_t h, int64_t i0,
                      int64_t nr, fwd_ws *w) {
    const fr_problem *pb = c->pb;
    const fr_fwd_inputs *in = c->in;
    const fr_layout L = pb->layout;
    const int64_t Dk = pb->Dk, Dv = pb->Dv, Dr = c->has_rope ? pb->Drope : 0, n2 = h / pb->G, b = bt->b;
    gd_load_rows(&in->query, L, Dk, bt->q0, b, h, i0, nr, w->Q);
    if (Dr) gd_load_rows(&in->query_rope, L, Dr, bt->q0, b, h, i0, nr, w->Qr);
    const double sink = c->has_sink ? gd_sink(c, h) : 0.0;
    for (int64_t r = 0; r < nr; r++) {
        w->qs[r] = gd_qscale(c, bt, h, i0 + r);
        /* With a sink the row starts with its one logit: m = sink, l = exp(sink - m) = 1 (D6). */
        w->m[r] = c->has_sink ? sink : -INFINITY;
        w->l[r] = c->has_sink ? 1.0 : 0.0;
        w->npart[r] = 0;
        for (int64_t d = 0; d < Dv; d++) w->acc[r * Dv + d] = 0.0;
    }
    for (int64_t j0 = 0; j0 < bt->S2; j0 += GD_BC) {
        int64_t nc = bt->S2 - j0 < GD_BC ? bt->S2 - j0 : GD_BC;
        gd_load_rows(&in->key, L, Dk, bt->kv0, b, n2, j0, nc, w->K);
        if (Dr) gd_load_rows(&in->key_rope, L, Dr, bt->kv0, b, n2, j0, nc, w->Kr);
        for (int64_t col = 0; col < nc; col++) {
            w->ks[col] = gd_kscale(c, &in->d_scale_k, bt, n2, j0 + col);
            w->vs[col] = gd_kscale(c, &in->d_scale_v, bt, n2, j0 + col);
        }
        if (gd_scores(c, bt, h, i0, nr, j0, nc, w->Q, w->Qr, w->qs, w->K, w->Kr, w->ks, w->x, w->cnt) == 0) continue;
        gd_load_rows(&in->value, L, Dv, bt->kv0, b, n2, j0, nc, w->V);
        for (int64_t r = 0; r < nr; r++) {
            const int32_t *cr = w->cnt + r * nc;
            const double *xr = w->x + r * nc;
            double bm = -INFINITY;
            int64_t np = 0;
            for (int64_t col = 0; col < nc; col++)
                if (cr[col]) {
                    np++;
                    /* NaN scores must propagate: take a NaN as the max. */
                    if (!(xr[col] <= bm)) bm = xr[col];
                }
            if (np == 0) continue;
            w->npart[r] += np;
            double *acc = w->acc + r * Dv;
            if (!(bm <= w->m[r])) {
                double alpha = exp(w->m[r] - bm); /* 0 when m was -inf */
                w->l[r] *= alpha;
                for (int64_t d = 0; d < Dv; d++) acc[d] *= alpha;
                w->m[r] = bm;
            }
            const double m = w->m[r];
            for (int64_t col = 0; col < nc; col++) {
                if (!cr[col]) continue;
                double e = (double)cr[col] * exp(xr[col] - m);
                w->l[r] += e; /* the sum excludes dropout (spec 3 step 5) */
                double z = gd_drop_z(c, bt, h, i0 + r, j0 + col);
                if (z == 0.0) continue; /* dropped: contributes exactly 0, whatever V holds */
                double pw = e * z * w->vs[col];
                const double *v = w->V + col * Dv;
                for (int64_t d = 0; d < Dv; d++) acc[d] += pw * v[d];
            }
        }
    }
    for (int64_t r = 0; r < nr; r++) {
        int64_t i = i0 + r;
        double m = w->m[r], l = w->l[r];
        const double *acc = w->acc + r * Dv;
        bool empty = w->npart[r] == 0 && !c->has_sink; /* D1: no position takes part and no sink */
        if (empty) {
            m = -FLT_MAX;
            l = FLT_MAX;
        }
        if (fr_tensor_present(&out->attention_out)) {
            const fr_tensor *o = &out->attention_out;
            int64_t base = fr_layout_offset(o, L, Dv, bt->q0, b, h, i, 0), sd = Dv ? o->strides[o->ndim - 1] : 0;
            for (int64_t d = 0; d < Dv; d++) fr_store_f64(o, base + d * sd, w->npart[r] == 0 ? 0.0 : acc[d] / l);
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

fr_status gd_rowref_fwd_rows(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out, int64_t b,
                            int64_t h, int64_t i0, int64_t n, fr_error *err) {
    fr_problem pb;
    fr_status st = fr_problem_from_fwd(p, in, &pb, err);
    if (st != FR_OK) return st;
    if (b < 0 || b >= pb.B || h < 0 || h >= pb.N1)
        return fr_fail(err, FR_E_RANGE, "golden rowref: batch %lld / head %lld out of range", (long long)b,
                       (long long)h);
    gd_ctx c;
    if ((st = gd_ctx_init(&c, &pb, p, in, err)) != FR_OK) return st;
    gd_batch bt = gd_batch_of(&c, b);
    if (i0 < 0 || n < 0 || i0 + n > bt.S1) {
        gd_ctx_free(&c);
        return fr_fail(err, FR_E_RANGE, "golden rowref: rows [%lld, %lld) outside batch %lld's %lld rows",
                       (long long)i0, (long long)(i0 + n), (long long)b, (long long)bt.S1);
    }
    char *mem = malloc(fwd_ws_bytes(&pb));
    if (!mem) {
        gd_ctx_free(&c);
        return fr_fail(err, FR_E_NOMEM, "golden rowref: cannot allocate its workspace");
    }
    fwd_ws w = fwd_ws_carve(&pb, mem);
    for (int64_t r = i0; r < i0 + n; r += GD_BR) {
        int64_t nr = i0 + n - r < GD_BR ? i0 + n - r : GD_BR;
        fwd_block(&c, out, &bt, h, r, nr, &w);
    }
    free(mem);
    gd_ctx_free(&c);
    return FR_OK;
}
