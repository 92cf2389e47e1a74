/* What a suite category adds to a generated case: post-processing before the run (poisoned K/V, sentinel pse, V = I,
 * first tile masked, K past 2^31, permuted top-k lists) and the checks after it (explicit softmax properties of a
 * V = I case, which reading an implementation-defined case follows). */
#include "verify/suite/suite_internal.h"

#include "core/core.h"
#include "core/problem.h"
#include "core/rng.h"
#include "verify/metrics/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sets element (b, n, j, all d) of a K/V-like tensor to v. */
static void set_kv_row(const fr_problem *pb, const fr_tensor *t, int64_t D, int64_t b, int64_t n, int64_t j, double v) {
    for (int64_t d = 0; d < D; d++)
        fr_store_f64(t, fr_layout_offset(t, pb->layout, D, 0, b, n, j, d), v);
}

/* splitmix64: the padding lengths and kept keys of the hunt's mask corners, from the case's seed. */
static uint64_t next64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void fr_suite_override_params(fr_params *p, const fr_suite_opts *o) {
    if (o->set_inner_precise) p->inner_precise = o->inner_precise;
}

fr_status fr_suite_apply_mod(fr_gen_case *g, fr_suite_mod mod, fr_error *err) {
    if (mod == FR_MOD_NONE) return FR_OK;
    fr_problem pb;
    fr_status st = fr_problem_from_fwd(&g->params, &g->in.fwd, &pb, err);
    if (st != FR_OK) return st;
    fr_fwd_inputs *in = &g->in.fwd;
    const fr_tensor *mask = &in->atten_mask;
    switch (mod) {
    case FR_MOD_NAN_KV:
    case FR_MOD_FIRST_TILE_MASKED: {
        if (pb.layout == FR_TND || mask->ndim != 2 || mask->shape[0] != pb.S1 || mask->shape[1] != pb.S2)
            return fr_fail(err, FR_E_INTERNAL, "suite: %s needs a [S1,S2] mask and a non-TND layout", g->name);
        if (mod == FR_MOD_NAN_KV) {
            /* Two key columns (one inside, one at the end) masked for every row; their K/V poisoned. */
            int64_t cols[2] = {pb.S2 / 2, pb.S2 - 1};
            for (int c = 0; c < 2; c++) {
                for (int64_t i = 0; i < pb.S1; i++)
                    fr_store_f64(mask, i * pb.S2 + cols[c], 1);
                for (int64_t b = 0; b < pb.B; b++)
                    for (int64_t n = 0; n < pb.N2; n++) {
                        set_kv_row(&pb, &in->key, pb.Dk, b, n, cols[c], c ? INFINITY : NAN);
                        set_kv_row(&pb, &in->value, pb.Dv, b, n, cols[c], c ? NAN : INFINITY);
                    }
            }
        } else {
            for (int64_t i = 0; i < pb.S1; i++)
                for (int64_t j = 0; j < pb.S2; j++)
                    if (j < 128 || i % 7 == 3) fr_store_f64(mask, i * pb.S2 + j, 1);
        }
        return FR_OK;
    }
    case FR_MOD_PAD_RIGHT:
    case FR_MOD_PAD_LEFT: {
        if (pb.layout == FR_TND || mask->ndim != 4 || mask->shape[0] != pb.B || mask->shape[1] != 1)
            return fr_fail(err, FR_E_INTERNAL, "suite: %s: padding needs a [B,1,S1,S2] mask", g->name);
        uint64_t r = g->seed ^ 0x9ad0u;
        for (int64_t b = 0; b < pb.B; b++) {
            int64_t keep = b == 0 ? pb.S2 : 1 + (int64_t)(next64(&r) % (uint64_t)(pb.S2 > 0 ? pb.S2 : 1));
            for (int64_t i = 0; i < pb.S1; i++)
                for (int64_t j = 0; j < pb.S2; j++) {
                    bool masked = mod == FR_MOD_PAD_RIGHT ? j >= keep : j < pb.S2 - keep;
                    fr_store_f64(mask, (b * pb.S1 + i) * pb.S2 + j, masked ? 1 : 0);
                }
        }
        return FR_OK;
    }
    case FR_MOD_ONE_KEY: {
        if (pb.layout == FR_TND || mask->ndim != 2 || mask->shape[0] != pb.S1 || mask->shape[1] != pb.S2)
            return fr_fail(err, FR_E_INTERNAL, "suite: %s needs a [S1,S2] mask and a non-TND layout", g->name);
        uint64_t r = g->seed ^ 0x0e4eu;
        for (int64_t i = 0; i < pb.S1; i++) {
            int64_t kept = pb.S2 ? (int64_t)(next64(&r) % (uint64_t)pb.S2) : 0;
            for (int64_t j = 0; j < pb.S2; j++)
                fr_store_f64(mask, i * pb.S2 + j, j == kept && i % 5 != 4 ? 0 : 1);
        }
        return FR_OK;
    }
    case FR_MOD_KEY_PAST_2G: {
        const fr_tensor *k = &in->key;
        if (pb.layout != FR_BNSD || k->ndim != 4)
            return fr_fail(err, FR_E_INTERNAL, "suite: %s: the strided key needs BNSD", g->name);
        /* Row stride 2^22 elements: key row j starts at j * 2^22, so rows past 512 live beyond 2^31. */
        const int64_t rs = INT64_C(1) << 22;
        int64_t rows = pb.B * pb.N2 * pb.S2, bytes;
        if (!fr_mul_ok(rows, rs, &bytes) || !fr_mul_ok(bytes, (int64_t)fr_dtype_size(k->dtype), &bytes))
            return fr_fail(err, FR_E_OVERFLOW, "suite: %s: strided key size", g->name);
        void *big = calloc((size_t)bytes, 1); /* untouched pages stay unmapped */
        if (!big)
            return fr_fail(err, FR_E_UNSUPPORTED, "suite: %s: cannot reserve %lld bytes", g->name, (long long)bytes);
        fr_tensor nk = *k;
        nk.data = big;
        nk.strides[3] = 1;
        nk.strides[2] = rs;
        nk.strides[1] = pb.S2 * rs;
        nk.strides[0] = pb.N2 * pb.S2 * rs;
        for (int64_t b = 0; b < pb.B; b++)
            for (int64_t n = 0; n < pb.N2; n++)
                for (int64_t j = 0; j < pb.S2; j++)
                    for (int64_t d = 0; d < pb.Dk; d++)
                        fr_store_f64(&nk, fr_layout_offset(&nk, pb.layout, pb.Dk, 0, b, n, j, d),
                                     fr_load_f64(k, fr_layout_offset(k, pb.layout, pb.Dk, 0, b, n, j, d)));
        free(in->key.data);
        in->key = nk;
        return FR_OK;
    }
    case FR_MOD_SENTINEL_1E4: {
        const fr_tensor *ps = &in->real_shift;
        if (pb.layout == FR_TND || mask->ndim != 2 || ps->ndim != 4 || ps->shape[2] != pb.S1 || ps->shape[3] != pb.S2)
            return fr_fail(err, FR_E_INTERNAL, "suite: %s needs a [S1,S2] mask and a [B,N1,S1,S2] pse", g->name);
        int64_t n = fr_tensor_numel(ps);
        for (int64_t k = 0; k < n; k++) {
            int64_t ij = k % (pb.S1 * pb.S2);
            fr_store_f64(ps, k, fr_load_f64(mask, ij) != 0 ? 0.0 : -1e4);
        }
        return FR_OK;
    }
    case FR_MOD_SENTINEL: {
        const fr_tensor *ps = &in->real_shift;
        int64_t n = fr_tensor_numel(ps);
        for (int64_t k = 0; k < n; k++)
            fr_store_f64(ps, k, -1e30 - 2e30 * fr_rng_uniform01(g->seed, 77, (uint64_t)k));
        return FR_OK;
    }
    case FR_MOD_V_IDENTITY: {
        if (pb.layout != FR_BNSD || pb.Dv != pb.S2)
            return fr_fail(err, FR_E_INTERNAL, "suite: %s: V = I needs BNSD and Dv = S2", g->name);
        const fr_tensor *v = &in->value;
        for (int64_t b = 0; b < pb.B; b++)
            for (int64_t h = 0; h < pb.N2; h++)
                for (int64_t j = 0; j < pb.S2; j++)
                    for (int64_t d = 0; d < pb.Dv; d++)
                        fr_store_f64(v, fr_layout_offset(v, pb.layout, pb.Dv, 0, b, h, j, d), j == d ? 1.0 : 0.0);
        return FR_OK;
    }
    default: return FR_OK;
    }
}

