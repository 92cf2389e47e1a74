/* Validation of (params, inputs, outputs) against every constraint of the spec (sections 1.2-1.4, 2, 3.6, 3.7, 4, 5,
 * 6, 7, 8.1, 11 and decisions D1-D9), resolving the problem's dimensions into an fr_problem.
 * Each violated rule returns its own fr_status and a message that starts with the offending parameter's name and
 * states its value. The rule table is docs/validation.md. Nothing here reads tensor data: only shapes, dtypes,
 * strides, and the host arrays of fr_params (prefix, actual_seq_qlen/kvlen). */
#include "core/validate.h"

#include "core/core.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define LL(x) ((long long)(x))

/* Band values beyond this are equivalent to "no bound" for any S <= 1M; clamping keeps the arithmetic exact. */
#define BAND_CLAMP (INT64_C(1) << 40)

static const char *layout_str(fr_layout l) { return fr_layout_name(l); }
static const char *dt_str(fr_dtype t) { return fr_dtype_name(t); }

/* FR_OK when t's dtype is want, else status and "NAME: dtype X differs from REF dtype Y". */
static fr_status same_dtype(const fr_tensor *t, const char *name, fr_dtype want, const char *ref, fr_status status,
                            fr_error *err) {
    if (t->dtype == want) return FR_OK;
    return fr_fail(err, status, "%s: dtype %s differs from %s dtype %s", name, dt_str(t->dtype), ref, dt_str(want));
}

/* "[2,3,4]" */
static const char *shape_str(const fr_tensor *t, char *buf, size_t n) {
    size_t k = 0;
    buf[0] = '\0';
    k += (size_t)snprintf(buf + k, n - k, "[");
    int nd = t->ndim < 0 ? 0 : (t->ndim > FR_MAX_DIMS ? FR_MAX_DIMS : t->ndim);
    for (int d = 0; d < nd && k < n; d++) k += (size_t)snprintf(buf + k, n - k, d ? ",%lld" : "%lld", LL(t->shape[d]));
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}

static bool shape_eq(const fr_tensor *t, int nd, const int64_t *s) {
    if (t->ndim != nd) return false;
    for (int d = 0; d < nd; d++)
        if (t->shape[d] != s[d]) return false;
    return true;
}
static bool shape_eq2(const fr_tensor *t, int64_t a, int64_t b) { return shape_eq(t, 2, (const int64_t[]){a, b}); }
static bool shape_eq4(const fr_tensor *t, int64_t a, int64_t b, int64_t c, int64_t d) {
    return shape_eq(t, 4, (const int64_t[]){a, b, c, d});
}

/* Generic checks of one present tensor view: rank in 0..FR_MAX_DIMS, no negative dim, element count, byte size and
 * addressed span (sum of (shape-1)*|stride|) fit int64, data non-NULL when there is an element. */
static fr_status check_view(const fr_tensor *t, const char *name, fr_error *err) {
    if (t->ndim < 0 || t->ndim > FR_MAX_DIMS)
        return fr_fail(err, FR_E_RANK, "%s: ndim = %d is outside 0..%d", name, t->ndim, FR_MAX_DIMS);
    bool empty = false;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] < 0)
            return fr_fail(err, FR_E_SHAPE, "%s: shape[%d] = %lld is negative", name, d, LL(t->shape[d]));
        if (t->shape[d] == 0) empty = true;
    }
    if (empty) return FR_OK; /* D8: no element, nothing is read; data may be NULL */
    int64_t numel = 1, span = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (!fr_mul_ok(numel, t->shape[d], &numel))
            return fr_fail(err, FR_E_OVERFLOW, "%s: element count of shape overflows int64 (dim %d = %lld)", name, d,
                           LL(t->shape[d]));
        int64_t st = t->strides[d], ext;
        if (st == INT64_MIN || !fr_mul_ok(t->shape[d] - 1, st < 0 ? -st : st, &ext) || !fr_add_ok(span, ext, &span))
            return fr_fail(err, FR_E_OVERFLOW, "%s: strides[%d] = %lld with shape[%d] = %lld overflows int64 offsets",
                           name, d, LL(st), d, LL(t->shape[d]));
    }
    int64_t bytes, sz = (int64_t)fr_dtype_size(t->dtype), span_bytes;
    if (!fr_mul_ok(numel, sz, &bytes) || !fr_add_ok(span, 1, &span_bytes) || !fr_mul_ok(span_bytes, sz, &span_bytes))
        return fr_fail(err, FR_E_OVERFLOW, "%s: size in bytes (%lld elements of %s) overflows int64", name, LL(numel),
                       dt_str(t->dtype));
    if (!t->data)
        return fr_fail(err, FR_E_NULL, "%s: data is NULL but the tensor has %lld elements", name, LL(numel));
    return FR_OK;
}

/* Layout dims of a q/k/v-like tensor. BSH/SBH give H (N, D = -1); BSND/BNSD give N, D; TND gives S = T, N, D. */
typedef struct {
    int64_t B, S, N, D, H;
} lay_dims;

static lay_dims dims_of(const fr_tensor *t, fr_layout l) {
    lay_dims d = {-1, -1, -1, -1, -1};
    const int64_t *s = t->shape;
    switch (l) {
    case FR_BSH: d.B = s[0], d.S = s[1], d.H = s[2]; break;
    case FR_SBH: d.S = s[0], d.B = s[1], d.H = s[2]; break;
    case FR_BSND: d.B = s[0], d.S = s[1], d.N = s[2], d.D = s[3]; break;
    case FR_BNSD: d.B = s[0], d.N = s[1], d.S = s[2], d.D = s[3]; break;
    case FR_TND: d.S = s[0], d.N = s[1], d.D = s[2]; break;
    default: break;
    }
    return d;
}

/* The shape a q-like (rows S1/T1) or kv-like (rows S2/T2) tensor with N heads of dim D has in pb's layout.
 * tests/golden spells it out again (gt_shape) on purpose: a test does not reuse the code it checks. */
/* Alike tests/golden/gt_case.c:gt_shape: kept apart for the reason above. */
static int layout_shape(const fr_problem *pb, bool kv, int64_t N, int64_t D, int64_t *s) {
    int64_t S = kv ? pb->S2 : pb->S1, T = kv ? pb->T2 : pb->T1;
    switch (pb->layout) {
    case FR_BSH: s[0] = pb->B, s[1] = S, s[2] = N * D; return 3;
    case FR_SBH: s[0] = S, s[1] = pb->B, s[2] = N * D; return 3;
    case FR_BSND: s[0] = pb->B, s[1] = S, s[2] = N, s[3] = D; return 4;
    case FR_BNSD: s[0] = pb->B, s[1] = N, s[2] = S, s[3] = D; return 4;
    case FR_TND: s[0] = T, s[1] = N, s[2] = D; return 3;
    default: return 0;
    }
}

/* softmax_max/sum: [B,N1,S1,8]; TND [N1,T1,8] or [T1,N1,8] (same_as_input). */
static int softmax_shape(const fr_problem *pb, fr_softmax_layout sl, int64_t *s) {
    if (pb->layout == FR_TND) {
        if (sl == FR_SOFTMAX_SAME_AS_INPUT) s[0] = pb->T1, s[1] = pb->N1;
        else s[0] = pb->N1, s[1] = pb->T1;
        s[2] = 8;
        return 3;
    }
    s[0] = pb->B, s[1] = pb->N1, s[2] = pb->S1, s[3] = 8;
    return 4;
}

static const char *expect_str(int nd, const int64_t *s, char *buf, size_t n) {
    fr_tensor t;
    memset(&t, 0, sizeof t);
    t.ndim = nd;
    for (int d = 0; d < nd; d++) t.shape[d] = s[d];
    return shape_str(&t, buf, n);
}

/* Per-batch lengths (TND: from the cumulative arrays; else S1, S2). */
static void batch_lens(const fr_problem *pb, int64_t b, int64_t *s1, int64_t *s2) {
    int64_t st;
    fr_problem_q_rows(pb, b, &st, s1);
    fr_problem_kv_rows(pb, b, &st, s2);
}

