/* Validation of the optional inputs (validate_opts.h): prefix, atten_mask with sparse_mode and the band, pse,
 * dropout, sink and top-k (spec 4-8), checked after q/k/v by fr_problem_from_fwd (validate_problem.c). */
#include "core/validate_opts.h"

#include "core/validate_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* prefix for sparse modes 5/6 (spec 4.2): length B, prefix[b] in [0, S2_b] if S1_b > S2_b, else [S2_b - S1_b, S2_b]. */
static fr_status check_prefix(const fr_params *p, const fr_problem *pb, fr_error *err) {
    /* Mode 5: an absent prefix, or prefix[b] > S2, means "full compute" (spec 4.2): only the user mask applies. */
    const bool optional = p->sparse_mode == FR_SPARSE_PREFIX;
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
        vd_batch_lens(pb, b, &s1, &s2);
        int64_t lo = s1 > s2 ? 0 : s2 - s1, v = p->prefix[b];
        if (optional && v > s2) continue;
        if (v < lo || v > s2)
            return fr_fail(err, FR_E_PREFIX, "prefix[%lld] = %lld is outside [%lld, %lld] (S1 = %lld, S2 = %lld)",
                           LL(b), LL(v), LL(lo), LL(s2), LL(s1), LL(s2));
    }
    return FR_OK;
}

/* atten_mask, sparse_mode, band (spec 4). Without a mask, sparse_mode and the band are ignored (dense). */
fr_status vd_check_mask(const fr_params *p, const fr_fwd_inputs *in, fr_problem *pb, fr_error *err) {
    const fr_tensor *m = &in->atten_mask;
    const int mode = p->sparse_mode;
    const bool tnd = pb->layout == FR_TND;
    pb->has_mask = fr_tensor_present(m);
    pb->sparse_mode = pb->has_mask ? mode : FR_SPARSE_DEFAULT_MASK;
    if (!pb->has_mask) return FR_OK;
    if (pb->fp8) return fr_fail(err, FR_E_FP8, "atten_mask: not allowed with %s inputs", dt_str(pb->dtype));
    if (fr_sparse_mode_tnd_only(mode) && !tnd)
        return fr_fail(err, FR_E_SPARSE_MODE, "sparse_mode: %d requires input_layout TND (got %s)", mode,
                       layout_str(pb->layout));
    if (mode == FR_SPARSE_PREFIX && tnd)
        return fr_fail(err, FR_E_SPARSE_MODE, "sparse_mode: 5 is not allowed with input_layout TND (use 6)");
    if (m->dtype != FR_BOOL && m->dtype != FR_U8)
        return fr_fail(err, FR_E_MASK, "atten_mask: dtype %s, must be bool or uint8", dt_str(m->dtype));

    const int64_t B = pb->B, N1 = pb->N1, S1 = pb->S1, S2 = pb->S2;
    bool ok = false;
    const char *want = "a valid sparse_mode";
    switch ((fr_sparse_mode)mode) { /* no default: -Wswitch names a mode without a rule */
    case FR_SPARSE_DEFAULT_MASK:
    case FR_SPARSE_ALL_MASK:
        if (tnd) {
            ok = vd_shape_eq2(m, S1, S2) || vd_shape_eq4(m, 1, 1, S1, S2);
            want = "[maxS1,maxS2] or [1,1,maxS1,maxS2]";
        } else {
            ok = vd_shape_eq2(m, S1, S2) || vd_shape_eq4(m, 1, 1, S1, S2) || vd_shape_eq4(m, B, 1, S1, S2) ||
                 vd_shape_eq4(m, B, N1, S1, S2);
            want = "[S1,S2], [1,1,S1,S2], [B,1,S1,S2] or [B,N1,S1,S2]";
        }
        break;
    case FR_SPARSE_PREFIX:
        ok = vd_shape_eq4(m, B, 1, S1, S2) || vd_shape_eq4(m, B, N1, S1, S2) ||
             (B == 1 && (vd_shape_eq2(m, S1, S2) || vd_shape_eq4(m, 1, 1, S1, S2)));
        want = "[B,N1,S1,S2] or [B,1,S1,S2] (any full shape when B = 1)";
        break;
    case FR_SPARSE_PREFIX_COMPRESS:
        ok = vd_shape_eq2(m, FR_COMPRESSED_PREFIX_MASK_ROWS, FR_COMPRESSED_MASK_COLS) ||
             vd_shape_eq4(m, 1, 1, FR_COMPRESSED_PREFIX_MASK_ROWS, FR_COMPRESSED_MASK_COLS);
        want = "the compressed [3072,2048]";
        break;
    case FR_SPARSE_LEFT_UP_CAUSAL:
    case FR_SPARSE_RIGHT_DOWN_CAUSAL:
    case FR_SPARSE_BAND:
    case FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND:
    case FR_SPARSE_BAND_LEFT_UP_CAUSAL:
        ok = vd_shape_eq2(m, FR_COMPRESSED_MASK_ROWS, FR_COMPRESSED_MASK_COLS) ||
             vd_shape_eq4(m, 1, 1, FR_COMPRESSED_MASK_ROWS, FR_COMPRESSED_MASK_COLS);
        want = "the compressed [2048,2048]";
        break;
    case FR_SPARSE_MODE_COUNT: break; /* refused earlier (validate_problem.c) */
    }
    if (!ok) {
        char a[128];
        return fr_fail(err, FR_E_MASK, "atten_mask: shape %s does not fit sparse_mode %d (S1 = %lld, S2 = %lld): "
                                       "expected %s",
                       vd_shape_str(m, a, sizeof a), mode, LL(S1), LL(S2), want);
    }
    fr_status st = vd_check_view(m, "atten_mask", err);
    if (st != FR_OK) return st;

    if (fr_sparse_mode_has_prefix(mode)) return check_prefix(p, pb, err);

    const int64_t pre = vd_clamp_band(p->pre_tokens), next = vd_clamp_band(p->next_tokens);
    char what[96];
    if (mode == FR_SPARSE_DEFAULT_MASK) {
        snprintf(what, sizeof what, "sparse_mode 0");
        return vd_band_rules(pre, next, S1, S2, what, err);
    }
    if (mode == FR_SPARSE_BAND) {
        for (int64_t b = 0; b < (tnd ? B : 1); b++) {
            int64_t s1 = S1, s2 = S2;
            if (tnd) vd_batch_lens(pb, b, &s1, &s2);
            if (tnd && (s1 == 0 || s2 == 0)) continue;
            if (tnd)
                snprintf(what, sizeof what, "sparse_mode 4 batch %lld, top-left pre = %lld, next = %lld", LL(b),
                         LL(pre + s1 - s2), LL(next + s2 - s1));
            else
                snprintf(what, sizeof what, "sparse_mode 4, top-left pre = %lld, next = %lld", LL(pre + s1 - s2),
                         LL(next + s2 - s1));
            if ((st = vd_band_rules(pre + s1 - s2, next + s2 - s1, s1, s2, what, err)) != FR_OK) return st;
        }
        return FR_OK;
    }
    if (fr_sparse_mode_tnd_only(mode)) {
        /* mode 7: the last batch with S1_b != 0; mode 8: the first one */
        int64_t sel = -1;
        for (int64_t b = 0; b < B; b++) {
            int64_t s1, s2;
            vd_batch_lens(pb, b, &s1, &s2);
            if (s1 != 0) {
                sel = b;
                if (mode == FR_SPARSE_BAND_LEFT_UP_CAUSAL) break;
            }
        }
        if (sel < 0) return FR_OK;
        int64_t s1, s2;
        vd_batch_lens(pb, sel, &s1, &s2);
        if (pre < s2)
            return fr_fail(err, FR_E_BAND, "pre_tokens = %lld must be >= S2 = %lld of the %s batch (%lld) in "
                                           "sparse_mode %d",
                           LL(p->pre_tokens), LL(s2), mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND ? "last" : "first",
                           LL(sel), mode);
        if (next < s1 - s2)
            return fr_fail(err, FR_E_BAND, "next_tokens = %lld must be >= S1 - S2 = %lld of the %s batch (%lld) in "
                                           "sparse_mode %d",
                           LL(p->next_tokens), LL(s1 - s2), mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND ? "last" : "first",
                           LL(sel), mode);
        if (mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND && next > 0)
            return fr_fail(err, FR_E_BAND, "next_tokens = %lld must be <= 0 in sparse_mode 7", LL(p->next_tokens));
    }
    return FR_OK; /* modes 1, 2, 3: pre/next ignored */
}

