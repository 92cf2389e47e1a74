/* The judge: verdict and diagnosis of one case (judge.h, docs/verification-method.md 3). */
#include "verify/judge/judge.h"

#include "verify/judge/diagnose.h"
#include "verify/judge/judge_apriori.h"

#include "core/core.h"
#include "core/problem.h"
#include "core/validate.h"
#include "verify/judge/plain_ref.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Alike tests/verify_suite/test_shrink.c:main and test_judge.c:test_hypotheses: kept apart because only the shape is
 * alike (designated initializers, one field a line): these are the judge's defaults, those test cases. */
fr_judge_opts fr_judge_opts_default(void) {
    fr_judge_opts o = {.k_out = 2.0,
                       .k_max = 4.0,
                       .k_grad = 3.0,
                       .k_stats = 4.0,
                       .warn_frac = 0.75,
                       .gain_warn = 2.0,
                       .standard = FR_STD_FLASHREF,
                       .growth_warn = 2.0,
                       .external = false};
    return o;
}

static const char *const kStdNames[] = {"flashref", "ascend-L0", "ascend-L1", "ascend-L2", "fa"};

const char *fr_standard_name(fr_standard s) {
    return (unsigned)s < sizeof kStdNames / sizeof kStdNames[0] ? kStdNames[s] : "?";
}

fr_status fr_standard_parse(const char *name, fr_standard *s, fr_error *err) {
    for (unsigned k = 0; name && k < sizeof kStdNames / sizeof kStdNames[0]; k++)
        if (!strcmp(name, kStdNames[k])) {
            *s = (fr_standard)k;
            return FR_OK;
        }
    return fr_fail(err, FR_E_INVALID_ARG, "--standard: '%s': expected flashref, ascend-L0, ascend-L1, ascend-L2 or fa",
                   name ? name : "(null)");
}

fr_status fr_judge_run_plain(const fr_case *c, const fr_judge_opts *opt, fr_case_outputs *o, fr_error *err) {
    fr_status st = fr_case_alloc_outputs(c, false, o, err);
    if (st != FR_OK) return st;
    /* --standard fa: FlashAttention's own baseline, attention_ref in the input dtype (plain_ref.h; 16-bit inputs) */
    bool native = opt && opt->standard == FR_STD_FA && (c->dtype == FR_BF16 || c->dtype == FR_F16);
    if (native)
        st = c->op == FR_CASE_FWD ? fr_plain_fwd_native(&c->params, &c->in.fwd, &o->fwd, FR_PLAIN_SCALE_Q, err)
                                  : fr_plain_bwd_native(&c->params, &c->in, &o->bwd, FR_PLAIN_SCALE_Q, err);
    else
        st = c->op == FR_CASE_FWD ? fr_plain_fwd(&c->params, &c->in.fwd, &o->fwd, err)
                                  : fr_plain_bwd(&c->params, &c->in, &o->bwd, err);
    if (st != FR_OK) fr_case_outputs_free(o);
    return st;
}

static bool is_d1_max(double m) { return m <= -(double)FLT_MAX * (1.0 - 1e-7); }

/* Row maps: for the per-(b, h, i) rows of attention_out (forward) or dq (backward), whether the golden row is fully
 * masked and its query head; the same flag for the softmax rows (8 copies each). */
typedef struct rowmap {
    int64_t nrows, row_len; /* out-like rows */
    uint8_t *d1;
    int32_t *head;
    int64_t nsm; /* softmax rows */
    uint8_t *sm_d1;
    int64_t d1_count;
} rowmap;

/* Idempotent: a failed rowmap_build frees what it got, and its caller's cleanup frees the rowmap again. */
static void rowmap_free(rowmap *r) {
    free(r->d1);
    free(r->head);
    free(r->sm_d1);
    r->d1 = r->sm_d1 = NULL;
    r->head = NULL;
}

/* out: a contiguous tensor of the out-like shape (row length D); sm: the reference softmax max (any float dtype). */
static fr_status rowmap_build(const fr_problem *pb, const fr_params *p, const fr_tensor *out, int64_t D,
                              const fr_tensor *sm, rowmap *r, fr_error *err) {
    memset(r, 0, sizeof *r);
    int64_t n = fr_tensor_numel(out);
    r->row_len = D;
    r->nrows = D > 0 ? n / D : 0;
    r->nsm = fr_tensor_present(sm) ? fr_tensor_numel(sm) / 8 : 0;
    r->d1 = calloc((size_t)r->nrows + 1, 1);
    r->head = calloc((size_t)r->nrows + 1, sizeof(int32_t));
    r->sm_d1 = calloc((size_t)r->nsm + 1, 1);
    if (!r->d1 || !r->head || !r->sm_d1) {
        rowmap_free(r);
        return fr_fail(err, FR_E_NOMEM, "judge: row maps");
    }
    for (int64_t b = 0; b < pb->B; b++) {
        int64_t row0, len;
        fr_problem_q_rows(pb, b, &row0, &len);
        for (int64_t h = 0; h < pb->N1; h++)
            for (int64_t i = 0; i < len; i++) {
                bool d1 = false;
                if (r->nsm) {
                    int64_t so = fr_softmax_offset(sm, pb->layout, p->softmax_layout, row0, b, h, i, 0);
                    d1 = is_d1_max(fr_load_f64(sm, so));
                    if (so / 8 < r->nsm) r->sm_d1[so / 8] = d1;
                }
                if (D > 0) {
                    int64_t oo = fr_layout_offset(out, pb->layout, D, row0, b, h, i, 0) / D;
                    if (oo < r->nrows) {
                        r->d1[oo] = d1;
                        r->head[oo] = (int32_t)h;
                    }
                }
                r->d1_count += d1;
            }
    }
    return FR_OK;
}

/* Row length of an output of case c. */
static int64_t out_row_len(const fr_problem *pb, fr_case_output k) {
    switch (k) {
    case FR_CO_ATTENTION_OUT: return pb->Dv;
    case FR_CO_SOFTMAX_MAX:
    case FR_CO_SOFTMAX_SUM: return 8;
    case FR_CO_DQ:
    case FR_CO_DK: return pb->Dk;
    case FR_CO_DV: return pb->Dv;
    case FR_CO_DQ_ROPE:
    case FR_CO_DK_ROPE: return pb->Drope;
    case FR_CO_DSINK: return pb->N1;
    default: return 1;
    }
}

