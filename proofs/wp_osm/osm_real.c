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
#include <limits.h>
#include "ew.h"
#include "osm_merge.h"


/*@
    // max of s[a..b-1], for b > a
    logic real mx{L}(double *s, integer a, integer b) = b <= a + 1 ? s[a] : rmax(mx(s, a, b - 1), s[b - 1]);
    // sum of ew(s_k, t) over [a, b)
    logic real sl{L}(double *s, integer a, integer b, real t) = b <= a ? 0.0 : sl(s, a, b - 1, t) + ew(s[b - 1], t);
    // sum of ew(s_k, t) v_k over [a, b)
    logic real so{L}(double *s, double *v, integer a, integer b, real t) =
        b <= a ? 0.0 : so(s, v, a, b - 1, t) + ew(s[b - 1], t) * v[b - 1];

    // The invariant of the exact algorithm on keys [a, b): m is their max, l and o their sums relative to m.
    predicate exact_state{L}(st x, double *s, double *v, integer a, integer b) =
        x.m == mx(s, a, b) && x.l == sl(s, a, b, x.m) && x.o == so(s, v, a, b, x.m) && x.l > 0;
    // The lazy-rescale invariant: the same sums relative to a stale max m, within th of the true max.
    predicate lazy_state{L}(st x, double *s, double *v, integer a, integer b, real th) =
        x.m <= mx(s, a, b) <= x.m + th && x.l == sl(s, a, b, x.m) && x.o == so(s, v, a, b, x.m) && x.l > 0;

    predicate mul_pos(real p, real q) = p * q > 0;
    lemma mul_pos_l: \forall real p, q; p > 0 && q > 0 ==> mul_pos(p, q);

    predicate rd{L}(double *s, double *v, integer a, integer b) =
        \valid_read(s + (a .. b - 1)) && \valid_read(v + (a .. b - 1));
*/

/* exp(x - t) with x - t <= th: (e) every exp argument of the lazy variant is <= th. */
/*@ requires th >= 0;
    requires exp_arg_le_th: x - t <= th;
    assigns \nothing;
    ensures \result == ew(x, t); */
double exp_lazy(double x, double t, double th);

/* ---- ind_*: lemma functions, the inductive facts about mx, sl, so, each proved by its loop ---- */

/*@ requires 0 <= a <= k < b && rd(s, s, a, b);
    assigns \nothing;
    ensures mx_ge: s[k] <= mx(s, a, b); */
void ind_mx_ge(double *s, int a, int b, int k) {
    /*@ loop invariant k + 1 <= i <= b;
        loop invariant s[k] <= mx(s, a, i);
        loop assigns i;
        loop variant b - i; */
    for (int i = k + 1; i < b; i++) {
    }
}

/*@ requires 0 <= a < b < c && rd(s, s, a, c);
    assigns \nothing;
    ensures mx_concat: mx(s, a, c) == rmax(mx(s, a, b), mx(s, b, c)); */
void ind_mx_concat(double *s, int a, int b, int c) {
    /*@ loop invariant b + 1 <= i <= c;
        loop invariant mx(s, a, i) == rmax(mx(s, a, b), mx(s, b, i));
        loop assigns i;
        loop variant c - i; */
    for (int i = b + 1; i < c; i++) {
    }
}

/*@ requires 0 <= a <= b <= c && rd(s, v, a, c);
    assigns \nothing;
    ensures sl_concat: sl(s, a, c, t) == sl(s, a, b, t) + sl(s, b, c, t);
    ensures so_concat: so(s, v, a, c, t) == so(s, v, a, b, t) + so(s, v, b, c, t); */
void ind_concat(double *s, double *v, int a, int b, int c, double t) {
    /*@ loop invariant b <= i <= c;
        loop invariant sl(s, a, i, t) == sl(s, a, b, t) + sl(s, b, i, t);
        loop invariant so(s, v, a, i, t) == so(s, v, a, b, t) + so(s, v, b, i, t);
        loop assigns i;
        loop variant c - i; */
    for (int i = b; i < c; i++) {
    }
}

/*@ requires 0 <= a <= b && rd(s, v, a, b);
    assigns \nothing;
    ensures sl_scale: sl(s, a, b, t) * ew(t, u) == sl(s, a, b, u); */
void ind_scale_l(double *s, double *v, int a, int b, double t, double u) {
    /*@ loop invariant a <= i <= b;
        loop invariant sl(s, a, i, t) * ew(t, u) == sl(s, a, i, u);
        loop assigns i;
        loop variant b - i; */
    for (int i = a; i < b; i++) {
        //@ assert ew(s[i], t) * ew(t, u) == ew(s[i], u);
        //@ assert (sl(s, a, i, t) + ew(s[i], t)) * ew(t, u) == sl(s, a, i, t) * ew(t, u) + ew(s[i], t) * ew(t, u);
        //@ assert sl(s, a, i + 1, t) == sl(s, a, i, t) + ew(s[i], t);
        //@ assert sl(s, a, i + 1, u) == sl(s, a, i, u) + ew(s[i], u);
    }
}

/*@ requires 0 <= a <= b && rd(s, v, a, b);
    assigns \nothing;
    ensures so_scale: so(s, v, a, b, t) * ew(t, u) == so(s, v, a, b, u); */
void ind_scale_o(double *s, double *v, int a, int b, double t, double u) {
    /*@ loop invariant a <= i <= b;
        loop invariant so(s, v, a, i, t) * ew(t, u) == so(s, v, a, i, u);
        loop assigns i;
        loop variant b - i; */
    for (int i = a; i < b; i++) {
        //@ assert so(s, v, a, i + 1, u) == so(s, v, a, i, u) + ew(s[i], u) * v[i];
        //@ assert so(s, v, a, i + 1, t) == so(s, v, a, i, t) + ew(s[i], t) * v[i];
        //@ assert ew(s[i], t) * ew(t, u) == ew(s[i], u);
        //@ assert (so(s, v, a, i, t) + ew(s[i], t) * v[i]) * ew(t, u) == so(s, v, a, i, t) * ew(t, u) + (ew(s[i], t) * ew(t, u)) * v[i];
    }
}

/*@ requires 0 <= a <= b && rd(s, v, a, b);
    assigns \nothing;
    ensures sl_scale: sl(s, a, b, t) * ew(t, u) == sl(s, a, b, u);
    ensures so_scale: so(s, v, a, b, t) * ew(t, u) == so(s, v, a, b, u); */
void ind_scale(double *s, double *v, int a, int b, double t, double u) {
    ind_scale_l(s, v, a, b, t, u);
    ind_scale_o(s, v, a, b, t, u);
}

/* ---- the routines ---- */

/* The state of one tile [a, b), relative to its own max: two passes, arguments <= 0. */
/*@ requires 0 <= a < b && rd(s, v, a, b);
    assigns \nothing;
    ensures tile_state: exact_state(\result, s, v, a, b); */
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
