/* The one CPU dispatcher: what this CPU runs (cpuid; for AMX also the OS tile permission, asked once), and which
 * variant FR_ISA_AUTO means (the best-first order is core/variants.inc read backwards, lowered by FLASHREF_ISA).
 * Both are computed once per process and cached. */
#define _GNU_SOURCE /* syscall(2) for arch_prctl */
#include "core/isa.h"
#include "core/core.h"

#include <cpuid.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

const fr_isa fr_isa_list[] = {
#define FR_VARIANT(name, e, ...) e,
#include "core/variants.inc"
#undef FR_VARIANT
};
const int fr_isa_count = (int)(sizeof fr_isa_list / sizeof fr_isa_list[0]);

static const char *const k_names[] = {
#define FR_VARIANT(name, ...) #name,
#include "core/variants.inc"
#undef FR_VARIANT
};

static const fr_isa k_families[] = {
#define FR_VARIANT(name, e, family, ...) family,
#include "core/variants.inc"
#undef FR_VARIANT
};

fr_isa fr_isa_variant(int k) { return k >= 0 && k < fr_isa_count ? fr_isa_list[k] : FR_ISA_AUTO; }

fr_isa fr_isa_family(fr_isa isa) {
    for (int k = 0; k < fr_isa_count; k++)
        if (fr_isa_list[k] == isa) return k_families[k];
    return FR_ISA_AUTO;
}

bool fr_isa_known(fr_isa isa) {
    if (isa == FR_ISA_AUTO) return true;
    for (int k = 0; k < fr_isa_count; k++)
        if (fr_isa_list[k] == isa) return true;
    return false;
}

const char *fr_isa_name(fr_isa isa) {
    if (isa == FR_ISA_AUTO) return "auto";
    for (int k = 0; k < fr_isa_count; k++)
        if (fr_isa_list[k] == isa) return k_names[k];
    return "unknown";
}

fr_status fr_isa_parse(const char *name, fr_isa *isa, fr_error *err) {
    if (name && !strcmp(name, "auto")) {
        if (isa) *isa = FR_ISA_AUTO;
        return FR_OK;
    }
    for (int k = 0; name && k < fr_isa_count; k++)
        if (!strcmp(name, k_names[k])) {
            if (isa) *isa = fr_isa_list[k];
            return FR_OK;
        }
    char list[128] = "";
    for (int k = 0; k < fr_isa_count; k++) {
        strncat(list, k_names[k], sizeof list - strlen(list) - 1);
        strncat(list, k + 1 < fr_isa_count ? ", " : "", sizeof list - strlen(list) - 1);
    }
    return fr_fail(err, FR_E_INVALID_ARG, "ISA '%.64s' is not a variant (%s or auto)", name ? name : "(null)", list);
}

/* ---- what the CPU has ---- */

/* AMX-FP16 (cpuid leaf 7 subleaf 1, EAX bit 21): no variant uses it yet; the slot tests say whether this CPU has it. */
bool fr_isa_cpu_amx_fp16(void) {
    unsigned a = 0, b, c, d;
    return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 21));
}

static bool cpuid_fma_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_FMA) && (c & bit_F16C);
}

static unsigned long long xgetbv0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

/* AMX-TILE and AMX-BF16 in cpuid leaf 7, the tile state enabled in XCR0 (bits 17, 18), and the Linux kernel's
 * permission for this process to use it (arch_prctl ARCH_REQ_XCOMP_PERM, XTILEDATA: since Linux 5.16). */
static bool amx_usable(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    if (!(d & (1u << 24)) || !(d & (1u << 22))) return false; /* AMX-TILE, AMX-BF16 */
    if ((xgetbv0() & (3ull << 17)) != (3ull << 17)) return false;
#ifdef SYS_arch_prctl
    enum { ARCH_GET_XCOMP_PERM = 0x1022, ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0) return false;
    unsigned long bits = 0;
    if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &bits) != 0) return false;
    return (bits >> XFEATURE_XTILEDATA) & 1u;
#else
    return false;
#endif
}

static bool probe(fr_isa isa) {
    switch (isa) {
    case FR_ISA_AUTO:
    case FR_ISA_SCALAR: return true;
    case FR_ISA_AVX2: return __builtin_cpu_supports("avx2") && cpuid_fma_f16c();
    case FR_ISA_AVX512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") && probe(FR_ISA_AVX2);
    case FR_ISA_AVX512_BF16: return __builtin_cpu_supports("avx512bf16") && probe(FR_ISA_AVX512);
    case FR_ISA_AMX: return probe(FR_ISA_AVX512_BF16) && amx_usable();
    }
    return false;
}

/* The best variant in `have` (bit e: fr_isa e available), from the one env names down. */
static fr_status choose(unsigned have, const char *env, fr_isa *isa, fr_error *err) {
    fr_isa want = FR_ISA_AUTO, best = FR_ISA_SCALAR;
    if (env && *env) {
        fr_error e2;
        if (fr_isa_parse(env, &want, &e2) != FR_OK)
            return fr_fail(err, FR_E_INVALID_ARG, "FLASHREF_ISA: %s", e2.msg);
    }
    int wi = fr_isa_count - 1;
    for (int k = 0; k < fr_isa_count; k++)
        if (fr_isa_list[k] == want) wi = k;
    for (int k = wi; k >= 0; k--) /* best first, from the requested variant down */
        if ((have >> fr_isa_list[k]) & 1u) {
            best = fr_isa_list[k];
            break;
        }
    if (isa) *isa = best;
    return FR_OK;
}

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static unsigned g_have;   /* bit e: fr_isa e available */
static fr_isa g_selected; /* FR_ISA_AUTO when FLASHREF_ISA is invalid */
static char g_env[80];    /* the FLASHREF_ISA value seen (truncated), for the error message */

static void init_once(void) {
    for (int k = 0; k < fr_isa_count; k++)
        if (probe(fr_isa_list[k])) g_have |= 1u << fr_isa_list[k];
    const char *env = getenv("FLASHREF_ISA");
    snprintf(g_env, sizeof g_env, "%s", env ? env : "");
    if (choose(g_have, env, &g_selected, NULL) != FR_OK) g_selected = FR_ISA_AUTO;
}

bool fr_isa_available(fr_isa isa) {
    if (isa == FR_ISA_AUTO) return true;
    if (!fr_isa_known(isa)) return false;
    pthread_once(&g_once, init_once);
    return (g_have >> isa) & 1u;
}

fr_status fr_isa_choose(const char *env, fr_isa *isa, fr_error *err) {
    pthread_once(&g_once, init_once);
    return choose(g_have, env, isa, err);
}

fr_status fr_isa_selected(fr_isa *isa, fr_error *err) {
    pthread_once(&g_once, init_once);
    if (g_selected == FR_ISA_AUTO) {
        fr_error e2;
        fr_isa_parse(g_env, NULL, &e2);
        return fr_fail(err, FR_E_INVALID_ARG, "FLASHREF_ISA: %s", e2.msg);
    }
    if (isa) *isa = g_selected;
    return FR_OK;
}
