/* The suite's report files (src/verify/report/report.c: fr_report_json, fr_report_html) on results built by hand,
 * so that every kind of case is in them without running implementations (test_report_text covers the summary, the
 * thresholds and the history):
 *   - every verdict (PASS, WARN, FAIL, SKIP), an input error, an INFO case, a backward case, non-finite metrics
 *     (written "nan" / "inf" / "-inf" in the JSON), the matrix cell, configuration and smallest failing draw;
 *   - the HTML: the INFO table, the cases that did not pass (with their extra line), the worst cases' heat maps over
 *     head-dim columns and, for V = identity cases, over key tiles (more than 8 tiles, cells across a tile edge,
 *     NaN/Inf cells), the row-gain histogram, the error-vs-length plot; the worst V = identity case added when the
 *     four worst are others (failing, or passing); a page with nothing to plot says so;
 *   - paths that cannot be written: a missing folder (FR_E_IO "cannot open for writing"), a directory in the way
 *     (FR_E_IO "write failed: Is a directory (nothing written)"), no temporary file left beside either; a symbolic
 *     link at the path is replaced by the report, never followed (its target keeps its content);
 *   - more than 16 key tiles, a tile holding NaN/Inf, a NaN heat cell, a case without ideal / plain metrics, the
 *     case line of a FAIL with its note and of a PASS without it; history lines with a result that is not a string
 *     and no time;
 *   - a disk that fills (builds with the allocation hook): FR_E_IO "write failed: No space left on device (nothing
 *     written)" with the earlier report kept whole, and the history's earlier lines kept. */
#define _GNU_SOURCE
#include "common/check.h"
#include "common/kit.h"
#include "core/core.h"
#include "verify/report/report.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_tmp[400];

/* The write-fault hook (src/core/alloc_hook.h), present only in a build with -DFR_ALLOC_HOOK=ON: weak, so that this
 * test links without it. */
void fr_fault_write_set(long fail_at) __attribute__((weak));
int fr_fault_write_hit(void) __attribute__((weak));

typedef struct one {
    const char *name;
    fr_suite_cat cat;
    fr_verdict v;
    fr_diag d;
    bool bwd;
    int64_t S2;
    double rel, ratio;
    int heat_rows;   /* 0: no heat map */
    bool vi;         /* a V = identity case (properties, explicit-P note, a key-axis heat map) */
    bool input_error;
    const char *info;
} one;

static fr_suite_result result_of(const one *c, int n) {
    fr_suite_result r;
    memset(&r, 0, sizeof r);
    r.cases = calloc((size_t)n, sizeof *r.cases);
    if (!r.cases) abort();
    r.n = r.planned = n;
    r.seconds = 1.5;
    for (int k = 0; k < n; k++) {
        fr_case_result *x = &r.cases[k];
        snprintf(x->name, sizeof x->name, "%s", c[k].name);
        x->cat = c[k].cat;
        x->bwd = c[k].bwd;
        x->dtype = FR_F16;
        x->S1 = 4;
        x->S2 = c[k].S2;
        x->seconds = 0.01;
        x->j.verdict = c[k].v;
        x->j.diag = c[k].d;
        x->j.ratio = c[k].ratio;
        x->input_error = c[k].input_error;
        snprintf(x->j.why, sizeof x->j.why, "why of %s <b>", c[k].name);
        if (c[k].info) snprintf(x->info, sizeof x->info, "%s", c[k].info);
        if (c[k].v == FR_SKIP) continue;
        fr_out_judgement *o = &x->j.out[c[k].bwd ? FR_CO_DQ : FR_CO_ATTENTION_OUT];
        o->present = true;
        o->m.rel_l2 = c[k].rel;
        o->m.max_abs = c[k].rel * 3;
        o->m.n = 64;
        o->have_ideal = o->have_plain = true;
        o->ideal.rel_l2 = c[k].rel / 2;
        o->plain.rel_l2 = c[k].rel / 3;
        o->x_plain = 3;
        o->x_ideal = 2;
        o->bound_l2 = 1e-2;
        o->ratio = c[k].ratio;
        if (c[k].vi) snprintf(x->extra, sizeof x->extra, "explicit P: 4 rows, max |sum-1| 1e-3");
        if (c[k].heat_rows) {
            x->j.heat_rows = c[k].heat_rows;
            x->j.heat_cols = c[k].vi ? (int)(c[k].S2 < FR_HEAT_C ? c[k].S2 : FR_HEAT_C) : 8;
            for (int i = 0; i < x->j.heat_rows; i++)
                for (int q = 0; q < x->j.heat_cols; q++) x->j.heat[i][q] = (float)(0.5 * (i + q));
        }
    }
    fr_suite_summarize(&r);
    return r;
}