static int64_t clamp_band(int64_t v) { return v > BAND_CLAMP ? BAND_CLAMP : (v < -BAND_CLAMP ? -BAND_CLAMP : v); }

/* Spec 4.1 band rules with a top-left origin: kept iff -pre <= j - i <= next. `what` names the origin of the values
 * in messages (e.g. "sparse_mode 4 batch 0, top-left ..."). The rules that involve S1 or S2 apply only when both are
 * nonzero: with an empty dimension nothing is computed (D8). */
static fr_status band_rules(int64_t pre, int64_t next, int64_t S1, int64_t S2, const char *what, fr_error *err) {
    if (pre < 0 && next < 0)
        return fr_fail(err, FR_E_BAND, "pre_tokens = %lld and next_tokens = %lld are both negative (%s)", LL(pre),
                       LL(next), what);
    if (next < 0 && pre < -next)
        return fr_fail(err, FR_E_BAND, "pre_tokens = %lld must be >= |next_tokens| = %lld when next_tokens < 0 (%s)",
                       LL(pre), LL(-next), what);
    if (pre < 0 && next < -pre)
        return fr_fail(err, FR_E_BAND, "next_tokens = %lld must be >= |pre_tokens| = %lld when pre_tokens < 0 (%s)",
                       LL(next), LL(-pre), what);
    if (S1 == 0 || S2 == 0) return FR_OK;
    if (next < 0 && next <= -S2)
        return fr_fail(err, FR_E_BAND, "next_tokens = %lld < 0 requires |next_tokens| < S2 = %lld (%s)", LL(next),
                       LL(S2), what);
    if (pre < 0 && pre <= -S1)
        return fr_fail(err, FR_E_BAND, "pre_tokens = %lld < 0 requires |pre_tokens| < S1 = %lld (%s)", LL(pre), LL(S1),
                       what);
    /* j - i spans [-(S1-1), S2-1]; the band [-pre, next] must meet it */
    int64_t lo = -pre > -(S1 - 1) ? -pre : -(S1 - 1), hi = next < S2 - 1 ? next : S2 - 1;
    if (lo > hi)
        return fr_fail(err, FR_E_BAND,
                       "pre_tokens = %lld, next_tokens = %lld: the band does not overlap the S1 x S2 = %lld x %lld "
                       "scores (%s)",
                       LL(pre), LL(next), LL(S1), LL(S2), what);
    return FR_OK;
}

/* ----------------------------------------------------------------------------------------------------------------- */
/* Attributes that need no tensor. */

static fr_status check_attributes(const fr_params *p, fr_error *err) {
    if (!fr_layout_is_valid(p->input_layout))
        return fr_fail(err, FR_E_LAYOUT, "input_layout: %d is not one of BSH, SBH, BSND, BNSD, TND",
                       (int)p->input_layout);
    if (p->head_num < 0) return fr_fail(err, FR_E_HEADS, "head_num: %lld is negative", LL(p->head_num));
    if (!isfinite(p->scale_value)) return fr_fail(err, FR_E_SCALE, "scale_value: %g is not finite", p->scale_value);
    if (!fr_keep_prob_is_valid(p->keep_prob))
        return fr_fail(err, FR_E_KEEP_PROB, "keep_prob: %g is outside (0, 1]", p->keep_prob);
    if (!fr_pse_type_is_valid(p->pse_type))
        return fr_fail(err, FR_E_PSE, "pse_type: %d is outside 0..3", p->pse_type);
    if (!fr_sparse_mode_is_valid(p->sparse_mode))
        return fr_fail(err, FR_E_SPARSE_MODE, "sparse_mode: %d is outside 0..8", p->sparse_mode);
    if (p->inner_precise < 0 || p->inner_precise > 2)
        return fr_fail(err, FR_E_INVALID_ARG, "inner_precise: %d is outside 0..2", p->inner_precise);
    if (p->softmax_layout != FR_SOFTMAX_DEFAULT && p->softmax_layout != FR_SOFTMAX_SAME_AS_INPUT)
        return fr_fail(err, FR_E_INVALID_ARG, "softmax_layout: %d is neither default (0) nor same_as_input (1)",
                       (int)p->softmax_layout);
    if (p->softmax_layout == FR_SOFTMAX_SAME_AS_INPUT && p->input_layout != FR_TND)
        return fr_fail(err, FR_E_LAYOUT, "softmax_layout: same_as_input requires input_layout TND (got %s)",
                       layout_str(p->input_layout));
    if (p->q_start_idx < -FR_TOKENS_MAX - 1 || p->q_start_idx > FR_TOKENS_MAX)
        return fr_fail(err, FR_E_PSE, "q_start_idx: %lld is outside the int32 range", LL(p->q_start_idx));
    if (p->kv_start_idx < -FR_TOKENS_MAX - 1 || p->kv_start_idx > FR_TOKENS_MAX)
        return fr_fail(err, FR_E_PSE, "kv_start_idx: %lld is outside the int32 range", LL(p->kv_start_idx));
    if (p->prefix_len < 0) return fr_fail(err, FR_E_PREFIX, "prefix_len: %lld is negative", LL(p->prefix_len));
    if (p->actual_seq_len < 0)
        return fr_fail(err, FR_E_SEQLEN, "actual_seq_len: %lld is negative", LL(p->actual_seq_len));
    if (p->input_layout != FR_TND) {
        if (p->actual_seq_qlen)
            return fr_fail(err, FR_E_LAYOUT, "actual_seq_qlen: given with input_layout %s (TND only)",
                           layout_str(p->input_layout));
        if (p->actual_seq_kvlen)
            return fr_fail(err, FR_E_LAYOUT, "actual_seq_kvlen: given with input_layout %s (TND only)",
                           layout_str(p->input_layout));
        if (p->actual_seq_len != 0)
            return fr_fail(err, FR_E_LAYOUT, "actual_seq_len: %lld given with input_layout %s (TND only)",
                           LL(p->actual_seq_len), layout_str(p->input_layout));
    }
    return FR_OK;
}

/* ----------------------------------------------------------------------------------------------------------------- */
/* query / key / value: dtypes, ranks, dims, heads, head dims, TND sequence offsets, ranges. */

/* check_qkv, stage 1: query, key and value are present, of one input dtype; the output dtype follows from it. */
static fr_status qkv_dtypes(const fr_params *p, const fr_fwd_inputs *in, fr_problem *pb, fr_error *err) {
    const fr_tensor *q = &in->query, *k = &in->key, *v = &in->value;
    if (!fr_tensor_present(q)) return fr_fail(err, FR_E_NULL, "query: required tensor is absent (dtype none)");
    if (!fr_tensor_present(k)) return fr_fail(err, FR_E_NULL, "key: required tensor is absent (dtype none)");
    if (!fr_tensor_present(v)) return fr_fail(err, FR_E_NULL, "value: required tensor is absent (dtype none)");
    if (!fr_input_dtype_is_valid(q->dtype))
        return fr_fail(err, FR_E_DTYPE, "query: dtype %s is not one of fp32, fp16, bf16, e4m3fn, e5m2, hif8",
                       dt_str(q->dtype));
    fr_status st = same_dtype(k, "key", q->dtype, "query", FR_E_DTYPE, err);
    if (st == FR_OK) st = same_dtype(v, "value", q->dtype, "query", FR_E_DTYPE, err);
    if (st != FR_OK) return st;
    pb->dtype = q->dtype;
    pb->fp8 = fr_dtype_is_fp8(q->dtype);

    /* out_dtype: fp8 only (fp16 default, or bf16); other inputs: unset or the input dtype itself */
    if (pb->fp8) {
        if (p->out_dtype == FR_DT_NONE) pb->out_dtype = FR_F16;
        else if (p->out_dtype == FR_F16 || p->out_dtype == FR_BF16) pb->out_dtype = p->out_dtype;
        else
            return fr_fail(err, FR_E_DTYPE, "out_dtype: %s is not allowed for %s inputs (fp16 or bf16)",
                           dt_str(p->out_dtype), dt_str(q->dtype));
    } else {
        if (p->out_dtype != FR_DT_NONE && p->out_dtype != q->dtype)
            return fr_fail(err, FR_E_DTYPE, "out_dtype: %s is only for fp8/hif8 inputs (query dtype is %s)",
                           dt_str(p->out_dtype), dt_str(q->dtype));
        pb->out_dtype = q->dtype;
    }
    return FR_OK;
}

