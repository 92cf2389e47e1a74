/* Mode 0's band against its mask (docs/semantics-decisions.md, D12 and "Readings that could decide a verdict"): the
 * spec's mode 0 is "the user mask; if pre/next are set, the band must match the mask", and flashref's rule "masked iff
 * mask OR outside the band" is an inference. So
 *   - the mode-0 cases (negative pre / next, broadcast shapes, TND, backward, D1 rows, 1K-4K keys) and the stored
 *     regression case pass a correct implementation of the other reading, the mask alone (the golden with that one
 *     rule switched, golden_alt.h, as a callback: a correct variant, not a mutant of the zoo), and flashref's own
 *     engines (fast, emulate, golden);
 *   - the implementation-defined cases impldef_m0_* report which reading an implementation follows: A for the
 *     engines, C for the mask-alone one, never a FAIL; the INFO line is in the summary, the JSON and the HTML.
 * The same for D7's reading of a top-k list with repeated keys (impldef_topk_dup): A for the engines, C for an
 * implementation that counts a repeated key once. */
#define _XOPEN_SOURCE 700 /* io_test_util.h: nftw */
#include "common/check.h"
#include "golden/golden_alt.h"
#include "io/io_test_util.h"
#include "verify/iut/iut_callback.h"
#include "verify/report/report.h"
#include "verify/suite/suite_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const kCases[] = {"m0_band_ss",         "m0_negpre",          "m0_b1ss_negnext",
                                     "m0_tnd_band",        "bd_d1_rows_band",    "ln_m0_band_ss_4097",
                                     "ln_m0_11ss_negnext_2049", "bwd_m0_bnss_band_pse0"};
static const char *const kImpldef[] = {"impldef_m0_mask_band_ss", "impldef_m0_mask_negpre_bnss_fp16"};

/* The other reading of D12's mode 0: a position is masked iff the user mask says so; pre/next only let a kernel
 * skip blocks that the mask masks anyway. */
static fr_status mask_alone(void *ud, const fr_verify_case *vc, fr_fwd_outputs *fo, fr_bwd_outputs *bo,
                            fr_error *err) {
    (void)ud;
    fr_problem pb;
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    if (vc->op == FR_VERIFY_FWD) {
        fr_status st = fr_problem_from_fwd(vc->params, &vc->in->fwd, &pb, err);
        return st != FR_OK ? st : fr_golden_fwd_alt(&pb, vc->params, &vc->in->fwd, fo, &e, FR_GALT_M0_MASK_ONLY, err);
    }
    fr_status st = fr_problem_from_bwd(vc->params, vc->in, &pb, err);
    return st != FR_OK ? st : fr_golden_bwd_alt(&pb, vc->params, vc->in, bo, &e, FR_GALT_M0_MASK_ONLY, err);
}

/* The other reading of D7: a key listed twice in a top-k row takes part once. */
static fr_status topk_once(void *ud, const fr_verify_case *vc, fr_fwd_outputs *fo, fr_bwd_outputs *bo, fr_error *err) {
    (void)ud;
    (void)bo;
    fr_problem pb;
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    if (vc->op != FR_VERIFY_FWD) return FR_E_UNSUPPORTED;
    fr_status st = fr_problem_from_fwd(vc->params, &vc->in->fwd, &pb, err);
    return st != FR_OK ? st : fr_golden_fwd_alt(&pb, vc->params, &vc->in->fwd, fo, &e, FR_GALT_D7_TOPK_ONCE, err);
}

static fr_iut *open_iut(const char *impl) {
    fr_iut *iut = NULL;
    fr_error err;
    fr_status st = !strcmp(impl, "mask-alone") ? fr_iut_callback_open(mask_alone, NULL, impl, &iut, &err)
                   : !strcmp(impl, "topk-once") ? fr_iut_callback_open(topk_once, NULL, impl, &iut, &err)
                                                : fr_iut_open(impl, &iut, &err);
    CHECK(st == FR_OK, "open %s: %s", impl, err.msg);
    return st == FR_OK ? iut : NULL;
}

/* One case of the default set (only = name) or the regression directory's cases (only = NULL). */
static bool run(fr_iut *iut, const char *impl, const char *only, const char *regression, fr_suite_result *r) {
    fr_suite_opts o = fr_suite_opts_default();
    o.set = "default";
    o.only = only;
    if (regression) o.regression_dir = regression, o.filter = "reg_bd_d1_rows_band";
    o.judge.external = !fr_iut_is_builtin(iut);
    fr_error err;
    fr_status st = fr_suite_run(iut, &o, r, &err);
    return CHECKED(st == FR_OK, "%s %s: %s", impl, only ? only : "regression", err.msg);
}

