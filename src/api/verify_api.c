/* The public verifier API (include/flashref_verify.h): the suites of suite.h run against a callback or an --impl
 * spec, their results as the command line's JSON and HTML, the metrics and the emulator studies as JSON. A thin
 * layer: every number comes from the same suite, judge, metrics and study code `flashref` runs. */
#include "flashref_verify.h"

#include "core/cleanup.h"
#include "core/core.h"
#include "core/problem.h"
#include "flashref_emulate.h"
#include "io/casedir.h"
#include "study/emu_study.h"
#include "verify/iut/iut_callback.h"
#include "verify/metrics/metrics.h"
#include "verify/cases/npu_call.h"
#include "verify/report/report.h"
#include "verify/suite/hunt.h"
#include "verify/suite/suite.h"

#include <cjson/cJSON.h>
#include "io/json_checked.h" /* after cJSON.h: every add checked */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct fr_verify_result {
    fr_suite_result r;
    fr_judge_opts judge;
    char impl[256];
    char set[32];
    uint64_t seed;
};

int fr_verify_abi_version(void) { return FR_VERIFY_ABI_VERSION; }

size_t fr_verify_sizeof(const char *type) {
    if (!type) return 0;
#define SZ(T)                                                                                                          \
    if (!strcmp(type, #T)) return sizeof(T);
    SZ(fr_tensor)
    SZ(fr_params)
    SZ(fr_fwd_inputs)
    SZ(fr_bwd_inputs)
    SZ(fr_fwd_outputs)
    SZ(fr_bwd_outputs)
    SZ(fr_error)
    SZ(fr_numerics)
    SZ(fr_verify_case)
    SZ(fr_verify_opts)
#undef SZ
    return 0;
}

/* The shapes of fr_case_alloc_outputs (casedir.c: fr_case_output_specs) without the allocation; out[k] is in
 * fr_case_output order. */
fr_status fr_verify_output_specs(fr_verify_op op, const fr_params *p, const fr_bwd_inputs *bin,
                                 fr_tensor out[FR_VERIFY_NUM_OUTPUTS], fr_error *err) {
    _Static_assert(FR_VERIFY_NUM_OUTPUTS == FR_CASE_NUM_OUTPUTS, "one output list");
    if (!p || !bin || !out) return fr_fail(err, FR_E_NULL, "outputs: NULL params, inputs or outputs");
    memset(out, 0, sizeof(fr_tensor) * FR_VERIFY_NUM_OUTPUTS);
    if (op != FR_VERIFY_FWD && op != FR_VERIFY_BWD) return fr_fail(err, FR_E_INVALID_ARG, "outputs: op %d", (int)op);
    return fr_case_output_specs(op == FR_VERIFY_FWD ? FR_CASE_FWD : FR_CASE_BWD, p, bin, false, out, err);
}

fr_verify_opts fr_verify_opts_default(void) {
    fr_suite_opts s = fr_suite_opts_default();
    fr_verify_opts o;
    memset(&o, 0, sizeof o);
    o.set = s.set;
    o.seed = s.seed;
    o.k_out = s.judge.k_out;
    o.k_max = s.judge.k_max;
    o.k_grad = s.judge.k_grad;
    o.k_stats = s.judge.k_stats;
    o.gain_warn = s.judge.gain_warn;
    o.growth_warn = s.judge.growth_warn;
    o.external = -1;
    return o;
}

/* The case names of a set in run order, so the callback can be told which case it computes. */
typedef struct names {
    char (*name)[96];
    char (*cat)[32];
    int n, cap;
    bool nomem;
} names;

static void names_add(void *ud, const char *name, fr_suite_cat cat, unsigned tags, const char *what) {
    (void)tags;
    (void)what;
    names *nm = ud;
    if (nm->nomem) return;
    if (nm->n == nm->cap) {
        int cap = nm->cap ? 2 * nm->cap : 256;
        void *a = realloc(nm->name, (size_t)cap * sizeof *nm->name), *b = a ? realloc(nm->cat, (size_t)cap * sizeof *nm->cat) : NULL;
        if (a) nm->name = a;
        if (!a || !b) {
            nm->nomem = true;
            return;
        }
        nm->cat = b;
        nm->cap = cap;
    }
    snprintf(nm->name[nm->n], sizeof nm->name[0], "%s", name);
    snprintf(nm->cat[nm->n], sizeof nm->cat[0], "%s", fr_suite_cat_name(cat));
    nm->n++;
}

typedef struct progress_ctx {
    fr_iut *iut;
    const names *nm;
} progress_ctx;

/* Called after each case: the next one is names[done]. */
static void on_progress(void *ud, int done, int total, const fr_case_result *last) {
    (void)total;
    (void)last;
    progress_ctx *pc = ud;
    if (done < pc->nm->n) fr_iut_callback_set_case(pc->iut, pc->nm->name[done], pc->nm->cat[done]);
}

static fr_status check_opts(const fr_verify_opts *o, fr_error *err) {
    if (!fr_suite_set_known(o->set))
        return fr_fail(err, FR_E_INVALID_ARG, "set: '%s': expected quick, default, long or all", o->set ? o->set : "");
    const double v[] = {o->k_out, o->k_max, o->k_grad, o->k_stats, o->gain_warn, o->growth_warn};
    static const char *const nm[] = {"k_out", "k_max", "k_grad", "k_stats", "gain_warn", "growth_warn"};
    for (int k = 0; k < 6; k++)
        if (!(v[k] > 0) || !isfinite(v[k])) return fr_fail(err, FR_E_INVALID_ARG, "%s: %g is not a positive number", nm[k], v[k]);
    if (o->threads < 0 || o->threads > 4096)
        return fr_fail(err, FR_E_INVALID_ARG, "threads: %d is not a count in 0..4096", o->threads);
    if (o->external < -1 || o->external > 1)
        return fr_fail(err, FR_E_INVALID_ARG, "external: %d (expected -1, 0 or 1)", o->external);
    fr_standard s;
    return o->standard ? fr_standard_parse(o->standard, &s, err) : FR_OK;
}

/* Keeps only the case named exactly `exact` (the suite's filter matches substrings). */
static void keep_exact(fr_suite_result *r, const char *exact) {
    int w = 0;
    for (int k = 0; k < r->n; k++) {
        if (!strcmp(r->cases[k].name, exact))
            r->cases[w++] = r->cases[k];
        else
            fr_judgement_free(&r->cases[k].j);
    }
    r->n = w;
    fr_suite_summarize(r);
}

/* The suite options of a verify_opts (thresholds; set, filter, seed, threads). */
static fr_suite_opts suite_opts_of(const fr_verify_opts *o) {
    fr_suite_opts so = fr_suite_opts_default();
    so.set = o->set;
    so.filter = o->exact ? o->exact : o->filter;
    so.seed = o->seed;
    so.threads = o->threads;
    so.judge.k_out = o->k_out;
    so.judge.k_max = o->k_max;
    so.judge.k_grad = o->k_grad;
    so.judge.k_stats = o->k_stats;
    so.judge.gain_warn = o->gain_warn;
    so.judge.growth_warn = o->growth_warn;
    if (o->standard) fr_standard_parse(o->standard, &so.judge.standard, NULL); /* checked by check_opts */
    return so;
}

/* Hands a finished run over as *res (or frees it when st is an error). */
static fr_status finish(fr_verify_result *vr, fr_status st, const fr_verify_opts *o, const fr_suite_opts *so,
                        const char *impl, const char *set, fr_verify_result **res) {
    if (st != FR_OK) {
        fr_suite_result_free(&vr->r);
        free(vr);
        return st;
    }
    if (o->exact) keep_exact(&vr->r, o->exact);
    vr->judge = so->judge;
    snprintf(vr->impl, sizeof vr->impl, "%s", o->impl_name ? o->impl_name : impl);
    snprintf(vr->set, sizeof vr->set, "%s", set);
    vr->seed = o->seed;
    *res = vr;
    return FR_OK;
}

static fr_status run(const fr_verify_opts *o_in, fr_iut *iut, fr_verify_result **res, fr_error *err) {
    fr_verify_opts o = o_in ? *o_in : fr_verify_opts_default();
    if (!o.set) o.set = "default";
    fr_status st = check_opts(&o, err);
    if (st != FR_OK) return st;
    fr_verify_result *vr = calloc(1, sizeof *vr);
    if (!vr) return fr_fail(err, FR_E_NOMEM, "verify: out of memory");
    fr_suite_opts so = suite_opts_of(&o);
    so.judge.external = o.external == 1 || (o.external == -1 && !fr_iut_is_builtin(iut));
    names nm;
    memset(&nm, 0, sizeof nm);
    progress_ctx pc = {iut, &nm};
    if (fr_iut_get_kind(iut) == FR_IUT_CALLBACK) {
        fr_suite_list(so.set, so.filter, names_add, &nm);
        if (nm.nomem) {
            free(nm.name);
            free(nm.cat);
            free(vr);
            return fr_fail(err, FR_E_NOMEM, "verify: out of memory");
        }
        if (nm.n) fr_iut_callback_set_case(iut, nm.name[0], nm.cat[0]);
        so.progress = on_progress;
        so.progress_ud = &pc;
    }
    st = fr_suite_run(iut, &so, &vr->r, err);
    free(nm.name);
    free(nm.cat);
    return finish(vr, st, &o, &so, fr_iut_name(iut), o.set, res);
}

static fr_status finish_json(cJSON *root, char **json, fr_error *err);

/* fr_verify_judge_outputs: the caller's outputs handed to the judge through a callback IUT, the ones not given
 * taken from the golden. */
typedef struct given_ctx {
    const fr_fwd_outputs *fo;
    const fr_bwd_outputs *bo;
    const fr_case_outputs *golden;
} given_ctx;

static fr_status given_cb(void *ud, const fr_verify_case *c, fr_fwd_outputs *fo, fr_bwd_outputs *bo, fr_error *err) {
    const given_ctx *g = ud;
    fr_case_op op = c->op == FR_VERIFY_BWD ? FR_CASE_BWD : FR_CASE_FWD;
    fr_case_outputs dst = {op, *fo, *bo}, src = {op, *g->fo, *g->bo}; /* views: the data pointers are shared */
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        const fr_tensor *d = fr_case_output_cslot(&dst, (fr_case_output)k);
        const fr_tensor *s = fr_case_output_cslot(&src, (fr_case_output)k);
        if (!fr_tensor_present(d) || !d->data) continue; /* not an output of this op */
        if (!fr_tensor_present(s) || !s->data) s = fr_case_output_cslot(g->golden, (fr_case_output)k);
        if (s->ndim != d->ndim || memcmp(s->shape, d->shape, sizeof(int64_t) * (size_t)d->ndim) != 0) {
            char a[160] = "", b[160] = "";
            for (int q = 0; q < s->ndim; q++) snprintf(a + strlen(a), sizeof a - strlen(a), "%s%lld", q ? "," : "", (long long)s->shape[q]);
            for (int q = 0; q < d->ndim; q++) snprintf(b + strlen(b), sizeof b - strlen(b), "%s%lld", q ? "," : "", (long long)d->shape[q]);
            return fr_fail(err, FR_E_OUTPUT, "shape: %s: shape [%s], the operator's is [%s]",
                           fr_case_output_name((fr_case_output)k), a, b);
        }
        int64_t n = fr_tensor_numel(d);
        for (int64_t q = 0; q < n; q++) /* d is contiguous (fr_iut_run allocated it); s any strides */
            fr_store_f64(d, q, fr_load_f64(s, fr_tensor_offset_linear(s, q)));
    }
    return FR_OK;
}

fr_status fr_verify_judge_outputs(fr_verify_op op, const fr_params *p, const fr_bwd_inputs *in,
                                  const fr_fwd_outputs *fwd, const fr_bwd_outputs *bwd, const fr_verify_opts *o_in,
                                  char **json, fr_error *err) {
    if (!p || !in || !json || (op == FR_VERIFY_FWD ? !fwd : !bwd))
        return fr_fail(err, FR_E_NULL, "judge: NULL params, inputs, outputs or result");
    if (op != FR_VERIFY_FWD && op != FR_VERIFY_BWD) return fr_fail(err, FR_E_INVALID_ARG, "judge: op %d", (int)op);
    *json = NULL;
    fr_verify_opts o = o_in ? *o_in : fr_verify_opts_default();
    fr_status st = check_opts(&o, err);
    if (st != FR_OK) return st;
    fr_case c; /* a view of the caller's problem */
    memset(&c, 0, sizeof c);
    c.op = op == FR_VERIFY_FWD ? FR_CASE_FWD : FR_CASE_BWD;
    c.dtype = in->fwd.query.dtype;
    c.params = *p;
    c.in = *in;
    st = op == FR_VERIFY_FWD ? fr_validate_fwd(p, &in->fwd, NULL, err) : fr_validate_bwd(p, in, NULL, err);
    if (st != FR_OK) return st;
    fr_case_outputs golden; /* fp64, as the suite's */
    if ((st = fr_case_alloc_outputs(&c, true, &golden, err)) != FR_OK) return st;
    fr_engine ge = fr_engine_default(FR_ENGINE_GOLDEN);
    ge.num_threads = o.threads;
    st = op == FR_VERIFY_FWD ? fr_fwd(p, &in->fwd, &golden.fwd, &ge, err) : fr_bwd(p, in, &golden.bwd, &ge, err);
    if (st != FR_OK) {
        fr_case_outputs_free(&golden);
        return st;
    }
    fr_bwd_outputs nob;
    fr_fwd_outputs nof;
    memset(&nob, 0, sizeof nob);
    memset(&nof, 0, sizeof nof);
    given_ctx g = {fwd ? fwd : &nof, bwd ? bwd : &nob, &golden};
    fr_iut *iut;
    if ((st = fr_iut_callback_open(given_cb, &g, o.impl_name ? o.impl_name : "given", &iut, err)) != FR_OK) {
        fr_case_outputs_free(&golden);
        return st;
    }
    fr_iut_callback_set_case(iut, "outputs", "equivalence");
    fr_suite_opts so = fr_suite_opts_default();
    so.threads = o.threads;
    so.judge.k_out = o.k_out, so.judge.k_max = o.k_max, so.judge.k_grad = o.k_grad, so.judge.k_stats = o.k_stats;
    so.judge.gain_warn = o.gain_warn, so.judge.growth_warn = o.growth_warn;
    if (o.standard) fr_standard_parse(o.standard, &so.judge.standard, NULL);
    so.judge.external = o.external != 0;
    fr_case_result cr;
    memset(&cr, 0, sizeof cr);
    snprintf(cr.name, sizeof cr.name, "outputs");
    cr.cat = FR_CAT_EQUIVALENCE;
    cr.dtype = c.dtype;
    cr.bwd = c.op == FR_CASE_BWD;
    st = fr_suite_judge_case(iut, &c, &golden, &so, &cr, err);
    fr_iut_close(iut);
    fr_case_outputs_free(&golden);
    if (st != FR_OK) return st;
    cJSON *root = fr_report_case_json(&cr);
    fr_judgement_free(&cr.j);
    return finish_json(root, json, err);
}

/* With opts.exact, the suite's substring filter also runs cases whose names contain the exact one: those are
 * skipped without calling the caller's function (and dropped from the result by keep_exact). */
typedef struct exact_ctx {
    fr_verify_callback fn;
    void *ud;
    const char *exact;
} exact_ctx;

static fr_status exact_cb(void *ud, const fr_verify_case *c, fr_fwd_outputs *fo, fr_bwd_outputs *bo, fr_error *err) {
    const exact_ctx *x = ud;
    if (strcmp(c->name, x->exact) != 0) return fr_fail(err, FR_E_UNSUPPORTED, "not the requested case");
    return x->fn(x->ud, c, fo, bo, err);
}

fr_status fr_verify_run_callback(const fr_verify_opts *o, fr_verify_callback fn, void *ud, fr_verify_result **res,
                                 fr_error *err) {
    return fr_verify_run_callback_caps(o, NULL, fn, ud, res, err);
}

fr_status fr_verify_run_callback_caps(const fr_verify_opts *o, const char *capabilities, fr_verify_callback fn,
                                      void *ud, fr_verify_result **res, fr_error *err) {
    if (!res) return fr_fail(err, FR_E_NULL, "verify: NULL result pointer");
    *res = NULL;
    fr_iut *iut;
    exact_ctx x = {fn, ud, o ? o->exact : NULL};
    if (fn && x.exact) {
        fn = exact_cb;
        ud = &x;
    }
    fr_status st = fr_iut_callback_open(fn, ud, o ? o->impl_name : NULL, &iut, err);
    if (st != FR_OK) return st;
    if (capabilities) st = fr_iut_declare(iut, capabilities, strlen(capabilities), err);
    if (st == FR_OK) st = run(o, iut, res, err);
    fr_iut_close(iut);
    return st;
}

/* ---- the hunt (verify/suite/hunt.h) ---- */

static volatile sig_atomic_t g_hunt_stop;
void fr_verify_hunt_stop(void) { g_hunt_stop = 1; }

/* Options of fr_verify_hunt from their JSON object (unknown keys are an error: a typo must not change a hunt). */
static fr_status hunt_opts(const char *json, fr_hunt_opts *o, const char **name, const char **caps_out,
                           cJSON **keep, fr_error *err) {
    *o = fr_hunt_opts_default();
    *keep = NULL;
    if (!json || !*json) return FR_OK;
    cJSON *j = cJSON_Parse(json);
    if (!j || !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return fr_fail(err, FR_E_INVALID_ARG, "hunt: options: not a JSON object");
    }
    *keep = j;
    for (const cJSON *a = j->child; a; a = a->next) {
        const char *k = a->string;
        bool num = cJSON_IsNumber(a), str = cJSON_IsString(a);
        if (!strcmp(k, "seed") && num && a->valuedouble >= 0 && a->valuedouble < 9007199254740992.0)
            o->seed = (uint64_t)a->valuedouble;
        else if (!strcmp(k, "budget_s") && num && a->valuedouble >= 0 && isfinite(a->valuedouble))
            o->budget_s = a->valuedouble;
        else if (!strcmp(k, "max_draws") && num && a->valuedouble >= 0 && a->valuedouble <= 1e8)
            o->max_draws = (int)a->valuedouble;
        else if (!strcmp(k, "max_shrink") && num && a->valuedouble >= 0 && a->valuedouble <= 1000)
            o->max_shrink = (int)a->valuedouble;
        else if (!strcmp(k, "threads") && num && a->valuedouble >= 0 && a->valuedouble <= 4096)
            o->threads = (int)a->valuedouble;
        else if (!strcmp(k, "out") && (str || cJSON_IsNull(a)))
            o->out_dir = str ? a->valuestring : NULL;
        else if (!strcmp(k, "name") && str)
            *name = a->valuestring;
        else if (!strcmp(k, "no_corners") && cJSON_IsBool(a))
            o->no_corners = cJSON_IsTrue(a);
        else if (!strcmp(k, "capabilities") && (str || cJSON_IsNull(a)))
            *caps_out = str ? a->valuestring : NULL;
        else
            return fr_fail(err, FR_E_INVALID_ARG, "hunt: option \"%.60s\": unknown or of the wrong type", k);
    }
    return FR_OK;
}

fr_status fr_verify_hunt(const char *opts_json, const char *impl, fr_verify_callback fn, void *ud,
                         char **findings_json, fr_error *err) {
    if (!findings_json || (!impl == !fn))
        return fr_fail(err, FR_E_NULL, "hunt: give exactly one of impl and fn, and a findings pointer");
    *findings_json = NULL;
    fr_hunt_opts o;
    const char *name = NULL, *caps = NULL;
    cJSON *keep;
    fr_status st = hunt_opts(opts_json, &o, &name, &caps, &keep, err);
    fr_iut *iut = NULL;
    if (st == FR_OK)
        st = impl ? fr_iut_open(impl, &iut, err) : fr_iut_callback_open(fn, ud, name ? name : "callback", &iut, err);
    if (st == FR_OK && caps) st = fr_iut_declare(iut, caps, strlen(caps), err);
    if (st == FR_OK && !(o.budget_s > 0) && o.max_draws <= 0)
        st = fr_fail(err, FR_E_INVALID_ARG, "hunt: budget 0 needs max_draws");
    if (st == FR_OK) {
        g_hunt_stop = 0;
        o.stop = &g_hunt_stop;
        fr_hunt_result r;
        st = fr_hunt_run(iut, &o, &r, err);
        if (st == FR_OK && r.interrupted) st = fr_fail(err, FR_E_INTERNAL, "hunt: interrupted");
        if (st == FR_OK) st = fr_hunt_json(&r, iut, &o, findings_json, err);
        fr_hunt_result_free(&r);
    }
    fr_iut_close(iut);
    cJSON_Delete(keep);
    return st;
}

fr_status fr_verify_run_impl(const fr_verify_opts *o, const char *impl, fr_verify_result **res, fr_error *err) {
    if (!res || !impl) return fr_fail(err, FR_E_NULL, "verify: NULL implementation or result pointer");
    *res = NULL;
    fr_iut *iut;
    fr_status st = fr_iut_open(impl, &iut, err);
    if (st != FR_OK) return st;
    st = run(o, iut, res, err);
    fr_iut_close(iut);
    return st;
}

fr_status fr_verify_msprobe(const fr_verify_opts *o_in, const char *dump_dir, const char *standard,
                            const char *write_dir, fr_verify_result **res, fr_error *err) {
    if (!res || !dump_dir) return fr_fail(err, FR_E_NULL, "verify_msprobe: NULL dump directory or result pointer");
    *res = NULL;
    fr_verify_opts o = o_in ? *o_in : fr_verify_opts_default();
    if (!o.set) o.set = "default";
    fr_status st = check_opts(&o, err);
    if (st != FR_OK) return st;
    fr_suite_opts so = suite_opts_of(&o);
    so.judge.external = true;
    so.judge.standard = FR_STD_ASCEND_L1; /* msprobe's level for these APIs */
    if (standard && (st = fr_standard_parse(standard, &so.judge.standard, err)) != FR_OK) return st;
    fr_verify_result *vr = calloc(1, sizeof *vr);
    if (!vr) return fr_fail(err, FR_E_NOMEM, "verify: out of memory");
    st = fr_suite_verify_msprobe(dump_dir, &so, write_dir, &vr->r, NULL, NULL, err);
    char impl[256];
    snprintf(impl, sizeof impl, "msprobe:%.240s", dump_dir);
    return finish(vr, st, &o, &so, impl, "verify", res);
}

const char *const *fr_verify_npu_schemas(void) { return fr_npu_schemas; }

int fr_verify_result_overall(const fr_verify_result *r) { return r ? (int)r->r.overall : (int)FR_SKIP; }
int fr_verify_result_count(const fr_verify_result *r) { return r ? r->r.n : 0; }

static fr_report_meta meta_of(const fr_verify_result *r) {
    fr_report_meta m = {r->impl, r->set, r->seed, &r->judge};
    return m;
}

/* The report code writes files; the JSON goes through a temporary file so that it stays byte-identical to
 * `flashref suite --json`. */
fr_status fr_verify_result_json(const fr_verify_result *r, char **json, fr_error *err) {
    if (!r || !json) return fr_fail(err, FR_E_NULL, "verify: NULL result or output pointer");
    *json = NULL;
    const char *tmp = getenv("TMPDIR");
    char path[4200];
    snprintf(path, sizeof path, "%.4000s/flashref-json-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) return fr_fail(err, FR_E_IO, "%s: cannot create a temporary file", path);
    close(fd);
    int slot = fr_cleanup_add_file(path); /* removed on SIGINT/SIGTERM by a program that asks (cleanup.h) */
    fr_report_meta m = meta_of(r);
    fr_status st = fr_report_json(path, &r->r, &m, err);
    if (st == FR_OK) {
        FILE *f = fopen(path, "rb");
        char *buf = NULL;
        long len = -1;
        bool nomem = !f && errno == ENOMEM;
        if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
            !(nomem = !(buf = malloc((size_t)len + 1))) && fread(buf, 1, (size_t)len, f) == (size_t)len) {
            buf[len] = '\0';
            *json = buf;
        } else {
            free(buf);
            st = nomem ? fr_fail(err, FR_E_NOMEM, "verify: out of memory reading back the JSON")
                       : fr_fail(err, FR_E_IO, "%s: cannot read back the JSON", path);
        }
        if (f) fclose(f);
    }
    remove(path);
    fr_cleanup_drop(slot);
    return st;
}

fr_status fr_verify_result_html(const fr_verify_result *r, const char *path, fr_error *err) {
    if (!r || !path) return fr_fail(err, FR_E_NULL, "verify: NULL result or path");
    fr_report_meta m = meta_of(r);
    return fr_report_html(path, &r->r, &m, err);
}

void fr_verify_result_free(fr_verify_result *r) {
    if (!r) return;
    fr_suite_result_free(&r->r);
    free(r);
}

void fr_verify_free(void *p) { free(p); }

typedef struct list_ctx {
    void (*fn)(void *ud, const char *name, const char *category, const char *what);
    void *ud;
} list_ctx;

static void list_one(void *ud, const char *name, fr_suite_cat cat, unsigned tags, const char *what) {
    (void)tags;
    list_ctx *lc = ud;
    if (lc->fn) lc->fn(lc->ud, name, fr_suite_cat_name(cat), what ? what : "");
}

int fr_verify_list(const char *set, const char *filter,
                   void (*fn)(void *ud, const char *name, const char *category, const char *what), void *ud) {
    if (!fr_suite_set_known(set)) return -1;
    list_ctx lc = {fn, ud};
    return fr_suite_list(set, filter, list_one, &lc);
}

const char *const *fr_verify_set_names(void) { return fr_suite_set_names; }

/* ---------------------------------------------------------------------------------------------------------------- */
/* Metrics and studies as JSON. */

static cJSON *num(double v) {
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateString(isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

static fr_status finish_json(cJSON *root, char **json, fr_error *err) {
    *json = root && !fr_json_failed() ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return *json ? FR_OK : fr_fail(err, FR_E_NOMEM, "out of memory");
}

static cJSON *num_array(const double *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int k = 0; k < n; k++)
        cJSON_AddItemToArray(a, num(v[k]));
    return a;
}

fr_status fr_verify_metrics_json(const double *a, const double *r, int64_t rows, int64_t row_len, fr_dtype ulp_dtype,
                                 char **json, fr_error *err) {
    if (!json) return fr_fail(err, FR_E_NULL, "metrics: NULL output pointer");
    *json = NULL;
    if ((int)ulp_dtype < 0 || ulp_dtype >= FR_DTYPE_COUNT || ulp_dtype == FR_I32 || ulp_dtype == FR_I64 ||
        ulp_dtype == FR_U8 || ulp_dtype == FR_BOOL)
        return fr_fail(err, FR_E_DTYPE, "metrics: ulp dtype %d is not a float format", (int)ulp_dtype);
    fr_metrics_opts mo = fr_metrics_opts_default();
    mo.ulp_dtype = ulp_dtype;
    fr_metrics m;
    fr_status st = fr_metrics_compute(a, r, rows, row_len, &mo, &m, err);
    if (st != FR_OK) return st;
    fr_json_clear();
    cJSON *o = cJSON_CreateObject();
#define F(name) cJSON_AddItemToObject(o, #name, num((double)m.name));
    F(n) F(n_anomaly) F(n_anomaly_mismatch) F(first_mismatch) F(max_abs) F(argmax_abs) F(max_rel) F(mean_rel)
    F(rel_l2) F(nmse) F(cos_diff) F(max_ulp) F(mean_ulp) F(rows_used) F(gain_rms) F(gain_max) F(gain_mean)
    F(gain_p50) F(gain_p90) F(gain_p99) F(noise_floor) F(gain_over_floor)
#undef F
    return finish_json(o, json, err);
}

double fr_verify_ulp(fr_dtype dt, double x) { return fr_ulp_of(dt, x); }

fr_status fr_verify_study_order_invariance(int64_t T, int64_t W, int64_t H, int64_t Dl, int64_t Dr, double beta,
                                           uint64_t seed, double lazy_threshold, int bwd, int threads, char **json,
                                           fr_error *err) {
    if (!json) return fr_fail(err, FR_E_NULL, "study: NULL output pointer");
    *json = NULL;
    if (threads < 0) return fr_fail(err, FR_E_INVALID_ARG, "study: threads %d < 0", threads);
    fr_oi_result r;
    fr_status st = fr_study_order_invariance(T, W, H, Dl, Dr, beta, seed, lazy_threshold, bwd != 0, threads, &r, err);
    if (st != FR_OK) return st;
    fr_json_clear();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "T", num((double)r.T));
    cJSON_AddItemToObject(o, "W", num((double)r.W));
    cJSON_AddItemToObject(o, "H", num((double)r.H));
    cJSON_AddItemToObject(o, "Dl", num((double)r.Dl));
    cJSON_AddItemToObject(o, "Dr", num((double)r.Dr));
    cJSON_AddItemToObject(o, "beta", num(r.beta));
    cJSON_AddItemToObject(o, "bf16_floor_rel_l2", num(r.bf16_floor_rel_l2));
    cJSON_AddItemToObject(o, "bf16_floor_gain", num(r.bf16_floor_gain));
    cJSON_AddItemToObject(o, "self_weight_p50", num(r.self_weight_p50));
    cJSON_AddItemToObject(o, "self_weight_p90", num(r.self_weight_p90));
    cJSON_AddItemToObject(o, "seconds", num(r.seconds));
    cJSON *rows = cJSON_CreateArray();
    for (int k = 0; k < 3; k++) {
        const fr_oi_row *w = &r.rows[k];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "label", w->label);
        cJSON_AddItemToObject(x, "out_rel_l2", num_array(w->out_rel_l2, 2));
        cJSON_AddItemToObject(x, "gain_rms", num_array(w->gain_rms, 2));
        cJSON_AddItemToObject(x, "diff_rel_l2", num(w->diff_rel_l2));
        cJSON_AddItemToObject(x, "diff_gain_rms", num(w->diff_gain_rms));
        cJSON_AddItemToObject(x, "diff_noise_floor", num(w->diff_noise_floor));
        cJSON_AddItemToObject(x, "diff_gain_over_floor", num(w->diff_gain_over_floor));
        const char *gn[3] = {"dq", "dk", "dv"};
        const double(*g[3])[2] = {w->dq, w->dk, w->dv};
        for (int q = 0; q < 3; q++) {
            cJSON *a = cJSON_CreateArray();
            for (int ord = 0; ord < 2; ord++)
                cJSON_AddItemToArray(a, num_array(g[q][ord], 2));
            cJSON_AddItemToObject(x, gn[q], a);
        }
        cJSON_AddItemToArray(rows, x);
    }
    cJSON_AddItemToObject(o, "configs", rows);
    return finish_json(o, json, err);
}

