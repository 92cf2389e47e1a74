/* The diagnosis's candidate table (diagnose_cands.h): each candidate builds the outputs the implementation would
 * give with one defect, by re-running the case modified (diagnose_rerun.c) or transforming the golden's outputs;
 * false: not applicable to this case. Adding a candidate = its function here and its row in dg_cands (a diagnosis
 * of its own also needs its FR_DIAG_* in verdict.h). */
#include "verify/judge/diagnose_cands.h"
#include "verify/judge/plain_ref.h"

#include "core/core.h"
#include "core/validate.h"
#include "flashref_emulate.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* scale_value squared (applied twice), 1 (not at all), 1/sqrt(Dk) (the usual default instead of the given one). */
/* Modes 0 and 1: the user's mask alone (with mode 0's band) makes the pattern. */
static bool reads_mask_only(int mode) { return mode == FR_SPARSE_DEFAULT_MASK || mode == FR_SPARSE_ALL_MASK; }
/* Modes 2 and 3: causal from the top left or the bottom right. */
static bool is_causal(int mode) { return mode == FR_SPARSE_LEFT_UP_CAUSAL || mode == FR_SPARSE_RIGHT_DOWN_CAUSAL; }

static bool c_scale(const fr_diag_in *x, int arg, dg_cres *out) {
    fr_params p = x->c->params;
    double s = p.scale_value;
    double alt_s = arg == 0 ? s * s : arg == 1 ? 1.0 : 1.0 / sqrt((double)(x->pb->Dk + x->pb->Drope));
    if (!(fabs(alt_s - s) > 1e-3 * fabs(s))) return false;
    p.scale_value = alt_s;
    return dg_params_run(x, &p, out);
}

/* Band bounds +-1: arg bit 0 = which (0 pre_tokens, 1 next_tokens), bit 1 = sign (0: +1, 1: -1). Bands of sparse
 * modes 0 and 4; the causal modes 2 and 3 as the band of mode 4 they equal (next = S1 - S2 or 0), off by one. */
