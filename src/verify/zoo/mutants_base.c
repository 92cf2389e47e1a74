/* The mutants' base: one plain tiled online-softmax forward and backward in fp32 (query tiles of MB_TILE rows, key
 * tiles of MB_TILE keys), the whole operator through src/semantics (masks, sparse modes, band, prefix, pse of every
 * type, dropout, GQA, TND, sink, rope; fully masked rows per D1), with defect switches (mutants_base.h). Each switch
 * is written where the real kernel had it, so a mutant carries exactly its bug and nothing else.
 *
 * Numerics (chosen so the base stays within the ideal fp32 pipeline's error on every suite case, 70000 keys
 * included, and a mutant fails for its defect only): inputs widened to fp32; q.k dot products summed in fp64 and
 * rounded once to fp32 (a fused dot); exp, P, the running max and the output accumulator in fp32, each key tile's P.V
 * summed apart then added (the tile's matmul); row sums in fp64; backward: D_i, dP - D_i and dsink terms in fp64
 * (they cancel), dq per key tile then added, gradients accumulated in fp32. Forward: one task per (head, batch,
 * query tile), OpenMP over tasks, each output row has one owner (bit-identical for any thread count). Backward:
 * serial (dK/dV summed over query tiles and the G heads of a group in a fixed order). Working memory: O(tile x D)
 * forward; the backward keeps fp32 gradient accumulators of the gradients' size (never S1 x S2). */
#include "verify/zoo/mutants_base.h"

#include "core/core.h"
#include "core/problem.h"
#include "semantics/semantics.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define T MB_TILE

typedef struct mb_ctx {
    mb_bug bug;
    fr_problem pb;
    const fr_params *p;
    const fr_fwd_inputs *in;
    fr_sem sem;
    fr_sem_batch *bt; /* B entries */
    int64_t *qblk;    /* B + 1: first query tile of each batch (prefix sums) */
    int64_t Dk, Dv, Dr;
    int64_t Dk_use; /* q.k columns used: Dk, or 16*floor(Dk/16) with MB_HEAD_DIM_TAIL */
    uint64_t rot;   /* MB_SPLIT_KV_ORDER: first key tile of every row, from the clock (0 otherwise) */
} mb_ctx;

/* Tile workspace: every buffer a forward task or a backward tile needs. */
typedef struct mb_ws {
    float *Q, *Qr, *K, *Kr, *V, *acc, *pv, *dqt, *x, *pse, *m, *mprev, *mtrue, *dO, *Oi;
    double *l; /* the row sums: fp64, so a sum over 70000 keys keeps the ideal pipeline's accuracy */
    uint8_t *keep, *drop;
    int64_t *npart;
    void *mem;
} mb_ws;

static bool ws_alloc(const mb_ctx *c, mb_ws *w) {
    const int64_t Dk = c->Dk, Dr = c->Dr, Dv = c->Dv;
    int64_t nf = T * (Dk + Dr) * 2 + T * Dv * 4 + Dv + Dk + Dr + 2 * T * T + 3 * T;
    size_t bytes = (size_t)T * sizeof(double) + (size_t)nf * sizeof(float) + 2 * (size_t)(T * T) +
                   (size_t)T * sizeof(int64_t) + 64;
    char *mem = malloc(bytes);
    if (!mem) return false;
    w->mem = mem;
    /* 8-byte arrays first (malloc alignment), then the floats, then the bytes: no misaligned access. */
    w->l = (double *)mem;
    w->npart = (int64_t *)(w->l + T);
    float *f = (float *)(w->npart + T);
    w->Q = f; f += T * Dk;
    w->Qr = f; f += T * Dr;
    w->K = f; f += T * Dk;
    w->Kr = f; f += T * Dr;
    w->V = f; f += T * Dv;
    w->acc = f; f += T * Dv;
    w->pv = f; f += Dv;
    w->dqt = f; f += Dk + Dr;
    w->dO = f; f += T * Dv;
    w->Oi = f; f += T * Dv;
    w->x = f; f += T * T;
    w->pse = f; f += T * T;
    w->m = f; f += T;
    w->mprev = f; f += T;
    w->mtrue = f; f += T;
    w->keep = (uint8_t *)f;
    w->drop = w->keep + T * T;
    return true;
}

static inline int64_t kv_head(const mb_ctx *c, int64_t h) {
    /* MB_GQA_MOD: the mapping of kernels that index kv heads round-robin. */
    return c->bug == MB_GQA_MOD ? h % c->pb.N2 : h / c->pb.G;
}

