/* `flashref verify --msprobe` (suite.h): every fusion-attention call of msprobe dumps rebuilt as a case
 * (cases/npu_call.h) and the NPU's dumped outputs judged against the golden, each result named by its dump name. A
 * dump or a call that cannot be read is that result's input error ("cannot load ..."), the others are judged; out of
 * memory is the library's own failure and stops the run (FR_E_NOMEM), never a verdict. */
#include "verify/suite/suite_internal.h"

#include "core/core.h"
#include "core/problem.h"
#include "io/msprobe.h"
#include "verify/cases/npu_call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a rebuilt case exercises (the judge's tags guide its diagnosis). */
static unsigned case_tags(const fr_case *c, const fr_problem *pb, bool have_pb) {
    unsigned t = 0;
    const fr_fwd_inputs *in = &c->in.fwd;
    if (fr_tensor_present(&in->atten_mask) || c->params.sparse_mode != 0 || c->params.pre_tokens < FR_TOKENS_MAX ||
        c->params.next_tokens < FR_TOKENS_MAX)
        t |= FR_TAG_MASK;
    if (fr_tensor_present(&in->real_shift)) t |= FR_TAG_PSE;
    if (c->params.keep_prob < 1.0) t |= FR_TAG_DROPOUT;
    if (have_pb && pb->N1 != pb->N2) t |= FR_TAG_GQA;
    if (c->params.input_layout == FR_TND) t |= FR_TAG_VARLEN;
    return t;
}

static fr_case_result *next_slot(fr_suite_result *res, int *cap) {
    if (res->n == *cap) {
        int nc = *cap ? 2 * *cap : 64;
        fr_case_result *v = realloc(res->cases, sizeof *v * (size_t)(nc + 1));
        if (!v) return NULL;
        res->cases = v;
        *cap = nc;
    }
    fr_case_result *cr = &res->cases[res->n];
    memset(cr, 0, sizeof *cr);
    return cr;
}

static void input_error(fr_case_result *cr, const char *what, fr_status st, const char *msg) {
    cr->j.verdict = FR_FAIL;
    cr->j.diag = FR_DIAG_INPUT;
    cr->input_error = true; /* the dump, not the implementation, is at fault: exit 2 */
    snprintf(cr->j.why, sizeof cr->j.why, "cannot load the %s: %s: %.330s", what, fr_status_name(st), msg);
}

/* Judges one entry of dump d into cr (name: its result's name). */
static fr_status judge_entry(fr_iut *iut, const fr_mp_dump *d, const fr_mp_entry *e, const char *name,
                             const fr_suite_opts *o, const char *write_dir, fr_case_result *cr, fr_error *err) {
    snprintf(cr->name, sizeof cr->name, "%s", name);
    double t0 = fr_suite_now_s();
    const fr_mp_entry *fwd = NULL;
    if (e->backward) {
        char want[300];
        snprintf(want, sizeof want, "%.*s.forward", (int)(strlen(e->name) - strlen(".backward")), e->name);
        for (int k = 0; k < d->n && !fwd; k++)
            if (!strcmp(d->e[k].name, want)) fwd = &d->e[k];
    }
    cr->bwd = e->backward || fr_npu_api_index(e->api) % 2 == 1;
    cr->cat = cr->bwd ? FR_CAT_GRADIENTS : FR_CAT_EQUIVALENCE;
    fr_npu_case nc;
    fr_error le;
    memset(&le, 0, sizeof le);
    fr_status st = fr_npu_rebuild(d, e, fwd, &nc, &le);
    if (st == FR_E_NOMEM) return fr_fail(err, st, "%s: %s", name, le.msg); /* ours, not the dump's: the run stops */
    if (st != FR_OK) {
        input_error(cr, "call", st, le.msg);
        cr->seconds = fr_suite_now_s() - t0;
        return FR_OK;
    }
    cr->dtype = nc.c.dtype;
    snprintf(cr->extra, sizeof cr->extra, "%s", nc.note);
    if (nc.skip[0]) {
        cr->j.verdict = FR_SKIP;
        cr->j.diag = FR_DIAG_NONE;
        snprintf(cr->j.why, sizeof cr->j.why, "%s", nc.skip);
        fr_npu_case_free(&nc);
        cr->seconds = fr_suite_now_s() - t0;
        return FR_OK;
    }
    fr_problem pb;
    bool have_pb = (nc.c.op == FR_CASE_FWD ? fr_problem_from_fwd(&nc.c.params, &nc.c.in.fwd, &pb, NULL)
                                           : fr_problem_from_bwd(&nc.c.params, &nc.c.in, &pb, NULL)) == FR_OK;
    if (have_pb) {
        cr->S1 = pb.S1;
        cr->S2 = pb.S2;
    }
    cr->tags = case_tags(&nc.c, &pb, have_pb);
    if (write_dir) {
        /* the rebuilt call as a case directory with the NPU's outputs beside it (`flashref verify DIR/NAME`) */
        size_t len = strlen(write_dir) + strlen(name) + 2;
        char *dir = malloc(len);
        if (dir) snprintf(dir, len, "%s/%s", write_dir, name);
        fr_error we;
        fr_status ws = !dir ? fr_fail(&we, FR_E_NOMEM, "out of memory") : fr_case_write(&nc.c, dir, &we);
        if (ws == FR_OK) ws = fr_case_write_outputs(dir, &nc.npu, &we);
        free(dir);
        if (ws != FR_OK) {
            fr_npu_case_free(&nc);
            return fr_fail(err, ws, "--write: %s", we.msg);
        }
    }
    fr_suite_opts oc = *o;
    oc.judge.external = true;
    oc.judge.absent_ok = nc.absent;
    fr_iut_given_set(iut, &nc.npu);
    st = fr_suite_judge_one(iut, &nc.c, NULL, cr->tags, &oc, NULL, cr, &le);
    fr_iut_given_set(iut, NULL);
    if (st == FR_E_NOMEM) {
        fr_npu_case_free(&nc);
        return fr_fail(err, st, "%s: %s", name, le.msg);
    }
    if (st != FR_OK) {
        memset(&cr->j, 0, sizeof cr->j);
        input_error(cr, "call (judging it failed)", st, le.msg);
        st = FR_OK;
    }
    char absent[120] = "";
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++)
        if (nc.absent >> k & 1u)
            snprintf(absent + strlen(absent), sizeof absent - strlen(absent), "%s%s", absent[0] ? ", " : "",
                     fr_case_output_name((fr_case_output)k));
    if (absent[0])
        snprintf(cr->extra + strlen(cr->extra), sizeof cr->extra - strlen(cr->extra), "; not in the dump, not "
                 "judged: %s", absent);
    fr_npu_case_free(&nc);
    cr->seconds = fr_suite_now_s() - t0;
    return st;
}