/* real_shift and pse_type (spec 5). */
fr_status vd_check_pse(const fr_params *p, const fr_fwd_inputs *in, fr_problem *pb, fr_error *err) {
    const fr_tensor *t = &in->real_shift;
    const bool tnd = pb->layout == FR_TND;
    pb->has_pse = fr_tensor_present(t);
    pb->pse_type = p->pse_type;
    if (!pb->has_pse) return FR_OK;
    if (pb->fp8) return fr_fail(err, FR_E_FP8, "real_shift: not allowed with %s inputs", dt_str(pb->dtype));
    if (pb->has_mask && pb->sparse_mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND)
        return fr_fail(err, FR_E_PSE, "real_shift: not allowed with sparse_mode 7");
    if (tnd) {
        for (int64_t b = 0; b < pb->B; b++) {
            int64_t s1, s2;
            vd_batch_lens(pb, b, &s1, &s2);
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
    if (fr_pse_type_is_slopes(p->pse_type)) {
        if (t->dtype != FR_F32)
            return fr_fail(err, FR_E_PSE, "real_shift: dtype %s, pse_type %d needs fp32 slopes", dt_str(t->dtype),
                           p->pse_type);
        if (!vd_shape_eq2(t, B, N1) && !vd_shape_eq(t, 1, (const int64_t[]){N1}))
            return fr_fail(err, FR_E_PSE, "real_shift: shape %s, pse_type %d needs slopes [B,N1] = [%lld,%lld] or "
                                          "[N1] = [%lld]",
                           vd_shape_str(t, a, sizeof a), p->pse_type, LL(B), LL(N1), LL(N1));
        if (!tnd && S1 != S2)
            return fr_fail(err, FR_E_PSE, "real_shift: pse_type %d needs S1 == S2 (got %lld, %lld)", p->pse_type,
                           LL(S1), LL(S2));
        return vd_check_view(t, "real_shift", err);
    }
    /* pse_type 0/1: external tensor of the query dtype */
    if (t->dtype != pb->dtype)
        return fr_fail(err, FR_E_PSE, "real_shift: dtype %s differs from query dtype %s (pse_type %d)",
                       dt_str(t->dtype), dt_str(pb->dtype), p->pse_type);
    const bool full =
        !tnd && (vd_shape_eq4(t, B, N1, S1, S2) || vd_shape_eq4(t, B, N1, 1, S2) || vd_shape_eq4(t, 1, N1, S1, S2));
    const bool compressed =
        vd_shape_eq4(t, B, N1, FR_COMPRESSED_PSE_ROWS, S2) || vd_shape_eq4(t, 1, N1, FR_COMPRESSED_PSE_ROWS, S2);
    if (!full && !compressed)
        return fr_fail(err, FR_E_PSE, "real_shift: shape %s is none of %s (B = %lld, N1 = %lld, S1 = %lld, S2 = %lld)",
                       vd_shape_str(t, a, sizeof a),
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
        const bool next_causal =
            (md == FR_SPARSE_DEFAULT_MASK || md == FR_SPARSE_BAND_LEFT_UP_CAUSAL) && p->next_tokens <= 0;
        const bool causal =
            pb->has_mask && (md == FR_SPARSE_LEFT_UP_CAUSAL || md == FR_SPARSE_RIGHT_DOWN_CAUSAL || next_causal);
        if (!causal)
            return fr_fail(err, FR_E_PSE,
                           "real_shift: compressed shape needs a causal pattern (atten_mask with sparse_mode 2 or 3, "
                           "or 0/8 with next_tokens <= 0); got %s sparse_mode %d, next_tokens = %lld",
                           pb->has_mask ? "atten_mask," : "no atten_mask,", p->sparse_mode, LL(p->next_tokens));
    }
    if ((st = vd_check_view(t, "real_shift", err)) != FR_OK) return st;
    return FR_OK;
}

/* keep_prob / drop_mask (spec 6, D4). keep_prob = 1: any drop_mask is ignored. */
fr_status vd_check_dropout(const fr_params *p, const fr_fwd_inputs *in, fr_problem *pb, fr_error *err) {
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
    fr_status st = vd_check_view(t, "drop_mask", err);
    if (st != FR_OK) return st;
    int64_t bits = 0;
    if (pb->layout == FR_TND) {
        for (int64_t b = 0; b < pb->B; b++) {
            int64_t s1, s2, x;
            vd_batch_lens(pb, b, &s1, &s2);
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

fr_status vd_check_sink(const fr_fwd_inputs *in, fr_problem *pb, fr_error *err) {
    const fr_tensor *t = &in->sink;
    pb->has_sink = fr_tensor_present(t);
    if (!pb->has_sink) return FR_OK;
    if (t->dtype != FR_F32) return fr_fail(err, FR_E_SINK, "sink: dtype %s, must be fp32", dt_str(t->dtype));
    if (!vd_shape_eq(t, 1, (const int64_t[]){pb->N1})) {
        char a[128];
        return fr_fail(err, FR_E_SINK, "sink: shape %s, expected [N1] = [%lld]", vd_shape_str(t, a, sizeof a),
                       LL(pb->N1));
    }
    return vd_check_view(t, "sink", err);
}

/* topk_indices (D7): int32 [B,S1,W] or [B,N2,S1,W]; TND [T1,W] or [T1,N2,W]. */
fr_status vd_check_topk(const fr_fwd_inputs *in, fr_problem *pb, fr_error *err) {
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
    fr_status st = vd_check_view(t, "topk_indices", err);
    if (st != FR_OK) return st;
    const bool per_head = t->ndim == r0 + 1;
    const int64_t W = t->shape[t->ndim - 1];
    bool ok;
    if (tnd) ok = per_head ? vd_shape_eq(t, 3, (const int64_t[]){pb->T1, pb->N2, W}) : vd_shape_eq2(t, pb->T1, W);
    else
        ok = per_head ? vd_shape_eq4(t, pb->B, pb->N2, pb->S1, W)
                      : vd_shape_eq(t, 3, (const int64_t[]){pb->B, pb->S1, W});
    if (!ok) {
        char a[128];
        return fr_fail(err, FR_E_TOPK, "topk_indices: shape %s, expected %s with B = %lld, N2 = %lld, %s = %lld",
                       vd_shape_str(t, a, sizeof a),
                       tnd ? (per_head ? "[T1,N2,W]" : "[T1,W]") : (per_head ? "[B,N2,S1,W]" : "[B,S1,W]"), LL(pb->B),
                       LL(pb->N2), tnd ? "T1" : "S1", LL(tnd ? pb->T1 : pb->S1));
    }
    pb->W = W;
    pb->topk_per_kv_head = per_head;
    return FR_OK;
}
