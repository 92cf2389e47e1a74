/* The suite runner (suite.h): a whole run, distributed or not (the regression directories, then the set's cases or
 * the random draws, each judged by suite_judge.c; then shrinking and promotion of failing draws, the length series
 * and the summary), and `flashref verify` of case directories. */
#include "verify/suite/suite_internal.h"

#include "core/core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* True (and res->stopped says why) once the implementation has failed identically FR_IUT_GIVE_UP_AFTER times. */
static bool stop_early(const fr_iut *iut, fr_suite_result *res) {
    const char *why = iut ? fr_iut_gave_up(iut) : NULL;
    if (!why) return false;
    snprintf(res->stopped, sizeof res->stopped, "stopped early after %d identical consecutive errors (%d of %d cases "
             "run): %.380s", FR_IUT_GIVE_UP_AFTER, res->n, res->planned, why);
    return true;
}

static fr_status run_all(fr_iut *iut, const fr_suite_opts *o, fr_suite_result *res, fr_error *err) {
    memset(res, 0, sizeof *res);
    unsigned bits = fr_suite_set_bits(o->set);
    if (!bits)
        return fr_fail(err, FR_E_INVALID_ARG, "--set: '%s': expected quick, default, long or all",
                       o->set ? o->set : "");
    double t0 = fr_suite_now_s();
    fr_draw *draws;
    int nd;
    fr_status st = fr_suite_make_draws(o, &draws, &nd, err);
    if (st != FR_OK) return st;
    fr_suite_select sel = {o->filter, o->only};
    int n = fr_suite_collect(bits, &sel, draws, nd, NULL);
    char **rdirs = NULL;
    int nr = 0;
    if (!draws && o->regression_dir && (bits & (FR_SET_QUICK | FR_SET_DEFAULT))) {
        char **all;
        int na = fr_suite_list_case_dirs(o->regression_dir, &all);
        if (na < 0)
            return fr_fail(err, errno == ENOMEM ? FR_E_NOMEM : FR_E_IO, "--regression: %s: %s", o->regression_dir,
                           strerror(errno));
        rdirs = calloc((size_t)na + 1, sizeof *rdirs);
        if (!rdirs) { /* not a run without its regression cases */
            for (int k = 0; k < na; k++)
                free(all[k]);
            free(all);
            return fr_fail(err, FR_E_NOMEM, "suite: out of memory");
        }
        for (int k = 0; k < na; k++) {
            if (fr_suite_selected(fr_suite_base_name(all[k]), &sel))
                rdirs[nr++] = all[k];
            else
                free(all[k]);
        }
        free(all);
    }
    fr_suite_item *it = calloc((size_t)n + 1, sizeof *it);
    res->cases = calloc((size_t)(n + nr) + 1, sizeof *res->cases);
    if (!it || !res->cases) {
        free(it);
        for (int k = 0; k < nr; k++)
            free(rdirs[k]);
        free(rdirs);
        free(draws);
        return fr_fail(err, FR_E_NOMEM, "suite: out of memory");
    }
    fr_suite_collect(bits, &sel, draws, nd, it);
    int total = n + nr;
    res->planned = total;
    if (o->parts > 1) { /* one part of a distributed run: case k at place k, then gathered */
        unsigned char *mine = calloc((size_t)total + 1, 1);
        if (!mine) st = fr_fail(err, FR_E_NOMEM, "suite: out of memory");
        for (int k = 0; k < total && st == FR_OK; k++) {
            if (k % o->parts != o->part) continue;
            st = k < nr ? fr_suite_run_dir(iut, rdirs[k], FR_CAT_REGRESSION, o, &res->cases[k], err)
                        : fr_suite_run_item(iut, &it[k - nr], o, &res->cases[k], err);
            mine[k] = st == FR_OK;
            if (o->progress && st == FR_OK) o->progress(o->progress_ud, k + 1, total, &res->cases[k]);
        }
        /* Collective: every part calls it, whatever its own status (it returns the first failing part's). */
        if (o->gather) st = o->gather(o->gather_ud, res, total, mine, st, err);
        if (st == FR_OK) res->n = total;
        free(mine);
        n = 0; /* skip the single-run loops below */
        total = 0;
    }
    for (int k = 0; k < nr && total && st == FR_OK && !stop_early(iut, res); k++) {
        st = fr_suite_run_dir(iut, rdirs[k], FR_CAT_REGRESSION, o, &res->cases[res->n], err);
        if (st == FR_OK) res->n++;
        if (o->progress && res->n) o->progress(o->progress_ud, res->n, total, &res->cases[res->n - 1]);
    }
    for (int k = 0; k < n && st == FR_OK && !stop_early(iut, res); k++) {
        st = fr_suite_run_item(iut, &it[k], o, &res->cases[res->n], err);
        if (st == FR_OK) res->n++;
        if (o->progress && res->n) o->progress(o->progress_ud, res->n, total, &res->cases[res->n - 1]);
    }
    for (int k = 0; k < nr; k++)
        free(rdirs[k]);
    free(rdirs);
    free(it);
    if (st == FR_OK && draws && (o->shrink || o->promote_dir))
        st = fr_suite_shrink_failures(iut, res, draws, nd, o, err);
    free(draws);
    fr_suite_check_growth(res, &o->judge);
    fr_suite_summarize(res);
    res->seconds = fr_suite_now_s() - t0;
    return st;
}

fr_status fr_suite_run(fr_iut *iut, const fr_suite_opts *o_in, fr_suite_result *res, fr_error *err) {
    fr_suite_opts o = o_in ? *o_in : fr_suite_opts_default();
    o.judge.external = o.judge.external || !fr_iut_is_builtin(iut);
    return run_all(iut, &o, res, err);
}

fr_status fr_suite_verify_dirs(char *const *dirs, int ndirs, const fr_suite_opts *o_in, fr_suite_result *res,
                               fr_error *err) {
    fr_suite_opts o = o_in ? *o_in : fr_suite_opts_default();
    o.judge.external = true;
    memset(res, 0, sizeof *res);
    double t0 = fr_suite_now_s();
    res->cases = calloc((size_t)ndirs + 1, sizeof *res->cases);
    if (!res->cases) return fr_fail(err, FR_E_NOMEM, "verify: out of memory");
    fr_status st = FR_OK;
    for (int k = 0; k < ndirs && st == FR_OK; k++) {
        fr_suite_select sel = {o.filter, o.only};
        if (!fr_suite_selected(fr_suite_base_name(dirs[k]), &sel)) continue;
        st = fr_suite_run_dir(NULL, dirs[k], FR_CAT_EQUIVALENCE, &o, &res->cases[res->n], err);
        if (st == FR_OK) res->n++;
        if (o.progress && res->n) o.progress(o.progress_ud, res->n, ndirs, &res->cases[res->n - 1]);
    }
    fr_suite_summarize(res);
    res->seconds = fr_suite_now_s() - t0;
    return st;
}

