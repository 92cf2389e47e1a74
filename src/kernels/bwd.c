/* Fused backward (spec 8.2), two passes and no atomics, so every output is bit-identical for any thread count:
 *   pass A, one task per (b, kv head, key tile): recompute S, P = exp(x - m) / l from the stored softmax_max/sum
 *     (core/osm.h fr_osm_f32_bwd_row), dP = dY V^T, dS = P o (dP o Z - D_i), and own dK, dV of the tile, summed over
 *     the G query heads of the group and every query tile, in a fixed order;
 *   pass B, one task per (b, h, query tile): recompute the same and own dQ (+ the tile's part of dsink).
 * D_i = sum_d dY * O (attention_in). Computation in fp32 (16-bit inputs are widened; bf16 inputs on a variant with
 * a bf16 dot form S = Q K^T and dP = dY V^T from the exact bf16 products); the casts of P and dS to the input dtype
 * before the three GEMMs dV, dK, dQ ([U] in the spec) follow inner_precise (D17): 0 and 2 leave them in fp32, 1 rounds
 * P o Z and dS of bf16 / fp16 inputs to that dtype, nearest even, in every variant. Gradients carry the factor
 * scale. No S1 x S2 buffer: working memory is a few tiles per thread. */
#include "core/core.h"
#include "core/osm.h"
#include "core/progress.h"
#include "kernels/kernels.h"
#include "kernels/load_store.h"
#include "kernels/scores.h"
#include "semantics/semantics.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

typedef struct bwd_ctx {
    const fr_kops *ops;
    const fr_problem *pb;
    const fr_bwd_inputs *in;
    const fr_fwd_inputs *fin;
    const fr_bwd_outputs *out;
    fr_softmax_layout sl;
    fr_sem sem;
    int64_t DQ;
    int64_t DQ2, Dv2;         /* bf16 pairs per Q/K row and per dY/V row */
    bool bf16;                /* S = Q K^T and dP = dY V^T on the variant's bf16 GEMM (exact bf16 products) */
    fr_dtype ip16;            /* inner_precise 1 with bf16 / fp16 inputs: P o Z and dS rounded to it (D17), else none */
    bool fused;               /* one task per (b, kv head) does all (task_group) */
    fr_sem_batch *batches; /* every batch (O(B): B <= 2M non-TND would be large, so only TND keeps them) */
    int64_t *qtask0, *ktask0; /* TND: first task of batch b in pass B / pass A */
    int64_t nqt, nkt;         /* non-TND tiles per (b, head) */
    double *dsink_part;       /* pass B: each task's dsink contribution */
    float *di_all;            /* D_i of every query row: [N1][T1] (T1 = B * S1 outside TND) */
    fr_progress *pr;          /* fr_engine.progress: one unit per task of the mode that runs */
} bwd_ctx;

/* One query tile's side of the work (pack_qside): Q and dY rows, their bf16 pairs, D_i and the row statistics. */
typedef struct bwd_qside {
    float *q, *dy;              /* buffers for the rows when they are not read in place */
    uint32_t *qb, *dyb;         /* bf16 pairs: Q [BM][DQ2], dY [BM][Dv2] */
    const float *qv, *dyv;      /* Q, dY rows: the buffers or the fp32 inputs in place */
    int64_t ldq, lddy;
    float di[FR_K_BM], msub[FR_K_BM], invl[FR_K_BM], dq[FR_K_BM];
    bool live[FR_K_BM];
    bool q_bad, dy_bad;         /* the Q / dY rows hold a NaN or an Inf (then dK / dV skip zero weights) */
    bool packed;                /* cached tile: filled in this task */
} bwd_qside;

/* Fused mode packs the query side of each (query head, query tile) of the group once per task instead of once per
 * key tile (the repacking, mostly bf16 -> fp32 widening that waits on memory, was ~10% of a bf16 backward): one
 * bwd_qside per tile over slices of a per-thread arena of G S1 rows, used when it stays under FR_K_QCACHE bytes. The
 * values are the ones the packing computes each time: outputs unchanged to the bit. */
#define FR_K_QCACHE (INT64_C(24) << 20)
typedef struct bwd_qcache {
    bwd_qside *tile;            /* [G][tiles of S1] */
    float *q, *dy;              /* [G S1][DQ], [G S1][Dv] when the rows are not read in place */
    uint32_t *qb, *dyb;         /* [G S1][DQ2], [G S1][Dv2] (bf16 path) */
    int64_t ntiles;             /* query tiles per head: ceil(S1 / BM) for the problem's S1 */
} bwd_qcache;

typedef struct bwd_ws {
    float *kt, *krow, *vt, *s, *dp, *tr, *t, *acc, *acc2, *comp, *comp2, *pse;
    uint8_t *keep, *drop;
    uint16_t *row16;                 /* bf16 path: one row */
    uint32_t *ktb, *vtb;             /* bf16 pairs: K^T [DQ2][BN], V^T [Dv2][BN] */
    const float *kv_rows;            /* K rows of the tile: packed buffer or the fp32 input in place */
    int64_t ldk;
    bool k_bad;                      /* the key tile's K rows hold a NaN or an Inf */
    bwd_qside own;                   /* the query side when nothing is cached */
    bwd_qside *qs;                   /* the query side of the tile pair being computed */
    bwd_qcache qc;                   /* fused mode: every query tile of the group (qc.tile NULL: not cached) */
} bwd_ws;

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static void ws_free(bwd_ws *w) {
    float *f[] = {w->own.q, w->own.dy, w->kt, w->krow, w->vt, w->s, w->dp, w->tr, w->t, w->acc, w->acc2, w->comp,
                  w->comp2, w->pse};
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) free(f[k]);
    free(w->keep), free(w->drop);
    free(w->row16), free(w->own.qb), free(w->own.dyb), free(w->ktb), free(w->vtb);
    free(w->qc.tile), free(w->qc.q), free(w->qc.dy), free(w->qc.qb), free(w->qc.dyb);
    memset(w, 0, sizeof *w);
}

/* Whether Q / dY rows are read in place (fp32, unit stride, no rope: rows_view needs no buffer). */
static bool rows_in_place(const fr_tensor *t, int64_t Drope) {
    return t->dtype == FR_F32 && t->strides[t->ndim - 1] == 1 && Drope == 0;
}

/* The fused mode's query-side cache; left empty (qc->tile NULL) when it would pass FR_K_QCACHE or memory is short,
 * and the tiles are then packed per key tile as before. */
