/* Online softmax, one row at a time: the running state (m, l) of FlashAttention's tiled softmax and the four
 * operations every engine uses (fast kernels, emulator). The o vector (the running P.V accumulator, Dv floats)
 * stays with the caller, so a vectorized kernel keeps it in registers; the routines here only hand back the
 * scalar factors to apply to it. Proved in proofs/ (README there): over the reals the invariant, the final
 * softmax, merge commutativity/associativity and the exp-argument bounds; over fp32/fp64 (EVA) no NaN, no
 * overflow, no division by zero, and spec D1 for fully masked rows.
 *
 * Units: scores are the scaled logits x (spec 3.5 step 2-3), masked positions already SELECTED to -FLT_MAX (D2),
 * positions skipped by a sparse pattern simply absent. -inf scores (e.g. from pse) are allowed; NaN/+inf
 * propagate as NaN. The threshold is in the same units as the scores.
 *
 * Forward, per row (T = float for _f32, double for _f64):
 *
 *     fr_osm_f32 st = fr_osm_f32_init();                  // m = -inf, l = 0; o[0..Dv) = 0
 *     for each key tile:
 *         tile_max = max of the tile's scores x[j]
 *         if (fr_osm_f32_update(&st, tile_max, threshold, &alpha, &m_use))
 *             o[d] *= alpha  for every d                  // false: alpha == 1 (lazy rescale did not fire)
 *         p[j] = exp(x[j] - m_use)                       // every argument <= threshold (<= 0 when threshold 0)
 *         o[d] += sum_j p[j] * v[j][d];  fr_osm_f32_add_sum(&st, sum_j p[j]);
 *     if (fr_osm_f32_finalize(&st, &inv_l, &max_out, &sum_out)) out[d] = o[d] * inv_l;
 *     else                                                out[d] = 0;     // D1: write 0, never o * inv_l
 *     softmax_max = max_out; softmax_sum = sum_out        // D1 row: -FLT_MAX, +FLT_MAX
 *
 * threshold = 0 is the exact running max (FA2). threshold t > 0 is the lazy rescale (FA4 style): the reference
 * max moves only when a tile's max exceeds it by more than t, so alpha == 1 most of the time, p[j] <= exp(t), and
 * (m, l) stay a consistent pair relative to the stale reference (finalize stores that pair, which the backward's
 * P = exp(x - m) / l reproduces exactly).
 *
 * Split-KV / multi-thread / MPI: two partial states over disjoint key sets combine with fr_osm_f32_merge
 * (commutative and associative over the reals; bitwise commutative in floats). fr_osm_f32_merge_coef gives the
 * two factors only, for a caller that combines the o vectors itself.
 *
 * Backward: fr_osm_f32_bwd_row(softmax_max, softmax_sum, &m_sub, &inv_l): P = exp(x - m_sub) * inv_l; it returns
 * false for a D1 row (then m_sub = 0, inv_l = 0: every P is 0 and the row's gradients are 0).
 *
 * Header-only template (FR_OSM_DEFINE) instantiated for f32 and f64. The exp used for alpha is FR_OSM_EXP_f32 /
 * FR_OSM_EXP_f64 (expf / exp unless defined before inclusion; the proofs substitute their own). */
#ifndef FR_CORE_OSM_H
#define FR_CORE_OSM_H

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef FR_OSM_EXP_f32
#define FR_OSM_EXP_f32(x) expf(x)
#endif
#ifndef FR_OSM_EXP_f64
#define FR_OSM_EXP_f64(x) exp(x)
#endif

/* The one template. SFX: f32 | f64, T: float | double, TMAX: FLT_MAX | DBL_MAX (x < -TMAX tests x == -inf
 * without a float equality, so callers may build with -Wfloat-equal). */
