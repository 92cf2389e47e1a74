/* libFuzzer: the torch.save reader (io/torchpt.h) on arbitrary bytes, seeded with files torch wrote. What reads must
 * read the same through the two-step path (description, then data) and hold exactly numel x element size bytes. */
#include "io/torchpt.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fr_tensor t;
    fr_error err;
    if (fr_pt_read_mem(data, size, &t, "fuzz", &err) != FR_OK) {
        if (!err.msg[0]) abort(); /* every refusal says why */
        return 0;
    }
    fr_pt_info info;
    if (fr_pt_info_mem(data, size, &info, "fuzz", &err) != FR_OK || info.dtype != t.dtype || info.ndim != t.ndim ||
        memcmp(info.shape, t.shape, sizeof(int64_t) * (size_t)t.ndim))
        abort();
    int64_t n = fr_tensor_numel(&t);
    if (n < 0 || n * (int64_t)fr_dtype_size(t.dtype) != info.data_bytes ||
        info.data_offset + info.data_bytes > (int64_t)size)
        abort();
    if (n > 0 && memcmp(t.data, data + info.data_offset, (size_t)info.data_bytes)) abort();
    free(t.data);
    return 0;
}
