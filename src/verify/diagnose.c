/* The diagnosis of a case beyond its bounds (diagnose.h). */
#include "verify/diagnose.h"

#include "core/core.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Every element of a contiguous tensor widened to fp64 (NULL with *n = 0 for an absent or empty tensor). */
static double *load_all(const fr_tensor *t, int64_t *n) {
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

static bool is_d1_max(double m) { return m <= -(double)FLT_MAX * (1.0 - 1e-7); }

/* Relative L2 of a against r restricted to one head's rows (attention_out). */
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

static double rel_l2(const double *a, const double *r, int64_t n) {
    double ee = 0, rr = 0;
    for (int64_t k = 0; k < n; k++) {
        if (!isfinite(a[k]) || !isfinite(r[k])) continue;
        ee += (a[k] - r[k]) * (a[k] - r[k]);
        rr += r[k] * r[k];
    }
    return rr > 0 ? sqrt(ee / rr) : sqrt(ee);
}

/* Re-runs the golden forward with modified params and returns the rel-L2 of the IUT's attention_out against it
 * (+Inf when the alternative is not a valid problem). D1 rows are compared too (they are part of the hypothesis). */
static double hypothesis(const fr_diag_in *x, const fr_params *alt, const fr_case_outputs *iut) {
    fr_case_outputs g;
    fr_error e2;
    fr_case alt_case = *x->c;
    alt_case.params = *alt;
    if (fr_case_alloc_outputs(&alt_case, true, &g, &e2) != FR_OK) return INFINITY;
    fr_engine ge = fr_engine_default(FR_ENGINE_GOLDEN);
    double r = INFINITY;
    if (fr_fwd(alt, &alt_case.in.fwd, &g.fwd, &ge, &e2) == FR_OK) {
        int64_t n, m;
        double *gv = load_all(&g.fwd.attention_out, &n);
        double *av = load_all(&iut->fwd.attention_out, &m);
        if (gv && av && n == m) r = rel_l2(av, gv, n);
        free(gv);
        free(av);
    }
    fr_case_outputs_free(&g);
    return r;
}

/* The diagnosis a case's tags point to (FR_DIAG_NONE: none). */
static fr_diag tag_diag(unsigned tags) {
    static const struct {
        unsigned tag;
        fr_diag d;
    } kTagDiag[] = {
        {FR_TAG_SENTINEL, FR_DIAG_MASK_SENTINEL},
        {FR_TAG_NAN_KV, FR_DIAG_NAN_LEAK},
        {FR_TAG_LARGE, FR_DIAG_OVERFLOW},
        {FR_TAG_INDEX64, FR_DIAG_INDEX32},
        {FR_TAG_VARLEN, FR_DIAG_VARLEN},
        {FR_TAG_HEADDIM, FR_DIAG_HEAD_DIM},
        {FR_TAG_TAIL, FR_DIAG_TILE_TAIL},
        {FR_TAG_DROPOUT, FR_DIAG_DROPOUT},
        {FR_TAG_CAUSAL_NE, FR_DIAG_MASK},
        {FR_TAG_MASK, FR_DIAG_MASK},
        {FR_TAG_PSE, FR_DIAG_PSE},
    };
    for (size_t k = 0; k < sizeof kTagDiag / sizeof kTagDiag[0]; k++)
        if (tags & kTagDiag[k].tag) return kTagDiag[k].d;
    return FR_DIAG_NONE;
}

/* Why attention_out is beyond its bound: hypotheses first (they are proofs), then the error's shape, then what the
 * case exercises. */
fr_diag fr_diagnose_forward(const fr_diag_in *x, const fr_judgement *j) {
    const fr_case_outputs *iut = x->iut;
    const fr_params *p = &x->c->params;
    const fr_out_judgement *oj = &j->out[FR_CO_ATTENTION_OUT];
    double bound = oj->bound_l2;
    if (x->c->op == FR_CASE_FWD) {
        bool s_ne = x->pb->S1 != x->pb->S2;
        if (x->pb->layout == FR_TND)
            for (int64_t b = 0; b < x->pb->B; b++) {
                int64_t r0, l1, r1, l2;
                fr_problem_q_rows(x->pb, b, &r0, &l1);
                fr_problem_kv_rows(x->pb, b, &r1, &l2);
                if (l1 != l2) s_ne = true;
            }
        if (x->pb->has_mask && s_ne && (p->sparse_mode == 2 || p->sparse_mode == 3)) {
            fr_params alt = *p;
            alt.sparse_mode = p->sparse_mode == 2 ? 3 : 2;
            if (hypothesis(x, &alt, iut) <= bound) return FR_DIAG_CAUSAL_ALIGN;
        }
        if (!x->pb->has_mask && !x->pb->has_topk && x->pb->layout != FR_TND && x->pb->S1 < x->pb->S2) {
            /* Keys past the query index ignored (a loop bound taken from the query length): top-left causal. */
            int64_t sh[2] = {2048, 2048};
            fr_tensor m = fr_tensor_make(FR_BOOL, calloc(2048 * 2048, 1), 2, sh);
            if (m.data) {
                for (int64_t i = 0; i < 2048; i++)
                    for (int64_t q = i + 1; q < 2048; q++)
                        ((uint8_t *)m.data)[i * 2048 + q] = 1;
                fr_case alt_c = *x->c;
                alt_c.in.fwd.atten_mask = m;
                alt_c.params.sparse_mode = 2;
                fr_diag_in x2 = *x;
                x2.c = &alt_c;
                double h = hypothesis(&x2, &alt_c.params, iut);
                free(m.data);
                if (h <= bound) return FR_DIAG_MASK;
            }
        }
        if (x->pb->has_pse && p->pse_type <= 1) {
            fr_params alt = *p;
            alt.pse_type = 1 - p->pse_type;
            if (hypothesis(x, &alt, iut) <= bound) return FR_DIAG_PSE_ORDER;
        }
    }
    /* GQA: heads whose kv head is the same under h / G and h % N2 are clean, the others are not. */
    if (x->pb->G > 1 && x->pb->N2 > 1) {
        const double *a = x->a[FR_CO_ATTENTION_OUT], *r = x->r[FR_CO_ATTENTION_OUT];
        bool same_ok = true, diff_bad = false;
        for (int64_t h = 0; h < x->pb->N1; h++) {
            double e = head_rel_l2(x, a, r, h);
            if (h / x->pb->G == h % x->pb->N2)
                same_ok &= e <= bound;
            else
                diff_bad |= e > bound;
        }
        if (same_ok && diff_bad) return FR_DIAG_GQA_MAP;
    }
    /* What the case was designed to expose. */
    fr_diag pd = tag_diag(x->purpose & ~(unsigned)(FR_TAG_MASK | FR_TAG_PSE | FR_TAG_CAUSAL_NE));
    if (pd != FR_DIAG_NONE) return pd;
    /* Every row scaled by the same factor. */
    const fr_metrics *m = &oj->m;
    if (m->rows_used >= 2 && fabs(m->gain_mean) > 0.9 * m->gain_rms && fabs(m->gain_mean) > bound &&
        m->gain_p50 > 0.5 * fabs(m->gain_mean))
        return (x->tags & FR_TAG_DROPOUT) ? FR_DIAG_DROPOUT : FR_DIAG_SCALE;
    /* Scores scaled wrongly: the stored max of every row off by one common factor. */
    if (x->c->op == FR_CASE_FWD && !x->pb->has_pse && x->n[FR_CO_SOFTMAX_MAX]) {
        const double *sa = x->a[FR_CO_SOFTMAX_MAX], *sr = x->r[FR_CO_SOFTMAX_MAX];
        double lo = INFINITY, hi = -INFINITY;
        int cnt = 0;
        for (int64_t k = 0; k < x->n[FR_CO_SOFTMAX_MAX]; k += 8)
            if (fabs(sr[k]) > 1e-3 && isfinite(sa[k]) && !is_d1_max(sr[k])) {
                double q = sa[k] / sr[k];
                lo = fmin(lo, q);
                hi = fmax(hi, q);
                cnt++;
            }
        if (cnt >= 4 && hi - lo < 1e-3 * fabs(hi) && fabs(hi - 1.0) > 1e-2) return FR_DIAG_SCALE;
    }
    fr_diag td = tag_diag(x->tags);
    if (td != FR_DIAG_NONE) return td;
    return FR_DIAG_PRECISION;
}

fr_diag fr_diagnose_gradient(const fr_diag_in *x, const fr_judgement *j, fr_case_output k) {
    (void)j;
    (void)k;
    return (x->tags & FR_TAG_DROPOUT) ? FR_DIAG_DROPOUT : FR_DIAG_GRADIENT;
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