/* Rows [i0, i0+nr) of head n of a q/k/v-like tensor (head dim D) into dst[r * D + d], widened to fp32. */
static void load_rows(const mb_ctx *c, const fr_tensor *t, int64_t D, int64_t row0, int64_t b, int64_t n,
                      int64_t i0, int64_t nr, float *dst) {
    if (D == 0) return;
    const int64_t sd = t->strides[t->ndim - 1];
    for (int64_t r = 0; r < nr; r++) {
        int64_t base = fr_layout_offset(t, c->pb.layout, D, row0, b, n, i0 + r, 0);
        for (int64_t d = 0; d < D; d++) {
            int64_t off = base + d * sd;
            /* MB_INDEX32: the offset computed in 32 bits. The wrapped value is folded into [0, 2^31) (off mod 2^31)
             * so the process survives: the real kernel reads out of bounds there. Visible only on tensors whose
             * element offsets pass 2^31 - 1. */
            if (c->bug == MB_INDEX32 && off >= 0) off &= INT64_C(0x7FFFFFFF);
            dst[r * D + d] = (float)fr_load_f64(t, off);
        }
    }
}

static double dotd(const float *a, const float *b, int64_t n) {
    double s = 0.0;
    for (int64_t k = 0; k < n; k++) s += (double)a[k] * (double)b[k];
    return s;
}
static float dotf(const float *a, const float *b, int64_t n) { return (float)dotd(a, b, n); }

/* Scaled scores x[r * T + col] of the tile and keep[r * T + col] (1 = takes part); Q/K (and rope) loaded. */
static void tile_scores(const mb_ctx *c, const fr_sem_batch *sb, int64_t h, int64_t i0, int64_t nr, int64_t j0,
                        int64_t nc, fr_tile_class cls, mb_ws *w) {
    const fr_sem *s = &c->sem;
    if (cls == FR_TILE_FULL)
        memset(w->keep, 1, (size_t)(T * T));
    else
        fr_sem_tile_keep(s, sb, h, i0, nr, j0, nc, w->keep, T);
    if (s->pse) fr_sem_tile_pse_f32(s, sb, h, i0, nr, j0, nc, w->pse, T);
    /* MB_PSE_ORDER: pse_type 1 ((qk + pse) * scale) computed as pse_type 0 (qk * scale + pse). */
    const bool pse1 = s->pse && s->pse_type == FR_PSE_OUTER_ADD_MUL && c->bug != MB_PSE_ORDER;
    for (int64_t r = 0; r < nr; r++)
        for (int64_t col = 0; col < nc; col++) {
            float q = dotf(w->Q + r * c->Dk, w->K + col * c->Dk, c->Dk_use);
            if (c->Dr) q += dotf(w->Qr + r * c->Dr, w->Kr + col * c->Dr, c->Dr);
            float v;
            if (!s->pse) v = q * s->scale;
            else if (pse1) v = (q + w->pse[r * T + col]) * s->scale;
            else v = q * s->scale + w->pse[r * T + col];
            w->x[r * T + col] = v;
        }
    if (s->dropout) fr_sem_tile_drop(s, sb, h, i0, nr, j0, nc, w->drop, T);
}

/* Dropout factor of a kept/dropped bit. */
static inline float drop_z(const mb_ctx *c, uint8_t bit) {
    if (!c->sem.dropout) return 1.0f;
    if (!bit) return 0.0f;
    /* MB_DROP_SCALE_TWICE: 1/keep_prob applied once in the kernel and once more by the caller's wrapper. */
    return c->bug == MB_DROP_SCALE_TWICE ? c->sem.rkeep * c->sem.rkeep : c->sem.rkeep;
}

/* P rounded to the input dtype (MB_STALE_MAX: P as the P.V product consumes it). */
static float round_p(const mb_ctx *c, float e) {
    if (c->pb.dtype == FR_BF16) return fr_bf16_to_f32(fr_f32_to_bf16(e, FR_ROUND_NEAREST_EVEN, FR_NO_SAT));
    if (c->pb.dtype == FR_F16) return fr_f16_to_f32(fr_f32_to_f16(e, FR_ROUND_NEAREST_EVEN, FR_NO_SAT));
    return e;
}

