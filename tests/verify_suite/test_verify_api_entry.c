/* The verifier API's entry points that only the Python package called (include/flashref_verify.h; python/flashref
 * _verify.py, study.py, metrics.py, npu/), driven from C so that the sanitizers and the coverage sample see them:
 *   1. fr_verify_hunt: a callback that scales its output by 1.05 gives a FAIL cluster, a correct one none; an --impl
 *      mutant gives its diagnosis; every option key (seed, budget_s, max_draws, max_shrink, threads, out, name,
 *      no_corners, capabilities) changes what it must; fr_verify_hunt_stop ends the hunt with "interrupted" and
 *      nothing written; malformed options, unknown keys, impl and callback together or neither: a status each;
 *   2. fr_verify_msprobe on the dump msprobe wrote (tests/data/msprobe/dump): 12 calls, all PASS, named by the dump;
 *      the standard's parsing, --case, --write, a missing dump;
 *   3. fr_verify_npu_schemas, fr_verify_set_names, fr_verify_ulp;
 *   4. fr_verify_study_order_invariance / _seqlen at tiny sizes: the JSON holds the study's numbers (to cJSON's
 *      printing), which are finite and ordered as the formats' precisions order them; argument errors, among them
 *      the ones the studies took before they were checked (a seqlen length <= 0 ran, or failed as out of memory;
 *      sizes that overflow int64 reached malloc);
 *   5. the option checks (threads, external, standard) and fr_verify_judge_outputs' error paths and backward use.
 * A few seconds in a Release build (FLASHREF_HUNT_TRACE=1 prints each hunt's time). */
#define _GNU_SOURCE
#include "flashref_verify.h"

#include "common/check.h"
#include "common/kit.h"
#include "core/core.h"
#include "study/emu_study.h"
#include "verify/zoo/mutants.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef FR_MSPROBE_DUMP
#error "FR_MSPROBE_DUMP (tests/data/msprobe/dump) is set by tests/verify_suite/CMakeLists.txt"
#endif

static char g_tmp[512];

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static bool contains(const char *s, const char *sub) { return s && sub && strstr(s, sub) != NULL; }

static const char *str_of(const cJSON *o, const char *k) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

static double num_of(const cJSON *o, const char *k) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int entries(const char *dir) { /* names in dir besides . and .. (-1: not readable) */
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* ---- 1. the hunt ---- */

typedef struct hunt_cb {
    int calls, fwd, bwd;
    int stop_at;  /* > 0: call fr_verify_hunt_stop() on this call */
    double scale; /* != 1: the defect, attention_out scaled by it */
} hunt_cb;

/* flashref's fast engine, optionally with its output scaled (a defect the hunt must find wherever it draws). */
static fr_status hunt_impl(void *ud, const fr_verify_case *c, fr_fwd_outputs *fo, fr_bwd_outputs *bo, fr_error *err) {
    hunt_cb *h = ud;
    h->calls++;
    if (h->stop_at > 0 && h->calls == h->stop_at) fr_verify_hunt_stop();
    fr_engine e = fr_engine_default(FR_ENGINE_FAST);
    e.num_threads = 1;
    if (c->op == FR_VERIFY_BWD) {
        h->bwd++;
        return fr_bwd(c->params, c->in, bo, &e, err);
    }
    h->fwd++;
    fr_status st = fr_fwd(c->params, &c->in->fwd, fo, &e, err);
    if (st == FR_OK && h->scale != 1.0) {
        fr_tensor *o = &fo->attention_out;
        int64_t n = fr_tensor_numel(o);
        for (int64_t k = 0; k < n; k++) fr_store_f64(o, k, fr_load_f64(o, k) * h->scale);
    }
    return st;
}

/* fp32 / fp16 forward, no mask, pse, dropout, sink, rope, top-k, GQA or empty axis, head dims up to 32: draws of a
 * fraction of a second (the hunt's sizes cannot be capped through the API), and a scaled output is wrong in each. */
static const char kCaps[] =
    "{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"dtypes\":[\"fp32\",\"fp16\"],"
    "\"sparse_modes\":[],\"mask_shapes\":[],\"pse_types\":[],\"dropout\":false,\"sink\":false,\"rope\":false,"
    "\"topk\":\"none\",\"gqa\":false,\"empty\":false,\"head_dim\":[1,32]}}}";

/* The options object: base (a JSON object) with "capabilities": kCaps and "out": out added when asked. */
static char *opts_of(const char *base, bool caps, const char *out) {
    cJSON *o = cJSON_Parse(base);
    if (!o) abort(); /* the test's own text */
    if (caps) cJSON_AddStringToObject(o, "capabilities", kCaps);
    if (out) cJSON_AddStringToObject(o, "out", out);
    char *t = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!t) abort();
    return t;
}

/* Runs a hunt; returns its status and the parsed findings (NULL when none). */
static fr_status hunt(const char *opts, const char *impl, hunt_cb *cb, cJSON **findings, fr_error *err) {
    char *js = (char *)"unset";
    double t0 = now_s();
    fr_status st = fr_verify_hunt(opts, impl, cb ? hunt_impl : NULL, cb, &js, err);
    if (getenv("FLASHREF_HUNT_TRACE")) printf("%.2f s: %.60s\n", now_s() - t0, opts ? opts : "(null)");
    *findings = NULL;
    if (st == FR_OK) {
        CHECK(js != NULL, "hunt FR_OK without findings");
        *findings = js ? cJSON_Parse(js) : NULL;
        CHECK(*findings != NULL, "findings do not parse: %.200s", js ? js : "");
        fr_verify_free(js);
    } else {
        CHECK(js == NULL, "a failed hunt left *findings_json set");
    }
    return st;
}

static int clusters_with(const cJSON *f, const char *verdict) {
    int n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(f, "clusters")) n += contains(str_of(c, "verdict"), verdict);
    return n;
}

/* The findings' numbers agree with each other (the "flashref-hunt/1" format, docs/verifier.md). */
static void check_findings(const cJSON *f, const char *impl, double seed, int max_draws, const char *what) {
    CHECK(contains(str_of(f, "format"), "flashref-hunt/1"), "%s: format", what);
    CHECK(impl == NULL || contains(str_of(f, "impl"), impl), "%s: impl %s", what, str_of(f, "impl"));
    CHECK(num_of(f, "seed") == seed && num_of(f, "max_draws") == max_draws, "%s: seed %g, max_draws %g", what,
          num_of(f, "seed"), num_of(f, "max_draws"));
    double draws = num_of(f, "draws"), judged = num_of(f, "judged"), skipped = num_of(f, "skipped");
    double passed = num_of(f, "passed"), warned = num_of(f, "warned"), failed = num_of(f, "failed");
    CHECK(draws == max_draws, "%s: %g draws of %d", what, draws, max_draws);
    CHECK(judged + skipped == draws && passed + warned + failed == judged, "%s: %g judged + %g skipped, %g+%g+%g",
          what, judged, skipped, passed, warned, failed);
    CHECK(fabs(num_of(f, "judged_share") - (draws ? judged / draws : 0)) < 1e-12, "%s: judged_share", what);
    CHECK(isfinite(num_of(f, "seconds")) && num_of(f, "seconds") >= 0, "%s: seconds", what);
    CHECK(str_of(f, "capabilities") && str_of(f, "learned_exclusions") && str_of(f, "stopped"), "%s: strings", what);
    CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(f, "clusters")), "%s: clusters", what);
    int in_clusters = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(f, "clusters")) {
        in_clusters += (int)num_of(c, "count");
        CHECK(str_of(c, "diagnosis") && str_of(c, "configuration") && str_of(c, "first") && str_of(c, "smallest") &&
                  str_of(c, "why") && str_of(c, "corner") && str_of(c, "kind"),
              "%s: a cluster without its strings", what);
    }
    CHECK(in_clusters == failed + warned, "%s: %d draws in clusters, %g FAIL + %g WARN", what, in_clusters, failed,
          warned);
}

/* Runs a hunt with opts_of(base, caps, out). */
static fr_status hunt_with(const char *base, bool caps, const char *out, const char *impl, hunt_cb *cb,
                           cJSON **findings, fr_error *err) {
    char *o = opts_of(base, caps, out);
    fr_status st = hunt(o, impl, cb, findings, err);
    free(o);
    return st;
}

