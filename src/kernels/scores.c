/* Tile helpers shared by the forward and backward drivers (see scores.h). */
#include "kernels/scores.h"

#include "kernels/kernels.h"

#include <math.h>

void fr_k_scores(const fr_sem *sem, const fr_sem_batch *sb, int64_t h, int64_t kv, int64_t i0, int64_t ni, int64_t j0,
                 int64_t nj, fr_tile_class cls, const float *dq, float *S, float *pse, uint8_t *keep) {
    float scale = sem->scale;
    bool fp8 = sem->pb->fp8;
    if (sem->pse) fr_sem_tile_pse_f32(sem, sb, h, i0, ni, j0, nj, pse, FR_K_BN);
    /* fp8 key scale: constant over the tile because FR_K_BN divides 256. */
    float dk = fp8 ? fr_sem_dscale_k(sem, sb, kv, j0) : 1.0f;
    for (int64_t r = 0; r < ni; r++) {
        float *x = S + r * FR_K_BN;
        const float *ps = pse + r * FR_K_BN;
        if (fp8) {
            if (sem->pse && sem->pse_type == FR_PSE_OUTER_ADD_MUL) {
                for (int64_t j = 0; j < nj; j++) {
                    float t = x[j] * dq[r];
                    t = t * dk;
                    t = t + ps[j];
                    x[j] = t * scale;
                }
            } else {
                float f = scale * dq[r];
                f = f * dk; /* one multiply by scale * dq * dk, the product formed in fp32 first (spec 3 step 2) */
                for (int64_t j = 0; j < nj; j++) {
                    float t = x[j] * f;
                    x[j] = sem->pse ? t + ps[j] : t;
                }
            }
        } else if (sem->pse && sem->pse_type == FR_PSE_OUTER_ADD_MUL) {
            for (int64_t j = 0; j < nj; j++) {
                float t = x[j] + ps[j];
                x[j] = t * scale;
            }
        } else if (sem->pse) {
            for (int64_t j = 0; j < nj; j++) {
                float t = x[j] * scale;
                x[j] = t + ps[j];
            }
        } else {
            for (int64_t j = 0; j < nj; j++) x[j] = x[j] * scale;
        }
    }
    if (cls == FR_TILE_PARTIAL) {
        fr_sem_tile_keep(sem, sb, h, i0, ni, j0, nj, keep, FR_K_BN);
        for (int64_t r = 0; r < ni; r++)
            for (int64_t j = 0; j < nj; j++)
                if (!keep[r * FR_K_BN + j]) S[r * FR_K_BN + j] = -INFINITY; /* excluded (D2) */
    }
}

