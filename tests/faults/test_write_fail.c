/* A disk that fills while the library writes (docs/reliability.md, "A full disk"): every entry point that writes
 * files run with its k-th write to a regular file cut short and every later one failing with ENOSPC
 * (fr_fault_write_set), for every k until a run completes without reaching it. Each run that met the full disk must
 * return FR_E_IO with a message and leave every file either as it was before the run or whole as the reference run
 * wrote it (never half-written, never a temporary file left), and history.jsonl must keep every earlier line. A build
 * without -DFR_ALLOC_HOOK=ON has no such test.
 *
 *   test_write_fail [SCENARIO...]   every scenario, or those whose name starts with one of the arguments */
#include "common/check.h"
#include "common/kit.h"
#include "core/alloc_hook.h"
#include "fault_setup.h"
#ifdef FR_HAVE_MPI
#include "dist/dist.h"
#endif
#include "flashref_verify.h"
#include "io/casedir.h"
#include "verify/cases/casegen.h"
#include "verify/report/report.h"
#include "verify/suite/suite.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_root[512], g_out[600], g_tmp[600], g_case[600];

/* ---------------------------------------------------------------------------------------------------------------- */
/* A folder's files: one "path size hash" line each, recursively, sorted by readdir order of a fresh listing. */

typedef struct entry {
    char path[700];
    long long size; /* -1: a directory */
    uint64_t hash;
} entry;

typedef struct listing {
    entry e[256];
    int n;
} listing;

static uint64_t hash_file(const char *p) {
    uint64_t h = UINT64_C(1469598103934665603);
    FILE *f = fopen(p, "rb");
    if (!f) return 0;
    unsigned char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < n; i++) h = (h ^ buf[i]) * UINT64_C(1099511628211);
    fclose(f);
    return h;
}

static void list_into(const char *dir, const char *rel, listing *l) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && l->n < 256) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char p[1400];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        struct stat sb;
        if (lstat(p, &sb) != 0) continue;
        entry *e = &l->e[l->n++];
        snprintf(e->path, sizeof e->path, "%s%s%s", rel, *rel ? "/" : "", de->d_name);
        e->size = S_ISDIR(sb.st_mode) ? -1 : (long long)sb.st_size;
        e->hash = S_ISDIR(sb.st_mode) ? 0 : hash_file(p);
        if (S_ISDIR(sb.st_mode)) {
            char r[800];
            snprintf(r, sizeof r, "%s", e->path);
            list_into(p, r, l);
        }
    }
    closedir(d);
}

static void list_dir(const char *dir, listing *l) {
    l->n = 0;
    list_into(dir, "", l);
}

static const entry *find(const listing *l, const char *path) {
    for (int k = 0; k < l->n; k++)
        if (!strcmp(l->e[k].path, path)) return &l->e[k];
    return NULL;
}

