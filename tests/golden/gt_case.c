/* The golden tests' case builder and element access (declared, with their contracts, in gt_case.h). */
#include "golden/gt_case.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

fr_tensor gt_tensor(fr_dtype dt, int ndim, const int64_t *shape, int strided, uint64_t *r) {
    fr_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.ndim = ndim;
    int perm[FR_MAX_DIMS];
    for (int k = 0; k < ndim; k++) perm[k] = k;
    if (strided)
        for (int k = ndim - 1; k > 0; k--) {
            int o = (int)fr_test_below(r, k + 1), tmp = perm[k];
            perm[k] = perm[o];
            perm[o] = tmp;
        }
    int64_t s = 1;
    for (int k = ndim - 1; k >= 0; k--) {
        t.shape[perm[k]] = shape[perm[k]];
        t.strides[perm[k]] = s;
        s *= shape[perm[k]] + (strided ? 1 : 0);
    }
    size_t es = fr_dtype_size(dt);
    t.data = calloc((size_t)(s > 0 ? s : 1), es ? es : 1);
    return t;
}

void gt_free(fr_tensor *t) {
    free(t->data);
    memset(t, 0, sizeof *t);
}

double gt_get_off(const fr_tensor *t, int64_t o) {
    switch (t->dtype) {
    case FR_F64: return ((const double *)t->data)[o];
    case FR_F32: return ((const float *)t->data)[o];
    case FR_F16: return fr_f16_to_f32(((const uint16_t *)t->data)[o]);
    case FR_BF16: return fr_bf16_to_f32(((const uint16_t *)t->data)[o]);
    case FR_E4M3FN: return fr_e4m3fn_to_f32(((const uint8_t *)t->data)[o]);
    case FR_E5M2: return fr_e5m2_to_f32(((const uint8_t *)t->data)[o]);
    case FR_HIF8: return fr_hif8_to_f32(((const uint8_t *)t->data)[o]);
    case FR_I32: return ((const int32_t *)t->data)[o];
    case FR_I64: return (double)((const int64_t *)t->data)[o];
    case FR_U8:
    case FR_BOOL: return ((const uint8_t *)t->data)[o];
    default: return NAN;
    }
}

double gt_get(const fr_tensor *t, const int64_t *idx) { return gt_get_off(t, gt_off(t, idx)); }

double gt_normwise(const fr_tensor *a, const fr_tensor *r, double floor_) {
    if (!fr_tensor_present(r)) return 0.0;
    int64_t idx[FR_MAX_DIMS] = {0}, n = gt_numel(r);
    double emax = 0, rmax = 0;
    for (int64_t e = 0; e < n; e++) {
        double av = gt_get(a, idx), rv = gt_get(r, idx);
        if (isfinite(rv) && fabs(rv) > rmax) rmax = fabs(rv);
        if (!isfinite(av) || !isfinite(rv)) {
            if (!(av == rv)) emax = INFINITY;
        } else if (fabs(av - rv) > emax) {
            emax = fabs(av - rv);
        }
        for (int k = r->ndim - 1; k >= 0; k--) {
            if (++idx[k] < r->shape[k]) break;
            idx[k] = 0;
        }
    }
    rmax = fmax(rmax, floor_);
    return rmax > 0 ? emax / rmax : emax;
}

void gt_put_off(const fr_tensor *t, int64_t o, double v) {
    float f = (float)v;
    switch (t->dtype) {
    case FR_F64: ((double *)t->data)[o] = v; break;
    case FR_F32: ((float *)t->data)[o] = f; break;
    case FR_F16: ((uint16_t *)t->data)[o] = fr_f32_to_f16(f, FR_ROUND_NEAREST_EVEN, FR_SAT); break;
    case FR_BF16: ((uint16_t *)t->data)[o] = fr_f32_to_bf16(f, FR_ROUND_NEAREST_EVEN, FR_SAT); break;
    case FR_E4M3FN: ((uint8_t *)t->data)[o] = fr_f32_to_e4m3fn(f, FR_ROUND_NEAREST_EVEN, FR_SAT); break;
    case FR_E5M2: ((uint8_t *)t->data)[o] = fr_f32_to_e5m2(f, FR_ROUND_NEAREST_EVEN, FR_SAT); break;
    case FR_HIF8: ((uint8_t *)t->data)[o] = fr_f32_to_hif8(f, FR_ROUND_HALF_AWAY, FR_SAT); break;
    case FR_I32: ((int32_t *)t->data)[o] = (int32_t)v; break;
    case FR_I64: ((int64_t *)t->data)[o] = (int64_t)v; break;
    case FR_U8:
    case FR_BOOL: ((uint8_t *)t->data)[o] = (uint8_t)v; break;
    default: break;
    }
}

