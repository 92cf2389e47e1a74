/* Definitions shared by the WP proofs of the online softmax over the reals (wp_ind, wp_osm, wp_lazy, wp_bwd):
 * max / sums of a key range, the state invariants, the exp of the lazy variant, and the contracts of the lemma
 * functions ind_* (proved in wp_ind) and of tile (proved in wp_osm), which the other proofs call. */
#ifndef FR_PROOFS_OSM_DEFS_H
#define FR_PROOFS_OSM_DEFS_H
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
/* ---- ind_*: lemma functions, the inductive facts about mx, sl, so (proved in wp_ind by their loops) ---- */

/*@ requires 0 <= a <= k < b && rd(s, s, a, b);
    assigns \nothing;
    ensures mx_ge: s[k] <= mx(s, a, b); */
void ind_mx_ge(double *s, int a, int b, int k);

/*@ requires 0 <= a < b < c && rd(s, s, a, c);
    assigns \nothing;
    ensures mx_concat: mx(s, a, c) == rmax(mx(s, a, b), mx(s, b, c)); */
void ind_mx_concat(double *s, int a, int b, int c);

/*@ requires 0 <= a <= b <= c && rd(s, v, a, c);
    assigns \nothing;
    ensures sl_concat: sl(s, a, c, t) == sl(s, a, b, t) + sl(s, b, c, t);
    ensures so_concat: so(s, v, a, c, t) == so(s, v, a, b, t) + so(s, v, b, c, t); */
void ind_concat(double *s, double *v, int a, int b, int c, double t);

/*@ requires 0 <= a <= b && rd(s, v, a, b);
    assigns \nothing;
    ensures sl_scale: sl(s, a, b, t) * ew(t, u) == sl(s, a, b, u); */
void ind_scale_l(double *s, double *v, int a, int b, double t, double u);

/*@ requires 0 <= a <= b && rd(s, v, a, b);
    assigns \nothing;
    ensures so_scale: so(s, v, a, b, t) * ew(t, u) == so(s, v, a, b, u); */
void ind_scale_o(double *s, double *v, int a, int b, double t, double u);

/*@ requires 0 <= a <= b && rd(s, v, a, b);
    assigns \nothing;
    ensures sl_scale: sl(s, a, b, t) * ew(t, u) == sl(s, a, b, u);
    ensures so_scale: so(s, v, a, b, t) * ew(t, u) == so(s, v, a, b, u); */
void ind_scale(double *s, double *v, int a, int b, double t, double u);

/* The state of one tile [a, b), relative to its own max: two passes, arguments <= 0. */
/*@ requires 0 <= a < b && rd(s, v, a, b);
    assigns \nothing;
    ensures tile_state: exact_state(\result, s, v, a, b); */
st tile(double *s, double *v, int a, int b);

#endif