static bool c_band(const fr_diag_in *x, int arg, dg_cres *out) {
    fr_params p = x->c->params;
    const fr_problem *pb = x->pb;
    int64_t delta = (arg & 2) ? -1 : 1;
    bool next = arg & 1;
    if (!pb->has_mask) return false;
    int64_t lim = pb->S1 + pb->S2 + 2;
    if (p.sparse_mode == FR_SPARSE_DEFAULT_MASK || p.sparse_mode == FR_SPARSE_BAND) {
        int64_t *t = next ? &p.next_tokens : &p.pre_tokens;
        if (*t >= lim || *t <= -lim) return false; /* that side of the band is not active */
        *t += delta;
    } else if (is_causal(p.sparse_mode) && next && pb->layout != FR_TND) {
        p.next_tokens = (p.sparse_mode == FR_SPARSE_LEFT_UP_CAUSAL ? pb->S1 - pb->S2 : 0) + delta;
        p.pre_tokens = 2147483647;
        p.sparse_mode = FR_SPARSE_BAND;
    } else {
        return false;
    }
    return dg_params_run(x, &p, out);
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
static bool c_causal_align(const fr_diag_in *x, int arg, dg_cres *out) {
    (void)arg;
    fr_params p = x->c->params;
    if (!x->pb->has_mask || !s1_ne_s2(x) || !is_causal(p.sparse_mode)) return false;
    p.sparse_mode = p.sparse_mode == FR_SPARSE_LEFT_UP_CAUSAL ? FR_SPARSE_RIGHT_DOWN_CAUSAL : FR_SPARSE_LEFT_UP_CAUSAL;
    return dg_params_run(x, &p, out);
}

/* No mask, S1 < S2: keys past the query index ignored (a loop bound taken from the query length), i.e. top-left
 * causal (mode 2 with its 2048 x 2048 template). */
static bool c_query_bound(const fr_diag_in *x, int arg, dg_cres *out) {
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
    dg_alt a;
    dg_alt_init(&a, x);
    a.c.params.sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL;
    bool ok = dg_alt_own(&a, &a.c.in.fwd.atten_mask, m) && dg_run_golden(&a.c, out);
    dg_alt_free(&a);
    return ok;
}

/* pse_type 0 <-> 1 (pse added after vs before the scale). */
static bool c_pse_order(const fr_diag_in *x, int arg, dg_cres *out) {
    (void)arg;
    fr_params p = x->c->params;
    if (!x->pb->has_pse || fr_pse_type_is_slopes(p.pse_type) || fabs(p.scale_value - 1.0) < 1e-6) return false;
    p.pse_type = p.pse_type == FR_PSE_OUTER_MUL_ADD ? FR_PSE_OUTER_ADD_MUL : FR_PSE_OUTER_MUL_ADD;
    return dg_params_run(x, &p, out);
}

/* Dropout: kept weights scaled by 1/keep_prob twice (arg 0); not scaled at all (arg 1, forward: out x keep_prob);
 * the backward reading the drop bit of (i, j + 1) (arg 2). */
static bool c_dropout(const fr_diag_in *x, int arg, dg_cres *out) {
    const fr_problem *pb = x->pb;
    double kp = x->c->params.keep_prob;
    if (!pb->has_drop || !(kp < 1.0)) return false;
    if (arg == 0) {
        fr_params p = x->c->params;
        p.keep_prob = kp * kp;
        return dg_params_run(x, &p, out);
    }
    if (arg == 1) {
        if (x->c->op != FR_CASE_FWD || !dg_copy_golden(x, out)) return false;
        double f = 1.0 / (double)(1.0f / (float)kp);
        for (int64_t q = 0; q < out->n[FR_CO_ATTENTION_OUT]; q++)
            out->v[FR_CO_ATTENTION_OUT][q] *= f;
        return true;
    }
    if (x->c->op != FR_CASE_BWD || pb->layout == FR_TND) return false;
    const fr_tensor *dm = &x->c->in.fwd.drop_mask;
    int64_t nbits = pb->B * pb->N1 * pb->S1 * pb->S2, S2 = pb->S2;
    if (S2 <= 1 || fr_tensor_numel(dm) * 8 < nbits) return false;
    fr_tensor sh = dg_t_copy(dm);
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
    dg_alt a;
    dg_alt_init(&a, x);
    bool ok = dg_alt_own(&a, &a.c.in.fwd.drop_mask, sh) && dg_run_golden(&a.c, out);
    dg_alt_free(&a);
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
static bool c_gqa(const fr_diag_in *x, int arg, dg_cres *out) {
    const fr_problem *pb = x->pb;
    if (pb->G <= 1 || pb->fp8 || pb->topk_per_kv_head) return false;
    if (arg == 0 && pb->N2 <= 1) return false;
    if (arg > 0 && x->c->op != FR_CASE_BWD) return false;
    bool mod = arg == 0;
    dg_alt a;
    dg_alt_init(&a, x);
    fr_fwd_inputs *in = &a.c.in.fwd;
    fr_tensor t;
    bool ok = true;
    if (ok) ok = expand_heads(pb, &x->c->in.fwd.key, pb->Dk, mod, &t) == FR_OK && dg_alt_own(&a, &in->key, t);
    if (ok) ok = expand_heads(pb, &x->c->in.fwd.value, pb->Dv, mod, &t) == FR_OK && dg_alt_own(&a, &in->value, t);
    if (ok && pb->has_rope)
        ok = expand_heads(pb, &x->c->in.fwd.key_rope, pb->Drope, mod, &t) == FR_OK && dg_alt_own(&a, &in->key_rope, t);
    dg_cres e;
    ok = ok && dg_run_golden(&a.c, &e);
    dg_alt_free(&a);
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
    dg_cres_free(&e);
    if (!ok) dg_cres_free(out);
    return ok;
}

/* q.k over the first W floor(Dk / W) columns only (a vector loop with no tail): the query's tail columns zeroed. */
static bool c_head_dim(const fr_diag_in *x, int W, dg_cres *out) {
    const fr_problem *pb = x->pb;
    int64_t keep = W * (pb->Dk / W);
    if (pb->Dk % W == 0 || keep == 0 || pb->layout == FR_TND) return false;
    fr_tensor q = dg_t_copy(&x->c->in.fwd.query);
    if (!q.data) return false;
    for (int64_t b = 0; b < pb->B; b++)
        for (int64_t h = 0; h < pb->N1; h++)
            for (int64_t i = 0; i < pb->S1; i++)
                for (int64_t d = keep; d < pb->Dk; d++)
                    fr_store_f64(&q, fr_layout_offset(&q, pb->layout, pb->Dk, 0, b, h, i, d), 0.0);
    dg_alt a;
    dg_alt_init(&a, x);
    bool ok = dg_alt_own(&a, &a.c.in.fwd.query, q) && dg_run_golden(&a.c, out);
    dg_alt_free(&a);
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
        if (!reads_mask_only(p->sparse_mode)) return false;
        if (p->sparse_mode == FR_SPARSE_DEFAULT_MASK &&
            (p->pre_tokens < pb->S1 + pb->S2 || p->next_tokens < pb->S1 + pb->S2))
            return false;
        if (in->atten_mask.shape[in->atten_mask.ndim - 1] != pb->S2) return false;
    }
    if (pb->has_pse) {
        const fr_tensor *ps = &in->real_shift;
        if (fr_pse_type_is_slopes(p->pse_type) || ps->ndim != 4 || ps->shape[3] != pb->S2 ||
            (ps->shape[2] != pb->S1 && ps->shape[2] != 1))
            return false;
    }
    return true;
}

/* The case restricted to keys [j0, j1). */
static bool run_keys(const fr_diag_in *x, int64_t j0, int64_t j1, dg_cres *out) {
    dg_alt a;
    dg_alt_init(&a, x);
    fr_fwd_inputs *in = &a.c.in.fwd;
    const fr_fwd_inputs *o = &x->c->in.fwd;
    int sd = dg_seq_dim(x->pb->layout);
    bool ok = dg_alt_own(&a, &in->key, dg_t_slice(&o->key, sd, j0, j1)) &&
              dg_alt_own(&a, &in->value, dg_t_slice(&o->value, sd, j0, j1));
    if (ok && x->pb->has_rope) ok = dg_alt_own(&a, &in->key_rope, dg_t_slice(&o->key_rope, sd, j0, j1));
    if (ok && x->pb->has_mask)
        ok = dg_alt_own(&a, &in->atten_mask, dg_t_slice(&o->atten_mask, o->atten_mask.ndim - 1, j0, j1));
    if (ok && x->pb->has_pse) ok = dg_alt_own(&a, &in->real_shift, dg_t_slice(&o->real_shift, 3, j0, j1));
    ok = ok && dg_run_golden(&a.c, out);
    dg_alt_free(&a);
    return ok;
}

/* The last key dropped (arg 0), or the partial last key tile of T keys skipped (arg T). */
static bool c_key_tail(const fr_diag_in *x, int T, dg_cres *out) {
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
static bool c_no_rescale(const fr_diag_in *x, int arg, dg_cres *out) {
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
        dg_cres c;
        int64_t j1 = (t + 1) * T < S2 ? (t + 1) * T : S2;
        if (!(ok = run_keys(x, t * T, j1, &c))) break;
        const double *o = c.v[FR_CO_ATTENTION_OUT], *m = c.v[FR_CO_SOFTMAX_MAX], *l = c.v[FR_CO_SOFTMAX_SUM];
        if (!o || !m || !l) {
            dg_cres_free(&c);
            ok = false;
            break;
        }
        for (int64_t r = 0; r < R; r++) {
            double mt = m[so[r]], lt = l[so[r]];
            if (dg_is_d1_max(mt) || !isfinite(mt) || !(lt > 0)) continue;
            double Mn = fmax(M[r], mt), w = exp(mt - Mn) * lt;
            double a = isfinite(M[r]) ? exp(M[r] - Mn) : 0.0;
            for (int64_t d = 0; d < D; d++)
                acc[r * D + d] += w * o[oo[r] + d];
            L[r] = L[r] * a + w; /* the row sum, rescaled */
            L2[r] += w;          /* the row sum, not rescaled */
            M[r] = Mn;
        }
        dg_cres_free(&c);
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
static bool c_out_zero(const fr_diag_in *x, int arg, dg_cres *out) {
    const fr_problem *pb = x->pb;
    int64_t R = x->nrows, D = pb->Dv;
    if (x->c->op != FR_CASE_FWD || R <= 0 || D <= 0) return false;
    if (arg < 0 && (D % -arg == 0 || D < -arg)) return false;
    int64_t *oo = malloc(sizeof(int64_t) * (size_t)R * 4);
    if (!oo) return false;
    int64_t *so = oo + R, *qi = so + R, *ql = qi + R;
    bool ok = row_maps(x, oo, so, qi, ql) && dg_copy_golden(x, out), any = false, kept = arg < 0;
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
static bool c_numerics(const fr_diag_in *x, int arg, dg_cres *out) {
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
    return dg_run_alt(x->c, &e, false, out);
}

/* A textbook attention in the input dtype (scores and P in bf16 / fp16, the softmax on 16-bit scores: FlashAttention's
 * own test baseline, PyTorch's math attention on 16-bit tensors): the plain reference in the input dtype
 * (fr_plain_fwd_native / _bwd_native). 16-bit inputs only (for fp32 it is the plain reference itself). */
static bool c_native(const fr_diag_in *x, int style, dg_cres *out) {
    if (x->pb->dtype != FR_BF16 && x->pb->dtype != FR_F16) return false;
    if (style == FR_PLAIN_SCALE_Q && x->pb->has_pse && x->pb->pse_type == FR_PSE_OUTER_ADD_MUL) return false; /* (s + pse) scale */
    return dg_run_alt_native(x->c, NULL, style, false, out);
}

/* Backward outputs: dq (arg 0) or dk (arg 1) without the scale, or (arg 2, 3) with it twice. */
static bool c_grad_scale(const fr_diag_in *x, int arg, dg_cres *out) {
    double s = x->c->params.scale_value;
    if (x->c->op != FR_CASE_BWD || !(fabs(s - 1.0) > 1e-3) || s == 0 || !dg_copy_golden(x, out)) return false;
    int k = arg % 2 == 0 ? FR_CO_DQ : FR_CO_DK;
    double f = arg < 2 ? 1.0 / s : s;
    if (!out->v[k]) return false;
    for (int64_t q = 0; q < out->n[k]; q++)
        out->v[k][q] *= f;
    return true;
}

/* dpsum D = rowsum(dO * O) from dO alone: O replaced by ones (arg 0, D = rowsum(dO)), by dO (arg 1, D = |dO|^2), by
 * zeros (arg 2, D = 0). */
static bool c_dpsum(const fr_diag_in *x, int arg, dg_cres *out) {
    if (x->c->op != FR_CASE_BWD) return false;
    const fr_tensor *ai = &x->c->in.attention_in;
    fr_tensor t = arg == 1 ? dg_t_copy(&x->c->in.dy) : dg_t_copy(ai);
    if (!t.data) return false;
    if (arg != 1)
        for (int64_t q = 0; q < fr_tensor_numel(&t); q++)
            fr_store_f64(&t, q, arg == 0 ? 1.0 : 0.0);
    dg_alt a;
    dg_alt_init(&a, x);
    bool ok = dg_alt_own(&a, &a.c.in.attention_in, t) && dg_run_golden(&a.c, out);
    dg_alt_free(&a);
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
static bool c_index32(const fr_diag_in *x, int arg, dg_cres *out) {
    (void)arg;
    const fr_fwd_inputs *o = &x->c->in.fwd;
    const fr_tensor *src[3] = {&o->query, &o->key, &o->value};
    bool any = false;
    for (int k = 0; k < 3; k++)
        any |= max_offset(src[k]) >= ((int64_t)1 << 31);
    if (!any) return false;
    dg_alt a;
    dg_alt_init(&a, x);
    fr_tensor *dst[3] = {&a.c.in.fwd.query, &a.c.in.fwd.key, &a.c.in.fwd.value};
    bool ok = true;
    for (int k = 0; k < 3 && ok; k++) {
        if (max_offset(src[k]) < ((int64_t)1 << 31)) continue;
        wrap_ctx w = {src[k]};
        ok = dg_alt_own(&a, dst[k], dg_t_remap(src[k], src[k]->ndim, src[k]->shape, wrap_map, &w));
    }
    ok = ok && dg_run_golden(&a.c, out);
    dg_alt_free(&a);
    return ok;
}

/* The mask applied as a finite additive sentinel (score - 10000) instead of excluding the position: a user mask of
 * sparse mode 0/1 ([S1, S2] or [B|1, N1|1, S1, S2]) turned into a type-0 pse, added to the case's own. */
static bool c_sentinel(const fr_diag_in *x, int arg, dg_cres *out) {
    (void)arg;
    const fr_problem *pb = x->pb;
    const fr_params *p = &x->c->params;
    const fr_fwd_inputs *in = &x->c->in.fwd;
    if (!pb->has_mask || !reads_mask_only(p->sparse_mode) || pb->layout == FR_TND || pb->has_topk || pb->fp8)
        return false;
    if (p->sparse_mode == FR_SPARSE_DEFAULT_MASK &&
        (p->pre_tokens < pb->S1 + pb->S2 || p->next_tokens < pb->S1 + pb->S2))
        return false;
    if (pb->has_pse && (p->pse_type != FR_PSE_OUTER_MUL_ADD || in->real_shift.ndim != 4 ||
                        in->real_shift.shape[2] != pb->S1 || in->real_shift.shape[3] != pb->S2))
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
    dg_alt a;
    dg_alt_init(&a, x);
    a.c.params.pse_type = FR_PSE_OUTER_MUL_ADD;
    a.c.params.sparse_mode = FR_SPARSE_DEFAULT_MASK;
    memset(&a.c.in.fwd.atten_mask, 0, sizeof a.c.in.fwd.atten_mask);
    bool ok = dg_alt_own(&a, &a.c.in.fwd.real_shift, ps) && dg_run_golden(&a.c, out);
    dg_alt_free(&a);
    return ok;
}

/* Varlen: a sequence with no queries skipped before its keys are counted: batch b reads its s2_b keys from the end of
 * the last earlier batch that has queries (0 for none). */
static bool c_varlen_offset(const fr_diag_in *x, int arg, dg_cres *out) {
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
    dg_alt a;
    dg_alt_init(&a, x);
    const fr_fwd_inputs *o = &x->c->in.fwd;
    const fr_tensor *src[3] = {&o->key, &o->value, &o->key_rope};
    fr_tensor *dst[3] = {&a.c.in.fwd.key, &a.c.in.fwd.value, &a.c.in.fwd.key_rope};
    bool ok = true;
    for (int t = 0; t < 3 && ok; t++) {
        if (!fr_tensor_present(src[t])) continue;
        fr_tensor sc = dg_t_copy(src[t]), dc = dg_t_copy(src[t]);
        ok = sc.data && dg_alt_own(&a, dst[t], dc);
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
    ok = ok && dg_run_golden(&a.c, out);
    dg_alt_free(&a);
    return ok;
}

const dg_cand dg_cands[] = {
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
    {"scores in the dtype, (q.k)s", FR_DIAG_NATIVE_DTYPE, 7, c_native, FR_PLAIN_SCALE_AFTER},
    {"scores in the dtype, (qs).k", FR_DIAG_NATIVE_DTYPE, 7, c_native, FR_PLAIN_SCALE_Q},
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

const size_t dg_ncands = sizeof dg_cands / sizeof dg_cands[0];
_Static_assert(sizeof dg_cands / sizeof dg_cands[0] <= DG_MAX_CANDS, "DG_MAX_CANDS: too small for the table");
