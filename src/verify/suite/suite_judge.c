/* Judging one case of the suite (suite_internal.h): the IUT runs first (hygiene: before the golden allocates
 * anything), then the golden and the ideal pipeline; the judge decides, and the category adds its checks on top
 * (explicit softmax properties, order variants, determinism runs). Below the runner, the regression folders, the
 * shrinking, --write and the summary, which all judge or run through it. */
#include "verify/suite/suite_internal.h"

#include "verify/suite/hunt.h"
#include "verify/suite/suite_refs.h"

#include "core/core.h"
#include "core/problem.h"

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

/* Reference k of c: computed here, or taken from the runs' cache (o->refs, suite_refs.h), which keeps it when it
 * can. *out points to it; *owned: whether it is in local, for the caller to free (when st is FR_OK). */
static fr_status suite_ref(const fr_suite_opts *o, fr_suite_ref_entry *e, fr_suite_ref_kind k, const fr_case *c,
                           fr_case_outputs *local, const fr_case_outputs **out, bool *owned, fr_error *err) {
    memset(local, 0, sizeof *local);
    if (e && e->done[k]) {
        *owned = false;
        *out = &e->out[k];
        if (e->st[k] != FR_OK) *err = e->err[k];
        return e->st[k];
    }
    fr_status st = k == FR_REF_GOLDEN  ? fr_suite_run_engine(c, FR_ENGINE_GOLDEN, local, err)
                   : k == FR_REF_IDEAL ? fr_suite_run_engine(c, FR_ENGINE_EMULATE, local, err)
                                       : fr_judge_run_plain(c, &o->judge, local, err);
    *owned = !fr_suite_refs_keep(o->refs, e, k, st, err, local);
    *out = *owned ? local : &e->out[k];
    return st;
}

/* Runs, judges and fills cr. c: the case; golden may be given (regression: stored) or NULL (computed here). */
fr_status fr_suite_judge_one(fr_iut *iut, const fr_case *c, const fr_case_outputs *stored_golden, unsigned tags,
                           const fr_suite_opts *o, fr_case_outputs *iut_out_keep, fr_case_result *cr, fr_error *err) {
    fr_case_outputs io, go, eo_local, po_local;
    memset(&io, 0, sizeof io);
    memset(&go, 0, sizeof go);
    fr_error ie;
    memset(&ie, 0, sizeof ie);
    fr_status ist = fr_iut_run(iut, c, o->threads, &io, &ie);
    fr_status st = FR_OK;
    if (iut_out_keep) memset(iut_out_keep, 0, sizeof *iut_out_keep);
    /* Our own out of memory is never a verdict: the run stops with it (a FAIL would blame the implementation for our
     * machine, a PASS would rest on a judgement not made). An external implementation (plugin, command, callback)
     * that reports FR_E_NOMEM itself gets its verdict like any other error status. */
    fr_iut_kind kind = fr_iut_get_kind(iut);
    bool in_library = kind == FR_IUT_ENGINE || kind == FR_IUT_MUTANT || kind == FR_IUT_DISK; /* disk: our reader */
    if ((ist == FR_E_NOMEM && in_library) || (ist != FR_OK && fr_iut_failed_itself(iut))) {
        fr_case_outputs_free(&io);
        return fr_fail(err, ist, "%s: running the implementation under test: %.400s", c->dir ? c->dir : "case",
                       ie.msg);
    }
    /* A stored golden is the case's own: the cache serves computed references only. */
    fr_suite_ref_entry *ref = stored_golden ? NULL : fr_suite_refs_entry(o->refs, c, &o->judge);
    const fr_case_outputs *g = stored_golden;
    bool own_g = false;
    if (!g) {
        fr_error ge;
        if ((st = suite_ref(o, ref, FR_REF_GOLDEN, c, &go, &g, &own_g, &ge)) != FR_OK) {
            fr_case_outputs_free(&io);
            if (st == FR_E_NOMEM) return fr_fail(err, st, "golden: %.400s", ge.msg);
            memset(&cr->j, 0, sizeof cr->j);
            cr->j.verdict = FR_FAIL;
            cr->j.diag = FR_DIAG_ERROR_STATUS;
            cr->j.ratio = INFINITY;
            snprintf(cr->j.why, sizeof cr->j.why, "the golden rejects the case (suite defect?): %s: %.300s",
                     fr_status_name(st), ge.msg);
            return FR_OK;
        }
    }
    fr_error ee;
    const fr_case_outputs *eo;
    bool own_e;
    fr_status est = suite_ref(o, ref, FR_REF_IDEAL, c, &eo_local, &eo, &own_e, &ee);
    bool have_ideal = est == FR_OK;
    own_e = own_e && have_ideal;
    char gwhy[300];
    if (stored_golden && have_ideal && !fr_judge_golden_agrees(c, stored_golden, eo, gwhy, sizeof gwhy)) {
        /* A stored golden sits in the case directory, where the implementation's outputs are written: one that a
         * fresh ideal pipeline contradicts is this case's input error, never a reference to judge by. */
        if (own_e) fr_case_outputs_free(&eo_local);
        fr_case_outputs_free(&io);
        if (iut_out_keep) memset(iut_out_keep, 0, sizeof *iut_out_keep);
        memset(&cr->j, 0, sizeof cr->j);
        cr->j.verdict = FR_FAIL;
        cr->j.diag = FR_DIAG_INPUT;
        cr->j.ratio = INFINITY;
        cr->input_error = true;
        snprintf(cr->j.why, sizeof cr->j.why, "cannot judge the case: the stored %.330s", gwhy);
        return FR_OK;
    }
    const fr_case_outputs *po = NULL;
    bool own_p = false;
    fr_status pst = ist == FR_OK && est != FR_E_NOMEM
                        ? suite_ref(o, ref, FR_REF_PLAIN, c, &po_local, &po, &own_p, &ee)
                        : FR_E_UNSUPPORTED;
    bool have_plain = pst == FR_OK;
    own_p = own_p && have_plain;
    if (est == FR_E_NOMEM || pst == FR_E_NOMEM) {
        st = fr_fail(err, FR_E_NOMEM, "%s: %.400s", est == FR_E_NOMEM ? "ideal pipeline" : "plain reference", ee.msg);
    } else {
        st = fr_judge_plain(c, tags, cr->purpose, &o->judge, ist, ie.msg, &io, g, have_ideal ? eo : NULL,
                            have_plain ? po : NULL, &cr->j, err);
    }
    if (own_p) fr_case_outputs_free(&po_local);
    if (cr->j.d1_rows) cr->tags |= FR_TAG_D1;
    if (st == FR_OK && ist == FR_OK && c->op == FR_CASE_FWD && cr->cat == FR_CAT_PROPERTIES &&
        c->params.input_layout == FR_BNSD && c->in.fwd.value.shape[3] == c->in.fwd.key.shape[2] &&
        c->in.fwd.value.shape[3] > 1 && cr->j.verdict != FR_SKIP && cr->j.diag != FR_DIAG_SHAPE)
        fr_suite_check_props(c, &io, have_ideal ? eo : NULL, cr); /* a wrong-shaped output is never indexed */
    if (own_e) fr_case_outputs_free(&eo_local);
    if (own_g) fr_case_outputs_free(&go);
    if (iut_out_keep && ist == FR_OK && st == FR_OK)
        *iut_out_keep = io;
    else
        fr_case_outputs_free(&io);
    return st;
}

