/* Allocation failures in the exec, persistent and plugin IUTs (src/verify/iut/iut_exec.c, iut_proc.c,
 * iut_plugin.c): opening each and running one case with its k-th allocation failing, for every k until a run goes
 * through (SQLite's malloc test, as tests/faults/test_alloc_fail.c does for the public entry points). A failed run
 * returns FR_E_NOMEM (FR_E_IO for a failed fopen / opendir) with a message, frees what it allocated (the hook's live
 * count is 0 after the IUT is closed) and leaves no case directory behind. The forked worker of a plugin counts on
 * from its parent's count, so some k fail there: in a case the worker reports FR_E_NOMEM and the case fails with it;
 * before it is ready the plugin is not available (FR_E_NOT_AVAILABLE, "out of memory", or ended when it could not
 * even open its status stream). Only in a build with -DFR_ALLOC_HOOK=ON. FR_EDGE_TRACE=1 prints every k.
 * The exec: runner writes its outputs (read back under the same sweep); a persistent runner's repro hook is swept too.
 * usage: test_iut_alloc_edges SCRIPTS_DIR EDGE_PLUGIN.so [seed] */
#define _GNU_SOURCE
#include "iut_testutil.h"
#include "core/alloc_hook.h"
#include "io/casedir.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char root[600], tmp[700];

