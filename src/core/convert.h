/* Internal: the vectorized array conversion kernels behind fr_convert_array (convert_array.c dispatches).
 * Names: fr_cvt_<from>_<to>_<isa>; each processes n elements, any n, unaligned pointers, no overlap. */
#ifndef FR_CORE_CONVERT_H
#define FR_CORE_CONVERT_H

#include "flashref.h"

void fr_cvt_f32_bf16_avx512(uint16_t *dst, const float *src, size_t n, fr_round r, fr_sat s);
void fr_cvt_f32_f16_avx512(uint16_t *dst, const float *src, size_t n, fr_round r, fr_sat s);
void fr_cvt_bf16_f32_avx512(float *dst, const uint16_t *src, size_t n);
void fr_cvt_f16_f32_avx512(float *dst, const uint16_t *src, size_t n);
void fr_cvt_f32_e4m3fn_avx512(uint8_t *dst, const float *src, size_t n, fr_round r, fr_sat s);
void fr_cvt_f32_e5m2_avx512(uint8_t *dst, const float *src, size_t n, fr_round r, fr_sat s);
void fr_cvt_e4m3fn_f32_avx512(float *dst, const uint8_t *src, size_t n);
void fr_cvt_e5m2_f32_avx512(float *dst, const uint8_t *src, size_t n);
void fr_cvt_f32_hif8_avx512(uint8_t *dst, const float *src, size_t n, fr_round r, fr_sat s);
void fr_cvt_hif8_f32_avx512(float *dst, const uint8_t *src, size_t n);

void fr_cvt_f32_bf16_avx2(uint16_t *dst, const float *src, size_t n, fr_round r, fr_sat s);
void fr_cvt_f32_f16_avx2(uint16_t *dst, const float *src, size_t n, fr_round r, fr_sat s);
void fr_cvt_bf16_f32_avx2(float *dst, const uint16_t *src, size_t n);
void fr_cvt_f16_f32_avx2(float *dst, const uint16_t *src, size_t n);

/* The k-th base ISA family with a row of vectorized conversions in convert_array.c (one row per family of
 * core/variants.inc, scalar included; tests/variants checks both ways); FR_ISA_AUTO for k out of range. */
fr_isa fr_convert_family_at(int k);

#endif
