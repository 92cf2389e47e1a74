/* The engines as a table (as the kernels are a table of slots, kernels.h): one row per engine, naming its kind and
 * its three entries. fr_fwd / fr_bwd / fr_engine_available (engine.c) validate, check the outputs, then call the
 * row of the requested kind with the resolved problem. An engine returns FR_E_NOT_AVAILABLE (never a fake result)
 * for what it cannot compute.
 *
 * This folder sits above the engines (golden/, kernels/, emulate/), which know nothing of it: each declares its own
 * entries (golden_entry.h, fast_entry.h, emulate_entry.h) in the shape of these fields. Adding an engine = its folder
 * and one row of fr_engine_table (plus its fr_engine_kind in include/flashref.h). */
#ifndef FR_ENGINE_ENGINE_H
#define FR_ENGINE_ENGINE_H

#include "core/problem.h"

typedef struct fr_engine_ops {
    const char *name; /* as fr_engine_name and --impl spell it */
    fr_engine_kind kind;
    /* Whether the engine is implemented in this build (and, for fast, whether the requested ISA runs here). */
    fr_status (*available)(const fr_engine *e, fr_error *err);
    fr_status (*fwd)(const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                     const fr_engine *e, fr_error *err);
    fr_status (*bwd)(const fr_problem *pb, const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out,
                     const fr_engine *e, fr_error *err);
} fr_engine_ops;

extern const fr_engine_ops fr_engine_table[];
extern const int fr_engine_count;

/* The row of kind, or NULL for a kind no row has. */
const fr_engine_ops *fr_engine_ops_of(fr_engine_kind kind);
/* What fr_fwd and fr_bwd check before the problem (err cleared first): outputs given (have_out), the engine built
 * in, a thread count >= 0. The distributed entries (src/dist) check the same before splitting a problem. */
fr_status fr_engine_ready(bool have_out, const fr_engine *e, fr_error *err);

#endif