/* The rows of output k that follow the query rows (and so the D1 map): attention_out, softmax, dq, dq_rope. */
static const uint8_t *d1_rows_of(const rowmap *rm, fr_case_output k, int64_t rows) {
    if ((k == FR_CO_SOFTMAX_MAX || k == FR_CO_SOFTMAX_SUM) && rows == rm->nsm) return rm->sm_d1;
    if ((k == FR_CO_ATTENTION_OUT || k == FR_CO_DQ) && rows == rm->nrows) return rm->d1;
    return NULL;
}

typedef struct ctx {
    const fr_case *c;
    unsigned tags, purpose;
    const fr_judge_opts *opt;
    fr_problem pb;
    rowmap rm;
    double *a[FR_CASE_NUM_OUTPUTS], *r[FR_CASE_NUM_OUTPUTS], *e[FR_CASE_NUM_OUTPUTS];
    double *pl[FR_CASE_NUM_OUTPUTS]; /* plain reference (NULL: none) */
    int64_t n[FR_CASE_NUM_OUTPUTS];
    fr_diag_in dx; /* what the diagnosis sees (diagnose.h), set once the outputs are loaded */
} ctx;

static void ctx_free(ctx *x) {
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        free(x->a[k]);
        free(x->r[k]);
        free(x->e[k]);
        free(x->pl[k]);
    }
    rowmap_free(&x->rm);
}

#define WHY(j, ...) snprintf((j)->why, sizeof(j)->why, __VA_ARGS__)

static void set(fr_judgement *j, fr_verdict v, fr_diag d) {
    j->verdict = v;
    j->diag = d;
}

/* Metrics of a (and the ideal e) against r for output k, with the D1 rows already neutralised. */
static fr_status compare(ctx *x, fr_judgement *j, fr_case_output k, fr_error *err) {
    fr_out_judgement *oj = &j->out[k];
    int64_t len = out_row_len(&x->pb, k);
    if (len <= 0 || x->n[k] == 0) return FR_OK;
    int64_t rows = x->n[k] / len;
    fr_metrics_opts mo = fr_metrics_opts_default();
    fr_status st = fr_metrics_compute(x->a[k], x->r[k], rows, len, &mo, &oj->m, err);
    if (st == FR_OK && x->e[k]) {
        st = fr_metrics_compute(x->e[k], x->r[k], rows, len, &mo, &oj->ideal, err);
        oj->have_ideal = st == FR_OK;
    }
    if (st == FR_OK && x->pl[k]) {
        st = fr_metrics_compute(x->pl[k], x->r[k], rows, len, &mo, &oj->plain, err);
        oj->have_plain = st == FR_OK;
    }
    /* msprobe columns: elements beyond 1/1000 and 5/1000 relative error (denominator floored as max_rel's). */
    double rmax = 0;
    for (int64_t q = 0; q < x->n[k]; q++)
        if (isfinite(x->r[k][q])) rmax = fmax(rmax, fabs(x->r[k][q]));
    double fl = fmax(1e-6 * rmax, DBL_MIN);
    int64_t n1 = 0, n5 = 0, nn = 0;
    for (int64_t q = 0; q < x->n[k]; q++) {
        double a = x->a[k][q], r = x->r[k][q];
        if (!isfinite(r) && !isfinite(a)) continue;
        double e = fabs(a - r) / fmax(fabs(r), fl);
        nn++;
        n1 += !(e <= 1e-3);
        n5 += !(e <= 5e-3);
    }
    oj->frac_1e3 = nn ? (double)n1 / (double)nn : 0;
    oj->frac_5e3 = nn ? (double)n5 / (double)nn : 0;
    return st;
}

static void fill_heat(const ctx *x, fr_judgement *j, fr_dtype dt) {
    const double *a = x->a[FR_CO_ATTENTION_OUT], *r = x->r[FR_CO_ATTENTION_OUT];
    int64_t L = x->rm.row_len, R = x->rm.nrows;
    if (!a || L <= 0 || R <= 0) return;
    j->heat_rows = (int)(R < FR_HEAT_R ? R : FR_HEAT_R);
    j->heat_cols = (int)(L < FR_HEAT_C ? L : FR_HEAT_C);
    for (int64_t i = 0; i < R; i++)
        for (int64_t d = 0; d < L; d++) {
            int hr = (int)(i * j->heat_rows / R), hc = (int)(d * j->heat_cols / L);
            double u = fr_ulp_of(dt, r[i * L + d]);
            double v = fabs(a[i * L + d] - r[i * L + d]) / (u > 0 ? u : 1.0);
            if (!isfinite(v)) v = 1e30;
            if (v > j->heat[hr][hc]) j->heat[hr][hc] = (float)v;
        }
    /* Row gains for the histogram. */
    j->gains = malloc(sizeof(double) * (size_t)R);
    if (!j->gains) return;
    for (int64_t i = 0; i < R; i++) {
        double er = 0, rr = 0;
        for (int64_t d = 0; d < L; d++) {
            double av = a[i * L + d], rv = r[i * L + d];
            if (!isfinite(av) || !isfinite(rv)) continue;
            er += (av - rv) * rv;
            rr += rv * rv;
        }
        if (rr > 0) j->gains[j->n_gains++] = er / rr;
    }
}

/* ---- the stages of fr_judge ---- */

/* Stage 1: shapes and dtypes against the allocation the operator's dtypes call for; *failed with j set to FAIL
 * when one is wrong. */
