/* Operator semantics per element and per tile (see semantics.h). Formulas: spec 4 (masks, sparse modes, band),
 * 5 (pse), 6 (dropout), 7 (fp8 scales), D7 (top-k); docs/semantics-decisions.md D1-D8, D11-D12. */
#include "semantics/semantics.h"

#include "core/core.h"
#include "core/validate.h"
#include "semantics/dtype_inline.h"

#include <math.h>

/* A band bound that never binds (|j - i| < 2^41 for any valid problem). */
#define BAND_INF (INT64_C(1) << 60)

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

fr_status fr_sem_init(fr_sem *s, const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in, fr_error *err) {
    if (!s || !pb || !p || !in) return fr_fail(err, FR_E_NULL, "fr_sem_init: NULL argument");
    s->pb = pb;
    s->p = p;
    s->in = in;
    s->scale = (float)p->scale_value;
    s->rkeep = 1.0f / (float)p->keep_prob;
    s->dropout = pb->has_drop && p->keep_prob < 1.0;
    s->masked = pb->has_mask;
    s->pse = pb->has_pse;
    s->pse_type = pb->pse_type;
    s->pse_compressed = false;
    s->topk = pb->has_topk;
    s->sink = pb->has_sink;
    if (s->pse && (s->pse_type == FR_PSE_OUTER_MUL_ADD || s->pse_type == FR_PSE_OUTER_ADD_MUL)) {
        const fr_tensor *t = &in->real_shift;
        if (t->ndim != 4) return fr_fail(err, FR_E_INTERNAL, "real_shift: ndim %d, expected 4", t->ndim);
        if (t->dtype != FR_F32 && t->dtype != FR_F16 && t->dtype != FR_BF16)
            return fr_fail(err, FR_E_INTERNAL, "real_shift: dtype %s", fr_dtype_name(t->dtype));
        /* [B|1, N1, 1024, S2] is the compressed ALiBi form when S1 > 1024 (the forms coincide at S1 = 1024); TND
         * only accepts the compressed shapes (spec 5.2). */
        s->pse_compressed = t->shape[2] == 1024 && (pb->layout == FR_TND || pb->S1 > 1024);
    }
    if (s->pse && fr_pse_type_is_slopes(s->pse_type) && in->real_shift.dtype != FR_F32)
        return fr_fail(err, FR_E_INTERNAL, "real_shift: ALiBi slopes must be fp32, got %s",
                       fr_dtype_name(in->real_shift.dtype));
    if (s->masked && in->atten_mask.ndim != 2 && in->atten_mask.ndim != 4)
        return fr_fail(err, FR_E_INTERNAL, "atten_mask: ndim %d, expected 2 or 4", in->atten_mask.ndim);
    return FR_OK;
}

/* Sets the mode-4 band (bottom-right origin converted to top-left, spec 4.2). */
static void band_mode4(const fr_params *p, fr_sem_batch *sb) {
    sb->band = true;
    sb->hi = p->next_tokens + (sb->S2 - sb->S1);
    sb->lo = -(p->pre_tokens - (sb->S2 - sb->S1));
}
static void band_causal(fr_sem_batch *sb, int64_t hi) {
    sb->band = true;
    sb->lo = -BAND_INF;
    sb->hi = hi;
}

