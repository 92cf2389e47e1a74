/* The callback IUT (iut_callback.h): hands the case's parameters and inputs to the caller's function and lets it
 * write the guarded, NaN-prefilled outputs fr_iut_run allocated. */
#include "verify/iut/iut_callback.h"

#include "core/core.h"
#include "core/hash.h"
#include "verify/iut/iut_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cb_impl {
    fr_verify_callback fn;
    void *ud;
    fr_iut_repro_fn repro;
    void *repro_ud;
    char case_name[96];
    char category[32];
} cb_impl;

/* The digest of one input's elements (following its strides: a strided view is hashed where it reads, never over
 * the span between), or of a params array. */
static uint64_t tensor_digest(const fr_tensor *t) {
    uint64_t h = FR_HASH_SEED;
    int64_t n = fr_tensor_numel(t);
    if (!fr_tensor_present(t) || n <= 0 || !t->data) return h;
    size_t es = fr_dtype_size(t->dtype);
    int64_t idx[FR_MAX_DIMS] = {0};
    for (int64_t e = 0; e < n; e++) {
        int64_t off = 0;
        for (int d = 0; d < t->ndim; d++) off += idx[d] * t->strides[d];
        h = fr_hash_bytes(h, (const char *)t->data + off * (int64_t)es, es);
        for (int d = t->ndim - 1; d >= 0 && ++idx[d] == t->shape[d]; d--) idx[d] = 0;
    }
    return h;
}

/* Digests of every input and of the params arrays the callback is handed (FR_CASE_NUM_INPUTS + 3). */
static void inputs_digest(const fr_case *c, uint64_t *d) {
    for (int k = 0; k < FR_CASE_NUM_INPUTS; k++) d[k] = tensor_digest(fr_case_input_cslot(&c->in, (fr_case_input)k));
    const fr_params *p = &c->params;
    d[FR_CASE_NUM_INPUTS] = p->prefix ? fr_hash_bytes(FR_HASH_SEED, p->prefix, sizeof(int64_t) * (size_t)p->prefix_len)
                                      : 0;
    size_t ns = sizeof(int64_t) * (size_t)p->actual_seq_len;
    d[FR_CASE_NUM_INPUTS + 1] = p->actual_seq_qlen ? fr_hash_bytes(FR_HASH_SEED, p->actual_seq_qlen, ns) : 0;
    d[FR_CASE_NUM_INPUTS + 2] = p->actual_seq_kvlen ? fr_hash_bytes(FR_HASH_SEED, p->actual_seq_kvlen, ns) : 0;
}

static fr_status cb_run(fr_iut *iut, const fr_case *c, int threads, fr_case_outputs *o, fr_error *err) {
    (void)threads;
    cb_impl *ci = iut->impl;
    fr_verify_case vc = {ci->case_name, ci->category, c->op == FR_CASE_BWD ? FR_VERIFY_BWD : FR_VERIFY_FWD,
                         c->dtype, &c->params, &c->in};
    fr_error e;
    memset(&e, 0, sizeof e);
    /* The callback runs in this process with the inputs the golden and the references are computed from next: one it
     * changed (a numpy view made writeable, a memset through a pointer) would decide its own golden. They are hashed
     * before and after; a change FAILs the case, naming the input. */
    uint64_t before[FR_CASE_NUM_INPUTS + 3], after[FR_CASE_NUM_INPUTS + 3];
    inputs_digest(c, before);
    fr_status st = ci->fn(ci->ud, &vc, &o->fwd, &o->bwd, &e);
    e.msg[FR_MSG_LEN - 1] = '\0'; /* the callback may have filled the whole buffer */
    inputs_digest(c, after);
    for (int k = 0; k < FR_CASE_NUM_INPUTS + 3; k++)
        if (before[k] != after[k]) {
            const char *nm = k < FR_CASE_NUM_INPUTS ? fr_case_input_name((fr_case_input)k)
                             : k == FR_CASE_NUM_INPUTS ? "params.prefix"
                             : k == FR_CASE_NUM_INPUTS + 1 ? "params.actual_seq_qlen" : "params.actual_seq_kvlen";
            return fr_fail(err, FR_E_INVALID_ARG, "the implementation modified its input %s in place; the case's "
                           "inputs are read-only (the golden and the references are computed from them)", nm);
        }
    if (st == FR_OK) return FR_OK;
    if ((int)st < 0 || st >= FR_STATUS_COUNT) return fr_fail(err, FR_E_INTERNAL, "callback returned status %d", (int)st);
    return fr_fail(err, st, "%s", e.msg[0] ? e.msg : fr_status_str(st));
}

static void cb_close(fr_iut *iut) { free(iut->impl); }

static fr_status cb_repro(fr_iut *iut, const char *case_dir, const char *out, fr_error *err) {
    cb_impl *ci = iut->impl;
    if (!ci->repro) return fr_fail(err, FR_E_UNSUPPORTED, "%s has no repro hook", iut->name);
    fr_error e;
    memset(&e, 0, sizeof e);
    fr_status st = ci->repro(ci->repro_ud, case_dir, out, &e);
    e.msg[FR_MSG_LEN - 1] = '\0';
    if (st == FR_OK) return FR_OK;
    if ((int)st < 0 || st >= FR_STATUS_COUNT) return fr_fail(err, FR_E_INTERNAL, "repro hook returned status %d", (int)st);
    return fr_fail(err, st, "%s", e.msg[0] ? e.msg : fr_status_str(st));
}

static const fr_iut_ops kCallbackOps = {cb_run, cb_close, NULL, cb_repro};

fr_status fr_iut_callback_open(fr_verify_callback fn, void *ud, const char *name, fr_iut **out, fr_error *err) {
    if (!fn || !out) return fr_fail(err, FR_E_NULL, "callback: NULL function or result pointer");
    *out = NULL;
    fr_iut *iut = calloc(1, sizeof *iut);
    cb_impl *ci = calloc(1, sizeof *ci);
    if (!iut || !ci) {
        free(iut);
        free(ci);
        return fr_fail(err, FR_E_NOMEM, "callback: out of memory");
    }
    ci->fn = fn;
    ci->ud = ud;
    snprintf(iut->name, sizeof iut->name, "%s", name && *name ? name : "callback");
    iut->kind = FR_IUT_CALLBACK;
    iut->ops = &kCallbackOps;
    iut->impl = ci;
    *out = iut;
    return FR_OK;
}

void fr_iut_callback_set_case(fr_iut *iut, const char *name, const char *category) {
    if (!iut || iut->kind != FR_IUT_CALLBACK) return;
    cb_impl *ci = iut->impl;
    snprintf(ci->case_name, sizeof ci->case_name, "%s", name ? name : "");
    snprintf(ci->category, sizeof ci->category, "%s", category ? category : "");
}

void fr_iut_callback_set_repro(fr_iut *iut, fr_iut_repro_fn fn, void *ud) {
    if (!iut || iut->kind != FR_IUT_CALLBACK) return;
    cb_impl *ci = iut->impl;
    ci->repro = fn;
    ci->repro_ud = ud;
}
