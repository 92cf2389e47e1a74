/* AVX2 (+F16C) array conversions fp32 <-> bf16 and fp32 <-> fp16 (8 lanes), the same integer algorithm as
 * convert.c and convert_avx512.c; tails go through the scalar routines. */
#include "core/convert.h"

#include <immintrin.h>

/* Alike convert_avx512.c:enc_bf16: kept apart because they are ISA variants (8 lanes AVX2 here, 16 lanes AVX-512
 * there) of one algorithm, each tested against the scalar fr_f32_to_bf16 (style.md 1, 3). */
static inline __m256i enc_bf16(__m256i u, fr_round r, fr_sat s) {
    const __m256i a = _mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF));
    __m256i t;
    if (r == FR_ROUND_HALF_AWAY) {
        t = _mm256_add_epi32(u, _mm256_set1_epi32(0x8000));
    } else {
        __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
        t = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), lsb);
    }
    __m256i c = _mm256_srli_epi32(t, 16);
    if (s == FR_SAT) {
        __m256i mag = _mm256_and_si256(c, _mm256_set1_epi32(0x7FFF));
        __m256i ovf = _mm256_cmpeq_epi32(mag, _mm256_set1_epi32(0x7F80));
        __m256i m = _mm256_or_si256(_mm256_and_si256(c, _mm256_set1_epi32(0x8000)), _mm256_set1_epi32(0x7F7F));
        c = _mm256_blendv_epi8(c, m, ovf);
    }
    /* a has no sign bit, so the signed compare is an unsigned one */
    __m256i nan = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7F800000));
    return _mm256_blendv_epi8(c, _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40)), nan);
}

static inline __m256i enc_f16(__m256i u, fr_round r, fr_sat s) {
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i a = _mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF));
    const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x8000));
    __m256i bias = r == FR_ROUND_HALF_AWAY
                       ? _mm256_set1_epi32(0x1000)
                       : _mm256_add_epi32(_mm256_set1_epi32(0xFFF), _mm256_and_si256(_mm256_srli_epi32(a, 13), one));
    __m256i cn = _mm256_sub_epi32(_mm256_srli_epi32(_mm256_add_epi32(a, bias), 13), _mm256_set1_epi32(0x1C000));
    __m256i E = _mm256_srli_epi32(a, 23);
    __m256i mant = _mm256_and_si256(a, _mm256_set1_epi32(0x7FFFFF));
    __m256i hid = _mm256_andnot_si256(_mm256_cmpeq_epi32(E, _mm256_setzero_si256()), _mm256_set1_epi32(0x800000));
    __m256i sig = _mm256_or_si256(mant, hid);
    __m256i sh = _mm256_min_epu32(_mm256_sub_epi32(_mm256_set1_epi32(126), _mm256_max_epu32(E, one)),
                                  _mm256_set1_epi32(31));
    __m256i half = _mm256_sllv_epi32(one, _mm256_sub_epi32(sh, one));
    __m256i add = r == FR_ROUND_HALF_AWAY
                      ? half
                      : _mm256_add_epi32(_mm256_sub_epi32(half, one), _mm256_and_si256(_mm256_srlv_epi32(sig, sh), one));
    __m256i cs = _mm256_srlv_epi32(_mm256_add_epi32(sig, add), sh);
    __m256i sub = _mm256_cmpgt_epi32(_mm256_set1_epi32(0x38800000), a);
    __m256i c = _mm256_blendv_epi8(cn, cs, sub); /* both >= 0 as signed after the select */
    __m256i ovf = _mm256_cmpgt_epi32(c, _mm256_set1_epi32(0x7BFF));
    c = _mm256_blendv_epi8(c, _mm256_set1_epi32(s == FR_SAT ? 0x7BFF : 0x7C00), ovf);
    __m256i nan = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7F800000));
    c = _mm256_blendv_epi8(c, _mm256_set1_epi32(0x7E00), nan);
    return _mm256_or_si256(c, sign);
}

static inline __m128i pack16(__m256i c) {
    __m256i p = _mm256_packus_epi32(c, c); /* values <= 0xFFFF: no saturation */
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(p, 0x08));
}

/* Alike convert_avx512.c:FR_ENC_LOOP / FR_ENC_DISPATCH_: kept apart because they are ISA variants (8 lanes with a
 * scalar tail here, 16 lanes with a masked tail there), style.md 1 and 3. */
#define FR_ENC_LOOP(ENC, R, S, SCALAR)                                                                            \
    do {                                                                                                          \
        size_t i = 0;                                                                                             \
        for (; i + 8 <= n; i += 8) {                                                                              \
            __m256i u = _mm256_loadu_si256((const __m256i *)(src + i));                                           \
            _mm_storeu_si128((__m128i *)(dst + i), pack16(ENC(u, R, S)));                                         \
        }                                                                                                         \
        for (; i < n; i++) dst[i] = SCALAR(src[i], R, S);                                                         \
    } while (0)

#define FR_ENC_DISPATCH(ENC, SCALAR)                                                                              \
    do {                                                                                                          \
        if (r == FR_ROUND_HALF_AWAY) {                                                                            \
            if (s == FR_SAT) FR_ENC_LOOP(ENC, FR_ROUND_HALF_AWAY, FR_SAT, SCALAR);                                \
            else FR_ENC_LOOP(ENC, FR_ROUND_HALF_AWAY, FR_NO_SAT, SCALAR);                                         \
        } else {                                                                                                  \
            if (s == FR_SAT) FR_ENC_LOOP(ENC, FR_ROUND_NEAREST_EVEN, FR_SAT, SCALAR);                             \
            else FR_ENC_LOOP(ENC, FR_ROUND_NEAREST_EVEN, FR_NO_SAT, SCALAR);                                      \
        }                                                                                                         \
    } while (0)

void fr_cvt_f32_bf16_avx2(uint16_t *dst, const float *src, size_t n, fr_round r, fr_sat s) {
    FR_ENC_DISPATCH(enc_bf16, fr_f32_to_bf16);
}

void fr_cvt_f32_f16_avx2(uint16_t *dst, const float *src, size_t n, fr_round r, fr_sat s) {
    FR_ENC_DISPATCH(enc_f16, fr_f32_to_f16);
}

void fr_cvt_bf16_f32_avx2(float *dst, const uint16_t *src, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(src + i)));
        _mm256_storeu_si256((__m256i *)(dst + i), _mm256_slli_epi32(h, 16));
    }
    for (; i < n; i++) dst[i] = fr_bf16_to_f32(src[i]);
}

void fr_cvt_f16_f32_avx2(float *dst, const uint16_t *src, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    for (; i < n; i++) dst[i] = fr_f16_to_f32(src[i]);
}