/* check_qkv, stage 2: each of query, key, value has the layout's rank and a valid view. */
static fr_status qkv_views(const fr_params *p, const fr_fwd_inputs *in, fr_error *err) {
    const fr_tensor *q = &in->query, *k = &in->key, *v = &in->value;
    const fr_layout l = p->input_layout;
    const int rank = fr_layout_rank(l);
    const struct {
        const fr_tensor *t;
        const char *name;
    } qkv[3] = {{q, "query"}, {k, "key"}, {v, "value"}};
    for (int i = 0; i < 3; i++)
        if (qkv[i].t->ndim != rank)
            return fr_fail(err, FR_E_RANK, "%s: rank %d, but input_layout %s needs rank %d", qkv[i].name,
                           qkv[i].t->ndim, layout_str(l), rank);
    for (int i = 0; i < 3; i++) {
        fr_status st = check_view(qkv[i].t, qkv[i].name, err);
        if (st != FR_OK) return st;
    }
    return FR_OK;
}

/* check_qkv, stage 3: batch and length agreement, heads N1 / N2 (GQA) and head dims Dk >= Dv from the shapes, and
 * their ranges (D9). qd / kd / vd: the layout's dims of query / key / value. */
static fr_status qkv_heads(const fr_params *p, lay_dims qd, lay_dims kd, lay_dims vd, fr_problem *pb,
                           fr_error *err) {
    const fr_layout l = p->input_layout;
    if (l != FR_TND) {
        if (kd.B != qd.B)
            return fr_fail(err, FR_E_SHAPE, "key: B = %lld differs from query B = %lld", LL(kd.B), LL(qd.B));
        if (vd.B != qd.B)
            return fr_fail(err, FR_E_SHAPE, "value: B = %lld differs from query B = %lld", LL(vd.B), LL(qd.B));
    }
    if (vd.S != kd.S)
        return fr_fail(err, FR_E_SHAPE, "value: %s = %lld differs from key %s = %lld", l == FR_TND ? "T" : "S2",
                       LL(vd.S), l == FR_TND ? "T" : "S2", LL(kd.S));

    int64_t N1, N2, Dk, Dv;
    if (l == FR_BSH || l == FR_SBH) {
        if (p->head_num == 0)
            return fr_fail(err, FR_E_HEADS, "head_num: 0 with input_layout %s (empty heads need BSND, BNSD or TND)",
                           layout_str(l));
        if (qd.H % p->head_num != 0)
            return fr_fail(err, FR_E_HEADS, "head_num: query H = %lld is not divisible by head_num = %lld", LL(qd.H),
                           LL(p->head_num));
        N1 = p->head_num;
        Dk = qd.H / N1;
        if (Dk > 0) {
            if (kd.H % Dk != 0)
                return fr_fail(err, FR_E_HEADS, "key: H = %lld is not a multiple of D = %lld (query H / head_num)",
                               LL(kd.H), LL(Dk));
            N2 = kd.H / Dk;
        } else {
            /* D = 0 (D8): N2 cannot be read from H; take N2 = N1 and require empty key/value heads */
            if (kd.H != 0)
                return fr_fail(err, FR_E_HEAD_DIM, "key: H = %lld but query D = 0 (query H = 0)", LL(kd.H));
            N2 = N1;
        }
    } else {
        N1 = qd.N;
        if (p->head_num != N1)
            return fr_fail(err, FR_E_HEADS, "head_num: %lld differs from query N = %lld", LL(p->head_num), LL(N1));
        N2 = kd.N;
        if (vd.N != N2)
            return fr_fail(err, FR_E_SHAPE, "value: N = %lld differs from key N2 = %lld", LL(vd.N), LL(N2));
        Dk = qd.D;
        if (kd.D != Dk)
            return fr_fail(err, FR_E_HEAD_DIM, "key: D = %lld differs from query D = %lld", LL(kd.D), LL(Dk));
    }
    if (N2 == 0 && N1 != 0)
        return fr_fail(err, FR_E_HEADS, "head_num: N1 = %lld but key has N2 = 0 heads", LL(N1));
    if (N2 != 0 && N1 % N2 != 0)
        return fr_fail(err, FR_E_HEADS, "head_num: N1 = %lld is not a multiple of N2 = %lld", LL(N1), LL(N2));
    if (l == FR_BSH || l == FR_SBH) {
        if (Dk == 0) {
            if (vd.H != 0) return fr_fail(err, FR_E_HEAD_DIM, "value: H = %lld but query D = 0", LL(vd.H));
            Dv = 0;
        } else {
            if (vd.H % N2 != 0)
                return fr_fail(err, FR_E_HEAD_DIM, "value: H = %lld is not a multiple of N2 = %lld", LL(vd.H), LL(N2));
            Dv = vd.H / N2;
        }
    } else {
        Dv = vd.D;
    }
    if (Dv > Dk) return fr_fail(err, FR_E_HEAD_DIM, "value: Dv = %lld exceeds Dk = %lld", LL(Dv), LL(Dk));

    pb->layout = l;
    pb->N1 = N1;
    pb->N2 = N2;
    pb->G = N2 > 0 ? N1 / N2 : 0;
    pb->Dk = Dk;
    pb->Dv = Dv;

    /* ranges (D9) */
    if (N1 > FR_LIMIT_N1)
        return fr_fail(err, FR_E_RANGE, "head_num: N1 = %lld exceeds %lld", LL(N1), LL(FR_LIMIT_N1));
    if (Dk > FR_LIMIT_D) return fr_fail(err, FR_E_RANGE, "query: D = %lld exceeds %lld", LL(Dk), LL(FR_LIMIT_D));
    if (pb->fp8 && Dk > FR_LIMIT_D_FP8)
        return fr_fail(err, FR_E_FP8, "query: D = %lld exceeds %lld for %s inputs", LL(Dk), LL(FR_LIMIT_D_FP8),
                       dt_str(pb->dtype));
    return FR_OK;
}

/* check_qkv, stage 4 (BSH, SBH, BSND, BNSD): B, S1, S2 from the shapes, within the limits (D9). */
static fr_status qkv_lengths_dense(lay_dims qd, lay_dims kd, fr_problem *pb, fr_error *err) {
    pb->B = qd.B;
    pb->S1 = qd.S;
    pb->S2 = kd.S;
    if (pb->B > FR_LIMIT_B)
        return fr_fail(err, FR_E_RANGE, "query: B = %lld exceeds %lld", LL(pb->B), LL(FR_LIMIT_B));
    if (pb->S1 > FR_LIMIT_S)
        return fr_fail(err, FR_E_RANGE, "query: S1 = %lld exceeds %lld", LL(pb->S1), LL(FR_LIMIT_S));
    if (pb->S2 > FR_LIMIT_S)
        return fr_fail(err, FR_E_RANGE, "key: S2 = %lld exceeds %lld", LL(pb->S2), LL(FR_LIMIT_S));
    pb->T1 = pb->B * pb->S1; /* <= 2^41: no overflow after the range checks */
    pb->T2 = pb->B * pb->S2;
    pb->cu_q = pb->cu_kv = NULL;
    return FR_OK;
}

/* FR_OK when entry b (value c) of the cumulative offsets `name` is not below the previous entry prev (0 before the
 * first), else FR_E_SEQLEN naming both entries. */
static fr_status cumulative_ok(const char *name, int64_t b, int64_t c, int64_t prev, fr_error *err) {
    if (c >= prev) return FR_OK;
    if (b == 0) return fr_fail(err, FR_E_SEQLEN, "%s[0] = %lld is negative", name, LL(c));
    return fr_fail(err, FR_E_SEQLEN, "%s[%lld] = %lld < %s[%lld] = %lld (offsets must be cumulative, non-decreasing)",
                   name, LL(b), LL(c), name, LL(b - 1), LL(prev));
}

/* check_qkv, stage 4 (TND): the batches from the cumulative end offsets actual_seq_qlen / actual_seq_kvlen; S1, S2
 * are the longest batch's lengths. */
