/* The inductive facts about the max and the sums of a key range (contracts in ../wp_osm/osm_defs.h), each proved by
 * the loop of a lemma function: concatenation of ranges and rescaling of a sum to another reference. */
#include "../wp_osm/osm_defs.h"

void ind_mx_ge(double *s, int a, int b, int k) {
    /*@ loop invariant k + 1 <= i <= b;
        loop invariant s[k] <= mx(s, a, i);
        loop assigns i;
        loop variant b - i; */
    for (int i = k + 1; i < b; i++) {
    }
}

void ind_mx_concat(double *s, int a, int b, int c) {
    /*@ loop invariant b + 1 <= i <= c;
        loop invariant mx(s, a, i) == rmax(mx(s, a, b), mx(s, b, i));
        loop assigns i;
        loop variant c - i; */
    for (int i = b + 1; i < c; i++) {
    }
}

void ind_concat(double *s, double *v, int a, int b, int c, double t) {
    /*@ loop invariant b <= i <= c;
        loop invariant sl(s, a, i, t) == sl(s, a, b, t) + sl(s, b, i, t);
        loop invariant so(s, v, a, i, t) == so(s, v, a, b, t) + so(s, v, b, i, t);
        loop assigns i;
        loop variant c - i; */
    for (int i = b; i < c; i++) {
    }
}

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

void ind_scale(double *s, double *v, int a, int b, double t, double u) {
    ind_scale_l(s, v, a, b, t, u);
    ind_scale_o(s, v, a, b, t, u);
}
