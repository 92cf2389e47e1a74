/* The diagnosis of a case beyond its bounds (diagnose.h): candidate defects re-run on the case's own inputs, the one
 * that matches named; else a shape unique to one class; else "unknown" with the error's shape. */
#include "verify/judge/diagnose.h"
#include "verify/judge/diagnose_cands.h"

#include "core/core.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Re-runs are skipped above this much work per run (B N1 S1 S2 (Dk + Dv) multiply-adds): the diagnosis stays cheap
 * beside the case itself. */
static const double kMaxWork = 1.5e9;
/* Matching rule (diagnose.h): a candidate matches at rho <= kMatch (or <= rho_0 * kMatchRel); it must be kSeparate
 * times closer than the correct output and than every candidate of another diagnosis that is itself kSeparate times
 * closer than the correct output (one that is not explains nothing). */
static const double kMatch = 1.5, kMatchRel = 0.05, kSeparate = 4.0;
/* Numerics candidates only below this rel-L2 of the IUT (diagnose.c, fr_diagnose). */
static const double kNumericsMax = 0.05;

static double rel_l2(const double *a, const double *r, int64_t n) {
    double ee = 0, rr = 0;
    for (int64_t k = 0; k < n; k++) {
        if (!isfinite(a[k]) || !isfinite(r[k])) continue;
        ee += (a[k] - r[k]) * (a[k] - r[k]);
        rr += r[k] * r[k];
    }
    return rr > 0 ? sqrt(ee / rr) : sqrt(ee);
}

/* rho: the largest rel-L2 of the IUT against `ref` over the compared outputs, in units of each output's bound. The
 * golden's fully masked rows are zero in the IUT's copy: they are zeroed in the candidate too. */