static const char *first_config(const cJSON *f, int k) {
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(f, "clusters"), k);
    return c ? str_of(c, "first") : NULL;
}

static void test_hunt(void) {
    fr_error err;
    cJSON *f;
    /* A known-broken callback: every judged draw FAILs, in one cluster or more; the first is shrunk (max_shrink 1),
     * no other. */
    hunt_cb bad = {0, 0, 0, 0, 1.05};
    fr_status st = hunt_with("{\"seed\": 6, \"budget_s\": 0, \"max_draws\": 4, \"max_shrink\": 1, "
                             "\"name\": \"scaled\"}",
                             true, NULL, NULL, &bad, &f, &err);
    if (CHECKED(st == FR_OK, "scaled: %s", err.msg) && f) {
        check_findings(f, "scaled", 6, 4, "scaled");
        CHECK(num_of(f, "failed") == num_of(f, "judged") && num_of(f, "judged") > 0, "scaled: %g of %g judged FAIL",
              num_of(f, "failed"), num_of(f, "judged"));
        CHECK(clusters_with(f, "FAIL") >= 1, "scaled: no FAIL cluster");
        CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(f, "declared")) &&
                  !contains(str_of(f, "capabilities"), "nothing declared"),
              "the declaration is not echoed: %s", str_of(f, "capabilities"));
        const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(f, "clusters"), 0);
        CHECK(c0 && num_of(c0, "shrink_runs") > 0, "scaled: the first cluster was not shrunk");
        CHECK(c0 && contains(str_of(c0, "configuration"), "fwd"), "scaled: configuration %s",
              c0 ? str_of(c0, "configuration") : "");
        const cJSON *c1 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(f, "clusters"), 1);
        CHECK(!c1 || num_of(c1, "shrink_runs") == 0, "max_shrink 1 shrank a second cluster");
        CHECK(bad.bwd == 0, "a fwd-only declaration was given %d backward cases", bad.bwd);
        cJSON_Delete(f);
    }
    /* The same callback, correct: no cluster at all, every draw judged by calling it. */
    hunt_cb good = {0, 0, 0, 0, 1.0};
    st = hunt_with("{\"seed\": 6, \"budget_s\": 0, \"max_draws\": 4, \"max_shrink\": 0}", true, NULL, NULL, &good, &f,
                   &err);
    if (CHECKED(st == FR_OK, "correct: %s", err.msg) && f) {
        check_findings(f, "callback", 6, 4, "correct"); /* no "name": "callback" */
        CHECK(num_of(f, "failed") == 0 && num_of(f, "judged") == 4 &&
                  cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(f, "clusters")) == 0,
              "correct: %g FAIL of %g judged", num_of(f, "failed"), num_of(f, "judged"));
        CHECK(good.fwd == 4, "correct: %d calls for 4 judged draws", good.fwd);
        cJSON_Delete(f);
    }
    /* no_corners, max_shrink 0, threads, a budget with a cap, out: plain draws, none shrunk, the findings written. */
    char out[600];
    snprintf(out, sizeof out, "%s/hunt", g_tmp);
    char *plain[2] = {NULL, NULL};
    for (int t = 0; t < 2; t++) { /* threads 2 with out, threads 1 without: the same findings */
        hunt_cb b = {0, 0, 0, 0, 1.05};
        st = hunt_with(t ? "{\"seed\": 9, \"budget_s\": 0, \"max_draws\": 3, \"max_shrink\": 0, \"threads\": 1, "
                           "\"no_corners\": true}"
                         : "{\"seed\": 9, \"budget_s\": 3600, \"max_draws\": 3, \"max_shrink\": 0, \"threads\": 2, "
                           "\"no_corners\": true}",
                       true, t ? NULL : out, NULL, &b, &f, &err);
        if (!CHECKED(st == FR_OK, "no corners, threads %d: %s", 2 - t, err.msg) || !f) continue;
        check_findings(f, NULL, 9, 3, "no corners");
        CHECK(num_of(f, "budget_s") == (t ? 0 : 3600), "budget_s %g", num_of(f, "budget_s"));
        CHECK(num_of(f, "failed") == 3 && clusters_with(f, "FAIL") >= 1, "no corners: %g FAIL", num_of(f, "failed"));
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(f, "clusters")) {
            CHECK(contains(str_of(c, "corner"), "none"), "no_corners: corner %s", str_of(c, "corner"));
            CHECK(num_of(c, "shrink_runs") == 0, "max_shrink 0: shrunk");
        }
        const char *fc = first_config(f, 0);
        plain[t] = fc ? strdup(fc) : NULL;
        cJSON_Delete(f);
    }
    CHECK(plain[0] && plain[1] && !strcmp(plain[0], plain[1]), "threads 2 and 1 drew differently: %s / %s",
          plain[0] ? plain[0] : "", plain[1] ? plain[1] : "");
    free(plain[0]), free(plain[1]);
    CHECK(fr_test_file_contains(out, "findings.json", "\"flashref-hunt/1\""), "%s/findings.json", out);
    CHECK(fr_test_file_contains(out, "findings.markdown", "# flashref hunt: callback"), "%s/findings.markdown", out);
    char cdir[700];
    snprintf(cdir, sizeof cdir, "%s/cluster_1/case", out);
    CHECK(is_dir(cdir) && fr_test_file_contains(cdir, "case.json", "\"params\""), "%s", cdir);

    /* An --impl spec: the mutant's defect is found with its diagnosis. */
    const fr_mutant *m = fr_mutant_find("lse-for-sum");
    if (CHECKED(m, "no mutant lse-for-sum")) {
        st = hunt_with("{\"seed\": 1, \"budget_s\": 0, \"max_draws\": 2, \"max_shrink\": 0}", true, NULL,
                       "mutant:lse-for-sum", NULL, &f, &err);
        if (CHECKED(st == FR_OK, "mutant: %s", err.msg) && f) {
            check_findings(f, "mutant:lse-for-sum", 1, 2, "mutant");
            bool found = false;
            const cJSON *c;
            cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(f, "clusters"))
                found |= contains(str_of(c, "diagnosis"), fr_diag_name(m->expected));
            CHECK(found, "mutant: no cluster diagnosed %s", fr_diag_name(m->expected));
            cJSON_Delete(f);
        }
    }

    /* Interrupted from the callback: "hunt: interrupted", no findings, nothing under out. */
    char out2[600];
    snprintf(out2, sizeof out2, "%s/hunt_stopped", g_tmp);
    hunt_cb stop = {0, 0, 0, 2, 1.05};
    st = hunt_with("{\"seed\": 1, \"budget_s\": 0, \"max_draws\": 50}", true, out2, NULL, &stop, &f, &err);
    CHECK(st == FR_E_INTERNAL && contains(err.msg, "interrupted"), "stop: %s: %s", fr_status_name(st), err.msg);
    CHECK(stop.calls == 2, "stop: %d calls after the stop on the 2nd", stop.calls);
    CHECK(entries(out2) <= 0, "stop: %d entries left in %s", entries(out2), out2);
    cJSON_Delete(f);
    /* The stop does not outlive its hunt: the next one runs to its cap. Null out and capabilities mean none (the
     * Python package may pass them so): nothing declared. */
    good.calls = 0;
    st = hunt("{\"seed\": 4, \"budget_s\": 0, \"max_draws\": 1, \"max_shrink\": 0, \"out\": null, "
              "\"capabilities\": null}",
              NULL, &good, &f, &err);
    CHECK(st == FR_OK && f && num_of(f, "draws") == 1 && good.calls == 1 &&
              !cJSON_GetObjectItemCaseSensitive(f, "declared") && contains(str_of(f, "capabilities"), "nothing"),
          "after a stop, null out and capabilities: %s: %s", err.msg, f ? str_of(f, "capabilities") : "");
    cJSON_Delete(f);

    /* Options refused, each with its status and a message naming the problem; the callback never called. */
    static const struct {
        const char *json, *msg;
    } bad_opts[] = {
        {"[1, 2]", "not a JSON object"},
        {"{\"seed\": ", "not a JSON object"},
        {"\"budget_s\"", "not a JSON object"},
        {"{\"sed\": 1}", "\"sed\""},
        {"{\"seed\": -1}", "\"seed\""},
        {"{\"seed\": \"1\"}", "\"seed\""},
        {"{\"budget_s\": -2}", "\"budget_s\""},
        {"{\"max_draws\": 1e9}", "\"max_draws\""},
        {"{\"max_shrink\": 1001}", "\"max_shrink\""},
        {"{\"threads\": -1}", "\"threads\""},
        {"{\"threads\": 5000}", "\"threads\""},
        {"{\"out\": 3}", "\"out\""},
        {"{\"name\": null}", "\"name\""},
        {"{\"no_corners\": 1}", "\"no_corners\""},
        {"{\"capabilities\": {}}", "\"capabilities\""},
        {"{\"seed\": 9007199254740992}", "\"seed\""},
        {"{\"budget_s\": 1e999}", "\"budget_s\""},
        {"{\"budget_s\": \"1\"}", "\"budget_s\""},
        {"{\"max_draws\": -1}", "\"max_draws\""},
        {"{\"max_draws\": \"3\"}", "\"max_draws\""},
        {"{\"max_shrink\": -1}", "\"max_shrink\""},
        {"{\"max_shrink\": true}", "\"max_shrink\""},
        {"{\"threads\": \"2\"}", "\"threads\""},
        {"{\"budget_s\": 0}", "budget 0 needs max_draws"},
        {"{\"budget_s\": 0, \"max_draws\": 0}", "budget 0 needs max_draws"},
    };
    for (size_t k = 0; k < sizeof bad_opts / sizeof bad_opts[0]; k++) {
        hunt_cb none = {0, 0, 0, 0, 1.0};
        memset(&err, 0, sizeof err);
        st = hunt(bad_opts[k].json, NULL, &none, &f, &err);
        CHECK(st == FR_E_INVALID_ARG && contains(err.msg, bad_opts[k].msg) && none.calls == 0, "%s: %s: %s",
              bad_opts[k].json, fr_status_name(st), err.msg);
        cJSON_Delete(f);
    }
    /* A declaration that is not one. */
    hunt_cb none = {0, 0, 0, 0, 1.0};
    st = hunt("{\"max_draws\": 2, \"capabilities\": \"{\\\"format\\\": \\\"nope\\\"}\"}", NULL, &none, &f, &err);
    CHECK(st == FR_E_FORMAT && none.calls == 0, "bad capabilities: %s: %s", fr_status_name(st), err.msg);
    /* An out that cannot be a folder: FR_E_IO before any draw. */
    char file[600];
    snprintf(file, sizeof file, "%s/a_file", g_tmp);
    FILE *fp = fopen(file, "w");
    CHECK(fp && fputs("x", fp) >= 0 && fclose(fp) == 0, "%s", file);
    st = hunt_with("{\"budget_s\": 0, \"max_draws\": 1}", true, file, NULL, &none, &f, &err);
    CHECK(st == FR_E_IO && contains(err.msg, file) && none.calls == 0, "out a file: %s: %s", fr_status_name(st),
          err.msg);
    /* Exactly one of impl and fn, and a findings pointer. */
    char *js = NULL;
    CHECK(fr_verify_hunt("{\"max_draws\": 1}", "fast", hunt_impl, &none, &js, &err) == FR_E_NULL && !js,
          "impl and fn together accepted");
    CHECK(fr_verify_hunt("{\"max_draws\": 1}", NULL, NULL, NULL, &js, &err) == FR_E_NULL && !js,
          "neither impl nor fn accepted");
    CHECK(fr_verify_hunt("{\"max_draws\": 1}", "fast", NULL, NULL, NULL, &err) == FR_E_NULL, "NULL findings");
    /* No options (defaults: a 600 s budget) with an --impl that does not open: its status, at once. */
    CHECK(fr_verify_hunt(NULL, "nonsense", NULL, NULL, &js, &err) == FR_E_INVALID_ARG && !js, "bad impl: %s",
          err.msg);
    CHECK(fr_verify_hunt("", "nonsense", NULL, NULL, &js, &err) == FR_E_INVALID_ARG && !js, "bad impl: %s", err.msg);
    CHECK(none.calls == 0, "a refused hunt called the callback");
}

