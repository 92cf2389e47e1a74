/* The one place a kernel variant is chosen (style.md 1-2): from cpuid once (cached), lowered by FLASHREF_ISA
 * (scalar | avx2 | avx512 | avx512bf16), overridden by an explicit fr_engine.isa. */
#include "kernels/kernels.h"

#include <cpuid.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static bool cpu_fma_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_FMA) && (c & bit_F16C);
}

bool fr_kops_isa_available(fr_isa isa) {
    switch (isa) {
    case FR_ISA_AUTO:
    case FR_ISA_SCALAR: return true;
    case FR_ISA_AVX2: return __builtin_cpu_supports("avx2") && cpu_fma_f16c();
    case FR_ISA_AVX512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
               fr_kops_isa_available(FR_ISA_AVX2);
    case FR_ISA_AVX512_BF16:
        return __builtin_cpu_supports("avx512bf16") && fr_kops_isa_available(FR_ISA_AVX512);
    }
    return false;
}

static const fr_kops *table_of(fr_isa isa) {
#define FR_KVARIANT(name, e, str)                                                                                   \
    if (isa == e) return &fr_kops_##name;
#include "kernels/variants.inc"
#undef FR_KVARIANT
    return NULL;
}

static fr_isa env_isa(void) {
    const char *v = getenv("FLASHREF_ISA");
    if (!v) return FR_ISA_AUTO;
#define FR_KVARIANT(name, e, str)                                                                                   \
    if (!strcmp(v, str)) return e;
#include "kernels/variants.inc"
#undef FR_KVARIANT
    return FR_ISA_AUTO; /* unknown names are ignored: the library cannot print */
}

static _Atomic int best_cached = -1; /* the cpuid result, identical for every thread that races to fill it */

static fr_isa best_isa(void) {
    int v = atomic_load_explicit(&best_cached, memory_order_relaxed);
    if (v >= 0) return (fr_isa)v;
    static const fr_isa order[] = {FR_ISA_AVX512_BF16, FR_ISA_AVX512, FR_ISA_AVX2, FR_ISA_SCALAR};
    fr_isa best = FR_ISA_SCALAR;
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
        if (fr_kops_isa_available(order[k])) {
            best = order[k];
            break;
        }
    atomic_store_explicit(&best_cached, (int)best, memory_order_relaxed);
    return best;
}

const fr_kops *fr_kops_get(fr_isa isa) {
    if (isa == FR_ISA_AUTO) {
        fr_isa best = best_isa(), want = env_isa();
        if (want != FR_ISA_AUTO && want < best) best = want; /* scalar < avx2 < avx512 < avx512bf16 */
        return table_of(best);
    }
    return fr_kops_isa_available(isa) ? table_of(isa) : NULL;
}