static fr_status stage_shapes(const fr_case *c, const fr_case_outputs *iut, int first, int last, unsigned absent_ok,
                              fr_judgement *j, bool *failed, fr_error *err) {
    *failed = false;
    fr_case_outputs want;
    fr_status st = fr_case_alloc_outputs(c, false, &want, err);
    if (st != FR_OK) return st;
    for (int k = first; k <= last && !*failed; k++) {
        const fr_tensor *w = fr_case_output_cslot(&want, (fr_case_output)k);
        const fr_tensor *a = fr_case_output_cslot(iut, (fr_case_output)k);
        if (!fr_tensor_present(w) || (!fr_tensor_present(a) && (absent_ok >> k & 1u))) continue;
        if (!fr_tensor_present(a) || a->dtype != w->dtype || !fr_tensor_same_shape(a, w)) {
            set(j, FR_FAIL, FR_DIAG_SHAPE);
            WHY(j, "%s: %s%s, expected dtype %s with %d dims", fr_case_output_name((fr_case_output)k),
                fr_tensor_present(a) ? "dtype " : "missing", fr_tensor_present(a) ? fr_dtype_name(a->dtype) : "",
                fr_dtype_name(w->dtype), w->ndim);
            j->ratio = INFINITY;
            *failed = true;
        }
    }
    fr_case_outputs_free(&want);
    return FR_OK;
}

/* Stage 2: every output (IUT, golden, ideal, plain) widened to fp64; the row maps. */
static fr_status stage_load(ctx *x, const fr_case_outputs *iut, const fr_case_outputs *golden,
                            const fr_case_outputs *ideal, const fr_case_outputs *plain, int first, int last,
                            fr_judgement *j, fr_error *err) {
    for (int k = first; k <= last; k++) {
        const fr_tensor *a = fr_case_output_cslot(iut, (fr_case_output)k);
        if (!fr_tensor_present(a) || fr_tensor_numel(a) == 0) continue;
        int64_t na, nr, ne = 0, np = 0;
        x->a[k] = fr_metrics_load(a, &na);
        x->r[k] = fr_metrics_load(fr_case_output_cslot(golden, (fr_case_output)k), &nr);
        if (ideal) x->e[k] = fr_metrics_load(fr_case_output_cslot(ideal, (fr_case_output)k), &ne);
        if (plain) x->pl[k] = fr_metrics_load(fr_case_output_cslot(plain, (fr_case_output)k), &np);
        if (!x->a[k] || !x->r[k] || na != nr)
            return fr_fail(err, FR_E_NOMEM, "judge: %s: cannot load", fr_case_output_name((fr_case_output)k));
        /* An ideal or plain reference that is there but could not be loaded (no memory) must not be judged as
         * absent: the verdict would rest on fewer references than the case has. */
        const fr_tensor *ti = ideal ? fr_case_output_cslot(ideal, (fr_case_output)k) : NULL,
                        *tp = plain ? fr_case_output_cslot(plain, (fr_case_output)k) : NULL;
        if ((ti && fr_tensor_present(ti) && fr_tensor_numel(ti) > 0 && !x->e[k]) ||
            (tp && fr_tensor_present(tp) && fr_tensor_numel(tp) > 0 && !x->pl[k]))
            return fr_fail(err, FR_E_NOMEM, "judge: %s: cannot load a reference",
                           fr_case_output_name((fr_case_output)k));
        if (x->e[k] && ne != na) {
            free(x->e[k]);
            x->e[k] = NULL;
        }
        if (x->pl[k] && np != na) {
            free(x->pl[k]);
            x->pl[k] = NULL;
        }
        x->n[k] = na;
        j->out[k].present = true;
    }
    const fr_case *c = x->c;
    const fr_tensor *smref = c->op == FR_CASE_FWD ? &golden->fwd.softmax_max : &c->in.softmax_max;
    const fr_tensor *outlike = c->op == FR_CASE_FWD ? &golden->fwd.attention_out : &golden->bwd.dq;
    fr_status st = rowmap_build(&x->pb, &c->params, outlike, c->op == FR_CASE_FWD ? x->pb.Dv : x->pb.Dk, smref,
                                &x->rm, err);
    j->d1_rows = x->rm.d1_count;
    x->dx = (fr_diag_in){.c = c,
                         .tags = x->tags,
                         .purpose = x->purpose,
                         .pb = &x->pb,
                         .a = (const double *const *)x->a,
                         .r = (const double *const *)x->r,
                         .n = x->n,
                         .nrows = x->rm.nrows,
                         .row_len = x->rm.row_len,
                         .head = x->rm.head,
                         .d1 = x->rm.d1,
                         .iut = iut};
    return st;
}

/* Stage 3: D1 rows checked (finite; equal to D1 for built-in engines), then taken out of every norm. */
static void stage_d1(ctx *x, int first, int last, fr_judgement *j) {
    const fr_judge_opts *opt = x->opt;
    for (int k = first; k <= last && j->verdict == FR_PASS; k++) {
        if (!x->a[k]) continue;
        int64_t len = out_row_len(&x->pb, (fr_case_output)k);
        int64_t rows = len > 0 ? x->n[k] / len : 0;
        const uint8_t *d1 = d1_rows_of(&x->rm, (fr_case_output)k, rows);
        if (!d1) continue;
        for (int64_t i = 0; i < rows && j->verdict == FR_PASS; i++) {
            if (!d1[i]) continue;
            for (int64_t d = 0; d < len; d++) {
                double v = x->a[k][i * len + d], want_v = x->r[k][i * len + d];
                if (!isfinite(v)) {
                    set(j, FR_FAIL, FR_DIAG_NAN_FULLY_MASKED);
                    WHY(j, "%s: %g on a fully masked row (row %lld of %lld; %lld fully masked rows)",
                        fr_case_output_name((fr_case_output)k), v, (long long)i, (long long)rows,
                        (long long)x->rm.d1_count);
                    break;
                }
                if (!opt->external && !(v == want_v || (k != FR_CO_ATTENTION_OUT && k != FR_CO_DQ &&
                                                        fabs(v - want_v) <= 1e-6 * fabs(want_v)))) {
                    set(j, FR_FAIL, FR_DIAG_FULLY_MASKED);
                    WHY(j, "%s: %.9g on a fully masked row where D1 gives %.9g (row %lld; %lld such rows)",
                        fr_case_output_name((fr_case_output)k), v, want_v, (long long)i, (long long)x->rm.d1_count);
                    break;
                }
            }
            for (int64_t d = 0; d < len; d++) {
                x->a[k][i * len + d] = 0;
                x->r[k][i * len + d] = 0;
                if (x->e[k]) x->e[k][i * len + d] = 0;
                if (x->pl[k]) x->pl[k][i * len + d] = 0;
            }
        }
    }
}

