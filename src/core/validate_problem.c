/* Validation of (params, inputs, outputs) against every constraint of the spec (sections 1.2-1.4, 2, 3.6, 3.7, 4, 5,
 * 6, 7, 8.1, 11 and decisions D1-D9), resolving the problem's dimensions into an fr_problem.
 * Each violated rule returns its own fr_status and a message that starts with the offending parameter's name and
 * states its value. The rule table is docs/validation.md. Nothing here reads tensor data: only shapes, dtypes,
 * strides, and the host arrays of fr_params (prefix, actual_seq_qlen/kvlen). */
#include "core/validate_internal.h"
#include "core/validate_opts.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ----------------------------------------------------------------------------------------------------------------- */
/* Attributes that need no tensor. */

static fr_status check_attributes(const fr_params *p, fr_error *err) {
    if (!fr_layout_is_valid(p->input_layout))
        return fr_fail(err, FR_E_LAYOUT, "input_layout: %d is not one of BSH, SBH, BSND, BNSD, TND",
                       (int)p->input_layout);
    if (p->head_num < 0) return fr_fail(err, FR_E_HEADS, "head_num: %lld is negative", LL(p->head_num));
    if (!isfinite(p->scale_value)) return fr_fail(err, FR_E_SCALE, "scale_value: %g is not finite", p->scale_value);
    if (!fr_keep_prob_is_valid(p->keep_prob))
        return fr_fail(err, FR_E_KEEP_PROB, "keep_prob: %g is outside (0, 1]", p->keep_prob);
    if (!fr_pse_type_is_valid(p->pse_type))
        return fr_fail(err, FR_E_PSE, "pse_type: %d is outside 0..3", p->pse_type);
    if (!fr_sparse_mode_is_valid(p->sparse_mode))
        return fr_fail(err, FR_E_SPARSE_MODE, "sparse_mode: %d is outside 0..8", p->sparse_mode);
    if (p->inner_precise < 0 || p->inner_precise > 2)
        return fr_fail(err, FR_E_INVALID_ARG, "inner_precise: %d is outside 0..2", p->inner_precise);
    if (p->softmax_layout != FR_SOFTMAX_DEFAULT && p->softmax_layout != FR_SOFTMAX_SAME_AS_INPUT)
        return fr_fail(err, FR_E_INVALID_ARG, "softmax_layout: %d is neither default (0) nor same_as_input (1)",
                       (int)p->softmax_layout);
    if (p->softmax_layout == FR_SOFTMAX_SAME_AS_INPUT && p->input_layout != FR_TND)
        return fr_fail(err, FR_E_LAYOUT, "softmax_layout: same_as_input requires input_layout TND (got %s)",
                       layout_str(p->input_layout));
    if (p->q_start_idx < -FR_TOKENS_MAX - 1 || p->q_start_idx > FR_TOKENS_MAX)
        return fr_fail(err, FR_E_PSE, "q_start_idx: %lld is outside the int32 range", LL(p->q_start_idx));
    if (p->kv_start_idx < -FR_TOKENS_MAX - 1 || p->kv_start_idx > FR_TOKENS_MAX)
        return fr_fail(err, FR_E_PSE, "kv_start_idx: %lld is outside the int32 range", LL(p->kv_start_idx));
    if (p->prefix_len < 0) return fr_fail(err, FR_E_PREFIX, "prefix_len: %lld is negative", LL(p->prefix_len));
    if (p->actual_seq_len < 0)
        return fr_fail(err, FR_E_SEQLEN, "actual_seq_len: %lld is negative", LL(p->actual_seq_len));
    if (p->input_layout != FR_TND) {
        if (p->actual_seq_qlen)
            return fr_fail(err, FR_E_LAYOUT, "actual_seq_qlen: given with input_layout %s (TND only)",
                           layout_str(p->input_layout));
        if (p->actual_seq_kvlen)
            return fr_fail(err, FR_E_LAYOUT, "actual_seq_kvlen: given with input_layout %s (TND only)",
                           layout_str(p->input_layout));
        if (p->actual_seq_len != 0)
            return fr_fail(err, FR_E_LAYOUT, "actual_seq_len: %lld given with input_layout %s (TND only)",
                           LL(p->actual_seq_len), layout_str(p->input_layout));
    }
    return FR_OK;
}

/* ----------------------------------------------------------------------------------------------------------------- */
/* query / key / value: dtypes, ranks, dims, heads, head dims, TND sequence offsets, ranges. */

