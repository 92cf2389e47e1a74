/* fp16 accumulators reproduce overflow: one query row over S2 = 70000 keys with equal scores and
 * v = 1. The exact answer is 1.0 with l = 70000 > 65504 = fp16 max. fp32 accumulators give exactly 1.0; an fp16 row
 * sum overflows to Inf (output 0 when O is fp32: O / Inf); fp16 O and l both overflow (Inf / Inf = NaN). With the
 * lazy threshold, p = exp2(delta) up to 2^8 makes an fp16 l overflow after only 65504 / 256 keys of a stale max. */
#include "common/check.h"
#include "flashref_emulate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double run(int64_t S2, fr_dtype acc_o, fr_dtype acc_l, double thr, const float *kdata, float *l_out) {
    int64_t shq[4] = {1, 1, 1, 1}, shk[4] = {1, 1, S2, 1}, shs[4] = {1, 1, 1, 8};
    float q = 1.0f, o = -1.0f, m[8], l[8];
    float *v = malloc(sizeof(float) * (size_t)S2);
    for (int64_t j = 0; j < S2; j++) v[j] = 1.0f;
    fr_fwd_inputs in;
    memset(&in, 0, sizeof in);
    in.query = fr_tensor_make(FR_F32, &q, 4, shq);
    in.key = fr_tensor_make(FR_F32, (void *)kdata, 4, shk);
    in.value = fr_tensor_make(FR_F32, v, 4, shk);
    fr_fwd_outputs out = {fr_tensor_make(FR_F32, &o, 4, shq), fr_tensor_make(FR_F32, m, 4, shs),
                          fr_tensor_make(FR_F32, l, 4, shs)};
    fr_params p = fr_params_default();
    p.head_num = 1;
    p.input_layout = FR_BNSD;
    fr_numerics nc = fr_numerics_ideal(FR_F32);
    nc.acc_o = acc_o;
    nc.acc_l = acc_l;
    nc.rescale_threshold = thr;
    nc.exp_base = FR_EMU_EXP_2;
    fr_error err;
    CHECK(fr_emulate_fwd_ex(&p, &in, &out, &nc, NULL, 1, &err) == FR_OK, "%s", err.msg);
    free(v);
    *l_out = l[0];
    return o;
}

int main(void) {
    printf("test_emulate_overflow (deterministic inputs, no seed)\n");
    const int64_t S2 = 70000;
    float *k = malloc(sizeof(float) * S2);
    for (int64_t j = 0; j < S2; j++) k[j] = 0.0f; /* every score 0: p = 1 for every key */
    float l;
    double o = run(S2, FR_F32, FR_F32, 0, k, &l);
    printf("fp32 O, fp32 l: out %.9g, l %.9g\n", o, (double)l);
    CHECK(o == 1.0 && l == 70000.0f, "fp32 accumulators");
    o = run(S2, FR_F32, FR_F16, 0, k, &l);
    printf("fp32 O, fp16 l: out %.9g, l %.9g\n", o, (double)l);
    CHECK(isinf(l) && o == 0.0, "fp16 row sum should overflow to Inf (out = O / Inf = 0)");
    o = run(S2, FR_F16, FR_F16, 0, k, &l);
    printf("fp16 O, fp16 l: out %.9g, l %.9g\n", o, (double)l);
    CHECK(isnan(o), "fp16 O and l should give Inf / Inf = NaN");
    /* Lazy threshold: the first 128-key tile scores -5, the rest 0. The rest exceed the stale max by 5 log2(e) = 7.2
     * (log2 units) < 8, so the max never moves and every later p = 2^7.2 = 147: the fp16 row sum passes 65504 after
     * ~450 keys. With the exact max the same row sums to 897, far inside fp16. */
    const int64_t S3 = 1024;
    for (int64_t j = 0; j < S3; j++) k[j] = j < 128 ? -5.0f : 0.0f;
    o = run(S3, FR_F32, FR_F16, 8.0, k, &l);
    printf("lazy 8, fp16 l, 1024 keys: out %.9g, l %.9g\n", o, (double)l);
    CHECK(isinf(l), "lazy max should overflow the fp16 row sum (l = %g)", (double)l);
    o = run(S3, FR_F32, FR_F16, 0.0, k, &l);
    printf("exact, fp16 l, 1024 keys: out %.9g, l %.9g\n", o, (double)l);
    CHECK(fabs(o - 1.0) < 1e-3 && !isinf(l), "exact max with fp16 l");
    free(k);
    return fr_test_exit("test_emulate_overflow");
}
