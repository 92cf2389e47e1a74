/* The engine table (engine.h) and the public entries that dispatch through it: check the outputs are given, the
 * engine is built in and the thread count is >= 0, validate (core/validate_problem.c), then call the engine's row. */
#include "engine/engine.h"

#include "core/core.h"
#include "emulate/emulate_entry.h"
#include "golden/golden_entry.h"
#include "kernels/fast_entry.h"

const fr_engine_ops fr_engine_table[] = {
    {"golden", FR_ENGINE_GOLDEN, fr_golden_available, fr_golden_fwd, fr_golden_bwd},
    {"fast", FR_ENGINE_FAST, fr_fast_available, fr_fast_fwd, fr_fast_bwd},
    {"emulate", FR_ENGINE_EMULATE, fr_emulate_available, fr_emulate_fwd, fr_emulate_bwd},
};
const int fr_engine_count = (int)(sizeof fr_engine_table / sizeof fr_engine_table[0]);

const fr_engine_ops *fr_engine_ops_of(fr_engine_kind kind) {
    for (int k = 0; k < fr_engine_count; k++)
        if (fr_engine_table[k].kind == kind) return &fr_engine_table[k];
    return NULL;
}

const char *fr_engine_name(fr_engine_kind kind) {
    const fr_engine_ops *ops = fr_engine_ops_of(kind);
    return ops ? ops->name : "invalid";
}

fr_status fr_engine_available(const fr_engine *e, fr_error *err) {
    if (!e) return fr_fail(err, FR_E_NULL, "engine: NULL");
    const fr_engine_ops *ops = fr_engine_ops_of(e->kind);
    if (!ops) return fr_fail(err, FR_E_INVALID_ARG, "engine: unknown kind %d", (int)e->kind);
    return ops->available(e, err);
}

fr_status fr_engine_ready(bool have_out, const fr_engine *e, fr_error *err) {
    fr_error_clear(err);
    if (!have_out) return fr_fail(err, FR_E_NULL, "outputs: NULL");
    fr_status st = fr_engine_available(e, err);
    if (st != FR_OK) return st;
    if (e->num_threads < 0) return fr_fail(err, FR_E_INVALID_ARG, "engine.num_threads: %d < 0", e->num_threads);
    return FR_OK;
}

/* Alike engine.c:fr_bwd: kept apart because forward and backward take different input and output structs and engine
 * entry points; C has no generic over them short of a macro. */
fr_status fr_fwd(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out, const fr_engine *e,
                 fr_error *err) {
    fr_status st = fr_engine_ready(out != NULL, e, err);
    if (st != FR_OK) return st;
    fr_problem pb;
    if ((st = fr_problem_from_fwd(p, in, &pb, err)) != FR_OK) return st;
    if ((st = fr_check_fwd_outputs(&pb, p, out, err)) != FR_OK) return st;
    return fr_engine_ops_of(e->kind)->fwd(&pb, p, in, out, e, err);
}

/* Alike engine.c:fr_fwd: kept apart because forward and backward take different input and output structs and engine
 * entry points; C has no generic over them short of a macro. */
fr_status fr_bwd(const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out, const fr_engine *e,
                 fr_error *err) {
    fr_status st = fr_engine_ready(out != NULL, e, err);
    if (st != FR_OK) return st;
    fr_problem pb;
    if ((st = fr_problem_from_bwd(p, in, &pb, err)) != FR_OK) return st;
    if ((st = fr_check_bwd_outputs(&pb, p, out, err)) != FR_OK) return st;
    return fr_engine_ops_of(e->kind)->bwd(&pb, p, in, out, e, err);
}
