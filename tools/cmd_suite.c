/* flashref suite: run a named set of cases against an implementation under test and judge every case. */
#include "cmd_suite.h"
#include "cli.h"
#include "io/io_util.h"
#include "verify/report/coverage.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void suite_cli_help(FILE *f) {
    fprintf(f,
            "  --filter STR       only cases whose name contains STR\n"
            "  --only NAME        only the case called NAME (rnd_K: draw K of the random batch of --seed)\n"
            "  --seed N           generator seed (default 20260101; with --random: a fresh one, printed)\n"
            "  --threads N        threads of a built-in implementation (0 = default)\n"
            "  --json FILE        every number of every case, machine-readable\n"
            "  --report FILE.html one self-contained page: summary, failing cases, heat maps, histograms\n"
            "  --history FILE     JSON lines of past runs: print what changed since the last run, then append\n"
            "  --timeout SECONDS  per-case limit for plugin:, exec: and persistent: implementations (running the\n"
            "                     case and reading its outputs; default FLASHREF_EXEC_TIMEOUT, else 600)\n"
            "  --allow-empty      exit 0 when nothing was judged (every case SKIP, or none matched --filter)\n"
            "  --k-out X --k-max X --k-grad X --k-stats X --gain-warn X --growth-warn X --warn-frac X\n"
            "                     thresholds (printed at the start of every run)\n"
            "  --standard S       flashref (default: k x max(plain, ideal), WARN band, row gain), ascend-L0,\n"
            "                     ascend-L1, ascend-L2 (dual benchmark against the plain reference), fa (2 x plain)\n"
            "  --external         treat fully masked rows as implementation-defined (D1; default for non-built-ins)\n"
            "  --inner-precise N  every case (generated, regression, --write) runs with inner_precise N (0, 1, 2;\n"
            "                     docs/semantics-decisions.md D17) instead of its own case.json value\n"
            "  -v                 print every case, not only those that did not pass\n"
            "environment: FLASHREF_EXEC_TIMEOUT=SECONDS the default per-case timeout (600);\n"
            "  FLASHREF_KEEP_TMP=1 keep the temporary case directories of exec:/persistent: runs (messages name them);\n"
            "  progress: a live line on a terminal; otherwise a plain 'N of M cases done' line on stderr at most\n"
            "  every 30 s (FLASHREF_PROGRESS=1: every second, =0: never; --quiet: none)\n");
}

void suite_cli_help_exit(FILE *f) {
    fprintf(f, "exit status: 0 every judged case PASS or WARN; 1 any FAIL; 2 usage or input error (bad option,\n"
               "  unreadable case, report path not writable); 3 nothing judged (all SKIP, or no case matched;\n"
               "  --allow-empty makes it 0); 4 stopped early after 5 identical consecutive errors of the\n"
               "  implementation (it cannot start)\n");
}

/* A path the run will write: an existing regular file we may write, or a new name in a writable directory. */
static bool writable(const char *cmd, const char *opt, const char *path) {
    struct stat sb;
    const char *why = NULL;
    int e = 0;
    if (stat(path, &sb) == 0) {
        if (!S_ISREG(sb.st_mode)) why = S_ISDIR(sb.st_mode) ? "is a directory" : "not a regular file";
        else if (access(path, W_OK) != 0) e = errno;
    } else if (errno != ENOENT) {
        e = errno;
    } else {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (!slash) snprintf(dir, sizeof dir, ".");
        else if (slash == dir) dir[1] = '\0';
        else *slash = '\0';
        if (stat(dir, &sb) != 0) e = errno;
        else if (!S_ISDIR(sb.st_mode)) e = ENOTDIR;
        else if (access(dir, W_OK | X_OK) != 0) e = errno;
    }
    if (!why && !e) return true;
    fprintf(stderr, "flashref %s: %s %s: cannot write: %s\n", cmd, opt, path, why ? why : strerror(e));
    return false;
}

bool suite_cli_begin(int argc, char **argv, suite_cli *s, void (*usage)(FILE *)) {
    if (cli_wants_help(argc, argv)) {
        usage(stdout);
        return false;
    }
    memset(s, 0, sizeof *s);
    s->o = fr_suite_opts_default();
    return true;
}

bool suite_cli_check_set(const char *cmd, const suite_cli *s) {
    if (fr_suite_set_known(s->o.set)) return true;
    fprintf(stderr, "flashref %s: --set: '%s' (quick, default, long or all)\n", cmd, s->o.set);
    return false;
}

