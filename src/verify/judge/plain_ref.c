/* The plain reference of the case's dtype (plain_ref.h): standard, non-flash attention, fp32 throughout with P and
 * dS rounded where a 16-bit kernel rounds them. Parallel over (batch, head) in the forward and (batch, kv head) in
 * the backward; each output element has one owner, so the result does not depend on the thread count. */
#include "verify/judge/plain_ref.h"

#include "core/core.h"
#include "core/problem.h"
#include "flashref_emulate.h"
#include "semantics/semantics.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define LANES 1

/* Cephes-style expf, as vector math libraries write it: n = round(x log2 e), r = x - n ln2 (two-part ln2), a degree
 * 6 polynomial, times 2^n. About 1-2 ulp; deliberately not correctly rounded (an ordinary implementation's exp). */
float fr_plain_expf(float x) {
    if (isnan(x)) return x;
    if (x > 88.7228390f) return INFINITY;
    if (x < -103.972084f) return 0.0f;
    float n = nearbyintf(x * 1.44269504088896341f);
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float z = r * r;
    float y = (((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r + 4.1665795894e-2f) * r +
                1.6666665459e-1f) *
                   r +
               5.0000001201e-1f) *
                  z +
              r + 1.0f;
    return ldexpf(y, (int)n);
}

/* fp32 dot product: 8 lanes (lane d % 8), then a pairwise tree; not compensated. */
static float dot8(const float *a, const float *b, int64_t n) {
    float acc[LANES] = {0};
    for (int64_t d = 0; d < n; d++) acc[d & (LANES - 1)] += a[d] * b[d];
    for (int w = LANES / 2; w >= 1; w /= 2)
        for (int k = 0; k < w; k++) acc[k] += acc[k + w];
    return acc[0];
}

typedef struct plain {
    const fr_problem *pb;
    const fr_params *p;
    const fr_fwd_inputs *in;
    fr_sem sem;
    fr_sem_batch *sb;
    float *q, *k, *v, *qr, *kr, *dy; /* [heads][rows][D] widened to fp32 (exact for every input dtype) */
    int64_t Tq, Tk;
    fr_dtype p_dt; /* P / dS rounding: the input dtype when narrower than fp32, else FR_DT_NONE */
    /* PyTorch's math attention scales q and k by sqrt(scale) each before the product (rounded in fp32); so does
     * this reference wherever the score is qk * scale (+ pse): prescale. Else (pse_type 1, fp8) the score is
     * scaled after the product. gscale: the factor the gradients of q and k carry. */
    bool prescale;
    float gscale;  /* of dq (and of dk unless gscale_k is set) */
    float gscale_k;
    /* fr_plain_*_native: 0 not; FR_PLAIN_SCALE_AFTER: x = dt(dt(q.k) scale); FR_PLAIN_SCALE_Q: q' = dt(q scale),
     * x = dt(q'.k) (dt: rounded to the input dtype; + pse rounded the same way) */
    int native;
} plain;

static int64_t qrow(const plain *c, const fr_sem_batch *sb, int64_t i) {
    return c->pb->layout == FR_TND ? sb->q0 + i : sb->b * c->pb->S1 + i;
}
static int64_t krow(const plain *c, const fr_sem_batch *sb, int64_t j) {
    return c->pb->layout == FR_TND ? sb->kv0 + j : sb->b * c->pb->S2 + j;
}

static float *widen(const plain *c, const fr_tensor *t, int64_t heads, int64_t rows, int64_t D, bool is_q) {
    int64_t n = heads * rows * D;
    float *buf = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (!buf) return NULL;
    for (int64_t b = 0; b < c->pb->B; b++) {
        const fr_sem_batch *sb = &c->sb[b];
        int64_t r0 = is_q ? sb->q0 : sb->kv0, len = is_q ? sb->S1 : sb->S2;
        for (int64_t h = 0; h < heads; h++)
            for (int64_t i = 0; i < len; i++) {
                int64_t row = is_q ? qrow(c, sb, i) : krow(c, sb, i);
                for (int64_t d = 0; d < D; d++)
                    buf[(h * rows + row) * D + d] =
                        (float)fr_load_f64(t, fr_layout_offset(t, c->pb->layout, D, r0, b, h, i, d));
            }
    }
    return buf;
}