/* The online-softmax update of row r with the tile's nc keys. */
static void row_update(const mb_ctx *c, int64_t r, int64_t nc, mb_ws *w) {
    const int64_t Dv = c->Dv;
    const float *xr = w->x + r * T;
    uint8_t *kr = w->keep + r * T;
    const uint8_t *dr = w->drop + r * T;
    float *acc = w->acc + r * Dv;
    float m = w->m[r];
    double l = w->l[r];
    /* P.V of this tile summed apart, then added to the accumulator, as the tile's matmul does. */
    float *pv = w->pv;
    for (int64_t d = 0; d < Dv; d++) pv[d] = 0.0f;
    if (c->bug == MB_ADDITIVE_MASK) {
        /* The mask as an additive -10000: every position takes part, masked ones with score - 10000. */
        float xa[T];
        for (int64_t col = 0; col < nc; col++) xa[col] = kr[col] ? xr[col] : xr[col] + -10000.0f;
        float bm = -INFINITY;
        for (int64_t col = 0; col < nc; col++)
            if (!(xa[col] <= bm)) bm = xa[col];
        w->npart[r] += nc;
        if (!(bm <= m)) {
            float alpha = expf(m - bm);
            l *= alpha;
            for (int64_t d = 0; d < Dv; d++) acc[d] *= alpha;
            m = bm;
        }
        for (int64_t col = 0; col < nc; col++) {
            float e = expf(xa[col] - m);
            l += e;
            float z = drop_z(c, dr[col]);
            if (z == 0.0f) continue;
            const float *v = w->V + col * Dv;
            for (int64_t d = 0; d < Dv; d++) pv[d] += e * z * v[d];
        }
        for (int64_t d = 0; d < Dv; d++) acc[d] += pv[d];
        w->m[r] = m;
        w->l[r] = l;
        return;
    }
    float bm = -INFINITY;
    int64_t np = 0;
    for (int64_t col = 0; col < nc; col++)
        if (kr[col]) {
            np++;
            if (!(xr[col] <= bm)) bm = xr[col]; /* a NaN score becomes the max and propagates */
        }
    if (np == 0 && c->bug == MB_MASKED_TIMES_V) {
        for (int64_t col = 0; col < nc; col++)
            for (int64_t d = 0; d < Dv; d++) pv[d] += 0.0f * w->V[col * Dv + d];
        for (int64_t d = 0; d < Dv; d++) acc[d] += pv[d];
        return;
    }
    if (np == 0 && c->bug != MB_NO_INF_GUARD) return;
    w->npart[r] += np;
    w->mprev[r] = m;
    switch (c->bug) {
    case MB_NO_INF_GUARD: {
        /* No -inf guard: m_new = -inf on an all-masked tile, and exp(-inf - -inf) = NaN poisons l and acc. */
        float mn = !(bm <= m) ? bm : m;
        float alpha = expf(m - mn);
        l *= alpha;
        for (int64_t d = 0; d < Dv; d++) acc[d] *= alpha;
        m = mn;
        for (int64_t col = 0; col < nc; col++) {
            float e = expf((kr[col] ? xr[col] : -INFINITY) - m);
            l += e;
            if (!kr[col]) continue; /* P.V skips masked keys: the defect is the missing guard alone */
            float z = drop_z(c, dr[col]);
            const float *v = w->V + col * Dv;
            for (int64_t d = 0; d < Dv; d++) pv[d] += e * z * v[d];
        }
        break;
    }
    case MB_NO_MAX_SUB: {
        /* p = exp(x) straight: exact in real arithmetic, overflows once a score passes ~88.7. m kept for the stats. */
        if (!(bm <= m)) m = bm;
        for (int64_t col = 0; col < nc; col++) {
            if (!kr[col]) continue;
            float e = expf(xr[col]);
            l += e;
            float z = drop_z(c, dr[col]);
            if (z == 0.0f) continue;
            const float *v = w->V + col * Dv;
            for (int64_t d = 0; d < Dv; d++) pv[d] += e * z * v[d];
        }
        break;
    }
    case MB_STALE_MAX: {
        /* FA4: rescale only when the max grew by more than 8 in log2 units; P up to 2^8 rounded for P.V while the
         * row sum adds the unrounded P, so sum(P used) != l: a coherent gain on rows whose max went stale. */
        if (!(bm <= w->mtrue[r])) w->mtrue[r] = bm;
        if (m == -INFINITY || (bm - m) * 1.4426950408889634f > 8.0f) {
            float alpha = expf(m - bm);
            l *= alpha;
            for (int64_t d = 0; d < Dv; d++) acc[d] *= alpha;
            m = bm;
        }
        for (int64_t col = 0; col < nc; col++) {
            if (!kr[col]) continue;
            float e = expf(xr[col] - m);
            l += e;
            float z = drop_z(c, dr[col]);
            if (z == 0.0f) continue;
            float pe = round_p(c, e);
            const float *v = w->V + col * Dv;
            for (int64_t d = 0; d < Dv; d++) pv[d] += pe * z * v[d];
        }
        break;
    }
    default: {
        if (!(bm <= m)) {
            float alpha = expf(m - bm); /* 0 when m was -inf */
            l *= alpha;
            for (int64_t d = 0; d < Dv; d++) acc[d] *= alpha;
            m = bm;
        }
        for (int64_t col = 0; col < nc; col++) {
            const float *v = w->V + col * Dv;
            if (!kr[col]) {
                /* MB_MASKED_TIMES_V: P = 0 multiplied into V instead of skipping: 0 * NaN = NaN. */
                if (c->bug == MB_MASKED_TIMES_V)
                    for (int64_t d = 0; d < Dv; d++) pv[d] += 0.0f * v[d];
                continue;
            }
            float e = expf(xr[col] - m);
            l += e; /* the sum excludes dropout (spec 3 step 5) */
            float z = drop_z(c, dr[col]);
            if (z == 0.0f) continue;
            float pw = e * z;
            for (int64_t d = 0; d < Dv; d++) pv[d] += pw * v[d];
        }
        break;
    }
    }
    for (int64_t d = 0; d < Dv; d++) acc[d] += pv[d];
    w->m[r] = m;
    w->l[r] = l;
}