void gt_put(const fr_tensor *t, const int64_t *idx, double v) { gt_put_off(t, gt_off(t, idx), v); }

void gt_fill_uniform(fr_tensor *t, uint64_t *r, double lo, double hi) {
    int64_t idx[FR_MAX_DIMS] = {0}, n = gt_numel(t);
    for (int64_t e = 0; e < n; e++) {
        gt_put(t, idx, lo + (hi - lo) * fr_test_unif(r));
        for (int k = t->ndim - 1; k >= 0; k--) {
            if (++idx[k] < t->shape[k]) break;
            idx[k] = 0;
        }
    }
}

void gt_fill_nan_raw(fr_tensor *t) {
    int64_t ext = 1;
    for (int k = 0; k < t->ndim; k++) {
        int64_t e = (t->shape[k] - 1) * t->strides[k] + 1;
        if (t->shape[k] == 0) return;
        if (e > ext) ext = e;
    }
    int64_t span = 0;
    for (int k = 0; k < t->ndim; k++) span += (t->shape[k] - 1) * t->strides[k];
    for (int64_t o = 0; o <= span; o++) {
        if (t->dtype == FR_F64) ((double *)t->data)[o] = NAN;
        else if (t->dtype == FR_F32) ((float *)t->data)[o] = NAN;
        else if (t->dtype == FR_F16 || t->dtype == FR_BF16) ((uint16_t *)t->data)[o] = 0x7FFF;
    }
}

void gt_lidx(const gt_case *c, int kv, int64_t b, int64_t n, int64_t i, int64_t d, int64_t D, int64_t *idx) {
    switch (c->L) {
    case FR_BSH: idx[0] = b, idx[1] = i, idx[2] = n * D + d; break;
    case FR_SBH: idx[0] = i, idx[1] = b, idx[2] = n * D + d; break;
    case FR_BSND: idx[0] = b, idx[1] = i, idx[2] = n, idx[3] = d; break;
    case FR_BNSD: idx[0] = b, idx[1] = n, idx[2] = i, idx[3] = d; break;
    default: idx[0] = (kv ? gt_kv0(c, b) : gt_q0(c, b)) + i, idx[1] = n, idx[2] = d; break;
    }
}

int gt_shape(const gt_case *c, int kv, int64_t N, int64_t D, int64_t *sh) {
    return fr_gen_qkv_shape(c->L, c->B, N, kv ? c->S2 : c->S1, kv ? c->T2 : c->T1, D, sh);
}

double gt_qkv(const gt_case *c, const fr_tensor *t, int kv, int64_t b, int64_t n, int64_t i, int64_t d,
              int64_t D) {
    int64_t idx[4];
    gt_lidx(c, kv, b, n, i, d, D, idx);
    return gt_get(t, idx);
}

void gt_sidx(const gt_case *c, int64_t b, int64_t h, int64_t i, int64_t k, int64_t *idx) {
    if (c->L == FR_TND) {
        if (c->p.softmax_layout == FR_SOFTMAX_SAME_AS_INPUT) idx[0] = gt_q0(c, b) + i, idx[1] = h, idx[2] = k;
        else idx[0] = h, idx[1] = gt_q0(c, b) + i, idx[2] = k;
    } else {
        idx[0] = b, idx[1] = h, idx[2] = i, idx[3] = k;
    }
}

void gt_set_lengths(gt_case *c) {
    int64_t aq, ak, mq, mk;
    for (int64_t b = 0; c->L != FR_TND && b < c->B; b++) c->lq[b] = c->S1, c->lkv[b] = c->S2;
    fr_gen_tnd_lengths(c->B, c->lq, c->lkv, c->cuq, c->cukv, &mq, &mk, &aq, &ak);
    if (c->L == FR_TND) {
        c->S1 = mq, c->S2 = mk, c->T1 = aq, c->T2 = ak;
        c->p.actual_seq_qlen = c->cuq;
        c->p.actual_seq_kvlen = c->cukv;
        c->p.actual_seq_len = c->B;
    } else {
        c->T1 = c->B * c->S1, c->T2 = c->B * c->S2;
    }
}

