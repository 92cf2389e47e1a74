/* examples/python_runner/run_case.py as an exec IUT: forward and backward cases over its features (layouts
 * BNSD/BSND/BSH/SBH, fp32/fp16/bf16, GQA, sparse modes 0-4, pse types 0/1, fully masked rows) match the golden
 * within the output dtype's tolerance; cases it does not handle (dropout, TND, ALiBi pse) are SKIP (exit 77).
 * Needs FLASHREF_PYTHON (a python with numpy; `make test` sets it): FAILS without it.
 * usage: test_iut_python RUN_CASE.py [seed] */
#include "iut_testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct pcase {
    fr_gen_spec s;
    int expect; /* 1 = matches the golden, 0 = SKIP */
} pcase;

static const pcase kCases[] = {
    {{.name = "f32_bnsd", .layout = FR_BNSD, .B = 2, .N1 = 2, .S1 = 17, .S2 = 33, .D = 16}, 1},
    {{.name = "bf16_bsnd_gqa", .dtype = FR_BF16, .layout = FR_BSND, .B = 1, .N1 = 4, .N2 = 2, .S1 = 9, .S2 = 40,
      .D = 32, .Dv = 16},
     1},
    {{.name = "f16_bsh_mode2", .dtype = FR_F16, .layout = FR_BSH, .B = 1, .N1 = 2, .S1 = 24, .S2 = 24, .D = 16,
      .sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL, .mask = FR_GEN_MASK_CANONICAL},
     1},
    {{.name = "bf16_sbh_mode3", .dtype = FR_BF16, .layout = FR_SBH, .B = 2, .N1 = 2, .N2 = 1, .S1 = 20, .S2 = 33,
      .D = 8, .sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, .mask = FR_GEN_MASK_CANONICAL},
     1},
    {{.name = "f32_mode4_band", .layout = FR_BNSD, .B = 1, .N1 = 2, .S1 = 16, .S2 = 20, .D = 8,
      .sparse_mode = FR_SPARSE_BAND, .mask = FR_GEN_MASK_CANONICAL, .set_band = true, .pre_tokens = 5,
      .next_tokens = 2}, 1},
    {{.name = "f16_mode0_band", .dtype = FR_F16, .layout = FR_BNSD, .B = 2, .N1 = 2, .S1 = 16, .S2 = 16, .D = 8,
      .sparse_mode = FR_SPARSE_DEFAULT_MASK, .mask = FR_GEN_MASK_B1SS, .set_band = true, .pre_tokens = 8,
      .next_tokens = 3}, 1},
    {{.name = "bf16_mode1_bnss", .dtype = FR_BF16, .layout = FR_BSND, .B = 2, .N1 = 2, .S1 = 12, .S2 = 18, .D = 8,
      .sparse_mode = FR_SPARSE_ALL_MASK, .mask = FR_GEN_MASK_BNSS},
     1},
    {{.name = "f32_pse1_bnss", .layout = FR_BNSD, .B = 2, .N1 = 2, .S1 = 12, .S2 = 14, .D = 8,
      .pse_type = FR_PSE_OUTER_ADD_MUL, .pse = FR_GEN_PSE_BNSS}, 1},
    {{.name = "bf16_pse0_bn1s", .dtype = FR_BF16, .layout = FR_BSH, .B = 2, .N1 = 2, .S1 = 12, .S2 = 14, .D = 8,
      .pse_type = FR_PSE_OUTER_MUL_ADD, .pse = FR_GEN_PSE_BN1S},
     1},
    {{.name = "f16_pse1_1nss_m2", .dtype = FR_F16, .layout = FR_BNSD, .B = 2, .N1 = 2, .S1 = 16, .S2 = 16, .D = 8,
      .pse_type = FR_PSE_OUTER_ADD_MUL, .pse = FR_GEN_PSE_1NSS, .sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL,
      .mask = FR_GEN_MASK_CANONICAL}, 1},
    {{.name = "f32_d1_rows", .layout = FR_BNSD, .B = 1, .N1 = 2, .S1 = 24, .S2 = 16, .D = 8,
      .sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, .mask = FR_GEN_MASK_CANONICAL}, 1},
    {{.name = "bwd_f32_gqa_m2", .bwd = true, .layout = FR_BNSD, .B = 1, .N1 = 4, .N2 = 2, .S1 = 16, .S2 = 16, .D = 8,
      .sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL, .mask = FR_GEN_MASK_CANONICAL},
     1},
    {{.name = "bwd_bf16_pse_m0", .bwd = true, .dtype = FR_BF16, .layout = FR_BSND, .B = 2, .N1 = 2, .S1 = 12, .S2 = 20,
      .D = 16, .pse_type = FR_PSE_OUTER_ADD_MUL, .pse = FR_GEN_PSE_BNSS, .sparse_mode = FR_SPARSE_DEFAULT_MASK,
      .mask = FR_GEN_MASK_SS}, 1},
    {{.name = "bwd_f16_sbh", .bwd = true, .dtype = FR_F16, .layout = FR_SBH, .B = 2, .N1 = 2, .S1 = 10, .S2 = 13,
      .D = 8},
     1},
    {{.name = "empty_s1", .dtype = FR_BF16, .layout = FR_BSND, .B = 1, .N1 = 2, .S1 = 0, .S2 = 8, .D = 8}, 1},
    {{.name = "empty_s2_d1", .layout = FR_BNSD, .B = 1, .N1 = 2, .S1 = 5, .S2 = 0, .D = 8}, 1},
    {{.name = "dropout", .layout = FR_BNSD, .B = 1, .N1 = 1, .S1 = 8, .S2 = 8, .D = 8, .keep_prob = 0.9}, 0},
    {{.name = "tnd", .layout = FR_TND, .B = 2, .N1 = 1, .D = 8, .seq_q = {3, 5}, .seq_kv = {4, 6}}, 0},
    {{.name = "alibi", .layout = FR_BNSD, .B = 1, .N1 = 2, .S1 = 8, .S2 = 8, .D = 8, .pse_type = FR_PSE_INNER_MUL_ADD,
      .pse = FR_GEN_PSE_SLOPES_N},
     0},
};

