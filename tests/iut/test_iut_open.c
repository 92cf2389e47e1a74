/* Opening an implementation (src/verify/iut/iut_open.c): every engine spec, right and wrong (fast:ISA, emulate:PRESET,
 * golden, a name that only starts like an engine), an ISA this CPU lacks (FR_E_NOT_AVAILABLE), the disk IUT (no
 * outputs: SKIP; outputs as written read back exactly; an output of the wrong shape handed to the judge as its header
 * while the others are read; a broken file beside it), and the given-outputs IUT (none given: SKIP; another shape
 * copied, an absent output left absent).
 *   usage: test_iut_open [seed] */
#define _XOPEN_SOURCE 700
#include "iut_testutil.h"
#include "core/core.h"
#include "core/isa.h"
#include "io/npy.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_specs(void) {
    static const struct {
        const char *spec;
        fr_status st;
        const char *msg;
    } rows[] = {
        {"golden", FR_OK, ""},
        {"fast", FR_OK, ""},
        {"fast:auto", FR_OK, ""},
        {"fast:scalar", FR_OK, ""},
        {"emulate", FR_OK, ""},
        {"emulate:ascend-a2", FR_OK, ""},
        {"golden:x", FR_E_INVALID_ARG, "--impl: 'golden:x' is not an engine"},
        {"goldenx", FR_E_INVALID_ARG, "--impl: 'goldenx' is not an engine"},
        {"fastest", FR_E_INVALID_ARG, "--impl: 'fastest' is not an engine"},
        {"emulated", FR_E_INVALID_ARG, "--impl: 'emulated' is not an engine"},
        {"fast:avx3", FR_E_INVALID_ARG, "--impl: fast:avx3: ISA 'avx3' is not a variant (scalar, avx2"},
        {"emulate:a3", FR_E_INVALID_ARG, "numerics preset: unknown name 'a3'"},
        {"cuda", FR_E_INVALID_ARG, "--impl: 'cuda': expected fast[:ISA], golden, emulate[:PRESET], plugin:PATH.so"},
        {"", FR_E_INVALID_ARG, "--impl: '': expected"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        fr_iut *iut = (fr_iut *)&rows; /* must be reset to NULL on failure */
        fr_error err;
        memset(&err, 0, sizeof err);
        fr_status st = fr_iut_open(rows[i].spec, &iut, &err);
        CHECK(st == rows[i].st, "'%s': %s (%s), expected %s", rows[i].spec, fr_status_name(st), err.msg,
              fr_status_name(rows[i].st));
        if (st == FR_OK) {
            CHECK(fr_iut_get_kind(iut) == FR_IUT_ENGINE && !strcmp(fr_iut_name(iut), rows[i].spec) &&
                      fr_iut_is_builtin(iut), "'%s': an engine named by its spec", rows[i].spec);
            fr_iut_close(iut);
        } else {
            CHECK(iut == NULL && strstr(err.msg, rows[i].msg), "'%s': '%s' lacks '%s' (or *out not NULL)",
                  rows[i].spec, err.msg, rows[i].msg);
        }
    }
    /* every ISA variant: opened where this CPU has it, FR_E_NOT_AVAILABLE (not an argument error) where it lacks it */
    for (int k = 0; k < fr_isa_count; k++) {
        char spec[64];
        snprintf(spec, sizeof spec, "fast:%s", fr_isa_name(fr_isa_list[k]));
        fr_iut *iut = NULL;
        fr_error err;
        fr_status st = fr_iut_open(spec, &iut, &err);
        fr_status want = fr_isa_available(fr_isa_list[k]) ? FR_OK : FR_E_NOT_AVAILABLE;
        CHECK(st == want, "%s: %s (%s), expected %s", spec, fr_status_name(st), err.msg, fr_status_name(want));
        if (st != FR_OK) CHECK(iut == NULL && err.msg[0], "%s: no message", spec);
        fr_iut_close(iut);
    }
    fr_iut *iut = NULL;
    fr_error err;
    CHECK(fr_iut_open(NULL, &iut, &err) == FR_E_NULL && fr_iut_open("fast", NULL, &err) == FR_E_NULL, "NULL args");
    CHECK(fr_iut_open_disk(NULL, &err) == FR_E_NULL && fr_iut_open_given("g", NULL, &err) == FR_E_NULL,
          "NULL out");
    CHECK(fr_iut_open_variant(NULL, "v", &iut, &err) == FR_E_NULL, "variant of NULL");
    if (fr_iut_open("golden", &iut, &err) == FR_OK) {
        fr_iut *v = (fr_iut *)&err;
        CHECK(fr_iut_open_variant(iut, "fp16", &v, &err) == FR_E_UNSUPPORTED && v == NULL &&
                  strstr(err.msg, "golden: variants are a runner's"), "variant of an engine: %s", err.msg);
        fr_iut_close(iut);
    }
}

