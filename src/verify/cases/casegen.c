/* Seeded case generation (casegen.h). Every tensor has its own Philox stream (core/rng.h), so a case is a pure
 * function of (spec, seed). */
#include "verify/cases/casegen.h"

#include "core/core.h"
#include "core/problem.h"
#include "core/rng.h"
#include "core/validate.h"
#include "io/casedir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One stream per tensor: changing one tensor's recipe never changes another's values. */
enum {
    ST_Q = 1,
    ST_K,
    ST_V,
    ST_PSE,
    ST_MASK,
    ST_DROP,
    ST_DSQ,
    ST_DSK,
    ST_DSV,
    ST_QROPE,
    ST_KROPE,
    ST_SINK,
    ST_TOPK,
    ST_DY,
    ST_PREFIX
};

typedef struct dims {
    bool shapes; /* shapes only (fr_gen_check): every tensor's data is kDummy, nothing is drawn */
    fr_layout layout;
    fr_dtype dtype;
    int64_t B, N1, N2, G, S1, S2, D, Dv, Dr, T1, T2;
    const int64_t *cu_q, *cu_kv; /* TND only */
} dims;

static int64_t q_start(const dims *d, int64_t b) { return d->cu_q && b > 0 ? d->cu_q[b - 1] : 0; }
static int64_t kv_start(const dims *d, int64_t b) { return d->cu_kv && b > 0 ? d->cu_kv[b - 1] : 0; }
static int64_t q_len(const dims *d, int64_t b) { return d->cu_q ? d->cu_q[b] - q_start(d, b) : d->S1; }
static int64_t kv_len(const dims *d, int64_t b) { return d->cu_kv ? d->cu_kv[b] - kv_start(d, b) : d->S2; }

/* The data of every tensor of a shapes-only case: validation never reads tensor data (docs/validation.md). */
static uint8_t kDummy[8];

/* Allocates a zeroed contiguous tensor (shapes only: points it at kDummy). */
static fr_status talloc(bool shapes, fr_tensor *t, fr_dtype dt, int ndim, const int64_t *shape, fr_error *err) {
    int64_t n = 1;
    for (int k = 0; k < ndim; k++) {
        if (shape[k] < 0)
            return fr_fail(err, FR_E_INVALID_ARG, "casegen: negative dimension %lld", (long long)shape[k]);
        if (!fr_mul_ok(n, shape[k], &n)) return fr_fail(err, FR_E_OVERFLOW, "casegen: tensor size overflows");
    }
    int64_t bytes;
    if (!fr_mul_ok(n, (int64_t)fr_dtype_size(dt), &bytes))
        return fr_fail(err, FR_E_OVERFLOW, "casegen: tensor bytes overflow");
    if (shapes) {
        *t = fr_tensor_make(dt, kDummy, ndim, shape);
        return FR_OK;
    }
    void *p = calloc(1, (size_t)(bytes > 0 ? bytes : 1));
    if (!p) return fr_fail(err, FR_E_NOMEM, "casegen: cannot allocate %lld bytes", (long long)bytes);
    *t = fr_tensor_make(dt, p, ndim, shape);
    return FR_OK;
}

/* Shape of a q/k/v/out-like tensor: N heads of dim D, S rows per batch (T rows for TND). */
static int qkv_shape(const dims *d, int64_t n, int64_t s, int64_t t, int64_t hd, int64_t *sh) {
    return fr_gen_qkv_shape(d->layout, d->B, n, s, t, hd, sh);
}

/* fp32 normal samples for a q/k/v-like tensor, kept as an fp32 tensor of the same shape (for layout indexing). */
static fr_status normal_f32(bool shapes, fr_tensor *t, int ndim, const int64_t *sh, uint64_t seed, uint64_t stream,
                            double sd, fr_error *err) {
    fr_status st = talloc(shapes, t, FR_F32, ndim, sh, err);
    if (st != FR_OK || shapes) return st;
    fr_rng_normal_f32((float *)t->data, fr_tensor_numel(t), seed, stream, 0, 0.0, sd);
    return FR_OK;
}

/* Rounds an fp32 tensor to dtype `to` into a new tensor (frees nothing). */
static fr_status encode(bool shapes, const fr_tensor *src, fr_dtype to, fr_tensor *dst, fr_error *err) {
    fr_status st = talloc(shapes, dst, to, src->ndim, src->shape, err);
    if (st != FR_OK || shapes) return st;
    size_t n = (size_t)fr_tensor_numel(src);
    st = fr_convert_array(to, dst->data, FR_F32, src->data, n, FR_ROUND_NEAREST_EVEN, FR_SAT);
    if (st != FR_OK) return fr_fail(err, st, "casegen: cannot encode fp32 to %s", fr_dtype_name(to));
    return FR_OK;
}

static fr_status make_float(bool shapes, fr_tensor *t, fr_dtype dt, int ndim, const int64_t *sh, uint64_t seed,
                            uint64_t stream, double sd, fr_error *err) {
    fr_tensor f;
    fr_status st = normal_f32(shapes, &f, ndim, sh, seed, stream, sd, err);
    if (st != FR_OK) return st;
    st = encode(shapes, &f, dt, t, err);
    if (!shapes) free(f.data);
    return st;
}

/* The random user mask, m[k] = uniform01(seed, ST_MASK, k) < 0.25 for k in [0, n), two elements per Philox block
 * (rng.h: element k takes the word pair of block k / 2): the 53-bit fraction ((hi << 32 | lo) >> 11) 2^-53 is below
 * 1/4 exactly when its high word hi is below 2^30. */
static void mask_random(uint64_t seed, int64_t n, uint8_t *m) {
    uint32_t w[4];
    for (int64_t k = 0; k < n; k += 2) {
        fr_rng_block(seed, ST_MASK, (uint64_t)k / 2, w);
        m[k] = w[0] < UINT32_C(0x40000000);
        if (k + 1 < n) m[k + 1] = w[2] < UINT32_C(0x40000000);
    }
}

/* Mode 5: the user mask written from the formula (masked iff j > i + S2 - S1 and j >= prefix[b]; no prefix: nothing
 * masked, the spec's "full compute"), so that the readings "mask OR formula", "formula only" and "mask only" agree
 * (the implementation-defined cases of suite_modify.c need one where they disagree). Needs a mask with a batch
 * dimension, or one prefix for every batch. */
static void mask_from_formula(const dims *d, const int64_t *prefix, const int64_t *sh, int nd, uint8_t *m) {
    int64_t nb = nd == 4 ? sh[0] : 1, nh = nd == 4 ? sh[1] : 1, S1 = sh[nd - 2], S2 = sh[nd - 1];
    for (int64_t b = 0; prefix && b < d->B; b++)
        if (prefix[b] != prefix[0] && nb == 1) return;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t h = 0; h < nh; h++)
            for (int64_t i = 0; i < S1; i++)
                for (int64_t j = 0; j < S2; j++)
                    m[((b * nh + h) * S1 + i) * S2 + j] = (uint8_t)(prefix && j > i + S2 - S1 && j >= prefix[b]);
}