/* check_qkv, stage 1: query, key and value are present, of one input dtype; the output dtype follows from it. */
static fr_status qkv_dtypes(const fr_params *p, const fr_fwd_inputs *in, fr_problem *pb, fr_error *err) {
    const fr_tensor *q = &in->query, *k = &in->key, *v = &in->value;
    if (!fr_tensor_present(q)) return fr_fail(err, FR_E_NULL, "query: required tensor is absent (dtype none)");
    if (!fr_tensor_present(k)) return fr_fail(err, FR_E_NULL, "key: required tensor is absent (dtype none)");
    if (!fr_tensor_present(v)) return fr_fail(err, FR_E_NULL, "value: required tensor is absent (dtype none)");
    if (!fr_input_dtype_is_valid(q->dtype))
        return fr_fail(err, FR_E_DTYPE, "query: dtype %s is not one of fp32, fp16, bf16, e4m3fn, e5m2, hif8",
                       dt_str(q->dtype));
    fr_status st = vd_same_dtype(k, "key", q->dtype, "query", FR_E_DTYPE, err);
    if (st == FR_OK) st = vd_same_dtype(v, "value", q->dtype, "query", FR_E_DTYPE, err);
    if (st != FR_OK) return st;
    pb->dtype = q->dtype;
    pb->fp8 = fr_dtype_is_fp8(q->dtype);

    /* out_dtype: fp8 only (fp16 default, or bf16); other inputs: unset or the input dtype itself */
    if (pb->fp8) {
        if (p->out_dtype == FR_DT_NONE) pb->out_dtype = FR_F16;
        else if (p->out_dtype == FR_F16 || p->out_dtype == FR_BF16) pb->out_dtype = p->out_dtype;
        else
            return fr_fail(err, FR_E_DTYPE, "out_dtype: %s is not allowed for %s inputs (fp16 or bf16)",
                           dt_str(p->out_dtype), dt_str(q->dtype));
    } else {
        if (p->out_dtype != FR_DT_NONE && p->out_dtype != q->dtype)
            return fr_fail(err, FR_E_DTYPE, "out_dtype: %s is only for fp8/hif8 inputs (query dtype is %s)",
                           dt_str(p->out_dtype), dt_str(q->dtype));
        pb->out_dtype = q->dtype;
    }
    return FR_OK;
}

/* check_qkv, stage 2: each of query, key, value has the layout's rank and a valid view. */
static fr_status qkv_views(const fr_params *p, const fr_fwd_inputs *in, fr_error *err) {
    const fr_tensor *q = &in->query, *k = &in->key, *v = &in->value;
    const fr_layout l = p->input_layout;
    const int rank = fr_layout_rank(l);
    const struct {
        const fr_tensor *t;
        const char *name;
    } qkv[3] = {{q, "query"}, {k, "key"}, {v, "value"}};
    for (int i = 0; i < 3; i++)
        if (qkv[i].t->ndim != rank)
            return fr_fail(err, FR_E_RANK, "%s: rank %d, but input_layout %s needs rank %d", qkv[i].name,
                           qkv[i].t->ndim, layout_str(l), rank);
    for (int i = 0; i < 3; i++) {
        fr_status st = vd_check_view(qkv[i].t, qkv[i].name, err);
        if (st != FR_OK) return st;
    }
    return FR_OK;
}

/* check_qkv, stage 3: batch and length agreement, heads N1 / N2 (GQA) and head dims Dk >= Dv from the shapes, and
 * their ranges (D9). qd / kd / vd: the layout's dims of query / key / value. */
