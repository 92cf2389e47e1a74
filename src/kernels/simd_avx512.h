/* AVX-512 helpers shared by the *_avx512*.c kernel files (only those files include it: it needs their flags). */
#ifndef FR_KERNELS_SIMD_AVX512_H
#define FR_KERNELS_SIMD_AVX512_H

#include <immintrin.h>
#include <stdbool.h> /* FR_STORE_6X64 */
#include <stdint.h>

/* The lanes of a 16-lane vector that hold rem remaining elements (all for rem >= 16, none for rem <= 0). */
static inline __mmask16 fr_tail_mask16(int64_t rem) {
    return rem >= 16 ? (__mmask16)0xffff : rem <= 0 ? (__mmask16)0 : (__mmask16)((1u << rem) - 1u);
}

/* The store epilogue of the 6 x 64 GEMM microkernels (ops_avx512.c fp32, ops_avx512bf16.c bf16 pairs): one k block's
 * sums c[MR][4] (four 16-lane vectors a row, masked to the block's columns by mk[4]) are added to C when add (acc, or
 * a k block after the first), else written over it. A macro, not an inline function: as a function GCC 12 allocated
 * the microkernels' registers differently; as a macro their machine code is the same as when each file had its own
 * copy. */
#define FR_STORE_6X64(MR, c, mk, C, ldc, add_)                                                                         \
    do {                                                                                                               \
        bool add = (add_);                                                                                             \
        _Pragma("GCC unroll 6") for (int r = 0; r < (MR); r++)                                                         \
        _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) {                                                          \
            float *cp = (C) + r * (ldc) + 16 * v;                                                                      \
            __m512 x = add ? _mm512_add_ps(_mm512_maskz_loadu_ps((mk)[v], cp), (c)[r][v]) : (c)[r][v];                 \
            _mm512_mask_storeu_ps(cp, (mk)[v], x);                                                                     \
        }                                                                                                              \
    } while (0)

/* exp(x) for x <= 0 (the softmax range), within about 1 ulp of expf: x = n ln2 + r (two-constant Cody-Waite),
 * exp(r) by the Cephes degree-6 polynomial, times 2^n by scalef. Results below FLT_MIN flush to 0 (they cannot
 * matter next to a row sum >= 1); -inf gives 0, NaN stays NaN. */
/* Alike ops_avx2.c:exp256: kept apart because this is the 16-lane AVX-512 form (2^n by scalef) of the same reduction
 * and polynomial; AVX2 files cannot include AVX-512 code. */
static inline __m512 fr_exp512(__m512 x) {
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    __m512 y = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
    y = _mm512_add_ps(y, _mm512_set1_ps(1.0f));
    y = _mm512_scalef_ps(y, n);
    __mmask16 tiny = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.33654f), _CMP_LT_OQ);
    return _mm512_mask_blend_ps(tiny, y, _mm512_setzero_ps());
}

#endif
