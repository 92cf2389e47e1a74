/* The judge, its diagnosis and the suite's judging of one case under allocation failures (the allocation hook of a
 * -DFR_ALLOC_HOOK=ON build; without it this test only checks its fixture): every allocation of one call made to fail
 * in turn (every 5th on the plainest cases, for time), on failing forward cases (rows x 1.02, whose diagnosis re-runs
 * every applicable candidate) and failing backward ones (dq x 1.02). Each call must answer FR_E_NOMEM with a message,
 * or a verdict that is still FAIL with the same diagnosis or none (an allocation failure may cost a candidate its
 * re-run, never turn a FAIL into a PASS or name another cause), and free what it allocated. */
#include "common/check.h"
#include "core/core.h"
#include "verify/cases/casegen.h"
#include "verify/iut/iut_internal.h"
#include "verify/judge/judge.h"
#include "verify/metrics/metrics.h"
#include "verify/suite/suite_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The hook's entry points (core/alloc_hook.h), weak: absent from a build without the hook. */
extern void fr_alloc_hook_set(long fail_at) __attribute__((weak));
extern long fr_alloc_hook_count(void) __attribute__((weak));
extern int fr_alloc_hook_failed(void) __attribute__((weak));
extern long fr_alloc_hook_live(void) __attribute__((weak));

static bool hooked(void) {
    return fr_alloc_hook_set && fr_alloc_hook_count && fr_alloc_hook_failed && fr_alloc_hook_live;
}

typedef struct fixture {
    fr_gen_case g;
    fr_case c;
    fr_case_outputs gold, ideal, plain, iut;
    bool ok;
} fixture;

static fr_status engine(const fr_case *c, fr_engine_kind k, fr_case_outputs *o, fr_error *err) {
    fr_status st = fr_case_alloc_outputs(c, k == FR_ENGINE_GOLDEN, o, err);
    if (st != FR_OK) return st;
    fr_engine e = fr_engine_default(k);
    e.num_threads = 1;
    st = c->op == FR_CASE_FWD ? fr_fwd(&c->params, &c->in.fwd, &o->fwd, &e, err)
                              : fr_bwd(&c->params, &c->in, &o->bwd, &e, err);
    if (st != FR_OK) fr_case_outputs_free(o);
    return st;
}

/* The case, its references and an IUT whose out-like output (attention_out / dq) is the ideal's x 1.02. */
static bool fixture_make(const fr_gen_spec *s, fixture *f) {
    fr_error err;
    memset(f, 0, sizeof *f);
    if (!CHECKED(fr_gen_build(s, 31, &f->g, &err) == FR_OK, "%s: %s", s->name, err.msg)) return false;
    fr_suite_case_view(&f->g, &f->c);
    f->ok = CHECKED(engine(&f->c, FR_ENGINE_GOLDEN, &f->gold, &err) == FR_OK, "golden: %s", err.msg) &&
            CHECKED(engine(&f->c, FR_ENGINE_EMULATE, &f->ideal, &err) == FR_OK, "ideal: %s", err.msg) &&
            CHECKED(fr_judge_run_plain(&f->c, NULL, &f->plain, &err) == FR_OK, "plain: %s", err.msg) &&
            CHECKED(engine(&f->c, FR_ENGINE_EMULATE, &f->iut, &err) == FR_OK, "iut: %s", err.msg);
    if (f->ok) {
        fr_tensor *t = f->c.op == FR_CASE_FWD ? &f->iut.fwd.attention_out : &f->iut.bwd.dq;
        for (int64_t i = 0; i < fr_tensor_numel(t); i++)
            fr_store_f64(t, i, 1.02 * fr_load_f64(t, i));
    }
    return f->ok;
}

static void fixture_free(fixture *f) {
    fr_case_outputs_free(&f->gold);
    fr_case_outputs_free(&f->ideal);
    fr_case_outputs_free(&f->plain);
    fr_case_outputs_free(&f->iut);
    fr_gen_case_free(&f->g);
}

static fr_status judge_once(const fixture *f, fr_judgement *j, fr_error *err) {
    return fr_judge_plain(&f->c, 0, 0, NULL, FR_OK, "", &f->iut, &f->gold, &f->ideal, &f->plain, j, err);
}