static fr_status qkv_lengths_tnd(const fr_params *p, lay_dims qd, lay_dims kd, fr_problem *pb, fr_error *err) {
    const int64_t B = p->actual_seq_len;
    if (qd.S > FR_LIMIT_T)
        return fr_fail(err, FR_E_RANGE, "query: T = %lld exceeds %lld", LL(qd.S), LL(FR_LIMIT_T));
    if (kd.S > FR_LIMIT_T) return fr_fail(err, FR_E_RANGE, "key: T = %lld exceeds %lld", LL(kd.S), LL(FR_LIMIT_T));
    if (B > FR_LIMIT_B_TND)
        return fr_fail(err, FR_E_RANGE, "actual_seq_len: B = %lld exceeds %lld (TND)", LL(B), LL(FR_LIMIT_B_TND));
    if (B > 0 && !p->actual_seq_qlen)
        return fr_fail(err, FR_E_SEQLEN, "actual_seq_qlen: NULL with input_layout TND (need %lld cumulative offsets)",
                       LL(B));
    if (B > 0 && !p->actual_seq_kvlen)
        return fr_fail(err, FR_E_SEQLEN,
                       "actual_seq_kvlen: NULL with input_layout TND (need %lld cumulative offsets)", LL(B));
    int64_t pq = 0, pk = 0, S1 = 0, S2 = 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t cq = p->actual_seq_qlen[b], ck = p->actual_seq_kvlen[b];
        fr_status st = cumulative_ok("actual_seq_qlen", b, cq, pq, err);
        if (st == FR_OK) st = cumulative_ok("actual_seq_kvlen", b, ck, pk, err);
        if (st != FR_OK) return st;
        if (cq > qd.S)
            return fr_fail(err, FR_E_SEQLEN, "actual_seq_qlen[%lld] = %lld exceeds query T = %lld", LL(b), LL(cq),
                           LL(qd.S));
        if (ck > kd.S)
            return fr_fail(err, FR_E_SEQLEN, "actual_seq_kvlen[%lld] = %lld exceeds key T = %lld", LL(b), LL(ck),
                           LL(kd.S));
        int64_t lq = cq - pq, lk = ck - pk;
        if (lq > 0 && lk == 0)
            return fr_fail(err, FR_E_SEQLEN,
                           "actual_seq_kvlen: batch %lld has S1 = %lld query rows but S2 = 0 keys (unsupported in TND)",
                           LL(b), LL(lq));
        if (lq > S1) S1 = lq;
        if (lk > S2) S2 = lk;
        pq = cq;
        pk = ck;
    }
    if (pq != qd.S)
        return fr_fail(err, FR_E_SEQLEN, "actual_seq_qlen: last offset %lld differs from query T = %lld", LL(pq),
                       LL(qd.S));
    if (pk != kd.S)
        return fr_fail(err, FR_E_SEQLEN, "actual_seq_kvlen: last offset %lld differs from key T = %lld", LL(pk),
                       LL(kd.S));
    pb->B = B;
    pb->S1 = S1;
    pb->S2 = S2;
    pb->T1 = qd.S;
    pb->T2 = kd.S;
    pb->cu_q = p->actual_seq_qlen;
    pb->cu_kv = p->actual_seq_kvlen;
    return FR_OK;
}

/* query / key / value: dtypes, views, heads and head dims, batches and lengths, in that order (the first problem
 * found is the one reported). Fills pb's dtypes, layout, B, N1, N2, G, S1, S2, T1, T2, Dk, Dv and offsets. */
static fr_status check_qkv(const fr_params *p, const fr_fwd_inputs *in, fr_problem *pb, fr_error *err) {
    fr_status st;
    if ((st = qkv_dtypes(p, in, pb, err)) != FR_OK) return st;
    if ((st = qkv_views(p, in, err)) != FR_OK) return st;
    const fr_layout l = p->input_layout;
    const lay_dims qd = dims_of(&in->query, l), kd = dims_of(&in->key, l), vd = dims_of(&in->value, l);
    if ((st = qkv_heads(p, qd, kd, vd, pb, err)) != FR_OK) return st;
    return l == FR_TND ? qkv_lengths_tnd(p, qd, kd, pb, err) : qkv_lengths_dense(qd, kd, pb, err);
}

/* ----------------------------------------------------------------------------------------------------------------- */
/* fp8 dequant scales (spec D5, 7.1). TND: blocks counted on the largest per-batch length. */

static fr_status check_dscale(const fr_fwd_inputs *in, fr_problem *pb, fr_error *err) {
    const struct {
        const fr_tensor *t;
        const char *name;
        int64_t N, S, blk;
    } ds[3] = {{&in->d_scale_q, "d_scale_q", pb->N1, pb->S1, FR_DSCALE_Q_BLOCK},
               {&in->d_scale_k, "d_scale_k", pb->N2, pb->S2, FR_DSCALE_KV_BLOCK},
               {&in->d_scale_v, "d_scale_v", pb->N2, pb->S2, FR_DSCALE_KV_BLOCK}};
    for (int i = 0; i < 3; i++) {
        const fr_tensor *t = ds[i].t;
        if (!pb->fp8) {
            if (fr_tensor_present(t))
                return fr_fail(err, FR_E_DEQUANT_SCALE, "%s: given but query dtype %s is not fp8/hif8", ds[i].name,
                               dt_str(pb->dtype));
            continue;
        }
        if (!fr_tensor_present(t))
            return fr_fail(err, FR_E_DEQUANT_SCALE, "%s: required for %s inputs", ds[i].name, dt_str(pb->dtype));
        if (t->dtype != FR_F32)
            return fr_fail(err, FR_E_DEQUANT_SCALE, "%s: dtype %s, must be fp32", ds[i].name, dt_str(t->dtype));
        int64_t nb = (ds[i].S + ds[i].blk - 1) / ds[i].blk;
        if (!shape_eq4(t, pb->B, ds[i].N, nb, 1)) {
            char a[128], b[128];
            return fr_fail(err, FR_E_DEQUANT_SCALE, "%s: shape %s, expected %s (one scale per %lld rows)", ds[i].name,
                           shape_str(t, a, sizeof a), expect_str(4, (const int64_t[]){pb->B, ds[i].N, nb, 1}, b, sizeof b),
                           LL(ds[i].blk));
        }
        fr_status st = check_view(t, ds[i].name, err);
        if (st != FR_OK) return st;
    }
    return FR_OK;
}

/* query_rope / key_rope: shapes of query / key except the last dim (Drope >= 1; any layout, flashref extension). */
static fr_status check_rope(const fr_fwd_inputs *in, fr_problem *pb, fr_error *err) {
    const fr_tensor *qr = &in->query_rope, *kr = &in->key_rope;
    bool hq = fr_tensor_present(qr), hk = fr_tensor_present(kr);
    pb->has_rope = false;
    pb->Drope = 0;
    if (!hq && !hk) return FR_OK;
    if (pb->fp8)
        return fr_fail(err, FR_E_FP8, "%s: not allowed with %s inputs", hq ? "query_rope" : "key_rope",
                       dt_str(pb->dtype));
    if (!hq) return fr_fail(err, FR_E_ROPE, "query_rope: absent while key_rope is given");
    if (!hk) return fr_fail(err, FR_E_ROPE, "key_rope: absent while query_rope is given");
    fr_status st = same_dtype(qr, "query_rope", pb->dtype, "query", FR_E_ROPE, err);
    if (st == FR_OK) st = same_dtype(kr, "key_rope", pb->dtype, "key", FR_E_ROPE, err);
    if (st != FR_OK) return st;
    int rank = fr_layout_rank(pb->layout);
    if (qr->ndim != rank)
        return fr_fail(err, FR_E_ROPE, "query_rope: rank %d, input_layout %s needs %d", qr->ndim,
                       layout_str(pb->layout), rank);
    if (kr->ndim != rank)
        return fr_fail(err, FR_E_ROPE, "key_rope: rank %d, input_layout %s needs %d", kr->ndim, layout_str(pb->layout),
                       rank);
    if ((st = check_view(qr, "query_rope", err)) != FR_OK) return st;
    if ((st = check_view(kr, "key_rope", err)) != FR_OK) return st;
    int64_t Dr;
    const int64_t last = qr->shape[rank - 1];
    if (pb->layout == FR_BSH || pb->layout == FR_SBH) {
        if (last % pb->N1 != 0)
            return fr_fail(err, FR_E_ROPE, "query_rope: H = %lld is not a multiple of N1 = %lld", LL(last), LL(pb->N1));
        Dr = last / pb->N1;
    } else {
        Dr = last;
    }
    if (Dr < 1) return fr_fail(err, FR_E_ROPE, "query_rope: Drope = %lld, must be >= 1", LL(Dr));
    if (Dr > FR_LIMIT_DROPE)
        return fr_fail(err, FR_E_ROPE, "query_rope: Drope = %lld exceeds %lld", LL(Dr), LL(FR_LIMIT_DROPE));
    int64_t es[FR_MAX_DIMS];
    char a[128], b[128];
    int nd = layout_shape(pb, false, pb->N1, Dr, es);
    if (!shape_eq(qr, nd, es))
        return fr_fail(err, FR_E_ROPE, "query_rope: shape %s, expected %s (query's shape with Drope = %lld)",
                       shape_str(qr, a, sizeof a), expect_str(nd, es, b, sizeof b), LL(Dr));
    nd = layout_shape(pb, true, pb->N2, Dr, es);
    if (!shape_eq(kr, nd, es))
        return fr_fail(err, FR_E_ROPE, "key_rope: shape %s, expected %s (key's shape with Drope = %lld)",
                       shape_str(kr, a, sizeof a), expect_str(nd, es, b, sizeof b), LL(Dr));
    pb->has_rope = true;
    pb->Drope = Dr;
    return FR_OK;
}

