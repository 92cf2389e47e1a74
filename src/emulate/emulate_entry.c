/* The emulate engine: fr_fwd / fr_bwd with engine FR_ENGINE_EMULATE, and the _ex entry points of
 * flashref_emulate.h. Parallel over (batch, head, query tile) in the forward and over fixed row chunks of each
 * (batch, kv head) in the backward: every output element has one owner and a fixed reduction order, so results are
 * bit-identical for any thread count. */
#include "emulate/emulate_entry.h"
#include "core/core.h"
#include "core/progress.h"
#include "emulate/emu_internal.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define LOG2E 1.4426950408889634073599

fr_status fr_emulate_available(const fr_engine *e, fr_error *err) {
    if (e && e->numerics) return fr_numerics_check(e->numerics, err);
    return FR_OK;
}

static bool float_dtype(fr_dtype t) {
    return t == FR_F64 || t == FR_F32 || t == FR_F16 || t == FR_BF16 || t == FR_E4M3FN || t == FR_E5M2 ||
           t == FR_HIF8;
}

/* Value stored into an output of dtype dt: fp64 as is, fp32 by RNE, narrower formats with the configured rounding
 * (saturating, D3). */
static double out_value(double v, fr_dtype dt, fr_round r) {
    if (dt == FR_F64) return v;
    if (dt == FR_F32) return (double)(float)v;
    return fr_emu_round(v, dt, r, FR_SAT);
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Forward */

/* Alike emulate_entry.c:bwd_run: kept apart because each validates its own extra output (o_lo here, o_extra, the fp32 O
 * of the dpsum sum, there) before its own pass; they share only the default-numerics lines. */
static fr_status fwd_run(const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in,
                         const fr_fwd_outputs *out, const fr_numerics *nc, const fr_tensor *o_lo, int nthreads,
                         const fr_engine *e, fr_error *err) {
    fr_numerics ideal;
    if (!nc) {
        ideal = fr_numerics_ideal(pb->dtype);
        nc = &ideal;
    }
    bool want_lo = o_lo && fr_tensor_present(o_lo);
    if (want_lo && (!fr_tensor_same_shape(o_lo, &out->attention_out) || !float_dtype(o_lo->dtype) || !o_lo->data))
        return fr_fail(err, FR_E_OUTPUT, "o_lo: must have attention_out's shape and a float dtype (got %s)",
                       fr_dtype_name(o_lo->dtype));
    emu_ctx c;
    fr_status st = emu_ctx_init(&c, pb, p, in, nc, err);
    if (st != FR_OK) return st;
    if (nc->order == FR_EMU_ORDER_PERM) /* every row has the same slot count for top-k; dense rows: S2_b */
        for (int64_t b = 0; b < pb->B; b++) {
            int64_t nt = emu_ntiles(&c, emu_row_slots(&c, &c.batches[b]));
            if (nt != nc->perm_len && c.batches[b].S1 > 0 && nt > 0) {
                emu_ctx_free(&c);
                return fr_fail(err, FR_E_INVALID_ARG, "numerics.perm_len: %lld, but batch %lld has %lld KV tiles",
                               (long long)nc->perm_len, (long long)b, (long long)nt);
            }
        }
    /* Work units: (b, h, query tile). */
    int64_t *ustart = malloc(sizeof(int64_t) * (size_t)(pb->B + 1));
    if (!ustart) {
        emu_ctx_free(&c);
        return fr_fail(err, FR_E_NOMEM, "emulate: unit table");
    }
    ustart[0] = 0;
    int64_t maxslots = 0;
    for (int64_t b = 0; b < pb->B; b++) {
        int64_t nb = (c.batches[b].S1 + nc->q_tile - 1) / nc->q_tile;
        ustart[b + 1] = ustart[b] + nb * pb->N1;
        int64_t ns = emu_row_slots(&c, &c.batches[b]);
        if (ns > maxslots) maxslots = ns;
    }
    const int64_t units = ustart[pb->B], Dv = pb->Dv;
    const fr_tensor *ao = &out->attention_out, *sm = &out->softmax_max, *ss = &out->softmax_sum;
    bool nomem = false;
    fr_progress pr;
    fr_progress_start(&pr, e, units);
#pragma omp parallel num_threads(nthreads > 0 ? nthreads : omp_get_max_threads()) if (units > 1)
    {
        emu_row r;
        double *o = malloc(sizeof(double) * (size_t)(2 * Dv + 2));
        bool ok = o && emu_row_alloc(&r, maxslots, emu_ntiles(&c, maxslots)) == FR_OK;
        if (!ok) {
#pragma omp atomic write
            nomem = true;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t u = 0; u < units; u++) {
            if (!ok) continue;
            int64_t b = 0;
            while (ustart[b + 1] <= u) b++;
            const fr_sem_batch *sb = &c.batches[b];
            int64_t nb = (sb->S1 + nc->q_tile - 1) / nc->q_tile, w = u - ustart[b];
            int64_t h = w / nb, i0 = (w % nb) * nc->q_tile;
            int64_t i1 = i0 + nc->q_tile < sb->S1 ? i0 + nc->q_tile : sb->S1;
            for (int64_t i = i0; i < i1; i++) {
                double m, l;
                emu_row_scores(&c, sb, h, i, &r);
                (void)emu_fwd_row(&c, sb, h, i, &r, o, o + Dv, &m, &l);
                if (fr_tensor_present(ao))
                    for (int64_t d = 0; d < Dv; d++) {
                        double v = out_value(o[d], ao->dtype, nc->out_round);
                        fr_store_f64(ao, fr_layout_offset(ao, pb->layout, Dv, sb->q0, b, h, i, d), v);
                        if (want_lo)
                            fr_store_f64(o_lo, fr_layout_offset(o_lo, pb->layout, Dv, sb->q0, b, h, i, d),
                                         emu_rc(&c, o[d] - v));
                    }
                for (int64_t k = 0; k < 8; k++) {
                    if (fr_tensor_present(sm))
                        fr_store_f64(sm, fr_softmax_offset(sm, pb->layout, p->softmax_layout, sb->q0, b, h, i, k), m);
                    if (fr_tensor_present(ss))
                        fr_store_f64(ss, fr_softmax_offset(ss, pb->layout, p->softmax_layout, sb->q0, b, h, i, k), l);
                }
            }
            fr_progress_add(&pr, 1);
        }
        if (o) emu_row_free(&r);
        free(o);
    }
    free(ustart);
    emu_ctx_free(&c);
    if (nomem) return fr_fail(err, FR_E_NOMEM, "emulate: per-thread row scratch (%lld slots)", (long long)maxslots);
    fr_progress_end(&pr);
    return FR_OK;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Backward */

/* dS and P o Z in ds_dtype before the gradient products: a narrower format saturates (D3). To fp32 the cast changes
 * no fp32 value: an Inf (a non-finite dY or attention_in makes D_i one) stays Inf, as in the golden, rather than
 * saturating to FLT_MAX and leaving finite gradients where the golden's are not. */
static double ds_cast(double x, fr_dtype dt, fr_round r) {
    if (dt == FR_F32 && !isfinite(x)) return x;
    return fr_emu_round(x, dt, r, FR_SAT);
}

/* acc[0..n) += w * x[0..n) in the compute dtype. */
static void axpy(bool f32, double w, const void *x, int64_t n, double *acc) {
    if (f32) {
        const float *xf = x;
        for (int64_t d = 0; d < n; d++) acc[d] = (double)(float)(acc[d] + (double)(float)(w * (double)xf[d]));
    } else {
        const double *xd = x;
        for (int64_t d = 0; d < n; d++) acc[d] += w * xd[d];
    }
}

typedef struct bwd_arrays {
    void *dy, *osrc;         /* [N1][Tq][Dv] compute dtype */
    double *dq, *dqr;        /* [N1][Tq][Dk|Drope] */
    double *dk, *dkr, *dv;   /* [N2][Tk][D] */
    double *dsink;           /* [N1] */
} bwd_arrays;

static double *zalloc(int64_t n) { return calloc((size_t)(n > 0 ? n : 1), sizeof(double)); }

/* One chunk of rows [r0, r1) of the flattened (g, i) rows of (b, n2); dK/dV partials go to part (S2_b rows of
 * Dk + Drope + Dv), dsink partials to sinkp[G]. */
static void bwd_chunk(const emu_ctx *c, const fr_bwd_inputs *in, const bwd_arrays *A, int64_t b, int64_t n2,
                      int64_t r0, int64_t r1, double *part, double *sinkp, emu_row *r, double *scr) {
    const fr_problem *pb = c->pb;
    const fr_numerics *nc = c->nc;
    const fr_sem_batch *sb = &c->batches[b];
    const int64_t Dk = pb->Dk, Dv = pb->Dv, Dr = pb->Drope, G = pb->G, Dp = Dk + Dr + Dv;
    const size_t esz = c->f32 ? sizeof(float) : sizeof(double);
    const bool b2 = nc->exp_base == FR_EMU_EXP_2;
    double *dqa = scr, *dqra = scr + Dk, *ofwd = scr + Dk + Dr, *pv = ofwd + Dv;
    for (int64_t rr = r0; rr < r1; rr++) {
        int64_t g = rr / sb->S1, i = rr % sb->S1, h = n2 * G + g;
        int64_t qrow = emu_qrow(c, sb, i);
        const fr_tensor *tm = &in->softmax_max, *tl = &in->softmax_sum;
        double m = fr_load_f64(tm, fr_softmax_offset(tm, pb->layout, c->p->softmax_layout, sb->q0, b, h, i, 0));
        double l = fr_load_f64(tl, fr_softmax_offset(tl, pb->layout, c->p->softmax_layout, sb->q0, b, h, i, 0));
        if (m <= -FLT_MAX) continue; /* D1 row: gradients 0 (NaN stats go on: the row's gradients are NaN) */
        double msub = b2 ? emu_rc(c, m * LOG2E) : m, inv_l = emu_rc(c, 1.0 / l);
        emu_row_scores(c, sb, h, i, r);
        double lrep = 0.0;
        if (nc->bwd_p == FR_EMU_P_LOADED) {
            double mr;
            (void)emu_fwd_row(c, sb, h, i, r, ofwd, pv, &mr, &lrep);
            int64_t nt = emu_ntiles(c, r->n);
            /* suffix products of the later rescales: pv[t] = prod_{t' > t} alpha[t'] */
            double acc = 1.0;
            for (int64_t t = nt - 1; t >= 0; t--) {
                pv[t] = acc;
                acc = emu_rc(c, acc * r->alpha[t]);
            }
        }
        const char *dyv = (const char *)A->dy + (size_t)((h * c->ops.Tq + qrow) * Dv) * esz;
        const char *osv = (const char *)A->osrc + (size_t)((h * c->ops.Tq + qrow) * Dv) * esz;
        const char *qv = (const char *)c->ops.q + (size_t)((h * c->ops.Tq + qrow) * Dk) * esz;
        const char *qrv = Dr ? (const char *)c->ops.qr + (size_t)((h * c->ops.Tq + qrow) * Dr) * esz : NULL;
        double D = emu_dot(c->f32, dyv, osv, Dv);
        double dqs = pb->fp8 ? (double)fr_sem_dscale_q(&c->sem, sb, h, i) : 1.0;
        for (int64_t d = 0; d < Dk + Dr; d++) scr[d] = 0.0;
        for (int64_t u = 0; u < r->n; u++) {
            int64_t j = r->j[u];
            if (j < 0) continue;
            double z = r->z[u], P, Pz;
            if (nc->bwd_p == FR_EMU_P_LOADED) { /* the forward's rounded p, times the later rescales, over l */
                double sfx = pv[r->step[u]];
                bool live = lrep > 0 || isnan(lrep); /* NaN: a NaN score took part (golden.md 4) */
                P = live ? emu_rc(c, emu_rc(c, r->pu[u] * sfx) / lrep) : 0.0;
                Pz = live ? emu_rc(c, emu_rc(c, r->p[u] * sfx) / lrep) : 0.0;
            } else {
                P = emu_rc(c, emu_exp(c, emu_rc(c, r->y[u] - msub)) * inv_l);
                Pz = z == 1.0 ? P : emu_rc(c, P * z);
            }
            int64_t krow = emu_krow(c, sb, j);
            const char *kvp = (const char *)c->ops.k + (size_t)((n2 * c->ops.Tk + krow) * Dk) * esz;
            const char *vvp = (const char *)c->ops.v + (size_t)((n2 * c->ops.Tk + krow) * Dv) * esz;
            double dvs = pb->fp8 ? (double)fr_sem_dscale_v(&c->sem, sb, n2, j) : 1.0;
            double dks = pb->fp8 ? (double)fr_sem_dscale_k(&c->sem, sb, n2, j) : 1.0;
            double dP = emu_dot(c->f32, dyv, vvp, Dv);
            if (pb->fp8) dP = emu_rc(c, dP * dvs);
            double dPz = z == 1.0 ? dP : emu_rc(c, dP * z);
            double dS = emu_rc(c, P * emu_rc(c, dPz - D));
            double dSr = ds_cast(dS, c->ds_dt, nc->ds_round);
            double Pr = ds_cast(Pz, c->ds_dt, nc->ds_round);
            double *pj = part + (j * Dp);
            if (dSr != 0.0) {
                axpy(c->f32, pb->fp8 ? emu_rc(c, dSr * dks) : dSr, kvp, Dk, dqa);
                axpy(c->f32, pb->fp8 ? emu_rc(c, dSr * dqs) : dSr, qv, Dk, pj);
                if (Dr) {
                    const char *krp = (const char *)c->ops.kr + (size_t)((n2 * c->ops.Tk + krow) * Dr) * esz;
                    axpy(c->f32, dSr, krp, Dr, dqra);
                    axpy(c->f32, dSr, qrv, Dr, pj + Dk);
                }
            }
            if (Pr != 0.0) axpy(c->f32, Pr, dyv, Dv, pj + Dk + Dr);
        }
        double scale = (double)c->sem.scale;
        for (int64_t d = 0; d < Dk; d++) A->dq[(h * c->ops.Tq + qrow) * Dk + d] = emu_rc(c, scale * dqa[d]);
        for (int64_t d = 0; d < Dr; d++) A->dqr[(h * c->ops.Tq + qrow) * Dr + d] = emu_rc(c, scale * dqra[d]);
        if (c->sem.sink) {
            double ys = (double)fr_sem_sink(&c->sem, h);
            if (b2) ys = emu_rc(c, ys * LOG2E);
            double ps = emu_rc(c, emu_exp(c, emu_rc(c, ys - msub)) * inv_l);
            sinkp[g] = emu_rc(c, sinkp[g] - emu_rc(c, ps * D));
        }
    }
}

/* Fixed chunks of a batch's (g, i) rows per kv head (independent of the thread count): at most 8, at least 64 rows
 * each, partials <= 256 MiB; 0 when the batch has no rows or no keys. */
static int64_t bwd_chunks(const fr_problem *pb, const fr_sem_batch *sb, int64_t Dp) {
    int64_t rows = pb->G * sb->S1;
    if (rows == 0 || sb->S2 == 0) return 0;
    int64_t C = (rows + 63) / 64;
    if (C > 8) C = 8;
    int64_t cap = (INT64_C(256) << 20) / (8 * sb->S2 * Dp + 1);
    return C > cap ? (cap > 0 ? cap : 1) : C;
}

static void store_grad(const fr_tensor *t, fr_layout l, int64_t D, int64_t r0, int64_t b, int64_t n, int64_t i,
                       const double *v, fr_round rnd) {
    if (!fr_tensor_present(t)) return;
    for (int64_t d = 0; d < D; d++) fr_store_f64(t, fr_layout_offset(t, l, D, r0, b, n, i, d), out_value(v[d], t->dtype, rnd));
}

/* Alike emulate_entry.c:fwd_run: kept apart because each validates its own extra output (o_extra, the fp32 O of the
 * dpsum sum, here; o_lo there) before its own pass; they share only the default-numerics lines.
 * Long (~150 lines) as one job: the numerics' checks, then the (b, kv head) passes (parallel over key chunks). */
static fr_status bwd_run(const fr_problem *pb, const fr_params *p, const fr_bwd_inputs *in,
                         const fr_bwd_outputs *out, const fr_numerics *nc, const fr_tensor *o_extra, int nthreads,
                         const fr_engine *e, fr_error *err) {
    fr_numerics ideal;
    if (!nc) {
        ideal = fr_numerics_ideal(pb->dtype);
        nc = &ideal;
    }
    bool have_extra = o_extra && fr_tensor_present(o_extra);
    if (nc->dpsum == FR_EMU_DPSUM_F32 && !have_extra)
        return fr_fail(err, FR_E_INVALID_ARG, "numerics.dpsum: fp32 O requested but o_extra is absent");
    if (have_extra && nc->dpsum != FR_EMU_DPSUM_OUT &&
        (!fr_tensor_same_shape(o_extra, &in->attention_in) || !float_dtype(o_extra->dtype) || !o_extra->data))
        return fr_fail(err, FR_E_SHAPE, "o_extra: must have attention_in's shape and a float dtype");
    emu_ctx c;
    fr_status st = emu_ctx_init(&c, pb, p, &in->fwd, nc, err);
    if (st != FR_OK) return st;
    const int64_t Dk = pb->Dk, Dv = pb->Dv, Dr = pb->Drope, Tq = c.ops.Tq, Tk = c.ops.Tk;
    bwd_arrays A;
    memset(&A, 0, sizeof A);
    A.dy = emu_load_op(&c, &in->dy, pb->N1, Tq, Dv, true);
    A.osrc = emu_load_op(&c, nc->dpsum == FR_EMU_DPSUM_F32 ? o_extra : &in->attention_in, pb->N1, Tq, Dv, true);
    A.dq = zalloc(pb->N1 * Tq * Dk);
    A.dqr = zalloc(pb->N1 * Tq * Dr);
    A.dk = zalloc(pb->N2 * Tk * Dk);
    A.dkr = zalloc(pb->N2 * Tk * Dr);
    A.dv = zalloc(pb->N2 * Tk * Dv);
    A.dsink = zalloc(pb->N1);
    bool ok = A.dy && A.osrc && A.dq && A.dqr && A.dk && A.dkr && A.dv && A.dsink;
    if (ok && nc->dpsum == FR_EMU_DPSUM_OUT_LO && have_extra) {
        void *lo = emu_load_op(&c, o_extra, pb->N1, Tq, Dv, true);
        ok = lo != NULL;
        for (int64_t k = 0; ok && k < pb->N1 * Tq * Dv; k++) {
            if (c.f32) ((float *)A.osrc)[k] = ((float *)A.osrc)[k] + ((float *)lo)[k];
            else ((double *)A.osrc)[k] += ((double *)lo)[k];
        }
        free(lo);
    }
    const int64_t Dp = Dk + Dr + Dv;
    int64_t maxslots = 0;
    for (int64_t b = 0; b < pb->B; b++) {
        int64_t ns = emu_row_slots(&c, &c.batches[b]);
        if (ns > maxslots) maxslots = ns;
    }
    fr_progress pr; /* one unit per chunk of every (b, n2) */
    int64_t units = 0;
    for (int64_t b = 0; b < pb->B; b++) units += pb->N2 * bwd_chunks(pb, &c.batches[b], Dp);
    fr_progress_start(&pr, e, units);
    for (int64_t b = 0; ok && b < pb->B; b++) {
        const fr_sem_batch *sb = &c.batches[b];
        int64_t rows = pb->G * sb->S1;
        int64_t C = bwd_chunks(pb, sb, Dp);
        if (C == 0) continue;
        double *parts = zalloc(C * sb->S2 * Dp);
        double *sinkp = zalloc(C * pb->G);
        if (!parts || !sinkp) {
            free(parts);
            free(sinkp);
            ok = false;
            break;
        }
        for (int64_t n2 = 0; ok && n2 < pb->N2; n2++) {
            memset(parts, 0, sizeof(double) * (size_t)(C * sb->S2 * Dp));
            memset(sinkp, 0, sizeof(double) * (size_t)(C * pb->G));
            bool nomem = false;
#pragma omp parallel num_threads(nthreads > 0 ? nthreads : omp_get_max_threads()) if (C > 1)
            {
                emu_row r;
                double *scr = malloc(sizeof(double) * (size_t)(Dk + Dr + 2 * Dv + emu_ntiles(&c, maxslots) + 2));
                bool tok = scr && emu_row_alloc(&r, maxslots, emu_ntiles(&c, maxslots)) == FR_OK;
                if (!tok) {
#pragma omp atomic write
                    nomem = true;
                }
#pragma omp for schedule(dynamic, 1)
                for (int64_t ch = 0; ch < C; ch++) {
                    if (!tok) continue;
                    int64_t r0 = rows * ch / C, r1 = rows * (ch + 1) / C;
                    bwd_chunk(&c, in, &A, b, n2, r0, r1, parts + ch * sb->S2 * Dp, sinkp + ch * pb->G, &r, scr);
                    fr_progress_add(&pr, 1);
                }
                if (scr) emu_row_free(&r);
                free(scr);
            }
            if (nomem) {
                ok = false;
                break;
            }
            /* Reduce the chunks in order. */
            for (int64_t j = 0; j < sb->S2; j++) {
                int64_t krow = emu_krow(&c, sb, j);
                for (int64_t ch = 0; ch < C; ch++) {
                    const double *pj = parts + (ch * sb->S2 + j) * Dp;
                    for (int64_t d = 0; d < Dk; d++)
                        A.dk[(n2 * Tk + krow) * Dk + d] = emu_rc(&c, A.dk[(n2 * Tk + krow) * Dk + d] + pj[d]);
                    for (int64_t d = 0; d < Dr; d++)
                        A.dkr[(n2 * Tk + krow) * Dr + d] = emu_rc(&c, A.dkr[(n2 * Tk + krow) * Dr + d] + pj[Dk + d]);
                    for (int64_t d = 0; d < Dv; d++)
                        A.dv[(n2 * Tk + krow) * Dv + d] = emu_rc(&c, A.dv[(n2 * Tk + krow) * Dv + d] + pj[Dk + Dr + d]);
                }
            }
            for (int64_t ch = 0; ch < C; ch++)
                for (int64_t g = 0; g < pb->G; g++)
                    A.dsink[n2 * pb->G + g] = emu_rc(&c, A.dsink[n2 * pb->G + g] + sinkp[ch * pb->G + g]);
        }
        free(parts);
        free(sinkp);
    }
    if (ok) { /* write the outputs */
        double scale = (double)c.sem.scale;
        double *tmp = zalloc(Dk + Dr + Dv);
        ok = tmp != NULL;
        for (int64_t b = 0; ok && b < pb->B; b++) {
            const fr_sem_batch *sb = &c.batches[b];
            for (int64_t h = 0; h < pb->N1; h++)
                for (int64_t i = 0; i < sb->S1; i++) {
                    int64_t q = emu_qrow(&c, sb, i);
                    store_grad(&out->dq, pb->layout, Dk, sb->q0, b, h, i, A.dq + (h * Tq + q) * Dk, nc->grad_round);
                    if (Dr)
                        store_grad(&out->dq_rope, pb->layout, Dr, sb->q0, b, h, i, A.dqr + (h * Tq + q) * Dr,
                                   nc->grad_round);
                }
            for (int64_t n2 = 0; n2 < pb->N2; n2++)
                for (int64_t j = 0; j < sb->S2; j++) {
                    int64_t k = emu_krow(&c, sb, j);
                    for (int64_t d = 0; d < Dk; d++) tmp[d] = emu_rc(&c, scale * A.dk[(n2 * Tk + k) * Dk + d]);
                    store_grad(&out->dk, pb->layout, Dk, sb->kv0, b, n2, j, tmp, nc->grad_round);
                    if (Dr) {
                        for (int64_t d = 0; d < Dr; d++) tmp[d] = emu_rc(&c, scale * A.dkr[(n2 * Tk + k) * Dr + d]);
                        store_grad(&out->dk_rope, pb->layout, Dr, sb->kv0, b, n2, j, tmp, nc->grad_round);
                    }
                    store_grad(&out->dv, pb->layout, Dv, sb->kv0, b, n2, j, A.dv + (n2 * Tk + k) * Dv, nc->grad_round);
                }
        }
        if (ok && fr_tensor_present(&out->dsink))
            for (int64_t h = 0; h < pb->N1; h++) fr_store_f64(&out->dsink, h * out->dsink.strides[0], A.dsink[h]);
        free(tmp);
    }
    free(A.dy);
    free(A.osrc);
    free(A.dq);
    free(A.dqr);
    free(A.dk);
    free(A.dkr);
    free(A.dv);
    free(A.dsink);
    emu_ctx_free(&c);
    if (!ok) return fr_fail(err, FR_E_NOMEM, "emulate backward: gradient accumulators or scratch");
    fr_progress_end(&pr);
    return FR_OK;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Entry points */

fr_status fr_emulate_fwd(const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in,
                         const fr_fwd_outputs *out, const fr_engine *e, fr_error *err) {
    return fwd_run(pb, p, in, out, e->numerics, NULL, e->num_threads, e, err);
}

fr_status fr_emulate_bwd(const fr_problem *pb, const fr_params *p, const fr_bwd_inputs *in,
                         const fr_bwd_outputs *out, const fr_engine *e, fr_error *err) {
    return bwd_run(pb, p, in, out, e->numerics, NULL, e->num_threads, e, err);
}

/* What the _ex entries check before validation (fr_fwd/fr_bwd do the same in engine/engine.c and fr_emulate_available). */
static fr_status ex_precheck(const void *out, const fr_numerics *nc, int num_threads, fr_error *err) {
    fr_error_clear(err);
    if (!out) return fr_fail(err, FR_E_NULL, "outputs: NULL");
    if (num_threads < 0) return fr_fail(err, FR_E_INVALID_ARG, "num_threads: %d < 0", num_threads);
    return nc ? fr_numerics_check(nc, err) : FR_OK;
}

fr_status fr_emulate_fwd_ex(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                            const fr_numerics *nc, const fr_tensor *o_lo, int num_threads, fr_error *err) {
    fr_status st = ex_precheck(out, nc, num_threads, err);
    if (st != FR_OK) return st;
    fr_problem pb;
    st = fr_problem_from_fwd(p, in, &pb, err);
    if (st == FR_OK) st = fr_check_fwd_outputs(&pb, p, out, err);
    if (st != FR_OK) return st;
    return fwd_run(&pb, p, in, out, nc, o_lo, num_threads, NULL, err);
}

fr_status fr_emulate_bwd_ex(const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out,
                            const fr_numerics *nc, const fr_tensor *o_extra, int num_threads, fr_error *err) {
    fr_status st = ex_precheck(out, nc, num_threads, err);
    if (st != FR_OK) return st;
    fr_problem pb;
    st = fr_problem_from_bwd(p, in, &pb, err);
    if (st == FR_OK) st = fr_check_bwd_outputs(&pb, p, out, err);
    if (st != FR_OK) return st;
    return bwd_run(&pb, p, in, out, nc, o_extra, num_threads, NULL, err);
}
