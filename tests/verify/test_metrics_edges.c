/* The metrics' argument errors and corner values that test_metrics.c does not reach: NULL output and arrays, an
 * element count that overflows, the two options (rel_floor, skip_rel), a non-numeric ulp dtype, +Inf against -Inf,
 * the ulp of zero / Inf / below the smallest hif8 code, and the softmax checks on rows with no finite score, tied
 * maxima, NaN weights and NaN statistics. Each expected value is worked out by hand in its comment. */
#include "verify/metrics/metrics.h"

#include "core/core.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/check.h"

static void test_argument_errors(void) {
    double a[2] = {1, 2}, r[2] = {1, 2};
    fr_error e;
    fr_metrics m;
    memset(&e, 0, sizeof e);
    CHECK(fr_metrics_compute(a, r, 1, 2, NULL, NULL, &e) == FR_E_NULL && !strcmp(e.msg, "metrics: output NULL"),
          "NULL output: %s", e.msg);
    CHECK(fr_metrics_compute(a, r, 1, -2, NULL, &m, &e) == FR_E_INVALID_ARG &&
              !strcmp(e.msg, "metrics: rows = 1, row_len = -2"),
          "negative row_len: %s", e.msg);
    CHECK(m.first_mismatch == -1 && m.argmax_abs == -1 && m.n == 0, "metrics reset before the refusal");
    CHECK(fr_metrics_compute(a, r, INT64_MAX / 2, 4, NULL, &m, &e) == FR_E_OVERFLOW &&
              !strcmp(e.msg, "metrics: rows * row_len overflows"),
          "overflowing count: %s", e.msg);
    CHECK(fr_metrics_compute(NULL, r, 1, 2, NULL, &m, &e) == FR_E_NULL && !strcmp(e.msg, "metrics: a NULL"), "a: %s",
          e.msg);
    CHECK(fr_metrics_compute(a, NULL, 1, 2, NULL, &m, &e) == FR_E_NULL && !strcmp(e.msg, "metrics: r NULL"), "r: %s",
          e.msg);
    /* 0 elements with NULL arrays is fine (rows 3 of length 0) */
    CHECK(fr_metrics_compute(NULL, NULL, 3, 0, NULL, &m, &e) == FR_OK && m.n == 0 && m.rows_used == 0, "3 x 0");
}

/* rel_floor: |r| below it is measured against it. a - r = 1e-3 at r = 1e-6: max_rel 1e-3 / 0.5 with a floor of 0.5
 * (1e-3 / 1e-6 = 1000 with the automatic floor, 1e-6 x max|r| = 1e-6). */
