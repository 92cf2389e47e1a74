/* The one CPU dispatcher (BLIS keeps one bli_arch.c): cpuid, the AMX tile permission and FLASHREF_ISA are read here
 * and nowhere else; the kernels (kernels/dispatch.c), the conversions (core/convert_array.c), the tests and the
 * benchmarks all ask it. Public half in flashref.h (fr_isa_name, fr_isa_parse, fr_isa_available, fr_isa_selected). */
#ifndef FR_CORE_ISA_H
#define FR_CORE_ISA_H

#include "flashref.h"

/* Every variant of kernels/variants.inc, in its order (best last), and how many there are. */
extern const fr_isa fr_isa_list[];
extern const int fr_isa_count;

/* Whether isa is a value of the enum (FR_ISA_AUTO included). */
bool fr_isa_known(fr_isa isa);

/* The choice fr_isa_selected caches, for a given FLASHREF_ISA value (NULL or "" = unset): the best available
 * variant, lowered to `env` when that names a lower one. Pure apart from cpuid (tests call it with any string). */
fr_status fr_isa_choose(const char *env, fr_isa *isa, fr_error *err);

#endif
