/* Judging one case of the suite (suite_judge.c) with in-process fake implementations: our own out of memory stops
 * the run while an external implementation's is its verdict; a stored golden that a fresh
 * ideal pipeline contradicts (the case's input error, the IUT's outputs not kept); the determinism runs of a built-in
 * that varies or fails on a rerun and of a non-built-in; the order variants of a top-k case where only a variant
 * fails; case generation that fails or is unsupported; and fr_suite_downgrade's rules. */
#include "common/check.h"
#include "core/core.h"
#include "verify/iut/iut_callback.h"
#include "verify/iut/iut_internal.h"
#include "verify/suite/suite_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the fake does on its n-th run (counted from 0). */
typedef enum behave {
    B_RIGHT,       /* the golden's outputs, every run */
    B_NOMEM,       /* FR_E_NOMEM, every run */
    B_DRIFT,       /* right on the first run, attention_out x (1 + 1e-3) afterwards */
    B_FAIL_AFTER,  /* right on the first run, FR_E_INTERNAL afterwards */
    B_WRONG_AFTER, /* right on the first run, rows x 1.02 afterwards */
    B_NOMEM_AFTER, /* right on the first run, FR_E_NOMEM afterwards */
} behave;

typedef struct fake {
    behave b;
    int runs;
} fake;

static fr_status fake_run(fr_iut *iut, const fr_case *c, int threads, fr_case_outputs *o, fr_error *err) {
    (void)threads;
    fake *fk = iut->impl;
    int n = fk->runs++;
    if (fk->b == B_NOMEM) return fr_fail(err, FR_E_NOMEM, "fake: out of memory");
    if (fk->b == B_FAIL_AFTER && n > 0) return fr_fail(err, FR_E_INTERNAL, "fake: refused the rerun");
    if (fk->b == B_NOMEM_AFTER && n > 0) return fr_fail(err, FR_E_NOMEM, "fake: no memory for the rerun");
    fr_case_outputs g;
    fr_status st = fr_suite_run_engine(c, FR_ENGINE_GOLDEN, &g, err);
    if (st != FR_OK) return st;
    double fac = n == 0 ? 1.0 : fk->b == B_DRIFT ? 1.0 + 1e-3 : fk->b == B_WRONG_AFTER ? 1.02 : 1.0;
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        const fr_tensor *s = fr_case_output_cslot(&g, (fr_case_output)k);
        fr_tensor *t = fr_case_output_slot(o, (fr_case_output)k);
        if (!fr_tensor_present(s) || !fr_tensor_present(t)) continue;
        bool out = k == FR_CO_ATTENTION_OUT || k == FR_CO_DQ;
        for (int64_t i = 0; i < fr_tensor_numel(t); i++)
            fr_store_f64(t, i, fr_load_f64(s, i) * (out ? fac : 1.0));
    }
    fr_case_outputs_free(&g);
    return FR_OK;
}

static bool starts(const char *s, const char *prefix) { return !strncmp(s, prefix, strlen(prefix)); }

static void fake_close(fr_iut *iut) { (void)iut; }
static const fr_iut_ops kFakeOps = {fake_run, fake_close, NULL, NULL};

static void fake_iut(fr_iut *iut, fake *fk, fr_iut_kind kind, behave b, const char *name) {
    memset(iut, 0, sizeof *iut);
    memset(fk, 0, sizeof *fk);
    fk->b = b;
    iut->kind = kind;
    iut->ops = &kFakeOps;
    iut->impl = fk;
    snprintf(iut->name, sizeof iut->name, "fake:%s", name);
}

typedef struct built {
    fr_gen_case g;
    fr_case c;
    bool ok;
} built;

static void build(const fr_gen_spec *s, uint64_t seed, built *b) {
    fr_error err;
    memset(b, 0, sizeof *b);
    b->ok = CHECKED(fr_gen_build(s, seed, &b->g, &err) == FR_OK, "%s: %s", s->name, err.msg);
    if (b->ok) fr_suite_case_view(&b->g, &b->c);
}

static const fr_gen_spec kSmall = {.name = "sj_small", .B = 1, .N1 = 2, .S1 = 16, .S2 = 24, .D = 16};

