/* The kernel tests' problem builder and their independent references (declared, with their contracts, in
 * kt_harness.h). */
#include "kt_harness.h"

#include "common/check.h"
#include "core/validate.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const kt_case kt_base_case = {.name = "", .layout = FR_BNSD, .dt = FR_F32, .B = 1, .N1 = 2, .N2 = 1, .S1 = 65,
                              .S2 = 130, .Dk = 32, .Dv = 32, .pre = FR_TOKENS_MAX, .next = FR_TOKENS_MAX,
                              .mask_density = 0.3, .pse_type = FR_PSE_OUTER_ADD_MUL, .keep_prob = 1.0, .scale = 0.25,
                              .amp = 1.0};

double kt_round_dt(fr_dtype dt, double v) {
    if (dt == FR_BF16) return fr_dec_bf16(fr_enc_bf16_away((float)v));
    if (dt == FR_F16) return fr_dec_f16(fr_enc_f16_away((float)v));
    return (double)(float)v;
}

fr_tensor kt_alloc(fr_dtype dt, int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int k = 0; k < ndim; k++) n *= shape[k];
    void *d = calloc((size_t)(n > 0 ? n : 1), fr_dtype_size(dt));
    return fr_tensor_make(dt, d, ndim, shape);
}

void kt_fill_nan(const fr_tensor *t) {
    int64_t n = kt_numel(t);
    if (t->dtype == FR_F32 || t->dtype == FR_F64 || t->dtype == FR_F16 || t->dtype == FR_BF16)
        for (int64_t k = 0; k < n; k++) fr_store_f64(t, k, NAN);
}

double kt_rel_l2(const fr_tensor *a, const fr_tensor *g, int64_t *nnan) {
    double e2 = 0, r2 = 0;
    for (int64_t k = 0; k < kt_numel(a); k++) {
        double x = kt_get(a, k), r = kt_get(g, k);
        if (isnan(x) || isnan(r)) {
            (*nnan)++;
            continue;
        }
        e2 += (x - r) * (x - r), r2 += r * r;
    }
    return r2 > 0 ? sqrt(e2 / r2) : sqrt(e2);
}

fr_tensor kt_qkv(const kt_case *c, fr_dtype dt, int64_t n, int64_t S, int64_t T, int64_t D) {
    int64_t sh[4];
    int nd = fr_gen_qkv_shape(c->layout, c->B, n, S, T, D, sh);
    return kt_alloc(dt, nd, sh);
}

void kt_rows(const kt_prob *P, int64_t b, int64_t *q0, int64_t *s1, int64_t *k0, int64_t *s2) {
    if (P->c.layout == FR_TND) {
        *q0 = b ? P->cuq[b - 1] : 0;
        *s1 = P->cuq[b] - *q0;
        *k0 = b ? P->cukv[b - 1] : 0;
        *s2 = P->cukv[b] - *k0;
    } else {
        *q0 = *k0 = 0;
        *s1 = P->c.S1;
        *s2 = P->c.S2;
    }
}

/* Alike src/verify/cases/sets.c:fr_suite_case_view: kept apart because only the shape is alike (field-by-field
 * assignments of different structs: params from a kt_case here, a case view there). */