void fr_sem_batch_get(const fr_sem *s, int64_t b, fr_sem_batch *sb) {
    const fr_problem *pb = s->pb;
    const fr_params *p = s->p;
    sb->b = b;
    fr_problem_q_rows(pb, b, &sb->q0, &sb->S1);
    fr_problem_kv_rows(pb, b, &sb->kv0, &sb->S2);
    sb->band = false;
    sb->lo = -BAND_INF;
    sb->hi = BAND_INF;
    sb->prefix = 0;
    sb->user_mask = false;
    if (s->masked) {
        switch ((fr_sparse_mode)pb->sparse_mode) { /* no default: -Wswitch names a mode without a rule */
        case FR_SPARSE_DEFAULT_MASK:
            sb->user_mask = true;
            sb->band = true;
            sb->lo = -p->pre_tokens;
            sb->hi = p->next_tokens;
            break;
        case FR_SPARSE_ALL_MASK: sb->user_mask = true; break;
        case FR_SPARSE_LEFT_UP_CAUSAL: band_causal(sb, 0); break;
        case FR_SPARSE_RIGHT_DOWN_CAUSAL: band_causal(sb, sb->S2 - sb->S1); break;
        case FR_SPARSE_BAND: band_mode4(p, sb); break;
        case FR_SPARSE_PREFIX:
            sb->user_mask = true;
            if (p->prefix && b < p->prefix_len && p->prefix[b] <= sb->S2) {
                band_causal(sb, sb->S2 - sb->S1);
                sb->prefix = p->prefix[b] > 0 ? p->prefix[b] : 0;
            }
            break;
        case FR_SPARSE_PREFIX_COMPRESS:
            band_causal(sb, sb->S2 - sb->S1);
            if (p->prefix && b < p->prefix_len) sb->prefix = p->prefix[b] > 0 ? p->prefix[b] : 0;
            break;
        case FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND:
        case FR_SPARSE_BAND_LEFT_UP_CAUSAL: {
            /* TND outer split: mode 3 (7) or mode 2 (8) everywhere, except the last (7) / first (8) batch with
             * S1_b != 0, which uses the mode-4 band. */
            const bool last = pb->sparse_mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND;
            int64_t special = -1;
            for (int64_t k = 0; k < pb->B; k++) {
                int64_t k0, kl;
                fr_problem_q_rows(pb, last ? pb->B - 1 - k : k, &k0, &kl);
                if (kl != 0) {
                    special = last ? pb->B - 1 - k : k;
                    break;
                }
            }
            if (b == special) band_mode4(p, sb);
            else band_causal(sb, last ? sb->S2 - sb->S1 : 0);
            break;
        }
        case FR_SPARSE_MODE_COUNT: break; /* not a mode (validation refuses it) */
        }
    }
    if (pb->layout == FR_TND) {
        int64_t acc = 0;
        for (int64_t k = 0; k < b; k++) {
            int64_t a0, al, c0, cl;
            fr_problem_q_rows(pb, k, &a0, &al);
            fr_problem_kv_rows(pb, k, &c0, &cl);
            acc += al * cl;
        }
        sb->drop_bit0 = acc * pb->N1;
    } else {
        sb->drop_bit0 = b * pb->N1 * pb->S1 * pb->S2;
    }
    sb->q_start = p->q_start_idx;
    sb->kv_start = p->kv_start_idx;
    if (pb->layout == FR_TND && pb->sparse_mode == FR_SPARSE_BAND_LEFT_UP_CAUSAL && s->masked && b != 0)
        sb->q_start = sb->kv_start = 0;
}

/* atten_mask element (i, j) of batch b, head h: nonzero = masked. TND: the top-left corner of [maxS1, maxS2]. */
static inline bool user_masked(const fr_sem *s, const fr_sem_batch *sb, int64_t h, int64_t i, int64_t j) {
    const fr_tensor *t = &s->in->atten_mask;
    const uint8_t *m = (const uint8_t *)t->data;
    if (t->ndim == 2) return m[i * t->strides[0] + j * t->strides[1]] != 0;
    int64_t bb = t->shape[0] == 1 ? 0 : sb->b, hh = t->shape[1] == 1 ? 0 : h;
    return m[bb * t->strides[0] + hh * t->strides[1] + i * t->strides[2] + j * t->strides[3]] != 0;
}

static inline bool rule_keeps(const fr_sem_batch *sb, int64_t i, int64_t j) {
    if (!sb->band || j < sb->prefix) return true;
    int64_t d = j - i;
    return d >= sb->lo && d <= sb->hi;
}

fr_tile_class fr_sem_tile_class(const fr_sem *s, const fr_sem_batch *sb, int64_t h, int64_t i0, int64_t ni,
                                int64_t j0, int64_t nj) {
    ni = min64(ni, sb->S1 - i0);
    nj = min64(nj, sb->S2 - j0);
    if (ni <= 0 || nj <= 0 || i0 < 0 || j0 < 0) return FR_TILE_SKIP;
    bool all_kept = true;
    if (sb->band) {
        int64_t dmin = j0 - (i0 + ni - 1), dmax = j0 + nj - 1 - i0;
        bool any_prefix = j0 < sb->prefix, all_prefix = j0 + nj <= sb->prefix;
        if ((dmax < sb->lo || dmin > sb->hi || sb->lo > sb->hi) && !any_prefix) return FR_TILE_SKIP;
        all_kept = all_prefix || (dmin >= sb->lo && dmax <= sb->hi);
    }
    if (sb->user_mask) { /* exact: scan the tile with both rules */
        int64_t nkept = 0;
        for (int64_t r = 0; r < ni; r++)
            for (int64_t c = 0; c < nj; c++)
                nkept += rule_keeps(sb, i0 + r, j0 + c) && !user_masked(s, sb, h, i0 + r, j0 + c);
        if (nkept == 0) return FR_TILE_SKIP;
        all_kept = nkept == ni * nj;
    }
    if (s->topk) return FR_TILE_PARTIAL;
    return all_kept ? FR_TILE_FULL : FR_TILE_PARTIAL;
}