/* Stage 4: NaN / Inf where the golden has none (or the reverse). Returns true with j set to FAIL. */
static bool stage_anomalies(const ctx *x, int first, int last, fr_judgement *j) {
    for (int k = first; k <= last; k++) {
        const fr_metrics *m = &j->out[k].m;
        if (!j->out[k].present || m->n_anomaly_mismatch == 0) continue;
        double v = x->a[k][m->first_mismatch], g = x->r[k][m->first_mismatch];
        fr_diag d = (x->tags & FR_TAG_NAN_KV)              ? FR_DIAG_NAN_LEAK
                    : (x->tags & FR_TAG_LARGE) || isinf(v) ? FR_DIAG_OVERFLOW
                    : (x->tags & FR_TAG_D1)                ? FR_DIAG_NAN_FULLY_MASKED
                                                           : FR_DIAG_NAN;
        set(j, FR_FAIL, d);
        WHY(j, "%s: %lld NaN/Inf mismatches, first at %lld: %g where the golden has %g",
            fr_case_output_name((fr_case_output)k), (long long)m->n_anomaly_mismatch, (long long)m->first_mismatch, v,
            g);
        j->ratio = INFINITY;
        return true;
    }
    return false;
}

/* Whether a reference's metrics may set a bound: computed, no NaN/Inf where the golden is finite (or the reverse),
 * finite error. A reference far beyond the ideal pipeline (the plain one: more than 16 x) is taken as broken for
 * this case rather than loosening the bound. */
static bool ref_usable(const fr_metrics *m, bool have, double cap) {
    return have && m->n_anomaly_mismatch == 0 && isfinite(m->rel_l2) && isfinite(m->max_abs) && m->rel_l2 <= cap;
}

/* The error measure of an output's bound: per-element relative for softmax max / sum, rel-L2 otherwise. */
static double stats_err(const ctx *x, fr_case_output k, const double *v) {
    double e = 0;
    for (int64_t q = 0; q < x->n[k]; q++) {
        double den = k == FR_CO_SOFTMAX_MAX ? 1.0 + fabs(x->r[k][q]) : fmax(fabs(x->r[k][q]), DBL_MIN);
        e = fmax(e, fabs(v[q] - x->r[k][q]) / den);
    }
    return e;
}

static double ratio_of(double v, double ref) { return ref > 0 ? v / ref : 0; }

/* Max and mean relative error of v against the golden r with denominators max(|r|, rms(r)): elements far below the
 * output's typical magnitude are measured against that magnitude (the small-value domain of the Ascend standard),
 * so that an output near zero does not turn rounding noise into huge relative errors. */
static void rel_err_rms(const double *v, const double *r, int64_t n, double *mx, double *mean) {
    double ss = 0;
    int64_t cnt = 0;
    for (int64_t q = 0; q < n; q++)
        if (isfinite(r[q])) ss += r[q] * r[q], cnt++;
    double fl = fmax(cnt ? sqrt(ss / (double)cnt) : 0, DBL_MIN), sum = 0;
    *mx = 0;
    for (int64_t q = 0; q < n; q++) {
        if (!isfinite(r[q]) || !isfinite(v[q])) continue;
        double e = fabs(v[q] - r[q]) / fmax(fabs(r[q]), fl);
        *mx = fmax(*mx, e);
        sum += e;
    }
    *mean = cnt ? sum / (double)cnt : 0;
}

/* Per-dtype mean-relative thresholds of the Ascend precision standard. */
static double ascend_mean_rel(fr_dtype dt) {
    switch (dt) {
    case FR_F16: return ldexp(1.0, -10);
    case FR_BF16: return ldexp(1.0, -7);
    case FR_F32: return ldexp(1.0, -13);
    default: return ldexp(1.0, -3); /* fp8 outputs are fp16/bf16; other dtypes: generous */
    }
}

typedef struct bounds_state {
    double worst;
    fr_diag fail_d;
    int fail_k;       /* the first output beyond its bound (-1: none): diagnosed once every bound is set */
    char fail_why[384];
    int warn_k;       /* output inside the WARN band (-1: none) */
    double warn_ratio;
    char note[96];    /* a reference that was not used */
} bounds_state;

/* The bound rules below: each sets the bounds of output k in oj (named nm), notes a failure in bs, and returns the
 * output's ratio to its bound (stage_bounds records it). */

/* Softmax max / sum: relative per element, max to (1 + |m|), sum to |l|. */
static double bound_stats(ctx *x, fr_out_judgement *oj, const char *nm, fr_case_output k, bounds_state *bs) {
    double ea = stats_err(x, k, x->a[k]);
    double ee = x->e[k] && ref_usable(&oj->ideal, oj->have_ideal, INFINITY) ? stats_err(x, k, x->e[k]) : 0;
    double ep = x->pl[k] && ref_usable(&oj->plain, oj->have_plain, INFINITY) ? stats_err(x, k, x->pl[k]) : 0;
    /* Floors: the max is one fp32 rounding of a dot product; the sum of S2 fp32 terms may carry a few sqrt(S2) u
     * of rounding in any correct fp32 running sum (the ideal pipeline sums per tile). */
    double floor_ = k == FR_CO_SOFTMAX_MAX ? ldexp(1.0, -20)
                                           : fmax(ldexp(1.0, -18), 4.0 * sqrt((double)x->pb.S2) * ldexp(1.0, -24));
    /* far off: not a bound, except under --standard fa, whose baseline it is (the statistics of scores in 16 bits) */
    if (x->opt->standard != FR_STD_FA && ep > 16 * fmax(ee, floor_)) ep = 0;
    oj->bound_abs = fmax(x->opt->k_stats * fmax(ee, ep), floor_);
    oj->bound_l2 = 0;
    oj->x_plain = ratio_of(ea, ep);
    oj->x_ideal = ratio_of(ea, ee);
    double ratio = ea / oj->bound_abs;
    if (ratio > 1 && bs->fail_d == FR_DIAG_NONE) {
        bs->fail_d = fr_diagnose_stats(&x->dx, k);
        snprintf(bs->fail_why, sizeof bs->fail_why,
                 "%s: max rel error %.3g > bound %.3g (= max(%g x max(plain %.3g, ideal %.3g), floor %.3g))", nm, ea,
                 oj->bound_abs, x->opt->k_stats, ep, ee, floor_);
    }
    return ratio;
}