void kt_build(kt_prob *P, const kt_case *c, uint64_t seed) {
    memset(P, 0, sizeof *P);
    P->c = *c;
    uint64_t r = seed;
    fr_params *p = &P->p;
    *p = fr_params_default();
    p->head_num = c->N1;
    p->input_layout = c->layout;
    p->scale_value = c->scale;
    p->keep_prob = c->keep_prob;
    p->sparse_mode = c->sparse_mode;
    p->pre_tokens = c->pre;
    p->next_tokens = c->next;
    p->pse_type = c->pse_type;
    p->q_start_idx = c->q_start;
    p->kv_start_idx = c->kv_start;
    if (c->prefix) {
        p->prefix = c->prefix;
        p->prefix_len = c->B;
    }
    int64_t S1 = c->S1, S2 = c->S2;
    if (c->layout == FR_TND) {
        fr_gen_tnd_lengths(c->B, c->lq, c->lkv, P->cuq, P->cukv, &S1, &S2, &P->T1, &P->T2);
        p->actual_seq_qlen = P->cuq;
        p->actual_seq_kvlen = P->cukv;
        p->actual_seq_len = c->B;
    } else {
        P->T1 = c->B * S1, P->T2 = c->B * S2;
    }
    fr_fwd_inputs *in = &P->in;
    in->query = kt_qkv(c, c->dt, c->N1, S1, P->T1, c->Dk);
    in->key = kt_qkv(c, c->dt, c->N2, S2, P->T2, c->Dk);
    in->value = kt_qkv(c, c->dt, c->N2, S2, P->T2, c->Dv);
    if (c->Drope) {
        in->query_rope = kt_qkv(c, c->dt, c->N1, S1, P->T1, c->Drope);
        in->key_rope = kt_qkv(c, c->dt, c->N2, S2, P->T2, c->Drope);
    }
    const fr_tensor *all[5] = {&in->query, &in->key, &in->value, &in->query_rope, &in->key_rope};
    for (int t = 0; t < 5; t++) {
        if (!fr_tensor_present(all[t])) continue;
        int64_t n = kt_numel(all[t]);
        bool off = t == 2 && !c->vsym;
        for (int64_t k = 0; k < n; k++)
            kt_put(all[t], k, kt_round_dt(c->dt, c->amp * (off ? 0.75 + 0.5 * fr_test_sym(&r) : fr_test_sym(&r))));
    }
    if (c->mask) {
        /* the compressed masks' shapes ([2048, 2048], mode 6 [3072, 2048]); else [S1, S2] in TND, [B, N1, S1, S2] */
        int64_t sh[4];
        bool compressed = fr_gen_mask_compressed(c->sparse_mode);
        fr_gen_mask kind = compressed ? FR_GEN_MASK_CANONICAL : c->layout == FR_TND ? FR_GEN_MASK_SS : FR_GEN_MASK_BNSS;
        int nd = fr_gen_mask_shape(kind, c->sparse_mode, c->B, c->N1, S1, S2, sh);
        in->atten_mask = kt_alloc(kind == FR_GEN_MASK_BNSS ? FR_BOOL : FR_U8, nd, sh);
        int64_t n = kt_numel(&in->atten_mask);
        uint8_t *m = (uint8_t *)in->atten_mask.data;
        /* compressed masks are never read (D12): their content is noise here to prove it */
        for (int64_t k = 0; k < n; k++) m[k] = fr_test_unif(&r) < (compressed ? 0.5 : c->mask_density);
        bool user = c->sparse_mode == FR_SPARSE_DEFAULT_MASK || c->sparse_mode == FR_SPARSE_ALL_MASK;
        if (user && c->layout != FR_TND && S1 > 3) /* one fully masked row per (b, h): D1 */
            for (int64_t bh = 0; bh < c->B * c->N1; bh++)
                for (int64_t j = 0; j < S2; j++) m[(bh * S1 + 2) * S2 + j] = 1;
        if (c->poison > 0 && user && c->layout != FR_TND) { /* masked everywhere, and poisoned */
            for (int64_t bhi = 0; bhi < c->B * c->N1 * S1; bhi++) m[bhi * S2 + c->poison] = 1;
            for (int64_t b = 0; b < c->B; b++)
                for (int64_t kvh = 0; kvh < c->N2; kvh++) {
                    for (int64_t d = 0; d < c->Dk; d++)
                        kt_put(&in->key, fr_layout_offset(&in->key, c->layout, c->Dk, 0, b, kvh, c->poison, d), INFINITY);
                    for (int64_t d = 0; d < c->Dv; d++)
                        kt_put(&in->value, fr_layout_offset(&in->value, c->layout, c->Dv, 0, b, kvh, c->poison, d), NAN);
                }
        }
        P->umask = m;
    }
    if (c->pse != FR_GEN_PSE_NONE) {
        const bool slopes = c->pse == FR_GEN_PSE_SLOPES_N || c->pse == FR_GEN_PSE_SLOPES_BN;
        fr_dtype pdt = fr_gen_pse_dtype(c->pse, c->dt);
        int64_t sh[4];
        int nd = fr_gen_pse_shape(c->pse, c->B, c->N1, S1, S2, sh);
        in->real_shift = kt_alloc(pdt, nd, sh);
        int64_t n = kt_numel(&in->real_shift);
        if (c->pse == FR_GEN_PSE_COMP_B) { /* Toeplitz: f(b, h, j - i) sin-like; compressed = the last 1024 rows */
            for (int64_t b = 0; b < c->B; b++)
                for (int64_t h = 0; h < c->N1; h++)
                    for (int64_t rr = 0; rr < 1024; rr++)
                        for (int64_t j = 0; j < S2; j++) {
                            int64_t i = S1 - 1024 + rr, d = j - i;
                            double v = kt_round_dt(pdt, 0.5 * sin(0.37 * (double)d + (double)(b * 7 + h)));
                            kt_put(&in->real_shift, ((b * c->N1 + h) * 1024 + rr) * S2 + j, v);
                        }
        } else {
            for (int64_t k = 0; k < n; k++)
                kt_put(&in->real_shift, k,
                       kt_round_dt(pdt, slopes ? 0.05 + 0.5 * fr_test_unif(&r) : 2.0 * fr_test_sym(&r)));
        }
    }
    if (c->keep_prob < 1.0) {
        int64_t bits = c->layout == FR_TND ? 0 : c->B * c->N1 * S1 * S2;
        if (c->layout == FR_TND)
            for (int64_t b = 0; b < c->B; b++) bits += c->N1 * c->lq[b] * c->lkv[b];
        int64_t sh[1] = {(bits + 7) / 8 + 1};
        in->drop_mask = kt_alloc(FR_U8, 1, sh);
        uint8_t *m = (uint8_t *)in->drop_mask.data;
        for (int64_t k = 0; k < sh[0]; k++) {
            uint8_t byte = 0;
            for (int q = 0; q < 8; q++) byte |= (uint8_t)((fr_test_unif(&r) < c->keep_prob) << q);
            m[k] = byte;
        }
    }
    if (c->sink) {
        int64_t sh[1] = {c->N1};
        in->sink = kt_alloc(FR_F32, 1, sh);
        for (int64_t h = 0; h < c->N1; h++) ((float *)in->sink.data)[h] = (float)(1.5 * fr_test_sym(&r));
    }
    if (c->W) {
        int64_t sh[4];
        int nd = fr_gen_topk_shape(c->layout, false, c->B, c->N2, S1, P->T1, c->W, sh);
        in->topk_indices = kt_alloc(FR_I32, nd, sh);
        int32_t *ix = (int32_t *)in->topk_indices.data;
        int64_t rows = c->layout == FR_TND ? P->T1 : c->B * S1;
        for (int64_t row = 0; row < rows; row++) {
            int64_t s2 = S2;
            if (c->layout == FR_TND) /* this row's batch length */
                for (int64_t b = 0; b < c->B; b++)
                    if (row < P->cuq[b]) {
                        s2 = c->lkv[b];
                        break;
                    }
            for (int64_t w = 0; w < c->W; w++) {
                double u = fr_test_unif(&r);
                int32_t v = u < 0.1 ? -1 : u < 0.15 ? (int32_t)(s2 + 3) : (int32_t)(fr_test_unif(&r) * (double)s2);
                if (w > 0 && u > 0.9) v = ix[row * c->W + w - 1]; /* duplicate */
                ix[row * c->W + w] = v;
            }
        }
    }
    if (c->dscale) {
        fr_tensor *t3[3] = {&in->d_scale_q, &in->d_scale_k, &in->d_scale_v};
        for (int k = 0; k < 3; k++) {
            int64_t sh[4];
            int nd = k ? fr_gen_dscale_shape(c->B, c->N2, S2, 256, sh) : fr_gen_dscale_shape(c->B, c->N1, S1, 128, sh);
            *t3[k] = kt_alloc(FR_F32, nd, sh);
            for (int64_t e = 0; e < kt_numel(t3[k]); e++) ((float *)t3[k]->data)[e] = (float)(0.5 + 1.5 * fr_test_unif(&r));
        }
    }
    /* The resolved problem (what validation produces). */
    fr_problem *pb = &P->pb;
    pb->layout = c->layout;
    pb->dtype = c->dt;
    pb->fp8 = fr_dtype_is_fp8(c->dt); /* as fr_problem_from_fwd sets it */
    pb->out_dtype = c->dt;
    pb->B = c->B, pb->N1 = c->N1, pb->N2 = c->N2, pb->G = (c->N2 ? c->N1 / c->N2 : 1);
    pb->S1 = S1, pb->S2 = S2, pb->Dk = c->Dk, pb->Dv = c->Dv, pb->Drope = c->Drope;
    pb->T1 = P->T1, pb->T2 = P->T2;
    pb->cu_q = c->layout == FR_TND ? P->cuq : NULL;
    pb->cu_kv = c->layout == FR_TND ? P->cukv : NULL;
    pb->has_pse = c->pse != FR_GEN_PSE_NONE, pb->has_mask = c->mask, pb->has_drop = c->keep_prob < 1.0;
    pb->has_rope = c->Drope > 0, pb->has_sink = c->sink;
    pb->pse_type = c->pse_type, pb->sparse_mode = c->sparse_mode;
    pb->has_topk = c->W > 0, pb->W = c->W;
}