static void qcache_alloc(bwd_qcache *qc, const bwd_ctx *c) {
    const fr_problem *pb = c->pb;
    memset(qc, 0, sizeof *qc);
    int64_t rows = pb->G * pb->S1, nt = (pb->S1 + FR_K_BM - 1) / FR_K_BM;
    bool bq = !rows_in_place(&c->fin->query, pb->Drope), bdy = !rows_in_place(&c->in->dy, 0);
    double bytes = (double)(pb->G * nt) * (double)sizeof(bwd_qside) +
                   (double)rows * 4.0 * (double)((bq ? c->DQ : 0) + (bdy ? pb->Dv : 0) + (c->bf16 ? c->DQ2 + c->Dv2 : 0));
    if (rows <= 0 || bytes > (double)FR_K_QCACHE) return;
    qc->ntiles = nt;
    qc->tile = calloc((size_t)(pb->G * nt), sizeof(bwd_qside));
    if (bq) qc->q = malloc(sizeof(float) * (size_t)(rows * c->DQ));
    if (bdy) qc->dy = malloc(sizeof(float) * (size_t)(rows * pb->Dv));
    if (c->bf16) {
        qc->qb = malloc(sizeof(uint32_t) * (size_t)(rows * c->DQ2));
        qc->dyb = malloc(sizeof(uint32_t) * (size_t)(rows * c->Dv2));
    }
    if (!qc->tile || (bq && !qc->q) || (bdy && !qc->dy) || (c->bf16 && (!qc->qb || !qc->dyb))) {
        free(qc->tile), free(qc->q), free(qc->dy), free(qc->qb), free(qc->dyb);
        memset(qc, 0, sizeof *qc);
        return;
    }
    for (int64_t t = 0; t < pb->G * nt; t++) { /* each tile's slice of the arena */
        bwd_qside *qs = &qc->tile[t];
        int64_t r0 = (t / nt) * pb->S1 + (t % nt) * FR_K_BM;
        qs->q = qc->q ? qc->q + r0 * c->DQ : NULL;
        qs->dy = qc->dy ? qc->dy + r0 * pb->Dv : NULL;
        qs->qb = qc->qb ? qc->qb + r0 * c->DQ2 : NULL;
        qs->dyb = qc->dyb ? qc->dyb + r0 * c->Dv2 : NULL;
    }
}

/* Starts a fused task: every cached tile unpacked. */
static void qcache_reset(bwd_qcache *qc, const bwd_ctx *c) {
    for (int64_t t = 0; qc->tile && t < c->pb->G * qc->ntiles; t++) qc->tile[t].packed = false;
}

static bool ws_alloc(bwd_ws *w, const bwd_ctx *c) {
    memset(w, 0, sizeof *w);
    size_t DQ = (size_t)max64(c->DQ, 1), Dv = (size_t)max64(c->pb->Dv, 1), D = DQ > Dv ? DQ : Dv;
    size_t T = FR_K_BM > FR_K_BN ? FR_K_BM : FR_K_BN, f = sizeof(float);
    /* Alike (these lines with each other): one malloc per buffer, each with its own size; one check below. */
    w->own.q = malloc(f * FR_K_BM * DQ);
    w->own.dy = malloc(f * FR_K_BM * Dv);
    w->kt = malloc(f * DQ * FR_K_BN);
    w->krow = malloc(f * FR_K_BN * D);
    w->vt = malloc(f * Dv * FR_K_BN);
    w->s = malloc(f * FR_K_BM * FR_K_BN);
    w->dp = malloc(f * FR_K_BM * FR_K_BN);
    w->tr = malloc(f * FR_K_BM * FR_K_BN);
    w->t = malloc(f * T * D);
    w->acc = malloc(f * T * D);
    w->acc2 = malloc(f * T * D);
    w->comp = malloc(f * T * D);
    w->comp2 = malloc(f * T * D);
    w->pse = malloc(f * FR_K_BM * FR_K_BN);
    w->keep = malloc(FR_K_BM * FR_K_BN);
    w->drop = malloc(FR_K_BM * FR_K_BN);
    bool ok = w->own.q && w->own.dy && w->kt && w->krow && w->vt && w->s && w->dp && w->tr && w->t && w->acc &&
              w->acc2 && w->comp && w->comp2 && w->pse && w->keep && w->drop;
    if (c->bf16) {
        size_t q2 = (size_t)max64(c->DQ2, 1), v2 = (size_t)max64(c->Dv2, 1);
        w->row16 = malloc(sizeof(uint16_t) * 2 * (q2 > v2 ? q2 : v2));
        w->own.qb = malloc(sizeof(uint32_t) * FR_K_BM * q2);
        w->own.dyb = malloc(sizeof(uint32_t) * FR_K_BM * v2);
        w->ktb = malloc(sizeof(uint32_t) * q2 * FR_K_BN);
        w->vtb = malloc(sizeof(uint32_t) * v2 * FR_K_BN);
        ok = ok && w->row16 && w->own.qb && w->own.dyb && w->ktb && w->vtb;
    }
    if (!ok) ws_free(w);
    if (ok && c->fused) qcache_alloc(&w->qc, c);
    w->qs = &w->own;
    return ok;
}

/* Index of query row i of (b, h) in di_all. */
static inline int64_t di_index(const bwd_ctx *c, const fr_sem_batch *sb, int64_t h, int64_t i) {
    return h * c->pb->T1 + (c->pb->layout == FR_TND ? sb->q0 : sb->b * c->pb->S1) + i;
}

/* Rows [r0, r0 + n) of head hd of a q/k/v-like tensor (dims D, rope Drope appended) as fp32 rows: in place when the
 * tensor is fp32 with unit stride and there is no rope (rows sit at a fixed stride in every layout), else loaded
 * into buf. Returns the rows and their leading dimension in *ld. */
static const float *rows_view(const bwd_ctx *c, const fr_tensor *t, const fr_tensor *rope, int64_t D, int64_t Drope,
                              const fr_sem_batch *sb, int64_t row0, int64_t hd, int64_t r0, int64_t n, float *buf,
                              int64_t *ld) {
    const fr_problem *pb = c->pb;
    if (t->dtype == FR_F32 && t->strides[t->ndim - 1] == 1 && Drope == 0) {
        int64_t o0 = fr_layout_offset(t, pb->layout, D, row0, sb->b, hd, r0, 0);
        *ld = n > 1 ? fr_layout_offset(t, pb->layout, D, row0, sb->b, hd, r0 + 1, 0) - o0 : D;
        return (const float *)t->data + o0;
    }
    for (int64_t r = 0; r < n; r++) {
        float *dst = buf + r * (D + Drope);
        fr_kio_load_f32(t, fr_layout_offset(t, pb->layout, D, row0, sb->b, hd, r0 + r, 0), D, dst);
        if (Drope > 0)
            fr_kio_load_f32(rope, fr_layout_offset(rope, pb->layout, Drope, row0, sb->b, hd, r0 + r, 0), Drope, dst + D);
    }
    *ld = D + Drope;
    return buf;
}