/* Top-k order variant k (1..3) of the base indices: reversed, a seeded shuffle, rotated by half a row (the
 * dominant own key moves from the first slot to the middle, a tile edge for W = 2 x 64k). */
void fr_suite_permute_topk(const fr_tensor *t, int variant, uint64_t seed) {
    int64_t W = t->shape[t->ndim - 1], rows = W ? fr_tensor_numel(t) / W : 0;
    int32_t *p = t->data, *tmp = malloc(sizeof(int32_t) * (size_t)(W ? W : 1));
    if (!tmp) return;
    for (int64_t r = 0; r < rows; r++) {
        int32_t *row = p + r * W;
        memcpy(tmp, row, sizeof(int32_t) * (size_t)W);
        for (int64_t w = 0; w < W; w++) {
            if (variant == 1)
                row[w] = tmp[W - 1 - w];
            else if (variant == 3)
                row[w] = tmp[(w + W / 2) % W];
        }
        if (variant == 2)
            for (int64_t w = W - 1; w > 0; w--) {
                int64_t s = (int64_t)(fr_rng_uniform01(seed, 91, (uint64_t)(r * W + w)) * (double)(w + 1));
                if (s > w) s = w;
                int32_t x = row[w];
                row[w] = row[s];
                row[s] = x;
            }
    }
    free(tmp);
}

