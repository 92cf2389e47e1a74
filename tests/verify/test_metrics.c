/* Metrics on constructed inputs whose answers are known in closed form (docs/verification-method.md 2). */
#include "verify/metrics/metrics.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#define NEAR(x, y, tol) (fabs((x) - (y)) <= (tol) * fmax(1.0, fabs(y)))

static uint64_t rng_state;
static double urand(void) { /* splitmix64 -> [0, 1) */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1p-53;
}
static double nrand(void) {
    double u1 = urand(), u2 = urand();
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Row i scaled by (1 + g_i): gain = g_i exactly, rel-L2 = rms g weighted by row norms, cos_diff closed form. */
static void test_scaled_rows(void) {
    enum { R = 100, D = 16 };
    static double r[R * D], a[R * D];
    double see = 0, srr = 0, saa = 0, sar = 0;
    for (int i = 0; i < R; i++) {
        double g = (i + 1) * 1e-3 * (i % 2 ? -1 : 1);
        for (int j = 0; j < D; j++) {
            double v = 1.0 + 0.1 * j + 0.01 * i;
            r[i * D + j] = v;
            a[i * D + j] = v * (1 + g);
            see += (g * v) * (g * v);
            srr += v * v;
            saa += v * v * (1 + g) * (1 + g);
            sar += v * v * (1 + g);
        }
    }
    fr_metrics m;
    fr_metrics_opts o = fr_metrics_opts_default();
    CHECK(fr_metrics_compute(a, r, R, D, &o, &m, NULL) == FR_OK, "status");
    CHECK(m.n == R * D, "n = %lld", (long long)m.n);
    CHECK(m.rows_used == R, "rows_used = %lld", (long long)m.rows_used);
    CHECK(NEAR(m.gain_max, 0.1, 1e-12), "gain_max = %g", m.gain_max);
    /* |gains| are 1e-3 .. 1e-1 in steps of 1e-3: rms = 1e-3 * sqrt(sum k^2 / 100) */
    double s2 = 0;
    for (int k = 1; k <= R; k++) s2 += (double)k * k;
    CHECK(NEAR(m.gain_rms, 1e-3 * sqrt(s2 / R), 1e-12), "gain_rms = %g", m.gain_rms);
    CHECK(NEAR(m.gain_p50, 0.050, 1e-12), "p50 = %g", m.gain_p50);
    CHECK(NEAR(m.gain_p90, 0.090, 1e-12), "p90 = %g", m.gain_p90);
    CHECK(NEAR(m.gain_p99, 0.099, 1e-12), "p99 = %g", m.gain_p99);
    CHECK(NEAR(m.gain_mean, -0.0005, 1e-9), "gain_mean = %g", m.gain_mean); /* +1-2+3-4...: sum = -50e-3 */
    CHECK(NEAR(m.rel_l2, sqrt(see / srr), 1e-12), "rel_l2 = %g vs %g", m.rel_l2, sqrt(see / srr));
    CHECK(NEAR(m.nmse, see / srr, 1e-12), "nmse = %g", m.nmse);
    CHECK(NEAR(m.cos_diff, 1 - 2 * sar / (saa + srr), 1e-9), "cos_diff = %g", m.cos_diff);
    CHECK(NEAR(m.max_rel, 0.1, 1e-12), "max_rel = %g", m.max_rel);
    /* A purely coherent error: the row rel-L2 equals |gain|, so gain_rms / floor = sqrt(D / 3). */
    CHECK(NEAR(m.gain_over_floor, sqrt(D / 3.0), 1e-9), "gain/floor = %g", m.gain_over_floor);
}

/* An error orthogonal to every row: gain 0, noise floor from the row rel-L2. */
static void test_orthogonal_error(void) {
    enum { R = 4, D = 4 };
    double r[R * D], a[R * D];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < D; j++) {
            r[i * D + j] = 1.0;                          /* r = (1,1,1,1) */
            a[i * D + j] = 1.0 + (j % 2 ? 1e-3 : -1e-3); /* e = (-1,1,-1,1)e-3 is orthogonal to r */
        }
    fr_metrics m;
    CHECK(fr_metrics_compute(a, r, R, D, NULL, &m, NULL) == FR_OK, "status");
    CHECK(m.gain_rms < 1e-15, "gain_rms = %g", m.gain_rms);
    CHECK(NEAR(m.rel_l2, 1e-3, 1e-9), "rel_l2 = %g", m.rel_l2);
    CHECK(NEAR(m.noise_floor, 1e-3 * sqrt(3.0 / D), 1e-9), "floor = %g", m.noise_floor);
    CHECK(NEAR(m.max_abs, 1e-3, 1e-9), "max_abs = %g", m.max_abs);
}

