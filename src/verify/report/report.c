/* Reports (report.h). JSON through cJSON; the HTML page is hand-written with inline SVG (no scripts, no external
 * resources), so it renders anywhere, including headless Chromium. */
#define _POSIX_C_SOURCE 200809L
#include "verify/report/report.h"

#include "core/cleanup.h"
#include "core/core.h"
#include "io/io_util.h"
#include "verify/report/coverage.h"
#include "verify/report/text.h"

#include <cjson/cJSON.h>
#include "io/json_checked.h" /* after cJSON.h: every add checked */
#include <float.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* One threshold line: the rule, then its option in a column of its own (printf-formatted rule).
 * Alike verify/iut/caps.c:bad: kept apart because only the varargs-into-a-buffer lines are alike: this prints a
 * report's line, that turns a capability file's fault into an error status (another room). */
static void thr_line(FILE *f, const char *opt, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void thr_line(FILE *f, const char *opt, const char *fmt, ...) {
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(f, "  %-84s %s\n", buf, opt);
}

void fr_report_thresholds(FILE *f, const fr_judge_opts *o) {
    fprintf(f, "standard: %s [--standard flashref|ascend-L0|ascend-L1|ascend-L2|fa]\n", fr_standard_name(o->standard));
    fprintf(f, "thresholds (override with the options in brackets; ref = max(plain reference's, ideal pipeline's)):\n");
    if (o->standard == FR_STD_FLASHREF) {
        thr_line(f, "[--k-out]", "FAIL attention_out rel-L2 > %g x max(ref, u/4 of the out dtype)", o->k_out);
        thr_line(f, "[--k-max]", "FAIL attention_out max abs > %g x max(ref, 1 ulp), or > the proved bound", o->k_max);
        thr_line(f, "[--k-grad]", "FAIL gradient rel-L2 > %g x max(ref, u/4 of the dtype)", o->k_grad);
        thr_line(f, "[--warn-frac]", "WARN a rel-L2 above %g of its FAIL bound (outputs of >= 1024 elements)",
                 o->warn_frac);
    } else if (o->standard == FR_STD_FA) {
        fprintf(f, "  FAIL max abs error > 2 x the plain reference's (3 x for gradients) + 1 ulp (FlashAttention)\n");
    } else {
        static const double lim[3][3] = {{10, 2, 2}, {5, 1.5, 1.5}, {2, 1.2, 1.2}};
        const double *L = lim[o->standard - FR_STD_ASCEND_L0];
        fprintf(f, "  FAIL max-rel / mean-rel / RMSE error over the plain reference's > %g / %g / %g, or mean rel\n"
                   "       error above the dtype's threshold (fp16 2^-10, bf16 2^-7, fp32 2^-13) (Ascend dual benchmark)\n",
                L[0], L[1], L[2]);
    }
    thr_line(f, "[--k-stats]", "FAIL softmax max/sum rel error > %g x ref (floors 2^-20 / 2^-18)", o->k_stats);
    thr_line(f, "[--gain-warn]", "WARN row-gain rms > %g x noise floor and > %g x the ideal's and the plain's gain rms",
             o->gain_warn, o->gain_warn);
    thr_line(f, "[--growth-warn]", "WARN error / ideal's error growing > %g x along a length series", o->growth_warn);
    fprintf(f, "  fully masked rows: %s\n",
            o->external ? "implementation-defined (finite required, not compared; spec D1)"
                        : "must follow D1 exactly (out 0, max -FLT_MAX, sum FLT_MAX)");
}

void fr_report_case_line(FILE *f, const fr_case_result *c) {
    fprintf(f, "%-4s  %-34s [%s] %s: %s\n", fr_verdict_name(c->j.verdict), c->name, fr_suite_cat_name(c->cat),
            c->j.verdict == FR_PASS ? "ok" : fr_diag_name(c->j.diag), c->j.why);
    if (c->extra[0] && c->j.verdict != FR_PASS) fprintf(f, "      %s\n", c->extra);
}

void fr_report_summary(FILE *f, const fr_suite_result *r, const fr_report_meta *m) {
    static const fr_suite_cat order[] = {FR_CAT_REGRESSION, FR_CAT_BOUNDARIES, FR_CAT_EQUIVALENCE, FR_CAT_PROPERTIES,
                                         FR_CAT_ORDER,      FR_CAT_GRADIENTS,  FR_CAT_DETERMINISM, FR_CAT_IMPLDEF};
    fprintf(f, "\n================ flashref verification summary ================\n");
    fprintf(f, "implementation: %s   set: %s   seed: %llu   cases: %d   time: %.1f s\n", m->impl, m->set,
            (unsigned long long)m->seed, r->n, r->seconds);
    fprintf(f, "%-23s %9s %6s %6s %6s   %s\n", "category", "passed", "warn", "fail", "skip", "result");
    int tot[4] = {0, 0, 0, 0};
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        const int *c = r->count[order[k]];
        int judged = c[FR_PASS] + c[FR_WARN] + c[FR_FAIL];
        char pt[32];
        snprintf(pt, sizeof pt, "%d/%d", c[FR_PASS], judged);
        const char *res = judged + c[FR_SKIP] == 0 ? "(no cases)"
                          : c[FR_FAIL]             ? "FAIL"
                          : c[FR_WARN]             ? "WARN"
                          : judged                 ? "PASS"
                                                   : "SKIP";
        fprintf(f, "%-23s %9s %6d %6d %6d   %s\n", fr_suite_cat_name(order[k]), pt, c[FR_WARN], c[FR_FAIL], c[FR_SKIP],
                res);
        for (int v = 0; v < 4; v++)
            tot[v] += c[v];
    }
    char pt[32];
    snprintf(pt, sizeof pt, "%d/%d", tot[FR_PASS], tot[FR_PASS] + tot[FR_WARN] + tot[FR_FAIL]);
    fprintf(f, "%-23s %9s %6d %6d %6d   %s\n", "total", pt, tot[FR_WARN], tot[FR_FAIL], tot[FR_SKIP],
            fr_verdict_name(r->overall));
    /* Implementation-defined points: which reading the implementation follows (never a verdict). */
    for (int k = 0; k < r->n; k++)
        if (r->cases[k].info[0]) fprintf(f, "INFO  %s: %s\n", r->cases[k].name, r->cases[k].info);
    fprintf(f, "conclusion: %s", fr_verdict_name(r->overall));
    switch (r->overall) {
    case FR_PASS: fprintf(f, ": every judged case is within its bounds\n"); break;
    case FR_WARN:
        fprintf(f, ": correct within bounds, with precision defects (likeliest: %s: %s)\n", fr_diag_name(r->primary),
                fr_diag_text(r->primary));
        break;
    case FR_FAIL:
        if (r->input_errors) /* the case (or its stored golden) was at fault, not the implementation */
            fprintf(f, ": %d case(s) could not be used (input errors: see their lines)%s", r->input_errors,
                    tot[FR_FAIL] > r->input_errors ? "; " : "\n");
        if (tot[FR_FAIL] > r->input_errors)
            fprintf(f, "%d case(s) failed; likeliest cause: %s: %s\n", tot[FR_FAIL] - r->input_errors,
                    fr_diag_name(r->primary), fr_diag_text(r->primary));
        break;
    default: fprintf(f, ": nothing was judged (every case skipped)\n"); break;
    }
    fprintf(f, "================================================================\n");
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* JSON */

/* ---------------------------------------------------------------------------------------------------------------- */
/* Report files are written whole or not at all: into a fresh temporary file beside the path, renamed over it only
 * once every byte is written and flushed, so a full disk, an unwritable path found half-way or an interrupted run
 * leaves the old report (or none), never half of one. */
typedef struct report_out {
    FILE *f;
    char tmp[4200];
    const char *path;
    int slot; /* the temporary file's slot in core/cleanup.h's table: removed on SIGINT/SIGTERM */
} report_out;

static fr_status report_open(report_out *o, const char *path, fr_error *err) {
    o->path = path;
    o->f = NULL;
    snprintf(o->tmp, sizeof o->tmp, "%.4000s.tmp-XXXXXX", path);
    int fd = mkstemp(o->tmp);
    if (fd < 0) return fr_fail(err, FR_E_IO, "%s: cannot open for writing: %s", path, strerror(errno));
    fchmod(fd, 0644); /* mkstemp's 0600 would hide the report from the rest of the team */
    o->slot = fr_cleanup_add_file(o->tmp);
    if (!(o->f = fdopen(fd, "w"))) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        fr_cleanup_drop(o->slot);
        return e == ENOMEM ? fr_fail(err, FR_E_NOMEM, "%s: out of memory", path)
                           : fr_fail(err, FR_E_IO, "%s: cannot open for writing: %s", path, strerror(e));
    }
    return FR_OK;
}

