/* Helpers shared by the io tests: whole-file read/write, tensor comparison, temp cleanup (CHECK and the seeded
 * generator are the test kit's: common/check.h, common/seed.h). */
#ifndef FR_TESTS_IO_TEST_UTIL_H
#define FR_TESTS_IO_TEST_UTIL_H

#include "common/check.h"
#include "common/seed.h"
#include "flashref.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_OK(call, e)                                                                                             \
    do {                                                                                                              \
        fr_status st_ = (call);                                                                                       \
        CHECK(st_ == FR_OK, "%s -> %s: %s", #call, fr_status_name(st_), (e).msg);                                     \
    } while (0)

/* Same dtype, shape and bytes (b contiguous; a contiguous too). */
static inline bool same_tensor(const fr_tensor *a, const fr_tensor *b) {
    if (a->dtype != b->dtype || a->ndim != b->ndim) return false;
    for (int k = 0; k < a->ndim; k++)
        if (a->shape[k] != b->shape[k]) return false;
    int64_t n = fr_tensor_numel(a);
    if (n == 0) return true;
    return a->data && b->data && !memcmp(a->data, b->data, (size_t)n * fr_dtype_size(a->dtype));
}

static inline char *read_whole(const char *path, size_t *len) {
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) b[n] = 0;
    *len = (size_t)n;
    return b;
}

static inline void write_whole(const char *path, const void *b, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, len, f) != len) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
}

static inline int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}
static inline void remove_tree(const char *dir) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static inline int io_report(const char *name) { return fr_test_exit(name); }

/* The opening of an io test: *seed from the kit (printed under name) and a fresh scratch directory made from the
 * template tmp ("/tmp/..._XXXXXX"). False, after perror, when the directory cannot be made. */
static inline bool io_test_open(const char *name, uint64_t *seed, char *tmp) {
    *seed = fr_test_seed(0, NULL, name);
    if (mkdtemp(tmp)) return true;
    perror("mkdtemp");
    return false;
}

#endif
