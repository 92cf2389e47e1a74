/* Golden engine: the per-element semantics, written straight from the spec (docs/operator-spec.md sections 2-7
 * and 0b, docs/semantics-decisions.md), and the block score routine. fp64 throughout. */
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
static bool user_mask(const gd_ctx *c, const gd_batch *bt, int64_t h, int64_t i, int64_t j) {
    const fr_tensor *t = &c->in->atten_mask;
    int64_t off;
    if (t->ndim == 2) {
        off = i * t->strides[0] + j * t->strides[1];
    } else {
        int64_t bb = t->shape[0] == 1 ? 0 : bt->b;
        int64_t hh = t->shape[1] == 1 ? 0 : h;
        off = bb * t->strides[0] + hh * t->strides[1] + i * t->strides[2] + j * t->strides[3];
    }
    return fr_load_f64(t, off) != 0.0;
}

/* Whether (i, j) of query head h is masked (D12). Only called when an atten_mask is given. */
static bool masked(const gd_ctx *c, const gd_batch *bt, int64_t h, int64_t i, int64_t j) {
    const int64_t S1 = bt->S1, S2 = bt->S2, pre = c->p->pre_tokens, next = c->p->next_tokens;
    int mode = c->mode;
    if (mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND)
        mode = bt->b == c->last_nonempty ? FR_SPARSE_BAND : FR_SPARSE_RIGHT_DOWN_CAUSAL;
    else if (mode == FR_SPARSE_BAND_LEFT_UP_CAUSAL)
        mode = bt->b == c->first_nonempty ? FR_SPARSE_BAND : FR_SPARSE_LEFT_UP_CAUSAL;
    switch ((fr_sparse_mode)mode) { /* no default: -Wswitch names a mode without a rule */
    case FR_SPARSE_DEFAULT_MASK: return j - i > next || i - j > pre || user_mask(c, bt, h, i, j);
    case FR_SPARSE_ALL_MASK: return user_mask(c, bt, h, i, j);
    case FR_SPARSE_LEFT_UP_CAUSAL: return j > i;
    case FR_SPARSE_RIGHT_DOWN_CAUSAL: return j > i + S2 - S1;
    case FR_SPARSE_BAND: return j - i > next + (S2 - S1) || i - j > pre - (S2 - S1);
    case FR_SPARSE_PREFIX: {
        if (user_mask(c, bt, h, i, j)) return true;
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

/* pse at (b, h, i, j) (section 5). */
static double pse_value(const gd_ctx *c, const gd_batch *bt, int64_t h, int64_t i, int64_t j) {
    const fr_tensor *t = &c->in->real_shift;
    if (fr_pse_type_is_slopes(c->pse_type)) {
        double slope = t->ndim == 2 ? fr_load_f64(t, bt->b * t->strides[0] + h * t->strides[1])
                                    : fr_load_f64(t, h * t->strides[0]);
        int64_t qs = c->p->q_start_idx, ks = c->p->kv_start_idx;
        /* TND sparse mode 8: the start offsets apply to batch 0 only (spec 5.1). */
        if (c->has_mask && c->mode == FR_SPARSE_BAND_LEFT_UP_CAUSAL && c->pb->layout == FR_TND && bt->b != 0)
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
    } else {
        /* Compressed Toeplitz pse: the last R rows of a full [S, S] pse (5.2). A batch of length S1_b = S2_b sits at
         * the bottom-right of it (same diagonal), i.e. virtual row iv = i + S - S1_b. */
        int64_t iv = i + (S - bt->S1), jv = j + (S - bt->S1);
        if (iv >= S - R) {
            row = iv - (S - R);
            col = jv;
        } else {
            row = 0;
            col = jv - iv + S - R;
        }
        if (col < 0 || col >= S) return 0.0; /* a diagonal the compressed tensor does not hold */
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
