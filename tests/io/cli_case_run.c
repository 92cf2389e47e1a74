/* `flashref case check` and `flashref run` end to end: generate forward and backward cases into a temp dir, check
 * them (valid -> 0, invalid -> 2), run every engine, and read the outputs back with the dtypes each engine must
 * write (golden fp64, others the operator's dtypes) and no NaN left from the prefill.
 * argv[1] is the flashref executable. */
#define _XOPEN_SOURCE 700
#include "io/casedir.h"

#include "core/core.h"
#include "io/npy.h"
#include "io_test_util.h"
#include "common/kit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *exe;

/* `flashref ARGS`, output discarded: the exit status. */
#define run(...) fr_test_cli(exe, NULL, __VA_ARGS__)

/* A random fp32 tensor in [-2, 2) converted to dt. */
static fr_tensor rnd(fr_dtype dt, int ndim, const int64_t *shape, uint64_t *rng) {
    fr_tensor t = fr_tensor_make(dt, NULL, ndim, shape);
    int64_t n = fr_tensor_numel(&t);
    t.data = malloc((size_t)n * fr_dtype_size(dt) + 1);
    for (int64_t i = 0; i < n; i++) fr_store_f64(&t, i, (double)(fr_test_rand(rng) >> 11) / 9007199254740992.0 * 4 - 2);
    return t;
}

static bool all_finite(const fr_tensor *t) {
    int64_t n = fr_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(fr_load_f64(t, i))) return false;
    return true;
}

static double max_abs_diff(const fr_tensor *a, const fr_tensor *b) {
    int64_t n = fr_tensor_numel(a);
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(fr_load_f64(a, i) - fr_load_f64(b, i)));
    return m;
}

