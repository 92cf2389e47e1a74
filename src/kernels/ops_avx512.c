/* AVX-512F variant: fp32 GEMM microkernel with a 6 x 64 block of C in 24 zmm registers (broadcast A, 4 loads of B
 * per k step: 24 FMAs per 10 loads, so the two FMA ports stay the bottleneck), masked loads/stores for tails;
 * vector exp (Cody-Waite reduction, degree-6 polynomial, scalef) for the softmax. */
#include "kernels/kernels.h"
#include "kernels/simd_avx512.h"

#include <immintrin.h>

/* One MR x 64 block (MR constant after inlining). */
/* Alike ops_avx2.c:block_f32 and ops_avx512bf16.c:block_bf16: kept apart because each is one ISA's kernel for its
 * vector width (6 x 64 of 16-lane zmm fp32 here, 4 x 24 of 8-lane ymm in ops_avx2.c, bf16 pairs by vdpbf16ps in
 * ops_avx512bf16.c), compiled with its own ISA flags; the AVX-512 pair shares its store epilogue (FR_STORE_6X64). */
static inline __attribute__((always_inline)) void block_f32(const int MR, int64_t k, const float *A, int64_t lda,
                                                            const float *B, int64_t ldb, float *C, int64_t ldc,
                                                            int64_t nc, bool acc) {
    __m512 c[6][4];
    __mmask16 mk[4];
#pragma GCC unroll 4
    for (int v = 0; v < 4; v++) mk[v] = fr_tail_mask16(nc - 16 * v);
    for (int64_t k0 = 0; k0 < k || (k0 == 0 && !acc); k0 += FR_K_KB) {
        int64_t ke = k - k0 < FR_K_KB ? k : k0 + FR_K_KB;
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++) c[r][v] = _mm512_setzero_ps();
        for (int64_t kk = k0; kk < ke; kk++) {
            const float *b = B + kk * ldb;
            __m512 b0 = _mm512_maskz_loadu_ps(mk[0], b), b1 = _mm512_maskz_loadu_ps(mk[1], b + 16);
            __m512 b2 = _mm512_maskz_loadu_ps(mk[2], b + 32), b3 = _mm512_maskz_loadu_ps(mk[3], b + 48);
#pragma GCC unroll 6
            for (int r = 0; r < MR; r++) {
                __m512 a = _mm512_set1_ps(A[r * lda + kk]);
                c[r][0] = _mm512_fmadd_ps(a, b0, c[r][0]);
                c[r][1] = _mm512_fmadd_ps(a, b1, c[r][1]);
                c[r][2] = _mm512_fmadd_ps(a, b2, c[r][2]);
                c[r][3] = _mm512_fmadd_ps(a, b3, c[r][3]);
            }
        }
        FR_STORE_6X64(MR, c, mk, C, ldc, acc || k0 > 0);
        if (k == 0) break;
    }
}

#define FR_BLOCK_FN(MR)                                                                                             \
    static void block_f32_##MR(int64_t k, const float *A, int64_t lda, const float *B, int64_t ldb, float *C,       \
                               int64_t ldc, int64_t nc, bool acc) {                                                 \
        block_f32(MR, k, A, lda, B, ldb, C, ldc, nc, acc);                                                          \
    }
FR_BLOCK_FN(1)
FR_BLOCK_FN(2)
FR_BLOCK_FN(3)
FR_BLOCK_FN(4)
FR_BLOCK_FN(5)
FR_BLOCK_FN(6)

typedef void (*block_fn)(int64_t, const float *, int64_t, const float *, int64_t, float *, int64_t, int64_t, bool);
static const block_fn blocks[7] = {NULL, block_f32_1, block_f32_2, block_f32_3, block_f32_4, block_f32_5,
                                   block_f32_6};

void fr_k_gemm_f32_6x64_avx512(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const float *B,
                               int64_t ldb, float *C, int64_t ldc, bool acc) {
    for (int64_t j = 0; j < n; j += 64) {
        int64_t nc = n - j < 64 ? n - j : 64;
        for (int64_t i = 0; i < m; i += 6) {
            int64_t mr = m - i < 6 ? m - i : 6;
            blocks[mr](k, A + i * lda, lda, B + j, ldb, C + i * ldc + j, ldc, nc, acc);
        }
    }
}

float fr_k_max_f32_avx512(int64_t n, const float *x) {
    __m512 m = _mm512_set1_ps(-__builtin_inff());
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) m = _mm512_max_ps(m, _mm512_loadu_ps(x + j));
    if (j < n)
        m = _mm512_mask_max_ps(m, fr_tail_mask16(n - j), m, _mm512_maskz_loadu_ps(fr_tail_mask16(n - j), x + j));
    return _mm512_reduce_max_ps(m);
}

