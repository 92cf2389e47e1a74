/* The proved rounding bound of the online softmax, evaluated (osm_bound.h; proofs/round/Model.v). */
#include "core/osm_bound.h"

#include <math.h>

/* dev = max(P e^{u R} - 1, 1 - P_ e^{-u R}) (Model.v dev), through log1p / expm1 so that a c u of 1e-10 keeps its
 * digits. */
static double dev(const fr_osm_bound_params *p, double e, double c, double k, double R) {
    double up = c * log1p(p->u) + k * log1p(p->eps_a) + log1p(e) + p->u * R;
    double dn = c * log1p(-p->u) + k * log1p(-p->eps_a) + log1p(-e) - p->u * R;
    return fmax(expm1(up), -expm1(dn));
}

/* P = (1+u)^c (1+eps_a)^k (1+e) (Model.v P with q = 1). */
static double pfac(const fr_osm_bound_params *p, double e, double c, double k) {
    return exp(c * log1p(p->u) + k * log1p(p->eps_a) + log1p(e));
}

/* Model.v final_div's right-hand side for the l side (e_l, c_l) and the o side (e_o, c_o), k rescale exps. */
static double bound(const fr_osm_bound_params *p, double n, double cl, double co, double k, double range, double V,
                    double el, double eo, double hl, double ho) {
    double GL = 4.0 * (p->eta + hl + p->h_a), GO = 2.0 * (p->eta + ho + p->h_a) * (1.0 + V);
    double dl = dev(p, el, cl, k, range), dO = dev(p, eo, co, k, range);
    double Al = n * GL * (cl + k + 2.0) * pfac(p, el, cl, k), Ao = n * GO * (co + k + 2.0) * pfac(p, eo, co, k);
    if (!(dl + Al < 1.0)) return INFINITY;
    double b = (1.0 + p->u) * ((V * (dl + dO) + Ao + V * Al) / (1.0 - dl - Al)) + p->u * V + p->eta;
    return b * (1.0 + 0x1p-40); /* the few roundings of this evaluation, upward */
}

double fr_osm_bound_kernel(const fr_osm_bound_params *p, double n, double K, double range, double V) {
    if (!(n >= 1) || !(K >= 1) || K > n || !(range >= 0) || !(V >= 0)) return INFINITY;
    double eo = (1.0 + p->eps_l) * (1.0 + p->u_p) - 1.0, ho = p->h_l * (1.0 + p->u_p) + p->h_p;
    return bound(p, n, n + K - 2.0, n + K - 1.0, K - 1.0, range, V, p->eps_l, eo, p->h_l, ho);
}

double fr_osm_bound_golden(const fr_osm_bound_params *p, double n, double B, double range, double V) {
    if (!(n >= 1) || !(B >= 1) || B > n || !(range >= 0) || !(V >= 0)) return INFINITY;
    return bound(p, n, n + B - 1.0, n + B - 1.0, B - 1.0, range, V, p->eps_l, p->eps_l, p->h_l, p->h_l);
}

fr_osm_bound_params fr_osm_bound_f32_kernels(void) {
    return (fr_osm_bound_params){.u = 0x1p-24, .eta = 0x1p-150, .eps_a = FR_OSM_EXPF_EPS, .h_a = FR_OSM_EXPF_H,
                                 .eps_l = FR_OSM_EXPV_EPS, .h_l = FR_OSM_EXPV_H, .u_p = 0, .h_p = 0};
}

fr_osm_bound_params fr_osm_bound_f64_golden(void) {
    /* eta = 2^-1075 is not a double: 2^-1074 bounds it */
    return (fr_osm_bound_params){.u = 0x1p-53, .eta = 0x1p-1074, .eps_a = FR_OSM_EXP64_EPS, .h_a = FR_OSM_EXP64_H,
                                 .eps_l = FR_OSM_EXP64_EPS, .h_l = FR_OSM_EXP64_H, .u_p = 0, .h_p = 0};
}

fr_osm_bound_params fr_osm_bound_f32_any(double u_p) {
    /* h_p: half the smallest subnormal of bf16 (2^-134) or fp16 (2^-25), the larger when rounding at all */
    return (fr_osm_bound_params){.u = 0x1p-24, .eta = 0x1p-150, .eps_a = FR_OSM_JUDGE_EXP_EPS,
                                 .h_a = FR_OSM_JUDGE_EXP_H, .eps_l = FR_OSM_JUDGE_EXP_EPS, .h_l = FR_OSM_JUDGE_EXP_H,
                                 .u_p = u_p, .h_p = u_p > 0 ? 0x1p-25 : 0};
}