/* FR_E_NOMEM: our own (a built-in) stops the run with the case named; an external implementation's is a FAIL. */
static void test_nomem(const fr_suite_opts *o) {
    built b;
    build(&kSmall, o->seed, &b);
    if (!b.ok) return;
    fr_iut iut;
    fake fk;
    fr_case_result cr;
    fr_error err;
    memset(&cr, 0, sizeof cr);
    fake_iut(&iut, &fk, FR_IUT_MUTANT, B_NOMEM, "nomem");
    fr_status st = fr_suite_judge_case(&iut, &b.c, NULL, o, &cr, &err);
    CHECK(st == FR_E_NOMEM && !strcmp(err.msg, "case: running the implementation under test: fake: out of memory"),
          "built-in nomem: %s: %s", fr_status_name(st), err.msg);
    b.c.dir = "cases/sj_small";
    st = fr_suite_judge_case(&iut, &b.c, NULL, o, &cr, &err);
    CHECK(st == FR_E_NOMEM && starts(err.msg, "cases/sj_small: running the implementation under test"),
          "built-in nomem, named case: %s", err.msg);
    b.c.dir = NULL;
    fake_iut(&iut, &fk, FR_IUT_CALLBACK, B_NOMEM, "nomem-cb");
    memset(&cr, 0, sizeof cr);
    st = fr_suite_judge_case(&iut, &b.c, NULL, o, &cr, &err);
    CHECK(st == FR_OK && cr.j.verdict == FR_FAIL && cr.j.diag == FR_DIAG_ERROR_STATUS &&
              !strcmp(cr.j.why, "FR_E_NOMEM: fake: out of memory"),
          "callback nomem: %s %s/%s: %s", fr_status_name(st), fr_verdict_name(cr.j.verdict), fr_diag_name(cr.j.diag),
          cr.j.why);
    fr_judgement_free(&cr.j);
    fr_gen_case_free(&b.g);
}

/* A stored golden: judged by when a fresh ideal pipeline agrees; the case's input error when it does not (and the
 * IUT's outputs are not kept). */
static void test_stored_golden(const fr_suite_opts *o) {
    built b;
    build(&kSmall, o->seed, &b);
    if (!b.ok) return;
    fr_case_outputs g;
    fr_error err;
    if (!CHECKED(fr_suite_run_engine(&b.c, FR_ENGINE_GOLDEN, &g, &err) == FR_OK, "golden: %s", err.msg)) {
        fr_gen_case_free(&b.g);
        return;
    }
    fr_iut iut;
    fake fk;
    fake_iut(&iut, &fk, FR_IUT_MUTANT, B_RIGHT, "right");
    fr_case_result cr;
    memset(&cr, 0, sizeof cr);
    fr_case_outputs kept;
    fr_status st = fr_suite_judge_one(&iut, &b.c, &g, 0, o, &kept, &cr, &err);
    CHECK(st == FR_OK && cr.j.verdict == FR_PASS && fr_tensor_present(&kept.fwd.attention_out) && !cr.input_error,
          "stored golden agrees: %s: %s", fr_verdict_name(cr.j.verdict), cr.j.why);
    fr_judgement_free(&cr.j);
    fr_case_outputs_free(&kept);
    for (int64_t i = 0; i < fr_tensor_numel(&g.fwd.attention_out); i++)
        fr_store_f64(&g.fwd.attention_out, i, 0.0);
    memset(&cr, 0, sizeof cr);
    st = fr_suite_judge_one(&iut, &b.c, &g, 0, o, &kept, &cr, &err);
    printf("stored zeros: %s/%s: %s\n", fr_verdict_name(cr.j.verdict), fr_diag_name(cr.j.diag), cr.j.why);
    CHECK(st == FR_OK && cr.j.verdict == FR_FAIL && cr.j.diag == FR_DIAG_INPUT && cr.input_error &&
              !fr_tensor_present(&kept.fwd.attention_out) &&
              starts(cr.j.why, "cannot judge the case: the stored golden/attention_out.npy: a fresh ideal"),
          "stored zeros: %s", cr.j.why);
    memset(&cr, 0, sizeof cr);
    st = fr_suite_judge_case(&iut, &b.c, &g, o, &cr, &err);
    CHECK(st == FR_OK && cr.j.diag == FR_DIAG_INPUT, "stored zeros, nothing kept: %s", fr_diag_name(cr.j.diag));
    fr_case_outputs_free(&g);
    fr_gen_case_free(&b.g);
}

static fr_suite_mod g_mod; /* the modification run_item applies */

