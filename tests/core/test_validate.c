/* Validation rules (src/core/validate_problem.c, validate_opts.c, docs/validation.md), table-driven.
 * Invalid rows: a valid base configuration with one field mutated; each row expects its exact fr_status and a
 * message that names the parameter. Valid rows: edge configurations (D8 empty dims, every layout, sparse mode with
 * its canonical mask, pse type, TND with empty sequences, ...) that must be accepted by the forward and the backward,
 * inputs and outputs. Nothing reads tensor data, so every tensor points at one small dummy buffer.
 * Plus seeded random mutations of the bases (seed printed; argv[1] overrides it). */
#include "common/check.h"
#include "common/kit.h"
#include "common/seed.h"
#include "core/problem.h"
#include "core/validate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char dummy[64];
#define DUMMY ((void *)dummy)

/* Contiguous view; strides computed with overflow checks (huge shapes must not be UB in the test itself), so not
 * fr_tensor_make, whose stride products are unchecked. */
/* Alike src/core/tensor.c:fr_tensor_make: kept apart because this test needs stride products that saturate for huge
 * shapes, which that constructor does not check. */
static fr_tensor mk(fr_dtype dt, const int64_t *s, int nd) {
    fr_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.ndim = nd;
    t.data = DUMMY;
    int64_t st = 1;
    for (int k = nd - 1; k >= 0; k--) {
        t.shape[k] = s[k];
        t.strides[k] = st;
        if (s[k] > 1 && __builtin_mul_overflow(st, s[k], &st)) st = INT64_MAX;
    }
    return t;
}
#define MK(dt, ...)                                                                                                    \
    mk(dt, (const int64_t[]){__VA_ARGS__}, (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))

typedef struct cfg {
    fr_params p;
    fr_fwd_inputs in;
    fr_tensor dy, ain, smax, ssum; /* backward inputs besides the forward's */
    fr_fwd_outputs fo;
    fr_bwd_outputs bo;
    int64_t cq[16], ck[16], prefix[16];
    bool null_p, null_in, null_out;
    fr_layout l;
    fr_dtype dt;
    int64_t B, N1, N2, S1, S2, Dk, Dv, T1, T2;
} cfg;

/* q/k/v-like view in layout l (TND: S is T). */
static fr_tensor lay(fr_layout l, fr_dtype dt, int64_t B, int64_t S, int64_t N, int64_t D) {
    switch (l) {
    case FR_BSH: return MK(dt, B, S, N * D);
    case FR_SBH: return MK(dt, S, B, N * D);
    case FR_BSND: return MK(dt, B, S, N, D);
    case FR_BNSD: return MK(dt, B, N, S, D);
    default: return MK(dt, S, N, D);
    }
}

static bool is_fp8(fr_dtype t) { return t == FR_E4M3FN || t == FR_E5M2 || t == FR_HIF8; }

/* Fills q/k/v, forward outputs, backward inputs and outputs from c's dims (T1/T2 for TND). */
static void fill(cfg *c) {
    fr_layout l = c->l;
    fr_dtype dt = c->dt, od = is_fp8(dt) ? FR_F16 : dt;
    int64_t s1 = l == FR_TND ? c->T1 : c->S1, s2 = l == FR_TND ? c->T2 : c->S2;
    c->p.input_layout = l;
    c->p.head_num = c->N1;
    c->in.query = lay(l, dt, c->B, s1, c->N1, c->Dk);
    c->in.key = lay(l, dt, c->B, s2, c->N2, c->Dk);
    c->in.value = lay(l, dt, c->B, s2, c->N2, c->Dv);
    c->fo.attention_out = lay(l, od, c->B, s1, c->N1, c->Dv);
    c->fo.softmax_max = l == FR_TND ? MK(FR_F32, c->N1, c->T1, 8) : MK(FR_F32, c->B, c->N1, c->S1, 8);
    c->fo.softmax_sum = c->fo.softmax_max;
    c->dy = c->ain = c->fo.attention_out;
    c->smax = c->ssum = c->fo.softmax_max;
    c->bo.dq = lay(l, od, c->B, s1, c->N1, c->Dk);
    c->bo.dk = lay(l, od, c->B, s2, c->N2, c->Dk);
    c->bo.dv = lay(l, od, c->B, s2, c->N2, c->Dv);
    if (is_fp8(dt)) {
        c->in.d_scale_q = MK(FR_F32, c->B, c->N1, (c->S1 + 127) / 128, 1);
        c->in.d_scale_k = MK(FR_F32, c->B, c->N2, (c->S2 + 255) / 256, 1);
        c->in.d_scale_v = c->in.d_scale_k;
    }
}

static void dense(cfg *c, fr_layout l, fr_dtype dt, int64_t B, int64_t N1, int64_t N2, int64_t S1, int64_t S2,
                  int64_t Dk, int64_t Dv) {
    memset(c, 0, sizeof *c);
    c->p = fr_params_default();
    c->l = l, c->dt = dt, c->B = B, c->N1 = N1, c->N2 = N2, c->S1 = S1, c->S2 = S2, c->Dk = Dk, c->Dv = Dv;
    c->T1 = B * S1, c->T2 = B * S2;
    fill(c);
}

/* TND from per-batch lengths. */
static void varlen(cfg *c, fr_dtype dt, int nb, const int64_t *lq, const int64_t *lk, int64_t N1, int64_t N2,
                   int64_t Dk, int64_t Dv) {
    memset(c, 0, sizeof *c);
    c->p = fr_params_default();
    c->l = FR_TND, c->dt = dt, c->B = nb, c->N1 = N1, c->N2 = N2, c->Dk = Dk, c->Dv = Dv;
    int64_t aq = 0, ak = 0;
    for (int b = 0; b < nb; b++) {
        aq += lq[b], ak += lk[b];
        c->cq[b] = aq, c->ck[b] = ak;
        if (lq[b] > c->S1) c->S1 = lq[b];
        if (lk[b] > c->S2) c->S2 = lk[b];
    }
    c->T1 = aq, c->T2 = ak;
    c->p.actual_seq_qlen = c->cq;
    c->p.actual_seq_kvlen = c->ck;
    c->p.actual_seq_len = nb;
    fill(c);
}

typedef enum { BNSD, BSH, SBH, BSND, TND, TNDEQ, FP8, BIG, HUGE } base_id;

static void base(cfg *c, base_id id) {
    switch (id) {
    case BNSD: dense(c, FR_BNSD, FR_F16, 2, 4, 2, 8, 6, 16, 8); break;
    case BSH: dense(c, FR_BSH, FR_BF16, 2, 4, 2, 8, 6, 16, 8); break;
    case SBH: dense(c, FR_SBH, FR_F32, 2, 4, 2, 8, 6, 16, 8); break;
    case BSND: dense(c, FR_BSND, FR_F16, 2, 4, 2, 8, 6, 16, 8); break;
    case TND: varlen(c, FR_F32, 3, (const int64_t[]){3, 0, 4}, (const int64_t[]){2, 4, 5}, 4, 1, 16, 16); break;
    case TNDEQ: varlen(c, FR_BF16, 3, (const int64_t[]){3, 5, 2}, (const int64_t[]){3, 5, 2}, 2, 2, 16, 16); break;
    case FP8: dense(c, FR_BSND, FR_E4M3FN, 1, 2, 2, 200, 300, 64, 64); break;
    case BIG: dense(c, FR_BNSD, FR_F16, 1, 1, 1, 2048, 2048, 16, 16); break;
    case HUGE: dense(c, FR_BNSD, FR_F16, INT64_C(2097152), 256, 256, INT64_C(1048576), INT64_C(1048576), 1, 1); break;
    }
}

static int64_t zeros[4096];

/* ---------------------------------------------------------------------------------------------------------------- */
/* Invalid configurations: X(name, base, kind, expected status, parameter named in the message, mutation...) */

enum { FWD_IN, FWD_OUT, BWD };

/* Alike test_validate.c:INVALID_ROWS (its rows): kept apart because each X() row is one validation case (its own field
 * changes and expected status); the likeness is the row format. */
