/* AVX512-BF16 variant: the AVX-512 fp32 slots plus a bf16 GEMM on vdpbf16ps (two exact bf16 products per lane
 * and step, fp32 accumulation), 6 x 64 block of C in 24 zmm registers as in the fp32 microkernel. */
#include "kernels/kernels.h"
#include "kernels/simd_avx512.h"

#include <immintrin.h>

/* Alike ops_avx512.c:block_f32 and ops_avx2.c:block_f32: kept apart because this is the bf16-pair kernel (vdpbf16ps on
 * packed pairs, AVX512-BF16 flags) and they are fp32 kernels for their own vector widths; the store epilogue, the same
 * in ops_avx512.c, is shared (FR_STORE_6X64, simd_avx512.h). */
static inline __attribute__((always_inline)) void block_bf16(const int MR, int64_t k, const uint32_t *A,
                                                             int64_t lda, const uint32_t *B, int64_t ldb, float *C,
                                                             int64_t ldc, int64_t nc, bool acc) {
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
            const uint32_t *b = B + kk * ldb;
            __m512bh b0 = (__m512bh)_mm512_maskz_loadu_epi32(mk[0], b);
            __m512bh b1 = (__m512bh)_mm512_maskz_loadu_epi32(mk[1], b + 16);
            __m512bh b2 = (__m512bh)_mm512_maskz_loadu_epi32(mk[2], b + 32);
            __m512bh b3 = (__m512bh)_mm512_maskz_loadu_epi32(mk[3], b + 48);
#pragma GCC unroll 6
            for (int r = 0; r < MR; r++) {
                __m512bh a = (__m512bh)_mm512_set1_epi32((int)A[r * lda + kk]);
                c[r][0] = _mm512_dpbf16_ps(c[r][0], a, b0);
                c[r][1] = _mm512_dpbf16_ps(c[r][1], a, b1);
                c[r][2] = _mm512_dpbf16_ps(c[r][2], a, b2);
                c[r][3] = _mm512_dpbf16_ps(c[r][3], a, b3);
            }
        }
        FR_STORE_6X64(MR, c, mk, C, ldc, acc || k0 > 0);
        if (k == 0) break;
    }
}

#define FR_BLOCK_FN(MR)                                                                                             \
    static void block_bf16_##MR(int64_t k, const uint32_t *A, int64_t lda, const uint32_t *B, int64_t ldb,        \
                                float *C, int64_t ldc, int64_t nc, bool acc) {                                      \
        block_bf16(MR, k, A, lda, B, ldb, C, ldc, nc, acc);                                                       \
    }
FR_BLOCK_FN(1)
FR_BLOCK_FN(2)
FR_BLOCK_FN(3)
FR_BLOCK_FN(4)
FR_BLOCK_FN(5)
FR_BLOCK_FN(6)

typedef void (*block_fn)(int64_t, const uint32_t *, int64_t, const uint32_t *, int64_t, float *, int64_t, int64_t,
                         bool);
static const block_fn blocks[7] = {NULL, block_bf16_1, block_bf16_2, block_bf16_3, block_bf16_4, block_bf16_5,
                                   block_bf16_6};

void fr_k_gemm_bf16_6x64_avx512bf16(int64_t m, int64_t n, int64_t k2, const uint32_t *A, int64_t lda2,
                                    const uint32_t *B, int64_t ldb, float *C, int64_t ldc, bool acc) {
    for (int64_t j = 0; j < n; j += 64) {
        int64_t nc = n - j < 64 ? n - j : 64;
        for (int64_t i = 0; i < m; i += 6) {
            int64_t mr = m - i < 6 ? m - i : 6;
            blocks[mr](k2, A + i * lda2, lda2, B + j, ldb, C + i * ldc + j, ldc, nc, acc);
        }
    }
}

void fr_k_pack_bf16_away_avx512bf16(int64_t n, const float *x, uint16_t *out) {
    int64_t j = 0;
    for (; j < n; j += 16) {
        __mmask16 mk = fr_tail_mask16(n - j);
        __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(mk, x + j));
        u = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x8000)), 16);
        _mm256_mask_storeu_epi16(out + j, mk, _mm512_cvtepi32_epi16(u));
    }
    if (n & 1) out[n] = 0;
}

