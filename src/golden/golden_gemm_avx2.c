/* AVX2 variant of the golden's product C += A . B (contract in golden_gemm.h): tiles of 6 rows x 8 columns,
 * vectorized across columns; each element is the fma chain over k in order, exactly as the scalar reference. */
#include "golden/golden_gemm.h"

#include <immintrin.h>

static inline __m256i lane_mask(int64_t n) { /* the first n (<= 4, may be <= 0) lanes */
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
}

/* mr rows (<= 6) x up to 8 columns (lane masks m0, m1) of C: [mr][ldc] += A: [mr][K] . B: [K][ldb]. */
static inline __attribute__((always_inline)) void tile(const int mr, int64_t K, const double *A, int64_t rsa,
                                                       int64_t csa, const double *B, int64_t ldb, double *C,
                                                       int64_t ldc, __m256i m0, __m256i m1) {
    __m256d c0[6], c1[6];
    for (int r = 0; r < mr; r++) {
        c0[r] = _mm256_maskload_pd(C + r * ldc, m0);
        c1[r] = _mm256_maskload_pd(C + r * ldc + 4, m1);
    }
    for (int64_t k = 0; k < K; k++) {
        __m256d b0 = _mm256_maskload_pd(B + k * ldb, m0), b1 = _mm256_maskload_pd(B + k * ldb + 4, m1);
        for (int r = 0; r < mr; r++) {
            __m256d a = _mm256_broadcast_sd(A + r * rsa + k * csa);
            c0[r] = _mm256_fmadd_pd(a, b0, c0[r]);
            c1[r] = _mm256_fmadd_pd(a, b1, c1[r]);
        }
    }
    for (int r = 0; r < mr; r++) {
        _mm256_maskstore_pd(C + r * ldc, m0, c0[r]);
        _mm256_maskstore_pd(C + r * ldc + 4, m1, c1[r]);
    }
}

/* Alike golden_gemm_avx512.c:gd_gemm_acc_avx512: kept apart because each is one ISA's variant for its vector width (6 x
 * 8 tiles of 4-lane ymm here, 8 x 16 of 8-lane zmm with mask registers there), compiled with its own ISA flags
 * (style.md 3). */
void gd_gemm_acc_avx2(int64_t M, int64_t N, int64_t K, const double *A, int64_t rsa, int64_t csa, const double *B,
                      int64_t ldb, double *C, int64_t ldc) {
    for (int64_t c = 0; c < N; c += 8) {
        int64_t nb = N - c < 8 ? N - c : 8;
        __m256i m0 = lane_mask(nb), m1 = lane_mask(nb - 4);
        const double *Bc = B + c;
        double *Cc = C + c;
        int64_t r = 0;
        for (; r + 6 <= M; r += 6) tile(6, K, A + r * rsa, rsa, csa, Bc, ldb, Cc + r * ldc, ldc, m0, m1);
        /* Alike golden_gemm_avx2.c:gd_gemm_acc_avx2 (each case below): kept apart because every case hands the always-
         * inline tile() a constant row count, so the compiler builds one fully unrolled tile per count. */
        switch (M - r) {
        case 5:
            tile(5, K, A + r * rsa, rsa, csa, Bc, ldb, Cc + r * ldc, ldc, m0, m1);
            break;
        case 4:
            tile(4, K, A + r * rsa, rsa, csa, Bc, ldb, Cc + r * ldc, ldc, m0, m1);
            break;
        case 3:
            tile(3, K, A + r * rsa, rsa, csa, Bc, ldb, Cc + r * ldc, ldc, m0, m1);
            break;
        case 2:
            tile(2, K, A + r * rsa, rsa, csa, Bc, ldb, Cc + r * ldc, ldc, m0, m1);
            break;
        case 1:
            tile(1, K, A + r * rsa, rsa, csa, Bc, ldb, Cc + r * ldc, ldc, m0, m1);
            break;
        default:
            break;
        }
    }
}
