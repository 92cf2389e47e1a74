/* The link between src/core/osm.h and the Coq mirror of proofs/round/Model.v: WP (-wp-model Typed+real) reads the
 * real code of osm.h (included below) and proves, for threshold 0, the expression every value the fp32 instantiation
 * stores is computed by. In C each float operation of such an expression rounds once (ISO C: CMake builds -std=c11,
 * so no contraction; x86-64 evaluates in the type, FLT_EVAL_METHOD 0); the Coq mirror writes exactly these
 * expressions with one rnd per operation, and proofs/prove.py checks mechanically that every [mirror] line of
 * Model.v, rnd erased, is the expression proved here (its MIRROR table). EXPA32 stands for the code's expf, about
 * which the exp hypothesis of the theorem is. */
#include <float.h>
#include <stdbool.h>

/*@ axiomatic OsmExp {
      logic real EXPA32(real x);
    } */
/*@ assigns \nothing; ensures \result == EXPA32(x); */
float fr_shape_exp_f32(float x);
#define FR_OSM_EXP_f32(x) fr_shape_exp_f32(x)
#include "core/osm.h"

/* The contracts of the fp32 instantiation (a comment inside osm.h's macro would not reach Frama-C; the fp64
 * instantiation is the same text, and the fp64 theorem is about the golden, which does not use osm.h). */
/*@ requires \valid(s) && \valid(alpha) && \valid(m_use) && \separated(s, alpha, m_use);
    requires threshold == 0;
    assigns *s, *alpha, *m_use;
    behavior moves:
      assumes tile_max > s->m;
      ensures *alpha == EXPA32(-(tile_max - \old(s->m)));
      ensures s->l == \old(s->l) * *alpha;
      ensures s->m == tile_max && *m_use == (tile_max < -FLT_MAX ? 0 : tile_max) && \result == 1;
    behavior stays:
      assumes tile_max <= s->m;
      ensures s->l == \old(s->l);
      ensures s->m == \old(s->m) && *alpha == 1 && \result == 0;
      ensures *m_use == (\old(s->m) < -FLT_MAX ? 0 : \old(s->m));
    complete behaviors; disjoint behaviors; */
bool fr_osm_f32_update(fr_osm_f32 *s, float tile_max, float threshold, float *alpha, float *m_use);

/*@ requires \valid(s);
    assigns *s;
    ensures s->l == \old(s->l) + tile_sum;
    ensures s->m == \old(s->m); */
void fr_osm_f32_add_sum(fr_osm_f32 *s, float tile_sum);

/*@ requires \valid(a) && \valid(ca) && \valid(cb) && \separated(a, ca, cb);
    requires a->m >= -FLT_MAX && b.m >= -FLT_MAX;
    assigns *a, *ca, *cb;
    behavior a_ge:
      assumes a->m >= b.m;
      ensures *ca == 1;
      ensures *cb == EXPA32(-(\old(a->m) - b.m));
      ensures a->l == \old(a->l) * *ca + b.l * *cb;
      ensures a->m == \old(a->m);
    behavior b_gt:
      assumes a->m < b.m;
      ensures *ca == EXPA32(\old(a->m) - b.m);
      ensures *cb == 1;
      ensures a->l == \old(a->l) * *ca + b.l * *cb;
      ensures a->m == b.m;
    complete behaviors; disjoint behaviors; */
void fr_osm_f32_merge_coef(fr_osm_f32 *a, fr_osm_f32 b, float *ca, float *cb);

/*@ requires \valid_read(s) && \valid(inv_l) && \valid(stored_max) && \valid(stored_sum);
    requires \separated(s, inv_l, stored_max, stored_sum);
    assigns *inv_l, *stored_max, *stored_sum;
    behavior row:
      assumes s->m > -FLT_MAX;
      ensures *inv_l == 1 / s->l;
      ensures *stored_sum == s->l && *stored_max == s->m && \result == 1;
    behavior d1:
      assumes s->m <= -FLT_MAX;
      ensures *inv_l == 0 && \result == 0;
    complete behaviors; disjoint behaviors; */
bool fr_osm_f32_finalize(const fr_osm_f32 *s, float *inv_l, float *stored_max, float *stored_sum);

/* merge's o loop (oa[k] = oa[k] * ca + ob[k] * cb, with merge_coef's factors) has no invariant WP could read in the
 * macro; prove.py checks that statement in osm.h's text instead. */
