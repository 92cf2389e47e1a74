/* Helpers of the test kit (tests/common, in fr_testkit) that several test folders need.
 *   fr_test_cli(exe, out, fmt, ...)  runs `'exe' ARGS` (ARGS from fmt) with stdout and stderr into the file out
 *                                    (NULL: discarded), prints "[rc N] command", returns the exit status (-1 when
 *                                    the command did not exit normally).
 *   fr_test_bwd_inputs(...)          the backward's inputs: the forward's inputs plus dy, attention_in and the
 *                                    stored softmax_max / softmax_sum.
 *   fr_test_file_contains(dir, name, s)  whether the file dir/name (its first 4 MiB) contains the string s; false
 *                                    when it cannot be read.
 *   fr_test_rm_rf(path)              removes path and, for a folder, everything in it (links not followed).
 *   fr_test_transposed(base)         fills base[12] with 0..11 (a contiguous fp32 [3, 4] array) and returns its
 *                                    transpose: a view of shape [4, 3], strides {1, 4}. */
#ifndef FR_TESTS_COMMON_KIT_H
#define FR_TESTS_COMMON_KIT_H

#include "flashref.h"

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int fr_test_cli(const char *exe, const char *out, const char *fmt, ...);
fr_bwd_inputs fr_test_bwd_inputs(const fr_fwd_inputs *fwd, fr_tensor dy, fr_tensor attention_in, fr_tensor smax,
                                 fr_tensor ssum);
bool fr_test_file_contains(const char *dir, const char *name, const char *s);
void fr_test_rm_rf(const char *path);
/* static inline: the kit is linked after the library, so its compiled part calls no library function */
static inline fr_tensor fr_test_transposed(float base[12]) {
    for (int k = 0; k < 12; k++) base[k] = (float)k;
    int64_t sh[2] = {4, 3};
    fr_tensor v = fr_tensor_make(FR_F32, base, 2, sh);
    v.strides[0] = 1;
    v.strides[1] = 4;
    return v;
}

#endif