static fr_status qkv_heads(const fr_params *p, vd_lay_dims qd, vd_lay_dims kd, vd_lay_dims vd, fr_problem *pb,
                           fr_error *err) {
    const fr_layout l = p->input_layout;
    if (l != FR_TND) {
        if (kd.B != qd.B)
            return fr_fail(err, FR_E_SHAPE, "key: B = %lld differs from query B = %lld", LL(kd.B), LL(qd.B));
        if (vd.B != qd.B)
            return fr_fail(err, FR_E_SHAPE, "value: B = %lld differs from query B = %lld", LL(vd.B), LL(qd.B));
    }
    if (vd.S != kd.S)
        return fr_fail(err, FR_E_SHAPE, "value: %s = %lld differs from key %s = %lld", l == FR_TND ? "T" : "S2",
                       LL(vd.S), l == FR_TND ? "T" : "S2", LL(kd.S));

    int64_t N1, N2, Dk, Dv;
    if (l == FR_BSH || l == FR_SBH) {
        if (p->head_num == 0)
            return fr_fail(err, FR_E_HEADS, "head_num: 0 with input_layout %s (empty heads need BSND, BNSD or TND)",
                           layout_str(l));
        if (qd.H % p->head_num != 0)
            return fr_fail(err, FR_E_HEADS, "head_num: query H = %lld is not divisible by head_num = %lld", LL(qd.H),
                           LL(p->head_num));
        N1 = p->head_num;
        Dk = qd.H / N1;
        if (Dk > 0) {
            if (kd.H % Dk != 0)
                return fr_fail(err, FR_E_HEADS, "key: H = %lld is not a multiple of D = %lld (query H / head_num)",
                               LL(kd.H), LL(Dk));
            N2 = kd.H / Dk;
        } else {
            /* D = 0 (D8): N2 cannot be read from H; take N2 = N1 and require empty key/value heads */
            if (kd.H != 0)
                return fr_fail(err, FR_E_HEAD_DIM, "key: H = %lld but query D = 0 (query H = 0)", LL(kd.H));
            N2 = N1;
        }
    } else {
        N1 = qd.N;
        if (p->head_num != N1)
            return fr_fail(err, FR_E_HEADS, "head_num: %lld differs from query N = %lld", LL(p->head_num), LL(N1));
        N2 = kd.N;
        if (vd.N != N2)
            return fr_fail(err, FR_E_SHAPE, "value: N = %lld differs from key N2 = %lld", LL(vd.N), LL(N2));
        Dk = qd.D;
        if (kd.D != Dk)
            return fr_fail(err, FR_E_HEAD_DIM, "key: D = %lld differs from query D = %lld", LL(kd.D), LL(Dk));
    }
    if (N2 == 0 && N1 != 0)
        return fr_fail(err, FR_E_HEADS, "head_num: N1 = %lld but key has N2 = 0 heads", LL(N1));
    if (N2 != 0 && N1 % N2 != 0)
        return fr_fail(err, FR_E_HEADS, "head_num: N1 = %lld is not a multiple of N2 = %lld", LL(N1), LL(N2));
    if (l == FR_BSH || l == FR_SBH) {
        if (Dk == 0) {
            if (vd.H != 0) return fr_fail(err, FR_E_HEAD_DIM, "value: H = %lld but query D = 0", LL(vd.H));
            Dv = 0;
        } else {
            if (vd.H % N2 != 0)
                return fr_fail(err, FR_E_HEAD_DIM, "value: H = %lld is not a multiple of N2 = %lld", LL(vd.H), LL(N2));
            Dv = vd.H / N2;
        }
    } else {
        Dv = vd.D;
    }
    if (Dv > Dk) return fr_fail(err, FR_E_HEAD_DIM, "value: Dv = %lld exceeds Dk = %lld", LL(Dv), LL(Dk));

    pb->layout = l;
    pb->N1 = N1;
    pb->N2 = N2;
    pb->G = N2 > 0 ? N1 / N2 : 0;
    pb->Dk = Dk;
    pb->Dv = Dv;

    /* ranges (D9) */
    if (N1 > FR_LIMIT_N1)
        return fr_fail(err, FR_E_RANGE, "head_num: N1 = %lld exceeds %lld", LL(N1), LL(FR_LIMIT_N1));
    if (Dk > FR_LIMIT_D) return fr_fail(err, FR_E_RANGE, "query: D = %lld exceeds %lld", LL(Dk), LL(FR_LIMIT_D));
    if (pb->fp8 && Dk > FR_LIMIT_D_FP8)
        return fr_fail(err, FR_E_FP8, "query: D = %lld exceeds %lld for %s inputs", LL(Dk), LL(FR_LIMIT_D_FP8),
                       dt_str(pb->dtype));
    return FR_OK;
}

/* check_qkv, stage 4 (BSH, SBH, BSND, BNSD): B, S1, S2 from the shapes, within the limits (D9). */
static fr_status qkv_lengths_dense(vd_lay_dims qd, vd_lay_dims kd, fr_problem *pb, fr_error *err) {
    pb->B = qd.B;
    pb->S1 = qd.S;
    pb->S2 = kd.S;
    if (pb->B > FR_LIMIT_B)
        return fr_fail(err, FR_E_RANGE, "query: B = %lld exceeds %lld", LL(pb->B), LL(FR_LIMIT_B));
    if (pb->S1 > FR_LIMIT_S)
        return fr_fail(err, FR_E_RANGE, "query: S1 = %lld exceeds %lld", LL(pb->S1), LL(FR_LIMIT_S));
    if (pb->S2 > FR_LIMIT_S)
        return fr_fail(err, FR_E_RANGE, "key: S2 = %lld exceeds %lld", LL(pb->S2), LL(FR_LIMIT_S));
    pb->T1 = pb->B * pb->S1; /* <= 2^41: no overflow after the range checks */
    pb->T2 = pb->B * pb->S2;
    pb->cu_q = pb->cu_kv = NULL;
    return FR_OK;
}