/* Regression (found by `flashref suite --set quick`, bd_nan_in_masked_kv): NaN in K/V rows that every query row
 * masks must not reach the outputs (0 * NaN in a plain matmul did). Key row 3 is masked for all rows and set NaN. */
static void nan_in_masked_kv(fr_iut *iut, uint64_t seed, const char *root, bool bwd) {
    fr_gen_spec s = {.name = bwd ? "bwd_nan_masked_kv" : "nan_masked_kv", .bwd = bwd, .layout = FR_BNSD, .B = 1,
                     .N1 = 2, .S1 = 12, .S2 = 16, .D = 8, .sparse_mode = FR_SPARSE_ALL_MASK, .mask = FR_GEN_MASK_SS};
    fr_error err;
    fr_case c;
    if (iut_case(&s, seed, root, &c, &err) != FR_OK) {
        CHECK(0, "case %s: %s", s.name, err.msg);
        return;
    }
    const int64_t j = 3, S1 = 12, S2 = 16, D = 8;
    unsigned char *mask = c.in.fwd.atten_mask.data;
    for (int64_t i = 0; i < S1; i++) mask[i * S2 + j] = 1;
    for (int64_t d = 0; d < D; d++) {
        ((float *)c.in.fwd.key.data)[j * D + d] = NAN;
        ((float *)c.in.fwd.value.data)[j * D + d] = NAN;
    }
    fr_case_outputs o, g;
    memset(&o, 0, sizeof o);
    fr_status rs = fr_iut_run(iut, &c, 0, &o, &err);
    CHECK(rs == FR_OK, "%s: %s: %s", s.name, fr_status_name(rs), err.msg);
    if (rs == FR_OK && iut_golden(&c, &g, &err) == FR_OK) {
        double r = iut_compare(&o, &g);
        printf("  %-18s %s  worst error / tolerance %.3g\n", s.name, r <= 1 ? "PASS" : "FAIL", r);
        CHECK(r <= 1, "%s: worst error / tolerance %g", s.name, r);
        fr_case_outputs_free(&g);
    }
    fr_case_outputs_free(&o);
    fr_case_free(&c);
}

/* Alike panel/test_exec_optional_outputs.c:main: kept apart because only the argument check is alike (each prints its
 * own usage). */
int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_iut_python RUN_CASE.py [seed]\n");
        return 2;
    }
    uint64_t seed = fr_test_seed(argc - 1, argv + 1, "test_iut_python");
    const char *py = getenv("FLASHREF_PYTHON");
    if (!py || !*py) {
        printf("test_iut_python: FAIL: FLASHREF_PYTHON is not set (a python with numpy; make test sets it)\n");
        return 1;
    }
    char *root = iut_tmpdir("iut-python");
    if (!root) return 1;
    /* The same runner file through both protocols (runners/flashref_runner.py): one process per case, then one
     * process for all cases. */
    for (int mode = 0; mode < 2; mode++) {
    char spec[2400];
    snprintf(spec, sizeof spec, "%s:'%s' '%s'", mode ? "persistent" : "exec", py, argv[1]);
    printf("%s\n", spec);
    fr_error err;
    fr_iut *iut = NULL;
    fr_status st = fr_iut_open(spec, &iut, &err);
    CHECK(st == FR_OK, "open %s: %s", spec, err.msg);
    int pass = 0, skip = 0;
    for (size_t k = 0; st == FR_OK && k < sizeof kCases / sizeof kCases[0]; k++) {
        const pcase *pc = &kCases[k];
        fr_case c;
        if (iut_case(&pc->s, seed, root, &c, &err) != FR_OK) {
            CHECK(0, "case %s: %s", pc->s.name, err.msg);
            continue;
        }
        fr_case_outputs o, g;
        memset(&o, 0, sizeof o);
        fr_status rs = fr_iut_run(iut, &c, 0, &o, &err);
        if (pc->expect) {
            CHECK(rs == FR_OK, "%s: %s: %s", pc->s.name, fr_status_name(rs), err.msg);
            if (rs == FR_OK && iut_golden(&c, &g, &err) == FR_OK) {
                double r = iut_compare(&o, &g);
                printf("  %-18s %s  worst error / tolerance %.3g\n", pc->s.name, r <= 1 ? "PASS" : "FAIL", r);
                CHECK(r <= 1, "%s: worst error / tolerance %g", pc->s.name, r);
                pass += r <= 1;
                fr_case_outputs_free(&g);
            }
        } else {
            CHECK(rs == FR_E_UNSUPPORTED && strstr(err.msg, "not supported"), "%s: expected SKIP, got %s: %s",
                  pc->s.name, fr_status_name(rs), err.msg);
            skip += rs == FR_E_UNSUPPORTED;
            printf("  %-18s SKIP  %s\n", pc->s.name, err.msg);
        }
        fr_case_outputs_free(&o);
        fr_case_free(&c);
    }
    if (iut) {
        nan_in_masked_kv(iut, seed, root, false);
        nan_in_masked_kv(iut, seed, root, true);
        fr_iut_close(iut);
    }
    printf("%s: %d PASS, %d SKIP\n", mode ? "persistent" : "exec", pass, skip);
    }
    iut_rmtree(root);
    free(root);
    printf("test_iut_python: %s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
