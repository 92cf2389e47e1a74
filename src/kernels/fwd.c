/* Fused forward (FlashAttention-2 style): per (b, h, bq <= FR_K_BQ query rows) one task; key tiles of FR_K_BN rows
 * stream through, each packed once per task and used by the task's bq / FR_K_BM query sub-tiles; no S1 x S2
 * buffer. Per tile: S = Q K^T (fp32 accumulation; bf16 pairs on the variant's gemm_bf16 when it has a hardware
 * bf16 dot: vdpbf16ps, AMX tiles), x from scale / pse / fp8 scales, mask (semantics), online-softmax bookkeeping
 * by core/osm.h (one update per row per tile, exact running max), P = exp(x - m), dropout, P rounded to the input
 * dtype (D3), O += P V. Decode shapes split the keys in fixed chunks merged in order (FR_K_DECODE_KEYS). Every
 * output element is written by one task in a fixed order: bit-identical for any thread count. */
#include "core/core.h"
#include "core/osm.h"
#include "core/progress.h"
#include "kernels/kernels.h"
#include "kernels/load_store.h"
#include "kernels/scores.h"
#include "semantics/dtype_inline.h"
#include "semantics/semantics.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* Alike emulate/emu_internal.h:emu_ctx: kept apart because only the shape is alike: this context carries the ISA table
 * (ops), that one the numerics configuration the emulator varies. */
typedef struct fwd_ctx {
    const fr_kops *ops;
    const fr_problem *pb;
    const fr_fwd_inputs *in;
    const fr_fwd_outputs *out;
    fr_softmax_layout sl;
    fr_sem sem;
    int64_t DQ;           /* Dk + Drope: rope is attention over the concatenated head dim (spec 2.3) */
    int64_t DQ2;          /* bf16 pairs per Q/K row */
    bool bf16;            /* bf16 inputs on the variant's bf16 GEMM */
    int64_t bq;           /* query rows per task: FR_K_BQ, or half of it for head dims above 128 */
    int64_t nqt;          /* non-TND: query tiles per (b, h) */
    fr_sem_batch *batches;/* TND: every batch (B <= 2K) */
    int64_t *task0;       /* TND: first task of batch b; task0[B] = total */
    int64_t nsplit;       /* decode: key chunks of FR_K_DECODE_KEYS per (b, h) (1: no split) */
    float *part_o;        /* decode: each task's unnormalized O [task][S1][Dv] */
    fr_osm_f32 *part_st;  /* decode: each task's (m, l) [task][S1] */
    fr_progress pr;       /* fr_engine.progress: one unit per task (decode: per key chunk) */
} fwd_ctx;

/* Decode (S1 <= FR_K_DECODE_S1): the keys of each (b, h) are split into chunks of this many keys (a multiple of
 * FR_K_BN), one task each, whose partial states are merged in chunk order (core/osm.h merge). The grid depends on
 * S2 only, never on the thread count: bit-identical for any number of threads. */
#define FR_K_DECODE_KEYS 4096
#define FR_K_DECODE_S1 16

typedef struct fwd_ws {
    float *q, *kt, *v, *s, *o, *pse;
    float *t, *oc;                   /* one tile's P.V; Kahan compensation of o */
    const float *vp;                 /* the V tile [nj x Dv] for P.V: w->v or the input itself */
    int64_t ldv;
    bool v_bad;                      /* the packed V tile holds a NaN or an Inf */
    int64_t *cols;                   /* top-k: one row's listed key columns [W] */
    float *xs;                       /* top-k: their scores, then P [W] */
    double *od;                      /* top-k: one row's O accumulator in fp64 [Dv] */
    uint8_t *keep, *drop;
    uint16_t *row16;                 /* one bf16 row */
    uint32_t *qb, *ktb, *pb2, *vb;   /* bf16 pair-packed Q [BM][DQ2], K^T [DQ2][BN], P [BM][BN/2], V [BN/2][Dv] */
    /* bf16 decode (a task of at most FR_K_DECODE_S1 rows): K and V rows read in place by dot_rows_bf16 and
     * axpy_rows_bf16 instead of packed K^T pairs and interleaved V (the packs were most of a decode's time) */
    bool kr;                         /* this task may read the tiles in place */
    bool kr_tile;                    /* the current key tile is read in place: krowb, vrow */
    const uint32_t *krowb;           /* K rows as bf16 pairs, ldk2 pairs apart */
    const uint16_t *vrow;            /* V rows, ldv16 elements apart */
    int64_t ldk2, ldv16;
    fr_osm_f32 st[FR_K_BQ];
    float lc[FR_K_BQ];               /* Kahan compensation of each row's l */
    float dq[FR_K_BQ];               /* fp8 d_scale_q of each row */
} fwd_ws;

static void ws_free(fwd_ws *w) {
    free(w->t), free(w->oc), free(w->cols), free(w->xs), free(w->od);
    free(w->q), free(w->kt), free(w->v), free(w->s), free(w->o), free(w->pse), free(w->keep), free(w->drop);
    free(w->row16), free(w->qb), free(w->ktb), free(w->pb2), free(w->vb);
    memset(w, 0, sizeof *w);
}

