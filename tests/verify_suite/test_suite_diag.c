/* The suite's likeliest-cause diagnosis on simple in-process defects (the golden engine with one semantic change,
 * or its outputs post-processed): each must make the quick set FAIL with the expected primary diagnosis (the growth
 * defect: WARN growth on the fp32 length series of the default set). These are
 * not the mutant zoo (mutants.h: real broken kernels) but a check of the judge + suite machinery that needs
 * nothing else. */
#include "common/check.h"
#include "core/core.h"
#include "core/problem.h"
#include "verify/iut/iut_internal.h"
#include "verify/suite/suite.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum defect {
    D_CAUSAL_TOP_LEFT, /* mode 3 computed as mode 2 */
    D_PSE_ORDER,       /* pse type 1 computed as 0 */
    D_LSE_FOR_SUM,     /* softmax_sum = m + log(l) */
    D_NAN_D1,          /* NaN on fully masked rows */
    D_SCALE,           /* scale_value x 1.25: not a candidate defect (squared, missing, 1/sqrt(D)): "unknown" */
    D_GQA_MOD,         /* query head h reads kv head h % N2 */
    D_UNWRITTEN,       /* the last attention_out row never written */
    D_DROPOUT_SCALE,   /* 1/keep_prob not applied */
    D_GROWTH,          /* an error that grows with S2 (relative 7e-7 x S2 / 32768), judged on the fp32 length series */
    D_COUNT
} defect;

static const struct {
    const char *name;
    fr_diag want;
} kDefects[D_COUNT] = {
    {"causal-top-left", FR_DIAG_CAUSAL_ALIGN}, {"pse-order", FR_DIAG_PSE_ORDER},   {"lse-for-sum", FR_DIAG_LSE_FOR_SUM},
    {"nan-d1", FR_DIAG_NAN_FULLY_MASKED},      {"scale", FR_DIAG_UNKNOWN},           {"gqa-mod", FR_DIAG_GQA_MAP},
    {"unwritten", FR_DIAG_UNWRITTEN},          {"dropout-scale", FR_DIAG_DROPOUT}, {"growth", FR_DIAG_GROWTH},
};

/* K/V expanded to N1 heads with head h = original head h % N2 (same layout). */
/* Alike src/verify/judge/diagnose_cands.c:expanded_like: kept apart because this test's defect (K/V copied out to N1
 * heads) must not reuse the diagnosis code it provokes; that one is a data-less view for offsets. */
static fr_status expand_kv(const fr_problem *pb, const fr_tensor *src, int64_t D, fr_tensor *dst) {
    *dst = *src;
    int64_t sh[FR_MAX_DIMS];
    memcpy(sh, src->shape, sizeof sh);
    switch (pb->layout) {
    case FR_BNSD: sh[1] = pb->N1; break;
    case FR_BSND: sh[2] = pb->N1; break;
    case FR_TND: sh[1] = pb->N1; break;
    default: sh[2] = pb->N1 * D; break; /* BSH, SBH */
    }
    *dst = fr_tensor_make(src->dtype, NULL, src->ndim, sh);
    dst->data = calloc((size_t)fr_tensor_numel(dst) + 1, fr_dtype_size(src->dtype));
    if (!dst->data) return FR_E_NOMEM;
    for (int64_t b = 0; b < pb->B; b++) {
        int64_t r0, len;
        fr_problem_kv_rows(pb, b, &r0, &len);
        for (int64_t h = 0; h < pb->N1; h++)
            for (int64_t j = 0; j < len; j++)
                for (int64_t d = 0; d < D; d++)
                    fr_store_f64(dst, fr_layout_offset(dst, pb->layout, D, r0, b, h, j, d),
                                 fr_load_f64(src, fr_layout_offset(src, pb->layout, D, r0, b, h % pb->N2, j, d)));
    }
    return FR_OK;
}

