/* .npy interop with numpy itself: numpy reads every dtype / version flashref writes (values checked), and flashref
 * reads what numpy writes (np.save v1, write_array v2, 0-d, empty, int8) and rejects numpy's Fortran-order and
 * big-endian files. Needs FLASHREF_PYTHON (a python with numpy; `make test` sets it); exits 77 (SKIP) without.
 * argv[1]: tests/io/npy_interop.py. Patterns are those of npy_interop.py. */
#define _XOPEN_SOURCE 700
#include "io/npy.h"

#include "core/core.h"
#include "common/kit.h"
#include "io_test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static const struct {
    const char *kind;
    fr_dtype dt;
} kinds[] = {{"f8", FR_F64}, {"f4", FR_F32}, {"f2", FR_F16}, {"i4", FR_I32},
             {"i8", FR_I64}, {"u1", FR_U8},  {"b1", FR_BOOL}, {"u2", FR_BF16}};

/* Element i of the pattern, as the fr_dtype stores it (written with fr_store_f64 except bf16 / ints). */
static void put(fr_tensor *t, int64_t i) {
    double f = (double)(i % 17) - 8 + 0.5;
    switch (t->dtype) {
    case FR_I32: ((int32_t *)t->data)[i] = (int32_t)(i * 7 - 3); break;
    case FR_I64: ((int64_t *)t->data)[i] = i * 1000003 - 5; break;
    case FR_U8: ((uint8_t *)t->data)[i] = (uint8_t)(i * 13 % 256); break;
    case FR_BOOL: ((uint8_t *)t->data)[i] = i % 3 == 0; break;
    default: fr_store_f64(t, i, f); break; /* f64 f32 f16 bf16: all exact */
    }
}

static int sh(const char *py, const char *script, const char *mode, const char *dir) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' '%s' %s '%s'", py, script, mode, dir);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int main(int argc, char **argv) {
    const char *py = getenv("FLASHREF_PYTHON");
    char probe[1024];
    snprintf(probe, sizeof probe, "'%s' -c 'import numpy' >/dev/null 2>&1", py ? py : "");
    if (argc < 2 || !py || !*py || system(probe) != 0) {
        printf("npy_numpy_interop: SKIP (FLASHREF_PYTHON unset or without numpy)\n");
        return 77;
    }
    char tmp[] = "/tmp/fr_io_np_XXXXXX";
    if (!mkdtemp(tmp)) return 1;
    char path[600];
    fr_error e;
    int64_t shape[3] = {2, 3, 5};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        fr_tensor t = fr_tensor_make(kinds[k].dt, malloc(30 * 8), 3, shape);
        for (int64_t i = 0; i < 30; i++) put(&t, i);
        for (int v = 1; v <= 2; v++) {
            snprintf(path, sizeof path, "%s/c_%s_v%d.npy", tmp, kinds[k].kind, v);
            CHECK_OK(fr_npy_write_file(path, &t, v, &e), e);
        }
        free(t.data);
    }
    float m[12];
    fr_tensor tr = fr_test_transposed(m); /* the transpose of a [3, 4] array holding 0..11 */
    snprintf(path, sizeof path, "%s/c_transposed.npy", tmp);
    CHECK_OK(fr_npy_write_file(path, &tr, 0, &e), e);
    double sc = 2.5;
    fr_tensor s0 = fr_tensor_make(FR_F64, &sc, 0, NULL);
    snprintf(path, sizeof path, "%s/c_scalar.npy", tmp);
    CHECK_OK(fr_npy_write_file(path, &s0, 0, &e), e);
    CHECK(sh(py, argv[1], "check", tmp) == 0, "numpy rejected or misread files flashref wrote");

    CHECK(sh(py, argv[1], "write", tmp) == 0, "numpy could not write its files");
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (int v = 1; v <= 2; v++) {
            snprintf(path, sizeof path, "%s/np_%s_v%d.npy", tmp, kinds[k].kind, v);
            fr_tensor r;
            fr_status st = fr_npy_read_file(path, kinds[k].dt, &r, &e);
            CHECK(st == FR_OK, "%s: %s", path, e.msg);
            if (st != FR_OK) continue;
            fr_tensor w = fr_tensor_make(kinds[k].dt, malloc(30 * 8), 3, shape);
            for (int64_t i = 0; i < 30; i++) put(&w, i);
            CHECK(same_tensor(&w, &r), "%s: values differ from the pattern", path);
            free(w.data);
            free(r.data);
        }
    fr_tensor r;
    snprintf(path, sizeof path, "%s/np_fortran.npy", tmp);
    CHECK(fr_npy_read_file(path, FR_F32, &r, &e) == FR_E_FORMAT && strstr(e.msg, "fortran"), "fortran: %s", e.msg);
    snprintf(path, sizeof path, "%s/np_bigendian.npy", tmp);
    CHECK(fr_npy_read_file(path, FR_F32, &r, &e) == FR_E_FORMAT && strstr(e.msg, "big-endian"), "BE: %s", e.msg);
    snprintf(path, sizeof path, "%s/np_scalar.npy", tmp);
    CHECK(fr_npy_read_file(path, FR_F64, &r, &e) == FR_OK && r.ndim == 0 && *(double *)r.data == 2.5, "0-d: %s",
          e.msg);
    free(r.data);
    snprintf(path, sizeof path, "%s/np_empty.npy", tmp);
    CHECK(fr_npy_read_file(path, FR_F32, &r, &e) == FR_OK && r.ndim == 2 && r.shape[0] == 0 && r.shape[1] == 3,
          "empty: %s", e.msg);
    free(r.data);
    snprintf(path, sizeof path, "%s/np_int8.npy", tmp);
    CHECK(fr_npy_read_file(path, FR_E4M3FN, &r, &e) == FR_OK && ((uint8_t *)r.data)[0] == 0xfd,
          "int8 as fp8 bit patterns: %s", e.msg);
    free(r.data);
    remove_tree(tmp);
    return io_report("npy_numpy_interop");
}