static bool ws_alloc(fwd_ws *w, const fwd_ctx *c) {
    int64_t DQ = c->DQ > 0 ? c->DQ : 1, Dv = c->pb->Dv > 0 ? c->pb->Dv : 1;
    memset(w, 0, sizeof *w);
    w->q = malloc(sizeof(float) * (size_t)(c->bq * DQ));
    w->kt = malloc(sizeof(float) * DQ * FR_K_BN);
    w->v = malloc(sizeof(float) * FR_K_BN * Dv);
    w->s = malloc(sizeof(float) * FR_K_BM * FR_K_BN);
    w->o = malloc(sizeof(float) * (size_t)(c->bq * Dv));
    w->t = malloc(sizeof(float) * FR_K_BM * (size_t)Dv); /* one sub-tile's P.V */
    w->oc = malloc(sizeof(float) * (size_t)(c->bq * Dv));
    w->pse = malloc(sizeof(float) * FR_K_BM * FR_K_BN);
    w->keep = malloc(FR_K_BM * FR_K_BN);
    w->drop = malloc(FR_K_BM * FR_K_BN);
    bool ok = w->t && w->oc && w->q && w->kt && w->v && w->s && w->o && w->pse && w->keep && w->drop;
    if (c->sem.topk) {
        int64_t W = c->pb->W > 0 ? c->pb->W : 1;
        w->cols = malloc(sizeof(int64_t) * (size_t)W);
        w->xs = malloc(sizeof(float) * (size_t)W);
        w->od = malloc(sizeof(double) * (size_t)Dv);
        ok = ok && w->cols && w->xs && w->od;
    }
    if (c->bf16) {
        int64_t D2 = c->DQ2 > 0 ? c->DQ2 : 1;
        w->row16 = malloc(sizeof(uint16_t) * (size_t)(2 * D2 + 2 * Dv));
        w->qb = malloc(sizeof(uint32_t) * (size_t)(c->bq * D2));
        w->ktb = malloc(sizeof(uint32_t) * D2 * FR_K_BN);
        w->pb2 = malloc(sizeof(uint32_t) * FR_K_BM * (FR_K_BN / 2));
        w->vb = malloc(sizeof(uint32_t) * (FR_K_BN / 2) * Dv);
        ok = ok && w->row16 && w->qb && w->ktb && w->pb2 && w->vb;
    }
    if (!ok) ws_free(w);
    return ok;
}

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline uint32_t pair16(uint16_t lo, uint16_t hi) { return (uint32_t)lo | ((uint32_t)hi << 16); }

/* One Q/K row (head dims [0, Dk) then rope [Dk, DQ)) of head n, row i of batch sb, as fp32 into dst. */
/* Alike fwd.c:load_qk_row16: kept apart because the element type differs (fp32 here, bf16 bits there, zero-padded to an
 * even length for the pair GEMM), each with its own loader. */
static void load_qk_row(const fwd_ctx *c, const fr_tensor *t, const fr_tensor *rope, const fr_sem_batch *sb,
                        int64_t row0, int64_t n, int64_t i, float *dst) {
    const fr_problem *pb = c->pb;
    fr_kio_load_f32(t, fr_layout_offset(t, pb->layout, pb->Dk, row0, sb->b, n, i, 0), pb->Dk, dst);
    if (pb->Drope > 0)
        fr_kio_load_f32(rope, fr_layout_offset(rope, pb->layout, pb->Drope, row0, sb->b, n, i, 0), pb->Drope,
                        dst + pb->Dk);
}
/* Same as bf16 bits (bf16 path), zero-padded to 2 * DQ2. */
/* Alike fwd.c:load_qk_row: kept apart because the element type differs (bf16 bits here, zero-padded to an even length
 * for the pair GEMM; fp32 there), each with its own loader. */
static void load_qk_row16(const fwd_ctx *c, const fr_tensor *t, const fr_tensor *rope, const fr_sem_batch *sb,
                          int64_t row0, int64_t n, int64_t i, uint16_t *dst) {
    const fr_problem *pb = c->pb;
    fr_kio_load_bf16(t, fr_layout_offset(t, pb->layout, pb->Dk, row0, sb->b, n, i, 0), pb->Dk, dst);
    if (pb->Drope > 0)
        fr_kio_load_bf16(rope, fr_layout_offset(rope, pb->layout, pb->Drope, row0, sb->b, n, i, 0), pb->Drope,
                         dst + pb->Dk);
    if (c->DQ & 1) dst[c->DQ] = 0;
}

/* Packs Q rows [i0, i0 + ni) of head h. */
static void pack_q(const fwd_ctx *c, fwd_ws *w, const fr_sem_batch *sb, int64_t h, int64_t i0, int64_t ni) {
    const fr_fwd_inputs *in = c->in;
    for (int64_t r = 0; r < ni; r++) {
        if (c->bf16) {
            load_qk_row16(c, &in->query, &in->query_rope, sb, sb->q0, h, i0 + r, w->row16);
            for (int64_t p = 0; p < c->DQ2; p++) w->qb[r * c->DQ2 + p] = pair16(w->row16[2 * p], w->row16[2 * p + 1]);
        } else {
            load_qk_row(c, &in->query, &in->query_rope, sb, sb->q0, h, i0 + r, w->q + r * c->DQ);
        }
        w->dq[r] = c->pb->fp8 ? fr_sem_dscale_q(&c->sem, sb, h, i0 + r) : 1.0f;
    }
}

