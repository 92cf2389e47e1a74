/* The diagnosis of a case beyond its bounds (diagnose.h): candidate defects re-run on the case's own inputs, the one
 * that matches named; else a shape unique to one class; else "unknown" with the error's shape. */
#include "verify/judge/diagnose.h"

#include "core/core.h"
#include "flashref_emulate.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Re-runs are skipped above this much work per run (B N1 S1 S2 (Dk + Dv) multiply-adds): the diagnosis stays cheap
 * beside the case itself. */
static const double kMaxWork = 1.5e9;
/* Matching rule (diagnose.h): a candidate matches at rho <= kMatch (or <= rho_0 * kMatchRel); it must be kSeparate
 * times closer than the correct output and than every candidate of another diagnosis. */
static const double kMatch = 1.5, kMatchRel = 0.05, kSeparate = 4.0;
/* Numerics candidates only below this rel-L2 of the IUT (diagnose.c, fr_diagnose). */
static const double kNumericsMax = 0.05;

/* ---------------------------------------------------------------------------------------------------------------- */
/* Small helpers. */

static bool is_d1_max(double m) { return m <= -(double)FLT_MAX * (1.0 - 1e-7); }

/* A contiguous copy of t (any strides), same dtype; shape may differ from t's only where `map` says: element k of
 * the copy (C order, copy's shape) comes from element map(k) of t (C order, t's shape). */
typedef int64_t (*index_map)(const void *ctx, const int64_t *idx);
static fr_tensor t_remap(const fr_tensor *t, int ndim, const int64_t *shape, index_map map, const void *ctx) {
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
static fr_tensor t_slice(const fr_tensor *t, int dim, int64_t j0, int64_t j1) {
    int64_t sh[FR_MAX_DIMS];
    memcpy(sh, t->shape, sizeof sh);
    sh[dim] = j1 - j0;
    slice_ctx s = {t, dim, j0};
    return t_remap(t, t->ndim, sh, slice_map, &s);
}
static fr_tensor t_copy(const fr_tensor *t) { return t_slice(t, 0, 0, t->shape[0]); }

/* Candidate outputs: fp64 arrays in the layout of the judge's (C order of the output tensors). */
typedef struct cres {
    double *v[FR_CASE_NUM_OUTPUTS];
    int64_t n[FR_CASE_NUM_OUTPUTS];
} cres;

static void cres_free(cres *c) {
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++)
        free(c->v[k]);
    memset(c, 0, sizeof *c);
}

/* A modified copy of the case: tensors it allocated are freed by alt_free. */
typedef struct alt {
    fr_case c;
    void *owned[8];
    int n_owned;
} alt;

static void alt_init(alt *a, const fr_diag_in *x) {
    memset(a, 0, sizeof *a);
    a->c = *x->c;
}
static bool alt_own(alt *a, fr_tensor *slot, fr_tensor t) {
    if (!t.data || a->n_owned >= 8) {
        free(t.data);
        return false;
    }
    a->owned[a->n_owned++] = t.data;
    *slot = t;
    return true;
}
static void alt_free(alt *a) {
    for (int k = 0; k < a->n_owned; k++)
        free(a->owned[k]);
}

/* Runs the (modified) case on engine e and loads the outputs the diagnosis compares (and the forward's stats). */
static bool run_alt(const fr_case *c, const fr_engine *e, bool fp64, cres *out) {
    fr_case_outputs g;
    fr_error err;
    memset(out, 0, sizeof *out);
    if (fr_case_alloc_outputs(c, fp64, &g, &err) != FR_OK) return false;
    fr_status st = c->op == FR_CASE_FWD ? fr_fwd(&c->params, &c->in.fwd, &g.fwd, e, &err)
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
    if (!ok) cres_free(out);
    return ok;
}

/* One thread: the re-runs are small, and a parallel region per run costs more than it saves. */
static bool run_golden(const fr_case *c, cres *out) {
    fr_engine ge = fr_engine_default(FR_ENGINE_GOLDEN);
    ge.num_threads = 1;
    return run_alt(c, &ge, true, out);
}

/* The compared outputs: attention_out (forward), dq, dk, dv (backward). */
static int cmp_first(const fr_diag_in *x) { return x->c->op == FR_CASE_FWD ? FR_CO_ATTENTION_OUT : FR_CO_DQ; }
static int cmp_last(const fr_diag_in *x) { return x->c->op == FR_CASE_FWD ? FR_CO_ATTENTION_OUT : FR_CO_DV; }

/* A copy of the golden's compared outputs (for candidates that transform them). */
static bool copy_golden(const fr_diag_in *x, cres *out) {
    memset(out, 0, sizeof *out);
    for (int k = cmp_first(x); k <= cmp_last(x); k++) {
        if (!x->r[k]) continue;
        out->v[k] = malloc(sizeof(double) * (size_t)x->n[k]);
        if (!out->v[k]) {
            cres_free(out);
            return false;
        }
        memcpy(out->v[k], x->r[k], sizeof(double) * (size_t)x->n[k]);
        out->n[k] = x->n[k];
    }
    return true;
}

static double rel_l2(const double *a, const double *r, int64_t n) {
    double ee = 0, rr = 0;
    for (int64_t k = 0; k < n; k++) {
        if (!isfinite(a[k]) || !isfinite(r[k])) continue;
        ee += (a[k] - r[k]) * (a[k] - r[k]);
        rr += r[k] * r[k];
    }
    return rr > 0 ? sqrt(ee / rr) : sqrt(ee);
}

/* rho: the largest rel-L2 of the IUT against `ref` over the compared outputs, in units of each output's bound. The
 * golden's fully masked rows are zero in the IUT's copy: they are zeroed in the candidate too. */
static double rho_of(const fr_diag_in *x, const fr_judgement *j, double *const *ref, const int64_t *nref) {
    double rho = 0;
    bool any = false;
    for (int k = cmp_first(x); k <= cmp_last(x); k++) {
        if (!x->a[k]) continue;
        if (!ref[k] || nref[k] != x->n[k]) return INFINITY;
        double b = j->out[k].bound_l2;
        if (!(b > 0)) continue;
        bool outlike = k == FR_CO_ATTENTION_OUT || k == FR_CO_DQ;
        if (outlike && x->d1 && x->row_len > 0 && x->nrows * x->row_len == x->n[k])
            for (int64_t i = 0; i < x->nrows; i++)
                if (x->d1[i])
                    for (int64_t d = 0; d < x->row_len; d++)
                        ref[k][i * x->row_len + d] = 0;
        /* A NaN/Inf on one side only is no match (both non-finite: left out, as the judge does). */
        for (int64_t q = 0; q < x->n[k]; q++)
            if (isfinite(x->a[k][q]) != isfinite(ref[k][q])) return INFINITY;
        rho = fmax(rho, rel_l2(x->a[k], ref[k], x->n[k]) / b);
        any = true;
    }
    return any ? rho : INFINITY;
}