/* Alike emulate/emu_common.c:emu_row_free: kept apart, free() of each member of a different struct. */
static void plain_free(plain *c) {
    free(c->sb);
    free(c->q);
    free(c->k);
    free(c->v);
    free(c->qr);
    free(c->kr);
    free(c->dy);
}

static float round_p(const plain *c, float x);

static fr_status plain_init(plain *c, const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in,
                            const fr_tensor *dy, int native, fr_error *err) {
    memset(c, 0, sizeof *c);
    c->native = native;
    c->pb = pb;
    c->p = p;
    c->in = in;
    fr_status st = fr_sem_init(&c->sem, pb, p, in, err);
    if (st != FR_OK) return st;
    c->sb = malloc(sizeof(fr_sem_batch) * (size_t)(pb->B > 0 ? pb->B : 1));
    if (!c->sb) return fr_fail(err, FR_E_NOMEM, "plain reference: batch table");
    for (int64_t b = 0; b < pb->B; b++) fr_sem_batch_get(&c->sem, b, &c->sb[b]);
    c->Tq = pb->layout == FR_TND ? pb->T1 : pb->B * pb->S1;
    c->Tk = pb->layout == FR_TND ? pb->T2 : pb->B * pb->S2;
    c->q = widen(c, &in->query, pb->N1, c->Tq, pb->Dk, true);
    c->k = widen(c, &in->key, pb->N2, c->Tk, pb->Dk, false);
    c->v = widen(c, &in->value, pb->N2, c->Tk, pb->Dv, false);
    bool ok = c->q && c->k && c->v;
    if (ok && pb->has_rope) {
        c->qr = widen(c, &in->query_rope, pb->N1, c->Tq, pb->Drope, true);
        c->kr = widen(c, &in->key_rope, pb->N2, c->Tk, pb->Drope, false);
        ok = c->qr && c->kr;
    }
    if (ok && dy) ok = (c->dy = widen(c, dy, pb->N1, c->Tq, pb->Dv, true)) != NULL;
    if (!ok) {
        plain_free(c);
        return fr_fail(err, FR_E_NOMEM, "plain reference: fp32 copies of the operands");
    }
    c->p_dt = pb->dtype == FR_F32 || pb->dtype == FR_F64 ? FR_DT_NONE : pb->dtype;
    c->prescale = !native && !pb->fp8 && !(c->sem.pse && c->sem.pse_type == FR_PSE_OUTER_ADD_MUL) && c->sem.scale > 0.0f;
    c->gscale = c->gscale_k = c->sem.scale;
    if (native == FR_PLAIN_SCALE_Q) { /* q' = dt(q scale): dq carries the scale, dk none (it is in q') */
        for (int64_t n = 0; n < pb->N1 * c->Tq * pb->Dk; n++) c->q[n] = round_p(c, c->q[n] * c->sem.scale);
        for (int64_t n = 0; c->qr && n < pb->N1 * c->Tq * pb->Drope; n++) c->qr[n] = round_p(c, c->qr[n] * c->sem.scale);
        c->gscale_k = 1.0f;
    }
    if (c->prescale) {
        float r = sqrtf(c->sem.scale);
        c->gscale = c->gscale_k = r;
        for (int64_t n = 0; n < pb->N1 * c->Tq * pb->Dk; n++) c->q[n] *= r;
        for (int64_t n = 0; n < pb->N2 * c->Tk * pb->Dk; n++) c->k[n] *= r;
        for (int64_t n = 0; c->qr && n < pb->N1 * c->Tq * pb->Drope; n++) c->qr[n] *= r;
        for (int64_t n = 0; c->kr && n < pb->N2 * c->Tk * pb->Drope; n++) c->kr[n] *= r;
    }
    return FR_OK;
}

static float round_p(const plain *c, float x) {
    return c->p_dt == FR_DT_NONE ? x : (float)fr_emu_round((double)x, c->p_dt, FR_ROUND_NEAREST_EVEN, FR_SAT);
}

/* Stores v rounded to nearest even in t's dtype (people's code casts with RNE; fr_store_f64 then stores it exactly). */
static void store_rne(const fr_tensor *t, int64_t off, double v) {
    if (t->dtype != FR_F64 && t->dtype != FR_F32) v = fr_emu_round((double)(float)v, t->dtype, FR_ROUND_NEAREST_EVEN,
                                                                   FR_SAT);
    fr_store_f64(t, off, v);
}