/* bf16 path: row r0 + r of head hd of a q/k/v-like tensor (rope appended) as bf16 pairs, zero-padded to 2 * n2. */
static void load_pairs(const bwd_ctx *c, bwd_ws *w, const fr_tensor *t, const fr_tensor *rope, int64_t D,
                       int64_t Drope, const fr_sem_batch *sb, int64_t row0, int64_t hd, int64_t i, int64_t n2,
                       uint32_t *dst, int64_t stride) {
    const fr_problem *pb = c->pb;
    uint16_t *r16 = w->row16;
    fr_kio_load_bf16(t, fr_layout_offset(t, pb->layout, D, row0, sb->b, hd, i, 0), D, r16);
    if (Drope > 0)
        fr_kio_load_bf16(rope, fr_layout_offset(rope, pb->layout, Drope, row0, sb->b, hd, i, 0), Drope, r16 + D);
    if ((D + Drope) & 1) r16[D + Drope] = 0;
    if (stride == 1) { /* a row of pairs is the row's bf16 values in order (x86-64 is little-endian) */
        memcpy(dst, r16, sizeof(uint32_t) * (size_t)n2);
        return;
    }
    for (int64_t p = 0; p < n2; p++) dst[p * stride] = (uint32_t)r16[2 * p] | (uint32_t)r16[2 * p + 1] << 16;
}

/* Query-side tile of head h into qs: Q and dY rows, D_i and the stored statistics. */
static void pack_qside(const bwd_ctx *c, bwd_ws *w, bwd_qside *qs, const fr_sem_batch *sb, int64_t h, int64_t i0,
                       int64_t ni) {
    const fr_problem *pb = c->pb;
    const fr_bwd_inputs *in = c->in;
    qs->qv = rows_view(c, &c->fin->query, &c->fin->query_rope, pb->Dk, pb->Drope, sb, sb->q0, h, i0, ni, qs->q,
                       &qs->ldq);
    qs->dyv = rows_view(c, &in->dy, NULL, pb->Dv, 0, sb, sb->q0, h, i0, ni, qs->dy, &qs->lddy);
    for (int64_t r = 0; c->bf16 && r < ni; r++) {
        load_pairs(c, w, &c->fin->query, &c->fin->query_rope, pb->Dk, pb->Drope, sb, sb->q0, h, i0 + r, c->DQ2,
                   qs->qb + r * c->DQ2, 1);
        load_pairs(c, w, &in->dy, NULL, pb->Dv, 0, sb, sb->q0, h, i0 + r, c->Dv2, qs->dyb + r * c->Dv2, 1);
    }
    for (int64_t r = 0; r < ni; r++) {
        int64_t i = i0 + r;
        qs->di[r] = c->di_all[di_index(c, sb, h, i)];
        float m = (float)fr_load_f64(&in->softmax_max,
                                     fr_softmax_offset(&in->softmax_max, pb->layout, c->sl, sb->q0, sb->b, h, i, 0));
        float l = (float)fr_load_f64(&in->softmax_sum,
                                     fr_softmax_offset(&in->softmax_sum, pb->layout, c->sl, sb->q0, sb->b, h, i, 0));
        qs->live[r] = fr_osm_f32_bwd_row(m, l, &qs->msub[r], &qs->invl[r]);
        qs->dq[r] = pb->fp8 ? fr_sem_dscale_q(&c->sem, sb, h, i) : 1.0f;
    }
    bool qb = false, db = false;
    for (int64_t r = 0; r < ni; r++) {
        for (int64_t d = 0; d < c->DQ; d++) qb |= !(fabsf(qs->qv[r * qs->ldq + d]) <= FLT_MAX);
        for (int64_t d = 0; d < pb->Dv; d++) db |= !(fabsf(qs->dyv[r * qs->lddy + d]) <= FLT_MAX);
    }
    qs->q_bad = qb, qs->dy_bad = db;
    qs->packed = true;
}

/* Key-side tile of kv head kv: K^T [DQ x BN], V^T [Dv x BN], and the K rows (w->kv_rows, pass B's dQ = dS K). */
static void pack_kside(const bwd_ctx *c, bwd_ws *w, const fr_sem_batch *sb, int64_t kv, int64_t j0, int64_t nj) {
    const fr_problem *pb = c->pb;
    const fr_fwd_inputs *fin = c->fin;
    int64_t ldv;
    w->kv_rows = rows_view(c, &fin->key, &fin->key_rope, pb->Dk, pb->Drope, sb, sb->kv0, kv, j0, nj, w->krow, &w->ldk);
    if (c->bf16) { /* K^T and V^T as bf16 pairs for S and dP; the fp32 K rows stay for dS K */
        for (int64_t j = 0; j < nj; j++) {
            load_pairs(c, w, &fin->key, &fin->key_rope, pb->Dk, pb->Drope, sb, sb->kv0, kv, j0 + j, c->DQ2,
                       w->ktb + j, FR_K_BN);
            load_pairs(c, w, &fin->value, NULL, pb->Dv, 0, sb, sb->kv0, kv, j0 + j, c->Dv2, w->vtb + j, FR_K_BN);
        }
    } else {
        c->ops->transpose_f32(nj, c->DQ, w->kv_rows, w->ldk, w->kt, FR_K_BN);
    }
    bool bad = false;
    for (int64_t j = 0; j < nj; j++)
        for (int64_t d = 0; d < c->DQ; d++) bad |= !(fabsf(w->kv_rows[j * w->ldk + d]) <= FLT_MAX);
    w->k_bad = bad;
    if (c->bf16) return;
    const float *v = rows_view(c, &fin->value, NULL, pb->Dv, 0, sb, sb->kv0, kv, j0, nj, w->t, &ldv);
    c->ops->transpose_f32(nj, pb->Dv, v, ldv, w->vt, FR_K_BN);
}