/* Explicit softmax properties of a V = I case: attention_out rows are P rows. */
void fr_suite_check_props(const fr_case *c, const fr_case_outputs *iut, const fr_case_outputs *ideal,
                        fr_case_result *cr) {
    const fr_tensor *q = &c->in.fwd.query, *k = &c->in.fwd.key, *o = &iut->fwd.attention_out;
    int64_t B = q->shape[0], N1 = q->shape[1], S1 = q->shape[2], D = q->shape[3], S2 = k->shape[2], N2 = k->shape[1];
    int64_t rows = B * N1 * S1, G = N2 ? N1 / N2 : 1;
    double *p = malloc(sizeof(double) * (size_t)(rows * S2 + 1)), *x = malloc(sizeof(double) * (size_t)(rows * S2 + 1));
    double *pe = ideal ? malloc(sizeof(double) * (size_t)(rows * S2 + 1)) : NULL;
    if (!p || !x) goto out;
    double sc = (double)(float)c->params.scale_value;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < N1; h++)
            for (int64_t i = 0; i < S1; i++) {
                int64_t r = (b * N1 + h) * S1 + i;
                for (int64_t j = 0; j < S2; j++) {
                    double s = 0;
                    for (int64_t d = 0; d < D; d++)
                        s += fr_load_f64(q, ((b * N1 + h) * S1 + i) * D + d) *
                             fr_load_f64(k, ((b * N2 + h / G) * S2 + j) * D + d);
                    x[r * S2 + j] = s * sc;
                    p[r * S2 + j] = fr_load_f64(o, r * S2 + j);
                    if (pe) pe[r * S2 + j] = fr_load_f64(&ideal->fwd.attention_out, r * S2 + j);
                }
            }
    fr_softmax_props sp, se;
    double tol_floor = 8.0 * (o->dtype == FR_F32   ? ldexp(1.0, -24)
                              : o->dtype == FR_F16 ? ldexp(1.0, -11)
                                                   : ldexp(1.0, -8));
    double tol = tol_floor;
    if (pe) {
        fr_softmax_props_rows(pe, x, rows, S2, 1.0, &se);
        tol = fmax(tol_floor, 4.0 * se.max_sum_err);
    }
    fr_softmax_props_rows(p, x, rows, S2, tol, &sp);
    snprintf(cr->extra, sizeof cr->extra,
             "explicit P: %lld rows, max |sum-1| %.3g (tol %.3g), negative %lld, argmax wrong %lld", (long long)rows,
             sp.max_sum_err, tol, (long long)sp.negative, (long long)sp.argmax_wrong);
    if ((sp.bad_sum || sp.negative || sp.argmax_wrong) && cr->j.verdict != FR_FAIL) {
        cr->j.verdict = FR_FAIL;
        cr->j.diag = sp.bad_sum ? FR_DIAG_STALE_MAX : FR_DIAG_PRECISION;
        snprintf(cr->j.why, sizeof cr->j.why, "softmax properties violated: %s", cr->extra);
    }
