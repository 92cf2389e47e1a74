/* flashref hunt: random draws against an implementation until a budget is spent, inside what it supports and
 * weighted towards the corners where kernels break; failures clustered, shrunk and written with a reproducer
 * (src/verify/suite/hunt.h, docs/verifier.md "The hunt"). */
#include "cli.h"
#include "verify/suite/hunt.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) {
    (void)sig;
    g_stop = 1;
}

static void help(FILE *f) {
    fprintf(f,
            "usage: flashref hunt --impl IUT [--budget 10m] [--seed S] [--out DIR] [options]\n"
            "Draws random configurations inside what IUT supports (its declared capabilities, learned SKIPs),\n"
            "weighted towards decode rows, broadcast and padding masks, nearly fully masked rows, extreme scores,\n"
            "NaN in masked K/V, odd key counts and head dims, GQA with broadcast masks, and the runner's mask\n"
            "handover; judges each like `flashref suite --random`, until the budget is spent. Failures are\n"
            "clustered (diagnosis, kind: wrong before imprecise, configuration), one per cluster shrunk and written\n"
            "under --out as a regression case and, through the runner's --repro hook, a standalone reproducer.\n"
            "  --impl IUT         as for flashref suite (fast, mutant:NAME, plugin:, exec:, persistent:)\n"
            "  --budget T         drawing time: 90, 90s, 10m, 1h (default 10m); shrinking and writing follow\n"
            "  --max-draws N      stop after N draws (with --budget 0: exactly N draws, reproducible)\n"
            "  --seed S           draw seed (default: a fresh one, printed)\n"
            "  --out DIR          findings.markdown, findings.json, cluster_K/case, cluster_K/repro.py (replaces a\n"
            "                     previous hunt's files there)\n"
            "  --max-shrink N     clusters shrunk (default 8)\n"
            "  --timeout SECONDS  per-case limit for plugin:, exec:, persistent: (default 600)\n"
            "  --threads N        threads of a built-in implementation\n"
            "  --no-corners       plain matrix draws (no corners, no boundary sizes)\n"
            "  --no-learn         do not exclude axis values after SKIPs\n"
            "  -q                 no progress line\n"
            "  -v                 one line per draw: name, verdict, diagnosis, corner, configuration, why\n"
            "exit status: 0 nothing found; 1 findings (a FAIL or WARN cluster); 2 usage or input error;\n"
            "  3 nothing judged; 4 stopped early (the implementation cannot start, or its capability line was\n"
            "  refused); 130 interrupted (SIGINT/SIGTERM: runners stopped, temporary files removed, nothing\n"
            "  written under --out)\n");
}

/* "90", "90s", "10m", "1h" -> seconds; -1 when malformed. */
static double parse_budget(const char *v) {
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (end == v || errno || !isfinite(d) || d < 0) return -1;
    if (!strcmp(end, "") || !strcmp(end, "s")) return d;
    if (!strcmp(end, "m")) return d * 60;
    if (!strcmp(end, "h")) return d * 3600;
    return -1;
}

static bool parse_int(const char *v, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi) return false;
    *out = x;
    return true;
}

typedef struct prog_ud {
    bool quiet;
    bool tty;
} prog_ud;

static void on_progress(void *ud, const fr_hunt_progress *p) {
    const prog_ud *u = ud;
    if (u->quiet) return;
    static double last;
    bool every = !strcmp(p->phase, "drawing");
    if (every && !u->tty && p->elapsed_s - last < 10 && p->draws % 50) return; /* a log: a line every 10 s */
    last = p->elapsed_s;
    fprintf(stderr, "%shunt: %s: %d draws, %d judged (%.1f %%), %d FAIL, %d WARN, %d clusters, %.0f of %.0f s%s",
            u->tty ? "\r" : "", p->phase, p->draws, p->judged, p->draws ? 100.0 * p->judged / p->draws : 0.0,
            p->failed, p->warned, p->clusters, p->elapsed_s, p->budget_s, u->tty ? "   " : "\n");
    fflush(stderr);
}

/* The options that take an integer in [lo, hi]. */
typedef struct int_opt {
    const char *name;
    long lo, hi;
    int *dst;
} int_opt;

static const int_opt *int_option(const char *a, const int_opt *t, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (!strcmp(a, t[k].name)) return &t[k];
    return NULL;
}

