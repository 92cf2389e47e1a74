/* Allocation-failure injection (docs/reliability.md): every public entry point run with its k-th allocation failing,
 * for every k until a run completes without one (SQLite's malloc test). Each failed run must return FR_E_NOMEM (a
 * failed fopen/opendir: FR_E_NOMEM or FR_E_IO) with a message, free everything it allocated (the hook's live count,
 * and LeakSanitizer over the whole sweep), keep its descriptors, and leave the output folder and TMPDIR as they were
 * (no temporary directory, no partial output file). A build without -DFR_ALLOC_HOOK=ON has no such test.
 *
 *   test_alloc_fail [SCENARIO...]   every scenario, or those whose name starts with one of the arguments
 * FR_OOM_SAMPLE=N caps the k of a sampled scenario (below: the reports, the in-process verifier and the quick-set
 * suite) at N evenly spread values. FR_OOM_TRACE=K: one run per scenario with allocation K failing, its stack printed. */
#include "common/check.h"
#include "common/kit.h"
#include "core/alloc_hook.h"
#include "core/coverage.h"
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
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#include <sanitizer/lsan_interface.h>
#define HAVE_LSAN 1
#endif

static char g_root[512], g_out[600], g_tmp[600], g_case[600];

/* ---------------------------------------------------------------------------------------------------------------- */
/* What a run must leave as it found: a folder's entries (recursively, with sizes), the open descriptors. */

static void list_into(const char *dir, char *buf, size_t cap, size_t *len) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[1200];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(p, &sb) != 0) continue;
        int n = snprintf(buf + *len, cap - *len, "%s:%lld\n", p, (long long)(S_ISDIR(sb.st_mode) ? -1 : sb.st_size));
        if (n > 0 && (size_t)n < cap - *len) *len += (size_t)n;
        if (S_ISDIR(sb.st_mode)) list_into(p, buf, cap, len);
    }
    closedir(d);
}

typedef struct snapshot {
    char out[8192], tmp[8192];
    int fds;
} snapshot;

static int count_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int n = 0;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

static void snap(snapshot *s) {
    size_t a = 0, b = 0;
    s->out[0] = s->tmp[0] = '\0';
    list_into(g_out, s->out, sizeof s->out, &a);
    list_into(g_tmp, s->tmp, sizeof s->tmp, &b);
    s->fds = count_fds();
}

static void empty_out(void) {
    fr_test_rm_rf(g_out);
    mkdir(g_out, 0777);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* The sweep. */

typedef struct scenario {
    const char *name;
    /* Runs the entry point once; frees what it allocated whatever the status (outputs it wrote stay). */
    fr_status (*run)(const struct scenario *s, int item, fr_error *err);
    int items; /* run(s, item) for item 0 .. items - 1, each swept on its own (0: one item) */
    const void *arg;
    int iarg;
    bool sampled; /* FR_OOM_SAMPLE applies */
    /* Fork mode, for runs too long to repeat once per k (in-process runs that keep no files open between
     * allocations): one run, forked at each k tested; the child fails allocation k and is checked, the parent goes
     * on as if nothing happened. */
    bool fork;
} scenario;

static int g_bad_before;
static long g_runs, g_total_k, g_item_allocs, g_item_runs, g_benign;
/* What a run answered (its outputs' bytes, its verdicts, the files it wrote), hashed by the scenario: a run that
 * absorbed a failed allocation (a cache it goes without) must answer exactly what the reference run did. */
static uint64_t g_digest;
static void digest(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) g_digest = (g_digest ^ b[i]) * UINT64_C(1099511628211);
}
static void digest_outputs(const fr_case_outputs *o) {
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        const fr_tensor *t = fr_case_output_cslot(o, (fr_case_output)k);
        if (fr_tensor_present(t) && t->data) digest(t->data, (size_t)fr_tensor_numel(t) * fr_dtype_size(t->dtype));
    }
}
static void digest_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) digest(buf, n);
    fclose(f);
}
static void digest_result(const fr_suite_result *r) {
    for (int k = 0; k < r->n; k++) {
        const fr_case_result *c = &r->cases[k];
        digest(c->name, strlen(c->name));
        digest(&c->j.verdict, sizeof c->j.verdict);
        digest(&c->j.diag, sizeof c->j.diag);
        digest(c->j.why, strlen(c->j.why));
    }
}

