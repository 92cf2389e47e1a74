/* Fused backward: placeholder until the two-pass kernel lands. */
#include "core/core.h"
#include "kernels/kernels.h"

fr_status fr_k_bwd(const fr_kops *ops, int num_threads, const fr_problem *pb, const fr_params *p,
                   const fr_bwd_inputs *in, const fr_bwd_outputs *out, fr_error *err) {
    return fr_fail(err, FR_E_NOT_AVAILABLE, "engine 'fast': backward not implemented yet");
}