/* For the query rows and key columns of the tile: w->s := P o Z (what multiplies dY into dV), w->dp := dS. */
static void tile_grad(const bwd_ctx *c, bwd_ws *w, const fr_sem_batch *sb, int64_t h, int64_t kv, int64_t i0,
                      int64_t ni, int64_t j0, int64_t nj, fr_tile_class cls) {
    const fr_kops *ops = c->ops;
    const bwd_qside *qs = w->qs;
    const fr_sem *sem = &c->sem;
    int64_t Dv = c->pb->Dv;
    if (c->bf16) /* bf16 inputs: S and dP from the exact bf16 products (AMX tiles / vdpbf16ps), fp32 sums */
        ops->gemm_bf16(ni, nj, c->DQ2, qs->qb, c->DQ2, w->ktb, FR_K_BN, w->s, FR_K_BN, false);
    else
        ops->gemm_f32(ni, nj, c->DQ, qs->qv, qs->ldq, w->kt, FR_K_BN, w->s, FR_K_BN, false);
    fr_k_scores(sem, sb, h, kv, i0, ni, j0, nj, cls, qs->dq, w->s, w->pse, w->keep);
    if (c->bf16)
        ops->gemm_bf16(ni, nj, c->Dv2, qs->dyb, c->Dv2, w->vtb, FR_K_BN, w->dp, FR_K_BN, false); /* dP = dY V^T */
    else
        ops->gemm_f32(ni, nj, Dv, qs->dyv, qs->lddy, w->vt, FR_K_BN, w->dp, FR_K_BN, false); /* dP = dY V^T */
    if (sem->dropout) fr_sem_tile_drop(sem, sb, h, i0, ni, j0, nj, w->drop, FR_K_BN);
    for (int64_t r = 0; r < ni; r++) {
        float *p = w->s + r * FR_K_BN, *dp = w->dp + r * FR_K_BN;
        if (!qs->live[r]) { /* D1 row: P = 0, gradients 0 */
            for (int64_t j = 0; j < nj; j++) p[j] = 0.0f, dp[j] = 0.0f;
            continue;
        }
        if (cls == FR_TILE_PARTIAL) /* excluded positions: dP = 0, so a NaN/Inf in their V cannot leak */
            for (int64_t j = 0; j < nj; j++)
                if (p[j] == -INFINITY) dp[j] = 0.0f;
        ops->expsum_f32(nj, p, qs->msub[r]);
        float il = qs->invl[r], di = qs->di[r];
        if (sem->dropout) {
            const uint8_t *dk = w->drop + r * FR_K_BN;
            for (int64_t j = 0; j < nj; j++) {
                float pj = p[j] * il, z = dk[j] ? sem->rkeep : 0.0f;
                float dpz = dp[j] * z;
                dp[j] = pj * (dpz - di); /* dS */
                p[j] = pj * z;           /* P o Z */
            }
        } else {
            for (int64_t j = 0; j < nj; j++) {
                float pj = p[j] * il;
                dp[j] = pj * (dp[j] - di);
                p[j] = pj;
            }
        }
        /* NaN statistics (a row with a NaN score, golden.md 4): exp(-inf - NaN) is NaN, so the excluded positions
         * are set back to 0: the NaN reaches the gradients of the keys the row sees, as in the golden, no others.
         * The same for a D_i that is NaN or Inf (a NaN / Inf in the row's dY or attention_in): dS = 0 * (0 - D_i)
         * would put a NaN into dK of every key the row does not see. */
        if (cls == FR_TILE_PARTIAL && (isnan(qs->msub[r] + qs->invl[r]) || !isfinite(di)))
            for (int64_t j = 0; j < nj; j++)
                if (!w->keep[r * FR_K_BN + j]) p[j] = 0.0f, dp[j] = 0.0f;
        if (c->ip16 != FR_DT_NONE) { /* inner_precise 1 (D17): the operands of dV, dK and dQ in the 16-bit dtype */
            fr_kio_round_rne16(c->ip16, nj, p);
            fr_kio_round_rne16(c->ip16, nj, dp);
        }
    }
}

static void store_rows(const bwd_ctx *c, const fr_tensor *t, const fr_tensor *rope, const fr_sem_batch *sb,
                       int64_t row0, int64_t n, int64_t i, const float *src, int64_t D, int64_t Drope) {
    const fr_problem *pb = c->pb;
    if (fr_tensor_present(t)) fr_kio_store_f32(t, fr_layout_offset(t, pb->layout, D, row0, sb->b, n, i, 0), D, src);
    if (Drope > 0 && rope && fr_tensor_present(rope))
        fr_kio_store_f32(rope, fr_layout_offset(rope, pb->layout, Drope, row0, sb->b, n, i, 0), Drope, src + D);
}

/* dS K (ni x DQ) into w->t; over the positions that take part only when the K tile holds a NaN/Inf. */
static void ds_k(const bwd_ctx *c, bwd_ws *w, int64_t ni, int64_t nj, fr_tile_class cls) {
    int64_t DQ = c->DQ;
    if (cls == FR_TILE_PARTIAL && w->k_bad) {
        for (int64_t r = 0; r < ni; r++)
            for (int64_t d = 0; d < DQ; d++) {
                float acc = 0.0f;
                for (int64_t j = 0; j < nj; j++)
                    if (w->keep[r * FR_K_BN + j]) acc += w->dp[r * FR_K_BN + j] * w->kv_rows[j * w->ldk + d];
                w->t[r * DQ + d] = acc;
            }
    } else {
        c->ops->gemm_f32(ni, DQ, nj, w->dp, FR_K_BN, w->kv_rows, w->ldk, w->t, DQ, false);
    }
}

/* t [nj x D] = W^T X over the nonzero weights only (W [ni x nj], ld FR_K_BN; X [ni x D]): when X holds a NaN or an
 * Inf, a zero weight (excluded, dropped or underflowed position) must not turn it into 0 * NaN, as the golden's
 * product skips it (golden.md 3); e.g. dK of a key a row with a NaN query does not see. */
static void gemm_tn_nonzero(int64_t ni, int64_t nj, int64_t D, const float *W, const float *X, int64_t ldx,
                            float *t) {
    for (int64_t j = 0; j < nj; j++)
        for (int64_t d = 0; d < D; d++) {
            float acc = 0.0f;
            for (int64_t i = 0; i < ni; i++)
                if (W[i * FR_K_BN + j] != 0.0f) acc += W[i * FR_K_BN + j] * X[i * ldx + d];
            t[j * D + d] = acc;
        }
}

/* Pass A: dK, dV of key rows [j0, j0 + nj) of kv head kv. Fused mode (dqacc != NULL): also adds every query tile's
 * dS K into dqacc [G][S1][DQ] (Kahan, dqcomp), the task owning all of the group's query rows. */
/* Alike bwd.c:task_q: kept apart because this task owns a key block (dk, dv, in fused mode the group's dq too: loops
 * over heads and query tiles) and that one a query block (dq: loop over key tiles); the loop nests run in opposite
 * orders. */