#define INVALID_ROWS(X)                                                                                                \
    /* NULL pointers and absent required tensors */                                                                   \
    X(params_null, BNSD, FWD_IN, FR_E_NULL, "params", c->null_p = true)                                                \
    X(inputs_null, BNSD, FWD_IN, FR_E_NULL, "inputs", c->null_in = true)                                               \
    X(query_absent, BNSD, FWD_IN, FR_E_NULL, "query", c->in.query.dtype = FR_DT_NONE)                                  \
    X(key_absent, BNSD, FWD_IN, FR_E_NULL, "key", c->in.key.dtype = FR_DT_NONE)                                        \
    X(value_absent, BSH, FWD_IN, FR_E_NULL, "value", c->in.value.dtype = FR_DT_NONE)                                   \
    X(query_data_null, BNSD, FWD_IN, FR_E_NULL, "query", c->in.query.data = NULL)                                      \
    X(value_data_null, TND, FWD_IN, FR_E_NULL, "value", c->in.value.data = NULL)                                       \
    X(mask_data_null, BNSD, FWD_IN, FR_E_NULL, "atten_mask", c->in.atten_mask = MK(FR_BOOL, 8, 6);                     \
      c->in.atten_mask.data = NULL)                                                                                    \
    X(sink_data_null, BNSD, FWD_IN, FR_E_NULL, "sink", c->in.sink = MK(FR_F32, 4); c->in.sink.data = NULL)             \
    /* layout */                                                                                                       \
    X(layout_none, BNSD, FWD_IN, FR_E_LAYOUT, "input_layout", c->p.input_layout = FR_LAYOUT_NONE)                      \
    X(layout_99, BNSD, FWD_IN, FR_E_LAYOUT, "input_layout", c->p.input_layout = (fr_layout)99)                         \
    X(softmax_same_non_tnd, BNSD, FWD_IN, FR_E_LAYOUT, "softmax_layout",                                               \
      c->p.softmax_layout = FR_SOFTMAX_SAME_AS_INPUT)                                                                  \
    X(seqlen_q_non_tnd, BNSD, FWD_IN, FR_E_LAYOUT, "actual_seq_qlen", c->p.actual_seq_qlen = c->cq)                    \
    X(seqlen_kv_non_tnd, BSH, FWD_IN, FR_E_LAYOUT, "actual_seq_kvlen", c->p.actual_seq_kvlen = c->ck)                  \
    X(seqlen_len_non_tnd, SBH, FWD_IN, FR_E_LAYOUT, "actual_seq_len", c->p.actual_seq_len = 2)                         \
    /* dtypes */                                                                                                       \
    X(query_f64, BNSD, FWD_IN, FR_E_DTYPE, "query", c->in.query.dtype = FR_F64)                                        \
    X(query_i32, BNSD, FWD_IN, FR_E_DTYPE, "query", c->in.query.dtype = FR_I32)                                        \
    X(query_bad_enum, BNSD, FWD_IN, FR_E_DTYPE, "query", c->in.query.dtype = (fr_dtype)77)                             \
    X(key_dtype_differs, BNSD, FWD_IN, FR_E_DTYPE, "key", c->in.key.dtype = FR_BF16)                                   \
    X(value_dtype_differs, BSH, FWD_IN, FR_E_DTYPE, "value", c->in.value.dtype = FR_F16)                               \
    X(out_dtype_non_fp8, BNSD, FWD_IN, FR_E_DTYPE, "out_dtype", c->p.out_dtype = FR_BF16)                              \
    X(out_dtype_fp8_f32, FP8, FWD_IN, FR_E_DTYPE, "out_dtype", c->p.out_dtype = FR_F32)                                \
    X(out_dtype_fp8_e4m3, FP8, FWD_IN, FR_E_DTYPE, "out_dtype", c->p.out_dtype = FR_E4M3FN)                            \
    /* ranks */                                                                                                        \
    X(query_rank3_bnsd, BNSD, FWD_IN, FR_E_RANK, "query", c->in.query = MK(FR_F16, 2, 8, 64))                          \
    X(key_rank4_bsh, BSH, FWD_IN, FR_E_RANK, "key", c->in.key = MK(FR_BF16, 2, 6, 2, 16))                              \
    X(value_rank4_tnd, TND, FWD_IN, FR_E_RANK, "value", c->in.value = MK(FR_F32, 11, 1, 16, 1))                        \
    X(query_rank2_sbh, SBH, FWD_IN, FR_E_RANK, "query", c->in.query = MK(FR_F32, 8, 128))                              \
    /* shapes */                                                                                                       \
    X(key_B_differs, BNSD, FWD_IN, FR_E_SHAPE, "key", c->in.key.shape[0] = 3)                                          \
    X(value_B_differs, BSND, FWD_IN, FR_E_SHAPE, "value", c->in.value.shape[0] = 1)                                    \
    X(value_S_differs, BNSD, FWD_IN, FR_E_SHAPE, "value", c->in.value.shape[2] = 7)                                    \
    X(value_N_differs, BNSD, FWD_IN, FR_E_SHAPE, "value", c->in.value.shape[1] = 1)                                    \
    X(value_T_differs_tnd, TND, FWD_IN, FR_E_SHAPE, "value", c->in.value.shape[0] = 10)                                \
    X(key_B_differs_sbh, SBH, FWD_IN, FR_E_SHAPE, "key", c->in.key.shape[1] = 1)                                       \
    X(query_negative_dim, BNSD, FWD_IN, FR_E_SHAPE, "query", c->in.query.shape[2] = -8)                                \
    X(key_negative_dim_bsh, BSH, FWD_IN, FR_E_SHAPE, "key", c->in.key.shape[1] = -1)                                   \
    /* heads */                                                                                                        \
    X(head_num_negative, BNSD, FWD_IN, FR_E_HEADS, "head_num", c->p.head_num = -4)                                     \
    X(head_num_vs_query_N, BNSD, FWD_IN, FR_E_HEADS, "head_num", c->p.head_num = 2)                                    \
    X(head_num_vs_query_N_tnd, TND, FWD_IN, FR_E_HEADS, "head_num", c->p.head_num = 8)                                 \
    X(bsh_H_not_divisible, BSH, FWD_IN, FR_E_HEADS, "head_num", c->p.head_num = 3)                                     \
    X(bsh_head_num_zero, BSH, FWD_IN, FR_E_HEADS, "head_num", c->p.head_num = 0)                                       \
    X(bsh_key_H_not_multiple_of_D, BSH, FWD_IN, FR_E_HEADS, "key", c->in.key.shape[2] = 40)                            \
    X(n1_not_multiple_of_n2, BNSD, FWD_IN, FR_E_HEADS, "head_num", c->in.key.shape[1] = 3;                             \
      c->in.value.shape[1] = 3)                                                                                        \
    X(n2_zero_n1_positive, BNSD, FWD_IN, FR_E_HEADS, "head_num", c->in.key.shape[1] = 0; c->in.value.shape[1] = 0)     \
    X(bsh_n2_exceeds_n1, BSH, FWD_IN, FR_E_HEADS, "head_num", c->in.key.shape[2] = 96; c->in.value.shape[2] = 48)      \
    X(sbh_n1_not_multiple, SBH, FWD_IN, FR_E_HEADS, "head_num", c->in.key.shape[2] = 48; c->in.value.shape[2] = 24)    \
    /* head dims */                                                                                                    \
    X(key_D_differs, BNSD, FWD_IN, FR_E_HEAD_DIM, "key", c->in.key.shape[3] = 12)                                      \
    X(key_D_differs_tnd, TND, FWD_IN, FR_E_HEAD_DIM, "key", c->in.key.shape[2] = 8)                                    \
    X(dv_exceeds_dk, BNSD, FWD_IN, FR_E_HEAD_DIM, "value", c->in.value.shape[3] = 17)                                  \
    X(dv_exceeds_dk_bsnd, BSND, FWD_IN, FR_E_HEAD_DIM, "value", c->in.value.shape[3] = 32)                             \
    X(bsh_value_H_not_multiple, BSH, FWD_IN, FR_E_HEAD_DIM, "value", c->in.value.shape[2] = 15)                        \
    X(bsh_dv_exceeds_dk, BSH, FWD_IN, FR_E_HEAD_DIM, "value", c->in.value.shape[2] = 34)                               \
    X(bsh_d0_key_nonempty, BSH, FWD_IN, FR_E_HEAD_DIM, "key", c->in.query.shape[2] = 0)                                \
    /* ranges (D9) */                                                                                                  \
    X(n1_257, BNSD, FWD_IN, FR_E_RANGE, "head_num", c->p.head_num = 257; c->in.query.shape[1] = 257;                   \
      c->in.key.shape[1] = 257; c->in.value.shape[1] = 257)                                                            \
    X(d_769, BNSD, FWD_IN, FR_E_RANGE, "query", c->in.query.shape[3] = 769; c->in.key.shape[3] = 769)                  \
    X(s1_over_1m, BNSD, FWD_IN, FR_E_RANGE, "query", c->in.query.shape[2] = 1048577)                                   \
    X(s2_over_1m, BSH, FWD_IN, FR_E_RANGE, "key", c->in.key.shape[1] = 1048577; c->in.value.shape[1] = 1048577)        \
    X(b_over_2m, BSND, FWD_IN, FR_E_RANGE, "query", c->in.query.shape[0] = 2097153; c->in.key.shape[0] = 2097153;      \
      c->in.value.shape[0] = 2097153)                                                                                  \
    X(tnd_t_over_1m, TND, FWD_IN, FR_E_RANGE, "query", c->in.query.shape[0] = 1048577)                                 \
    X(tnd_b_over_2k, TND, FWD_IN, FR_E_RANGE, "actual_seq_len", c->p.actual_seq_len = 2049;                            \
      c->p.actual_seq_qlen = zeros; c->p.actual_seq_kvlen = zeros)                                                     \
    X(fp8_d_over_128, FP8, FWD_IN, FR_E_FP8, "query", c->in.query.shape[3] = 192; c->in.key.shape[3] = 192)            \
    X(prefix_b_over_2k, BNSD, FWD_IN, FR_E_RANGE, "prefix", c->in.query.shape[0] = 2049; c->in.key.shape[0] = 2049;    \
      c->in.value.shape[0] = 2049; c->p.sparse_mode = FR_SPARSE_PREFIX_COMPRESS;                                       \
      c->in.atten_mask = MK(FR_BOOL, 3072, 2048); c->p.prefix = zeros; c->p.prefix_len = 2049)                         \
    /* attributes */                                                                                                   \
    X(scale_nan, BNSD, FWD_IN, FR_E_SCALE, "scale_value", c->p.scale_value = NAN)                                      \
    X(scale_inf, BSH, FWD_IN, FR_E_SCALE, "scale_value", c->p.scale_value = -INFINITY)                                 \
    X(keep_prob_zero, BNSD, FWD_IN, FR_E_KEEP_PROB, "keep_prob", c->p.keep_prob = 0.0)                                 \
    X(keep_prob_above_one, BNSD, FWD_IN, FR_E_KEEP_PROB, "keep_prob", c->p.keep_prob = 1.5)                            \
    X(keep_prob_nan, BNSD, FWD_IN, FR_E_KEEP_PROB, "keep_prob", c->p.keep_prob = NAN)                                  \
    X(keep_prob_negative, TND, FWD_IN, FR_E_KEEP_PROB, "keep_prob", c->p.keep_prob = -0.5)                             \
    X(keep_prob_inf, TND, FWD_IN, FR_E_KEEP_PROB, "keep_prob", c->p.keep_prob = INFINITY)                              \
    X(pse_type_4, BNSD, FWD_IN, FR_E_PSE, "pse_type", c->p.pse_type = FR_PSE_TYPE_COUNT)                               \
    X(pse_type_neg, BNSD, FWD_IN, FR_E_PSE, "pse_type", c->p.pse_type = -1)                                            \
    X(sparse_mode_9, BNSD, FWD_IN, FR_E_SPARSE_MODE, "sparse_mode", c->p.sparse_mode = FR_SPARSE_MODE_COUNT)           \
    X(sparse_mode_neg_no_mask, BNSD, FWD_IN, FR_E_SPARSE_MODE, "sparse_mode", c->p.sparse_mode = -1)                   \
    X(inner_precise_3, BNSD, FWD_IN, FR_E_INVALID_ARG, "inner_precise", c->p.inner_precise = 3)                        \
    X(softmax_layout_5, TND, FWD_IN, FR_E_INVALID_ARG, "softmax_layout", c->p.softmax_layout = (fr_softmax_layout)5)   \
    X(q_start_idx_huge, BNSD, FWD_IN, FR_E_PSE, "q_start_idx", c->p.q_start_idx = INT64_C(1) << 40)                    \
    X(kv_start_idx_huge, BNSD, FWD_IN, FR_E_PSE, "kv_start_idx", c->p.kv_start_idx = -(INT64_C(1) << 40))              \
    X(prefix_len_negative, BNSD, FWD_IN, FR_E_PREFIX, "prefix_len", c->p.prefix_len = -1)                              \
    X(actual_seq_len_negative, TND, FWD_IN, FR_E_SEQLEN, "actual_seq_len", c->p.actual_seq_len = -1)                   \
    /* sparse modes with layouts, masks */                                                                             \
    X(mode7_non_tnd, BNSD, FWD_IN, FR_E_SPARSE_MODE, "sparse_mode",                                                    \
      c->p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND; c->in.atten_mask = MK(FR_BOOL, 2048, 2048))                 \
    X(mode8_non_tnd, BSH, FWD_IN, FR_E_SPARSE_MODE, "sparse_mode", c->p.sparse_mode = FR_SPARSE_BAND_LEFT_UP_CAUSAL;   \
      c->in.atten_mask = MK(FR_BOOL, 2048, 2048))                                                                      \
    X(mode5_tnd, TND, FWD_IN, FR_E_SPARSE_MODE, "sparse_mode", c->p.sparse_mode = FR_SPARSE_PREFIX;                    \
      c->in.atten_mask = MK(FR_BOOL, 4, 5))                                                                            \
    X(mask_dtype_f16, BNSD, FWD_IN, FR_E_MASK, "atten_mask", c->in.atten_mask = MK(FR_F16, 8, 6))                      \
    X(mask_dtype_i32, BNSD, FWD_IN, FR_E_MASK, "atten_mask", c->in.atten_mask = MK(FR_I32, 8, 6))                      \
    X(mask0_bad_cols, BNSD, FWD_IN, FR_E_MASK, "atten_mask", c->in.atten_mask = MK(FR_BOOL, 8, 7))                     \
    X(mask0_bad_heads, BNSD, FWD_IN, FR_E_MASK, "atten_mask", c->in.atten_mask = MK(FR_U8, 2, 2, 8, 6))                \
    X(mask0_transposed, BSH, FWD_IN, FR_E_MASK, "atten_mask", c->in.atten_mask = MK(FR_U8, 6, 8))                      \
    X(mask1_rank3, BNSD, FWD_IN, FR_E_MASK, "atten_mask", c->p.sparse_mode = FR_SPARSE_ALL_MASK;                       \
      c->in.atten_mask = MK(FR_BOOL, 2, 8, 6))                                                                         \
    X(mask2_full, BNSD, FWD_IN, FR_E_MASK, "atten_mask", c->p.sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL;                  \
      c->in.atten_mask = MK(FR_BOOL, 8, 6))                                                                            \
    X(mask3_half, BNSD, FWD_IN, FR_E_MASK, "atten_mask", c->p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL;               \
      c->in.atten_mask = MK(FR_BOOL, 2048, 1024))                                                                      \
    X(mask4_full, BSND, FWD_IN, FR_E_MASK, "atten_mask", c->p.sparse_mode = FR_SPARSE_BAND;                            \
      c->in.atten_mask = MK(FR_BOOL, 8, 6))                                                                            \
    X(mask6_2048, BNSD, FWD_IN, FR_E_MASK, "atten_mask", c->p.sparse_mode = FR_SPARSE_PREFIX_COMPRESS;                 \
      c->in.atten_mask = MK(FR_BOOL, 2048, 2048))                                                                      \
    X(mask5_2d_b2, BNSD, FWD_IN, FR_E_MASK, "atten_mask", c->p.sparse_mode = FR_SPARSE_PREFIX;                         \
      c->in.atten_mask = MK(FR_BOOL, 8, 6))                                                                            \
    X(mask0_tnd_b1ss, TND, FWD_IN, FR_E_MASK, "atten_mask", c->in.atten_mask = MK(FR_BOOL, 3, 1, 4, 5))                \
    X(mask7_tnd_full, TND, FWD_IN, FR_E_MASK, "atten_mask", c->p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND;       \
      c->in.atten_mask = MK(FR_BOOL, 4, 5))                                                                            \
    /* band rules (4.1) */                                                                                             \
    X(band_both_negative, BNSD, FWD_IN, FR_E_BAND, "pre_tokens", c->in.atten_mask = MK(FR_BOOL, 8, 6);                 \
      c->p.pre_tokens = -1; c->p.next_tokens = -1)                                                                     \
    X(band_next_beyond_s2, BNSD, FWD_IN, FR_E_BAND, "next_tokens", c->in.atten_mask = MK(FR_BOOL, 8, 6);               \
      c->p.pre_tokens = 100; c->p.next_tokens = -6)                                                                    \
    X(band_pre_below_abs_next, BNSD, FWD_IN, FR_E_BAND, "pre_tokens", c->in.atten_mask = MK(FR_BOOL, 8, 6);            \
      c->p.pre_tokens = 1; c->p.next_tokens = -2)                                                                      \
    X(band_next_below_abs_pre, BNSD, FWD_IN, FR_E_BAND, "next_tokens", c->in.atten_mask = MK(FR_BOOL, 8, 6);           \
      c->p.pre_tokens = -2; c->p.next_tokens = 1)                                                                      \
    X(band_pre_beyond_s1, BNSD, FWD_IN, FR_E_BAND, "pre_tokens", c->in.atten_mask = MK(FR_BOOL, 8, 6);                 \
      c->p.pre_tokens = -8; c->p.next_tokens = 100)                                                                    \
    X(band_no_overlap, BNSD, FWD_IN, FR_E_BAND, "pre_tokens", c->in.atten_mask = MK(FR_BOOL, 8, 6);                    \
      c->p.pre_tokens = -6; c->p.next_tokens = 10)                                                                     \
    X(band_int64_min, BNSD, FWD_IN, FR_E_BAND, "pre_tokens", c->in.atten_mask = MK(FR_BOOL, 8, 6);                     \
      c->p.pre_tokens = INT64_MIN; c->p.next_tokens = INT64_MIN)                                                       \
    X(band4_converted_both_negative, BNSD, FWD_IN, FR_E_BAND, "pre_tokens", c->p.sparse_mode = FR_SPARSE_BAND;         \
      c->in.atten_mask = MK(FR_BOOL, 2048, 2048); c->p.pre_tokens = -3; c->p.next_tokens = 1)                          \
    X(band4_tnd_batch, TND, FWD_IN, FR_E_BAND, "next_tokens", c->p.sparse_mode = FR_SPARSE_BAND;                       \
      c->in.atten_mask = MK(FR_BOOL, 2048, 2048); c->p.pre_tokens = 10; c->p.next_tokens = -3)                         \
    X(band7_next_positive, TND, FWD_IN, FR_E_BAND, "next_tokens", c->p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND; \
      c->in.atten_mask = MK(FR_BOOL, 2048, 2048); c->p.pre_tokens = 5; c->p.next_tokens = 1)                           \
    X(band7_pre_below_last_s2, TND, FWD_IN, FR_E_BAND, "pre_tokens",                                                   \
      c->p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND; c->in.atten_mask = MK(FR_BOOL, 2048, 2048);                 \
      c->p.pre_tokens = 4; c->p.next_tokens = 0)                                                                       \
    X(band7_next_below_s1_minus_s2, TND, FWD_IN, FR_E_BAND, "next_tokens",                                             \
      c->p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND; c->in.atten_mask = MK(FR_BOOL, 2048, 2048);                 \
      c->p.pre_tokens = 5; c->p.next_tokens = -2)                                                                      \
    X(band8_pre_below_first_s2, TND, FWD_IN, FR_E_BAND, "pre_tokens",                                                  \
      c->p.sparse_mode = FR_SPARSE_BAND_LEFT_UP_CAUSAL; c->in.atten_mask = MK(FR_BOOL, 2048, 2048);                    \
      c->p.pre_tokens = 1; c->p.next_tokens = 1)                                                                       \
    X(band8_next_below_s1_minus_s2, TND, FWD_IN, FR_E_BAND, "next_tokens",                                             \
      c->p.sparse_mode = FR_SPARSE_BAND_LEFT_UP_CAUSAL; c->in.atten_mask = MK(FR_BOOL, 2048, 2048);                    \
      c->p.pre_tokens = 2; c->p.next_tokens = 0)                                                                       \
    /* prefix (modes 5/6) */                                                                                           \
    X(prefix_missing_mode6, BNSD, FWD_IN, FR_E_PREFIX, "prefix", c->p.sparse_mode = FR_SPARSE_PREFIX_COMPRESS;         \
      c->in.atten_mask = MK(FR_BOOL, 3072, 2048))                                                                      \
    X(prefix_wrong_length, BNSD, FWD_IN, FR_E_PREFIX, "prefix", c->p.sparse_mode = FR_SPARSE_PREFIX;                   \
      c->in.atten_mask = MK(FR_BOOL, 2, 4, 8, 6); c->p.prefix = c->prefix; c->p.prefix_len = 3)                        \
    X(prefix_above_s2, BNSD, FWD_IN, FR_E_PREFIX, "prefix", c->p.sparse_mode = FR_SPARSE_PREFIX_COMPRESS;              \
      c->in.atten_mask = MK(FR_BOOL, 3072, 2048); c->p.prefix = c->prefix; c->p.prefix_len = 2; c->prefix[1] = 7)      \
    X(prefix_negative, BNSD, FWD_IN, FR_E_PREFIX, "prefix", c->p.sparse_mode = FR_SPARSE_PREFIX_COMPRESS;              \
      c->in.atten_mask = MK(FR_BOOL, 3072, 2048); c->p.prefix = c->prefix; c->p.prefix_len = 2; c->prefix[0] = -1)     \
    X(prefix_below_s2_minus_s1, BIG, FWD_IN, FR_E_PREFIX, "prefix", c->p.sparse_mode = FR_SPARSE_PREFIX_COMPRESS;      \
      c->in.key.shape[2] = 2100; c->in.value.shape[2] = 2100; c->in.atten_mask = MK(FR_BOOL, 3072, 2048);              \
      c->p.prefix = c->prefix; c->p.prefix_len = 1; c->prefix[0] = 51)                                                 \
    X(prefix_tnd_batch_range, TND, FWD_IN, FR_E_PREFIX, "prefix", c->p.sparse_mode = FR_SPARSE_PREFIX_COMPRESS;        \
      c->in.atten_mask = MK(FR_BOOL, 3072, 2048); c->p.prefix = c->prefix; c->p.prefix_len = 3; c->prefix[0] = 1;      \
      c->prefix[1] = 4; c->prefix[2] = 6)                                                                              \
    /* pse (5) */                                                                                                      \
    X(pse_dtype_differs, BNSD, FWD_IN, FR_E_PSE, "real_shift", c->in.real_shift = MK(FR_F32, 2, 4, 8, 6))              \
    X(pse_bad_cols, BNSD, FWD_IN, FR_E_PSE, "real_shift", c->in.real_shift = MK(FR_F16, 2, 4, 8, 7))                   \
    X(pse_rank3, BNSD, FWD_IN, FR_E_PSE, "real_shift", c->in.real_shift = MK(FR_F16, 4, 8, 6))                         \
    X(pse_bad_heads, BSH, FWD_IN, FR_E_PSE, "real_shift", c->in.real_shift = MK(FR_BF16, 2, 2, 8, 6))                  \
    X(pse_b1_n1_1_s2, BNSD, FWD_IN, FR_E_PSE, "real_shift", c->in.real_shift = MK(FR_F16, 1, 4, 1, 6))                 \
    X(pse_compressed_small_s, BNSD, FWD_IN, FR_E_PSE, "real_shift", c->in.atten_mask = MK(FR_BOOL, 2048, 2048);        \
      c->p.sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL; c->in.real_shift = MK(FR_F16, 2, 4, 1024, 6))                       \
    X(pse_compressed_no_mask, BIG, FWD_IN, FR_E_PSE, "real_shift", c->in.real_shift = MK(FR_F16, 1, 1, 1024, 2048))    \
    X(pse_compressed_s1_ne_s2, BIG, FWD_IN, FR_E_PSE, "real_shift", c->in.key.shape[2] = 2050;                         \
      c->in.value.shape[2] = 2050; c->in.atten_mask = MK(FR_BOOL, 2048, 2048);                                         \
      c->p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL; c->in.real_shift = MK(FR_F16, 1, 1, 1024, 2050))                 \
    X(pse_compressed_mode0_not_causal, BIG, FWD_IN, FR_E_PSE, "real_shift",                                            \
      c->in.atten_mask = MK(FR_BOOL, 2048, 2048); c->in.real_shift = MK(FR_F16, 1, 1, 1024, 2048))                     \
    X(pse_compressed_mode4, BIG, FWD_IN, FR_E_PSE, "real_shift", c->p.sparse_mode = FR_SPARSE_BAND;                    \
      c->in.atten_mask = MK(FR_BOOL, 2048, 2048); c->in.real_shift = MK(FR_F16, 1, 1, 1024, 2048))                     \
    X(pse2_dtype_f16, BNSD, FWD_IN, FR_E_PSE, "real_shift", c->p.pse_type = FR_PSE_INNER_MUL_ADD;                      \
      c->in.real_shift = MK(FR_F16, 2, 4))                                                                             \
    X(pse2_full_shape, BNSD, FWD_IN, FR_E_PSE, "real_shift", c->p.pse_type = FR_PSE_INNER_MUL_ADD;                     \
      c->in.real_shift = MK(FR_F32, 2, 4, 8, 6))                                                                       \
    X(pse3_s1_ne_s2, BNSD, FWD_IN, FR_E_PSE, "real_shift", c->p.pse_type = FR_PSE_INNER_MUL_ADD_SQRT;                  \
      c->in.real_shift = MK(FR_F32, 4))                                                                                \
    X(pse3_slopes_wrong_n, BSH, FWD_IN, FR_E_PSE, "real_shift", c->p.pse_type = FR_PSE_INNER_MUL_ADD_SQRT;             \
      c->in.real_shift = MK(FR_F32, 3))                                                                                \
    X(pse_mode7_tnd, TNDEQ, FWD_IN, FR_E_PSE, "real_shift", c->p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND;       \
      c->in.atten_mask = MK(FR_BOOL, 2048, 2048); c->p.pre_tokens = 2; c->p.next_tokens = 0;                           \
      c->in.real_shift = MK(FR_BF16, 3, 2, 1024, 5))                                                                   \
    X(pse_tnd_empty_batch, TNDEQ, FWD_IN, FR_E_PSE, "real_shift", c->cq[1] = c->ck[1] = 3; c->cq[2] = c->ck[2] = 5;    \
      c->in.query.shape[0] = c->in.key.shape[0] = c->in.value.shape[0] = 5; c->p.pse_type = FR_PSE_INNER_MUL_ADD;      \
      c->in.real_shift = MK(FR_F32, 2))                                                                                \
    X(pse_tnd_s1_ne_s2, TNDEQ, FWD_IN, FR_E_PSE, "real_shift", c->ck[0] = 4; c->ck[1] = 9; c->ck[2] = 11;              \
      c->in.key.shape[0] = 11; c->in.value.shape[0] = 11; c->p.pse_type = FR_PSE_INNER_MUL_ADD;                        \
      c->in.real_shift = MK(FR_F32, 2))                                                                                \
    X(pse_tnd_full_shape, TNDEQ, FWD_IN, FR_E_PSE, "real_shift", c->in.atten_mask = MK(FR_BOOL, 2048, 2048);           \
      c->p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL; c->in.real_shift = MK(FR_BF16, 3, 2, 5, 5))                      \
    X(pse_fp8, FP8, FWD_IN, FR_E_FP8, "real_shift", c->in.real_shift = MK(FR_F16, 1, 2, 200, 300))                     \
    /* dropout (6) */                                                                                                  \
    X(drop_missing, BNSD, FWD_IN, FR_E_DROPOUT, "drop_mask", c->p.keep_prob = 0.9)                                     \
    X(drop_dtype_bool, BNSD, FWD_IN, FR_E_DROPOUT, "drop_mask", c->p.keep_prob = 0.9;                                  \
      c->in.drop_mask = MK(FR_BOOL, 48))                                                                               \
    X(drop_rank2, BNSD, FWD_IN, FR_E_DROPOUT, "drop_mask", c->p.keep_prob = 0.9; c->in.drop_mask = MK(FR_U8, 6, 8))    \
    X(drop_too_short, BNSD, FWD_IN, FR_E_DROPOUT, "drop_mask", c->p.keep_prob = 0.9; c->in.drop_mask = MK(FR_U8, 47))  \
    X(drop_too_short_tnd, TND, FWD_IN, FR_E_DROPOUT, "drop_mask", c->p.keep_prob = 0.5;                                \
      c->in.drop_mask = MK(FR_U8, 12))                                                                                 \
    X(drop_bits_overflow, HUGE, FWD_IN, FR_E_OVERFLOW, "drop_mask", c->p.keep_prob = 0.5;                              \
      c->in.drop_mask = MK(FR_U8, 1000))                                                                               \
    X(fp8_keep_prob, FP8, FWD_IN, FR_E_FP8, "keep_prob", c->p.keep_prob = 0.5;                                         \
      c->in.drop_mask = MK(FR_U8, 120000))                                                                             \
    X(fp8_drop_mask, FP8, FWD_IN, FR_E_FP8, "drop_mask", c->in.drop_mask = MK(FR_U8, 120000))                          \
    /* fp8 restrictions and dequant scales (7, aclnn FP8 docs) */                                                      \
    X(fp8_mask, FP8, FWD_IN, FR_E_FP8, "atten_mask", c->in.atten_mask = MK(FR_BOOL, 200, 300))                         \
    X(fp8_rope, FP8, FWD_IN, FR_E_FP8, "query_rope", c->in.query_rope = MK(FR_E4M3FN, 1, 200, 2, 32);                  \
      c->in.key_rope = MK(FR_E4M3FN, 1, 300, 2, 32))                                                                   \
    X(fp8_dscale_q_missing, FP8, FWD_IN, FR_E_DEQUANT_SCALE, "d_scale_q", c->in.d_scale_q.dtype = FR_DT_NONE)          \
    X(fp8_dscale_k_block128, FP8, FWD_IN, FR_E_DEQUANT_SCALE, "d_scale_k", c->in.d_scale_k = MK(FR_F32, 1, 2, 3, 1))   \
    X(fp8_dscale_v_dtype, FP8, FWD_IN, FR_E_DEQUANT_SCALE, "d_scale_v", c->in.d_scale_v.dtype = FR_F16)                \
    X(fp8_dscale_q_one_block, FP8, FWD_IN, FR_E_DEQUANT_SCALE, "d_scale_q", c->in.d_scale_q = MK(FR_F32, 1, 2, 1, 1))  \
    X(fp8_dscale_q_rank3, FP8, FWD_IN, FR_E_DEQUANT_SCALE, "d_scale_q", c->in.d_scale_q = MK(FR_F32, 1, 2, 2))         \
    X(dscale_non_fp8, BNSD, FWD_IN, FR_E_DEQUANT_SCALE, "d_scale_q", c->in.d_scale_q = MK(FR_F32, 2, 4, 1, 1))         \
    X(dscale_v_non_fp8, TND, FWD_IN, FR_E_DEQUANT_SCALE, "d_scale_v", c->in.d_scale_v = MK(FR_F32, 3, 1, 1, 1))        \
    /* rope */                                                                                                         \
    X(rope_query_only, BNSD, FWD_IN, FR_E_ROPE, "key_rope", c->in.query_rope = MK(FR_F16, 2, 4, 8, 4))                 \
    X(rope_key_only, BNSD, FWD_IN, FR_E_ROPE, "query_rope", c->in.key_rope = MK(FR_F16, 2, 2, 6, 4))                   \
    X(rope_dtype, BNSD, FWD_IN, FR_E_ROPE, "query_rope", c->in.query_rope = MK(FR_F32, 2, 4, 8, 4);                    \
      c->in.key_rope = MK(FR_F16, 2, 2, 6, 4))                                                                         \
    X(rope_query_S, BNSD, FWD_IN, FR_E_ROPE, "query_rope", c->in.query_rope = MK(FR_F16, 2, 4, 7, 4);                  \
      c->in.key_rope = MK(FR_F16, 2, 2, 6, 4))                                                                         \
    X(rope_key_drope, BNSD, FWD_IN, FR_E_ROPE, "key_rope", c->in.query_rope = MK(FR_F16, 2, 4, 8, 4);                  \
      c->in.key_rope = MK(FR_F16, 2, 2, 6, 8))                                                                         \
    X(rope_key_heads, TND, FWD_IN, FR_E_ROPE, "key_rope", c->in.query_rope = MK(FR_F32, 7, 4, 8);                      \
      c->in.key_rope = MK(FR_F32, 11, 4, 8))                                                                           \
    X(rope_bsh_H, BSH, FWD_IN, FR_E_ROPE, "query_rope", c->in.query_rope = MK(FR_BF16, 2, 8, 6);                       \
      c->in.key_rope = MK(FR_BF16, 2, 6, 4))                                                                           \
    X(rope_drope_zero, BNSD, FWD_IN, FR_E_ROPE, "query_rope", c->in.query_rope = MK(FR_F16, 2, 4, 8, 0);               \
      c->in.key_rope = MK(FR_F16, 2, 2, 6, 0))                                                                         \
    X(rope_rank, BNSD, FWD_IN, FR_E_ROPE, "query_rope", c->in.query_rope = MK(FR_F16, 2, 8, 16);                       \
      c->in.key_rope = MK(FR_F16, 2, 2, 6, 4))                                                                         \
    /* sink, topk */                                                                                                   \
    X(sink_dtype, BNSD, FWD_IN, FR_E_SINK, "sink", c->in.sink = MK(FR_F16, 4))                                         \
    X(sink_shape, BNSD, FWD_IN, FR_E_SINK, "sink", c->in.sink = MK(FR_F32, 5))                                         \
    X(sink_rank2, TND, FWD_IN, FR_E_SINK, "sink", c->in.sink = MK(FR_F32, 1, 4))                                       \
    X(topk_dtype, BNSD, FWD_IN, FR_E_TOPK, "topk_indices", c->in.topk_indices = MK(FR_I64, 2, 8, 3))                   \
    X(topk_rows, BNSD, FWD_IN, FR_E_TOPK, "topk_indices", c->in.topk_indices = MK(FR_I32, 2, 9, 3))                    \
    X(topk_rank2, BSH, FWD_IN, FR_E_TOPK, "topk_indices", c->in.topk_indices = MK(FR_I32, 16, 3))                      \
    X(topk_query_heads, BNSD, FWD_IN, FR_E_TOPK, "topk_indices", c->in.topk_indices = MK(FR_I32, 2, 4, 8, 3))          \
    X(topk_tnd_rows, TND, FWD_IN, FR_E_TOPK, "topk_indices", c->in.topk_indices = MK(FR_I32, 8, 3))                    \
    X(topk_tnd_rank4, TND, FWD_IN, FR_E_TOPK, "topk_indices", c->in.topk_indices = MK(FR_I32, 3, 7, 1, 3))             \
    /* TND sequence offsets */                                                                                         \
    X(tnd_qlen_null, TND, FWD_IN, FR_E_SEQLEN, "actual_seq_qlen", c->p.actual_seq_qlen = NULL)                         \
    X(tnd_kvlen_null, TND, FWD_IN, FR_E_SEQLEN, "actual_seq_kvlen", c->p.actual_seq_kvlen = NULL)                      \
    X(tnd_qlen_decreasing, TND, FWD_IN, FR_E_SEQLEN, "actual_seq_qlen", c->cq[1] = 2)                                  \
    X(tnd_kvlen_decreasing, TNDEQ, FWD_IN, FR_E_SEQLEN, "actual_seq_kvlen", c->ck[2] = 7)                              \
    X(tnd_qlen_negative, TND, FWD_IN, FR_E_SEQLEN, "actual_seq_qlen", c->cq[0] = -1)                                   \
    X(tnd_qlen_last_ne_T, TND, FWD_IN, FR_E_SEQLEN, "actual_seq_qlen", c->cq[2] = 6)                                   \
    X(tnd_kvlen_last_ne_T, TND, FWD_IN, FR_E_SEQLEN, "actual_seq_kvlen", c->ck[2] = 10)                                \
    X(tnd_qlen_beyond_T, TND, FWD_IN, FR_E_SEQLEN, "actual_seq_qlen", c->cq[1] = 8; c->cq[2] = 8)                      \
    X(tnd_kv_empty_q_not, TND, FWD_IN, FR_E_SEQLEN, "actual_seq_kvlen", c->ck[0] = 0)                                  \
    X(tnd_length_short, TND, FWD_IN, FR_E_SEQLEN, "actual_seq_qlen", c->p.actual_seq_len = 2)                          \
    /* 64-bit overflow */                                                                                              \
    X(query_stride_overflow, BNSD, FWD_IN, FR_E_OVERFLOW, "query", c->in.query.strides[0] = INT64_MAX / 2)             \
    X(mask_stride_overflow, BNSD, FWD_IN, FR_E_OVERFLOW, "atten_mask", c->in.atten_mask = MK(FR_BOOL, 8, 6);           \
      c->in.atten_mask.strides[1] = INT64_MIN)                                                                         \
    X(mask_numel_overflow, HUGE, FWD_IN, FR_E_OVERFLOW, "atten_mask",                                                  \
      c->in.atten_mask = MK(FR_BOOL, 2097152, 256, 1048576, 1048576))                                                  \
    X(pse_numel_overflow, HUGE, FWD_IN, FR_E_OVERFLOW, "real_shift",                                                   \
      c->in.real_shift = MK(FR_F16, 2097152, 256, 1048576, 1048576))                                                   \
    /* backward inputs */                                                                                              \
    X(bwd_dy_absent, BNSD, BWD, FR_E_NULL, "dy", c->dy.dtype = FR_DT_NONE)                                             \
    X(bwd_dy_dtype, BNSD, BWD, FR_E_DTYPE, "dy", c->dy.dtype = FR_F32)                                                 \
    X(bwd_dy_shape, BNSD, BWD, FR_E_SHAPE, "dy", c->dy.shape[3] = 16)                                                  \
    X(bwd_dy_rank, BSH, BWD, FR_E_RANK, "dy", c->dy = MK(FR_BF16, 2, 8, 4, 8))                                         \
    X(bwd_dy_data_null, TND, BWD, FR_E_NULL, "dy", c->dy.data = NULL)                                                  \
    X(bwd_attention_in_shape, BSH, BWD, FR_E_SHAPE, "attention_in", c->ain.shape[2] = 64)                              \
    X(bwd_attention_in_dtype, SBH, BWD, FR_E_DTYPE, "attention_in", c->ain.dtype = FR_F16)                             \
    X(bwd_softmax_max_dtype, BNSD, BWD, FR_E_SOFTMAX_STATS, "softmax_max", c->smax.dtype = FR_F16)                     \
    X(bwd_softmax_sum_shape, BNSD, BWD, FR_E_SOFTMAX_STATS, "softmax_sum", c->ssum = MK(FR_F32, 2, 4, 8, 1))           \
    X(bwd_softmax_layout_tnd, TND, BWD, FR_E_SOFTMAX_STATS, "softmax_max",                                             \
      c->p.softmax_layout = FR_SOFTMAX_SAME_AS_INPUT; c->ssum = MK(FR_F32, 7, 4, 8))                                   \
    X(bwd_softmax_max_absent, TND, BWD, FR_E_NULL, "softmax_max", c->smax.dtype = FR_DT_NONE)                          \
    X(bwd_fp8_dy_dtype, FP8, BWD, FR_E_DTYPE, "dy", c->dy.dtype = FR_E4M3FN)                                           \
    X(bwd_fp8_ain_bf16, FP8, BWD, FR_E_DTYPE, "attention_in", c->ain.dtype = FR_BF16)                                  \
    /* forward outputs */                                                                                              \
    X(out_null, BNSD, FWD_OUT, FR_E_NULL, "outputs", c->null_out = true)                                               \
    X(out_absent, BNSD, FWD_OUT, FR_E_NULL, "attention_out", c->fo.attention_out.dtype = FR_DT_NONE)                   \
    X(out_dtype, BNSD, FWD_OUT, FR_E_OUTPUT, "attention_out", c->fo.attention_out.dtype = FR_BF16)                     \
    X(out_shape_dk, BNSD, FWD_OUT, FR_E_OUTPUT, "attention_out", c->fo.attention_out.shape[3] = 16)                    \
    X(out_bsh_h_dk, BSH, FWD_OUT, FR_E_OUTPUT, "attention_out", c->fo.attention_out.shape[2] = 64)                     \
    X(out_data_null, BNSD, FWD_OUT, FR_E_NULL, "attention_out", c->fo.attention_out.data = NULL)                       \
    X(out_stride_overflow, TND, FWD_OUT, FR_E_OVERFLOW, "attention_out",                                               \
      c->fo.attention_out.strides[0] = INT64_MAX / 4)                                                                  \
    X(out_softmax_max_shape, BNSD, FWD_OUT, FR_E_OUTPUT, "softmax_max", c->fo.softmax_max = MK(FR_F32, 2, 4, 8, 1))    \
    X(out_softmax_sum_dtype, BNSD, FWD_OUT, FR_E_OUTPUT, "softmax_sum", c->fo.softmax_sum.dtype = FR_F16)              \
    X(out_softmax_tnd_layout, TND, FWD_OUT, FR_E_OUTPUT, "softmax_max", c->fo.softmax_max = MK(FR_F32, 7, 4, 8))       \
    X(out_fp8_dtype, FP8, FWD_OUT, FR_E_OUTPUT, "attention_out", c->fo.attention_out.dtype = FR_E4M3FN)                \
    X(out_fp8_bf16_vs_f16, FP8, FWD_OUT, FR_E_OUTPUT, "attention_out", c->p.out_dtype = FR_BF16)                       \
    /* backward outputs */                                                                                             \
    X(bwd_out_null, BNSD, BWD, FR_E_NULL, "outputs", c->null_out = true)                                               \
    X(bwd_dq_shape, BNSD, BWD, FR_E_OUTPUT, "dq", c->bo.dq.shape[3] = 8)                                               \
    X(bwd_dk_dtype, BNSD, BWD, FR_E_OUTPUT, "dk", c->bo.dk.dtype = FR_BF16)                                            \
    X(bwd_dv_shape, BSH, BWD, FR_E_OUTPUT, "dv", c->bo.dv.shape[2] = 32)                                               \
    X(bwd_dv_data_null, BNSD, BWD, FR_E_NULL, "dv", c->bo.dv.data = NULL)                                              \
    X(bwd_dq_absent, TND, BWD, FR_E_NULL, "dq", c->bo.dq.dtype = FR_DT_NONE)                                           \
    X(bwd_dq_rope_missing, BNSD, BWD, FR_E_NULL, "dq_rope", c->in.query_rope = MK(FR_F16, 2, 4, 8, 4);                 \
      c->in.key_rope = MK(FR_F16, 2, 2, 6, 4); c->bo.dk_rope = MK(FR_F16, 2, 2, 6, 4))                                 \
    X(bwd_dk_rope_shape, BNSD, BWD, FR_E_OUTPUT, "dk_rope", c->in.query_rope = MK(FR_F16, 2, 4, 8, 4);                 \
      c->in.key_rope = MK(FR_F16, 2, 2, 6, 4); c->bo.dq_rope = MK(FR_F16, 2, 4, 8, 4);                                 \
      c->bo.dk_rope = MK(FR_F16, 2, 4, 6, 4))                                                                          \
    X(bwd_dq_rope_without_rope, BNSD, BWD, FR_E_OUTPUT, "dq_rope", c->bo.dq_rope = MK(FR_F16, 2, 4, 8, 4))             \
    X(bwd_dsink_missing, BNSD, BWD, FR_E_NULL, "dsink", c->in.sink = MK(FR_F32, 4))                                    \
    X(bwd_dsink_without_sink, BNSD, BWD, FR_E_OUTPUT, "dsink", c->bo.dsink = MK(FR_F32, 4))                            \
    X(bwd_dsink_dtype, BNSD, BWD, FR_E_OUTPUT, "dsink", c->in.sink = MK(FR_F32, 4); c->bo.dsink = MK(FR_F16, 4))       \
    X(bwd_fp8_dq_dtype, FP8, BWD, FR_E_OUTPUT, "dq", c->bo.dq.dtype = FR_E4M3FN)

