/* The suite's text reports (src/verify/report/report.c) on results built by hand, so every branch is reachable
 * without running implementations:
 *   - fr_report_thresholds names each standard's rule with its numbers (flashref's k factors, FlashAttention's, the
 *     three Ascend levels' max-rel / mean-rel / RMSE limits) and the fully masked rows' reading;
 *   - fr_report_summary's conclusion for PASS, WARN (the likeliest precision defect), FAIL with input errors and
 *     implementation failures, SKIP, and the INFO lines of implementation-defined cases;
 *   - fr_report_history: a first run says where it was recorded; the next one of the same impl and set lists each case that is
 *     new, changed (old -> new verdict) or removed; an unchanged run says so; runs of another impl or set and lines
 *     that are not JSON (a hand-edited file; one with a lone surrogate escape was taken for out of memory) are not
 *     compared; every earlier line is kept; a path that cannot be appended to is FR_E_IO. */
#define _GNU_SOURCE
#include "common/check.h"
#include "common/kit.h"
#include "core/core.h"
#include "verify/report/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_tmp[512];

typedef struct one {
    const char *name;
    fr_suite_cat cat;
    fr_verdict v;
    fr_diag d;
    bool input_error;
    const char *info;
} one;

/* A result of n cases, summarized as the suite does (counts, overall, primary diagnosis). */
static fr_suite_result result_of(const one *c, int n) {
    fr_suite_result r;
    memset(&r, 0, sizeof r);
    r.cases = calloc((size_t)n, sizeof *r.cases);
    if (!r.cases) abort();
    r.n = r.planned = n;
    for (int k = 0; k < n; k++) {
        fr_case_result *x = &r.cases[k];
        snprintf(x->name, sizeof x->name, "%s", c[k].name);
        x->cat = c[k].cat;
        x->j.verdict = c[k].v;
        x->j.diag = c[k].d;
        snprintf(x->j.why, sizeof x->j.why, "why of %s", c[k].name);
        x->input_error = c[k].input_error;
        if (c[k].info) snprintf(x->info, sizeof x->info, "%s", c[k].info);
    }
    fr_suite_summarize(&r);
    return r;
}

/* What f(...) printed, as one string (malloc'd). */
typedef struct mem {
    char *buf;
    size_t len;
    FILE *f;
} mem;
static FILE *mem_open(mem *m) {
    m->buf = NULL, m->len = 0;
    m->f = open_memstream(&m->buf, &m->len);
    if (!m->f) abort();
    return m->f;
}
static char *mem_text(mem *m) {
    fclose(m->f);
    return m->buf;
}

static bool has(const char *s, const char *sub) { return s && strstr(s, sub) != NULL; }

static void test_thresholds(void) {
    static const struct {
        fr_standard s;
        const char *want, *not;
    } k[] = {
        {FR_STD_FLASHREF, "[--k-out]", "Ascend"},
        {FR_STD_FA, "2 x the plain reference's (3 x for gradients) + 1 ulp (FlashAttention)", "[--k-out]"},
        {FR_STD_ASCEND_L0, "> 10 / 2 / 2, or mean rel", "[--k-out]"},
        {FR_STD_ASCEND_L1, "> 5 / 1.5 / 1.5, or mean rel", "[--k-out]"},
        {FR_STD_ASCEND_L2, "> 2 / 1.2 / 1.2, or mean rel", "[--k-out]"},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        for (int ext = 0; ext < 2; ext++) {
            fr_judge_opts o = fr_judge_opts_default();
            o.standard = k[i].s;
            o.external = ext;
            mem m;
            fr_report_thresholds(mem_open(&m), &o);
            char *t = mem_text(&m);
            char head[96];
            snprintf(head, sizeof head, "standard: %s [", fr_standard_name(k[i].s));
            CHECK(has(t, head) && has(t, k[i].want) && !has(t, k[i].not) && has(t, "[--k-stats]"),
                  "standard %s: %s", fr_standard_name(k[i].s), t);
            CHECK(has(t, ext ? "implementation-defined" : "must follow D1 exactly"), "external %d: %s", ext, t);
            free(t);
        }
    }
}