/* Packs K^T [DQ x nj] and V [nj x Dv] (fp8: V times its d_scale_v block) of kv head kv, keys [j0, j0 + nj). */
static void pack_kv_inner(const fwd_ctx *c, fwd_ws *w, const fr_sem_batch *sb, int64_t kv, int64_t j0, int64_t nj) {
    const fr_problem *pb = c->pb;
    const fr_fwd_inputs *in = c->in;
    int64_t Dv = pb->Dv;
    w->kr_tile = false;
    if (c->bf16) {
        const fr_tensor *K = &in->key, *V = &in->value;
        int64_t ok0 = fr_layout_offset(K, pb->layout, pb->Dk, sb->kv0, sb->b, kv, j0, 0);
        int64_t ldk = nj > 1 ? fr_layout_offset(K, pb->layout, pb->Dk, sb->kv0, sb->b, kv, j0 + 1, 0) - ok0 : pb->Dk;
        if (w->kr && K->strides[K->ndim - 1] == 1 && V->strides[V->ndim - 1] == 1 && pb->Drope == 0 &&
            pb->Dk % 2 == 0 && ldk % 2 == 0) { /* decode: the rows in place, no packing */
            int64_t ov0 = fr_layout_offset(V, pb->layout, Dv, sb->kv0, sb->b, kv, j0, 0);
            w->kr_tile = true;
            w->krowb = (const uint32_t *)((const uint16_t *)K->data + ok0);
            w->ldk2 = ldk / 2;
            w->vrow = (const uint16_t *)V->data + ov0;
            w->ldv16 = nj > 1 ? fr_layout_offset(V, pb->layout, Dv, sb->kv0, sb->b, kv, j0 + 1, 0) - ov0 : Dv;
            return;
        }
        if (K->strides[K->ndim - 1] == 1 && pb->Drope == 0 && pb->Dk % 2 == 0 && ldk % 2 == 0) {
            /* bf16 pairs along d are 32-bit words of the input rows: a 32-bit transpose gives K^T in pairs */
            c->ops->transpose_f32(nj, c->DQ2, (const float *)((const uint16_t *)K->data + ok0), ldk / 2,
                                  (float *)w->ktb, FR_K_BN);
        } else {
            uint16_t *r0 = w->row16;
            for (int64_t j = 0; j < nj; j++) {
                load_qk_row16(c, K, &in->key_rope, sb, sb->kv0, kv, j0 + j, r0);
                for (int64_t p = 0; p < c->DQ2; p++) w->ktb[p * FR_K_BN + j] = pair16(r0[2 * p], r0[2 * p + 1]);
            }
        }
        int64_t ov0 = fr_layout_offset(V, pb->layout, Dv, sb->kv0, sb->b, kv, j0, 0);
        if (V->strides[V->ndim - 1] == 1) {
            int64_t ldv = nj > 1 ? fr_layout_offset(V, pb->layout, Dv, sb->kv0, sb->b, kv, j0 + 1, 0) - ov0 : Dv;
            c->ops->interleave_bf16(nj, Dv, (const uint16_t *)V->data + ov0, ldv, w->vb);
        } else {
            uint16_t *r0 = w->row16, *r1 = w->row16 + 2 * c->DQ2;
            for (int64_t j = 0; j < nj; j += 2) {
                fr_kio_load_bf16(V, fr_layout_offset(V, pb->layout, Dv, sb->kv0, sb->b, kv, j0 + j, 0), Dv, r0);
                if (j + 1 < nj) fr_kio_load_bf16(V, fr_layout_offset(V, pb->layout, Dv, sb->kv0, sb->b, kv, j0 + j + 1, 0), Dv, r1);
                else memset(r1, 0, sizeof(uint16_t) * (size_t)Dv);
                for (int64_t d = 0; d < Dv; d++) w->vb[(j / 2) * Dv + d] = pair16(r0[d], r1[d]);
            }
        }
        return;
    }
    const fr_tensor *K = &in->key, *V = &in->value;
    if (K->dtype == FR_F32 && K->strides[K->ndim - 1] == 1 && pb->Drope == 0) {
        /* fp32 with unit stride: transpose straight from the input (rows at a fixed stride in every layout) */
        int64_t o0 = fr_layout_offset(K, pb->layout, pb->Dk, sb->kv0, sb->b, kv, j0, 0);
        int64_t ldk = nj > 1 ? fr_layout_offset(K, pb->layout, pb->Dk, sb->kv0, sb->b, kv, j0 + 1, 0) - o0 : pb->Dk;
        c->ops->transpose_f32(nj, c->DQ, (const float *)K->data + o0, ldk, w->kt, FR_K_BN);
    } else {
        /* widened rows into S (free while packing; DQ <= 2 * 768 < FR_K_BM * FR_K_BN), blocks of them transposed by
         * the variant's slot: a bf16 decode on a variant without a bf16 dot spent its time in the element-wise
         * scatter this replaces (the same values moved, so the same bits) */
        float *rows = w->s;
        int64_t nr = (FR_K_BM * FR_K_BN) / c->DQ;
        if (nr > 16) nr &= ~(int64_t)15;
        for (int64_t j = 0; j < nj; j += nr) {
            int64_t n = min64(nr, nj - j);
            for (int64_t r = 0; r < n; r++)
                load_qk_row(c, K, &in->key_rope, sb, sb->kv0, kv, j0 + j + r, rows + r * c->DQ);
            c->ops->transpose_f32(n, c->DQ, rows, c->DQ, w->kt + j, FR_K_BN);
        }
    }
    if (V->dtype == FR_F32 && V->strides[V->ndim - 1] == 1 && !pb->fp8) {
        /* fp32 with unit stride: P.V reads V in place (rows at a fixed stride in every layout) */
        int64_t o0 = fr_layout_offset(V, pb->layout, Dv, sb->kv0, sb->b, kv, j0, 0);
        w->vp = (const float *)V->data + o0;
        w->ldv = nj > 1 ? fr_layout_offset(V, pb->layout, Dv, sb->kv0, sb->b, kv, j0 + 1, 0) - o0 : Dv;
        return;
    }
    for (int64_t j = 0; j < nj; j++) {
        float *vr = w->v + j * Dv;
        fr_kio_load_f32(V, fr_layout_offset(V, pb->layout, Dv, sb->kv0, sb->b, kv, j0 + j, 0), Dv, vr);
        if (pb->fp8) {
            float dv = fr_sem_dscale_v(&c->sem, sb, kv, j0 + j);
            for (int64_t d = 0; d < Dv; d++) vr[d] *= dv;
        }
    }
    w->vp = w->v;
    w->ldv = Dv;
}