/* ---------------------------------------------------------------------------------------------------------------- */
/* Valid edge configurations: X(name, base, mutation...) */

#define VALID_ROWS(X)                                                                                                  \
    X(base_bnsd, BNSD, (void)c)                                                                                        \
    X(base_bsh, BSH, (void)c)                                                                                          \
    X(base_sbh, SBH, (void)c)                                                                                          \
    X(base_bsnd, BSND, (void)c)                                                                                        \
    X(base_tnd_empty_q_sequence, TND, (void)c)                                                                         \
    X(base_tnd_equal, TNDEQ, (void)c)                                                                                  \
    X(base_fp8_e4m3fn, FP8, (void)c)                                                                                   \
    X(fp8_e5m2_bf16_out, FP8, dense(c, FR_BSND, FR_E5M2, 1, 2, 2, 200, 300, 64, 64); c->p.out_dtype = FR_BF16;         \
      c->fo.attention_out.dtype = FR_BF16; c->dy.dtype = c->ain.dtype = FR_BF16; c->bo.dq.dtype = FR_BF16)             \
    X(fp8_hif8_d128, FP8, dense(c, FR_BNSD, FR_HIF8, 1, 2, 1, 129, 257, 128, 64))                                      \
    X(limits_max, HUGE, (void)c)                                                                                       \
    X(d768, BNSD, dense(c, FR_BNSD, FR_F32, 1, 1, 1, 4, 4, 768, 768))                                                  \
    X(empty_B, BNSD, dense(c, FR_BNSD, FR_F16, 0, 4, 2, 8, 6, 16, 8))                                                  \
    X(empty_B_bsh, BSH, dense(c, FR_BSH, FR_BF16, 0, 4, 2, 8, 6, 16, 8))                                               \
    X(empty_N, BNSD, dense(c, FR_BNSD, FR_F16, 2, 0, 0, 8, 6, 16, 8))                                                  \
    X(empty_S1, BSND, dense(c, FR_BSND, FR_F16, 2, 4, 2, 0, 6, 16, 8))                                                 \
    X(empty_S2, BNSD, dense(c, FR_BNSD, FR_F16, 2, 4, 2, 8, 0, 16, 8))                                                 \
    X(empty_S2_sbh, SBH, dense(c, FR_SBH, FR_F32, 2, 4, 2, 8, 0, 16, 8))                                               \
    X(empty_D, BNSD, dense(c, FR_BNSD, FR_F16, 2, 4, 2, 8, 6, 0, 0))                                                   \
    X(empty_D_bsh, BSH, dense(c, FR_BSH, FR_BF16, 2, 4, 4, 8, 6, 0, 0))                                                \
    X(empty_Dv_only, BNSD, dense(c, FR_BNSD, FR_F16, 2, 4, 2, 8, 6, 16, 0))                                            \
    X(empty_tnd_B0, TND, varlen(c, FR_F32, 0, NULL, NULL, 4, 1, 16, 16); c->p.actual_seq_qlen = NULL;                  \
      c->p.actual_seq_kvlen = NULL)                                                                                    \
    X(tnd_all_sequences_empty, TND,                                                                                    \
      varlen(c, FR_F16, 2, (const int64_t[]){0, 0}, (const int64_t[]){0, 3}, 2, 2, 8, 8))                              \
    X(empty_with_null_data, BNSD, dense(c, FR_BNSD, FR_F16, 0, 4, 2, 8, 6, 16, 8); c->in.query.data = NULL;            \
      c->fo.attention_out.data = NULL; c->bo.dq.data = NULL)                                                           \
    X(s1_is_1, BNSD, dense(c, FR_BNSD, FR_F16, 2, 4, 2, 1, 6, 16, 8))                                                  \
    X(s_both_1, BSH, dense(c, FR_BSH, FR_BF16, 1, 1, 1, 1, 1, 1, 1))                                                   \
    X(mqa_n2_1, BSH, dense(c, FR_BSH, FR_BF16, 2, 8, 1, 8, 6, 16, 16))                                                 \
    X(dv_1_lt_dk, SBH, dense(c, FR_SBH, FR_F32, 2, 4, 2, 8, 6, 16, 1))                                                 \
    X(odd_head_dim_59, BSND, dense(c, FR_BSND, FR_F16, 1, 3, 3, 5, 7, 59, 59))                                         \
    X(strided_query, BNSD, c->in.query.strides[0] = 1000; c->in.query.strides[3] = 2)                                  \
    X(mode0_full_2d, BNSD, c->in.atten_mask = MK(FR_BOOL, 8, 6))                                                       \
    X(mode0_11ss, BNSD, c->in.atten_mask = MK(FR_U8, 1, 1, 8, 6))                                                      \
    X(mode0_b1ss, BSH, c->in.atten_mask = MK(FR_U8, 2, 1, 8, 6))                                                       \
    X(mode0_bnss, SBH, c->in.atten_mask = MK(FR_BOOL, 2, 4, 8, 6))                                                     \
    X(mode0_band_negative_next, BNSD, c->in.atten_mask = MK(FR_BOOL, 8, 6); c->p.pre_tokens = 3;                       \
      c->p.next_tokens = -2)                                                                                           \
    X(mode0_band_negative_pre, BNSD, c->in.atten_mask = MK(FR_BOOL, 8, 6); c->p.pre_tokens = -2;                       \
      c->p.next_tokens = 5)                                                                                            \
    X(mode0_causal_band, BNSD, c->in.atten_mask = MK(FR_BOOL, 8, 6); c->p.pre_tokens = 8; c->p.next_tokens = 0)        \
    X(mode0_tnd, TND, c->in.atten_mask = MK(FR_BOOL, 4, 5))                                                            \
    X(mode0_negative_next_empty_S2, BNSD, dense(c, FR_BNSD, FR_F16, 2, 4, 2, 8, 0, 16, 8);                             \
      c->in.atten_mask = MK(FR_BOOL, 8, 0); c->p.pre_tokens = 5; c->p.next_tokens = -3)                                \
    X(mode1, BNSD, c->p.sparse_mode = FR_SPARSE_ALL_MASK; c->in.atten_mask = MK(FR_BOOL, 2, 4, 8, 6);                  \
      c->p.pre_tokens = -100; c->p.next_tokens = -100)                                                                 \
    X(mode2, BNSD, c->p.sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL; c->in.atten_mask = MK(FR_BOOL, 2048, 2048))            \
    X(mode3, BSH, c->p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL; c->in.atten_mask = MK(FR_U8, 2048, 2048))            \
    X(mode3_tnd, TND, c->p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL;                                                  \
      c->in.atten_mask = MK(FR_BOOL, 1, 1, 2048, 2048))                                                                \
    X(mode4, BNSD, c->p.sparse_mode = FR_SPARSE_BAND; c->in.atten_mask = MK(FR_BOOL, 2048, 2048); c->p.pre_tokens = 2; \
      c->p.next_tokens = 1)                                                                                            \
    X(mode4_tnd, TND, c->p.sparse_mode = FR_SPARSE_BAND; c->in.atten_mask = MK(FR_BOOL, 2048, 2048);                   \
      c->p.pre_tokens = 3; c->p.next_tokens = 0)                                                                       \
    X(mode5, BNSD, c->p.sparse_mode = FR_SPARSE_PREFIX; c->in.atten_mask = MK(FR_BOOL, 2, 1, 8, 6);                    \
      c->p.prefix = c->prefix; c->p.prefix_len = 2; c->prefix[0] = 0; c->prefix[1] = 6)                                \
    /* mode 5: an absent prefix or prefix[b] > S2 means full compute (spec 4.2): only the user mask applies */        \
    X(mode5_no_prefix, BNSD, c->p.sparse_mode = FR_SPARSE_PREFIX; c->in.atten_mask = MK(FR_BOOL, 2, 1, 8, 6))          \
    X(mode5_prefix_above_s2, BNSD, c->p.sparse_mode = FR_SPARSE_PREFIX; c->in.atten_mask = MK(FR_BOOL, 2, 1, 8, 6);    \
      c->p.prefix = c->prefix; c->p.prefix_len = 2; c->prefix[0] = 7; c->prefix[1] = 6)                                \
    X(mode5_b1_2d, BIG, c->p.sparse_mode = FR_SPARSE_PREFIX; c->in.atten_mask = MK(FR_BOOL, 2048, 2048);               \
      c->p.prefix = c->prefix; c->p.prefix_len = 1; c->prefix[0] = 100)                                                \
    X(mode6, BSND, c->p.sparse_mode = FR_SPARSE_PREFIX_COMPRESS; c->in.atten_mask = MK(FR_BOOL, 3072, 2048);           \
      c->p.prefix = c->prefix; c->p.prefix_len = 2; c->prefix[0] = 3; c->prefix[1] = 5)                                \
    X(mode6_tnd, TND, c->p.sparse_mode = FR_SPARSE_PREFIX_COMPRESS; c->in.atten_mask = MK(FR_BOOL, 3072, 2048);        \
      c->p.prefix = c->prefix; c->p.prefix_len = 3; c->prefix[0] = 1; c->prefix[1] = 4; c->prefix[2] = 2)              \
    X(mode7_tnd, TND, c->p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND; c->in.atten_mask = MK(FR_BOOL, 2048, 2048); \
      c->p.pre_tokens = 5; c->p.next_tokens = -1)                                                                      \
    X(mode8_tnd, TND, c->p.sparse_mode = FR_SPARSE_BAND_LEFT_UP_CAUSAL; c->in.atten_mask = MK(FR_BOOL, 2048, 2048);    \
      c->p.pre_tokens = 2; c->p.next_tokens = 1)                                                                       \
    X(no_mask_mode7_bad_band_ignored, BNSD, c->p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND; c->p.pre_tokens = -5; \
      c->p.next_tokens = -5)                                                                                           \
    X(no_mask_mode6_no_prefix_ignored, BSH, c->p.sparse_mode = FR_SPARSE_PREFIX_COMPRESS)                              \
    X(pse1_full, BNSD, c->in.real_shift = MK(FR_F16, 2, 4, 8, 6))                                                      \
    X(pse0_row, BSH, c->p.pse_type = FR_PSE_OUTER_MUL_ADD; c->in.real_shift = MK(FR_BF16, 2, 4, 1, 6))                 \
    X(pse1_b1, SBH, c->in.real_shift = MK(FR_F32, 1, 4, 8, 6))                                                         \
    X(pse2_slopes_bn, BIG, c->p.pse_type = FR_PSE_INNER_MUL_ADD; c->in.real_shift = MK(FR_F32, 1, 1);                  \
      c->p.q_start_idx = 3; c->p.kv_start_idx = -2)                                                                    \
    X(pse3_slopes_n, BNSD, dense(c, FR_BNSD, FR_F16, 2, 4, 2, 8, 8, 16, 8); c->p.pse_type = FR_PSE_INNER_MUL_ADD_SQRT; \
      c->in.real_shift = MK(FR_F32, 4))                                                                                \
    X(pse_compressed_mode3, BIG, c->p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL;                                       \
      c->in.atten_mask = MK(FR_BOOL, 2048, 2048); c->in.real_shift = MK(FR_F16, 1, 1, 1024, 2048))                     \
    X(pse_compressed_mode0_causal, BIG, c->in.atten_mask = MK(FR_BOOL, 2048, 2048); c->p.next_tokens = 0;              \
      c->p.pse_type = FR_PSE_OUTER_MUL_ADD; c->in.real_shift = MK(FR_F16, 1, 1, 1024, 2048))                           \
    X(pse_tnd_compressed, TNDEQ, c->p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL;                                       \
      c->in.atten_mask = MK(FR_BOOL, 2048, 2048); c->in.real_shift = MK(FR_BF16, 3, 2, 1024, 5))                       \
    X(pse_tnd_slopes, TNDEQ, c->p.pse_type = FR_PSE_INNER_MUL_ADD; c->in.real_shift = MK(FR_F32, 3, 2))                \
    X(pse_mode8_tnd, TNDEQ, c->p.sparse_mode = FR_SPARSE_BAND_LEFT_UP_CAUSAL;                                          \
      c->in.atten_mask = MK(FR_BOOL, 2048, 2048); c->p.pre_tokens = 3; c->p.next_tokens = 0;                           \
      c->in.real_shift = MK(FR_BF16, 1, 2, 1024, 5))                                                                   \
    X(dropout_exact_length, BNSD, c->p.keep_prob = 0.5; c->in.drop_mask = MK(FR_U8, 48))                               \
    X(dropout_odd_bits, BSH, dense(c, FR_BSH, FR_BF16, 1, 1, 1, 3, 3, 4, 4); c->p.keep_prob = 0.25;                    \
      c->in.drop_mask = MK(FR_U8, 2))                                                                                  \
    X(dropout_tnd, TND, c->p.keep_prob = 0.5; c->in.drop_mask = MK(FR_U8, 13))                                         \
    X(keep_prob_1_ignores_drop_mask, BNSD, c->in.drop_mask = MK(FR_F64, 3, 3))                                         \
    X(rope_bnsd, BNSD, c->in.query_rope = MK(FR_F16, 2, 4, 8, 4); c->in.key_rope = MK(FR_F16, 2, 2, 6, 4);             \
      c->bo.dq_rope = MK(FR_F32, 2, 4, 8, 4); c->bo.dk_rope = MK(FR_F64, 2, 2, 6, 4))                                  \
    X(rope_bsh, BSH, c->in.query_rope = MK(FR_BF16, 2, 8, 12); c->in.key_rope = MK(FR_BF16, 2, 6, 6);                  \
      c->bo.dq_rope = MK(FR_BF16, 2, 8, 12); c->bo.dk_rope = MK(FR_BF16, 2, 6, 6))                                     \
    X(rope_tnd_mla, TND, c->in.query_rope = MK(FR_F32, 7, 4, 64); c->in.key_rope = MK(FR_F32, 11, 1, 64);              \
      c->bo.dq_rope = MK(FR_F32, 7, 4, 64); c->bo.dk_rope = MK(FR_F32, 11, 1, 64))                                     \
    X(sink, BNSD, c->in.sink = MK(FR_F32, 4); c->bo.dsink = MK(FR_F64, 4))                                             \
    X(topk_shared, BNSD, c->in.topk_indices = MK(FR_I32, 2, 8, 3))                                                     \
    X(topk_per_kv_head, BSND, c->in.topk_indices = MK(FR_I32, 2, 2, 8, 5))                                             \
    X(topk_tnd, TND, c->in.topk_indices = MK(FR_I32, 7, 1, 2))                                                         \
    X(topk_w0, BNSD, c->in.topk_indices = MK(FR_I32, 2, 8, 0))                                                         \
    X(softmax_same_as_input_tnd, TND, c->p.softmax_layout = FR_SOFTMAX_SAME_AS_INPUT;                                  \
      c->fo.softmax_max = c->fo.softmax_sum = c->smax = c->ssum = MK(FR_F32, 7, 4, 8))                                 \
    X(outputs_f64, BNSD, c->fo.attention_out.dtype = FR_F64; c->fo.softmax_max.dtype = FR_F64;                         \
      c->bo.dq.dtype = c->bo.dk.dtype = c->bo.dv.dtype = FR_F64; c->smax.dtype = FR_F64)                               \
    X(outputs_f32_fp8, FP8, c->fo.attention_out.dtype = FR_F32; c->bo.dq.dtype = FR_BF16)                              \
    X(out_dtype_equal_input, BNSD, c->p.out_dtype = FR_F16)

