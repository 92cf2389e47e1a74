/* Contracts written once (style.md 11): predicates shared by validation, tests and proof harnesses.
 * The full rule set lives in validate_problem.c and validate_opts.c and is tabulated in docs/validation.md. */
#ifndef FR_CORE_VALIDATE_H
#define FR_CORE_VALIDATE_H

#include "core/problem.h"

/* Documented limits (spec D9, section 11). "2M" / "1M" / "2K" are read as binary multiples. */
#define FR_LIMIT_B INT64_C(2097152)        /* B <= 2M */
#define FR_LIMIT_B_PREFIX INT64_C(2048)    /* B <= 2K with prefix (sparse modes 5/6), non-TND */
#define FR_LIMIT_B_PREFIX_TND INT64_C(1024) /* B <= 1K with prefix, TND */
#define FR_LIMIT_B_TND INT64_C(2048)       /* TND: B <= 2K */
#define FR_LIMIT_N1 INT64_C(256)           /* N1 <= 256 */
#define FR_LIMIT_S INT64_C(1048576)        /* S1, S2 <= 1M */
#define FR_LIMIT_T INT64_C(1048576)        /* TND: T <= 1M */
#define FR_LIMIT_D INT64_C(768)            /* Dk (hence Dv) <= 768 */
#define FR_LIMIT_D_FP8 INT64_C(128)        /* fp8/hif8 inputs: D <= 128 */
#define FR_LIMIT_DROPE INT64_C(768)        /* query_rope/key_rope last dim (flashref extension) */
#define FR_COMPRESSED_MASK_ROWS INT64_C(2048)      /* modes 2,3,4,7,8: [2048,2048] */
#define FR_COMPRESSED_PREFIX_MASK_ROWS INT64_C(3072) /* mode 6: [3072,2048] */
#define FR_COMPRESSED_MASK_COLS INT64_C(2048)
#define FR_COMPRESSED_PSE_ROWS INT64_C(1024) /* compressed ALiBi pse [B|1,N1,1024,S2] */
#define FR_DSCALE_Q_BLOCK 128               /* spec D5 */
#define FR_DSCALE_KV_BLOCK 256

/* q/k/v dtypes the operator accepts: fp32, fp16, bf16, e4m3fn, e5m2, hif8. */
static inline bool fr_input_dtype_is_valid(fr_dtype t) {
    return t == FR_F32 || t == FR_F16 || t == FR_BF16 || t == FR_E4M3FN || t == FR_E5M2 || t == FR_HIF8;
}
static inline bool fr_dtype_is_fp8(fr_dtype t) { return t == FR_E4M3FN || t == FR_E5M2 || t == FR_HIF8; }
static inline bool fr_layout_is_valid(fr_layout l) { return l >= FR_BSH && l <= FR_TND; }
static inline int fr_layout_rank(fr_layout l) { return (l == FR_BSND || l == FR_BNSD) ? 4 : 3; }
static inline bool fr_sparse_mode_is_valid(int m) { return m >= 0 && m < FR_SPARSE_MODE_COUNT; }
static inline bool fr_pse_type_is_valid(int t) { return t >= 0 && t < FR_PSE_TYPE_COUNT; }
/* The properties of each sparse mode the rules need (spec 4.2), one switch per property with no default, so that a new
 * mode of fr_sparse_mode is a -Wswitch warning (an error with -DFR_WERROR=ON) in each until it is classified. */
enum { FR_SM_READS_MASK = 1, FR_SM_PREFIX = 2, FR_SM_TND_ONLY = 4 };
static inline unsigned fr_sparse_mode_props(int m) {
    switch ((fr_sparse_mode)m) {
    case FR_SPARSE_DEFAULT_MASK: return FR_SM_READS_MASK;
    case FR_SPARSE_ALL_MASK: return FR_SM_READS_MASK;
    case FR_SPARSE_LEFT_UP_CAUSAL: return 0;
    case FR_SPARSE_RIGHT_DOWN_CAUSAL: return 0;
    case FR_SPARSE_BAND: return 0;
    case FR_SPARSE_PREFIX: return FR_SM_READS_MASK | FR_SM_PREFIX;
    case FR_SPARSE_PREFIX_COMPRESS: return FR_SM_PREFIX;
    case FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND: return FR_SM_TND_ONLY;
    case FR_SPARSE_BAND_LEFT_UP_CAUSAL: return FR_SM_TND_ONLY;
    case FR_SPARSE_MODE_COUNT: break;
    }
    return 0;
}
/* Modes 0, 1, 5 read the caller's atten_mask element by element; the others take a canonical compressed one. */
static inline bool fr_sparse_mode_reads_mask(int m) { return (fr_sparse_mode_props(m) & FR_SM_READS_MASK) != 0; }
/* Modes 5, 6 take a prefix; modes 7, 8 exist for TND only. */
static inline bool fr_sparse_mode_has_prefix(int m) { return (fr_sparse_mode_props(m) & FR_SM_PREFIX) != 0; }
static inline bool fr_sparse_mode_tnd_only(int m) { return (fr_sparse_mode_props(m) & FR_SM_TND_ONLY) != 0; }
/* pse types 2, 3 take fp32 ALiBi slopes; 0, 1 a tensor of scores. */
static inline bool fr_pse_type_is_slopes(int t) { return t == FR_PSE_INNER_MUL_ADD || t == FR_PSE_INNER_MUL_ADD_SQRT; }
/* keep_prob in (0, 1]; NaN fails both comparisons. */
static inline bool fr_keep_prob_is_valid(double kp) { return kp > 0.0 && kp <= 1.0; }

/* Invariants every validated fr_problem satisfies (used by tests and engine asserts). */
bool fr_problem_is_valid(const fr_problem *pb);

#endif