/* Packs the key tile and, when a sub-tile against it is PARTIAL (scan), notes whether its V rows hold a NaN or an
 * Inf: such sub-tiles must then skip excluded positions explicitly, since 0 * NaN in the GEMM would leak a masked value
 * into the output (verification-method 4). FULL sub-tiles never look at the flag, so a tile only they use is not
 * scanned (a decode without a mask skipped a pass over every V tile). */
static void pack_kv(const fwd_ctx *c, fwd_ws *w, const fr_sem_batch *sb, int64_t kv, int64_t j0, int64_t nj,
                    bool scan) {
    pack_kv_inner(c, w, sb, kv, j0, nj);
    int64_t Dv = c->pb->Dv;
    bool bad = false;
    w->v_bad = true; /* unknown: the safe reading */
    if (!scan || w->kr_tile) return; /* in place: axpy_rows_bf16 skips excluded positions itself */
    if (c->bf16) {
        const uint32_t *vb = w->vb;
        uint32_t inf = 0; /* either half's exponent all ones; branch-free, so the compiler vectorizes it */
        for (int64_t e = 0; e < ((nj + 1) / 2) * Dv; e++)
            inf |= (uint32_t)((vb[e] & 0x7f80u) == 0x7f80u) | (uint32_t)((vb[e] & 0x7f800000u) == 0x7f800000u);
        bad = inf != 0;
    } else {
        uint32_t inf = 0; /* exponent all ones: NaN or Inf; branch-free, so the compiler vectorizes it */
        for (int64_t j = 0; j < nj; j++) {
            const float *v = w->vp + j * w->ldv;
            for (int64_t d = 0; d < Dv; d++) {
                uint32_t u;
                memcpy(&u, v + d, sizeof u);
                inf |= (uint32_t)((u & 0x7f800000u) == 0x7f800000u);
            }
        }
        bad = inf != 0;
    }
    w->v_bad = bad;
}

/* Asks the memory system for the K and V rows of keys [j0, j0 + nj) a tile ahead of their use: a bf16 decode task
 * does little arithmetic per key, so without it each key tile waits on its cache misses in turn (rows lie at a fixed
 * stride in every layout). */
static void prefetch_kv(const fwd_ctx *c, const fr_sem_batch *sb, int64_t kv, int64_t j0, int64_t nj) {
    const fr_problem *pb = c->pb;
    const fr_tensor *T[2] = {&c->in->key, &c->in->value};
    int64_t D[2] = {pb->Dk, pb->Dv};
    for (int k = 0; k < 2; k++) {
        const fr_tensor *t = T[k];
        int64_t es = (int64_t)fr_dtype_size(t->dtype);
        int64_t o0 = fr_layout_offset(t, pb->layout, D[k], sb->kv0, sb->b, kv, j0, 0);
        int64_t ld = nj > 1 ? fr_layout_offset(t, pb->layout, D[k], sb->kv0, sb->b, kv, j0 + 1, 0) - o0 : 0;
        if (t->strides[t->ndim - 1] != 1 || es <= 0) continue;
        const char *base = (const char *)t->data + o0 * es;
        for (int64_t j = 0; j < nj; j++)
            for (int64_t b = 0; b < D[k] * es; b += 64) __builtin_prefetch(base + (j * ld) * es + b, 0, 3);
    }
}

/* T = P V over the positions that take part only (PARTIAL sub-tile with non-finite V). */
static void pv_masked(const fwd_ctx *c, fwd_ws *w, int64_t nu, int64_t nj) {
    int64_t Dv = c->pb->Dv;
    for (int64_t r = 0; r < nu; r++)
        for (int64_t d = 0; d < Dv; d++) {
            float acc = 0.0f;
            for (int64_t j = 0; j < nj; j++) {
                if (!w->keep[r * FR_K_BN + j]) continue;
                float p, v;
                if (c->bf16) {
                    p = fr_dec_bf16(((const uint16_t *)(w->pb2 + r * (FR_K_BN / 2)))[j]);
                    uint32_t pr = w->vb[(j / 2) * Dv + d];
                    v = fr_dec_bf16((uint16_t)(j & 1 ? pr >> 16 : pr & 0xffffu));
                } else {
                    p = w->s[r * FR_K_BN + j];
                    v = w->vp[j * w->ldv + d];
                }
                acc += p * v;
            }
            w->t[r * Dv + d] = acc;
        }
}

