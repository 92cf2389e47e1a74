/* fr_tensor_offset_linear (core.h), the C-order walk the judge and the diagnosis use to read tensors of any strides:
 * on a transposed view the linear index k must land on the element a contiguous copy would hold at k. */
#include "common/check.h"
#include "common/kit.h"
#include "core/core.h"

#include <stdio.h>

int main(void) {
    /* base: a contiguous [3, 4] array holding 0..11; view: its transpose, shape [4, 3], strides {1, 4}. */
    float base[12];
    fr_tensor v = fr_test_transposed(base);
    int64_t sh[2] = {4, 3};
    for (int64_t i = 0; i < 4; i++)
        for (int64_t j = 0; j < 3; j++) {
            int64_t k = i * 3 + j, off = fr_tensor_offset_linear(&v, k);
            CHECK(off == j * 4 + i, "k %lld: offset %lld, want %lld", (long long)k, (long long)off,
                  (long long)(j * 4 + i));
        }
    /* Contiguous: the offset is the index itself. */
    fr_tensor c = fr_tensor_make(FR_F32, base, 2, sh);
    for (int64_t k = 0; k < 12; k++)
        CHECK(fr_tensor_offset_linear(&c, k) == k, "contiguous k %lld", (long long)k);
    /* A zero-sized dimension counts as 1: offset 0 for index 0, no division by zero. */
    int64_t z[2] = {0, 3};
    fr_tensor e = fr_tensor_make(FR_F32, base, 2, z);
    CHECK(fr_tensor_offset_linear(&e, 0) == 0, "empty tensor, index 0");
    return fr_test_exit("test_tensor_offset");
}