static void store_stats(const mb_ctx *c, const fr_fwd_outputs *out, const fr_sem_batch *sb, int64_t h, int64_t i,
                        float m, double l) {
    for (int64_t k = 0; k < 8; k++) {
        if (fr_tensor_present(&out->softmax_max))
            fr_store_f64(&out->softmax_max,
                         fr_softmax_offset(&out->softmax_max, c->pb.layout, c->p->softmax_layout, sb->q0, sb->b, h,
                                           i, k),
                         (double)m);
        if (fr_tensor_present(&out->softmax_sum))
            fr_store_f64(&out->softmax_sum,
                         fr_softmax_offset(&out->softmax_sum, c->pb.layout, c->p->softmax_layout, sb->q0, sb->b, h,
                                           i, k),
                         l);
    }
}

static void store_out_row(const mb_ctx *c, const fr_fwd_outputs *out, const fr_sem_batch *sb, int64_t h, int64_t i,
                          const float *o, bool zero, double div) {
    if (!fr_tensor_present(&out->attention_out) || c->Dv == 0) return;
    const fr_tensor *t = &out->attention_out;
    int64_t base = fr_layout_offset(t, c->pb.layout, c->Dv, sb->q0, sb->b, h, i, 0), sd = t->strides[t->ndim - 1];
    for (int64_t d = 0; d < c->Dv; d++) fr_store_f64(t, base + d * sd, zero ? 0.0 : (double)o[d] / div);
}

static void fwd_task(const mb_ctx *c, const fr_fwd_outputs *out, const fr_sem_batch *sb, int64_t h, int64_t i0,
                     int64_t nr, mb_ws *w) {
    const fr_fwd_inputs *in = c->in;
    const int64_t Dk = c->Dk, Dr = c->Dr, Dv = c->Dv, n2 = kv_head(c, h);
    /* MB_SKIP_LAST_QTILE: the grid covers S1 / 64 full tiles only; a partial last tile is never computed. */
    if (c->bug == MB_SKIP_LAST_QTILE && nr < T) return;
    load_rows(c, &in->query, Dk, sb->q0, sb->b, h, i0, nr, w->Q);
    if (Dr) load_rows(c, &in->query_rope, Dr, sb->q0, sb->b, h, i0, nr, w->Qr);
    const bool sink = c->sem.sink;
    const float sk = sink ? fr_sem_sink(&c->sem, h) : 0.0f;
    for (int64_t r = 0; r < nr; r++) {
        /* With a sink the row starts with its one logit: m = sink, l = exp(sink - m) = 1 (D6). */
        w->m[r] = sink ? sk : -INFINITY;
        w->l[r] = sink ? (c->bug == MB_NO_MAX_SUB ? expf(sk) : 1.0f) : 0.0f;
        w->mprev[r] = -INFINITY;
        w->mtrue[r] = w->m[r];
        w->npart[r] = 0;
        for (int64_t d = 0; d < Dv; d++) w->acc[r * Dv + d] = 0.0f;
    }
    /* Bugs that run every tile: the kernels that had them never classified tiles. (The additive-sentinel kernel
     * does skip the tiles its block mask marks empty; inside the others every position takes part.) */
    const bool noskip = c->bug == MB_NO_INF_GUARD || c->bug == MB_MASKED_TIMES_V;
    const int64_t ntile = (sb->S2 + T - 1) / T;
    for (int64_t t = 0; t < ntile; t++) {
        /* MB_SPLIT_KV_ORDER: the key tiles' partial states merged in the order they finish (rot = 0: in order). */
        const int64_t j0 = (int64_t)(((uint64_t)t + c->rot) % (uint64_t)ntile) * T;
        int64_t nc = sb->S2 - j0 < T ? sb->S2 - j0 : T;
        /* MB_TAIL_DROP_LAST: the tail loop bound written as nc - 1. */
        if (c->bug == MB_TAIL_DROP_LAST && nc < T) nc--;
        if (nc == 0) continue;
        fr_tile_class cls = fr_sem_tile_class(&c->sem, sb, h, i0, nr, j0, nc);
        if (cls == FR_TILE_SKIP && !noskip) continue;
        load_rows(c, &in->key, Dk, sb->kv0, sb->b, n2, j0, nc, w->K);
        if (Dr) load_rows(c, &in->key_rope, Dr, sb->kv0, sb->b, n2, j0, nc, w->Kr);
        load_rows(c, &in->value, Dv, sb->kv0, sb->b, n2, j0, nc, w->V);
        tile_scores(c, sb, h, i0, nr, j0, nc, cls == FR_TILE_SKIP ? FR_TILE_PARTIAL : cls, w);
        for (int64_t r = 0; r < nr; r++) row_update(c, r, nc, w);
    }
    for (int64_t r = 0; r < nr; r++) {
        int64_t i = i0 + r;
        float m = w->m[r];
        double l = w->l[r];
        const float *acc = w->acc + r * Dv;
        if (c->bug == MB_NO_INF_GUARD) {
            /* No D1 handling either: a row that never saw a key divides 0 by 0. */
            store_out_row(c, out, sb, h, i, acc, false, l);
            store_stats(c, out, sb, h, i, m, l);
            continue;
        }
        bool empty = w->npart[r] == 0 && !sink; /* D1: no position takes part and no sink */
        double div = l;
        /* MB_F16_ROW_SUM: the fp16 kernel's epilogue divides by l converted to half: 65504 is its largest value. */
        if (c->bug == MB_F16_ROW_SUM && c->pb.dtype == FR_F16)
            div = fr_f16_to_f32(fr_f32_to_f16((float)l, FR_ROUND_NEAREST_EVEN, FR_NO_SAT));
        store_out_row(c, out, sb, h, i, acc, w->npart[r] == 0, div);
        if (empty) {
            store_stats(c, out, sb, h, i, -FLT_MAX, FLT_MAX);
            continue;
        }
        float sm = m;
        double ss = l;
        switch (c->bug) {
        case MB_NO_MAX_SUB: ss = l * expf(-m); break;       /* l was accumulated relative to 0 */
        case MB_STALE_MAX: sm = w->mtrue[r]; ss = l * expf(m - sm); break;
        case MB_LSE_FOR_SUM: ss = m + log(l); break;       /* log-sum-exp where the sum was expected */
        case MB_MAX_BEFORE_LAST: sm = w->mprev[r] > -INFINITY ? w->mprev[r] : m; break;
        default: break;
        }
        store_stats(c, out, sb, h, i, sm, ss);
    }
}