/* FR_OK when entry b (value c) of the cumulative offsets `name` is not below the previous entry prev (0 before the
 * first), else FR_E_SEQLEN naming both entries. */
static fr_status cumulative_ok(const char *name, int64_t b, int64_t c, int64_t prev, fr_error *err) {
    if (c >= prev) return FR_OK;
    if (b == 0) return fr_fail(err, FR_E_SEQLEN, "%s[0] = %lld is negative", name, LL(c));
    return fr_fail(err, FR_E_SEQLEN, "%s[%lld] = %lld < %s[%lld] = %lld (offsets must be cumulative, non-decreasing)",
                   name, LL(b), LL(c), name, LL(b - 1), LL(prev));
}

/* check_qkv, stage 4 (TND): the batches from the cumulative end offsets actual_seq_qlen / actual_seq_kvlen; S1, S2
 * are the longest batch's lengths. */
static fr_status qkv_lengths_tnd(const fr_params *p, vd_lay_dims qd, vd_lay_dims kd, fr_problem *pb, fr_error *err) {
    const int64_t B = p->actual_seq_len;
    if (qd.S > FR_LIMIT_T)
        return fr_fail(err, FR_E_RANGE, "query: T = %lld exceeds %lld", LL(qd.S), LL(FR_LIMIT_T));
    if (kd.S > FR_LIMIT_T) return fr_fail(err, FR_E_RANGE, "key: T = %lld exceeds %lld", LL(kd.S), LL(FR_LIMIT_T));
    if (B > FR_LIMIT_B_TND)
        return fr_fail(err, FR_E_RANGE, "actual_seq_len: B = %lld exceeds %lld (TND)", LL(B), LL(FR_LIMIT_B_TND));
    if (B > 0 && !p->actual_seq_qlen)
        return fr_fail(err, FR_E_SEQLEN, "actual_seq_qlen: NULL with input_layout TND (need %lld cumulative offsets)",
                       LL(B));
    if (B > 0 && !p->actual_seq_kvlen)
        return fr_fail(err, FR_E_SEQLEN,
                       "actual_seq_kvlen: NULL with input_layout TND (need %lld cumulative offsets)", LL(B));
    int64_t pq = 0, pk = 0, S1 = 0, S2 = 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t cq = p->actual_seq_qlen[b], ck = p->actual_seq_kvlen[b];
        fr_status st = cumulative_ok("actual_seq_qlen", b, cq, pq, err);
        if (st == FR_OK) st = cumulative_ok("actual_seq_kvlen", b, ck, pk, err);
        if (st != FR_OK) return st;
        if (cq > qd.S)
            return fr_fail(err, FR_E_SEQLEN, "actual_seq_qlen[%lld] = %lld exceeds query T = %lld", LL(b), LL(cq),
                           LL(qd.S));
        if (ck > kd.S)
            return fr_fail(err, FR_E_SEQLEN, "actual_seq_kvlen[%lld] = %lld exceeds key T = %lld", LL(b), LL(ck),
                           LL(kd.S));
        int64_t lq = cq - pq, lk = ck - pk;
        if (lq > 0 && lk == 0)
            return fr_fail(err, FR_E_SEQLEN,
                           "actual_seq_kvlen: batch %lld has S1 = %lld query rows but S2 = 0 keys (unsupported in TND)",
                           LL(b), LL(lq));
        if (lq > S1) S1 = lq;
        if (lk > S2) S2 = lk;
        pq = cq;
        pk = ck;
    }
    if (pq != qd.S)
        return fr_fail(err, FR_E_SEQLEN, "actual_seq_qlen: last offset %lld differs from query T = %lld", LL(pq),
                       LL(qd.S));
    if (pk != kd.S)
        return fr_fail(err, FR_E_SEQLEN, "actual_seq_kvlen: last offset %lld differs from key T = %lld", LL(pk),
                       LL(kd.S));
    pb->B = B;
    pb->S1 = S1;
    pb->S2 = S2;
    pb->T1 = qd.S;
    pb->T2 = kd.S;
    pb->cu_q = p->actual_seq_qlen;
    pb->cu_kv = p->actual_seq_kvlen;
    return FR_OK;
}