/* A folder the run will create or add to: an existing directory we may write, or a new name in a writable one. */
static bool writable_dir(const char *cmd, const char *opt, const char *path) {
    struct stat sb;
    int e = 0;
    const char *why = NULL;
    if (stat(path, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode)) why = "exists and is not a directory";
        else if (access(path, W_OK | X_OK) != 0) e = errno;
    } else if (errno != ENOENT) {
        e = errno;
    } else {
        return writable(cmd, opt, path); /* a new name: its parent must be a writable directory */
    }
    if (!why && !e) return true;
    fprintf(stderr, "flashref %s: %s %s: cannot write: %s\n", cmd, opt, path, why ? why : strerror(e));
    return false;
}

bool suite_cli_check_paths(const char *cmd, const suite_cli *s) {
    bool ok = true;
    /* --promote is written after every draw ran: refused now, not after the run (issue 28 row 11) */
    if (s->o.promote_dir) ok = writable_dir(cmd, "--promote", s->o.promote_dir) && ok;
    if (s->json) ok = writable(cmd, "--json", s->json) && ok;
    if (s->html) ok = writable(cmd, "--report", s->html) && ok;
    if (s->history) ok = writable(cmd, "--history", s->history) && ok;
    if (s->o.regression_dir) {
        struct stat sb;
        if (stat(s->o.regression_dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            fprintf(stderr, "flashref %s: --regression %s: %s\n", cmd, s->o.regression_dir,
                    errno && !S_ISDIR(sb.st_mode) ? strerror(errno) : "not a directory");
            ok = false;
        } else if (access(s->o.regression_dir, R_OK | X_OK) != 0) {
            fprintf(stderr, "flashref %s: --regression %s: %s\n", cmd, s->o.regression_dir, strerror(errno));
            ok = false;
        }
    }
    return ok;
}

static int parse_double(const char *cmd, const char *opt, const char *v, double *out) {
    char *end;
    double d = strtod(v, &end);
    if (*end || end == v || !(d > 0)) {
        fprintf(stderr, "flashref %s: %s: '%s' is not a positive number\n", cmd, opt, v);
        return -1;
    }
    *out = d;
    return 1;
}

int suite_cli_option(const char *cmd, int argc, char **argv, int *i, suite_cli *s) {
    const char *a = argv[*i];
    bool has = *i + 1 < argc;
#define VAL() (has ? argv[++*i] : NULL)
    if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) return s->verbose = true, 1;
    if (!strcmp(a, "--quiet")) return s->quiet = true, 1;
    if (!strcmp(a, "--external")) return s->o.judge.external = true, 1;
    if (!strcmp(a, "--list")) return s->list = true, 1;
    if (!strcmp(a, "--allow-empty")) return s->allow_empty = true, 1;
    if (!strcmp(a, "--no-shrink")) return s->o.shrink = false, 1;
    if (!strcmp(a, "--coverage")) return s->coverage = true, 1;
    if (!strcmp(a, "--force")) return s->force = true, 1;
    static const char *const kv[] = {
        "--filter", "--seed",    "--threads",   "--json", "--report", "--history",    "--k-out", "--k-max",
        "--k-grad", "--k-stats", "--gain-warn", "--impl", "--set",    "--regression", "--write", "--growth-warn",
        "--timeout", "--standard", "--warn-frac", "--only", "--random", "--promote", "--inner-precise"};
    int which = -1;
    for (int k = 0; k < (int)(sizeof kv / sizeof kv[0]); k++)
        if (!strcmp(a, kv[k])) which = k;
    if (which < 0) return 0;
    const char *v = VAL();
    if (!v) {
        fprintf(stderr, "flashref %s: %s needs a value\n", cmd, a);
        return -1;
    }
    char *end;
    switch (which) {
    case 0: s->o.filter = v; return 1;
    case 1:
        /* strtoull takes "-5" as 2^64 - 5 and saturates on overflow: neither is a seed anyone meant. */
        errno = 0;
        s->o.seed = strtoull(v, &end, 10);
        if (*end || end == v || v[0] == '-' || v[0] == '+' || v[0] == ' ' || errno == ERANGE) {
            fprintf(stderr, "flashref %s: --seed: '%s' is not a number in 0..18446744073709551615\n", cmd, v);
            return -1;
        }
        s->seed_set = true;
        return 1;
    case 2: {
        long t = strtol(v, &end, 10);
        if (*end || end == v || t < 0 || t > 4096) {
            fprintf(stderr, "flashref %s: --threads: '%s' is not a count in 0..4096\n", cmd, v);
            return -1;
        }
        s->o.threads = (int)t;
        return 1;
    }
    case 3: s->json = v; return 1;
    case 4: s->html = v; return 1;
    case 5: s->history = v; return 1;
    case 6: return parse_double(cmd, a, v, &s->o.judge.k_out);
    case 7: return parse_double(cmd, a, v, &s->o.judge.k_max);
    case 8: return parse_double(cmd, a, v, &s->o.judge.k_grad);
    case 9: return parse_double(cmd, a, v, &s->o.judge.k_stats);
    case 10: return parse_double(cmd, a, v, &s->o.judge.gain_warn);
    case 11: s->impl = v; return 1;
    case 12: s->o.set = v; return 1;
    case 13: s->o.regression_dir = v; return 1;
    case 14: s->write_dir = v; return 1;
    case 15: return parse_double(cmd, a, v, &s->o.judge.growth_warn);
    case 16: {
        int r = parse_double(cmd, a, v, &s->timeout);
        if (r > 0 && !(s->timeout <= 1e9)) {
            fprintf(stderr, "flashref %s: --timeout: '%s' is not a number of seconds in (0, 1e9]\n", cmd, v);
            return -1;
        }
        return r;
    }
    case 17: {
        fr_error e;
        if (fr_standard_parse(v, &s->o.judge.standard, &e) != FR_OK) {
            fprintf(stderr, "flashref %s: %s\n", cmd, e.msg);
            return -1;
        }
        return 1;
    }
    case 18: return parse_double(cmd, a, v, &s->o.judge.warn_frac);
    case 19: s->o.only = v; return 1;
    case 20: {
        long n = strtol(v, &end, 10);
        if (*end || end == v || n < 1 || n > FR_SUITE_MAX_RANDOM) {
            fprintf(stderr, "flashref %s: --random: '%s' is not a count in 1..%d\n", cmd, v, FR_SUITE_MAX_RANDOM);
            return -1;
        }
        s->o.random = (int)n;
        return 1;
    }
    case 21: s->o.promote_dir = v; return 1;
    case 22: {
        long ip = strtol(v, &end, 10);
        if (*end || end == v || ip < 0 || ip > 2) {
            fprintf(stderr, "flashref %s: --inner-precise: '%s' is not 0, 1 or 2\n", cmd, v);
            return -1;
        }
        s->o.set_inner_precise = true;
        s->o.inner_precise = (int)ip;
        return 1;
    }
    }
#undef VAL
    return 0;
}