/* attention_out and gradients under the flashref standard: rel-L2 within k x max(plain, ideal, u/4); attention_out
 * also max abs within k_max x max(plain, ideal, 1 ulp) and the a-priori ceiling. */
/* Alike judge.c:bound_standard: kept apart because the two are different acceptance rules (flashref's bounds vs the
 * Ascend / FlashAttention standards); they share only the lookup of their inputs. */
static double bound_values(ctx *x, fr_out_judgement *oj, const char *nm, fr_case_output k, fr_dtype dt,
                           bounds_state *bs) {
    const fr_judge_opts *opt = x->opt;
    double fl = 0.25 * fr_judge_unit_roundoff(dt);
    bool iok = ref_usable(&oj->ideal, oj->have_ideal, INFINITY);
    double il2 = iok ? oj->ideal.rel_l2 : 0, iabs = iok ? oj->ideal.max_abs : 0;
    /* A plain reference up to 64 x the ideal pipeline's error is an ordinary correct implementation of a case that is
     * ill-conditioned for the dtype (a 16-bit backward with few keys and D = 576: dS = P (dP - D) cancels, 25 x the
     * ideal's error in numpy's and PyTorch's math backward alike); past that it is taken for broken. */
    bool pok = ref_usable(&oj->plain, oj->have_plain, 64.0 * fmax(il2, fl));
    if (oj->have_plain && !pok && !bs->note[0])
        snprintf(bs->note, sizeof bs->note, "; plain reference not used for %s (%s)", nm,
                 oj->plain.n_anomaly_mismatch ? "NaN/Inf where the golden is finite" : "far off the golden");
    if (oj->have_ideal && !iok && !bs->note[0])
        snprintf(bs->note, sizeof bs->note, "; ideal pipeline not used for %s (NaN/Inf)", nm);
    double pl2 = pok ? oj->plain.rel_l2 : 0, pabs = pok ? oj->plain.max_abs : 0;
    double rmax = 0;
    for (int64_t q = 0; q < x->n[k]; q++)
        if (isfinite(x->r[k][q]) && fabs(x->r[k][q]) > rmax) rmax = fabs(x->r[k][q]);
    bool fwd_out = k == FR_CO_ATTENTION_OUT;
    double kl2 = fwd_out ? opt->k_out : opt->k_grad;
    oj->x_plain = ratio_of(oj->m.rel_l2, pl2);
    oj->x_ideal = ratio_of(oj->m.rel_l2, il2);
    if (k == FR_CO_DSINK) /* fp32 terms of both signs */
        fl = fmax(fl, 4.0 * ldexp(1.0, -24) * fr_judge_dsink_cond(x->c, &x->pb));
    oj->bound_l2 = kl2 * fmax(fmax(il2, pl2), fl);
    double r_l2 = oj->m.rel_l2 / oj->bound_l2;
    double r_abs = 0,
           zabs = !fwd_out && rmax == 0 && oj->m.n > 0 ? fr_judge_apriori_grad_abs(x->c, &x->pb, k) : 0.0;
    if (zabs > 0) { /* the golden is exactly zero: max abs against the cancelling terms' scale, not rel-L2 */
        oj->bound_abs = kl2 * zabs;
        r_l2 = 0;
        r_abs = oj->m.max_abs / oj->bound_abs;
    }
    if (fwd_out) {
        oj->bound_abs = opt->k_max * fmax(fmax(iabs, pabs), fr_ulp_of(dt, rmax));
        oj->apriori_abs = fr_judge_apriori_abs(x->c, &x->pb, dt);
        r_abs = fmax(oj->m.max_abs / oj->bound_abs, oj->m.max_abs / oj->apriori_abs);
    }
    double ratio = fmax(r_l2, r_abs);
    if (ratio > 1 && bs->fail_d == FR_DIAG_NONE) {
        bs->fail_d = FR_DIAG_UNKNOWN; /* named in stage_bounds, once every bound is set (diagnose.h) */
        bs->fail_k = k;
        if (zabs > 0)
            snprintf(bs->fail_why, sizeof bs->fail_why,
                     "%s: the golden is exactly 0 everywhere; max abs %.3g > bound %.3g (= %g x the a-priori scale of "
                     "the cancelling terms, %.3g)",
                     nm, oj->m.max_abs, oj->bound_abs, kl2, zabs);
        else if (fwd_out && oj->m.max_abs > oj->apriori_abs)
            snprintf(bs->fail_why, sizeof bs->fail_why,
                     "%s: max abs %.3g exceeds the proved bound for any correct fp32 online softmax of this length "
                     "(%.3g, S2 = %lld; proofs/round); rel-L2 %.2f x plain, %.2f x ideal",
                     nm, oj->m.max_abs, oj->apriori_abs, (long long)x->pb.S2, oj->x_plain, oj->x_ideal);
        else if (r_l2 >= r_abs)
            snprintf(bs->fail_why, sizeof bs->fail_why,
                     "%s: rel-L2 %.3g > bound %.3g (= %g x max(plain %.3g, ideal %.3g, u/4 %.3g)); %.2f x plain, "
                     "%.2f x ideal",
                     nm, oj->m.rel_l2, oj->bound_l2, kl2, pl2, il2, fl, oj->x_plain, oj->x_ideal);
        else
            snprintf(bs->fail_why, sizeof bs->fail_why,
                     "%s: max abs %.3g > bound %.3g (= %g x max(plain %.3g, ideal %.3g, ulp %.3g); a-priori %.3g); "
                     "rel-L2 %.2f x plain, %.2f x ideal",
                     nm, oj->m.max_abs, fmin(oj->bound_abs, oj->apriori_abs), opt->k_max, pabs, iabs,
                     fr_ulp_of(dt, rmax), oj->apriori_abs, oj->x_plain, oj->x_ideal);
    } else if (r_l2 > opt->warn_frac && r_l2 > bs->warn_ratio && oj->m.n >= 1024) {
        /* The band needs enough elements for rel-L2 to be a statistic (a 5 x 3 TND gradient is two draws). */
        bs->warn_k = k;
        bs->warn_ratio = r_l2;
    }
    return ratio;
}