/* One softmax row: the columns that take part, their probabilities P (normalised, before dropout) and dropout
 * factors z. */
typedef struct prow {
    int64_t n;
    int64_t *j;
    float *x, *P, *z, *pse;
    uint8_t *keep, *drop;
    float m, l, psink; /* row max, sum (sink included), the sink's probability */
} prow;

static bool prow_alloc(prow *r, int64_t S2max, int64_t W) {
    memset(r, 0, sizeof *r);
    size_t n = (size_t)((S2max > W ? S2max : W) + 1);
    r->j = malloc(n * sizeof(int64_t));
    r->x = malloc(n * sizeof(float));
    r->P = malloc(n * sizeof(float));
    r->z = malloc(n * sizeof(float));
    r->pse = malloc(n * sizeof(float));
    r->keep = malloc(n);
    r->drop = malloc(n);
    return r->j && r->x && r->P && r->z && r->pse && r->keep && r->drop;
}
static void prow_free(prow *r) {
    free(r->j);
    free(r->x);
    free(r->P);
    free(r->z);
    free(r->pse);
    free(r->keep);
    free(r->drop);
}

/* Fills r for row i of query head h in batch sb; false for a fully masked row without sink (D1). */
static bool row_probs(const plain *c, const fr_sem_batch *sb, int64_t h, int64_t i, prow *r) {
    const fr_problem *pb = c->pb;
    const fr_sem *s = &c->sem;
    int64_t kvh = fr_sem_kv_head(s, h), S2 = sb->S2;
    const float *qv = c->q + (h * c->Tq + qrow(c, sb, i)) * pb->Dk;
    const float *qrv = pb->has_rope ? c->qr + (h * c->Tq + qrow(c, sb, i)) * pb->Drope : NULL;
    r->n = 0;
    if (s->topk) {
        int64_t w = fr_sem_topk_row(s, sb, h, i, r->j);
        for (int64_t u = 0; u < w; u++) {
            uint8_t keep = 1;
            if (s->masked) fr_sem_tile_keep(s, sb, h, i, 1, r->j[u], 1, &keep, 1);
            if (keep) r->j[r->n++] = r->j[u];
        }
    } else if (S2 > 0) {
        if (s->masked) fr_sem_tile_keep(s, sb, h, i, 1, 0, S2, r->keep, S2);
        if (s->pse) fr_sem_tile_pse_f32(s, sb, h, i, 1, 0, S2, r->pse, S2);
        if (s->dropout) fr_sem_tile_drop(s, sb, h, i, 1, 0, S2, r->drop, S2);
        for (int64_t j = 0; j < S2; j++)
            if (!s->masked || r->keep[j]) r->j[r->n++] = j;
    }
    float dq = pb->fp8 ? fr_sem_dscale_q(s, sb, h, i) : 1.0f;
    float m = -INFINITY;
    for (int64_t u = 0; u < r->n; u++) {
        int64_t j = r->j[u], kr = krow(c, sb, j);
        float sc = dot8(qv, c->k + (kvh * c->Tk + kr) * pb->Dk, pb->Dk);
        if (pb->has_rope) sc += dot8(qrv, c->kr + (kvh * c->Tk + kr) * pb->Drope, pb->Drope);
        if (pb->fp8) sc = sc * dq * fr_sem_dscale_k(s, sb, kvh, j);
        float pse = 0.0f;
        if (s->pse) {
            if (s->topk) fr_sem_tile_pse_f32(s, sb, h, i, 1, j, 1, &pse, 1);
            else pse = r->pse[j];
        }
        float x = c->prescale ? sc + pse : !s->pse ? sc * s->scale
                                         : s->pse_type == FR_PSE_OUTER_ADD_MUL ? (sc + pse) * s->scale
                                                            : sc * s->scale + pse;
        if (c->native) { /* each 16-bit op of a textbook attention rounds: the product, the scale, the bias */
            float t = round_p(c, sc);
            if (c->native == FR_PLAIN_SCALE_Q) x = !s->pse ? t : round_p(c, t + pse);
            else if (s->pse && s->pse_type == FR_PSE_OUTER_ADD_MUL) x = round_p(c, round_p(c, t + pse) * s->scale);
            else x = s->pse ? round_p(c, round_p(c, t * s->scale) + pse) : round_p(c, t * s->scale);
        }
        r->x[u] = x;
        if (x > m || isnan(x)) m = x;
        float z = 1.0f;
        if (s->dropout) {
            bool bit = s->topk ? fr_sem_drop_bit(s, sb, h, i, j) : r->drop[j];
            z = bit ? s->rkeep : 0.0f;
        }
        r->z[u] = z;
    }
    float sink = s->sink ? fr_sem_sink(s, h) : 0.0f;
    if (s->sink && (sink > m || isnan(sink))) m = sink;
    r->psink = 0.0f;
    if (r->n == 0 && !s->sink) {
        r->m = FR_SEM_D1_MAX;
        r->l = FR_SEM_D1_SUM;
        return false;
    }
    float acc[LANES] = {0};
    for (int64_t u = 0; u < r->n; u++) {
        r->P[u] = fr_plain_expf(r->x[u] - m);
        acc[u & (LANES - 1)] += r->P[u];
    }
    for (int w = LANES / 2; w >= 1; w /= 2)
        for (int k = 0; k < w; k++) acc[k] += acc[k + w];
    float l = acc[0], es = 0.0f;
    if (s->sink) l += (es = fr_plain_expf(sink - m));
    float inv = 1.0f / l;
    for (int64_t u = 0; u < r->n; u++) r->P[u] *= inv;
    r->psink = es * inv;
    r->m = m;
    r->l = l;
    return true;
}

