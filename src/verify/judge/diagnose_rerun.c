/* Re-running a modified copy of a failing case (diagnose_rerun.h): tensor copies and remaps, the modified case
 * and the tensors it owns, the golden (or an engine) run on it, the outputs the diagnosis compares. Below both the
 * candidate table (diagnose_cands.c) and the matching (diagnose.c). */
#include "verify/judge/diagnose_rerun.h"
#include "verify/judge/plain_ref.h"

#include "core/core.h"
#include "verify/metrics/metrics.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

bool dg_is_d1_max(double m) { return m <= -(double)FLT_MAX * (1.0 - 1e-7); }

/* A contiguous copy of t (any strides), same dtype; shape may differ from t's only where `map` says: element k of
 * the copy (C order, copy's shape) comes from element map(k) of t (C order, t's shape). */
fr_tensor dg_t_remap(const fr_tensor *t, int ndim, const int64_t *shape, dg_index_map map, const void *ctx) {
    fr_tensor d = fr_tensor_make(t->dtype, NULL, ndim, shape);
    int64_t n = fr_tensor_numel(&d);
    size_t es = fr_dtype_size(t->dtype);
    d.data = calloc((size_t)(n > 0 ? n : 0) + 1, es);
    if (!d.data) {
        memset(&d, 0, sizeof d);
        return d;
    }
    int64_t idx[FR_MAX_DIMS];
    for (int64_t k = 0; k < n; k++) {
        int64_t r = k;
        for (int q = ndim - 1; q >= 0; q--) {
            idx[q] = r % shape[q];
            r /= shape[q];
        }
        int64_t src = map(ctx, idx);
        if (src < 0) continue; /* left zero */
        memcpy((char *)d.data + (size_t)k * es, (const char *)t->data + (size_t)src * es, es);
    }
    return d;
}

/* Slicing one dimension: element idx of the copy is element idx (+ j0 in dimension dim) of t. */
typedef struct slice_ctx {
    const fr_tensor *t;
    int dim;
    int64_t j0;
} slice_ctx;
static int64_t slice_map(const void *c, const int64_t *idx) {
    const slice_ctx *s = c;
    int64_t off = 0;
    for (int q = 0; q < s->t->ndim; q++)
        off += (idx[q] + (q == s->dim ? s->j0 : 0)) * s->t->strides[q];
    return off;
}
fr_tensor dg_t_slice(const fr_tensor *t, int dim, int64_t j0, int64_t j1) {
    int64_t sh[FR_MAX_DIMS];
    memcpy(sh, t->shape, sizeof sh);
    sh[dim] = j1 - j0;
    slice_ctx s = {t, dim, j0};
    return dg_t_remap(t, t->ndim, sh, slice_map, &s);
}
fr_tensor dg_t_copy(const fr_tensor *t) { return dg_t_slice(t, 0, 0, t->shape[0]); }

void dg_cres_free(dg_cres *c) {
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++)
        free(c->v[k]);
    memset(c, 0, sizeof *c);
}

void dg_alt_init(dg_alt *a, const fr_diag_in *x) {
    memset(a, 0, sizeof *a);
    a->c = *x->c;
}
bool dg_alt_own(dg_alt *a, fr_tensor *slot, fr_tensor t) {
    if (!t.data || a->n_owned >= 8) {
        free(t.data);
        return false;
    }
    a->owned[a->n_owned++] = t.data;
    *slot = t;
    return true;
}
void dg_alt_free(dg_alt *a) {
    for (int k = 0; k < a->n_owned; k++)
        free(a->owned[k]);
}

/* Runs the (modified) case on engine e (NULL: the plain reference in the input dtype, fr_plain_*_native) and loads
 * the outputs the diagnosis compares (and the forward's stats). */
bool dg_run_alt(const fr_case *c, const fr_engine *e, bool fp64, dg_cres *out) {
    return dg_run_alt_native(c, e, 0, fp64, out);
}

bool dg_run_alt_native(const fr_case *c, const fr_engine *e, int style, bool fp64, dg_cres *out) {
    fr_case_outputs g;
    fr_error err;
    memset(out, 0, sizeof *out);
    if (fr_case_alloc_outputs(c, fp64, &g, &err) != FR_OK) return false;
    fr_status st;
    if (!e)
        st = c->op == FR_CASE_FWD ? fr_plain_fwd_native(&c->params, &c->in.fwd, &g.fwd, style, &err)
                                  : fr_plain_bwd_native(&c->params, &c->in, &g.bwd, style, &err);
    else
        st = c->op == FR_CASE_FWD ? fr_fwd(&c->params, &c->in.fwd, &g.fwd, e, &err)
                                  : fr_bwd(&c->params, &c->in, &g.bwd, e, &err);
    bool ok = st == FR_OK;
    int first = c->op == FR_CASE_FWD ? FR_CO_ATTENTION_OUT : FR_CO_DQ;
    int last = c->op == FR_CASE_FWD ? FR_CO_SOFTMAX_SUM : FR_CO_DV;
    for (int k = first; ok && k <= last; k++) {
        const fr_tensor *t = fr_case_output_cslot(&g, (fr_case_output)k);
        if (!fr_tensor_present(t) || fr_tensor_numel(t) == 0) continue;
        out->v[k] = fr_metrics_load(t, &out->n[k]);
        ok = out->v[k] != NULL;
    }
    fr_case_outputs_free(&g);
    if (!ok) dg_cres_free(out);
    return ok;
}

/* One thread: the re-runs are small, and a parallel region per run costs more than it saves. */
bool dg_run_golden(const fr_case *c, dg_cres *out) {
    fr_engine ge = fr_engine_default(FR_ENGINE_GOLDEN);
    ge.num_threads = 1;
    return dg_run_alt(c, &ge, true, out);
}

/* The compared outputs: attention_out (forward), dq, dk, dv (backward). */
int dg_cmp_first(const fr_diag_in *x) { return x->c->op == FR_CASE_FWD ? FR_CO_ATTENTION_OUT : FR_CO_DQ; }
int dg_cmp_last(const fr_diag_in *x) { return x->c->op == FR_CASE_FWD ? FR_CO_ATTENTION_OUT : FR_CO_DV; }

/* A copy of the golden's compared outputs (for candidates that transform them). */
bool dg_copy_golden(const fr_diag_in *x, dg_cres *out) {
    memset(out, 0, sizeof *out);
    for (int k = dg_cmp_first(x); k <= dg_cmp_last(x); k++) {
        if (!x->r[k]) continue;
        out->v[k] = malloc(sizeof(double) * (size_t)x->n[k]);
        if (!out->v[k]) {
            dg_cres_free(out);
            return false;
        }
        memcpy(out->v[k], x->r[k], sizeof(double) * (size_t)x->n[k]);
        out->n[k] = x->n[k];
    }
    return true;
}

/* Which dimension of a q/k/v-like tensor holds the sequence (non-TND). */
int dg_seq_dim(fr_layout l) {
    switch (l) {
    case FR_BNSD: return 2;
    case FR_SBH: return 0;
    default: return 1; /* BSND, BSH */
    }
}

bool dg_params_run(const fr_diag_in *x, const fr_params *p, dg_cres *out) {
    dg_alt a;
    dg_alt_init(&a, x);
    a.c.params = *p;
    bool ok = dg_run_golden(&a.c, out);
    dg_alt_free(&a);
    return ok;
}