/* attention_out and gradients under the Ascend dual-benchmark standard (levels L0-L2) or FlashAttention's "2 x the
 * plain reference" (max abs; 3 x for gradients). The benchmark is the plain reference, else the ideal pipeline. */
/* Alike judge.c:bound_values: kept apart because the two are different acceptance rules (the Ascend / FlashAttention
 * standards vs flashref's bounds); they share only the lookup of their inputs. */
static double bound_standard(ctx *x, fr_out_judgement *oj, const char *nm, fr_case_output k, fr_dtype dt,
                             bounds_state *bs) {
    const fr_judge_opts *opt = x->opt;
    double fl = 0.25 * fr_judge_unit_roundoff(dt);
    bool iok = ref_usable(&oj->ideal, oj->have_ideal, INFINITY);
    /* FlashAttention's rule is defined by its baseline (the textbook attention in the input dtype), however far
     * that is from the golden: no cap there */
    bool pok = ref_usable(&oj->plain, oj->have_plain,
                          opt->standard == FR_STD_FA ? INFINITY : 16.0 * fmax(iok ? oj->ideal.rel_l2 : 0, fl));
    const fr_metrics *bm = pok ? &oj->plain : iok ? &oj->ideal : NULL;
    const char *bn = pok ? "plain" : "ideal";
    oj->x_plain = pok ? ratio_of(oj->m.rel_l2, oj->plain.rel_l2) : 0;
    oj->x_ideal = iok ? ratio_of(oj->m.rel_l2, oj->ideal.rel_l2) : 0;
    double ratio;
    char why[384];
    if (opt->standard == FR_STD_FA) {
        double rmax = 0;
        for (int64_t q = 0; q < x->n[k]; q++)
            if (isfinite(x->r[k][q])) rmax = fmax(rmax, fabs(x->r[k][q]));
        /* FA's tests add an atol of twice the rounding error of (out + 0.3): about one ulp there. */
        double kk = k == FR_CO_ATTENTION_OUT ? 2.0 : 3.0, atol = fr_ulp_of(dt, rmax + 0.3);
        oj->bound_abs = kk * (bm ? bm->max_abs : 0) + atol;
        oj->bound_l2 = 0;
        ratio = oj->m.max_abs / oj->bound_abs;
        snprintf(why, sizeof why, "%s: max abs %.3g > %g x %s's %.3g + 1 ulp %.3g (fa)", nm, oj->m.max_abs, kk, bn,
                 bm ? bm->max_abs : 0, atol);
    } else {
        static const double lim[3][3] = {{10, 2, 2}, {5, 1.5, 1.5}, {2, 1.2, 1.2}};
        const double *L = lim[opt->standard - FR_STD_ASCEND_L0];
        double u = fr_judge_unit_roundoff(dt), amx, amn, bmx = 0, bmn = 0;
        rel_err_rms(x->a[k], x->r[k], x->n[k], &amx, &amn);
        const double *bv = pok ? x->pl[k] : iok ? x->e[k] : NULL;
        if (bv) rel_err_rms(bv, x->r[k], x->n[k], &bmx, &bmn);
        double rmx = amx / fmax(bmx, u);
        double rmn = amn / fmax(bmn, fl);
        double rms = oj->m.rel_l2 / fmax(bm ? bm->rel_l2 : 0, fl);
        double thr = ascend_mean_rel(dt);
        oj->bound_l2 = L[2] * fmax(bm ? bm->rel_l2 : 0, fl);
        oj->bound_abs = 0;
        ratio = fmax(fmax(rmx / L[0], rmn / L[1]), fmax(rms / L[2], amn / thr));
        snprintf(why, sizeof why,
                 "%s: %s: max-rel %.3g x, mean-rel %.3g x, RMSE %.3g x the %s reference's (limits %g / %g / %g); "
                 "mean rel %.3g (limit %.3g)",
                 nm, fr_standard_name(opt->standard), rmx, rmn, rms, bn, L[0], L[1], L[2], amn, thr);
    }
    if (ratio > 1 && bs->fail_d == FR_DIAG_NONE) {
        bs->fail_d = FR_DIAG_UNKNOWN; /* named in stage_bounds (diagnose.h) */
        bs->fail_k = k;
        snprintf(bs->fail_why, sizeof bs->fail_why, "%s", why);
    }
    return ratio;
}

