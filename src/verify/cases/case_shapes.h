/* The shapes of a case's tensors, said once for every builder of cases: casegen's (the suites, `flashref golden`,
 * the random draws), the kernel tests' (tests/kernels/kt_harness.c) and the golden tests' (tests/golden/gt_case.c).
 * The builders draw their data their own way (casegen one Philox stream per tensor; the tests the kit's generator, so
 * that their seeds keep their cases), but what each option of the operator looks like as a tensor, which sparse
 * modes take the canonical compressed mask and what it holds, and the prefix range, live here. Adding an option or a
 * sparse mode changes this file, not three builders (docs/adding-an-operator-option.md).
 *
 * The shape functions write at most 4 dimensions to sh and return how many. */
#ifndef FR_VERIFY_CASE_SHAPES_H
#define FR_VERIFY_CASE_SHAPES_H

#include "flashref.h"

/* Shape of the generated atten_mask. */
typedef enum fr_gen_mask {
    FR_GEN_MASK_NONE = 0,   /* no atten_mask: sparse mode and band are ignored (spec 4.2) */
    FR_GEN_MASK_CANONICAL,  /* modes 2,3,4,7,8: [2048,2048] triu(1); mode 6: [3072,2048]; modes 0,1,5: [S1,S2] random */
    FR_GEN_MASK_SS,         /* random [S1,S2] (TND: [maxS1,maxS2]) */
    FR_GEN_MASK_11SS,       /* random [1,1,S1,S2] */
    FR_GEN_MASK_B1SS,       /* random [B,1,S1,S2] */
    FR_GEN_MASK_BNSS,       /* random [B,N1,S1,S2] */
    FR_GEN_MASK_COUNT
} fr_gen_mask;

/* Shape of the generated real_shift (pse). Types 0/1 take a tensor of the input dtype (fp8 inputs: bf16); types
 * 2/3 take fp32 ALiBi slopes by the recipe of spec 5.1. */
typedef enum fr_gen_pse {
    FR_GEN_PSE_NONE = 0,
    FR_GEN_PSE_BNSS,     /* [B,N1,S1,S2] */
    FR_GEN_PSE_BN1S,     /* [B,N1,1,S2] */
    FR_GEN_PSE_1NSS,     /* [1,N1,S1,S2] */
    FR_GEN_PSE_COMP_B,   /* compressed Toeplitz [B,N1,1024,S2] (S1 == S2 > 1024, or TND) */
    FR_GEN_PSE_COMP_1,   /* compressed Toeplitz [1,N1,1024,S2] */
    FR_GEN_PSE_SLOPES_BN,/* fp32 slopes [B,N1] (types 2/3) */
    FR_GEN_PSE_SLOPES_N, /* fp32 slopes [N1] (types 2/3) */
    FR_GEN_PSE_COUNT
} fr_gen_pse;

/* TND lengths from the B per-batch lengths seq_q / seq_kv: the cumulative ends cu_q / cu_kv (actual_seq_qlen /
 * actual_seq_kvlen), the longest sequences *S1 / *S2 and the totals *T1 / *T2. */
void fr_gen_tnd_lengths(int64_t B, const int64_t *seq_q, const int64_t *seq_kv, int64_t *cu_q, int64_t *cu_kv,
                        int64_t *S1, int64_t *S2, int64_t *T1, int64_t *T2);

/* A q/k/v-like tensor (query, key, value, rope, attention_out, dy, gradients) of layout l: n heads of dim hd, s rows
 * per batch (t rows in all for TND). */
int fr_gen_qkv_shape(fr_layout l, int64_t B, int64_t n, int64_t s, int64_t t, int64_t hd, int64_t *sh);

/* softmax_max / softmax_sum: [B,N1,S1,8]; TND [N1,T1,8], or [T1,N1,8] with FR_SOFTMAX_SAME_AS_INPUT. */
int fr_gen_stats_shape(fr_layout l, fr_softmax_layout sl, int64_t B, int64_t N1, int64_t S1, int64_t T1, int64_t *sh);

/* Whether sparse_mode `mode` takes the canonical compressed mask (modes 2, 3, 4, 6, 7, 8) rather than reading the
 * caller's mask element by element (0, 1, 5). */
bool fr_gen_mask_compressed(int mode);

/* atten_mask of `kind` with sparse_mode `mode`: FR_GEN_MASK_CANONICAL is the compressed [2048,2048] ([3072,2048] for
 * mode 6) where the mode takes one, else [S1,S2]; the other kinds are the random masks' shapes. 0 for NONE. */
int fr_gen_mask_shape(fr_gen_mask kind, int mode, int64_t B, int64_t N1, int64_t S1, int64_t S2, int64_t *sh);

/* The canonical compressed mask of shape sh (from fr_gen_mask_shape): triu(ones, 1) in the first 2048 rows; mode 6's
 * rows 2048..3071 are [zeros(1024) ones(1024)] (spec 4.2). */
void fr_gen_canonical_mask(const int64_t *sh, uint8_t *m);

/* real_shift of `kind` (0 for NONE) and its dtype for inputs of dtype `in`: fp32 slopes; a tensor of the input dtype,
 * bf16 for fp8 inputs. */
int fr_gen_pse_shape(fr_gen_pse kind, int64_t B, int64_t N1, int64_t S1, int64_t S2, int64_t *sh);
fr_dtype fr_gen_pse_dtype(fr_gen_pse kind, fr_dtype in);

/* topk_indices, W slots: [B,S1,W] or, per kv head, [B,N2,S1,W]; TND [T1,W] or [T1,N2,W] (spec D7). */
int fr_gen_topk_shape(fr_layout l, bool per_kv, int64_t B, int64_t N2, int64_t S1, int64_t T1, int64_t W,
                      int64_t *sh);

/* An fp8 dequant scale over n heads of s rows in blocks of `block` rows: [B, n, ceil(s / block), 1] (spec D5;
 * d_scale_q: N1, S1, 128; d_scale_k / d_scale_v: N2, S2, 256). */
int fr_gen_dscale_shape(int64_t B, int64_t n, int64_t s, int64_t block, int64_t *sh);

/* The prefix values a batch of s1 queries and s2 keys allows (modes 5, 6; spec 4.2): [*lo, *hi]. */
void fr_gen_prefix_range(int64_t s1, int64_t s2, int64_t *lo, int64_t *hi);

#endif