static void test_options(void) {
    double r[4] = {1e-6, 1, 1, 1}, a[4] = {1e-6 + 1e-3, 1, 1, 1};
    fr_metrics m;
    fr_metrics_opts o = fr_metrics_opts_default();
    CHECK(fr_metrics_compute(a, r, 1, 4, &o, &m, NULL) == FR_OK && fabs(m.max_rel - 1000.0) < 1e-6,
          "automatic floor: max_rel %g, want 1000", m.max_rel);
    o.rel_floor = 0.5;
    CHECK(fr_metrics_compute(a, r, 1, 4, &o, &m, NULL) == FR_OK && fabs(m.max_rel - 2e-3) < 1e-12,
          "rel_floor 0.5: max_rel %g, want 2e-3", m.max_rel);
    CHECK(fabs(m.mean_rel - 2e-3 / 4) < 1e-12, "mean_rel %g, want 5e-4", m.mean_rel);
    /* skip_rel: rows whose <r,r> is below skip_rel x the largest row's are left out of the row gains. Rows <r,r> = 4,
     * 1e-4: the default (1e-12) keeps both, 1e-3 keeps the first only. */
    double r2[4] = {2, 0, 1e-2, 0}, a2[4] = {2.2, 0, 1.1e-2, 0};
    o = fr_metrics_opts_default();
    CHECK(fr_metrics_compute(a2, r2, 2, 2, &o, &m, NULL) == FR_OK && m.rows_used == 2, "default skip: %lld rows",
          (long long)m.rows_used);
    o.skip_rel = 1e-3;
    CHECK(fr_metrics_compute(a2, r2, 2, 2, &o, &m, NULL) == FR_OK && m.rows_used == 1, "skip_rel 1e-3: %lld rows",
          (long long)m.rows_used);
    CHECK(fabs(m.gain_rms - 0.1) < 1e-12 && fabs(m.gain_max - 0.1) < 1e-12, "gain of the kept row %g, want 0.1",
          m.gain_rms);
    /* A dtype with no ulp (bool): the ulp metric stays 0 rather than dividing by zero. */
    o = fr_metrics_opts_default();
    o.ulp_dtype = FR_BOOL;
    CHECK(fr_metrics_compute(a2, r2, 2, 2, &o, &m, NULL) == FR_OK && m.max_ulp == 0 && m.mean_ulp == 0,
          "bool ulp: %g", m.max_ulp);
    /* An output of only zeros against the same: no row is used, the gain ratio stays 0. */
    double z[3] = {0, 0, 0};
    CHECK(fr_metrics_compute(z, z, 3, 1, NULL, &m, NULL) == FR_OK && m.rows_used == 0 && m.gain_over_floor == 0,
          "zeros: rows_used %lld", (long long)m.rows_used);
    /* Exactly right nonzero rows: used, but a zero noise floor and a zero gain make a ratio of 0, not 0/0. */
    double e2[2] = {1, 2};
    CHECK(fr_metrics_compute(e2, e2, 1, 2, NULL, &m, NULL) == FR_OK && m.rows_used == 1 && m.noise_floor == 0 &&
              m.gain_over_floor == 0,
          "exact: rows_used %lld, gain/floor %g", (long long)m.rows_used, m.gain_over_floor);
}

/* Only anomalies: nothing compared, the sums stay 0. */
static void test_all_anomalies(void) {
    double r[2] = {NAN, INFINITY}, a[2] = {NAN, INFINITY};
    fr_metrics m;
    CHECK(fr_metrics_compute(a, r, 1, 2, NULL, &m, NULL) == FR_OK && m.n == 0 && m.n_anomaly == 2 &&
              m.mean_rel == 0 && m.rel_l2 == 0 && m.argmax_abs == -1,
          "all anomalies: n %lld, anomalies %lld", (long long)m.n, (long long)m.n_anomaly);
}

/* +Inf against -Inf is a mismatch, -Inf against -Inf is not; the first mismatch is the +Inf. */
static void test_infinities(void) {
    double r[4] = {-INFINITY, 1, -INFINITY, 2}, a[4] = {-INFINITY, 1, INFINITY, 2};
    fr_metrics m;
    CHECK(fr_metrics_compute(a, r, 2, 2, NULL, &m, NULL) == FR_OK, "status");
    CHECK(m.n_anomaly == 1 && m.n_anomaly_mismatch == 1 && m.first_mismatch == 2 && m.n == 2,
          "anomaly %lld, mismatch %lld at %lld, n %lld", (long long)m.n_anomaly, (long long)m.n_anomaly_mismatch,
          (long long)m.first_mismatch, (long long)m.n);
    CHECK(m.rows_used == 0, "rows with an anomaly take no part in the gains: %lld", (long long)m.rows_used);
}