static fr_status fake_run(fr_iut *iut, const fr_case *c, int threads, fr_case_outputs *o, fr_error *err) {
    (void)threads;
    defect d = (defect)(intptr_t)iut->impl;
    fr_params p = c->params;
    fr_bwd_inputs in = c->in;
    fr_tensor k2 = {0}, v2 = {0};
    fr_problem pb;
    fr_status st =
        c->op == FR_CASE_FWD ? fr_problem_from_fwd(&p, &in.fwd, &pb, err) : fr_problem_from_bwd(&p, &in, &pb, err);
    if (st != FR_OK) return st;
    if (d == D_CAUSAL_TOP_LEFT && p.sparse_mode == FR_SPARSE_RIGHT_DOWN_CAUSAL)
        p.sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL;
    if (d == D_PSE_ORDER && pb.has_pse && p.pse_type == FR_PSE_OUTER_ADD_MUL) p.pse_type = FR_PSE_OUTER_MUL_ADD;
    if (d == D_SCALE) p.scale_value *= 1.25;
    if (d == D_GQA_MOD && pb.G > 1 && c->op == FR_CASE_FWD) {
        if (expand_kv(&pb, &in.fwd.key, pb.Dk, &k2) != FR_OK || expand_kv(&pb, &in.fwd.value, pb.Dv, &v2) != FR_OK)
            return fr_fail(err, FR_E_NOMEM, "gqa-mod");
        in.fwd.key = k2;
        in.fwd.value = v2;
    }
    fr_case c2 = *c;
    c2.params = p;
    c2.in = in;
    fr_case_outputs g;
    if ((st = fr_case_alloc_outputs(&c2, true, &g, err)) == FR_OK) {
        fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
        st = c->op == FR_CASE_FWD ? fr_fwd(&p, &in.fwd, &g.fwd, &e, err) : fr_bwd(&p, &in, &g.bwd, &e, err);
        for (int k = 0; k < FR_CASE_NUM_OUTPUTS && st == FR_OK; k++) {
            const fr_tensor *s = fr_case_output_cslot(&g, (fr_case_output)k);
            fr_tensor *t = fr_case_output_slot(o, (fr_case_output)k);
            if (!fr_tensor_present(s) || !fr_tensor_present(t)) continue;
            int64_t n = fr_tensor_numel(t);
            if (d == D_UNWRITTEN && k == FR_CO_ATTENTION_OUT) n -= pb.Dv; /* the last row stays as prefilled */
            for (int64_t i = 0; i < n; i++) {
                double v = fr_load_f64(s, i);
                if (d == D_LSE_FOR_SUM && k == FR_CO_SOFTMAX_SUM && v > 0)
                    v = fr_load_f64(&g.fwd.softmax_max, i) + log(v);
                if (d == D_DROPOUT_SCALE && k == FR_CO_ATTENTION_OUT && p.keep_prob < 1) v *= p.keep_prob;
                if (d == D_GROWTH && k == FR_CO_ATTENTION_OUT)
                    v *= 1.0 + ((i * 2654435761u) % 2 ? 1 : -1) * 7e-7 * (double)pb.S2 / 32768.0;
                fr_store_f64(t, i, v);
            }
        }
        /* NaN on fully masked rows: where the stored max is -FLT_MAX, every output of the row. */
        if (st == FR_OK && d == D_NAN_D1 && c->op == FR_CASE_FWD)
            for (int64_t b = 0; b < pb.B; b++) {
                int64_t r0, len;
                fr_problem_q_rows(&pb, b, &r0, &len);
                for (int64_t h = 0; h < pb.N1; h++)
                    for (int64_t i = 0; i < len; i++) {
                        int64_t so = fr_softmax_offset(&g.fwd.softmax_max, pb.layout, p.softmax_layout, r0, b, h, i, 0);
                        if (fr_load_f64(&g.fwd.softmax_max, so) > -FLT_MAX) continue;
                        for (int64_t q = 0; q < pb.Dv; q++)
                            fr_store_f64(&o->fwd.attention_out,
                                         fr_layout_offset(&o->fwd.attention_out, pb.layout, pb.Dv, r0, b, h, i, q),
                                         NAN);
                    }
            }
        fr_case_outputs_free(&g);
    }
    free(k2.data);
    free(v2.data);
    return st;
}

static void fake_close(fr_iut *iut) { (void)iut; }
static const fr_iut_ops kFakeOps = {fake_run, fake_close, NULL, NULL};

int main(void) {
    fr_suite_opts o = fr_suite_opts_default();
    o.set = "quick";
    printf("test_suite_diag: set quick, seed %llu\n", (unsigned long long)o.seed);
    for (int d = 0; d < D_COUNT; d++) {
        fr_iut iut;
        memset(&iut, 0, sizeof iut);
        iut.kind = FR_IUT_MUTANT; /* built-in: D1 rows compared exactly */
        iut.ops = &kFakeOps;
        iut.impl = (void *)(intptr_t)d;
        snprintf(iut.name, sizeof iut.name, "fake:%s", kDefects[d].name);
        fr_suite_result r;
        fr_error err;
        fr_suite_opts od = o;
        if (d == D_GROWTH) {
            od.set = "default";
            od.filter = "gw_fp32";
        }
        if (!CHECKED(fr_suite_run(&iut, &od, &r, &err) == FR_OK, "%s: suite: %s", kDefects[d].name, err.msg)) continue;
        /* scale x 1.25 is no candidate defect: "unknown", or "softmax-stats" where a case's output stays right (huge
         * one-hot scores) while its stored max is off by the factor. */
        bool alt = d == D_SCALE && r.primary == FR_DIAG_SOFTMAX_STATS;
        bool ok = r.overall == (d == D_GROWTH ? FR_WARN : FR_FAIL) && (r.primary == kDefects[d].want || alt);
        int nf = 0;
        for (int k = 0; k < r.n; k++)
            nf += r.cases[k].j.verdict == FR_FAIL || r.cases[k].j.verdict == FR_WARN;
        printf("%-4s %-16s -> %s, %d failing / warning cases, likeliest %s (want %s)\n", ok ? "ok" : "FAIL",
               kDefects[d].name, fr_verdict_name(r.overall), nf, fr_diag_name(r.primary),
               fr_diag_name(kDefects[d].want));
        if (!CHECKED(ok, "%s: verdict %s, likeliest %s", kDefects[d].name, fr_verdict_name(r.overall),
                     fr_diag_name(r.primary))) {
            for (int k = 0; k < r.n; k++)
                if (r.cases[k].j.verdict != FR_PASS)
                    printf("     %s: %s: %s\n", r.cases[k].name, fr_diag_name(r.cases[k].j.diag), r.cases[k].j.why);
        }
        fr_suite_result_free(&r);
    }
    return fr_test_exit("test_suite_diag");
}