float fr_k_expsum_f32_avx512(int64_t n, float *x, float sub) {
    __m512 s = _mm512_setzero_ps(), vs = _mm512_set1_ps(sub);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m512 e = fr_exp512(_mm512_sub_ps(_mm512_loadu_ps(x + j), vs));
        _mm512_storeu_ps(x + j, e);
        s = _mm512_add_ps(s, e);
    }
    if (j < n) {
        __mmask16 mk = fr_tail_mask16(n - j);
        __m512 e = fr_exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, x + j), vs));
        _mm512_mask_storeu_ps(x + j, mk, e);
        s = _mm512_mask_add_ps(s, mk, s, e);
    }
    return _mm512_reduce_add_ps(s);
}

void fr_k_kahan_add_f32_avx512(int64_t n, float *acc, float *comp, const float *t) {
    int64_t e = 0;
    for (; e < n; e += 16) {
        __mmask16 mk = fr_tail_mask16(n - e);
        __m512 a = _mm512_maskz_loadu_ps(mk, acc + e), c = _mm512_maskz_loadu_ps(mk, comp + e);
        __m512 y = _mm512_sub_ps(_mm512_maskz_loadu_ps(mk, t + e), c), s = _mm512_add_ps(a, y);
        _mm512_mask_storeu_ps(comp + e, mk, _mm512_sub_ps(_mm512_sub_ps(s, a), y));
        _mm512_mask_storeu_ps(acc + e, mk, s);
    }
}

/* One 16 x 16 block: 4 x 4 transposes inside 128-bit lanes (unpack ps / pd), then a 4 x 4 transpose of the lanes
 * (shuffle_f32x4). */
/* Alike ops_avx2.c:tr8: kept apart because each is one ISA's block transpose (16 x 16 zmm here, 8 x 8 ymm there),
 * compiled with its own ISA flags. */
static inline void tr16(const float *src, int64_t lds, float *dst, int64_t ldd) {
    __m512 r[16], t[16];
    for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(src + i * lds);
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
        __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));     /* column 4L + 0 of rows i..i+3, lane L */
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c)); /* column 4L + 1 */
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d)); /* column 4L + 2 */
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d)); /* column 4L + 3 */
    }
    for (int c = 0; c < 4; c++) {
        __m512 u0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x44), u1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xEE);
        __m512 u2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x44), u3 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xEE);
        _mm512_storeu_ps(dst + (0 + c) * ldd, _mm512_shuffle_f32x4(u0, u2, 0x88));
        _mm512_storeu_ps(dst + (4 + c) * ldd, _mm512_shuffle_f32x4(u0, u2, 0xDD));
        _mm512_storeu_ps(dst + (8 + c) * ldd, _mm512_shuffle_f32x4(u1, u3, 0x88));
        _mm512_storeu_ps(dst + (12 + c) * ldd, _mm512_shuffle_f32x4(u1, u3, 0xDD));
    }
}

void fr_k_transpose_f32_16x16_avx512(int64_t rows, int64_t cols, const float *src, int64_t lds, float *dst,
                                     int64_t ldd) {
    int64_t r16 = rows & ~(int64_t)15, c16 = cols & ~(int64_t)15;
    for (int64_t r = 0; r < r16; r += 16)
        for (int64_t c = 0; c < c16; c += 16) tr16(src + r * lds + c, lds, dst + c * ldd + r, ldd);
    for (int64_t r = 0; r < rows; r++) /* edges */
        for (int64_t c = r < r16 ? c16 : 0; c < cols; c++) dst[c * ldd + r] = src[r * lds + c];
}

/* What avx512 overrides; the bf16 slots stay avx2's (scalar: only the reference, bf16 inputs are widened for
 * gemm_f32).
 * Alike ops_scalar.c:fr_kops_over_scalar and the other variants' tables: kept apart because each table is one variant's
 * own overrides (style.md 1); what they share is the slot names. */
const fr_kops fr_kops_over_avx512 = {
    .gemm_f32 = fr_k_gemm_f32_6x64_avx512,
    .max_f32 = fr_k_max_f32_avx512,
    .expsum_f32 = fr_k_expsum_f32_avx512,
    .kahan_add_f32 = fr_k_kahan_add_f32_avx512,
    .transpose_f32 = fr_k_transpose_f32_16x16_avx512,
};
