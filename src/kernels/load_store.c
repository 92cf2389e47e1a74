/* Packing / storing for the fused drivers (see load_store.h). */
#include "kernels/load_store.h"

#include "core/core.h"
#include "semantics/dtype_inline.h"

#include <string.h>

void fr_kio_load_f32(const fr_tensor *t, int64_t off, int64_t n, float *dst) {
    int64_t s = t->strides[t->ndim - 1];
    switch (t->dtype) {
    case FR_F32: {
        const float *x = (const float *)t->data + off;
        if (s == 1) memcpy(dst, x, (size_t)n * sizeof(float));
        else
            for (int64_t d = 0; d < n; d++) dst[d] = x[d * s];
        return;
    }
    case FR_BF16: {
        const uint16_t *x = (const uint16_t *)t->data + off;
        if (s == 1) /* the common case, a loop the compiler vectorises (the backward packs every query tile so) */
            for (int64_t d = 0; d < n; d++) dst[d] = fr_dec_bf16(x[d]);
        else
            for (int64_t d = 0; d < n; d++) dst[d] = fr_dec_bf16(x[d * s]);
        return;
    }
    case FR_F16: {
        const uint16_t *x = (const uint16_t *)t->data + off;
        for (int64_t d = 0; d < n; d++) dst[d] = fr_dec_f16(x[d * s]);
        return;
    }
    default:
        for (int64_t d = 0; d < n; d++) dst[d] = (float)fr_load_f64(t, off + d * s);
        return;
    }
}

void fr_kio_load_bf16(const fr_tensor *t, int64_t off, int64_t n, uint16_t *dst) {
    int64_t s = t->strides[t->ndim - 1];
    const uint16_t *x = (const uint16_t *)t->data + off;
    if (s == 1) memcpy(dst, x, (size_t)n * sizeof(uint16_t));
    else
        for (int64_t d = 0; d < n; d++) dst[d] = x[d * s];
}

void fr_kio_store_f32(const fr_tensor *t, int64_t off, int64_t n, const float *src) {
    int64_t s = t->strides[t->ndim - 1];
    switch (t->dtype) {
    case FR_F32: {
        float *y = (float *)t->data + off;
        for (int64_t d = 0; d < n; d++) y[d * s] = src[d];
        return;
    }
    case FR_F64: {
        double *y = (double *)t->data + off;
        for (int64_t d = 0; d < n; d++) y[d * s] = (double)src[d];
        return;
    }
    case FR_BF16: {
        uint16_t *y = (uint16_t *)t->data + off;
        for (int64_t d = 0; d < n; d++) y[d * s] = fr_enc_bf16_away(src[d]);
        return;
    }
    case FR_F16: {
        uint16_t *y = (uint16_t *)t->data + off;
        for (int64_t d = 0; d < n; d++) y[d * s] = fr_enc_f16_away(src[d]);
        return;
    }
    default:
        for (int64_t d = 0; d < n; d++) fr_store_f64(t, off + d * s, (double)src[d]);
        return;
    }
}

void fr_kio_store_stat(const fr_tensor *t, int64_t off, float v) {
    if (!fr_tensor_present(t)) return;
    int64_t s = t->strides[t->ndim - 1];
    if (t->dtype == FR_F32) {
        for (int c = 0; c < 8; c++) ((float *)t->data)[off + c * s] = v;
    } else {
        for (int c = 0; c < 8; c++) fr_store_f64(t, off + c * s, (double)v);
    }
}

void fr_kio_round_p(fr_dtype dt, int64_t n, float *p) {
    switch (dt) {
    case FR_BF16:
        for (int64_t j = 0; j < n; j++) p[j] = fr_round_bf16_away(p[j]);
        return;
    case FR_F16:
        for (int64_t j = 0; j < n; j++) p[j] = fr_round_f16_away(p[j]);
        return;
    case FR_E4M3FN:
        for (int64_t j = 0; j < n; j++) p[j] = fr_e4m3fn_to_f32(fr_f32_to_e4m3fn(p[j], FR_ROUND_NEAREST_EVEN, FR_SAT));
        return;
    case FR_E5M2:
        for (int64_t j = 0; j < n; j++) p[j] = fr_e5m2_to_f32(fr_f32_to_e5m2(p[j], FR_ROUND_NEAREST_EVEN, FR_SAT));
        return;
    case FR_HIF8:
        for (int64_t j = 0; j < n; j++) p[j] = fr_hif8_to_f32(fr_f32_to_hif8(p[j], FR_ROUND_HALF_AWAY, FR_SAT));
        return;
    default: return;
    }
}

void fr_kio_round_rne16(fr_dtype dt, int64_t n, float *x) {
    if (dt == FR_BF16)
        for (int64_t j = 0; j < n; j++) x[j] = fr_round_bf16_rne(x[j]);
    else if (dt == FR_F16)
        for (int64_t j = 0; j < n; j++) x[j] = fr_round_f16_rne(x[j]);
}
