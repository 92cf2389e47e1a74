/* The kernel tables by ISA: which variant runs is decided by the one CPU dispatcher (core/isa.c: cpuid, the AMX tile
 * permission, FLASHREF_ISA); this file resolves each variant's table once (its overrides over the table of the
 * variant before it in core/variants.inc) and maps the dispatcher's answer, or an explicit fr_engine.isa, to one. */
#include "core/core.h"
#include "core/isa.h"
#include "kernels/kernels.h"

#include <pthread.h>

bool fr_kops_isa_available(fr_isa isa) { return fr_isa_available(isa); }

/* Each variant's overrides (ops_<name>.c) and its row's columns, in list order. */
static const fr_kops *const k_over[] = {
#define FR_VARIANT(name, ...) &fr_kops_over_##name,
#include "core/variants.inc"
#undef FR_VARIANT
};
static const bool k_bf16_dot[] = {
#define FR_VARIANT(name, e, family, bf16, ...) bf16,
#include "core/variants.inc"
#undef FR_VARIANT
};
enum { N_VARIANTS = (int)(sizeof k_over / sizeof k_over[0]) };

static fr_kops g_tables[N_VARIANTS];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* BLIS-style: start from the table below (scalar: nothing), take every slot the variant names. */
static void resolve_once(void) {
    for (int k = 0; k < N_VARIANTS; k++) {
        fr_kops t = k > 0 ? g_tables[k - 1] : (fr_kops){0};
#define FR_KOPS_INHERIT(slot)                                                                                          \
    if (k_over[k]->slot) t.slot = k_over[k]->slot;
        FR_KOPS_SLOTS(FR_KOPS_INHERIT)
#undef FR_KOPS_INHERIT
        t.isa = fr_isa_variant(k);
        t.name = fr_isa_name(t.isa);
        t.bf16_gemm = k_bf16_dot[k];
        g_tables[k] = t;
    }
}

const fr_kops *fr_kops_table(fr_isa isa) {
    pthread_once(&g_once, resolve_once);
    for (int k = 0; k < N_VARIANTS; k++)
        if (g_tables[k].isa == isa && isa != FR_ISA_AUTO) return &g_tables[k];
    return NULL;
}

fr_status fr_kops_select(fr_isa isa, const fr_kops **ops, fr_error *err) {
    *ops = NULL;
    if (!fr_isa_known(isa)) return fr_fail(err, FR_E_INVALID_ARG, "engine.isa: unknown value %d", (int)isa);
    if (isa == FR_ISA_AUTO) {
        fr_status st = fr_isa_selected(&isa, err);
        if (st != FR_OK) return st;
    } else if (!fr_isa_available(isa)) {
        return fr_fail(err, FR_E_NOT_AVAILABLE, "engine.isa: %s is not supported by this CPU%s", fr_isa_name(isa),
                       isa == FR_ISA_AMX ? " (or the OS refused the AMX tile state)" : "");
    }
    *ops = fr_kops_table(isa);
    return *ops ? FR_OK : fr_fail(err, FR_E_INTERNAL, "engine.isa: no table for %s", fr_isa_name(isa));
}

const fr_kops *fr_kops_get(fr_isa isa) {
    const fr_kops *ops;
    fr_kops_select(isa, &ops, NULL);
    return ops;
}