static fr_case_result run_item(fr_iut *iut, const fr_gen_spec *s, fr_suite_cat cat, const fr_suite_opts *o,
                               fr_status *st) {
    fr_suite_item it = fr_suite_item_of_spec(s, "test item", false);
    it.cat = cat;
    it.mod = g_mod;
    fr_case_result cr;
    fr_error err;
    memset(&err, 0, sizeof err);
    *st = fr_suite_run_item(iut, &it, o, &cr, &err);
    printf("%-24s %s %s/%s: %s [%s]\n", s->name, fr_status_name(*st), fr_verdict_name(cr.j.verdict),
           fr_diag_name(cr.j.diag), cr.j.why, cr.extra);
    return cr;
}

static void test_determinism(const fr_suite_opts *o) {
    fr_iut iut;
    fake fk;
    fr_status st;
    fake_iut(&iut, &fk, FR_IUT_MUTANT, B_DRIFT, "drift");
    fr_case_result cr = run_item(&iut, &kSmall, FR_CAT_DETERMINISM, o, &st);
    CHECK(st == FR_OK && cr.j.verdict == FR_WARN && cr.j.diag == FR_DIAG_NONDETERMINISM &&
              !strcmp(cr.j.why, "run 2 (threads 1) differs from the first run in attention_out") &&
              !strcmp(cr.extra, "4 more runs (threads 1, 2, default x2): results differ"),
          "drift: %s [%s]", cr.j.why, cr.extra);
    fr_judgement_free(&cr.j);
    fake_iut(&iut, &fk, FR_IUT_MUTANT, B_FAIL_AFTER, "fails-after");
    cr = run_item(&iut, &kSmall, FR_CAT_DETERMINISM, o, &st);
    CHECK(st == FR_OK && cr.j.verdict == FR_WARN && cr.j.diag == FR_DIAG_NONDETERMINISM &&
              !strcmp(cr.j.why, "run 2 (threads 1) differs from the first run in status"),
          "fails on the rerun: %s", cr.j.why);
    fr_judgement_free(&cr.j);
    fake_iut(&iut, &fk, FR_IUT_MUTANT, B_RIGHT, "right");
    cr = run_item(&iut, &kSmall, FR_CAT_DETERMINISM, o, &st);
    CHECK(st == FR_OK && cr.j.verdict == FR_PASS && fk.runs == 5 &&
              !strcmp(cr.extra, "4 more runs (threads 1, 2, default x2): bitwise identical"),
          "deterministic: %s, %d runs", cr.extra, fk.runs);
    fr_judgement_free(&cr.j);
    /* our own out of memory on a rerun stops the run (nothing kept of the case) */
    fake_iut(&iut, &fk, FR_IUT_MUTANT, B_NOMEM_AFTER, "nomem-after");
    fr_suite_item it = fr_suite_item_of_spec(&kSmall, "test item", false);
    it.cat = FR_CAT_DETERMINISM;
    fr_error err;
    st = fr_suite_run_item(&iut, &it, o, &cr, &err);
    CHECK(st == FR_E_NOMEM && !strcmp(err.msg, "determinism run 2: fake: no memory for the rerun") && !cr.j.gains,
          "nomem on the rerun: %s: %s", fr_status_name(st), err.msg);
    /* an external implementation's error on the first run: its FAIL, no reruns */
    fake_iut(&iut, &fk, FR_IUT_CALLBACK, B_NOMEM, "nomem-cb");
    cr = run_item(&iut, &kSmall, FR_CAT_DETERMINISM, o, &st);
    CHECK(st == FR_OK && cr.j.verdict == FR_FAIL && cr.j.diag == FR_DIAG_ERROR_STATUS && fk.runs == 1 && !cr.extra[0],
          "callback error: %s, %d runs, extra '%s'", cr.j.why, fk.runs, cr.extra);
    fr_judgement_free(&cr.j);
    fake_iut(&iut, &fk, FR_IUT_CALLBACK, B_DRIFT, "drift-cb");
    cr = run_item(&iut, &kSmall, FR_CAT_DETERMINISM, o, &st);
    CHECK(st == FR_OK && cr.j.verdict == FR_PASS && fk.runs == 1 &&
              !strcmp(cr.extra, "determinism runs apply to built-in engines only"),
          "callback: %s, %d runs", cr.extra, fk.runs);
    fr_judgement_free(&cr.j);
}