fr_tensor gt_compressed_mask(int mode) {
    int64_t sh[2];
    int nd = fr_gen_mask_shape(FR_GEN_MASK_CANONICAL, mode, 0, 0, 0, 0, sh);
    fr_tensor t = gt_tensor(FR_U8, nd, sh, 0, NULL);
    fr_gen_canonical_mask(sh, (uint8_t *)t.data);
    return t;
}

void gt_draw_start(gt_case *c, gt_opts *o, uint64_t *r) {
    memset(c, 0, sizeof *c);
    memset(o, 0, sizeof *o);
    c->p = fr_params_default();
    const fr_layout Ls[5] = {FR_BSH, FR_SBH, FR_BSND, FR_BNSD, FR_TND};
    c->L = Ls[fr_test_below(r, 5)];
}

void gt_draw_topk(gt_case *c, gt_opts *o, uint64_t *r, int64_t w_max) {
    if (fr_test_below(r, 4) == 0) {
        o->topk = 1;
        o->topk_kv = (int)fr_test_below(r, 2);
        c->W = fr_test_range(r, 1, w_max);
    }
}

void gt_draw_semantics(gt_case *c, gt_opts *o, uint64_t *r, int64_t band_max) {
    if (fr_test_below(r, 2)) {
        o->mask = 1;
        /* modes 7 and 8 are TND only */
        c->p.sparse_mode =
            (int)fr_test_below(r, c->L == FR_TND ? FR_SPARSE_MODE_COUNT : FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND);
        o->mask_shape = FR_GEN_MASK_SS + (int)fr_test_below(r, 4); /* SS, 11SS, B1SS, BNSS */
        o->mask_density = 0.3;
        if (c->p.sparse_mode == FR_SPARSE_DEFAULT_MASK || c->p.sparse_mode == FR_SPARSE_BAND) {
            c->p.pre_tokens = fr_test_range(r, 0, band_max);
            c->p.next_tokens = fr_test_range(r, 0, band_max);
        }
    }
    if (fr_test_below(r, 3) == 0) {
        o->pse = 1;
        c->p.pse_type = (int)fr_test_below(r, FR_PSE_TYPE_COUNT);
        /* types 2/3: SLOPES_BN, SLOPES_N; 0/1: BNSS, BN1S, 1NSS */
        bool slopes = c->p.pse_type >= FR_PSE_INNER_MUL_ADD;
        o->pse_shape = (slopes ? FR_GEN_PSE_SLOPES_BN : FR_GEN_PSE_BNSS) + (int)fr_test_below(r, slopes ? 2 : 3);
        if (c->p.pse_type >= FR_PSE_INNER_MUL_ADD) {
            c->S2 = c->S1;
            for (int64_t b = 0; b < c->B; b++) c->lkv[b] = c->lq[b] > 0 ? c->lq[b] : 1;
        }
    }
    if (fr_test_below(r, 3) == 0) {
        o->drop = 1;
        c->p.keep_prob = 0.75;
    }
    o->sink = fr_test_below(r, 3) == 0;
    o->rope = fr_test_below(r, 4) == 0;
}

/* A q/k/v-like input of the case's dtype and layout, N heads of dim D, uniform in [-amp, amp]. */
static fr_tensor qkv_input(const gt_case *c, int kv, int64_t N, int64_t D, double amp, uint64_t *r) {
    int64_t sh[FR_MAX_DIMS];
    int nd = gt_shape(c, kv, N, D, sh);
    fr_tensor t = gt_tensor(c->dt, nd, sh, c->strided, r);
    gt_fill_uniform(&t, r, -amp, amp);
    return t;
}