/* Mode 0: the band written into the user mask (masked where j - i > next or i - j > pre; batch-local positions, and
 * TND batches read the mask's top-left corner), so that "mask OR band" (D12) and "the mask alone" give the same
 * answer, as the spec asks of a caller: "the band must match the mask" (operator-spec 4.2). */
static void mask_add_band(const fr_gen_spec *s, const int64_t *sh, int nd, uint8_t *m) {
    if (!s->set_band) return; /* pre = next = 2147483647: no position outside the band */
    int64_t S1 = sh[nd - 2], S2 = sh[nd - 1], nmat = nd == 4 ? sh[0] * sh[1] : 1;
    for (int64_t k = 0; k < nmat; k++)
        for (int64_t i = 0; i < S1; i++)
            for (int64_t j = 0; j < S2; j++)
                if (j - i > s->next_tokens || i - j > s->pre_tokens) m[(k * S1 + i) * S2 + j] = 1;
}

static fr_status make_mask(const fr_gen_spec *s, const dims *d, uint64_t seed, const int64_t *prefix, fr_tensor *t,
                           fr_error *err) {
    fr_gen_mask kind = s->mask;
    int mode = s->sparse_mode;
    int64_t sh[4];
    int nd = fr_gen_mask_shape(kind, mode, d->B, d->N1, d->S1, d->S2, sh);
    fr_status st = talloc(d->shapes, t, FR_BOOL, nd, sh, err);
    if (st != FR_OK || d->shapes) return st;
    if (kind == FR_GEN_MASK_CANONICAL && fr_gen_mask_compressed(mode)) {
        fr_gen_canonical_mask(sh, (uint8_t *)t->data);
        return FR_OK;
    }
    int64_t n = fr_tensor_numel(t);
    uint8_t *m = (uint8_t *)t->data;
    mask_random(seed, n, m);
    if (mode == FR_SPARSE_PREFIX && !s->mask_any && d->layout != FR_TND) mask_from_formula(d, prefix, sh, nd, m);
    if (mode == FR_SPARSE_DEFAULT_MASK && !s->mask_any) mask_add_band(s, sh, nd, m);
    return FR_OK;
}

void fr_gen_alibi_slopes(int64_t n, float *slopes) {
    if (n <= 0) return;
    int64_t p = 1;
    while (p * 2 <= n) p *= 2; /* n' = 2^floor(log2 N) */
    for (int64_t k = 1; k <= p; k++) slopes[k - 1] = (float)exp2(-8.0 * (double)k / (double)p);
    for (int64_t k = 1; k <= n - p; k++) slopes[p + k - 1] = (float)exp2(-4.0 * (double)(2 * k - 1) / (double)p);
}

static fr_status make_pse(const fr_gen_spec *s, const dims *d, uint64_t seed, fr_tensor *t, fr_error *err) {
    fr_status st;
    int64_t sh[4];
    int nd = fr_gen_pse_shape(s->pse, d->B, d->N1, d->S1, d->S2, sh);
    fr_dtype pdt = fr_gen_pse_dtype(s->pse, d->dtype);
    if (s->pse == FR_GEN_PSE_SLOPES_BN || s->pse == FR_GEN_PSE_SLOPES_N) {
        bool bn = s->pse == FR_GEN_PSE_SLOPES_BN;
        if ((st = talloc(d->shapes, t, pdt, nd, sh, err)) != FR_OK || d->shapes) return st;
        float *p = (float *)t->data;
        fr_gen_alibi_slopes(d->N1, p);
        if (bn) /* a distinct slope set per batch, so a batch-indexing error shows */
            for (int64_t b = d->B - 1; b >= 0; b--)
                for (int64_t h = 0; h < d->N1; h++) p[b * d->N1 + h] = p[h] * (float)(1.0 + 0.25 * (double)b);
        return FR_OK;
    }
    fr_tensor f;
    if (d->shapes) return talloc(true, t, pdt, nd, sh, err);
    if ((st = talloc(false, &f, FR_F32, nd, sh, err)) != FR_OK) return st;
    float *p = (float *)f.data;
    if (s->pse == FR_GEN_PSE_COMP_B || s->pse == FR_GEN_PSE_COMP_1 || d->layout == FR_TND) {
        /* Toeplitz rows: element (bb, h, r, c) = f_{bb,h}(c - r), so every diagonal is constant (spec 5.2; TND reads
         * every pse tensor as the compressed one, a [.., 1024, 1024] full shape included). Where a batch shorter than
         * S sits in the Toeplitz matrix (D14) then changes nothing. Each diagonal's value is drawn once (sample k of
         * the stream), then copied along it. */
        float *diag = malloc(sizeof(float) * (size_t)(sh[3] + 1024));
        if (!diag) {
            free(f.data);
            return fr_fail(err, FR_E_NOMEM, "casegen: out of memory");
        }
        const int64_t R = sh[2] < 1024 ? sh[2] : 1024; /* rows: 1024 (or fewer in a one-row TND pse) */
        for (int64_t bb = 0; bb < sh[0]; bb++)
            for (int64_t h = 0; h < sh[1]; h++) {
                uint64_t k0 = (uint64_t)((bb * sh[1] + h) * (sh[3] + 1024));
                for (int64_t q = 0; q < sh[3] + 1023; q++)
                    diag[q] = (float)fr_rng_normal01(seed, ST_PSE, k0 + (uint64_t)q);
                for (int64_t r = 0; r < R; r++)
                    for (int64_t c = 0; c < sh[3]; c++) p[((bb * sh[1] + h) * R + r) * sh[3] + c] = diag[c - r + 1023];
            }
        free(diag);
    } else {
        fr_rng_normal_f32(p, fr_tensor_numel(&f), seed, ST_PSE, 0, 0.0, 1.0);
    }
    st = encode(false, &f, pdt, t, err);
    free(f.data);
    return st;
}

