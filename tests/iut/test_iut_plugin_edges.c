/* The edges of the plugin IUT (src/verify/iut/iut_plugin.c and its worker in iut_exec.c) that test_iut_plugin and the
 * hostile corpus leave, with tests/iut/edge_plugin.c (FR_EDGE_PLUGIN picks its behaviour per worker):
 *   - refused at open, FR_E_NOT_AVAILABLE with the reason: an entry point returning NULL, no fwd, a file that is not a
 *     shared library, a worker that exits before it is ready (its stderr in the message), one that never gets ready;
 *   - the run's own errors passed through: NULL, an empty path, a bad FLASHREF_EXEC_TIMEOUT, a missing TMPDIR;
 *   - a plugin named relative to the working directory, or by a path longer than 1100 bytes;
 *   - no variants, no repro hook, FLASHREF_EXEC_TIMEOUT read for the worker;
 *   - per case: FR_E_NOT_AVAILABLE from fwd is a SKIP, a nameless plugin named by its path, an empty message, a
 *     message of several lines, a bwd status that is not an fr_status, a
 *     failing bwd and one that returns FR_OK without writing, a worker that dies in a case and then cannot start again.
 * usage: test_iut_plugin_edges EDGE_PLUGIN.so [seed] */
#define _GNU_SOURCE
#include "iut_testutil.h"
#include "verify/iut/iut_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *so;
static char root[600];

/* Opens plugin:path with FR_EDGE_PLUGIN=mode; the status, *out the IUT (NULL when not opened). */
static fr_status open_mode(const char *path, const char *mode, fr_iut **out, fr_error *err) {
    char spec[2400];
    snprintf(spec, sizeof spec, "plugin:%s", path);
    setenv("FR_EDGE_PLUGIN", mode, 1);
    memset(err, 0, sizeof *err);
    *out = NULL;
    return fr_iut_open(spec, out, err);
}

static void refused(const char *mode, const char *want) {
    fr_error err;
    fr_iut *iut;
    fr_status st = open_mode(so, mode, &iut, &err);
    CHECK(st == FR_E_NOT_AVAILABLE && !iut && strstr(err.msg, want), "%s: %s: '%s' (want '%s')", mode,
          fr_status_name(st), err.msg, want);
    printf("  refused %-6s %s\n", mode, err.msg);
    if (iut) fr_iut_close(iut);
}