static void copy_file(const char *from, const char *to) {
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    char buf[4096];
    size_t n;
    while (a && b && (n = fread(buf, 1, sizeof buf, a)) > 0) fwrite(buf, 1, n, b);
    if (a) fclose(a);
    if (b) fclose(b);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* The sweep. */

typedef struct scenario {
    const char *name;
    /* Sets the output folder up as it is before the run (earlier reports, an earlier history). */
    void (*setup)(void);
    /* Runs the entry point once, writing under g_out. */
    fr_status (*run)(fr_error *err);
    /* Files that may hold, after a failed run, content of neither the earlier state nor the reference run: with
     * their rule (see history_ok). NULL: none. */
    const char *appended;
} scenario;

/* history.jsonl after a failed run: the earlier bytes exactly, then nothing or one whole line. */
static bool history_ok(const char *path, const char *before, size_t blen, char *why, size_t wn) {
    FILE *f = fopen(path, "rb");
    if (!f) return snprintf(why, wn, "%.160s is gone", path), false;
    static char now[1 << 16];
    size_t n = fread(now, 1, sizeof now, f);
    fclose(f);
    if (n < blen || memcmp(now, before, blen) != 0) return snprintf(why, wn, "earlier lines changed or lost"), false;
    if (n == blen) return true;
    const char *nl = memchr(now + blen, '\n', n - blen);
    if (!nl || (size_t)(nl - now) + 1 != n) return snprintf(why, wn, "a partial line appended (%zu bytes)", n - blen), false;
    return true;
}

static char g_hist_before[1 << 16];
static size_t g_hist_len;

static long g_runs, g_hits;

static void sweep(const scenario *s) {
    int bad_before = failures;
    /* The reference run: what the files hold when the disk never fills. */
    fr_test_rm_rf(g_out);
    mkdir(g_out, 0777);
    if (s->setup) s->setup();
    listing before, ref, now, tmp0, tmp1;
    list_dir(g_out, &before);
    list_dir(g_tmp, &tmp0);
    fr_error err;
    memset(&err, 0, sizeof err);
    fr_fault_write_set(0);
    fr_status st = s->run(&err);
    long n = fr_fault_write_count();
    if (!CHECKED(st == FR_OK, "%s: reference run: %s: %s", s->name, fr_status_name(st), err.msg)) return;
    list_dir(g_out, &ref);
    /* Every k up to FR_ENOSPC_SAMPLE (default 60) writes; past that, that many evenly spread and the last one (a
     * report is thousands of fprintf calls, each run of it under ASan a fraction of a second). */
    const char *se = getenv("FR_ENOSPC_SAMPLE");
    long sample = se && atol(se) > 0 ? atol(se) : 60;
    long step = n > sample ? (n + sample - 1) / sample : 1;
    long tested = 0;
    for (long k = 1;; k = k < n && k + step > n ? n : k + step) {
        if (failures - bad_before >= 10) {
            printf("%s: stopping after 10 failed checks\n", s->name);
            break;
        }
        fr_test_rm_rf(g_out);
        mkdir(g_out, 0777);
        if (s->setup) s->setup();
        memset(&err, 0, sizeof err);
        fr_fault_write_set(k);
        st = s->run(&err);
        int hit = fr_fault_write_hit();
        fr_fault_write_set(0);
        g_runs++;
        if (!hit) break; /* completed before its k-th write: every k done */
        tested++;
        CHECK(st == FR_E_IO, "%s: the disk filled at write %ld: status %s (want FR_E_IO): %s", s->name, k,
              fr_status_name(st), err.msg);
        CHECK(st == FR_OK || err.msg[0], "%s: write %ld: %s without a message", s->name, k, fr_status_name(st));
        list_dir(g_out, &now);
        for (int i = 0; i < now.n; i++) {
            const entry *e = &now.e[i], *b = find(&before, e->path), *r = find(&ref, e->path);
            if (s->appended && strstr(e->path, s->appended)) {
                char why[200], p[1400];
                snprintf(p, sizeof p, "%s/%s", g_out, e->path);
                CHECK(history_ok(p, g_hist_before, g_hist_len, why, sizeof why), "%s: write %ld: %s: %s", s->name, k,
                      e->path, why);
                continue;
            }
            bool as_before = b && b->size == e->size && b->hash == e->hash;
            bool whole = r && r->size == e->size && r->hash == e->hash;
            CHECK(as_before || whole, "%s: the disk filled at write %ld (%s): %s is %s (%lld bytes)", s->name, k,
                  err.msg, e->path, !b && !r ? "a file neither run leaves" : "half-written", e->size);
        }
        for (int i = 0; i < before.n; i++)
            CHECK(find(&now, before.e[i].path) != NULL, "%s: write %ld: %s was there before and is gone", s->name, k,
                  before.e[i].path);
        list_dir(g_tmp, &tmp1);
        CHECK(tmp1.n == tmp0.n, "%s: write %ld: %d entries left in TMPDIR", s->name, k, tmp1.n - tmp0.n);
    }
    g_hits += tested;
    printf("%-14s %5ld writes to files, %5ld runs with the disk filling at one of them%s\n", s->name, n, tested,
           step > 1 ? " (sampled evenly, FR_ENOSPC_SAMPLE)" : "");
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Scenarios. */

static fr_suite_result g_res;
static fr_gen_case g_gen;

static fr_status report_meta_run(const char *json, const char *html, const char *hist, fr_error *err) {
    fr_judge_opts jo = fr_judge_opts_default();
    fr_report_meta m = {"fast", "quick", 1, &jo};
    char p[700];
    fr_status st = FR_OK;
    if (json) {
        snprintf(p, sizeof p, "%s/%s", g_out, json);
        st = fr_report_json(p, &g_res, &m, err);
    }
    if (st == FR_OK && html) {
        snprintf(p, sizeof p, "%s/%s", g_out, html);
        st = fr_report_html(p, &g_res, &m, err);
    }
    if (st == FR_OK && hist) {
        snprintf(p, sizeof p, "%s/%s", g_out, hist);
        FILE *null = fopen("/dev/null", "w");
        st = fr_report_history(p, null, &g_res, &m, err);
        fclose(null);
    }
    return st;
}

/* Earlier reports and two earlier history lines in the folder. */
static void setup_reports(void) {
    char p[700], q[700];
    snprintf(p, sizeof p, "%s/report.json", g_root);
    snprintf(q, sizeof q, "%s/report.json", g_out);
    copy_file(p, q);
    snprintf(p, sizeof p, "%s/report.html", g_root);
    snprintf(q, sizeof q, "%s/report.html", g_out);
    copy_file(p, q);
    snprintf(q, sizeof q, "%s/history.jsonl", g_out);
    FILE *f = fopen(q, "wb");
    fwrite(g_hist_before, 1, g_hist_len, f);
    fclose(f);
}

static fr_status run_reports(fr_error *err) { return report_meta_run("report.json", "report.html", "history.jsonl", err); }

/* A fresh report set (no earlier file) */
static fr_status run_reports_new(fr_error *err) { return report_meta_run("new.json", "new.html", NULL, err); }

/* A case folder written (inputs), then its outputs. */
static fr_status run_case(fr_error *err) {
    char dir[700];
    snprintf(dir, sizeof dir, "%s/case", g_out);
    fr_status st = fr_case_write_parts(dir, g_gen.bwd ? FR_CASE_BWD : FR_CASE_FWD, g_gen.dtype, &g_gen.params,
                                       &g_gen.in, err);
    if (st != FR_OK) return st;
    fr_case c;
    if ((st = fr_case_load(dir, &c, err)) != FR_OK) return st;
    fr_case_outputs o;
    st = fr_case_alloc_outputs(&c, false, &o, err);
    if (st == FR_OK) {
        fr_engine e = fr_engine_default(FR_ENGINE_FAST);
        e.num_threads = 1;
        st = c.op == FR_CASE_FWD ? fr_fwd(&c.params, &c.in.fwd, &o.fwd, &e, err)
                                 : fr_bwd(&c.params, &c.in, &o.bwd, &e, err);
        char od[800];
        snprintf(od, sizeof od, "%s/out", dir);
        mkdir(od, 0777);
        if (st == FR_OK) st = fr_case_write_outputs(od, &o, err);
        fr_case_outputs_free(&o);
    }
    fr_case_free(&c);
    return st;
}

/* flashref suite --write-cases: the quick set's mha cases with their golden outputs. */
static fr_status run_suite_write(fr_error *err) {
    char dir[700];
    snprintf(dir, sizeof dir, "%s/cases", g_out);
    int written = 0;
    return fr_suite_write_cases("quick", "mha", 1, dir, &written, err);
}

/* The in-process verifier's HTML report (what the Python package's report() writes). */
static fr_verify_result *g_vres;
static fr_status run_verify_html(fr_error *err) {
    char p[700];
    snprintf(p, sizeof p, "%s/verify.html", g_out);
    return fr_verify_result_html(g_vres, p, err);
}

#ifdef FR_HAVE_MPI
/* The MPI layer as rank 0 of 1: a case's outputs written by rows into its folder (pwrite). */
/* Alike test_alloc_fail.c:run_dist: kept apart because each test's scenario checks a different failure around it. */
static fr_status run_dist(fr_error *err) {
    fr_dist d = {0, 1, 0};
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    e.num_threads = 1;
    fr_case c;
    fr_status st = fr_dist_case_load(&d, g_case, &e, &c, NULL, NULL, err);
    if (st != FR_OK) return st;
    fr_case_outputs o;
    st = fr_case_alloc_outputs(&c, false, &o, err);
    if (st == FR_OK) st = fr_dist_run_to_dir(&d, &c, &o, &e, g_out, NULL, err);
    fr_case_outputs_free(&o);
    fr_case_free(&c);
    return st;
}
#endif

/* Alike test_alloc_fail.c:cb_fast: kept apart because that copy records whether an injected failure fell in it. */
static fr_status cb_fast(void *ud, const fr_verify_case *c, fr_fwd_outputs *fo, fr_bwd_outputs *bo, fr_error *err) {
    (void)ud;
    fr_engine e = fr_engine_default(FR_ENGINE_FAST);
    e.num_threads = 1;
    return c->op == FR_VERIFY_FWD ? fr_fwd(c->params, &c->in->fwd, fo, &e, err) : fr_bwd(c->params, c->in, bo, &e, err);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!fr_alloc_hook_enabled()) {
        printf("SKIP: built without -DFR_ALLOC_HOOK=ON\n");
        return 77;
    }
    if (!fault_dirs("enospc", g_root, g_out, g_tmp, g_case)) return 2;
    fr_error err;
    memset(&err, 0, sizeof err);
    /* The earlier state: a suite result, its reports and two history lines written while the disk had room. */
    fr_iut *iut;
    fr_suite_opts o = fr_suite_opts_default();
    o.set = "quick";
    o.filter = "mha";
    o.threads = 1;
    fr_status st = fr_iut_open("fast", &iut, &err);
    if (st == FR_OK) {
        st = fr_suite_run(iut, &o, &g_res, &err);
        fr_iut_close(iut);
    }
    if (st == FR_OK) {
        snprintf(g_out, sizeof g_out, "%s", g_root); /* the earlier reports, in the root */
        st = report_meta_run("report.json", "report.html", "history.jsonl", &err);
        if (st == FR_OK) st = report_meta_run(NULL, NULL, "history.jsonl", &err);
        snprintf(g_out, sizeof g_out, "%s/out", g_root);
        char p[700];
        snprintf(p, sizeof p, "%s/history.jsonl", g_root);
        FILE *f = fopen(p, "rb");
        if (f) {
            g_hist_len = fread(g_hist_before, 1, sizeof g_hist_before, f);
            fclose(f);
        }
    }
    const fr_gen_set *xs = fr_gen_set_find("xcheck");
    if (st == FR_OK) st = xs ? fr_gen_build(&xs->specs[0], 7, &g_gen, &err) : FR_E_INTERNAL;
    if (st == FR_OK) st = fr_gen_case_write(&g_gen, g_case, false, &err);
    if (st == FR_OK) st = fault_verify_quick_mha(cb_fast, &g_vres, &err);
    if (!CHECKED(st == FR_OK && g_hist_len > 0, "setup: %s", err.msg)) return fr_test_exit("test_write_fail");
    const scenario all[] = {
        {"reports", setup_reports, run_reports, "history.jsonl"},
        {"reports_new", NULL, run_reports_new, NULL},
        {"case_write", NULL, run_case, NULL},
        {"suite_write", NULL, run_suite_write, NULL},
        {"verify_html", NULL, run_verify_html, NULL},
#ifdef FR_HAVE_MPI
        {"dist_one_rank", NULL, run_dist, NULL},
#endif
    };
    /* Alike test_alloc_fail.c:main (the scenario selection): kept apart because each test's scenario type differs. */
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        bool want = argc < 2;
        for (int a = 1; a < argc; a++) want |= !strncmp(all[k].name, argv[a], strlen(argv[a]));
        if (want) sweep(&all[k]);
    }
    printf("test_write_fail: %ld runs, %ld with the disk filling\n", g_runs, g_hits);
    fr_verify_result_free(g_vres);
    fr_suite_result_free(&g_res);
    fr_gen_case_free(&g_gen);
    fr_test_rm_rf(g_root);
    return fr_test_exit("test_write_fail");
}