/* query / key / value: dtypes, views, heads and head dims, batches and lengths, in that order (the first problem
 * found is the one reported). Fills pb's dtypes, layout, B, N1, N2, G, S1, S2, T1, T2, Dk, Dv and offsets. */
static fr_status check_qkv(const fr_params *p, const fr_fwd_inputs *in, fr_problem *pb, fr_error *err) {
    fr_status st;
    if ((st = qkv_dtypes(p, in, pb, err)) != FR_OK) return st;
    if ((st = qkv_views(p, in, err)) != FR_OK) return st;
    const fr_layout l = p->input_layout;
    const vd_lay_dims qd = vd_dims_of(&in->query, l), kd = vd_dims_of(&in->key, l), vd = vd_dims_of(&in->value, l);
    if ((st = qkv_heads(p, qd, kd, vd, pb, err)) != FR_OK) return st;
    return l == FR_TND ? qkv_lengths_tnd(p, qd, kd, pb, err) : qkv_lengths_dense(qd, kd, pb, err);
}

/* ----------------------------------------------------------------------------------------------------------------- */
/* fp8 dequant scales (spec D5, 7.1). TND: blocks counted on the largest per-batch length. */

static fr_status check_dscale(const fr_fwd_inputs *in, fr_problem *pb, fr_error *err) {
    const struct {
        const fr_tensor *t;
        const char *name;
        int64_t N, S, blk;
    } ds[3] = {{&in->d_scale_q, "d_scale_q", pb->N1, pb->S1, FR_DSCALE_Q_BLOCK},
               {&in->d_scale_k, "d_scale_k", pb->N2, pb->S2, FR_DSCALE_KV_BLOCK},
               {&in->d_scale_v, "d_scale_v", pb->N2, pb->S2, FR_DSCALE_KV_BLOCK}};
    for (int i = 0; i < 3; i++) {
        const fr_tensor *t = ds[i].t;
        if (!pb->fp8) {
            if (fr_tensor_present(t))
                return fr_fail(err, FR_E_DEQUANT_SCALE, "%s: given but query dtype %s is not fp8/hif8", ds[i].name,
                               dt_str(pb->dtype));
            continue;
        }
        if (!fr_tensor_present(t))
            return fr_fail(err, FR_E_DEQUANT_SCALE, "%s: required for %s inputs", ds[i].name, dt_str(pb->dtype));
        if (t->dtype != FR_F32)
            return fr_fail(err, FR_E_DEQUANT_SCALE, "%s: dtype %s, must be fp32", ds[i].name, dt_str(t->dtype));
        int64_t nb = (ds[i].S + ds[i].blk - 1) / ds[i].blk;
        if (!vd_shape_eq4(t, pb->B, ds[i].N, nb, 1)) {
            char a[128], b[128];
            return fr_fail(err, FR_E_DEQUANT_SCALE, "%s: shape %s, expected %s (one scale per %lld rows)", ds[i].name,
                           vd_shape_str(t, a, sizeof a),
                           vd_expect_str(4, (const int64_t[]){pb->B, ds[i].N, nb, 1}, b, sizeof b), LL(ds[i].blk));
        }
        fr_status st = vd_check_view(t, ds[i].name, err);
        if (st != FR_OK) return st;
    }
    return FR_OK;
}