/* Which dimension of a q/k/v-like tensor holds the sequence (non-TND). */
static int seq_dim(fr_layout l) {
    switch (l) {
    case FR_BNSD: return 2;
    case FR_SBH: return 0;
    default: return 1; /* BSND, BSH */
    }
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Candidates. Each builds the outputs the implementation would give with one defect; false: not applicable. */

typedef bool (*cand_fn)(const fr_diag_in *x, int arg, cres *out);

static bool params_run(const fr_diag_in *x, const fr_params *p, cres *out) {
    alt a;
    alt_init(&a, x);
    a.c.params = *p;
    bool ok = run_golden(&a.c, out);
    alt_free(&a);
    return ok;
}

/* scale_value squared (applied twice), 1 (not at all), 1/sqrt(Dk) (the usual default instead of the given one). */
static bool c_scale(const fr_diag_in *x, int arg, cres *out) {
    fr_params p = x->c->params;
    double s = p.scale_value;
    double alt_s = arg == 0 ? s * s : arg == 1 ? 1.0 : 1.0 / sqrt((double)(x->pb->Dk + x->pb->Drope));
    if (!(fabs(alt_s - s) > 1e-3 * fabs(s))) return false;
    p.scale_value = alt_s;
    return params_run(x, &p, out);
}

/* Band bounds +-1: arg bit 0 = which (0 pre_tokens, 1 next_tokens), bit 1 = sign (0: +1, 1: -1). Bands of sparse
 * modes 0 and 4; the causal modes 2 and 3 as the band of mode 4 they equal (next = S1 - S2 or 0), off by one. */
static bool c_band(const fr_diag_in *x, int arg, cres *out) {
    fr_params p = x->c->params;
    const fr_problem *pb = x->pb;
    int64_t delta = (arg & 2) ? -1 : 1;
    bool next = arg & 1;
    if (!pb->has_mask) return false;
    int64_t lim = pb->S1 + pb->S2 + 2;
    if (p.sparse_mode == 0 || p.sparse_mode == 4) {
        int64_t *t = next ? &p.next_tokens : &p.pre_tokens;
        if (*t >= lim || *t <= -lim) return false; /* that side of the band is not active */
        *t += delta;
    } else if ((p.sparse_mode == 2 || p.sparse_mode == 3) && next && pb->layout != FR_TND) {
        p.next_tokens = (p.sparse_mode == 2 ? pb->S1 - pb->S2 : 0) + delta;
        p.pre_tokens = 2147483647;
        p.sparse_mode = 4;
    } else {
        return false;
    }
    return params_run(x, &p, out);
}

static bool s1_ne_s2(const fr_diag_in *x) {
    bool s_ne = x->pb->S1 != x->pb->S2;
    if (x->pb->layout == FR_TND)
        for (int64_t b = 0; b < x->pb->B; b++) {
            int64_t r0, l1, r1, l2;
            fr_problem_q_rows(x->pb, b, &r0, &l1);
            fr_problem_kv_rows(x->pb, b, &r1, &l2);
            if (l1 != l2) s_ne = true;
        }
    return s_ne;
}

/* Causal top-left where bottom-right was meant, or the reverse. */
static bool c_causal_align(const fr_diag_in *x, int arg, cres *out) {
    (void)arg;
    fr_params p = x->c->params;
    if (!x->pb->has_mask || !s1_ne_s2(x) || (p.sparse_mode != 2 && p.sparse_mode != 3)) return false;
    p.sparse_mode = p.sparse_mode == 2 ? 3 : 2;
    return params_run(x, &p, out);
}

/* No mask, S1 < S2: keys past the query index ignored (a loop bound taken from the query length), i.e. top-left
 * causal (mode 2 with its 2048 x 2048 template). */
static bool c_query_bound(const fr_diag_in *x, int arg, cres *out) {
    (void)arg;
    const fr_problem *pb = x->pb;
    if (x->c->op != FR_CASE_FWD || pb->has_mask || pb->has_topk || pb->layout == FR_TND || pb->S1 >= pb->S2)
        return false;
    int64_t sh[2] = {2048, 2048};
    fr_tensor m = fr_tensor_make(FR_BOOL, calloc(2048 * 2048, 1), 2, sh);
    if (!m.data) return false;
    for (int64_t i = 0; i < 2048; i++)
        for (int64_t q = i + 1; q < 2048; q++)
            ((uint8_t *)m.data)[i * 2048 + q] = 1;
    alt a;
    alt_init(&a, x);
    a.c.params.sparse_mode = 2;
    bool ok = alt_own(&a, &a.c.in.fwd.atten_mask, m) && run_golden(&a.c, out);
    alt_free(&a);
    return ok;
}

/* pse_type 0 <-> 1 (pse added after vs before the scale). */
static bool c_pse_order(const fr_diag_in *x, int arg, cres *out) {
    (void)arg;
    fr_params p = x->c->params;
    if (!x->pb->has_pse || p.pse_type > 1 || fabs(p.scale_value - 1.0) < 1e-6) return false;
    p.pse_type = 1 - p.pse_type;
    return params_run(x, &p, out);
}

/* Dropout: kept weights scaled by 1/keep_prob twice (arg 0); not scaled at all (arg 1, forward: out x keep_prob);
 * the backward reading the drop bit of (i, j + 1) (arg 2). */
static bool c_dropout(const fr_diag_in *x, int arg, cres *out) {
    const fr_problem *pb = x->pb;
    double kp = x->c->params.keep_prob;
    if (!pb->has_drop || !(kp < 1.0)) return false;
    if (arg == 0) {
        fr_params p = x->c->params;
        p.keep_prob = kp * kp;
        return params_run(x, &p, out);
    }
    if (arg == 1) {
        if (x->c->op != FR_CASE_FWD || !copy_golden(x, out)) return false;
        double f = 1.0 / (double)(1.0f / (float)kp);
        for (int64_t q = 0; q < out->n[FR_CO_ATTENTION_OUT]; q++)
            out->v[FR_CO_ATTENTION_OUT][q] *= f;
        return true;
    }
    if (x->c->op != FR_CASE_BWD || pb->layout == FR_TND) return false;
    const fr_tensor *dm = &x->c->in.fwd.drop_mask;
    int64_t nbits = pb->B * pb->N1 * pb->S1 * pb->S2, S2 = pb->S2;
    if (S2 <= 1 || fr_tensor_numel(dm) * 8 < nbits) return false;
    fr_tensor sh = t_copy(dm);
    if (!sh.data) return false;
    uint8_t *src = malloc((size_t)fr_tensor_numel(dm) + 1);
    if (!src) {
        free(sh.data);
        return false;
    }
    for (int64_t q = 0; q < fr_tensor_numel(dm); q++)
        src[q] = (uint8_t)fr_load_f64(dm, fr_tensor_offset_linear(dm, q));
    uint8_t *dst = sh.data;
    for (int64_t r = 0; r < nbits / S2; r++)
        for (int64_t jj = 0; jj < S2; jj++) {
            int64_t from = r * S2 + (jj + 1) % S2, to = r * S2 + jj;
            int bit = (src[from >> 3] >> (from & 7)) & 1;
            dst[to >> 3] = (uint8_t)((dst[to >> 3] & ~(1u << (to & 7))) | ((unsigned)bit << (to & 7)));
        }
    free(src);
    alt a;
    alt_init(&a, x);
    bool ok = alt_own(&a, &a.c.in.fwd.drop_mask, sh) && run_golden(&a.c, out);
    alt_free(&a);
    return ok;
}

/* The shape of a kv-like tensor with N1 heads instead of N2 (data NULL: for offsets). */
/* Alike tests/verify_suite/test_suite_diag.c:expand_kv: kept apart because that test's defect must not reuse the
 * diagnosis code it provokes; this one is a data-less view for offsets. */
static fr_tensor expanded_like(const fr_problem *pb, const fr_tensor *src, int64_t D, fr_dtype dt) {
    int64_t sh[FR_MAX_DIMS];
    memcpy(sh, src->shape, sizeof sh);
    switch (pb->layout) {
    case FR_BNSD: sh[1] = pb->N1; break;
    case FR_BSND: sh[2] = pb->N1; break;
    case FR_TND: sh[1] = pb->N1; break;
    default: sh[2] = pb->N1 * D; break; /* BSH, SBH */
    }
    return fr_tensor_make(dt, NULL, src->ndim, sh);
}

/* K/V (and key_rope) with N1 heads: head h holds original head h % N2 (mod) or h / G. */
static fr_status expand_heads(const fr_problem *pb, const fr_tensor *src, int64_t D, bool mod, fr_tensor *dst) {
    *dst = expanded_like(pb, src, D, src->dtype);
    dst->data = calloc((size_t)fr_tensor_numel(dst) + 1, fr_dtype_size(src->dtype));
    if (!dst->data) return FR_E_NOMEM;
    for (int64_t b = 0; b < pb->B; b++) {
        int64_t r0, len;
        fr_problem_kv_rows(pb, b, &r0, &len);
        for (int64_t h = 0; h < pb->N1; h++) {
            int64_t hs = mod ? h % pb->N2 : h / pb->G;
            for (int64_t j = 0; j < len; j++)
                for (int64_t d = 0; d < D; d++)
                    fr_store_f64(dst, fr_layout_offset(dst, pb->layout, D, r0, b, h, j, d),
                                 fr_load_f64(src, fr_layout_offset(src, pb->layout, D, r0, b, hs, j, d)));
        }
    }
    return FR_OK;
}

/* GQA: arg 0 kv head h % N2 instead of h / G (forward and backward; dK/dV summed by the same map); arg 1 / 2: the
 * backward's dK/dV of kv head n taken from its last / first query head only, not summed. */
static bool c_gqa(const fr_diag_in *x, int arg, cres *out) {
    const fr_problem *pb = x->pb;
    if (pb->G <= 1 || pb->fp8 || pb->topk_per_kv_head) return false;
    if (arg == 0 && pb->N2 <= 1) return false;
    if (arg > 0 && x->c->op != FR_CASE_BWD) return false;
    bool mod = arg == 0;
    alt a;
    alt_init(&a, x);
    fr_fwd_inputs *in = &a.c.in.fwd;
    fr_tensor t;
    bool ok = true;
    if (ok) ok = expand_heads(pb, &x->c->in.fwd.key, pb->Dk, mod, &t) == FR_OK && alt_own(&a, &in->key, t);
    if (ok) ok = expand_heads(pb, &x->c->in.fwd.value, pb->Dv, mod, &t) == FR_OK && alt_own(&a, &in->value, t);
    if (ok && pb->has_rope)
        ok = expand_heads(pb, &x->c->in.fwd.key_rope, pb->Drope, mod, &t) == FR_OK && alt_own(&a, &in->key_rope, t);
    cres e;
    ok = ok && run_golden(&a.c, &e);
    alt_free(&a);
    if (!ok) return false;
    if (x->c->op == FR_CASE_FWD) {
        *out = e;
        return true;
    }
    /* Backward: dq as computed; dK/dV of the N1 expanded heads reduced to N2 heads. */
    memset(out, 0, sizeof *out);
    out->v[FR_CO_DQ] = e.v[FR_CO_DQ];
    out->n[FR_CO_DQ] = e.n[FR_CO_DQ];
    e.v[FR_CO_DQ] = NULL;
    for (int k = FR_CO_DK; k <= FR_CO_DV && ok; k++) {
        const fr_tensor *like = fr_case_output_cslot(x->iut, (fr_case_output)k);
        int64_t D = k == FR_CO_DK ? pb->Dk : pb->Dv;
        fr_tensor tn = fr_tensor_make(FR_F64, NULL, like->ndim, like->shape);
        fr_tensor ex = expanded_like(pb, like, D, FR_F64);
        out->n[k] = x->n[k];
        out->v[k] = calloc((size_t)x->n[k] + 1, sizeof(double));
        if (!out->v[k] || e.n[k] != fr_tensor_numel(&ex)) {
            ok = false;
            break;
        }
        for (int64_t b = 0; b < pb->B; b++) {
            int64_t r0, len;
            fr_problem_kv_rows(pb, b, &r0, &len);
            for (int64_t h = 0; h < pb->N1; h++) {
                int64_t n = mod ? h % pb->N2 : h / pb->G;
                if (arg == 1 && h != n * pb->G + pb->G - 1) continue;
                if (arg == 2 && h != n * pb->G) continue;
                for (int64_t jj = 0; jj < len; jj++)
                    for (int64_t d = 0; d < D; d++)
                        out->v[k][fr_layout_offset(&tn, pb->layout, D, r0, b, n, jj, d)] +=
                            e.v[k][fr_layout_offset(&ex, pb->layout, D, r0, b, h, jj, d)];
            }
        }
    }
    cres_free(&e);
    if (!ok) cres_free(out);
    return ok;
}

/* q.k over the first W floor(Dk / W) columns only (a vector loop with no tail): the query's tail columns zeroed. */
static bool c_head_dim(const fr_diag_in *x, int W, cres *out) {
    const fr_problem *pb = x->pb;
    int64_t keep = W * (pb->Dk / W);
    if (pb->Dk % W == 0 || keep == 0 || pb->layout == FR_TND) return false;
    fr_tensor q = t_copy(&x->c->in.fwd.query);
    if (!q.data) return false;
    for (int64_t b = 0; b < pb->B; b++)
        for (int64_t h = 0; h < pb->N1; h++)
            for (int64_t i = 0; i < pb->S1; i++)
                for (int64_t d = keep; d < pb->Dk; d++)
                    fr_store_f64(&q, fr_layout_offset(&q, pb->layout, pb->Dk, 0, b, h, i, d), 0.0);
    alt a;
    alt_init(&a, x);
    bool ok = alt_own(&a, &a.c.in.fwd.query, q) && run_golden(&a.c, out);
    alt_free(&a);
    return ok;
}

/* Whether keys can be taken out by slicing K/V (and the mask / pse along S2) without changing what the others mean:
 * a forward of a fixed-length layout whose mask and pse are full [.., S2] tensors, no band, no dropout, top-k or fp8
 * block scales. */
static bool sliceable(const fr_diag_in *x) {
    const fr_problem *pb = x->pb;
    const fr_params *p = &x->c->params;
    const fr_fwd_inputs *in = &x->c->in.fwd;
    if (x->c->op != FR_CASE_FWD || pb->layout == FR_TND || pb->has_drop || pb->has_topk || pb->fp8) return false;
    if (pb->has_mask) {
        if (p->sparse_mode > 1) return false;
        if (p->sparse_mode == 0 && (p->pre_tokens < pb->S1 + pb->S2 || p->next_tokens < pb->S1 + pb->S2)) return false;
        if (in->atten_mask.shape[in->atten_mask.ndim - 1] != pb->S2) return false;
    }
    if (pb->has_pse) {
        const fr_tensor *ps = &in->real_shift;
        if (p->pse_type > 1 || ps->ndim != 4 || ps->shape[3] != pb->S2 || (ps->shape[2] != pb->S1 && ps->shape[2] != 1))
            return false;
    }
    return true;
}

/* The case restricted to keys [j0, j1). */
static bool run_keys(const fr_diag_in *x, int64_t j0, int64_t j1, cres *out) {
    alt a;
    alt_init(&a, x);
    fr_fwd_inputs *in = &a.c.in.fwd;
    const fr_fwd_inputs *o = &x->c->in.fwd;
    int sd = seq_dim(x->pb->layout);
    bool ok = alt_own(&a, &in->key, t_slice(&o->key, sd, j0, j1)) &&
              alt_own(&a, &in->value, t_slice(&o->value, sd, j0, j1));
    if (ok && x->pb->has_rope) ok = alt_own(&a, &in->key_rope, t_slice(&o->key_rope, sd, j0, j1));
    if (ok && x->pb->has_mask)
        ok = alt_own(&a, &in->atten_mask, t_slice(&o->atten_mask, o->atten_mask.ndim - 1, j0, j1));
    if (ok && x->pb->has_pse) ok = alt_own(&a, &in->real_shift, t_slice(&o->real_shift, 3, j0, j1));
    ok = ok && run_golden(&a.c, out);
    alt_free(&a);
    return ok;
}

/* The last key dropped (arg 0), or the partial last key tile of T keys skipped (arg T). */
static bool c_key_tail(const fr_diag_in *x, int T, cres *out) {
    int64_t S2 = x->pb->S2;
    if (!sliceable(x) || S2 < 2) return false;
    int64_t keep = T == 0 ? S2 - 1 : T * (S2 / T);
    if (T > 0 && (S2 % T == 0 || keep == 0)) return false;
    return run_keys(x, 0, keep, out);
}

/* Output rows of (b, h, i) and their softmax element (column 0). */
static bool row_maps(const fr_diag_in *x, int64_t *oo, int64_t *so, int64_t *qi, int64_t *ql) {
    const fr_problem *pb = x->pb;
    const fr_tensor *ot = &x->iut->fwd.attention_out, *st = &x->iut->fwd.softmax_max;
    fr_tensor o = fr_tensor_make(FR_F64, NULL, ot->ndim, ot->shape);
    fr_tensor s = fr_tensor_make(FR_F64, NULL, st->ndim, st->shape);
    int64_t D = pb->Dv, r = 0;
    for (int64_t b = 0; b < pb->B; b++) {
        int64_t row0, len;
        fr_problem_q_rows(pb, b, &row0, &len);
        for (int64_t h = 0; h < pb->N1; h++)
            for (int64_t i = 0; i < len; i++, r++) {
                if (r >= x->nrows) return false;
                oo[r] = D > 0 ? fr_layout_offset(&o, pb->layout, D, row0, b, h, i, 0) : 0;
                so[r] = fr_tensor_present(st)
                            ? fr_softmax_offset(&s, pb->layout, x->c->params.softmax_layout, row0, b, h, i, 0)
                            : 0;
                qi[r] = i;
                ql[r] = len;
            }
    }
    return r == x->nrows;
}

/* Online softmax over key tiles of T with no rescale of the accumulator when the running max grows: arg = T * 2 +
 * v, v = 0: O not rescaled (the row sum is), v = 1: neither. From one golden run per tile: tile t's output o_t, max
 * m_t and sum l_t give O = sum_t e^{m_t - M_t} l_t o_t with M_t the running max after tile t. */
static bool c_no_rescale(const fr_diag_in *x, int arg, cres *out) {
    int T = arg / 2, v = arg % 2;
    const fr_problem *pb = x->pb;
    int64_t S2 = pb->S2, nt = (S2 + T - 1) / T, R = x->nrows, D = pb->Dv;
    if (!sliceable(x) || pb->has_sink || nt < 2 || nt > 64 || D <= 0 || R <= 0) return false;
    int64_t *oo = malloc(sizeof(int64_t) * (size_t)R * 4);
    double *acc = calloc((size_t)(R * D + 3 * R), sizeof(double));
    if (!oo || !acc) {
        free(oo);
        free(acc);
        return false;
    }
    int64_t *so = oo + R, *qi = so + R, *ql = qi + R;
    double *M = acc + R * D, *L = M + R, *L2 = L + R;
    for (int64_t r = 0; r < R; r++)
        M[r] = -INFINITY;
    bool ok = row_maps(x, oo, so, qi, ql);
    for (int64_t t = 0; ok && t < nt; t++) {
        cres c;
        int64_t j1 = (t + 1) * T < S2 ? (t + 1) * T : S2;
        if (!(ok = run_keys(x, t * T, j1, &c))) break;
        const double *o = c.v[FR_CO_ATTENTION_OUT], *m = c.v[FR_CO_SOFTMAX_MAX], *l = c.v[FR_CO_SOFTMAX_SUM];
        if (!o || !m || !l) {
            cres_free(&c);
            ok = false;
            break;
        }
        for (int64_t r = 0; r < R; r++) {
            double mt = m[so[r]], lt = l[so[r]];
            if (is_d1_max(mt) || !isfinite(mt) || !(lt > 0)) continue;
            double Mn = fmax(M[r], mt), w = exp(mt - Mn) * lt;
            double a = isfinite(M[r]) ? exp(M[r] - Mn) : 0.0;
            for (int64_t d = 0; d < D; d++)
                acc[r * D + d] += w * o[oo[r] + d];
            L[r] = L[r] * a + w; /* the row sum, rescaled */
            L2[r] += w;          /* the row sum, not rescaled */
            M[r] = Mn;
        }
        cres_free(&c);
    }
    if (ok) {
        memset(out, 0, sizeof *out);
        out->n[FR_CO_ATTENTION_OUT] = x->n[FR_CO_ATTENTION_OUT];
        out->v[FR_CO_ATTENTION_OUT] = calloc((size_t)x->n[FR_CO_ATTENTION_OUT] + 1, sizeof(double));
        ok = out->v[FR_CO_ATTENTION_OUT] != NULL;
        for (int64_t r = 0; ok && r < R; r++) {
            double den = v == 0 ? L[r] : L2[r];
            for (int64_t d = 0; d < D; d++)
                out->v[FR_CO_ATTENTION_OUT][oo[r] + d] = den > 0 ? acc[r * D + d] / den : 0.0;
        }
    }
    free(oo);
    free(acc);
    return ok;
}

/* Forward output rows left zero: the last query row of every batch (arg 0), or the partial last query tile of T
 * rows (arg T); the output's tail columns past W floor(Dv / W) left zero (arg -W). */
static bool c_out_zero(const fr_diag_in *x, int arg, cres *out) {
    const fr_problem *pb = x->pb;
    int64_t R = x->nrows, D = pb->Dv;
    if (x->c->op != FR_CASE_FWD || R <= 0 || D <= 0) return false;
    if (arg < 0 && (D % -arg == 0 || D < -arg)) return false;
    int64_t *oo = malloc(sizeof(int64_t) * (size_t)R * 4);
    if (!oo) return false;
    int64_t *so = oo + R, *qi = so + R, *ql = qi + R;
    bool ok = row_maps(x, oo, so, qi, ql) && copy_golden(x, out), any = false, kept = arg < 0;
    for (int64_t r = 0; ok && r < R; r++) {
        double *o = out->v[FR_CO_ATTENTION_OUT] + oo[r];
        if (arg < 0) {
            for (int64_t d = (-arg) * (D / -arg); d < D; d++)
                o[d] = 0, any = true;
        } else if (arg == 0 ? qi[r] == ql[r] - 1 : (ql[r] % arg != 0 && qi[r] >= arg * (ql[r] / arg))) {
            for (int64_t d = 0; d < D; d++)
                o[d] = 0;
            any = true;
        } else {
            kept = true;
        }
    }
    free(oo);
    /* A candidate that zeroes every row tells nothing apart from any other cause of an all-zero output. */
    return ok && any && kept;
}

/* Numerics (the emulator from the ideal pipeline of the case's dtype): arg = T * 4 + v; v = 0: the output
 * accumulated in fp16 per key tile of T; v = 1 / 2: P rounded to fp16 / bf16 for P.V. */
static bool c_numerics(const fr_diag_in *x, int arg, cres *out) {
    int T = arg / 4, v = arg % 4;
    const fr_problem *pb = x->pb;
    if (x->c->op != FR_CASE_FWD || pb->fp8) return false;
    fr_numerics nc = fr_numerics_ideal(pb->dtype);
    if (v == 0) {
        nc.acc_o = FR_F16;
        nc.kv_tile = T;
    } else {
        fr_dtype pd = v == 1 ? FR_F16 : FR_BF16;
        fr_dtype cur = nc.p_dtype == FR_DT_NONE ? pb->dtype : nc.p_dtype;
        if (cur == pd) return false;
        nc.p_dtype = pd;
    }
    fr_engine e = fr_engine_default(FR_ENGINE_EMULATE);
    e.numerics = &nc;
    e.num_threads = 1;
    return run_alt(x->c, &e, false, out);
}

/* Backward outputs: dq (arg 0) or dk (arg 1) without the scale, or (arg 2, 3) with it twice. */
static bool c_grad_scale(const fr_diag_in *x, int arg, cres *out) {
    double s = x->c->params.scale_value;
    if (x->c->op != FR_CASE_BWD || !(fabs(s - 1.0) > 1e-3) || s == 0 || !copy_golden(x, out)) return false;
    int k = arg % 2 == 0 ? FR_CO_DQ : FR_CO_DK;
    double f = arg < 2 ? 1.0 / s : s;
    if (!out->v[k]) return false;
    for (int64_t q = 0; q < out->n[k]; q++)
        out->v[k][q] *= f;
    return true;
}

/* dpsum D = rowsum(dO * O) from dO alone: O replaced by ones (arg 0, D = rowsum(dO)), by dO (arg 1, D = |dO|^2), by
 * zeros (arg 2, D = 0). */
static bool c_dpsum(const fr_diag_in *x, int arg, cres *out) {
    if (x->c->op != FR_CASE_BWD) return false;
    const fr_tensor *ai = &x->c->in.attention_in;
    fr_tensor t = arg == 1 ? t_copy(&x->c->in.dy) : t_copy(ai);
    if (!t.data) return false;
    if (arg != 1)
        for (int64_t q = 0; q < fr_tensor_numel(&t); q++)
            fr_store_f64(&t, q, arg == 0 ? 1.0 : 0.0);
    alt a;
    alt_init(&a, x);
    bool ok = alt_own(&a, &a.c.in.attention_in, t) && run_golden(&a.c, out);
    alt_free(&a);
    return ok;
}

/* q/k/v element offsets computed in 32 bits: every element read at (offset mod 2^31). Only for a case whose inputs
 * reach past 2^31 elements (a strided view: the copies here have the view's element count). */
typedef struct wrap_ctx {
    const fr_tensor *t;
} wrap_ctx;
static int64_t wrap_map(const void *c, const int64_t *idx) {
    const fr_tensor *t = ((const wrap_ctx *)c)->t;
    int64_t off = 0;
    for (int q = 0; q < t->ndim; q++)
        off += idx[q] * t->strides[q];
    return off & (((int64_t)1 << 31) - 1);
}
static int64_t max_offset(const fr_tensor *t) {
    int64_t off = 0;
    for (int q = 0; q < t->ndim; q++)
        if (t->shape[q] > 0) off += (t->shape[q] - 1) * (t->strides[q] > 0 ? t->strides[q] : 0);
    return off;
}
static bool c_index32(const fr_diag_in *x, int arg, cres *out) {
    (void)arg;
    const fr_fwd_inputs *o = &x->c->in.fwd;
    const fr_tensor *src[3] = {&o->query, &o->key, &o->value};
    bool any = false;
    for (int k = 0; k < 3; k++)
        any |= max_offset(src[k]) >= ((int64_t)1 << 31);
    if (!any) return false;
    alt a;
    alt_init(&a, x);
    fr_tensor *dst[3] = {&a.c.in.fwd.query, &a.c.in.fwd.key, &a.c.in.fwd.value};
    bool ok = true;
    for (int k = 0; k < 3 && ok; k++) {
        if (max_offset(src[k]) < ((int64_t)1 << 31)) continue;
        wrap_ctx w = {src[k]};
        ok = alt_own(&a, dst[k], t_remap(src[k], src[k]->ndim, src[k]->shape, wrap_map, &w));
    }
    ok = ok && run_golden(&a.c, out);
    alt_free(&a);
    return ok;
}

/* The mask applied as a finite additive sentinel (score - 10000) instead of excluding the position: a user mask of
 * sparse mode 0/1 ([S1, S2] or [B|1, N1|1, S1, S2]) turned into a type-0 pse, added to the case's own. */
static bool c_sentinel(const fr_diag_in *x, int arg, cres *out) {
    (void)arg;
    const fr_problem *pb = x->pb;
    const fr_params *p = &x->c->params;
    const fr_fwd_inputs *in = &x->c->in.fwd;
    if (!pb->has_mask || p->sparse_mode > 1 || pb->layout == FR_TND || pb->has_topk || pb->fp8) return false;
    if (p->sparse_mode == 0 && (p->pre_tokens < pb->S1 + pb->S2 || p->next_tokens < pb->S1 + pb->S2)) return false;
    if (pb->has_pse && (p->pse_type != 0 || in->real_shift.ndim != 4 || in->real_shift.shape[2] != pb->S1 ||
                        in->real_shift.shape[3] != pb->S2))
        return false;
    const fr_tensor *m = &in->atten_mask;
    if ((m->ndim != 2 && m->ndim != 4) || m->shape[m->ndim - 1] < pb->S2 || m->shape[m->ndim - 2] < pb->S1)
        return false;
    int64_t sh[4] = {pb->B, pb->N1, pb->S1, pb->S2};
    fr_tensor ps = fr_tensor_make(pb->dtype, NULL, 4, sh);
    ps.data = calloc((size_t)fr_tensor_numel(&ps) + 1, fr_dtype_size(pb->dtype));
    if (!ps.data) return false;
    const fr_tensor *rs = &in->real_shift;
    for (int64_t b = 0; b < pb->B; b++)
        for (int64_t h = 0; h < pb->N1; h++)
            for (int64_t i = 0; i < pb->S1; i++)
                for (int64_t jj = 0; jj < pb->S2; jj++) {
                    int64_t mo = m->ndim == 2 ? i * m->strides[0] + jj * m->strides[1]
                                              : (m->shape[0] > 1 ? b : 0) * m->strides[0] +
                                                    (m->shape[1] > 1 ? h : 0) * m->strides[1] +
                                                    i * m->strides[2] + jj * m->strides[3];
                    double v = fr_load_f64(m, mo) != 0 ? -10000.0 : 0.0;
                    if (pb->has_pse)
                        v += fr_load_f64(rs, (rs->shape[0] > 1 ? b : 0) * rs->strides[0] +
                                                 (rs->shape[1] > 1 ? h : 0) * rs->strides[1] + i * rs->strides[2] +
                                                 jj * rs->strides[3]);
                    fr_store_f64(&ps, ((b * pb->N1 + h) * pb->S1 + i) * pb->S2 + jj, v);
                }
    alt a;
    alt_init(&a, x);
    a.c.params.pse_type = 0;
    a.c.params.sparse_mode = 0;
    memset(&a.c.in.fwd.atten_mask, 0, sizeof a.c.in.fwd.atten_mask);
    bool ok = alt_own(&a, &a.c.in.fwd.real_shift, ps) && run_golden(&a.c, out);
    alt_free(&a);
    return ok;
}

/* Varlen: a sequence with no queries skipped before its keys are counted: batch b reads its s2_b keys from the end of
 * the last earlier batch that has queries (0 for none). */
static bool c_varlen_offset(const fr_diag_in *x, int arg, cres *out) {
    (void)arg;
    const fr_problem *pb = x->pb;
    if (pb->layout != FR_TND || pb->has_topk) return false;
    int64_t start2 = 0;
    bool differs = false;
    for (int64_t b = 0; b < pb->B; b++) {
        int64_t q0, l1, k0, l2;
        fr_problem_q_rows(pb, b, &q0, &l1);
        fr_problem_kv_rows(pb, b, &k0, &l2);
        if (l1 > 0 && l2 > 0 && start2 != k0) differs = true;
        if (l1 > 0) start2 = k0 + l2;
    }
    if (!differs) return false;
    alt a;
    alt_init(&a, x);
    const fr_fwd_inputs *o = &x->c->in.fwd;
    const fr_tensor *src[3] = {&o->key, &o->value, &o->key_rope};
    fr_tensor *dst[3] = {&a.c.in.fwd.key, &a.c.in.fwd.value, &a.c.in.fwd.key_rope};
    bool ok = true;
    for (int t = 0; t < 3 && ok; t++) {
        if (!fr_tensor_present(src[t])) continue;
        fr_tensor sc = t_copy(src[t]), dc = t_copy(src[t]);
        ok = sc.data && alt_own(&a, dst[t], dc);
        if (ok) {
            size_t row = (size_t)(src[t]->shape[1] * src[t]->shape[2]) * fr_dtype_size(src[t]->dtype);
            int64_t s2 = 0;
            for (int64_t b = 0; b < pb->B; b++) {
                int64_t q0, l1, k0, l2;
                fr_problem_q_rows(pb, b, &q0, &l1);
                fr_problem_kv_rows(pb, b, &k0, &l2);
                if (l1 > 0 && s2 + l2 <= pb->T2)
                    memcpy((char *)dc.data + (size_t)k0 * row, (const char *)sc.data + (size_t)s2 * row,
                           (size_t)l2 * row);
                if (l1 > 0) s2 = k0 + l2;
            }
        }
        free(sc.data);
    }
    ok = ok && run_golden(&a.c, out);
    alt_free(&a);
    return ok;
}

/* The candidate list. ops: 1 forward, 2 backward; 4: a numerics candidate (the emulator), tried only when no other
 * candidate matched: an implementation that matches a semantic candidate differs from the golden by that defect, and
 * from a numerics candidate by at least as much, so the numerics ones could not have been within reach. */
typedef struct cand {
    const char *name;
    fr_diag diag;
    unsigned ops;
    cand_fn fn;
    int arg;
} cand;

static const cand kCands[] = {
    {"scale squared", FR_DIAG_SCALE, 3, c_scale, 0},
    {"scale missing", FR_DIAG_SCALE, 3, c_scale, 1},
    {"scale 1/sqrt(D)", FR_DIAG_SCALE, 3, c_scale, 2},
    {"pre_tokens + 1", FR_DIAG_BAND, 3, c_band, 0},
    {"next_tokens + 1", FR_DIAG_BAND, 3, c_band, 1},
    {"pre_tokens - 1", FR_DIAG_BAND, 3, c_band, 2},
    {"next_tokens - 1", FR_DIAG_BAND, 3, c_band, 3},
    {"causal alignment swapped", FR_DIAG_CAUSAL_ALIGN, 3, c_causal_align, 0},
    {"keys past the query index ignored", FR_DIAG_MASK, 1, c_query_bound, 0},
    {"pse order swapped", FR_DIAG_PSE_ORDER, 3, c_pse_order, 0},
    {"dropout scaled twice", FR_DIAG_DROPOUT, 3, c_dropout, 0},
    {"dropout not scaled", FR_DIAG_DROPOUT, 1, c_dropout, 1},
    {"dropout bit of (i, j+1)", FR_DIAG_DROPOUT, 2, c_dropout, 2},
    {"GQA kv head h % N2", FR_DIAG_GQA_MAP, 3, c_gqa, 0},
    {"dK/dV from the last query head", FR_DIAG_DKDV_REDUCE, 2, c_gqa, 1},
    {"dK/dV from the first query head", FR_DIAG_DKDV_REDUCE, 2, c_gqa, 2},
    {"q.k without the Dk % 8 tail", FR_DIAG_HEAD_DIM, 3, c_head_dim, 8},
    {"q.k without the Dk % 16 tail", FR_DIAG_HEAD_DIM, 3, c_head_dim, 16},
    {"q.k without the Dk % 32 tail", FR_DIAG_HEAD_DIM, 3, c_head_dim, 32},
    {"q.k without the Dk % 64 tail", FR_DIAG_HEAD_DIM, 3, c_head_dim, 64},
    {"out without the Dv % 8 tail", FR_DIAG_HEAD_DIM, 1, c_out_zero, -8},
    {"out without the Dv % 16 tail", FR_DIAG_HEAD_DIM, 1, c_out_zero, -16},
    {"out without the Dv % 32 tail", FR_DIAG_HEAD_DIM, 1, c_out_zero, -32},
    {"last key dropped", FR_DIAG_TILE_TAIL, 1, c_key_tail, 0},
    {"partial last key tile of 16 dropped", FR_DIAG_TILE_TAIL, 1, c_key_tail, 16},
    {"partial last key tile of 32 dropped", FR_DIAG_TILE_TAIL, 1, c_key_tail, 32},
    {"partial last key tile of 64 dropped", FR_DIAG_TILE_TAIL, 1, c_key_tail, 64},
    {"partial last key tile of 128 dropped", FR_DIAG_TILE_TAIL, 1, c_key_tail, 128},
    {"partial last key tile of 256 dropped", FR_DIAG_TILE_TAIL, 1, c_key_tail, 256},
    {"last query row zero", FR_DIAG_TILE_TAIL, 1, c_out_zero, 0},
    {"partial last query tile of 64 zero", FR_DIAG_TILE_TAIL, 1, c_out_zero, 64},
    {"partial last query tile of 128 zero", FR_DIAG_TILE_TAIL, 1, c_out_zero, 128},
    {"no rescale of O, key tiles of 32", FR_DIAG_NO_RESCALE, 1, c_no_rescale, 32 * 2},
    {"no rescale of O, key tiles of 64", FR_DIAG_NO_RESCALE, 1, c_no_rescale, 64 * 2},
    {"no rescale of O, key tiles of 128", FR_DIAG_NO_RESCALE, 1, c_no_rescale, 128 * 2},
    {"no rescale of O, key tiles of 256", FR_DIAG_NO_RESCALE, 1, c_no_rescale, 256 * 2},
    {"no rescale of O and l, key tiles of 64", FR_DIAG_NO_RESCALE, 1, c_no_rescale, 64 * 2 + 1},
    {"no rescale of O and l, key tiles of 128", FR_DIAG_NO_RESCALE, 1, c_no_rescale, 128 * 2 + 1},
    {"fp16 accumulator, key tiles of 1", FR_DIAG_ACCUMULATION, 5, c_numerics, 1 * 4},
    {"fp16 accumulator, key tiles of 64", FR_DIAG_ACCUMULATION, 5, c_numerics, 64 * 4},
    {"fp16 accumulator, key tiles of 128", FR_DIAG_ACCUMULATION, 5, c_numerics, 128 * 4},
    {"P rounded to fp16", FR_DIAG_P_ROUNDING, 5, c_numerics, 64 * 4 + 1},
    {"P rounded to bf16", FR_DIAG_P_ROUNDING, 5, c_numerics, 64 * 4 + 2},
    {"dq without the scale", FR_DIAG_GRAD_SCALE, 2, c_grad_scale, 0},
    {"dk without the scale", FR_DIAG_GRAD_SCALE, 2, c_grad_scale, 1},
    {"dq scaled twice", FR_DIAG_GRAD_SCALE, 2, c_grad_scale, 2},
    {"dk scaled twice", FR_DIAG_GRAD_SCALE, 2, c_grad_scale, 3},
    {"dpsum = rowsum(dO)", FR_DIAG_DPSUM, 2, c_dpsum, 0},
    {"dpsum = rowsum(dO * dO)", FR_DIAG_DPSUM, 2, c_dpsum, 1},
    {"dpsum = 0", FR_DIAG_DPSUM, 2, c_dpsum, 2},
    {"q/k/v offsets wrapped to 31 bits", FR_DIAG_INDEX32, 3, c_index32, 0},
    {"mask as an additive -10000", FR_DIAG_MASK_SENTINEL, 3, c_sentinel, 0},
    {"varlen key offset not advanced past a sequence with no queries", FR_DIAG_VARLEN, 3, c_varlen_offset, 0},
};

#define N_CANDS (sizeof kCands / sizeof kCands[0])

/* ---------------------------------------------------------------------------------------------------------------- */
/* Shapes. */

/* Relative L2 of a against r restricted to one head's rows (out-like). */
static double head_rel_l2(const fr_diag_in *x, const double *a, const double *r, int64_t h) {
    double ee = 0, rr = 0;
    const int64_t L = x->row_len;
    for (int64_t i = 0; i < x->nrows; i++) {
        if (x->head[i] != h) continue;
        for (int64_t d = 0; d < L; d++) {
            double av = a[i * L + d], rv = r[i * L + d];
            if (!isfinite(av) || !isfinite(rv)) continue;
            ee += (av - rv) * (av - rv);
            rr += rv * rv;
        }
    }
    return rr > 0 ? sqrt(ee / rr) : sqrt(ee);
}

/* GQA: heads whose kv head is the same under h / G and h % N2 are clean, the others are not. */
static bool shape_gqa(const fr_diag_in *x, int k, double bound) {
    const fr_problem *pb = x->pb;
    if (pb->G <= 1 || pb->N2 <= 1 || !x->a[k] || x->nrows * x->row_len != x->n[k]) return false;
    bool same_ok = true, diff_bad = false;
    for (int64_t h = 0; h < pb->N1; h++) {
        double e = head_rel_l2(x, x->a[k], x->r[k], h);
        if (h / pb->G == h % pb->N2)
            same_ok &= e <= bound;
        else
            diff_bad |= e > bound;
    }
    return same_ok && diff_bad;
}

/* Overflow: a case designed for overflow-sized sums or scores whose output has whole rows zero (or non-finite) where
 * the golden's are not (an fp16 row sum that became Inf divides the row to 0). */
static bool shape_overflow(const fr_diag_in *x, int k) {
    if (!(x->purpose & FR_TAG_LARGE) || !x->a[k] || x->nrows * x->row_len != x->n[k]) return false;
    for (int64_t i = 0; i < x->nrows; i++) {
        bool zero = true, gz = true;
        for (int64_t d = 0; d < x->row_len; d++) {
            double av = x->a[k][i * x->row_len + d], rv = x->r[k][i * x->row_len + d];
            if (!isfinite(av)) return true;
            zero &= av == 0;
            gz &= rv == 0;
        }
        if (zero && !gz) return true;
    }
    return false;
}

/* "dq 5.1x, dk 0.4x bound; dq: rows above bound 96/128, heads 0-3 of 4, worst row 127" */
static void describe_shape(const fr_diag_in *x, const fr_judgement *j, int k_fail, char *s, size_t n) {
    size_t u = 0;
#define PUT(...)                                                                                                    \
    do {                                                                                                            \
        if (u < n) {                                                                                                \
            int w_ = snprintf(s + u, n - u, __VA_ARGS__);                                                           \
            if (w_ > 0) u += (size_t)w_;                                                                            \
        }                                                                                                           \
    } while (0)
    PUT("shape:");
    for (int k = cmp_first(x); k <= cmp_last(x); k++)
        if (x->a[k] && j->out[k].bound_l2 > 0)
            PUT(" %s %.3gx", fr_case_output_name((fr_case_output)k), j->out[k].m.rel_l2 / j->out[k].bound_l2);
    PUT(" bound");
    int k = k_fail;
    if (x->a[k] && x->nrows > 0 && x->nrows * x->row_len == x->n[k]) {
        double bound = j->out[k].bound_l2;
        int64_t bad = 0, worst = -1, hmin = INT64_MAX, hmax = -1, hbad = 0;
        double wv = -1;
        uint8_t *hb = calloc((size_t)x->pb->N1 + 1, 1);
        for (int64_t i = 0; i < x->nrows; i++) {
            double ee = 0, rr = 0;
            for (int64_t d = 0; d < x->row_len; d++) {
                double av = x->a[k][i * x->row_len + d], rv = x->r[k][i * x->row_len + d];
                if (!isfinite(av) || !isfinite(rv)) continue;
                ee += (av - rv) * (av - rv);
                rr += rv * rv;
            }
            double e = rr > 0 ? sqrt(ee / rr) : sqrt(ee);
            if (e > bound) {
                bad++;
                int64_t h = x->head[i];
                if (h < hmin) hmin = h;
                if (h > hmax) hmax = h;
                if (hb && h >= 0 && h < x->pb->N1 && !hb[h]) hb[h] = 1, hbad++;
            }
            if (e > wv) wv = e, worst = i;
        }
        free(hb);
        PUT("; %s rows above bound %lld/%lld", fr_case_output_name((fr_case_output)k), (long long)bad,
            (long long)x->nrows);
        if (bad) PUT(", %lld of %lld heads (%lld-%lld)", (long long)hbad, (long long)x->pb->N1, (long long)hmin,
                     (long long)hmax);
        if (worst >= 0) PUT(", worst row %lld", (long long)worst);
    }
#undef PUT
}

/* ---------------------------------------------------------------------------------------------------------------- */

static double work_of(const fr_problem *pb) {
    return (double)pb->B * (double)pb->N1 * (double)pb->S1 * (double)pb->S2 *
           (double)(pb->Dk + pb->Dv + pb->Drope + 1);
}

fr_diag fr_diagnose(const fr_diag_in *x, const fr_judgement *j, fr_case_output k_fail, char *shape, size_t n) {
    if (shape && n) shape[0] = 0;
    char buf[256] = "";
    fr_diag named = FR_DIAG_NONE;
    const char *best_name = NULL;
    double rho0 = INFINITY, best = INFINITY;
    /* 1. Candidates. */
    if (work_of(x->pb) <= kMaxWork) {
        double *r[FR_CASE_NUM_OUTPUTS];
        int64_t nr[FR_CASE_NUM_OUTPUTS];
        cres g;
        if (copy_golden(x, &g)) {
            memcpy(r, g.v, sizeof r);
            memcpy(nr, g.n, sizeof nr);
            rho0 = rho_of(x, j, r, nr);
            cres_free(&g);
        }
        double rho[N_CANDS];
        size_t bi = N_CANDS;
        unsigned op = x->c->op == FR_CASE_FWD ? 1u : 2u;
        for (size_t c = 0; c < N_CANDS; c++)
            rho[c] = INFINITY;
        /* A rounding defect of a 16-bit format cannot move an output by 5 % (bf16 u = 0.4 %): no numerics re-run
         * past that. */
        double err = 0;
        for (int k = cmp_first(x); k <= cmp_last(x); k++)
            if (x->a[k]) err = fmax(err, j->out[k].m.rel_l2);
        unsigned passes = err < kNumericsMax ? 2 : 1;
        for (unsigned pass = 0; pass < passes && named == FR_DIAG_NONE; pass++) {
            for (size_t c = 0; c < N_CANDS; c++) {
                if (!(kCands[c].ops & op) || ((kCands[c].ops & 4u) != 0) != (pass == 1)) continue;
                cres co;
                memset(&co, 0, sizeof co);
                if (kCands[c].fn(x, kCands[c].arg, &co)) rho[c] = rho_of(x, j, co.v, co.n);
                cres_free(&co);
                if (isfinite(rho[c]) && (bi == N_CANDS || rho[c] < rho[bi])) bi = c;
            }
            if (bi < N_CANDS && isfinite(rho[bi])) {
                best = rho[bi];
                best_name = kCands[bi].name;
                bool match = best <= fmax(kMatch, kMatchRel * rho0) && rho0 >= kSeparate * best;
                for (size_t c = 0; match && c < N_CANDS; c++)
                    if (kCands[c].diag != kCands[bi].diag && rho[c] < fmax(kSeparate * best, kMatch)) match = false;
                if (match) named = kCands[bi].diag;
            }
        }
    }
    if (named != FR_DIAG_NONE) {
        snprintf(buf, sizeof buf, "matches candidate '%s' (rho %.3g; correct %.3g)", best_name, best, rho0);
    } else {
        /* 2. Shapes unique to one class. */
        double bound = j->out[k_fail].bound_l2;
        if (shape_gqa(x, k_fail, bound))
            named = FR_DIAG_GQA_MAP;
        else if (shape_overflow(x, k_fail))
            named = FR_DIAG_OVERFLOW;
        if (named == FR_DIAG_NONE) named = FR_DIAG_UNKNOWN;
        describe_shape(x, j, k_fail, buf, sizeof buf);
        if (best_name) {
            size_t u = strlen(buf);
            snprintf(buf + u, sizeof buf - u, "; nearest candidate '%s' (rho %.3g; correct %.3g)", best_name, best,
                     rho0);
        }
    }
    if (shape && n) snprintf(shape, n, "%s", buf);
    return named;
}

fr_diag fr_diagnose_stats(const fr_diag_in *x, fr_case_output k) {
    if (k != FR_CO_SOFTMAX_SUM) return FR_DIAG_SOFTMAX_STATS;
    /* lse stored as the sum: l' = m + log(l) (or log(l)). */
    const double *a = x->a[k], *r = x->r[k], *mr = x->r[FR_CO_SOFTMAX_MAX];
    double d_lse = 0, d_log = 0;
    for (int64_t q = 0; q < x->n[k]; q++) {
        if (r[q] <= 0) continue;
        double l = log(r[q]);
        d_lse = fmax(d_lse, fabs(a[q] - (mr ? mr[q] : 0) - l) / (1 + fabs(l + (mr ? mr[q] : 0))));
        d_log = fmax(d_log, fabs(a[q] - l) / (1 + fabs(l)));
    }
    return d_lse < 1e-3 || d_log < 1e-3 ? FR_DIAG_LSE_FOR_SUM : FR_DIAG_SOFTMAX_STATS;
}
