/* The proved rounding bound of the online softmax (proofs/round, README there), evaluated. The formula is the one
 * the Coq theorems state (proofs/round/Model.v split_bound for core/osm.h as the kernels drive it, golden_bound
 * for the fp64 golden's row); this file transcribes it term for term, and tests/core/test_osm_bound.c checks the
 * transcription against a first-order expansion and the numbers of proofs/README.md.
 *
 * For one output element of one row: n keys (the sink counts as one) with scores in an interval of width `range`,
 * values |v| <= V, processed in K tiles (any sizes, any merge tree of partial rows) or, for the golden, in B blocks
 * of GD_BC keys; P.V and the tile sums in any order, with fma or not. Then
 *     |out - softmax(x) . v| <= (1 + u) (V (dl + do) + Ao + V Al) / (1 - dl - Al) + u V + eta
 * with dl, do = max(P e^{u range} - 1, 1 - P_ e^{-u range}) over the roundings (c), rescale exps (k) and leaf
 * errors (q = 1) of a key's path:  P = (1+u)^c (1+eps_a)^k (1+eps_q),  P_ = (1-u)^c (1-eps_a)^k (1-eps_q);
 *     kernels (osm.h, plain accumulation):  l: c = n + K - 2, o: c = n + K - 1, k = K - 1;
 *     golden:                                l and o: c = n + B - 1, k = B - 1;
 * and Al, Ao the absolute parts (underflow, the exps' floors): N G (c + k + 2) P with G = 4 (eta + h_l + h_a) for
 * l, 2 (eta + h_o + h_a)(1 + V) for o. Valid when dl + Al < 1 (else the functions return +inf). */
#ifndef FR_CORE_OSM_BOUND_H
#define FR_CORE_OSM_BOUND_H

/* The exp hypotheses: |exp^(z) - e^z| <= EPS e^z + H for every float z <= 0, measured exhaustively for fp32 by
 * tests/exhaustive/exhaustive_exp.c (make prove-exp), sampled for fp64 against expl. */
#define FR_OSM_EXPF_EPS 0x1.04p-24 /* libm expf: alpha, merge factors, the scalar and top-k weights */
#define FR_OSM_EXPF_H 0x1p-149
#define FR_OSM_EXPV_EPS 0x1.8p-24 /* the kernels' vectorized exp (avx2, avx512) */
#define FR_OSM_EXPV_H 0x1p-125
#define FR_OSM_EXP64_EPS 0x1p-52 /* glibc exp: the golden's weights and rescale factors */
#define FR_OSM_EXP64_H 0x1p-1074

/* The hypothesis the verifier's a-priori rule assumes of ANY fp32 implementation it judges: both exps within this
 * relative error (2 ulp of fp32) and this floor. */
#define FR_OSM_JUDGE_EXP_EPS 0x1p-22
#define FR_OSM_JUDGE_EXP_H 0x1p-125

typedef struct fr_osm_bound_params {
    double u, eta;     /* unit roundoff of the arithmetic, half its smallest subnormal */
    double eps_a, h_a; /* rescale exp (osm.h alpha, merge factors; the golden's alpha) */
    double eps_l, h_l; /* weight exp, exp(x - m) */
    double u_p, h_p;   /* P rounded to the input dtype before P.V (0, 0: not rounded) */
} fr_osm_bound_params;

/* The constants of the code under the measured hypotheses: fp32 kernels (vectorized exp), fp64 golden. */
fr_osm_bound_params fr_osm_bound_f32_kernels(void);
fr_osm_bound_params fr_osm_bound_f64_golden(void);
/* Any fp32 online softmax under FR_OSM_JUDGE_EXP_*, with P rounded to a format of unit roundoff u_p (0: none). */
fr_osm_bound_params fr_osm_bound_f32_any(double u_p);

/* The kernels' bound (split_bound): n keys in K tiles (K <= n; K = n covers any tiling). */
double fr_osm_bound_kernel(const fr_osm_bound_params *p, double n, double K, double range, double V);
/* The golden's bound (golden_bound): n keys in B blocks. */
double fr_osm_bound_golden(const fr_osm_bound_params *p, double n, double B, double range, double V);

#endif