/* ---- 2. msprobe ---- */

static void test_msprobe(void) {
    fr_error err;
    fr_verify_result *r = (fr_verify_result *)1;
    fr_status st = fr_verify_msprobe(NULL, FR_MSPROBE_DUMP, NULL, NULL, &r, &err);
    if (CHECKED(st == FR_OK && r, "msprobe: %s", err.msg)) {
        CHECK(fr_verify_result_count(r) == 12 && fr_verify_result_overall(r) == 0, "%d calls, overall %d",
              fr_verify_result_count(r), fr_verify_result_overall(r));
        char *js = NULL;
        CHECK(fr_verify_result_json(r, &js, &err) == FR_OK, "json: %s", err.msg);
        cJSON *j = js ? cJSON_Parse(js) : NULL;
        fr_verify_free(js);
        if (CHECKED(j, "msprobe JSON does not parse")) {
            CHECK(contains(str_of(j, "impl"), "msprobe:") && contains(str_of(j, "impl"), "msprobe/dump") &&
                      contains(str_of(j, "set"), "verify"),
                  "impl %s, set %s", str_of(j, "impl"), str_of(j, "set"));
            CHECK(contains(str_of(cJSON_GetObjectItem(j, "thresholds"), "standard"), "ascend-L1"),
                  "default standard %s", str_of(cJSON_GetObjectItem(j, "thresholds"), "standard"));
            CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "thresholds"), "external")), "external");
            int n = 0, pass = 0, fwd = 0;
            const cJSON *c;
            cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "cases")) {
                n++;
                pass += contains(str_of(c, "verdict"), "PASS");
                fwd += contains(str_of(c, "name"), ".forward");
                CHECK(!strncmp(str_of(c, "name") ? str_of(c, "name") : "", "NPU.npu_fusion_attention", 24), "name %s",
                      str_of(c, "name"));
            }
            CHECK(n == 12 && pass == 12 && fwd > 0 && fwd < 12, "%d cases, %d PASS, %d forward", n, pass, fwd);
            cJSON_Delete(j);
        }
        char html[600];
        snprintf(html, sizeof html, "%s/msprobe.html", g_tmp);
        CHECK(fr_verify_result_html(r, html, &err) == FR_OK, "html: %s", err.msg);
        CHECK(fr_test_file_contains(g_tmp, "msprobe.html", "NPU.npu_fusion_attention_v2.0.backward"),
              "the HTML report does not name the calls");
        fr_verify_result_free(r);
    }
    /* standard: flashref's own judge passes the dump too; an unknown one is refused, as argument or as option */
    st = fr_verify_msprobe(NULL, FR_MSPROBE_DUMP, "flashref", NULL, &r, &err);
    if (CHECKED(st == FR_OK, "%s", err.msg)) {
        char *js = NULL;
        CHECK(fr_verify_result_json(r, &js, &err) == FR_OK, "%s", err.msg);
        cJSON *j = js ? cJSON_Parse(js) : NULL;
        CHECK(j && contains(str_of(cJSON_GetObjectItem(j, "thresholds"), "standard"), "flashref"),
              "standard flashref not in the JSON");
        cJSON_Delete(j);
        fr_verify_free(js);
        CHECK(fr_verify_result_overall(r) == 0, "flashref standard: overall %d", fr_verify_result_overall(r));
        fr_verify_result_free(r);
    }
    st = fr_verify_msprobe(NULL, FR_MSPROBE_DUMP, "ascend-L9", NULL, &r, &err);
    CHECK(st == FR_E_INVALID_ARG && r == NULL, "standard ascend-L9: %s: %s", fr_status_name(st), err.msg);
    fr_verify_opts o = fr_verify_opts_default();
    o.standard = "nope";
    st = fr_verify_msprobe(&o, FR_MSPROBE_DUMP, NULL, NULL, &r, &err);
    CHECK(st == FR_E_INVALID_ARG && r == NULL, "opts.standard nope: %s", fr_status_name(st));
    /* exact + write: one call, written as a case folder; impl_name replaces the dump path */
    o = fr_verify_opts_default();
    o.exact = "NPU.npu_fusion_attention.3.backward";
    o.impl_name = "my-npu";
    char wdir[600];
    snprintf(wdir, sizeof wdir, "%s/written", g_tmp);
    st = fr_verify_msprobe(&o, FR_MSPROBE_DUMP, "ascend-L0", wdir, &r, &err);
    if (CHECKED(st == FR_OK, "%s", err.msg)) {
        CHECK(fr_verify_result_count(r) == 1 && fr_verify_result_overall(r) == 0, "exact: %d",
              fr_verify_result_count(r));
        char cdir[700];
        snprintf(cdir, sizeof cdir, "%s/%s", wdir, o.exact);
        CHECK(fr_test_file_contains(cdir, "case.json", "\"sink\""), "%s/case.json", cdir);
        char *js = NULL;
        CHECK(fr_verify_result_json(r, &js, &err) == FR_OK && contains(js, "my-npu") && contains(js, "ascend-L0"),
              "impl name / standard not in the JSON");
        fr_verify_free(js);
        fr_verify_result_free(r);
    }
    o.exact = NULL;
    o.set = NULL; /* unused by msprobe, but NULL is the default set, not an error */
    o.filter = "_v2";
    st = fr_verify_msprobe(&o, FR_MSPROBE_DUMP, NULL, NULL, &r, &err);
    if (CHECKED(st == FR_OK, "%s", err.msg)) {
        CHECK(fr_verify_result_count(r) == 2, "filter _v2: %d calls", fr_verify_result_count(r));
        fr_verify_result_free(r);
    }
    /* no dump there; NULL arguments; bad thresholds */
    char none[600];
    snprintf(none, sizeof none, "%s/no-such-dump", g_tmp);
    st = fr_verify_msprobe(NULL, none, NULL, NULL, &r, &err);
    CHECK((st == FR_E_IO || st == FR_E_FORMAT) && r == NULL, "no dump: %s: %s", fr_status_name(st), err.msg);
    st = fr_verify_msprobe(NULL, g_tmp, NULL, NULL, &r, &err); /* a folder, but no dump in it */
    CHECK((st == FR_E_IO || st == FR_E_FORMAT) && r == NULL, "empty folder: %s: %s", fr_status_name(st), err.msg);
    CHECK(fr_verify_msprobe(NULL, NULL, NULL, NULL, &r, &err) == FR_E_NULL, "NULL dump");
    CHECK(fr_verify_msprobe(NULL, FR_MSPROBE_DUMP, NULL, NULL, NULL, &err) == FR_E_NULL, "NULL result");
    o = fr_verify_opts_default();
    o.k_grad = NAN;
    CHECK(fr_verify_msprobe(&o, FR_MSPROBE_DUMP, NULL, NULL, &r, &err) == FR_E_INVALID_ARG &&
              contains(err.msg, "k_grad"),
          "NaN k_grad: %s", err.msg);
}