/* ok: the content is complete (no write failed so far). Renames on success, removes the temporary file otherwise;
 * st: the status to return when ok was false (a failure already described in err). */
static fr_status report_close(report_out *o, bool ok, fr_status st, fr_error *err) {
    ok = !ferror(o->f) && fflush(o->f) == 0 && fsync(fileno(o->f)) == 0 && ok;
    int e = errno;
    ok = fclose(o->f) == 0 && ok;
    if (ok && rename(o->tmp, o->path) == 0) {
        fr_cleanup_drop(o->slot);
        return FR_OK;
    }
    if (ok) e = errno;
    unlink(o->tmp);
    fr_cleanup_drop(o->slot);
    if (st != FR_OK) return st;
    return fr_fail(err, FR_E_IO, "%s: write failed: %s (nothing written)", o->path, strerror(e ? e : EIO));
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* JSON */

static cJSON *num(double v) {
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateString(isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

/* Alike report.c:metrics_json (its rows, to one another): kept apart because each row is one fr_metrics field under
 * its JSON name: data, not logic. */
static cJSON *metrics_json(const fr_metrics *m) {
    const struct {
        const char *key;
        double v;
    } f[] = { /* every fr_metrics field under its JSON name, in the format's order */
        {"n", (double)m->n},
        {"n_anomaly", (double)m->n_anomaly},
        {"n_anomaly_mismatch", (double)m->n_anomaly_mismatch},
        {"max_abs", m->max_abs},
        {"max_rel", m->max_rel},
        {"mean_rel", m->mean_rel},
        {"rel_l2", m->rel_l2},
        {"nmse", m->nmse},
        {"cos_diff", m->cos_diff},
        {"max_ulp", m->max_ulp},
        {"gain_rms", m->gain_rms},
        {"gain_max", m->gain_max},
        {"gain_mean", m->gain_mean},
        {"noise_floor", m->noise_floor},
        {"gain_over_floor", m->gain_over_floor},
    };
    cJSON *o = cJSON_CreateObject();
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) cJSON_AddItemToObject(o, f[k].key, num(f[k].v));
    return o;
}

cJSON *fr_report_case_json(const fr_case_result *c) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", c->name);
    cJSON_AddStringToObject(o, "category", fr_suite_cat_name(c->cat));
    cJSON_AddStringToObject(o, "verdict", fr_verdict_name(c->j.verdict));
    cJSON_AddStringToObject(o, "diagnosis", fr_diag_name(c->j.diag));
    cJSON_AddStringToObject(o, "why", c->j.why);
    if (c->info[0]) cJSON_AddStringToObject(o, "info", c->info);
    if (c->extra[0]) cJSON_AddStringToObject(o, "extra", c->extra);
    if (c->config[0]) cJSON_AddStringToObject(o, "configuration", c->config);
    if (c->smallest[0]) cJSON_AddStringToObject(o, "smallest_failing", c->smallest);
    if (c->has_cell) {
        cJSON *cell = cJSON_CreateObject();
        const fr_axis *ax = fr_matrix_axes();
        for (int a = 0; a < FR_AX_COUNT; a++) cJSON_AddStringToObject(cell, ax[a].name, ax[a].values[c->cell[a]]);
        cJSON_AddItemToObject(o, "matrix_cell", cell);
    }
    cJSON_AddStringToObject(o, "op", c->bwd ? "bwd" : "fwd");
    cJSON_AddStringToObject(o, "dtype", fr_dtype_name(c->dtype));
    cJSON_AddItemToObject(o, "S1", num((double)c->S1));
    cJSON_AddItemToObject(o, "S2", num((double)c->S2));
    cJSON_AddItemToObject(o, "tags", num((double)c->tags));
    cJSON_AddItemToObject(o, "fully_masked_rows", num((double)c->j.d1_rows));
    cJSON_AddItemToObject(o, "worst_ratio", num(c->j.ratio));
    cJSON_AddItemToObject(o, "seconds", num(c->seconds));
    cJSON *outs = cJSON_CreateObject();
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        const fr_out_judgement *oj = &c->j.out[k];
        if (!oj->present) continue;
        cJSON *t = cJSON_CreateObject();
        cJSON_AddItemToObject(t, "iut", metrics_json(&oj->m));
        if (oj->have_ideal) cJSON_AddItemToObject(t, "ideal", metrics_json(&oj->ideal));
        if (oj->have_plain) cJSON_AddItemToObject(t, "plain", metrics_json(&oj->plain));
        cJSON_AddItemToObject(t, "x_plain", num(oj->x_plain));
        cJSON_AddItemToObject(t, "x_ideal", num(oj->x_ideal));
        /* msprobe-style columns */
        cJSON *ms = cJSON_CreateObject();
        cJSON_AddItemToObject(ms, "cosine", num(1.0 - oj->m.cos_diff));
        cJSON_AddItemToObject(ms, "max_abs", num(oj->m.max_abs));
        cJSON_AddItemToObject(ms, "max_rel", num(oj->m.max_rel));
        cJSON_AddItemToObject(ms, "frac_rel_above_1e-3", num(oj->frac_1e3));
        cJSON_AddItemToObject(ms, "frac_rel_above_5e-3", num(oj->frac_5e3));
        cJSON_AddItemToObject(t, "msprobe", ms);
        cJSON_AddItemToObject(t, "bound_rel_l2", num(oj->bound_l2));
        cJSON_AddItemToObject(t, "bound_abs", num(oj->bound_abs));
        cJSON_AddItemToObject(t, "apriori_abs", num(oj->apriori_abs));
        cJSON_AddItemToObject(t, "ratio", num(oj->ratio));
        cJSON_AddItemToObject(outs, fr_case_output_name((fr_case_output)k), t);
    }
    cJSON_AddItemToObject(o, "outputs", outs);
    return o;
}

