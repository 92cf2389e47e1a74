/* The shapes of a case's tensors (case_shapes.h). */
#include "verify/cases/case_shapes.h"

#include "core/validate.h"

void fr_gen_tnd_lengths(int64_t B, const int64_t *seq_q, const int64_t *seq_kv, int64_t *cu_q, int64_t *cu_kv,
                        int64_t *S1, int64_t *S2, int64_t *T1, int64_t *T2) {
    int64_t aq = 0, ak = 0, mq = 0, mk = 0;
    for (int64_t b = 0; b < B; b++) {
        aq += seq_q[b];
        ak += seq_kv[b];
        cu_q[b] = aq;
        cu_kv[b] = ak;
        if (seq_q[b] > mq) mq = seq_q[b];
        if (seq_kv[b] > mk) mk = seq_kv[b];
    }
    *S1 = mq, *S2 = mk, *T1 = aq, *T2 = ak;
}

/* Alike src/core/validate.c:vd_layout_shape: kept apart because the cases built here are what that check is tested
 * with: shapes taken from the validator could not catch a validator that accepts a wrong one. */
int fr_gen_qkv_shape(fr_layout l, int64_t B, int64_t n, int64_t s, int64_t t, int64_t hd, int64_t *sh) {
    switch (l) {
    case FR_BSH: sh[0] = B, sh[1] = s, sh[2] = n * hd; return 3;
    case FR_SBH: sh[0] = s, sh[1] = B, sh[2] = n * hd; return 3;
    case FR_BSND: sh[0] = B, sh[1] = s, sh[2] = n, sh[3] = hd; return 4;
    case FR_BNSD: sh[0] = B, sh[1] = n, sh[2] = s, sh[3] = hd; return 4;
    default: sh[0] = t, sh[1] = n, sh[2] = hd; return 3;
    }
}

int fr_gen_stats_shape(fr_layout l, fr_softmax_layout sl, int64_t B, int64_t N1, int64_t S1, int64_t T1, int64_t *sh) {
    if (l != FR_TND) {
        sh[0] = B, sh[1] = N1, sh[2] = S1, sh[3] = 8;
        return 4;
    }
    if (sl == FR_SOFTMAX_SAME_AS_INPUT) sh[0] = T1, sh[1] = N1;
    else sh[0] = N1, sh[1] = T1;
    sh[2] = 8;
    return 3;
}

bool fr_gen_mask_compressed(int mode) { return fr_sparse_mode_is_valid(mode) && !fr_sparse_mode_reads_mask(mode); }

int fr_gen_mask_shape(fr_gen_mask kind, int mode, int64_t B, int64_t N1, int64_t S1, int64_t S2, int64_t *sh) {
    switch (kind) {
    case FR_GEN_MASK_NONE:
    case FR_GEN_MASK_COUNT: return 0;
    case FR_GEN_MASK_CANONICAL:
        if (fr_gen_mask_compressed(mode)) {
            sh[0] = mode == FR_SPARSE_PREFIX_COMPRESS ? FR_COMPRESSED_PREFIX_MASK_ROWS : FR_COMPRESSED_MASK_ROWS;
            sh[1] = FR_COMPRESSED_MASK_COLS;
            return 2;
        }
        sh[0] = S1, sh[1] = S2;
        return 2;
    case FR_GEN_MASK_SS: sh[0] = S1, sh[1] = S2; return 2;
    case FR_GEN_MASK_11SS: sh[0] = 1, sh[1] = 1, sh[2] = S1, sh[3] = S2; return 4;
    case FR_GEN_MASK_B1SS: sh[0] = B, sh[1] = 1, sh[2] = S1, sh[3] = S2; return 4;
    case FR_GEN_MASK_BNSS: sh[0] = B, sh[1] = N1, sh[2] = S1, sh[3] = S2; return 4;
    }
    return 0;
}

void fr_gen_canonical_mask(const int64_t *sh, uint8_t *m) {
    const int64_t cols = sh[1], half = FR_COMPRESSED_MASK_COLS / 2;
    for (int64_t i = 0; i < sh[0]; i++)
        for (int64_t j = 0; j < cols; j++)
            m[i * cols + j] = (uint8_t)(i < FR_COMPRESSED_MASK_ROWS ? j > i : j >= half);
}

int fr_gen_pse_shape(fr_gen_pse kind, int64_t B, int64_t N1, int64_t S1, int64_t S2, int64_t *sh) {
    sh[0] = B, sh[1] = N1, sh[2] = S1, sh[3] = S2;
    switch (kind) {
    case FR_GEN_PSE_NONE:
    case FR_GEN_PSE_COUNT: return 0;
    case FR_GEN_PSE_BNSS: return 4;
    case FR_GEN_PSE_BN1S: sh[2] = 1; return 4;
    case FR_GEN_PSE_1NSS: sh[0] = 1; return 4;
    case FR_GEN_PSE_COMP_B: sh[2] = FR_COMPRESSED_PSE_ROWS; return 4;
    case FR_GEN_PSE_COMP_1: sh[0] = 1, sh[2] = FR_COMPRESSED_PSE_ROWS; return 4;
    case FR_GEN_PSE_SLOPES_BN: sh[0] = B, sh[1] = N1; return 2;
    case FR_GEN_PSE_SLOPES_N: sh[0] = N1; return 1;
    }
    return 0;
}

fr_dtype fr_gen_pse_dtype(fr_gen_pse kind, fr_dtype in) {
    if (kind == FR_GEN_PSE_SLOPES_BN || kind == FR_GEN_PSE_SLOPES_N) return FR_F32;
    return fr_dtype_is_fp8(in) ? FR_BF16 : in;
}

int fr_gen_topk_shape(fr_layout l, bool per_kv, int64_t B, int64_t N2, int64_t S1, int64_t T1, int64_t W,
                      int64_t *sh) {
    int nd = 0;
    if (l == FR_TND) {
        sh[nd++] = T1;
        if (per_kv) sh[nd++] = N2;
    } else {
        sh[nd++] = B;
        if (per_kv) sh[nd++] = N2;
        sh[nd++] = S1;
    }
    sh[nd++] = W;
    return nd;
}

int fr_gen_dscale_shape(int64_t B, int64_t n, int64_t s, int64_t block, int64_t *sh) {
    sh[0] = B, sh[1] = n, sh[2] = (s + block - 1) / block, sh[3] = 1;
    return 4;
}

void fr_gen_prefix_range(int64_t s1, int64_t s2, int64_t *lo, int64_t *hi) {
    *lo = s1 > s2 ? 0 : s2 - s1;
    *hi = s2;
}