/* Same dtype, shape and bytes. */
static bool same(const fr_tensor *a, const fr_tensor *b) {
    if (a->dtype != b->dtype || a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim))
        return false;
    int64_t n = fr_tensor_numel(a);
    return n == 0 || !memcmp(a->data, b->data, (size_t)n * fr_dtype_size(a->dtype));
}

static void test_disk_and_given(const char *root, uint64_t seed) {
    fr_gen_spec spec = {.name = "open_fwd", .dtype = FR_F16, .B = 1, .N1 = 2, .S1 = 5, .S2 = 7, .D = 8};
    fr_case c;
    fr_error err;
    if (!CHECKED(iut_case(&spec, seed, root, &c, &err) == FR_OK, "case: %s", err.msg)) return;
    /* the outputs an implementation wrote: the emulator's, in the operator's dtypes */
    fr_iut *emu = NULL, *disk = NULL, *given = NULL;
    fr_case_outputs want, got;
    memset(&want, 0, sizeof want);
    CHECK(fr_iut_open("emulate:exact", &emu, &err) == FR_OK, "emulate:exact: %s", err.msg);
    CHECK(emu && fr_iut_run(emu, &c, 1, &want, &err) == FR_OK, "emulate run: %s", err.msg);
    fr_iut_close(emu);
    CHECK(want.fwd.attention_out.dtype == FR_F16 && want.fwd.softmax_max.dtype == FR_F32, "operator dtypes");
    CHECK(fr_iut_open_disk(&disk, &err) == FR_OK && fr_iut_get_kind(disk) == FR_IUT_DISK, "disk: %s", err.msg);
    /* no outputs yet: SKIP */
    fr_status st = fr_iut_run(disk, &c, 0, &got, &err);
    CHECK(st == FR_E_UNSUPPORTED && strstr(err.msg, "attention_out.npy: no outputs on disk"), "no outputs: %s %s",
          fr_status_name(st), err.msg);
    fr_case_outputs_free(&got);
    /* as written: read back exactly */
    CHECK(fr_case_write_outputs(c.dir, &want, &err) == FR_OK, "write outputs: %s", err.msg);
    st = fr_iut_run(disk, &c, 0, &got, &err);
    CHECK(st == FR_OK && same(&got.fwd.attention_out, &want.fwd.attention_out) &&
              same(&got.fwd.softmax_max, &want.fwd.softmax_max) && same(&got.fwd.softmax_sum, &want.fwd.softmax_sum),
          "outputs read back: %s %s", fr_status_name(st), err.msg);
    fr_case_outputs_free(&got); /* a failed run's outputs are the caller's too */
    /* softmax_max of another shape: handed over as its header (dtype and shape); the others still read exactly */
    char p[4200];
    snprintf(p, sizeof p, "%s/softmax_max.npy", c.dir);
    int64_t three = 3;
    double d3[3] = {1, 2, 3};
    fr_tensor wrong = fr_tensor_make(FR_F64, d3, 1, &three);
    CHECK(fr_npy_write_file(p, &wrong, 1, &err) == FR_OK, "write: %s", err.msg);
    st = fr_iut_run(disk, &c, 0, &got, &err);
    CHECK(st == FR_OK && got.fwd.softmax_max.dtype == FR_F64 && got.fwd.softmax_max.ndim == 1 &&
              got.fwd.softmax_max.shape[0] == 3 && same(&got.fwd.attention_out, &want.fwd.attention_out) &&
              same(&got.fwd.softmax_sum, &want.fwd.softmax_sum),
          "wrong-shaped softmax_max: %s %s", fr_status_name(st), err.msg);
    fr_case_outputs_free(&got); /* a failed run's outputs are the caller's too */
    /* ... and a truncated softmax_sum beside it: its read fails, naming the file */
    snprintf(p, sizeof p, "%s/softmax_sum.npy", c.dir);
    CHECK(truncate(p, 100) == 0, "truncate");
    st = fr_iut_run(disk, &c, 0, &got, &err);
    CHECK(st == FR_E_FORMAT && strstr(err.msg, "softmax_sum.npy"), "truncated softmax_sum: %s %s",
          fr_status_name(st), err.msg);
    fr_case_outputs_free(&got); /* a failed run's outputs are the caller's too */
    /* a case without a directory */
    char *dir = c.dir;
    c.dir = NULL;
    st = fr_iut_run(disk, &c, 0, &got, &err);
    CHECK(st == FR_E_INVALID_ARG && strstr(err.msg, "disk: the case has no directory"), "no dir: %s", err.msg);
    fr_case_outputs_free(&got);
    c.dir = dir;
    fr_iut_close(disk);
    /* given outputs: none set (SKIP), as held, another shape (copied), one absent (left absent) */
    CHECK(fr_iut_open_given(NULL, &given, &err) == FR_OK && !strcmp(fr_iut_name(given), "given"), "given: %s",
          err.msg);
    st = fr_iut_run(given, &c, 0, &got, &err);
    CHECK(st == FR_E_UNSUPPORTED && strstr(err.msg, "no outputs given for this case"), "none given: %s", err.msg);
    fr_case_outputs_free(&got);
    fr_iut_given_set(given, &want);
    st = fr_iut_run(given, &c, 0, &got, &err);
    CHECK(st == FR_OK && same(&got.fwd.attention_out, &want.fwd.attention_out) &&
              same(&got.fwd.softmax_sum, &want.fwd.softmax_sum), "given as held: %s", err.msg);
    fr_case_outputs_free(&got); /* a failed run's outputs are the caller's too */
    fr_case_outputs other = want;
    other.fwd.softmax_max = wrong;
    memset(&other.fwd.softmax_sum, 0, sizeof other.fwd.softmax_sum);
    fr_iut_given_set(given, &other);
    st = fr_iut_run(given, &c, 0, &got, &err);
    CHECK(st == FR_OK && same(&got.fwd.softmax_max, &wrong) && got.fwd.softmax_max.data != wrong.data &&
              !fr_tensor_present(&got.fwd.softmax_sum) && same(&got.fwd.attention_out, &want.fwd.attention_out),
          "given, another shape and an absent output: %s %s", fr_status_name(st), err.msg);
    fr_case_outputs_free(&got); /* a failed run's outputs are the caller's too */
    fr_iut_given_set(NULL, &other); /* no IUT: nothing happens */
    fr_iut_close(given);
    fr_case_outputs_free(&want);
    fr_case_free(&c);
}

int main(int argc, char **argv) {
    uint64_t seed = fr_test_seed(argc, argv, "test_iut_open");
    test_specs();
    char *root = iut_tmpdir("iut-open");
    if (root) {
        test_disk_and_given(root, seed);
        iut_rmtree(root);
        free(root);
    }
    return fr_test_exit("test_iut_open");
}