/* Order variants of a top-k case: the first order right, the reordered ones wrong. */
static void test_order(const fr_suite_opts *o) {
    fr_gen_spec s = {.name = "sj_topk", .B = 1, .N1 = 2, .S1 = 16, .S2 = 48, .D = 16, .topk_w = 8};
    fr_iut iut;
    fake fk;
    fr_status st;
    fake_iut(&iut, &fk, FR_IUT_MUTANT, B_WRONG_AFTER, "wrong-after");
    fr_case_result cr = run_item(&iut, &s, FR_CAT_ORDER, o, &st);
    CHECK(st == FR_OK && cr.j.verdict == FR_FAIL && cr.j.diag == FR_DIAG_UNKNOWN && fk.runs == 4 &&
              starts(cr.j.why, "order variant 1: attention_out") &&
              starts(cr.extra, "3 reorderings: max rel-L2 between orders 0.02"),
          "order: %s [%s]", cr.j.why, cr.extra);
    fr_judgement_free(&cr.j);
    /* our own out of memory in a variant stops the run */
    fake_iut(&iut, &fk, FR_IUT_MUTANT, B_NOMEM_AFTER, "nomem-after");
    fr_suite_item it = fr_suite_item_of_spec(&s, "test item", false);
    it.cat = FR_CAT_ORDER;
    fr_error err;
    st = fr_suite_run_item(&iut, &it, o, &cr, &err);
    CHECK(st == FR_E_NOMEM && fk.runs == 2 && starts(err.msg, "case: running the implementation under test: fake: no"),
          "order, nomem in a variant: %s: %s", fr_status_name(st), err.msg);
    /* no top-k: no order variants */
    fake_iut(&iut, &fk, FR_IUT_MUTANT, B_WRONG_AFTER, "wrong-after");
    cr = run_item(&iut, &kSmall, FR_CAT_ORDER, o, &st);
    CHECK(st == FR_OK && cr.j.verdict == FR_PASS && fk.runs == 1 && !cr.extra[0], "order without top-k: %d runs",
          fk.runs);
    fr_judgement_free(&cr.j);
    fake_iut(&iut, &fk, FR_IUT_MUTANT, B_RIGHT, "right");
    cr = run_item(&iut, &s, FR_CAT_ORDER, o, &st);
    CHECK(st == FR_OK && cr.j.verdict == FR_PASS && fk.runs == 4 && starts(cr.extra, "3 reorderings: "),
          "order, right: %s", cr.extra);
    fr_judgement_free(&cr.j);
}

static void test_generation(const fr_suite_opts *o) {
    fr_iut iut;
    fake fk;
    fr_status st;
    fake_iut(&iut, &fk, FR_IUT_MUTANT, B_RIGHT, "right");
    fr_gen_spec bad = {.name = "sj_bad", .B = 1, .N1 = 3, .N2 = 2, .S1 = 8, .S2 = 8, .D = 16};
    fr_case_result cr = run_item(&iut, &bad, FR_CAT_BOUNDARIES, o, &st);
    CHECK(st == FR_OK && cr.j.verdict == FR_FAIL && cr.j.diag == FR_DIAG_ERROR_STATUS && fk.runs == 0 &&
              starts(cr.j.why, "case generation failed: "),
          "bad spec: %s", cr.j.why);
    fr_gen_spec fp8 = {.name = "sj_fp8_bwd", .bwd = true, .dtype = FR_E4M3FN, .B = 1, .N1 = 2, .S1 = 8, .S2 = 8,
                       .D = 16};
    cr = run_item(&iut, &fp8, FR_CAT_GRADIENTS, o, &st);
    CHECK(st == FR_OK && cr.j.verdict == FR_SKIP && cr.j.diag == FR_DIAG_NONE && fk.runs == 0 &&
              starts(cr.j.why, "case generation failed: FR_E_UNSUPPORTED: "),
          "fp8 backward: %s", cr.j.why);
    /* judged like a random draw: the configuration is described */
    cr.config[0] = 0;
    fr_error err;
    st = fr_suite_judge_spec(&iut, &kSmall, o, &cr, &err);
    CHECK(st == FR_OK && cr.j.verdict == FR_PASS && cr.config[0] != 0 && cr.S1 == 16 && cr.S2 == 24,
          "judge_spec: %s, config '%s'", fr_verdict_name(cr.j.verdict), cr.config);
    fr_judgement_free(&cr.j);
}

/* The properties category adds the explicit softmax checks to a BNSD forward with V = I (attention_out is P), not
 * to another layout; a wrong P fails them. */