/* ---- 3. schemas, set names, ulp ---- */

static void test_names(void) {
    const char *const *s = fr_verify_npu_schemas();
    static const char *const apis[] = {"npu_fusion_attention(",    "npu_fusion_attention_grad(",
                                       "npu_fusion_attention_v2(", "npu_fusion_attention_grad_v2(",
                                       "npu_fusion_attention_v3(", "npu_fusion_attention_grad_v3("};
    int n = 0;
    while (s && s[n]) n++;
    CHECK(n == 6, "%d schemas", n);
    for (int k = 0; k < n && k < 6; k++) {
        bool seen = false;
        for (int q = 0; q < n; q++) seen |= !strncmp(s[q], apis[k], strlen(apis[k]));
        CHECK(seen, "no schema for %s", apis[k]);
        CHECK(contains(s[k], "Tensor query") && contains(s[k], "int head_num") && contains(s[k], ") -> ("),
              "schema %d: %.80s", k, s[k]);
    }
    const char *const *sets = fr_verify_set_names();
    int ns = 0;
    const char *want[] = {"quick", "default", "long", "all"};
    int count[4] = {0};
    while (sets && sets[ns]) ns++;
    CHECK(ns == 4, "%d set names", ns);
    for (int k = 0; k < ns && k < 4; k++) {
        CHECK(!strcmp(sets[k], want[k]), "set %d: %s", k, sets[k]);
        count[k] = fr_verify_list(sets[k], NULL, NULL, NULL);
    }
    /* quick is a sample of default; long holds the big cases alone; all holds both */
    CHECK(count[0] > 0 && count[0] < count[1] && count[2] > 0 && count[3] >= count[1] + count[2],
          "cases: quick %d, default %d, long %d, all %d", count[0], count[1], count[2], count[3]);
    CHECK(fr_verify_list("nope", NULL, NULL, NULL) == -1, "unknown set listed");
    /* ulp: 1.0 and the smallest subnormal of each format, a power of two's lower neighbour, hif8's taper */
    CHECK(fr_verify_ulp(FR_F64, 1.0) == 0x1p-52 && fr_verify_ulp(FR_F32, 1.0) == 0x1p-23 &&
              fr_verify_ulp(FR_F16, 1.0) == 0x1p-10 && fr_verify_ulp(FR_BF16, 1.0) == 0x1p-7,
          "ulp(1)");
    CHECK(fr_verify_ulp(FR_F32, 0x1p-149) == 0x1p-149 && fr_verify_ulp(FR_F16, 0.0) == 0x1p-24 &&
              fr_verify_ulp(FR_BF16, -0x1p-130) == 0x1p-133,
          "ulp of subnormals: %g %g %g", fr_verify_ulp(FR_F32, 0x1p-149), fr_verify_ulp(FR_F16, 0.0),
          fr_verify_ulp(FR_BF16, -0x1p-130));
    CHECK(fr_verify_ulp(FR_F32, 0.99) == 0x1p-24 && fr_verify_ulp(FR_BF16, -3.0) == 0x1p-6, "ulp below 1, of -3");
    CHECK(fr_verify_ulp(FR_HIF8, 1.0) == 0x1p-3 && fr_verify_ulp(FR_HIF8, 300.0) == 0x1p+7, "hif8: %g %g",
          fr_verify_ulp(FR_HIF8, 1.0), fr_verify_ulp(FR_HIF8, 300.0));
    CHECK(fr_verify_ulp(FR_I32, 1.0) == 0.0, "an integer dtype has an ulp");
}

/* ---- 4. the studies ---- */

static const cJSON *at(const cJSON *a, int k) { return cJSON_GetArrayItem(a, k); }

/* v is the number x wrote (num(): finite numbers as numbers, the rest as "nan" / "inf" / "-inf"). cJSON prints 15
 * significant digits when they read back within a few ulps (print_number's compare_double), 17 otherwise. */
static bool same(const cJSON *v, double x) {
    if (cJSON_IsNumber(v)) return isfinite(x) && fabs(v->valuedouble - x) <= 4 * DBL_EPSILON * fabs(x);
    if (!cJSON_IsString(v)) return false;
    return isnan(x) ? !strcmp(v->valuestring, "nan") : isinf(x) && !strcmp(v->valuestring, x > 0 ? "inf" : "-inf");
}

