/* Internal helpers shared by every layer: error reporting, checked 64-bit arithmetic, element access. */
#ifndef FR_CORE_CORE_H
#define FR_CORE_CORE_H

#include "flashref.h"

#include <stdarg.h>

/* Sets err (when non-NULL) to status and a printf-formatted message; returns status. */
fr_status fr_fail(fr_error *err, fr_status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Clears err to FR_OK. */
void fr_error_clear(fr_error *err);

/* Checked arithmetic: return false on int64 overflow (result untouched). */
static inline bool fr_mul_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }
static inline bool fr_add_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_add_overflow(a, b, r); }

/* Offset in elements of the element at idx[0..ndim-1] (no bounds check). */
static inline int64_t fr_tensor_offset(const fr_tensor *t, const int64_t *idx) {
    int64_t off = 0;
    for (int k = 0; k < t->ndim; k++) off += idx[k] * t->strides[k];
    return off;
}

/* Offset in elements of the element with C-order linear index k (row-major over the shape, any strides; no bounds
 * check). A zero-sized dimension counts as 1 so that the offset stays defined. */
static inline int64_t fr_tensor_offset_linear(const fr_tensor *t, int64_t k) {
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t n = t->shape[d] > 0 ? t->shape[d] : 1;
        off += (k % n) * t->strides[d];
        k /= n;
    }
    return off;
}

/* Same number of dimensions and the same extent in each (dtype and strides not compared). */
static inline bool fr_tensor_same_shape(const fr_tensor *a, const fr_tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return false;
    return true;
}

/* Loads element `off` (in elements from data) of a tensor of any numeric dtype, exactly widened to double.
 * bool/uint8 load as 0/1 and 0..255; fp8/hif8/bf16/fp16 are decoded exactly. */
double fr_load_f64(const fr_tensor *t, int64_t off);
/* Stores v into element `off`, converting to the tensor's dtype: fp16/bf16 with round-half-away saturating
 * (spec D3 CAST_ROUND for outputs), fp32 by C conversion (round to nearest even), fp64 as is. */
void fr_store_f64(const fr_tensor *t, int64_t off, double v);

#endif
