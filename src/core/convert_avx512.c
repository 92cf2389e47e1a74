/* AVX-512 array conversions fp32 <-> bf16, fp16, e4m3fn, e5m2 (16 lanes). Encoders are the integer algorithm of
 * convert.c on vectors, so results are bit-identical to the scalar encoders, whatever MXCSR says (the hardware
 * vcvtps2ph only rounds to nearest even and does not saturate; vcvtneps2bf16 flushes subnormals). */
#include "core/convert.h"

#include <immintrin.h>

static inline __mmask16 tail_mask(size_t rem) { return (__mmask16)((1u << rem) - 1u); }

/* Alike convert_avx2.c:enc_bf16: kept apart because they are ISA variants (16 lanes AVX-512 here, 8 lanes AVX2
 * there) of one algorithm, each tested against the scalar fr_f32_to_bf16 (style.md 1, 3). */
static inline __m512i enc_bf16(__m512i u, fr_round r, fr_sat s) {
    const __m512i a = _mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF));
    __m512i t;
    if (r == FR_ROUND_HALF_AWAY) {
        t = _mm512_add_epi32(u, _mm512_set1_epi32(0x8000));
    } else {
        __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
        t = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), lsb);
    }
    __m512i c = _mm512_srli_epi32(t, 16);
    if (s == FR_SAT) { /* rounded to (or was) Inf: +-max */
        __m512i mag = _mm512_and_si512(c, _mm512_set1_epi32(0x7FFF));
        __mmask16 ovf = _mm512_cmpeq_epi32_mask(mag, _mm512_set1_epi32(0x7F80));
        c = _mm512_mask_or_epi32(c, ovf, _mm512_and_si512(c, _mm512_set1_epi32(0x8000)), _mm512_set1_epi32(0x7F7F));
    }
    __mmask16 nan = _mm512_cmpgt_epu32_mask(a, _mm512_set1_epi32(0x7F800000));
    return _mm512_mask_or_epi32(c, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
}

/* fp32 -> an IEEE-like format with MB stored mantissa bits, minimum normal exponent EMIN, largest finite code MAXC,
 * non-saturated overflow code OVFC (Inf, or NaN for e4m3fn), canonical NaN NANC and sign bit SIGNB (0x8000 or 0x80).
 * Called with constants, so each format gets its own straight-line code. Returns codes in 32-bit lanes. */
static inline __attribute__((always_inline)) __m512i enc_ieee(__m512i u, fr_round r, fr_sat s, int MB, int EMIN,
                                                              int MAXC, int OVFC, int NANC, int SIGNB) {
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i a = _mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF));
    const __m512i sign = SIGNB == 0x8000 ? _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x8000))
                                         : _mm512_and_si512(_mm512_srli_epi32(u, 24), _mm512_set1_epi32(0x80));
    /* Normal range: rebias the exponent, round off 23 - MB bits (carries run into the exponent). */
    __m512i bias = r == FR_ROUND_HALF_AWAY
                       ? _mm512_set1_epi32(1 << (22 - MB))
                       : _mm512_add_epi32(_mm512_set1_epi32((1 << (22 - MB)) - 1),
                                          _mm512_and_si512(_mm512_srli_epi32(a, 23 - MB), one));
    __m512i cn = _mm512_sub_epi32(_mm512_srli_epi32(_mm512_add_epi32(a, bias), 23 - MB),
                                  _mm512_set1_epi32((127 + EMIN - 1) << MB));
    /* Subnormal range (|x| < 2^EMIN): value = sig * 2^(E-150), quantum 2^(EMIN-MB), shift = 150+EMIN-MB - max(E,1). */
    __m512i E = _mm512_srli_epi32(a, 23);
    __mmask16 normal32 = _mm512_cmpneq_epi32_mask(E, _mm512_setzero_si512());
    __m512i mant = _mm512_and_si512(a, _mm512_set1_epi32(0x7FFFFF));
    __m512i sig = _mm512_mask_or_epi32(mant, normal32, mant, _mm512_set1_epi32(0x800000));
    __m512i sh = _mm512_min_epu32(_mm512_sub_epi32(_mm512_set1_epi32(150 + EMIN - MB), _mm512_max_epu32(E, one)),
                                  _mm512_set1_epi32(31));
    __m512i half = _mm512_sllv_epi32(one, _mm512_sub_epi32(sh, one));
    __m512i add = r == FR_ROUND_HALF_AWAY
                      ? half
                      : _mm512_add_epi32(_mm512_sub_epi32(half, one), _mm512_and_si512(_mm512_srlv_epi32(sig, sh), one));
    __m512i cs = _mm512_srlv_epi32(_mm512_add_epi32(sig, add), sh);
    __mmask16 sub = _mm512_cmplt_epu32_mask(a, _mm512_set1_epi32((127 + EMIN) << 23));
    __m512i c = _mm512_mask_blend_epi32(sub, cn, cs);
    __mmask16 ovf = _mm512_cmpgt_epu32_mask(c, _mm512_set1_epi32(MAXC)); /* also +-Inf inputs */
    c = _mm512_mask_mov_epi32(c, ovf, _mm512_set1_epi32(s == FR_SAT ? MAXC : OVFC));
    __mmask16 nan = _mm512_cmpgt_epu32_mask(a, _mm512_set1_epi32(0x7F800000));
    c = _mm512_mask_mov_epi32(c, nan, _mm512_set1_epi32(NANC));
    return _mm512_or_si512(c, sign);
}

