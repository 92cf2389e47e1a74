/* Shrinking and promotion of failing random draws (suite.h: fr_suite_shrink, fr_suite_shrink_failures). The steps
 * and the loop are cases/shrink.c; here a step is kept only while the case, judged like a random draw
 * (suite_judge.c), still FAILs with the same diagnosis, and each failing draw's smallest configuration is promoted to
 * a regression case on request. */
#include "verify/suite/suite_internal.h"

#include "core/core.h"
#include "verify/cases/shrink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The shrinker's question (cases/shrink.h): does this smaller configuration still FAIL with the same diagnosis? */
typedef struct still_fails_ud {
    fr_iut *iut;
    fr_diag diag;
    const fr_suite_opts *o;
} still_fails_ud;

static fr_status still_fails(void *ud, const fr_gen_spec *spec, bool *fails, fr_error *err) {
    const still_fails_ud *u = ud;
    fr_case_result cr;
    fr_status st = fr_suite_judge_spec(u->iut, spec, u->o, &cr, err);
    *fails = st == FR_OK && cr.j.verdict == FR_FAIL && cr.j.diag == u->diag;
    fr_judgement_free(&cr.j);
    return st;
}

fr_status fr_suite_shrink(fr_iut *iut, const fr_gen_spec *spec, fr_diag diag, const fr_suite_opts *o, fr_draw *smallest,
                          int *runs, fr_error *err) {
    still_fails_ud u = {iut, diag, o};
    return fr_shrink(spec, FR_SHRINK_MAX_RUNS, still_fails, &u, smallest, runs, err);
}

fr_status fr_suite_shrink_failures(fr_iut *iut, fr_suite_result *r, const fr_draw *draws, int nd,
                                   const fr_suite_opts *o, fr_error *err) {
    if (o->promote_dir) mkdir(o->promote_dir, 0777);
    for (int k = 0; k < r->n; k++) {
        fr_case_result *c = &r->cases[k];
        if (c->j.verdict != FR_FAIL) continue;
        const fr_draw *d = NULL;
        for (int i = 0; i < nd && !d; i++)
            if (!strcmp(draws[i].name, c->name)) d = &draws[i];
        if (!d) continue;
        fr_draw small;
        fr_draw_copy(&small, d);
        if (o->shrink) {
            fr_status st = fr_suite_shrink(iut, &d->spec, c->j.diag, o, &small, &c->shrink_runs, err);
            if (st != FR_OK) return st;
            fr_matrix_describe(&small.spec, c->smallest, sizeof c->smallest);
        }
        if (o->promote_dir) {
            char dir[4096];
            snprintf(dir, sizeof dir, "%.3900s/reg_%s_seed%llu", o->promote_dir, c->name, (unsigned long long)o->seed);
            fr_status st = fr_suite_write_spec(&small.spec, o->seed, dir, c->cat, err);
            if (st != FR_OK) return st;
            snprintf(c->extra, sizeof c->extra, "promoted to %.140s", dir);
        }
    }
    return FR_OK;
}
