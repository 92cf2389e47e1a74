/* Precision metrics (docs/verification-method.md 2). Everything in fp64. */
#include "verify/metrics/metrics.h"

#include "core/core.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

double *fr_metrics_load(const fr_tensor *t, int64_t *n) {
    *n = 0;
    if (!fr_tensor_present(t)) return NULL;
    int64_t cnt = fr_tensor_numel(t);
    if (cnt <= 0) return NULL;
    double *v = malloc(sizeof(double) * (size_t)cnt);
    if (!v) return NULL;
    for (int64_t k = 0; k < cnt; k++)
        v[k] = fr_load_f64(t, k);
    *n = cnt;
    return v;
}

fr_metrics_opts fr_metrics_opts_default(void) {
    fr_metrics_opts o = {0.0, FR_DT_NONE, 0.0};
    return o;
}

/* Spacing of an IEEE-like binary format with p significand bits and minimum normal exponent emin at |x|. */
static double ulp_ieee(double x, int p, int emin) {
    double a = fabs(x);
    int e;
    if (a == 0.0 || !isfinite(a)) e = emin;
    else {
        (void)frexp(a, &e);
        e -= 1; /* a in [2^e, 2^(e+1)) */
        if (e < emin) e = emin;
    }
    return ldexp(1.0, e - p + 1);
}

double fr_ulp_of(fr_dtype dt, double x) {
    switch (dt) {
    case FR_F64: return ulp_ieee(x, 53, -1022);
    case FR_F32: return ulp_ieee(x, 24, -126);
    case FR_F16: return ulp_ieee(x, 11, -14);
    case FR_BF16: return ulp_ieee(x, 8, -126);
    case FR_E4M3FN: return ulp_ieee(x, 4, -6);
    case FR_E5M2: return ulp_ieee(x, 3, -14);
    case FR_HIF8: {
        /* Tapered precision (spec 9.1): 3 fraction bits for |e| <= 3, 2 for <= 7, 1 for <= 15; below 2^-15 the
         * denormals are powers of two, spaced 2^e. */
        double a = fabs(x);
        int e;
        if (a == 0.0 || !isfinite(a)) return ldexp(1.0, -22);
        (void)frexp(a, &e);
        e -= 1;
        if (e < -22) return ldexp(1.0, -22);
        int ae = e < 0 ? -e : e;
        int fb = ae <= 3 ? 3 : ae <= 7 ? 2 : ae <= 15 ? 1 : 0;
        return ldexp(1.0, e - fb);
    }
    default: return 0.0;
    }
}

