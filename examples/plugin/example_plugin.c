/* An example flashref plugin (include/flashref_plugin.h): a plain fp32 attention forward for BNSD / BSND inputs
 * without mask, pse or dropout. Every other case answers FR_E_UNSUPPORTED, which flashref reports as SKIP.
 *
 *   build:  cmake --build BUILD --target flashref_example_plugin      (or: cc -shared -fPIC -Iinclude
 *           examples/plugin/example_plugin.c -lm -o example_plugin.so)
 *   judge:  flashref suite --impl plugin:BUILD/.../example_plugin.so
 *
 * It includes the public headers only and links nothing but libm: a plugin may not call into libflashref (the host
 * that loads it need not export those symbols). Per row: scores in double, x = s * fp32(scale), softmax with the
 * row max, out = sum_j e_j v_j / l in double, then stored as fp32 (spec section 3, without the online rescaling).
 * Fully masked rows cannot occur here except with S2 = 0, which gives out = 0, max = -FLT_MAX, sum = +FLT_MAX (D1). */
#include "flashref_plugin.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fr_status fail(fr_error *err, fr_status st, const char *what) {
    if (err) {
        err->status = st;
        snprintf(err->msg, sizeof err->msg, "example plugin: %s", what);
    }
    return st;
}
#define NOT_HANDLED(what) fail(err, FR_E_UNSUPPORTED, what " is not supported")

static bool present(const fr_tensor *t) { return t->dtype != FR_DT_NONE; }

/* Element (b, n, s, d) of a BNSD or BSND tensor, as an offset in elements. */
static int64_t at(const fr_tensor *t, fr_layout l, int64_t b, int64_t n, int64_t s, int64_t d) {
    const int64_t *st = t->strides;
    return l == FR_BNSD ? b * st[0] + n * st[1] + s * st[2] + d * st[3] : b * st[0] + s * st[1] + n * st[2] + d * st[3];
}

static fr_status example_fwd(void *ctx, const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                             fr_error *err) {
    (void)ctx;
    fr_layout l = p->input_layout;
    if (l != FR_BNSD && l != FR_BSND) return NOT_HANDLED("a layout other than BNSD / BSND");
    if (in->query.dtype != FR_F32) return NOT_HANDLED("an input dtype other than fp32");
    if (out->attention_out.dtype != FR_F32) return NOT_HANDLED("an output dtype other than fp32");
    if (present(&in->atten_mask)) return NOT_HANDLED("atten_mask");
    if (present(&in->real_shift)) return NOT_HANDLED("pse (real_shift)");
    if (p->keep_prob != 1.0 || present(&in->drop_mask)) return NOT_HANDLED("dropout");
    if (present(&in->query_rope) || present(&in->sink) || present(&in->topk_indices) || present(&in->d_scale_q))
        return NOT_HANDLED("rope / sink / top-k / fp8 scales");

    /* q: [B,N1,S1,D] (BNSD) or [B,S1,N1,D] (BSND); k: N2 heads, S2 rows; v: last dim Dv. */
    const fr_tensor *q = &in->query, *k = &in->key, *v = &in->value;
    int64_t B = q->shape[0], N1 = l == FR_BNSD ? q->shape[1] : q->shape[2];
    int64_t S1 = l == FR_BNSD ? q->shape[2] : q->shape[1];
    int64_t N2 = l == FR_BNSD ? k->shape[1] : k->shape[2], S2 = l == FR_BNSD ? k->shape[2] : k->shape[1];
    int64_t D = q->shape[3], Dv = v->shape[3], G = N2 ? N1 / N2 : 1;
    const float *Q = q->data, *K = k->data, *V = v->data;
    const fr_tensor *o = &out->attention_out, *mx = &out->softmax_max, *sm = &out->softmax_sum;
    float *O = o->data, *M = mx->data, *L = sm->data;
    double scale = (double)(float)p->scale_value;

    double *x = malloc(sizeof(double) * (size_t)(S2 > 0 ? S2 : 1));
    double *acc = malloc(sizeof(double) * (size_t)(Dv > 0 ? Dv : 1));
    if (!x || !acc) {
        free(x);
        free(acc);
        return fail(err, FR_E_NOMEM, "out of memory");
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < N1; h++)
            for (int64_t i = 0; i < S1; i++) {
                int64_t kv = h / G;
                double m = -DBL_MAX;
                for (int64_t j = 0; j < S2; j++) {
                    double s = 0;
                    for (int64_t d = 0; d < D; d++)
                        s += (double)Q[at(q, l, b, h, i, d)] * (double)K[at(k, l, b, kv, j, d)];
                    x[j] = (double)(float)s * scale; /* fp32 scores, as the operator accumulates them */
                    if (x[j] > m) m = x[j];
                }
                double sum = 0;
                for (int64_t d = 0; d < Dv; d++) acc[d] = 0;
                for (int64_t j = 0; j < S2; j++) {
                    double e = exp(x[j] - m);
                    sum += e;
                    for (int64_t d = 0; d < Dv; d++) acc[d] += e * (double)V[at(v, l, b, kv, j, d)];
                }
                for (int64_t d = 0; d < Dv; d++) O[at(o, l, b, h, i, d)] = S2 ? (float)(acc[d] / sum) : 0.0f;
                /* softmax_max / softmax_sum: [B,N1,S1,8], 8 identical copies. */
                for (int64_t c = 0; c < 8; c++) {
                    int64_t off = b * mx->strides[0] + h * mx->strides[1] + i * mx->strides[2] + c * mx->strides[3];
                    M[off] = S2 ? (float)m : -FLT_MAX;
                    off = b * sm->strides[0] + h * sm->strides[1] + i * sm->strides[2] + c * sm->strides[3];
                    L[off] = S2 ? (float)sum : FLT_MAX;
                }
            }
    free(x);
    free(acc);
    return FR_OK;
}

static const fr_plugin kPlugin = {
    .abi_version = FR_PLUGIN_ABI_VERSION,
    .name = "example-fp32",
    .fwd = example_fwd,
    .bwd = NULL, /* backward cases are SKIP */
    .ctx = NULL,
};

FR_API const fr_plugin *flashref_plugin_v1(void);
FR_API const fr_plugin *flashref_plugin_v1(void) { return &kPlugin; }