fr_status fr_report_json(const char *path, const fr_suite_result *r, const fr_report_meta *m, fr_error *err) {
    fr_json_clear();
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "flashref-suite-result/1");
    cJSON_AddStringToObject(root, "impl", m->impl);
    cJSON_AddStringToObject(root, "set", m->set);
    cJSON_AddItemToObject(root, "seed", num((double)m->seed));
    cJSON_AddStringToObject(root, "version", fr_version());
    cJSON_AddStringToObject(root, "overall", fr_verdict_name(r->overall));
    cJSON_AddStringToObject(root, "primary_diagnosis", fr_diag_name(r->primary));
    cJSON_AddItemToObject(root, "seconds", num(r->seconds));
    cJSON *th = cJSON_CreateObject();
    cJSON_AddItemToObject(th, "k_out", num(m->judge->k_out));
    cJSON_AddItemToObject(th, "k_max", num(m->judge->k_max));
    cJSON_AddItemToObject(th, "k_grad", num(m->judge->k_grad));
    cJSON_AddItemToObject(th, "k_stats", num(m->judge->k_stats));
    cJSON_AddItemToObject(th, "gain_warn", num(m->judge->gain_warn));
    cJSON_AddItemToObject(th, "warn_frac", num(m->judge->warn_frac));
    cJSON_AddStringToObject(th, "standard", fr_standard_name(m->judge->standard));
    cJSON_AddItemToObject(th, "growth_warn", num(m->judge->growth_warn));
    cJSON_AddBoolToObject(th, "external", m->judge->external);
    cJSON_AddItemToObject(root, "thresholds", th);
    cJSON *sum = cJSON_CreateObject();
    for (int k = 0; k < FR_CAT_COUNT; k++) {
        cJSON *c = cJSON_CreateObject();
        for (int v = 0; v < 4; v++)
            cJSON_AddItemToObject(c, fr_verdict_name((fr_verdict)v), num(r->count[k][v]));
        cJSON_AddItemToObject(sum, fr_suite_cat_name((fr_suite_cat)k), c);
    }
    cJSON_AddItemToObject(root, "summary", sum);
    cJSON *cases = cJSON_CreateArray();
    for (int k = 0; k < r->n; k++)
        cJSON_AddItemToArray(cases, fr_report_case_json(&r->cases[k]));
    cJSON_AddItemToObject(root, "cases", cases);
    fr_coverage_report cov;
    fr_status cst = fr_coverage_report_of(r, &cov, NULL);
    if (cst == FR_OK) {
        cJSON_AddItemToObject(root, "coverage", (cJSON *)fr_coverage_json(&cov));
        fr_coverage_report_free(&cov);
    } else if (cst == FR_E_NOMEM) {
        fr_json_made(NULL); /* the coverage section is part of the answer */
    }
    char *txt = fr_json_failed() ? NULL : cJSON_Print(root);
    if (txt) txt = fr_report_json_utf8(txt);
    cJSON_Delete(root);
    if (!txt) return fr_fail(err, FR_E_NOMEM, "%s: out of memory", path);
    report_out o;
    fr_status st = report_open(&o, path, err);
    if (st != FR_OK) {
        free(txt);
        return st;
    }
    bool ok = fputs(txt, o.f) >= 0 && fputc('\n', o.f) != EOF;
    free(txt);
    return report_close(&o, ok, FR_OK, err);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* History */

