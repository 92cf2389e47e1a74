/* libFuzzer: the .npy reader on arbitrary bytes. Whatever parses must also survive a write/read round trip
 * unchanged (the reader and writer agree), for the native dtype and for a bit-pattern dtype chosen by the input. */
#include "io/npy.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const fr_dtype wants[] = {FR_DT_NONE, FR_BF16, FR_E4M3FN, FR_HIF8, FR_F32, FR_U8, FR_BOOL, FR_I64};
    fr_dtype want = wants[size ? data[size - 1] % (sizeof wants / sizeof wants[0]) : 0];
    fr_tensor t;
    fr_error err;
    if (fr_npy_read_mem(data, size, want, &t, "fuzz", &err) != FR_OK) return 0;
    void *buf;
    size_t len;
    if (fr_npy_write_mem(&t, 0, &buf, &len, &err) != FR_OK) abort();
    fr_tensor r;
    if (fr_npy_read_mem(buf, len, t.dtype, &r, "fuzz", &err) != FR_OK) abort();
    int64_t n = fr_tensor_numel(&t);
    if (r.dtype != t.dtype || r.ndim != t.ndim || memcmp(r.shape, t.shape, sizeof t.shape) ||
        (n > 0 && memcmp(r.data, t.data, (size_t)n * fr_dtype_size(t.dtype))))
        abort();
    free(r.data);
    free(buf);
    free(t.data);
    return 0;
}