static void task_kv(const bwd_ctx *c, bwd_ws *w, const fr_sem_batch *sb, int64_t kv, int64_t j0, float *dqacc,
                    float *dqcomp) {
    const fr_problem *pb = c->pb;
    const fr_kops *ops = c->ops;
    int64_t nj = min64(FR_K_BN, sb->S2 - j0), Dv = pb->Dv, DQ = c->DQ;
    float *dk = w->acc, *dv = w->acc2;
    memset(dk, 0, sizeof(float) * (size_t)(nj * DQ));
    memset(dv, 0, sizeof(float) * (size_t)(nj * Dv));
    memset(w->comp, 0, sizeof(float) * (size_t)(nj * DQ));
    memset(w->comp2, 0, sizeof(float) * (size_t)(nj * Dv));
    pack_kside(c, w, sb, kv, j0, nj);
    for (int64_t g = 0; g < pb->G; g++) {
        int64_t h = kv * pb->G + g;
        for (int64_t i0 = 0; i0 < sb->S1; i0 += FR_K_BM) {
            int64_t ni = min64(FR_K_BM, sb->S1 - i0);
            fr_tile_class cls = fr_sem_tile_class(&c->sem, sb, h, i0, ni, j0, nj);
            if (cls == FR_TILE_SKIP) continue;
            bwd_qside *qs = dqacc && w->qc.tile ? &w->qc.tile[g * w->qc.ntiles + i0 / FR_K_BM] : &w->own;
            if (qs == &w->own || !qs->packed) pack_qside(c, w, qs, sb, h, i0, ni);
            w->qs = qs;
            tile_grad(c, w, sb, h, kv, i0, ni, j0, nj, cls);
            if (qs->dy_bad) {
                gemm_tn_nonzero(ni, nj, Dv, w->s, qs->dyv, qs->lddy, w->t);
            } else {
                ops->transpose_f32(ni, nj, w->s, FR_K_BN, w->tr, FR_K_BM); /* (P o Z)^T [nj x ni] */
                ops->gemm_f32(nj, Dv, ni, w->tr, FR_K_BM, qs->dyv, qs->lddy, w->t, Dv, false);
            }
            ops->kahan_add_f32(nj * Dv, dv, w->comp2, w->t);
            if (qs->q_bad) {
                gemm_tn_nonzero(ni, nj, DQ, w->dp, qs->qv, qs->ldq, w->t);
            } else {
                ops->transpose_f32(ni, nj, w->dp, FR_K_BN, w->tr, FR_K_BM); /* dS^T */
                ops->gemm_f32(nj, DQ, ni, w->tr, FR_K_BM, qs->qv, qs->ldq, w->t, DQ, false);
            }
            ops->kahan_add_f32(nj * DQ, dk, w->comp, w->t);
            if (dqacc) {
                ds_k(c, w, ni, nj, cls);
                int64_t off = (g * sb->S1 + i0) * DQ;
                ops->kahan_add_f32(ni * DQ, dqacc + off, dqcomp + off, w->t);
            }
        }
    }
    float scale = c->sem.scale;
    for (int64_t j = 0; j < nj; j++) {
        float *dkr = dk + j * DQ, *dvr = dv + j * Dv;
        for (int64_t d = 0; d < DQ; d++) dkr[d] = (dkr[d] - w->comp[j * DQ + d]) * scale;
        for (int64_t d = 0; d < Dv; d++) dvr[d] = dvr[d] - w->comp2[j * Dv + d];
        store_rows(c, &c->out->dk, &c->out->dk_rope, sb, sb->kv0, kv, j0 + j, dkr, pb->Dk, pb->Drope);
        store_rows(c, &c->out->dv, NULL, sb, sb->kv0, kv, j0 + j, dvr, Dv, 0);
    }
}

/* Pass B: dQ of query rows [i0, i0 + ni) of head h; returns the rows' dsink contribution. */
/* Alike bwd.c:task_kv: kept apart because this task owns a query block (dq: loop over key tiles) and that one a key
 * block (dk, dv: loops over heads and query tiles); the loop nests run in opposite orders. */
static double task_q(const bwd_ctx *c, bwd_ws *w, const fr_sem_batch *sb, int64_t h, int64_t i0) {
    const fr_problem *pb = c->pb;
    const fr_kops *ops = c->ops;
    int64_t ni = min64(FR_K_BM, sb->S1 - i0), DQ = c->DQ, kv = fr_sem_kv_head(&c->sem, h);
    float *dq = w->acc;
    memset(dq, 0, sizeof(float) * (size_t)(ni * DQ));
    memset(w->comp, 0, sizeof(float) * (size_t)(ni * DQ));
    bwd_qside *qs = &w->own;
    pack_qside(c, w, qs, sb, h, i0, ni);
    w->qs = qs;
    for (int64_t j0 = 0; j0 < sb->S2; j0 += FR_K_BN) {
        int64_t nj = min64(FR_K_BN, sb->S2 - j0);
        fr_tile_class cls = fr_sem_tile_class(&c->sem, sb, h, i0, ni, j0, nj);
        if (cls == FR_TILE_SKIP) continue;
        pack_kside(c, w, sb, kv, j0, nj);
        tile_grad(c, w, sb, h, kv, i0, ni, j0, nj, cls);
        ds_k(c, w, ni, nj, cls); /* dS K */
        ops->kahan_add_f32(ni * DQ, dq, w->comp, w->t);
    }
    float scale = c->sem.scale;
    double dsink = 0;
    float sk = fr_sem_sink(&c->sem, h);
    for (int64_t r = 0; r < ni; r++) {
        float *row = dq + r * DQ;
        for (int64_t d = 0; d < DQ; d++) row[d] = (row[d] - w->comp[r * DQ + d]) * scale;
        store_rows(c, &c->out->dq, &c->out->dq_rope, sb, sb->q0, h, i0 + r, row, pb->Dk, pb->Drope);
        if (c->sem.sink && qs->live[r]) /* dsink_h = -sum_i exp(sink - m_i) / l_i * D_i (D6) */
            dsink -= (double)(expf(sk - qs->msub[r]) * qs->invl[r]) * (double)qs->di[r];
    }
    return dsink;
}

/* Fused mode: one task per (b, kv head) runs every key tile (pass A's work plus dQ into a per-task accumulator),
 * then writes dQ of the group's rows and their dsink terms (dsink_bh[h], in row order): 5 GEMMs per tile pair
 * instead of the two-pass 7. Chosen from the problem alone (never the thread count), so results stay
 * bit-identical for any number of threads. */
static void task_group(const bwd_ctx *c, bwd_ws *w, const fr_sem_batch *sb, int64_t kv, float *dqacc, float *dqcomp,
                       double *dsink_bh) {
    const fr_problem *pb = c->pb;
    const fr_bwd_inputs *in = c->in;
    int64_t DQ = c->DQ, n = pb->G * sb->S1 * DQ;
    memset(dqacc, 0, sizeof(float) * (size_t)n);
    memset(dqcomp, 0, sizeof(float) * (size_t)n);
    qcache_reset(&w->qc, c);
    for (int64_t j0 = 0; j0 < sb->S2; j0 += FR_K_BN) task_kv(c, w, sb, kv, j0, dqacc, dqcomp);
    float scale = c->sem.scale;
    for (int64_t g = 0; g < pb->G; g++) {
        int64_t h = kv * pb->G + g;
        double ds = 0;
        float sk = fr_sem_sink(&c->sem, h);
        for (int64_t i = 0; i < sb->S1; i++) {
            float *row = dqacc + (g * sb->S1 + i) * DQ, *cp = dqcomp + (g * sb->S1 + i) * DQ;
            for (int64_t d = 0; d < DQ; d++) row[d] = (row[d] - cp[d]) * scale;
            store_rows(c, &c->out->dq, &c->out->dq_rope, sb, sb->q0, h, i, row, pb->Dk, pb->Drope);
            if (c->sem.sink) {
                float m = (float)fr_load_f64(&in->softmax_max, fr_softmax_offset(&in->softmax_max, pb->layout, c->sl,
                                                                                    sb->q0, sb->b, h, i, 0));
                float l = (float)fr_load_f64(&in->softmax_sum, fr_softmax_offset(&in->softmax_sum, pb->layout, c->sl,
                                                                                    sb->q0, sb->b, h, i, 0));
                float msub, invl;
                if (fr_osm_f32_bwd_row(m, l, &msub, &invl))
                    ds -= (double)(expf(sk - msub) * invl) * (double)c->di_all[di_index(c, sb, h, i)];
            }
        }
        if (dsink_bh) dsink_bh[g] = ds;
    }
}