static inline __m512i enc_f16(__m512i u, fr_round r, fr_sat s) {
    return enc_ieee(u, r, s, 10, -14, 0x7BFF, 0x7C00, 0x7E00, 0x8000);
}
static inline __m512i enc_e4m3fn(__m512i u, fr_round r, fr_sat s) {
    return enc_ieee(u, r, s, 3, -6, 0x7E, 0x7F, 0x7F, 0x80);
}
static inline __m512i enc_e5m2(__m512i u, fr_round r, fr_sat s) {
    return enc_ieee(u, r, s, 2, -14, 0x7B, 0x7C, 0x7E, 0x80);
}

/* The rounding and saturation modes are hoisted out of the loop by inlining with constant arguments. */
/* Alike convert_avx512.c:FR_ENC8_LOOP: kept apart because the narrowing store differs (epi16 here, epi8 there, with
 * their masked tails); each loop names its intrinsics. */
#define FR_ENC_LOOP(ENC, R, S)                                                                                    \
    do {                                                                                                          \
        size_t i = 0;                                                                                             \
        for (; i + 16 <= n; i += 16) {                                                                            \
            __m512i u = _mm512_loadu_si512((const void *)(src + i));                                              \
            _mm256_storeu_si256((__m256i *)(dst + i), _mm512_cvtepi32_epi16(ENC(u, R, S)));                       \
        }                                                                                                         \
        if (i < n) {                                                                                              \
            __mmask16 m = tail_mask(n - i);                                                                       \
            __m512i u = _mm512_maskz_loadu_epi32(m, (const void *)(src + i));                                     \
            _mm256_mask_storeu_epi16((void *)(dst + i), m, _mm512_cvtepi32_epi16(ENC(u, R, S)));                  \
        }                                                                                                         \
    } while (0)

/* The same for 8-bit codes. */
/* Alike convert_avx512.c:FR_ENC_LOOP: kept apart because the narrowing store differs (epi8 here, epi16 there, with
 * their masked tails); each loop names its intrinsics. */
#define FR_ENC8_LOOP(ENC, R, S)                                                                                   \
    do {                                                                                                          \
        size_t i = 0;                                                                                             \
        for (; i + 16 <= n; i += 16) {                                                                            \
            __m512i u = _mm512_loadu_si512((const void *)(src + i));                                              \
            _mm_storeu_si128((__m128i *)(dst + i), _mm512_cvtepi32_epi8(ENC(u, R, S)));                           \
        }                                                                                                         \
        if (i < n) {                                                                                              \
            __mmask16 m = tail_mask(n - i);                                                                       \
            __m512i u = _mm512_maskz_loadu_epi32(m, (const void *)(src + i));                                     \
            _mm_mask_storeu_epi8((void *)(dst + i), m, _mm512_cvtepi32_epi8(ENC(u, R, S)));                       \
        }                                                                                                         \
    } while (0)