#define X_INVALID_FN(name, b, kind, st, param, ...)                                                                    \
    static void inv_##name(cfg *c) { __VA_ARGS__; }
INVALID_ROWS(X_INVALID_FN)
#define X_VALID_FN(name, b, ...)                                                                                       \
    static void val_##name(cfg *c) { __VA_ARGS__; }
VALID_ROWS(X_VALID_FN)

typedef struct {
    const char *name;
    base_id base;
    int kind;
    fr_status expect;
    const char *param;
    void (*mutate)(cfg *);
} invalid_row;
typedef struct {
    const char *name;
    base_id base;
    void (*mutate)(cfg *);
} valid_row;

#define X_INVALID_ROW(name, b, kind, st, param, ...) {#name, b, kind, st, param, inv_##name},
static const invalid_row invalid_rows[] = {INVALID_ROWS(X_INVALID_ROW)};
#define X_VALID_ROW(name, b, ...) {#name, b, val_##name},
static const valid_row valid_rows[] = {VALID_ROWS(X_VALID_ROW)};

static fr_bwd_inputs bwd_inputs(const cfg *c) {
    return fr_test_bwd_inputs(&c->in, c->dy, c->ain, c->smax, c->ssum);
}


static void run_invalid(const invalid_row *r) {
    cfg c;
    base(&c, r->base);
    r->mutate(&c);
    const fr_params *p = c.null_p ? NULL : &c.p;
    fr_bwd_inputs bi = bwd_inputs(&c);
    fr_error e = {FR_E_INTERNAL, "untouched"};
    fr_problem pb;
    fr_status st;
    if (r->kind == FWD_IN) {
        st = fr_problem_from_fwd(p, c.null_in ? NULL : &c.in, &pb, &e);
        /* the backward validates the same forward rules first */
        fr_error e2 = {FR_E_INTERNAL, "untouched"};
        fr_status st2 = fr_problem_from_bwd(p, c.null_in ? NULL : &bi, &pb, &e2);
        CHECK(st2 == st, "%s: backward gave %s, forward %s (%s)", r->name, fr_status_name(st2), fr_status_name(st),
              e2.msg);
        /* the public entry point agrees */
        fr_error e3 = {FR_E_INTERNAL, "untouched"};
        fr_status st3 = fr_validate_fwd(p, c.null_in ? NULL : &c.in, &c.fo, &e3);
        CHECK(st3 == st, "%s: fr_validate_fwd gave %s", r->name, fr_status_name(st3));
    } else if (r->kind == FWD_OUT) {
        st = fr_problem_from_fwd(p, &c.in, &pb, &e);
        CHECK(st == FR_OK, "%s: base inputs rejected: %s", r->name, e.msg);
        if (st == FR_OK) st = fr_check_fwd_outputs(&pb, p, c.null_out ? NULL : &c.fo, &e);
    } else {
        st = fr_problem_from_bwd(p, &bi, &pb, &e);
        if (st == FR_OK) st = fr_check_bwd_outputs(&pb, p, c.null_out ? NULL : &c.bo, &e);
    }
    printf("  %-34s %-20s %s\n", r->name, fr_status_name(st), e.msg);
    CHECK(st == r->expect, "%s: expected %s, got %s", r->name, fr_status_name(r->expect), fr_status_name(st));
    CHECK(e.status == st, "%s: err.status %s differs from the returned %s", r->name, fr_status_name(e.status),
          fr_status_name(st));
    CHECK(strstr(e.msg, r->param) != NULL, "%s: message does not name the parameter \"%s\"", r->name, r->param);
}

