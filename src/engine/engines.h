/* The engine interface: the one layer below the engines. golden, kernels and emulate implement these entries; the
 * public API (src/api) validates and dispatches to them. Nothing here depends on any engine. */
/* The internal entry of each engine. fr_fwd/fr_bwd (api.c) validate, check outputs, then call one of these with the
 * resolved problem. An engine returns FR_E_NOT_AVAILABLE (never a fake result) for what it cannot compute. */
#ifndef FR_ENGINE_ENGINES_H
#define FR_ENGINE_ENGINES_H

#include "core/problem.h"

fr_status fr_golden_fwd(const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                        const fr_engine *e, fr_error *err);
fr_status fr_golden_bwd(const fr_problem *pb, const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out,
                        const fr_engine *e, fr_error *err);
fr_status fr_fast_fwd(const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                      const fr_engine *e, fr_error *err);
fr_status fr_fast_bwd(const fr_problem *pb, const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out,
                      const fr_engine *e, fr_error *err);
fr_status fr_emulate_fwd(const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in,
                         const fr_fwd_outputs *out, const fr_engine *e, fr_error *err);
fr_status fr_emulate_bwd(const fr_problem *pb, const fr_params *p, const fr_bwd_inputs *in,
                         const fr_bwd_outputs *out, const fr_engine *e, fr_error *err);

/* Whether each engine is implemented in this build (and, for fast, whether the requested ISA runs here). */
fr_status fr_golden_available(const fr_engine *e, fr_error *err);
fr_status fr_fast_available(const fr_engine *e, fr_error *err);
fr_status fr_emulate_available(const fr_engine *e, fr_error *err);

#endif
