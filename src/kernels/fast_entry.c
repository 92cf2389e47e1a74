/* The fast engine's entry points (fast_entry.h, a row of engine/engine.h): pick the kernel variant (fr_engine.isa,
 * else the one CPU dispatcher's choice), check the output dtypes this engine writes, run the fused drivers. */
#include "kernels/fast_entry.h"
#include "core/core.h"
#include "kernels/kernels.h"

fr_status fr_fast_available(const fr_engine *e, fr_error *err) {
    const fr_kops *ops;
    return fr_kops_select(e ? e->isa : FR_ISA_AUTO, &ops, err);
}

/* attention-like outputs: the operator dtype, fp32 or fp64; softmax statistics and dsink: fp32 or fp64. */
static fr_status check_dtype(const fr_tensor *t, fr_dtype op, const char *name, fr_error *err) {
    if (!fr_tensor_present(t)) return FR_OK;
    if (t->dtype == op || t->dtype == FR_F32 || t->dtype == FR_F64) return FR_OK;
    return fr_fail(err, FR_E_OUTPUT, "%s: dtype %s not written by engine 'fast' (use %s, fp32 or fp64)", name,
                   fr_dtype_name(t->dtype), fr_dtype_name(op));
}

/* Alike fast_entry.c:fr_fast_bwd: kept apart because each checks its own outputs' dtypes before its own kernel; they
 * share only the ISA selection line. */
fr_status fr_fast_fwd(const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                      const fr_engine *e, fr_error *err) {
    const fr_kops *ops;
    fr_status st = fr_kops_select(e ? e->isa : FR_ISA_AUTO, &ops, err);
    if (st != FR_OK) return st;
    if ((st = check_dtype(&out->attention_out, pb->out_dtype, "attention_out", err)) != FR_OK) return st;
    if ((st = check_dtype(&out->softmax_max, FR_F32, "softmax_max", err)) != FR_OK) return st;
    if ((st = check_dtype(&out->softmax_sum, FR_F32, "softmax_sum", err)) != FR_OK) return st;
    return fr_k_fwd_ex(ops, e ? e->num_threads : 0, e, pb, p, in, out, err);
}

/* Alike fast_entry.c:fr_fast_fwd: kept apart because each checks its own outputs' dtypes before its own kernel; they
 * share only the ISA selection line. */
fr_status fr_fast_bwd(const fr_problem *pb, const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out,
                      const fr_engine *e, fr_error *err) {
    const fr_kops *ops;
    fr_status st = fr_kops_select(e ? e->isa : FR_ISA_AUTO, &ops, err);
    if (st != FR_OK) return st;
    if ((st = check_dtype(&out->dq, pb->dtype, "dq", err)) != FR_OK) return st;
    if ((st = check_dtype(&out->dk, pb->dtype, "dk", err)) != FR_OK) return st;
    if ((st = check_dtype(&out->dv, pb->dtype, "dv", err)) != FR_OK) return st;
    if ((st = check_dtype(&out->dq_rope, pb->dtype, "dq_rope", err)) != FR_OK) return st;
    if ((st = check_dtype(&out->dk_rope, pb->dtype, "dk_rope", err)) != FR_OK) return st;
    if ((st = check_dtype(&out->dsink, FR_F32, "dsink", err)) != FR_OK) return st;
    return fr_k_bwd_ex(ops, e ? e->num_threads : 0, e, pb, p, in, out, err);
}
