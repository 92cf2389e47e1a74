/* Portable packing and storing for the fused drivers: any input dtype and layout in, contiguous fp32 (or bf16
 * bits) tiles out; fp32 results out in any output dtype, rounded as the operator does (D3). */
#ifndef FR_KERNELS_LOAD_STORE_H
#define FR_KERNELS_LOAD_STORE_H

#include "core/problem.h"

/* dst[0..n) = elements off, off + s, ... of t (s = stride of t's last dim), exactly widened to fp32. */
void fr_kio_load_f32(const fr_tensor *t, int64_t off, int64_t n, float *dst);
/* Same for a bf16 tensor, as raw bits. */
void fr_kio_load_bf16(const fr_tensor *t, int64_t off, int64_t n, uint16_t *dst);
/* Elements off, off + s, ... of t = src[0..n), converted to t's dtype: fp32/fp64 exactly, fp16/bf16 half away from
 * zero saturating (D3), fp8 as the operator casts them. */
void fr_kio_store_f32(const fr_tensor *t, int64_t off, int64_t n, const float *src);
/* The 8 identical copies of a softmax_max / softmax_sum row starting at off. */
void fr_kio_store_stat(const fr_tensor *t, int64_t off, float v);
/* p[0..n) rounded in place to the values of dtype dt, as the operator casts P before P.V (spec 3 step 7): fp16/bf16
 * half away from zero, e4m3fn/e5m2 nearest even saturating, hif8 half away saturating; fp32 unchanged. */
void fr_kio_round_p(fr_dtype dt, int64_t n, float *p);
/* x[0..n) rounded in place to bf16 / fp16 values (dt), nearest even, saturating: the backward's casts of P and dS
 * in inner_precise = 1 (semantics-decisions.md D17); any other dt leaves x unchanged. */
void fr_kio_round_rne16(fr_dtype dt, int64_t n, float *x);

#endif