static void at_open(void) {
    char want[1300];
    snprintf(want, sizeof want, "plugin %s: flashref_plugin_v1() returned NULL", so);
    refused("null", want);
    snprintf(want, sizeof want, "plugin %s: fwd is NULL (every plugin must have a forward)", so);
    refused("nofwd", want);
    refused("exit", "plugin: the worker ended before it was ready (exit status 3); stderr: edge-exit-marker: no "
                    "licence");
    setenv("FLASHREF_EXEC_TIMEOUT", "0.5", 1);
    refused("sleep", "plugin: the worker did not start within 0.5 s");
    unsetenv("FLASHREF_EXEC_TIMEOUT");

    /* Not a shared library. */
    char fake[700];
    snprintf(fake, sizeof fake, "%s/notelf.so", root);
    FILE *f = fopen(fake, "w");
    if (f) {
        fputs("not an ELF file\n", f);
        fclose(f);
    }
    fr_error err;
    fr_iut *iut;
    fr_status st = open_mode(fake, "", &iut, &err);
    snprintf(want, sizeof want, "plugin %s: cannot load: ", fake);
    CHECK(st == FR_E_NOT_AVAILABLE && !iut && !strncmp(err.msg, want, strlen(want)), "not ELF: %s: %s",
          fr_status_name(st), err.msg);

    /* A worker has no variants and no repro hook; its timeout comes from FLASHREF_EXEC_TIMEOUT ("" the default). */
    setenv("FLASHREF_EXEC_TIMEOUT", "", 1);
    fr_status st0 = open_mode(so, "", &iut, &err);
    unsetenv("FLASHREF_EXEC_TIMEOUT");
    CHECK(st0 == FR_OK, "empty FLASHREF_EXEC_TIMEOUT: %s: %s", fr_status_name(st0), err.msg);
    if (iut) {
        char spec[256];
        st0 = fr_iut_exec_variant_spec(iut, "fp16", spec, sizeof spec, &err);
        CHECK(st0 == FR_E_UNSUPPORTED && !strcmp(err.msg, "edge-test-plugin: variants are a runner's (persistent: or "
                                                           "exec:)"),
              "variant of a plugin: %s: %s", fr_status_name(st0), err.msg);
        st0 = fr_iut_repro(iut, root, fake, &err);
        CHECK(st0 == FR_E_UNSUPPORTED && !strcmp(err.msg, "edge-test-plugin declares no repro hook (capabilities "
                                                           "\"repro\": true)"),
              "repro of a plugin: %s: %s", fr_status_name(st0), err.msg);
        st0 = fr_iut_set_timeout(iut, 2.5, &err);
        CHECK(st0 == FR_OK, "timeout of a plugin: %s: %s", fr_status_name(st0), err.msg);
        fr_iut_close(iut);
    }
    static const char *const bad[] = {"1e999", "inf", "-1", "0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("FLASHREF_EXEC_TIMEOUT", bad[i], 1);
        st0 = open_mode(so, "", &iut, &err);
        unsetenv("FLASHREF_EXEC_TIMEOUT");
        snprintf(want, sizeof want, "FLASHREF_EXEC_TIMEOUT: '%s' is not a number of seconds > 0", bad[i]);
        CHECK(st0 == FR_E_INVALID_ARG && !iut && !strcmp(err.msg, want), "FLASHREF_EXEC_TIMEOUT=%s: %s: %s", bad[i],
              fr_status_name(st0), err.msg);
    }

    /* The run's own errors keep their status. */
    fr_iut slot;
    memset(&slot, 0, sizeof slot);
    st = fr_iut_plugin_open(NULL, &slot, &err);
    CHECK(st == FR_E_NULL && !strcmp(err.msg, "plugin: NULL"), "NULL path: %s: %s", fr_status_name(st), err.msg);
    st = fr_iut_plugin_open(so, NULL, &err);
    CHECK(st == FR_E_NULL && !strcmp(err.msg, "plugin: NULL"), "NULL iut: %s: %s", fr_status_name(st), err.msg);
    st = fr_iut_plugin_open("", &slot, &err);
    CHECK(st == FR_E_INVALID_ARG && !strcmp(err.msg, "--impl: plugin: expected plugin:PATH.so, got an empty path"),
          "empty path: %s: %s", fr_status_name(st), err.msg);
    setenv("FLASHREF_EXEC_TIMEOUT", "never", 1);
    st = open_mode(so, "", &iut, &err);
    unsetenv("FLASHREF_EXEC_TIMEOUT");
    CHECK(st == FR_E_INVALID_ARG && !iut && !strcmp(err.msg, "FLASHREF_EXEC_TIMEOUT: 'never' is not a number of "
                                                              "seconds > 0"),
          "bad timeout: %s: %s", fr_status_name(st), err.msg);
    char *old = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
    char gone[700];
    snprintf(gone, sizeof gone, "%s/no-such-dir", root);
    setenv("TMPDIR", gone, 1);
    st = open_mode(so, "", &iut, &err);
    if (old) setenv("TMPDIR", old, 1);
    else unsetenv("TMPDIR");
    free(old);
    snprintf(want, sizeof want, "exec: cannot create a temporary directory in %s: No such file or directory", gone);
    CHECK(st == FR_E_IO && !iut && !strcmp(err.msg, want), "missing TMPDIR: %s: %s", fr_status_name(st), err.msg);

    /* A path longer than 1100 bytes (once cut to that length before the file was looked for: refused as missing). */
    char deep[2048];
    int len = snprintf(deep, sizeof deep, "%s", root);
    for (int k = 0; k < 6; k++) {
        len += snprintf(deep + len, sizeof deep - (size_t)len, "/%0200d", k);
        mkdir(deep, 0700);
    }
    snprintf(deep + len, sizeof deep - (size_t)len, "/edge.so");
    char *target = realpath(so, NULL);
    if (CHECKED(target && symlink(target, deep) == 0, "symlink %s", deep)) {
        st = open_mode(deep, "", &iut, &err);
        CHECK(st == FR_OK && iut && !strcmp(fr_iut_name(iut), "edge-test-plugin"), "%zu-byte path: %s: %s",
              strlen(deep), fr_status_name(st), err.msg);
        if (iut) fr_iut_close(iut);
    }
    free(target);

    /* A path without '/' is a file in the working directory (never a search of the library path). */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", so);
    char *slash = strrchr(dir, '/');
    char cwd[1024];
    if (slash && getcwd(cwd, sizeof cwd)) {
        *slash = '\0';
        if (CHECKED(chdir(dir) == 0, "chdir %s", dir)) {
            st = open_mode(slash + 1, "", &iut, &err);
            CHECK(st == FR_OK && iut && !strcmp(fr_iut_name(iut), "edge-test-plugin"), "relative %s: %s: %s",
                  slash + 1, fr_status_name(st), err.msg);
            if (iut) fr_iut_close(iut);
            CHECK(chdir(cwd) == 0, "chdir back to %s", cwd);
        }
    }
}