void kt_free_prob(kt_prob *P) {
    fr_tensor *all[13] = {&P->in.query,     &P->in.key,        &P->in.value,     &P->in.query_rope, &P->in.key_rope,
                          &P->in.real_shift, &P->in.drop_mask, &P->in.atten_mask, &P->in.sink,       &P->in.d_scale_q,
                          &P->in.d_scale_k,  &P->in.d_scale_v, &P->in.topk_indices};
    for (int k = 0; k < 13; k++) free(all[k]->data);
}

fr_fwd_outputs kt_outputs(const kt_prob *P, fr_dtype dt) {
    fr_fwd_outputs o;
    memset(&o, 0, sizeof o);
    o.attention_out = kt_qkv(&P->c, dt, P->c.N1, P->pb.S1, P->T1, P->c.Dv);
    int64_t sh[4];
    int nd = fr_gen_stats_shape(P->c.layout, FR_SOFTMAX_DEFAULT, P->c.B, P->c.N1, P->pb.S1, P->T1, sh);
    o.softmax_max = kt_alloc(FR_F32, nd, sh);
    o.softmax_sum = kt_alloc(FR_F32, nd, sh);
    kt_fill_nan(&o.attention_out);
    kt_fill_nan(&o.softmax_max);
    kt_fill_nan(&o.softmax_sum);
    return o;
}

