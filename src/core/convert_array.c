/* fr_convert_array: one dispatch per call to a vectorized variant (scalar underneath every slot, style.md 1-2).
 * The variant is the one CPU dispatcher's (core/isa.c); the code that runs is its base ISA family's
 * (core/variants.inc: a variant that adds bf16 arithmetic runs its family's code, the hardware bf16 instructions
 * being unfit for these conversions, flashref_convert.h). */
#include "core/convert.h"
#include "core/core.h"
#include "core/isa.h"
#include "flashref_convert.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

bool fr_convert_isa_available(fr_isa isa) { return fr_isa_available(isa); }

fr_isa fr_convert_isa_selected(void) {
    fr_isa isa;
    return fr_isa_selected(&isa, NULL) == FR_OK ? isa : FR_ISA_AUTO;
}

static bool is_narrow(fr_dtype t) {
    return t == FR_F16 || t == FR_BF16 || t == FR_E4M3FN || t == FR_E5M2 || t == FR_HIF8;
}

/* Alike bench/convert/bench_convert.c:scalar_encode: kept apart because that copy is the benchmark's baseline over
 * the public per-element routines; this one is the library's private scalar path. */
/* Alike convert_array.c:encode_scalar (its cases, to one another): kept apart because each case calls its own
 * format's encoder with its own code width. */