/* Stage 5: bounds of every output; FAIL, else the WARN checks (row gain, the WARN band), else PASS. */
static void stage_bounds(ctx *x, fr_judgement *j, const fr_case_outputs *iut, const fr_case_outputs *golden,
                         int first, int last) {
    const fr_judge_opts *opt = x->opt;
    bounds_state bs;
    memset(&bs, 0, sizeof bs);
    bs.warn_k = -1;
    bs.fail_k = -1;
    for (int k = first; k <= last; k++) {
        if (!j->out[k].present) continue;
        fr_dtype dt = fr_case_output_cslot(iut, (fr_case_output)k)->dtype;
        fr_out_judgement *oj = &j->out[k];
        const char *nm = fr_case_output_name((fr_case_output)k);
        if (k == FR_CO_SOFTMAX_MAX || k == FR_CO_SOFTMAX_SUM)
            oj->ratio = bound_stats(x, oj, nm, (fr_case_output)k, &bs);
        else if (opt->standard == FR_STD_FLASHREF)
            oj->ratio = bound_values(x, oj, nm, (fr_case_output)k, dt, &bs);
        else
            oj->ratio = bound_standard(x, oj, nm, (fr_case_output)k, dt, &bs);
        bs.worst = fmax(bs.worst, oj->ratio);
    }
    j->ratio = bs.worst;
    if (bs.fail_k >= 0) {
        char shape[256];
        bs.fail_d = fr_diagnose(&x->dx, j, (fr_case_output)bs.fail_k, shape, sizeof shape);
        size_t u = strlen(bs.fail_why);
        if (shape[0] && u + 3 < sizeof bs.fail_why) snprintf(bs.fail_why + u, sizeof bs.fail_why - u, "; %s", shape);
    }
    /* A forward output inside its bounds makes stats / gradient failures the diagnosis; an out failure wins. */
    if (bs.fail_d != FR_DIAG_NONE) {
        set(j, FR_FAIL, bs.fail_d);
        snprintf(j->why, sizeof j->why, "%.280s%s", bs.fail_why, bs.note);
        return;
    }
    const fr_out_judgement *oo = &j->out[first];
    const char *onm = fr_case_output_name((fr_case_output)first);
    /* A NaN/Inf in the golden itself (matched by the IUT) never makes a PASS. */
    for (int k = first; k <= last; k++)
        if (j->out[k].present && j->out[k].m.n_anomaly > 0) {
            set(j, FR_WARN, FR_DIAG_NAN);
            WHY(j, "%s: the golden has %lld NaN/Inf (matched by the implementation): not a pass",
                fr_case_output_name((fr_case_output)k), (long long)j->out[k].m.n_anomaly);
            return;
        }
    if (opt->standard == FR_STD_FLASHREF) {
        /* Coherent row gain: a precision defect an ordinary correct implementation does not have. */
        if (oo->present && oo->m.rows_used >= 4 && oo->m.noise_floor > 0) {
            double g = oo->m.gain_rms, fl = oo->m.noise_floor, ig = oo->have_ideal ? oo->ideal.gain_rms : 0;
            /* The plain reference's gain counts for gradients (dq's gain comes from D = rowsum(P dP) and the
             * rounded dS, which any plain backward has) and for fp32 forwards. A 16-bit plain forward rounds the
             * normalised P: its gain is the very effect of a stale max (the largest weight rounded, the row sum
             * not), so the ideal pipeline's gain stays the reference there and that effect is a WARN. */
            double pg = oo->have_plain && oo->plain.n_anomaly_mismatch == 0 &&
                                (x->c->op == FR_CASE_BWD || x->pb.dtype == FR_F32 || x->pb.dtype == FR_F64)
                            ? oo->plain.gain_rms
                            : 0;
            if (g > opt->gain_warn * fl && g > opt->gain_warn * ig && g > opt->gain_warn * pg) {
                set(j, FR_WARN, FR_DIAG_STALE_MAX);
                WHY(j,
                    "%s: row-gain rms %.3g = %.2f x noise floor %.3g (plain %.3g, ideal %.3g; warn above %g x each); "
                    "rel-L2 %.3g (%.2f of bound; %.2f x plain, %.2f x ideal)%s",
                    onm, g, g / fl, fl, pg, ig, opt->gain_warn, oo->m.rel_l2, oo->m.rel_l2 / oo->bound_l2,
                    oo->x_plain, oo->x_ideal, bs.note);
                return;
            }
        }
        if (bs.warn_k >= 0) {
            const fr_out_judgement *w = &j->out[bs.warn_k];
            char nat[160] = "";
            /* near the bound in 16 bits: a textbook attention in the input dtype is named when it matches */
            bool native = fr_diagnose_native(&x->dx, j, nat, sizeof nat);
            set(j, FR_WARN, native ? FR_DIAG_NATIVE_DTYPE : FR_DIAG_PRECISION);
            WHY(j, "%s: rel-L2 %.3g is %.2f of its bound %.3g (warn above %g): %.2f x plain, %.2f x ideal%s%s%s",
                fr_case_output_name((fr_case_output)bs.warn_k), w->m.rel_l2, bs.warn_ratio, w->bound_l2,
                opt->warn_frac, w->x_plain, w->x_ideal, native ? "; " : "", nat, bs.note);
            return;
        }
    }
    (void)golden;
    set(j, FR_PASS, FR_DIAG_NONE);
    if (oo->present)
        WHY(j,
            "%s: rel-L2 %.3g = %.2f x plain %.3g, %.2f x ideal %.3g (bound %.3g), max abs %.3g%s%.3g%s, gain/floor "
            "%.2f; worst ratio %.2f [%s]%s",
            onm, oo->m.rel_l2, oo->x_plain, oo->plain.rel_l2, oo->x_ideal, oo->ideal.rel_l2, oo->bound_l2,
            oo->m.max_abs, oo->bound_abs > 0 ? " (bound " : " (ideal ",
            oo->bound_abs > 0 ? oo->bound_abs : oo->ideal.max_abs, ")", oo->m.gain_over_floor, bs.worst,
            fr_standard_name(opt->standard), bs.note);
    else
        WHY(j, "empty outputs");
}

fr_status fr_judge(const fr_case *c, unsigned tags, unsigned purpose, const fr_judge_opts *opt_in, fr_status iut_st,
                   const char *iut_msg, const fr_case_outputs *iut, const fr_case_outputs *golden,
                   const fr_case_outputs *ideal, fr_judgement *j, fr_error *err) {
    return fr_judge_plain(c, tags, purpose, opt_in, iut_st, iut_msg, iut, golden, ideal, NULL, j, err);
}