void kt_free_outputs(fr_fwd_outputs *o) {
    free(o->attention_out.data), free(o->softmax_max.data), free(o->softmax_sum.data);
}

fr_fwd_outputs kt_outputs_as(const kt_prob *P, fr_dtype out, fr_dtype stats) {
    fr_fwd_outputs o = kt_outputs(P, out);
    if (stats != FR_F32) {
        fr_tensor m = o.softmax_max, s = o.softmax_sum;
        o.softmax_max = kt_alloc(stats, m.ndim, m.shape);
        o.softmax_sum = kt_alloc(stats, s.ndim, s.shape);
        free(m.data), free(s.data);
    }
    return o;
}

fr_bwd_outputs kt_grads(const kt_prob *P, fr_dtype dt) {
    fr_bwd_outputs o;
    memset(&o, 0, sizeof o);
    const kt_case *c = &P->c;
    o.dq = kt_qkv(c, dt, c->N1, P->pb.S1, P->T1, c->Dk);
    o.dk = kt_qkv(c, dt, c->N2, P->pb.S2, P->T2, c->Dk);
    o.dv = kt_qkv(c, dt, c->N2, P->pb.S2, P->T2, c->Dv);
    if (c->Drope) {
        o.dq_rope = kt_qkv(c, dt, c->N1, P->pb.S1, P->T1, c->Drope);
        o.dk_rope = kt_qkv(c, dt, c->N2, P->pb.S2, P->T2, c->Drope);
    }
    if (c->sink) {
        int64_t sh[1] = {c->N1};
        o.dsink = kt_alloc(dt == FR_F64 ? FR_F64 : FR_F32, 1, sh);
    }
    fr_tensor *all[6] = {&o.dq, &o.dk, &o.dv, &o.dq_rope, &o.dk_rope, &o.dsink};
    for (int k = 0; k < 6; k++)
        if (fr_tensor_present(all[k])) kt_fill_nan(all[k]);
    return o;
}