fr_status fr_report_history(const char *path, FILE *out, const fr_suite_result *r, const fr_report_meta *m,
                            fr_error *err) {
    cJSON *last = NULL;
    FILE *f = fopen(path, "r");
    if (!f && errno == ENOMEM) return fr_fail(err, FR_E_NOMEM, "history: %s: out of memory", path);
    if (f) {
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        bool nomem = false;
        while ((errno = 0, len = getline(&line, &cap, f)) > 0) {
            cJSON *j = cJSON_Parse(line);
            /* A line that is not JSON is skipped (a hand-edited file); one cJSON had no memory for stops the run:
             * skipped, its run would silently drop out of the comparison. */
            if (!j && fr_io_json_syntax_ok(line)) {
                nomem = true;
                break;
            }
            if (!j) continue;
            const cJSON *im = cJSON_GetObjectItemCaseSensitive(j, "impl"),
                        *st = cJSON_GetObjectItemCaseSensitive(j, "set");
            if (cJSON_IsString(im) && cJSON_IsString(st) && !strcmp(im->valuestring, m->impl) &&
                !strcmp(st->valuestring, m->set)) {
                cJSON_Delete(last);
                last = j;
            } else {
                cJSON_Delete(j);
            }
        }
        nomem = nomem || (len < 0 && errno == ENOMEM);
        free(line);
        fclose(f);
        if (nomem) {
            cJSON_Delete(last);
            return fr_fail(err, FR_E_NOMEM, "history: %s: out of memory reading the earlier runs", path);
        }
    }
    if (last) {
        const cJSON *res = cJSON_GetObjectItemCaseSensitive(last, "results");
        const cJSON *when = cJSON_GetObjectItemCaseSensitive(last, "time");
        int changed = 0;
        fprintf(out, "history: changes since the last run of %s on set %s (%s):\n", m->impl, m->set,
                cJSON_IsString(when) ? when->valuestring : "?");
        for (int k = 0; k < r->n; k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(res, r->cases[k].name);
            const char *now = fr_verdict_name(r->cases[k].j.verdict);
            if (!cJSON_IsString(v)) {
                fprintf(out, "  new      %-34s %s\n", r->cases[k].name, now);
                changed++;
            } else if (strcmp(v->valuestring, now)) {
                fprintf(out, "  changed  %-34s %s -> %s\n", r->cases[k].name, v->valuestring, now);
                changed++;
            }
        }
        const cJSON *it;
        cJSON_ArrayForEach(it, res) {
            bool found = false;
            for (int k = 0; k < r->n && !found; k++)
                found = !strcmp(r->cases[k].name, it->string);
            if (!found) {
                fprintf(out, "  removed  %-34s (was %s)\n", it->string, cJSON_IsString(it) ? it->valuestring : "?");
                changed++;
            }
        }
        if (!changed) fprintf(out, "  no verdict changed\n");
        cJSON_Delete(last);
    }
    bool first = !last;
    fr_json_clear();
    cJSON *j = cJSON_CreateObject();
    char ts[64];
    time_t t = time(NULL);
    struct tm tmv;
    gmtime_r(&t, &tmv);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    cJSON_AddStringToObject(j, "time", ts);
    cJSON_AddStringToObject(j, "impl", m->impl);
    cJSON_AddStringToObject(j, "set", m->set);
    cJSON_AddItemToObject(j, "seed", num((double)m->seed));
    cJSON_AddStringToObject(j, "overall", fr_verdict_name(r->overall));
    cJSON *res = cJSON_CreateObject();
    for (int k = 0; k < r->n; k++)
        cJSON_AddStringToObject(res, r->cases[k].name, fr_verdict_name(r->cases[k].j.verdict));
    cJSON_AddItemToObject(j, "results", res);
    char *txt = fr_json_failed() ? NULL : cJSON_PrintUnformatted(j);
    if (txt) txt = fr_report_json_utf8(txt);
    cJSON_Delete(j);
    if (!txt) return fr_fail(err, FR_E_NOMEM, "history: out of memory");
    /* One line appended in one write; if it cannot be written whole (a full disk), the file is cut back to its
     * length before, so earlier lines are kept and no partial line joins the next run's. */
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        int e = errno;
        free(txt);
        return fr_fail(err, FR_E_IO, "%s: cannot append: %s", path, strerror(e));
    }
    struct stat sb;
    off_t before = fstat(fd, &sb) == 0 ? sb.st_size : -1;
    size_t n = strlen(txt);
    txt[n] = '\n'; /* in place of the terminating NUL: one write of the whole line */
    ssize_t w = write(fd, txt, n + 1);
    int e = errno;
    bool ok = w == (ssize_t)(n + 1) && fsync(fd) == 0;
    if (!ok && w >= 0 && w != (ssize_t)(n + 1)) e = ENOSPC;
    if (!ok && before >= 0 && ftruncate(fd, before) != 0) e = errno;
    ok = close(fd) == 0 && ok;
    free(txt);
    if (!ok) return fr_fail(err, FR_E_IO, "%s: cannot append: %s (the file is kept as it was)", path, strerror(e));
    if (first) fprintf(out, "history: first run of %s on set %s recorded in %s\n", m->impl, m->set, path);
    return FR_OK;
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* HTML */

/* A colour from cool (0) to hot (1). */
static void heat_color(double t, char *buf, size_t n) {
    if (!(t >= 0)) t = 0;
    if (t > 1) t = 1;
    int r = (int)(255 * fmin(1.0, 2 * t)), g = (int)(255 * (t < 0.5 ? 0.85 * (1 - 2 * (0.5 - t)) + 0.15 : 2 * (1 - t))),
        b = (int)(255 * fmax(0.0, 1 - 2 * t));
    snprintf(buf, n, "rgb(%d,%d,%d)", r, g, b);
}

/* V = identity cases (suite_modify.c: FR_MOD_V_IDENTITY, properties, BNSD, Dv = S2): attention_out is the probability
 * matrix P itself, so output column j is key j. The suite marks them by the explicit-P check's note in extra. */