static int tmp_entries(void) {
    DIR *d = opendir(tmp);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* Every k for spec (and one case c) until a run completes with want. Returns how many k failed. */
static int sweep(const char *spec, const fr_case *c, fr_status want) {
    int failed = 0;
    for (long k = 1; k < 5000; k++) {
        fr_error err;
        memset(&err, 0, sizeof err);
        fr_iut *iut = NULL;
        fr_case_outputs o;
        memset(&o, 0, sizeof o);
        fr_alloc_hook_set(k);
        fr_status st = fr_iut_open(spec, &iut, &err);
        const char *stage = "open";
        if (st == FR_OK) {
            stage = "run";
            st = fr_iut_run(iut, c, 0, &o, &err);
            fr_case_outputs_free(&o);
            fr_iut_close(iut);
        }
        int kind = fr_alloc_hook_failed();
        long live = fr_alloc_hook_live();
        fr_alloc_hook_set(0);
        int left = tmp_entries();
        CHECK(live == 0 && left == 0, "%s: k %ld (%s, %s): %ld blocks not freed, %d case directories left", spec, k,
              stage, fr_status_name(st), live, left);
        if (kind == FR_ALLOC_NONE && st == want) return failed;
        failed++;
        bool ok = (st == FR_E_NOMEM || (kind == FR_ALLOC_STREAM && st == FR_E_IO)) && err.msg[0];
        /* In a plugin's worker before it is ready: the plugin is not available, saying why or that it ended. */
        if (kind == FR_ALLOC_NONE && !strcmp(stage, "open"))
            ok = st == FR_E_NOT_AVAILABLE && (strstr(err.msg, "out of memory") ||
                                              strstr(err.msg, "the worker ended before it was ready (exit status 1)"));
        if (getenv("FR_EDGE_TRACE"))
            printf("    k %ld %s kind %d: %s: %s\n", k, stage, kind, fr_status_name(st), err.msg);
        CHECK(ok, "%s: k %ld failed in %s (kind %d): %s: '%s'", spec, k, stage, kind, fr_status_name(st), err.msg);
        if (!ok && !getenv("FR_EDGE_TRACE")) return failed;
    }
    CHECK(false, "%s: no run went through in 5000 allocations", spec);
    return failed;
}

/* A runner's repro hook (tests/iut/scripts/edge_p.sh repro: it dies by SIGSEGV) with its k-th allocation failing. */
static void repro_sweep(const char *scripts, const fr_case *c) {
    char spec[1200], out[800];
    snprintf(spec, sizeof spec, "persistent:exec sh %s/edge_p.sh repro", scripts);
    snprintf(out, sizeof out, "%s/repro.out", root);
    fr_error err;
    fr_iut *iut = NULL;
    if (!CHECKED(fr_iut_open(spec, &iut, &err) == FR_OK, "open %s: %s", spec, err.msg)) return;
    fr_case_outputs o;
    memset(&o, 0, sizeof o);
    (void)fr_iut_run(iut, c, 0, &o, &err); /* the declaration arrives with the first case */
    fr_case_outputs_free(&o);
    int failed = 0;
    for (long k = 1; k < 100; k++) {
        memset(&err, 0, sizeof err);
        fr_alloc_hook_set(k);
        fr_status st = fr_iut_repro(iut, root, out, &err);
        int kind = fr_alloc_hook_failed();
        long live = fr_alloc_hook_live();
        fr_alloc_hook_set(0);
        CHECK(live == 0, "repro: k %ld: %ld blocks not freed", k, live);
        if (kind == FR_ALLOC_NONE) {
            CHECK(st == FR_E_INTERNAL && !strcmp(err.msg, "repro: killed by signal 11 (SIGSEGV); no stderr"),
                  "repro, nothing failing: %s: %s", fr_status_name(st), err.msg);
            break;
        }
        failed++;
        CHECK(st == FR_E_NOMEM && err.msg[0], "repro: k %ld: %s: '%s'", k, fr_status_name(st), err.msg);
    }
    CHECK(failed > 0, "repro allocated nothing");
    printf("  repro: %d allocations failed in turn\n", failed);
    fr_iut_close(iut);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_iut_alloc_edges SCRIPTS_DIR EDGE_PLUGIN.so [seed]\n");
        return 2;
    }
    uint64_t seed = fr_test_seed(argc - 2, argv + 2, "test_iut_alloc_edges");
    char *r = iut_tmpdir("iut-alloc-edges");
    if (!r) return 1;
    snprintf(root, sizeof root, "%s", r);
    free(r);
    fr_gen_spec fwd = {.name = "fwd", .layout = FR_BNSD, .B = 1, .N1 = 1, .S1 = 4, .S2 = 4, .D = 8};
    fr_error err;
    fr_case c;
    fr_status st = iut_case(&fwd, seed, root, &c, &err);
    CHECK(st == FR_OK, "fwd case: %s", err.msg);
    snprintf(tmp, sizeof tmp, "%s/tmp", root);
    mkdir(tmp, 0700);
    char *old_tmp = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
    setenv("TMPDIR", tmp, 1);
    setenv("FLASHREF_EXEC_TIMEOUT", "20", 1); /* a hang is a failure, not a stuck test */
    if (st == FR_OK) {
        char spec[1200], src[800];
        /* exec: outputs to read back (tests/iut/scripts/copy_outputs.sh copies them from FR_IUT_SRC) */
        fr_case_outputs ref;
        fr_engine fast = fr_engine_default(FR_ENGINE_FAST);
        snprintf(src, sizeof src, "%s/outputs", root);
        bool have = fr_case_alloc_outputs(&c, false, &ref, &err) == FR_OK;
        CHECK(have && fr_fwd(&c.params, &c.in.fwd, &ref.fwd, &fast, &err) == FR_OK &&
                  fr_case_write_outputs(src, &ref, &err) == FR_OK,
              "outputs: %s", err.msg);
        if (have) fr_case_outputs_free(&ref);
        setenv("FR_IUT_SRC", src, 1);
        snprintf(spec, sizeof spec, "exec:sh %s/copy_outputs.sh", argv[1]);
        printf("  %s: %d allocations failed in turn\n", spec, sweep(spec, &c, FR_OK));
        unsetenv("FR_IUT_SRC");
        repro_sweep(argv[1], &c);
        snprintf(spec, sizeof spec, "persistent:sh %s/edge_p.sh quiet77", argv[1]);
        printf("  %s: %d allocations failed in turn\n", spec, sweep(spec, &c, FR_E_UNSUPPORTED));
        setenv("FR_EDGE_PLUGIN", "na", 1);
        snprintf(spec, sizeof spec, "plugin:%s", argv[2]);
        printf("  %s: %d allocations failed in turn\n", spec, sweep(spec, &c, FR_E_UNSUPPORTED));
        unsetenv("FR_EDGE_PLUGIN");
        fr_case_free(&c);
    }
    unsetenv("FLASHREF_EXEC_TIMEOUT");
    if (old_tmp) setenv("TMPDIR", old_tmp, 1);
    else unsetenv("TMPDIR");
    free(old_tmp);
    iut_rmtree(root);
    printf("test_iut_alloc_edges: %s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