void kt_free_grads(fr_bwd_outputs *o) {
    free(o->dq.data), free(o->dk.data), free(o->dv.data), free(o->dq_rope.data), free(o->dk_rope.data),
        free(o->dsink.data);
}

fr_bwd_inputs kt_bwd_inputs(const kt_prob *P, const fr_fwd_outputs *fo, uint64_t seed) {
    const kt_case *c = &P->c;
    fr_tensor dy = kt_qkv(c, c->dt, c->N1, P->pb.S1, P->T1, c->Dv);
    uint64_t r = seed ^ 0xd1ull;
    for (int64_t k = 0; k < kt_numel(&dy); k++) kt_put(&dy, k, kt_round_dt(c->dt, fr_test_sym(&r)));
    return fr_test_bwd_inputs(&P->in, dy, fo->attention_out, fo->softmax_max, fo->softmax_sum);
}

/* Alike tests/semantics/test_semantics.c:spec_keeps: kept apart because each test spells the spec's mask rule out
 * itself (this one for the kernels, that one for semantics.c); a shared rule would carry one misreading into both. */
bool kt_takes_part(const kt_prob *P, int64_t b, int64_t h, int64_t i, int64_t j, int64_t S1b, int64_t S2b) {
    const kt_case *c = &P->c;
    if (!c->mask) return true;
    int64_t mode = c->sparse_mode;
    if (c->layout == FR_TND && (mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND || mode == FR_SPARSE_BAND_LEFT_UP_CAUSAL)) {
        int64_t special = -1; /* last (7) / first (8) batch with a non-empty query */
        for (int64_t k = 0; k < c->B; k++) {
            int64_t kk = mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND ? c->B - 1 - k : k;
            if (c->lq[kk] != 0) {
                special = kk;
                break;
            }
        }
        mode = b == special                                ? FR_SPARSE_BAND
               : mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND ? FR_SPARSE_RIGHT_DOWN_CAUSAL
                                                          : FR_SPARSE_LEFT_UP_CAUSAL;
    }
    bool user = false;
    if (mode == FR_SPARSE_DEFAULT_MASK || mode == FR_SPARSE_ALL_MASK || mode == FR_SPARSE_PREFIX) {
        if (P->in.atten_mask.ndim == 2) user = P->umask[i * P->in.atten_mask.shape[1] + j] != 0;
        else user = P->umask[((b * c->N1 + h) * P->pb.S1 + i) * P->pb.S2 + j] != 0;
    }
    switch (mode) {
    case FR_SPARSE_DEFAULT_MASK: return !user && !(j - i > c->next) && !(i - j > c->pre);
    case FR_SPARSE_ALL_MASK: return !user;
    case FR_SPARSE_LEFT_UP_CAUSAL: return !(j > i);
    case FR_SPARSE_RIGHT_DOWN_CAUSAL: return !(j > i + S2b - S1b);
    case FR_SPARSE_BAND: return !(j - i > c->next + (S2b - S1b)) && !(i - j > c->pre - (S2b - S1b));
    case FR_SPARSE_PREFIX:
        if (!c->prefix || c->prefix[b] > S2b) return !user;
        return !user && !(j > i + S2b - S1b && j >= c->prefix[b]);
    case FR_SPARSE_PREFIX_COMPRESS: return !(j > i + S2b - S1b && j >= c->prefix[b]);
    default: /* a mode added to fr_sparse_mode without its rule here */
        CHECK(false, "sparse_mode %d: kt_takes_part (kt_harness.c) has no rule for it (spec 4.2)", (int)mode);
        return true;
    }
}