/* prefix for sparse modes 5/6 (spec 4.2): length B, prefix[b] in [0, S2_b] if S1_b > S2_b, else [S2_b - S1_b, S2_b]. */
static fr_status check_prefix(const fr_params *p, const fr_problem *pb, fr_error *err) {
    /* Mode 5: an absent prefix, or prefix[b] > S2, means "full compute" (spec 4.2): only the user mask applies. */
    const bool optional = p->sparse_mode == 5;
    if (optional && (!p->prefix || p->prefix_len == 0)) return FR_OK;
    if (pb->B > 0 && (!p->prefix || p->prefix_len == 0))
        return fr_fail(err, FR_E_PREFIX, "prefix: required with sparse_mode %d (length B = %lld)", p->sparse_mode,
                       LL(pb->B));
    if (p->prefix_len != pb->B)
        return fr_fail(err, FR_E_PREFIX, "prefix: length %lld differs from B = %lld", LL(p->prefix_len), LL(pb->B));
    const int64_t lim = pb->layout == FR_TND ? FR_LIMIT_B_PREFIX_TND : FR_LIMIT_B_PREFIX;
    if (pb->B > lim)
        return fr_fail(err, FR_E_RANGE, "prefix: B = %lld exceeds %lld (limit with prefix%s)", LL(pb->B), LL(lim),
                       pb->layout == FR_TND ? ", TND" : "");
    for (int64_t b = 0; b < pb->B; b++) {
        int64_t s1, s2;
        batch_lens(pb, b, &s1, &s2);
        int64_t lo = s1 > s2 ? 0 : s2 - s1, v = p->prefix[b];
        if (optional && v > s2) continue;
        if (v < lo || v > s2)
            return fr_fail(err, FR_E_PREFIX, "prefix[%lld] = %lld is outside [%lld, %lld] (S1 = %lld, S2 = %lld)",
                           LL(b), LL(v), LL(lo), LL(s2), LL(s1), LL(s2));
    }
    return FR_OK;
}

/* atten_mask, sparse_mode, band (spec 4). Without a mask, sparse_mode and the band are ignored (dense). */
static fr_status check_mask(const fr_params *p, const fr_fwd_inputs *in, fr_problem *pb, fr_error *err) {
    const fr_tensor *m = &in->atten_mask;
    const int mode = p->sparse_mode;
    const bool tnd = pb->layout == FR_TND;
    pb->has_mask = fr_tensor_present(m);
    pb->sparse_mode = pb->has_mask ? mode : 0;
    if (!pb->has_mask) return FR_OK;
    if (pb->fp8) return fr_fail(err, FR_E_FP8, "atten_mask: not allowed with %s inputs", dt_str(pb->dtype));
    if ((mode == 7 || mode == 8) && !tnd)
        return fr_fail(err, FR_E_SPARSE_MODE, "sparse_mode: %d requires input_layout TND (got %s)", mode,
                       layout_str(pb->layout));
    if (mode == 5 && tnd)
        return fr_fail(err, FR_E_SPARSE_MODE, "sparse_mode: 5 is not allowed with input_layout TND (use 6)");
    if (m->dtype != FR_BOOL && m->dtype != FR_U8)
        return fr_fail(err, FR_E_MASK, "atten_mask: dtype %s, must be bool or uint8", dt_str(m->dtype));

    const int64_t B = pb->B, N1 = pb->N1, S1 = pb->S1, S2 = pb->S2;
    bool ok;
    const char *want;
    switch (mode) {
    case 0:
    case 1:
        if (tnd) {
            ok = shape_eq2(m, S1, S2) || shape_eq4(m, 1, 1, S1, S2);
            want = "[maxS1,maxS2] or [1,1,maxS1,maxS2]";
        } else {
            ok = shape_eq2(m, S1, S2) || shape_eq4(m, 1, 1, S1, S2) || shape_eq4(m, B, 1, S1, S2) ||
                 shape_eq4(m, B, N1, S1, S2);
            want = "[S1,S2], [1,1,S1,S2], [B,1,S1,S2] or [B,N1,S1,S2]";
        }
        break;
    case 5:
        ok = shape_eq4(m, B, 1, S1, S2) || shape_eq4(m, B, N1, S1, S2) ||
             (B == 1 && (shape_eq2(m, S1, S2) || shape_eq4(m, 1, 1, S1, S2)));
        want = "[B,N1,S1,S2] or [B,1,S1,S2] (any full shape when B = 1)";
        break;
    case 6:
        ok = shape_eq2(m, FR_COMPRESSED_PREFIX_MASK_ROWS, FR_COMPRESSED_MASK_COLS) ||
             shape_eq4(m, 1, 1, FR_COMPRESSED_PREFIX_MASK_ROWS, FR_COMPRESSED_MASK_COLS);
        want = "the compressed [3072,2048]";
        break;
    default: /* 2, 3, 4, 7, 8 */
        ok = shape_eq2(m, FR_COMPRESSED_MASK_ROWS, FR_COMPRESSED_MASK_COLS) ||
             shape_eq4(m, 1, 1, FR_COMPRESSED_MASK_ROWS, FR_COMPRESSED_MASK_COLS);
        want = "the compressed [2048,2048]";
        break;
    }
    if (!ok) {
        char a[128];
        return fr_fail(err, FR_E_MASK, "atten_mask: shape %s does not fit sparse_mode %d (S1 = %lld, S2 = %lld): "
                                       "expected %s",
                       shape_str(m, a, sizeof a), mode, LL(S1), LL(S2), want);
    }
    fr_status st = check_view(m, "atten_mask", err);
    if (st != FR_OK) return st;

    if (mode == 5 || mode == 6) return check_prefix(p, pb, err);

    const int64_t pre = clamp_band(p->pre_tokens), next = clamp_band(p->next_tokens);
    char what[96];
    if (mode == 0) {
        snprintf(what, sizeof what, "sparse_mode 0");
        return band_rules(pre, next, S1, S2, what, err);
    }
    if (mode == 4) {
        for (int64_t b = 0; b < (tnd ? B : 1); b++) {
            int64_t s1 = S1, s2 = S2;
            if (tnd) batch_lens(pb, b, &s1, &s2);
            if (tnd && (s1 == 0 || s2 == 0)) continue;
            if (tnd)
                snprintf(what, sizeof what, "sparse_mode 4 batch %lld, top-left pre = %lld, next = %lld", LL(b),
                         LL(pre + s1 - s2), LL(next + s2 - s1));
            else
                snprintf(what, sizeof what, "sparse_mode 4, top-left pre = %lld, next = %lld", LL(pre + s1 - s2),
                         LL(next + s2 - s1));
            if ((st = band_rules(pre + s1 - s2, next + s2 - s1, s1, s2, what, err)) != FR_OK) return st;
        }
        return FR_OK;
    }
    if (mode == 7 || mode == 8) {
        /* mode 7: the last batch with S1_b != 0; mode 8: the first one */
        int64_t sel = -1;
        for (int64_t b = 0; b < B; b++) {
            int64_t s1, s2;
            batch_lens(pb, b, &s1, &s2);
            if (s1 != 0) {
                sel = b;
                if (mode == 8) break;
            }
        }
        if (sel < 0) return FR_OK;
        int64_t s1, s2;
        batch_lens(pb, sel, &s1, &s2);
        if (pre < s2)
            return fr_fail(err, FR_E_BAND, "pre_tokens = %lld must be >= S2 = %lld of the %s batch (%lld) in "
                                           "sparse_mode %d",
                           LL(p->pre_tokens), LL(s2), mode == 7 ? "last" : "first", LL(sel), mode);
        if (next < s1 - s2)
            return fr_fail(err, FR_E_BAND, "next_tokens = %lld must be >= S1 - S2 = %lld of the %s batch (%lld) in "
                                           "sparse_mode %d",
                           LL(p->next_tokens), LL(s1 - s2), mode == 7 ? "last" : "first", LL(sel), mode);
        if (mode == 7 && next > 0)
            return fr_fail(err, FR_E_BAND, "next_tokens = %lld must be <= 0 in sparse_mode 7", LL(p->next_tokens));
    }
    return FR_OK; /* modes 1, 2, 3: pre/next ignored */
}