/* Top-k gather backward (D7): one task per (b, kv head) owns dK, dV of that head (fp64 accumulators over the batch's
 * keys) and dQ of its G query heads' rows; rows in a fixed order, so results do not depend on the thread count. */
static fr_status bwd_topk(const bwd_ctx *c, int nt, fr_error *err) {
    const fr_problem *pb = c->pb;
    const fr_sem *sem = &c->sem;
    const fr_bwd_inputs *in = c->in;
    const fr_fwd_inputs *fin = c->fin;
    int64_t DQ = c->DQ, Dv = pb->Dv, ntask = pb->B * pb->N2, S2max = pb->S2 > 0 ? pb->S2 : 1;
    double *dsink = calloc((size_t)(pb->B * pb->N1 + 1), sizeof(double));
    if (!dsink) return fr_fail(err, FR_E_NOMEM, "engine 'fast': dsink partial sums");
    /* Alike verify/zoo/mutants_base.c:mb_fwd (its parallel region): kept apart because the mutant base is an implementation
     * of its own that the verifier's tests break on purpose; only the OpenMP skeleton (a workspace per thread, one
     * shared failure flag) is alike. */
    int failed = 0;
#pragma omp parallel num_threads(nt)
    {
        double *dk = malloc(sizeof(double) * (size_t)(S2max * DQ + 1)), *dv = malloc(sizeof(double) * (size_t)(S2max * Dv + 1));
        double *dq = malloc(sizeof(double) * (size_t)(DQ + 1));
        float *q = malloc(sizeof(float) * (size_t)(DQ + 1)), *k = malloc(sizeof(float) * (size_t)(DQ + 1));
        float *v = malloc(sizeof(float) * (size_t)(Dv + 1)), *dy = malloc(sizeof(float) * (size_t)(Dv + 1));
        float *o = malloc(sizeof(float) * (size_t)((DQ > Dv ? DQ : Dv) + 1));
        int64_t *cols = malloc(sizeof(int64_t) * (size_t)(pb->W + 1));
        float sc[FR_K_BN], pse[FR_K_BN];
        uint8_t keep[FR_K_BN];
        bool ok = dk && dv && dq && q && k && v && dy && o && cols;
        if (!ok) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < ntask; t++) {
            if (!ok) continue;
            fr_sem_batch sb;
            if (pb->layout == FR_TND) sb = c->batches[t / pb->N2];
            else fr_sem_batch_get(sem, t / pb->N2, &sb);
            int64_t kv = t % pb->N2;
            memset(dk, 0, sizeof(double) * (size_t)(sb.S2 * DQ));
            memset(dv, 0, sizeof(double) * (size_t)(sb.S2 * Dv));
            for (int64_t g = 0; g < pb->G; g++) {
                int64_t h = kv * pb->G + g;
                for (int64_t i = 0; i < sb.S1; i++) {
                    int64_t ld;
                    memmove(q, rows_view(c, &fin->query, &fin->query_rope, pb->Dk, pb->Drope, &sb, sb.q0, h, i, 1, q, &ld),
                           sizeof(float) * (size_t)DQ);
                    memmove(dy, rows_view(c, &in->dy, NULL, Dv, 0, &sb, sb.q0, h, i, 1, dy, &ld), sizeof(float) * (size_t)Dv);
                    float di = c->di_all[di_index(c, &sb, h, i)], msub, invl;
                    float m = (float)fr_load_f64(&in->softmax_max, fr_softmax_offset(&in->softmax_max, pb->layout, c->sl,
                                                                                        sb.q0, sb.b, h, i, 0));
                    float l = (float)fr_load_f64(&in->softmax_sum, fr_softmax_offset(&in->softmax_sum, pb->layout, c->sl,
                                                                                        sb.q0, sb.b, h, i, 0));
                    for (int64_t d = 0; d < DQ; d++) dq[d] = 0.0;
                    if (fr_osm_f32_bwd_row(m, l, &msub, &invl)) {
                        if (sem->sink) dsink[sb.b * pb->N1 + h] -= (double)(expf(fr_sem_sink(sem, h) - msub) * invl) * di;
                        float one = 1.0f;
                        int64_t n = fr_sem_topk_row(sem, &sb, h, i, cols);
                        for (int64_t e = 0; e < n; e++) {
                            int64_t j = cols[e];
                            const float *kr = rows_view(c, &fin->key, &fin->key_rope, pb->Dk, pb->Drope, &sb, sb.kv0, kv, j,
                                                        1, k, &ld);
                            float sv = 0.0f;
                            for (int64_t d0 = 0; d0 < DQ; d0 += FR_K_KB) {
                                float part = 0.0f;
                                for (int64_t d = d0; d < DQ && d < d0 + FR_K_KB; d++) part += q[d] * kr[d];
                                sv += part;
                            }
                            sc[0] = sv;
                            fr_k_scores(sem, &sb, h, kv, i, 1, j, 1, FR_TILE_PARTIAL, &one, sc, pse, keep);
                            if (sc[0] == -INFINITY) continue;
                            float p = expf(sc[0] - msub) * invl;
                            float z = sem->dropout ? (fr_sem_drop_bit(sem, &sb, h, i, j) ? sem->rkeep : 0.0f) : 1.0f;
                            const float *vr = rows_view(c, &fin->value, NULL, Dv, 0, &sb, sb.kv0, kv, j, 1, v, &ld);
                            double dp = 0.0;
                            float pz = p * z;
                            if (c->ip16 != FR_DT_NONE) fr_kio_round_rne16(c->ip16, 1, &pz); /* D17 */
                            for (int64_t d = 0; d < Dv; d++) {
                                dp += (double)dy[d] * (double)vr[d];
                                dv[j * Dv + d] += (double)pz * (double)dy[d];
                            }
                            double ds = (double)p * (dp * (double)z - (double)di);
                            if (c->ip16 != FR_DT_NONE) { /* D17: dS as fp32, then cast to the 16-bit dtype */
                                float dsf = (float)ds;
                                fr_kio_round_rne16(c->ip16, 1, &dsf);
                                ds = (double)dsf;
                            }
                            for (int64_t d = 0; d < DQ; d++) {
                                dk[j * DQ + d] += ds * (double)q[d];
                                dq[d] += ds * (double)kr[d];
                            }
                        }
                    }
                    for (int64_t d = 0; d < DQ; d++) o[d] = (float)(dq[d] * (double)sem->scale);
                    store_rows(c, &c->out->dq, &c->out->dq_rope, &sb, sb.q0, h, i, o, pb->Dk, pb->Drope);
                }
            }
            for (int64_t j = 0; j < sb.S2; j++) {
                for (int64_t d = 0; d < DQ; d++) o[d] = (float)(dk[j * DQ + d] * (double)sem->scale);
                store_rows(c, &c->out->dk, &c->out->dk_rope, &sb, sb.kv0, kv, j, o, pb->Dk, pb->Drope);
                for (int64_t d = 0; d < Dv; d++) o[d] = (float)dv[j * Dv + d];
                store_rows(c, &c->out->dv, NULL, &sb, sb.kv0, kv, j, o, Dv, 0);
            }
            fr_progress_add(c->pr, 1);
        }
        free(dk), free(dv), free(dq), free(q), free(k), free(v), free(dy), free(o), free(cols);
    }
    if (!failed && sem->sink && fr_tensor_present(&c->out->dsink))
        for (int64_t h = 0; h < pb->N1; h++) {
            double sum = 0;
            for (int64_t b = 0; b < pb->B; b++) sum += dsink[b * pb->N1 + h];
            float val = (float)sum;
            fr_kio_store_f32(&c->out->dsink, h * c->out->dsink.strides[0], 1, &val);
        }
    free(dsink);
    if (failed) return fr_fail(err, FR_E_NOMEM, "engine 'fast': top-k backward workspace");
    return FR_OK;
}