/* query_rope / key_rope: shapes of query / key except the last dim (Drope >= 1; any layout, flashref extension). */
static fr_status check_rope(const fr_fwd_inputs *in, fr_problem *pb, fr_error *err) {
    const fr_tensor *qr = &in->query_rope, *kr = &in->key_rope;
    bool hq = fr_tensor_present(qr), hk = fr_tensor_present(kr);
    pb->has_rope = false;
    pb->Drope = 0;
    if (!hq && !hk) return FR_OK;
    if (pb->fp8)
        return fr_fail(err, FR_E_FP8, "%s: not allowed with %s inputs", hq ? "query_rope" : "key_rope",
                       dt_str(pb->dtype));
    if (!hq) return fr_fail(err, FR_E_ROPE, "query_rope: absent while key_rope is given");
    if (!hk) return fr_fail(err, FR_E_ROPE, "key_rope: absent while query_rope is given");
    fr_status st = vd_same_dtype(qr, "query_rope", pb->dtype, "query", FR_E_ROPE, err);
    if (st == FR_OK) st = vd_same_dtype(kr, "key_rope", pb->dtype, "key", FR_E_ROPE, err);
    if (st != FR_OK) return st;
    int rank = fr_layout_rank(pb->layout);
    if (qr->ndim != rank)
        return fr_fail(err, FR_E_ROPE, "query_rope: rank %d, input_layout %s needs %d", qr->ndim,
                       layout_str(pb->layout), rank);
    if (kr->ndim != rank)
        return fr_fail(err, FR_E_ROPE, "key_rope: rank %d, input_layout %s needs %d", kr->ndim, layout_str(pb->layout),
                       rank);
    if ((st = vd_check_view(qr, "query_rope", err)) != FR_OK) return st;
    if ((st = vd_check_view(kr, "key_rope", err)) != FR_OK) return st;
    int64_t Dr;
    const int64_t last = qr->shape[rank - 1];
    if (pb->layout == FR_BSH || pb->layout == FR_SBH) {
        if (last % pb->N1 != 0)
            return fr_fail(err, FR_E_ROPE, "query_rope: H = %lld is not a multiple of N1 = %lld", LL(last), LL(pb->N1));
        Dr = last / pb->N1;
    } else {
        Dr = last;
    }
    if (Dr < 1) return fr_fail(err, FR_E_ROPE, "query_rope: Drope = %lld, must be >= 1", LL(Dr));
    if (Dr > FR_LIMIT_DROPE)
        return fr_fail(err, FR_E_ROPE, "query_rope: Drope = %lld exceeds %lld", LL(Dr), LL(FR_LIMIT_DROPE));
    int64_t es[FR_MAX_DIMS];
    char a[128], b[128];
    int nd = vd_layout_shape(pb, false, pb->N1, Dr, es);
    if (!vd_shape_eq(qr, nd, es))
        return fr_fail(err, FR_E_ROPE, "query_rope: shape %s, expected %s (query's shape with Drope = %lld)",
                       vd_shape_str(qr, a, sizeof a), vd_expect_str(nd, es, b, sizeof b), LL(Dr));
    nd = vd_layout_shape(pb, true, pb->N2, Dr, es);
    if (!vd_shape_eq(kr, nd, es))
        return fr_fail(err, FR_E_ROPE, "key_rope: shape %s, expected %s (key's shape with Drope = %lld)",
                       vd_shape_str(kr, a, sizeof a), vd_expect_str(nd, es, b, sizeof b), LL(Dr));
    pb->has_rope = true;
    pb->Drope = Dr;
    return FR_OK;
}

/* ----------------------------------------------------------------------------------------------------------------- */

fr_status fr_problem_from_fwd(const fr_params *p, const fr_fwd_inputs *in, fr_problem *pb, fr_error *err) {
    if (!p) return fr_fail(err, FR_E_NULL, "params: NULL");
    if (!in) return fr_fail(err, FR_E_NULL, "inputs: NULL");
    if (!pb) return fr_fail(err, FR_E_NULL, "problem: NULL");
    memset(pb, 0, sizeof *pb);
    fr_status st;
    if ((st = check_attributes(p, err)) != FR_OK) return st;
    if ((st = check_qkv(p, in, pb, err)) != FR_OK) return st;
    if ((st = check_dscale(in, pb, err)) != FR_OK) return st;
    if ((st = check_rope(in, pb, err)) != FR_OK) return st;
    if ((st = vd_check_mask(p, in, pb, err)) != FR_OK) return st;
    if ((st = vd_check_pse(p, in, pb, err)) != FR_OK) return st;
    if ((st = vd_check_dropout(p, in, pb, err)) != FR_OK) return st;
    if ((st = vd_check_sink(in, pb, err)) != FR_OK) return st;
    if ((st = vd_check_topk(in, pb, err)) != FR_OK) return st;
    return FR_OK;
}

/* Dtype of attention_out / dy / attention_in / gradients in the operator: the input dtype, fp8: out_dtype. */
static fr_dtype op_dtype(const fr_problem *pb) { return pb->fp8 ? pb->out_dtype : pb->dtype; }

