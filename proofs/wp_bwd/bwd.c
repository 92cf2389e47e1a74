/* Backward recomputation of P from the stored (m, l), over the reals (definitions in ../wp_osm/osm_defs.h). */
#include "../wp_osm/osm_defs.h"

/* Backward recomputation P_k = exp(s_k - m) / l from the stored (m, l) of either variant: the argument is <= th
 * (<= 0 for the exact one, th = 0) and P_k is exactly the softmax weight of key k (stated as P_k * sum = weight,
 * sum > 0, to keep division out of the provers' way). M: the true max (proof only). */
/*@ requires 1 <= n && 0 <= k < n && rd(s, v, 0, n) && th >= 0 && lazy_state(x, s, v, 0, n, th);
    requires M == mx(s, 0, n);
    assigns \nothing;
    ensures bwd_softmax: \result * sl(s, 0, n, mx(s, 0, n)) == ew(s[k], mx(s, 0, n)); */
double bwd_p(double *s, double *v, int n, st x, int k, double th, double M) {
    //@ assert x.l == sl(s, 0, n, x.m) && x.m <= M <= x.m + th && x.l > 0;
    ind_mx_ge(s, 0, n, k);
    ind_scale(s, v, 0, n, x.m, M);
    //@ assert sl(s, 0, n, M) == x.l * ew(x.m, M);
    //@ assert ew(s[k], x.m) * ew(x.m, M) == ew(s[k], M);
    double p = exp_lazy(s[k], x.m, th) / x.l;
    //@ assert p * x.l == ew(s[k], x.m);
    //@ assert p * (x.l * ew(x.m, M)) == ew(s[k], x.m) * ew(x.m, M);
    return p;
}