/* Rows [r0, r0 + nu) of the task (query rows i0 + r0 ...) against key tile [j0, j0 + nj), packed in w. */
static void fwd_subtile(const fwd_ctx *c, fwd_ws *w, const fr_sem_batch *sb, int64_t h, int64_t kv, int64_t i0,
                        int64_t r0, int64_t nu, int64_t j0, int64_t nj, fr_tile_class cls) {
    const fr_problem *pb = c->pb;
    const fr_kops *ops = c->ops;
    const fr_sem *sem = &c->sem;
    int64_t Dv = pb->Dv;
    if (w->kr_tile)
        ops->dot_rows_bf16(nu, nj, c->DQ2, w->qb + r0 * c->DQ2, c->DQ2, w->krowb, w->ldk2, w->s, FR_K_BN);
    else if (c->bf16)
        ops->gemm_bf16(nu, nj, c->DQ2, w->qb + r0 * c->DQ2, c->DQ2, w->ktb, FR_K_BN, w->s, FR_K_BN, false);
    else
        ops->gemm_f32(nu, nj, c->DQ, w->q + r0 * c->DQ, c->DQ, w->kt, FR_K_BN, w->s, FR_K_BN, false);
    fr_k_scores(sem, sb, h, kv, i0 + r0, nu, j0, nj, cls, w->dq + r0, w->s, w->pse, w->keep);
    if (sem->dropout) fr_sem_tile_drop(sem, sb, h, i0 + r0, nu, j0, nj, w->drop, FR_K_BN);
    for (int64_t r = 0; r < nu; r++) {
        float *x = w->s + r * FR_K_BN, alpha, mu;
        fr_osm_f32 *st = &w->st[r0 + r];
        fr_osm_f32_update(st, ops->max_f32(nj, x), 0.0f, &alpha, &mu);
        if (alpha != 1.0f) {
            float *o = w->o + (r0 + r) * Dv, *oc = w->oc + (r0 + r) * Dv;
            for (int64_t d = 0; d < Dv; d++) o[d] *= alpha, oc[d] *= alpha;
            w->lc[r0 + r] *= alpha;
        }
        /* l across tiles with Kahan compensation (the error then stays flat in S2) */
        float y = ops->expsum_f32(nj, x, mu) - w->lc[r0 + r], l0 = st->l;
        fr_osm_f32_add_sum(st, y);
        w->lc[r0 + r] = (st->l - l0) - y;
        if (sem->dropout) { /* after the sum: l excludes dropout (spec 3 steps 5-6) */
            const uint8_t *dk = w->drop + r * FR_K_BN;
            for (int64_t j = 0; j < nj; j++) x[j] = dk[j] ? x[j] * sem->rkeep : 0.0f;
        }
        /* P rounded to the input dtype, half away from zero (D3); the bf16 GEMM path rounds while packing pairs */
        if (c->bf16) ops->pack_bf16_away(nj, x, (uint16_t *)(w->pb2 + r * (FR_K_BN / 2)));
        else fr_kio_round_p(pb->dtype, nj, x);
    }
    if (w->kr_tile) { /* O += P V from the V rows in place; excluded positions skipped on PARTIAL tiles */
        ops->axpy_rows_bf16(nu, nj, Dv, (const uint16_t *)w->pb2, FR_K_BN, cls == FR_TILE_PARTIAL ? w->keep : NULL,
                            FR_K_BN, w->vrow, w->ldv16, w->o + r0 * Dv, Dv);
        return;
    }
    if (cls == FR_TILE_PARTIAL && w->v_bad) {
        pv_masked(c, w, nu, nj);
    } else if (c->bf16) {
        /* O += P V straight into O (no compensation: the bf16 path's error is P's rounding to bf16, 2^-9 relative,
         * far above fp32 summation across tiles; the tile GEMM then runs without a pass over T) */
        ops->gemm_bf16(nu, Dv, (nj + 1) / 2, w->pb2, FR_K_BN / 2, w->vb, Dv, w->o + r0 * Dv, Dv, true);
        return;
    } else {
        ops->gemm_f32(nu, Dv, nj, w->s, FR_K_BN, w->vp, w->ldv, w->t, Dv, false);
    }
    ops->kahan_add_f32(nu * Dv, w->o + r0 * Dv, w->oc + r0 * Dv, w->t); /* o += t, compensated */
}

/* Query rows [i0, i0 + nq) of head h against keys [jb, je): leaves the compensated state in w->st, w->o (O - its
 * compensation folded in), unnormalized. with_sink: count the sink logit (once per row: the first key chunk). */
static void fwd_rows(const fwd_ctx *c, fwd_ws *w, const fr_sem_batch *sb, int64_t h, int64_t i0, int64_t jb,
                     int64_t je, bool with_sink) {
    const fr_problem *pb = c->pb;
    const fr_sem *sem = &c->sem;
    int64_t nq = min64(c->bq, sb->S1 - i0), kv = fr_sem_kv_head(sem, h), Dv = pb->Dv;
    int64_t nsub = (nq + FR_K_BM - 1) / FR_K_BM;
    w->kr = c->bf16 && nq <= FR_K_DECODE_S1;
    pack_q(c, w, sb, h, i0, nq);
    for (int64_t r = 0; r < nq; r++) {
        w->st[r] = fr_osm_f32_init();
        w->lc[r] = 0.0f;
        if (sem->sink && with_sink) { /* the sink is one more logit with a zero value vector (D6) */
            float a, mu, sk = fr_sem_sink(sem, h);
            fr_osm_f32_update(&w->st[r], sk, 0.0f, &a, &mu);
            fr_osm_f32_add_sum(&w->st[r], expf(sk - mu));
        }
    }
    memset(w->o, 0, sizeof(float) * (size_t)(nq * Dv));
    memset(w->oc, 0, sizeof(float) * (size_t)(nq * Dv));
    for (int64_t j0 = jb; j0 < je; j0 += FR_K_BN) {
        int64_t nj = min64(FR_K_BN, je - j0);
        fr_tile_class cls[FR_K_BQ / FR_K_BM];
        bool any = false, partial = false;
        for (int64_t u = 0; u < nsub; u++) {
            cls[u] = fr_sem_tile_class(sem, sb, h, i0 + u * FR_K_BM, min64(FR_K_BM, nq - u * FR_K_BM), j0, nj);
            any = any || cls[u] != FR_TILE_SKIP;
            partial = partial || cls[u] == FR_TILE_PARTIAL;
        }
        if (!any) continue;
        if (w->kr && j0 + FR_K_BN < je) /* bf16 decode: 11.7-16.2 -> 17.2-20.1 GB/s back to back; fp32 gained none */
            prefetch_kv(c, sb, kv, j0 + FR_K_BN, min64(FR_K_BN, je - j0 - FR_K_BN));
        pack_kv(c, w, sb, kv, j0, nj, partial);
        for (int64_t u = 0; u < nsub; u++)
            if (cls[u] != FR_TILE_SKIP)
                fwd_subtile(c, w, sb, h, kv, i0, u * FR_K_BM, min64(FR_K_BM, nq - u * FR_K_BM), j0, nj, cls[u]);
    }
    for (int64_t r = 0; r < nq; r++) {
        float *o = w->o + r * Dv, *oc = w->oc + r * Dv;
        fr_osm_f32_add_sum(&w->st[r], -w->lc[r]); /* the compensated sum */
        for (int64_t d = 0; d < Dv; d++) o[d] -= oc[d];
    }
}