static void test_order_invariance(void) {
    enum { T = 48, W = 32, H = 2, DL = 32, DR8 = 8 };
    fr_error err;
    char *js = NULL;
    for (int run = 0; run < 3; run++) { /* forward only; with the backward; with it and no rope (Dr 0) */
        const int bwd = run > 0;
        const int64_t DR = run == 2 ? 0 : DR8;
        fr_status st = fr_verify_study_order_invariance(T, W, H, DL, DR, 0.25, 3, 8.0, bwd, 1, &js, &err);
        if (!CHECKED(st == FR_OK && js, "order invariance: %s", err.msg)) return;
        cJSON *j = cJSON_Parse(js);
        fr_verify_free(js);
        js = NULL;
        fr_oi_result r; /* the study itself, for the numbers the JSON must hold */
        if (!CHECKED(j && fr_study_order_invariance(T, W, H, DL, DR, 0.25, 3, 8.0, bwd, 1, &r, &err) == FR_OK, "%s",
                     err.msg)) {
            cJSON_Delete(j);
            return;
        }
        CHECK(num_of(j, "T") == T && num_of(j, "W") == W && num_of(j, "H") == H && num_of(j, "Dl") == DL &&
                  num_of(j, "Dr") == DR && num_of(j, "beta") == 0.25,
              "parameters");
        double floor = num_of(j, "bf16_floor_rel_l2"), p50 = num_of(j, "self_weight_p50"),
               p90 = num_of(j, "self_weight_p90");
        CHECK(floor == r.bf16_floor_rel_l2 && num_of(j, "bf16_floor_gain") == r.bf16_floor_gain, "floor");
        CHECK(floor > 1e-4 && floor < 1e-2, "bf16 floor rel-L2 %g (bf16 rounding: ~1.6e-3)", floor);
        CHECK(p50 == r.self_weight_p50 && p90 == r.self_weight_p90 && p50 > 0 && p50 <= p90 && p90 <= 1,
              "dominant weight p50 %g p90 %g", p50, p90);
        CHECK(num_of(j, "seconds") >= 0, "seconds");
        const cJSON *cf = cJSON_GetObjectItem(j, "configs");
        CHECK(cJSON_GetArraySize(cf) == 3, "%d configs", cJSON_GetArraySize(cf));
        static const char *const labels[] = {"lazy-8", "exact-0", "rowsum-rounded-8"};
        for (int k = 0; k < 3 && k < cJSON_GetArraySize(cf); k++) {
            const cJSON *x = at(cf, k);
            const fr_oi_row *w = &r.rows[k];
            CHECK(contains(str_of(x, "label"), labels[k]) && !strcmp(str_of(x, "label"), w->label), "label %s",
                  str_of(x, "label"));
            for (int o = 0; o < 2; o++) {
                const cJSON *e = at(cJSON_GetObjectItem(x, "out_rel_l2"), o),
                            *g = at(cJSON_GetObjectItem(x, "gain_rms"), o);
                CHECK(same(e, w->out_rel_l2[o]) && same(g, w->gain_rms[o]), "%s order %d: out/gain", w->label, o);
                /* an emulated bf16 kernel: at or above the bf16 output floor, far below order one */
                CHECK(w->out_rel_l2[o] >= 0.9 * floor && w->out_rel_l2[o] < 10 * floor,
                      "%s order %d: rel-L2 %g (floor %g)", w->label, o, w->out_rel_l2[o], floor);
                static const char *const gn[] = {"dq", "dk", "dv"};
                const double(*gv[3])[2] = {w->dq, w->dk, w->dv};
                for (int q = 0; q < 3; q++)
                    for (int fix = 0; fix < 2; fix++) {
                        const cJSON *v = at(at(cJSON_GetObjectItem(x, gn[q]), o), fix);
                        CHECK(same(v, gv[q][o][fix]), "%s %s[%d][%d]", w->label, gn[q], o, fix);
                        /* no backward: zeros; with it: a bf16 gradient's error */
                        CHECK(bwd ? gv[q][o][fix] > 1e-4 && gv[q][o][fix] < 0.05 : gv[q][o][fix] == 0,
                              "%s %s[%d][%d] = %g (bwd %d)", w->label, gn[q], o, fix, gv[q][o][fix], bwd);
                    }
            }
            CHECK(same(cJSON_GetObjectItem(x, "diff_rel_l2"), w->diff_rel_l2) &&
                      same(cJSON_GetObjectItem(x, "diff_gain_rms"), w->diff_gain_rms) &&
                      same(cJSON_GetObjectItem(x, "diff_noise_floor"), w->diff_noise_floor) &&
                      same(cJSON_GetObjectItem(x, "diff_gain_over_floor"), w->diff_gain_over_floor),
                  "%s: differences", w->label);
            CHECK(isfinite(w->diff_rel_l2) && w->diff_rel_l2 >= 0 && w->diff_rel_l2 < 10 * floor, "%s: diff %g",
                  w->label, w->diff_rel_l2);
        }
        if (bwd) /* the o_lo fix lowers dq with the exact max (docs/emulator.md) */
            CHECK(r.rows[1].dq[0][1] < r.rows[1].dq[0][0], "o_lo fix: dq %g vs %g", r.rows[1].dq[0][1],
                  r.rows[1].dq[0][0]);
        cJSON_Delete(j);
    }
    /* argument errors: each its status, nothing returned */
    js = (char *)"unset";
    CHECK(fr_verify_study_order_invariance(T, W, H, DL, DR8, 0.25, 3, 8.0, 0, -1, &js, &err) == FR_E_INVALID_ARG &&
              !js && contains(err.msg, "threads"),
          "threads -1: %s", err.msg);
    CHECK(fr_verify_study_order_invariance(T, W, H, DL, DR8, 0.25, 3, 8.0, 0, 0, NULL, &err) == FR_E_NULL, "NULL json");
    /* the last two: int32 key indices cannot address 2^40 keys; 2^30 x 2^30 x 2^10 elements have no byte count */
    const int64_t badp[][6] = {{0, W, H, DL, DR8, FR_E_INVALID_ARG},  {T, 0, H, DL, DR8, FR_E_INVALID_ARG},
                               {T, W, 0, DL, DR8, FR_E_INVALID_ARG},  {T, W, H, 0, DR8, FR_E_INVALID_ARG},
                               {T, W, H, DL, -1, FR_E_INVALID_ARG},   {-4, W, H, DL, DR8, FR_E_INVALID_ARG},
                               {INT64_C(1) << 40, 1 << 20, 1 << 10, 1 << 10, 0, FR_E_INVALID_ARG},
                               {1 << 30, 1, 1 << 30, 1 << 10, 0, FR_E_OVERFLOW}};
    for (size_t k = 0; k < sizeof badp / sizeof badp[0]; k++) {
        js = (char *)"unset";
        fr_status st = fr_verify_study_order_invariance(badp[k][0], badp[k][1], badp[k][2], badp[k][3], badp[k][4],
                                                        0.25, 3, 8.0, 0, 0, &js, &err);
        CHECK(st == (fr_status)badp[k][5] && !js, "T %lld W %lld H %lld Dl %lld Dr %lld: %s: %s", (long long)badp[k][0],
              (long long)badp[k][1], (long long)badp[k][2], (long long)badp[k][3], (long long)badp[k][4],
              fr_status_name(st), err.msg);
    }
}

