/* The suite runner (suite.h): builds each case, post-processes it (suite_modify.c), runs the IUT first (hygiene:
 * before the golden allocates anything), then the golden and the ideal pipeline, judges, and adds what the category
 * checks on top (explicit softmax properties, order variants, determinism runs); then a whole run, distributed or
 * not, and `flashref verify` of case directories. */
#include "verify/suite/suite_internal.h"

#include "core/core.h"
#include "core/problem.h"
#include "flashref_emulate.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fr_status fr_suite_run_engine(const fr_case *c, fr_engine_kind kind, fr_case_outputs *o, fr_error *err) {
    fr_status st = fr_case_alloc_outputs(c, kind == FR_ENGINE_GOLDEN, o, err);
    if (st != FR_OK) return st;
    fr_engine e = fr_engine_default(kind);
    st = c->op == FR_CASE_FWD ? fr_fwd(&c->params, &c->in.fwd, &o->fwd, &e, err)
                              : fr_bwd(&c->params, &c->in, &o->bwd, &e, err);
    if (st != FR_OK) fr_case_outputs_free(o);
    return st;
}

/* Runs, judges and fills cr. c: the case; golden may be given (regression: stored) or NULL (computed here). */
fr_status fr_suite_judge_one(fr_iut *iut, const fr_case *c, const fr_case_outputs *stored_golden, unsigned tags,
                           const fr_suite_opts *o, fr_case_outputs *iut_out_keep, fr_case_result *cr, fr_error *err) {
    fr_case_outputs io, go, eo;
    memset(&io, 0, sizeof io);
    fr_error ie;
    memset(&ie, 0, sizeof ie);
    fr_status ist = fr_iut_run(iut, c, o->threads, &io, &ie);
    fr_status st = FR_OK;
    const fr_case_outputs *g = stored_golden;
    if (!g) {
        fr_error ge;
        if ((st = fr_suite_run_engine(c, FR_ENGINE_GOLDEN, &go, &ge)) != FR_OK) {
            fr_case_outputs_free(&io);
            if (iut_out_keep) memset(iut_out_keep, 0, sizeof *iut_out_keep);
            memset(&cr->j, 0, sizeof cr->j);
            cr->j.verdict = FR_FAIL;
            cr->j.diag = FR_DIAG_ERROR_STATUS;
            cr->j.ratio = INFINITY;
            snprintf(cr->j.why, sizeof cr->j.why, "the golden rejects the case (suite defect?): %s: %.300s",
                     fr_status_name(st), ge.msg);
            return FR_OK;
        }
        g = &go;
    }
    fr_error ee;
    bool have_ideal = fr_suite_run_engine(c, FR_ENGINE_EMULATE, &eo, &ee) == FR_OK;
    fr_case_outputs po;
    bool have_plain = ist == FR_OK && fr_judge_run_plain(c, &po, &ee) == FR_OK;
    st = fr_judge_plain(c, tags, cr->purpose, &o->judge, ist, ie.msg, &io, g, have_ideal ? &eo : NULL,
                        have_plain ? &po : NULL, &cr->j, err);
    if (have_plain) fr_case_outputs_free(&po);
    if (cr->j.d1_rows) cr->tags |= FR_TAG_D1;
    if (st == FR_OK && ist == FR_OK && c->op == FR_CASE_FWD && cr->cat == FR_CAT_PROPERTIES &&
        c->params.input_layout == FR_BNSD && c->in.fwd.value.shape[3] == c->in.fwd.key.shape[2] &&
        c->in.fwd.value.shape[3] > 1 && cr->j.verdict != FR_SKIP && cr->j.diag != FR_DIAG_SHAPE)
        fr_suite_check_props(c, &io, have_ideal ? &eo : NULL, cr); /* a wrong-shaped output is never indexed */
    if (have_ideal) fr_case_outputs_free(&eo);
    if (!stored_golden) fr_case_outputs_free(&go);
    if (iut_out_keep && ist == FR_OK)
        *iut_out_keep = io;
    else
        fr_case_outputs_free(&io);
    if (iut_out_keep && ist != FR_OK) memset(iut_out_keep, 0, sizeof *iut_out_keep);
    return st;
}