double kt_pse(const kt_prob *P, int64_t b, int64_t h, int64_t i, int64_t j, int64_t S1b) {
    const kt_case *c = &P->c;
    const fr_tensor *t = &P->in.real_shift;
    switch (c->pse) {
    case FR_GEN_PSE_BNSS: return kt_get(t, ((b * c->N1 + h) * P->pb.S1 + i) * P->pb.S2 + j);
    case FR_GEN_PSE_BN1S: return kt_get(t, (b * c->N1 + h) * P->pb.S2 + j);
    case FR_GEN_PSE_1NSS: return kt_get(t, (h * P->pb.S1 + i) * P->pb.S2 + j);
    case FR_GEN_PSE_COMP_B: return kt_round_dt(t->dtype, 0.5 * sin(0.37 * (double)(j - i) + (double)(b * 7 + h)));
    case FR_GEN_PSE_SLOPES_N:
    case FR_GEN_PSE_SLOPES_BN: {
        float slope = c->pse == FR_GEN_PSE_SLOPES_N ? ((float *)t->data)[h] : ((float *)t->data)[b * c->N1 + h];
        int64_t qs = c->q_start, ks = c->kv_start;
        if (c->layout == FR_TND && c->sparse_mode == FR_SPARSE_BAND_LEFT_UP_CAUSAL && c->mask && b != 0) qs = ks = 0;
        double d = fabs((double)((j + ks) - (i + qs)));
        return -(double)slope * (c->pse_type == FR_PSE_INNER_MUL_ADD_SQRT ? sqrt(d) : d);
    }
    default: return 0.0;
    }
    (void)S1b;
}

bool kt_drop_keep(const kt_prob *P, int64_t b, int64_t h, int64_t i, int64_t j, int64_t S1b, int64_t S2b) {
    const kt_case *c = &P->c;
    if (c->keep_prob >= 1.0) return true;
    int64_t k;
    if (c->layout == FR_TND) {
        int64_t base = 0;
        for (int64_t bb = 0; bb < b; bb++) base += c->N1 * c->lq[bb] * c->lkv[bb];
        k = base + (h * S1b + i) * S2b + j;
    } else {
        k = ((b * c->N1 + h) * S1b + i) * S2b + j;
    }
    return (((const uint8_t *)P->in.drop_mask.data)[k >> 3] >> (k & 7)) & 1;
}

/* Alike test_kernels_bwd.c:bwd_reference: kept apart because the forward oracle and the backward oracle compute
 * different sums; they share only the (b, h, i) loop heads. */
