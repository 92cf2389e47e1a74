/* The golden engine's entries, in the shape of a row of the engine table (engine/engine.h): fr_golden_available
 * (golden_entry.c), fr_golden_fwd (golden_fwd.c), fr_golden_bwd (golden_bwd.c). The problem comes validated. */
#ifndef FR_GOLDEN_ENTRY_H
#define FR_GOLDEN_ENTRY_H

#include "core/problem.h"

/* Alike kernels/fast_entry.h, emulate/emulate_entry.h: kept apart because each engine declares its own entries (they
 * know nothing of one another); engine/engine.c holds them to one shape through the table's field types. */
fr_status fr_golden_available(const fr_engine *e, fr_error *err);
fr_status fr_golden_fwd(const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                        const fr_engine *e, fr_error *err);
fr_status fr_golden_bwd(const fr_problem *pb, const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out,
                        const fr_engine *e, fr_error *err);

#endif