/* The checks of one run with allocation k failed (kind: what failed; before: the state before the run). Returns
 * whether the failure was absorbed (FR_OK). */
/* The failed allocation was one the implementation under test made (the callback's own engine call): that is the
 * implementation's failure, judged as its case's verdict, not the verifier's. */
static bool g_failed_in_impl;
/* The bytes the failed allocation asked for (fr_alloc_hook_failed_bytes, read before the hook is reset). */
static size_t g_failed_bytes;

static bool check_failed_run(const scenario *s, int item, long k, fr_status st, int kind, long live, uint64_t ref,
                             const snapshot *before, const fr_error *err) {
    snapshot after;
    snap(&after);
    bool absorbed = st == FR_OK;
    if (absorbed) {
        /* A failure the entry point absorbed (a cache it goes without): acceptable only with the same answer; or the
         * implementation's own failure, which is its case's verdict (any answer). */
        /* Or a case's address-space reservation (1 GiB or more: the quick set's key strided past 2^31 elements,
         * suite_modify.c FR_MOD_KEY_PAST_2G), whose failure SKIPs that case with "cannot reserve" by design: a
         * machine (or a ulimit -v) that cannot hold it runs the rest of the set. */
        bool reservation = g_failed_bytes >= ((size_t)1 << 30);
        CHECK(g_digest == ref || g_failed_in_impl || reservation,
              "%s item %d: allocation %ld failed, the call returned FR_OK with another answer", s->name, item, k);
    } else if (kind == FR_ALLOC_MEM) {
        CHECK(st == FR_E_NOMEM, "%s: allocation %ld failed: status %s (want FR_E_NOMEM): %s", s->name, k,
              fr_status_name(st), err->msg);
    } else {
        CHECK(st == FR_E_NOMEM || st == FR_E_IO, "%s: stream open %ld failed: status %s: %s", s->name, k,
              fr_status_name(st), err->msg);
    }
    CHECK(absorbed || err->msg[0], "%s: allocation %ld: %s without a message", s->name, k, fr_status_name(st));
    CHECK(live == 0, "%s: allocation %ld failed: %ld blocks leaked (%s)", s->name, k, live, err->msg);
    CHECK(after.fds == before->fds, "%s: allocation %ld failed: %d descriptors leaked", s->name, k,
          after.fds - before->fds);
    CHECK(!strcmp(after.tmp, before->tmp), "%s: allocation %ld failed: left in TMPDIR:\n%s", s->name, k, after.tmp);
    CHECK(absorbed || !strcmp(after.out, before->out), "%s: allocation %ld failed (%s): partial output left:\n%s",
          s->name, k, err->msg, after.out);
    return absorbed;
}

/* Fork mode (scenario.fork): the allocations to fail, in order, and where the run stands. */
static long *g_fork_ks, g_fork_n, g_fork_next, g_fork_bad, g_child_k;
static bool g_in_child;

static int fork_observer(long k) {
    if (g_in_child || g_fork_next >= g_fork_n || k != g_fork_ks[g_fork_next]) return 0;
    g_fork_next++;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        g_in_child = true;
        g_child_k = k;
        g_failed_in_impl = false;
        failures = 0;
        return 1;
    }
    int ws = 0;
    if (pid < 0 || waitpid(pid, &ws, 0) != pid) {
        g_fork_bad++;
        printf("FAIL fork at allocation %ld: %s\n", k, pid < 0 ? "fork failed" : "waitpid failed");
    } else if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
        g_fork_bad++;
        if (WIFSIGNALED(ws)) printf("FAIL allocation %ld failed: the run died of signal %d\n", k, WTERMSIG(ws));
    }
    return 0;
}