void kt_reference(const kt_prob *P, kt_ref *R) {
    const kt_case *c = &P->c;
    const fr_fwd_inputs *in = &P->in;
    int64_t S1 = P->pb.S1, S2 = P->pb.S2, Dv = c->Dv, G = (c->N2 ? c->N1 / c->N2 : 1);
    R->rows = c->B * c->N1 * S1;
    R->out = calloc((size_t)(R->rows * Dv + 1), sizeof(double));
    R->out32 = calloc((size_t)(R->rows * Dv + 1), sizeof(float));
    R->mx = calloc((size_t)R->rows + 1, sizeof(double));
    R->sm = calloc((size_t)R->rows + 1, sizeof(double));
    R->pvabs = calloc((size_t)R->rows + 1, sizeof(double));
    R->xmag = calloc((size_t)R->rows + 1, sizeof(double));
    R->mx32 = calloc((size_t)R->rows + 1, sizeof(float));
    R->sm32 = calloc((size_t)R->rows + 1, sizeof(float));
    double *x = malloc(sizeof(double) * (size_t)(S2 + 1));
    float *x32 = malloc(sizeof(float) * (size_t)(S2 + 1));
    bool *part = malloc(sizeof(bool) * (size_t)(S2 + 1));
    float scale32 = (float)c->scale, rkeep32 = 1.0f / (float)c->keep_prob;
    double scale = (double)scale32, rkeep = (double)rkeep32;
    for (int64_t b = 0; b < c->B; b++) {
        int64_t q0, S1b, k0, S2b;
        kt_rows(P, b, &q0, &S1b, &k0, &S2b);
        for (int64_t h = 0; h < c->N1; h++) {
            int64_t kv = h / G;
            for (int64_t i = 0; i < S1b; i++) {
                int64_t row = kt_row_index(P, b, h, i);
                double m = -INFINITY;
                float m32 = -INFINITY;
                int64_t npart = 0;
                double xmag = 0;
                for (int64_t j = 0; j < S2b; j++) {
                    part[j] = kt_takes_part(P, b, h, i, j, S1b, S2b);
                    if (!part[j]) continue;
                    npart++;
                    double s = 0, sa = 0;
                    float s32 = 0;
                    for (int64_t d = 0; d < c->Dk + c->Drope; d++) {
                        const fr_tensor *tq = d < c->Dk ? &in->query : &in->query_rope;
                        const fr_tensor *tk = d < c->Dk ? &in->key : &in->key_rope;
                        int64_t D = d < c->Dk ? c->Dk : c->Drope, dd = d < c->Dk ? d : d - c->Dk;
                        double qv = kt_get(tq, fr_layout_offset(tq, c->layout, D, q0, b, h, i, dd));
                        double kv_ = kt_get(tk, fr_layout_offset(tk, c->layout, D, k0, b, kv, j, dd));
                        s += qv * kv_;
                        sa += fabs(qv * kv_);
                        s32 += (float)qv * (float)kv_;
                    }
                    double pse = c->pse != FR_GEN_PSE_NONE ? kt_pse(P, b, h, i, j, S1b) : 0.0;
                    float pse32 = (float)pse;
                    if (c->pse != FR_GEN_PSE_NONE && c->pse_type == FR_PSE_OUTER_ADD_MUL) {
                        x[j] = (s + pse) * scale;
                        float t = s32 + pse32;
                        x32[j] = t * scale32;
                    } else {
                        x[j] = s * scale + pse;
                        float t = s32 * scale32;
                        x32[j] = t + pse32;
                    }
                    if (x[j] > m) m = x[j];
                    if (sa * scale + fabs(pse) > xmag) xmag = sa * scale + fabs(pse);
                    if (x32[j] > m32) m32 = x32[j];
                }
                double sinkv = c->sink ? (double)((float *)in->sink.data)[h] : -INFINITY;
                if (c->sink && sinkv > m) m = sinkv;
                if (c->sink && (float)sinkv > m32) m32 = (float)sinkv;
                double *o = R->out + row * Dv;
                float *o32 = R->out32 + row * Dv;
                if (npart == 0 && !c->sink) {
                    R->mx[row] = -FLT_MAX, R->sm[row] = FLT_MAX;
                    R->mx32[row] = -FLT_MAX, R->sm32[row] = FLT_MAX;
                    continue; /* D1: out stays 0 */
                }
                double l = c->sink ? exp(sinkv - m) : 0.0;
                float l32 = c->sink ? expf((float)sinkv - m32) : 0.0f;
                for (int64_t j = 0; j < S2b; j++)
                    if (part[j]) l += exp(x[j] - m), l32 += expf(x32[j] - m32);
                double pvabs = 0;
                for (int64_t j = 0; j < S2b; j++) {
                    if (!part[j]) continue;
                    double pj = exp(x[j] - m);
                    float pj32 = expf(x32[j] - m32);
                    if (!kt_drop_keep(P, b, h, i, j, S1b, S2b)) continue;
                    pj *= rkeep;
                    pj32 *= rkeep32;
                    double vmax = 0;
                    for (int64_t d = 0; d < Dv; d++) {
                        double vv = kt_get(&in->value, fr_layout_offset(&in->value, c->layout, Dv, k0, b, kv, j, d));
                        o[d] += pj * vv;
                        o32[d] += pj32 * (float)vv;
                        if (fabs(vv) > vmax) vmax = fabs(vv);
                    }
                    pvabs += pj * vmax;
                }
                for (int64_t d = 0; d < Dv; d++) o[d] /= l, o32[d] /= l32;
                R->mx[row] = m, R->sm[row] = l, R->pvabs[row] = pvabs / l;
                R->mx32[row] = m32, R->sm32[row] = l32, R->xmag[row] = xmag;
            }
        }
    }
    free(x), free(x32), free(part);
}

void kt_free_ref(kt_ref *R) {
    free(R->out), free(R->out32), free(R->mx), free(R->sm), free(R->pvabs), free(R->xmag), free(R->mx32), free(R->sm32);
}

fr_status kt_run_fast(const kt_prob *P, const fr_kops *ops, int threads, const fr_fwd_outputs *out,
                      fr_error *err) {
    if (!ops) ops = fr_kops_get(FR_ISA_AUTO);
    return fr_k_fwd(ops, threads, &P->pb, &P->p, &P->in, out, err);
}
