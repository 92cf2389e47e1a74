/* Internal to the mutant zoo: the plain tiled online-softmax implementation (mutants_base.c) and its defect switches.
 * A mutant is the base with exactly one switch on (mutants.c). */
#ifndef FR_VERIFY_MUTANTS_BASE_H
#define FR_VERIFY_MUTANTS_BASE_H

#include "flashref.h"

#define MB_TILE 64 /* query rows and keys per tile */

typedef enum mb_bug {
    MB_NONE = 0,
    MB_NO_INF_GUARD,        /* (1) exp(-inf - -inf) on fully masked rows/tiles; no guard on the final 0/0 */
    MB_ADDITIVE_MASK,       /* (2) masked score = score - 10000 instead of a select (empty tiles still skipped) */
    MB_MASKED_TIMES_V,      /* (3) masked positions still do acc += 0 * V (NaN/Inf in masked V leaks) */
    MB_NO_MAX_SUB,          /* (4) p = exp(x), no running-max subtraction: overflows past x = 88.7 */
    MB_CAUSAL_TOP_LEFT,     /* (5) sparse_mode 3 (bottom-right causal) built top-left like mode 2 */
    MB_TAIL_DROP_LAST,      /* (6) a partial last key tile loses its last key */
    MB_HEAD_DIM_TAIL,       /* (7) q.k summed over the first 16*floor(Dk/16) columns only (vector loop, no tail) */
    MB_INDEX32,             /* (8) q/k/v element offsets wrapped to 31 bits (off mod 2^31) */
    MB_VARLEN_ZERO,         /* (9) TND: a sequence with no queries skipped before the key offset advances */
    MB_DROP_BWD_SHIFT,      /* (10) backward reads the drop bit of (i, (j + 1) mod S2) */
    MB_DROP_SCALE_TWICE,    /* (10b) kept positions scaled by 1/keep_prob^2 (forward and backward) */
    MB_STALE_MAX,           /* (11) FA4 lazy rescale (threshold 8 in log2 units), P rounded to the input dtype for
                               P.V while the row sum uses the unrounded P */
    MB_SKIP_LAST_QTILE,     /* (12) partial last query tile never computed: rows left unwritten */
    MB_GQA_MOD,             /* (13) kv head = h % N2 instead of h / G (forward and backward) */
    MB_PSE_ORDER,           /* (14) pse_type 1 computed as pse_type 0: qk * scale + pse (forward and backward) */
    MB_LSE_FOR_SUM,         /* (15) softmax_sum holds log-sum-exp m + log(l) */
    MB_MAX_BEFORE_LAST,     /* softmax_max stored before the last key tile's rescale */
    MB_DK_NOT_SUMMED,       /* backward: dK/dV of a kv head taken from its last query head only (not summed over G) */
    MB_SPLIT_KV_ORDER,      /* split-KV partials merged in completion order: the key tiles' order changes per call */
    MB_F16_ROW_SUM,         /* (4b) fp16 inputs: the output divided by the row sum converted to fp16 (inf past 65504) */
    MB_BUG_COUNT
} mb_bug;

fr_status mb_fwd(mb_bug bug, const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out, fr_error *err);
fr_status mb_bwd(mb_bug bug, const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out, fr_error *err);

#endif
