/* The kernel tables by ISA: which variant runs is decided by the one CPU dispatcher (core/isa.c: cpuid, the AMX tile
 * permission, FLASHREF_ISA); this file only maps its answer, or an explicit fr_engine.isa, to a table. */
#include "core/core.h"
#include "core/isa.h"
#include "kernels/kernels.h"

bool fr_kops_isa_available(fr_isa isa) { return fr_isa_available(isa); }

static const fr_kops *table_of(fr_isa isa) {
#define FR_KVARIANT(name, e, str, fmr, fnr, bmr, bnr)                                                             \
    if (isa == e) return &fr_kops_##name;
#include "kernels/variants.inc"
#undef FR_KVARIANT
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
    *ops = table_of(isa);
    return *ops ? FR_OK : fr_fail(err, FR_E_INTERNAL, "engine.isa: no table for %s", fr_isa_name(isa));
}

const fr_kops *fr_kops_get(fr_isa isa) {
    const fr_kops *ops;
    fr_kops_select(isa, &ops, NULL);
    return ops;
}