#define FR_OSM_DEFINE(SFX, T, TMAX)                                                                                \
    /* m: reference max (-inf before any key); l: sum over the keys seen of exp(x - m). */                         \
    typedef struct {                                                                                               \
        T m;                                                                                                       \
        T l;                                                                                                       \
    } fr_osm_##SFX;                                                                                                \
                                                                                                                   \
    static inline fr_osm_##SFX fr_osm_##SFX##_init(void) {                                                         \
        fr_osm_##SFX s;                                                                                            \
        s.m = -(T)INFINITY;                                                                                        \
        s.l = 0;                                                                                                   \
        return s;                                                                                                  \
    }                                                                                                              \
                                                                                                                   \
    /* A state any sequence of the operations below can produce: l >= 0, an empty state has l == 0. */             \
    static inline bool fr_osm_##SFX##_is_valid(const fr_osm_##SFX *s) {                                            \
        return s != NULL && !isnan(s->m) && s->m <= (T)TMAX && s->l >= 0 && (s->m >= -(T)TMAX || s->l <= 0);       \
    }                                                                                                              \
                                                                                                                   \
    /* Before a tile whose largest score is tile_max. threshold >= 0 (0: exact max). Sets *alpha (scale the old o  \
     * by it; l is already scaled) and *m_use (subtract it from every score of the tile before exp). Returns true \
     * when the reference max moved (then m_use == tile_max), false when *alpha == 1 and o needs no scaling. */    \
    static inline bool fr_osm_##SFX##_update(fr_osm_##SFX *s, T tile_max, T threshold, T *alpha, T *m_use) {     \
        T a = 1;                                                                                                   \
        bool moved = false;                                                                                        \
        /* tile_max > m first: never computes -inf - -inf (NaN); from m = -inf, d = +inf, so the first tile with  \
         * a score above -inf always moves the reference. exp(-d), d >= 0, is exp(m - tile_max) bit for bit. */    \
        if (tile_max > s->m) {                                                                                     \
            T d = tile_max - s->m;                                                                                 \
            /* A reference still at the mask value (or -inf) always moves: a stale -FLT_MAX would make finalize \
             * take a row with real scores for a fully masked one. */                                              \
            if (d > threshold || s->m <= -(T)FLT_MAX) {                                                            \
                a = FR_OSM_EXP_##SFX(-d); /* m = -inf: exp(-inf) = 0 */                                            \
                s->m = tile_max;                                                                                   \
                s->l *= a;                                                                                         \
                moved = true;                                                                                      \
            }                                                                                                      \
        }                                                                                                          \
        *alpha = a;                                                                                                \
        /* -inf guard: a tile of only -inf scores meets m = -inf; -inf - -inf would be NaN, -inf - 0 is -inf. */   \
        *m_use = s->m < -(T)TMAX ? (T)0 : s->m;                                                                    \
        return moved;                                                                                              \
    }                                                                                                              \
                                                                                                                   \
    /* After the tile: tile_sum = sum of exp(x - m_use) over its scores. */                                        \
    static inline void fr_osm_##SFX##_add_sum(fr_osm_##SFX *s, T tile_sum) { s->l += tile_sum; }                   \
                                                                                                                   \
    /* a := a (+) b for states over disjoint keys; *ca, *cb: the factors for a's and b's o vectors. */             \
    static inline void fr_osm_##SFX##_merge_coef(fr_osm_##SFX *a, fr_osm_##SFX b, T *ca, T *cb) {                  \
        T m = a->m >= b.m ? a->m : b.m;                                                                            \
        T fa = 1, fb = 1;                                                                                          \
        if (m >= -(T)TMAX) { /* -inf guard: both empty (l, o = 0) would give -inf - -inf; factors 1 keep 0 */      \
            T d = a->m - b.m; /* +-inf when one side is empty; the smaller side gets exp(-|d|) */                \
            if (d >= 0)                                                                                            \
                fb = FR_OSM_EXP_##SFX(-d);                                                                         \
            else                                                                                                   \
                fa = FR_OSM_EXP_##SFX(d);                                                                          \
        }                                                                                                          \
        a->l = a->l * fa + b.l * fb;                                                                               \
        a->m = m;                                                                                                  \
        *ca = fa;                                                                                                  \
        *cb = fb;                                                                                                  \
    }                                                                                                              \
                                                                                                                   \
    /* a := a (+) b with the o vectors: oa[0..n) = oa * ca + ob * cb. */                                           \
    static inline void fr_osm_##SFX##_merge(fr_osm_##SFX *a, T *oa, fr_osm_##SFX b, const T *ob, int64_t n) {      \
        T ca, cb;                                                                                                  \
        fr_osm_##SFX##_merge_coef(a, b, &ca, &cb);                                                                 \
        for (int64_t k = 0; k < n; k++) oa[k] = oa[k] * ca + ob[k] * cb;                                           \
    }                                                                                                              \
                                                                                                                   \
    /* End of row. true: out = o * *inv_l. false (fully masked: max <= -FLT_MAX, incl. -inf and no keys): spec D1, \
     * out = 0 (write zeros; o * 0 could be NaN), *inv_l = 0. *stored_max, *stored_sum: softmax_max, softmax_sum. */\
    static inline bool fr_osm_##SFX##_finalize(const fr_osm_##SFX *s, T *inv_l, T *stored_max, T *stored_sum) {    \
        if (s->m <= -(T)FLT_MAX) {                                                                                 \
            *inv_l = 0;                                                                                            \
            *stored_max = -(T)FLT_MAX;                                                                             \
            *stored_sum = (T)FLT_MAX;                                                                              \
            return false;                                                                                          \
        }                                                                                                          \
        *inv_l = 1 / s->l; /* l >= 1: the tile that set m contributed exp(0) = 1 */                               \
        *stored_max = s->m;                                                                                        \
        *stored_sum = s->l;                                                                                        \
        return true;                                                                                               \
    }                                                                                                              \
                                                                                                                   \
    /* A row one of whose taking-part scores was NaN (or +inf, where exp(inf - inf) is NaN): its sum is NaN, and   \
     * the row's every output (out, max, sum) is NaN, as in the golden (docs/golden.md 4). Ask before finalize:    \
     * the update never lets m become NaN, so such a row may still look fully masked (m = -inf) to finalize.       \
     * Not in the EVA harness (proofs/: finite scores only), so finalize keeps its proved two-way contract. */     \
    static inline bool fr_osm_##SFX##_is_nan(const fr_osm_##SFX *s) { return isnan(s->l) || isnan(s->m); }         \
                                                                                                                   \
    /* Backward recomputation P = exp(x - *m_sub) * *inv_l from the stored max and sum. false for a D1 row. */     \
    static inline bool fr_osm_##SFX##_bwd_row(T stored_max, T stored_sum, T *m_sub, T *inv_l) {                    \
        if (stored_max <= -(T)FLT_MAX) {                                                                           \
            *m_sub = 0; /* masked scores are -FLT_MAX: exp(-FLT_MAX - 0) = 0 */                                   \
            *inv_l = 0;                                                                                            \
            return false;                                                                                          \
        }                                                                                                          \
        *m_sub = stored_max;                                                                                       \
        *inv_l = 1 / stored_sum;                                                                                   \
        return true;                                                                                               \
    }

FR_OSM_DEFINE(f32, float, FLT_MAX)
FR_OSM_DEFINE(f64, double, DBL_MAX)

#endif
