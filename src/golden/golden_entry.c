/* Entry of the golden engine: always available (plain C, no ISA requirement). fr_golden_fwd / fr_golden_bwd live in
 * golden_fwd.c / golden_bwd.c. */
#include "engine/engines.h"
#include "core/core.h"

fr_status fr_golden_available(const fr_engine *e, fr_error *err) {
    (void)e;
    (void)err;
    return FR_OK;
}
