/* Precision metrics of docs/verification-method.md 2: an implementation's values `a` against a reference `r`, both
 * given as fp64 arrays (load tensors with fr_load_f64 first). All sums are in fp64 (compensation is not needed at the
 * sizes we compare: the metrics are ratios reported to 3 digits).
 *
 * Data is viewed as `rows` rows of `row_len` contiguous elements; a row is one (b, h, i) output row (or one row of a
 * gradient). Row gain and noise floor are per row; everything else is over all elements.
 */
#ifndef FR_VERIFY_METRICS_H
#define FR_VERIFY_METRICS_H

#include "flashref.h"

typedef struct fr_metrics {
    int64_t n;                 /* elements compared (both finite) */
    int64_t n_anomaly;         /* positions where both are the same NaN/+Inf/-Inf (excluded from norms) */
    int64_t n_anomaly_mismatch;/* positions where exactly one is NaN/Inf, or both non-finite but different */
    int64_t first_mismatch;    /* index of the first anomaly mismatch, -1 if none */
    double max_abs;            /* max |a - r| */
    int64_t argmax_abs;        /* index of max_abs (-1 if n == 0) */
    double max_rel;            /* max |a - r| / max(|r|, rel_floor) */
    double mean_rel;           /* mean of the same */
    double rel_l2;             /* ||a - r|| / ||r|| (0/0 = 0; x/0 = +Inf) */
    double nmse;               /* ||a - r||^2 / ||r||^2 (ggml) */
    double cos_diff;           /* 1 - 2<a,r> / (|a|^2 + |r|^2) (FlashMLA) */
    double max_ulp;            /* max |a - r| / ulp_dtype(r); 0 when no ulp dtype was given */
    double mean_ulp;
    /* Row gain (coherent error): gain = <a - r, r> / <r, r> per row; rows with <r, r> < 1e-12 * max_row <r, r>
     * (or with an anomaly) are skipped. */
    int64_t rows_used;
    double gain_rms, gain_max;       /* rms and max of |gain| */
    double gain_mean;                /* signed mean: a systematic bias of all rows */
    double gain_p50, gain_p90, gain_p99; /* percentiles of |gain| */
    /* Noise floor: rms over rows of (row rel-L2) * sqrt(3 / row_len) = the gain rms expected when each element's
     * error is independent (docs/verification-method.md 2). gain_over_floor = gain_rms / noise_floor. */
    double noise_floor;
    double gain_over_floor;
} fr_metrics;

typedef struct fr_metrics_opts {
    double rel_floor;   /* denominator floor of max_rel/mean_rel; 0 = 1e-6 * max|r| (set automatically) */
    fr_dtype ulp_dtype; /* FR_DT_NONE: no ulp metric; else fp64/fp32/fp16/bf16/e4m3fn/e5m2/hif8 */
    double skip_rel;    /* row-gain skip threshold relative to the largest <r,r>; 0 = 1e-12 */
} fr_metrics_opts;

fr_metrics_opts fr_metrics_opts_default(void);

/* Computes every metric of a against r, n = rows * row_len elements. Returns FR_E_INVALID_ARG for negative sizes,
 * FR_E_NULL for NULL arrays with n > 0, FR_E_NOMEM when the per-row scratch (rows doubles) cannot be allocated. */
fr_status fr_metrics_compute(const double *a, const double *r, int64_t rows, int64_t row_len,
                             const fr_metrics_opts *opt, fr_metrics *m, fr_error *err);

/* Every element of a contiguous tensor widened to fp64, for fr_metrics_compute (malloc'd; NULL with *n = 0 for an
 * absent or empty tensor, NULL with *n = 0 when out of memory). */
double *fr_metrics_load(const fr_tensor *t, int64_t *n);

/* The spacing of the format `dt` at magnitude |x| (the ulp of x in dt, subnormals included); hif8 uses its tapered
 * precision. 0 for FR_DT_NONE or a non-numeric dtype. */
double fr_ulp_of(fr_dtype dt, double x);

/* Softmax properties of explicit probability rows p[rows][n] with their scaled scores x[rows][n] (masked = -Inf or
 * excluded with p = 0). Counts rows violating each property; sum_tol is the allowed |sum - 1|. */
typedef struct fr_softmax_props {
    int64_t rows;
    int64_t bad_sum;      /* |sum_j p - 1| > sum_tol (rows with at least one finite score) */
    int64_t negative;     /* a weight < 0 or NaN */
    int64_t argmax_wrong; /* the largest score does not get a largest weight */
    double max_sum_err;   /* max |sum - 1| */
} fr_softmax_props;
void fr_softmax_props_rows(const double *p, const double *x, int64_t rows, int64_t n, double sum_tol,
                           fr_softmax_props *out);

/* Stored statistics: for each row, the stored max must equal the row max of the scaled scores (within max_tol
 * relative) and the stored sum must equal sum_j exp(x - max) (within sum_tol relative). ref_m/ref_l are the exact
 * values (from the golden). Returns the number of rows violating either; worst relative errors in *m_err / *l_err.
 * Rows where both stored and reference values are the D1 pair (-FLT_MAX, +FLT_MAX) match. */
int64_t fr_softmax_stats_check(const double *m, const double *l, const double *ref_m, const double *ref_l,
                               int64_t rows, double max_tol, double sum_tol, double *m_err, double *l_err);

/* dpsum D_i = sum_d dy[i, d] * o[i, d] for each of `rows` rows of length d (fp64); d_out has `rows` entries. */
void fr_dpsum_rows(const double *dy, const double *o, int64_t rows, int64_t d, double *d_out);

#endif
