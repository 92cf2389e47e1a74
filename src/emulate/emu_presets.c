/* The emulator's configuration: presets, checks and its one rounding routine. Where each preset setting comes from
 * is written next to it (and in docs/emulator.md). */
#include "flashref_emulate.h"

#include "core/core.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* One tie-breaking step on y >= 0 (y = |x| / quantum): the integer nearest to y, ties per r. */
static double round_int(double y, fr_round r) {
    double f = floor(y), d = y - f;
    if (d > 0.5) return f + 1;
    if (d < 0.5) return f;
    if (r == FR_ROUND_HALF_AWAY) return f + 1;
    return fmod(f, 2.0) == 0.0 ? f : f + 1;
}

/* Binary format with p significand bits, minimum normal exponent emin, largest finite value maxv. has_inf: overflow
 * without saturation gives Inf (else NaN, e4m3fn). */
static double round_ieee(double x, int p, int emin, double maxv, bool has_inf, fr_round r, fr_sat s) {
    if (isnan(x)) return x;
    double a = fabs(x);
    if (isinf(a)) return s == FR_SAT ? copysign(maxv, x) : (has_inf ? x : NAN);
    if (a == 0.0) return x;
    int e;
    (void)frexp(a, &e);
    e -= 1; /* a in [2^e, 2^(e+1)) */
    if (e < emin) e = emin;
    double q = ldexp(1.0, e - p + 1);
    double v = round_int(a / q, r) * q; /* a / q and k * q are exact (powers of two) */
    if (v > maxv) {
        if (s == FR_SAT) v = maxv;
        else return has_inf ? copysign(INFINITY, x) : NAN;
    }
    return copysign(v, x);
}

/* HiFloat8 (spec 9.3): tapered precision, denormals are the powers of two 2^-22 .. 2^-16, max 32768; overflow
 * (rounding to 49152 or beyond) gives Inf, or 32768 when saturating. */
static double round_hif8(double x, fr_round r, fr_sat s) {
    if (isnan(x)) return x;
    double a = fabs(x);
    if (isinf(a)) return s == FR_SAT ? copysign(32768.0, x) : x;
    if (a < 0x1p-23) return 0.0; /* below half the smallest denormal; there is no -0 */
    if (a < 0x1p-22) {           /* [2^-23, 2^-22): the tie at 2^-23 and above go to 2^-22 (RNE: 2^-23 -> 0) */
        if (a == 0x1p-23 && r == FR_ROUND_NEAREST_EVEN) return 0.0;
        return copysign(0x1p-22, x);
    }
    int e;
    (void)frexp(a, &e);
    e -= 1;
    int ae = e < 0 ? -e : e;
    int fb = ae <= 3 ? 3 : ae <= 7 ? 2 : ae <= 15 ? 1 : 0;
    double q = ldexp(1.0, e - fb);
    double v = round_int(a / q, r) * q;
    if (v > 32768.0) {
        if (s == FR_SAT) v = 32768.0;
        else return copysign(INFINITY, x);
    }
    return copysign(v, x);
}

double fr_emu_round(double x, fr_dtype dt, fr_round r, fr_sat s) {
    switch (dt) {
    case FR_F64: return x;
    case FR_F32:
        if (r == FR_ROUND_NEAREST_EVEN && s == FR_NO_SAT) return (double)(float)x;
        return round_ieee(x, 24, -126, 0x1.fffffep127, true, r, s);
    case FR_F16: return round_ieee(x, 11, -14, 65504.0, true, r, s);
    case FR_BF16: return round_ieee(x, 8, -126, 0x1.fep127, true, r, s);
    case FR_E4M3FN: return round_ieee(x, 4, -6, 448.0, false, r, s);
    case FR_E5M2: return round_ieee(x, 3, -14, 57344.0, true, r, s);
    case FR_HIF8: return round_hif8(x, r, s);
    default: return x;
    }
}

fr_numerics fr_numerics_ideal(fr_dtype input_dtype) {
    fr_numerics n;
    memset(&n, 0, sizeof n);
    bool wide = input_dtype == FR_F64 || input_dtype == FR_F32;
    snprintf(n.name, sizeof n.name, "ideal-%s", fr_dtype_name(input_dtype));
    n.compute = input_dtype == FR_F64 ? FR_F64 : FR_F32;
    n.q_tile = 128;
    n.kv_tile = 128;
    n.rescale_threshold = 0.0; /* exact running max: the largest p of a row is exactly 1 */
    n.exp_base = FR_EMU_EXP_E;
    n.p_dtype = wide ? n.compute : input_dtype; /* rounded once, to the input dtype */
    n.p_round = FR_ROUND_NEAREST_EVEN;
    n.rowsum = FR_EMU_ROWSUM_UNROUNDED;
    n.order = FR_EMU_ORDER_FORWARD;
    n.acc_o = n.acc_l = n.compute; /* fp32 accumulation (fp64 for fp64 inputs) */
    n.out_round = FR_ROUND_NEAREST_EVEN;
    n.dpsum = FR_EMU_DPSUM_OUT;   /* spec 8.2: D from attention_in */
    n.bwd_p = FR_EMU_P_RECOMPUTE;
    n.ds_dtype = n.p_dtype;
    n.ds_round = FR_ROUND_NEAREST_EVEN;
    n.grad_round = FR_ROUND_NEAREST_EVEN;
    return n;
}