void fr_suite_downgrade(fr_case_result *cr, fr_verdict v, fr_diag d, const char *why) {
    if (cr->j.verdict == FR_FAIL || cr->j.verdict == FR_SKIP) return;
    if (v == FR_WARN && cr->j.verdict == FR_WARN) return;
    cr->j.verdict = v;
    cr->j.diag = d;
    snprintf(cr->j.why, sizeof cr->j.why, "%s", why);
}

static fr_status run_item(fr_iut *iut, const fr_suite_item *it, const fr_suite_opts *o, fr_case_result *cr,
                          fr_error *err) {
    memset(cr, 0, sizeof *cr);
    snprintf(cr->name, sizeof cr->name, "%s", it->spec->name);
    cr->cat = it->cat;
    cr->tags = it->tags;
    cr->purpose = it->e ? it->e->tags : 0;
    if (it->e && it->e->series) snprintf(cr->series, sizeof cr->series, "%s", it->e->series);
    cr->bwd = it->spec->bwd;
    cr->has_cell = true;
    fr_matrix_classify(it->spec, cr->cell);
    if (it->drawn) fr_matrix_describe(it->spec, cr->config, sizeof cr->config);
    double t0 = fr_suite_now_s();
    fr_gen_case g;
    fr_status st = fr_gen_build(it->spec, o->seed, &g, err);
    if (st == FR_OK) st = fr_suite_apply_mod(&g, it->mod, err);
    if (st != FR_OK) {
        cr->j.verdict = st == FR_E_UNSUPPORTED ? FR_SKIP : FR_FAIL;
        cr->j.diag = st == FR_E_UNSUPPORTED ? FR_DIAG_NONE : FR_DIAG_ERROR_STATUS;
        snprintf(cr->j.why, sizeof cr->j.why, "case generation failed: %s: %.300s", fr_status_name(st), err->msg);
        if (st == FR_OK) fr_gen_case_free(&g);
        return FR_OK;
    }
    fr_case c;
    fr_suite_case_view(&g, &c);
    cr->dtype = g.dtype;
    fr_problem pb;
    if ((c.op == FR_CASE_FWD ? fr_problem_from_fwd(&c.params, &c.in.fwd, &pb, NULL)
                             : fr_problem_from_bwd(&c.params, &c.in, &pb, NULL)) == FR_OK) {
        cr->S1 = pb.S1;
        cr->S2 = pb.S2;
    }
    bool keep = it->cat == FR_CAT_ORDER || it->cat == FR_CAT_DETERMINISM;
    fr_case_outputs base;
    memset(&base, 0, sizeof base);
    bool impldef = it->cat == FR_CAT_IMPLDEF;
    keep = keep || impldef;
    st = fr_suite_judge_one(iut, &c, NULL, cr->tags, o, keep ? &base : NULL, cr, err);
    if (st == FR_OK && impldef) fr_suite_impldef_reading(&c, &base, cr);
    if (st == FR_OK && keep && cr->j.verdict != FR_SKIP &&
        fr_tensor_present(&base.fwd.attention_out) + fr_tensor_present(&base.bwd.dq) > 0) {
        if (it->cat == FR_CAT_DETERMINISM) {
            if (!fr_iut_is_builtin(iut)) {
                snprintf(cr->extra, sizeof cr->extra, "determinism runs apply to built-in engines only");
            } else {
                static const int kThreads[] = {1, 2, 0, 0};
                int diff = -1, first = -1;
                for (int r = 0; r < 4 && diff < 0; r++) {
                    fr_case_outputs again;
                    fr_error e2;
                    if (fr_iut_run(iut, &c, kThreads[r], &again, &e2) != FR_OK) {
                        diff = r;
                        first = -2;
                        break;
                    }
                    if (!fr_outputs_identical(&base, &again, &first)) diff = r;
                    fr_case_outputs_free(&again);
                }
                if (diff >= 0) {
                    char why[200];
                    snprintf(why, sizeof why, "run %d (threads %d) differs from the first run in %s", diff + 2,
                             kThreads[diff], first >= 0 ? fr_case_output_name((fr_case_output)first) : "status");
                    fr_suite_downgrade(cr, FR_WARN, FR_DIAG_NONDETERMINISM, why);
                }
                snprintf(cr->extra, sizeof cr->extra, "4 more runs (threads 1, 2, default x2): %s",
                         diff >= 0 ? "results differ" : "bitwise identical");
            }
        } else if (fr_tensor_present(&c.in.fwd.topk_indices)) {
            /* Order invariance: the same key sets in 3 more orders. */
            double worst = 0,
                   bound = o->judge.k_out * fmax(cr->j.out[FR_CO_ATTENTION_OUT].ideal.rel_l2, ldexp(1.0, -24));
            int nv = 0;
            for (int v = 1; v <= 3; v++) {
                fr_gen_case g2;
                if (fr_gen_build(it->spec, o->seed, &g2, err) != FR_OK) break;
                fr_suite_permute_topk(&g2.in.fwd.topk_indices, v, g2.seed);
                fr_case c2;
                fr_suite_case_view(&g2, &c2);
                fr_case_result vr;
                memset(&vr, 0, sizeof vr);
                vr.cat = cr->cat;
                fr_case_outputs vo;
                memset(&vo, 0, sizeof vo);
                if (fr_suite_judge_one(iut, &c2, NULL, cr->tags, o, &vo, &vr, err) == FR_OK) {
                    nv++;
                    if (vr.j.verdict == FR_FAIL && cr->j.verdict != FR_FAIL) {
                        cr->j.verdict = FR_FAIL;
                        cr->j.diag = vr.j.diag == FR_DIAG_PRECISION ? FR_DIAG_ORDER_DEPENDENCE : vr.j.diag;
                        snprintf(cr->j.why, sizeof cr->j.why, "order variant %d: %.300s", v, vr.j.why);
                    }
                    if (fr_tensor_present(&vo.fwd.attention_out))
                        worst = fmax(worst, fr_suite_out_rel_l2(&vo, &base, FR_CO_ATTENTION_OUT));
                }
                fr_judgement_free(&vr.j);
                fr_case_outputs_free(&vo);
                fr_gen_case_free(&g2);
            }
            snprintf(cr->extra, sizeof cr->extra, "%d reorderings: max rel-L2 between orders %.3g (bound %.3g)", nv,
                     worst, bound);
            if (worst > bound) {
                char why[200];
                snprintf(why, sizeof why, "outputs differ between key orders: rel-L2 %.3g > %.3g", worst, bound);
                fr_suite_downgrade(cr, FR_WARN, FR_DIAG_ORDER_DEPENDENCE, why);
            }
        }
    }
    fr_case_outputs_free(&base);
    fr_gen_case_free(&g);
    cr->seconds = fr_suite_now_s() - t0;
    return st;
}

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
            return fr_fail(err, FR_E_IO, "--regression: %s: %s", o->regression_dir, strerror(errno));
        rdirs = calloc((size_t)na + 1, sizeof *rdirs);
        for (int k = 0; k < na; k++) {
            if (rdirs && fr_suite_selected(fr_suite_base_name(all[k]), &sel))
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
                        : run_item(iut, &it[k - nr], o, &res->cases[k], err);
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
        st = run_item(iut, &it[k], o, &res->cases[res->n], err);
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

fr_status fr_suite_judge_spec(fr_iut *iut, const fr_gen_spec *spec, const fr_suite_opts *o, fr_case_result *cr,
                              fr_error *err) {
    fr_suite_item it = fr_suite_item_of_spec(spec, "random draw from the option matrix", true);
    return run_item(iut, &it, o, cr, err);
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

