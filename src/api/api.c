/* Public entry points: validate, check outputs, dispatch to the engine. */
#include "engine/engines.h"
#include "core/core.h"

fr_status fr_engine_available(const fr_engine *e, fr_error *err) {
    if (!e) return fr_fail(err, FR_E_NULL, "engine: NULL");
    switch (e->kind) {
    case FR_ENGINE_GOLDEN: return fr_golden_available(e, err);
    case FR_ENGINE_FAST: return fr_fast_available(e, err);
    case FR_ENGINE_EMULATE: return fr_emulate_available(e, err);
    default: return fr_fail(err, FR_E_INVALID_ARG, "engine: unknown kind %d", (int)e->kind);
    }
}

fr_status fr_validate_fwd(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out, fr_error *err) {
    fr_error_clear(err);
    fr_problem pb;
    fr_status st = fr_problem_from_fwd(p, in, &pb, err);
    if (st != FR_OK || !out) return st;
    return fr_check_fwd_outputs(&pb, p, out, err);
}

fr_status fr_validate_bwd(const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out, fr_error *err) {
    fr_error_clear(err);
    fr_problem pb;
    fr_status st = fr_problem_from_bwd(p, in, &pb, err);
    if (st != FR_OK || !out) return st;
    return fr_check_bwd_outputs(&pb, p, out, err);
}

/* What fr_fwd and fr_bwd check before the problem: outputs given, the engine built in, a thread count >= 0. */
static fr_status engine_ready(bool have_out, const fr_engine *e, fr_error *err) {
    fr_error_clear(err);
    if (!have_out) return fr_fail(err, FR_E_NULL, "outputs: NULL");
    fr_status st = fr_engine_available(e, err);
    if (st != FR_OK) return st;
    if (e->num_threads < 0) return fr_fail(err, FR_E_INVALID_ARG, "engine.num_threads: %d < 0", e->num_threads);
    return FR_OK;
}

/* Alike api.c:fr_bwd: kept apart because forward and backward take different input and output structs and engine
 * entry points; C has no generic over them short of a macro. */
fr_status fr_fwd(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out, const fr_engine *e,
                 fr_error *err) {
    fr_status st = engine_ready(out != NULL, e, err);
    if (st != FR_OK) return st;
    fr_problem pb;
    if ((st = fr_problem_from_fwd(p, in, &pb, err)) != FR_OK) return st;
    if ((st = fr_check_fwd_outputs(&pb, p, out, err)) != FR_OK) return st;
    switch (e->kind) {
    case FR_ENGINE_GOLDEN: return fr_golden_fwd(&pb, p, in, out, e, err);
    case FR_ENGINE_FAST: return fr_fast_fwd(&pb, p, in, out, e, err);
    default: return fr_emulate_fwd(&pb, p, in, out, e, err);
    }
}

/* Alike api.c:fr_fwd: kept apart because forward and backward take different input and output structs and engine
 * entry points; C has no generic over them short of a macro. */
fr_status fr_bwd(const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out, const fr_engine *e,
                 fr_error *err) {
    fr_status st = engine_ready(out != NULL, e, err);
    if (st != FR_OK) return st;
    fr_problem pb;
    if ((st = fr_problem_from_bwd(p, in, &pb, err)) != FR_OK) return st;
    if ((st = fr_check_bwd_outputs(&pb, p, out, err)) != FR_OK) return st;
    switch (e->kind) {
    case FR_ENGINE_GOLDEN: return fr_golden_bwd(&pb, p, in, out, e, err);
    case FR_ENGINE_FAST: return fr_fast_bwd(&pb, p, in, out, e, err);
    default: return fr_emulate_bwd(&pb, p, in, out, e, err);
    }
}