/* Independent relative errors on Gaussian rows: the measured gain rms matches the noise floor (its definition). */
static void test_noise_floor_statistics(void) {
    enum { R = 4000, D = 256 };
    double *r = malloc(sizeof(double) * R * D), *a = malloc(sizeof(double) * R * D);
    for (int k = 0; k < R * D; k++) {
        r[k] = nrand();
        a[k] = r[k] * (1 + 1e-3 * (2 * urand() - 1));
    }
    fr_metrics m;
    CHECK(fr_metrics_compute(a, r, R, D, NULL, &m, NULL) == FR_OK, "status");
    CHECK(m.gain_over_floor > 0.85 && m.gain_over_floor < 1.15, "gain/floor = %g (expect ~1)", m.gain_over_floor);
    /* Now add a coherent 5e-4 scale to every row: the gain must stand out far above the floor. */
    for (int k = 0; k < R * D; k++) a[k] += 5e-4 * r[k];
    CHECK(fr_metrics_compute(a, r, R, D, NULL, &m, NULL) == FR_OK, "status");
    /* gain 5e-4 over floor sqrt(5.77e-4^2 + 5e-4^2) * sqrt(3/256) = 8.2e-5: about 6 */
    CHECK(m.gain_over_floor > 5 && m.gain_over_floor < 7.5, "gain/floor = %g (expect ~6)", m.gain_over_floor);
    CHECK(NEAR(m.gain_mean, 5e-4, 0.05), "gain_mean = %g", m.gain_mean);
    free(r);
    free(a);
}

static void test_anomalies(void) {
    double r[6] = {1, NAN, INFINITY, -INFINITY, 2, 3};
    double a[6] = {1.5, NAN, INFINITY, -INFINITY, 2, 3};
    fr_metrics m;
    CHECK(fr_metrics_compute(a, r, 1, 6, NULL, &m, NULL) == FR_OK, "status");
    CHECK(m.n_anomaly == 3 && m.n_anomaly_mismatch == 0, "anomaly %lld mismatch %lld", (long long)m.n_anomaly,
          (long long)m.n_anomaly_mismatch);
    CHECK(m.n == 3 && NEAR(m.max_abs, 0.5, 0) && m.argmax_abs == 0, "n %lld max_abs %g", (long long)m.n, m.max_abs);
    CHECK(m.rows_used == 0, "a row with an anomaly has no gain");
    a[2] = -INFINITY; /* sign of infinity differs */
    a[4] = NAN;       /* NaN where the reference is finite */
    CHECK(fr_metrics_compute(a, r, 1, 6, NULL, &m, NULL) == FR_OK, "status");
    CHECK(m.n_anomaly_mismatch == 2 && m.first_mismatch == 2, "mismatch %lld first %lld",
          (long long)m.n_anomaly_mismatch, (long long)m.first_mismatch);
}

static void test_ulp(void) {
    CHECK(fr_ulp_of(FR_F32, 1.0) == 0x1p-23, "f32 ulp(1) = %a", fr_ulp_of(FR_F32, 1.0));
    CHECK(fr_ulp_of(FR_F32, 1.9999) == 0x1p-23, "f32 ulp(1.9999)");
    CHECK(fr_ulp_of(FR_F32, 2.0) == 0x1p-22, "f32 ulp(2)");
    CHECK(fr_ulp_of(FR_F32, 1e-40) == 0x1p-149, "f32 subnormal ulp");
    CHECK(fr_ulp_of(FR_BF16, -1.5) == 0x1p-7, "bf16 ulp(1.5)");
    CHECK(fr_ulp_of(FR_F16, 1.0) == 0x1p-10, "f16 ulp(1)");
    CHECK(fr_ulp_of(FR_F16, 1e-6) == 0x1p-24, "f16 subnormal ulp");
    CHECK(fr_ulp_of(FR_E4M3FN, 1.0) == 0.125, "e4m3 ulp(1)");
    CHECK(fr_ulp_of(FR_E4M3FN, 0.001) == 0x1p-9, "e4m3 subnormal ulp");
    CHECK(fr_ulp_of(FR_E5M2, 1.0) == 0.25, "e5m2 ulp(1)");
    CHECK(fr_ulp_of(FR_HIF8, 1.0) == 0.125, "hif8 ulp(1)");        /* 1.125 is the next code (0x09) */
    CHECK(fr_ulp_of(FR_HIF8, 16.0) == 4.0, "hif8 ulp(16)");        /* 2 fraction bits at e = 4 */
    CHECK(fr_ulp_of(FR_HIF8, 256.0) == 128.0, "hif8 ulp(256)");    /* 1 fraction bit at e = 8 */
    CHECK(fr_ulp_of(FR_F64, 1.0) == 0x1p-52, "f64 ulp(1)");
    double r[3] = {1.0, 2.0, 4.0}, a[3] = {1.0 + 0x1p-6, 2.0 - 0x1p-6, 4.0};
    fr_metrics_opts o = fr_metrics_opts_default();
    o.ulp_dtype = FR_BF16;
    fr_metrics m;
    CHECK(fr_metrics_compute(a, r, 1, 3, &o, &m, NULL) == FR_OK, "status");
    CHECK(m.max_ulp == 2.0, "max_ulp = %g (1 + 2^-6 is 2 bf16 ulps from 1)", m.max_ulp);
    CHECK(NEAR(m.mean_ulp, (2.0 + 1.0) / 3, 1e-12), "mean_ulp = %g", m.mean_ulp);
}

