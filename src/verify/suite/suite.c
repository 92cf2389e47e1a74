/* The suite's options, its clock, the random draws of a run and the coverage of its results (suite.h); the sets and
 * the case list they draw from are cases/sets.c. Judging one case is suite_judge.c, a whole run suite_run.c, the
 * post-processing suite_modify.c, regression folders suite_regress.c, the summary suite_summary.c, --write
 * suite_write.c and shrinking suite_shrink.c. */
#include "verify/suite/suite_internal.h"

#include "core/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

fr_suite_opts fr_suite_opts_default(void) {
    fr_suite_opts o;
    memset(&o, 0, sizeof o);
    o.set = "default";
    o.seed = 20260101;
    o.judge = fr_judge_opts_default();
    return o;
}

double fr_suite_now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void fr_suite_coverage(const fr_suite_result *r, fr_coverage *cv) {
    for (int k = 0; k < r->n; k++)
        if (r->cases[k].has_cell) fr_coverage_add(cv, r->cases[k].cell);
}

/* The random draws of a run: o->random of them, or K + 1 for `--only rnd_K` alone (draw K is the same in every batch
 * of more than K draws with the seed). *d NULL, *n 0 when the run has none. Batches start from the default set's
 * coverage, so they go first where the fixed cases leave gaps. */
fr_status fr_suite_make_draws(const fr_suite_opts *o, fr_draw **d, int *n, fr_error *err) {
    *d = NULL;
    *n = 0;
    int want = o->random;
    if (want <= 0 && o->only && !strncmp(o->only, "rnd_", 4)) {
        char *end;
        long k = strtol(o->only + 4, &end, 10);
        if (!*end && end != o->only + 4 && k >= 0 && k < FR_SUITE_MAX_RANDOM) want = (int)k + 1;
    }
    if (want <= 0) return FR_OK;
    if (want > FR_SUITE_MAX_RANDOM)
        return fr_fail(err, FR_E_INVALID_ARG, "--random: %d draws, at most %d", want, FR_SUITE_MAX_RANDOM);
    fr_coverage cv;
    fr_status st = fr_coverage_init(&cv, err);
    if (st != FR_OK) return st;
    if ((st = fr_suite_set_coverage("default", &cv, err)) != FR_OK) {
        fr_coverage_free(&cv);
        return st;
    }
    *d = calloc((size_t)want, sizeof **d);
    if (!*d) st = fr_fail(err, FR_E_NOMEM, "suite: out of memory");
    fr_draw_limits lim = fr_draw_limits_default();
    if (st == FR_OK) st = fr_random_batch(o->seed, want, &cv, &lim, *d, err);
    fr_coverage_free(&cv);
    if (st != FR_OK) {
        free(*d);
        *d = NULL;
        return st;
    }
    *n = want;
    return FR_OK;
}

void fr_suite_result_free(fr_suite_result *r) {
    if (!r) return;
    for (int k = 0; k < r->n; k++)
        fr_judgement_free(&r->cases[k].j);
    free(r->cases);
    memset(r, 0, sizeof *r);
}