/* Alike convert_avx2.c:FR_ENC_LOOP / FR_ENC_DISPATCH: kept apart because they are ISA variants (16 lanes with a
 * masked tail here, 8 lanes with a scalar tail there), style.md 1 and 3. */
#define FR_ENC_DISPATCH_(LOOP, ENC)                                                                               \
    do {                                                                                                          \
        if (r == FR_ROUND_HALF_AWAY) {                                                                            \
            if (s == FR_SAT) LOOP(ENC, FR_ROUND_HALF_AWAY, FR_SAT);                                               \
            else LOOP(ENC, FR_ROUND_HALF_AWAY, FR_NO_SAT);                                                        \
        } else {                                                                                                  \
            if (s == FR_SAT) LOOP(ENC, FR_ROUND_NEAREST_EVEN, FR_SAT);                                            \
            else LOOP(ENC, FR_ROUND_NEAREST_EVEN, FR_NO_SAT);                                                     \
        }                                                                                                         \
    } while (0)
#define FR_ENC_DISPATCH(ENC) FR_ENC_DISPATCH_(FR_ENC_LOOP, ENC)
#define FR_ENC8_DISPATCH(ENC) FR_ENC_DISPATCH_(FR_ENC8_LOOP, ENC)

void fr_cvt_f32_bf16_avx512(uint16_t *dst, const float *src, size_t n, fr_round r, fr_sat s) {
    FR_ENC_DISPATCH(enc_bf16);
}

void fr_cvt_f32_f16_avx512(uint16_t *dst, const float *src, size_t n, fr_round r, fr_sat s) {
    FR_ENC_DISPATCH(enc_f16);
}

void fr_cvt_f32_e4m3fn_avx512(uint8_t *dst, const float *src, size_t n, fr_round r, fr_sat s) {
    FR_ENC8_DISPATCH(enc_e4m3fn);
}

void fr_cvt_f32_e5m2_avx512(uint8_t *dst, const float *src, size_t n, fr_round r, fr_sat s) {
    FR_ENC8_DISPATCH(enc_e5m2);
}

void fr_cvt_bf16_f32_avx512(float *dst, const uint16_t *src, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(src + i)));
        _mm512_storeu_si512((void *)(dst + i), _mm512_slli_epi32(h, 16));
    }
    if (i < n) {
        __mmask16 m = tail_mask(n - i);
        __m512i h = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, (const void *)(src + i)));
        _mm512_mask_storeu_epi32((void *)(dst + i), m, _mm512_slli_epi32(h, 16));
    }
}

/* vcvtph2ps is exact, and turns a NaN into the quiet NaN with the payload shifted up, as fr_f16_to_f32 does. */
void fr_cvt_f16_f32_avx512(float *dst, const uint16_t *src, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(src + i))));
    }
    if (i < n) {
        __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(dst + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const void *)(src + i))));
    }
}

/* e5m2 is the top byte of fp16: widen to fp16 codes and use vcvtph2ps (as fr_e5m2_to_f32 does in scalar). */
static inline __m512 dec_e5m2(__m128i c8) {
    __m512i h = _mm512_slli_epi32(_mm512_cvtepu8_epi32(c8), 8);
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h));
}