static fr_report_meta g_meta;
static fr_judge_opts g_judge;

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0, k;
    char chunk[4096];
    while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (n + k + 1 > cap) {
            cap = 2 * (n + k + 1);
            char *p = realloc(buf, cap);
            if (!p) break;
            buf = p;
        }
        memcpy(buf + n, chunk, k);
        n += k;
    }
    fclose(f);
    if (buf) buf[n] = 0;
    return buf;
}

static bool has(const char *s, const char *sub) { return s && strstr(s, sub) != NULL; }

/* Entries of g_tmp whose name contains ".tmp-" (a report's temporary file left behind). */
static int temp_files(void) {
    DIR *d = opendir(g_tmp);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strstr(e->d_name, ".tmp-") != NULL;
    if (d) closedir(d);
    return n;
}

static void free_result(fr_suite_result *r) {
    for (int k = 0; k < r->n; k++) free(r->cases[k].j.gains);
    free(r->cases);
}

/* Every kind of case in one result. */
static void test_every_kind(void) {
    static const one kCases[] = {
        {"vi_pass_wide", FR_CAT_PROPERTIES, FR_PASS, FR_DIAG_NONE, false, 600, 1e-4, 0.2, 6, true, false, NULL},
        {"fail_nan", FR_CAT_BOUNDARIES, FR_FAIL, FR_DIAG_NAN, false, 128, 0, INFINITY, 4, false, false, NULL},
        {"warn_prec", FR_CAT_EQUIVALENCE, FR_WARN, FR_DIAG_PRECISION, false, 64, 2e-3, 0.9, 4, false, false, NULL},
        {"skipped", FR_CAT_BOUNDARIES, FR_SKIP, FR_DIAG_NONE, false, 16, 0, 0, 0, false, false, NULL},
        {"grad_pass", FR_CAT_GRADIENTS, FR_PASS, FR_DIAG_NONE, true, 32, 1e-3, 0.1, 0, false, false, NULL},
        {"impldef_info", FR_CAT_IMPLDEF, FR_PASS, FR_DIAG_NONE, false, 48, 5e-4, 0.05, 2, false, false,
         "follows reading C <mask alone>"},
        {"bad_input", FR_CAT_REGRESSION, FR_FAIL, FR_DIAG_INPUT, false, 16, 0, 0, 0, false, true, NULL},
        {"pass_plain", FR_CAT_EQUIVALENCE, FR_PASS, FR_DIAG_NONE, false, 1024, 1e-5, 0.3, 0, false, false, NULL},
    };
    int n = (int)(sizeof kCases / sizeof kCases[0]);
    fr_suite_result r = result_of(kCases, n);
    /* Non-finite metrics, a draw's configuration, its shrunk form, its matrix cell, an extra note, row gains. */
    fr_case_result *f = &r.cases[1];
    f->j.out[FR_CO_ATTENTION_OUT].m.rel_l2 = NAN;
    f->j.out[FR_CO_ATTENTION_OUT].m.max_abs = INFINITY;
    f->j.out[FR_CO_ATTENTION_OUT].m.max_rel = -INFINITY;
    f->j.heat[1][3] = 1e31f; /* NaN/Inf cells */
    snprintf(f->extra, sizeof f->extra, "NaN in 3 rows");
    snprintf(f->config, sizeof f->config, "fwd fp16 BNSD N1 2 D 64 B 1 S1 4 S2 128");
    snprintf(f->smallest, sizeof f->smallest, "fwd fp16 BNSD N1 1 D 16 B 1 S1 1 S2 2");
    f->has_cell = true;
    fr_case_result *v = &r.cases[0];
    v->j.n_gains = 12;
    v->j.gains = malloc(12 * sizeof(double));
    for (int k = 0; k < 12; k++) v->j.gains[k] = 1.0 + 0.01 * (k - 6);
    v->j.heat[2][5] = 40;

    char json[500], html[500];
    snprintf(json, sizeof json, "%s/r.json", g_tmp);
    snprintf(html, sizeof html, "%s/r.html", g_tmp);
    fr_error err;
    CHECK(fr_report_json(json, &r, &g_meta, &err) == FR_OK, "%s", err.msg);
    char *js = slurp(json);
    cJSON *j = js ? cJSON_Parse(js) : NULL;
    if (CHECKED(j, "r.json is not JSON")) {
        const cJSON *cases = cJSON_GetObjectItemCaseSensitive(j, "cases");
        CHECK(cJSON_GetArraySize(cases) == n, "%d cases", cJSON_GetArraySize(cases));
        const cJSON *ov = cJSON_GetObjectItemCaseSensitive(j, "overall");
        CHECK(cJSON_IsString(ov) && !strcmp(ov->valuestring, "FAIL"), "overall");
        const cJSON *c1 = cJSON_GetArrayItem(cases, 1);
        const cJSON *out = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c1, "outputs"),
                                                           "attention_out");
        const cJSON *iut = cJSON_GetObjectItemCaseSensitive(out, "iut");
        const cJSON *rl = cJSON_GetObjectItemCaseSensitive(iut, "rel_l2"), *ma = cJSON_GetObjectItemCaseSensitive(iut, "max_abs"),
                    *mr = cJSON_GetObjectItemCaseSensitive(iut, "max_rel"),
                    *wr = cJSON_GetObjectItemCaseSensitive(c1, "worst_ratio");
        CHECK(cJSON_IsString(rl) && !strcmp(rl->valuestring, "nan") && cJSON_IsString(ma) &&
                  !strcmp(ma->valuestring, "inf") && cJSON_IsString(mr) && !strcmp(mr->valuestring, "-inf") &&
                  cJSON_IsString(wr) && !strcmp(wr->valuestring, "inf"),
              "non-finite metrics: %s", js);
        CHECK(cJSON_GetObjectItemCaseSensitive(out, "ideal") && cJSON_GetObjectItemCaseSensitive(out, "plain"),
              "ideal / plain metrics");
        const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(c1, "configuration"),
                    *sm = cJSON_GetObjectItemCaseSensitive(c1, "smallest_failing"),
                    *cell = cJSON_GetObjectItemCaseSensitive(c1, "matrix_cell"),
                    *ex = cJSON_GetObjectItemCaseSensitive(c1, "extra");
        CHECK(cJSON_IsString(cfg) && has(cfg->valuestring, "S2 128") && cJSON_IsString(sm) &&
                  has(sm->valuestring, "S2 2") && cJSON_IsObject(cell) && cJSON_GetArraySize(cell) == FR_AX_COUNT &&
                  cJSON_IsString(ex) && !strcmp(ex->valuestring, "NaN in 3 rows"),
              "draw fields");
        const cJSON *c5 = cJSON_GetArrayItem(cases, 5), *info = cJSON_GetObjectItemCaseSensitive(c5, "info");
        CHECK(cJSON_IsString(info) && !strcmp(info->valuestring, "follows reading C <mask alone>"), "info");
        const cJSON *c4 = cJSON_GetArrayItem(cases, 4), *op = cJSON_GetObjectItemCaseSensitive(c4, "op");
        CHECK(cJSON_IsString(op) && !strcmp(op->valuestring, "bwd") &&
                  cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c4, "outputs"), "dq"),
              "backward case");
        const cJSON *c3 = cJSON_GetArrayItem(cases, 3);
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(c3, "outputs")) == 0 &&
                  !cJSON_GetObjectItemCaseSensitive(c3, "matrix_cell") && !cJSON_GetObjectItemCaseSensitive(c3, "info"),
              "a SKIP has no outputs");
        const cJSON *sum = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "summary"),
                                                           "boundaries");
        const cJSON *nf = cJSON_GetObjectItemCaseSensitive(sum, "FAIL"), *ns = cJSON_GetObjectItemCaseSensitive(sum, "SKIP");
        CHECK(cJSON_IsNumber(nf) && nf->valuedouble == 1 && cJSON_IsNumber(ns) && ns->valuedouble == 1, "summary");
    }
    cJSON_Delete(j);
    free(js);

    CHECK(fr_report_html(html, &r, &g_meta, &err) == FR_OK, "%s", err.msg);
    char *h = slurp(html);
    CHECK(has(h, "<h1>flashref verification: <span class=FAIL>FAIL</span></h1>") &&
              has(h, "Likeliest cause: <b>nan</b>"),
          "title");
    CHECK(has(h, "Implementation-defined points") && has(h, "INFO: follows reading C &lt;mask alone&gt;"), "INFO");
    CHECK(has(h, "<td class=FAIL>FAIL</td><td>fail_nan</td>") && has(h, "NaN in 3 rows") &&
              has(h, "<td class=WARN>WARN</td><td>warn_prec</td>") && has(h, "why of warn_prec &lt;b&gt;"),
          "cases that did not pass");
    CHECK(has(h, "NaN/Inf (red)") && has(h, "head-dim column (Dv)"), "the failing case's map");
    CHECK(has(h, "tile 0 (keys 0-63)") && has(h, "... 10 tiles in all") && has(h, "* a cell spans a tile edge") &&
              has(h, "cells of ~38 keys") && has(h, "V = identity: column j = key j"),
          "the V = identity map over key tiles");
    CHECK(has(h, "row gain (12 rows;") && has(h, "no row gains") && has(h, "no attention_out to map"),
          "histogram / empty map");
    CHECK(has(h, "<title>error vs sequence length</title>") && has(h, "vi_pass_wide fp16 rel-L2"), "length plot");
    CHECK(has(h, "<td class=SKIP>SKIP</td><td>skipped</td>") && has(h, "</table></body></html>"), "all cases");
    free(h);
    free_result(&r);
    CHECK(temp_files() == 0, "temporary files left");
}