void fr_k_interleave_bf16_avx512bf16(int64_t n, int64_t dv, const uint16_t *v, int64_t ldv, uint32_t *out) {
    for (int64_t j = 0; j < n; j += 2) {
        const uint16_t *a = v + j * ldv, *b = v + (j + 1) * ldv;
        bool has_b = j + 1 < n;
        uint32_t *o = out + (j / 2) * dv;
        for (int64_t d = 0; d < dv; d += 16) {
            __mmask16 mk = fr_tail_mask16(dv - d);
            __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, a + d));
            __m512i hi = has_b ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, b + d)) : _mm512_setzero_si512();
            _mm512_mask_storeu_epi32(o + d, mk, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
        }
    }
}

/* Decode: one key row against each query row, 16 pairs a step (vdpbf16ps), the 16 lane sums added at the end. */
void fr_k_dot_rows_bf16_avx512bf16(int64_t m, int64_t n, int64_t k2, const uint32_t *A, int64_t lda2,
                                   const uint32_t *B, int64_t ldb2, float *C, int64_t ldc) {
    for (int64_t j = 0; j < n; j++) {
        const uint32_t *b = B + j * ldb2;
        for (int64_t i = 0; i < m; i++) {
            const uint32_t *a = A + i * lda2;
            __m512 acc = _mm512_setzero_ps();
            for (int64_t p = 0; p < k2; p += 16) {
                __mmask16 mk = fr_tail_mask16(k2 - p);
                acc = _mm512_dpbf16_ps(acc, (__m512bh)_mm512_maskz_loadu_epi32(mk, a + p),
                                       (__m512bh)_mm512_maskz_loadu_epi32(mk, b + p));
            }
            C[i * ldc + j] = _mm512_reduce_add_ps(acc);
        }
    }
}

/* Decode: 128 columns of an O row in 8 zmm registers while the V rows stream past, widened 16 at a time. */
void fr_k_axpy_rows_bf16_avx512bf16(int64_t m, int64_t n, int64_t dv, const uint16_t *P, int64_t ldp,
                                    const uint8_t *keep, int64_t ldk, const uint16_t *V, int64_t ldv, float *O,
                                    int64_t ldo) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t d0 = 0; d0 < dv; d0 += 128) {
            __m512 o[8];
            __mmask16 mk[8];
            float *orow = O + i * ldo + d0;
#pragma GCC unroll 8
            for (int v = 0; v < 8; v++) {
                mk[v] = fr_tail_mask16(dv - d0 - 16 * v);
                o[v] = _mm512_maskz_loadu_ps(mk[v], orow + 16 * v);
            }
            for (int64_t j = 0; j < n; j++) {
                if (keep && !keep[i * ldk + j]) continue;
                __m512 p = _mm512_castsi512_ps(_mm512_set1_epi32((int)((uint32_t)P[i * ldp + j] << 16)));
                const uint16_t *vr = V + j * ldv + d0;
#pragma GCC unroll 8
                for (int v = 0; v < 8; v++) {
                    __m512i x = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk[v], vr + 16 * v));
                    o[v] = _mm512_fmadd_ps(p, _mm512_castsi512_ps(_mm512_slli_epi32(x, 16)), o[v]);
                }
            }
#pragma GCC unroll 8
            for (int v = 0; v < 8; v++) _mm512_mask_storeu_ps(orow + 16 * v, mk[v], o[v]);
        }
}

/* What avx512bf16 overrides: the bf16 slots; the fp32 ones stay avx512's.
 * Alike ops_scalar.c:fr_kops_over_scalar and the other variants' tables: kept apart because each table is one variant's
 * own overrides (style.md 1); what they share is the slot names. */
const fr_kops fr_kops_over_avx512bf16 = {
    .pack_bf16_away = fr_k_pack_bf16_away_avx512bf16,
    .interleave_bf16 = fr_k_interleave_bf16_avx512bf16,
    .gemm_bf16 = fr_k_gemm_bf16_6x64_avx512bf16,
    .dot_rows_bf16 = fr_k_dot_rows_bf16_avx512bf16,
    .axpy_rows_bf16 = fr_k_axpy_rows_bf16_avx512bf16,
};