/* e4m3fn: normal codes by rebiasing the fields, subnormals m * 2^-9 (exact in fp32), 0x7F/0xFF a quiet NaN. */
static inline __m512 dec_e4m3fn(__m128i c8) {
    __m512i x = _mm512_cvtepu8_epi32(c8);
    __m512i sign = _mm512_slli_epi32(_mm512_and_si512(x, _mm512_set1_epi32(0x80)), 24);
    __m512i e = _mm512_and_si512(_mm512_srli_epi32(x, 3), _mm512_set1_epi32(0xF));
    __m512i m = _mm512_and_si512(x, _mm512_set1_epi32(7));
    __m512i nb = _mm512_or_si512(_mm512_slli_epi32(_mm512_add_epi32(e, _mm512_set1_epi32(120)), 23),
                                 _mm512_slli_epi32(m, 20));
    __m512i sb = _mm512_castps_si512(_mm512_mul_ps(_mm512_cvtepi32_ps(m), _mm512_set1_ps(0x1p-9f)));
    __mmask16 subn = _mm512_cmpeq_epi32_mask(e, _mm512_setzero_si512());
    __m512i b = _mm512_mask_blend_epi32(subn, nb, sb);
    __mmask16 nan = _mm512_cmpeq_epi32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7F)), _mm512_set1_epi32(0x7F));
    b = _mm512_mask_mov_epi32(b, nan, _mm512_set1_epi32(0x7FC00000));
    return _mm512_castsi512_ps(_mm512_or_si512(b, sign));
}

#define FR_DEC8_LOOP(DEC)                                                                                         \
    do {                                                                                                          \
        size_t i = 0;                                                                                             \
        for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, DEC(_mm_loadu_si128((const __m128i *)(src + i)))); \
        if (i < n) {                                                                                              \
            __mmask16 m = tail_mask(n - i);                                                                       \
            _mm512_mask_storeu_ps(dst + i, m, DEC(_mm_maskz_loadu_epi8(m, (const void *)(src + i))));            \
        }                                                                                                         \
    } while (0)

void fr_cvt_e4m3fn_f32_avx512(float *dst, const uint8_t *src, size_t n) { FR_DEC8_LOOP(dec_e4m3fn); }

void fr_cvt_e5m2_f32_avx512(float *dst, const uint8_t *src, size_t n) { FR_DEC8_LOOP(dec_e5m2); }

/* ---- hif8 (spec 9.1, 9.3): the lane version of fr_f32_to_hif8 / fr_hif8_to_f32 ------------------------------------ */

static inline __mmask16 gt(__m512i x, int c) { return _mm512_cmpgt_epi32_mask(x, _mm512_set1_epi32(c)); }

