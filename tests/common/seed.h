/* The one seeded generator of the C tests (tests/common, in fr_testkit): where a test's random inputs come from,
 * printed so that a failure can be rerun with the same draw.
 *   fr_test_seed(argc, argv, name)  argv[1] when given, else $FLASHREF_SEED, else a fixed default; printed as
 *                                   "name: seed N (rerun: name N)".
 *   fr_test_rand(&s)                splitmix64: the next 64 random bits of state s (any value is a valid state).
 *   fr_test_unif(&s), fr_test_sym(&s), fr_test_below(&s, n), fr_test_range(&s, lo, hi): uniform in [0, 1), in
 *                                   [-1, 1), integer in [0, n), integer in [lo, hi] (both ends included). */
#ifndef FR_TESTS_COMMON_SEED_H
#define FR_TESTS_COMMON_SEED_H

#include <stdint.h>

#define FR_TEST_DEFAULT_SEED 20261129u

uint64_t fr_test_seed(int argc, char **argv, const char *name);
uint64_t fr_test_rand(uint64_t *s);
double fr_test_unif(uint64_t *s);
double fr_test_sym(uint64_t *s);
int64_t fr_test_below(uint64_t *s, int64_t n);
int64_t fr_test_range(uint64_t *s, int64_t lo, int64_t hi);

#endif
