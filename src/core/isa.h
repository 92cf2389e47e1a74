/* The one CPU dispatcher (BLIS keeps one bli_arch.c): cpuid, the AMX tile permission and FLASHREF_ISA are read here
 * and nowhere else; the kernels (kernels/dispatch.c), the golden (golden/golden_gemm.c), the conversions
 * (core/convert_array.c), the tests and the benchmarks all ask it. Public half in flashref.h (fr_isa_variant,
 * fr_isa_name, fr_isa_parse, fr_isa_available, fr_isa_selected). */
#ifndef FR_CORE_ISA_H
#define FR_CORE_ISA_H

#include "flashref.h"

/* Every variant of core/variants.inc, in its order (best last), and how many there are. */
extern const fr_isa fr_isa_list[];
extern const int fr_isa_count;

/* The variant's base ISA family (core/variants.inc's family column): the variant whose code serves it in a layer with
 * no code of its own for it (the golden's fp64 product, the array conversions). FR_ISA_AUTO for a value outside the
 * list (FR_ISA_AUTO included: resolve it with fr_isa_selected first). */
fr_isa fr_isa_family(fr_isa isa);

/* Whether this CPU has AMX-FP16, which no variant uses yet (for the tests' notes: cpuid is read here only). */
bool fr_isa_cpu_amx_fp16(void);

/* Whether isa is a value of the enum (FR_ISA_AUTO included). */
bool fr_isa_known(fr_isa isa);

/* The choice fr_isa_selected caches, for a given FLASHREF_ISA value (NULL or "" = unset): the best available
 * variant, lowered to `env` when that names a lower one. Pure apart from cpuid (tests call it with any string). */
fr_status fr_isa_choose(const char *env, fr_isa *isa, fr_error *err);

#endif