/* The four worst are failing non-V = identity cases: the worst failing V = identity case is added; a page whose V =
 * identity case passed adds it as passed; a page with nothing bad or plottable. */
static void test_worst_vi(void) {
    fr_error err;
    char html[500];
    snprintf(html, sizeof html, "%s/vi.html", g_tmp);
    static const one kBad[] = {
        {"f1", FR_CAT_BOUNDARIES, FR_FAIL, FR_DIAG_TILE_TAIL, false, 65, 0.5, 50, 4, false, false, NULL},
        {"f2", FR_CAT_BOUNDARIES, FR_FAIL, FR_DIAG_TILE_TAIL, false, 129, 0.4, 40, 4, false, false, NULL},
        {"f3", FR_CAT_BOUNDARIES, FR_FAIL, FR_DIAG_TILE_TAIL, false, 257, 0.3, 30, 4, false, false, NULL},
        {"f4", FR_CAT_BOUNDARIES, FR_WARN, FR_DIAG_PRECISION, false, 33, 0.2, 20, 4, false, false, NULL},
        {"vi_fail", FR_CAT_PROPERTIES, FR_FAIL, FR_DIAG_STALE_MAX, false, 8, 0.1, 10, 4, true, false, NULL},
    };
    fr_suite_result r = result_of(kBad, 5);
    CHECK(fr_report_html(html, &r, &g_meta, &err) == FR_OK, "%s", err.msg);
    char *h = slurp(html);
    CHECK(has(h, "Added: the worst V = identity case: where the error sits over key tiles.") &&
              has(h, "cells of 1 key</text>") && !has(h, "a cell spans a tile edge"),
          "failing V = identity case added");
    free(h);
    free_result(&r);

    static const one kPass[] = {
        {"p1", FR_CAT_EQUIVALENCE, FR_PASS, FR_DIAG_NONE, false, 64, 1e-3, 0.5, 4, false, false, NULL},
        {"p2", FR_CAT_EQUIVALENCE, FR_PASS, FR_DIAG_NONE, false, 64, 1e-3, 0.4, 4, false, false, NULL},
        {"p3", FR_CAT_EQUIVALENCE, FR_PASS, FR_DIAG_NONE, false, 64, 1e-3, 0.3, 4, false, false, NULL},
        {"p4", FR_CAT_EQUIVALENCE, FR_PASS, FR_DIAG_NONE, false, 64, 1e-3, 0.25, 4, false, false, NULL},
        {"vi_pass", FR_CAT_PROPERTIES, FR_PASS, FR_DIAG_NONE, false, 130, 1e-4, 0.1, 4, true, false, NULL},
    };
    r = result_of(kPass, 5);
    CHECK(fr_report_html(html, &r, &g_meta, &err) == FR_OK, "%s", err.msg);
    h = slurp(html);
    CHECK(has(h, "<h1>flashref verification: <span class=PASS>PASS</span></h1>") && !has(h, "Likeliest cause") &&
              has(h, "<p>None.</p>") && has(h, "Added: the worst V = identity case (it passed)"),
          "passing V = identity case added");
    free(h);
    free_result(&r);

    static const one kNone[] = {
        {"zero", FR_CAT_EQUIVALENCE, FR_PASS, FR_DIAG_NONE, false, 64, 0, 0, 0, false, false, NULL},
        {"skip", FR_CAT_EQUIVALENCE, FR_SKIP, FR_DIAG_NONE, false, 64, 0, 0, 0, false, false, NULL},
    };
    r = result_of(kNone, 2);
    CHECK(fr_report_html(html, &r, &g_meta, &err) == FR_OK, "%s", err.msg);
    h = slurp(html);
    CHECK(has(h, "no forward cases with a nonzero error") && has(h, "no attention_out to map") &&
              !has(h, "Implementation-defined points"),
          "nothing to plot");
    free(h);
    free_result(&r);
}

