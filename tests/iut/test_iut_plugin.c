/* The plugin IUT (src/verify/iut/iut_plugin.c) with examples/plugin: loads, computes fp32 BNSD / BSND forwards matching
 * the golden, SKIPs what it does not handle (mask, bf16, backward: NULL bwd); broken plugins are refused at open
 * (wrong abi_version, no entry symbol, missing file) or FAIL with their own message.
 * usage: test_iut_plugin EXAMPLE.so BAD_ABI.so FAILING.so BAD_STATUS.so NO_SYMBOL.so [seed] */
#include "iut_testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void run_cases(const char *so, uint64_t seed, const char *root) {
    char spec[1200];
    snprintf(spec, sizeof spec, "plugin:%s", so);
    fr_error err;
    fr_iut *iut = NULL;
    fr_status st = fr_iut_open(spec, &iut, &err);
    CHECK(st == FR_OK, "open %s: %s: %s", spec, fr_status_name(st), err.msg);
    if (st != FR_OK) return;
    CHECK(fr_iut_get_kind(iut) == FR_IUT_PLUGIN && !strcmp(fr_iut_name(iut), "example-fp32"), "kind %d name %s",
          (int)fr_iut_get_kind(iut), fr_iut_name(iut));

    /* expect: 1 = matches the golden, 0 = SKIP */
    static const struct {
        fr_gen_spec s;
        int expect;
    } cases[] = {
        {{.name = "bnsd", .layout = FR_BNSD, .B = 2, .N1 = 2, .S1 = 17, .S2 = 33, .D = 16}, 1},
        {{.name = "bsnd_gqa", .layout = FR_BSND, .B = 1, .N1 = 4, .N2 = 2, .S1 = 9, .S2 = 40, .D = 32, .Dv = 8}, 1},
        {{.name = "bnsd_scaled", .layout = FR_BNSD, .B = 1, .N1 = 3, .N2 = 1, .S1 = 5, .S2 = 7, .D = 8, .scale = 0.3,
          .in_scale = 3.0},
         1},
        {{.name = "mask", .layout = FR_BNSD, .B = 1, .N1 = 1, .S1 = 8, .S2 = 8, .D = 8,
          .sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL, .mask = FR_GEN_MASK_CANONICAL}, 0},
        {{.name = "bf16", .dtype = FR_BF16, .layout = FR_BNSD, .B = 1, .N1 = 1, .S1 = 8, .S2 = 8, .D = 8}, 0},
        {{.name = "bsh", .layout = FR_BSH, .B = 1, .N1 = 2, .S1 = 8, .S2 = 8, .D = 8}, 0},
        {{.name = "bwd", .bwd = true, .layout = FR_BNSD, .B = 1, .N1 = 1, .S1 = 8, .S2 = 8, .D = 8}, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        fr_case c;
        memset(&c, 0, sizeof c);
        st = iut_case(&cases[k].s, seed, root, &c, &err);
        CHECK(st == FR_OK, "case %s: %s", cases[k].s.name, err.msg);
        if (st != FR_OK) continue;
        fr_case_outputs o, g;
        memset(&o, 0, sizeof o);
        st = fr_iut_run(iut, &c, 0, &o, &err);
        if (cases[k].expect) {
            CHECK(st == FR_OK, "%s: %s: %s", cases[k].s.name, fr_status_name(st), err.msg);
            if (st == FR_OK && iut_golden(&c, &g, &err) == FR_OK) {
                double r = iut_compare(&o, &g);
                printf("  %-12s PASS  worst error / tolerance %.3g\n", cases[k].s.name, r);
                CHECK(r <= 1, "%s: worst error / tolerance %g", cases[k].s.name, r);
                fr_case_outputs_free(&g);
            }
        } else {
            CHECK(st == FR_E_UNSUPPORTED && strstr(err.msg, "plugin") != NULL, "%s: expected SKIP, got %s: %s",
                  cases[k].s.name, fr_status_name(st), err.msg);
            printf("  %-12s SKIP  %s\n", cases[k].s.name, err.msg);
        }
        fr_case_outputs_free(&o);
        fr_case_free(&c);
    }
    fr_iut_close(iut);
}

static void refused(const char *so, const char *want1, const char *want2) {
    char spec[1200];
    snprintf(spec, sizeof spec, "plugin:%s", so);
    fr_error err;
    memset(&err, 0, sizeof err);
    fr_iut *iut = (fr_iut *)&err; /* must be reset to NULL */
    fr_status st = fr_iut_open(spec, &iut, &err);
    CHECK(st == FR_E_NOT_AVAILABLE && iut == NULL, "%s: expected FR_E_NOT_AVAILABLE, got %s", so, fr_status_name(st));
    CHECK(strstr(err.msg, want1) && strstr(err.msg, want2), "%s: message '%s' lacks '%s' / '%s'", so, err.msg, want1,
          want2);
    printf("  refused: %s\n", err.msg);
    if (st == FR_OK) fr_iut_close(iut);
}

static void failing(const char *so, uint64_t seed, const char *root, fr_status want, const char *marker) {
    char spec[1200];
    snprintf(spec, sizeof spec, "plugin:%s", so);
    fr_error err;
    fr_iut *iut = NULL;
    fr_status st = fr_iut_open(spec, &iut, &err);
    CHECK(st == FR_OK, "open %s: %s", so, err.msg);
    if (st != FR_OK) return;
    fr_gen_spec s = {.name = "failing", .layout = FR_BNSD, .B = 1, .N1 = 1, .S1 = 4, .S2 = 4, .D = 8};
    fr_case c;
    if (iut_case(&s, seed, root, &c, &err) == FR_OK) {
        fr_case_outputs o;
        st = fr_iut_run(iut, &c, 0, &o, &err);
        CHECK(st == want && strstr(err.msg, marker), "%s: got %s '%s', expected %s with '%s'", so, fr_status_name(st),
              err.msg, fr_status_name(want), marker);
        printf("  fails: %s: %s\n", fr_status_name(st), err.msg);
        fr_case_outputs_free(&o);
        fr_case_free(&c);
    }
    fr_iut_close(iut);
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: test_iut_plugin EXAMPLE.so BAD_ABI.so FAILING.so BAD_STATUS.so NO_SYMBOL.so [seed]\n");
        return 2;
    }
    uint64_t seed = fr_test_seed(argc - 5, argv + 5, "test_iut_plugin");
    char *root = iut_tmpdir("iut-plugin");
    if (!root) return 1;
    run_cases(argv[1], seed, root);
    refused(argv[2], "abi_version 99", "abi_version 1");
    refused(argv[5], "flashref_plugin_v1", "does not export");
    refused("/nonexistent/dir/nothing.so", "nothing.so", "no such");
    failing(argv[3], seed, root, FR_E_SHAPE, "failing-plugin-marker");
    failing(argv[4], seed, root, FR_E_INTERNAL, "1234");
    iut_rmtree(root);
    free(root);
    printf("test_iut_plugin: %s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