/* ---- forward ---- */

/* Alike plain_ref.c:fr_plain_bwd: kept apart because the forward works per (batch, query head) and the backward per
 * (batch, kv head) with other per-thread buffers; only the OpenMP allocate-or-flag frame is common. */
static fr_status plain_fwd(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out, int native,
                           fr_error *err) {
    fr_problem pb;
    fr_status st = fr_problem_from_fwd(p, in, &pb, err);
    if (st != FR_OK) return st;
    plain c;
    if ((st = plain_init(&c, &pb, p, in, NULL, native, err)) != FR_OK) return st;
    int64_t S2max = 0;
    for (int64_t b = 0; b < pb.B; b++) S2max = c.sb[b].S2 > S2max ? c.sb[b].S2 : S2max;
    int64_t units = pb.B * pb.N1, Dv = pb.Dv;
    int failed = 0;
#pragma omp parallel
    {
        prow r;
        float *acc = malloc(sizeof(float) * (size_t)(LANES * Dv + 1));
        bool ok = prow_alloc(&r, S2max, pb.W) && acc;
        if (!ok) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic)
        for (int64_t u = 0; u < units; u++) {
            if (!ok) continue;
            int64_t b = u / pb.N1, h = u % pb.N1;
            const fr_sem_batch *sb = &c.sb[b];
            int kvh = (int)fr_sem_kv_head(&c.sem, h);
            for (int64_t i = 0; i < sb->S1; i++) {
                bool live = row_probs(&c, sb, h, i, &r);
                memset(acc, 0, sizeof(float) * (size_t)(LANES * Dv));
                if (live)
                    for (int64_t t = 0; t < r.n; t++) {
                        float w = round_p(&c, r.P[t] * r.z[t]);
                        if (w == 0.0f) continue;
                        if (pb.fp8) w *= fr_sem_dscale_v(&c.sem, sb, kvh, r.j[t]);
                        const float *vv = c.v + (kvh * c.Tk + krow(&c, sb, r.j[t])) * Dv;
                        float *a = acc + (t & (LANES - 1)) * Dv;
                        for (int64_t d = 0; d < Dv; d++) a[d] += w * vv[d];
                    }
                for (int64_t d = 0; d < Dv; d++) {
                    float o = 0.0f;
                    for (int k = 0; k < LANES; k++) o += acc[k * Dv + d];
                    store_rne(&out->attention_out,
                              fr_layout_offset(&out->attention_out, pb.layout, Dv, sb->q0, b, h, i, d), o);
                }
                for (int k = 0; k < 8; k++) {
                    int64_t so = fr_softmax_offset(&out->softmax_max, pb.layout, p->softmax_layout, sb->q0, b, h, i, k);
                    fr_store_f64(&out->softmax_max, so, r.m);
                    fr_store_f64(&out->softmax_sum,
                                 fr_softmax_offset(&out->softmax_sum, pb.layout, p->softmax_layout, sb->q0, b, h, i, k),
                                 r.l);
                }
            }
        }
        prow_free(&r);
        free(acc);
    }
    plain_free(&c);
    return failed ? fr_fail(err, FR_E_NOMEM, "plain reference: row scratch") : FR_OK;
}