static void test_paths(void) {
    static const one kOne[] = {
        {"p", FR_CAT_EQUIVALENCE, FR_PASS, FR_DIAG_NONE, false, 64, 1e-3, 0.5, 4, false, false, NULL},
    };
    fr_suite_result r = result_of(kOne, 1);
    fr_error err;
    char p[600];
    /* A missing folder. */
    snprintf(p, sizeof p, "%s/missing/r.json", g_tmp);
    CHECK(fr_report_json(p, &r, &g_meta, &err) == FR_E_IO && has(err.msg, "cannot open for writing: No such file"),
          "%s", err.msg);
    snprintf(p, sizeof p, "%s/missing/r.html", g_tmp);
    CHECK(fr_report_html(p, &r, &g_meta, &err) == FR_E_IO && has(err.msg, "cannot open for writing: No such file"),
          "%s", err.msg);
    /* A directory in the way: written in full, then refused at the rename; nothing left beside it. */
    snprintf(p, sizeof p, "%s/a_dir", g_tmp);
    CHECK(mkdir(p, 0755) == 0);
    CHECK(fr_report_json(p, &r, &g_meta, &err) == FR_E_IO &&
              has(err.msg, "write failed: Is a directory (nothing written)"),
          "%s", err.msg);
    CHECK(fr_report_html(p, &r, &g_meta, &err) == FR_E_IO &&
              has(err.msg, "write failed: Is a directory (nothing written)"),
          "%s", err.msg);
    CHECK(temp_files() == 0, "temporary files left after refusals");
    /* A symbolic link at the path: replaced by the report, its target untouched. */
    char target[600], link[600];
    snprintf(target, sizeof target, "%s/target.txt", g_tmp);
    snprintf(link, sizeof link, "%s/link.json", g_tmp);
    FILE *f = fopen(target, "w");
    if (f) fputs("keep me\n", f), fclose(f);
    CHECK(symlink(target, link) == 0);
    CHECK(fr_report_json(link, &r, &g_meta, &err) == FR_OK, "%s", err.msg);
    struct stat sb;
    CHECK(lstat(link, &sb) == 0 && S_ISREG(sb.st_mode), "the link is still a link");
    char *t = slurp(target), *l = slurp(link);
    CHECK(t && !strcmp(t, "keep me\n"), "the link's target was written: %.40s", t ? t : "");
    CHECK(has(l, "\"format\":\t\"flashref-suite-result/1\""), "report: %.60s", l ? l : "");
    free(t);
    free(l);
    free_result(&r);
}