fr_status fr_suite_judge_case(fr_iut *iut, const fr_case *c, const fr_case_outputs *stored_golden,
                              const fr_suite_opts *o, fr_case_result *cr, fr_error *err) {
    return fr_suite_judge_one(iut, c, stored_golden, cr->tags, o, NULL, cr, err);
}

void fr_suite_downgrade(fr_case_result *cr, fr_verdict v, fr_diag d, const char *why) {
    if (cr->j.verdict == FR_FAIL || cr->j.verdict == FR_SKIP) return;
    if (v == FR_WARN && cr->j.verdict == FR_WARN) return;
    cr->j.verdict = v;
    cr->j.diag = d;
    snprintf(cr->j.why, sizeof cr->j.why, "%s", why);
}

/* One case of the set: built, post-processed, judged, with what its category checks on top (order variants,
 * determinism runs, the implementation-defined reading). */
fr_status fr_suite_run_item(fr_iut *iut, const fr_suite_item *it, const fr_suite_opts *o, fr_case_result *cr,
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
    const fr_caps *caps;
    const char *outside = NULL;
    if (iut && fr_iut_get_kind(iut) == FR_IUT_CALLBACK && fr_iut_caps(iut, &caps) == FR_CAPS_DECLARED &&
        !fr_hunt_caps_admit(caps, it->spec, it->hint, &outside)) { /* a callback's declaration is a promise: SKIP */
        cr->j.verdict = FR_SKIP;
        snprintf(cr->j.why, sizeof cr->j.why, "outside the declared capabilities: %s", outside);
        return FR_OK;
    }
    fr_gen_case g;
    fr_status st = fr_gen_build(it->spec, o->seed, &g, err);
    bool built = st == FR_OK;
    if (st == FR_OK) st = fr_suite_apply_mod(&g, it->mod, err);
    if (st == FR_OK) fr_suite_override_params(&g.params, o);
    if (st != FR_OK && built) fr_gen_case_free(&g); /* the modification failed: the built case is ours to free */
    if (st == FR_E_NOMEM) return st; /* never a verdict (fr_suite_judge_one) */
    if (st != FR_OK) {
        cr->j.verdict = st == FR_E_UNSUPPORTED ? FR_SKIP : FR_FAIL;
        cr->j.diag = st == FR_E_UNSUPPORTED ? FR_DIAG_NONE : FR_DIAG_ERROR_STATUS;
        snprintf(cr->j.why, sizeof cr->j.why, "case generation failed: %s: %.300s", fr_status_name(st), err->msg);
        return FR_OK;
    }
    fr_case c;
    fr_suite_case_view(&g, &c);
    c.mask_hint = it->hint;
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
    if (st == FR_OK && impldef) st = fr_suite_impldef_reading(&c, &base, cr, err);
    if (st == FR_OK && keep && cr->j.verdict != FR_SKIP &&
        fr_tensor_present(&base.fwd.attention_out) + fr_tensor_present(&base.bwd.dq) > 0) {
        if (it->cat == FR_CAT_DETERMINISM) {
            if (!fr_iut_is_builtin(iut)) {
                snprintf(cr->extra, sizeof cr->extra, "determinism runs apply to built-in engines only");
            } else {
                static const int kThreads[] = {1, 2, 0, 0};
                int diff = -1, first = -1;
                for (int r = 0; r < 4 && diff < 0 && st == FR_OK; r++) {
                    fr_case_outputs again;
                    fr_error e2;
                    fr_status rst = fr_iut_run(iut, &c, kThreads[r], &again, &e2);
                    if (rst != FR_OK) fr_case_outputs_free(&again); /* a failed run's outputs are the caller's */
                    if (rst == FR_E_NOMEM) {
                        st = fr_fail(err, rst, "determinism run %d: %.400s", r + 2, e2.msg);
                        break;
                    }
                    if (rst != FR_OK) {
                        diff = r;
                        first = -2;
                        break;
                    }
                    if (!fr_outputs_identical(&base, &again, &first)) diff = r;
                    fr_case_outputs_free(&again);
                }
                if (diff >= 0 && st == FR_OK) {
                    char why[200];
                    snprintf(why, sizeof why, "run %d (threads %d) differs from the first run in %s", diff + 2,
                             kThreads[diff], first >= 0 ? fr_case_output_name((fr_case_output)first) : "status");
                    fr_suite_downgrade(cr, FR_WARN, FR_DIAG_NONDETERMINISM, why);
                }
                snprintf(cr->extra, sizeof cr->extra, "4 more runs (threads 1, 2, default x2): %s",
                         diff >= 0 ? "results differ" : "bitwise identical");
            }
        } else if (it->cat == FR_CAT_ORDER && fr_tensor_present(&c.in.fwd.topk_indices)) {
            /* Order invariance: the same key sets in 3 more orders (not for an implementation-defined top-k case:
             * the variants are judged against flashref's reading, which the case must not impose). */
            double worst = 0,
                   bound = o->judge.k_out * fmax(cr->j.out[FR_CO_ATTENTION_OUT].ideal.rel_l2, ldexp(1.0, -24));
            int nv = 0;
            for (int v = 1; v <= 3 && st == FR_OK; v++) {
                fr_gen_case g2;
                fr_status gst = fr_gen_build(it->spec, o->seed, &g2, err);
                if (gst == FR_E_NOMEM) st = gst;
                if (gst != FR_OK) break;
                fr_suite_permute_topk(&g2.in.fwd.topk_indices, v, g2.seed);
                fr_suite_override_params(&g2.params, o);
                fr_case c2;
                fr_suite_case_view(&g2, &c2);
                fr_case_result vr;
                memset(&vr, 0, sizeof vr);
                vr.cat = cr->cat;
                fr_case_outputs vo;
                memset(&vo, 0, sizeof vo);
                fr_status vst = fr_suite_judge_one(iut, &c2, NULL, cr->tags, o, &vo, &vr, err);
                if (vst == FR_E_NOMEM) st = vst;
                if (vst == FR_OK) {
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
    if (st != FR_OK) fr_judgement_free(&cr->j); /* the caller keeps only judged cases */
    return st;
}

fr_status fr_suite_judge_spec(fr_iut *iut, const fr_gen_spec *spec, const fr_suite_opts *o, fr_case_result *cr,
                              fr_error *err) {
    fr_suite_item it = fr_suite_item_of_spec(spec, "random draw from the option matrix", true);
    return fr_suite_run_item(iut, &it, o, cr, err);
}
