/* Tensor views, dtypes and layouts: names, sizes, construction. */
#include "core/core.h"

#include <string.h>
#include <strings.h>

static const struct {
    const char *name;
    size_t size;
} dtype_info[FR_DTYPE_COUNT] = {
    [FR_DT_NONE] = {"none", 0}, [FR_F64] = {"fp64", 8},   [FR_F32] = {"fp32", 4},     [FR_F16] = {"fp16", 2},
    [FR_BF16] = {"bf16", 2},    [FR_E4M3FN] = {"e4m3fn", 1}, [FR_E5M2] = {"e5m2", 1}, [FR_HIF8] = {"hif8", 1},
    [FR_I32] = {"int32", 4},    [FR_I64] = {"int64", 8},  [FR_U8] = {"uint8", 1},     [FR_BOOL] = {"bool", 1},
};

const char *fr_dtype_name(fr_dtype t) {
    if ((unsigned)t >= FR_DTYPE_COUNT) return "invalid";
    return dtype_info[t].name;
}

size_t fr_dtype_size(fr_dtype t) {
    if ((unsigned)t >= FR_DTYPE_COUNT) return 0;
    return dtype_info[t].size;
}

fr_dtype fr_dtype_from_name(const char *name) {
    if (!name) return FR_DT_NONE;
    for (int t = 1; t < FR_DTYPE_COUNT; t++)
        if (strcmp(name, dtype_info[t].name) == 0) return (fr_dtype)t;
    /* common aliases */
    if (!strcmp(name, "float32")) return FR_F32;
    if (!strcmp(name, "float16")) return FR_F16;
    if (!strcmp(name, "bfloat16")) return FR_BF16;
    if (!strcmp(name, "float64")) return FR_F64;
    if (!strcmp(name, "float8_e4m3fn")) return FR_E4M3FN;
    if (!strcmp(name, "float8_e5m2")) return FR_E5M2;
    if (!strcmp(name, "hifloat8")) return FR_HIF8;
    return FR_DT_NONE;
}

static const char *const layout_names[] = {"", "BSH", "SBH", "BSND", "BNSD", "TND"};

const char *fr_layout_name(fr_layout l) {
    if ((unsigned)l > FR_TND) return "invalid";
    return l == FR_LAYOUT_NONE ? "none" : layout_names[l];
}

fr_layout fr_layout_from_name(const char *name) {
    if (!name) return FR_LAYOUT_NONE;
    for (int l = FR_BSH; l <= FR_TND; l++)
        if (strcasecmp(name, layout_names[l]) == 0) return (fr_layout)l;
    return FR_LAYOUT_NONE;
}

/* Alike tests/core/test_validate.c:mk: kept apart because that test builds views of huge shapes with saturating stride
 * products, which this constructor does not check. */
fr_tensor fr_tensor_make(fr_dtype t, void *data, int ndim, const int64_t *shape) {
    fr_tensor x;
    memset(&x, 0, sizeof x);
    if (ndim < 0 || ndim > FR_MAX_DIMS) return x;
    x.dtype = t;
    x.ndim = ndim;
    x.data = data;
    int64_t st = 1;
    for (int k = ndim - 1; k >= 0; k--) {
        x.shape[k] = shape[k];
        x.strides[k] = st;
        st *= shape[k] > 0 ? shape[k] : 1;
    }
    return x;
}

bool fr_tensor_present(const fr_tensor *t) { return t && t->dtype != FR_DT_NONE; }

int64_t fr_tensor_numel(const fr_tensor *t) {
    if (!t || t->dtype == FR_DT_NONE) return 0;
    int64_t n = 1;
    for (int k = 0; k < t->ndim; k++) {
        if (t->shape[k] < 0) return -1;
        if (!fr_mul_ok(n, t->shape[k], &n)) return -1;
    }
    return n;
}

bool fr_tensor_is_contiguous(const fr_tensor *t) {
    int64_t st = 1;
    for (int k = t->ndim - 1; k >= 0; k--) {
        if (t->shape[k] != 1 && t->strides[k] != st) return false;
        st *= t->shape[k];
    }
    return true;
}