fr_status fr_verify_study_seqlen(const int64_t *lens, int nlens, int64_t S1, int64_t D, uint64_t seed, int threads,
                                 char **json, fr_error *err) {
    if (!json) return fr_fail(err, FR_E_NULL, "study: NULL output pointer");
    *json = NULL;
    if (!lens || nlens < 1 || nlens > FR_SEQLEN_MAX_LENS)
        return fr_fail(err, FR_E_INVALID_ARG, "study seqlen: %d lengths (expected 1..%d)", nlens, FR_SEQLEN_MAX_LENS);
    if (threads < 0) return fr_fail(err, FR_E_INVALID_ARG, "study: threads %d < 0", threads);
    fr_seqlen_result *r = calloc(1, sizeof *r);
    if (!r) return fr_fail(err, FR_E_NOMEM, "study: out of memory");
    fr_status st = fr_study_seqlen(lens, nlens, S1, D, seed, threads, r, err);
    if (st != FR_OK) {
        free(r);
        return st;
    }
    fr_json_clear();
    cJSON *o = cJSON_CreateObject();
    double lv[FR_SEQLEN_MAX_LENS];
    for (int l = 0; l < r->nlens; l++)
        lv[l] = (double)r->len[l];
    cJSON_AddItemToObject(o, "lens", num_array(lv, r->nlens));
    cJSON *pn = cJSON_CreateArray();
    for (int p = 0; p < r->npipes; p++)
        cJSON_AddItemToArray(pn, cJSON_CreateString(r->pipe[p]));
    cJSON_AddItemToObject(o, "pipelines", pn);
    const char *names_[4] = {"rel_l2", "gain_rms", "sum_rel", "nonfinite"};
    for (int q = 0; q < 4; q++) {
        cJSON *a = cJSON_CreateArray();
        for (int p = 0; p < r->npipes; p++) {
            double v[FR_SEQLEN_MAX_LENS];
            for (int l = 0; l < r->nlens; l++)
                v[l] = q == 0 ? r->rel_l2[p][l] : q == 1 ? r->gain_rms[p][l] : q == 2 ? r->sum_rel[p][l]
                                                                                      : (double)r->nonfinite[p][l];
            cJSON_AddItemToArray(a, num_array(v, r->nlens));
        }
        cJSON_AddItemToObject(o, names_[q], a);
    }
    cJSON_AddItemToObject(o, "seconds", num(r->seconds));
    free(r);
    return finish_json(o, json, err);
}
