/* AVX2 + FMA variant: fp32 GEMM microkernel with a 4 x 24 block of C in 12 ymm registers (3 loads of B and 4
 * broadcasts per k step for 12 FMAs), masked loads/stores for column tails; vector exp as in the AVX-512 file, with
 * 2^n built in the exponent field. */
#include "kernels/kernels.h"

#include <immintrin.h>

static inline __m256i tail_mask8(int64_t rem) {
    int r = rem >= 8 ? 8 : rem <= 0 ? 0 : (int)rem;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Alike ops_avx512.c:block_f32 and ops_avx512bf16.c:block_bf16: kept apart because each is one ISA's kernel for its
 * vector width (4 x 24 of 8-lane ymm here, 6 x 64 of 16-lane zmm there, bf16 pairs by vdpbf16ps in ops_avx512bf16.c),
 * compiled with its own ISA flags. */
static inline __attribute__((always_inline)) void block_f32(const int MR, int64_t k, const float *A, int64_t lda,
                                                            const float *B, int64_t ldb, float *C, int64_t ldc,
                                                            int64_t nc, bool acc) {
    __m256 c[4][3];
    __m256i mk[3];
#pragma GCC unroll 3
    for (int v = 0; v < 3; v++) mk[v] = tail_mask8(nc - 8 * v);
    for (int64_t k0 = 0; k0 < k || (k0 == 0 && !acc); k0 += FR_K_KB) {
        int64_t ke = k - k0 < FR_K_KB ? k : k0 + FR_K_KB;
#pragma GCC unroll 4
        for (int r = 0; r < MR; r++)
#pragma GCC unroll 3
            for (int v = 0; v < 3; v++) c[r][v] = _mm256_setzero_ps();
        for (int64_t kk = k0; kk < ke; kk++) {
            const float *b = B + kk * ldb;
            __m256 b0 = _mm256_maskload_ps(b, mk[0]), b1 = _mm256_maskload_ps(b + 8, mk[1]);
            __m256 b2 = _mm256_maskload_ps(b + 16, mk[2]);
#pragma GCC unroll 4
            for (int r = 0; r < MR; r++) {
                __m256 a = _mm256_broadcast_ss(A + r * lda + kk);
                c[r][0] = _mm256_fmadd_ps(a, b0, c[r][0]);
                c[r][1] = _mm256_fmadd_ps(a, b1, c[r][1]);
                c[r][2] = _mm256_fmadd_ps(a, b2, c[r][2]);
            }
        }
        bool add = acc || k0 > 0;
#pragma GCC unroll 4
        for (int r = 0; r < MR; r++)
#pragma GCC unroll 3
            for (int v = 0; v < 3; v++) {
                float *cp = C + r * ldc + 8 * v;
                __m256 x = add ? _mm256_add_ps(_mm256_maskload_ps(cp, mk[v]), c[r][v]) : c[r][v];
                _mm256_maskstore_ps(cp, mk[v], x);
            }
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

typedef void (*block_fn)(int64_t, const float *, int64_t, const float *, int64_t, float *, int64_t, int64_t, bool);
static const block_fn blocks[5] = {NULL, block_f32_1, block_f32_2, block_f32_3, block_f32_4};

void fr_k_gemm_f32_4x24_avx2(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const float *B,
                             int64_t ldb, float *C, int64_t ldc, bool acc) {
    for (int64_t j = 0; j < n; j += 24) {
        int64_t nc = n - j < 24 ? n - j : 24;
        for (int64_t i = 0; i < m; i += 4) {
            int64_t mr = m - i < 4 ? m - i : 4;
            blocks[mr](k, A + i * lda, lda, B + j, ldb, C + i * ldc + j, ldc, nc, acc);
        }
    }
}

static inline float hmax8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}
static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

float fr_k_max_f32_avx2(int64_t n, const float *x) {
    __m256 m = _mm256_set1_ps(-__builtin_inff());
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + j));
    float r = hmax8(m);
    for (; j < n; j++) r = x[j] > r ? x[j] : r;
    return r;
}

/* exp(x) for x <= 0; see fr_exp512 in simd_avx512.h (same reduction and polynomial). */
/* Alike simd_avx512.h:fr_exp512: kept apart because this is the 8-lane AVX2 form (2^n built from exponent bits, AVX2
 * has no scalef) of the same reduction and polynomial, compiled with AVX2 flags only. */