/* Final rows: O = o / l (D1 rows 0) and the statistics, for rows [i0, i0 + nq) with states st, o [nq][Dv]. */
static void fwd_store(const fwd_ctx *c, const fr_sem_batch *sb, int64_t h, int64_t i0, int64_t nq, fr_osm_f32 *st,
                      float *obuf) {
    const fr_problem *pb = c->pb;
    const fr_fwd_outputs *out = c->out;
    int64_t Dv = pb->Dv;
    for (int64_t r = 0; r < nq; r++) {
        float inv_l, mx, sm, *o = obuf + r * Dv;
        if (fr_osm_f32_is_nan(&st[r])) { /* a NaN score took part: the whole row is NaN (golden.md 4) */
            mx = sm = NAN;
            for (int64_t d = 0; d < Dv; d++) o[d] = NAN;
        } else if (fr_osm_f32_finalize(&st[r], &inv_l, &mx, &sm)) {
            for (int64_t d = 0; d < Dv; d++) o[d] = o[d] / sm; /* spec 3 step 8: acc / l in fp32 */
        } else {
            for (int64_t d = 0; d < Dv; d++) o[d] = 0.0f; /* D1 */
        }
        int64_t i = i0 + r;
        if (fr_tensor_present(&out->attention_out))
            fr_kio_store_f32(&out->attention_out,
                             fr_layout_offset(&out->attention_out, pb->layout, Dv, sb->q0, sb->b, h, i, 0), Dv, o);
        const fr_tensor *tm = &out->softmax_max, *ts = &out->softmax_sum;
        fr_kio_store_stat(tm, fr_softmax_offset(tm, pb->layout, c->sl, sb->q0, sb->b, h, i, 0), mx);
        fr_kio_store_stat(ts, fr_softmax_offset(ts, pb->layout, c->sl, sb->q0, sb->b, h, i, 0), sm);
    }
}

static void fwd_task(const fwd_ctx *c, fwd_ws *w, const fr_sem_batch *sb, int64_t h, int64_t i0) {
    fwd_rows(c, w, sb, h, i0, 0, sb->S2, true);
    fwd_store(c, sb, h, i0, min64(c->bq, sb->S1 - i0), w->st, w->o);
}

/* Decode task t = (b, h, chunk): the chunk's partial state into part_st / part_o. */
static void fwd_task_chunk(const fwd_ctx *c, fwd_ws *w, int64_t t) {
    const fr_problem *pb = c->pb;
    int64_t bh = t / c->nsplit, k = t % c->nsplit, S1 = pb->S1, Dv = pb->Dv;
    fr_sem_batch sb;
    fr_sem_batch_get(&c->sem, bh / pb->N1, &sb);
    int64_t jb = k * FR_K_DECODE_KEYS, je = min64(sb.S2, jb + FR_K_DECODE_KEYS);
    fwd_rows(c, w, &sb, bh % pb->N1, 0, jb, je, k == 0);
    memcpy(c->part_st + t * S1, w->st, sizeof(fr_osm_f32) * (size_t)S1);
    memcpy(c->part_o + t * S1 * Dv, w->o, sizeof(float) * (size_t)(S1 * Dv));
}

/* Decode: (b, h) = bh's chunks merged in chunk order, then stored. */
static void fwd_merge_chunks(const fwd_ctx *c, int64_t bh) {
    const fr_problem *pb = c->pb;
    int64_t S1 = pb->S1, Dv = pb->Dv, t0 = bh * c->nsplit;
    fr_osm_f32 *st = c->part_st + t0 * S1;
    float *o = c->part_o + t0 * S1 * Dv;
    for (int64_t k = 1; k < c->nsplit; k++)
        for (int64_t r = 0; r < S1; r++)
            fr_osm_f32_merge(&st[r], o + r * Dv, c->part_st[(t0 + k) * S1 + r], c->part_o + ((t0 + k) * S1 + r) * Dv,
                             Dv);
    fr_sem_batch sb;
    fr_sem_batch_get(&c->sem, bh / pb->N1, &sb);
    fwd_store(c, &sb, bh % pb->N1, 0, S1, st, o);
}

/* Top-k gather (D7): each row takes part only at its listed key columns (duplicates count once per occurrence),
 * subject to every other rule at that position. One row at a time: the list is the row's only "tile", so the osm
 * state sees one update; P.V and l accumulate in fp64 (W is small next to S2; this path is about the semantics). */
