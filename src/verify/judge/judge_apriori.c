/* The judge's a-priori scales (judge_apriori.h): what any correct implementation's error is bounded by, from the case's
 * inputs and the proved rounding bounds alone, never from an implementation's outputs. */
#include "verify/judge/judge_apriori.h"

#include "core/core.h"
#include "core/osm_bound.h"
#include "core/validate.h"
#include "verify/metrics/metrics.h"

#include <float.h>
#include <math.h>

/* Unit roundoff of a dtype (half an ulp at 1). */
double fr_judge_unit_roundoff(fr_dtype dt) {
    switch (dt) {
    case FR_F64: return ldexp(1.0, -53);
    case FR_F32: return ldexp(1.0, -24);
    case FR_F16: return ldexp(1.0, -11);
    case FR_BF16: return ldexp(1.0, -8);
    case FR_E4M3FN: return ldexp(1.0, -4);
    case FR_E5M2: return ldexp(1.0, -3);
    case FR_HIF8: return ldexp(1.0, -4);
    default: return ldexp(1.0, -24);
    }
}

/* Largest |x| over a tensor (any strides); max row norm over rows of length d (C order). */
static void tensor_stats(const fr_tensor *t, int64_t d, double *maxabs, double *maxnorm) {
    *maxabs = 0;
    *maxnorm = 0;
    if (!fr_tensor_present(t)) return;
    int64_t n = fr_tensor_numel(t);
    double ss = 0;
    for (int64_t k = 0; k < n; k++) {
        double v = fr_load_f64(t, fr_tensor_offset_linear(t, k));
        if (!isfinite(v)) continue;
        if (fabs(v) > *maxabs) *maxabs = fabs(v);
        ss += v * v;
        if (d > 0 && (k + 1) % d == 0) {
            if (ss > *maxnorm) *maxnorm = ss;
            ss = 0;
        }
    }
    *maxnorm = sqrt(*maxnorm);
}

/* A-priori ceiling on attention_out's max abs error: the proved rounding bound of the online softmax (proofs/round,
 * core/osm_bound.h) for ANY fp32 implementation of this length: n keys (the sink counts), every tiling (K = n), both
 * exps within 2 ulp, P rounded to the dtype (and once more by dropout's 1/keep_prob), V = max|v| / keep_prob, on
 * scores off the exact ones by at most Delta = (D + 3) u |scale| (|q| |k| + |pse|) (the GEMM's sum of D products,
 * the scale, the pse: Higham's dot-product bound), which moves softmax . v by at most 2 V (e^Delta - 1) /
 * (2 - e^Delta) (proved too: Model.v perturb); plus one ulp of the output. */
double fr_judge_apriori_abs(const fr_case *c, const fr_problem *pb, fr_dtype out_dt) {
    const fr_fwd_inputs *in = &c->in.fwd;
    double qa, qn, ka, kn, va, vn, pa = 0, pn;
    tensor_stats(&in->query, pb->Dk, &qa, &qn);
    tensor_stats(&in->key, pb->Dk, &ka, &kn);
    tensor_stats(&in->value, pb->Dv, &va, &vn);
    if (pb->has_pse && !fr_pse_type_is_slopes(pb->pse_type)) tensor_stats(&in->real_shift, 0, &pa, &pn);
    double qr = 0, kr = 0, t;
    if (pb->has_rope) {
        tensor_stats(&in->query_rope, pb->Drope, &t, &qr);
        tensor_stats(&in->key_rope, pb->Drope, &t, &kr);
    }
    double sc = fabs(c->params.scale_value);
    double R = sc * (qn * kn + qr * kr + pa);
    /* ALiBi: bounded by slope x distance; be generous */
    if (pb->has_pse && fr_pse_type_is_slopes(pb->pse_type)) R += 1e4;
    if (pb->fp8) R *= 1e3;                            /* dequant scales (kept generous rather than exact) */
    double kp = c->params.keep_prob > 0 ? c->params.keep_prob : 1.0;
    double u = ldexp(1.0, -24), V = va / kp;
    double up = pb->dtype == FR_F32 || pb->dtype == FR_F64 ? 0.0 : fr_judge_unit_roundoff(pb->dtype);
    if (pb->has_drop) up = (1.0 + up) * (1.0 + u) - 1.0;
    double delta = ((double)(pb->Dk + pb->Drope) + 3.0) * u * R * 1.01; /* 1.01: gamma_D over D u */
    double n = (double)pb->S2 + (pb->has_sink ? 1.0 : 0.0);
    fr_osm_bound_params bp = fr_osm_bound_f32_any(up);
    double soft = n >= 1 ? fr_osm_bound_kernel(&bp, n, n, 2.0 * (R + delta), V) : 0.0;
    double ed = expm1(delta), pert = ed < 1.0 ? 2.0 * V * ed / (1.0 - ed) : INFINITY;
    return soft + pert + fr_ulp_of(out_dt, V) + DBL_MIN;
}