static char *summary_of(const one *c, int n, fr_suite_result *keep) {
    fr_suite_result r = result_of(c, n);
    fr_judge_opts jo = fr_judge_opts_default();
    fr_report_meta meta = {"mutant:x", "quick", 7, &jo};
    mem m;
    fr_report_summary(mem_open(&m), &r, &meta);
    if (keep) *keep = r;
    else fr_suite_result_free(&r);
    return mem_text(&m);
}

static void test_summary(void) {
    const one pass[] = {{"eq_a", FR_CAT_EQUIVALENCE, FR_PASS, FR_DIAG_NONE, false, NULL},
                        {"impl_b", FR_CAT_IMPLDEF, FR_PASS, FR_DIAG_NONE, false, "follows the mask-alone reading"}};
    char *t = summary_of(pass, 2, NULL);
    CHECK(has(t, "implementation: mutant:x   set: quick   seed: 7   cases: 2") &&
              has(t, "conclusion: PASS: every judged case is within its bounds") &&
              has(t, "INFO  impl_b: follows the mask-alone reading"),
          "PASS: %s", t);
    free(t);
    /* WARN: the likeliest precision defect named */
    const one warn[] = {{"eq_a", FR_CAT_EQUIVALENCE, FR_PASS, FR_DIAG_NONE, false, NULL},
                        {"eq_b", FR_CAT_EQUIVALENCE, FR_WARN, FR_DIAG_PRECISION, false, NULL},
                        {"gr_c", FR_CAT_GRADIENTS, FR_SKIP, FR_DIAG_NONE, false, NULL}};
    fr_suite_result r;
    t = summary_of(warn, 3, &r);
    char want[200];
    snprintf(want, sizeof want, "conclusion: WARN: correct within bounds, with precision defects (likeliest: %s: ",
             fr_diag_name(FR_DIAG_PRECISION));
    CHECK(r.overall == FR_WARN && has(t, want) && has(t, fr_diag_text(FR_DIAG_PRECISION)), "WARN: %s", t);
    CHECK(has(t, "gradients") && has(t, "SKIP"), "a skipped category: %s", t);
    fr_suite_result_free(&r);
    free(t);
    /* FAIL: input errors counted apart from the implementation's failures */
    const one fail[] = {{"reg_a", FR_CAT_REGRESSION, FR_FAIL, FR_DIAG_INPUT, true, NULL},
                        {"eq_b", FR_CAT_EQUIVALENCE, FR_FAIL, FR_DIAG_NAN, false, NULL},
                        {"eq_c", FR_CAT_EQUIVALENCE, FR_FAIL, FR_DIAG_NAN, false, NULL}};
    t = summary_of(fail, 3, NULL);
    snprintf(want, sizeof want, "2 case(s) failed; likeliest cause: %s: ", fr_diag_name(FR_DIAG_NAN));
    CHECK(has(t, "conclusion: FAIL: 1 case(s) could not be used (input errors: see their lines); ") && has(t, want),
          "FAIL: %s", t);
    free(t);
    t = summary_of(fail, 1, NULL); /* input errors alone */
    CHECK(has(t, "1 case(s) could not be used (input errors: see their lines)\n") && !has(t, "failed; likeliest"),
          "input errors only: %s", t);
    free(t);
    const one skip[] = {{"eq_a", FR_CAT_EQUIVALENCE, FR_SKIP, FR_DIAG_NONE, false, NULL}};
    t = summary_of(skip, 1, NULL);
    CHECK(has(t, "conclusion: SKIP"), "SKIP: %s", t);
    free(t);
}

static int count_lines(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = 0;
    for (int ch; (ch = fgetc(f)) != EOF;) n += ch == '\n';
    fclose(f);
    return n;
}

/* Appends a run of cases c to the history at path; returns what it printed (malloc'd); g_err: its error. */
static fr_error g_err;
static char *history(const char *path, const char *impl, const char *set, const one *c, int n, fr_status *st) {
    fr_suite_result r = result_of(c, n);
    fr_judge_opts jo = fr_judge_opts_default();
    fr_report_meta meta = {impl, set, 1, &jo};
    mem m;
    *st = fr_report_history(path, mem_open(&m), &r, &meta, &g_err);
    fr_suite_result_free(&r);
    return mem_text(&m);
}

