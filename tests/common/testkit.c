/* The test kit of the C tests (check.h, seed.h): compiled once into fr_testkit, linked into every test. */
#include "common/check.h"
#include "common/seed.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int failures = 0;
long checks = 0;

void fr_test_fail(const char *file, int line, const char *cond, const char *fmt, ...) {
    if (++failures > FR_TEST_MAX_PRINTED) return;
    printf("FAIL %s:%d: %s: ", file, line, cond);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (failures == FR_TEST_MAX_PRINTED) printf("(further failures are counted, not printed)\n");
    fflush(stdout);
}

int fr_test_exit(const char *name) {
    printf("%s: %s (%d of %ld checks failed)\n", name, failures ? "FAIL" : "PASS", failures, checks);
    return failures ? 1 : 0;
}

uint64_t fr_test_seed(int argc, char **argv, const char *name) {
    const char *s = argc > 1 ? argv[1] : getenv("FLASHREF_SEED");
    uint64_t seed = s && *s ? strtoull(s, NULL, 0) : FR_TEST_DEFAULT_SEED;
    printf("%s: seed %llu (rerun: %s %llu)\n", name, (unsigned long long)seed, name, (unsigned long long)seed);
    return seed;
}

uint64_t fr_test_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double fr_test_unif(uint64_t *s) { return (double)(fr_test_rand(s) >> 11) * 0x1.0p-53; }

double fr_test_sym(uint64_t *s) { return 2.0 * fr_test_unif(s) - 1.0; }

int64_t fr_test_below(uint64_t *s, int64_t n) { return n <= 0 ? 0 : (int64_t)(fr_test_rand(s) % (uint64_t)n); }
