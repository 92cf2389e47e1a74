/* dsink, dq_rope and dk_rope reach the judge from an exec: implementation on cases generated in memory (a
 * regression: they used to be skipped, "dsink.npy: missing" although the runner wrote it, because the loader asked for
 * case.json file names that a generated case does not have). fr_case_load_outputs on the in-memory case must read
 * them; a shell runner copies the fast engine's outputs into the case directory and every optional gradient must
 * come back bit for bit through exec:; a runner that drops one must fail naming it.
 * usage: test_exec_optional_outputs SCRIPT_DIR [seed] */
#define _POSIX_C_SOURCE 200809L

#include "common/check.h"
#include "io/casedir.h"
#include "verify/cases/casegen.h"
#include "verify/cases/sets.h"
#include "verify/iut/iut.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void one(const char *scripts, const fr_gen_spec *spec, uint64_t seed, const char *tmp) {
    fr_error err;
    fr_gen_case g;
    fr_status st = fr_gen_build(spec, seed, &g, &err);
    CHECK(st == FR_OK, "%s: build: %s", spec->name, err.msg);
    if (st != FR_OK) return;
    fr_case c;
    fr_suite_case_view(&g, &c); /* no file names: exactly what the suite hands an implementation */
    fr_case_outputs ref, got;
    CHECK(fr_case_alloc_outputs(&c, false, &ref, &err) == FR_OK, "alloc: %s", err.msg);
    fr_engine fast = fr_engine_default(FR_ENGINE_FAST);
    st = fr_bwd(&c.params, &c.in, &ref.bwd, &fast, &err);
    CHECK(st == FR_OK, "%s: fast: %s", spec->name, err.msg);
    char src[1200];
    snprintf(src, sizeof src, "%s/%s", tmp, spec->name);
    CHECK(fr_case_write_outputs(src, &ref, &err) == FR_OK, "write: %s", err.msg);
    /* The loader itself, on the in-memory case (no file names): every optional gradient is read back. */
    fr_case_outputs ld;
    st = fr_case_load_outputs(&c, src, &ld, &err);
    CHECK(st == FR_OK, "%s: load: %s", spec->name, err.msg);
    for (int k = 0; st == FR_OK && k < FR_CASE_NUM_OUTPUTS; k++)
        CHECK(fr_tensor_present(fr_case_output_cslot(&ld, (fr_case_output)k)) ==
                  fr_tensor_present(fr_case_output_cslot(&ref, (fr_case_output)k)),
              "%s: fr_case_load_outputs: %s %s", spec->name, fr_case_output_name((fr_case_output)k),
              fr_tensor_present(fr_case_output_cslot(&ref, (fr_case_output)k)) ? "skipped" : "invented");
    if (st == FR_OK) fr_case_outputs_free(&ld);
    setenv("FR_PANEL_SRC", src, 1);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "exec:sh '%s/copy_outputs.sh'", scripts);
    fr_iut *iut = NULL;
    CHECK(fr_iut_open(cmd, &iut, &err) == FR_OK, "open: %s", err.msg);
    if (!iut) return;
    const fr_case_output opt[] = {FR_CO_DSINK, FR_CO_DQ_ROPE, FR_CO_DK_ROPE};
    int n_opt = 0;
    unsetenv("FR_PANEL_DROP");
    memset(&got, 0, sizeof got);
    st = fr_iut_run(iut, &c, 0, &got, &err);
    CHECK(st == FR_OK, "%s: exec: %s: %s", spec->name, fr_status_name(st), err.msg);
    for (int k = 0; st == FR_OK && k < FR_CASE_NUM_OUTPUTS; k++) {
        const fr_tensor *a = fr_case_output_cslot(&got, (fr_case_output)k), *b = fr_case_output_cslot(&ref, (fr_case_output)k);
        if (!fr_tensor_present(b)) continue;
        size_t bytes = (size_t)fr_tensor_numel(b) * fr_dtype_size(b->dtype);
        CHECK(fr_tensor_present(a) && a->dtype == b->dtype && (!bytes || !memcmp(a->data, b->data, bytes)),
              "%s: %s not as the runner wrote it", spec->name, fr_case_output_name((fr_case_output)k));
        for (int q = 0; q < 3; q++) n_opt += k == (int)opt[q];
    }
    fr_case_outputs_free(&got);
    CHECK(n_opt > 0, "%s: the case has no optional gradient (test defect)", spec->name);
    printf("  %s: %d optional gradient(s) loaded through exec:\n", spec->name, n_opt);
    /* Negative control: a runner that forgets one of them fails, naming the file. */
    for (int q = 0; q < 3; q++) {
        if (!fr_tensor_present(fr_case_output_cslot(&ref, opt[q]))) continue;
        char file[64];
        snprintf(file, sizeof file, "%s.npy", fr_case_output_name(opt[q]));
        setenv("FR_PANEL_DROP", file, 1);
        memset(&got, 0, sizeof got);
        st = fr_iut_run(iut, &c, 0, &got, &err);
        CHECK(st != FR_OK && strstr(err.msg, file), "%s: without %s: %s: %s", spec->name, file, fr_status_name(st),
              err.msg);
        fr_case_outputs_free(&got); /* fr_iut_run leaves its allocation to the caller on failure too */
    }
    unsetenv("FR_PANEL_DROP");
    fr_iut_close(iut);
    fr_case_outputs_free(&ref);
    fr_gen_case_free(&g);
}

/* Alike iut/test_iut_python.c:main: kept apart because only the argument check is alike (each prints its own usage). */
int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_exec_optional_outputs SCRIPT_DIR [seed]\n");
        return 2;
    }
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 20260101u;
    printf("test_exec_optional_outputs: seed %llu\n", (unsigned long long)seed);
    char tmp[] = "/tmp/fr-optout-XXXXXX";
    const char *td = getenv("TMPDIR");
    char tbuf[1024];
    snprintf(tbuf, sizeof tbuf, "%s/fr-optout-XXXXXX", td && *td ? td : "/tmp");
    char *dir = mkdtemp(td && *td ? tbuf : tmp);
    CHECK(dir != NULL, "mkdtemp");
    if (!dir) return 1;
    const fr_gen_spec sink = {.name = "bf16_sink", .bwd = true, .dtype = FR_BF16, .B = 1, .N1 = 2, .S1 = 64,
                              .S2 = 100, .D = 64, .sink = true};
    const fr_gen_spec rope = {.name = "tnd_rope_bf16", .bwd = true, .dtype = FR_BF16, .layout = FR_TND, .B = 2,
                              .N1 = 2, .seq_q = {30, 20}, .seq_kv = {40, 25}, .D = 64, .Drope = 32};
    const fr_gen_spec both = {.name = "fp32_sink_rope", .bwd = true, .layout = FR_BSND, .B = 1, .N1 = 2, .S1 = 33,
                              .S2 = 70, .D = 32, .Drope = 16, .sink = true};
    one(argv[1], &sink, seed, dir);
    one(argv[1], &rope, seed, dir);
    one(argv[1], &both, seed, dir);
    char rm[1200];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    if (system(rm) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return fr_test_exit("test_exec_optional_outputs");
}