static void test_seqlen(void) {
    const int64_t lens[] = {16, 96};
    enum { S1 = 4, D = 16 };
    fr_error err;
    char *js = NULL;
    fr_status st = fr_verify_study_seqlen(lens, 2, S1, D, 7, 1, &js, &err);
    if (!CHECKED(st == FR_OK && js, "seqlen: %s", err.msg)) return;
    cJSON *j = cJSON_Parse(js);
    fr_verify_free(js);
    fr_seqlen_result *r = calloc(1, sizeof *r);
    if (!CHECKED(j && r && fr_study_seqlen(lens, 2, S1, D, 7, 1, r, &err) == FR_OK, "%s", err.msg)) {
        cJSON_Delete(j);
        free(r);
        return;
    }
    const cJSON *L = cJSON_GetObjectItem(j, "lens"), *P = cJSON_GetObjectItem(j, "pipelines");
    CHECK(cJSON_GetArraySize(L) == 2 && same(at(L, 0), 16) && same(at(L, 1), 96), "lens");
    CHECK(cJSON_GetArraySize(P) == r->npipes && r->npipes == 9, "%d pipelines", cJSON_GetArraySize(P));
    int fp32 = -1, bf16 = -1, fp16 = -1;
    for (int p = 0; p < r->npipes && p < cJSON_GetArraySize(P); p++) {
        const char *name = cJSON_IsString(at(P, p)) ? at(P, p)->valuestring : "";
        CHECK(!strcmp(name, r->pipe[p]), "pipeline %d: %s", p, name);
        if (!strcmp(name, "fp32 exact-max")) fp32 = p;
        if (!strcmp(name, "bf16 exact-max")) bf16 = p;
        if (!strcmp(name, "fp16 exact-max")) fp16 = p;
    }
    CHECK(fp32 >= 0 && bf16 >= 0 && fp16 >= 0, "pipelines named");
    static const char *const qn[] = {"rel_l2", "gain_rms", "sum_rel", "nonfinite"};
    for (int q = 0; q < 4; q++) {
        const cJSON *a = cJSON_GetObjectItem(j, qn[q]);
        CHECK(cJSON_GetArraySize(a) == r->npipes, "%s: %d rows", qn[q], cJSON_GetArraySize(a));
        for (int p = 0; p < r->npipes; p++)
            for (int l = 0; l < 2; l++) {
                double v = q == 0 ? r->rel_l2[p][l] : q == 1 ? r->gain_rms[p][l] : q == 2 ? r->sum_rel[p][l]
                                                                                      : (double)r->nonfinite[p][l];
                CHECK(same(at(at(a, p), l), v), "%s[%d][%d]", qn[q], p, l);
                /* short rows of N(0,1) inputs: no overflow anywhere, errors of the formats' size */
                CHECK(q == 3 ? v == 0 : isfinite(v) && v >= 0 && v < 0.05, "%s %s len %lld: %g", r->pipe[p], qn[q],
                      (long long)lens[l], v);
            }
    }
    for (int l = 0; l < 2; l++) /* fp32 < fp16 < bf16: 24, 11 and 8 significant bits */
        CHECK(r->rel_l2[fp32][l] < r->rel_l2[fp16][l] && r->rel_l2[fp16][l] < r->rel_l2[bf16][l] &&
                  r->rel_l2[bf16][l] > 1e-4,
              "len %lld: rel-L2 fp32 %g fp16 %g bf16 %g", (long long)lens[l], r->rel_l2[fp32][l], r->rel_l2[fp16][l],
              r->rel_l2[bf16][l]);
    CHECK(num_of(j, "seconds") >= 0, "seconds");
    cJSON_Delete(j);
    free(r);
    /* argument errors */
    int64_t many[17];
    for (int k = 0; k < 17; k++) many[k] = 8;
    static const struct {
        int64_t len, s1, d;
        int nlens, threads;
        fr_status want;
    } bad[] = {
        {8, S1, D, 0, 0, FR_E_INVALID_ARG},  {8, S1, D, 17, 0, FR_E_INVALID_ARG}, {8, S1, D, 1, -1, FR_E_INVALID_ARG},
        {0, S1, D, 1, 0, FR_E_INVALID_ARG},  {-5, S1, D, 1, 0, FR_E_INVALID_ARG}, {8, 0, D, 1, 0, FR_E_INVALID_ARG},
        {8, S1, 0, 1, 0, FR_E_INVALID_ARG},  {INT64_C(1) << 62, S1, D, 1, 0, FR_E_OVERFLOW},
        {8, INT64_C(1) << 60, D, 1, 0, FR_E_OVERFLOW},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        many[0] = bad[k].len;
        js = (char *)"unset";
        memset(&err, 0, sizeof err);
        st = fr_verify_study_seqlen(many, bad[k].nlens, bad[k].s1, bad[k].d, 1, bad[k].threads, &js, &err);
        CHECK(st == bad[k].want && !js && err.msg[0], "len %lld S1 %lld D %lld nlens %d threads %d: %s: %s",
              (long long)bad[k].len, (long long)bad[k].s1, (long long)bad[k].d, bad[k].nlens, bad[k].threads,
              fr_status_name(st), err.msg);
    }
    CHECK(fr_verify_study_seqlen(NULL, 1, S1, D, 1, 0, &js, &err) == FR_E_INVALID_ARG && !js, "NULL lens");
    CHECK(fr_verify_study_seqlen(lens, 1, S1, D, 1, 0, NULL, &err) == FR_E_NULL, "NULL json");
}

/* ---- 5. option checks, judge_outputs ---- */

static fr_status never(void *ud, const fr_verify_case *c, fr_fwd_outputs *fo, fr_bwd_outputs *bo, fr_error *err) {
    (void)c, (void)fo, (void)bo;
    ++*(int *)ud;
    return fr_fail(err, FR_E_UNSUPPORTED, "never");
}

typedef struct seen {
    int calls, other; /* cases given; of them, not forward fp32 */
} seen;

static fr_status fp32_only(void *ud, const fr_verify_case *c, fr_fwd_outputs *fo, fr_bwd_outputs *bo, fr_error *err) {
    seen *s = ud;
    s->calls++;
    s->other += c->op != FR_VERIFY_FWD || c->dtype != FR_F32;
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    e.num_threads = 1;
    return c->op == FR_VERIFY_FWD ? fr_fwd(c->params, &c->in->fwd, fo, &e, err) : fr_bwd(c->params, c->in, bo, &e, err);
}

/* Every case's verdict is v and its why contains why; returns the number of cases. */
static int all_cases(const fr_verify_result *r, const char *v, const char *why) {
    char *js = NULL;
    fr_error err;
    if (!CHECKED(fr_verify_result_json(r, &js, &err) == FR_OK, "%s", err.msg)) return -1;
    cJSON *j = cJSON_Parse(js);
    fr_verify_free(js);
    int n = 0, bad = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "cases")) {
        n++;
        bad += !contains(str_of(c, "verdict"), v) || (why && !contains(str_of(c, "why"), why));
    }
    CHECK(j && bad == 0, "%d of %d cases not %s (%s)", bad, n, v, why ? why : "");
    cJSON_Delete(j);
    return n;
}

/* A callback's capability declaration (fr_verify_run_callback_caps): cases outside it SKIP without a call. */
static void test_caps(void) {
    fr_error err;
    fr_verify_result *r = NULL;
    int calls = 0;
    /* No op at all, no options (the default set): every case SKIPs, the callback is never called. */
    fr_status st = fr_verify_run_callback_caps(NULL, "{\"format\":\"flashref-capabilities/1\",\"ops\":{}}", never,
                                               &calls, &r, &err);
    if (CHECKED(st == FR_OK && r, "%s", err.msg)) {
        int n = all_cases(r, "SKIP", "outside the declared capabilities");
        CHECK(n == fr_verify_list("default", NULL, NULL, NULL) && calls == 0 && fr_verify_result_overall(r) == 3,
              "nothing declared: %d cases of %d, %d calls", n, fr_verify_list("default", NULL, NULL, NULL), calls);
        fr_verify_result_free(r);
    }
    /* fp32 forward only: the callback sees exactly those cases, and they PASS (the golden computes them). */
    fr_verify_opts o = fr_verify_opts_default();
    o.set = "quick";
    o.filter = "eq_";
    seen sn = {0, 0};
    st = fr_verify_run_callback_caps(
        &o, "{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"dtypes\":[\"fp32\"]}}}", fp32_only, &sn,
        &r, &err);
    if (CHECKED(st == FR_OK && r, "%s", err.msg)) {
        CHECK(sn.calls > 0 && sn.other == 0 && sn.calls < fr_verify_result_count(r),
              "fp32 forward: %d calls, %d of them other, %d cases", sn.calls, sn.other, fr_verify_result_count(r));
        CHECK(fr_verify_result_overall(r) <= 1, "fp32 forward by the golden: overall %d", fr_verify_result_overall(r));
        fr_verify_result_free(r);
    }
    st = fr_verify_run_callback_caps(&o, "{\"format\": ", never, &calls, &r, &err);
    CHECK(st == FR_E_FORMAT && !r, "a broken declaration: %s: %s", fr_status_name(st), err.msg);
    CHECK(calls == 0, "a refused declaration called the callback");
    fr_verify_result_free(NULL);
}