/* Odd cases on the page: more than 16 key tiles (numbered every other one), a tile holding NaN/Inf, a NaN heat cell,
 * a case without ideal / plain metrics, an empty key axis; the case line of a FAIL with its note and of a PASS. */
static void test_odd_cases(void) {
    static const one kOdd[] = {
        {"vi_long", FR_CAT_PROPERTIES, FR_FAIL, FR_DIAG_STALE_MAX, false, 1100, 0.2, 9, 4, true, false, NULL},
        {"no_refs", FR_CAT_EQUIVALENCE, FR_PASS, FR_DIAG_NONE, false, 64, 1e-3, 0.5, 4, false, false, NULL},
        {"no_keys", FR_CAT_BOUNDARIES, FR_PASS, FR_DIAG_NONE, false, 0, 1e-3, 0.1, 0, false, false, NULL},
    };
    fr_suite_result r = result_of(kOdd, 3);
    r.cases[0].j.heat[0][0] = 1e31f; /* tile 0: NaN/Inf */
    r.cases[0].j.heat[1][2] = NAN;
    fr_out_judgement *o = &r.cases[1].j.out[FR_CO_ATTENTION_OUT];
    o->have_ideal = o->have_plain = false;
    o->ideal.rel_l2 = 0;
    fr_error err;
    char json[500], html[500];
    snprintf(json, sizeof json, "%s/odd.json", g_tmp);
    snprintf(html, sizeof html, "%s/odd.html", g_tmp);
    CHECK(fr_report_html(html, &r, &g_meta, &err) == FR_OK, "%s", err.msg);
    char *h = slurp(html);
    CHECK(has(h, "... 18 tiles in all") && has(h, "text-anchor=middle>16</text>") &&
              !has(h, "text-anchor=middle>15</text>") && has(h, "tile 0 (keys 0-63): NaN/Inf</text>"),
          "18 key tiles");
    free(h);
    CHECK(fr_report_json(json, &r, &g_meta, &err) == FR_OK, "%s", err.msg);
    char *js = slurp(json);
    cJSON *j = js ? cJSON_Parse(js) : NULL;
    const cJSON *c1 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "cases"), 1);
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c1, "outputs"),
                                                       "attention_out");
    CHECK(out && cJSON_GetObjectItemCaseSensitive(out, "iut") && !cJSON_GetObjectItemCaseSensitive(out, "ideal") &&
              !cJSON_GetObjectItemCaseSensitive(out, "plain"),
          "no ideal / plain: %.200s", js ? js : "");
    cJSON_Delete(j);
    free(js);
    /* Case lines. */
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    snprintf(r.cases[0].extra, sizeof r.cases[0].extra, "explicit P: a note");
    snprintf(r.cases[1].extra, sizeof r.cases[1].extra, "a note of a PASS");
    fr_report_case_line(f, &r.cases[0]);
    fr_report_case_line(f, &r.cases[1]);
    fclose(f);
    CHECK(buf && has(buf, "FAIL  vi_long") && has(buf, "[properties] stale-max: why of vi_long") &&
              has(buf, "      explicit P: a note\n") && has(buf, "PASS  no_refs") && has(buf, "] ok: why of no_refs") &&
              !has(buf, "a note of a PASS"),
          "case lines:\n%s", buf ? buf : "");
    free(buf);
    free_result(&r);
}

