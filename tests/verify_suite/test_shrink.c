/* Shrinking (src/verify/cases/shrink.c, src/verify/suite/suite_shrink.c): a configuration with many features that the
 * causal-top-left mutant fails (it is wrong only for sparse_mode 3 with S1 != S2) shrinks to a small one that still
 * fails the same way, keeps what the defect needs (mode 3, S1 != S2) and drops every feature it does not need; the
 * correct base of the zoo passes the same configuration (so the failure is the defect's), and the gqa-mod mutant's
 * failure shrinks keeping 1 < N2 < N1. */
#include "common/check.h"
#include "verify/suite/suite_internal.h"

#include <stdio.h>
#include <string.h>

static fr_verdict judge(fr_iut *iut, const fr_gen_spec *s, const fr_suite_opts *o, fr_diag *d) {
    fr_case_result cr;
    fr_error err;
    fr_status st = fr_suite_judge_spec(iut, s, o, &cr, &err);
    CHECK(st == FR_OK, "judge: %s", err.msg);
    fr_verdict v = cr.j.verdict;
    *d = cr.j.diag;
    fr_judgement_free(&cr.j);
    return v;
}

static void shrink_case(const char *impl, const fr_gen_spec *s, fr_diag want, fr_draw *small, int *runs) {
    fr_iut *iut;
    fr_error err;
    CHECK(fr_iut_open(impl, &iut, &err) == FR_OK, "%s: %s", impl, err.msg);
    fr_suite_opts o = fr_suite_opts_default();
    fr_diag d;
    fr_verdict v = judge(iut, s, &o, &d);
    CHECK(v == FR_FAIL && d == want, "%s on %s: %s %s, expected FAIL %s", impl, s->name, fr_verdict_name(v),
          fr_diag_name(d), fr_diag_name(want));
    CHECK(fr_suite_shrink(iut, s, want, &o, small, runs, &err) == FR_OK, "shrink: %s", err.msg);
    char a[400], b[400];
    fr_matrix_describe(s, a, sizeof a);
    fr_matrix_describe(&small->spec, b, sizeof b);
    printf("%s:\n  failing:  %s\n  smallest: %s (%d judgements)\n", impl, a, b, *runs);
    v = judge(iut, &small->spec, &o, &d);
    CHECK(v == FR_FAIL && d == want, "the smallest configuration must still fail with %s (got %s %s)",
          fr_diag_name(want), fr_verdict_name(v), fr_diag_name(d));
    CHECK(*runs > 0 && *runs <= FR_SHRINK_MAX_RUNS, "runs %d", *runs);
    fr_iut_close(iut);
}

int main(void) {
    /* Alike test_judge.c:test_hypotheses, verify/test_matrix.c:test_classify, src/verify/judge/judge.c:fr_judge_opts_default
     * and the spec below: kept apart because these are different cases' data (designated initializers, one field a
     * line), not shared logic. */
    fr_gen_spec s = {.name = "shrink_causal",
                     .dtype = FR_BF16,
                     .layout = FR_BSND,
                     .B = 2,
                     .N1 = 4,
                     .N2 = 2,
                     .S1 = 200,
                     .S2 = 700,
                     .D = 64,
                     .sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL,
                     .mask = FR_GEN_MASK_CANONICAL,
                     .pse_type = FR_PSE_OUTER_ADD_MUL,
                     .pse = FR_GEN_PSE_BN1S,
                     .keep_prob = 0.8,
                     .sink = true,
                     .beta = 0.4};
    /* the defect-free base passes it: a failure below is the mutant's defect */
    fr_iut *base;
    fr_error err;
    CHECK(fr_iut_open("mutant:base", &base, &err) == FR_OK, "base: %s", err.msg);
    fr_suite_opts o = fr_suite_opts_default();
    fr_diag d;
    fr_verdict v = judge(base, &s, &o, &d);
    CHECK(v == FR_PASS, "mutant:base on the configuration: %s %s", fr_verdict_name(v), fr_diag_name(d));
    fr_iut_close(base);

    fr_draw small;
    int runs = 0;
    shrink_case("mutant:causal-top-left", &s, FR_DIAG_CAUSAL_ALIGN, &small, &runs);
    const fr_gen_spec *m = &small.spec;
    CHECK(m->mask != FR_GEN_MASK_NONE && m->sparse_mode == FR_SPARSE_RIGHT_DOWN_CAUSAL && m->S1 != m->S2,
          "the defect's trigger must stay");
    CHECK(m->pse == FR_GEN_PSE_NONE && !(m->keep_prob > 0 && m->keep_prob < 1) && !m->sink && m->beta == 0,
          "pse, dropout, sink, peaked rows must be switched off");
    CHECK(m->B == 1 && (m->N2 ? m->N2 : m->N1) == m->N1 && m->N1 <= 2, "batches and heads reduced: B %lld N1 %lld",
          (long long)m->B, (long long)m->N1);
    CHECK(m->S1 * m->S2 * 16 <= s.S1 * s.S2 && m->D < s.D, "sizes reduced: %lld x %lld, D %lld", (long long)m->S1,
          (long long)m->S2, (long long)m->D);
    CHECK(!strcmp(m->name, s.name), "the name (hence the input streams) is kept");

    /* Alike test_shrink.c:main (the spec above): kept apart because it is another case's data (designated
     * initializers), not shared logic. */
    fr_gen_spec g = {.name = "shrink_gqa",
                     .layout = FR_BSH,
                     .B = 3,
                     .N1 = 9,
                     .N2 = 3,
                     .S1 = 70,
                     .S2 = 640,
                     .D = 64,
                     .Dv = 16,
                     .mask = FR_GEN_MASK_11SS,
                     .pse_type = FR_PSE_OUTER_MUL_ADD,
                     .pse = FR_GEN_PSE_1NSS,
                     .sink = true};
    shrink_case("mutant:gqa-mod", &g, FR_DIAG_GQA_MAP, &small, &runs);
    int64_t n2 = small.spec.N2 ? small.spec.N2 : small.spec.N1;
    CHECK(n2 > 1 && n2 < small.spec.N1, "gqa-mod needs 1 < N2 < N1: N1 %lld N2 %lld", (long long)small.spec.N1,
          (long long)n2);
    CHECK(small.spec.B == 1 && small.spec.mask == FR_GEN_MASK_NONE && small.spec.pse == FR_GEN_PSE_NONE,
          "batches, mask and pse off");
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
