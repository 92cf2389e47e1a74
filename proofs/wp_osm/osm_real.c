/* The tiled online softmax over the REAL numbers (WP, -wp-model Typed+real: every double is a real, so this
 * proves the algorithm, not its rounding). Mirror of src/core/osm.h: a per-row state (m, l, o) passed by value,
 * merge(a, b) of two states over disjoint keys, and the online update that is literally a call to merge (the
 * state so far with the state of the next tile). o is one column of the P.V accumulator: every column obeys the
 * same equations with its own v, so one column is the general case.
 *
 * exp appears only as ew(x, t) = exp(x - t) (ew.h); each exp the code evaluates is a call to exp_le0 / exp_lazy,
 * whose precondition is the bound on its argument: those preconditions, checked at every call site, are the
 * properties "every exp argument <= 0" (exact) and "<= threshold" (lazy rescale).
 *
 * Keys [a, b) of a row: scores s[a..b-1], values v[a..b-1]. */
#include "osm_defs.h"

/* The state of one tile [a, b), relative to its own max: two passes, arguments <= 0. */
st tile(double *s, double *v, int a, int b) {
    double m = s[a];
    /*@ loop invariant a + 1 <= i <= b;
        loop invariant m == mx(s, a, i);
        loop invariant \forall integer k; a <= k < i ==> s[k] <= m;
        loop assigns i, m;
        loop variant b - i; */
    for (int i = a + 1; i < b; i++)
        if (s[i] > m) m = s[i];
    st x = {m, 0, 0};
    /*@ loop invariant a <= i <= b;
        loop invariant x.m == m && x.l == sl(s, a, i, m) && x.o == so(s, v, a, i, m);
        loop invariant i > a ==> x.l > 0;
        loop assigns i, x;
        loop variant b - i; */
    for (int i = a; i < b; i++) {
        double p = exp_le0(s[i], m);
        x.l += p;
        x.o += p * v[i];
    }
    return x;
}
/* Merging the states of two adjacent key ranges gives the state of their union. */
/*@ requires 0 <= a < b < c && rd(s, v, a, c);
    requires exact_state(x, s, v, a, b) && exact_state(y, s, v, b, c);
    assigns \nothing;
    ensures merge_union: exact_state(\result, s, v, a, c); */
st merge_adjacent(double *s, double *v, int a, int b, int c, st x, st y) {
    //@ assert x.m == mx(s, a, b) && x.l == sl(s, a, b, x.m) && x.o == so(s, v, a, b, x.m);
    //@ assert y.m == mx(s, b, c) && y.l == sl(s, b, c, y.m) && y.o == so(s, v, b, c, y.m);
    st r = merge(x, y);
    ind_mx_concat(s, a, b, c);
    ind_scale(s, v, a, b, x.m, r.m);
    ind_scale(s, v, b, c, y.m, r.m);
    ind_concat(s, v, a, b, c, r.m);
    //@ assert r.m == mx(s, a, c);
    //@ assert r.l == sl(s, a, b, x.m) * ew(x.m, r.m) + sl(s, b, c, y.m) * ew(y.m, r.m);
    //@ assert r.l == sl(s, a, b, r.m) + sl(s, b, c, r.m);
    //@ assert r.o == so(s, v, a, b, x.m) * ew(x.m, r.m) + so(s, v, b, c, y.m) * ew(y.m, r.m);
    //@ assert r.o == so(s, v, a, b, r.m) + so(s, v, b, c, r.m);
    return r;
}

/* (a), (b): the exact tiled online softmax, any n >= 1, any tile size T >= 1. */
/*@ requires 1 <= n && 1 <= T && n <= INT_MAX - T && rd(s, v, 0, n);
    assigns \nothing;
    ensures online_invariant_at_end: exact_state(\result, s, v, 0, n);
    ensures softmax: \result.o / \result.l == so(s, v, 0, n, mx(s, 0, n)) / sl(s, 0, n, mx(s, 0, n)); */
st online(double *s, double *v, int n, int T) {
    int j = T < n ? T : n;
    st x = tile(s, v, 0, j);
    /*@ loop invariant 1 <= j <= n;
        loop invariant online_invariant: exact_state(x, s, v, 0, j);
        loop assigns j, x;
        loop variant n - j; */
    while (j < n) {
        int e = n - j < T ? n : j + T;
        st t = tile(s, v, j, e);
        x = merge_adjacent(s, v, 0, j, e, x, t); /* the online update is the merge */
        j = e;
    }
    return x;
}