static void test_properties(const fr_suite_opts *o) {
    fr_iut iut;
    fake fk;
    fr_status st;
    fr_gen_spec s = {.name = "sj_props", .B = 1, .N1 = 2, .S1 = 16, .S2 = 24, .D = 24};
    g_mod = FR_MOD_V_IDENTITY;
    fake_iut(&iut, &fk, FR_IUT_MUTANT, B_RIGHT, "right");
    fr_case_result cr = run_item(&iut, &s, FR_CAT_PROPERTIES, o, &st);
    CHECK(st == FR_OK && cr.j.verdict == FR_PASS && starts(cr.extra, "explicit P: 32 rows, max |sum-1| "),
          "properties, BNSD: %s [%s]", fr_verdict_name(cr.j.verdict), cr.extra);
    fr_judgement_free(&cr.j);
    g_mod = FR_MOD_NONE;
    s.layout = FR_BSH;
    s.name = "sj_props_bsh";
    cr = run_item(&iut, &s, FR_CAT_PROPERTIES, o, &st);
    CHECK(st == FR_OK && cr.j.verdict == FR_PASS && !cr.extra[0], "properties, BSH: no checks on top [%s]", cr.extra);
    fr_judgement_free(&cr.j);
    /* the modification refused (V = I needs Dv = S2): a generation failure, a FAIL of the suite's case */
    g_mod = FR_MOD_V_IDENTITY;
    cr = run_item(&iut, &kSmall, FR_CAT_PROPERTIES, o, &st);
    CHECK(st == FR_OK && cr.j.verdict == FR_FAIL && starts(cr.j.why, "case generation failed: "), "mod refused: %s",
          cr.j.why);
    g_mod = FR_MOD_NONE;
}

static fr_status never_run(void *ud, const fr_verify_case *c, fr_fwd_outputs *fwd, fr_bwd_outputs *bwd,
                           fr_error *err) {
    (void)c, (void)fwd, (void)bwd;
    ++*(int *)ud;
    return fr_fail(err, FR_E_INTERNAL, "must not run");
}

/* A callback's declaration is a promise: a case outside it SKIPs without running. */
static void test_declared(const fr_suite_opts *o) {
    int calls = 0;
    fr_iut *iut;
    fr_error err;
    if (!CHECKED(fr_iut_callback_open(never_run, &calls, "declared", &iut, &err) == FR_OK, "%s", err.msg)) return;
    const char *caps = "{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"dtypes\":[\"fp16\"]}}}";
    CHECK(fr_iut_declare(iut, caps, strlen(caps), &err) == FR_OK, "%s", err.msg);
    fr_status st;
    fr_case_result cr = run_item(iut, &kSmall, FR_CAT_BOUNDARIES, o, &st);
    CHECK(st == FR_OK && cr.j.verdict == FR_SKIP && calls == 0 &&
              starts(cr.j.why, "outside the declared capabilities: "),
          "outside the declaration: %s, %d calls", cr.j.why, calls);
    fr_iut_close(iut);
}

static void test_downgrade(void) {
    static const struct {
        fr_verdict from, v, want;
    } rows[] = {
        {FR_PASS, FR_WARN, FR_WARN}, {FR_PASS, FR_FAIL, FR_FAIL}, {FR_WARN, FR_FAIL, FR_FAIL},
        {FR_WARN, FR_WARN, FR_WARN}, {FR_FAIL, FR_WARN, FR_FAIL}, {FR_SKIP, FR_FAIL, FR_SKIP},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        fr_case_result cr;
        memset(&cr, 0, sizeof cr);
        cr.j.verdict = rows[r].from;
        cr.j.diag = FR_DIAG_PRECISION;
        snprintf(cr.j.why, sizeof cr.j.why, "before");
        fr_suite_downgrade(&cr, rows[r].v, FR_DIAG_GROWTH, "after");
        bool changed = rows[r].want != rows[r].from || (rows[r].from == FR_PASS);
        CHECK(cr.j.verdict == rows[r].want && (cr.j.diag == FR_DIAG_GROWTH) == changed &&
                  !strcmp(cr.j.why, changed ? "after" : "before"),
              "%s + %s: %s/%s %s", fr_verdict_name(rows[r].from), fr_verdict_name(rows[r].v),
              fr_verdict_name(cr.j.verdict), fr_diag_name(cr.j.diag), cr.j.why);
    }
}

int main(void) {
    fr_suite_opts o = fr_suite_opts_default();
    printf("test_suite_judge_edges: seed %llu\n", (unsigned long long)o.seed);
    test_downgrade();
    test_nomem(&o);
    test_stored_golden(&o);
    test_determinism(&o);
    test_order(&o);
    test_generation(&o);
    test_properties(&o);
    test_declared(&o);
    return fr_test_exit("test_suite_judge_edges");
}