out:
    free(p);
    free(x);
    free(pe);
}

double fr_suite_out_rel_l2(const fr_case_outputs *a, const fr_case_outputs *b, fr_case_output k) {
    const fr_tensor *x = fr_case_output_cslot(a, k), *y = fr_case_output_cslot(b, k);
    if (!fr_tensor_present(x) || !fr_tensor_present(y)) return 0;
    int64_t n = fr_tensor_numel(x);
    double ee = 0, rr = 0;
    for (int64_t i = 0; i < n; i++) {
        double u = fr_load_f64(x, i), v = fr_load_f64(y, i);
        if (!isfinite(u) || !isfinite(v)) continue;
        ee += (u - v) * (u - v);
        rr += v * v;
    }
    return rr > 0 ? sqrt(ee / rr) : sqrt(ee);
}

/* rel-L2 of the IUT's attention_out against the golden of case c with params p, mask m and top-k list t (NULL:
 * c's). */
/* *oom is set when the golden could not run for want of memory (a reading not computed is never reported). */
static double reading_err_t(const fr_case *c, const fr_params *p, const fr_tensor *m, const fr_tensor *t,
                            const fr_case_outputs *iut, bool *oom) {
    fr_case alt = *c;
    alt.params = *p;
    if (m) alt.in.fwd.atten_mask = *m;
    if (t) alt.in.fwd.topk_indices = *t;
    fr_case_outputs g;
    fr_error e;
    fr_status st = fr_case_alloc_outputs(&alt, true, &g, &e);
    if (st != FR_OK) {
        *oom = *oom || st == FR_E_NOMEM;
        return INFINITY;
    }
    fr_engine ge = fr_engine_default(FR_ENGINE_GOLDEN);
    st = fr_fwd(&alt.params, &alt.in.fwd, &g.fwd, &ge, &e);
    *oom = *oom || st == FR_E_NOMEM;
    double r = st == FR_OK ? fr_suite_out_rel_l2(iut, &g, FR_CO_ATTENTION_OUT) : INFINITY;
    fr_case_outputs_free(&g);
    return r;
}

static double reading_err(const fr_case *c, const fr_params *p, const fr_tensor *m, const fr_case_outputs *iut,
                          bool *oom) {
    return reading_err_t(c, p, m, NULL, iut, oom);
}

/* Which of the readings (errors e[k] against each, INFINITY = not computed) the IUT follows: the closest one within
 * max(bound, 1e-2), or none; *ties counts the readings within that distance. */
static int closest_reading(const double *e, int n, double bound, int *ties) {
    double tie = fmax(bound, 1e-2);
    int best = -1;
    *ties = 0;
    for (int k = 0; k < n; k++) {
        if (!isnan(e[k]) && (best < 0 || e[k] < e[best])) best = k; /* the first of equals: A before the others */
        *ties += e[k] <= tie;
    }
    return best >= 0 && e[best] <= tie ? best : -1;
}