/* A backward input shaped like attention_out (query's shape with Dv) of the operator dtype. */
static fr_status check_like_out(const fr_problem *pb, const fr_tensor *t, const char *name, fr_error *err) {
    if (!fr_tensor_present(t)) return fr_fail(err, FR_E_NULL, "%s: required tensor is absent (dtype none)", name);
    if (t->dtype != op_dtype(pb))
        return fr_fail(err, FR_E_DTYPE, "%s: dtype %s, expected %s", name, dt_str(t->dtype), dt_str(op_dtype(pb)));
    int64_t es[FR_MAX_DIMS];
    int nd = vd_layout_shape(pb, false, pb->N1, pb->Dv, es);
    if (t->ndim != nd)
        return fr_fail(err, FR_E_RANK, "%s: rank %d, input_layout %s needs rank %d", name, t->ndim,
                       layout_str(pb->layout), nd);
    if (!vd_shape_eq(t, nd, es)) {
        char a[128], b[128];
        return fr_fail(err, FR_E_SHAPE, "%s: shape %s, expected %s (query's shape with Dv = %lld)", name,
                       vd_shape_str(t, a, sizeof a), vd_expect_str(nd, es, b, sizeof b), LL(pb->Dv));
    }
    return vd_check_view(t, name, err);
}

fr_status fr_problem_from_bwd(const fr_params *p, const fr_bwd_inputs *in, fr_problem *pb, fr_error *err) {
    if (!in) return fr_fail(err, FR_E_NULL, "inputs: NULL");
    fr_status st = fr_problem_from_fwd(p, &in->fwd, pb, err);
    if (st != FR_OK) return st;
    if ((st = check_like_out(pb, &in->dy, "dy", err)) != FR_OK) return st;
    if ((st = check_like_out(pb, &in->attention_in, "attention_in", err)) != FR_OK) return st;
    int64_t es[FR_MAX_DIMS];
    int nd = vd_softmax_shape(pb, p->softmax_layout, es);
    const struct {
        const fr_tensor *t;
        const char *name;
    } sm[2] = {{&in->softmax_max, "softmax_max"}, {&in->softmax_sum, "softmax_sum"}};
    for (int i = 0; i < 2; i++) {
        const fr_tensor *t = sm[i].t;
        if (!fr_tensor_present(t))
            return fr_fail(err, FR_E_NULL, "%s: required tensor is absent (dtype none)", sm[i].name);
        if (t->dtype != FR_F32 && t->dtype != FR_F64)
            return fr_fail(err, FR_E_SOFTMAX_STATS, "%s: dtype %s, must be fp32 or fp64", sm[i].name,
                           dt_str(t->dtype));
        if (!vd_shape_eq(t, nd, es)) {
            char a[128], b[128];
            return fr_fail(err, FR_E_SOFTMAX_STATS, "%s: shape %s, expected %s", sm[i].name,
                           vd_shape_str(t, a, sizeof a), vd_expect_str(nd, es, b, sizeof b));
        }
        if ((st = vd_check_view(t, sm[i].name, err)) != FR_OK) return st;
    }
    return FR_OK;
}

/* ----------------------------------------------------------------------------------------------------------------- */
/* Outputs. */

/* One output: present, dtype one of ok[0..nok-1], shape es; then view checks (NULL data -> FR_E_NULL). */
static fr_status check_output(const fr_tensor *t, const char *name, const fr_dtype *ok, int nok, int nd,
                              const int64_t *es, fr_error *err) {
    if (!fr_tensor_present(t)) return fr_fail(err, FR_E_NULL, "%s: required output is absent (dtype none)", name);
    bool dt_ok = false;
    for (int i = 0; i < nok; i++) dt_ok |= t->dtype == ok[i];
    if (!dt_ok) {
        char list[96] = "";
        size_t k = 0;
        for (int i = 0; i < nok && k < sizeof list; i++)
            k += (size_t)snprintf(list + k, sizeof list - k, i ? ", %s" : "%s", dt_str(ok[i]));
        return fr_fail(err, FR_E_OUTPUT, "%s: dtype %s, expected one of %s", name, dt_str(t->dtype), list);
    }
    if (!vd_shape_eq(t, nd, es)) {
        char a[128], b[128];
        return fr_fail(err, FR_E_OUTPUT, "%s: shape %s, expected %s", name, vd_shape_str(t, a, sizeof a),
                       vd_expect_str(nd, es, b, sizeof b));
    }
    return vd_check_view(t, name, err);
}