/* History lines of the same implementation and set: a result that is not a string, no time. */
static void test_history_odd(void) {
    char path[500];
    snprintf(path, sizeof path, "%s/history.jsonl", g_tmp);
    FILE *f = fopen(path, "w");
    if (!CHECKED(f != NULL)) return;
    fprintf(f, "{\"impl\":\"callback <x>\",\"set\":\"quick\",\"results\":{\"kept\":\"PASS\",\"odd\":3}}\n");
    fclose(f);
    static const one kNow[] = {
        {"kept", FR_CAT_EQUIVALENCE, FR_PASS, FR_DIAG_NONE, false, 64, 1e-3, 0.5, 4, false, false, NULL},
    };
    fr_suite_result r = result_of(kNow, 1);
    char *buf = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&buf, &n);
    fr_error err;
    fr_status st = fr_report_history(path, m, &r, &g_meta, &err);
    fclose(m);
    CHECK(st == FR_OK && has(buf, "history: changes since the last run of callback <x> on set quick (?):") &&
              has(buf, "  removed  odd") && has(buf, "(was ?)") && !has(buf, "kept"),
          "%s: %s", err.msg, buf ? buf : "");
    free(buf);
    free_result(&r);
}

/* A disk that fills while a report is written: FR_E_IO "write failed: No space left on device (nothing written)", the
 * earlier report kept whole; the history keeps its earlier lines. */
