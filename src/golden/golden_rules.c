/* Golden engine: the per-element semantics, written straight from the spec (docs/operator-spec.md sections 2-7
 * and 0b, docs/semantics-decisions.md), and the block score routine. fp64 throughout. */
#include "golden/golden_alt.h"
#include "golden/golden_internal.h"
#include "core/validate.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

int gd_threads(const fr_engine *e) {
    if (e && e->num_threads > 0) return e->num_threads;
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

fr_status gd_ctx_pick(gd_ctx *c, const fr_engine *e, fr_error *err) {
    return gd_gemm_pick(e ? e->isa : FR_ISA_AUTO, &c->mm, err);
}

static int64_t clamp_len(int64_t v) { return v < 0 ? 0 : v; }

gd_batch gd_batch_of(const gd_ctx *c, int64_t b) {
    gd_batch bt;
    bt.b = b;
    fr_problem_q_rows(c->pb, b, &bt.q0, &bt.S1);
    fr_problem_kv_rows(c->pb, b, &bt.kv0, &bt.S2);
    bt.S1 = clamp_len(bt.S1);
    bt.S2 = clamp_len(bt.S2);
    return bt;
}

int64_t gd_find_batch(const int64_t *blk, int64_t B, int64_t g) {
    int64_t lo = 0, hi = B - 1; /* largest b with blk[b] <= g */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (blk[mid] <= g) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

fr_status gd_ctx_init(gd_ctx *c, const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in, fr_error *err) {
    memset(c, 0, sizeof *c);
    c->pb = pb;
    c->p = p;
    c->in = in;
    c->scale = (double)(float)p->scale_value;
    c->drop = pb->has_drop && p->keep_prob < 1.0;
    c->dropfac = (double)(1.0f / (float)p->keep_prob);
    c->has_mask = pb->has_mask;
    c->has_pse = pb->has_pse;
    c->has_topk = pb->has_topk; /* W = 0: no listed position, every row is D1 */
    c->has_sink = pb->has_sink;
    c->has_rope = pb->has_rope && pb->Drope > 0;
    c->fp8 = pb->fp8;
    c->pse_type = pb->pse_type;
    c->mode = pb->sparse_mode;
    c->kscale_block = 256;
    if (c->fp8 && fr_tensor_present(&in->d_scale_k) && in->d_scale_k.ndim >= 3 && pb->S2 > 128) {
        /* The forward uses 256-row K/V scale blocks (D5); the backward's tiling asks for 128 (spec 7.2). The
         * tensor's block count tells which one the caller used. */
        int64_t n256 = (pb->S2 + 255) / 256;
        if (in->d_scale_k.shape[2] != n256) c->kscale_block = 128;
    }
    int64_t B = pb->B;
    c->qblk = malloc((size_t)(B + 1) * sizeof(int64_t));
    c->kvblk = malloc((size_t)(B + 1) * sizeof(int64_t));
    c->drop_base = malloc((size_t)(B + 1) * sizeof(int64_t));
    if (!c->qblk || !c->kvblk || !c->drop_base) {
        gd_ctx_free(c);
        return fr_fail(err, FR_E_NOMEM, "golden: cannot allocate %lld batch offsets", (long long)B);
    }
    c->first_nonempty = c->last_nonempty = -1;
    int64_t qb = 0, kb = 0, bits = 0;
    for (int64_t b = 0; b < B; b++) {
        gd_batch bt = gd_batch_of(c, b);
        c->qblk[b] = qb;
        c->kvblk[b] = kb;
        c->drop_base[b] = bits;
        qb += (bt.S1 + GD_BR - 1) / GD_BR;
        kb += (bt.S2 + GD_BC - 1) / GD_BC;
        int64_t n;
        if (!fr_mul_ok(bt.S1, bt.S2, &n) || !fr_mul_ok(n, pb->N1, &n) || !fr_add_ok(bits, n, &bits)) {
            gd_ctx_free(c);
            return fr_fail(err, FR_E_OVERFLOW, "golden: dropout bit index of batch %lld overflows int64",
                           (long long)b);
        }
        if (bt.S1 != 0) {
            if (c->first_nonempty < 0) c->first_nonempty = b;
            c->last_nonempty = b;
        }
    }
    c->qblk[B] = qb;
    c->kvblk[B] = kb;
    c->drop_base[B] = bits;
    return FR_OK;
}

void gd_ctx_free(gd_ctx *c) {
    free(c->qblk);
    free(c->kvblk);
    free(c->drop_base);
    c->qblk = c->kvblk = c->drop_base = NULL;
}

void gd_load_vec(const fr_tensor *t, int64_t base, int64_t stride, int64_t n, double *dst) {
    switch (t->dtype) {
    case FR_F64: {
        const double *s = (const double *)t->data;
        for (int64_t d = 0; d < n; d++) dst[d] = s[base + d * stride];
        break;
    }
    case FR_F32: {
        const float *s = (const float *)t->data;
        if (stride == 1) { /* the common case, vectorized */
            for (int64_t d = 0; d < n; d++) dst[d] = (double)s[base + d];
            break;
        }
        for (int64_t d = 0; d < n; d++) dst[d] = (double)s[base + d * stride];
        break;
    }
    default:
        for (int64_t d = 0; d < n; d++) dst[d] = fr_load_f64(t, base + d * stride);
        break;
    }
}

void gd_load_rows(const fr_tensor *t, fr_layout l, int64_t D, int64_t row0, int64_t b, int64_t n, int64_t i0,
                  int64_t nr, double *dst) {
    if (D == 0) return;
    int64_t sd = t->strides[t->ndim - 1];
    for (int64_t r = 0; r < nr; r++)
        gd_load_vec(t, fr_layout_offset(t, l, D, row0, b, n, i0 + r, 0), sd, D, dst + r * D);
}

void gd_load_cat(const fr_tensor *t, const fr_tensor *tr, fr_layout L, int64_t Dk, int64_t Dr, int64_t row0,
                 int64_t b, int64_t n, int64_t i0, int64_t nr, double *dst) {
    for (int64_t r = 0; r < nr; r++) {
        gd_load_rows(t, L, Dk, row0, b, n, i0 + r, 1, dst + r * (Dk + Dr));
        if (Dr) gd_load_rows(tr, L, Dr, row0, b, n, i0 + r, 1, dst + r * (Dk + Dr) + Dk);
    }
}

double gd_qscale(const gd_ctx *c, const gd_batch *bt, int64_t h, int64_t i) {
    if (!c->fp8 || !fr_tensor_present(&c->in->d_scale_q)) return 1.0;
    const fr_tensor *t = &c->in->d_scale_q; /* [B, N1, ceil(S1/128), 1] */
    return fr_load_f64(t, bt->b * t->strides[0] + h * t->strides[1] + (i / 128) * t->strides[2]);
}

double gd_kscale(const gd_ctx *c, const fr_tensor *t, const gd_batch *bt, int64_t n, int64_t j) {
    if (!c->fp8 || !fr_tensor_present(t)) return 1.0;
    /* [B, N2, ceil(S2/block), 1] */
    return fr_load_f64(t, bt->b * t->strides[0] + n * t->strides[1] + (j / c->kscale_block) * t->strides[2]);
}

double gd_sink(const gd_ctx *c, int64_t h) {
    const fr_tensor *t = &c->in->sink;
    return fr_load_f64(t, h * t->strides[0]);
}

double gd_drop_z(const gd_ctx *c, const gd_batch *bt, int64_t h, int64_t i, int64_t j) {
    if (!c->drop) return 1.0;
    /* Bit k, LSB first, 1 = keep; order [h, i, j] inside the batch, batches concatenated (D4). For
     * non-TND layouts drop_base[b] = b * N1 * S1 * S2, the spec's ((b*N1 + h)*S1 + i)*S2 + j. */
    int64_t k = c->drop_base[bt->b] + (h * bt->S1 + i) * bt->S2 + j;
    const fr_tensor *t = &c->in->drop_mask;
    const uint8_t *bytes = (const uint8_t *)t->data;
    uint8_t byte = bytes[(k >> 3) * t->strides[0]];
    return ((byte >> (k & 7)) & 1u) ? c->dropfac : 0.0;
}

/* User atten_mask at (b, h, i, j): [S1,S2], [1,1,S1,S2], [B,1,S1,S2], [B,N1,S1,S2]; TND: the top-left corner of
 * [maxS1, maxS2]. Any nonzero element masks. */
static int64_t mask_off(const gd_ctx *c, const gd_batch *bt, int64_t h, int64_t i, int64_t j) {
    const fr_tensor *t = &c->in->atten_mask;
    if (t->ndim == 2) return i * t->strides[0] + j * t->strides[1];
    int64_t bb = t->shape[0] == 1 ? 0 : bt->b;
    int64_t hh = t->shape[1] == 1 ? 0 : h;
    return bb * t->strides[0] + hh * t->strides[1] + i * t->strides[2] + j * t->strides[3];
}

static bool user_mask(const gd_ctx *c, const gd_batch *bt, int64_t h, int64_t i, int64_t j) {
    const fr_tensor *t = &c->in->atten_mask;
    int64_t off = mask_off(c, bt, h, i, j);
    if (t->dtype == FR_BOOL || t->dtype == FR_U8) return ((const uint8_t *)t->data)[off] != 0; /* the usual dtypes */
    return fr_load_f64(t, off) != 0.0;
}

/* Row i of the user mask of (b, h) as bytes (row[j] is what user_mask reads at (i, j)) when the mask is bool /
 * uint8 with contiguous rows; NULL otherwise. */
static const uint8_t *mask_row_bytes(const gd_ctx *c, const gd_batch *bt, int64_t h, int64_t i) {
    const fr_tensor *t = &c->in->atten_mask;
    if ((t->dtype != FR_BOOL && t->dtype != FR_U8) || t->strides[t->ndim - 1] != 1) return NULL;
    return (const uint8_t *)t->data + mask_off(c, bt, h, i, 0);
}

/* Whether (i, j) of query head h is masked (D12). Only called when an atten_mask is given. c->alt reads one rule the
 * other way (golden_alt.h; test-only). */
static bool masked(const gd_ctx *c, const gd_batch *bt, int64_t h, int64_t i, int64_t j) {
    const int64_t S1 = bt->S1, S2 = bt->S2, pre = c->p->pre_tokens, next = c->p->next_tokens;
    int mode = c->mode;
    const bool end_batch = c->alt == FR_GALT_M78_END_BATCH;
    if (mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND)
        mode = bt->b == (end_batch ? c->pb->B - 1 : c->last_nonempty) ? FR_SPARSE_BAND : FR_SPARSE_RIGHT_DOWN_CAUSAL;
    else if (mode == FR_SPARSE_BAND_LEFT_UP_CAUSAL)
        mode = bt->b == (end_batch ? 0 : c->first_nonempty) ? FR_SPARSE_BAND : FR_SPARSE_LEFT_UP_CAUSAL;
    switch ((fr_sparse_mode)mode) { /* no default: -Wswitch names a mode without a rule */
    case FR_SPARSE_DEFAULT_MASK:
        if (c->alt == FR_GALT_M0_MASK_ONLY) return user_mask(c, bt, h, i, j);
        return j - i > next || i - j > pre || user_mask(c, bt, h, i, j);
    case FR_SPARSE_ALL_MASK: return user_mask(c, bt, h, i, j);
    case FR_SPARSE_LEFT_UP_CAUSAL: return j > i;
    case FR_SPARSE_RIGHT_DOWN_CAUSAL: return j > i + S2 - S1;
    case FR_SPARSE_BAND: return j - i > next + (S2 - S1) || i - j > pre - (S2 - S1);
    case FR_SPARSE_PREFIX: {
        if (c->alt != FR_GALT_M5_FORMULA_ONLY && user_mask(c, bt, h, i, j)) return true;
        if (c->alt == FR_GALT_M5_MASK_ONLY) return false;
        const int64_t *pf = c->p->prefix;
        if (!pf || bt->b >= c->p->prefix_len || pf[bt->b] > S2) return false;
        return j > i + S2 - S1 && j >= pf[bt->b];
    }
    case FR_SPARSE_PREFIX_COMPRESS: {
        const int64_t *pf = c->p->prefix;
        int64_t prefix = (pf && bt->b < c->p->prefix_len) ? pf[bt->b] : 0;
        return j > i + S2 - S1 && j >= prefix;
    }
    case FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND: /* mapped to 2, 3 or 4 above */
    case FR_SPARSE_BAND_LEFT_UP_CAUSAL:
    case FR_SPARSE_MODE_COUNT: break;
    }
    return false;
}

/* Where (i, j) reads the compressed Toeplitz pse [.., R, S] (5.2, D14): the last R rows of a full [S, S] pse, and a
 * batch of length S1_b = S2_b sits at the bottom-right of it (same diagonal), i.e. virtual row iv = i + S - S1_b
 * (FR_GALT_D14_TOP_LEFT: at the top-left). false when the tensor does not hold that diagonal (*col out of range). */
static bool comp_index(const gd_ctx *c, const gd_batch *bt, int64_t i, int64_t j, int64_t *row, int64_t *col) {
    const fr_tensor *t = &c->in->real_shift;
    int64_t R = t->shape[2], S = t->shape[3];
    int64_t off = c->alt == FR_GALT_D14_TOP_LEFT ? 0 : S - bt->S1;
    int64_t iv = i + off, jv = j + off;
    if (iv >= S - R) {
        *row = iv - (S - R);
        *col = jv;
    } else {
        *row = 0;
        *col = jv - iv + S - R;
    }
    return *col >= 0 && *col < S;
}

/* pse at (b, h, i, j) (section 5). */
static double pse_value(const gd_ctx *c, const gd_batch *bt, int64_t h, int64_t i, int64_t j) {
    const fr_tensor *t = &c->in->real_shift;
    if (fr_pse_type_is_slopes(c->pse_type)) {
        double slope = t->ndim == 2 ? fr_load_f64(t, bt->b * t->strides[0] + h * t->strides[1])
                                    : fr_load_f64(t, h * t->strides[0]);
        int64_t qs = c->p->q_start_idx, ks = c->p->kv_start_idx;
        /* TND sparse mode 8: the start offsets apply to batch 0 only (spec 5.1, D15). */
        if (c->has_mask && c->mode == FR_SPARSE_BAND_LEFT_UP_CAUSAL && c->pb->layout == FR_TND && bt->b != 0 &&
            c->alt != FR_GALT_D15_EVERY_BATCH)
            qs = ks = 0;
        int64_t dist = j + ks - i - qs;
        double a = (double)(dist < 0 ? -dist : dist);
        if (c->pse_type == FR_PSE_INNER_MUL_ADD_SQRT) a = sqrt(a);
        return -slope * a;
    }
    /* External tensor [B|1, N1, S1|1|1024, S2]. */
    int64_t bb = t->shape[0] == 1 ? 0 : bt->b;
    int64_t hh = t->shape[1] == 1 ? 0 : h;
    int64_t R = t->shape[2], S = t->shape[3], row, col;
    if (R == 1) {
        row = 0;
        col = j;
    } else if (c->pb->layout != FR_TND && R == c->pb->S1) {
        row = i;
        col = j;
    } else if (!comp_index(c, bt, i, j, &row, &col)) { /* a diagonal the compressed tensor does not hold */
        if (c->alt != FR_GALT_D14_CLAMP) return 0.0;
        col = col < 0 ? 0 : S - 1;
    }
    return fr_load_f64(t, bb * t->strides[0] + hh * t->strides[1] + row * t->strides[2] + col * t->strides[3]);
}

/* Top-k slot w of query row i (within the batch) of kv head n: the key index, or -1. */
static int64_t topk_index(const gd_ctx *c, const gd_batch *bt, int64_t n, int64_t i, int64_t w) {
    const fr_tensor *t = &c->in->topk_indices;
    const int64_t *st = t->strides;
    int64_t off;
    if (c->pb->layout == FR_TND) {
        off = c->pb->topk_per_kv_head ? (bt->q0 + i) * st[0] + n * st[1] + w * st[2] : (bt->q0 + i) * st[0] + w * st[1];
    } else {
        off = c->pb->topk_per_kv_head ? bt->b * st[0] + n * st[1] + i * st[2] + w * st[3]
                                      : bt->b * st[0] + i * st[1] + w * st[2];
    }
    if (t->dtype == FR_I32) return ((const int32_t *)t->data)[off];
    if (t->dtype == FR_I64) return ((const int64_t *)t->data)[off];
    double v = fr_load_f64(t, off);
    return (v >= 0.0 && v < 9.2e18) ? (int64_t)v : -1;
}

void gd_gemm_nt(const double *A, int64_t nr, const double *B, int64_t nc, int64_t D, const int32_t *cnt,
                double *out) {
    /* Two rows times four columns at a time share the loads; a position with cnt = 0 is computed only when a
     * neighbour in its 2 x 4 tile is live (its value is never used). Each result is a sequential sum over d. */
    int64_t rr = 0;
    for (; rr + 2 <= nr; rr += 2) {
        const double *q0 = A + rr * D, *q1 = q0 + D;
        const int32_t *c0 = cnt + rr * nc, *c1 = c0 + nc;
        double *x0 = out + rr * nc, *x1 = x0 + nc;
        int64_t col = 0;
        for (; col + 4 <= nc; col += 4) {
            if (!(c0[col] | c0[col + 1] | c0[col + 2] | c0[col + 3] | c1[col] | c1[col + 1] | c1[col + 2] |
                  c1[col + 3]))
                continue;
            const double *k0 = B + col * D, *k1 = k0 + D, *k2 = k1 + D, *k3 = k2 + D;
            double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0, b0 = 0.0, b1 = 0.0, b2 = 0.0, b3 = 0.0;
            for (int64_t d = 0; d < D; d++) {
                double u = q0[d], v = q1[d], w0 = k0[d], w1 = k1[d], w2 = k2[d], w3 = k3[d];
                a0 += u * w0;
                a1 += u * w1;
                a2 += u * w2;
                a3 += u * w3;
                b0 += v * w0;
                b1 += v * w1;
                b2 += v * w2;
                b3 += v * w3;
            }
            x0[col] = a0, x0[col + 1] = a1, x0[col + 2] = a2, x0[col + 3] = a3;
            x1[col] = b0, x1[col + 1] = b1, x1[col + 2] = b2, x1[col + 3] = b3;
        }
        for (; col < nc; col++) {
            if (c0[col]) x0[col] = gd_dot(q0, B + col * D, D);
            if (c1[col]) x1[col] = gd_dot(q1, B + col * D, D);
        }
    }
    for (; rr < nr; rr++)
        for (int64_t col = 0; col < nc; col++)
            if (cnt[rr * nc + col]) out[rr * nc + col] = gd_dot(A + rr * D, B + col * D, D);
}

/* Which positions of the block take part, and how often: cnt[r * rs + col * cs] for r < nr, col < nc (top-k
 * duplicates count once per occurrence, D7; 0 = masked). Returns the number of positions with cnt > 0. */
static int64_t live_positions(const gd_ctx *c, const gd_batch *bt, int64_t h, int64_t i0, int64_t nr, int64_t j0,
                              int64_t nc, int64_t rs, int64_t cs, int32_t *cnt) {
    const fr_problem *pb = c->pb;
    if (c->has_topk) {
        memset(cnt, 0, (size_t)(nr * nc) * sizeof(int32_t));
        int64_t n2 = h / pb->G;
        for (int64_t r = 0; r < nr; r++)
            for (int64_t w = 0; w < pb->W; w++) {
                int64_t j = topk_index(c, bt, n2, i0 + r, w);
                if (j >= j0 && j < j0 + nc && j < bt->S2) cnt[r * rs + (j - j0) * cs]++;
            }
    } else {
        for (int64_t k = 0; k < nr * nc; k++) cnt[k] = 1;
    }
    if (c->has_mask)
        for (int64_t r = 0; r < nr; r++)
            for (int64_t col = 0; col < nc; col++)
                if (cnt[r * rs + col * cs] && masked(c, bt, h, i0 + r, j0 + col)) cnt[r * rs + col * cs] = 0;
    int64_t live = 0;
    for (int64_t k = 0; k < nr * nc; k++) live += cnt[k] != 0;
    if (c->alt == FR_GALT_D7_TOPK_ONCE)
        for (int64_t k = 0; k < nr * nc; k++) cnt[k] = cnt[k] != 0;
    return live;
}

/* Raw scores x[r * rs + col * cs] -> scaled scores: dequant scales qs: [nr], ks: [nc], scale and pse in the order of
 * D11, where cnt > 0. */
static void finish_scores(const gd_ctx *c, const gd_batch *bt, int64_t h, int64_t i0, int64_t nr, int64_t j0,
                          int64_t nc, int64_t rs, int64_t cs, const double *qs, const double *ks, double *x,
                          const int32_t *cnt) {
    const bool pse1 = c->has_pse && c->pse_type == FR_PSE_OUTER_ADD_MUL;
    if (!c->has_pse && !c->fp8) {
        const double sc = c->scale;
        for (int64_t k = 0; k < nr * nc; k++) x[k] *= sc;
        return;
    }
    for (int64_t r = 0; r < nr; r++)
        for (int64_t col = 0; col < nc; col++) {
            int64_t k = r * rs + col * cs;
            if (!cnt[k]) continue;
            double s = x[k];
            if (c->fp8) s = s * qs[r] * ks[col];
            double v;
            if (!c->has_pse) v = s * c->scale;
            else if (pse1) v = (s + pse_value(c, bt, h, i0 + r, j0 + col)) * c->scale;
            else v = s * c->scale + pse_value(c, bt, h, i0 + r, j0 + col);
            x[k] = v;
        }
}

int64_t gd_scores(const gd_ctx *c, const gd_batch *bt, int64_t h, int64_t i0, int64_t nr, int64_t j0, int64_t nc,
                  const double *Q, const double *Qr, const double *qs, const double *K, const double *Kr,
                  const double *ks, double *x, int32_t *cnt) {
    const fr_problem *pb = c->pb;
    const int64_t Dk = pb->Dk, Dr = c->has_rope ? pb->Drope : 0;
    int64_t live = live_positions(c, bt, h, i0, nr, j0, nc, nc, 1, cnt);
    if (live == 0) return 0;
    /* Raw scores s = q.k (+ q_rope.k_rope), each a sequential sum over d (the same for any blocking). */
    gd_gemm_nt(Q, nr, K, nc, Dk, cnt, x);
    if (Dr > 0)
        for (int64_t rr = 0; rr < nr; rr++)
            for (int64_t col = 0; col < nc; col++)
                if (cnt[rr * nc + col]) x[rr * nc + col] += gd_dot(Qr + rr * Dr, Kr + col * Dr, Dr);
    finish_scores(c, bt, h, i0, nr, j0, nc, nc, 1, qs, ks, x, cnt);
    return live;
}

int64_t gd_scores_mm(const gd_ctx *c, const gd_batch *bt, int64_t h, int64_t i0, int64_t nr, int64_t j0, int64_t nc,
                     const double *A, const double *B, int64_t Dc, bool tr, const double *qs, const double *ks,
                     double *x, int32_t *cnt) {
    const int64_t rs = tr ? 1 : nc, cs = tr ? nr : 1;
    int64_t live = live_positions(c, bt, h, i0, nr, j0, nc, rs, cs, cnt);
    if (live == 0) return 0;
    /* Raw scores: the fma chain over the Dk (then Drope) columns of q | q_rope and k | k_rope (fma(q, k, s) and
     * fma(k, q, s) are the same operation, so both orientations give the same bits). The scores of masked
     * positions are computed too (whole tiles) and never used. */
    memset(x, 0, (size_t)(nr * nc) * sizeof(double));
    if (tr) c->mm(nc, nr, Dc, A, Dc, 1, B, nr, x, nr);
    else c->mm(nr, nc, Dc, A, Dc, 1, B, nc, x, nc);
    finish_scores(c, bt, h, i0, nr, j0, nc, rs, cs, qs, ks, x, cnt);
    return live;
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Alternative readings (golden_alt.h; test-only): their names and where they change the problem's structure. */

static const char *const kAltNames[FR_GALT_COUNT] = {
    "the project's decisions",
    "D12 mode 0: the user mask alone (pre/next only let a kernel skip blocks)",
    "D12 mode 5 + prefix: the formula alone (the mask's content ignored, as mode 6)",
    "D12 mode 5: the user mask alone (no causal / prefix band, as mode 1)",
    "D12 modes 7/8: the band on batch B-1 (7) / batch 0 (8) even when it has no queries",
    "D14: a TND batch shorter than S at the top-left of the compressed pse's Toeplitz matrix",
    "D14: a diagonal the compressed pse does not hold reads its nearest column, not 0",
    "D15: ALiBi start indices apply to every batch in mode 8",
    "D7: a key listed twice in a top-k row takes part once",
};

const char *fr_golden_alt_name(fr_golden_alt a) { return (unsigned)a < FR_GALT_COUNT ? kAltNames[a] : "?"; }

/* The real_shift is a compressed Toeplitz tensor (the third branch of pse_value). */
static bool pse_compressed(const gd_ctx *c) {
    if (!c->has_pse || fr_pse_type_is_slopes(c->pse_type)) return false;
    int64_t R = c->in->real_shift.shape[2];
    return R != 1 && !(c->pb->layout != FR_TND && R == c->pb->S1);
}

/* Whether the problem has what reading a is about (the walk is skipped otherwise). */
static bool alt_applies(const gd_ctx *c, fr_golden_alt a) {
    switch (a) {
    case FR_GALT_M0_MASK_ONLY: return c->has_mask && c->mode == FR_SPARSE_DEFAULT_MASK;
    case FR_GALT_M5_FORMULA_ONLY:
    case FR_GALT_M5_MASK_ONLY: return c->has_mask && c->mode == FR_SPARSE_PREFIX;
    case FR_GALT_M78_END_BATCH:
        return c->has_mask && ((c->mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND && c->last_nonempty != c->pb->B - 1) ||
                               (c->mode == FR_SPARSE_BAND_LEFT_UP_CAUSAL && c->first_nonempty != 0));
    case FR_GALT_D14_TOP_LEFT: return pse_compressed(c) && c->pb->layout == FR_TND; /* else S1_b = S */
    case FR_GALT_D14_CLAMP: return pse_compressed(c);
    case FR_GALT_D15_EVERY_BATCH: /* equal start indices cancel in j + kv_start - i - q_start */
        return c->has_pse && fr_pse_type_is_slopes(c->pse_type) && c->has_mask && c->mode == FR_SPARSE_BAND_LEFT_UP_CAUSAL && c->pb->layout == FR_TND &&
               c->p->q_start_idx != c->p->kv_start_idx;
    case FR_GALT_D7_TOPK_ONCE: return c->has_topk;
    default: return false;
    }
}

/* The columns [*lo, *hi) of row i whose diagonal the compressed pse holds, under c's reading (comp_index: col = j + off
 * in the last R rows, j - i + S - R above them). */
static void comp_held(const gd_ctx *c, const gd_batch *bt, int64_t i, int64_t *lo, int64_t *hi) {
    const fr_tensor *t = &c->in->real_shift;
    int64_t R = t->shape[2], S = t->shape[3];
    int64_t off = c->alt == FR_GALT_D14_TOP_LEFT ? 0 : S - bt->S1;
    if (i + off >= S - R) *lo = -off, *hi = S - off;
    else *lo = i - S + R, *hi = i + R;
}

/* Whether every diagonal of the compressed pse is constant (a Toeplitz tensor, as spec 5.2 assumes): then both D14
 * readings, which read the same diagonal (c - r = j - i + S - R either way), differ only where one of them reads a
 * diagonal the tensor does not hold. */
static bool comp_toeplitz(const gd_ctx *c) {
    const fr_tensor *t = &c->in->real_shift;
    const int64_t *sh = t->shape, *sd = t->strides;
    const size_t es = fr_dtype_size(t->dtype);
    for (int64_t bb = 0; bb < sh[0]; bb++)
        for (int64_t hh = 0; hh < sh[1]; hh++)
            for (int64_t r = 1; r < sh[2]; r++) {
                int64_t o = bb * sd[0] + hh * sd[1] + r * sd[2], u = o - sd[2]; /* row r and row r - 1 */
                if (sd[3] == 1 && es > 0) { /* bit-equal rows, shifted by one: equal values (else compared below) */
                    const char *p = (const char *)t->data;
                    if (!memcmp(p + (size_t)(o + 1) * es, p + (size_t)u * es, (size_t)(sh[3] - 1) * es)) continue;
                }
                for (int64_t q = 1; q < sh[3]; q++)
                    if (fr_load_f64(t, o + q * sd[3]) != fr_load_f64(t, u + (q - 1) * sd[3])) return false;
            }
    return true;
}

static void note_diff(fr_golden_alt_diff *d, int64_t b, int64_t h, int64_t i, int64_t j, int m0, int m1) {
    if (!d->count) d->b = b, d->h = h, d->i = i, d->j = j, d->m0 = m0, d->m1 = m1;
    d->count++;
}

/* The positions [j0, j1) of a mask row whose byte is zero (set = false) or not (set = true), into d. */
static void note_bytes(fr_golden_alt_diff *d, const uint8_t *row, int64_t j0, int64_t j1, bool set, int64_t b,
                       int64_t h, int64_t i, int m0, int m1) {
    int64_t n = 0;
    for (int64_t j = j0; j < j1; j++) n += (row[j] != 0) == set;
    if (!n) return;
    if (!d->count)
        for (int64_t j = j0; j < j1; j++)
            if ((row[j] != 0) == set) {
                note_diff(d, b, h, i, j, m0, m1);
                n--;
                break;
            }
    d->count += n;
}

/* The mask readings of row i where the mask is a byte row (no top-k): mode 0's band positions the mask leaves open
 * (outside [lo, hi)); mode 5's positions where the mask and the formula (masked from column t on) disagree. false
 * when the row is not bytes (the caller compares masked() position by position). */
static bool mask_row_diff(const gd_ctx *c, fr_golden_alt a, const gd_batch *bt, int64_t h, int64_t i, int64_t lo,
                          int64_t hi, fr_golden_alt_diff *d) {
    const uint8_t *row = c->has_mask ? mask_row_bytes(c, bt, h, i) : NULL;
    if (!row) return false;
    if (a == FR_GALT_M0_MASK_ONLY) { /* masked by the band either way; by the alternative only where the mask is set */
        note_bytes(d, row, 0, lo, false, bt->b, h, i, 0, 1);
        note_bytes(d, row, hi, bt->S2, false, bt->b, h, i, 0, 1);
        return true;
    }
    if (a != FR_GALT_M5_FORMULA_ONLY && a != FR_GALT_M5_MASK_ONLY) return false;
    const int64_t *pf = c->p->prefix;
    int64_t t = bt->S2; /* formula: masked iff j > i + S2 - S1 and j >= prefix[b] (no prefix: nowhere) */
    if (pf && bt->b < c->p->prefix_len && pf[bt->b] <= bt->S2) {
        t = i + bt->S2 - bt->S1 + 1;
        if (t < pf[bt->b]) t = pf[bt->b];
        t = t < 0 ? 0 : t > bt->S2 ? bt->S2 : t;
    }
    if (a == FR_GALT_M5_FORMULA_ONLY) note_bytes(d, row, 0, t, true, bt->b, h, i, 0, 1); /* set, formula not */
    else note_bytes(d, row, t, bt->S2, false, bt->b, h, i, 0, 1);                        /* formula, mask not */
    return true;
}

/* D7 on row i of head h: the keys listed more than once that take part (the alternative counts each once), from
 * the list itself: O(W) per row. seen[j] = 2 stamp (listed once) or 2 stamp + 1 (counted). */
static void d7_row(const gd_ctx *c, const gd_batch *bt, int64_t h, int64_t i, int64_t stamp, int64_t *seen,
                   fr_golden_alt_diff *d) {
    for (int64_t w = 0; w < c->pb->W; w++) {
        int64_t j = topk_index(c, bt, h / c->pb->G, i, w);
        if (j < 0 || j >= bt->S2 || seen[j] == 2 * stamp + 1) continue;
        if (seen[j] != 2 * stamp) {
            seen[j] = 2 * stamp;
            continue;
        }
        seen[j] = 2 * stamp + 1;
        if (!c->has_mask || !masked(c, bt, h, i, j)) note_diff(d, bt->b, h, i, j, 2, 1);
    }
}

fr_status fr_golden_alt_differs(const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in, fr_golden_alt a,
                                fr_golden_alt_diff *d, fr_error *err) {
    memset(d, 0, sizeof *d);
    if ((unsigned)a >= FR_GALT_COUNT) return fr_fail(err, FR_E_INVALID_ARG, "golden: alternative %d unknown", (int)a);
    gd_ctx c0, c1;
    fr_status st = gd_ctx_init(&c0, pb, p, in, err);
    if (st != FR_OK) return st;
    if ((st = gd_ctx_init(&c1, pb, p, in, err)) != FR_OK) {
        gd_ctx_free(&c0);
        return st;
    }
    c1.alt = (int)a;
    d->applies = alt_applies(&c0, a);
    const bool pse_alt = a == FR_GALT_D14_TOP_LEFT || a == FR_GALT_D14_CLAMP || a == FR_GALT_D15_EVERY_BATCH;
    /* the mask readings without top-k: compare masked() itself, position by position (a position takes part once
     * unless masked); with top-k, the multiplicities of live_positions */
    const bool mask_only = !pse_alt && a != FR_GALT_D7_TOPK_ONCE && !c0.has_topk;
    /* Heads whose positions can differ from head 0's: the pse and a per-head mask vary with h, a per-kv-head top-k
     * list with h / G; otherwise one head stands for all. */
    const fr_tensor *am = &in->atten_mask;
    const bool mask_h = c0.has_mask && am->ndim == 4 && am->shape[1] > 1;
    const int64_t hstep = pse_alt || mask_h ? 1 : (c0.has_topk && pb->topk_per_kv_head) ? pb->G : pb->N1;
    enum { CHUNK = 1024 };
    int32_t *k0 = malloc(CHUNK * sizeof(int32_t)), *k1 = malloc(CHUNK * sizeof(int32_t));
    int64_t *seen = a == FR_GALT_D7_TOPK_ONCE ? calloc((size_t)(pb->S2 > 0 ? pb->S2 : 1), sizeof(int64_t)) : NULL;
    if (!k0 || !k1 || (a == FR_GALT_D7_TOPK_ONCE && !seen)) st = fr_fail(err, FR_E_NOMEM, "golden: out of memory");
    const int64_t pre = p->pre_tokens, next = p->next_tokens;
    /* D14: only the columns outside the diagonals both readings hold can differ (for the top-left reading, when the
     * tensor is Toeplitz; else every column is compared) */
    const bool d14_held = (a == FR_GALT_D14_CLAMP || a == FR_GALT_D14_TOP_LEFT) && d->applies &&
                          (a == FR_GALT_D14_CLAMP || comp_toeplitz(&c0));
    int64_t stamp = 0;
    for (int64_t b = 0; st == FR_OK && d->applies && b < pb->B; b++) {
        gd_batch bt = gd_batch_of(&c0, b);
        if (a == FR_GALT_D14_TOP_LEFT && bt.S1 == in->real_shift.shape[3]) continue; /* no offset either way */
        for (int64_t h = 0; h < pb->N1; h += hstep)
            for (int64_t i = 0; i < bt.S1; i++) {
                if (a == FR_GALT_D7_TOPK_ONCE) {
                    d7_row(&c0, &bt, h, i, ++stamp, seen, d);
                    continue;
                }
                /* the columns where the readings can differ: r[0] and r[1]; [lo, hi) is where they agree (mode 0:
                 * inside the band; D14: on diagonals both hold) */
                int64_t r[2][2] = {{0, bt.S2}, {bt.S2, bt.S2}}, lo = 0, hi = bt.S2;
                if (a == FR_GALT_M0_MASK_ONLY) {
                    lo = i - pre, hi = i + next + 1; /* masked by the band: j < lo or j >= hi */
                } else if (d14_held) {
                    int64_t l1, h1;
                    comp_held(&c0, &bt, i, &lo, &hi);
                    comp_held(&c1, &bt, i, &l1, &h1);
                    lo = lo > l1 ? lo : l1, hi = hi < h1 ? hi : h1;
                }
                lo = lo < 0 ? 0 : lo > bt.S2 ? bt.S2 : lo;
                hi = hi < lo ? lo : hi > bt.S2 ? bt.S2 : hi;
                if (a == FR_GALT_M0_MASK_ONLY || d14_held) r[0][1] = lo, r[1][0] = hi;
                if (mask_only && mask_row_diff(&c0, a, &bt, h, i, lo, hi, d)) continue;
                for (int q = 0; q < 2; q++) {
                    if (mask_only) {
                        for (int64_t j = r[q][0]; j < r[q][1]; j++) {
                            bool x0 = masked(&c0, &bt, h, i, j), x1 = masked(&c1, &bt, h, i, j);
                            if (x0 != x1) note_diff(d, b, h, i, j, !x0, !x1);
                        }
                        continue;
                    }
                    for (int64_t j0 = r[q][0]; j0 < r[q][1]; j0 += CHUNK) {
                        int64_t nc = r[q][1] - j0 < CHUNK ? r[q][1] - j0 : CHUNK;
                        live_positions(&c0, &bt, h, i, 1, j0, nc, nc, 1, k0);
                        /* the pse readings leave the counts alone (live_positions): no second call for them */
                        if (!pse_alt) live_positions(&c1, &bt, h, i, 1, j0, nc, nc, 1, k1);
                        for (int64_t col = 0; col < nc; col++) {
                            int m1 = pse_alt ? k0[col] : k1[col];
                            bool diff = k0[col] != m1;
                            if (!diff && pse_alt && k0[col])
                                diff = pse_value(&c0, &bt, h, i, j0 + col) != pse_value(&c1, &bt, h, i, j0 + col);
                            if (diff) note_diff(d, b, h, i, j0 + col, k0[col], m1);
                        }
                    }
                }
            }
    }
    free(k0);
    free(k1);
    free(seen);
    gd_ctx_free(&c0);
    gd_ctx_free(&c1);
    return st;
}