void gt_make_inputs(gt_case *c, const gt_opts *o, uint64_t *r) {
    int64_t sh[FR_MAX_DIMS];
    int nd;
    fr_fwd_inputs *in = &c->in;
    memset(in, 0, sizeof *in);
    c->G = c->N2 ? c->N1 / c->N2 : 1;
    gt_set_lengths(c);
    c->p.input_layout = c->L;
    c->p.head_num = c->N1;
    double amp = o->amp > 0 ? o->amp : 1.0;
    int fp8 = c->dt == FR_E4M3FN || c->dt == FR_E5M2 || c->dt == FR_HIF8;
    in->query = qkv_input(c, 0, c->N1, c->Dk, amp, r);
    in->key = qkv_input(c, 1, c->N2, c->Dk, amp, r);
    in->value = qkv_input(c, 1, c->N2, c->Dv, amp, r);
    if (o->rope) {
        in->query_rope = qkv_input(c, 0, c->N1, c->Dr, amp, r);
        in->key_rope = qkv_input(c, 1, c->N2, c->Dr, amp, r);
    } else {
        c->Dr = 0;
    }
    if (fp8) {
        int64_t s4[4];
        in->d_scale_q = gt_tensor(FR_F32, fr_gen_dscale_shape(c->B, c->N1, c->S1, 128, s4), s4, 0, r);
        gt_fill_uniform(&in->d_scale_q, r, 0.5, 2.0);
        fr_gen_dscale_shape(c->B, c->N2, c->S2, 256, s4);
        in->d_scale_k = gt_tensor(FR_F32, 4, s4, 0, r);
        gt_fill_uniform(&in->d_scale_k, r, 0.5, 2.0);
        in->d_scale_v = gt_tensor(FR_F32, 4, s4, 0, r);
        gt_fill_uniform(&in->d_scale_v, r, 0.5, 2.0);
    }
    const int mode = c->p.sparse_mode;
    if (o->mask) {
        if (!fr_gen_mask_compressed(mode)) {
            fr_gen_mask s = o->mask_shape >= FR_GEN_MASK_SS ? o->mask_shape : FR_GEN_MASK_SS;
            if (c->L == FR_TND && s > FR_GEN_MASK_11SS) s = FR_GEN_MASK_11SS;
            if (mode == FR_SPARSE_PREFIX && c->B != 1 && s < FR_GEN_MASK_B1SS) s = FR_GEN_MASK_B1SS;
            nd = fr_gen_mask_shape(s, mode, c->B, c->N1, c->S1, c->S2, sh);
            in->atten_mask = gt_tensor(fr_test_below(r, 2) ? FR_BOOL : FR_U8, nd, sh, c->strided, r);
            int64_t idx[4] = {0}, n = gt_numel(&in->atten_mask);
            int64_t full_row = fr_test_below(r, c->S1 + 1); /* one row fully masked now and then (D1) */
            for (int64_t e = 0; e < n; e++) {
                int64_t i = idx[nd - 2];
                gt_put(&in->atten_mask, idx, (i == full_row || fr_test_unif(r) < o->mask_density) ? 1.0 : 0.0);
                for (int k = nd - 1; k >= 0; k--) {
                    if (++idx[k] < in->atten_mask.shape[k]) break;
                    idx[k] = 0;
                }
            }
        } else {
            const fr_tensor *sm = mode == FR_SPARSE_PREFIX_COMPRESS ? o->cmask6 : o->cmask;
            if (sm) {
                in->atten_mask = *sm;
                c->mask_shared = 1;
            } else {
                in->atten_mask = gt_compressed_mask(mode);
            }
        }
        if (mode == FR_SPARSE_PREFIX || mode == FR_SPARSE_PREFIX_COMPRESS) {
            for (int64_t b = 0; b < c->B; b++) {
                int64_t lo, hi;
                fr_gen_prefix_range(c->lq[b], c->lkv[b], &lo, &hi);
                c->prefix[b] = fr_test_range(r, lo, hi);
            }
            c->p.prefix = c->prefix;
            c->p.prefix_len = c->B;
        }
    }
    if (o->pse) {
        const bool slopes = c->p.pse_type >= FR_PSE_INNER_MUL_ADD;
        fr_gen_pse s = o->pse_shape != FR_GEN_PSE_NONE ? o->pse_shape
                       : slopes                         ? FR_GEN_PSE_SLOPES_BN
                                                        : FR_GEN_PSE_BNSS;
        nd = fr_gen_pse_shape(s, c->B, c->N1, c->S1, c->S2, sh);
        in->real_shift = gt_tensor(fr_gen_pse_dtype(s, c->dt), nd, sh, c->strided, r);
        if (slopes) {
            gt_fill_uniform(&in->real_shift, r, 0.0, 1.0);
        } else if (s == FR_GEN_PSE_COMP_B || s == FR_GEN_PSE_COMP_1) {
            /* compressed ALiBi: the last 1024 rows of a Toeplitz [S, S] matrix, value f(j - i) */
            int64_t S = c->S2, R = 1024;
            double *f = (double *)malloc((size_t)(S + R + 1) * sizeof(double));
            for (int64_t k = 0; k <= S + R; k++) f[k] = -amp * fr_test_unif(r);
            int64_t idx[4];
            for (idx[0] = 0; idx[0] < sh[0]; idx[0]++)
                for (idx[1] = 0; idx[1] < sh[1]; idx[1]++)
                    for (idx[2] = 0; idx[2] < R; idx[2]++)
                        for (idx[3] = 0; idx[3] < S; idx[3]++)
                            gt_put(&in->real_shift, idx, f[idx[3] - (S - R + idx[2]) + S]);
            free(f);
        } else {
            gt_fill_uniform(&in->real_shift, r, -amp, amp);
        }
    }
    if (o->drop) {
        int64_t bits = 0;
        for (int64_t b = 0; b < c->B; b++) bits += c->N1 * c->lq[b] * c->lkv[b];
        int64_t nb = (bits + 7) / 8 + 1;
        in->drop_mask = gt_tensor(FR_U8, 1, &nb, c->strided, r);
        for (int64_t k = 0; k < nb; k++) gt_put(&in->drop_mask, &k, (double)(fr_test_rand(r) & 0xFF));
    }
    if (o->sink) {
        in->sink = gt_tensor(FR_F32, 1, &c->N1, c->strided, r);
        gt_fill_uniform(&in->sink, r, -2.0, 2.0);
    }
    if (o->topk) {
        c->topk_kv = o->topk_kv;
        nd = fr_gen_topk_shape(c->L, o->topk_kv, c->B, c->N2, c->S1, c->T1, c->W, sh);
        in->topk_indices = gt_tensor(FR_I32, nd, sh, c->strided, r);
        int64_t idx[4] = {0}, n = gt_numel(&in->topk_indices);
        for (int64_t e = 0; e < n; e++) {
            /* the batch of this row, for the key range */
            int64_t b = 0;
            if (c->L == FR_TND) {
                while (b < c->B - 1 && idx[0] >= c->cuq[b]) b++;
            } else {
                b = idx[0];
            }
            int64_t s2 = c->lkv[b];
            /* keys, -1 sentinels, out-of-range indices, duplicates (small range) */
            int64_t v = fr_test_range(r, -1, s2 + 1);
            if (fr_test_below(r, 5) == 0) v = -1;
            gt_put(&in->topk_indices, idx, (double)v);
            for (int k = nd - 1; k >= 0; k--) {
                if (++idx[k] < in->topk_indices.shape[k]) break;
                idx[k] = 0;
            }
        }
    }
}