static void run_valid(const valid_row *r) {
    cfg c;
    base(&c, r->base);
    r->mutate(&c);
    fr_bwd_inputs bi = bwd_inputs(&c);
    fr_error e = {FR_E_INTERNAL, "untouched"};
    fr_problem pb;
    fr_status st = fr_problem_from_fwd(&c.p, &c.in, &pb, &e);
    if (st == FR_OK) st = fr_check_fwd_outputs(&pb, &c.p, &c.fo, &e);
    CHECK(st == FR_OK, "%s (forward): %s %s", r->name, fr_status_name(st), e.msg);
    if (st == FR_OK) CHECK(fr_problem_is_valid(&pb), "%s: fr_problem_is_valid false", r->name);
    st = fr_problem_from_bwd(&c.p, &bi, &pb, &e);
    if (st == FR_OK) st = fr_check_bwd_outputs(&pb, &c.p, &c.bo, &e);
    CHECK(st == FR_OK, "%s (backward): %s %s", r->name, fr_status_name(st), e.msg);
    st = fr_validate_fwd(&c.p, &c.in, &c.fo, &e);
    CHECK(st == FR_OK, "%s (fr_validate_fwd): %s %s", r->name, fr_status_name(st), e.msg);
    st = fr_validate_bwd(&c.p, &bi, &c.bo, &e);
    CHECK(st == FR_OK, "%s (fr_validate_bwd): %s %s", r->name, fr_status_name(st), e.msg);
    printf("  %-34s ok   B=%lld N1=%lld N2=%lld G=%lld S1=%lld S2=%lld Dk=%lld Dv=%lld\n", r->name, (long long)pb.B,
           (long long)pb.N1, (long long)pb.N2, (long long)pb.G, (long long)pb.S1, (long long)pb.S2, (long long)pb.Dk,
           (long long)pb.Dv);
}