/* Every step-th allocation of one fr_judge_plain call failing in turn (step 1: all of them). */
static void sweep_judge(const fixture *f, const char *name, long step) {
    fr_judgement j;
    fr_error err;
    fr_alloc_hook_set(0);
    fr_status st = judge_once(f, &j, &err);
    long n = fr_alloc_hook_count();
    CHECK(st == FR_OK && j.verdict == FR_FAIL, "%s without failures: %s %s", name, fr_status_name(st),
          fr_verdict_name(j.verdict));
    fr_diag want = j.diag;
    fr_judgement_free(&j);
    int nomem = 0, degraded = 0, tried = 0;
    for (long k = 1; k <= n; k += step) {
        memset(&err, 0, sizeof err);
        fr_alloc_hook_set(k);
        st = judge_once(f, &j, &err);
        bool hit = fr_alloc_hook_failed() != 0;
        if (st == FR_OK) fr_judgement_free(&j);
        long live = fr_alloc_hook_live();
        fr_alloc_hook_set(0);
        tried++;
        if (st == FR_E_NOMEM) {
            nomem++;
            CHECK(hit && err.msg[0] != 0, "%s: allocation %ld: FR_E_NOMEM without a message", name, k);
        } else {
            CHECK(st == FR_OK && j.verdict == FR_FAIL, "%s: allocation %ld failing: %s, verdict %s", name, k,
                  fr_status_name(st), fr_verdict_name(j.verdict));
            /* a lost re-run may leave the cause unnamed, never name another: the copy of the golden failing once
             * made its distance infinite and any candidate "matched" (mask-sentinel for rows x 1.02) */
            CHECK(j.diag == want || j.diag == FR_DIAG_UNKNOWN, "%s: allocation %ld failing: diagnosis %s, want %s",
                  name, k, fr_diag_name(j.diag), fr_diag_name(want));
            if (j.diag != want) {
                degraded++;
                printf("%s: allocation %ld failing: %s: %s\n", name, k, fr_diag_name(j.diag), j.why);
            }
        }
        CHECK(live == 0, "%s: allocation %ld failing: %ld blocks not freed", name, k, live);
    }
    printf("%s: %ld allocations, %d failed in turn: %d FR_E_NOMEM, %d verdicts with another diagnosis than %s\n", name,
           n, tried, nomem, degraded, fr_diag_name(want));
    CHECK(nomem > 0, "%s: no allocation failure reached the caller", name);
}

static fr_status fake_run(fr_iut *iut, const fr_case *c, int threads, fr_case_outputs *o, fr_error *err) {
    (void)threads;
    const fixture *f = iut->impl;
    (void)c;
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        const fr_tensor *s = fr_case_output_cslot(&f->iut, (fr_case_output)k);
        fr_tensor *t = fr_case_output_slot(o, (fr_case_output)k);
        if (fr_tensor_present(s) && fr_tensor_present(t))
            memcpy(t->data, s->data, (size_t)fr_tensor_numel(t) * fr_dtype_size(t->dtype));
    }
    (void)err;
    return FR_OK;
}
static void fake_close(fr_iut *iut) { (void)iut; }
static const fr_iut_ops kFakeOps = {fake_run, fake_close, NULL, NULL};

/* The suite's judging of one case (IUT, golden, ideal pipeline, plain reference, judge) under the same sweep. */
static void sweep_suite(fixture *f, const char *name, long step) {
    fr_iut iut;
    memset(&iut, 0, sizeof iut);
    iut.kind = FR_IUT_MUTANT;
    iut.ops = &kFakeOps;
    iut.impl = f;
    snprintf(iut.name, sizeof iut.name, "fake:x1.02");
    fr_suite_opts o = fr_suite_opts_default();
    o.threads = 1;
    fr_case_result cr;
    fr_error err;
    memset(&cr, 0, sizeof cr);
    fr_alloc_hook_set(0);
    fr_status st = fr_suite_judge_case(&iut, &f->c, NULL, &o, &cr, &err);
    long n = fr_alloc_hook_count();
    CHECK(st == FR_OK && cr.j.verdict == FR_FAIL, "%s: %s", name, fr_status_name(st));
    fr_judgement_free(&cr.j);
    int nomem = 0;
    for (long k = 1; k <= n; k += step) {
        memset(&cr, 0, sizeof cr);
        memset(&err, 0, sizeof err);
        fr_alloc_hook_set(k);
        st = fr_suite_judge_case(&iut, &f->c, NULL, &o, &cr, &err);
        if (st == FR_OK) fr_judgement_free(&cr.j);
        long live = fr_alloc_hook_live();
        fr_alloc_hook_set(0);
        if (st == FR_E_NOMEM) {
            nomem++;
            CHECK(err.msg[0] != 0, "%s: allocation %ld: FR_E_NOMEM without a message", name, k);
        } else {
            CHECK(st == FR_OK && cr.j.verdict == FR_FAIL, "%s: allocation %ld failing: %s, verdict %s", name, k,
                  fr_status_name(st), fr_verdict_name(cr.j.verdict));
        }
        CHECK(live == 0, "%s: allocation %ld failing: %ld blocks not freed", name, k, live);
    }
    printf("%s: %ld allocations, every %ld-th failed: %d FR_E_NOMEM\n", name, n, step, nomem);
    CHECK(nomem > 0, "%s: no allocation failure reached the caller", name);
}