static int cmp_double(const void *pa, const void *pb) {
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* Nearest-rank percentile of a sorted array. */
static double pct(const double *s, int64_t n, double q) {
    if (n <= 0) return 0.0;
    int64_t k = (int64_t)ceil(q * (double)n) - 1;
    if (k < 0) k = 0;
    if (k >= n) k = n - 1;
    return s[k];
}

/* Same anomaly (both NaN, or both the same infinity). */
static bool same_anomaly(double a, double r) {
    if (isnan(a) && isnan(r)) return true;
    return isinf(a) && isinf(r) && (a > 0) == (r > 0);
}

fr_status fr_metrics_compute(const double *a, const double *r, int64_t rows, int64_t row_len,
                             const fr_metrics_opts *opt, fr_metrics *m, fr_error *err) {
    if (!m) return fr_fail(err, FR_E_NULL, "metrics: output NULL");
    fr_metrics z = {0};
    z.first_mismatch = -1;
    z.argmax_abs = -1;
    *m = z;
    if (rows < 0 || row_len < 0) return fr_fail(err, FR_E_INVALID_ARG, "metrics: rows = %lld, row_len = %lld",
                                                (long long)rows, (long long)row_len);
    int64_t n;
    if (!fr_mul_ok(rows, row_len, &n)) return fr_fail(err, FR_E_OVERFLOW, "metrics: rows * row_len overflows");
    if (n == 0) return FR_OK;
    if (!a || !r) return fr_fail(err, FR_E_NULL, "metrics: %s NULL", !a ? "a" : "r");
    fr_metrics_opts o = opt ? *opt : fr_metrics_opts_default();

    double rmax = 0.0;
    for (int64_t k = 0; k < n; k++)
        if (isfinite(r[k]) && fabs(r[k]) > rmax) rmax = fabs(r[k]);
    double floor_ = o.rel_floor > 0 ? o.rel_floor : 1e-6 * rmax;
    if (!(floor_ > 0)) floor_ = DBL_MIN;

    double *rg = malloc(sizeof(double) * (size_t)rows * 2);
    if (!rg) return fr_fail(err, FR_E_NOMEM, "metrics: %lld rows of scratch", (long long)rows);
    double *rr_row = rg + rows; /* <r,r> per row, -1 for rows with an anomaly */

    double see = 0, srr = 0, saa = 0, sar = 0, srel = 0, sulp = 0;
    double rr_max = 0;
    for (int64_t i = 0; i < rows; i++) {
        double ee = 0, rr = 0, er = 0;
        bool anomaly = false;
        for (int64_t j = 0; j < row_len; j++) {
            int64_t k = i * row_len + j;
            double av = a[k], rv = r[k];
            if (!isfinite(av) || !isfinite(rv)) {
                anomaly = true;
                if (same_anomaly(av, rv)) z.n_anomaly++;
                else {
                    z.n_anomaly_mismatch++;
                    if (z.first_mismatch < 0) z.first_mismatch = k;
                }
                continue;
            }
            double d = av - rv;
            double ad = fabs(d);
            z.n++;
            if (ad > z.max_abs || z.argmax_abs < 0) {
                z.max_abs = ad;
                z.argmax_abs = k;
            }
            double rel = ad / fmax(fabs(rv), floor_);
            if (rel > z.max_rel) z.max_rel = rel;
            srel += rel;
            if (o.ulp_dtype != FR_DT_NONE) {
                double u = fr_ulp_of(o.ulp_dtype, rv);
                double ul = u > 0 ? ad / u : 0.0;
                if (ul > z.max_ulp) z.max_ulp = ul;
                sulp += ul;
            }
            ee += d * d;
            rr += rv * rv;
            er += d * rv;
            saa += av * av;
            sar += av * rv;
        }
        see += ee;
        srr += rr;
        rg[i] = rr > 0 ? er / rr : 0.0;
        rr_row[i] = anomaly ? -1.0 : rr;
        if (!anomaly && rr > rr_max) rr_max = rr;
    }
    if (z.n > 0) {
        z.mean_rel = srel / (double)z.n;
        z.mean_ulp = sulp / (double)z.n;
    }
    z.rel_l2 = srr > 0 ? sqrt(see / srr) : (see > 0 ? INFINITY : 0.0);
    z.nmse = srr > 0 ? see / srr : (see > 0 ? INFINITY : 0.0);
    z.cos_diff = (saa + srr) > 0 ? 1.0 - 2.0 * sar / (saa + srr) : 0.0;

    /* Row gains and noise floor (second pass for each used row's rel-L2). */
    double skip = (o.skip_rel > 0 ? o.skip_rel : 1e-12) * rr_max;
    int64_t used = 0;
    double sg2 = 0, sg = 0, sfl2 = 0;
    for (int64_t i = 0; i < rows; i++) {
        double rr = rr_row[i];
        if (rr < 0 || rr <= skip || rr == 0) continue;
        double ee = 0;
        for (int64_t j = 0; j < row_len; j++) {
            double d = a[i * row_len + j] - r[i * row_len + j];
            ee += d * d;
        }
        double g = rg[i];
        sg2 += g * g;
        sg += g;
        sfl2 += ee / rr;
        rg[used++] = fabs(g);
    }
    z.rows_used = used;
    if (used > 0) {
        z.gain_rms = sqrt(sg2 / (double)used);
        z.gain_mean = sg / (double)used;
        qsort(rg, (size_t)used, sizeof(double), cmp_double);
        z.gain_max = rg[used - 1];
        z.gain_p50 = pct(rg, used, 0.50);
        z.gain_p90 = pct(rg, used, 0.90);
        z.gain_p99 = pct(rg, used, 0.99);
        z.noise_floor = sqrt(sfl2 / (double)used) * sqrt(3.0 / (double)row_len);
        z.gain_over_floor = z.noise_floor > 0 ? z.gain_rms / z.noise_floor : (z.gain_rms > 0 ? INFINITY : 0.0);
    }
    free(rg);
    *m = z;
    return FR_OK;
}

void fr_softmax_props_rows(const double *p, const double *x, int64_t rows, int64_t n, double sum_tol,
                           fr_softmax_props *out) {
    fr_softmax_props s = {0};
    s.rows = rows;
    for (int64_t i = 0; i < rows; i++) {
        const double *pi = p + i * n, *xi = x + i * n;
        double sum = 0, xmax = -INFINITY, pmax = -INFINITY, p_at_xmax = -INFINITY;
        bool any = false, neg = false;
        for (int64_t j = 0; j < n; j++) {
            if (!(pi[j] >= 0)) neg = true;
            sum += pi[j];
            if (pi[j] > pmax) pmax = pi[j];
            if (isfinite(xi[j])) any = true;
        }
        for (int64_t j = 0; j < n; j++) /* the largest weight among the positions holding the largest score */
            if (xi[j] > xmax) xmax = xi[j], p_at_xmax = pi[j];
            else if (xi[j] == xmax && pi[j] > p_at_xmax) p_at_xmax = pi[j];
        if (neg) s.negative++;
        if (any) {
            double e = fabs(sum - 1.0);
            if (!(e <= sum_tol)) s.bad_sum++;
            if (e > s.max_sum_err || isnan(e)) s.max_sum_err = e;
            if (p_at_xmax < pmax) s.argmax_wrong++;
        }
    }
    *out = s;
}

static double rel_err(double v, double ref) {
    if (v == ref) return 0.0;
    if (!isfinite(v) || !isfinite(ref)) return INFINITY;
    return fabs(v - ref) / fmax(fabs(ref), DBL_MIN);
}

int64_t fr_softmax_stats_check(const double *m, const double *l, const double *ref_m, const double *ref_l,
                               int64_t rows, double max_tol, double sum_tol, double *m_err, double *l_err) {
    int64_t bad = 0;
    double me = 0, le = 0;
    for (int64_t i = 0; i < rows; i++) {
        double em = rel_err(m[i], ref_m[i]), el = rel_err(l[i], ref_l[i]);
        if (isnan(m[i]) || isnan(l[i])) em = el = INFINITY;
        if (em > me) me = em;
        if (el > le) le = el;
        if (!(em <= max_tol) || !(el <= sum_tol)) bad++;
    }
    if (m_err) *m_err = me;
    if (l_err) *l_err = le;
    return bad;
}

void fr_dpsum_rows(const double *dy, const double *o, int64_t rows, int64_t d, double *d_out) {
    for (int64_t i = 0; i < rows; i++) {
        double s = 0;
        for (int64_t k = 0; k < d; k++) s += dy[i * d + k] * o[i * d + k];
        d_out[i] = s;
    }
}