static bool is_v_identity(const fr_case_result *c) {
    return c->cat == FR_CAT_PROPERTIES && !c->bwd && c->S2 > 0 && !strncmp(c->extra, "explicit P:", 11) &&
           c->j.heat_cols > 0 && c->j.heat_cols == (c->S2 < FR_HEAT_C ? c->S2 : FR_HEAT_C);
}

#define FR_REPORT_KEY_TILE 64 /* keys per key tile on the V = identity maps */

/* Heat map of |error| / ulp of attention_out (judge.c: the max per cell of FR_HEAT_R row bands x FR_HEAT_C column
 * buckets; bucket q holds the columns d with floor(d C / L) = q). keys: the columns are keys (V = identity): cells are
 * placed on a key axis cut into key tiles of FR_REPORT_KEY_TILE keys, with the max per tile. */
static void svg_heat(FILE *f, const fr_case_result *c, bool keys) {
    const fr_judgement *j = &c->j;
    if (!j->heat_rows || !j->heat_cols) {
        fprintf(f, "<p class=note>no attention_out to map</p>");
        return;
    }
    const int C = j->heat_cols, R = j->heat_rows, chh = 8, W = keys ? 256 : C * 14, H = R * chh, LW = 190;
    const int64_t L = keys ? c->S2 : C; /* x units: keys, or buckets */
    double mx = 0, mn = INFINITY;
    for (int r = 0; r < R; r++)
        for (int q = 0; q < C; q++) {
            mx = fmax(mx, j->heat[r][q]);
            mn = fmin(mn, j->heat[r][q]);
        }
    /* Colours: log10(1 + ulp) from the smallest cell's to the largest's (at least 1 ulp), but spanning at least one
     * decade and never starting below 0 ulp: a map of 0.5..2 ulp errors is not stretched to look alarming, while a
     * failing map of 1e4..1e7 ulp still shows where the error sits. */
    double chi = log10(fmax(mx, 1.0) + 1), clo = fmax(0.0, fmin(log10(mn + 1), chi - 1)), span = chi - clo;
    int ntile = keys ? (int)((L + FR_REPORT_KEY_TILE - 1) / FR_REPORT_KEY_TILE) : 0;
    int need = 24 + 13 * (keys ? (ntile < 8 ? ntile : 9) + 1 : 0) + 6 + 28 + 26 + 16; /* legend height */
    int SH = H + 44 > need ? H + 44 : need;
    fprintf(f, "<svg width=%d height=%d viewBox='0 0 %d %d'><title>|error| / ulp of attention_out over query rows x %s",
            W + LW, SH, W + LW, SH, keys ? "key tiles (V = identity: out = P)" : "head-dim columns");
    fprintf(f, "</title>");
    for (int q = 0; q < C; q++) {
        int64_t lo = keys ? ((int64_t)q * L + C - 1) / C : q, hi = keys ? ((int64_t)(q + 1) * L + C - 1) / C : q + 1;
        double x0 = (double)lo * W / (double)L, x1 = (double)hi * W / (double)L;
        for (int r = 0; r < R; r++) {
            char col[32];
            heat_color(span > 0 ? (log10(j->heat[r][q] + 1) - clo) / span : 0, col, sizeof col);
            fprintf(f, "<rect x='%.2f' y='%d' width='%.2f' height='%d' fill='%s'/>", x0, r * chh, x1 - x0, chh, col);
        }
    }
    fprintf(f, "<rect x=0 y=0 width=%d height=%d fill='none' stroke='#333'/>", W, H);
    int ty = 24; /* legend lines at the right */
    if (keys) {
        bool any_straddle = false;
        int step = (ntile + 15) / 16; /* tile numbers under the axis: at most 16 */
        for (int t = 0; t < ntile; t++) {
            int64_t k0 = (int64_t)t * FR_REPORT_KEY_TILE, k1 = k0 + FR_REPORT_KEY_TILE;
            if (k1 > L) k1 = L;
            double x0 = (double)k0 * W / (double)L, x1 = (double)k1 * W / (double)L;
            if (t) fprintf(f, "<line x1='%.2f' y1='-2' x2='%.2f' y2='%d' stroke='black' stroke-width='2'/>", x0, x0,
                           H + 4);
            if (t % step == 0)
                fprintf(f, "<text x='%.1f' y=%d font-size=10 text-anchor=middle>%d</text>", (x0 + x1) / 2, H + 12, t);
            /* Max over the cells that hold a key of this tile (a cell across a tile edge counts for both). */
            double tm = 0;
            bool straddle = false;
            for (int q = 0; q < C; q++) {
                int64_t lo = ((int64_t)q * L + C - 1) / C, hi = ((int64_t)(q + 1) * L + C - 1) / C;
                if (hi <= k0 || lo >= k1) continue;
                straddle |= lo < k0 || hi > k1;
                for (int r = 0; r < R; r++)
                    tm = fmax(tm, j->heat[r][q]);
            }
            if (t < 8) {
                fprintf(f, "<text x=%d y=%d font-size=10>tile %d (keys %lld-%lld): ", W + 8, ty, t, (long long)k0,
                        (long long)k1 - 1);
                if (tm >= 1e30)
                    fprintf(f, "NaN/Inf");
                else
                    fprintf(f, "max %.3g ulp%s", tm, straddle ? "*" : "");
                fprintf(f, "</text>");
                ty += 13;
            }
            any_straddle |= straddle;
        }
        if (ntile > 8) {
            fprintf(f, "<text x=%d y=%d font-size=10>... %d tiles in all</text>", W + 8, ty, ntile);
            ty += 13;
        }
        if (any_straddle) {
            fprintf(f, "<text x=%d y=%d font-size=10>* a cell spans a tile edge</text>", W + 8, ty);
            ty += 13;
        }
        ty += 6;
        fprintf(f, "<text x=0 y=%d font-size=10>key tile (64 keys) &#8594;  cells of %s%lld key%s</text>", H + 26,
                L % C ? "~" : "", (long long)((L + C - 1) / C), L > C ? "s" : "");
    } else {
        fprintf(f, "<text x=0 y=%d font-size=10>head-dim column (Dv) &#8594;  %d buckets</text>", H + 14, C);
        fprintf(f, "<text x=0 y=%d font-size=10>(not keys: V is not the identity)</text>", H + 27);
    }
    if (mx >= 1e30)
        fprintf(f, "<text x=%d y=10 font-size=10>NaN/Inf (red)</text>", W + 8);
    else
        fprintf(f, "<text x=%d y=10 font-size=10>|error| / ulp, max %.3g</text>", W + 8, mx);
    /* Colour scale: log(1 + ulp) from 0 to the max. */
    for (int s = 0; s < 10; s++) {
        char col[32];
        heat_color(s / 9.0, col, sizeof col);
        fprintf(f, "<rect x=%d y=%d width=14 height=8 fill='%s'/>", W + 8 + s * 14, ty - 6, col);
    }
    fprintf(f, "<text x=%d y=%d font-size=9>%.2g</text><text x=%d y=%d font-size=9 text-anchor=end>%.2g ulp (log)"
               "</text>",
            W + 8, ty + 13, pow(10, clo) - 1, W + 8 + 140, ty + 13, mx >= 1e30 ? INFINITY : pow(10, chi) - 1);
    ty += 28;
    fprintf(f, "<text x=%d y=%d font-size=10>rows: query rows (b,h,i),</text>", W + 8, ty);
    fprintf(f, "<text x=%d y=%d font-size=10>%d bands, max per cell</text>", W + 8, ty + 13, R);
    if (keys)
        fprintf(f, "<text x=%d y=%d font-size=10>V = identity: column j = key j</text>", W + 8, ty + 26);
    fprintf(f, "</svg>");
}