/* fr_metrics_load and fr_metrics_compute's scratch. */
static void metrics_oom(void) {
    float v[4] = {1, 2, 3, 4};
    int64_t sh[1] = {4}, n = -1;
    fr_tensor t = fr_tensor_make(FR_F32, v, 1, sh);
    fr_alloc_hook_set(1);
    double *d = fr_metrics_load(&t, &n);
    fr_alloc_hook_set(0);
    CHECK(d == NULL && n == 0, "metrics_load out of memory: %p, n %lld", (void *)d, (long long)n);
    double a[4] = {1, 2, 3, 4};
    fr_metrics m;
    fr_error err;
    fr_alloc_hook_set(1);
    fr_status st = fr_metrics_compute(a, a, 2, 2, NULL, &m, &err);
    fr_alloc_hook_set(0);
    CHECK(st == FR_E_NOMEM && !strcmp(err.msg, "metrics: 2 rows of scratch"), "metrics scratch: %s: %s",
          fr_status_name(st), err.msg);
}

int main(void) {
    fr_gen_spec fs = {.name = "oom_fwd", .B = 1, .N1 = 2, .S1 = 8, .S2 = 20, .D = 16};
    fr_gen_spec bs = {.name = "oom_bwd", .bwd = true, .B = 1, .N1 = 2, .N2 = 1, .S1 = 8, .S2 = 12, .D = 16};
    /* where many candidates apply: a user mask of mode 0 with a type-0 pse (sentinel, key tail, no rescale), an odd
     * head dim (head-dim); a GQA backward with dropout (dropout bit shift, dK/dV reduce, GQA map, head dim) */
    fr_gen_spec ms = {.name = "oom_mask_pse", .B = 1, .N1 = 2, .S1 = 8, .S2 = 37, .D = 20,
                      .sparse_mode = FR_SPARSE_DEFAULT_MASK, .mask = FR_GEN_MASK_SS, .pse = FR_GEN_PSE_BNSS,
                      .pse_type = FR_PSE_OUTER_MUL_ADD};
    fr_gen_spec gs = {.name = "oom_gqa_drop", .bwd = true, .B = 1, .N1 = 4, .N2 = 2, .S1 = 6, .S2 = 10, .D = 12,
                      .keep_prob = 0.8};
    fixture f, b, m, g;
    bool okf = fixture_make(&fs, &f), okb = fixture_make(&bs, &b), okm = fixture_make(&ms, &m),
         okg = fixture_make(&gs, &g);
    if (!hooked()) {
        printf("test_judge_oom: no allocation hook in this build (it needs -DFR_ALLOC_HOOK=ON): only the fixture "
               "checked\n");
    } else {
        metrics_oom();
        if (okf) sweep_judge(&f, "fr_judge forward", 5);
        if (okb) sweep_judge(&b, "fr_judge backward", 5);
        if (okf) sweep_suite(&f, "suite judge forward", 7);
        if (okm) sweep_judge(&m, "fr_judge mask + pse", 1);
        if (okg) sweep_judge(&g, "fr_judge GQA dropout backward", 1);
    }
    fixture_free(&f);
    fixture_free(&b);
    fixture_free(&m);
    fixture_free(&g);
    return fr_test_exit("test_judge_oom");
}
