/* Placeholder entry of the fast engine until it is implemented: answers "not available", never a fake result. */
#include "api/engines.h"
#include "core/core.h"

fr_status fr_fast_available(const fr_engine *e, fr_error *err) {
    return fr_fail(err, FR_E_NOT_AVAILABLE, "engine 'fast' is not implemented in this build yet");
}
fr_status fr_fast_fwd(const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                    const fr_engine *e, fr_error *err) {
    return fr_fail(err, FR_E_NOT_AVAILABLE, "engine 'fast' is not implemented in this build yet");
}
fr_status fr_fast_bwd(const fr_problem *pb, const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out,
                    const fr_engine *e, fr_error *err) {
    return fr_fail(err, FR_E_NOT_AVAILABLE, "engine 'fast' is not implemented in this build yet");
}