void fr_sem_tile_keep(const fr_sem *s, const fr_sem_batch *sb, int64_t h, int64_t i0, int64_t ni, int64_t j0,
                      int64_t nj, uint8_t *keep, int64_t ld) {
    for (int64_t r = 0; r < ni; r++) {
        int64_t i = i0 + r;
        for (int64_t c = 0; c < nj; c++) {
            int64_t j = j0 + c;
            bool k = i < sb->S1 && j < sb->S2 && rule_keeps(sb, i, j);
            if (k && sb->user_mask) k = !user_masked(s, sb, h, i, j);
            keep[r * ld + c] = (uint8_t)k;
        }
    }
}

static inline float load_pse_elem(const fr_tensor *t, int64_t off) {
    switch (t->dtype) {
    case FR_F32: return ((const float *)t->data)[off];
    case FR_F16: return fr_dec_f16(((const uint16_t *)t->data)[off]);
    case FR_BF16: return fr_dec_bf16(((const uint16_t *)t->data)[off]);
    default: return 0.0f;
    }
}

/* External pse (pse_type 0/1) of (i, j) within batch sb, exactly widened to fp32. */
static inline float ext_pse(const fr_sem *s, const fr_sem_batch *sb, int64_t h, int64_t i, int64_t j) {
    const fr_tensor *t = &s->in->real_shift;
    const int64_t *st = t->strides;
    int64_t bb = t->shape[0] == 1 ? 0 : sb->b;
    int64_t r = i, c = j;
    if (s->pse_compressed) {
        /* The last R = 1024 rows of a Toeplitz pse [S, S], S = the tensor's column count: read (i, j) on the same
         * diagonal j - i (spec 5.2). A batch shorter than S (TND: S = max S2) sits at the bottom-right of the full
         * matrix, so its rows are shifted by S - S1_b; for S1_b = S (the non-TND case) the shift is 0. */
        const int64_t S = t->shape[3], R = t->shape[2], shift = S - sb->S1, iv = i + shift;
        if (iv >= S - R) {
            r = iv - (S - R);
            c = j + shift;
        } else {
            r = 0;
            c = j - i + S - R;
        }
        if (c < 0 || c >= S) return 0.0f; /* only the masked upper part can fall outside */
    } else if (t->shape[2] == 1) {
        r = 0;
    }
    return load_pse_elem(t, bb * st[0] + h * st[1] + r * st[2] + c * st[3]);
}

static inline float slope_of(const fr_sem *s, const fr_sem_batch *sb, int64_t h) {
    const fr_tensor *t = &s->in->real_shift;
    const float *v = (const float *)t->data;
    if (t->ndim == 2) return v[(t->shape[0] == 1 ? 0 : sb->b) * t->strides[0] + h * t->strides[1]];
    return v[h * t->strides[0]];
}

static inline int64_t alibi_dist(const fr_sem_batch *sb, int64_t i, int64_t j) {
    int64_t d = (j + sb->kv_start) - (i + sb->q_start);
    return d < 0 ? -d : d;
}

/* Alike semantics.c:fr_sem_tile_pse_f64: kept apart because ALiBi in fp32 is what the kernels compute and in fp64
 * what the emulator's fp64 score path needs; one generic body would hide which precision a caller gets. */
void fr_sem_tile_pse_f32(const fr_sem *s, const fr_sem_batch *sb, int64_t h, int64_t i0, int64_t ni, int64_t j0,
                         int64_t nj, float *pse, int64_t ld) {
    if (!s->pse) {
        for (int64_t r = 0; r < ni; r++)
            for (int64_t c = 0; c < nj; c++) pse[r * ld + c] = 0.0f;
        return;
    }
    if (fr_pse_type_is_slopes(s->pse_type)) {
        float nslope = -slope_of(s, sb, h);
        for (int64_t r = 0; r < ni; r++)
            for (int64_t c = 0; c < nj; c++) {
                float d = (float)alibi_dist(sb, i0 + r, j0 + c);
                pse[r * ld + c] = nslope * (s->pse_type == FR_PSE_INNER_MUL_ADD_SQRT ? sqrtf(d) : d);
            }
        return;
    }
    for (int64_t r = 0; r < ni; r++)
        for (int64_t c = 0; c < nj; c++) {
            int64_t i = i0 + r, j = j0 + c;
            pse[r * ld + c] = (i < sb->S1 && j < sb->S2) ? ext_pse(s, sb, h, i, j) : 0.0f;
        }
}

/* The fp64 twin of fr_sem_tile_pse_f32. Alike semantics.c:fr_sem_tile_pse_f32: kept apart because ALiBi in fp32 is
 * what the kernels compute, in fp64 what the emulator's fp64 score path needs; one generic body would hide which
 * precision each caller gets. */