/* Mode 5 with a prefix and a user mask that contradicts the formula: (A) masked iff mask OR formula (our decision,
 * docs/semantics-decisions.md D12), (B) the formula alone (the mask's content ignored, as mode 6 reads it), (C) the
 * mask alone (no causal / prefix band, as mode 1). */
static void reading_m5(const fr_case *c, const fr_case_outputs *iut, double bound, fr_case_result *cr, bool *oom) {
    const fr_tensor *um = &c->in.fwd.atten_mask;
    double e[3] = {reading_err(c, &c->params, NULL, iut, oom), INFINITY, INFINITY};
    fr_tensor fm = *um; /* the formula as a mask of the user mask's shape: reading A on it is reading B */
    int64_t n = fr_tensor_numel(um);
    fm.data = malloc((size_t)(n > 0 ? n : 1));
    *oom = *oom || !fm.data;
    if (fm.data && um->ndim == 4 && c->params.prefix) {
        int64_t S1 = um->shape[2], S2 = um->shape[3];
        uint8_t *m = fm.data;
        for (int64_t k = 0; k < n; k++) {
            int64_t j = k % S2, i = (k / S2) % S1, b = k / (S2 * S1 * um->shape[1]);
            int64_t pre = b < c->params.prefix_len ? c->params.prefix[b] : 0;
            m[k] = (uint8_t)(j > i + S2 - S1 && j >= pre);
        }
        e[1] = reading_err(c, &c->params, &fm, iut, oom);
    }
    free(fm.data);
    fr_params pc = c->params;
    pc.sparse_mode = FR_SPARSE_ALL_MASK;
    e[2] = reading_err(c, &pc, NULL, iut, oom);
    static const char *const kNames[3] = {"reading A (mask OR formula: flashref's decision)",
                                          "reading B (the formula alone, mask content ignored)",
                                          "reading C (the mask alone, no causal/prefix band)"};
    int ties, k = closest_reading(e, 3, bound, &ties);
    snprintf(cr->info, sizeof cr->info, "mode 5 + prefix with a contradicting mask: follows %s%s; rel-L2 vs A %.3g, "
             "B %.3g, C %.3g", k < 0 ? "none of the readings" : kNames[k],
             ties > 1 ? " (another reading gives the same here)" : "", e[0], e[1], e[2]);
}

/* Mode 0 with a user mask that leaves positions outside the band open: (A) masked iff mask OR outside the band (our
 * decision, D12; operator-spec 4.2 marks it an inference), (C) the mask alone (pre/next only let a kernel skip
 * blocks, as mode 1 reads the mask). The letters match the mode-5 readings of the same kind. */
static void reading_m0(const fr_case *c, const fr_case_outputs *iut, double bound, fr_case_result *cr, bool *oom) {
    fr_params pc = c->params;
    pc.sparse_mode = FR_SPARSE_ALL_MASK;
    double e[2] = {reading_err(c, &c->params, NULL, iut, oom), reading_err(c, &pc, NULL, iut, oom)};
    static const char *const kNames[2] = {"reading A (mask OR band: flashref's decision)",
                                          "reading C (the mask alone, pre/next only skip blocks)"};
    int ties, k = closest_reading(e, 2, bound, &ties);
    snprintf(cr->info, sizeof cr->info, "mode 0 with band positions the mask leaves open: follows %s%s; rel-L2 vs "
             "A %.3g, C %.3g", k < 0 ? "neither reading" : kNames[k],
             ties > 1 ? " (the other reading gives the same here)" : "", e[0], e[1]);
}

/* A top-k list with repeated keys: (A) a key listed twice takes part twice (our decision D7: each slot is one
 * position, as a gather reads it), (C) once (as a mask built from the list reads it): the golden on a copy of the
 * list whose repeats are -1 (unused slots). The list's last dimension is the slot; int32 or int64. */