static void test_edges(void) {
    fr_metrics m;
    CHECK(fr_metrics_compute(NULL, NULL, 0, 5, NULL, &m, NULL) == FR_OK && m.n == 0, "empty");
    fr_error e;
    CHECK(fr_metrics_compute(NULL, NULL, -1, 5, NULL, &m, &e) == FR_E_INVALID_ARG, "negative rows");
    double z[4] = {0, 0, 0, 0}, a[4] = {0, 1e-3, 0, 0};
    CHECK(fr_metrics_compute(a, z, 1, 4, NULL, &m, NULL) == FR_OK, "zero ref");
    CHECK(isinf(m.rel_l2) && m.rows_used == 0, "rel_l2 of error over a zero reference = %g", m.rel_l2);
    CHECK(fr_metrics_compute(z, z, 2, 2, NULL, &m, NULL) == FR_OK && m.rel_l2 == 0 && m.cos_diff == 0, "0 vs 0");
}

static void test_softmax_props(void) {
    /* Two rows of three: row 0 a proper softmax, row 1 sums to 1.01 and gives the largest score a smaller weight. */
    double x[6] = {1, 2, 3, 3, 0, 0};
    double e0 = exp(-2), e1 = exp(-1), s = e0 + e1 + 1;
    double p[6] = {e0 / s, e1 / s, 1 / s, 0.2, 0.41, 0.4};
    fr_softmax_props sp;
    fr_softmax_props_rows(p, x, 2, 3, 1e-6, &sp);
    CHECK(sp.bad_sum == 1 && sp.argmax_wrong == 1 && sp.negative == 0, "bad_sum %lld argmax %lld neg %lld",
          (long long)sp.bad_sum, (long long)sp.argmax_wrong, (long long)sp.negative);
    CHECK(NEAR(sp.max_sum_err, 0.01, 1e-9), "max_sum_err = %g", sp.max_sum_err);
    p[0] = -1e-9;
    fr_softmax_props_rows(p, x, 1, 3, 1e-6, &sp);
    CHECK(sp.negative == 1, "negative weight");

    double m[3] = {3, -FLT_MAX, 5}, l[3] = {1.5, FLT_MAX, 2.0};
    double rm[3] = {3, -FLT_MAX, 5}, rl[3] = {1.5, FLT_MAX, 2.0 * (1 + 1e-3)};
    double me, le;
    CHECK(fr_softmax_stats_check(m, l, rm, rl, 3, 0, 1e-6, &me, &le) == 1, "one row's sum is off");
    CHECK(NEAR(le, 1e-3 / (1 + 1e-3), 1e-9) && me == 0, "le = %g me = %g", le, me);
    double dy[4] = {1, 2, 3, 4}, o[4] = {0.5, 0.25, -1, 1}, dd[2];
    fr_dpsum_rows(dy, o, 2, 2, dd);
    CHECK(dd[0] == 1.0 && dd[1] == 1.0, "dpsum %g %g", dd[0], dd[1]);
}

/* fr_metrics_load: every element widened to fp64 in index order; absent and empty tensors give NULL, n = 0. */
static void test_load(void) {
    float f[6] = {1.5f, -2.0f, 0.0f, 3.25f, -0.125f, 1e30f};
    int64_t sh[2] = {2, 3}, n = -1;
    fr_tensor t = fr_tensor_make(FR_F32, f, 2, sh);
    double *v = fr_metrics_load(&t, &n);
    CHECK(v && n == 6, "loaded %lld elements", (long long)n);
    for (int k = 0; v && k < 6; k++)
        CHECK(v[k] == (double)f[k], "element %d: %g, want %g", k, v[k], (double)f[k]);
    free(v);
    fr_tensor none;
    memset(&none, 0, sizeof none);
    n = -1;
    CHECK(fr_metrics_load(&none, &n) == NULL && n == 0, "absent tensor");
    int64_t z[2] = {2, 0};
    fr_tensor empty = fr_tensor_make(FR_F32, f, 2, z);
    n = -1;
    CHECK(fr_metrics_load(&empty, &n) == NULL && n == 0, "empty tensor");
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x5eed0001ULL;
    printf("test_metrics seed=0x%llx\n", (unsigned long long)seed);
    rng_state = seed;
    test_scaled_rows();
    test_orthogonal_error();
    test_noise_floor_statistics();
    test_anomalies();
    test_ulp();
    test_edges();
    test_softmax_props();
    test_load();
    return fr_test_exit("test_metrics");
}
