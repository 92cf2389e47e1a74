/* (e) The lazy-rescale variant of the online softmax over the reals (definitions in ../wp_osm/osm_defs.h). */
#include "../wp_osm/osm_defs.h"

/* Merge to a chosen reference r (both arguments <= th): the lazy update, and the exact merge with r = max. */
/*@ requires th >= 0 && a.m - r <= th && b.m - r <= th;
    assigns \nothing;
    ensures \result.m == r;
    ensures \result.l == a.l * ew(a.m, r) + b.l * ew(b.m, r);
    ensures \result.o == a.o * ew(a.m, r) + b.o * ew(b.m, r); */
st merge_to(st a, st b, double r, double th) {
    double ca = exp_lazy(a.m, r, th), cb = exp_lazy(b.m, r, th);
    st x = {r, a.l * ca + b.l * cb, a.o * ca + b.o * cb};
    return x;
}

/* (e): lazy rescale with threshold th > 0: the reference moves only when a tile's max exceeds it by more than th. */
/*@ requires 1 <= n && 1 <= T && n <= INT_MAX - T && rd(s, v, 0, n) && th > 0;
    assigns \nothing;
    ensures lazy_invariant_at_end: lazy_state(\result, s, v, 0, n, th);
    ensures lazy_softmax: \result.o * sl(s, 0, n, mx(s, 0, n)) == so(s, v, 0, n, mx(s, 0, n)) * \result.l; */
st online_lazy(double *s, double *v, int n, int T, double th) {
    int j = T < n ? T : n;
    st x = tile(s, v, 0, j);
    double M = x.m; /* proof only: the true running max, to name it in the lemma calls */
    /*@ loop invariant 1 <= j <= n;
        loop invariant lazy_invariant: lazy_state(x, s, v, 0, j, th);
        loop invariant true_max: M == mx(s, 0, j);
        loop assigns j, x, M;
        loop variant n - j; */
    while (j < n) {
        int e = n - j < T ? n : j + T;
        st t = tile(s, v, j, e);
        //@ assert x.l == sl(s, 0, j, x.m) && x.o == so(s, v, 0, j, x.m) && x.m <= mx(s, 0, j) <= x.m + th;
        //@ assert t.m == mx(s, j, e) && t.l == sl(s, j, e, t.m) && t.o == so(s, v, j, e, t.m);
        double r = t.m - x.m > th ? t.m : x.m; /* stale max kept unless the tile goes past it by more than th */
        st y = merge_to(x, t, r, th);
        ind_mx_concat(s, 0, j, e);
        ind_scale(s, v, 0, j, x.m, r);
        ind_scale(s, v, j, e, t.m, r);
        ind_concat(s, v, 0, j, e, r);
        //@ assert y.m <= mx(s, 0, e) <= y.m + th;
        //@ assert y.l == sl(s, 0, j, r) + sl(s, j, e, r);
        //@ assert y.o == so(s, v, 0, j, r) + so(s, v, j, e, r);
        //@ assert mul_pos(x.l, ew(x.m, r)) && mul_pos(t.l, ew(t.m, r));
        M = M >= t.m ? M : t.m;
        x = y;
        j = e;
    }
    //@ assert x.l == sl(s, 0, n, x.m) && x.o == so(s, v, 0, n, x.m);
    ind_scale(s, v, 0, n, x.m, M);
    //@ assert sl(s, 0, n, M) == x.l * ew(x.m, M) && so(s, v, 0, n, M) == x.o * ew(x.m, M);
    //@ assert x.o * (x.l * ew(x.m, M)) == (x.o * ew(x.m, M)) * x.l;
    return x;
}