static fr_status make_topk(const fr_gen_spec *s, const dims *d, uint64_t seed, fr_tensor *t, fr_error *err) {
    int64_t W = s->topk_w, sh[4];
    bool kvh = s->topk_per_kv_head;
    int nd = fr_gen_topk_shape(d->layout, kvh, d->B, d->N2, d->S1, d->T1, W, sh);
    fr_status st = talloc(d->shapes, t, FR_I32, nd, sh, err);
    if (st != FR_OK || d->shapes) return st;
    int32_t *p = (int32_t *)t->data;
    int64_t nh = kvh ? d->N2 : 1, row = 0;
    /* seen[j] = the last row that listed key j: a repeat becomes -1 (unless topk_dup), so that "once per
     * occurrence" (D7) and "once" read the row alike */
    int64_t *seen = s->topk_dup ? NULL : calloc((size_t)(d->S2 > 0 ? d->S2 : 1), sizeof(int64_t));
    if (!s->topk_dup && !seen) return fr_fail(err, FR_E_NOMEM, "casegen: out of memory");
    for (int64_t b = 0; b < d->B; b++) {
        int64_t s1 = q_len(d, b), s2 = kv_len(d, b);
        for (int64_t n = 0; n < nh; n++)
            for (int64_t i = 0; i < s1; i++) {
                int64_t base;
                if (d->layout == FR_TND) base = ((q_start(d, b) + i) * nh + n) * W;
                else base = ((b * nh + n) * d->S1 + i) * W;
                /* causal (bottom-right aligned) own key first, then random earlier keys, -1 sentinels and now and
                 * then an index past S2_b (also unused, D7); duplicates arise naturally (kept only with topk_dup) */
                int64_t own = i + s2 - s1;
                if (own >= s2) own = s2 - 1;
                row++;
                for (int64_t w = 0; w < W; w++) {
                    int64_t v = -1;
                    double u = fr_rng_uniform01(seed, ST_TOPK, (uint64_t)(base + w));
                    if (own >= 0) {
                        if (w == 0) v = own;
                        else if (u < 0.2) v = -1;
                        else if (u > 0.97) v = s2 + 3;
                        else v = (int64_t)((u - 0.2) / 0.77 * (double)(own + 1));
                        if (v > own && v < s2) v = own;
                    }
                    if (seen && v >= 0 && v < s2) {
                        if (seen[v] == row) v = -1;
                        else seen[v] = row;
                    }
                    p[base + w] = (int32_t)v;
                }
            }
    }
    free(seen);
    return FR_OK;
}

static fr_status make_scales(const dims *d, int64_t n, int64_t s, int64_t blk, uint64_t seed, uint64_t stream,
                             fr_tensor *t, fr_error *err) {
    int64_t sh[4];
    fr_status st = talloc(d->shapes, t, FR_F32, fr_gen_dscale_shape(d->B, n, s, blk, sh), sh, err);
    if (st == FR_OK && !d->shapes) fr_rng_uniform_f32((float *)t->data, fr_tensor_numel(t), seed, stream, 0, 0.5, 2.0);
    return st;
}

void fr_gen_case_free(fr_gen_case *c) {
    if (!c) return;
    fr_tensor *ts[] = {&c->in.fwd.query, &c->in.fwd.key, &c->in.fwd.value, &c->in.fwd.real_shift,
                       &c->in.fwd.drop_mask, &c->in.fwd.atten_mask, &c->in.fwd.d_scale_q, &c->in.fwd.d_scale_k,
                       &c->in.fwd.d_scale_v, &c->in.fwd.query_rope, &c->in.fwd.key_rope, &c->in.fwd.sink,
                       &c->in.fwd.topk_indices, &c->in.dy, &c->in.attention_in, &c->in.softmax_max,
                       &c->in.softmax_sum};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++)
        if (ts[k]->data != kDummy) free(ts[k]->data);
    free(c->prefix);
    free(c->cu_q);
    free(c->cu_kv);
    memset(c, 0, sizeof *c);
}

static fr_status check_spec(const fr_gen_spec *s, fr_error *err) {
    if (s->N1 <= 0)
        return fr_fail(err, FR_E_INVALID_ARG, "casegen %s: N1 = %lld must be > 0", s->name, (long long)s->N1);
    int64_t n2 = s->N2 ? s->N2 : s->N1;
    if (s->N1 % n2) return fr_fail(err, FR_E_INVALID_ARG, "casegen %s: N1 = %lld not a multiple of N2 = %lld", s->name,
                                    (long long)s->N1, (long long)n2);
    if (s->layout == FR_TND && (s->B <= 0 || s->B > FR_GEN_MAX_BATCH))
        return fr_fail(err, FR_E_INVALID_ARG, "casegen %s: TND B = %lld outside 1..%d", s->name, (long long)s->B,
                       FR_GEN_MAX_BATCH);
    if (s->B < 0 || s->S1 < 0 || s->S2 < 0 || s->D < 0 || s->Dv < 0 || s->Drope < 0 || s->topk_w < 0)
        return fr_fail(err, FR_E_INVALID_ARG, "casegen %s: negative dimension", s->name);
    if (s->keep_prob < 0 || s->keep_prob > 1)
        return fr_fail(err, FR_E_INVALID_ARG, "casegen %s: keep_prob = %g", s->name, s->keep_prob);
    return FR_OK;
}

/* Runs the golden forward of c and stores attention_in (input dtype), softmax_max/sum (fp32) for its backward. */
static fr_status make_bwd_stats(fr_gen_case *c, const dims *d, fr_error *err) {
    if (d->dtype == FR_E4M3FN || d->dtype == FR_E5M2 || d->dtype == FR_HIF8)
        return fr_fail(err, FR_E_UNSUPPORTED, "casegen %s: fp8 backward cases are not generated", c->name);
    int64_t sh[4];
    int nd = qkv_shape(d, d->N1, d->S1, d->T1, d->Dv, sh);
    fr_status st = talloc(d->shapes, &c->in.attention_in, d->dtype, nd, sh, err);
    if (st != FR_OK) return st;
    int64_t ss[4];
    int snd = fr_gen_stats_shape(d->layout, c->params.softmax_layout, d->B, d->N1, d->S1, d->T1, ss);
    if ((st = talloc(d->shapes, &c->in.softmax_max, FR_F32, snd, ss, err)) != FR_OK) return st;
    if ((st = talloc(d->shapes, &c->in.softmax_sum, FR_F32, snd, ss, err)) != FR_OK || d->shapes) return st;
    fr_fwd_outputs o;
    memset(&o, 0, sizeof o);
    o.attention_out = c->in.attention_in;
    o.softmax_max = c->in.softmax_max;
    o.softmax_sum = c->in.softmax_sum;
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    return fr_fwd(&c->params, &c->in.fwd, &o, &e, err);
}

