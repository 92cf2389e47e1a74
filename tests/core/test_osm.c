/* src/core/osm.h against a direct two-pass softmax in double: random and adversarial rows (-inf, -FLT_MAX masks,
 * huge scores, all masked, no keys), every tile size, exact and lazy rescale, split-and-merge, backward P.
 * Usage: test_osm [seed]   (the seed is printed; rerun with it to reproduce a failure). */
#include "common/check.h"
#include "common/seed.h"
#include "core/osm.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define NMAX 700
#define DV 3

static uint64_t rng_state;
static uint64_t next_u64(void) { return fr_test_rand(&rng_state); }
static double uni(void) { return fr_test_unif(&rng_state); }
static double gauss(void) {
    double u = uni(), v = uni();
    return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

/* One row: scores x[n] (masked already -FLT_MAX), values v[n][DV]. */
typedef struct {
    int n;
    float x[NMAX];
    float v[NMAX][DV];
    const char *kind;
} row_t;

/* Two-pass reference in double. Returns false for a D1 row. */
static bool reference(const row_t *r, double *m_out, double *l_out, double out[DV]) {
    double m = -INFINITY;
    for (int j = 0; j < r->n; j++) m = fmax(m, (double)r->x[j]);
    for (int d = 0; d < DV; d++) out[d] = 0;
    *m_out = m;
    *l_out = 0;
    if (m <= -(double)FLT_MAX) return false;
    double l = 0;
    for (int j = 0; j < r->n; j++) {
        double p = exp((double)r->x[j] - m);
        l += p;
        for (int d = 0; d < DV; d++) out[d] += p * r->v[j][d];
    }
    for (int d = 0; d < DV; d++) out[d] /= l;
    *l_out = l;
    return true;
}

/* The documented kernel loop (osm.h header comment) over keys [j0, j1), with tile size `tile`. */
#define FORWARD(SFX, T, EXPF)                                                                                      \
    static fr_osm_##SFX fwd_##SFX(const row_t *r, int j0, int j1, int tile, T thr, T o[DV], double *max_arg) {     \
        fr_osm_##SFX st = fr_osm_##SFX##_init();                                                                   \
        for (int d = 0; d < DV; d++) o[d] = 0;                                                                     \
        for (int t0 = j0; t0 < j1; t0 += tile) {                                                                   \
            int t1 = t0 + tile < j1 ? t0 + tile : j1;                                                              \
            T tmax = -(T)INFINITY;                                                                                 \
            for (int j = t0; j < t1; j++) tmax = (T)r->x[j] > tmax ? (T)r->x[j] : tmax;                            \
            T alpha, m_use;                                                                                        \
            fr_osm_##SFX##_update(&st, tmax, thr, &alpha, &m_use);                                                 \
            for (int d = 0; d < DV; d++) o[d] *= alpha;                                                            \
            T sum = 0;                                                                                             \
            for (int j = t0; j < t1; j++) {                                                                        \
                T arg = (T)r->x[j] - m_use;                                                                        \
                if ((double)arg > *max_arg) *max_arg = (double)arg;                                                \
                T p = EXPF(arg);                                                                                   \
                sum += p;                                                                                          \
                for (int d = 0; d < DV; d++) o[d] += p * (T)r->v[j][d];                                            \
            }                                                                                                      \
            fr_osm_##SFX##_add_sum(&st, sum);                                                                      \
        }                                                                                                          \
        return st;                                                                                                 \
    }
FORWARD(f32, float, expf)
FORWARD(f64, double, exp)