static inline __m256 exp256(__m256 x) {
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    __m256 y = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
    y = _mm256_add_ps(y, _mm256_set1_ps(1.0f));
    __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(-87.33654f), _CMP_LT_OQ);
    __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    __m256 nc = _mm256_max_ps(n, _mm256_set1_ps(-126.0f)); /* keeps the exponent field valid; tiny lanes are 0 */
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(nc), _mm256_set1_epi32(127)), 23);
    y = _mm256_mul_ps(y, _mm256_castsi256_ps(e));
    y = _mm256_andnot_ps(tiny, y);
    return _mm256_blendv_ps(y, x, nan);
}

float fr_k_expsum_f32_avx2(int64_t n, float *x, float sub) {
    __m256 s = _mm256_setzero_ps(), vs = _mm256_set1_ps(sub);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + j), vs));
        _mm256_storeu_ps(x + j, e);
        s = _mm256_add_ps(s, e);
    }
    if (j < n) {
        __m256i mk = tail_mask8(n - j);
        __m256 e = exp256(_mm256_sub_ps(_mm256_maskload_ps(x + j, mk), vs));
        _mm256_maskstore_ps(x + j, mk, e);
        s = _mm256_add_ps(s, _mm256_and_ps(e, _mm256_castsi256_ps(mk)));
    }
    return hsum8(s);
}

void fr_k_kahan_add_f32_avx2(int64_t n, float *acc, float *comp, const float *t) {
    int64_t e = 0;
    for (; e + 8 <= n; e += 8) {
        __m256 a = _mm256_loadu_ps(acc + e), c = _mm256_loadu_ps(comp + e);
        __m256 y = _mm256_sub_ps(_mm256_loadu_ps(t + e), c), s = _mm256_add_ps(a, y);
        _mm256_storeu_ps(comp + e, _mm256_sub_ps(_mm256_sub_ps(s, a), y));
        _mm256_storeu_ps(acc + e, s);
    }
    for (; e < n; e++) {
        float y = t[e] - comp[e], s = acc[e] + y;
        comp[e] = (s - acc[e]) - y;
        acc[e] = s;
    }
}

/* One 8 x 8 block: 2 x 2 transposes of pairs (unpack ps), of 2 x 2 blocks (shuffle ps), then of the 128-bit halves
 * (permute2f128). Data movement only: the packed tiles, and so every result, are the scalar slot's bits. */
/* Alike ops_avx512.c:tr16: kept apart because each is one ISA's block transpose (8 x 8 ymm here, 16 x 16 zmm there),
 * compiled with its own ISA flags. */
static inline void tr8(const float *src, int64_t lds, float *dst, int64_t ldd) {
    __m256 r[8], t[8];
    for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + i * lds);
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);     /* r0c0 r1c0 r0c1 r1c1 | r0c4 r1c4 r0c5 r1c5 */
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]); /* r0c2 r1c2 r0c3 r1c3 | r0c6 r1c6 r0c7 r1c7 */
    }
    for (int i = 0; i < 8; i += 4) {
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);         /* column 0 (| 4) of rows i..i+3 */
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);     /* column 1 (| 5) */
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44); /* column 2 (| 6) */
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE); /* column 3 (| 7) */
    }
    for (int c = 0; c < 4; c++) {
        _mm256_storeu_ps(dst + c * ldd, _mm256_permute2f128_ps(r[c], r[4 + c], 0x20));
        _mm256_storeu_ps(dst + (4 + c) * ldd, _mm256_permute2f128_ps(r[c], r[4 + c], 0x31));
    }
}

void fr_k_transpose_f32_8x8_avx2(int64_t rows, int64_t cols, const float *src, int64_t lds, float *dst, int64_t ldd) {
    int64_t r8 = rows & ~(int64_t)7, c8 = cols & ~(int64_t)7;
    for (int64_t r = 0; r < r8; r += 8)
        for (int64_t c = 0; c < c8; c += 8) tr8(src + r * lds + c, lds, dst + c * ldd + r, ldd);
    for (int64_t r = 0; r < rows; r++) /* edges */
        for (int64_t c = r < r8 ? c8 : 0; c < cols; c++) dst[c * ldd + r] = src[r * lds + c];
}

/* What avx2 overrides; the rest is scalar's (the bf16 slots are only the reference there, bf16 inputs being widened
 * for gemm_f32).
 * Alike ops_scalar.c:fr_kops_over_scalar and the other variants' tables: kept apart because each table is one
 * variant's own overrides (style.md 1); what they share is the slot names. */
const fr_kops fr_kops_over_avx2 = {
    .gemm_f32 = fr_k_gemm_f32_4x24_avx2,
    .max_f32 = fr_k_max_f32_avx2,
    .expsum_f32 = fr_k_expsum_f32_avx2,
    .kahan_add_f32 = fr_k_kahan_add_f32_avx2,
    .transpose_f32 = fr_k_transpose_f32_8x8_avx2,
};
