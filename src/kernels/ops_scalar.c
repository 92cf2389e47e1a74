/* The reference variant (style.md 1, 13): portable C, no intrinsics, reads like the math. Every other variant is
 * tested against this one on the same inputs. */
#include "kernels/kernels.h"

#include <math.h>

/* C[m x n] = (acc ? C : 0) + A[m x k] . B[k x n]. */
void fr_k_gemm_f32_1x1_scalar(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const float *B,
                              int64_t ldb, float *C, int64_t ldc, bool acc) {
    for (int64_t i = 0; i < m; i++) {
        float *c = C + i * ldc;
        if (!acc)
            for (int64_t j = 0; j < n; j++) c[j] = 0.0f;
        for (int64_t kk = 0; kk < k; kk++) {
            float a = A[i * lda + kk];
            const float *b = B + kk * ldb;
            for (int64_t j = 0; j < n; j++) c[j] += a * b[j];
        }
    }
}

float fr_k_max_f32_scalar(int64_t n, const float *x) {
    float m = -INFINITY;
    for (int64_t j = 0; j < n; j++) m = x[j] > m ? x[j] : m;
    return m;
}

float fr_k_expsum_f32_scalar(int64_t n, float *x, float sub) {
    float s = 0.0f;
    for (int64_t j = 0; j < n; j++) {
        x[j] = expf(x[j] - sub);
        s += x[j];
    }
    return s;
}

const fr_kops fr_kops_scalar = {
    .name = "scalar",
    .isa = FR_ISA_SCALAR,
    .gemm_f32 = fr_k_gemm_f32_1x1_scalar,
    .max_f32 = fr_k_max_f32_scalar,
    .expsum_f32 = fr_k_expsum_f32_scalar,
    .gemm_bf16 = NULL, /* bf16 inputs are widened to fp32: same exact products */
};