/* Fork mode: one run, a child per allocation tested. */
static void sweep_forked(const scenario *s, int item, long n, uint64_t ref, long step) {
    g_fork_n = 0;
    g_fork_ks = malloc(sizeof *g_fork_ks * (size_t)(n + 1));
    for (long k = 1; k <= n; k += step) g_fork_ks[g_fork_n++] = k;
    g_fork_next = g_fork_bad = 0;
    empty_out();
    snapshot before;
    snap(&before);
    fr_error err;
    memset(&err, 0, sizeof err);
    g_digest = 0;
    fr_alloc_hook_set(0);
    fr_alloc_hook_observe(fork_observer);
    fr_status st = s->run(s, item, &err);
    fr_alloc_hook_observe(NULL);
    int kind = fr_alloc_hook_failed();
    long live = fr_alloc_hook_live();
    g_failed_bytes = fr_alloc_hook_failed_bytes();
    fr_alloc_hook_set(0);
    if (g_in_child) { /* the child of allocation g_child_k, back from the entry point */
        check_failed_run(s, item, g_child_k, st, kind, live, ref, &before, &err);
        fflush(stdout);
        fr_coverage_flush();
        _exit(failures ? 1 : 0);
    }
    CHECK(st == FR_OK && g_digest == ref, "%s: the forking run differs from the reference run: %s", s->name, err.msg);
    CHECK(g_fork_bad == 0, "%s: %ld of %ld runs with one allocation failing failed their checks (above)", s->name,
          g_fork_bad, g_fork_next);
    g_runs += g_fork_next;
    g_total_k += g_fork_next;
    g_item_allocs += n;
    g_item_runs += g_fork_next;
    if (step > 1) printf("%-24s sampled: every %ld-th of %ld allocations\n", s->name, step, n);
    free(g_fork_ks);
    g_fork_ks = NULL;
}

/* FR_OOM_TRACE=K (ASan builds): one run of each scenario named, in-process, with allocation K failing and its stack
 * printed: which call a failed check is about. */
static long g_trace_k;
static int trace_observer(long k) {
#ifdef HAVE_LSAN
    if (k == g_trace_k) {
        printf("allocation %ld:\n", k);
        fflush(stdout);
        __sanitizer_print_stack_trace();
    }
#endif
    return k == g_trace_k; /* the observer makes it fail */
}

static void sweep_item(const scenario *s, int item) {
    fr_error err;
    memset(&err, 0, sizeof err);
    empty_out();
    fr_alloc_hook_set(0);
    g_digest = 0;
    fr_status st = s->run(s, item, &err);
    uint64_t ref = g_digest;
    long n = fr_alloc_hook_count(), live = fr_alloc_hook_live();
    if (!CHECKED(st == FR_OK, "%s: reference run: %s: %s", s->name, fr_status_name(st), err.msg)) return;
    CHECK(live == 0, "%s: reference run: %ld blocks not freed", s->name, live);
    if (getenv("FR_OOM_COUNT_ONLY")) {
        printf("%s item %d: %ld allocations\n", s->name, item, n);
        return;
    }
    if (getenv("FR_OOM_TRACE")) { /* one run, in-process, allocation K failing, its stack printed */
        g_trace_k = atol(getenv("FR_OOM_TRACE"));
        empty_out();
        memset(&err, 0, sizeof err);
        g_digest = 0;
        g_failed_in_impl = false;
        fr_alloc_hook_set(0);
        fr_alloc_hook_observe(trace_observer);
        st = s->run(s, item, &err);
        fr_alloc_hook_observe(NULL);
        fr_alloc_hook_set(0);
        printf("%s item %d, allocation %ld failed: %s, %s%s: %s\n", s->name, item, g_trace_k, fr_status_name(st),
               g_digest == ref ? "same answer" : "another answer", g_failed_in_impl ? " (in the implementation)" : "",
               err.msg);
        return;
    }
    long sample = 0;
    const char *e = getenv("FR_OOM_SAMPLE");
    if (s->sampled && e) sample = atol(e);
    long step = sample > 0 && n > sample ? (n + sample - 1) / sample : 1;
    if (s->fork) {
        sweep_forked(s, item, n, ref, step);
        return;
    }
    long tested = 0, benign = 0;
    for (long k = 1;; k += step) {
        if (failures - g_bad_before >= 10) {
            printf("%s: stopping after 10 failed checks\n", s->name);
            break;
        }
        empty_out();
        snapshot before;
        snap(&before);
        memset(&err, 0, sizeof err);
        g_digest = 0;
        g_failed_in_impl = false;
        fr_alloc_hook_set(k);
        st = s->run(s, item, &err);
        int kind = fr_alloc_hook_failed();
        live = fr_alloc_hook_live();
        g_failed_bytes = fr_alloc_hook_failed_bytes();
        fr_alloc_hook_set(0);
        g_runs++;
        if (kind == FR_ALLOC_NONE) break; /* the run completed without reaching allocation k: every k done */
        tested++;
        benign += check_failed_run(s, item, k, st, kind, live, ref, &before, &err);
    }
    g_total_k += tested;
    g_item_allocs += n;
    g_item_runs += tested;
    if (step > 1) printf("%-28s sampled: every %ld-th of %ld allocations (FR_OOM_SAMPLE=%ld)\n", s->name, step, n, sample);
    g_benign += benign;
}

