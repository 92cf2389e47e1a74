/* Entry of the golden engine: always available (plain C underneath every product variant); a forced ISA
 * (fr_engine.isa) must run on this CPU. fr_golden_fwd / fr_golden_bwd live in golden_fwd.c / golden_bwd.c. */
#include "engine/engines.h"
#include "core/core.h"
#include "golden/golden_gemm.h"

fr_status fr_golden_available(const fr_engine *e, fr_error *err) {
    if (e && e->isa != FR_ISA_AUTO && !gd_gemm_pick(e->isa))
        return fr_fail(err, FR_E_NOT_AVAILABLE, "golden: the requested ISA does not run on this CPU");
    return FR_OK;
}
