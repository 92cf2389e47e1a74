/* flashref: array conversions with an explicit ISA variant (number formats, docs/number-formats.md).
 *
 * fr_convert_array() (flashref.h) uses the variant of the one CPU dispatcher (fr_isa_selected: the best the CPU has,
 * unless the environment variable FLASHREF_ISA (scalar | avx2 | avx512 | avx512bf16 | amx) asks for a lower one;
 * FR_E_INVALID_ARG when FLASHREF_ISA names no variant). The calls below force a variant, so a
 * wrong answer can be bisected to a kernel; every variant gives bit-identical results to the scalar encoders and
 * decoders of flashref.h.
 */
#ifndef FLASHREF_CONVERT_H
#define FLASHREF_CONVERT_H

#include "flashref.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Like fr_convert_array, with the variant forced. FR_ISA_AUTO = what fr_convert_array uses. FR_E_NOT_AVAILABLE when
 * this build or this CPU lacks the variant; FR_E_DTYPE for an unsupported pair; FR_E_NULL for a NULL buffer with n > 0;
 * FR_E_OVERFLOW when n * 4 bytes overflows size_t; FR_E_INVALID_ARG for an unknown isa, rounding or saturation mode.
 * Vectorized: fp32 <-> bf16 and fp32 <-> fp16 under AVX2 and AVX-512; fp32 <-> e4m3fn, e5m2, hif8 under AVX-512
 * (both roundings, both saturation modes); everything else runs the scalar routines. FR_ISA_AVX512_BF16 and
 * FR_ISA_AMX run the AVX-512 code (the hardware bf16 instructions flush subnormals and only round to nearest even, so they are not
 * used). */
FR_API fr_status fr_convert_array_isa(fr_isa isa, fr_dtype to, void *dst, fr_dtype from, const void *src, size_t n,
                                      fr_round r, fr_sat s);

/* The variant fr_convert_array uses on this machine (after FLASHREF_ISA); FR_ISA_AUTO when FLASHREF_ISA is invalid. */
FR_API fr_isa fr_convert_isa_selected(void);

/* Whether a conversion variant can run here (build and CPU). FR_ISA_AUTO and FR_ISA_SCALAR: always. */
FR_API bool fr_convert_isa_available(fr_isa isa);

#ifdef __cplusplus
}
#endif

#endif