static inline __m512i enc_hif8(__m512i u, fr_round r, fr_sat s) {
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i a = _mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF));
    const __m512i signb = _mm512_and_si512(_mm512_srli_epi32(u, 24), _mm512_set1_epi32(0x80));
    __m512i e = _mm512_sub_epi32(_mm512_srli_epi32(a, 23), _mm512_set1_epi32(127));
    __m512i ae = _mm512_abs_epi32(e);
    /* shift = 23 - w: w = 3, 2, 1 for |e| <= 3, 7, 15; 0 in the denormal binades; -1 for e = -23 (2^-22 grid) */
    __m512i sh = _mm512_set1_epi32(20);
    sh = _mm512_mask_add_epi32(sh, gt(ae, 3), sh, one);
    sh = _mm512_mask_add_epi32(sh, gt(ae, 7), sh, one);
    sh = _mm512_mask_add_epi32(sh, gt(ae, 15), sh, one);
    sh = _mm512_mask_add_epi32(sh, gt(ae, 22), sh, one);
    __m512i sig = _mm512_or_si512(_mm512_and_si512(a, _mm512_set1_epi32(0x7FFFFF)), _mm512_set1_epi32(0x800000));
    __m512i n = _mm512_srlv_epi32(sig, sh);
    __m512i rem = _mm512_and_si512(sig, _mm512_sub_epi32(_mm512_sllv_epi32(one, sh), one));
    __m512i half = _mm512_sllv_epi32(one, _mm512_sub_epi32(sh, one));
    __mmask16 up;
    if (r == FR_ROUND_HALF_AWAY) {
        up = _mm512_cmpge_epu32_mask(rem, half);
    } else {
        /* tie: up when the lower candidate's code is odd: n's parity, or e + 23's in the denormal binades */
        __mmask16 den = _mm512_cmpeq_epi32_mask(sh, _mm512_set1_epi32(23));
        __m512i lower = _mm512_mask_add_epi32(n, den, e, _mm512_set1_epi32(23));
        __mmask16 odd = _mm512_test_epi32_mask(lower, one);
        up = _mm512_cmpgt_epu32_mask(rem, half) | (_mm512_cmpeq_epi32_mask(rem, half) & odd);
    }
    n = _mm512_mask_add_epi32(n, up, n, one);
    /* carry into the next binade when n reaches 2^(w+1) (for e = -23: n = 1 is 2^-22) */
    __mmask16 carry = _mm512_test_epi32_mask(_mm512_srlv_epi32(n, _mm512_sub_epi32(_mm512_set1_epi32(24), sh)),
                                             _mm512_set1_epi32(-1));
    __m512i e2 = _mm512_mask_add_epi32(e, carry, e, one);
    __m512i mmask = _mm512_sub_epi32(_mm512_sllv_epi32(one, _mm512_sub_epi32(_mm512_set1_epi32(23), sh)), one);
    __m512i m = _mm512_maskz_and_epi32(~carry, n, mmask);
    /* emit the fields (the mantissa always sits in the low w bits) */
    __m512i ae2 = _mm512_abs_epi32(e2);
    __m512i neg4 = _mm512_maskz_mov_epi32(_mm512_cmplt_epi32_mask(e2, _mm512_setzero_si512()),
                                          _mm512_set1_epi32(0x10));
    __m512i code = _mm512_add_epi32(e2, _mm512_set1_epi32(23)); /* denormals */
    __m512i c0 = _mm512_or_si512(_mm512_set1_epi32(0x08), m);
    __m512i c1 = _mm512_or_si512(_mm512_or_si512(_mm512_set1_epi32(0x10), _mm512_srli_epi32(neg4, 1)), m);
    __m512i c2 = _mm512_or_si512(_mm512_or_si512(_mm512_set1_epi32(0x20), neg4),
                                 _mm512_or_si512(_mm512_slli_epi32(_mm512_sub_epi32(ae2, _mm512_set1_epi32(2)), 3), m));
    __m512i c4 = _mm512_or_si512(_mm512_or_si512(_mm512_set1_epi32(0x40), neg4),
                                 _mm512_or_si512(_mm512_slli_epi32(_mm512_sub_epi32(ae2, _mm512_set1_epi32(4)), 2), m));
    __m512i c8 = _mm512_or_si512(_mm512_or_si512(_mm512_set1_epi32(0x60), neg4),
                                 _mm512_or_si512(_mm512_slli_epi32(_mm512_sub_epi32(ae2, _mm512_set1_epi32(8)), 1), m));
    __mmask16 le15 = ~gt(ae2, 15);
    code = _mm512_mask_mov_epi32(code, le15, c8);
    code = _mm512_mask_mov_epi32(code, ~gt(ae2, 7), c4);
    code = _mm512_mask_mov_epi32(code, ~gt(ae2, 3), c2);
    code = _mm512_mask_mov_epi32(code, ~gt(ae2, 1), c1);
    code = _mm512_mask_mov_epi32(code, _mm512_cmpeq_epi32_mask(ae2, _mm512_setzero_si512()), c0);
    code = _mm512_or_si512(code, signb);
    /* zero: |x| < 2^-23, or the e = -23 grid rounded down (no -0); before overflow, as n = 0 also for |x| >= 2^23 */
    __mmask16 zero = _mm512_cmplt_epu32_mask(a, _mm512_set1_epi32(0x34000000)) |
                     _mm512_cmpeq_epi32_mask(n, _mm512_setzero_si512());
    code = _mm512_mask_mov_epi32(code, zero, _mm512_setzero_si512());
    /* overflow: |x| >= 2^16 (and Inf), or rounded past 2^15 (the virtual 49152) */
    __mmask16 ovf = _mm512_cmpge_epu32_mask(a, _mm512_set1_epi32(0x47800000)) | gt(e2, 15) |
                    (_mm512_cmpeq_epi32_mask(e2, _mm512_set1_epi32(15)) & _mm512_test_epi32_mask(m, m));
    code = _mm512_mask_or_epi32(code, ovf, signb, _mm512_set1_epi32(s == FR_SAT ? 0x6E : 0x6F));
    __mmask16 nan = _mm512_cmpgt_epu32_mask(a, _mm512_set1_epi32(0x7F800000));
    return _mm512_mask_mov_epi32(code, nan, _mm512_set1_epi32(0x80));
}