fr_status fr_suite_verify_msprobe(const char *root, const fr_suite_opts *o_in, const char *write_dir,
                                  fr_suite_result *res, int *n_dumps, int *n_other, fr_error *err) {
    fr_suite_opts o = o_in ? *o_in : fr_suite_opts_default();
    o.judge.external = true;
    memset(res, 0, sizeof *res);
    if (n_dumps) *n_dumps = 0;
    if (n_other) *n_other = 0;
    double t0 = fr_suite_now_s();
    char **dirs;
    int nd;
    fr_status st = fr_mp_find(root, &dirs, &nd, err);
    if (st != FR_OK) return st;
    if (n_dumps) *n_dumps = nd;
    fr_iut *iut = NULL;
    st = fr_iut_open_given("msprobe", &iut, err);
    int cap = 0;
    size_t rl = strlen(root);
    for (int k = 0; k < nd && st == FR_OK; k++) {
        /* with several dumps (steps, ranks) a result is named by its dump's place: step0/rank1/NPU.... */
        const char *rel = nd > 1 && !strncmp(dirs[k], root, rl) && dirs[k][rl] == '/' ? dirs[k] + rl + 1 : "";
        fr_mp_dump d;
        fr_error le;
        memset(&le, 0, sizeof le);
        fr_status ds = fr_mp_found_link(root, dirs[k])
                           ? fr_fail(&le, FR_E_IO, "%s is a symbolic link: not followed (a dump is read inside the "
                                     "directory given; give the link's target as DUMP to judge it)", dirs[k])
                           : fr_mp_open(dirs[k], fr_npu_is_fa, &d, &le);
        if (ds == FR_OK && d.n && (d.datafd < 0 || (d.task[0] && strcmp(d.task, "tensor")))) {
            ds = fr_fail(&le, FR_E_FORMAT, "%s: the dump holds no tensors (task \"%s\"%s): dump with task \"tensor\" "
                         "to have its calls judged", dirs[k], d.task, d.datafd < 0 ? ", no dump_tensor_data" : "");
            fr_mp_free(&d);
        }
        if (ds == FR_E_NOMEM) { /* the library's own failure, not the dump's: the run stops (docs/reliability.md) */
            st = fr_fail(err, ds, "%s", le.msg);
            break;
        }
        if (ds != FR_OK) {
            fr_case_result *cr = next_slot(res, &cap);
            if (!cr) {
                st = fr_fail(err, FR_E_NOMEM, "verify: out of memory");
                break;
            }
            snprintf(cr->name, sizeof cr->name, "%s", rel[0] ? rel : fr_suite_base_name(dirs[k]));
            cr->cat = FR_CAT_EQUIVALENCE;
            input_error(cr, "dump", ds, le.msg);
            res->n++;
            continue;
        }
        if (n_other) *n_other += d.others;
        for (int q = 0; q < d.n && st == FR_OK; q++) {
            const fr_mp_entry *e = &d.e[q];
            char name[sizeof res->cases[0].name];
            snprintf(name, sizeof name, "%s%s%s", rel, rel[0] ? "/" : "", e->name);
            fr_suite_select sel = {o.filter, o.only};
            if (!fr_suite_selected(name, &sel)) continue;
            fr_case_result *cr = next_slot(res, &cap);
            if (!cr) {
                st = fr_fail(err, FR_E_NOMEM, "verify: out of memory");
                break;
            }
            if ((st = judge_entry(iut, &d, e, name, &o, write_dir, cr, err)) == FR_OK) res->n++;
            if (o.progress && res->n) o.progress(o.progress_ud, res->n, res->n, &res->cases[res->n - 1]);
        }
        fr_mp_free(&d);
    }
    for (int k = 0; k < nd; k++) free(dirs[k]);
    free(dirs);
    fr_iut_close(iut);
    if (!res->cases) res->cases = calloc(1, sizeof *res->cases);
    res->planned = res->n;
    fr_suite_summarize(res);
    res->seconds = fr_suite_now_s() - t0;
    return st;
}
