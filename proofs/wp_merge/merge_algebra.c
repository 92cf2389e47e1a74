/* (c) The merge of two online-softmax states (osm_merge.h, the routine wp_osm uses) is commutative and associative
 * over the reals, for all states a, b, c: split-KV partial states may be combined in any order and grouping.
 * Kept apart from wp_osm, and free of quantified lemmas: with many-variable lemmas about products in their context
 * the provers fail even on these ground goals. rescale_sum is the one algebraic step, proved in isolation. */
#include "../wp_osm/osm_merge.h"

/*@ assigns \nothing; */
void merge_comm(st a, st b) {
    st ab = merge(a, b), ba = merge(b, a);
    //@ assert same_max: ab.m == ba.m;
    //@ assert ew(a.m, ab.m) == ew(a.m, ba.m) && ew(b.m, ab.m) == ew(b.m, ba.m);
    //@ assert merge_commutative_c: ab.m == ba.m && ab.l == ba.l && ab.o == ba.o;
}

/* A merged sum rescaled to any reference t is the sum of its parts rescaled to t. */
/*@ requires rl == al * ew(am, rm) + bl * ew(bm, rm);
    assigns \nothing;
    ensures rescaled: rl * ew(rm, t) == al * ew(am, t) + bl * ew(bm, t); */
void rescale_sum(double al, double am, double bl, double bm, double rl, double rm, double t) {
    //@ assert ta: ew(am, rm) * ew(rm, t) == ew(am, t);
    //@ assert tb: ew(bm, rm) * ew(rm, t) == ew(bm, t);
    //@ assert d: (al * ew(am, rm) + bl * ew(bm, rm)) * ew(rm, t) == al * (ew(am, rm) * ew(rm, t)) + bl * (ew(bm, rm) * ew(rm, t));
}

/*@ assigns \nothing; */
void merge_assoc(st a, st b, st c) {
    st ab = merge(a, b), abc = merge(ab, c);
    st bc = merge(b, c), abc2 = merge(a, bc);
    double M = abc.m;
    //@ assert same_max: abc2.m == M;
    rescale_sum(a.l, a.m, b.l, b.m, ab.l, ab.m, M);
    rescale_sum(b.l, b.m, c.l, c.m, bc.l, bc.m, M);
    rescale_sum(a.o, a.m, b.o, b.m, ab.o, ab.m, M);
    rescale_sum(b.o, b.m, c.o, c.m, bc.o, bc.m, M);
    //@ assert l4: abc.l == a.l * ew(a.m, M) + b.l * ew(b.m, M) + c.l * ew(c.m, M);
    //@ assert l8: abc2.l == a.l * ew(a.m, M) + b.l * ew(b.m, M) + c.l * ew(c.m, M);
    //@ assert o4: abc.o == a.o * ew(a.m, M) + b.o * ew(b.m, M) + c.o * ew(c.m, M);
    //@ assert o8: abc2.o == a.o * ew(a.m, M) + b.o * ew(b.m, M) + c.o * ew(c.m, M);
    //@ assert merge_associative_c: abc.m == abc2.m && abc.l == abc2.l && abc.o == abc2.o;
}