static void ctx_free(mb_ctx *c) {
    free(c->bt);
    free(c->qblk);
}

static fr_status ctx_init(mb_ctx *c, mb_bug bug, const fr_params *p, const fr_fwd_inputs *in, fr_error *err) {
    if (c->pb.fp8)
        return fr_fail(err, FR_E_UNSUPPORTED, "mutant base: fp8 inputs (%s) are not implemented",
                       fr_dtype_name(c->pb.dtype));
    if (c->pb.has_topk)
        return fr_fail(err, FR_E_UNSUPPORTED, "mutant base: topk_indices (D7 gather) is not implemented");
    c->bug = bug;
    c->p = p;
    c->in = in;
    c->Dk = c->pb.Dk;
    c->Dv = c->pb.Dv;
    c->Dr = c->pb.has_rope ? c->pb.Drope : 0;
    c->Dk_use = bug == MB_HEAD_DIM_TAIL ? c->Dk / 16 * 16 : c->Dk;
    c->rot = 0;
    if (bug == MB_SPLIT_KV_ORDER) {
        struct timespec ts;
        if (timespec_get(&ts, TIME_UTC)) c->rot = (uint64_t)ts.tv_nsec >> 4;
    }
    fr_status st = fr_sem_init(&c->sem, &c->pb, p, in, err);
    if (st != FR_OK) return st;
    const int64_t B = c->pb.B;
    c->bt = malloc((size_t)(B > 0 ? B : 1) * sizeof *c->bt);
    c->qblk = malloc((size_t)(B + 1) * sizeof *c->qblk);
    if (!c->bt || !c->qblk) {
        ctx_free(c);
        return fr_fail(err, FR_E_NOMEM, "mutant base: cannot allocate %lld batch descriptors", (long long)B);
    }
    c->qblk[0] = 0;
    int64_t kv_lag = 0;
    for (int64_t b = 0; b < B; b++) {
        fr_sem_batch_get(&c->sem, b, &c->bt[b]);
        /* MB_VARLEN_ZERO: the key offset of a sequence is taken as the end of the last sequence the batch loop
         * processed, and the loop `continue`s on sequences with no queries: the sequence after one reads its keys
         * from where the empty one's started. */
        if (bug == MB_VARLEN_ZERO && c->pb.layout == FR_TND) {
            if (c->bt[b].S1 == 0) {
                kv_lag += c->bt[b].S2;
            } else {
                c->bt[b].kv0 -= kv_lag;
                kv_lag = 0;
            }
        }
        /* MB_CAUSAL_TOP_LEFT: mode 3 (rightDownCausal) built with mode 2's top-left diagonal j <= i. */
        if (bug == MB_CAUSAL_TOP_LEFT && c->sem.masked && c->pb.sparse_mode == FR_SPARSE_RIGHT_DOWN_CAUSAL)
            c->bt[b].hi = 0;
        c->qblk[b + 1] = c->qblk[b] + (c->bt[b].S1 + T - 1) / T;
    }
    return FR_OK;
}