static void sweep(const scenario *s) {
    g_bad_before = failures;
    g_item_allocs = g_item_runs = g_benign = 0;
    for (int i = 0; i < (s->items > 0 ? s->items : 1); i++) sweep_item(s, i);
    printf("%-24s %3d item%s %7ld allocations, %7ld runs with one failing (%ld absorbed, same answer)\n", s->name,
           s->items > 0 ? s->items : 1, s->items > 1 ? "s" : " ", g_item_allocs, g_item_runs, g_benign);
#ifdef HAVE_LSAN
    CHECK(__lsan_do_recoverable_leak_check() == 0, "%s: LeakSanitizer found leaks (above)", s->name);
#endif
    empty_out();
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Scenarios. */

static fr_gen_case g_cases[64];
static int g_ncases;

/* fwd or bwd of xcheck case `item` on one engine. */
static fr_status run_engine(const scenario *s, int item, fr_error *err) {
    fr_engine e = fr_engine_default((fr_engine_kind)s->iarg);
    e.num_threads = 1;
    const fr_gen_case *g = &g_cases[item];
    fr_case_outputs o;
    fr_status st = fr_case_alloc_outputs_parts(g->bwd ? FR_CASE_BWD : FR_CASE_FWD, &g->params, &g->in,
                                               s->iarg == FR_ENGINE_GOLDEN, &o, err);
    if (st != FR_OK) return st;
    st = g->bwd ? fr_bwd(&g->params, &g->in, &o.bwd, &e, err) : fr_fwd(&g->params, &g->in.fwd, &o.fwd, &e, err);
    if (st == FR_OK) digest_outputs(&o);
    fr_case_outputs_free(&o);
    return st;
}

/* A case written (inputs, outputs) and loaded back. */
static fr_status run_case_io(const scenario *s, int item, fr_error *err) {
    const fr_gen_case *g = &g_cases[item];
    char dir[700];
    snprintf(dir, sizeof dir, "%s/case", g_out);
    fr_status st = fr_case_write_parts(dir, g->bwd ? FR_CASE_BWD : FR_CASE_FWD, g->dtype, &g->params, &g->in, err);
    if (st != FR_OK) return st;
    /* From here on the case is whole: a failure below must leave exactly it, and its outputs once written whole
     * (then the folder is removed, so that the sweep's check of the output folder sees what a failed write must
     * leave: nothing). */
    char written[8192];
    size_t wl = 0;
    written[0] = '\0';
    list_into(dir, written, sizeof written, &wl);
    fr_case c;
    st = fr_case_load(dir, &c, err);
    if (st == FR_OK) {
        fr_case_outputs o;
        st = fr_case_alloc_outputs(&c, false, &o, err);
        if (st == FR_OK) {
            st = fr_case_write_outputs(dir, &o, err);
            fr_case_outputs_free(&o);
        }
        if (st == FR_OK) { /* the outputs are whole now: a failure below must leave them so */
            wl = 0;
            list_into(dir, written, sizeof written, &wl);
        }
        if (st == FR_OK) {
            st = fr_case_load_outputs(&c, dir, &o, err);
            if (st == FR_OK) digest_outputs(&o), fr_case_outputs_free(&o);
        }
        fr_case_free(&c);
    }
    if (st != FR_OK) {
        char now[8192];
        size_t nl = 0;
        now[0] = '\0';
        list_into(dir, now, sizeof now, &nl);
        CHECK(!strcmp(now, written), "case_io: a failed load or output write (%s) changed the case folder:\n%s\nwas:\n%s", err->msg, now, written);
        fr_test_rm_rf(dir);
    }
    return st;
}

static fr_status run_suite(const scenario *s, int item, fr_error *err) {
    fr_iut *iut;
    fr_status st = fr_iut_open((const char *)s->arg, &iut, err);
    if (st != FR_OK) return st;
    fr_suite_opts o = fr_suite_opts_default();
    o.set = "quick";
    o.threads = 1;
    if (s->iarg) o.filter = "mha"; /* a few cases (external implementations) */
    fr_suite_result r;
    st = fr_suite_run(iut, &o, &r, err);
    fr_iut_close(iut);
    if (st == FR_OK) digest_result(&r);
    fr_suite_result_free(&r);
    return st;
}

/* A small suite result, computed once, for the report writers. */
static fr_suite_result g_res;

static fr_status run_reports(const scenario *s, int item, fr_error *err) {
    (void)s;
    fr_judge_opts jo = fr_judge_opts_default();
    fr_report_meta m = {"fast", "quick", 1, &jo};
    char p[700];
    snprintf(p, sizeof p, "%s/r.json", g_out);
    fr_status st = fr_report_json(p, &g_res, &m, err);
    snprintf(p, sizeof p, "%s/r.html", g_out);
    if (st == FR_OK) st = fr_report_html(p, &g_res, &m, err);
    snprintf(p, sizeof p, "%s/h.jsonl", g_out);
    FILE *null = fopen("/dev/null", "w");
    if (st == FR_OK) st = fr_report_history(p, null, &g_res, &m, err);
    if (st == FR_OK) st = fr_report_history(p, null, &g_res, &m, err); /* a second run reads the first */
    fclose(null);
    static const char *const files[] = {"r.json", "r.html"}; /* history lines hold the time: not digested */
    static long long whole[2] = {-1, -1}; /* each report's size in the reference run */
    for (int k = 0; k < 2; k++) {
        snprintf(p, sizeof p, "%s/%s", g_out, files[k]);
        struct stat sb;
        if (st == FR_OK) {
            digest_file(p);
            if (whole[k] < 0 && stat(p, &sb) == 0) whole[k] = (long long)sb.st_size;
        } else if (stat(p, &sb) == 0) {
            /* A report written before a later one failed stays, whole: checked here, then removed so that the sweep's
             * check (nothing left by a failed run) sees the rest. */
            CHECK(whole[k] >= 0 && (long long)sb.st_size == whole[k], "reports: %s left by a failed run is %lld bytes, "
                  "whole it is %lld", files[k], (long long)sb.st_size, whole[k]);
            unlink(p);
        }
    }
    snprintf(p, sizeof p, "%s/h.jsonl", g_out);
    FILE *h = st != FR_OK ? fopen(p, "rb") : NULL;
    if (h) { /* the first history line, appended before the second call failed: whole lines only */
        char buf[1 << 16];
        size_t n = fread(buf, 1, sizeof buf, h);
        fclose(h);
        CHECK(n > 0 && buf[n - 1] == '\n', "reports: a failed run left a partial history line (%zu bytes)", n);
        unlink(p);
    }
    return st;
}

/* flashref verify: the case directories of the set written with outputs, judged. */
static fr_status run_verify(const scenario *s, int item, fr_error *err) {
    (void)s;
    char *dirs[1] = {g_case};
    fr_suite_opts o = fr_suite_opts_default();
    fr_suite_result r;
    fr_status st = fr_suite_verify_dirs(dirs, 1, &o, &r, err);
    if (st == FR_OK) digest_result(&r);
    fr_suite_result_free(&r);
    return st;
}

/* The in-process verifier API (what the Python package calls): a callback, JSON and HTML of its result. */
/* Alike test_write_fail.c:cb_fast: kept apart because this test's copy may record where the failure fell. */
static fr_status cb_fast(void *ud, const fr_verify_case *c, fr_fwd_outputs *fo, fr_bwd_outputs *bo, fr_error *err) {
    (void)ud;
    fr_engine e = fr_engine_default(FR_ENGINE_FAST);
    e.num_threads = 1;
    bool before = fr_alloc_hook_failed() != FR_ALLOC_NONE;
    fr_status st =
        c->op == FR_VERIFY_FWD ? fr_fwd(c->params, &c->in->fwd, fo, &e, err) : fr_bwd(c->params, c->in, bo, &e, err);
    if (!before && fr_alloc_hook_failed() != FR_ALLOC_NONE) g_failed_in_impl = true;
    return st;
}

static fr_status run_verify_api(const scenario *s, int item, fr_error *err) {
    (void)s;
    fr_verify_opts o = fr_verify_opts_default();
    o.set = "quick";
    o.filter = "mha";
    o.threads = 1;
    fr_verify_result *r = NULL;
    fr_status st = fr_verify_run_callback(&o, cb_fast, NULL, &r, err);
    if (st != FR_OK) return st;
    int overall = fr_verify_result_overall(r), n = fr_verify_result_count(r);
    digest(&overall, sizeof overall);
    digest(&n, sizeof n);
    fr_verify_result_free(r);
    return st;
}

/* The in-process verifier's JSON (through a temporary file, read back) and HTML of one result: in-process, not in
 * fork mode, since a forked child that fails would remove the temporary file its parent is writing. */
static fr_verify_result *g_vres;
static fr_status run_verify_api_reports(const scenario *s, int item, fr_error *err) {
    (void)s;
    char *json = NULL;
    fr_status st = fr_verify_result_json(g_vres, &json, err);
    if (st == FR_OK) digest(json, strlen(json) > 200 ? 200 : strlen(json)); /* past the header: times */
    fr_verify_free(json);
    char p[700];
    snprintf(p, sizeof p, "%s/v.html", g_out);
    if (st == FR_OK) st = fr_verify_result_html(g_vres, p, err);
    return st;
}

/* flashref verify --msprobe (fr_verify_msprobe) on the dump msprobe wrote (tests/data/msprobe/dump): its TND call,
 * forward and backward (dump.json parsed whole, torch.save files read, both calls rebuilt and judged), and the JSON. */
static fr_status run_verify_msprobe(const scenario *s, int item, fr_error *err) {
    (void)s;
    (void)item;
    fr_verify_opts o = fr_verify_opts_default();
    o.filter = "npu_fusion_attention.2.";
    o.threads = 1;
    fr_verify_result *r = NULL;
    fr_status st = fr_verify_msprobe(&o, FR_MSPROBE_DUMP, NULL, NULL, &r, err);
    if (st != FR_OK) return st;
    char *json = NULL;
    st = fr_verify_result_json(r, &json, err);
    if (st == FR_OK) digest(json, strlen(json) > 200 ? 200 : strlen(json)); /* past the header: times */
    fr_verify_free(json);
    fr_verify_result_free(r);
    return st;
}

#ifdef FR_HAVE_MPI
/* The MPI layer as one process (rank 0 of 1, MPI not initialised): one problem, a case loaded and run into its
 * folder, and the suite's gather. */
/* Alike test_write_fail.c:run_dist: kept apart because each test's scenario checks a different failure around it. */
static fr_status run_dist(const scenario *s, int item, fr_error *err) {
    (void)s;
    fr_dist d = {0, 1, 0};
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    e.num_threads = 1;
    fr_case c;
    fr_status st = fr_dist_case_load(&d, g_case, &e, &c, NULL, NULL, err);
    if (st != FR_OK) return st;
    fr_case_outputs o;
    st = fr_case_alloc_outputs(&c, false, &o, err);
    if (st == FR_OK) {
        st = c.op == FR_CASE_FWD ? fr_dist_fwd(&d, &c.params, &c.in.fwd, &o.fwd, &e, err)
                                 : fr_dist_bwd(&d, &c.params, &c.in, &o.bwd, &e, err);
        if (st == FR_OK) digest_outputs(&o);
        if (st == FR_OK) st = fr_dist_run_to_dir(&d, &c, &o, &e, g_out, NULL, err);
        fr_case_outputs_free(&o);
    }
    fr_case_free(&c);
    return st;
}
#endif

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* One OpenMP thread, so that the k-th allocation is the same one in every run and fork mode may fork. The
     * runtime reads the variables when it loads: set them and start again. OMP_THREAD_LIMIT too: the suite's
     * determinism runs ask for 2 threads by name (num_threads), and libgomp keeps the pool thread they start; a
     * child forked after that waits forever at the next parallel region's barrier for a thread it does not have. */
    const char *omp = getenv("OMP_NUM_THREADS"), *lim = getenv("OMP_THREAD_LIMIT");
    if ((!omp || strcmp(omp, "1") || !lim || strcmp(lim, "1")) && !getenv("FR_OOM_REEXEC")) {
        setenv("OMP_NUM_THREADS", "1", 1);
        setenv("OMP_THREAD_LIMIT", "1", 1);
        setenv("FR_OOM_REEXEC", "1", 1);
        execv("/proc/self/exe", argv);
    }
    if (!fr_alloc_hook_enabled()) {
        printf("SKIP: built without -DFR_ALLOC_HOOK=ON\n");
        return 77;
    }
    if (!fault_dirs("oom", g_root, g_out, g_tmp, g_case)) return 2;
    fr_error err;
    const fr_gen_set *xs = fr_gen_set_find("xcheck");
    for (int k = 0; xs && k < xs->count && g_ncases < 64; k++)
        if (fr_gen_build(&xs->specs[k], 7, &g_cases[g_ncases], &err) == FR_OK) g_ncases++;
    printf("test_alloc_fail: %d xcheck cases (seed 7)\n", g_ncases);
    /* One forward case written with its outputs for verify and the MPI layer. */
    fr_status st = fr_gen_case_write(&g_cases[0], g_case, false, &err);
    if (st == FR_OK) {
        fr_iut *iut;
        fr_suite_opts o = fr_suite_opts_default();
        o.set = "quick";
        o.filter = "mha";
        if ((st = fr_iut_open("fast", &iut, &err)) == FR_OK) {
            st = fr_suite_run(iut, &o, &g_res, &err);
            fr_iut_close(iut);
        }
    }
    if (st == FR_OK) st = fault_verify_quick_mha(cb_fast, &g_vres, &err);
    if (!CHECKED(st == FR_OK, "setup: %s", err.msg)) return fr_test_exit("test_alloc_fail");
    const scenario all[] = {
        {"fwd_bwd_golden", run_engine, g_ncases, NULL, FR_ENGINE_GOLDEN, false, false},
        {"fwd_bwd_fast", run_engine, g_ncases, NULL, FR_ENGINE_FAST, false, false},
        {"fwd_bwd_emulate", run_engine, g_ncases, NULL, FR_ENGINE_EMULATE, false, false},
        {"case_io", run_case_io, g_ncases, NULL, 0, false, false},
        {"reports", run_reports, 0, NULL, 0, true, false},
        {"verify_dirs", run_verify, 0, NULL, 0, false, false},
        {"verify_api_callback", run_verify_api, 0, NULL, 0, true, true},
        {"verify_msprobe", run_verify_msprobe, 0, NULL, 0, true, false},
        {"verify_api_reports", run_verify_api_reports, 0, NULL, 0, true, false},
#ifdef FR_HAVE_MPI
        {"dist_one_rank", run_dist, 0, NULL, 0, false, false},
#endif
        {"suite_exec", run_suite, 0, "exec:sh -c 'exit 77'", 1, false, false},
        {"suite_quick_fast", run_suite, 0, "fast", 0, true, true},
    };
    /* Alike test_write_fail.c:main (the scenario selection): kept apart because each test's scenario type differs. */
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        bool want = argc < 2;
        for (int a = 1; a < argc; a++) want |= !strncmp(all[k].name, argv[a], strlen(argv[a]));
        if (want) sweep(&all[k]);
    }
    printf("test_alloc_fail: %ld runs, %ld with an injected failure\n", g_runs, g_total_k);
    fr_suite_result_free(&g_res);
    fr_verify_result_free(g_vres);
    for (int k = 0; k < g_ncases; k++) fr_gen_case_free(&g_cases[k]);
    fr_test_rm_rf(g_root);
    return fr_test_exit("test_alloc_fail");
}