bool suite_cli_take(const char *cmd, const char *what, int argc, char **argv, int *i, suite_cli *s,
                    void (*usage)(FILE *)) {
    int r = suite_cli_option(cmd, argc, argv, i, s);
    if (r == 0) {
        fprintf(stderr, "flashref %s: unknown %s '%s'\n", cmd, what, argv[*i]);
        usage(stderr);
    }
    return r > 0;
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Alike cli_progress.c:draw: kept apart because this one counts cases and their verdicts (a suite's callback),
 * that one an engine's work units; only the terminal-or-log switch is alike. */
void suite_cli_progress(void *ud, int done, int total, const fr_case_result *last) {
    (void)ud;
    const char *env = getenv("FLASHREF_PROGRESS");
    bool forced = env && !strcmp(env, "1");
    if (!last || (env && !strcmp(env, "0"))) return;
    if (isatty(2) && !forced) {
        fprintf(stderr, "\r\033[K[%d/%d] %-4s %s (%.1f s)", done, total, fr_verdict_name(last->j.verdict),
                last->name, last->seconds);
        if (done == total) fprintf(stderr, "\r\033[K");
        fflush(stderr);
        return;
    }
    /* Not a terminal (a CI log, a pipe): a plain line at most every 30 s, so that a long run shows it is alive
     * without filling the log; a run shorter than that prints none (FLASHREF_PROGRESS=1: every second). */
    static double t0, last_t;
    static int fails;
    double t = mono_s();
    if (done <= 1) t0 = t, last_t = forced ? -1e30 : t, fails = 0; /* forced: from the first case on */
    fails += last->j.verdict == FR_FAIL;
    if (done >= total || t - last_t < (forced ? 1.0 : 30.0)) return;
    last_t = t;
    fprintf(stderr, "flashref: %d of %d cases done, %d FAIL so far, %.0f s\n", done, total, fails, t - t0);
    fflush(stderr);
}

/* One report of suite_cli_finish (--json or --report): writer writes it to path, then "LABELpath" on stdout unless
 * quiet. False (and "flashref CMD: OPTION: REASON" on stderr) when it could not be written. */
static bool write_report(const char *cmd, const char *option, const char *label, const char *path,
                         fr_status (*writer)(const char *, const fr_suite_result *, const fr_report_meta *, fr_error *),
                         bool quiet, const fr_suite_result *r, const fr_report_meta *m) {
    fr_error err;
    memset(&err, 0, sizeof err);
    if (writer(path, r, m, &err) != FR_OK) {
        fprintf(stderr, "flashref %s: %s: %s\n", cmd, option, err.msg);
        return false;
    }
    if (!quiet) printf("%s%s\n", label, path);
    return true;
}

int suite_cli_finish(const char *cmd, const suite_cli *s, const fr_suite_result *r) {
    fr_report_meta m = {s->impl, s->o.random ? "random" : s->o.set, s->o.seed, &s->o.judge};
    if (!s->quiet) {
        for (int k = 0; k < r->n; k++) {
            const fr_case_result *c = &r->cases[k];
            if (!s->verbose && c->j.verdict != FR_FAIL && c->j.verdict != FR_WARN) continue;
            fr_report_case_line(stdout, c);
            if (!c->config[0] || c->j.verdict == FR_PASS) continue;
            /* a random draw: everything needed to run it again, alone */
            printf("      configuration: %s\n", c->config);
            printf("      re-run alone:  flashref suite --impl %s --only %s --seed %llu   (case dir: add --write DIR;"
                   " regression case: --promote DIR)\n",
                   s->impl ? s->impl : "fast", c->name, (unsigned long long)s->o.seed);
            if (c->smallest[0])
                printf("      smallest failing the same way (%d runs): %s\n", c->shrink_runs, c->smallest);
        }
    }
    int judged = 0;
    for (int k = 0; k < r->n; k++) judged += r->cases[k].j.verdict != FR_SKIP;
    int rc = r->overall == FR_FAIL ? SUITE_EXIT_FAIL : SUITE_EXIT_OK;
    fr_error err;
    memset(&err, 0, sizeof err);
    if (s->history && fr_report_history(s->history, stdout, r, &m, &err) != FR_OK) {
        fprintf(stderr, "flashref %s: --history: %s\n", cmd, err.msg);
        rc = 2;
    }
    if (!s->quiet) {
        fr_report_summary(stdout, r, &m);
        fr_coverage_report cov;
        if (fr_coverage_report_of(r, &cov, NULL) == FR_OK) {
            if (cov.cases) fr_coverage_print_line(stdout, &cov);
            fr_coverage_report_free(&cov);
        }
    }
    if (s->json && !write_report(cmd, "--json", "json:   ", s->json, fr_report_json, s->quiet, r, &m)) rc = 2;
    if (s->html && !write_report(cmd, "--report", "report: ", s->html, fr_report_html, s->quiet, r, &m)) rc = 2;
    /* A case that could not be used (a broken or invalid case directory, a stored golden that cannot be loaded or
     * that a fresh ideal pipeline contradicts) is an input error, never the implementation's FAIL. */
    int bad = 0;
    for (int k = 0; k < r->n; k++) bad += r->cases[k].input_error;
    if (bad) {
        fprintf(stderr, "flashref %s: %d case%s could not be loaded or judged (input error, exit 2): see above\n", cmd,
                bad, bad == 1 ? "" : "s");
        rc = SUITE_EXIT_INPUT;
    }
    if (r->stopped[0]) {
        fprintf(stderr, "flashref %s: %s\n", cmd, r->stopped);
        rc = SUITE_EXIT_STOPPED;
    } else if (!judged && rc != SUITE_EXIT_INPUT) {
        fprintf(stderr, "flashref %s: nothing was judged (%d case%s, %s)%s\n", cmd, r->n, r->n == 1 ? "" : "s",
                r->n ? "every one SKIP" : "none matched", s->allow_empty ? "; --allow-empty: exit 0" : "; exit 3");
        if (!s->allow_empty) rc = SUITE_EXIT_EMPTY;
    }
    fflush(stdout);
    return rc;
}

/* Alike cmd_selftest.c:selftest_usage: kept apart because each is its command's own help text (strings, not logic);
 * the option help they share is suite_cli_help. */
static void suite_usage(FILE *f) {
    fprintf(f, "usage: flashref suite [--impl IUT] [--set quick|default|long|all] [--list] [options]\n"
               "  Runs every case of the set against the implementation under test, the fp64 golden and the ideal\n"
               "  pipeline of the case's dtype, and judges each case PASS / WARN / FAIL / SKIP with a diagnosis.\n"
               "  --impl IUT         fast[:ISA] (default), golden, emulate[:PRESET], plugin:PATH.so,\n"
               "                     exec:\"CMD ARGS\" (run as CMD ARGS CASE_DIR; exit 77 = SKIP),\n"
               "                     persistent:\"CMD ARGS\" (started once, case directories on its stdin), mutant:NAME\n"
               "  --set NAME         quick (< 30 s), default (< 3 min on 2 cores), long (> 32K / 64K keys), all\n"
               "  --list             list the cases of the set and exit\n"
               "  --regression DIR   stored regression cases (case dirs with golden/ outputs)\n"
               "  --write DIR        write the set's cases (inputs, golden/ outputs) as case directories and exit;\n"
               "                     run them elsewhere, then `flashref verify DIR/*`. DIR must be new or empty\n"
               "                     (never merged with old cases) and not a symbolic link\n"
               "  --force            with --write: remove what DIR holds first (links removed, never followed)\n"
               "  --random N         instead of the set, N configurations drawn from the option matrix (greedy for\n"
               "                     pairs of axis values the default set leaves uncovered); each failing draw is\n"
               "                     printed with its configuration and shrunk to the smallest that still fails\n"
               "  --no-shrink        do not shrink failing draws\n"
               "  --promote DIR      write each failing draw (shrunk) as a regression case DIR/reg_NAME_seedS\n"
               "  --coverage         print the pairwise coverage of the set (plus the --random N draws of --seed)\n"
               "                     without running anything: covered / allowed pairs per pair of axes, the gaps\n");
    suite_cli_help(f);
    suite_cli_help_exit(f);
}

static void list_fn(void *ud, const char *name, fr_suite_cat cat, unsigned tags, const char *what) {
    (void)ud;
    (void)tags;
    printf("%-36s %-17s %s\n", name, fr_suite_cat_name(cat), what);
}

/* --coverage: the set's generated cases plus the random draws, classified, not run. */
static int print_coverage(const suite_cli *s) {
    fr_error err;
    memset(&err, 0, sizeof err);
    fr_coverage cv;
    fr_status st = fr_coverage_init(&cv, &err);
    if (st == FR_OK) st = fr_suite_set_coverage(s->o.set, &cv, &err);
    int cases = fr_suite_list(s->o.set, NULL, NULL, NULL);
    fr_draw *d = NULL;
    if (st == FR_OK && s->o.random > 0) {
        d = calloc((size_t)s->o.random, sizeof *d);
        fr_draw_limits lim = fr_draw_limits_default();
        st = d ? fr_random_batch(s->o.seed, s->o.random, &cv, &lim, d, &err) : FR_E_NOMEM;
        cases += s->o.random;
    }
    free(d);
    fr_coverage_report cr;
    if (st == FR_OK) st = fr_coverage_report_from(&cv, cases, &cr, &err);
    fr_coverage_free(&cv);
    if (st != FR_OK) {
        fprintf(stderr, "flashref suite: --coverage: %s: %s\n", fr_status_name(st), err.msg);
        return 2;
    }
    printf("set %s%s", s->o.set, s->o.random ? "" : "\n");
    if (s->o.random) printf(" + %d random draws, seed %llu\n", s->o.random, (unsigned long long)s->o.seed);
    fr_coverage_print_table(stdout, &cr, 100);
    fr_coverage_report_free(&cr);
    return 0;
}

int cmd_suite(int argc, char **argv) {
    suite_cli s;
    if (!suite_cli_begin(argc, argv, &s, suite_usage)) return 0;
    s.o.shrink = true; /* failing random draws (--random, --only rnd_K) */
    s.impl = "fast";
    for (int i = 1; i < argc; i++)
        if (!suite_cli_take("suite", "argument", argc, argv, &i, &s, suite_usage)) return 2;
    if (!suite_cli_check_set("suite", &s)) return 2;
    if (s.o.random && !s.seed_set) { /* a fresh batch every run; the seed printed reproduces it */
        s.o.seed = ((uint64_t)time(NULL) * UINT64_C(2654435761) ^ (uint64_t)getpid()) % UINT64_C(1000000000);
    }
    if (s.coverage) return print_coverage(&s);
    if (s.list && s.o.random) { /* the draws of the batch, with their configurations */
        fr_coverage cv;
        fr_draw *d = calloc((size_t)s.o.random, sizeof *d);
        fr_error e;
        fr_draw_limits lim = fr_draw_limits_default();
        fr_status st = d ? fr_coverage_init(&cv, &e) : FR_E_NOMEM;
        if (st == FR_OK) {
            st = fr_suite_set_coverage("default", &cv, &e);
            if (st == FR_OK) st = fr_random_batch(s.o.seed, s.o.random, &cv, &lim, d, &e);
            fr_coverage_free(&cv);
        }
        for (int k = 0; st == FR_OK && k < s.o.random; k++) {
            char buf[400];
            fr_matrix_describe(&d[k].spec, buf, sizeof buf);
            printf("%-8s %s\n", d[k].name, buf);
        }
        free(d);
        if (st != FR_OK) {
            fprintf(stderr, "flashref suite: --list --random: %s\n", fr_status_name(st));
            return 2;
        }
        printf("%d random draws, seed %llu\n", s.o.random, (unsigned long long)s.o.seed);
        return 0;
    }
    if (s.list) {
        int n = fr_suite_list(s.o.set, s.o.filter, list_fn, NULL);
        printf("%d cases in set %s%s%s\n", n, s.o.set, s.o.filter ? " matching " : "", s.o.filter ? s.o.filter : "");
        return 0;
    }
    fr_error err;
    memset(&err, 0, sizeof err);
    if (s.write_dir) {
        int n = 0;
        fr_status st = fr_io_new_dir(s.write_dir, s.force, &err);
        if (st != FR_OK) {
            fprintf(stderr, "flashref suite: --write: %s\n", err.msg);
            return 2;
        }
        st = fr_suite_write_opts(&s.o, s.write_dir, &n, &err);
        if (st != FR_OK) {
            fprintf(stderr, "flashref suite: --write: %s: %s\n", fr_status_name(st), err.msg);
            return 2;
        }
        printf("wrote %d case directories into %s (golden outputs in each NAME/golden/)\n", n, s.write_dir);
        return 0;
    }
    if (!suite_cli_check_paths("suite", &s)) return SUITE_EXIT_INPUT;
    fr_iut *iut;
    fr_status st = fr_iut_open(s.impl, &iut, &err);
    if (st != FR_OK) {
        fprintf(stderr, "flashref suite: --impl %s: %s: %s\n", s.impl, fr_status_name(st), err.msg);
        return 2;
    }
    if (s.timeout > 0 && (st = fr_iut_set_timeout(iut, s.timeout, &err)) != FR_OK) {
        fprintf(stderr, "flashref suite: %s\n", err.msg);
        fr_iut_close(iut);
        return 2;
    }
    s.o.judge.external = s.o.judge.external || !fr_iut_is_builtin(iut);
    if (!s.quiet) s.o.progress = suite_cli_progress;
#ifdef FR_HAVE_MPI
    /* Under mpirun: case k runs on rank k % R; rank 0 gathers them and reports as a single run would. */
    if (cli_size() > 1) {
        s.o.part = cli_rank(), s.o.parts = cli_size();
        s.o.gather = fr_dist_gather_cases, s.o.gather_ud = (void *)cli_dist();
        if (cli_rank() != 0) s.quiet = true, s.o.progress = NULL, s.json = s.html = s.history = NULL;
    }
#endif
    if (!s.quiet) {
        if (s.o.random)
            printf("flashref suite: implementation %s, %d random draws, seed %llu\n", fr_iut_name(iut), s.o.random,
                   (unsigned long long)s.o.seed);
        else
            printf("flashref suite: implementation %s, set %s, seed %llu\n", fr_iut_name(iut), s.o.set,
                   (unsigned long long)s.o.seed);
        fr_report_thresholds(stdout, &s.o.judge);
        fflush(stdout);
    }
    fr_suite_result r;
    st = fr_suite_run(iut, &s.o, &r, &err);
    fr_iut_close(iut);
    if (st != FR_OK) {
        fprintf(stderr, "flashref suite: %s: %s\n", fr_status_name(st), err.msg);
        fr_suite_result_free(&r);
        return 2;
    }
    int rc = cli_rank() == 0 ? suite_cli_finish("suite", &s, &r) : 0;
    fr_suite_result_free(&r);
    return rc;
}
