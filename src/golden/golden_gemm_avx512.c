/* AVX-512 variant of the golden's product C += A . B (contract in golden_gemm.h): tiles of 8 rows x 16 columns,
 * vectorized across columns; each element is the fma chain over k in order, exactly as the scalar reference. */
#include "golden/golden_gemm.h"

#include <immintrin.h>

/* mr rows (<= 8) x up to 16 columns (lane masks m0, m1) of C: [mr][ldc] += A: [mr][K] . B: [K][ldb]. Inlined
 * with a constant mr so the accumulators stay in registers. */
static inline __attribute__((always_inline)) void tile(const int mr, int64_t K, const double *A, int64_t rsa,
                                                       int64_t csa, const double *B, int64_t ldb, double *C,
                                                       int64_t ldc, __mmask8 m0, __mmask8 m1) {
    __m512d c0[8], c1[8];
    for (int r = 0; r < mr; r++) {
        c0[r] = _mm512_maskz_loadu_pd(m0, C + r * ldc);
        c1[r] = _mm512_maskz_loadu_pd(m1, C + r * ldc + 8);
    }
    for (int64_t k = 0; k < K; k++) {
        __m512d b0 = _mm512_maskz_loadu_pd(m0, B + k * ldb), b1 = _mm512_maskz_loadu_pd(m1, B + k * ldb + 8);
        for (int r = 0; r < mr; r++) {
            __m512d a = _mm512_set1_pd(A[r * rsa + k * csa]);
            c0[r] = _mm512_fmadd_pd(a, b0, c0[r]);
            c1[r] = _mm512_fmadd_pd(a, b1, c1[r]);
        }
    }
    for (int r = 0; r < mr; r++) {
        _mm512_mask_storeu_pd(C + r * ldc, m0, c0[r]);
        _mm512_mask_storeu_pd(C + r * ldc + 8, m1, c1[r]);
    }
}

/* Alike golden_gemm_avx2.c:gd_gemm_acc_avx2: kept apart because each is one ISA's variant for its vector width (8 x 16
 * tiles of 8-lane zmm with mask registers here, 6 x 8 of 4-lane ymm there), compiled with its own ISA flags (style.md
 * 3). */
void gd_gemm_acc_avx512(int64_t M, int64_t N, int64_t K, const double *A, int64_t rsa, int64_t csa, const double *B,
                        int64_t ldb, double *C, int64_t ldc) {
    for (int64_t c = 0; c < N; c += 16) {
        int64_t nb = N - c < 16 ? N - c : 16;
        __mmask8 m0 = (__mmask8)(nb >= 8 ? 0xFF : (1u << nb) - 1u);
        __mmask8 m1 = (__mmask8)(nb >= 16 ? 0xFF : nb > 8 ? (1u << (nb - 8)) - 1u : 0u);
        const double *Bc = B + c;
        double *Cc = C + c;
        int64_t r = 0;
        for (; r + 8 <= M; r += 8) tile(8, K, A + r * rsa, rsa, csa, Bc, ldb, Cc + r * ldc, ldc, m0, m1);
        /* Alike golden_gemm_avx512.c:gd_gemm_acc_avx512 (each case below): kept apart because every case hands the
         * always-inline tile() a constant row count, so the compiler builds one fully unrolled tile per count. */
        switch (M - r) {
        case 7:
            tile(7, K, A + r * rsa, rsa, csa, Bc, ldb, Cc + r * ldc, ldc, m0, m1);
            break;
        case 6:
            tile(6, K, A + r * rsa, rsa, csa, Bc, ldb, Cc + r * ldc, ldc, m0, m1);
            break;
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