static void test_history(void) {
    char path[600];
    snprintf(path, sizeof path, "%s/history.jsonl", g_tmp);
    fr_status st;
    const one run1[] = {{"eq_a", FR_CAT_EQUIVALENCE, FR_PASS, FR_DIAG_NONE, false, NULL},
                        {"eq_b", FR_CAT_EQUIVALENCE, FR_PASS, FR_DIAG_NONE, false, NULL},
                        {"eq_c", FR_CAT_EQUIVALENCE, FR_WARN, FR_DIAG_PRECISION, false, NULL}};
    char first[800];
    snprintf(first, sizeof first, "history: first run of fast on set quick recorded in %s\n", path);
    char *t = history(path, "fast", "quick", run1, 3, &st);
    CHECK(st == FR_OK && t && !strcmp(t, first) && count_lines(path) == 1, "first run: %s, printed '%s'",
          fr_status_name(st), t);
    free(t);
    /* another implementation, another set, and a hand-edited line in between: none of them is compared */
    const one other[] = {{"eq_a", FR_CAT_EQUIVALENCE, FR_FAIL, FR_DIAG_NAN, false, NULL}};
    t = history(path, "golden", "quick", other, 1, &st);
    CHECK(st == FR_OK && has(t, "first run of golden on set quick"), "another impl: '%s'", t);
    free(t);
    t = history(path, "fast", "default", other, 1, &st);
    CHECK(st == FR_OK && has(t, "first run of fast on set default"), "another set: '%s'", t);
    free(t);
    FILE *f = fopen(path, "a");
    /* the second: JSON in form but with a lone surrogate escape, which cJSON refuses (it stopped the run as out of
     * memory while the syntax check took it for well-formed) */
    CHECK(f && fputs("not json, edited by hand\n{\"impl\": \"fast\", \"note\": \"\\ud800\"}\n", f) >= 0 &&
              fclose(f) == 0,
          "append two lines");
    /* eq_a unchanged, eq_b PASS -> FAIL, eq_c removed, eq_d new */
    const one run2[] = {{"eq_a", FR_CAT_EQUIVALENCE, FR_PASS, FR_DIAG_NONE, false, NULL},
                        {"eq_b", FR_CAT_EQUIVALENCE, FR_FAIL, FR_DIAG_NAN, false, NULL},
                        {"eq_d", FR_CAT_EQUIVALENCE, FR_PASS, FR_DIAG_NONE, false, NULL}};
    t = history(path, "fast", "quick", run2, 3, &st);
    CHECK(st == FR_OK && has(t, "history: changes since the last run of fast on set quick (") &&
              has(t, "  changed  eq_b") && has(t, "PASS -> FAIL") && has(t, "  new      eq_d") &&
              has(t, "  removed  eq_c") && has(t, "(was WARN)") && !has(t, "eq_a") && !has(t, "no verdict changed"),
          "second run: %s", t);
    free(t);
    /* the same again: nothing changed */
    t = history(path, "fast", "quick", run2, 3, &st);
    CHECK(st == FR_OK && has(t, "  no verdict changed") && !has(t, "changed  ") && !has(t, "new  "),
          "third run: %s", t);
    free(t);
    CHECK(count_lines(path) == 7, "%d lines in the history (5 runs and the 2 edited lines)", count_lines(path));
    CHECK(fr_test_file_contains(g_tmp, "history.jsonl", "not json, edited by hand"), "the edited line was lost");
    /* a folder where the file should be: FR_E_IO, nothing printed */
    t = history(g_tmp, "fast", "quick", run2, 3, &st);
    CHECK(st == FR_E_IO && has(g_err.msg, "cannot append"), "a folder as history: %s %s", fr_status_name(st),
          g_err.msg);
    free(t);
}

int main(void) {
    const char *t = getenv("TMPDIR");
    snprintf(g_tmp, sizeof g_tmp, "%.400s/fr_report_text_XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(g_tmp)) {
        perror(g_tmp);
        return 1;
    }
    test_thresholds();
    test_summary();
    test_history();
    fr_test_rm_rf(g_tmp);
    return fr_test_exit("test_report_text");
}