fr_status fr_check_fwd_outputs(const fr_problem *pb, const fr_params *p, const fr_fwd_outputs *out, fr_error *err) {
    if (!pb) return fr_fail(err, FR_E_NULL, "problem: NULL");
    if (!p) return fr_fail(err, FR_E_NULL, "params: NULL");
    if (!out) return fr_fail(err, FR_E_NULL, "outputs: NULL");
    int64_t es[FR_MAX_DIMS];
    int nd = vd_layout_shape(pb, false, pb->N1, pb->Dv, es);
    const fr_dtype od[3] = {pb->out_dtype, FR_F32, FR_F64};
    fr_status st = check_output(&out->attention_out, "attention_out", od, 3, nd, es, err);
    if (st != FR_OK) return st;
    nd = vd_softmax_shape(pb, p->softmax_layout, es);
    const fr_dtype sd[2] = {FR_F32, FR_F64};
    if ((st = check_output(&out->softmax_max, "softmax_max", sd, 2, nd, es, err)) != FR_OK) return st;
    return check_output(&out->softmax_sum, "softmax_sum", sd, 2, nd, es, err);
}

fr_status fr_check_bwd_outputs(const fr_problem *pb, const fr_params *p, const fr_bwd_outputs *out, fr_error *err) {
    if (!pb) return fr_fail(err, FR_E_NULL, "problem: NULL");
    if (!p) return fr_fail(err, FR_E_NULL, "params: NULL");
    if (!out) return fr_fail(err, FR_E_NULL, "outputs: NULL");
    /* gradients: the input dtype (fp8 inputs: fp16 or bf16), or fp32 / fp64 */
    fr_dtype gd[4] = {pb->dtype, FR_F32, FR_F64, FR_DT_NONE};
    int ngd = 3;
    if (pb->fp8) gd[0] = FR_F16, gd[3] = FR_BF16, ngd = 4;
    int64_t es[FR_MAX_DIMS];
    fr_status st;
    int nd = vd_layout_shape(pb, false, pb->N1, pb->Dk, es);
    if ((st = check_output(&out->dq, "dq", gd, ngd, nd, es, err)) != FR_OK) return st;
    nd = vd_layout_shape(pb, true, pb->N2, pb->Dk, es);
    if ((st = check_output(&out->dk, "dk", gd, ngd, nd, es, err)) != FR_OK) return st;
    nd = vd_layout_shape(pb, true, pb->N2, pb->Dv, es);
    if ((st = check_output(&out->dv, "dv", gd, ngd, nd, es, err)) != FR_OK) return st;
    if (pb->has_rope) {
        nd = vd_layout_shape(pb, false, pb->N1, pb->Drope, es);
        if ((st = check_output(&out->dq_rope, "dq_rope", gd, ngd, nd, es, err)) != FR_OK) return st;
        nd = vd_layout_shape(pb, true, pb->N2, pb->Drope, es);
        if ((st = check_output(&out->dk_rope, "dk_rope", gd, ngd, nd, es, err)) != FR_OK) return st;
    } else {
        if (fr_tensor_present(&out->dq_rope))
            return fr_fail(err, FR_E_OUTPUT, "dq_rope: given but the inputs have no query_rope");
        if (fr_tensor_present(&out->dk_rope))
            return fr_fail(err, FR_E_OUTPUT, "dk_rope: given but the inputs have no key_rope");
    }
    if (pb->has_sink) {
        const fr_dtype sd[2] = {FR_F32, FR_F64};
        if ((st = check_output(&out->dsink, "dsink", sd, 2, 1, (const int64_t[]){pb->N1}, err)) != FR_OK) return st;
    } else if (fr_tensor_present(&out->dsink)) {
        return fr_fail(err, FR_E_OUTPUT, "dsink: given but the inputs have no sink");
    }
    return FR_OK;
}

/* The public validators (flashref.h): the problem, then the outputs when given. Here in core, below every layer that
 * calls them (io's case reader, the verifier's case checks, the engine dispatch). */
/* Alike validate_problem.c:fr_validate_bwd: kept apart because forward and backward take different input and output
 * structs and problem builders; C has no generic over them short of a macro. */
fr_status fr_validate_fwd(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out, fr_error *err) {
    fr_error_clear(err);
    fr_problem pb;
    fr_status st = fr_problem_from_fwd(p, in, &pb, err);
    if (st != FR_OK || !out) return st;
    return fr_check_fwd_outputs(&pb, p, out, err);
}

/* Alike validate_problem.c:fr_validate_fwd: kept apart for the same reason. */
fr_status fr_validate_bwd(const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out, fr_error *err) {
    fr_error_clear(err);
    fr_problem pb;
    fr_status st = fr_problem_from_bwd(p, in, &pb, err);
    if (st != FR_OK || !out) return st;
    return fr_check_bwd_outputs(&pb, p, out, err);
}