static void load_outputs(const char *dir, fr_case_outputs *o) {
    fr_case c;
    fr_error e;
    memset(o, 0, sizeof *o);
    CHECK_OK(fr_case_load(dir, &c, &e), e);
    CHECK_OK(fr_case_load_outputs(&c, dir, o, &e), e);
    fr_case_free(&c);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: cli_case_run FLASHREF\n");
        return 2;
    }
    exe = argv[1];
    uint64_t seed = fr_test_seed(0, NULL, "cli_case_run"), rng = seed;
    char tmp[] = "/tmp/fr_io_cli_XXXXXX";
    if (!mkdtemp(tmp)) return 1;
    char fwd[600], bwd[600], out[600], bad[600];
    snprintf(fwd, sizeof fwd, "%s/fwd", tmp);
    snprintf(bwd, sizeof bwd, "%s/bwd", tmp);
    snprintf(out, sizeof out, "%s/out_fast", tmp);
    snprintf(bad, sizeof bad, "%s/bad", tmp);

    /* bf16 BSND, GQA, causal: B 2, N1 4, N2 2, S1 5, S2 9, D 16 */
    fr_params p = fr_params_default();
    p.head_num = 4;
    p.input_layout = FR_BSND;
    p.scale_value = 0.25;
    p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL;
    fr_bwd_inputs in;
    memset(&in, 0, sizeof in);
    int64_t qs[4] = {2, 5, 4, 16}, ks[4] = {2, 9, 2, 16}, ms[2] = {2048, 2048};
    in.fwd.query = rnd(FR_BF16, 4, qs, &rng);
    in.fwd.key = rnd(FR_BF16, 4, ks, &rng);
    in.fwd.value = rnd(FR_BF16, 4, ks, &rng);
    /* mode 3 takes the compressed causal mask: upper triangle masked */
    in.fwd.atten_mask = fr_tensor_make(FR_BOOL, calloc(2048 * 2048, 1), 2, ms);
    for (int64_t i = 0; i < 2048; i++)
        for (int64_t j = i + 1; j < 2048; j++) ((uint8_t *)in.fwd.atten_mask.data)[i * 2048 + j] = 1;
    fr_error e;
    CHECK_OK(fr_case_write_parts(fwd, FR_CASE_FWD, FR_BF16, &p, &in, &e), e);

    CHECK(run("case check '%s'", fwd) == 0, "case check of a valid case must exit 0");
    CHECK(run("case --help") == 0, "case --help");
    CHECK(run("run --help") == 0, "run --help");
    CHECK(run("case check '%s'", tmp) == 2, "case check of a dir without case.json must exit 2");
    CHECK(run("run '%s'", fwd) == 2, "run without --engine must exit 2");
    CHECK(run("run '%s' --engine nope", fwd) == 2, "unknown engine must exit 2");

    /* A structurally valid case.json that fails validation (head_num 3 does not divide the heads). */
    p.head_num = 3;
    CHECK_OK(fr_case_write_parts(bad, FR_CASE_FWD, FR_BF16, &p, &in, &e), e);
    p.head_num = 4;
    CHECK(run("case check '%s'", bad) == 2, "case check of an invalid case must exit 2");
    CHECK(run("run '%s' --engine golden", bad) == 2, "run of an invalid case must exit 2");

    /* golden writes fp64 into the case dir; fast / emulate the operator dtypes into --out (option after DIR). */
    CHECK(run("run '%s' --engine golden --threads 2", fwd) == 0, "run golden");
    fr_case_outputs g, f;
    load_outputs(fwd, &g);
    CHECK(g.fwd.attention_out.dtype == FR_F64 && g.fwd.softmax_max.dtype == FR_F64, "golden writes fp64 (got %s)",
          fr_dtype_name(g.fwd.attention_out.dtype));
    CHECK(g.fwd.attention_out.ndim == 4 && g.fwd.attention_out.shape[3] == 16 && g.fwd.softmax_max.shape[3] == 8,
          "golden output shapes");
    CHECK(all_finite(&g.fwd.attention_out) && all_finite(&g.fwd.softmax_sum), "golden outputs fully written");
    const char *engines[] = {"fast", "emulate"};
    for (int k = 0; k < 2; k++) {
        int rc = run("run --engine %s '%s' --out '%s'", engines[k], fwd, out);
        CHECK(rc == 0 || rc == 77, "run %s: exit %d", engines[k], rc);
        if (rc != 0) {
            printf("run %s: not supported here (exit %d), skipped\n", engines[k], rc);
            continue;
        }
        fr_case c;
        CHECK_OK(fr_case_load(fwd, &c, &e), e);
        CHECK_OK(fr_case_load_outputs(&c, out, &f, &e), e);
        fr_case_free(&c);
        CHECK(f.fwd.attention_out.dtype == FR_BF16 && f.fwd.softmax_max.dtype == FR_F32,
              "%s writes bf16 / fp32 (got %s / %s)", engines[k], fr_dtype_name(f.fwd.attention_out.dtype),
              fr_dtype_name(f.fwd.softmax_max.dtype));
        CHECK(all_finite(&f.fwd.attention_out), "%s: attention_out fully written", engines[k]);
        double d = max_abs_diff(&f.fwd.attention_out, &g.fwd.attention_out);
        CHECK(d < 0.05, "%s vs golden: max abs diff %g", engines[k], d);
        fr_case_outputs_free(&f);
    }

    /* Backward: the forward's outputs (rounded to bf16 / fp32 as an operator would give them) become inputs. */
    in.dy = rnd(FR_BF16, 4, qs, &rng);
    in.attention_in = fr_tensor_make(FR_BF16, malloc(2 * 5 * 4 * 16 * 2), 4, qs);
    int64_t n = fr_tensor_numel(&in.attention_in);
    for (int64_t i = 0; i < n; i++) fr_store_f64(&in.attention_in, i, fr_load_f64(&g.fwd.attention_out, i));
    in.softmax_max = fr_tensor_make(FR_F32, malloc(2 * 4 * 5 * 8 * 4), 4, g.fwd.softmax_max.shape);
    in.softmax_sum = fr_tensor_make(FR_F32, malloc(2 * 4 * 5 * 8 * 4), 4, g.fwd.softmax_sum.shape);
    for (int64_t i = 0; i < 2 * 4 * 5 * 8; i++) {
        fr_store_f64(&in.softmax_max, i, fr_load_f64(&g.fwd.softmax_max, i));
        fr_store_f64(&in.softmax_sum, i, fr_load_f64(&g.fwd.softmax_sum, i));
    }
    fr_case_outputs_free(&g);
    CHECK_OK(fr_case_write_parts(bwd, FR_CASE_BWD, FR_BF16, &p, &in, &e), e);
    CHECK(run("case check '%s'", bwd) == 0, "case check of a valid backward case");
    CHECK(run("run '%s' --engine golden", bwd) == 0, "run golden backward");
    load_outputs(bwd, &g);
    CHECK(g.bwd.dq.dtype == FR_F64 && g.bwd.dk.shape[1] == 9 && g.bwd.dv.shape[2] == 2, "golden dq/dk/dv");
    CHECK(all_finite(&g.bwd.dq) && all_finite(&g.bwd.dk) && all_finite(&g.bwd.dv), "golden gradients written");
    int rc = run("run '%s' --engine fast --out '%s/bwd_fast'", bwd, tmp);
    CHECK(rc == 0 || rc == 77, "run fast backward: exit %d", rc);
    if (rc == 0) {
        char od[700];
        snprintf(od, sizeof od, "%s/bwd_fast", tmp);
        fr_case c;
        CHECK_OK(fr_case_load(bwd, &c, &e), e);
        CHECK_OK(fr_case_load_outputs(&c, od, &f, &e), e);
        fr_case_free(&c);
        CHECK(f.bwd.dq.dtype == FR_BF16 && all_finite(&f.bwd.dk), "fast backward writes bf16 gradients");
        double d = max_abs_diff(&f.bwd.dv, &g.bwd.dv);
        CHECK(d < 0.1, "fast dv vs golden: max abs diff %g", d);
        fr_case_outputs_free(&f);
    }
    fr_case_outputs_free(&g);
    for (int k = 0; k < FR_CASE_NUM_INPUTS; k++) free(fr_case_input_slot(&in, (fr_case_input)k)->data);
    remove_tree(tmp);
    return io_report("cli_case_run");
}