static void batch_of(const bwd_ctx *c, const int64_t *task0, int64_t t, int64_t *b) {
    int64_t lo = 0, hi = c->pb->B - 1;
    while (lo < hi) {
        int64_t mid = (lo + hi + 1) / 2;
        if (task0[mid] <= t) lo = mid;
        else hi = mid - 1;
    }
    *b = lo;
}

/* Task t of a pass -> (batch, head, first row); tile = FR_K_BN (pass A, heads N2) or FR_K_BM (pass B, heads N1). */
static void task_of(const bwd_ctx *c, bool pass_a, int64_t t, fr_sem_batch *sb, int64_t *n, int64_t *r0) {
    const fr_problem *pb = c->pb;
    int64_t heads = pass_a ? pb->N2 : pb->N1, tile = pass_a ? FR_K_BN : FR_K_BM;
    if (pb->layout != FR_TND) {
        int64_t nt = pass_a ? c->nkt : c->nqt, per_b = heads * nt;
        fr_sem_batch_get(&c->sem, t / per_b, sb);
        *n = (t % per_b) / nt;
        *r0 = (t % nt) * tile;
        return;
    }
    const int64_t *task0 = pass_a ? c->ktask0 : c->qtask0;
    int64_t b;
    batch_of(c, task0, t, &b);
    *sb = c->batches[b];
    int64_t len = pass_a ? sb->S2 : sb->S1, nt = (len + tile - 1) / tile, k = t - task0[b];
    *n = k / nt;
    *r0 = (k % nt) * tile;
}

/* What fr_k_bwd allocates in the context, freed on every path out of it (each may still be NULL). */
static void bwd_ctx_free(bwd_ctx *c) {
    free(c->batches), free(c->qtask0), free(c->ktask0), free(c->dsink_part), free(c->di_all);
}

/* dsink per head from the partial sums of the tasks, summed in a fixed order (fused: the (b, h) sums in b order;
 * else the query tasks' sums in task order), so the result is independent of the thread count. */
static void bwd_store_dsink(bwd_ctx *c, bool fused, int64_t nB) {
    const fr_problem *pb = c->pb;
    const fr_tensor *ds = &c->out->dsink;
    for (int64_t h = 0; h < pb->N1; h++) {
        double sum = 0;
        if (fused) {
            for (int64_t b = 0; b < pb->B; b++) sum += c->dsink_part[b * pb->N1 + h];
        } else {
            for (int64_t t = 0; t < nB; t++) {
                fr_sem_batch sb;
                int64_t hh, i0;
                task_of(c, false, t, &sb, &hh, &i0);
                if (hh == h) sum += c->dsink_part[t];
            }
        }
        float v = (float)sum;
        fr_kio_store_f32(ds, h * ds->strides[0], 1, &v);
    }
}

/* Alike fwd.c:fr_k_fwd: kept apart because only the set-up's shape is alike: each fills its own context (bwd_ctx here,
 * fwd_ctx there) for its own passes. */
fr_status fr_k_bwd(const fr_kops *ops, int num_threads, const fr_problem *pb, const fr_params *p,
                   const fr_bwd_inputs *in, const fr_bwd_outputs *out, fr_error *err) {
    return fr_k_bwd_ex(ops, num_threads, NULL, pb, p, in, out, err);
}

/* Long (~155 lines) as one job: the backward's set-up (context, varlen tasks, D_i) and its parallel passes, which
 * read every local of the set-up. */