static void fwd_task_topk(const fwd_ctx *c, fwd_ws *w, const fr_sem_batch *sb, int64_t h, int64_t i0) {
    const fr_problem *pb = c->pb;
    const fr_sem *sem = &c->sem;
    const fr_fwd_inputs *in = c->in;
    int64_t nq = min64(c->bq, sb->S1 - i0), kv = fr_sem_kv_head(sem, h), Dv = pb->Dv, DQ = c->DQ;
    float *qrow = w->q, *krow = w->kt, *vrow = w->v; /* scratch rows */
    for (int64_t r = 0; r < nq; r++) {
        int64_t i = i0 + r;
        load_qk_row(c, &in->query, &in->query_rope, sb, sb->q0, h, i, qrow);
        w->dq[0] = pb->fp8 ? fr_sem_dscale_q(sem, sb, h, i) : 1.0f;
        int64_t n = fr_sem_topk_row(sem, sb, h, i, w->cols), m = 0;
        float tmax = -INFINITY;
        for (int64_t k = 0; k < n; k++) {
            int64_t j = w->cols[k];
            load_qk_row(c, &in->key, &in->key_rope, sb, sb->kv0, kv, j, krow);
            float s = 0.0f;
            for (int64_t d0 = 0; d0 < DQ; d0 += FR_K_KB) { /* blocked like the GEMM microkernels */
                float part = 0.0f;
                for (int64_t d = d0; d < DQ && d < d0 + FR_K_KB; d++) part += qrow[d] * krow[d];
                s += part;
            }
            w->s[0] = s;
            fr_k_scores(sem, sb, h, kv, i, 1, j, 1, FR_TILE_PARTIAL, w->dq, w->s, w->pse, w->keep);
            if (w->s[0] == -INFINITY) continue; /* excluded by the mask rules */
            w->cols[m] = j;
            w->xs[m++] = w->s[0];
            if (w->s[0] > tmax) tmax = w->s[0];
        }
        fr_osm_f32 st = fr_osm_f32_init();
        if (sem->sink) {
            float a, mu, sk = fr_sem_sink(sem, h);
            fr_osm_f32_update(&st, sk, 0.0f, &a, &mu);
            fr_osm_f32_add_sum(&st, expf(sk - mu));
        }
        float alpha, mu;
        fr_osm_f32_update(&st, tmax, 0.0f, &alpha, &mu);
        for (int64_t d = 0; d < Dv; d++) w->od[d] = 0.0;
        double l = 0.0;
        for (int64_t k = 0; k < m; k++) {
            int64_t j = w->cols[k];
            float p = expf(w->xs[k] - mu);
            l += (double)p;
            if (sem->dropout) p = fr_sem_drop_bit(sem, sb, h, i, j) ? p * sem->rkeep : 0.0f;
            fr_kio_round_p(pb->dtype, 1, &p);
            if (p == 0.0f) continue;
            fr_kio_load_f32(&in->value, fr_layout_offset(&in->value, pb->layout, Dv, sb->kv0, sb->b, kv, j, 0), Dv, vrow);
            float dv = pb->fp8 ? fr_sem_dscale_v(sem, sb, kv, j) : 1.0f;
            for (int64_t d = 0; d < Dv; d++) w->od[d] += (double)p * (double)(vrow[d] * dv);
        }
        fr_osm_f32_add_sum(&st, (float)l);
        float inv_l, mx, sm, *o = w->o;
        if (fr_osm_f32_is_nan(&st)) { /* a NaN score took part (golden.md 4) */
            mx = sm = NAN;
            for (int64_t d = 0; d < Dv; d++) o[d] = NAN;
        } else if (fr_osm_f32_finalize(&st, &inv_l, &mx, &sm)) {
            for (int64_t d = 0; d < Dv; d++) o[d] = (float)w->od[d] / sm;
        } else {
            for (int64_t d = 0; d < Dv; d++) o[d] = 0.0f; /* D1 */
        }
        const fr_fwd_outputs *out = c->out;
        if (fr_tensor_present(&out->attention_out))
            fr_kio_store_f32(&out->attention_out,
                             fr_layout_offset(&out->attention_out, pb->layout, Dv, sb->q0, sb->b, h, i, 0), Dv, o);
        const fr_tensor *tm = &out->softmax_max, *ts = &out->softmax_sum;
        fr_kio_store_stat(tm, fr_softmax_offset(tm, pb->layout, c->sl, sb->q0, sb->b, h, i, 0), mx);
        fr_kio_store_stat(ts, fr_softmax_offset(ts, pb->layout, c->sl, sb->q0, sb->b, h, i, 0), sm);
    }
}

/* Task t -> (batch, head, first query row). */
static void task_of(const fwd_ctx *c, int64_t t, fr_sem_batch *sb, int64_t *h, int64_t *i0) {
    const fr_problem *pb = c->pb;
    if (pb->layout != FR_TND) {
        int64_t per_b = pb->N1 * c->nqt;
        fr_sem_batch_get(&c->sem, t / per_b, sb);
        *h = (t % per_b) / c->nqt;
        *i0 = (t % c->nqt) * c->bq;
        return;
    }
    int64_t lo = 0, hi = pb->B - 1; /* last b with task0[b] <= t */
    while (lo < hi) {
        int64_t mid = (lo + hi + 1) / 2;
        if (c->task0[mid] <= t) lo = mid;
        else hi = mid - 1;
    }
    *sb = c->batches[lo];
    int64_t nqt = (sb->S1 + c->bq - 1) / c->bq, k = t - c->task0[lo];
    *h = k / nqt;
    *i0 = (k % nqt) * c->bq;
}

/* Alike bwd.c:fr_k_bwd: kept apart because only the set-up's shape is alike: each fills its own context (fwd_ctx here,
 * bwd_ctx there) for its own passes. */