void fr_sem_tile_pse_f64(const fr_sem *s, const fr_sem_batch *sb, int64_t h, int64_t i0, int64_t ni, int64_t j0,
                         int64_t nj, double *pse, int64_t ld) {
    if (!s->pse) {
        for (int64_t r = 0; r < ni; r++)
            for (int64_t c = 0; c < nj; c++) pse[r * ld + c] = 0.0;
        return;
    }
    if (fr_pse_type_is_slopes(s->pse_type)) {
        double nslope = -(double)slope_of(s, sb, h);
        for (int64_t r = 0; r < ni; r++)
            for (int64_t c = 0; c < nj; c++) {
                double d = (double)alibi_dist(sb, i0 + r, j0 + c);
                pse[r * ld + c] = nslope * (s->pse_type == FR_PSE_INNER_MUL_ADD_SQRT ? sqrt(d) : d);
            }
        return;
    }
    for (int64_t r = 0; r < ni; r++)
        for (int64_t c = 0; c < nj; c++) {
            int64_t i = i0 + r, j = j0 + c;
            pse[r * ld + c] = (i < sb->S1 && j < sb->S2) ? (double)ext_pse(s, sb, h, i, j) : 0.0;
        }
}

bool fr_sem_drop_bit(const fr_sem *s, const fr_sem_batch *sb, int64_t h, int64_t i, int64_t j) {
    if (!s->dropout) return true;
    const fr_tensor *t = &s->in->drop_mask;
    int64_t k = sb->drop_bit0 + (h * sb->S1 + i) * sb->S2 + j;
    uint8_t byte = ((const uint8_t *)t->data)[(k >> 3) * t->strides[0]];
    return (byte >> (k & 7)) & 1u;
}

void fr_sem_tile_drop(const fr_sem *s, const fr_sem_batch *sb, int64_t h, int64_t i0, int64_t ni, int64_t j0,
                      int64_t nj, uint8_t *keep, int64_t ld) {
    for (int64_t r = 0; r < ni; r++) {
        int64_t i = i0 + r;
        for (int64_t c = 0; c < nj; c++) {
            int64_t j = j0 + c;
            keep[r * ld + c] = (uint8_t)(i < sb->S1 && j < sb->S2 && fr_sem_drop_bit(s, sb, h, i, j));
        }
    }
}

static inline float dscale(const fr_tensor *t, int64_t b, int64_t n, int64_t blk) {
    if (!fr_tensor_present(t)) return 1.0f;
    return ((const float *)t->data)[b * t->strides[0] + n * t->strides[1] + blk * t->strides[2]];
}
float fr_sem_dscale_q(const fr_sem *s, const fr_sem_batch *sb, int64_t h, int64_t i) {
    return dscale(&s->in->d_scale_q, sb->b, h, i / FR_SEM_DSCALE_Q_ROWS);
}
float fr_sem_dscale_k(const fr_sem *s, const fr_sem_batch *sb, int64_t kv, int64_t j) {
    return dscale(&s->in->d_scale_k, sb->b, kv, j / FR_SEM_DSCALE_KV_ROWS);
}
float fr_sem_dscale_v(const fr_sem *s, const fr_sem_batch *sb, int64_t kv, int64_t j) {
    return dscale(&s->in->d_scale_v, sb->b, kv, j / FR_SEM_DSCALE_KV_ROWS);
}

int64_t fr_sem_topk_row(const fr_sem *s, const fr_sem_batch *sb, int64_t h, int64_t i, int64_t *cols) {
    const fr_problem *pb = s->pb;
    const fr_tensor *t = &s->in->topk_indices;
    const int32_t *v = (const int32_t *)t->data;
    const int64_t *st = t->strides;
    int64_t kv = fr_sem_kv_head(s, h), base;
    if (pb->layout == FR_TND) {
        int64_t row = sb->q0 + i;
        base = pb->topk_per_kv_head ? row * st[0] + kv * st[1] : row * st[0];
    } else {
        base = pb->topk_per_kv_head ? sb->b * st[0] + kv * st[1] + i * st[2] : sb->b * st[0] + i * st[1];
    }
    int64_t wst = st[t->ndim - 1], n = 0;
    for (int64_t w = 0; w < pb->W; w++) {
        int64_t j = v[base + w * wst];
        if (j >= 0 && j < sb->S2) cols[n++] = j;
    }
    return n;
}

float fr_sem_sink(const fr_sem *s, int64_t h) {
    if (!s->sink) return 0.0f;
    const fr_tensor *t = &s->in->sink;
    return ((const float *)t->data)[h * t->strides[0]];
}