static double rho_of(const fr_diag_in *x, const fr_judgement *j, double *const *ref, const int64_t *nref) {
    double rho = 0;
    bool any = false;
    for (int k = dg_cmp_first(x); k <= dg_cmp_last(x); k++) {
        if (!x->a[k]) continue;
        if (!ref[k] || nref[k] != x->n[k]) return INFINITY;
        double b = j->out[k].bound_l2;
        if (!(b > 0)) continue;
        bool outlike = k == FR_CO_ATTENTION_OUT || k == FR_CO_DQ;
        if (outlike && x->d1 && x->row_len > 0 && x->nrows * x->row_len == x->n[k])
            for (int64_t i = 0; i < x->nrows; i++)
                if (x->d1[i])
                    for (int64_t d = 0; d < x->row_len; d++)
                        ref[k][i * x->row_len + d] = 0;
        /* A NaN/Inf on one side only is no match (both non-finite: left out, as the judge does). */
        for (int64_t q = 0; q < x->n[k]; q++)
            if (isfinite(x->a[k][q]) != isfinite(ref[k][q])) return INFINITY;
        rho = fmax(rho, rel_l2(x->a[k], ref[k], x->n[k]) / b);
        any = true;
    }
    return any ? rho : INFINITY;
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Shapes. */

/* Relative L2 of a against r restricted to one head's rows (out-like). */
static double head_rel_l2(const fr_diag_in *x, const double *a, const double *r, int64_t h) {
    double ee = 0, rr = 0;
    const int64_t L = x->row_len;
    for (int64_t i = 0; i < x->nrows; i++) {
        if (x->head[i] != h) continue;
        for (int64_t d = 0; d < L; d++) {
            double av = a[i * L + d], rv = r[i * L + d];
            if (!isfinite(av) || !isfinite(rv)) continue;
            ee += (av - rv) * (av - rv);
            rr += rv * rv;
        }
    }
    return rr > 0 ? sqrt(ee / rr) : sqrt(ee);
}

/* GQA: heads whose kv head is the same under h / G and h % N2 are clean, the others are not. */
static bool shape_gqa(const fr_diag_in *x, int k, double bound) {
    const fr_problem *pb = x->pb;
    if (pb->G <= 1 || pb->N2 <= 1 || !x->a[k] || x->nrows * x->row_len != x->n[k]) return false;
    bool same_ok = true, diff_bad = false;
    for (int64_t h = 0; h < pb->N1; h++) {
        double e = head_rel_l2(x, x->a[k], x->r[k], h);
        if (h / pb->G == h % pb->N2)
            same_ok &= e <= bound;
        else
            diff_bad |= e > bound;
    }
    return same_ok && diff_bad;
}

/* Overflow: a case designed for overflow-sized sums or scores whose output has whole rows zero (or non-finite) where
 * the golden's are not (an fp16 row sum that became Inf divides the row to 0). */
static bool shape_overflow(const fr_diag_in *x, int k) {
    if (!(x->purpose & FR_TAG_LARGE) || !x->a[k] || x->nrows * x->row_len != x->n[k]) return false;
    for (int64_t i = 0; i < x->nrows; i++) {
        bool zero = true, gz = true;
        for (int64_t d = 0; d < x->row_len; d++) {
            double av = x->a[k][i * x->row_len + d], rv = x->r[k][i * x->row_len + d];
            if (!isfinite(av)) return true;
            zero &= av == 0;
            gz &= rv == 0;
        }
        if (zero && !gz) return true;
    }
    return false;
}

/* "dq 5.1x, dk 0.4x bound; dq: rows above bound 96/128, heads 0-3 of 4, worst row 127" */
static void describe_shape(const fr_diag_in *x, const fr_judgement *j, int k_fail, char *s, size_t n) {
    size_t u = 0;
#define PUT(...)                                                                                                    \
    do {                                                                                                            \
        if (u < n) {                                                                                                \
            int w_ = snprintf(s + u, n - u, __VA_ARGS__);                                                           \
            if (w_ > 0) u += (size_t)w_;                                                                            \
        }                                                                                                           \
    } while (0)
    PUT("shape:");
    for (int k = dg_cmp_first(x); k <= dg_cmp_last(x); k++)
        if (x->a[k] && j->out[k].bound_l2 > 0)
            PUT(" %s %.3gx", fr_case_output_name((fr_case_output)k), j->out[k].m.rel_l2 / j->out[k].bound_l2);
    PUT(" bound");
    int k = k_fail;
    if (x->a[k] && x->nrows > 0 && x->nrows * x->row_len == x->n[k]) {
        double bound = j->out[k].bound_l2;
        int64_t bad = 0, worst = -1, hmin = INT64_MAX, hmax = -1, hbad = 0;
        double wv = -1;
        uint8_t *hb = calloc((size_t)x->pb->N1 + 1, 1);
        for (int64_t i = 0; i < x->nrows; i++) {
            double ee = 0, rr = 0;
            for (int64_t d = 0; d < x->row_len; d++) {
                double av = x->a[k][i * x->row_len + d], rv = x->r[k][i * x->row_len + d];
                if (!isfinite(av) || !isfinite(rv)) continue;
                ee += (av - rv) * (av - rv);
                rr += rv * rv;
            }
            double e = rr > 0 ? sqrt(ee / rr) : sqrt(ee);
            if (e > bound) {
                bad++;
                int64_t h = x->head[i];
                if (h < hmin) hmin = h;
                if (h > hmax) hmax = h;
                if (hb && h >= 0 && h < x->pb->N1 && !hb[h]) hb[h] = 1, hbad++;
            }
            if (e > wv) wv = e, worst = i;
        }
        free(hb);
        PUT("; %s rows above bound %lld/%lld", fr_case_output_name((fr_case_output)k), (long long)bad,
            (long long)x->nrows);
        if (bad) PUT(", %lld of %lld heads (%lld-%lld)", (long long)hbad, (long long)x->pb->N1, (long long)hmin,
                     (long long)hmax);
        if (worst >= 0) PUT(", worst row %lld", (long long)worst);
    }
#undef PUT
}

/* ---------------------------------------------------------------------------------------------------------------- */

static double work_of(const fr_problem *pb) {
    return (double)pb->B * (double)pb->N1 * (double)pb->S1 * (double)pb->S2 *
           (double)(pb->Dk + pb->Dv + pb->Drope + 1);
}

fr_diag fr_diagnose(const fr_diag_in *x, const fr_judgement *j, fr_case_output k_fail, char *shape, size_t n) {
    if (shape && n) shape[0] = 0;
    char buf[256] = "";
    fr_diag named = FR_DIAG_NONE;
    const char *best_name = NULL;
    double rho0 = INFINITY, best = INFINITY;
    /* 1. Candidates. */
    if (work_of(x->pb) <= kMaxWork) {
        double *r[FR_CASE_NUM_OUTPUTS];
        int64_t nr[FR_CASE_NUM_OUTPUTS];
        dg_cres g;
        if (dg_copy_golden(x, &g)) {
            memcpy(r, g.v, sizeof r);
            memcpy(nr, g.n, sizeof nr);
            rho0 = rho_of(x, j, r, nr);
            dg_cres_free(&g);
        }
        double rho[DG_MAX_CANDS];
        size_t bi = dg_ncands;
        unsigned op = x->c->op == FR_CASE_FWD ? 1u : 2u;
        for (size_t c = 0; c < dg_ncands; c++)
            rho[c] = INFINITY;
        /* A rounding defect of a 16-bit format cannot move an output by 5 % (bf16 u = 0.4 %): no numerics re-run
         * past that. */
        double err = 0;
        for (int k = dg_cmp_first(x); k <= dg_cmp_last(x); k++)
            if (x->a[k]) err = fmax(err, j->out[k].m.rel_l2);
        /* No distance to the correct output (its copy ran out of memory): nothing can be told closer than it, and an
         * infinite rho_0 would make any candidate match. */
        unsigned passes = !isfinite(rho0) ? 0 : err < kNumericsMax ? 2 : 1;
        for (unsigned pass = 0; pass < passes && named == FR_DIAG_NONE; pass++) {
            for (size_t c = 0; c < dg_ncands; c++) {
                if (!(dg_cands[c].ops & op) || ((dg_cands[c].ops & 4u) != 0) != (pass == 1)) continue;
                dg_cres co;
                memset(&co, 0, sizeof co);
                if (dg_cands[c].fn(x, dg_cands[c].arg, &co)) rho[c] = rho_of(x, j, co.v, co.n);
                dg_cres_free(&co);
                if (isfinite(rho[c]) && (bi == dg_ncands || rho[c] < rho[bi])) bi = c;
            }
            if (bi < dg_ncands && isfinite(rho[bi])) {
                best = rho[bi];
                best_name = dg_cands[bi].name;
                bool match = best <= fmax(kMatch, kMatchRel * rho0) && rho0 >= kSeparate * best;
                /* Another diagnosis's candidate within reach makes it ambiguous, unless that candidate is itself no
                 * nearer than the correct output by kSeparate (no alternative explanation: near the bound every small
                 * numerics perturbation sits about as far as the correct output does). */
                for (size_t c = 0; match && c < dg_ncands; c++)
                    if (dg_cands[c].diag != dg_cands[bi].diag && rho[c] < fmax(kSeparate * best, kMatch) &&
                        kSeparate * rho[c] <= rho0)
                        match = false;
                if (match) named = dg_cands[bi].diag;
            }
        }
    }
    if (named != FR_DIAG_NONE) {
        snprintf(buf, sizeof buf, "matches candidate '%s' (rho %.3g; correct %.3g)", best_name, best, rho0);
    } else {
        /* 2. Shapes unique to one class. */
        double bound = j->out[k_fail].bound_l2;
        if (shape_gqa(x, k_fail, bound))
            named = FR_DIAG_GQA_MAP;
        else if (shape_overflow(x, k_fail))
            named = FR_DIAG_OVERFLOW;
        if (named == FR_DIAG_NONE) named = FR_DIAG_UNKNOWN;
        describe_shape(x, j, k_fail, buf, sizeof buf);
        if (best_name) {
            size_t u = strlen(buf);
            snprintf(buf + u, sizeof buf - u, "; nearest candidate '%s' (rho %.3g; correct %.3g)", best_name, best,
                     rho0);
        }
    }
    if (shape && n) snprintf(shape, n, "%s", buf);
    return named;
}

bool fr_diagnose_native(const fr_diag_in *x, const fr_judgement *j, char *why, size_t n) {
    if ((x->pb->dtype != FR_BF16 && x->pb->dtype != FR_F16) || work_of(x->pb) > kMaxWork) return false;
    dg_cres g;
    if (!dg_copy_golden(x, &g)) return false;
    double rho0 = rho_of(x, j, g.v, g.n), best = INFINITY;
    dg_cres_free(&g);
    const char *name = NULL;
    for (size_t c = 0; c < dg_ncands; c++) {
        if (dg_cands[c].diag != FR_DIAG_NATIVE_DTYPE) continue;
        dg_cres co;
        memset(&co, 0, sizeof co);
        double r = dg_cands[c].fn(x, dg_cands[c].arg, &co) ? rho_of(x, j, co.v, co.n) : INFINITY;
        dg_cres_free(&co);
        if (r < best) best = r, name = dg_cands[c].name;
    }
    if (!(best <= kMatch && kSeparate * best <= rho0)) return false;
    snprintf(why, n, "matches candidate '%s' (rho %.3g; correct %.3g)", name, best, rho0);
    return true;
}

fr_diag fr_diagnose_stats(const fr_diag_in *x, fr_case_output k) {
    if (k != FR_CO_SOFTMAX_SUM) return FR_DIAG_SOFTMAX_STATS;
    /* lse stored as the sum: l' = m + log(l) (or log(l)). */
    const double *a = x->a[k], *r = x->r[k], *mr = x->r[FR_CO_SOFTMAX_MAX];
    double d_lse = 0, d_log = 0;
    for (int64_t q = 0; q < x->n[k]; q++) {
        if (r[q] <= 0) continue;
        double l = log(r[q]);
        d_lse = fmax(d_lse, fabs(a[q] - (mr ? mr[q] : 0) - l) / (1 + fabs(l + (mr ? mr[q] : 0))));
        d_log = fmax(d_log, fabs(a[q] - l) / (1 + fabs(l)));
    }
    return d_lse < 1e-3 || d_log < 1e-3 ? FR_DIAG_LSE_FOR_SUM : FR_DIAG_SOFTMAX_STATS;
}