static void test_disk_full(void) {
    if (!fr_fault_write_set || !fr_fault_write_hit) {
        printf("SKIP disk full: built without -DFR_ALLOC_HOOK=ON\n");
        return;
    }
    static const one kOne[] = {
        {"p", FR_CAT_EQUIVALENCE, FR_PASS, FR_DIAG_NONE, false, 64, 1e-3, 0.5, 4, false, false, NULL},
    };
    fr_suite_result r = result_of(kOne, 1);
    fr_error err;
    char p[500];
    for (int html = 0; html < 2; html++) {
        snprintf(p, sizeof p, "%s/full.%s", g_tmp, html ? "html" : "json");
        FILE *f = fopen(p, "w");
        if (f) fputs("the earlier report\n", f), fclose(f);
        fr_fault_write_set(1);
        fr_status st = html ? fr_report_html(p, &r, &g_meta, &err) : fr_report_json(p, &r, &g_meta, &err);
        int hit = fr_fault_write_hit();
        fr_fault_write_set(0);
        CHECK(hit && st == FR_E_IO && has(err.msg, "write failed: No space left on device (nothing written)"),
              "%s: %s", html ? "html" : "json", err.msg);
        char *t = slurp(p);
        CHECK(t && !strcmp(t, "the earlier report\n"), "the earlier report changed: %.40s", t ? t : "");
        free(t);
    }
    CHECK(temp_files() == 0, "temporary files left");
    snprintf(p, sizeof p, "%s/full.jsonl", g_tmp);
    FILE *f = fopen(p, "w");
    if (f) fputs("{\"impl\":\"other\"}\n", f), fclose(f);
    char *buf = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&buf, &n);
    fr_fault_write_set(1);
    fr_status st = fr_report_history(p, m, &r, &g_meta, &err);
    int hit = fr_fault_write_hit();
    fr_fault_write_set(0);
    fclose(m);
    free(buf);
    char *t = slurp(p);
    CHECK(hit && st == FR_E_IO && has(err.msg, "cannot append: No space left on device (the file is kept as it was)") &&
              t && !strcmp(t, "{\"impl\":\"other\"}\n"),
          "history: %s; file %s", err.msg, t ? t : "");
    free(t);
    free_result(&r);
}

int main(void) {
    const char *t = getenv("TMPDIR");
    snprintf(g_tmp, sizeof g_tmp, "%.300s/fr_report_files_XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(g_tmp)) {
        perror("mkdtemp");
        return 1;
    }
    g_judge = fr_judge_opts_default();
    g_meta = (fr_report_meta){"callback <x>", "quick", 5, &g_judge};
    test_every_kind();
    test_worst_vi();
    test_paths();
    test_odd_cases();
    test_history_odd();
    test_disk_full();
    fr_test_rm_rf(g_tmp);
    return fr_test_exit("test_report_files");
}
