/* Placeholder entry of the golden engine until it is implemented: answers "not available", never a fake result. */
#include "api/engines.h"
#include "core/core.h"

fr_status fr_golden_available(const fr_engine *e, fr_error *err) {
    return fr_fail(err, FR_E_NOT_AVAILABLE, "engine 'golden' is not implemented in this build yet");
}
fr_status fr_golden_fwd(const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                    const fr_engine *e, fr_error *err) {
    return fr_fail(err, FR_E_NOT_AVAILABLE, "engine 'golden' is not implemented in this build yet");
}
fr_status fr_golden_bwd(const fr_problem *pb, const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out,
                    const fr_engine *e, fr_error *err) {
    return fr_fail(err, FR_E_NOT_AVAILABLE, "engine 'golden' is not implemented in this build yet");
}