static void reading_topk(const fr_case *c, const fr_case_outputs *iut, double bound, fr_case_result *cr,
                         bool *oom) {
    const fr_tensor *t = &c->in.fwd.topk_indices;
    double e[2] = {reading_err(c, &c->params, NULL, iut, oom), INFINITY};
    int64_t n = fr_tensor_numel(t), W = t->ndim ? t->shape[t->ndim - 1] : 0;
    int64_t *v = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    fr_tensor once = fr_tensor_make(t->dtype, malloc(fr_dtype_size(t->dtype) * (size_t)(n > 0 ? n : 1)), t->ndim,
                                    t->shape);
    *oom = *oom || !v || !once.data;
    if (v && once.data && W > 0 && (t->dtype == FR_I32 || t->dtype == FR_I64)) {
        for (int64_t k = 0; k < n; k++) v[k] = (int64_t)fr_load_f64(t, fr_tensor_offset_linear(t, k));
        for (int64_t r = 0; r < n / W; r++)
            for (int64_t w = 1; w < W; w++)
                for (int64_t q = 0; q < w && v[r * W + w] >= 0; q++)
                    if (v[r * W + q] == v[r * W + w]) v[r * W + w] = -1;
        for (int64_t k = 0; k < n; k++)
            if (t->dtype == FR_I32) ((int32_t *)once.data)[k] = (int32_t)v[k];
            else ((int64_t *)once.data)[k] = v[k];
        e[1] = reading_err_t(c, &c->params, NULL, &once, iut, oom);
    }
    free(v);
    free(once.data);
    static const char *const kNames[2] = {"reading A (each listed slot takes part: flashref's decision D7)",
                                          "reading C (a repeated key takes part once)"};
    int ties, k = closest_reading(e, 2, bound, &ties);
    snprintf(cr->info, sizeof cr->info, "top-k with repeated keys: follows %s%s; rel-L2 vs A %.3g, C %.3g",
             k < 0 ? "neither reading" : kNames[k], ties > 1 ? " (the other reading gives the same here)" : "", e[0],
             e[1]);
}

/* Implementation-defined cases (category "implementation-defined"): which reading the implementation follows is
 * reported (INFO), never judged: mode 5 with a prefix and a contradicting mask (reading_m5), mode 0 with a mask
 * that leaves band positions open (reading_m0), a top-k list with repeated keys (reading_topk). A numeric mismatch
 * with A is not a FAIL; a crash, a wrong shape or NaN still is. */
fr_status fr_suite_impldef_reading(const fr_case *c, const fr_case_outputs *iut, fr_case_result *cr, fr_error *err) {
    fr_verdict v = cr->j.verdict;
    if (v == FR_SKIP || c->op != FR_CASE_FWD || !fr_tensor_present(&iut->fwd.attention_out)) return FR_OK;
    if (v == FR_FAIL && (cr->j.diag == FR_DIAG_ERROR_STATUS || cr->j.diag == FR_DIAG_SHAPE ||
                         cr->j.diag == FR_DIAG_UNWRITTEN || cr->j.out[FR_CO_ATTENTION_OUT].m.n_anomaly_mismatch))
        return FR_OK;
    double bound = cr->j.out[FR_CO_ATTENTION_OUT].bound_l2;
    bool oom = false;
    char info[sizeof cr->info];
    memcpy(info, cr->info, sizeof info);
    if (fr_tensor_present(&c->in.fwd.topk_indices)) reading_topk(c, iut, bound, cr, &oom);
    else if (c->params.sparse_mode == FR_SPARSE_DEFAULT_MASK) reading_m0(c, iut, bound, cr, &oom);
    else reading_m5(c, iut, bound, cr, &oom);
    if (oom) { /* a reading not computed would change the INFO: our out of memory is never a result */
        memcpy(cr->info, info, sizeof info);
        return fr_fail(err, FR_E_NOMEM, "implementation-defined readings: out of memory");
    }
    cr->j.verdict = FR_PASS;
    cr->j.diag = FR_DIAG_NONE;
    snprintf(cr->j.why, sizeof cr->j.why, "INFO: %s", cr->info);
    return FR_OK;
}

