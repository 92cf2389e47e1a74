/* fr_convert_array: one dispatch per call to a vectorized variant (scalar underneath every slot, style.md 1-2).
 * The variant is the one CPU dispatcher's (core/isa.c); avx512bf16 and amx run the AVX-512 code. */
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
    bool v512 = isa == FR_ISA_AVX512 || isa == FR_ISA_AVX512_BF16 || isa == FR_ISA_AMX;
    bool v256 = isa == FR_ISA_AVX2;
    if (enc) {
        if (to == FR_BF16 && v512) fr_cvt_f32_bf16_avx512(dst, src, n, r, s);
        else if (to == FR_F16 && v512) fr_cvt_f32_f16_avx512(dst, src, n, r, s);
        else if (to == FR_E4M3FN && v512) fr_cvt_f32_e4m3fn_avx512(dst, src, n, r, s);
        else if (to == FR_E5M2 && v512) fr_cvt_f32_e5m2_avx512(dst, src, n, r, s);
        else if (to == FR_HIF8 && v512) fr_cvt_f32_hif8_avx512(dst, src, n, r, s);
        else if (to == FR_BF16 && v256) fr_cvt_f32_bf16_avx2(dst, src, n, r, s);
        else if (to == FR_F16 && v256) fr_cvt_f32_f16_avx2(dst, src, n, r, s);
        else encode_scalar(to, dst, src, n, r, s);
    } else {
        if (from == FR_BF16 && v512) fr_cvt_bf16_f32_avx512(dst, src, n);
        else if (from == FR_F16 && v512) fr_cvt_f16_f32_avx512(dst, src, n);
        else if (from == FR_E4M3FN && v512) fr_cvt_e4m3fn_f32_avx512(dst, src, n);
        else if (from == FR_E5M2 && v512) fr_cvt_e5m2_f32_avx512(dst, src, n);
        else if (from == FR_HIF8 && v512) fr_cvt_hif8_f32_avx512(dst, src, n);
        else if (from == FR_BF16 && v256) fr_cvt_bf16_f32_avx2(dst, src, n);
        else if (from == FR_F16 && v256) fr_cvt_f16_f32_avx2(dst, src, n);
        else decode_scalar(dst, from, src, n);
    }
    return FR_OK;
}

fr_status fr_convert_array(fr_dtype to, void *dst, fr_dtype from, const void *src, size_t n, fr_round r, fr_sat s) {
    return fr_convert_array_isa(FR_ISA_AUTO, to, dst, from, src, n, r, s);
}