fr_status fr_judge_plain(const fr_case *c, unsigned tags, unsigned purpose, const fr_judge_opts *opt_in,
                         fr_status iut_st, const char *iut_msg, const fr_case_outputs *iut,
                         const fr_case_outputs *golden, const fr_case_outputs *ideal, const fr_case_outputs *plain,
                         fr_judgement *j, fr_error *err) {
    memset(j, 0, sizeof *j);
    fr_judge_opts opt = opt_in ? *opt_in : fr_judge_opts_default();
    if (iut_st == FR_E_UNSUPPORTED || iut_st == FR_E_NOT_AVAILABLE) {
        set(j, FR_SKIP, FR_DIAG_NONE);
        WHY(j, "not supported by the implementation: %s", iut_msg ? iut_msg : "");
        return FR_OK;
    }
    if (iut_st != FR_OK) {
        bool hyg =
            iut_st == FR_E_OUTPUT && iut_msg && (!strncmp(iut_msg, "guard:", 6) || !strncmp(iut_msg, "unwritten:", 10));
        /* iut_proc.h's contained runners report a crash or a timeout with these prefixes (docs/exec-protocol.md). */
        bool crash = iut_st == FR_E_INTERNAL && iut_msg && !strncmp(iut_msg, "crash:", 6);
        /* an output file of the wrong dtype or shape, refused by its header before it was read (iut_exec.c) */
        bool shape = iut_st == FR_E_OUTPUT && iut_msg && !strncmp(iut_msg, "shape:", 6);
        bool timeout = iut_st == FR_E_INTERNAL && iut_msg && !strncmp(iut_msg, "timeout:", 8);
        set(j, FR_FAIL,
            hyg       ? FR_DIAG_UNWRITTEN
            : crash   ? FR_DIAG_CRASH
            : timeout ? FR_DIAG_TIMEOUT
            : shape   ? FR_DIAG_SHAPE
                      : FR_DIAG_ERROR_STATUS);
        WHY(j, "%s: %s", fr_status_name(iut_st), iut_msg ? iut_msg : "");
        j->ratio = INFINITY;
        return FR_OK;
    }
    ctx x;
    memset(&x, 0, sizeof x);
    x.c = c;
    x.tags = tags;
    x.purpose = purpose;
    x.opt = &opt;
    fr_status st = c->op == FR_CASE_FWD ? fr_problem_from_fwd(&c->params, &c->in.fwd, &x.pb, err)
                                        : fr_problem_from_bwd(&c->params, &c->in, &x.pb, err);
    if (st != FR_OK) return st;
    int first = c->op == FR_CASE_FWD ? FR_CO_ATTENTION_OUT : FR_CO_DQ;
    int last = c->op == FR_CASE_FWD ? FR_CO_SOFTMAX_SUM : FR_CO_DSINK;

    bool failed;
    if ((st = stage_shapes(c, iut, first, last, opt.absent_ok, j, &failed, err)) != FR_OK || failed) return st;
    if ((st = stage_load(&x, iut, golden, ideal, plain, first, last, j, err)) != FR_OK) {
        ctx_free(&x);
        return st;
    }
    stage_d1(&x, first, last, j);
    for (int k = first; k <= last && st == FR_OK; k++)
        st = compare(&x, j, (fr_case_output)k, err);
    if (st != FR_OK) {
        ctx_free(&x);
        return st;
    }
    fr_dtype out_dt = fr_case_output_cslot(iut, c->op == FR_CASE_FWD ? FR_CO_ATTENTION_OUT : FR_CO_DQ)->dtype;
    fill_heat(&x, j, out_dt);
    if (j->verdict != FR_PASS) {
        j->ratio = INFINITY;
    } else if (!stage_anomalies(&x, first, last, j)) {
        stage_bounds(&x, j, iut, golden, first, last);
    }
    ctx_free(&x);
    return FR_OK;
}

bool fr_judge_golden_agrees(const fr_case *c, const fr_case_outputs *golden, const fr_case_outputs *ideal,
                            char *why, size_t n) {
    ctx x; /* only c and pb: what fr_judge_apriori_abs reads */
    memset(&x, 0, sizeof x);
    x.c = c;
    if ((c->op == FR_CASE_FWD ? fr_problem_from_fwd(&c->params, &c->in.fwd, &x.pb, NULL)
                              : fr_problem_from_bwd(&c->params, &c->in, &x.pb, NULL)) != FR_OK)
        return true; /* not this check's business: the judge reports an invalid case */
    int first = c->op == FR_CASE_FWD ? FR_CO_ATTENTION_OUT : FR_CO_DQ;
    int last = c->op == FR_CASE_FWD ? FR_CO_SOFTMAX_SUM : FR_CO_DSINK;
    bool ok = true;
    for (int k = first; k <= last && ok; k++) {
        const fr_tensor *gt = fr_case_output_cslot(golden, (fr_case_output)k);
        const fr_tensor *et = fr_case_output_cslot(ideal, (fr_case_output)k);
        int64_t len = out_row_len(&x.pb, (fr_case_output)k), ng, ne;
        if (!fr_tensor_present(gt) || !fr_tensor_present(et) || len <= 0) continue;
        double *g = fr_metrics_load(gt, &ng), *e = fr_metrics_load(et, &ne);
        fr_metrics m;
        fr_metrics_opts mo = fr_metrics_opts_default();
        if (g && e && ng == ne && ng % len == 0 && fr_metrics_compute(e, g, ng / len, len, &mo, &m, NULL) == FR_OK) {
            const char *nm = fr_case_output_name((fr_case_output)k);
            double cap =
                k == FR_CO_ATTENTION_OUT ? fr_judge_apriori_abs(c, &x.pb, x.pb.out_dtype) : INFINITY;
            if (m.n_anomaly_mismatch > 0) {
                snprintf(why, n, "golden/%s.npy: NaN/Inf at %lld positions where a fresh ideal pipeline run of the case "
                         "disagrees", nm, (long long)m.n_anomaly_mismatch);
                ok = false;
            } else if (m.max_abs > 0 && !(m.rel_l2 <= 0.5)) {
                snprintf(why, n, "golden/%s.npy: a fresh ideal pipeline run of the case is %.3g (rel-L2) off it: "
                         "not this case's golden", nm, m.rel_l2);
                ok = false;
            } else if (!(m.max_abs <= cap)) {
                snprintf(why, n, "golden/%s.npy: a fresh ideal pipeline run of the case is %.3g (max abs) off it, "
                         "beyond the a-priori ceiling %.3g of any correct implementation: not this case's golden",
                         nm, m.max_abs, cap);
                ok = false;
            }
        }
        free(g);
        free(e);
    }
    return ok;
}

bool fr_outputs_identical(const fr_case_outputs *a, const fr_case_outputs *b, int *first) {
    if (first) *first = -1;
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        const fr_tensor *x = fr_case_output_cslot(a, (fr_case_output)k),
                        *y = fr_case_output_cslot(b, (fr_case_output)k);
        if (fr_tensor_present(x) != fr_tensor_present(y)) goto differ;
        if (!fr_tensor_present(x)) continue;
        if (x->dtype != y->dtype || !fr_tensor_same_shape(x, y)) goto differ;
        int64_t n = fr_tensor_numel(x);
        if (n > 0 && memcmp(x->data, y->data, (size_t)n * fr_dtype_size(x->dtype))) goto differ;
        continue;
    differ:
        if (first) *first = k;
        return false;
    }
    return true;
}