/* The INFO line of an implementation-defined case in the summary, the JSON ("info") and the HTML page. */
static void check_reports(const char *impl, const fr_suite_result *r, const char *want) {
    fr_report_meta m = {impl, "default", fr_suite_opts_default().seed, NULL};
    fr_judge_opts jo = fr_judge_opts_default();
    m.judge = &jo;
    char dir[] = "/tmp/fr_impldef_m0_XXXXXX", jpath[64], hpath[64];
    if (!CHECKED(mkdtemp(dir) != NULL, "mkdtemp")) return;
    snprintf(jpath, sizeof jpath, "%s/r.json", dir);
    snprintf(hpath, sizeof hpath, "%s/r.html", dir);
    char *sum = NULL;
    size_t sn = 0;
    FILE *f = open_memstream(&sum, &sn);
    if (f) {
        fr_report_summary(f, r, &m);
        fclose(f);
    }
    fr_error err;
    CHECK(fr_report_json(jpath, r, &m, &err) == FR_OK, "json: %s", err.msg);
    CHECK(fr_report_html(hpath, r, &m, &err) == FR_OK, "html: %s", err.msg);
    size_t jn, hn;
    char *json = read_whole(jpath, &jn), *html = read_whole(hpath, &hn);
    const fr_case_result *c = &r->cases[0];
    char line[300];
    snprintf(line, sizeof line, "INFO  %s: %s", c->name, c->info);
    CHECK(sum && strstr(sum, line) && strstr(sum, want), "%s: summary lacks the INFO line '%s'", impl, line);
    cJSON *j = json ? cJSON_Parse(json) : NULL;
    const cJSON *cases = j ? cJSON_GetObjectItemCaseSensitive(j, "cases") : NULL, *info = NULL;
    const cJSON *it;
    cJSON_ArrayForEach(it, cases) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(it, "name");
        if (cJSON_IsString(nm) && !strcmp(nm->valuestring, c->name))
            info = cJSON_GetObjectItemCaseSensitive(it, "info");
    }
    CHECK(cJSON_IsString(info) && !strcmp(info->valuestring, c->info) && strstr(info->valuestring, want),
          "%s: JSON lacks %s's info", impl, c->name);
    /* the HTML escapes its text: the reading's name has no character it would escape */
    CHECK(html && strstr(html, c->name) && strstr(html, want) && strstr(html, "mode 0 with band positions"),
          "%s: HTML lacks %s's INFO", impl, c->name);
    cJSON_Delete(j);
    free(json);
    free(html);
    free(sum);
    unlink(jpath);
    unlink(hpath);
    rmdir(dir);
}

static void run_impl(const char *impl, const char *regression) {
    fr_iut *iut = open_iut(impl);
    if (!iut) return;
    fr_suite_result r;
    for (size_t k = 0; k < sizeof kCases / sizeof kCases[0]; k++) {
        if (!run(iut, impl, kCases[k], NULL, &r)) continue;
        if (CHECKED(r.n == 1, "%s %s: %d cases", impl, kCases[k], r.n))
            CHECK(r.cases[0].j.verdict == FR_PASS || r.cases[0].j.verdict == FR_WARN, "%s %s: %s %s: %s", impl,
                  kCases[k], fr_verdict_name(r.cases[0].j.verdict), fr_diag_name(r.cases[0].j.diag),
                  r.cases[0].j.why);
        fr_suite_result_free(&r);
    }
    if (run(iut, impl, NULL, regression, &r)) {
        CHECK(r.n == 1 && r.cases[0].j.verdict == FR_PASS, "%s reg_bd_d1_rows_band: %d cases, %s: %s", impl, r.n,
              r.n ? fr_verdict_name(r.cases[0].j.verdict) : "-", r.n ? r.cases[0].j.why : "");
        fr_suite_result_free(&r);
    }
    /* the implementation-defined cases: a PASS with the reading followed */
    const char *want =
        strcmp(impl, "mask-alone") ? "follows reading A (mask OR band" : "follows reading C (the mask alone";
    for (size_t k = 0; k < sizeof kImpldef / sizeof kImpldef[0]; k++) {
        if (!run(iut, impl, kImpldef[k], NULL, &r)) continue;
        if (CHECKED(r.n == 1, "%s %s: %d cases", impl, kImpldef[k], r.n)) {
            const fr_case_result *c = &r.cases[0];
            printf("%s %s: %s: %s\n", impl, c->name, fr_verdict_name(c->j.verdict), c->info);
            CHECK(c->j.verdict == FR_PASS && c->cat == FR_CAT_IMPLDEF && strstr(c->info, want) &&
                      !strstr(c->info, "same here"),
                  "%s %s: %s, info '%s', want '%s'", impl, c->name, fr_verdict_name(c->j.verdict), c->info, want);
            if (k == 0 && (!strcmp(impl, "mask-alone") || !strcmp(impl, "golden"))) check_reports(impl, &r, want);
        }
        fr_suite_result_free(&r);
    }
    fr_iut_close(iut);
}

/* impldef_topk_dup: a PASS with the reading named. */
static void run_topk(const char *impl, const char *want) {
    fr_iut *iut = open_iut(impl);
    fr_suite_result r;
    if (iut && run(iut, impl, "impldef_topk_dup", NULL, &r)) {
        const fr_case_result *c = r.n == 1 ? &r.cases[0] : NULL;
        if (c) printf("%s %s: %s: %s\n", impl, c->name, fr_verdict_name(c->j.verdict), c->info);
        CHECK(c && c->j.verdict == FR_PASS && strstr(c->info, want) && !strstr(c->info, "same here"),
              "%s impldef_topk_dup: %s, info '%s', want '%s'", impl, c ? fr_verdict_name(c->j.verdict) : "-",
              c ? c->info : "", want);
        fr_suite_result_free(&r);
    }
    if (iut) fr_iut_close(iut);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: impldef_readings REGRESSION_DIR\n");
        return 2;
    }
    run_impl("mask-alone", argv[1]);
    run_impl("golden", argv[1]);
    run_impl("fast", argv[1]);
    run_impl("emulate", argv[1]);
    run_topk("topk-once", "follows reading C (a repeated key takes part once)");
    run_topk("golden", "follows reading A (each listed slot");
    run_topk("fast", "follows reading A (each listed slot");
    return fr_test_exit("impldef_readings");
}