/* real_shift and pse_type (spec 5). */
static fr_status check_pse(const fr_params *p, const fr_fwd_inputs *in, fr_problem *pb, fr_error *err) {
    const fr_tensor *t = &in->real_shift;
    const bool tnd = pb->layout == FR_TND;
    pb->has_pse = fr_tensor_present(t);
    pb->pse_type = p->pse_type;
    if (!pb->has_pse) return FR_OK;
    if (pb->fp8) return fr_fail(err, FR_E_FP8, "real_shift: not allowed with %s inputs", dt_str(pb->dtype));
    if (pb->has_mask && pb->sparse_mode == 7)
        return fr_fail(err, FR_E_PSE, "real_shift: not allowed with sparse_mode 7");
    if (tnd) {
        for (int64_t b = 0; b < pb->B; b++) {
            int64_t s1, s2;
            batch_lens(pb, b, &s1, &s2);
            if (s1 == 0)
                return fr_fail(err, FR_E_PSE, "real_shift: not allowed when a TND batch is empty (batch %lld has S1 = 0)",
                               LL(b));
            if (s1 != s2)
                return fr_fail(err, FR_E_PSE, "real_shift: TND needs S1 == S2 in every batch (batch %lld: %lld vs %lld)",
                               LL(b), LL(s1), LL(s2));
        }
    }
    const int64_t B = pb->B, N1 = pb->N1, S1 = pb->S1, S2 = pb->S2;
    char a[128];
    fr_status st;
    if (p->pse_type == 2 || p->pse_type == 3) {
        if (t->dtype != FR_F32)
            return fr_fail(err, FR_E_PSE, "real_shift: dtype %s, pse_type %d needs fp32 slopes", dt_str(t->dtype),
                           p->pse_type);
        if (!shape_eq2(t, B, N1) && !shape_eq(t, 1, (const int64_t[]){N1}))
            return fr_fail(err, FR_E_PSE, "real_shift: shape %s, pse_type %d needs slopes [B,N1] = [%lld,%lld] or "
                                          "[N1] = [%lld]",
                           shape_str(t, a, sizeof a), p->pse_type, LL(B), LL(N1), LL(N1));
        if (!tnd && S1 != S2)
            return fr_fail(err, FR_E_PSE, "real_shift: pse_type %d needs S1 == S2 (got %lld, %lld)", p->pse_type,
                           LL(S1), LL(S2));
        return check_view(t, "real_shift", err);
    }
    /* pse_type 0/1: external tensor of the query dtype */
    if (t->dtype != pb->dtype)
        return fr_fail(err, FR_E_PSE, "real_shift: dtype %s differs from query dtype %s (pse_type %d)",
                       dt_str(t->dtype), dt_str(pb->dtype), p->pse_type);
    const bool full = !tnd && (shape_eq4(t, B, N1, S1, S2) || shape_eq4(t, B, N1, 1, S2) || shape_eq4(t, 1, N1, S1, S2));
    const bool compressed =
        shape_eq4(t, B, N1, FR_COMPRESSED_PSE_ROWS, S2) || shape_eq4(t, 1, N1, FR_COMPRESSED_PSE_ROWS, S2);
    if (!full && !compressed)
        return fr_fail(err, FR_E_PSE, "real_shift: shape %s is none of %s (B = %lld, N1 = %lld, S1 = %lld, S2 = %lld)",
                       shape_str(t, a, sizeof a),
                       tnd ? "the TND compressed shapes [B,N1,1024,maxS2], [1,N1,1024,maxS2]"
                           : "[B,N1,S1,S2], [B,N1,1,S2], [1,N1,S1,S2], compressed [B|1,N1,1024,S2]",
                       LL(B), LL(N1), LL(S1), LL(S2));
    if (!full) {
        /* compressed ALiBi: Toeplitz, holds the last 1024 rows; needs S1 == S2 (> 1024 outside TND) and a pattern
         * that computes only j <= i, so that no read leaves the stored diagonals */
        if (!tnd && S1 <= FR_COMPRESSED_PSE_ROWS)
            return fr_fail(err, FR_E_PSE, "real_shift: compressed shape [*,N1,1024,S2] needs S1 > 1024 (S1 = %lld)",
                           LL(S1));
        if (!tnd && S1 != S2)
            return fr_fail(err, FR_E_PSE, "real_shift: compressed shape needs S1 == S2 (got %lld, %lld)", LL(S1),
                           LL(S2));
        const int md = pb->sparse_mode;
        const bool causal = pb->has_mask && (md == 2 || md == 3 || ((md == 0 || md == 8) && p->next_tokens <= 0));
        if (!causal)
            return fr_fail(err, FR_E_PSE,
                           "real_shift: compressed shape needs a causal pattern (atten_mask with sparse_mode 2 or 3, "
                           "or 0/8 with next_tokens <= 0); got %s sparse_mode %d, next_tokens = %lld",
                           pb->has_mask ? "atten_mask," : "no atten_mask,", p->sparse_mode, LL(p->next_tokens));
    }
    if ((st = check_view(t, "real_shift", err)) != FR_OK) return st;
    return FR_OK;
}

/* keep_prob / drop_mask (spec 6, D4). keep_prob = 1: any drop_mask is ignored. */
static fr_status check_dropout(const fr_params *p, const fr_fwd_inputs *in, fr_problem *pb, fr_error *err) {
    const fr_tensor *t = &in->drop_mask;
    pb->has_drop = p->keep_prob < 1.0;
    if (pb->fp8) {
        if (pb->has_drop)
            return fr_fail(err, FR_E_FP8, "keep_prob: %g < 1 (dropout) is not allowed with %s inputs", p->keep_prob,
                           dt_str(pb->dtype));
        if (fr_tensor_present(t))
            return fr_fail(err, FR_E_FP8, "drop_mask: not allowed with %s inputs", dt_str(pb->dtype));
    }
    if (!pb->has_drop) return FR_OK;
    if (!fr_tensor_present(t))
        return fr_fail(err, FR_E_DROPOUT, "drop_mask: required when keep_prob = %g < 1", p->keep_prob);
    if (t->dtype != FR_U8)
        return fr_fail(err, FR_E_DROPOUT, "drop_mask: dtype %s, must be uint8 (bit-packed)", dt_str(t->dtype));
    if (t->ndim != 1)
        return fr_fail(err, FR_E_DROPOUT, "drop_mask: rank %d, must be 1-D (bit-packed bytes)", t->ndim);
    fr_status st = check_view(t, "drop_mask", err);
    if (st != FR_OK) return st;
    int64_t bits = 0;
    if (pb->layout == FR_TND) {
        for (int64_t b = 0; b < pb->B; b++) {
            int64_t s1, s2, x;
            batch_lens(pb, b, &s1, &s2);
            if (!fr_mul_ok(s1, s2, &x) || !fr_mul_ok(x, pb->N1, &x) || !fr_add_ok(bits, x, &bits))
                return fr_fail(err, FR_E_OVERFLOW, "drop_mask: bit count N1*sum(S1_b*S2_b) overflows int64");
        }
    } else if (!fr_mul_ok(pb->B, pb->N1, &bits) || !fr_mul_ok(bits, pb->S1, &bits) || !fr_mul_ok(bits, pb->S2, &bits)) {
        return fr_fail(err, FR_E_OVERFLOW, "drop_mask: bit count B*N1*S1*S2 overflows int64");
    }
    int64_t need = bits / 8 + (bits % 8 != 0);
    if (t->shape[0] < need)
        return fr_fail(err, FR_E_DROPOUT, "drop_mask: %lld bytes, need at least %lld (= ceil(%s/8), %lld bits)",
                       LL(t->shape[0]), LL(need), pb->layout == FR_TND ? "N1*sum(S1_b*S2_b)" : "B*N1*S1*S2",
                       LL(bits));
    return FR_OK;
}