/* A gradient whose golden is exactly zero everywhere (its terms cancel exactly: a softmax over one key gives
 * dS = P (dP - D_i) = 0, and so dq = dk = 0) has no scale for rel-L2 (any rounding is an infinite relative error).
 * Its scale is then that of the cancelling terms: an implementation's fp32 dP and D_i each carry about n u |dY_i| |V|
 * of rounding (the spec's optional casts of P and dS to the dtype scale with dS, here 0), which reaches dq via scale |K|
 * summed over at most 1 / keep_prob of P's mass, dk through scale |Q| over at most G S1 query rows, dv through |dY|
 * over as many. Returns that absolute scale (0 for outputs it does not cover). */
double fr_judge_apriori_grad_abs(const fr_case *c, const fr_problem *pb, fr_case_output k) {
    const fr_bwd_inputs *in = &c->in;
    double qa, qn, ka, kn, va, vn, da, dn, qra = 0, kra = 0, t;
    tensor_stats(&in->fwd.query, pb->Dk, &qa, &qn);
    tensor_stats(&in->fwd.key, pb->Dk, &ka, &kn);
    tensor_stats(&in->fwd.value, pb->Dv, &va, &vn);
    tensor_stats(&in->dy, pb->Dv, &da, &dn);
    if (pb->has_rope) {
        tensor_stats(&in->fwd.query_rope, pb->Drope, &qra, &t);
        tensor_stats(&in->fwd.key_rope, pb->Drope, &kra, &t);
    }
    double kp = c->params.keep_prob > 0 ? c->params.keep_prob : 1.0;
    double u = ((double)pb->S2 + (double)(pb->Dk + pb->Drope) + (double)pb->Dv + 2.0) * ldexp(1.0, -24);
    double sc = fabs(c->params.scale_value), dp = 2.0 * dn * vn / kp, rows = (double)pb->G * (double)pb->S1;
    switch (k) {
    case FR_CO_DQ:
    case FR_CO_DQ_ROPE: return sc * dp * fmax(ka, kra) * u + DBL_MIN;
    case FR_CO_DK:
    case FR_CO_DK_ROPE: return sc * dp * fmax(qa, qra) * rows * u + DBL_MIN;
    case FR_CO_DV: return da / kp * rows * u + DBL_MIN;
    default: return 0.0;
    }
}

/* dsink_h = -sum_i P_sink,i D_i (D6) sums terms of both signs: its relative error is about u times
 * sum |t| / |sum t|, which the ideal pipeline (fp64 where the fast kernels keep fp32 D_i and P) does not show. Returns
 * that condition over the heads (as rel-L2 aggregates them: sqrt(sum_h (sum |t|)^2 / sum_h (sum t)^2)), 1 when it
 * cannot be formed. */
double fr_judge_dsink_cond(const fr_case *c, const fr_problem *pb) {
    const fr_bwd_inputs *in = &c->in;
    fr_softmax_layout sl = c->params.softmax_layout;
    if (!fr_tensor_present(&in->fwd.sink) || !fr_tensor_present(&in->softmax_max) ||
        !fr_tensor_present(&in->softmax_sum) || !fr_tensor_present(&in->dy) || !fr_tensor_present(&in->attention_in))
        return 1.0;
    double num = 0, den = 0;
    for (int64_t h = 0; h < pb->N1; h++) {
        double sabs = 0, sum = 0, sk = fr_load_f64(&in->fwd.sink, h * in->fwd.sink.strides[0]);
        for (int64_t b = 0; b < pb->B; b++) {
            int64_t q0, len;
            fr_problem_q_rows(pb, b, &q0, &len);
            for (int64_t i = 0; i < len; i++) {
                const fr_tensor *tm = &in->softmax_max, *ts = &in->softmax_sum;
                double m = fr_load_f64(tm, fr_softmax_offset(tm, pb->layout, sl, q0, b, h, i, 0));
                double l = fr_load_f64(ts, fr_softmax_offset(ts, pb->layout, sl, q0, b, h, i, 0));
                if (!(l > 0) || !isfinite(m) || !isfinite(l)) continue;
                double d = 0;
                for (int64_t e = 0; e < pb->Dv; e++)
                    d += fr_load_f64(&in->dy, fr_layout_offset(&in->dy, pb->layout, pb->Dv, q0, b, h, i, e)) *
                         fr_load_f64(&in->attention_in,
                                     fr_layout_offset(&in->attention_in, pb->layout, pb->Dv, q0, b, h, i, e));
                double t = exp(sk - m) / l * d;
                if (isfinite(t)) sabs += fabs(t), sum += t;
            }
        }
        num += sabs * sabs, den += sum * sum;
    }
    return den > 0 && num > 0 ? fmax(1.0, sqrt(num / den)) : 1.0;
}
