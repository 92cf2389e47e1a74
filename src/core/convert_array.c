/* fr_convert_array: one dispatch per call to a vectorized variant (scalar underneath every slot, style.md 1-2).
 * The variant is chosen once from cpuid, lowered by FLASHREF_ISA when set, and cached. */
#include "core/convert.h"
#include "core/core.h"
#include "flashref_convert.h"

#include <cpuid.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* F16C from cpuid leaf 1 (clang's __builtin_cpu_supports does not know "f16c"). */
static bool cpu_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}

static bool cpu_has(fr_isa isa) {
    switch (isa) {
    case FR_ISA_AUTO:
    case FR_ISA_SCALAR: return true;
    case FR_ISA_AVX2:
        return __builtin_cpu_supports("avx2") && cpu_f16c();
    case FR_ISA_AVX512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") && cpu_has(FR_ISA_AVX2);
    case FR_ISA_AVX512_BF16:
        return __builtin_cpu_supports("avx512bf16") && cpu_has(FR_ISA_AVX512);
    }
    return false;
}

bool fr_convert_isa_available(fr_isa isa) { return cpu_has(isa); }

static fr_isa isa_from_env(void) {
    const char *v = getenv("FLASHREF_ISA");
    if (!v) return FR_ISA_AUTO;
    if (!strcmp(v, "scalar")) return FR_ISA_SCALAR;
    if (!strcmp(v, "avx2")) return FR_ISA_AVX2;
    if (!strcmp(v, "avx512")) return FR_ISA_AVX512;
    if (!strcmp(v, "avx512bf16")) return FR_ISA_AVX512_BF16;
    return FR_ISA_AUTO; /* unknown names are ignored (the library cannot report them here) */
}

/* The cached choice (a cpuid result, computed identically by any thread that races to fill it). */
static _Atomic int selected_isa = -1;

fr_isa fr_convert_isa_selected(void) {
    int v = atomic_load_explicit(&selected_isa, memory_order_relaxed);
    if (v >= 0) return (fr_isa)v;
    fr_isa best = FR_ISA_SCALAR;
    static const fr_isa order[] = {FR_ISA_AVX512_BF16, FR_ISA_AVX512, FR_ISA_AVX2};
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        if (cpu_has(order[k])) {
            best = order[k];
            break;
        }
    }
    fr_isa want = isa_from_env();
    if (want != FR_ISA_AUTO && want < best) best = want; /* enum order is scalar < avx2 < avx512 < avx512bf16 */
    atomic_store_explicit(&selected_isa, (int)best, memory_order_relaxed);
    return best;
}

static bool is_narrow(fr_dtype t) {
    return t == FR_F16 || t == FR_BF16 || t == FR_E4M3FN || t == FR_E5M2 || t == FR_HIF8;
}

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
    if (isa < FR_ISA_AUTO || isa > FR_ISA_AVX512_BF16) return FR_E_INVALID_ARG;
    if (n == 0) return FR_OK;
    if (!dst || !src) return FR_E_NULL;
    if (n > SIZE_MAX / sizeof(float)) return FR_E_OVERFLOW; /* no buffer can hold it */
    if (isa == FR_ISA_AUTO) isa = fr_convert_isa_selected();
    else if (!cpu_has(isa)) return FR_E_NOT_AVAILABLE;
    if (copy) {
        memmove(dst, src, n * sizeof(float));
        return FR_OK;
    }
    bool v512 = isa == FR_ISA_AVX512 || isa == FR_ISA_AVX512_BF16;
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
