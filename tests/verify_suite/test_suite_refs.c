/* The references cache of fr_suite_opts.refs (suite_refs.h), which `flashref selftest` shares across its rows: runs
 * given a cache judge every case exactly as runs without one (verdict, diagnosis, ratio, every metric, the reason),
 * whether the cache is filling, full or too small to keep anything; and a case that differs from a cached one in
 * anything a reference reads (one input element, a parameter, a judge option) finds no entry of the other. */
#include "common/check.h"
#include "verify/cases/casegen.h"
#include "verify/suite/suite_refs.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static bool same_double(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

/* Everything of a judgement the suite reports, compared field by field. */
static void same_results(const char *what, const fr_suite_result *a, const fr_suite_result *b) {
    if (!CHECKED(a->n == b->n && a->n > 0, "%s: %d cases vs %d", what, a->n, b->n)) return;
    CHECK(a->overall == b->overall && a->primary == b->primary, "%s: overall %s/%s vs %s/%s", what,
          fr_verdict_name(a->overall), fr_diag_name(a->primary), fr_verdict_name(b->overall), fr_diag_name(b->primary));
    for (int k = 0; k < a->n; k++) {
        const fr_case_result *x = &a->cases[k], *y = &b->cases[k];
        CHECK(!strcmp(x->name, y->name), "%s: case %d named %s vs %s", what, k, x->name, y->name);
        CHECK(x->j.verdict == y->j.verdict && x->j.diag == y->j.diag && same_double(x->j.ratio, y->j.ratio),
              "%s %s: %s %s %.17g vs %s %s %.17g", what, x->name, fr_verdict_name(x->j.verdict),
              fr_diag_name(x->j.diag), x->j.ratio, fr_verdict_name(y->j.verdict), fr_diag_name(y->j.diag), y->j.ratio);
        CHECK(!strcmp(x->j.why, y->j.why), "%s %s: why '%s' vs '%s'", what, x->name, x->j.why, y->j.why);
        CHECK(!strcmp(x->extra, y->extra), "%s %s: extra '%s' vs '%s'", what, x->name, x->extra, y->extra);
        for (int o = 0; o < FR_CASE_NUM_OUTPUTS; o++) {
            const fr_out_judgement *p = &x->j.out[o], *q = &y->j.out[o];
            CHECK(p->present == q->present && same_double(p->m.rel_l2, q->m.rel_l2) &&
                      same_double(p->m.max_abs, q->m.max_abs) && same_double(p->ideal.rel_l2, q->ideal.rel_l2) &&
                      same_double(p->plain.rel_l2, q->plain.rel_l2) && same_double(p->bound_l2, q->bound_l2) &&
                      same_double(p->bound_abs, q->bound_abs) && same_double(p->ratio, q->ratio),
                  "%s %s: output %s's numbers differ", what, x->name, fr_case_output_name((fr_case_output)o));
        }
    }
}

static bool run(const char *impl, fr_suite_refs *refs, fr_suite_result *r) {
    fr_error err;
    fr_iut *iut;
    if (!CHECKED(fr_iut_open(impl, &iut, &err) == FR_OK, "open %s: %s", impl, err.msg)) return false;
    fr_suite_opts o = fr_suite_opts_default();
    o.set = "quick";
    o.filter = "_fp"; /* fp32 and fp16 cases: forward and backward, failing and passing, explicit softmax properties
                         (which read the ideal pipeline's outputs), an order variant; a quarter of the set's time */
    o.refs = refs;
    fr_status st = fr_suite_run(iut, &o, r, &err);
    fr_iut_close(iut);
    return CHECKED(st == FR_OK, "suite on %s: %s", impl, err.msg);
}

/* A mutant that fails many cases (so the diagnosis runs too) with no cache, with one that fills, with the same one
 * serving every reference, and with one that can keep nothing. */
