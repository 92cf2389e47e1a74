/* The test kit of the C tests (check.h, seed.h, kit.h): compiled once into fr_testkit, linked into every test. */
#include "common/check.h"
#include "common/kit.h"
#include "common/seed.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int failures = 0;
long checks = 0;

static void vfail(const char *file, int line, const char *cond, const char *fmt, va_list ap) {
    if (++failures > FR_TEST_MAX_PRINTED) return;
    printf("FAIL %s:%d: %s: ", file, line, cond);
    vprintf(fmt, ap);
    printf("\n");
    if (failures == FR_TEST_MAX_PRINTED) printf("(further failures are counted, not printed)\n");
    fflush(stdout);
}

void fr_test_fail(const char *file, int line, const char *cond, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfail(file, line, cond, fmt, ap);
    va_end(ap);
}

bool fr_test_checked(bool ok, const char *file, int line, const char *cond, const char *fmt, ...) {
    checks++;
    if (ok) return true;
    va_list ap;
    va_start(ap, fmt);
    vfail(file, line, cond, fmt, ap);
    va_end(ap);
    return false;
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

int64_t fr_test_range(uint64_t *s, int64_t lo, int64_t hi) { return lo + fr_test_below(s, hi - lo + 1); }

int fr_test_cli(const char *exe, const char *out, const char *fmt, ...) {
    char cmd[4096];
    int n = snprintf(cmd, sizeof cmd, "'%s' ", exe);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof cmd) vsnprintf(cmd + n, sizeof cmd - (size_t)n, fmt, ap);
    va_end(ap);
    size_t l = strlen(cmd);
    snprintf(cmd + l, sizeof cmd - l, out ? " > '%s' 2>&1" : " >/dev/null 2>&1", out);
    int rc = system(cmd);
    int st = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    printf("[rc %d] %s\n", st, cmd);
    return st;
}

fr_bwd_inputs fr_test_bwd_inputs(const fr_fwd_inputs *fwd, fr_tensor dy, fr_tensor attention_in, fr_tensor smax,
                                 fr_tensor ssum) {
    fr_bwd_inputs b;
    memset(&b, 0, sizeof b);
    b.fwd = *fwd;
    b.dy = dy;
    b.attention_in = attention_in;
    b.softmax_max = smax;
    b.softmax_sum = ssum;
    return b;
}

bool fr_test_file_contains(const char *dir, const char *name, const char *s) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "rb");
    if (!f) return false;
    static char buf[1 << 22];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strstr(buf, s) != NULL;
}

void fr_test_rm_rf(const char *p) {
    struct stat sb;
    if (lstat(p, &sb) != 0) return;
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(p);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char q[4200];
            snprintf(q, sizeof q, "%.2000s/%.2000s", p, e->d_name);
            fr_test_rm_rf(q);
        }
        if (d) closedir(d);
        rmdir(p);
    } else {
        unlink(p);
    }
}