/* ---- backward (autograd of the forward above) ---- */

/* Alike plain_ref.c:fr_plain_fwd: kept apart because the backward works per (batch, kv head) and the forward per
 * (batch, query head) with other per-thread buffers; only the OpenMP allocate-or-flag frame is common. */
static fr_status plain_bwd(const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out, int native,
                           fr_error *err) {
    fr_problem pb;
    fr_status st = fr_problem_from_bwd(p, in, &pb, err);
    if (st != FR_OK) return st;
    if (pb.fp8) return fr_fail(err, FR_E_NOT_AVAILABLE, "plain reference: fp8 backward is not modelled");
    plain c;
    if ((st = plain_init(&c, &pb, p, &in->fwd, &in->dy, native, err)) != FR_OK) return st;
    int64_t S2max = 0;
    for (int64_t b = 0; b < pb.B; b++) S2max = c.sb[b].S2 > S2max ? c.sb[b].S2 : S2max;
    const int64_t Dk = pb.Dk, Dv = pb.Dv, Dr = pb.Drope, G = pb.G, units = pb.B * pb.N2;
    float *dsink_part = calloc((size_t)(pb.B * pb.N1 + 1), sizeof(float));
    if (!dsink_part) {
        plain_free(&c);
        return fr_fail(err, FR_E_NOMEM, "plain reference: dsink partials");
    }
    const float scale = c.gscale;
    int failed = 0;
#pragma omp parallel
    {
        prow r;
        size_t S = (size_t)(S2max + 1);
        float *dk = malloc(sizeof(float) * S * (size_t)(Dk + 1)), *dv = malloc(sizeof(float) * S * (size_t)(Dv + 1));
        float *dkr = malloc(sizeof(float) * S * (size_t)(Dr + 1));
        float *dP = malloc(sizeof(float) * S);
        float *dqa = malloc(sizeof(float) * (size_t)(LANES * (Dk + Dr) + 1));
        bool ok = prow_alloc(&r, S2max, pb.W) && dk && dv && dkr && dP && dqa;
        if (!ok) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic)
        for (int64_t u = 0; u < units; u++) {
            if (!ok) continue;
            int64_t b = u / pb.N2, kvh = u % pb.N2;
            const fr_sem_batch *sb = &c.sb[b];
            int64_t S2 = sb->S2;
            memset(dk, 0, sizeof(float) * (size_t)(S2 * Dk + 1));
            memset(dv, 0, sizeof(float) * (size_t)(S2 * Dv + 1));
            memset(dkr, 0, sizeof(float) * (size_t)(S2 * Dr + 1));
            for (int64_t h = kvh * G; h < (kvh + 1) * G; h++) {
                float dsink = 0.0f;
                for (int64_t i = 0; i < sb->S1; i++) {
                    int64_t qr = qrow(&c, sb, i);
                    const float *dyv = c.dy + (h * c.Tq + qr) * Dv, *qv = c.q + (h * c.Tq + qr) * Dk;
                    const float *qrv = Dr ? c.qr + (h * c.Tq + qr) * Dr : NULL;
                    bool live = row_probs(&c, sb, h, i, &r);
                    memset(dqa, 0, sizeof(float) * (size_t)(LANES * (Dk + Dr)));
                    if (live) {
                        /* dP' = (dO.V^T) z; D = sum P dP' (softmax's backward from its saved output). */
                        float acc[LANES] = {0};
                        for (int64_t t = 0; t < r.n; t++) {
                            const float *vv = c.v + (kvh * c.Tk + krow(&c, sb, r.j[t])) * Dv;
                            dP[t] = dot8(dyv, vv, Dv) * r.z[t];
                            acc[t & (LANES - 1)] += round_p(&c, r.P[t]) * dP[t];
                        }
                        for (int w = LANES / 2; w >= 1; w /= 2)
                            for (int k = 0; k < w; k++) acc[k] += acc[k + w];
                        float D = acc[0];
                        dsink += -r.psink * D;
                        for (int64_t t = 0; t < r.n; t++) {
                            int64_t j = r.j[t], kr = krow(&c, sb, j);
                            float ds = round_p(&c, round_p(&c, r.P[t]) * (dP[t] - D));
                            float pz = round_p(&c, r.P[t] * r.z[t]);
                            const float *kv = c.k + (kvh * c.Tk + kr) * Dk;
                            float *qa = dqa + (t & (LANES - 1)) * (Dk + Dr);
                            for (int64_t d = 0; d < Dk; d++) {
                                qa[d] += ds * kv[d];
                                dk[j * Dk + d] += ds * qv[d];
                            }
                            if (Dr) {
                                const float *krv = c.kr + (kvh * c.Tk + kr) * Dr;
                                for (int64_t d = 0; d < Dr; d++) {
                                    qa[Dk + d] += ds * krv[d];
                                    dkr[j * Dr + d] += ds * qrv[d];
                                }
                            }
                            for (int64_t d = 0; d < Dv; d++) dv[j * Dv + d] += pz * dyv[d];
                        }
                    }
                    for (int64_t d = 0; d < Dk + Dr; d++) {
                        float g = 0.0f;
                        for (int k = 0; k < LANES; k++) g += dqa[k * (Dk + Dr) + d];
                        g *= scale;
                        if (d < Dk)
                            store_rne(&out->dq, fr_layout_offset(&out->dq, pb.layout, Dk, sb->q0, b, h, i, d), g);
                        else
                            store_rne(&out->dq_rope,
                                      fr_layout_offset(&out->dq_rope, pb.layout, Dr, sb->q0, b, h, i, d - Dk), g);
                    }
                }
                dsink_part[b * pb.N1 + h] = dsink;
            }
            for (int64_t j = 0; j < S2; j++) {
                for (int64_t d = 0; d < Dk; d++)
                    store_rne(&out->dk, fr_layout_offset(&out->dk, pb.layout, Dk, sb->kv0, b, kvh, j, d),
                              dk[j * Dk + d] * c.gscale_k);
                for (int64_t d = 0; d < Dv; d++)
                    store_rne(&out->dv, fr_layout_offset(&out->dv, pb.layout, Dv, sb->kv0, b, kvh, j, d),
                              dv[j * Dv + d]);
                for (int64_t d = 0; d < Dr; d++)
                    store_rne(&out->dk_rope, fr_layout_offset(&out->dk_rope, pb.layout, Dr, sb->kv0, b, kvh, j, d),
                              dkr[j * Dr + d] * c.gscale_k);
            }
        }
        prow_free(&r);
        free(dk);
        free(dv);
        free(dkr);
        free(dP);
        free(dqa);
    }
    if (!failed && fr_tensor_present(&out->dsink))
        for (int64_t h = 0; h < pb.N1; h++) {
            float s = 0.0f;
            for (int64_t b = 0; b < pb.B; b++) s += dsink_part[b * pb.N1 + h];
            fr_store_f64(&out->dsink, h, s);
        }
    free(dsink_part);
    plain_free(&c);
    return failed ? fr_fail(err, FR_E_NOMEM, "plain reference: row scratch") : FR_OK;
}

fr_status fr_plain_fwd(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out, fr_error *err) {
    return plain_fwd(p, in, out, 0, err);
}
fr_status fr_plain_bwd(const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out, fr_error *err) {
    return plain_bwd(p, in, out, 0, err);
}
fr_status fr_plain_fwd_native(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out, int style,
                              fr_error *err) {
    if (style != FR_PLAIN_SCALE_AFTER && style != FR_PLAIN_SCALE_Q)
        return fr_fail(err, FR_E_INVALID_ARG, "plain reference: native style %d", style);
    return plain_fwd(p, in, out, style, err);
}
fr_status fr_plain_bwd_native(const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out, int style,
                              fr_error *err) {
    if (style != FR_PLAIN_SCALE_AFTER && style != FR_PLAIN_SCALE_Q)
        return fr_fail(err, FR_E_INVALID_ARG, "plain reference: native style %d", style);
    return plain_bwd(p, in, out, style, err);
}