static void svg_hist(FILE *f, const fr_case_result *c) {
    const fr_judgement *j = &c->j;
    if (!j->n_gains) {
        fprintf(f, "<p class=note>no row gains</p>");
        return;
    }
    enum { NB = 30 };
    double lo = 0, hi = 0;
    for (int64_t k = 0; k < j->n_gains; k++) {
        lo = fmin(lo, j->gains[k]);
        hi = fmax(hi, j->gains[k]);
    }
    double span = fmax(hi - lo, 1e-30);
    int cnt[NB] = {0}, cmax = 1;
    for (int64_t k = 0; k < j->n_gains; k++) {
        int b = (int)((j->gains[k] - lo) / span * NB);
        if (b >= NB) b = NB - 1;
        if (b < 0) b = 0;
        cnt[b]++;
        if (cnt[b] > cmax) cmax = cnt[b];
    }
    int W = 300, H = 120;
    fprintf(f, "<svg width=%d height=%d><title>row gains</title>", W, H + 30);
    for (int b = 0; b < NB; b++) {
        int h = cnt[b] * H / cmax;
        fprintf(f, "<rect x='%d' y='%d' width='%d' height='%d' fill='#4a7ab7'/>", b * W / NB, H - h, W / NB - 1, h);
    }
    fprintf(f, "<line x1='0' y1='%d' x2='%d' y2='%d' stroke='black'/>", H, W, H);
    fprintf(f, "<text x=0 y=%d font-size=10>%.2g</text><text x=%d y=%d font-size=10 text-anchor=end>%.2g</text>",
            H + 12, lo, W, H + 12, hi);
    fprintf(f,
            "<text x=%d y=%d font-size=10 text-anchor=middle>row gain (%lld rows; rms %.3g, floor %.3g)</text></svg>",
            W / 2, H + 26, (long long)j->n_gains, j->out[FR_CO_ATTENTION_OUT].m.gain_rms,
            j->out[FR_CO_ATTENTION_OUT].m.noise_floor);
}

static void svg_seqlen(FILE *f, const fr_suite_result *r) {
    int W = 640, H = 260, L = 60, B = 30;
    double xmin = 1, xmax = 10, ymin = 1e-9, ymax = 1e-1;
    int pts = 0;
    for (int k = 0; k < r->n; k++) {
        const fr_case_result *c = &r->cases[k];
        const fr_out_judgement *o = &c->j.out[FR_CO_ATTENTION_OUT];
        if (c->bwd || !o->present || c->S2 <= 0 || !(o->m.rel_l2 > 0) || !isfinite(o->m.rel_l2)) continue;
        xmax = fmax(xmax, (double)c->S2);
        ymax = fmax(ymax, o->m.rel_l2);
        pts++;
    }
    if (!pts) {
        fprintf(f, "<p class=note>no forward cases with a nonzero error</p>");
        return;
    }
    double lx0 = log10(xmin), lx1 = log10(xmax) + 0.1, ly0 = log10(ymin), ly1 = log10(ymax) + 0.3;
#define PX(x) (L + (log10(x) - lx0) / (lx1 - lx0) * (W - L - 10))
#define PY(y) (H - B - (log10(y) - ly0) / (ly1 - ly0) * (H - B - 10))
    fprintf(f, "<svg width=%d height=%d><title>error vs sequence length</title>", W, H + 16);
    fprintf(f, "<rect x='%d' y='10' width='%d' height='%d' fill='none' stroke='#999'/>", L, W - L - 10, H - B - 10);
    for (int e = (int)ceil(ly0); e <= (int)floor(ly1); e += 2)
        fprintf(f, "<text x=%d y=%.1f font-size=10 text-anchor=end>1e%d</text>", L - 4, PY(pow(10, e)) + 3, e);
    for (int e = 0; e <= (int)floor(lx1); e++)
        fprintf(f, "<text x=%.1f y=%d font-size=10 text-anchor=middle>1e%d</text>", PX(pow(10, e)), H - B + 14, e);
    fprintf(f, "<text x=%d y=%d font-size=11 text-anchor=middle>keys S2 (log)</text>", (W + L) / 2, H - 2);
    for (int k = 0; k < r->n; k++) {
        const fr_case_result *c = &r->cases[k];
        const fr_out_judgement *o = &c->j.out[FR_CO_ATTENTION_OUT];
        if (c->bwd || !o->present || c->S2 <= 0 || !(o->m.rel_l2 > 0) || !isfinite(o->m.rel_l2)) continue;
        const char *col = c->j.verdict == FR_FAIL ? "#d62728" : c->j.verdict == FR_WARN ? "#ff7f0e" : "#2c7fb8";
        double y = fmax(o->m.rel_l2, ymin);
        fprintf(f, "<circle cx=%.1f cy=%.1f r=3 fill='%s'><title>", PX((double)c->S2), PY(y), col);
        fr_report_html_text(f, c->name);
        fprintf(f, " %s rel-L2 %.3g</title></circle>", fr_dtype_name(c->dtype), o->m.rel_l2);
        if (o->have_ideal && o->ideal.rel_l2 > 0)
            fprintf(f, "<path d='M%.1f %.1fl4 4m0 -4l-4 4' stroke='#555' fill='none'/>", PX((double)c->S2) - 2,
                    PY(fmax(o->ideal.rel_l2, ymin)) - 2);
    }
    fprintf(f,
            "<text x=%d y=%d font-size=10>&#9679; implementation rel-L2 (blue PASS, orange WARN, red FAIL)"
            "&#160;&#160; &#215; ideal pipeline's rel-L2 (one per forward case)</text></svg>",
            L, H + 13);
#undef PX
#undef PY
}