fr_dtype gt_op_dtype(const gt_case *c) {
    int fp8 = c->dt == FR_E4M3FN || c->dt == FR_E5M2 || c->dt == FR_HIF8;
    if (!fp8) return c->dt;
    return c->p.out_dtype == FR_DT_NONE ? FR_F16 : c->p.out_dtype;
}

/* The fp64 gradient of a q/k/v-like input (N heads of dim D), NaN-prefilled so that an unwritten element shows. */
static fr_tensor qkv_grad(const gt_case *c, int kv, int64_t N, int64_t D, uint64_t *r) {
    int64_t sh[FR_MAX_DIMS];
    int nd = gt_shape(c, kv, N, D, sh);
    fr_tensor t = gt_tensor(FR_F64, nd, sh, c->strided, r);
    gt_fill_nan_raw(&t);
    return t;
}

void gt_make_outputs(gt_case *c, int bwd, uint64_t *r) {
    int64_t sh[FR_MAX_DIMS];
    int nd = gt_shape(c, 0, c->N1, c->Dv, sh);
    c->out = gt_tensor(FR_F64, nd, sh, c->strided, r);
    nd = fr_gen_stats_shape(c->L, c->p.softmax_layout, c->B, c->N1, c->S1, c->T1, sh);
    c->smax = gt_tensor(FR_F64, nd, sh, c->strided, r);
    c->ssum = gt_tensor(FR_F64, nd, sh, c->strided, r);
    gt_fill_nan_raw(&c->out);
    gt_fill_nan_raw(&c->smax);
    gt_fill_nan_raw(&c->ssum);
    if (!bwd) return;
    /* dy and attention_in are of the operator's dtype (validation asks for it); fp8: out_dtype, fp16 by default */
    nd = gt_shape(c, 0, c->N1, c->Dv, sh);
    c->dy = gt_tensor(gt_op_dtype(c), nd, sh, c->strided, r);
    gt_fill_uniform(&c->dy, r, -1.0, 1.0);
    c->ain = gt_tensor(gt_op_dtype(c), nd, sh, c->strided, r);
    c->dq = qkv_grad(c, 0, c->N1, c->Dk, r);
    c->dk = qkv_grad(c, 1, c->N2, c->Dk, r);
    c->dv = qkv_grad(c, 1, c->N2, c->Dv, r);
    if (c->Dr) {
        c->dqr = qkv_grad(c, 0, c->N1, c->Dr, r);
        c->dkr = qkv_grad(c, 1, c->N2, c->Dr, r);
    }
    if (fr_tensor_present(&c->in.sink)) {
        c->dsink = gt_tensor(FR_F64, 1, &c->N1, 0, r);
        gt_fill_nan_raw(&c->dsink);
    }
}