static const char *const preset_names[] = {"exact",     "ideal-bf16", "ideal-fp16", "ascend-a2", "fa4-sm100-fwd-inference",
                                           "fa4-sm100-fwd-train", "fast-ip1", NULL};

const char *const *fr_numerics_preset_names(void) { return preset_names; }

fr_status fr_numerics_preset(const char *name, fr_numerics *out, fr_error *err) {
    if (!name || !out) return fr_fail(err, FR_E_NULL, "numerics preset: %s NULL", !name ? "name" : "out");
    fr_numerics n;
    if (!strcmp(name, "exact")) {
        n = fr_numerics_ideal(FR_F64);
        n.dpsum = FR_EMU_DPSUM_OUT; /* fp64 outputs: attention_in is O itself */
    } else if (!strcmp(name, "ideal-bf16")) {
        n = fr_numerics_ideal(FR_BF16);
    } else if (!strcmp(name, "ideal-fp16")) {
        n = fr_numerics_ideal(FR_F16);
    } else if (!strcmp(name, "ascend-a2")) {
        n = fr_numerics_ideal(FR_BF16);
        n.p_dtype = FR_DT_NONE;             /* spec 3 step 7: P cast to the input dtype */
        n.p_round = FR_ROUND_HALF_AWAY;     /* D3: CAST_ROUND */
        n.out_round = FR_ROUND_HALF_AWAY;   /* D3: final cast CAST_ROUND */
        n.kv_tile = 512;                    /* spec 3 "up to 1024 on A2" [I]: a typical S2 base block */
        n.rescale_threshold = 0.0;          /* spec 3: rescaled by exp(m_old - m_new) whenever the max grows */
        n.exp_base = FR_EMU_EXP_E;
        n.dpsum = FR_EMU_DPSUM_OUT;         /* spec 8.2: D from attention_in */
        n.ds_dtype = FR_DT_NONE;            /* spec 8.2: dS and P cast to the input dtype (mode unchecked [U]) */
        n.ds_round = FR_ROUND_HALF_AWAY;
        n.grad_round = FR_ROUND_HALF_AWAY;
    } else if (!strcmp(name, "fa4-sm100-fwd-inference") || !strcmp(name, "fa4-sm100-fwd-train")) {
        bool train = !strcmp(name, "fa4-sm100-fwd-train");
        n = fr_numerics_ideal(FR_BF16);
        n.p_dtype = FR_DT_NONE;             /* P.V operand in the input dtype (bf16/fp16), cvt RNE */
        n.exp_base = FR_EMU_EXP_2;          /* exp2 with scale * log2(e) folded (softmax.py) */
        n.kv_tile = 128;                    /* n_block_size 128 */
        n.order = FR_EMU_ORDER_REVERSE;     /* n_block from n_block_max - 1 down to 0 */
        n.rescale_threshold = train ? 0.0 : 8.0; /* interface.py: 0.0 if requires_grad and sparse_kv else 8.0 */
        n.rowsum = FR_EMU_ROWSUM_UNROUNDED; /* row_sum accumulates the fp32 p (update_row_sum) */
        n.dpsum = train ? FR_EMU_DPSUM_OUT_LO : FR_EMU_DPSUM_OUT; /* o_lo residual (SPARSE_MLA_DPSUM_PRECISION) */
        n.ds_dtype = FR_DT_NONE;
    } else if (!strcmp(name, "fast-ip1")) {
        /* flashref's fast engine with inner_precise = 1 (semantics-decisions.md D17, src/kernels/README.md) */
        n = fr_numerics_ideal(FR_BF16);
        n.p_dtype = FR_DT_NONE;             /* the input dtype (fp32 inputs: no rounding) */
        n.p_round = FR_ROUND_HALF_AWAY;     /* forward P cast (D3, every mode) */
        n.kv_tile = 128;                    /* FR_K_BN key rows per tile */
        n.q_tile = 64;                      /* FR_K_BM query rows per sub-tile (no numeric effect) */
        n.rescale_threshold = 0.0;          /* exact running max (core/osm.h, threshold 0) */
        n.rowsum = FR_EMU_ROWSUM_UNROUNDED; /* l sums the fp32 p before the cast */
        n.out_round = FR_ROUND_HALF_AWAY;   /* D3 */
        n.dpsum = FR_EMU_DPSUM_OUT;         /* D_i from attention_in */
        n.bwd_p = FR_EMU_P_RECOMPUTE;       /* P from the stored max and sum */
        n.ds_dtype = FR_DT_NONE;            /* D17: P o Z and dS cast to the input dtype before dV, dK, dQ ... */
        n.ds_round = FR_ROUND_NEAREST_EVEN; /* ... nearest even */
        n.grad_round = FR_ROUND_HALF_AWAY;  /* gradients stored as D3 */
    } else {
        return fr_fail(err, FR_E_INVALID_ARG,
                       "numerics preset: unknown name '%s' (exact, ideal-bf16, ideal-fp16, ascend-a2, "
                       "fa4-sm100-fwd-inference, fa4-sm100-fwd-train, fast-ip1)",
                       name);
    }
    snprintf(n.name, sizeof n.name, "%s", name);
    *out = n;
    return FR_OK;
}

