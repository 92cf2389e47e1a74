/* Element load/store for any dtype, exactly widened to double (used by the golden and by I/O). */
#include "core/core.h"

#include <math.h>

double fr_load_f64(const fr_tensor *t, int64_t off) {
    const void *d = t->data;
    switch (t->dtype) {
    case FR_F64: return ((const double *)d)[off];
    case FR_F32: return (double)((const float *)d)[off];
    case FR_F16: return (double)fr_f16_to_f32(((const uint16_t *)d)[off]);
    case FR_BF16: return (double)fr_bf16_to_f32(((const uint16_t *)d)[off]);
    case FR_E4M3FN: return (double)fr_e4m3fn_to_f32(((const uint8_t *)d)[off]);
    case FR_E5M2: return (double)fr_e5m2_to_f32(((const uint8_t *)d)[off]);
    case FR_HIF8: return (double)fr_hif8_to_f32(((const uint8_t *)d)[off]);
    case FR_I32: return (double)((const int32_t *)d)[off];
    case FR_I64: return (double)((const int64_t *)d)[off];
    case FR_U8: return (double)((const uint8_t *)d)[off];
    case FR_BOOL: return ((const uint8_t *)d)[off] ? 1.0 : 0.0;
    default: return NAN;
    }
}

void fr_store_f64(const fr_tensor *t, int64_t off, double v) {
    void *d = t->data;
    switch (t->dtype) {
    case FR_F64: ((double *)d)[off] = v; break;
    case FR_F32: ((float *)d)[off] = (float)v; break;
    /* Outputs of the operator are rounded half away from zero, saturating (spec D3). The double is first rounded to
     * fp32 (as the kernels hold fp32), then to the output format. */
    case FR_F16: ((uint16_t *)d)[off] = fr_f32_to_f16((float)v, FR_ROUND_HALF_AWAY, FR_SAT); break;
    case FR_BF16: ((uint16_t *)d)[off] = fr_f32_to_bf16((float)v, FR_ROUND_HALF_AWAY, FR_SAT); break;
    case FR_E4M3FN: ((uint8_t *)d)[off] = fr_f32_to_e4m3fn((float)v, FR_ROUND_NEAREST_EVEN, FR_SAT); break;
    case FR_E5M2: ((uint8_t *)d)[off] = fr_f32_to_e5m2((float)v, FR_ROUND_NEAREST_EVEN, FR_SAT); break;
    case FR_HIF8: ((uint8_t *)d)[off] = fr_f32_to_hif8((float)v, FR_ROUND_HALF_AWAY, FR_SAT); break;
    case FR_I32: ((int32_t *)d)[off] = (int32_t)v; break;
    case FR_I64: ((int64_t *)d)[off] = (int64_t)v; break;
    case FR_U8: ((uint8_t *)d)[off] = (uint8_t)v; break;
    case FR_BOOL: ((uint8_t *)d)[off] = v != 0.0; break;
    default: break;
    }
}