fr_status gt_run_fwd_isa(gt_case *c, fr_isa isa, int threads, fr_error *err) {
    fr_fwd_outputs o = {c->out, c->smax, c->ssum};
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    e.num_threads = threads;
    e.isa = isa;
    return fr_fwd(&c->p, &c->in, &o, &e, err);
}

fr_status gt_run_fwd(gt_case *c, int threads, fr_error *err) { return gt_run_fwd_isa(c, FR_ISA_AUTO, threads, err); }

fr_status gt_run_bwd_isa(gt_case *c, fr_isa isa, int threads, fr_error *err) {
    int64_t idx[FR_MAX_DIMS] = {0}, n = gt_numel(&c->out);
    for (int64_t e = 0; e < n; e++) {
        gt_put(&c->ain, idx, gt_get(&c->out, idx));
        for (int k = c->out.ndim - 1; k >= 0; k--) {
            if (++idx[k] < c->out.shape[k]) break;
            idx[k] = 0;
        }
    }
    fr_bwd_inputs bi;
    memset(&bi, 0, sizeof bi);
    bi.fwd = c->in;
    bi.dy = c->dy;
    bi.attention_in = c->ain;
    bi.softmax_max = c->smax;
    bi.softmax_sum = c->ssum;
    fr_bwd_outputs bo;
    memset(&bo, 0, sizeof bo);
    bo.dq = c->dq, bo.dk = c->dk, bo.dv = c->dv, bo.dq_rope = c->dqr, bo.dk_rope = c->dkr, bo.dsink = c->dsink;
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    e.num_threads = threads;
    e.isa = isa;
    return fr_bwd(&c->p, &bi, &bo, &e, err);
}

fr_status gt_run_bwd(gt_case *c, int threads, fr_error *err) { return gt_run_bwd_isa(c, FR_ISA_AUTO, threads, err); }

void gt_case_free(gt_case *c) {
    if (c->mask_shared) memset(&c->in.atten_mask, 0, sizeof c->in.atten_mask);
    fr_tensor *ts[] = {&c->in.query, &c->in.key, &c->in.value, &c->in.real_shift, &c->in.drop_mask,
                       &c->in.atten_mask, &c->in.d_scale_q, &c->in.d_scale_k, &c->in.d_scale_v, &c->in.query_rope,
                       &c->in.key_rope, &c->in.sink, &c->in.topk_indices, &c->out, &c->smax, &c->ssum, &c->dy, &c->ain,
                       &c->dq, &c->dk, &c->dv, &c->dqr, &c->dkr, &c->dsink};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++)
        gt_free(ts[k]);
}

void gt_base_case(gt_case *c, fr_layout L, int64_t B, int64_t N1, int64_t N2, int64_t S1, int64_t S2, int64_t Dk,
                  int64_t Dv) {
    memset(c, 0, sizeof *c);
    c->p = fr_params_default();
    c->L = L, c->dt = FR_F32, c->B = B, c->N1 = N1, c->N2 = N2, c->S1 = S1, c->S2 = S2, c->Dk = Dk, c->Dv = Dv;
    c->p.scale_value = 0.5;
}