static void test_ulp_corners(void) {
    CHECK(fr_ulp_of(FR_F32, 0.0) == 0x1p-149, "f32 ulp(0) = %a", fr_ulp_of(FR_F32, 0.0));
    CHECK(fr_ulp_of(FR_F32, INFINITY) == 0x1p-149, "f32 ulp(Inf) = %a", fr_ulp_of(FR_F32, INFINITY));
    CHECK(fr_ulp_of(FR_F16, NAN) == 0x1p-24, "f16 ulp(NaN) = %a", fr_ulp_of(FR_F16, NAN));
    CHECK(fr_ulp_of(FR_HIF8, 0.0) == 0x1p-22, "hif8 ulp(0) = %a", fr_ulp_of(FR_HIF8, 0.0));
    CHECK(fr_ulp_of(FR_HIF8, -INFINITY) == 0x1p-22, "hif8 ulp(-Inf) = %a", fr_ulp_of(FR_HIF8, -INFINITY));
    CHECK(fr_ulp_of(FR_HIF8, 0x1p-30) == 0x1p-22, "hif8 ulp below its denormals = %a", fr_ulp_of(FR_HIF8, 0x1p-30));
    CHECK(fr_ulp_of(FR_HIF8, 0x1p-20) == 0x1p-20, "hif8 denormal 2^-20: ulp %a", fr_ulp_of(FR_HIF8, 0x1p-20));
    CHECK(fr_ulp_of(FR_HIF8, 0.25) == 0x1p-5, "hif8 ulp(0.25) = %a (3 fraction bits at e = -2)",
          fr_ulp_of(FR_HIF8, 0.25));
    CHECK(fr_ulp_of(FR_BOOL, 1.0) == 0.0 && fr_ulp_of(FR_DT_NONE, 1.0) == 0.0, "no ulp for bool / none");
}

static void test_softmax_corners(void) {
    /* Row 0: no finite score (fully masked) with weights 0: not a bad sum, no argmax check. Row 1: scores tied at the
     * max, the larger weight on the second of them: argmax right. Row 2: a NaN weight: negative, bad sum, NaN error. */
    double x[9] = {-INFINITY, -INFINITY, -INFINITY, 2, 2, 1, 0, 0, 0};
    double p[9] = {0, 0, 0, 0.3, 0.5, 0.2, NAN, 0.5, 0.5};
    fr_softmax_props sp;
    fr_softmax_props_rows(p, x, 3, 3, 1e-6, &sp);
    CHECK(sp.rows == 3 && sp.bad_sum == 1 && sp.argmax_wrong == 0 && sp.negative == 1,
          "bad_sum %lld argmax %lld negative %lld", (long long)sp.bad_sum, (long long)sp.argmax_wrong,
          (long long)sp.negative);
    CHECK(isnan(sp.max_sum_err), "a NaN weight makes the sum error NaN: %g", sp.max_sum_err);
    /* Tie with the larger weight on the first of the tied scores: still right. */
    double x2[3] = {2, 2, 1}, p2[3] = {0.5, 0.3, 0.2};
    fr_softmax_props_rows(p2, x2, 1, 3, 1e-6, &sp);
    CHECK(sp.argmax_wrong == 0 && sp.bad_sum == 0, "tie, first larger: argmax %lld", (long long)sp.argmax_wrong);

    /* Stats: a NaN max, an Inf sum where the reference is finite, a correct row; NULL error outputs allowed. */
    double m[3] = {NAN, 1, 3}, l[3] = {2, INFINITY, 4}, rm[3] = {1, 1, 3}, rl[3] = {2, 2, 4};
    CHECK(fr_softmax_stats_check(m, l, rm, rl, 3, 1e-6, 1e-6, NULL, NULL) == 2, "two bad rows");
    double me = 0, le = 0;
    CHECK(fr_softmax_stats_check(m, l, rm, rl, 3, 1e-6, 1e-6, &me, &le) == 2 && isinf(me) && isinf(le),
          "worst errors %g %g, want Inf Inf", me, le);
    double ml[1] = {2}, ll[1] = {NAN}, rml[1] = {2}, rll[1] = {3};
    CHECK(fr_softmax_stats_check(ml, ll, rml, rll, 1, 1e-6, 1e-6, &me, &le) == 1 && isinf(me) && isinf(le),
          "a NaN sum makes both errors Inf: %g %g", me, le);
    double m1[2] = {1, 1.5}, rm1[2] = {1, 1}, l1[2] = {1, 1};
    CHECK(fr_softmax_stats_check(m1, l1, rm1, l1, 2, 0.6, 0, &me, &le) == 0 && me == 0.5 && le == 0,
          "max off by 0.5 relative, tolerance 0.6: me %g le %g", me, le);
}

int main(void) {
    test_argument_errors();
    test_options();
    test_infinities();
    test_all_anomalies();
    test_ulp_corners();
    test_softmax_corners();
    return fr_test_exit("test_metrics_edges");
}