int cmd_hunt(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        help(stdout);
        return 0;
    }
    fr_hunt_opts o = fr_hunt_opts_default();
    const char *impl = NULL;
    bool seed_set = false, quiet = false;
    double timeout = 0;
    const int_opt ints[] = {
        {"--max-draws", 1, 100000000, &o.max_draws},
        {"--max-shrink", 0, 1000, &o.max_shrink},
        {"--threads", 0, 4096, &o.threads},
    };
    const int_opt *io;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x;
        if (!strcmp(a, "-q")) {
            quiet = true;
            continue;
        }
        if (!strcmp(a, "-v")) {
            o.trace = stdout;
            continue;
        }
        if (!strcmp(a, "--no-corners")) {
            o.no_corners = true;
            continue;
        }
        if (!strcmp(a, "--no-learn")) {
            o.no_learn = true;
            continue;
        }
        if (!v) {
            fprintf(stderr, "flashref hunt: %s: %s\n", a,
                    strncmp(a, "--", 2) ? "unknown argument (see --help)" : "needs a value (or is unknown)");
            return 2;
        }
        i++;
        if (!strcmp(a, "--impl")) {
            impl = v;
        } else if (!strcmp(a, "--budget")) {
            if ((o.budget_s = parse_budget(v)) < 0) {
                fprintf(stderr, "flashref hunt: --budget '%s': expected seconds, or a number with s, m or h\n", v);
                return 2;
            }
        } else if ((io = int_option(a, ints, sizeof ints / sizeof ints[0])) != NULL) {
            if (!parse_int(v, io->lo, io->hi, &x)) {
                fprintf(stderr, "flashref hunt: %s '%s': expected %ld..%ld\n", a, v, io->lo, io->hi);
                return 2;
            }
            *io->dst = (int)x;
        } else if (!strcmp(a, "--seed")) {
            char *end;
            errno = 0;
            if (*v == '-' || !(o.seed = strtoull(v, &end, 10), end != v && !*end && !errno)) {
                fprintf(stderr, "flashref hunt: --seed '%s': expected a non-negative integer\n", v);
                return 2;
            }
            seed_set = true;
        } else if (!strcmp(a, "--out")) {
            o.out_dir = v;
        } else if (!strcmp(a, "--timeout")) {
            char *end;
            timeout = strtod(v, &end);
            if (end == v || *end || !(timeout > 0) || !isfinite(timeout)) {
                fprintf(stderr, "flashref hunt: --timeout '%s': expected seconds > 0\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "flashref hunt: unknown option %s (see --help)\n", a);
            return 2;
        }
    }
    if (!impl) {
        fprintf(stderr, "flashref hunt: --impl IUT is required (see --help)\n");
        return 2;
    }
    if (!(o.budget_s > 0) && o.max_draws <= 0) {
        fprintf(stderr, "flashref hunt: --budget 0 needs --max-draws N\n");
        return 2;
    }
    if (!seed_set) o.seed = ((uint64_t)time(NULL) * UINT64_C(2654435761) ^ (uint64_t)getpid()) % UINT64_C(1000000000);
    fr_iut *iut;
    fr_error err;
    fr_status st = fr_iut_open(impl, &iut, &err);
    if (st != FR_OK) {
        fprintf(stderr, "flashref hunt: --impl %s: %s\n", impl, err.msg);
        return 2;
    }
    if (timeout > 0 && (st = fr_iut_set_timeout(iut, timeout, &err)) != FR_OK) {
        fprintf(stderr, "flashref hunt: --timeout: %s\n", err.msg);
        fr_iut_close(iut);
        return 2;
    }
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: a wait in progress returns, the hunt stops after it */
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    o.stop = &g_stop;
    prog_ud pu = {quiet, isatty(2) != 0};
    o.progress = on_progress;
    o.progress_ud = &pu;
    printf("flashref hunt: implementation %s, seed %llu, budget %g s", fr_iut_name(iut), (unsigned long long)o.seed,
           o.budget_s);
    if (o.max_draws) printf(", at most %d draws", o.max_draws);
    printf("\n");
    fflush(stdout);
    fr_hunt_result r;
    st = fr_hunt_run(iut, &o, &r, &err);
    if (!quiet && pu.tty) fprintf(stderr, "\n");
    fr_iut_close(iut); /* stops the runner and its children */
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (st != FR_OK) {
        fprintf(stderr, "flashref hunt: %s\n", err.msg);
        fr_hunt_result_free(&r);
        return 2;
    }
    if (r.interrupted || g_stop) {
        fprintf(stderr, "flashref hunt: interrupted after %d draws: runners stopped, nothing written\n", r.draws);
        fr_hunt_result_free(&r);
        return 130;
    }
    printf("draws %d: judged %d (%.1f %%), skipped %d; PASS %d, WARN %d, FAIL %d; %.1f s\n", r.draws, r.judged,
           r.draws ? 100.0 * r.judged / r.draws : 0.0, r.skipped, r.passed, r.warned, r.failed, r.seconds);
    printf("capabilities: %s\n", r.caps);
    if (r.learned[0]) printf("learned from SKIPs: excluded %s\n", r.learned);
    printf("pairwise coverage of the judged draws: %d of %d allowed pairs\n", r.pairs_covered, r.pairs_allowed);
    for (int i = 0; i < r.nclusters; i++) {
        const fr_hunt_cluster *c = &r.clusters[i];
        printf("cluster %d: %s %s %s (%s), %d draw%s, rel-L2 %.3g\n  smallest: %s\n", i + 1,
               fr_hunt_kind_name(c->kind), fr_verdict_name(c->verdict), fr_diag_name(c->diag), c->key, c->count,
               c->count == 1 ? "" : "s", c->rel_l2, c->smallest_config);
        if (c->repro[0]) printf("  reproducer: %s\n", c->repro);
        else if (c->repro_note[0] && o.out_dir) printf("  no reproducer: %s\n", c->repro_note);
    }
    if (o.out_dir) printf("findings: %s/findings.markdown, %s/findings.json\n", o.out_dir, o.out_dir);
    int rc = r.stopped[0] ? 4 : r.nclusters ? 1 : r.judged ? 0 : 3;
    if (r.stopped[0]) fprintf(stderr, "flashref hunt: stopped early: %s\n", r.stopped);
    fr_hunt_result_free(&r);
    return rc;
}