uint64_t fr_gen_case_seed(uint64_t seed, const char *name) {
    uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a of the name */
    for (const char *p = name ? name : ""; *p; p++) h = (h ^ (uint8_t)*p) * UINT64_C(0x100000001b3);
    uint64_t z = seed ^ h; /* splitmix64 finalizer */
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* The case's dimensions from the spec (TND: the cumulative lengths, owned by c). */
static fr_status build_dims(const fr_gen_spec *s, bool shapes, fr_gen_case *c, dims *d, fr_error *err) {
    memset(d, 0, sizeof *d);
    d->shapes = shapes;
    d->layout = s->layout ? s->layout : FR_BNSD;
    d->dtype = s->dtype ? s->dtype : FR_F32;
    c->dtype = d->dtype;
    d->N1 = s->N1;
    d->N2 = s->N2 ? s->N2 : s->N1;
    d->G = d->N1 / d->N2;
    d->D = s->D;
    d->Dv = s->Dv ? s->Dv : s->D;
    d->Dr = s->Drope;
    d->B = s->B;
    if (d->layout == FR_TND) {
        c->cu_q = malloc(sizeof(int64_t) * (size_t)d->B);
        c->cu_kv = malloc(sizeof(int64_t) * (size_t)d->B);
        if (!c->cu_q || !c->cu_kv) return fr_fail(err, FR_E_NOMEM, "casegen: out of memory");
        fr_gen_tnd_lengths(d->B, s->seq_q, s->seq_kv, c->cu_q, c->cu_kv, &d->S1, &d->S2, &d->T1, &d->T2);
        d->cu_q = c->cu_q;
        d->cu_kv = c->cu_kv;
    } else {
        d->S1 = s->S1;
        d->S2 = s->S2;
        d->T1 = d->B * d->S1;
        d->T2 = d->B * d->S2;
    }
    return FR_OK;
}

/* The operator's parameters of the case (prefix drawn from its own stream, owned by c). */
static fr_status build_params(const fr_gen_spec *s, const dims *d, uint64_t seed, fr_gen_case *c, fr_error *err) {
    fr_params *p = &c->params;
    *p = fr_params_default();
    p->head_num = d->N1;
    p->input_layout = d->layout;
    p->scale_value = s->scale != 0 ? s->scale : (d->D > 0 ? 1.0 / sqrt((double)d->D) : 1.0);
    p->keep_prob = s->keep_prob > 0 ? s->keep_prob : 1.0;
    if (s->set_band) {
        p->pre_tokens = s->pre_tokens;
        p->next_tokens = s->next_tokens;
    }
    p->sparse_mode = s->sparse_mode;
    p->pse_type = s->pse != FR_GEN_PSE_NONE ? s->pse_type : 1;
    p->inner_precise = s->inner_precise;
    p->q_start_idx = s->q_start_idx;
    p->kv_start_idx = s->kv_start_idx;
    p->out_dtype = s->out_dtype;
    p->softmax_layout = s->softmax_layout;
    if (d->layout == FR_TND) {
        p->actual_seq_qlen = c->cu_q;
        p->actual_seq_kvlen = c->cu_kv;
        p->actual_seq_len = d->B;
    }
    if (s->prefix) {
        c->prefix = malloc(sizeof(int64_t) * (size_t)(d->B > 0 ? d->B : 1));
        if (!c->prefix) return fr_fail(err, FR_E_NOMEM, "casegen: out of memory");
        for (int64_t b = 0; b < d->B; b++) {
            int64_t s1 = q_len(d, b), s2 = kv_len(d, b);
            int64_t lo, hi;
            fr_gen_prefix_range(s1, s2, &lo, &hi);
            int64_t v = lo + (int64_t)(fr_rng_uniform01(seed, ST_PREFIX, (uint64_t)b) * (double)(hi - lo + 1));
            c->prefix[b] = v > hi ? hi : v;
        }
        p->prefix = c->prefix;
        p->prefix_len = d->B;
    }
    return FR_OK;
}

/* query and key, drawn in fp32 (peaked rows: q_i += beta * k_i of the same batch and kv group, verification-method
 * 4) and then encoded in the case's dtype. */
static fr_status build_qk(const fr_gen_spec *s, const dims *d, uint64_t seed, double sd, fr_fwd_inputs *in,
                          fr_error *err) {
    int64_t sh[4];
    fr_tensor qf, kf;
    memset(&qf, 0, sizeof qf);
    memset(&kf, 0, sizeof kf);
    fr_status st;
    int nd = qkv_shape(d, d->N1, d->S1, d->T1, d->D, sh);
    if ((st = normal_f32(d->shapes, &qf, nd, sh, seed, ST_Q, sd, err)) != FR_OK) return st;
    nd = qkv_shape(d, d->N2, d->S2, d->T2, d->D, sh);
    if ((st = normal_f32(d->shapes, &kf, nd, sh, seed, ST_K, sd, err)) != FR_OK) {
        if (!d->shapes) free(qf.data);
        return st;
    }
    if (s->beta != 0 && !d->shapes) {
        for (int64_t b = 0; b < d->B; b++) {
            int64_t n = q_len(d, b) < kv_len(d, b) ? q_len(d, b) : kv_len(d, b);
            for (int64_t h = 0; h < d->N1; h++)
                for (int64_t i = 0; i < n; i++)
                    for (int64_t x = 0; x < d->D; x++) {
                        int64_t oq = fr_layout_offset(&qf, d->layout, d->D, q_start(d, b), b, h, i, x);
                        int64_t ok = fr_layout_offset(&kf, d->layout, d->D, kv_start(d, b), b, h / d->G, i, x);
                        ((float *)qf.data)[oq] += (float)s->beta * ((float *)kf.data)[ok];
                    }
        }
    }
    st = encode(d->shapes, &qf, d->dtype, &in->query, err);
    if (st == FR_OK) st = encode(d->shapes, &kf, d->dtype, &in->key, err);
    if (!d->shapes) {
        free(qf.data);
        free(kf.data);
    }
    return st;
}

/* The drop mask of keep_prob < 1 (its own stream). */
static fr_status build_drop_mask(const fr_params *p, const dims *d, uint64_t seed, const char *name, fr_tensor *t,
                                 fr_error *err) {
    int64_t nbits = fr_drop_mask_nbits(d->B, d->N1, d->S1, d->S2, d->cu_q, d->cu_kv);
    if (nbits < 0) return fr_fail(err, FR_E_OVERFLOW, "casegen %s: drop mask size overflows", name);
    int64_t nb = nbits / 8 + (nbits % 8 != 0);
    fr_status st = talloc(d->shapes, t, FR_U8, 1, &nb, err);
    if (st == FR_OK && !d->shapes)
        st = fr_rng_drop_mask((uint8_t *)t->data, nb, nbits, p->keep_prob, seed, ST_DROP, err);
    return st;
}

/* What build makes: every tensor; shapes only (fr_gen_check); shapes plus the data of the tensors that decide which
 * positions take part and their pse (fr_gen_build_structure). */
typedef enum build_kind { BUILD_FULL = 0, BUILD_SHAPES, BUILD_STRUCTURE } build_kind;

/* A case from its spec, tensor by tensor, each from its own stream of (seed, name). */
static fr_status build(const fr_gen_spec *s, uint64_t seed, build_kind kind, fr_gen_case *c, fr_error *err) {
    const bool shapes = kind != BUILD_FULL;
    if (!s || !c) return fr_fail(err, FR_E_NULL, "casegen: NULL spec or case");
    memset(c, 0, sizeof *c);
    fr_status st = check_spec(s, err);
    if (st != FR_OK) return st;
    snprintf(c->name, sizeof c->name, "%s", s->name ? s->name : "case");
    c->bwd = s->bwd;
    seed = fr_gen_case_seed(seed, s->name);
    c->seed = seed;
    dims d;
    if ((st = build_dims(s, shapes, c, &d, err)) != FR_OK) goto fail;
    if ((st = build_params(s, &d, seed, c, err)) != FR_OK) goto fail;
    fr_params *p = &c->params;
    fr_fwd_inputs *in = &c->in.fwd;
    double sd = s->in_scale > 0 ? s->in_scale : 1.0;
    int64_t sh[4];
    if ((st = build_qk(s, &d, seed, sd, in, err)) != FR_OK) goto fail;
    int nd = qkv_shape(&d, d.N2, d.S2, d.T2, d.Dv, sh);
    if ((st = make_float(d.shapes, &in->value, d.dtype, nd, sh, seed, ST_V, sd, err)) != FR_OK) goto fail;
    if (d.Dr > 0) {
        nd = qkv_shape(&d, d.N1, d.S1, d.T1, d.Dr, sh);
        if ((st = make_float(d.shapes, &in->query_rope, d.dtype, nd, sh, seed, ST_QROPE, sd, err)) != FR_OK) goto fail;
        nd = qkv_shape(&d, d.N2, d.S2, d.T2, d.Dr, sh);
        if ((st = make_float(d.shapes, &in->key_rope, d.dtype, nd, sh, seed, ST_KROPE, sd, err)) != FR_OK) goto fail;
    }
    dims ds = d; /* the mask, pse and top-k lists: with data in a structure build too */
    ds.shapes = kind == BUILD_SHAPES;
    if (s->mask != FR_GEN_MASK_NONE && (st = make_mask(s, &ds, seed, c->prefix, &in->atten_mask, err)) != FR_OK)
        goto fail;
    dims dp = ds; /* a full or one-row pse is read at (i, j) by every reading: its values are not structure (TND
                   * reads every tensor pse as the compressed one) */
    dp.shapes |=
        kind == BUILD_STRUCTURE && d.layout != FR_TND && s->pse >= FR_GEN_PSE_BNSS && s->pse <= FR_GEN_PSE_1NSS;
    if (s->pse != FR_GEN_PSE_NONE && (st = make_pse(s, &dp, seed, &in->real_shift, err)) != FR_OK) goto fail;
    if (p->keep_prob < 1.0 && (st = build_drop_mask(p, &d, seed, c->name, &in->drop_mask, err)) != FR_OK) goto fail;
    if (d.dtype == FR_E4M3FN || d.dtype == FR_E5M2 || d.dtype == FR_HIF8) {
        if ((st = make_scales(&d, d.N1, d.S1, 128, seed, ST_DSQ, &in->d_scale_q, err)) != FR_OK) goto fail;
        if ((st = make_scales(&d, d.N2, d.S2, 256, seed, ST_DSK, &in->d_scale_k, err)) != FR_OK) goto fail;
        if ((st = make_scales(&d, d.N2, d.S2, 256, seed, ST_DSV, &in->d_scale_v, err)) != FR_OK) goto fail;
    }
    if (s->sink) {
        if ((st = talloc(d.shapes, &in->sink, FR_F32, 1, &d.N1, err)) != FR_OK) goto fail;
        if (!d.shapes) fr_rng_normal_f32((float *)in->sink.data, d.N1, seed, ST_SINK, 0, 0.0, 1.0);
    }
    if (s->topk_w > 0 && (st = make_topk(s, &ds, seed, &in->topk_indices, err)) != FR_OK) goto fail;
    if (s->bwd) {
        nd = qkv_shape(&d, d.N1, d.S1, d.T1, d.Dv, sh);
        if ((st = make_float(d.shapes, &c->in.dy, d.dtype, nd, sh, seed, ST_DY, 1.0, err)) != FR_OK) goto fail;
        if ((st = make_bwd_stats(c, &d, err)) != FR_OK) goto fail;
    }
    return FR_OK;
fail:
    fr_gen_case_free(c);
    return st;
}

fr_status fr_gen_build(const fr_gen_spec *s, uint64_t seed, fr_gen_case *c, fr_error *err) {
    return build(s, seed, BUILD_FULL, c, err);
}

fr_status fr_gen_build_structure(const fr_gen_spec *s, uint64_t seed, fr_gen_case *c, fr_error *err) {
    return build(s, seed, BUILD_STRUCTURE, c, err);
}

fr_status fr_gen_check(const fr_gen_spec *s, fr_error *err) {
    fr_gen_case c;
    fr_status st = build(s, 0, BUILD_SHAPES, &c, err);
    if (st != FR_OK) return st;
    st = c.bwd ? fr_validate_bwd(&c.params, &c.in, NULL, err) : fr_validate_fwd(&c.params, &c.in.fwd, NULL, err);
    fr_gen_case_free(&c);
    return st;
}

fr_status fr_gen_case_write(const fr_gen_case *c, const char *dir, bool inputs_only, fr_error *err) {
    fr_case_op op = c->bwd ? FR_CASE_BWD : FR_CASE_FWD;
    /* validate before writing anything: an invalid case leaves no half-written directory behind */
    fr_status st =
        c->bwd ? fr_validate_bwd(&c->params, &c->in, NULL, err) : fr_validate_fwd(&c->params, &c->in.fwd, NULL, err);
    if (st != FR_OK) return st;
    st = fr_case_write_parts(dir, op, c->dtype, &c->params, &c->in, err);
    if (st != FR_OK || inputs_only) return st;
    fr_case view; /* a non-owning view of the generated case, for the output allocator */
    memset(&view, 0, sizeof view);
    view.op = op;
    view.dtype = c->dtype;
    view.params = c->params;
    view.in = c->in;
    fr_case_outputs o;
    memset(&o, 0, sizeof o);
    if ((st = fr_case_alloc_outputs(&view, true, &o, err)) != FR_OK) return st;
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    if (c->bwd)
        st = fr_bwd(&c->params, &c->in, &o.bwd, &e, err);
    else
        st = fr_fwd(&c->params, &c->in.fwd, &o.fwd, &e, err);
    if (st == FR_OK) st = fr_case_write_outputs(dir, &o, err);
    fr_case_outputs_free(&o);
    return st;
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Named sets. One table (kSets) lists them; each is a static array of specs. */

#define CANON FR_GEN_MASK_CANONICAL
#define BAND(pre, nxt) .set_band = true, .pre_tokens = (pre), .next_tokens = (nxt)

static const fr_gen_spec kSmoke[] = {
    {.name = "smoke_fwd_bnsd_fp32", .B = 1, .N1 = 2, .S1 = 4, .S2 = 5, .D = 8},
    {.name = "smoke_fwd_bsh_bf16_causal", .dtype = FR_BF16, .layout = FR_BSH, .B = 2, .N1 = 2, .N2 = 1, .S1 = 6,
     .S2 = 6, .D = 8, .sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL, .mask = CANON},
    {.name = "smoke_fwd_tnd_fp16", .dtype = FR_F16, .layout = FR_TND, .B = 2, .N1 = 2, .seq_q = {3, 4},
     .seq_kv = {5, 4}, .D = 8},
    {.name = "smoke_bwd_bnsd_fp32", .bwd = true, .B = 1, .N1 = 2, .N2 = 1, .S1 = 4, .S2 = 6, .D = 8},
};

/* The cross-check grid: every layout, dtype, sparse mode, pse type and shape, dropout, sink, top-k, rope, peaked and
 * empty sequences, forward and backward. Small shapes: golden_vs_numpy runs all of it twice in well under 90 s. */
static const fr_gen_spec kXcheck[] = {
    /* layouts x dtypes */
    {.name = "fwd_bnsd_fp32_gqa", .B = 2, .N1 = 4, .N2 = 2, .S1 = 7, .S2 = 9, .D = 16},
    {.name = "fwd_bsnd_fp16", .dtype = FR_F16, .layout = FR_BSND, .B = 2, .N1 = 4, .S1 = 8, .S2 = 8, .D = 8},
    {.name = "fwd_bsh_bf16_mqa", .dtype = FR_BF16, .layout = FR_BSH, .B = 2, .N1 = 4, .N2 = 1, .S1 = 5, .S2 = 11,
     .D = 12, .Dv = 8},
    {.name = "fwd_sbh_fp32_d3", .layout = FR_SBH, .B = 3, .N1 = 2, .S1 = 6, .S2 = 6, .D = 3},
    {.name = "fwd_sbh_fp16_gqa", .dtype = FR_F16, .layout = FR_SBH, .B = 2, .N1 = 6, .N2 = 3, .S1 = 4, .S2 = 7,
     .D = 10, .Dv = 6},
    {.name = "fwd_tnd_bf16", .dtype = FR_BF16, .layout = FR_TND, .B = 3, .N1 = 4, .N2 = 2, .seq_q = {3, 5, 1},
     .seq_kv = {4, 5, 6}, .D = 16},
    {.name = "fwd_bnsd_bf16_odd", .dtype = FR_BF16, .B = 1, .N1 = 2, .S1 = 17, .S2 = 13, .D = 59, .Dv = 33},
    {.name = "fwd_tnd_fp16_empty_seq", .dtype = FR_F16, .layout = FR_TND, .B = 3, .N1 = 2, .seq_q = {2, 0, 3},
     .seq_kv = {3, 0, 4}, .D = 8},
    {.name = "fwd_tnd_fp32_softmax_tnd", .layout = FR_TND, .B = 2, .N1 = 3, .N2 = 1, .seq_q = {4, 2},
     .seq_kv = {3, 5}, .D = 8, .softmax_layout = FR_SOFTMAX_SAME_AS_INPUT},
    {.name = "fwd_bsnd_bf16_scale", .dtype = FR_BF16, .layout = FR_BSND, .B = 1, .N1 = 2, .S1 = 9, .S2 = 9, .D = 24,
     .scale = 0.3},
    /* fp8 with per-block dequant scales (more than one block in both S1 and S2) */
    {.name = "fwd_e4m3fn_bnsd", .dtype = FR_E4M3FN, .B = 1, .N1 = 2, .N2 = 1, .S1 = 130, .S2 = 260, .D = 16,
     .out_dtype = FR_F16},
    {.name = "fwd_e5m2_bsnd", .dtype = FR_E5M2, .layout = FR_BSND, .B = 1, .N1 = 1, .S1 = 129, .S2 = 257, .D = 8,
     .out_dtype = FR_BF16},
    {.name = "fwd_hif8_bsh", .dtype = FR_HIF8, .layout = FR_BSH, .B = 2, .N1 = 2, .S1 = 131, .S2 = 140, .D = 8,
     .out_dtype = FR_F16},
    /* sparse modes */
    {.name = "m0_band_ss", .B = 1, .N1 = 2, .S1 = 12, .S2 = 12, .D = 8, .mask = FR_GEN_MASK_SS, BAND(3, 1)},
    {.name = "m0_b1ss_negnext", .B = 2, .N1 = 2, .S1 = 10, .S2 = 12, .D = 8, .mask = FR_GEN_MASK_B1SS, BAND(4, -2)},
    {.name = "m0_bnss_bf16", .dtype = FR_BF16, .layout = FR_BSND, .B = 2, .N1 = 2, .S1 = 6, .S2 = 7, .D = 8,
     .mask = FR_GEN_MASK_BNSS},
    {.name = "m1_11ss_fp16", .dtype = FR_F16, .layout = FR_BSH, .B = 2, .N1 = 2, .S1 = 7, .S2 = 5, .D = 8,
     .sparse_mode = FR_SPARSE_ALL_MASK, .mask = FR_GEN_MASK_11SS, BAND(0, 0)},
    {.name = "m2_causal", .B = 1, .N1 = 2, .S1 = 9, .S2 = 12, .D = 8, .sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL,
     .mask = CANON},
    {.name = "m3_s1_gt_s2_d1rows", .dtype = FR_BF16, .B = 1, .N1 = 2, .S1 = 12, .S2 = 7, .D = 8,
     .sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, .mask = CANON},
    {.name = "m3_s1_lt_s2", .layout = FR_BSND, .B = 2, .N1 = 2, .S1 = 5, .S2 = 13, .D = 8,
     .sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, .mask = CANON},
    {.name = "m4_band", .B = 1, .N1 = 2, .S1 = 10, .S2 = 14, .D = 8, .sparse_mode = FR_SPARSE_BAND, .mask = CANON,
     BAND(3, 2)},
    {.name = "m4_band_s1_gt", .dtype = FR_F16, .B = 1, .N1 = 1, .S1 = 14, .S2 = 10, .D = 8,
     .sparse_mode = FR_SPARSE_BAND, .mask = CANON, BAND(6, 1)},
    {.name = "m5_prefix_bnss", .B = 2, .N1 = 2, .S1 = 8, .S2 = 12, .D = 8, .sparse_mode = FR_SPARSE_PREFIX,
     .mask = FR_GEN_MASK_BNSS, .prefix = true},
    {.name = "m5_prefix_b1ss", .B = 2, .N1 = 2, .S1 = 12, .S2 = 8, .D = 8, .sparse_mode = FR_SPARSE_PREFIX,
     .mask = FR_GEN_MASK_B1SS, .prefix = true},
    {.name = "m6_prefix", .dtype = FR_BF16, .layout = FR_BSND, .B = 2, .N1 = 2, .S1 = 10, .S2 = 14, .D = 8,
     .sparse_mode = FR_SPARSE_PREFIX_COMPRESS, .mask = CANON, .prefix = true},
    {.name = "m6_prefix_s1_gt", .B = 3, .N1 = 1, .S1 = 14, .S2 = 10, .D = 8, .sparse_mode = FR_SPARSE_PREFIX_COMPRESS,
     .mask = CANON, .prefix = true},
    {.name = "m7_tnd", .layout = FR_TND, .B = 3, .N1 = 2, .seq_q = {4, 6, 5}, .seq_kv = {6, 6, 8}, .D = 8,
     .sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND, .mask = CANON, BAND(8, -2)},
    {.name = "m8_tnd", .dtype = FR_BF16, .layout = FR_TND, .B = 3, .N1 = 2, .seq_q = {5, 4, 3},
     .seq_kv = {7, 4, 6}, .D = 8, .sparse_mode = FR_SPARSE_BAND_LEFT_UP_CAUSAL, .mask = CANON, BAND(9, 1)},
    {.name = "m0_tnd_band", .layout = FR_TND, .B = 2, .N1 = 2, .seq_q = {5, 7}, .seq_kv = {6, 7}, .D = 8,
     .mask = FR_GEN_MASK_SS, BAND(2, 2)},
    {.name = "m1_tnd", .dtype = FR_F16, .layout = FR_TND, .B = 2, .N1 = 2, .seq_q = {4, 3}, .seq_kv = {4, 6}, .D = 8,
     .sparse_mode = FR_SPARSE_ALL_MASK, .mask = FR_GEN_MASK_SS},
    {.name = "m3_tnd", .layout = FR_TND, .B = 2, .N1 = 2, .N2 = 1, .seq_q = {3, 5}, .seq_kv = {5, 5}, .D = 8,
     .sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, .mask = CANON},
    /* pse */
    {.name = "pse0_bnss", .B = 2, .N1 = 2, .S1 = 8, .S2 = 10, .D = 8, .pse_type = FR_PSE_OUTER_MUL_ADD,
     .pse = FR_GEN_PSE_BNSS},
    {.name = "pse1_bn1s_bf16", .dtype = FR_BF16, .layout = FR_BSND, .B = 2, .N1 = 2, .S1 = 6, .S2 = 9, .D = 8,
     .pse_type = FR_PSE_OUTER_ADD_MUL, .pse = FR_GEN_PSE_BN1S},
    {.name = "pse1_1nss_fp16_causal", .dtype = FR_F16, .layout = FR_BSH, .B = 2, .N1 = 2, .S1 = 7, .S2 = 7, .D = 8,
     .pse_type = FR_PSE_OUTER_ADD_MUL, .pse = FR_GEN_PSE_1NSS, .sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL, .mask = CANON},
    {.name = "pse0_compressed_s1030", .B = 1, .N1 = 1, .S1 = 1030, .S2 = 1030, .D = 4, .pse_type = FR_PSE_OUTER_MUL_ADD,
     .pse = FR_GEN_PSE_COMP_B, .sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, .mask = CANON},
    {.name = "pse1_compressed_tnd", .layout = FR_TND, .B = 2, .N1 = 2, .seq_q = {5, 7}, .seq_kv = {5, 7}, .D = 8,
     .pse_type = FR_PSE_OUTER_ADD_MUL, .pse = FR_GEN_PSE_COMP_1, .sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL,
     .mask = CANON},
    {.name = "pse2_slopes_bn", .B = 2, .N1 = 3, .S1 = 9, .S2 = 9, .D = 8, .pse_type = FR_PSE_INNER_MUL_ADD,
     .pse = FR_GEN_PSE_SLOPES_BN},
    {.name = "pse3_slopes_n_start", .dtype = FR_BF16, .layout = FR_BSND, .B = 1, .N1 = 4, .S1 = 10, .S2 = 10, .D = 8,
     .pse_type = FR_PSE_INNER_MUL_ADD_SQRT, .pse = FR_GEN_PSE_SLOPES_N, .q_start_idx = 2, .kv_start_idx = 1},
    /* equal start indices: they cancel in |j + kv_start - i - q_start| whichever batches they apply to (D15) */
    {.name = "pse2_tnd_m8", .layout = FR_TND, .B = 2, .N1 = 2, .seq_q = {4, 6}, .seq_kv = {4, 6}, .D = 8,
     .pse_type = FR_PSE_INNER_MUL_ADD, .pse = FR_GEN_PSE_SLOPES_N, .q_start_idx = 3, .kv_start_idx = 3,
     .sparse_mode = FR_SPARSE_BAND_LEFT_UP_CAUSAL, .mask = CANON, BAND(4, 0)},
    {.name = "pse3_bn_causal_fp16", .dtype = FR_F16, .B = 2, .N1 = 2, .S1 = 8, .S2 = 8, .D = 8,
     .pse_type = FR_PSE_INNER_MUL_ADD_SQRT, .pse = FR_GEN_PSE_SLOPES_BN, .sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL,
     .mask = CANON},
    /* dropout, sink, top-k, rope */
    {.name = "drop_bnsd_fp32", .B = 2, .N1 = 2, .S1 = 7, .S2 = 9, .D = 8, .keep_prob = 0.8},
    {.name = "drop_tnd_bf16_causal", .dtype = FR_BF16, .layout = FR_TND, .B = 2, .N1 = 2, .seq_q = {3, 6},
     .seq_kv = {5, 6}, .D = 8, .keep_prob = 0.5, .sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, .mask = CANON},
    {.name = "sink_bsnd_bf16", .dtype = FR_BF16, .layout = FR_BSND, .B = 2, .N1 = 2, .S1 = 5, .S2 = 8, .D = 8,
     .sink = true},
    {.name = "sink_m3_d1rows_fp16", .dtype = FR_F16, .B = 1, .N1 = 2, .S1 = 10, .S2 = 6, .D = 8, .sink = true,
     .sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, .mask = CANON},
    {.name = "topk_bsnd_bf16", .dtype = FR_BF16, .layout = FR_BSND, .B = 2, .N1 = 2, .S1 = 6, .S2 = 9, .D = 8,
     .topk_w = 6},
    {.name = "topk_tnd_per_kv_fp32", .layout = FR_TND, .B = 2, .N1 = 4, .N2 = 2, .seq_q = {4, 5}, .seq_kv = {6, 5},
     .D = 8, .topk_w = 5, .topk_per_kv_head = true},
    {.name = "topk_bnsd_per_kv_causal", .B = 1, .N1 = 2, .N2 = 2, .S1 = 7, .S2 = 7, .D = 8, .topk_w = 4,
     .topk_per_kv_head = true, .sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL, .mask = CANON},
    {.name = "rope_tnd_bf16", .dtype = FR_BF16, .layout = FR_TND, .B = 2, .N1 = 2, .N2 = 1, .seq_q = {3, 4},
     .seq_kv = {5, 4}, .D = 128, .Drope = 64},
    /* peaked and large inputs */
    {.name = "peaked_beta025_fp32", .B = 1, .N1 = 2, .S1 = 16, .S2 = 16, .D = 32, .beta = 0.25},
    {.name = "peaked_beta04_bf16", .dtype = FR_BF16, .layout = FR_BSND, .B = 1, .N1 = 2, .S1 = 12, .S2 = 16, .D = 32,
     .beta = 0.4},
    {.name = "large_scores_fp32", .B = 1, .N1 = 2, .S1 = 6, .S2 = 8, .D = 16, .in_scale = 20.0},
    /* combinations and band edge cases */
    {.name = "m0_negpre", .B = 1, .N1 = 2, .S1 = 9, .S2 = 12, .D = 8, .mask = FR_GEN_MASK_SS, BAND(-1, 4)},
    {.name = "m4_negnext", .dtype = FR_BF16, .B = 2, .N1 = 2, .S1 = 8, .S2 = 10, .D = 8, .sparse_mode = FR_SPARSE_BAND,
     .mask = CANON, BAND(5, -1)},
    {.name = "pse1_compressed_1nss_s1100", .dtype = FR_BF16, .B = 2, .N1 = 2, .S1 = 1100, .S2 = 1100, .D = 4,
     .pse_type = FR_PSE_OUTER_ADD_MUL, .pse = FR_GEN_PSE_COMP_1, .sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL,
     .mask = CANON},
    {.name = "drop_sink_topk_pse0", .dtype = FR_F16, .layout = FR_BSND, .B = 2, .N1 = 4, .N2 = 2, .S1 = 6, .S2 = 9,
     .D = 8, .keep_prob = 0.75, .sink = true, .topk_w = 5, .pse_type = FR_PSE_OUTER_MUL_ADD, .pse = FR_GEN_PSE_BNSS},
    {.name = "fwd_e4m3fn_tnd", .dtype = FR_E4M3FN, .layout = FR_TND, .B = 2, .N1 = 2, .seq_q = {130, 20},
     .seq_kv = {40, 270}, .D = 16, .out_dtype = FR_BF16},
    {.name = "fwd_bnsd_fp32_d1", .B = 2, .N1 = 1, .S1 = 3, .S2 = 5, .D = 1},
    /* backward */
    {.name = "bwd_bnsd_fp32_gqa_causal", .bwd = true, .B = 2, .N1 = 4, .N2 = 2, .S1 = 7, .S2 = 9, .D = 8,
     .sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, .mask = CANON},
    {.name = "bwd_bsh_bf16", .bwd = true, .dtype = FR_BF16, .layout = FR_BSH, .B = 2, .N1 = 2, .N2 = 1, .S1 = 6,
     .S2 = 5, .D = 8, .Dv = 4},
    {.name = "bwd_tnd_fp16_drop", .bwd = true, .dtype = FR_F16, .layout = FR_TND, .B = 3, .N1 = 2, .seq_q = {3, 0, 5},
     .seq_kv = {4, 0, 6}, .D = 8, .keep_prob = 0.7, .sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, .mask = CANON},
    {.name = "bwd_sbh_fp32_pse1", .bwd = true, .layout = FR_SBH, .B = 2, .N1 = 2, .S1 = 5, .S2 = 6, .D = 8,
     .pse_type = FR_PSE_OUTER_ADD_MUL, .pse = FR_GEN_PSE_BNSS},
    {.name = "bwd_bsnd_bf16_sink", .bwd = true, .dtype = FR_BF16, .layout = FR_BSND, .B = 2, .N1 = 2, .S1 = 6,
     .S2 = 4, .D = 8, .sink = true, .sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, .mask = CANON},
    {.name = "bwd_rope_tnd_bf16", .bwd = true, .dtype = FR_BF16, .layout = FR_TND, .B = 2, .N1 = 2, .N2 = 1,
     .seq_q = {3, 2}, .seq_kv = {4, 2}, .D = 128, .Drope = 64},
    {.name = "bwd_topk_fp32", .bwd = true, .B = 1, .N1 = 2, .N2 = 1, .S1 = 6, .S2 = 8, .D = 8, .topk_w = 5},
    {.name = "bwd_m4_fp16", .bwd = true, .dtype = FR_F16, .B = 1, .N1 = 2, .S1 = 9, .S2 = 11, .D = 8,
     .sparse_mode = FR_SPARSE_BAND, .mask = CANON, BAND(2, 1)},
    {.name = "bwd_pse2_fp32", .bwd = true, .B = 1, .N1 = 2, .S1 = 8, .S2 = 8, .D = 8, .pse_type = FR_PSE_INNER_MUL_ADD,
     .pse = FR_GEN_PSE_SLOPES_N},
    {.name = "bwd_m6_prefix_fp32", .bwd = true, .B = 2, .N1 = 2, .S1 = 6, .S2 = 8, .D = 8,
     .sparse_mode = FR_SPARSE_PREFIX_COMPRESS, .mask = CANON, .prefix = true},
    {.name = "bwd_tnd_topk_per_kv", .bwd = true, .layout = FR_TND, .B = 2, .N1 = 4, .N2 = 2, .seq_q = {4, 5},
     .seq_kv = {6, 5}, .D = 8, .topk_w = 5, .topk_per_kv_head = true},
    {.name = "bwd_m7_tnd", .bwd = true, .layout = FR_TND, .B = 3, .N1 = 2, .seq_q = {4, 6, 5}, .seq_kv = {6, 6, 8},
     .D = 8, .sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND, .mask = CANON, BAND(8, -2)},
    {.name = "bwd_m8_tnd_pse2", .bwd = true, .dtype = FR_BF16, .layout = FR_TND, .B = 2, .N1 = 2, .seq_q = {4, 6},
     .seq_kv = {4, 6}, .D = 8, .pse_type = FR_PSE_INNER_MUL_ADD, .pse = FR_GEN_PSE_SLOPES_BN,
     .sparse_mode = FR_SPARSE_BAND_LEFT_UP_CAUSAL, .mask = CANON, BAND(4, 0)},
    {.name = "bwd_m5_prefix", .bwd = true, .layout = FR_BSND, .B = 2, .N1 = 2, .S1 = 7, .S2 = 9, .D = 8,
     .sparse_mode = FR_SPARSE_PREFIX, .mask = FR_GEN_MASK_B1SS, .prefix = true},
    {.name = "bwd_tnd_softmax_tnd_comp_pse", .bwd = true, .layout = FR_TND, .B = 2, .N1 = 2, .seq_q = {5, 3},
     .seq_kv = {5, 3}, .D = 8, .softmax_layout = FR_SOFTMAX_SAME_AS_INPUT, .pse_type = FR_PSE_OUTER_MUL_ADD,
     .pse = FR_GEN_PSE_COMP_B, .sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, .mask = CANON},
    {.name = "bwd_peaked_drop_sink_fp32", .bwd = true, .B = 1, .N1 = 2, .S1 = 10, .S2 = 10, .D = 16, .beta = 0.4,
     .keep_prob = 0.6, .sink = true},
    {.name = "bwd_m0_bnss_band_pse0", .bwd = true, .layout = FR_BSND, .B = 1, .N1 = 2, .S1 = 8, .S2 = 8, .D = 8,
     .mask = FR_GEN_MASK_BNSS, BAND(2, 2), .pse_type = FR_PSE_OUTER_MUL_ADD, .pse = FR_GEN_PSE_BN1S},
};

static const fr_gen_set kSets[] = {
    {"smoke", "a few small cases (forward and backward)", kSmoke, (int)(sizeof kSmoke / sizeof kSmoke[0])},
    {"xcheck", "cross-check grid: every layout, dtype, sparse mode, pse type; dropout, sink, top-k, rope, bwd",
     kXcheck, (int)(sizeof kXcheck / sizeof kXcheck[0])},
};

/* Alike mutants.c:fr_mutants / fr_mutant_find: kept apart because the tables hold different element types; C has no
 * generic table lookup short of a macro. */
const fr_gen_set *fr_gen_sets(int *count) {
    if (count) *count = (int)(sizeof kSets / sizeof kSets[0]);
    return kSets;
}

const fr_gen_set *fr_gen_set_find(const char *name) {
    if (!name) return NULL;
    for (size_t k = 0; k < sizeof kSets / sizeof kSets[0]; k++)
        if (strcmp(kSets[k].name, name) == 0) return &kSets[k];
    return NULL;
}