fr_status fr_k_bwd_ex(const fr_kops *ops, int num_threads, const fr_engine *e, const fr_problem *pb,
                      const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out, fr_error *err) {
    bwd_ctx c;
    memset(&c, 0, sizeof c);
    c.ops = ops;
    c.pb = pb;
    c.in = in;
    c.fin = &in->fwd;
    c.out = out;
    c.sl = p->softmax_layout;
    fr_status st = fr_sem_init(&c.sem, pb, p, &in->fwd, err);
    if (st != FR_OK) return st;
    if (pb->fp8) return fr_fail(err, FR_E_UNSUPPORTED, "engine 'fast': fp8 backward not supported (spec 7.2 is [U])");
    c.DQ = pb->Dk + pb->Drope;
    c.DQ2 = (c.DQ + 1) / 2, c.Dv2 = (pb->Dv + 1) / 2;
    c.bf16 = pb->dtype == FR_BF16 && ops->bf16_gemm && !c.sem.topk;
    c.ip16 = p->inner_precise == 1 && (pb->dtype == FR_BF16 || pb->dtype == FR_F16) ? pb->dtype : FR_DT_NONE;
    int64_t nA = 0, nB = 0;
    if (pb->layout == FR_TND) {
        size_t B = (size_t)(pb->B > 0 ? pb->B : 1);
        c.batches = malloc(sizeof(fr_sem_batch) * B);
        c.qtask0 = malloc(sizeof(int64_t) * (B + 1));
        c.ktask0 = malloc(sizeof(int64_t) * (B + 1));
        if (!c.batches || !c.qtask0 || !c.ktask0) {
            st = fr_fail(err, FR_E_NOMEM, "engine 'fast': %lld batch descriptors", (long long)pb->B);
            goto done;
        }
        for (int64_t b = 0; b < pb->B; b++) {
            fr_sem_batch_get(&c.sem, b, &c.batches[b]);
            c.qtask0[b] = nB, c.ktask0[b] = nA;
            nB += pb->N1 * ((c.batches[b].S1 + FR_K_BM - 1) / FR_K_BM);
            nA += pb->N2 * ((c.batches[b].S2 + FR_K_BN - 1) / FR_K_BN);
        }
        c.qtask0[pb->B] = nB, c.ktask0[pb->B] = nA;
    } else {
        c.nqt = (pb->S1 + FR_K_BM - 1) / FR_K_BM;
        c.nkt = (pb->S2 + FR_K_BN - 1) / FR_K_BN;
        int64_t t;
        if (!fr_mul_ok(pb->B, pb->N1, &t) || !fr_mul_ok(t, c.nqt, &nB) || !fr_mul_ok(pb->B, pb->N2, &t) ||
            !fr_mul_ok(t, c.nkt, &nA)) {
            st = fr_fail(err, FR_E_OVERFLOW, "engine 'fast': task count overflows");
            goto done;
        }
    }
    /* fused single pass when there are enough (b, kv) tasks for any thread count and the per-task dQ accumulator
     * (G S1 DQ floats, twice with its compensation) stays under 16 MiB */
    int64_t fused_n = pb->G * pb->S1 * c.DQ;
    bool fused = !c.sem.topk && pb->B * pb->N2 >= 4 && fused_n <= (INT64_C(8) << 20) / (int64_t)sizeof(float);
    c.fused = fused;
    int64_t nsink = fused ? pb->B * pb->N1 : nB;
    if (c.sem.sink) {
        c.dsink_part = calloc((size_t)(nsink > 0 ? nsink : 1), sizeof(double));
        if (!c.dsink_part) {
            st = fr_fail(err, FR_E_NOMEM, "engine 'fast': dsink partial sums");
            goto done;
        }
    }
    int64_t ndi;
    if (!fr_mul_ok(pb->N1, pb->T1, &ndi)) {
        st = fr_fail(err, FR_E_OVERFLOW, "engine 'fast': N1 * T overflows");
        goto done;
    }
    c.di_all = malloc(sizeof(float) * (size_t)(ndi > 0 ? ndi : 1));
    if (!c.di_all) {
        st = fr_fail(err, FR_E_NOMEM, "engine 'fast': D_i of %lld rows", (long long)ndi);
        goto done;
    }
    int failed = 0;
    int nt = num_threads > 0 ? num_threads : omp_get_max_threads();
    fr_progress pr;
    c.pr = &pr;
    fr_progress_start(&pr, e, c.sem.topk ? pb->B * pb->N2 : fused ? pb->B * pb->N2 : nA + nB);
#pragma omp parallel num_threads(nt)
    {
        /* D_i = sum_d dY * O of every query row, in double, rounded once (spec 8.2) */
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < pb->B * pb->N1; bh++) {
            int64_t b = bh / pb->N1, h = bh % pb->N1, q0, len;
            fr_problem_q_rows(pb, b, &q0, &len);
            fr_sem_batch sb;
            sb.b = b, sb.q0 = q0;
            for (int64_t i = 0; i < len; i++) {
                const fr_tensor *dy = &in->dy, *o = &in->attention_in;
                int64_t od = fr_layout_offset(dy, pb->layout, pb->Dv, q0, b, h, i, 0);
                int64_t oo = fr_layout_offset(o, pb->layout, pb->Dv, q0, b, h, i, 0);
                int64_t sd = dy->strides[dy->ndim - 1], so = o->strides[o->ndim - 1];
                double di = 0;
                if (dy->dtype == FR_F32 && o->dtype == FR_F32) {
                    const float *a = (const float *)dy->data + od, *bb = (const float *)o->data + oo;
                    for (int64_t d = 0; d < pb->Dv; d++) di += (double)a[d * sd] * (double)bb[d * so];
                } else {
                    for (int64_t d = 0; d < pb->Dv; d++) di += fr_load_f64(dy, od + d * sd) * fr_load_f64(o, oo + d * so);
                }
                c.di_all[di_index(&c, &sb, h, i)] = (float)di;
            }
        }
        bwd_ws w;
        /* have_ws: w is ours to free, even when a later allocation below makes this thread give up (ok). */
        bool have_ws = !c.sem.topk && ws_alloc(&w, &c), ok = have_ws;
        if (!ok && !c.sem.topk) {
#pragma omp atomic write
            failed = 1;
        }
        float *dqacc = NULL, *dqcomp = NULL;
        if (fused && ok) {
            dqacc = malloc(sizeof(float) * (size_t)(fused_n > 0 ? fused_n : 1));
            dqcomp = malloc(sizeof(float) * (size_t)(fused_n > 0 ? fused_n : 1));
            if (!dqacc || !dqcomp) {
                ok = false;
#pragma omp atomic write
                failed = 1;
            }
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < (fused ? pb->B * pb->N2 : 0); t++) {
            if (!ok) continue;
            fr_sem_batch sb;
            if (pb->layout == FR_TND) sb = c.batches[t / pb->N2];
            else fr_sem_batch_get(&c.sem, t / pb->N2, &sb);
            task_group(&c, &w, &sb, t % pb->N2, dqacc, dqcomp, c.dsink_part ? c.dsink_part + t * pb->G : NULL);
            fr_progress_add(&pr, 1);
        }
        free(dqacc), free(dqcomp);
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < (fused ? 0 : nA); t++) {
            if (!ok) continue;
            fr_sem_batch sb;
            int64_t kv, j0;
            task_of(&c, true, t, &sb, &kv, &j0);
            task_kv(&c, &w, &sb, kv, j0, NULL, NULL);
            fr_progress_add(&pr, 1);
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < (fused ? 0 : nB); t++) {
            if (!ok) continue;
            fr_sem_batch sb;
            int64_t h, i0;
            task_of(&c, false, t, &sb, &h, &i0);
            double ds = task_q(&c, &w, &sb, h, i0);
            if (c.dsink_part) c.dsink_part[t] = ds;
            fr_progress_add(&pr, 1);
        }
        if (have_ws) ws_free(&w);
    }
    if (failed)
        st = fr_fail(err, FR_E_NOMEM, "engine 'fast': per-thread tile workspace");
    else if (c.sem.topk)
        st = bwd_topk(&c, nt, err);
    else if (c.sem.sink && fr_tensor_present(&out->dsink))
        bwd_store_dsink(&c, fused, nB);
    if (st == FR_OK) fr_progress_end(&pr);
done: /* the one way out once anything is allocated */
    bwd_ctx_free(&c);
    return st;
}
