/* Validation's ground floor: the helpers every check uses (validate_internal.h: shapes as text, shape comparisons,
 * the generic view check, layout dims and expected shapes, per-batch lengths, the band rules) and the invariants of
 * a validated problem (validate.h: fr_problem_is_valid). The checks are validate_problem.c (attributes, q/k/v,
 * scales, rope, outputs) and validate_opts.c (the optional inputs). */
#include "core/validate_internal.h"

#include <stdio.h>
#include <string.h>

/* FR_OK when t's dtype is want, else status and "NAME: dtype X differs from REF dtype Y". */
fr_status vd_same_dtype(const fr_tensor *t, const char *name, fr_dtype want, const char *ref, fr_status status,
                            fr_error *err) {
    if (t->dtype == want) return FR_OK;
    return fr_fail(err, status, "%s: dtype %s differs from %s dtype %s", name, dt_str(t->dtype), ref, dt_str(want));
}

/* "[2,3,4]" */
const char *vd_shape_str(const fr_tensor *t, char *buf, size_t n) {
    size_t k = 0;
    buf[0] = '\0';
    k += (size_t)snprintf(buf + k, n - k, "[");
    int nd = t->ndim < 0 ? 0 : (t->ndim > FR_MAX_DIMS ? FR_MAX_DIMS : t->ndim);
    for (int d = 0; d < nd && k < n; d++) k += (size_t)snprintf(buf + k, n - k, d ? ",%lld" : "%lld", LL(t->shape[d]));
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}

bool vd_shape_eq(const fr_tensor *t, int nd, const int64_t *s) {
    if (t->ndim != nd) return false;
    for (int d = 0; d < nd; d++)
        if (t->shape[d] != s[d]) return false;
    return true;
}
bool vd_shape_eq2(const fr_tensor *t, int64_t a, int64_t b) { return vd_shape_eq(t, 2, (const int64_t[]){a, b}); }
bool vd_shape_eq4(const fr_tensor *t, int64_t a, int64_t b, int64_t c, int64_t d) {
    return vd_shape_eq(t, 4, (const int64_t[]){a, b, c, d});
}

/* Generic checks of one present tensor view: rank in 0..FR_MAX_DIMS, no negative dim, element count, byte size and
 * addressed span (sum of (shape-1)*|stride|) fit int64, data non-NULL when there is an element. */
fr_status vd_check_view(const fr_tensor *t, const char *name, fr_error *err) {
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

vd_lay_dims vd_dims_of(const fr_tensor *t, fr_layout l) {
    vd_lay_dims d = {-1, -1, -1, -1, -1};
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
 * Alike src/verify/cases/case_shapes.c:fr_gen_qkv_shape: kept apart because every case the builders make (casegen,
 * the kernel and golden tests) goes through this check: a builder using the validator's own shapes could not catch a
 * validator that accepts a wrong one. */
int vd_layout_shape(const fr_problem *pb, bool kv, int64_t N, int64_t D, int64_t *s) {
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
int vd_softmax_shape(const fr_problem *pb, fr_softmax_layout sl, int64_t *s) {
    if (pb->layout == FR_TND) {
        if (sl == FR_SOFTMAX_SAME_AS_INPUT) s[0] = pb->T1, s[1] = pb->N1;
        else s[0] = pb->N1, s[1] = pb->T1;
        s[2] = 8;
        return 3;
    }
    s[0] = pb->B, s[1] = pb->N1, s[2] = pb->S1, s[3] = 8;
    return 4;
}

const char *vd_expect_str(int nd, const int64_t *s, char *buf, size_t n) {
    fr_tensor t;
    memset(&t, 0, sizeof t);
    t.ndim = nd;
    for (int d = 0; d < nd; d++) t.shape[d] = s[d];
    return vd_shape_str(&t, buf, n);
}

/* Per-batch lengths (TND: from the cumulative arrays; else S1, S2). */
void vd_batch_lens(const fr_problem *pb, int64_t b, int64_t *s1, int64_t *s2) {
    int64_t st;
    fr_problem_q_rows(pb, b, &st, s1);
    fr_problem_kv_rows(pb, b, &st, s2);
}

int64_t vd_clamp_band(int64_t v) { return v > BAND_CLAMP ? BAND_CLAMP : (v < -BAND_CLAMP ? -BAND_CLAMP : v); }

/* Spec 4.1 band rules with a top-left origin: kept iff -pre <= j - i <= next. `what` names the origin of the values
 * in messages (e.g. "sparse_mode 4 batch 0, top-left ..."). The rules that involve S1 or S2 apply only when both are
 * nonzero: with an empty dimension nothing is computed (D8). */
fr_status vd_band_rules(int64_t pre, int64_t next, int64_t S1, int64_t S2, const char *what, fr_error *err) {
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

/* Invariants every validated fr_problem satisfies (validate.h). */
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
    if (!pb->has_mask && pb->sparse_mode != FR_SPARSE_DEFAULT_MASK) return false;
    if (pb->layout == FR_TND) {
        if (pb->B > 0 && (!pb->cu_q || !pb->cu_kv)) return false;
        if (pb->B > 0 && (pb->cu_q[pb->B - 1] != pb->T1 || pb->cu_kv[pb->B - 1] != pb->T2)) return false;
    } else {
        if (pb->cu_q || pb->cu_kv || pb->T1 != pb->B * pb->S1 || pb->T2 != pb->B * pb->S2) return false;
    }
    return true;
}