void fr_cvt_f32_hif8_avx512(uint8_t *dst, const float *src, size_t n, fr_round r, fr_sat s) {
    FR_ENC8_DISPATCH(enc_hif8);
}

static inline __m512 dec_hif8(__m128i c8) {
    const __m512i one = _mm512_set1_epi32(1);
    __m512i x = _mm512_cvtepu8_epi32(c8);
    __m512i sign = _mm512_slli_epi32(_mm512_and_si512(x, _mm512_set1_epi32(0x80)), 24);
    __m512i b = _mm512_and_si512(x, _mm512_set1_epi32(0x7F));
    /* dot 01/10/11 (b >= 0x20): k = dot exponent low bits, w = 4 - dot mantissa bits, field F of k + 1 bits */
    __m512i dot = _mm512_srli_epi32(b, 5);
    __m512i w = _mm512_sub_epi32(_mm512_set1_epi32(4), dot);
    __m512i F = _mm512_and_si512(_mm512_srlv_epi32(b, w), _mm512_sub_epi32(_mm512_sllv_epi32(_mm512_set1_epi32(2), dot), one));
    __m512i topk = _mm512_sllv_epi32(one, dot);
    __m512i e = _mm512_mask_sub_epi32(_mm512_add_epi32(F, topk), _mm512_cmpge_epu32_mask(F, topk),
                                      _mm512_setzero_si512(), F);
    /* 001 s mmm (0x10..0x1F): e = +-1; 0001 mmm (0x08..0x0F): e = 0; both w = 3 */
    __mmask16 lt20 = _mm512_cmplt_epu32_mask(b, _mm512_set1_epi32(0x20));
    __mmask16 s1 = _mm512_test_epi32_mask(b, _mm512_set1_epi32(0x08));
    e = _mm512_mask_mov_epi32(e, lt20, _mm512_mask_mov_epi32(one, s1, _mm512_set1_epi32(-1)));
    w = _mm512_mask_mov_epi32(w, lt20, _mm512_set1_epi32(3));
    __mmask16 lt10 = _mm512_cmplt_epu32_mask(b, _mm512_set1_epi32(0x10));
    e = _mm512_mask_mov_epi32(e, lt10, _mm512_setzero_si512());
    /* denormals 0x01..0x07: 2^(b - 23), w = 0 */
    __mmask16 lt08 = _mm512_cmplt_epu32_mask(b, _mm512_set1_epi32(0x08));
    e = _mm512_mask_sub_epi32(e, lt08, b, _mm512_set1_epi32(23));
    w = _mm512_mask_mov_epi32(w, lt08, _mm512_setzero_si512());
    __m512i m = _mm512_and_si512(b, _mm512_sub_epi32(_mm512_sllv_epi32(one, w), one));
    __m512i bits = _mm512_or_si512(_mm512_slli_epi32(_mm512_add_epi32(e, _mm512_set1_epi32(127)), 23),
                                   _mm512_sllv_epi32(m, _mm512_sub_epi32(_mm512_set1_epi32(23), w)));
    bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epi32_mask(b, _mm512_set1_epi32(0x6F)),
                                 _mm512_set1_epi32(0x7F800000));
    bits = _mm512_or_si512(bits, sign);
    bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epi32_mask(b, _mm512_setzero_si512()), sign);
    bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epi32_mask(x, _mm512_set1_epi32(0x80)),
                                 _mm512_set1_epi32(0x7FC00000));
    bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epi32_mask(x, _mm512_setzero_si512()), _mm512_setzero_si512());
    return _mm512_castsi512_ps(bits);
}

void fr_cvt_hif8_f32_avx512(float *dst, const uint8_t *src, size_t n) { FR_DEC8_LOOP(dec_hif8); }
