/* The failure check the C tests share: CHECK(cond, fmt, ...) prints file, line, the condition and a message when
 * cond is false and counts it in `failures`; a test's main returns non-zero when failures != 0. */
#ifndef FR_TESTS_COMMON_CHECK_H
#define FR_TESTS_COMMON_CHECK_H

#include <stdio.h>

static int failures = 0;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            failures++;                                                                                                \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                                     \
            printf(__VA_ARGS__);                                                                                       \
            printf("\n");                                                                                              \
        }                                                                                                              \
    } while (0)

#endif