/* Opens the plugin in mode, runs c once: the status and message of the run. */
static fr_status run_mode(const char *mode, const fr_case *c, fr_case_outputs *o, fr_error *err, char *name,
                          size_t n) {
    fr_iut *iut;
    fr_status st = open_mode(so, mode, &iut, err);
    CHECK(st == FR_OK, "open %s: %s: %s", mode, fr_status_name(st), err->msg);
    if (st != FR_OK) return FR_E_INTERNAL;
    snprintf(name, n, "%s", fr_iut_name(iut));
    memset(o, 0, sizeof *o);
    memset(err, 0, sizeof *err);
    st = fr_iut_run(iut, c, 0, o, err);
    fr_iut_close(iut);
    return st;
}

static void per_case(const fr_case *cf, const fr_case *cb) {
    fr_error err;
    fr_case_outputs o;
    char name[256];
    fr_status st = run_mode("na", cf, &o, &err, name, sizeof name);
    CHECK(st == FR_E_UNSUPPORTED &&
              !strcmp(err.msg, "plugin edge-test-plugin: fwd: FR_E_UNSUPPORTED: edge-na-marker: no device here"),
          "na: %s: %s", fr_status_name(st), err.msg);
    fr_case_outputs_free(&o);

    st = run_mode("noname", cf, &o, &err, name, sizeof name);
    char want[1300];
    snprintf(want, sizeof want, "plugin %s: fwd: FR_E_SHAPE: (no message)", so);
    CHECK(st == FR_E_SHAPE && !strcmp(err.msg, want) && !strcmp(name, so), "noname: %s: %s (named '%s')",
          fr_status_name(st), err.msg, name);
    fr_case_outputs_free(&o);

    st = run_mode("bwd", cb, &o, &err, name, sizeof name);
    CHECK(st == FR_E_INVALID_ARG && !strcmp(err.msg, "plugin edge-test-plugin: bwd: FR_E_INVALID_ARG: edge-bwd-marker"),
          "bwd: %s: %s", fr_status_name(st), err.msg);
    fr_case_outputs_free(&o);

    st = run_mode("bwdbad", cb, &o, &err, name, sizeof name);
    CHECK(st == FR_E_INTERNAL &&
              !strcmp(err.msg, "plugin edge-test-plugin: bwd returned 999, which is not an fr_status: bwdbad-marker"),
          "bwdbad: %s: %s", fr_status_name(st), err.msg);
    fr_case_outputs_free(&o);

    /* A message of several lines reaches the verifier as one line (the status line protocol), a CR escaped. */
    st = run_mode("lines", cf, &o, &err, name, sizeof name);
    CHECK(st == FR_E_SHAPE &&
              !strcmp(err.msg, "plugin edge-test-plugin: fwd: FR_E_SHAPE: first line second line\\x0D third"),
          "lines: %s: %s", fr_status_name(st), err.msg);
    fr_case_outputs_free(&o);

    /* An empty name: the IUT is named by its path. */
    st = run_mode("emptyname", cf, &o, &err, name, sizeof name);
    snprintf(want, sizeof want, "plugin : fwd: FR_E_SHAPE: edge-fwd-marker");
    CHECK(st == FR_E_SHAPE && !strcmp(name, so) && !strcmp(err.msg, want), "emptyname: %s: %s (named '%s')",
          fr_status_name(st), err.msg, name);
    fr_case_outputs_free(&o);

    /* A bwd that returns FR_OK without writing: the worker's guard finds its outputs unwritten. */
    st = run_mode("bwdok", cb, &o, &err, name, sizeof name);
    CHECK(st == FR_E_OUTPUT && !strcmp(err.msg, "unwritten: dq: 32 of 32 elements never written (first at 0)"),
          "bwdok: %s: %s", fr_status_name(st), err.msg);
    fr_case_outputs_free(&o);

    /* The worker dies in a case; the next case's worker cannot start: that case is a crash too, with the reason. */
    char flag[700];
    snprintf(flag, sizeof flag, "%s/restart.flag", root);
    setenv("FR_EDGE_FLAG", flag, 1);
    fr_iut *iut;
    st = open_mode(so, "restart", &iut, &err);
    CHECK(st == FR_OK, "open restart: %s: %s", fr_status_name(st), err.msg);
    if (st == FR_OK) {
        memset(&o, 0, sizeof o);
        st = fr_iut_run(iut, cf, 0, &o, &err);
        fr_case_outputs_free(&o);
        CHECK(st == FR_E_INTERNAL &&
                  !strcmp(err.msg, "crash: the plugin worker ended before finishing the case (exit status 9); no "
                                   "stderr"),
              "restart, first: %s: %s", fr_status_name(st), err.msg);
        memset(&o, 0, sizeof o);
        st = fr_iut_run(iut, cf, 0, &o, &err);
        fr_case_outputs_free(&o);
        snprintf(want, sizeof want, "crash: the plugin worker did not restart: plugin %s: flashref_plugin_v1() "
                                    "returned NULL", so);
        CHECK(st == FR_E_INTERNAL && !strcmp(err.msg, want), "restart, second: %s: %s", fr_status_name(st), err.msg);
        memset(&o, 0, sizeof o);
        st = fr_iut_run(iut, cf, 0, &o, NULL); /* the same with no error record */
        fr_case_outputs_free(&o);
        CHECK(st == FR_E_INTERNAL, "restart, err NULL: %s", fr_status_name(st));
        fr_iut_close(iut);
    }
    unsetenv("FR_EDGE_FLAG");
    unsetenv("FR_EDGE_PLUGIN");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_iut_plugin_edges EDGE_PLUGIN.so [seed]\n");
        return 2;
    }
    so = argv[1];
    uint64_t seed = fr_test_seed(argc - 1, argv + 1, "test_iut_plugin_edges");
    char *r = iut_tmpdir("iut-plugin-edges");
    if (!r) return 1;
    snprintf(root, sizeof root, "%s", r);
    free(r);
    at_open();
    fr_gen_spec fwd = {.name = "fwd", .layout = FR_BNSD, .B = 1, .N1 = 1, .S1 = 4, .S2 = 4, .D = 8};
    fr_gen_spec bwd = {.name = "bwd", .bwd = true, .layout = FR_BNSD, .B = 1, .N1 = 1, .S1 = 4, .S2 = 4, .D = 8};
    fr_error err;
    fr_case cf, cb;
    fr_status sf = iut_case(&fwd, seed, root, &cf, &err);
    CHECK(sf == FR_OK, "fwd case: %s", err.msg);
    fr_status sb = iut_case(&bwd, seed, root, &cb, &err);
    CHECK(sb == FR_OK, "bwd case: %s", err.msg);
    if (sf == FR_OK && sb == FR_OK) per_case(&cf, &cb);
    if (sf == FR_OK) fr_case_free(&cf);
    if (sb == FR_OK) fr_case_free(&cb);
    iut_rmtree(root);
    printf("test_iut_plugin_edges: %s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