static void test_opts_and_judge(void) {
    fr_error err;
    fr_verify_result *r = (fr_verify_result *)1;
    int calls = 0;
    fr_verify_opts o = fr_verify_opts_default();
    o.set = "quick";
    const struct {
        int threads, external;
        const char *standard, *msg;
    } bad[] = {{-1, -1, NULL, "threads"}, {5000, -1, NULL, "threads"}, {0, 2, NULL, "external"},
               {0, -2, NULL, "external"}, {0, -1, "ascend-L7", "ascend-L7"}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        o.threads = bad[k].threads, o.external = bad[k].external, o.standard = bad[k].standard;
        memset(&err, 0, sizeof err);
        fr_status st = fr_verify_run_callback(&o, never, &calls, &r, &err);
        CHECK(st == FR_E_INVALID_ARG && !r && contains(err.msg, bad[k].msg), "threads %d external %d standard %s: %s",
              bad[k].threads, bad[k].external, bad[k].standard ? bad[k].standard : "-", err.msg);
        st = fr_verify_run_impl(&o, "fast", &r, &err);
        CHECK(st == FR_E_INVALID_ARG && !r, "impl: threads %d external %d", bad[k].threads, bad[k].external);
    }
    o.threads = 0, o.external = -1, o.standard = NULL, o.set = "long ";
    CHECK(fr_verify_run_callback(&o, never, &calls, &r, &err) == FR_E_INVALID_ARG && !r && contains(err.msg, "long "),
          "set 'long ': %s", err.msg);
    o.set = "quick";
    o.k_out = INFINITY;
    CHECK(fr_verify_run_callback(&o, never, &calls, &r, &err) == FR_E_INVALID_ARG && !r && contains(err.msg, "k_out"),
          "k_out inf: %s", err.msg);
    o.k_out = fr_verify_opts_default().k_out;
    CHECK(calls == 0, "a refused run called the callback");
    CHECK(fr_verify_abi_version() == FR_VERIFY_ABI_VERSION, "abi");
    /* external 1 holds for a built-in too (by default only callbacks and runners are external) */
    o.external = 1;
    o.exact = "eq_no_such_case";
    for (int ext = 1; ext >= -1; ext -= 2) {
        o.external = ext;
        if (!CHECKED(fr_verify_run_impl(&o, "fast", &r, &err) == FR_OK && r, "%s", err.msg)) continue;
        char *js = NULL;
        CHECK(fr_verify_result_json(r, &js, &err) == FR_OK && fr_verify_result_count(r) == 0, "%s", err.msg);
        cJSON *j = js ? cJSON_Parse(js) : NULL;
        const cJSON *x = j ? cJSON_GetObjectItem(cJSON_GetObjectItem(j, "thresholds"), "external") : NULL;
        CHECK(ext == 1 ? cJSON_IsTrue(x) : cJSON_IsFalse(x), "fast with external %d: %.200s", ext, js ? js : "");
        cJSON_Delete(j);
        fr_verify_free(js);
        fr_verify_result_free(r);
    }
    /* The JSON goes through a temporary file: TMPDIR is honoured, "" means /tmp, one that does not exist fails. */
    CHECK(fr_verify_run_impl(&o, "fast", &r, &err) == FR_OK, "%s", err.msg);
    const char *old = getenv("TMPDIR");
    char *keep = old ? strdup(old) : NULL;
    char gone[600];
    snprintf(gone, sizeof gone, "%s/no-such-dir", g_tmp);
    setenv("TMPDIR", gone, 1);
    char *tj = (char *)"unset";
    fr_status st = fr_verify_result_json(r, &tj, &err);
    CHECK(st == FR_E_IO && !tj && contains(err.msg, "no-such-dir"), "TMPDIR gone: %s: %s", fr_status_name(st), err.msg);
    setenv("TMPDIR", "", 1);
    st = fr_verify_result_json(r, &tj, &err);
    CHECK(st == FR_OK && contains(tj, "flashref-suite-result/1"), "TMPDIR empty: %s", err.msg);
    fr_verify_free(tj);
    if (keep) setenv("TMPDIR", keep, 1);
    else unsetenv("TMPDIR");
    free(keep);
    fr_verify_result_free(r);
    r = NULL;
    o = fr_verify_opts_default();
    CHECK(fr_verify_run_callback(&o, never, &calls, NULL, &err) == FR_E_NULL, "NULL result");
    CHECK(fr_verify_run_impl(&o, NULL, &r, &err) == FR_E_NULL, "NULL impl");
    /* The options that are accepted reach the JSON: an explicit standard and external 0, NULL set (the default). */
    o = fr_verify_opts_default();
    o.set = NULL;
    o.exact = "eq_fp32_bnsd"; /* no such case: an empty result, not an error */
    o.external = 0;
    o.standard = "fa";
    st = fr_verify_run_callback(&o, never, &calls, &r, &err);
    if (CHECKED(st == FR_OK && r, "%s", err.msg)) {
        char *js = NULL;
        CHECK(fr_verify_result_json(r, &js, &err) == FR_OK, "%s", err.msg);
        cJSON *j = js ? cJSON_Parse(js) : NULL;
        const cJSON *th = j ? cJSON_GetObjectItem(j, "thresholds") : NULL;
        CHECK(th && contains(str_of(th, "standard"), "fa") && cJSON_IsFalse(cJSON_GetObjectItem(th, "external")) &&
                  contains(str_of(j, "set"), "default"),
              "standard fa, external 0, set default: %.300s", js ? js : "");
        cJSON_Delete(j);
        fr_verify_free(js);
        fr_verify_result_free(r);
    }
    char *none = NULL;
    CHECK(fr_verify_result_json(NULL, &none, &err) == FR_E_NULL && fr_verify_result_html(NULL, "x", &err) == FR_E_NULL,
          "NULL result to the writers");
    CHECK(fr_verify_result_overall(NULL) == 3 && fr_verify_result_count(NULL) == 0, "NULL result: SKIP, 0 cases");
    CHECK(fr_verify_sizeof(NULL) == 0 && fr_verify_sizeof("fr_verify_opts") == sizeof(fr_verify_opts), "sizeof");

    /* fr_verify_judge_outputs: a small backward, the golden's gradients given as a transposed (strided) view */
    enum { B = 1, N = 2, S = 5, S2 = 6, DD = 4 };
    float q[B * N * S * DD], k[B * N * S2 * DD], v[B * N * S2 * DD], dy[B * N * S * DD];
    for (int i = 0; i < B * N * S * DD; i++) {
        q[i] = (float)((i * 37 % 11) - 5) * 0.1f;
        dy[i] = (float)((i * 13 % 7) - 3) * 0.2f;
    }
    for (int i = 0; i < B * N * S2 * DD; i++) {
        k[i] = (float)((i * 17 % 9) - 4) * 0.1f;
        v[i] = (float)((i * 29 % 13) - 6) * 0.1f;
    }
    fr_params p = fr_params_default();
    p.head_num = N;
    p.input_layout = FR_BNSD;
    fr_fwd_inputs fin;
    memset(&fin, 0, sizeof fin);
    fin.query = fr_tensor_make(FR_F32, q, 4, (int64_t[]){B, N, S, DD});
    fin.key = fr_tensor_make(FR_F32, k, 4, (int64_t[]){B, N, S2, DD});
    fin.value = fr_tensor_make(FR_F32, v, 4, (int64_t[]){B, N, S2, DD});
    float out[B * N * S * DD], mx[B * N * S * 8], sm[B * N * S * 8];
    fr_fwd_outputs fo = {fr_tensor_make(FR_F32, out, 4, (int64_t[]){B, N, S, DD}),
                         fr_tensor_make(FR_F32, mx, 4, (int64_t[]){B, N, S, 8}),
                         fr_tensor_make(FR_F32, sm, 4, (int64_t[]){B, N, S, 8})};
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    if (!CHECKED(fr_fwd(&p, &fin, &fo, &e, &err) == FR_OK, "fwd: %s", err.msg)) return;
    fr_bwd_inputs in = fr_test_bwd_inputs(&fin, fr_tensor_make(FR_F32, dy, 4, (int64_t[]){B, N, S, DD}),
                                          fo.attention_out, fo.softmax_max, fo.softmax_sum);
    float dq[B * N * S * DD], dk[B * N * S2 * DD], dv[B * N * S2 * DD];
    fr_bwd_outputs bo;
    memset(&bo, 0, sizeof bo);
    bo.dq = fr_tensor_make(FR_F32, dq, 4, (int64_t[]){B, N, S, DD});
    bo.dk = fr_tensor_make(FR_F32, dk, 4, (int64_t[]){B, N, S2, DD});
    bo.dv = fr_tensor_make(FR_F32, dv, 4, (int64_t[]){B, N, S2, DD});
    if (!CHECKED(fr_bwd(&p, &in, &bo, &e, &err) == FR_OK, "bwd: %s", err.msg)) return;
    /* dk as a [B,N,S2,D] view of a buffer holding it as [B,N,D,S2] (strides permuted) */
    float dkt[B * N * S2 * DD];
    for (int n = 0; n < N; n++)
        for (int s = 0; s < S2; s++)
            for (int d = 0; d < DD; d++) dkt[(n * DD + d) * S2 + s] = dk[(n * S2 + s) * DD + d];
    fr_bwd_outputs given;
    memset(&given, 0, sizeof given);
    given.dk = fr_tensor_make(FR_F32, dkt, 4, (int64_t[]){B, N, S2, DD});
    given.dk.strides[2] = 1, given.dk.strides[3] = S2;
    char *js = NULL;
    fr_verify_opts jo = fr_verify_opts_default();
    jo.standard = "flashref";
    jo.threads = 1;
    jo.impl_name = "mine";
    st = fr_verify_judge_outputs(FR_VERIFY_BWD, &p, &in, NULL, &given, &jo, &js, &err);
    cJSON *j = js ? cJSON_Parse(js) : NULL;
    CHECK(st == FR_OK && j && contains(str_of(j, "verdict"), "PASS") &&
              cJSON_GetObjectItem(cJSON_GetObjectItem(j, "outputs"), "dk"),
          "bwd, strided golden dk: %s %.300s", err.msg, js ? js : "");
    cJSON_Delete(j);
    fr_verify_free(js);
    dkt[3] += 0.5f; /* one element of dk off: FAIL naming dk */
    st = fr_verify_judge_outputs(FR_VERIFY_BWD, &p, &in, NULL, &given, &jo, &js, &err);
    j = js ? cJSON_Parse(js) : NULL;
    CHECK(st == FR_OK && j && contains(str_of(j, "verdict"), "FAIL") && contains(str_of(j, "why"), "dk"),
          "bwd, dk off: %.300s", js ? js : "");
    cJSON_Delete(j);
    fr_verify_free(js);
    /* error paths: each its status, *json NULL */
    js = (char *)"unset";
    CHECK(fr_verify_judge_outputs(FR_VERIFY_BWD, &p, &in, &fo, NULL, NULL, &js, &err) == FR_E_NULL, "bwd without bwd");
    CHECK(fr_verify_judge_outputs(FR_VERIFY_FWD, &p, &in, NULL, &bo, NULL, &js, &err) == FR_E_NULL, "fwd without fwd");
    CHECK(fr_verify_judge_outputs(FR_VERIFY_FWD, NULL, &in, &fo, NULL, NULL, &js, &err) == FR_E_NULL, "NULL params");
    CHECK(fr_verify_judge_outputs(FR_VERIFY_FWD, &p, NULL, &fo, NULL, NULL, &js, &err) == FR_E_NULL, "NULL inputs");
    CHECK(fr_verify_judge_outputs(FR_VERIFY_FWD, &p, &in, &fo, NULL, NULL, NULL, &err) == FR_E_NULL, "NULL json");
    CHECK(fr_verify_judge_outputs((fr_verify_op)7, &p, &in, &fo, &bo, NULL, &js, &err) == FR_E_INVALID_ARG,
          "op 7: %s", err.msg);
    jo.k_out = 0;
    js = (char *)"unset";
    CHECK(fr_verify_judge_outputs(FR_VERIFY_FWD, &p, &in, &fo, NULL, &jo, &js, &err) == FR_E_INVALID_ARG && !js &&
              contains(err.msg, "k_out"),
          "k_out 0: %s", err.msg);
    jo = fr_verify_opts_default();
    jo.external = 5;
    CHECK(fr_verify_judge_outputs(FR_VERIFY_FWD, &p, &in, &fo, NULL, &jo, &js, &err) == FR_E_INVALID_ARG && !js,
          "external 5");
    fr_bwd_inputs nody = in; /* a backward without dy: the validation's status */
    nody.dy.data = NULL;
    nody.dy.dtype = FR_DT_NONE;
    nody.dy.ndim = 0;
    st = fr_verify_judge_outputs(FR_VERIFY_BWD, &p, &nody, NULL, &bo, NULL, &js, &err);
    CHECK(st != FR_OK && !js, "a backward without dy judged: %s", fr_status_name(st));
    /* output specs: the backward's, NULL pointers, a bad op */
    fr_tensor sp[FR_VERIFY_NUM_OUTPUTS];
    CHECK(fr_verify_output_specs(FR_VERIFY_BWD, &p, &in, sp, &err) == FR_OK && sp[3].dtype == FR_F32 &&
              sp[4].shape[2] == S2 && sp[0].dtype == FR_DT_NONE,
          "bwd specs: %s", err.msg);
    CHECK(fr_verify_output_specs(FR_VERIFY_FWD, NULL, &in, sp, &err) == FR_E_NULL &&
              fr_verify_output_specs(FR_VERIFY_FWD, &p, NULL, sp, &err) == FR_E_NULL &&
              fr_verify_output_specs(FR_VERIFY_FWD, &p, &in, NULL, &err) == FR_E_NULL,
          "NULL params, inputs or outputs");
    CHECK(fr_verify_output_specs((fr_verify_op)3, &p, &in, sp, &err) == FR_E_INVALID_ARG, "op 3");
    /* metrics: a NULL output pointer, a dtype out of range */
    double a4[4] = {1, 2, 3, 4};
    CHECK(fr_verify_metrics_json(a4, a4, 1, 4, FR_F32, NULL, &err) == FR_E_NULL, "metrics NULL json");
    const fr_dtype not_float[] = {(fr_dtype)-3, FR_DTYPE_COUNT, FR_I32, FR_I64, FR_U8, FR_BOOL};
    for (size_t t = 0; t < sizeof not_float / sizeof not_float[0]; t++)
        CHECK(fr_verify_metrics_json(a4, a4, 1, 4, not_float[t], &js, &err) == FR_E_DTYPE && !js, "ulp dtype %d",
              (int)not_float[t]);
    CHECK(fr_verify_metrics_json(a4, a4, -1, 4, FR_F32, &js, &err) != FR_OK && !js, "rows -1 accepted");
    /* a zero reference with a non-zero result: rel-L2 is infinite, written as the string "inf" */
    double z4[4] = {0, 0, 0, 0};
    CHECK(fr_verify_metrics_json(a4, z4, 1, 4, FR_F32, &js, &err) == FR_OK, "%s", err.msg);
    cJSON *mj = js ? cJSON_Parse(js) : NULL;
    CHECK(mj && contains(str_of(mj, "rel_l2"), "inf") && num_of(mj, "max_abs") == 4, "zero reference: %s",
          js ? js : "");
    cJSON_Delete(mj);
    fr_verify_free(js);
    CHECK(fr_verify_metrics_json(a4, a4, 1, 4, FR_DT_NONE, &js, &err) == FR_OK && contains(js, "\"max_ulp\""),
          "no ulp dtype: %s", err.msg);
    fr_verify_free(js);
}

#define TIMED(call)                                                                                                    \
    do {                                                                                                               \
        double t0_ = now_s();                                                                                          \
        call;                                                                                                          \
        printf("%-24s %6.2f s\n", #call, now_s() - t0_);                                                              \
        fflush(stdout);                                                                                                \
    } while (0)

int main(void) {
    const char *t = getenv("TMPDIR");
    snprintf(g_tmp, sizeof g_tmp, "%.400s/fr_verify_api_entry_XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(g_tmp)) {
        perror(g_tmp);
        return 1;
    }
    TIMED(test_names());
    TIMED(test_opts_and_judge());
    TIMED(test_caps());
    TIMED(test_msprobe());
    TIMED(test_order_invariance());
    TIMED(test_seqlen());
    TIMED(test_hunt());
    fr_test_rm_rf(g_tmp);
    return fr_test_exit("test_verify_api_entry");
}
