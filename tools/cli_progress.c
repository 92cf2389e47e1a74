/* The progress line of one long computation (flashref run, flashref golden): the library reports work units through
 * fr_engine.progress and never prints; this draws them on stderr. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* "1h 02m", "3m 12s", "42s" */
static void fmt_time(double s, char *buf, size_t n) {
    long t = s < 0 ? 0 : s > 1e8 ? 99999999 : (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ldh %02ldm", t / 3600, (t / 60) % 60);
    else if (t >= 60) snprintf(buf, n, "%ldm %02lds", t / 60, t % 60);
    else snprintf(buf, n, "%lds", t);
}

static void draw(void *ud, int64_t done, int64_t total) {
    cli_progress *p = ud;
    double t = now_s();
    if (done == 0 || p->t0 == 0) p->t0 = t, p->last = 0;
    /* A terminal line from the first second on (a short run stays silent), redrawn at most 4 times a second;
     * forced (FLASHREF_PROGRESS=1, e.g. into a log): one full line at the first unit done, then at most one a
     * second. */
    if (done == 0 || done >= total) return;
    if (p->forced ? p->last > 0 && t - p->last < 1.0 : t - p->t0 < 1.0 || t - p->last < 0.25) return;
    p->last = t;
    double el = t - p->t0, rate = el > 0 ? (double)done / el : 0;
    char left[32], spent[32];
    fmt_time(rate > 0 ? (double)(total - done) / rate : 0, left, sizeof left);
    fmt_time(el, spent, sizeof spent);
    fprintf(stderr, "%sflashref %s: %5.1f%% (%lld of %lld blocks), %.3g blocks/s, %s spent, about %s left%s",
            p->forced ? "" : "\r", p->what, 100.0 * (double)done / (double)total, (long long)done, (long long)total,
            rate, spent, left, p->forced ? "\n" : "\033[K");
    fflush(stderr);
    p->drawn = 1;
}

void cli_progress_begin(cli_progress *p, const char *what, fr_engine *e) {
    memset(p, 0, sizeof *p);
    snprintf(p->what, sizeof p->what, "%s", what);
    const char *env = getenv("FLASHREF_PROGRESS");
    p->forced = env && !strcmp(env, "1");
    if (env && !strcmp(env, "0")) return;
    if (!p->forced && !isatty(2)) return; /* quiet in logs and pipes */
    if (cli_rank() != 0) return;         /* under mpirun, rank 0 speaks for its part */
    e->progress = draw;
    e->progress_ud = p;
}

void cli_progress_end(cli_progress *p) {
    if (p->drawn && !p->forced) fprintf(stderr, "\r\033[K");
    fflush(stderr);
}