/* The worst case not yet used: highest ratio (non-finite first); bad_only: FAIL/WARN only; vi_only: V = identity
 * only. -1 when none. */
static int worst_case(const fr_suite_result *r, const bool *used, bool bad_only, bool vi_only) {
    int best = -1;
    double bk = 0;
    for (int k = 0; k < r->n && k < 4096; k++) {
        const fr_case_result *c = &r->cases[k];
        if (used[k] || c->bwd || !c->j.out[FR_CO_ATTENTION_OUT].present) continue;
        if (bad_only && c->j.verdict != FR_FAIL && c->j.verdict != FR_WARN) continue;
        if (vi_only && !is_v_identity(c)) continue;
        double rk = isfinite(c->j.ratio) ? c->j.ratio : 1e300;
        if (best < 0 || rk > bk) {
            best = k;
            bk = rk;
        }
    }
    return best;
}

/* One worst case: title, heat map (over key tiles for V = identity), row-gain histogram. */
static void worst_section(FILE *f, const fr_case_result *c, const char *why) {
    bool vi = is_v_identity(c);
    fprintf(f, "<h3><span class=%s>%s</span> ", fr_verdict_name(c->j.verdict), fr_verdict_name(c->j.verdict));
    fr_report_html_text(f, c->name);
    fprintf(f, " (%s, S1 %lld, S2 %lld, worst ratio %.3g)%s</h3>", fr_dtype_name(c->dtype), (long long)c->S1,
            (long long)c->S2, c->j.ratio, vi ? " &#8212; V = identity: map over key tiles" : "");
    if (why) fprintf(f, "<p class=note>Added: %s.</p>", why);
    fprintf(f, "<div class=row>");
    svg_heat(f, c, vi);
    svg_hist(f, c);
    fprintf(f, "</div>");
}

