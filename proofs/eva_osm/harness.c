/* EVA harness: the float code of src/core/osm.h (update, add_sum, merge, finalize, bwd_row) exactly as compiled,
 * instantiated for fp32 (-DFR_H_F32) or fp64 (-DFR_H_F64), driven the way a kernel drives it (osm.h header comment)
 * over every input at once: each score is any finite value or -inf (Frama_C_float_interval, nondet), masked
 * positions are the spec's select to -FLT_MAX, values of V any number in [-VMAX, VMAX], thresholds 0 or any value
 * in [0, TMAXTHR]. NT tiles of 2 keys each (the tile max and one other key), split into two partial rows that are
 * merged, as split-KV does; and in one piece.
 *
 * Three facts about the kernel's own exponentials (not about osm.h) are hypotheses, written ASSUME(...) (a branch
 * that never returns, so EVA keeps only the states where they hold). EVA is non-relational on floats: without
 * them every exp argument would range up to +inf.
 *   x <= tile_max              (tile_max is the max of the tile: true by definition)
 *   fl(x - m_use) <= threshold (WP proves x - m_use <= threshold over the reals, proofs/wp_osm; in floats it holds
 *                               because the code moved m_use to tile_max or tested fl(tile_max - m) <= threshold,
 *                               and rounding is monotone)
 *   moved ==> fl(tile_max - m_use) == 0 (update returns moved only with m_use == tile_max, finite; x - x = 0)
 * Everything else, in particular all of osm.h, is checked with no assumption. */
#include "__fc_builtin.h"
#include <float.h>
#include <math.h>
#include "core/osm.h"

#ifndef NT
#define NT 3
#endif
#define VMAX 1e6
#define TMAXTHR 16

#if defined(FR_H_F64)
typedef double T;
#define OSM(op) fr_osm_f64_##op
typedef fr_osm_f64 st_t;
#define EXP exp
#define ANY(lo, hi) Frama_C_double_interval(lo, hi)
#else
typedef float T;
#define OSM(op) fr_osm_f32_##op
typedef fr_osm_f32 st_t;
#define EXP expf
#define ANY(lo, hi) Frama_C_float_interval((float)(lo), (float)(hi))
#endif

/* A score: any finite value or -inf, or a masked position (select to -FLT_MAX). */
static T any_score(void) {
    if (Frama_C_nondet(0, 1)) return -(T)FLT_MAX;
    return Frama_C_nondet(0, 1) ? -(T)INFINITY : ANY(-(T)FLT_MAX, (T)FLT_MAX);
}

#define ASSUME(c)                                                                                              \
    do {                                                                                                       \
        if (!(c))                                                                                              \
            for (;;) {                                                                                         \
            }                                                                                                  \
    } while (0)

/* Tiles [t0, t1) of the row into (st, o): the kernel loop of the osm.h header comment. *all_masked stays 1 while
 * every score seen is masked or -inf. */
static void run_tiles(st_t *st, T *o, int t0, int t1, T thr, int *all_masked) {
    for (int t = t0; t < t1; t++) {
        T tmax = any_score();
        T x1 = any_score();
        ASSUME(x1 <= tmax);
        if (tmax > -(T)FLT_MAX) *all_masked = 0;
        T alpha, m_use;
        bool moved = OSM(update)(st, tmax, thr, &alpha, &m_use);
        //@ assert alpha_unit: 0 <= alpha <= 1;
        *o = *o * alpha;
        T a0 = tmax - m_use, a1 = x1 - m_use; /* the -inf guard's negative control alarms here: -inf - -inf */
        //@ assert m_use_finite: \is_finite(m_use);
        ASSUME(a0 <= thr && a1 <= thr);
        if (moved) ASSUME(a0 == 0);
        T p0 = EXP(a0), p1 = EXP(a1);
        OSM(add_sum)(st, p0 + p1);
        *o = *o + p0 * ANY(-VMAX, VMAX) + p1 * ANY(-VMAX, VMAX);
        //@ assert l_finite: \is_finite(st->l);
        //@ assert o_finite: \is_finite(*o);
    }
}

/* Forward row end: D1 on fully masked rows, finite output otherwise; then the backward row recomputation. */
static void finish(const st_t *st, T o, int all_masked) {
    T inv_l, smax, ssum;
    int ok = OSM(finalize)(st, &inv_l, &smax, &ssum);
    T out = ok ? o * inv_l : (T)0;
    //@ assert d1: all_masked ==> !ok && out == 0 && smax == -(T)FLT_MAX && ssum == (T)FLT_MAX && inv_l == 0;
    //@ assert valid_row: !all_masked ==> ok && st->l >= 1;
    //@ assert no_div_by_zero: ok ==> st->l != 0;
    //@ assert out_finite: \is_finite(out) && \is_finite(inv_l);
    T m_sub, binv;
    int bok = OSM(bwd_row)(smax, ssum, &m_sub, &binv);
    //@ assert bwd_d1: !bok ==> binv == 0;
    //@ assert bwd_finite: \is_finite(m_sub) && \is_finite(binv) && bok == ok;
}

int main(void) {
    T thr = Frama_C_nondet(0, 1) ? (T)0 : ANY(0, TMAXTHR);
    /* One piece. */
    {
        st_t st = OSM(init)();
        T o = 0;
        int all_masked = 1;
        run_tiles(&st, &o, 0, NT, thr, &all_masked);
        finish(&st, o, all_masked);
    }
    /* Split-KV: keys [0, k) and [k, NT) as two partial rows, merged. */
    {
        int k = Frama_C_interval(0, NT);
        st_t a = OSM(init)(), b = OSM(init)();
        T oa = 0, ob = 0;
        int am = 1, bm = 1;
        run_tiles(&a, &oa, 0, k, thr, &am);
        run_tiles(&b, &ob, k, NT, thr, &bm);
        T ca, cb;
        OSM(merge_coef)(&a, b, &ca, &cb);
        //@ assert merge_unit: 0 <= ca <= 1 && 0 <= cb <= 1;
        oa = oa * ca + ob * cb;
        //@ assert merge_finite: \is_finite(a.l) && \is_finite(oa);
        finish(&a, oa, am && bm);
    }
    return 0;
}