/* Checks one engine precision on one row, tile size and threshold, whole row and split-and-merged. */
#define CHECK_ROW(SFX, T, TOL)                                                                                     \
    static void check_##SFX(const row_t *r, int tile, T thr, uint64_t seed) {                                      \
        double rm, rl, rout[DV];                                                                                   \
        bool valid = reference(r, &rm, &rl, rout);                                                                 \
        double vmax = 0;                                                                                           \
        for (int j = 0; j < r->n; j++)                                                                             \
            for (int d = 0; d < DV; d++)                                                                           \
                if ((double)r->x[j] > -(double)FLT_MAX) vmax = fmax(vmax, fabs((double)r->v[j][d]));              \
        double tol = (TOL) * (r->n + 10) * (thr > 0 ? exp((double)thr) : 1.0) * (vmax + 1e-30);                   \
        int split = r->n ? (int)(next_u64() % (uint64_t)(r->n + 1)) : 0;                                           \
        for (int variant = 0; variant < 3; variant++) {                                                            \
            T o[DV], ob[DV];                                                                                       \
            double max_arg = -INFINITY;                                                                            \
            fr_osm_##SFX st;                                                                                       \
            if (variant == 0) {                                                                                    \
                st = fwd_##SFX(r, 0, r->n, tile, thr, o, &max_arg);                                                \
            } else { /* keys [0, split) and [split, n) separately, then merged in either order */                 \
                fr_osm_##SFX a = fwd_##SFX(r, 0, split, tile, thr, o, &max_arg);                                   \
                fr_osm_##SFX b = fwd_##SFX(r, split, r->n, tile, thr, ob, &max_arg);                               \
                if (variant == 2) {                                                                                \
                    fr_osm_##SFX t = a;                                                                            \
                    a = b;                                                                                         \
                    b = t;                                                                                         \
                    for (int d = 0; d < DV; d++) {                                                                 \
                        T u = o[d];                                                                                \
                        o[d] = ob[d];                                                                              \
                        ob[d] = u;                                                                                 \
                    }                                                                                              \
                }                                                                                                  \
                CHECK(fr_osm_##SFX##_is_valid(&a) && fr_osm_##SFX##_is_valid(&b), "seed %" PRIu64 " %s", seed,     \
                      r->kind);                                                                                    \
                fr_osm_##SFX##_merge(&a, o, b, ob, DV);                                                            \
                st = a;                                                                                            \
            }                                                                                                      \
            CHECK(fr_osm_##SFX##_is_valid(&st), "seed %" PRIu64 " %s n=%d variant %d", seed, r->kind, r->n,        \
                  variant);                                                                                        \
            CHECK(max_arg <= (double)thr, "seed %" PRIu64 " %s: exp argument %g above threshold %g", seed,         \
                  r->kind, max_arg, (double)thr);                                                                  \
            T inv_l, smax, ssum;                                                                                   \
            bool ok = fr_osm_##SFX##_finalize(&st, &inv_l, &smax, &ssum);                                          \
            CHECK(ok == valid, "seed %" PRIu64 " %s n=%d: finalize %d, reference %d", seed, r->kind, r->n, ok,     \
                  valid);                                                                                          \
            T m_sub, binv;                                                                                         \
            bool bok = fr_osm_##SFX##_bwd_row(smax, ssum, &m_sub, &binv);                                          \
            CHECK(bok == valid, "seed %" PRIu64 " %s: bwd_row %d", seed, r->kind, bok);                            \
            if (!ok) { /* D1 */                                                                                    \
                CHECK(smax == -(T)FLT_MAX && ssum == (T)FLT_MAX && inv_l == 0, "seed %" PRIu64 " %s: D1 %g %g %g",  \
                      seed, r->kind, (double)smax, (double)ssum, (double)inv_l);                                   \
                for (int j = 0; j < r->n; j++) { /* backward P of a D1 row is 0 */                                 \
                    T p = (T)exp((double)((T)r->x[j] - m_sub)) * binv;                                             \
                    CHECK(p == 0, "seed %" PRIu64 " %s: D1 backward P %g", seed, r->kind, (double)p);              \
                }                                                                                                  \
                continue;                                                                                          \
            }                                                                                                      \
            CHECK(isfinite(inv_l) && inv_l > 0 && inv_l <= 1, "seed %" PRIu64 " %s: inv_l %g", seed, r->kind,       \
                  (double)inv_l);                                                                                  \
            for (int d = 0; d < DV; d++) {                                                                         \
                double got = (double)(o[d] * inv_l);                                                               \
                CHECK(fabs(got - rout[d]) <= tol, "seed %" PRIu64 " %s n=%d tile=%d thr=%g variant %d d=%d: %.9g vs " \
                      "%.9g", seed, r->kind, r->n, tile, (double)thr, variant, d, got, rout[d]);                   \
            }                                                                                                      \
            /* (max, sum) is a consistent pair: sum == sum_j exp(x_j - max); exact max when thr == 0. */          \
            if (thr == 0) CHECK((double)smax == rm, "seed %" PRIu64 " %s: max %g vs %g", seed, r->kind,            \
                                (double)smax, rm);                                                                 \
            CHECK((double)smax <= rm && (double)smax >= rm - (double)thr * (1 + 1e-6) - 1e-6 * fabs(rm), "seed %" PRIu64 " %s: stale max %g vs %g", \
                  seed, r->kind, (double)smax, rm);                                                                \
            double lsum = 0, psum = 0;                                                                             \
            for (int j = 0; j < r->n; j++) {                                                                       \
                lsum += exp((double)r->x[j] - (double)smax);                                                       \
                psum += (double)((T)exp((double)((T)r->x[j] - m_sub)) * binv);                                     \
            }                                                                                                      \
            CHECK(fabs((double)ssum - lsum) <= (TOL) * (r->n + 10) * lsum, "seed %" PRIu64 " %s: sum %.9g vs %.9g",  \
                  seed, r->kind, (double)ssum, lsum);                                                              \
            CHECK(fabs(psum - 1) <= (TOL) * (r->n + 10), "seed %" PRIu64 " %s: backward P sums to %.9g", seed,     \
                  r->kind, psum);                                                                                  \
        }                                                                                                          \
    }