fr_status fr_report_html(const char *path, const fr_suite_result *r, const fr_report_meta *m, fr_error *err) {
    report_out out;
    fr_status st = report_open(&out, path, err);
    if (st != FR_OK) return st;
    FILE *f = out.f;
    fprintf(f, "<!DOCTYPE html><html><head><meta charset='utf-8'><title>flashref verification: ");
    fr_report_html_text(f, m->impl);
    fprintf(f, "</title><style>body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse}"
               "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}th{background:#eee}"
               ".PASS{color:#1a7f37;font-weight:bold}.FAIL{color:#cf222e;font-weight:bold}.WARN{color:#bc4c00;"
               "font-weight:bold}.SKIP{color:#777}.note{color:#666;font-size:12px}.cases td{font-family:monospace;"
               "font-size:12px}.row{display:flex;gap:24px;flex-wrap:wrap;align-items:flex-start}</style></head><body>");
    fprintf(f, "<h1>flashref verification: <span class=%s>%s</span></h1>", fr_verdict_name(r->overall),
            fr_verdict_name(r->overall));
    fprintf(f, "<p>implementation <b>");
    fr_report_html_text(f, m->impl);
    fprintf(f, "</b>, set <b>");
    fr_report_html_text(f, m->set);
    fprintf(f, "</b>, seed %llu, %d cases, %.1f s, flashref %s.", (unsigned long long)m->seed, r->n, r->seconds,
            fr_version());
    if (r->overall == FR_FAIL || r->overall == FR_WARN)
        fprintf(f, " Likeliest cause: <b>%s</b> (%s).", fr_diag_name(r->primary), fr_diag_text(r->primary));
    fprintf(f, "</p><h2>Summary</h2><table><tr><th>category</th><th>passed/judged</th><th>warn</th><th>fail</th>"
               "<th>skip</th></tr>");
    for (int k = 0; k < FR_CAT_COUNT; k++) {
        const int *c = r->count[k];
        fprintf(f, "<tr><td>%s</td><td>%d/%d</td><td>%d</td><td>%d</td><td>%d</td></tr>",
                fr_suite_cat_name((fr_suite_cat)k), c[0], c[0] + c[1] + c[2], c[1], c[2], c[3]);
    }
    fprintf(f,
            "</table><p class=note>Standard: %s. Thresholds: attention_out rel-L2 &le; %g &#215; max(the plain "
            "reference's, the ideal pipeline's) (max abs &le; %g &#215;, and the proved a-priori bound); gradients &le; %g "
            "&#215;; softmax max/sum &le; %g &#215;; WARN above %g of a bound, or when the row-gain rms exceeds %g "
            "&#215; the noise floor and the references' gains. Fully masked rows: %s.</p>",
            fr_standard_name(m->judge->standard), m->judge->k_out, m->judge->k_max, m->judge->k_grad,
            m->judge->k_stats, m->judge->warn_frac, m->judge->gain_warn,
            m->judge->external ? "implementation-defined (D1)" : "D1 exactly");
    /* Failing and warning cases. */
    int ninfo = 0;
    for (int k = 0; k < r->n; k++) ninfo += r->cases[k].info[0] != 0;
    if (ninfo) {
        fprintf(f, "<h2>Implementation-defined points (INFO, never a verdict)</h2><table class=cases><tr><th>case</th>"
                   "<th>which reading the implementation follows</th></tr>");
        for (int k = 0; k < r->n; k++) {
            if (!r->cases[k].info[0]) continue;
            fprintf(f, "<tr><td>");
            fr_report_html_text(f, r->cases[k].name);
            fprintf(f, "</td><td>INFO: ");
            fr_report_html_text(f, r->cases[k].info);
            fprintf(f, "</td></tr>");
        }
        fprintf(f, "</table>");
    }
    fprintf(f, "<h2>Cases that did not pass</h2>");
    int bad = 0;
    for (int k = 0; k < r->n; k++)
        bad += r->cases[k].j.verdict == FR_FAIL || r->cases[k].j.verdict == FR_WARN;
    if (!bad)
        fprintf(f, "<p>None.</p>");
    else {
        fprintf(f, "<table class=cases><tr><th>verdict</th><th>case</th><th>category</th><th>diagnosis</th><th>the "
                   "numbers that decided it</th></tr>");
        for (int k = 0; k < r->n; k++) {
            const fr_case_result *c = &r->cases[k];
            if (c->j.verdict != FR_FAIL && c->j.verdict != FR_WARN) continue;
            fprintf(f, "<tr><td class=%s>%s</td><td>", fr_verdict_name(c->j.verdict), fr_verdict_name(c->j.verdict));
            fr_report_html_text(f, c->name);
            fprintf(f, "</td><td>%s</td><td>%s</td><td>", fr_suite_cat_name(c->cat), fr_diag_name(c->j.diag));
            fr_report_html_text(f, c->j.why);
            if (c->extra[0]) {
                fprintf(f, "<br>");
                fr_report_html_text(f, c->extra);
            }
            fprintf(f, "</td></tr>");
        }
        fprintf(f, "</table>");
    }
    /* Worst cases: failing/warning ones first, then the highest ratios; then, unless one is shown already, the worst
     * V = identity case (failing/warning ones first), whose map is over key tiles. */
    fprintf(f, "<h2>Worst cases</h2><p class=note>Heat maps: |error| in ulps of attention_out, max per cell, over "
               "query rows (bands of (batch, head, query) rows in output order) &#215; columns. For a V = identity "
               "case (attention_out is the probability matrix P, so column j is key j) the columns are keys, cut into "
               "key tiles of %d keys with the max per tile; for any other case they are head-dim columns of the "
               "output, which cannot be attributed to keys. Histogram: the per-row gain &lt;a-r,r&gt;/&lt;r,r&gt;.</p>",
            FR_REPORT_KEY_TILE);
    int shown = 0, vi_shown = 0;
    bool used[4096] = {false};
    for (int pass = 0; pass < 2 && shown < 4; pass++)
        for (int s = 0; s < 4 && shown < 4; s++) {
            int best = worst_case(r, used, pass == 0, false);
            if (best < 0) break;
            used[best] = true;
            worst_section(f, &r->cases[best], NULL);
            vi_shown += is_v_identity(&r->cases[best]);
            shown++;
        }
    if (!vi_shown) {
        int best = worst_case(r, used, true, true);
        bool vbad = best >= 0;
        if (!vbad) best = worst_case(r, used, false, true);
        if (best >= 0)
            worst_section(f, &r->cases[best],
                          vbad ? "the worst V = identity case: where the error sits over key tiles"
                              : "the worst V = identity case (it passed): where the error sits over key tiles");
    }
    fprintf(f, "<h2>Error vs sequence length</h2>");
    svg_seqlen(f, r);
    fr_coverage_report cov;
    fr_status cst = fr_coverage_report_of(r, &cov, err);
    if (cst == FR_OK) {
        fr_coverage_html(f, &cov);
        fr_coverage_report_free(&cov);
    } else if (cst == FR_E_NOMEM) {
        st = cst; /* the page would lack its coverage section */
    }
    fprintf(f, "<h2>All cases</h2><table class=cases><tr><th>verdict</th><th>case</th><th>category</th><th>dtype</th>"
               "<th>S1 x S2</th><th>rel-L2</th><th>&#215; plain</th><th>&#215; ideal</th><th>gain/floor</th>"
               "<th>cosine</th><th>max abs</th><th>max rel</th><th>&gt; 1/1000</th><th>&gt; 5/1000</th><th>s</th>"
               "</tr>");
    for (int k = 0; k < r->n; k++) {
        const fr_case_result *c = &r->cases[k];
        const fr_out_judgement *o = &c->j.out[c->bwd ? FR_CO_DQ : FR_CO_ATTENTION_OUT];
        fprintf(f, "<tr><td class=%s>%s</td><td>", fr_verdict_name(c->j.verdict), fr_verdict_name(c->j.verdict));
        fr_report_html_text(f, c->name);
        fprintf(f,
                "</td><td>%s</td><td>%s %s</td><td>%lld x %lld</td><td>%.3g</td><td>%.2f</td><td>%.2f</td>"
                "<td>%.2f</td><td>%.9f</td><td>%.3g</td><td>%.3g</td><td>%.2g%%</td><td>%.2g%%</td><td>%.2f</td></tr>",
                fr_suite_cat_name(c->cat), c->bwd ? "bwd" : "fwd", fr_dtype_name(c->dtype), (long long)c->S1,
                (long long)c->S2, o->m.rel_l2, o->x_plain, o->x_ideal, o->m.gain_over_floor, 1.0 - o->m.cos_diff,
                o->m.max_abs, o->m.max_rel, 100.0 * o->frac_1e3, 100.0 * o->frac_5e3, c->seconds);
    }
    fprintf(f, "</table></body></html>\n");
    return report_close(&out, st == FR_OK, st, err);
}