/* The resolved fr_problem fields, checked against hand-computed values. */
static void test_resolution(void) {
    cfg c;
    fr_problem pb;
    fr_error e;

    base(&c, BSH);
    CHECK(fr_problem_from_fwd(&c.p, &c.in, &pb, &e) == FR_OK, "BSH base: %s", e.msg);
    CHECK(pb.layout == FR_BSH && pb.dtype == FR_BF16 && pb.out_dtype == FR_BF16 && !pb.fp8, "BSH dtypes");
    CHECK(pb.B == 2 && pb.N1 == 4 && pb.N2 == 2 && pb.G == 2 && pb.S1 == 8 && pb.S2 == 6, "BSH dims");
    CHECK(pb.Dk == 16 && pb.Dv == 8 && pb.Drope == 0 && pb.T1 == 16 && pb.T2 == 12, "BSH head dims / T");
    CHECK(pb.cu_q == NULL && pb.cu_kv == NULL && pb.W == 0, "BSH cu / W");
    CHECK(!pb.has_pse && !pb.has_mask && !pb.has_drop && !pb.has_rope && !pb.has_sink && !pb.has_topk, "BSH flags");
    CHECK(pb.pse_type == FR_PSE_OUTER_ADD_MUL && pb.sparse_mode == FR_SPARSE_DEFAULT_MASK,
          "BSH pse_type / sparse_mode");

    base(&c, TND);
    c.in.topk_indices = MK(FR_I32, 7, 1, 3);
    c.in.query_rope = MK(FR_F32, 7, 4, 2);
    c.in.key_rope = MK(FR_F32, 11, 1, 2);
    c.p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL;
    c.in.atten_mask = MK(FR_BOOL, 2048, 2048);
    CHECK(fr_problem_from_fwd(&c.p, &c.in, &pb, &e) == FR_OK, "TND: %s", e.msg);
    CHECK(pb.B == 3 && pb.S1 == 4 && pb.S2 == 5 && pb.T1 == 7 && pb.T2 == 11, "TND dims S1=%lld S2=%lld",
          (long long)pb.S1, (long long)pb.S2);
    CHECK(pb.N1 == 4 && pb.N2 == 1 && pb.G == 4 && pb.cu_q == c.cq && pb.cu_kv == c.ck, "TND heads / cu");
    CHECK(pb.has_topk && pb.W == 3 && pb.topk_per_kv_head, "TND topk");
    CHECK(pb.has_rope && pb.Drope == 2 && pb.has_mask && pb.sparse_mode == FR_SPARSE_RIGHT_DOWN_CAUSAL,
          "TND rope / mask");
    int64_t st, len;
    fr_problem_q_rows(&pb, 1, &st, &len);
    CHECK(st == 3 && len == 0, "TND batch 1 rows");
    fr_problem_kv_rows(&pb, 2, &st, &len);
    CHECK(st == 6 && len == 5, "TND batch 2 kv rows");

    /* no mask: sparse_mode is ignored and reported as 0 */
    base(&c, BNSD);
    c.p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL;
    c.p.keep_prob = 0.5;
    c.in.drop_mask = MK(FR_U8, 48);
    CHECK(fr_problem_from_fwd(&c.p, &c.in, &pb, &e) == FR_OK, "BNSD no mask: %s", e.msg);
    CHECK(!pb.has_mask && pb.sparse_mode == FR_SPARSE_DEFAULT_MASK && pb.has_drop,
          "no mask -> sparse_mode 0; dropout flag");

    base(&c, FP8);
    c.p.out_dtype = FR_BF16;
    CHECK(fr_problem_from_fwd(&c.p, &c.in, &pb, &e) == FR_OK, "FP8: %s", e.msg);
    CHECK(pb.fp8 && pb.dtype == FR_E4M3FN && pb.out_dtype == FR_BF16, "FP8 out dtype");

    /* every invalid row leaves the error struct filled; a NULL error pointer is allowed */
    base(&c, BNSD);
    c.p.head_num = 3;
    CHECK(fr_problem_from_fwd(&c.p, &c.in, &pb, NULL) == FR_E_HEADS, "NULL err");
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Seeded random mutations: 1-3 random fields of a valid base changed to boundary values. Whatever the result, nothing
 * crashes or reads out of bounds (run under ASan), a failure names a parameter at the start of its message and sets
 * err.status, and a success yields a problem satisfying fr_problem_is_valid. */

static uint64_t rng_s;
static uint64_t rnd(void) {
    rng_s ^= rng_s << 13;
    rng_s ^= rng_s >> 7;
    rng_s ^= rng_s << 17;
    return rng_s;
}
static int64_t rnd_dim(void) {
    static const int64_t v[] = {-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 64, 200, 1024, 2048, 3072, 1048577, 2097153,
                                INT64_C(1) << 40, INT64_MAX};
    return v[rnd() % (sizeof v / sizeof v[0])];
}

static const char *const param_names[] = {
    "params", "inputs", "problem", "outputs", "query", "key", "value", "head_num", "input_layout", "scale_value",
    "keep_prob", "pse_type", "sparse_mode", "inner_precise", "softmax_layout", "q_start_idx", "kv_start_idx",
    "prefix", "prefix_len", "actual_seq_len", "actual_seq_qlen", "actual_seq_kvlen", "out_dtype", "d_scale_q",
    "d_scale_k", "d_scale_v", "query_rope", "key_rope", "atten_mask", "pre_tokens", "next_tokens", "real_shift",
    "drop_mask", "sink", "topk_indices", "dy", "attention_in", "softmax_max", "softmax_sum", "attention_out", "dq",
    "dk", "dv", "dq_rope", "dk_rope", "dsink"};

static bool starts_with_param(const char *msg) {
    for (size_t k = 0; k < sizeof param_names / sizeof param_names[0]; k++) {
        size_t n = strlen(param_names[k]);
        if (strncmp(msg, param_names[k], n) == 0 && (msg[n] == ':' || msg[n] == ' ' || msg[n] == '[')) return true;
    }
    return false;
}

static void add_optional(cfg *c) {
    switch (rnd() % 10) {
    case 0: c->in.atten_mask = MK(FR_BOOL, c->S1, c->S2); break;
    case 1: c->in.atten_mask = MK(FR_U8, 2048, 2048); break;
    case 2: c->in.real_shift = MK(c->dt, c->B, c->N1, c->S1, c->S2); break;
    case 3: c->in.real_shift = MK(FR_F32, c->N1); break;
    case 4: c->in.drop_mask = MK(FR_U8, 1 + (int64_t)(rnd() % 4096)); break;
    case 5: c->in.sink = MK(FR_F32, c->N1); break;
    case 6: c->in.topk_indices = MK(FR_I32, c->B, c->S1, 4); break;
    case 7: c->in.query_rope = c->in.query, c->in.key_rope = c->in.key; break;
    case 8: c->p.prefix = c->prefix, c->p.prefix_len = (int64_t)(rnd() % 4); break;
    default: c->in.atten_mask = MK(FR_BOOL, 3072, 2048); break;
    }
}

static fr_tensor *rnd_tensor(cfg *c) {
    fr_tensor *all[] = {&c->in.query,        &c->in.key,         &c->in.value,     &c->in.atten_mask,
                        &c->in.real_shift,   &c->in.drop_mask,   &c->in.sink,      &c->in.topk_indices,
                        &c->in.query_rope,   &c->in.key_rope,    &c->in.d_scale_q, &c->in.d_scale_k,
                        &c->in.d_scale_v,    &c->dy,             &c->ain,          &c->smax,
                        &c->ssum,            &c->fo.attention_out, &c->fo.softmax_max, &c->fo.softmax_sum,
                        &c->bo.dq,           &c->bo.dk,          &c->bo.dv,        &c->bo.dsink};
    return all[rnd() % (sizeof all / sizeof all[0])];
}

static void mutate_random(cfg *c) {
    fr_tensor *t = rnd_tensor(c);
    switch (rnd() % 14) {
    case 0:
    case 1:
    case 2:
        if (t->ndim > 0 && t->ndim <= FR_MAX_DIMS) t->shape[rnd() % (uint64_t)t->ndim] = rnd_dim();
        break;
    case 3: t->dtype = (fr_dtype)(rnd() % FR_DTYPE_COUNT); break;
    case 4: t->ndim = (int)(rnd() % 11) - 1; break;
    case 5:
        if (t->ndim > 0 && t->ndim <= FR_MAX_DIMS) t->strides[rnd() % (uint64_t)t->ndim] = rnd_dim() * (rnd() % 2 ? 1 : -1);
        break;
    case 6: t->data = NULL; break;
    case 7: add_optional(c); break;
    case 8: c->p.sparse_mode = (int)(rnd() % (FR_SPARSE_MODE_COUNT + 2)) - 1; add_optional(c); break;
    case 9: c->p.pre_tokens = rnd_dim() * (rnd() % 2 ? 1 : -1); c->p.next_tokens = rnd_dim() * (rnd() % 3 ? 1 : -1); break;
    case 10: c->p.head_num = rnd_dim(); break;
    case 11: {
        static const double kp[] = {1.0, 0.5, 0.0, 2.0, NAN, 1e-300};
        c->p.keep_prob = kp[rnd() % 6];
        break;
    }
    case 12:
        c->cq[rnd() % 16] = rnd_dim();
        c->ck[rnd() % 16] = (int64_t)(rnd() % 12);
        c->prefix[rnd() % 16] = rnd_dim();
        break;
    default:
        c->p.pse_type = (int)(rnd() % (FR_PSE_TYPE_COUNT + 2)) - 1;
        c->p.input_layout = (fr_layout)(rnd() % 7);
        c->p.actual_seq_len = (int64_t)(rnd() % 17); /* the arrays hold 16 entries */
        break;
    }
}

static void test_random(uint64_t seed, int iters) {
    rng_s = seed ? seed : 1;
    int ok = 0;
    for (int it = 0; it < iters; it++) {
        cfg c;
        base(&c, (base_id)(rnd() % (HUGE + 1)));
        int nm = 1 + (int)(rnd() % 3);
        for (int m = 0; m < nm; m++) mutate_random(&c);
        if (c.p.actual_seq_len > 16 || (c.p.prefix == c.prefix && c.p.prefix_len > 16)) continue;
        fr_bwd_inputs bi = bwd_inputs(&c);
        fr_problem pb;
        for (int op = 0; op < 2; op++) {
            fr_error e = {FR_E_INTERNAL, "untouched"};
            fr_status st = op == 0 ? fr_problem_from_fwd(&c.p, &c.in, &pb, &e) : fr_problem_from_bwd(&c.p, &bi, &pb, &e);
            if (st == FR_OK) {
                CHECK(fr_problem_is_valid(&pb), "random it %d op %d: accepted problem is not valid", it, op);
                st = op == 0 ? fr_check_fwd_outputs(&pb, &c.p, &c.fo, &e) : fr_check_bwd_outputs(&pb, &c.p, &c.bo, &e);
                ok += st == FR_OK;
            }
            if (st != FR_OK) {
                CHECK(st > FR_OK && st < FR_STATUS_COUNT && e.status == st, "random it %d op %d: status %d / %d", it, op,
                      (int)st, (int)e.status);
                CHECK(starts_with_param(e.msg), "random it %d op %d: message does not start with a parameter: %s", it,
                      op, e.msg);
            }
        }
    }
    printf("random mutations: %d iterations, %d accepted (fwd+bwd calls)\n", iters, ok);
}

int main(int argc, char **argv) {
    printf("test_validate: the tables are deterministic; the random mutations draw from the seed\n");
    uint64_t seed = fr_test_seed(argc, argv, "test_validate");
    size_t ni = sizeof invalid_rows / sizeof invalid_rows[0], nv = sizeof valid_rows / sizeof valid_rows[0];
    printf("invalid configurations (%zu):\n", ni);
    for (size_t i = 0; i < ni; i++) run_invalid(&invalid_rows[i]);
    printf("valid edge configurations (%zu):\n", nv);
    for (size_t i = 0; i < nv; i++) run_valid(&valid_rows[i]);
    test_resolution();
    test_random(seed, 20000);
    CHECK(ni >= 100 && nv >= 20, "table sizes %zu / %zu", ni, nv);
    return fr_test_exit("test_validate");
}