static fr_status check_sink(const fr_fwd_inputs *in, fr_problem *pb, fr_error *err) {
    const fr_tensor *t = &in->sink;
    pb->has_sink = fr_tensor_present(t);
    if (!pb->has_sink) return FR_OK;
    if (t->dtype != FR_F32) return fr_fail(err, FR_E_SINK, "sink: dtype %s, must be fp32", dt_str(t->dtype));
    if (!shape_eq(t, 1, (const int64_t[]){pb->N1})) {
        char a[128];
        return fr_fail(err, FR_E_SINK, "sink: shape %s, expected [N1] = [%lld]", shape_str(t, a, sizeof a), LL(pb->N1));
    }
    return check_view(t, "sink", err);
}

/* topk_indices (D7): int32 [B,S1,W] or [B,N2,S1,W]; TND [T1,W] or [T1,N2,W]. */
static fr_status check_topk(const fr_fwd_inputs *in, fr_problem *pb, fr_error *err) {
    const fr_tensor *t = &in->topk_indices;
    pb->has_topk = fr_tensor_present(t);
    pb->W = 0;
    pb->topk_per_kv_head = false;
    if (!pb->has_topk) return FR_OK;
    if (t->dtype != FR_I32) return fr_fail(err, FR_E_TOPK, "topk_indices: dtype %s, must be int32", dt_str(t->dtype));
    const bool tnd = pb->layout == FR_TND;
    const int r0 = tnd ? 2 : 3;
    if (t->ndim != r0 && t->ndim != r0 + 1)
        return fr_fail(err, FR_E_TOPK, "topk_indices: rank %d, expected %d or %d for input_layout %s", t->ndim, r0,
                       r0 + 1, layout_str(pb->layout));
    fr_status st = check_view(t, "topk_indices", err);
    if (st != FR_OK) return st;
    const bool per_head = t->ndim == r0 + 1;
    const int64_t W = t->shape[t->ndim - 1];
    bool ok;
    if (tnd) ok = per_head ? shape_eq(t, 3, (const int64_t[]){pb->T1, pb->N2, W}) : shape_eq2(t, pb->T1, W);
    else
        ok = per_head ? shape_eq4(t, pb->B, pb->N2, pb->S1, W) : shape_eq(t, 3, (const int64_t[]){pb->B, pb->S1, W});
    if (!ok) {
        char a[128];
        return fr_fail(err, FR_E_TOPK, "topk_indices: shape %s, expected %s with B = %lld, N2 = %lld, %s = %lld",
                       shape_str(t, a, sizeof a),
                       tnd ? (per_head ? "[T1,N2,W]" : "[T1,W]") : (per_head ? "[B,N2,S1,W]" : "[B,S1,W]"), LL(pb->B),
                       LL(pb->N2), tnd ? "T1" : "S1", LL(tnd ? pb->T1 : pb->S1));
    }
    pb->W = W;
    pb->topk_per_kv_head = per_head;
    return FR_OK;
}

/* ----------------------------------------------------------------------------------------------------------------- */

fr_status fr_problem_from_fwd(const fr_params *p, const fr_fwd_inputs *in, fr_problem *pb, fr_error *err) {
    if (!p) return fr_fail(err, FR_E_NULL, "params: NULL");
    if (!in) return fr_fail(err, FR_E_NULL, "inputs: NULL");
    if (!pb) return fr_fail(err, FR_E_NULL, "problem: NULL");
    memset(pb, 0, sizeof *pb);
    fr_status st;
    if ((st = check_attributes(p, err)) != FR_OK) return st;
    if ((st = check_qkv(p, in, pb, err)) != FR_OK) return st;
    if ((st = check_dscale(in, pb, err)) != FR_OK) return st;
    if ((st = check_rope(in, pb, err)) != FR_OK) return st;
    if ((st = check_mask(p, in, pb, err)) != FR_OK) return st;
    if ((st = check_pse(p, in, pb, err)) != FR_OK) return st;
    if ((st = check_dropout(p, in, pb, err)) != FR_OK) return st;
    if ((st = check_sink(in, pb, err)) != FR_OK) return st;
    if ((st = check_topk(in, pb, err)) != FR_OK) return st;
    return FR_OK;
}

/* Dtype of attention_out / dy / attention_in / gradients in the operator: the input dtype, fp8: out_dtype. */
static fr_dtype op_dtype(const fr_problem *pb) { return pb->fp8 ? pb->out_dtype : pb->dtype; }

/* A backward input shaped like attention_out (query's shape with Dv) of the operator dtype. */
static fr_status check_like_out(const fr_problem *pb, const fr_tensor *t, const char *name, fr_error *err) {
    if (!fr_tensor_present(t)) return fr_fail(err, FR_E_NULL, "%s: required tensor is absent (dtype none)", name);
    if (t->dtype != op_dtype(pb))
        return fr_fail(err, FR_E_DTYPE, "%s: dtype %s, expected %s", name, dt_str(t->dtype), dt_str(op_dtype(pb)));
    int64_t es[FR_MAX_DIMS];
    int nd = layout_shape(pb, false, pb->N1, pb->Dv, es);
    if (t->ndim != nd)
        return fr_fail(err, FR_E_RANK, "%s: rank %d, input_layout %s needs rank %d", name, t->ndim,
                       layout_str(pb->layout), nd);
    if (!shape_eq(t, nd, es)) {
        char a[128], b[128];
        return fr_fail(err, FR_E_SHAPE, "%s: shape %s, expected %s (query's shape with Dv = %lld)", name,
                       shape_str(t, a, sizeof a), expect_str(nd, es, b, sizeof b), LL(pb->Dv));
    }
    return check_view(t, name, err);
}

fr_status fr_problem_from_bwd(const fr_params *p, const fr_bwd_inputs *in, fr_problem *pb, fr_error *err) {
    if (!in) return fr_fail(err, FR_E_NULL, "inputs: NULL");
    fr_status st = fr_problem_from_fwd(p, &in->fwd, pb, err);
    if (st != FR_OK) return st;
    if ((st = check_like_out(pb, &in->dy, "dy", err)) != FR_OK) return st;
    if ((st = check_like_out(pb, &in->attention_in, "attention_in", err)) != FR_OK) return st;
    int64_t es[FR_MAX_DIMS];
    int nd = softmax_shape(pb, p->softmax_layout, es);
    const struct {
        const fr_tensor *t;
        const char *name;
    } sm[2] = {{&in->softmax_max, "softmax_max"}, {&in->softmax_sum, "softmax_sum"}};
    for (int i = 0; i < 2; i++) {
        const fr_tensor *t = sm[i].t;
        if (!fr_tensor_present(t))
            return fr_fail(err, FR_E_NULL, "%s: required tensor is absent (dtype none)", sm[i].name);
        if (t->dtype != FR_F32 && t->dtype != FR_F64)
            return fr_fail(err, FR_E_SOFTMAX_STATS, "%s: dtype %s, must be fp32 or fp64", sm[i].name,
                           dt_str(t->dtype));
        if (!shape_eq(t, nd, es)) {
            char a[128], b[128];
            return fr_fail(err, FR_E_SOFTMAX_STATS, "%s: shape %s, expected %s", sm[i].name, shape_str(t, a, sizeof a),
                           expect_str(nd, es, b, sizeof b));
        }
        if ((st = check_view(t, sm[i].name, err)) != FR_OK) return st;
    }
    return FR_OK;
}