static bool p_dtype_ok(fr_dtype t) {
    return t == FR_DT_NONE || t == FR_F64 || t == FR_F32 || t == FR_F16 || t == FR_BF16 || t == FR_E4M3FN ||
           t == FR_E5M2 || t == FR_HIF8;
}

fr_status fr_numerics_check(const fr_numerics *n, fr_error *err) {
    if (!n) return fr_fail(err, FR_E_NULL, "numerics: NULL");
    if (n->compute != FR_F32 && n->compute != FR_F64)
        return fr_fail(err, FR_E_INVALID_ARG, "numerics.compute: %s (fp32 or fp64)", fr_dtype_name(n->compute));
    if (n->q_tile < 1) return fr_fail(err, FR_E_INVALID_ARG, "numerics.q_tile: %lld < 1", (long long)n->q_tile);
    if (n->kv_tile < 1) return fr_fail(err, FR_E_INVALID_ARG, "numerics.kv_tile: %lld < 1", (long long)n->kv_tile);
    if (!(n->rescale_threshold >= 0) || isinf(n->rescale_threshold))
        return fr_fail(err, FR_E_INVALID_ARG, "numerics.rescale_threshold: %g (finite, >= 0)", n->rescale_threshold);
    if (n->exp_base != FR_EMU_EXP_E && n->exp_base != FR_EMU_EXP_2)
        return fr_fail(err, FR_E_INVALID_ARG, "numerics.exp_base: %d", (int)n->exp_base);
    if (!p_dtype_ok(n->p_dtype))
        return fr_fail(err, FR_E_INVALID_ARG, "numerics.p_dtype: %s", fr_dtype_name(n->p_dtype));
    if (!p_dtype_ok(n->ds_dtype))
        return fr_fail(err, FR_E_INVALID_ARG, "numerics.ds_dtype: %s", fr_dtype_name(n->ds_dtype));
    if (n->rowsum != FR_EMU_ROWSUM_UNROUNDED && n->rowsum != FR_EMU_ROWSUM_ROUNDED)
        return fr_fail(err, FR_E_INVALID_ARG, "numerics.rowsum: %d", (int)n->rowsum);
    if (n->order != FR_EMU_ORDER_FORWARD && n->order != FR_EMU_ORDER_REVERSE && n->order != FR_EMU_ORDER_PERM)
        return fr_fail(err, FR_E_INVALID_ARG, "numerics.order: %d", (int)n->order);
    if (n->order == FR_EMU_ORDER_PERM) {
        if (!n->perm || n->perm_len < 1)
            return fr_fail(err, FR_E_INVALID_ARG, "numerics.perm: NULL or perm_len %lld < 1", (long long)n->perm_len);
        for (int64_t k = 0; k < n->perm_len; k++) {
            if (n->perm[k] < 0 || n->perm[k] >= n->perm_len)
                return fr_fail(err, FR_E_INVALID_ARG, "numerics.perm[%lld] = %lld outside [0, %lld)", (long long)k,
                               (long long)n->perm[k], (long long)n->perm_len);
            for (int64_t k2 = 0; k2 < k; k2++)
                if (n->perm[k2] == n->perm[k])
                    return fr_fail(err, FR_E_INVALID_ARG, "numerics.perm: %lld appears twice",
                                   (long long)n->perm[k]);
        }
    }
    const fr_dtype accs[2] = {n->acc_o, n->acc_l};
    for (int k = 0; k < 2; k++)
        if (accs[k] != FR_F64 && accs[k] != FR_F32 && accs[k] != FR_F16)
            return fr_fail(err, FR_E_INVALID_ARG, "numerics.%s: %s (fp64, fp32 or fp16)", k ? "acc_l" : "acc_o",
                           fr_dtype_name(accs[k]));
    const fr_round rs[4] = {n->p_round, n->out_round, n->ds_round, n->grad_round};
    for (int k = 0; k < 4; k++)
        if (rs[k] != FR_ROUND_NEAREST_EVEN && rs[k] != FR_ROUND_HALF_AWAY)
            return fr_fail(err, FR_E_INVALID_ARG, "numerics: rounding mode %d invalid", (int)rs[k]);
    if (n->dpsum != FR_EMU_DPSUM_OUT && n->dpsum != FR_EMU_DPSUM_OUT_LO && n->dpsum != FR_EMU_DPSUM_F32)
        return fr_fail(err, FR_E_INVALID_ARG, "numerics.dpsum: %d", (int)n->dpsum);
    if (n->bwd_p != FR_EMU_P_RECOMPUTE && n->bwd_p != FR_EMU_P_LOADED)
        return fr_fail(err, FR_E_INVALID_ARG, "numerics.bwd_p: %d", (int)n->bwd_p);
    return FR_OK;
}