static void same_with_and_without(void) {
    const char *impl = "mutant:tile-tail";
    fr_suite_refs *shared = fr_suite_refs_new((size_t)1 << 30), *tiny = fr_suite_refs_new(0);
    fr_suite_result plain, r;
    if (CHECKED(shared && tiny, "fr_suite_refs_new") && run(impl, NULL, &plain)) {
        const char *what[] = {"filling", "serving"};
        for (int pass = 0; pass < 2; pass++)
            if (run(impl, shared, &r)) {
                same_results(what[pass], &plain, &r);
                fr_suite_result_free(&r);
            }
        int n;
        size_t bytes;
        fr_suite_refs_size(shared, &n, &bytes);
        CHECK(n > 0 && bytes > 0, "the cache holds %d cases (%zu bytes) after a run of %d", n, bytes, plain.n);
        if (run(impl, tiny, &r)) {
            same_results("too small", &plain, &r);
            fr_suite_result_free(&r);
        }
        fr_suite_refs_size(tiny, &n, &bytes);
        CHECK(bytes == 0, "a cache of 0 bytes kept %zu bytes", bytes);
        fr_suite_result_free(&plain);
    }
    fr_suite_refs_free(shared);
    fr_suite_refs_free(tiny);
}

static void key_tells_cases_apart(void) {
    fr_gen_spec s;
    memset(&s, 0, sizeof s);
    s.name = "refs_key";
    s.dtype = FR_BF16;
    s.B = 1, s.N1 = 2, s.S1 = 9, s.S2 = 17, s.D = 16;
    fr_gen_case g;
    fr_error err;
    if (!CHECKED(fr_gen_build(&s, 7, &g, &err) == FR_OK, "build: %s", err.msg)) return;
    fr_case c;
    memset(&c, 0, sizeof c);
    c.op = FR_CASE_FWD, c.dtype = g.dtype, c.params = g.params, c.in = g.in;
    fr_judge_opts j = fr_judge_opts_default();
    fr_suite_refs *r = fr_suite_refs_new(1 << 20);
    if (!CHECKED(r, "fr_suite_refs_new")) {
        fr_gen_case_free(&g);
        return;
    }
    fr_suite_ref_entry *e = fr_suite_refs_entry(r, &c, &j);
    CHECK(e && fr_suite_refs_entry(r, &c, &j) == e, "the same case finds its own entry");
    uint16_t *k = c.in.fwd.key.data;
    k[5] ^= 1; /* one element, one bit */
    CHECK(fr_suite_refs_entry(r, &c, &j) != e, "a case with one key element changed found the entry of the other");
    k[5] ^= 1;
    CHECK(fr_suite_refs_entry(r, &c, &j) == e, "the case restored finds its entry again");
    c.params.scale_value *= 2;
    CHECK(fr_suite_refs_entry(r, &c, &j) != e, "a case with another scale found the entry of the other");
    c.params.scale_value /= 2;
    j.standard = FR_STD_FA;
    CHECK(fr_suite_refs_entry(r, &c, &j) != e, "another judge standard found the entry of the other");
    j = fr_judge_opts_default();
    c.op = FR_CASE_BWD; /* the same forward inputs, asked as a backward case (with no dy): another entry */
    CHECK(fr_suite_refs_entry(r, &c, &j) != e, "a backward case found the forward case's entry");
    c.op = FR_CASE_FWD;
    /* A reference kept once is never replaced, and an out-of-memory status is never kept. */
    fr_case_outputs none;
    memset(&none, 0, sizeof none);
    fr_error oom = {FR_E_NOMEM, "x"};
    CHECK(!fr_suite_refs_keep(r, e, FR_REF_IDEAL, FR_E_NOMEM, &oom, &none) && !e->done[FR_REF_IDEAL],
          "an out-of-memory reference was kept");
    fr_error uns = {FR_E_UNSUPPORTED, "no pipeline"};
    CHECK(fr_suite_refs_keep(r, e, FR_REF_IDEAL, FR_E_UNSUPPORTED, &uns, &none) && e->done[FR_REF_IDEAL] &&
              e->st[FR_REF_IDEAL] == FR_E_UNSUPPORTED && !strcmp(e->err[FR_REF_IDEAL].msg, "no pipeline"),
          "a failed reference is kept with its status and message");
    CHECK(!fr_suite_refs_keep(r, e, FR_REF_IDEAL, FR_E_UNSUPPORTED, &uns, &none), "a kept reference was replaced");
    fr_suite_refs_free(r);
    fr_gen_case_free(&g);
}

int main(void) {
    key_tells_cases_apart();
    same_with_and_without();
    return fr_test_exit("test_suite_refs");
}