CHECK_ROW(f32, float, 4e-7)
CHECK_ROW(f64, double, 4e-15)

/* kind: 0 gaussian, 1 huge, 2 partly masked, 3 all masked, 4 -inf mix, 5 all -inf, 6 masked prefix,
 * 7 one valid key, 8 extremes (+-FLT_MAX real scores next to masks), 9 no keys */
static void make_row(row_t *r, int kind) {
    static const char *names[] = {"gaussian", "huge",  "partly-masked", "all-masked", "neg-inf-mix",
                                  "all-neg-inf", "masked-prefix", "one-valid", "extremes", "empty"};
    r->kind = names[kind];
    r->n = kind == 9 ? 0 : 1 + (int)(next_u64() % (uint64_t)(kind == 0 ? NMAX : 300));
    double scale = kind == 1 ? pow(10.0, 1 + (double)(next_u64() % 37)) : 1 + 9 * uni();
    int one = r->n ? (int)(next_u64() % (uint64_t)r->n) : 0;
    int prefix = r->n ? (int)(next_u64() % (uint64_t)r->n) : 0;
    for (int j = 0; j < r->n; j++) {
        double g = gauss() * scale;
        float x = (float)(fabs(g) > FLT_MAX ? copysign(FLT_MAX, g) : g);
        switch (kind) {
        case 2: if (uni() < 0.5) x = -FLT_MAX; break;
        case 3: x = -FLT_MAX; break;
        case 4: if (uni() < 0.3) x = -INFINITY; else if (uni() < 0.3) x = -FLT_MAX; break;
        case 5: x = -INFINITY; break;
        case 6: if (j < prefix) x = -FLT_MAX; break;
        case 7: if (j != one) x = uni() < 0.5 ? -FLT_MAX : -INFINITY; break;
        case 8: {
            double u = uni();
            x = u < 0.2 ? FLT_MAX : u < 0.4 ? -FLT_MAX : u < 0.5 ? -INFINITY : u < 0.7 ? -1e30f : x;
            break;
        }
        default: break;
        }
        r->x[j] = x;
        for (int d = 0; d < DV; d++) r->v[j][d] = (float)gauss();
    }
}

int main(int argc, char **argv) {
    uint64_t seed = fr_test_seed(argc, argv, "test_osm");
    rng_state = seed;
    static row_t r;
    static const int tiles[] = {1, 3, 16, 64, 128, 1000};
    static const double thrs[] = {0, 2, 8};
    for (int rep = 0; rep < 40; rep++) {
        for (int kind = 0; kind < 10; kind++) {
            make_row(&r, kind);
            for (size_t ti = 0; ti < sizeof tiles / sizeof tiles[0]; ti++) {
                for (size_t hi = 0; hi < sizeof thrs / sizeof thrs[0]; hi++) {
                    check_f32(&r, tiles[ti], (float)thrs[hi], seed);
                    check_f64(&r, tiles[ti], thrs[hi], seed);
                }
            }
        }
    }
    /* Regression: the -inf guard. A first tile of only -inf scores must not make m_use -inf (NaN exponentials). */
    {
        fr_osm_f32 st = fr_osm_f32_init();
        float alpha, m_use;
        fr_osm_f32_update(&st, -INFINITY, 0, &alpha, &m_use);
        CHECK(isfinite(m_use) && alpha == 1 && !isnan(expf(-INFINITY - m_use)), "m_use %g alpha %g", (double)m_use,
              (double)alpha);
        fr_osm_f32 e = fr_osm_f32_init();
        float ca, cb;
        fr_osm_f32_merge_coef(&st, e, &ca, &cb);
        CHECK(!isnan(ca) && !isnan(cb) && st.l == 0, "empty merge %g %g", (double)ca, (double)cb);
    }
    /* Regression: lazy rescale with the reference still at the mask value. A real score within the threshold of
     * -FLT_MAX (fp64, huge threshold) must move it, or finalize would report the row as fully masked (D1). */
    {
        fr_osm_f64 st = fr_osm_f64_init();
        double alpha, m_use, inv_l, smax, ssum;
        const double near = -(double)FLT_MAX * (1 - 1e-12), thr = 1e30; /* near - (-FLT_MAX) ~ 3e26 < thr */
        fr_osm_f64_update(&st, -(double)FLT_MAX, thr, &alpha, &m_use);
        fr_osm_f64_add_sum(&st, 1);
        bool moved = fr_osm_f64_update(&st, near, thr, &alpha, &m_use);
        fr_osm_f64_add_sum(&st, exp(near - m_use) + exp(-(double)FLT_MAX - m_use));
        CHECK(moved && fr_osm_f64_finalize(&st, &inv_l, &smax, &ssum), "stale mask reference: m %g", st.m);
    }
    return fr_test_exit("test_osm");
}
