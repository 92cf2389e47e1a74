/* The references kept across suite runs (suite_refs.h). */
#include "verify/suite/suite_refs.h"

#include "core/hash.h"

#include <stdlib.h>
#include <string.h>

struct fr_suite_refs {
    fr_suite_ref_entry **e; /* each entry allocated alone: a pointer handed out stays valid as the list grows */
    int n, cap;
    size_t bytes, max_bytes; /* of outputs kept */
};

fr_suite_refs *fr_suite_refs_new(size_t max_bytes) {
    fr_suite_refs *r = calloc(1, sizeof *r);
    if (r) r->max_bytes = max_bytes;
    return r;
}

void fr_suite_refs_free(fr_suite_refs *r) {
    if (!r) return;
    for (int k = 0; k < r->n; k++) {
        for (int i = 0; i < FR_REF_COUNT; i++) fr_case_outputs_free(&r->e[k]->out[i]);
        free(r->e[k]);
    }
    free(r->e);
    free(r);
}

void fr_suite_refs_size(const fr_suite_refs *r, int *cases, size_t *bytes) {
    *cases = r ? r->n : 0;
    *bytes = r ? r->bytes : 0;
}

/* The key's hash fed piece by piece (core/hash.h). A 64-bit key: the chance that two of a run's few hundred cases
 * share one is about 1e-14, and one pass over the inputs is all it costs. */
static void k_bytes(uint64_t *h, const void *p, size_t n) { *h = fr_hash_bytes(*h, p, n); }

static void k_i64(uint64_t *h, int64_t v) { k_bytes(h, &v, sizeof v); }

static void k_f64(uint64_t *h, double v) { k_bytes(h, &v, sizeof v); }

static void k_array(uint64_t *h, const int64_t *a, int64_t n) {
    k_i64(h, a ? n : -1);
    if (a && n > 0) k_bytes(h, a, (size_t)n * sizeof *a);
}

/* A tensor's description and bytes; false for one the hash cannot describe (non-contiguous, or no data). */
static bool k_tensor(uint64_t *k, const fr_tensor *t) {
    k_i64(k, t->dtype);
    if (t->dtype == FR_DT_NONE) return true;
    k_i64(k, t->ndim);
    for (int d = 0; d < t->ndim; d++) k_i64(k, t->shape[d]);
    int64_t n = fr_tensor_numel(t);
    if (n < 0 || !fr_tensor_is_contiguous(t) || (n > 0 && !t->data)) return false;
    k_bytes(k, t->data, (size_t)n * fr_dtype_size(t->dtype));
    return true;
}

/* Everything the golden, the ideal pipeline and the plain reference read: a field added to fr_params or
 * fr_judge_opts must be added here (the size checks below fail the build until it is). */
static bool case_key(const fr_case *c, const fr_judge_opts *j, uint64_t *key) {
    _Static_assert(sizeof(fr_params) == 128, "fr_params changed: hash the new field in case_key");
    _Static_assert(sizeof(fr_judge_opts) == 72, "fr_judge_opts changed: hash the new field in case_key");
    uint64_t h = FR_HASH_SEED;
    const fr_params *p = &c->params;
    k_i64(&h, c->op);
    k_i64(&h, c->dtype);
    k_i64(&h, p->head_num);
    k_i64(&h, p->input_layout);
    k_f64(&h, p->scale_value);
    k_f64(&h, p->keep_prob);
    k_i64(&h, p->pre_tokens);
    k_i64(&h, p->next_tokens);
    k_i64(&h, p->inner_precise);
    k_i64(&h, p->sparse_mode);
    k_i64(&h, p->pse_type);
    k_array(&h, p->prefix, p->prefix_len);
    k_array(&h, p->actual_seq_qlen, p->actual_seq_len);
    k_array(&h, p->actual_seq_kvlen, p->actual_seq_len);
    k_i64(&h, p->q_start_idx);
    k_i64(&h, p->kv_start_idx);
    k_i64(&h, p->out_dtype);
    k_i64(&h, p->softmax_layout);
    int last = c->op == FR_CASE_FWD ? FR_CI_DY : FR_CASE_NUM_INPUTS;
    for (int i = 0; i < last; i++)
        if (!k_tensor(&h, fr_case_input_cslot(&c->in, (fr_case_input)i))) return false;
    /* The judge options: the plain reference reads the standard; the rest are hashed too, so that a cache handed
     * to runs with other options can never serve them. */
    k_f64(&h, j->k_out);
    k_f64(&h, j->k_max);
    k_f64(&h, j->k_grad);
    k_f64(&h, j->k_stats);
    k_f64(&h, j->warn_frac);
    k_f64(&h, j->gain_warn);
    k_i64(&h, j->standard);
    k_f64(&h, j->growth_warn);
    k_i64(&h, j->external);
    k_i64(&h, j->absent_ok);
    *key = h;
    return true;
}

fr_suite_ref_entry *fr_suite_refs_entry(fr_suite_refs *r, const fr_case *c, const fr_judge_opts *judge) {
    uint64_t key;
    if (!r || !case_key(c, judge, &key)) return NULL;
    for (int k = 0; k < r->n; k++)
        if (r->e[k]->key == key) return r->e[k];
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 64;
        fr_suite_ref_entry **e = realloc(r->e, (size_t)cap * sizeof *e);
        if (!e) return NULL;
        r->e = e, r->cap = cap;
    }
    fr_suite_ref_entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->key = key;
    r->e[r->n++] = e;
    return e;
}

static size_t outputs_bytes(const fr_case_outputs *o) {
    size_t b = 0;
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        const fr_tensor *t = fr_case_output_cslot(o, (fr_case_output)k);
        int64_t n = fr_tensor_numel(t);
        if (n > 0) b += (size_t)n * fr_dtype_size(t->dtype);
    }
    return b;
}

bool fr_suite_refs_keep(fr_suite_refs *r, fr_suite_ref_entry *e, fr_suite_ref_kind k, fr_status st,
                        const fr_error *err, const fr_case_outputs *out) {
    if (!r || !e || e->done[k] || st == FR_E_NOMEM) return false;
    size_t b = st == FR_OK ? outputs_bytes(out) : 0;
    if (b > r->max_bytes - r->bytes) return false;
    r->bytes += b;
    e->done[k] = true;
    e->st[k] = st;
    if (err) e->err[k] = *err;
    if (st == FR_OK) e->out[k] = *out;
    return true;
}
