/* The per-row state and its merge, over the reals: shared by proofs/wp_osm (the online softmax) and
 * proofs/wp_merge (commutativity, associativity). Mirror of fr_osm_*_merge_coef in src/core/osm.h. */
#ifndef FR_PROOFS_OSM_MERGE_H
#define FR_PROOFS_OSM_MERGE_H
#include "osm_logic.h"

typedef struct {
    double m; /* reference max */
    double l; /* sum of ew(s_k, m) over the keys seen */
    double o; /* sum of ew(s_k, m) * v_k */
} st;

/* exp(x - t) with x <= t: (d) every exp argument of the exact algorithm is <= 0. */
/*@ requires exp_arg_le_0: x <= t;
    assigns \nothing;
    ensures \result == ew(x, t); */
double exp_le0(double x, double t);

/* The merge of two partial states (split-KV, threads, MPI). */
/*@ assigns \nothing;
    ensures merge_m: \result.m == Mm(a.m, b.m);
    ensures merge_l_ew: \result.l == a.l * ew(a.m, \result.m) + b.l * ew(b.m, \result.m);
    ensures merge_o_ew: \result.o == a.o * ew(a.m, \result.m) + b.o * ew(b.m, \result.m);
    ensures merge_l_pos: a.l > 0 && b.l > 0 ==> \result.l > 0; */
st merge(st a, st b) {
    double r = a.m >= b.m ? a.m : b.m;
    double ca = exp_le0(a.m, r), cb = exp_le0(b.m, r);
    st x = {r, a.l * ca + b.l * cb, a.o * ca + b.o * cb};
    return x;
}

#endif