fr_status fr_k_fwd(const fr_kops *ops, int num_threads, const fr_problem *pb, const fr_params *p,
                   const fr_fwd_inputs *in, const fr_fwd_outputs *out, fr_error *err) {
    return fr_k_fwd_ex(ops, num_threads, NULL, pb, p, in, out, err);
}

fr_status fr_k_fwd_ex(const fr_kops *ops, int num_threads, const fr_engine *e, const fr_problem *pb,
                      const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out, fr_error *err) {
    fwd_ctx c;
    memset(&c, 0, sizeof c);
    c.ops = ops;
    c.pb = pb;
    c.in = in;
    c.out = out;
    c.sl = p->softmax_layout;
    fr_status st = fr_sem_init(&c.sem, pb, p, in, err);
    if (st != FR_OK) return st;
    c.DQ = pb->Dk + pb->Drope;
    c.DQ2 = (c.DQ + 1) / 2;
    c.bq = c.DQ <= 128 && pb->Dv <= 128 ? FR_K_BQ : FR_K_BQ / 2;
    c.bf16 = pb->dtype == FR_BF16 && ops->bf16_gemm && !c.sem.topk;
    int64_t ntasks = 0;
    if (pb->layout == FR_TND) {
        c.batches = malloc(sizeof(fr_sem_batch) * (size_t)(pb->B > 0 ? pb->B : 1));
        c.task0 = malloc(sizeof(int64_t) * (size_t)(pb->B + 1));
        if (!c.batches || !c.task0) {
            free(c.batches), free(c.task0);
            return fr_fail(err, FR_E_NOMEM, "engine 'fast': %lld batch descriptors", (long long)pb->B);
        }
        for (int64_t b = 0; b < pb->B; b++) {
            fr_sem_batch_get(&c.sem, b, &c.batches[b]);
            c.task0[b] = ntasks;
            ntasks += pb->N1 * ((c.batches[b].S1 + c.bq - 1) / c.bq);
        }
        c.task0[pb->B] = ntasks;
    } else {
        c.nqt = (pb->S1 + c.bq - 1) / c.bq;
        int64_t t;
        if (!fr_mul_ok(pb->B, pb->N1, &t) || !fr_mul_ok(t, c.nqt, &ntasks))
            return fr_fail(err, FR_E_OVERFLOW, "engine 'fast': B * N1 * query tiles overflows");
    }
    /* decode split: from the problem alone; partial states cost B N1 nsplit S1 (Dv + 2) floats (<= 256 MiB) */
    c.nsplit = 1;
    if (pb->layout != FR_TND && !c.sem.topk && pb->S1 <= FR_K_DECODE_S1 && pb->S2 > FR_K_DECODE_KEYS && ntasks > 0) {
        int64_t ns = (pb->S2 + FR_K_DECODE_KEYS - 1) / FR_K_DECODE_KEYS, n;
        if (fr_mul_ok(ntasks, ns, &n) && fr_mul_ok(n, pb->S1 * (pb->Dv + 2), &n) && n <= (INT64_C(64) << 20)) {
            c.part_o = malloc(sizeof(float) * (size_t)(ntasks * ns * pb->S1 * (pb->Dv > 0 ? pb->Dv : 1)));
            c.part_st = malloc(sizeof(fr_osm_f32) * (size_t)(ntasks * ns * pb->S1));
            if (!c.part_o || !c.part_st) {
                free(c.part_o), free(c.part_st);
                return fr_fail(err, FR_E_NOMEM, "engine 'fast': decode partial states");
            }
            c.nsplit = ns;
        }
    }
    int64_t nwork = ntasks * c.nsplit; /* decode: ntasks = B N1 (one query tile each) */
    int failed = 0;
    fr_progress_start(&c.pr, e, nwork);
    int nt = num_threads > 0 ? num_threads : omp_get_max_threads();
    if (ntasks > 0) {
        /* Alike verify/zoo/mutants_base.c:mb_fwd (its parallel region): kept apart because the mutant base is an
         * implementation of its own that the verifier's tests break on purpose; only the OpenMP skeleton is alike. */
#pragma omp parallel num_threads(nt)
        {
            fwd_ws w;
            bool ok = ws_alloc(&w, &c);
            if (!ok) {
#pragma omp atomic write
                failed = 1;
            }
#pragma omp for schedule(dynamic, 1)
            for (int64_t t = 0; t < (c.nsplit > 1 ? nwork : 0); t++) {
                if (ok) fwd_task_chunk(&c, &w, t);
                fr_progress_add(&c.pr, 1);
            }
#pragma omp for schedule(static)
            for (int64_t bh = 0; bh < (c.nsplit > 1 && !failed ? ntasks : 0); bh++) fwd_merge_chunks(&c, bh);
#pragma omp for schedule(dynamic, 1)
            for (int64_t t = 0; t < (c.nsplit > 1 ? 0 : ntasks); t++) {
                if (!ok) continue;
                fr_sem_batch sb;
                int64_t h, i0;
                task_of(&c, t, &sb, &h, &i0);
                if (c.sem.topk) fwd_task_topk(&c, &w, &sb, h, i0);
                else fwd_task(&c, &w, &sb, h, i0);
                fr_progress_add(&c.pr, 1);
            }
            if (ok) ws_free(&w);
        }
    }
    free(c.batches), free(c.task0), free(c.part_o), free(c.part_st);
    if (failed) return fr_fail(err, FR_E_NOMEM, "engine 'fast': per-thread tile workspace");
    fr_progress_end(&c.pr);
    return FR_OK;
}