/* ----------------------------------------------------------------------------------------------------------------- */
/* Outputs. */

/* One output: present, dtype one of ok[0..nok-1], shape es; then view checks (NULL data -> FR_E_NULL). */
static fr_status check_output(const fr_tensor *t, const char *name, const fr_dtype *ok, int nok, int nd,
                              const int64_t *es, fr_error *err) {
    if (!fr_tensor_present(t)) return fr_fail(err, FR_E_NULL, "%s: required output is absent (dtype none)", name);
    bool dt_ok = false;
    for (int i = 0; i < nok; i++) dt_ok |= t->dtype == ok[i];
    if (!dt_ok) {
        char list[96] = "";
        size_t k = 0;
        for (int i = 0; i < nok && k < sizeof list; i++)
            k += (size_t)snprintf(list + k, sizeof list - k, i ? ", %s" : "%s", dt_str(ok[i]));
        return fr_fail(err, FR_E_OUTPUT, "%s: dtype %s, expected one of %s", name, dt_str(t->dtype), list);
    }
    if (!shape_eq(t, nd, es)) {
        char a[128], b[128];
        return fr_fail(err, FR_E_OUTPUT, "%s: shape %s, expected %s", name, shape_str(t, a, sizeof a),
                       expect_str(nd, es, b, sizeof b));
    }
    return check_view(t, name, err);
}

fr_status fr_check_fwd_outputs(const fr_problem *pb, const fr_params *p, const fr_fwd_outputs *out, fr_error *err) {
    if (!pb) return fr_fail(err, FR_E_NULL, "problem: NULL");
    if (!p) return fr_fail(err, FR_E_NULL, "params: NULL");
    if (!out) return fr_fail(err, FR_E_NULL, "outputs: NULL");
    int64_t es[FR_MAX_DIMS];
    int nd = layout_shape(pb, false, pb->N1, pb->Dv, es);
    const fr_dtype od[3] = {pb->out_dtype, FR_F32, FR_F64};
    fr_status st = check_output(&out->attention_out, "attention_out", od, 3, nd, es, err);
    if (st != FR_OK) return st;
    nd = softmax_shape(pb, p->softmax_layout, es);
    const fr_dtype sd[2] = {FR_F32, FR_F64};
    if ((st = check_output(&out->softmax_max, "softmax_max", sd, 2, nd, es, err)) != FR_OK) return st;
    return check_output(&out->softmax_sum, "softmax_sum", sd, 2, nd, es, err);
}

fr_status fr_check_bwd_outputs(const fr_problem *pb, const fr_params *p, const fr_bwd_outputs *out, fr_error *err) {
    if (!pb) return fr_fail(err, FR_E_NULL, "problem: NULL");
    if (!p) return fr_fail(err, FR_E_NULL, "params: NULL");
    if (!out) return fr_fail(err, FR_E_NULL, "outputs: NULL");
    /* gradients: the input dtype (fp8 inputs: fp16 or bf16), or fp32 / fp64 */
    fr_dtype gd[4] = {pb->dtype, FR_F32, FR_F64, FR_DT_NONE};
    int ngd = 3;
    if (pb->fp8) gd[0] = FR_F16, gd[3] = FR_BF16, ngd = 4;
    int64_t es[FR_MAX_DIMS];
    fr_status st;
    int nd = layout_shape(pb, false, pb->N1, pb->Dk, es);
    if ((st = check_output(&out->dq, "dq", gd, ngd, nd, es, err)) != FR_OK) return st;
    nd = layout_shape(pb, true, pb->N2, pb->Dk, es);
    if ((st = check_output(&out->dk, "dk", gd, ngd, nd, es, err)) != FR_OK) return st;
    nd = layout_shape(pb, true, pb->N2, pb->Dv, es);
    if ((st = check_output(&out->dv, "dv", gd, ngd, nd, es, err)) != FR_OK) return st;
    if (pb->has_rope) {
        nd = layout_shape(pb, false, pb->N1, pb->Drope, es);
        if ((st = check_output(&out->dq_rope, "dq_rope", gd, ngd, nd, es, err)) != FR_OK) return st;
        nd = layout_shape(pb, true, pb->N2, pb->Drope, es);
        if ((st = check_output(&out->dk_rope, "dk_rope", gd, ngd, nd, es, err)) != FR_OK) return st;
    } else {
        if (fr_tensor_present(&out->dq_rope))
            return fr_fail(err, FR_E_OUTPUT, "dq_rope: given but the inputs have no query_rope");
        if (fr_tensor_present(&out->dk_rope))
            return fr_fail(err, FR_E_OUTPUT, "dk_rope: given but the inputs have no key_rope");
    }
    if (pb->has_sink) {
        const fr_dtype sd[2] = {FR_F32, FR_F64};
        if ((st = check_output(&out->dsink, "dsink", sd, 2, 1, (const int64_t[]){pb->N1}, err)) != FR_OK) return st;
    } else if (fr_tensor_present(&out->dsink)) {
        return fr_fail(err, FR_E_OUTPUT, "dsink: given but the inputs have no sink");
    }
    return FR_OK;
}

/* ----------------------------------------------------------------------------------------------------------------- */

bool fr_problem_is_valid(const fr_problem *pb) {
    if (!pb || !fr_layout_is_valid(pb->layout) || !fr_input_dtype_is_valid(pb->dtype)) return false;
    if (pb->fp8 != fr_dtype_is_fp8(pb->dtype)) return false;
    if (pb->B < 0 || pb->N1 < 0 || pb->N2 < 0 || pb->S1 < 0 || pb->S2 < 0 || pb->Dk < 0 || pb->Dv < 0 ||
        pb->Drope < 0 || pb->T1 < 0 || pb->T2 < 0 || pb->W < 0)
        return false;
    if (pb->N2 == 0 ? (pb->N1 != 0 || pb->G != 0) : (pb->N1 % pb->N2 != 0 || pb->G != pb->N1 / pb->N2)) return false;
    if (pb->Dv > pb->Dk || pb->N1 > FR_LIMIT_N1 || pb->Dk > FR_LIMIT_D) return false;
    if (pb->has_rope != (pb->Drope > 0) || (!pb->has_topk && pb->W != 0)) return false;
    if (!fr_pse_type_is_valid(pb->pse_type) || !fr_sparse_mode_is_valid(pb->sparse_mode)) return false;
    if (!pb->has_mask && pb->sparse_mode != 0) return false;
    if (pb->layout == FR_TND) {
        if (pb->B > 0 && (!pb->cu_q || !pb->cu_kv)) return false;
        if (pb->B > 0 && (pb->cu_q[pb->B - 1] != pb->T1 || pb->cu_kv[pb->B - 1] != pb->T2)) return false;
    } else {
        if (pb->cu_q || pb->cu_kv || pb->T1 != pb->B * pb->S1 || pb->T2 != pb->B * pb->S2) return false;
    }
    return true;
}

/* The public validators (flashref.h): the problem, then the outputs when given. Here in core, below every layer that
 * calls them (io's case reader, the verifier's case checks, the engine dispatch). */
fr_status fr_validate_fwd(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out, fr_error *err) {
    fr_error_clear(err);
    fr_problem pb;
    fr_status st = fr_problem_from_fwd(p, in, &pb, err);
    if (st != FR_OK || !out) return st;
    return fr_check_fwd_outputs(&pb, p, out, err);
}

fr_status fr_validate_bwd(const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out, fr_error *err) {
    fr_error_clear(err);
    fr_problem pb;
    fr_status st = fr_problem_from_bwd(p, in, &pb, err);
    if (st != FR_OK || !out) return st;
    return fr_check_bwd_outputs(&pb, p, out, err);
}
