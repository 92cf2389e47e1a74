/* The one failure check of the C tests (tests/common, linked into every test as fr_testkit):
 *   CHECK(cond[, fmt, ...]) counts the check; when cond is false prints "FAIL file:line: cond: message" (the first
 *                          FR_TEST_MAX_PRINTED failures, then only counts) and counts the failure. The message is
 *                          optional (the condition is printed either way).
 *   CHECKED(cond[, fmt, ...]) the same, and yields cond, for a check that guards what follows it:
 *                          `if (!CHECKED(st == FR_OK, "fwd: %s", err.msg)) return;`. Its message's arguments are
 *                          evaluated with cond in no set order: pass values cond does not change, or buffers (err.msg)
 *                          that are read only once cond has run.
 *   fr_test_exit(name)     prints "name: PASS|FAIL (N of M checks failed)" and returns main's exit status.
 * A test's main ends with `return fr_test_exit("test_x");` (or reads `failures` itself). */
#ifndef FR_TESTS_COMMON_CHECK_H
#define FR_TESTS_COMMON_CHECK_H

#include <stdbool.h>

#define FR_TEST_MAX_PRINTED 50

extern int failures; /* failed checks so far, in this test process */
extern long checks;  /* checks made so far */

/* No format attribute: CHECK appends an empty string to every call so that the message can be left out. */
void fr_test_fail(const char *file, int line, const char *cond, const char *fmt, ...);
bool fr_test_checked(bool ok, const char *file, int line, const char *cond, const char *fmt, ...);
int fr_test_exit(const char *name);

#define CHECK(...) FR_CHECK_(__VA_ARGS__, "")
#define FR_CHECK_(cond, ...)                                                                                           \
    do {                                                                                                               \
        checks++;                                                                                                      \
        if (!(cond)) fr_test_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                                             \
    } while (0)

#define CHECKED(...) FR_CHECKED_(__VA_ARGS__, "")
#define FR_CHECKED_(cond, ...) fr_test_checked((cond) != 0, __FILE__, __LINE__, #cond, __VA_ARGS__)

#endif