static void encode_scalar(fr_dtype to, void *dst, const float *src, size_t n, fr_round r, fr_sat s) {
    switch (to) {
    case FR_F16:
        for (size_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = fr_f32_to_f16(src[i], r, s);
        break;
    case FR_BF16:
        for (size_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = fr_f32_to_bf16(src[i], r, s);
        break;
    case FR_E4M3FN:
        for (size_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = fr_f32_to_e4m3fn(src[i], r, s);
        break;
    case FR_E5M2:
        for (size_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = fr_f32_to_e5m2(src[i], r, s);
        break;
    case FR_HIF8:
        for (size_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = fr_f32_to_hif8(src[i], r, s);
        break;
    default: break;
    }
}

static void decode_scalar(float *dst, fr_dtype from, const void *src, size_t n) {
    switch (from) {
    case FR_F16:
        for (size_t i = 0; i < n; i++) dst[i] = fr_f16_to_f32(((const uint16_t *)src)[i]);
        break;
    case FR_BF16:
        for (size_t i = 0; i < n; i++) dst[i] = fr_bf16_to_f32(((const uint16_t *)src)[i]);
        break;
    case FR_E4M3FN:
        for (size_t i = 0; i < n; i++) dst[i] = fr_e4m3fn_to_f32(((const uint8_t *)src)[i]);
        break;
    case FR_E5M2:
        for (size_t i = 0; i < n; i++) dst[i] = fr_e5m2_to_f32(((const uint8_t *)src)[i]);
        break;
    case FR_HIF8:
        for (size_t i = 0; i < n; i++) dst[i] = fr_hif8_to_f32(((const uint8_t *)src)[i]);
        break;
    default: break;
    }
}

/* The vectorized conversions of each base ISA family, by format (enc: from fp32, dec: to fp32; 16-bit formats f16,
 * bf16 and 8-bit ones e4m3fn, e5m2, hif8, in fr_dtype order); NULL: that format runs the scalar loop. */
typedef struct conv_row {
    fr_isa family;
    void (*enc16[2])(uint16_t *dst, const float *src, size_t n, fr_round r, fr_sat s);
    void (*enc8[3])(uint8_t *dst, const float *src, size_t n, fr_round r, fr_sat s);
    void (*dec16[2])(float *dst, const uint16_t *src, size_t n);
    void (*dec8[3])(float *dst, const uint8_t *src, size_t n);
} conv_row;

static const conv_row k_rows[] = {
    {.family = FR_ISA_SCALAR},
    {.family = FR_ISA_AVX2,
     .enc16 = {fr_cvt_f32_f16_avx2, fr_cvt_f32_bf16_avx2},
     .dec16 = {fr_cvt_f16_f32_avx2, fr_cvt_bf16_f32_avx2}},
    {.family = FR_ISA_AVX512,
     .enc16 = {fr_cvt_f32_f16_avx512, fr_cvt_f32_bf16_avx512},
     .enc8 = {fr_cvt_f32_e4m3fn_avx512, fr_cvt_f32_e5m2_avx512, fr_cvt_f32_hif8_avx512},
     .dec16 = {fr_cvt_f16_f32_avx512, fr_cvt_bf16_f32_avx512},
     .dec8 = {fr_cvt_e4m3fn_f32_avx512, fr_cvt_e5m2_f32_avx512, fr_cvt_hif8_f32_avx512}},
};
enum { N_ROWS = (int)(sizeof k_rows / sizeof k_rows[0]) };
_Static_assert(FR_BF16 == FR_F16 + 1 && FR_E5M2 == FR_E4M3FN + 1 && FR_HIF8 == FR_E4M3FN + 2,
               "conv_row indexes the formats in fr_dtype order");

fr_isa fr_convert_family_at(int k) { return k >= 0 && k < N_ROWS ? k_rows[k].family : FR_ISA_AUTO; }

fr_status fr_convert_array_isa(fr_isa isa, fr_dtype to, void *dst, fr_dtype from, const void *src, size_t n,
                               fr_round r, fr_sat s) {
    bool enc = from == FR_F32 && is_narrow(to);
    bool dec = to == FR_F32 && is_narrow(from);
    bool copy = to == FR_F32 && from == FR_F32;
    if (!enc && !dec && !copy) return FR_E_DTYPE;
    if (r != FR_ROUND_NEAREST_EVEN && r != FR_ROUND_HALF_AWAY) return FR_E_INVALID_ARG;
    if (s != FR_SAT && s != FR_NO_SAT) return FR_E_INVALID_ARG;
    if (!fr_isa_known(isa)) return FR_E_INVALID_ARG;
    if (n == 0) return FR_OK;
    if (!dst || !src) return FR_E_NULL;
    if (n > SIZE_MAX / sizeof(float)) return FR_E_OVERFLOW; /* no buffer can hold it */
    if (isa == FR_ISA_AUTO) {
        if (fr_isa_selected(&isa, NULL) != FR_OK) return FR_E_INVALID_ARG; /* FLASHREF_ISA names no variant */
    } else if (!fr_isa_available(isa)) {
        return FR_E_NOT_AVAILABLE;
    }
    if (copy) {
        memmove(dst, src, n * sizeof(float));
        return FR_OK;
    }
    const conv_row *row = NULL;
    for (int k = 0; k < N_ROWS; k++)
        if (k_rows[k].family == fr_isa_family(isa)) row = &k_rows[k];
    if (!row) return FR_E_INTERNAL; /* a family without a row: tests/variants names it */
    fr_dtype narrow = enc ? to : from;
    bool w16 = narrow == FR_F16 || narrow == FR_BF16;
    int i16 = (int)narrow - (int)FR_F16, i8 = (int)narrow - (int)FR_E4M3FN;
    if (enc) {
        if (w16 && row->enc16[i16]) row->enc16[i16](dst, src, n, r, s);
        else if (!w16 && row->enc8[i8]) row->enc8[i8](dst, src, n, r, s);
        else encode_scalar(to, dst, src, n, r, s);
    } else {
        if (w16 && row->dec16[i16]) row->dec16[i16](dst, src, n);
        else if (!w16 && row->dec8[i8]) row->dec8[i8](dst, src, n);
        else decode_scalar(dst, from, src, n);
    }
    return FR_OK;
}

fr_status fr_convert_array(fr_dtype to, void *dst, fr_dtype from, const void *src, size_t n, fr_round r, fr_sat s) {
    return fr_convert_array_isa(FR_ISA_AUTO, to, dst, from, src, n, r, s);
}