/* Alike mutants_base.c:mb_bwd: kept apart because forward and backward validate different input and output structs
 * before their own loops; only this entry check is common. */
fr_status mb_fwd(mb_bug bug, const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out, fr_error *err) {
    fr_error_clear(err);
    if (!out) return fr_fail(err, FR_E_NULL, "outputs: NULL");
    mb_ctx c;
    memset(&c, 0, sizeof c);
    fr_status st = fr_problem_from_fwd(p, in, &c.pb, err);
    if (st == FR_OK) st = fr_check_fwd_outputs(&c.pb, p, out, err);
    if (st == FR_OK) st = ctx_init(&c, bug, p, in, err);
    if (st != FR_OK) return st;
    const int64_t TB = c.qblk[c.pb.B];
    int64_t ntasks;
    if (!fr_mul_ok(TB, c.pb.N1, &ntasks)) {
        ctx_free(&c);
        return fr_fail(err, FR_E_OVERFLOW, "mutant base: %lld query tiles x N1 = %lld overflows", (long long)TB,
                       (long long)c.pb.N1);
    }
    /* Alike kernels/bwd.c:bwd_topk and kernels/fwd.c:fr_k_fwd (their parallel regions): kept apart, the mutant base
     * shares no code with the kernels it stands in for; only the OpenMP skeleton is alike. */
    int nomem = 0;
#pragma omp parallel
    {
        mb_ws w;
        bool ok = ws_alloc(&c, &w);
        if (!ok) {
#pragma omp atomic write
            nomem = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < ntasks; t++) {
            if (!ok) continue;
            int64_t h = t / TB, g = t % TB, b = 0;
            while (c.qblk[b + 1] <= g) b++;
            const fr_sem_batch *sb = &c.bt[b];
            int64_t i0 = (g - c.qblk[b]) * T;
            int64_t nr = sb->S1 - i0 < T ? sb->S1 - i0 : T;
            fwd_task(&c, out, sb, h, i0, nr, &w);
        }
        if (ok) free(w.mem);
    }
    ctx_free(&c);
    if (nomem) return fr_fail(err, FR_E_NOMEM, "mutant base: cannot allocate the tile workspace");
    return FR_OK;
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Backward (spec 8.2): P recomputed from the given softmax_max / softmax_sum (column 0), D_i from attention_in. */

static inline int64_t qrow(const mb_ctx *c, const fr_sem_batch *sb, int64_t i) {
    return c->pb.layout == FR_TND ? sb->q0 + i : sb->b * c->pb.S1 + i;
}
static inline int64_t krow(const mb_ctx *c, const fr_sem_batch *sb, int64_t j) {
    return c->pb.layout == FR_TND ? sb->kv0 + j : sb->b * c->pb.S2 + j;
}

static void store_grad(const mb_ctx *c, const fr_tensor *t, const float *g, int64_t heads, int64_t D, bool q) {
    if (!fr_tensor_present(t) || D == 0) return;
    const int64_t sd = t->strides[t->ndim - 1];
    for (int64_t b = 0; b < c->pb.B; b++) {
        const fr_sem_batch *sb = &c->bt[b];
        int64_t row0 = q ? sb->q0 : sb->kv0, n = q ? sb->S1 : sb->S2, rows = q ? c->pb.T1 : c->pb.T2;
        for (int64_t h = 0; h < heads; h++)
            for (int64_t i = 0; i < n; i++) {
                int64_t base = fr_layout_offset(t, c->pb.layout, D, row0, b, h, i, 0);
                const float *src = g + (h * rows + (q ? qrow(c, sb, i) : krow(c, sb, i))) * D;
                for (int64_t d = 0; d < D; d++) fr_store_f64(t, base + d * sd, (double)src[d]);
            }
    }
}

typedef struct mb_grads {
    float *dq, *dqr, *dk, *dkr, *dv;
    double *dsink;
} mb_grads;

static void bwd_tile(const mb_ctx *c, const fr_bwd_inputs *bin, const fr_sem_batch *sb, int64_t h, int64_t i0,
                     int64_t nr, mb_ws *w, mb_grads *g) {
    const fr_fwd_inputs *in = c->in;
    const int64_t Dk = c->Dk, Dr = c->Dr, Dv = c->Dv, n2 = kv_head(c, h), T1 = c->pb.T1, T2 = c->pb.T2;
    const float scale = c->sem.scale;
    /* D_i, dP - D_i and the dsink terms in fp64: they cancel (to the output's rounding error; over rows of both
     * signs), which fp32 would drown. */
    double Di[T], md[T], ld[T];
    load_rows(c, &in->query, Dk, sb->q0, sb->b, h, i0, nr, w->Q);
    if (Dr) load_rows(c, &in->query_rope, Dr, sb->q0, sb->b, h, i0, nr, w->Qr);
    load_rows(c, &bin->dy, Dv, sb->q0, sb->b, h, i0, nr, w->dO);
    load_rows(c, &bin->attention_in, Dv, sb->q0, sb->b, h, i0, nr, w->Oi);
    for (int64_t r = 0; r < nr; r++) {
        int64_t i = i0 + r;
        md[r] = fr_load_f64(&bin->softmax_max,
                            fr_softmax_offset(&bin->softmax_max, c->pb.layout, c->p->softmax_layout, sb->q0, sb->b, h,
                                              i, 0));
        ld[r] = fr_load_f64(&bin->softmax_sum,
                            fr_softmax_offset(&bin->softmax_sum, c->pb.layout, c->p->softmax_layout, sb->q0, sb->b, h,
                                              i, 0));
        w->m[r] = (float)md[r];
        w->l[r] = ld[r];
        Di[r] = dotd(w->dO + r * Dv, w->Oi + r * Dv, Dv);
    }
    if (c->sem.sink) {
        double sk = fr_sem_sink(&c->sem, h);
        for (int64_t r = 0; r < nr; r++) g->dsink[h] -= exp(sk - md[r]) / ld[r] * Di[r];
    }
    for (int64_t j0 = 0; j0 < sb->S2; j0 += T) {
        int64_t nc = sb->S2 - j0 < T ? sb->S2 - j0 : T;
        fr_tile_class cls = fr_sem_tile_class(&c->sem, sb, h, i0, nr, j0, nc);
        if (cls == FR_TILE_SKIP) continue;
        load_rows(c, &in->key, Dk, sb->kv0, sb->b, n2, j0, nc, w->K);
        if (Dr) load_rows(c, &in->key_rope, Dr, sb->kv0, sb->b, n2, j0, nc, w->Kr);
        load_rows(c, &in->value, Dv, sb->kv0, sb->b, n2, j0, nc, w->V);
        tile_scores(c, sb, h, i0, nr, j0, nc, cls, w);
        for (int64_t r = 0; r < nr; r++) {
            const int64_t i = i0 + r, qr = qrow(c, sb, i);
            /* dq of this key tile summed apart, then added (the tile's dS.K product). */
            float *dq = w->dqt, *dqr = w->dqt + Dk;
            for (int64_t d = 0; d < Dk + Dr; d++) w->dqt[d] = 0.0f;
            const float *dO = w->dO + r * Dv;
            for (int64_t col = 0; col < nc; col++) {
                if (!w->keep[r * T + col]) continue;
                const int64_t j = j0 + col, kr = krow(c, sb, j);
                float P = (float)(expf(w->x[r * T + col] - w->m[r]) / w->l[r]);
                uint8_t bit = w->drop[r * T + col];
                /* MB_DROP_BWD_SHIFT: the backward's bit index off by one key (i, (j + 1) mod S2). */
                if (c->sem.dropout && c->bug == MB_DROP_BWD_SHIFT)
                    bit = (uint8_t)fr_sem_drop_bit(&c->sem, sb, h, i, (j + 1) % sb->S2);
                float z = drop_z(c, bit);
                const float *v = w->V + col * Dv;
                float *dv = g->dv + (n2 * T2 + kr) * Dv;
                float pz = P * z;
                for (int64_t d = 0; d < Dv; d++) dv[d] += pz * dO[d];
                double dp = dotd(dO, v, Dv);
                float gs = P * (float)(dp * z - Di[r]) * scale;
                const float *k = w->K + col * Dk, *q = w->Q + r * Dk;
                float *dk = g->dk + (n2 * T2 + kr) * Dk;
                for (int64_t d = 0; d < c->Dk_use; d++) {
                    dq[d] += gs * k[d];
                    dk[d] += gs * q[d];
                }
                if (Dr) {
                    const float *kro = w->Kr + col * Dr, *qro = w->Qr + r * Dr;
                    float *dkr = g->dkr + (n2 * T2 + kr) * Dr;
                    for (int64_t d = 0; d < Dr; d++) {
                        dqr[d] += gs * kro[d];
                        dkr[d] += gs * qro[d];
                    }
                }
            }
            float *dq_g = g->dq + (h * T1 + qr) * Dk;
            for (int64_t d = 0; d < Dk; d++) dq_g[d] += dq[d];
            if (Dr) {
                float *dqr_g = g->dqr + (h * T1 + qr) * Dr;
                for (int64_t d = 0; d < Dr; d++) dqr_g[d] += dqr[d];
            }
        }
    }
}

/* Alike mutants_base.c:mb_fwd: kept apart because forward and backward validate different input and output structs
 * before their own loops; only this entry check is common. */
fr_status mb_bwd(mb_bug bug, const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out, fr_error *err) {
    fr_error_clear(err);
    if (!out) return fr_fail(err, FR_E_NULL, "outputs: NULL");
    mb_ctx c;
    memset(&c, 0, sizeof c);
    fr_status st = fr_problem_from_bwd(p, in, &c.pb, err);
    if (st == FR_OK) st = fr_check_bwd_outputs(&c.pb, p, out, err);
    if (st == FR_OK) st = ctx_init(&c, bug, p, &in->fwd, err);
    if (st != FR_OK) return st;
    const int64_t N1 = c.pb.N1, N2 = c.pb.N2, T1 = c.pb.T1, T2 = c.pb.T2, Dk = c.Dk, Dv = c.Dv, Dr = c.Dr;
    int64_t nq, nqr, nk, nkr, nv, t;
    bool ok = fr_mul_ok(N1, T1, &t) && fr_mul_ok(t, Dk, &nq) && fr_mul_ok(t, Dr, &nqr) && fr_mul_ok(N2, T2, &t) &&
              fr_mul_ok(t, Dk, &nk) && fr_mul_ok(t, Dr, &nkr) && fr_mul_ok(t, Dv, &nv);
    if (!ok) {
        ctx_free(&c);
        return fr_fail(err, FR_E_OVERFLOW, "mutant base: gradient sizes overflow int64");
    }
    mb_grads g;
    g.dq = calloc((size_t)nq + 1, sizeof(float));
    g.dqr = calloc((size_t)nqr + 1, sizeof(float));
    g.dk = calloc((size_t)nk + 1, sizeof(float));
    g.dkr = calloc((size_t)nkr + 1, sizeof(float));
    g.dv = calloc((size_t)nv + 1, sizeof(float));
    g.dsink = calloc((size_t)N1 + 1, sizeof(double));
    mb_ws w;
    bool wok = ws_alloc(&c, &w);
    if (!g.dq || !g.dqr || !g.dk || !g.dkr || !g.dv || !g.dsink || !wok) {
        st = fr_fail(err, FR_E_NOMEM, "mutant base: cannot allocate the gradient accumulators");
    } else {
        for (int64_t h = 0; h < N1; h++) {
            if (bug == MB_DK_NOT_SUMMED) {
                /* The group's dK/dV written (not accumulated) by each query head in turn: the last one wins. */
                int64_t n2 = kv_head(&c, h);
                memset(g.dk + n2 * T2 * Dk, 0, (size_t)(T2 * Dk) * sizeof(float));
                memset(g.dv + n2 * T2 * Dv, 0, (size_t)(T2 * Dv) * sizeof(float));
                if (Dr) memset(g.dkr + n2 * T2 * Dr, 0, (size_t)(T2 * Dr) * sizeof(float));
            }
            for (int64_t b = 0; b < c.pb.B; b++) {
                const fr_sem_batch *sb = &c.bt[b];
                for (int64_t i0 = 0; i0 < sb->S1; i0 += T)
                    bwd_tile(&c, in, sb, h, i0, sb->S1 - i0 < T ? sb->S1 - i0 : T, &w, &g);
            }
        }
        store_grad(&c, &out->dq, g.dq, N1, Dk, true);
        store_grad(&c, &out->dk, g.dk, N2, Dk, false);
        store_grad(&c, &out->dv, g.dv, N2, Dv, false);
        if (Dr) {
            store_grad(&c, &out->dq_rope, g.dqr, N1, Dr, true);
            store_grad(&c, &out->dk_rope, g.dkr, N2, Dr, false);
        }
        if (fr_tensor_present(&out->dsink))
            for (int64_t h = 0; h < N1; h++) fr_store_f64(&out->dsink, h * out->dsink.strides[0], g.dsink[h]);
    }
    if (wok) free(w.mem);
    free(g.dq);
    free(g.dqr);
    free(g.dk);
    free(g.dkr);
    free(g.dv);
    free(g.dsink);
    ctx_free(&c);
    return st;
}
