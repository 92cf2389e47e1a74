/* Entry of the golden engine: available on every CPU (plain C underneath every product variant); a forced ISA
 * (fr_engine.isa) must run on this CPU, and FLASHREF_ISA must name a variant (the one CPU dispatcher, core/isa.c,
 * refuses an unknown one for every engine). fr_golden_fwd / fr_golden_bwd live in golden_fwd.c / golden_bwd.c. */
#include "golden/golden_entry.h"
#include "core/core.h"
#include "golden/golden_gemm.h"

fr_status fr_golden_available(const fr_engine *e, fr_error *err) {
    gd_gemm_fn fn;
    return gd_gemm_pick(e ? e->isa : FR_ISA_AUTO, &fn, err);
}
