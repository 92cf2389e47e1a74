/* Tile helpers shared by the forward and backward drivers (portable C). */
#ifndef FR_KERNELS_SCORES_H
#define FR_KERNELS_SCORES_H

#include "semantics/semantics.h"

/* S[r * FR_K_BN + c] (raw Q.K^T of the tile, fp32) := the scores x of query rows [i0, i0+ni), key rows [j0, j0+nj)
 * (spec 3 steps 1-3; D11, D2): fp8 dequant scales (dq[r] per row, d_scale_k per tile),
 * scale and pse in the pse_type's order, and -inf (excluded) at positions that do not take part (PARTIAL tiles).
 * pse and keep are FR_K_BM x FR_K_BN scratch. */
void fr_k_scores(const fr_sem *sem, const fr_sem_batch *sb, int64_t h, int64_t kv, int64_t i0, int64_t ni, int64_t j0,
                 int64_t nj, fr_tile_class cls, const float *dq, float *S, float *pse, uint8_t *keep);

#endif
