/* A runner's repro hook and variants (src/verify/iut/iut_exec.c: exec_repro, fr_iut_exec_variant_spec; iut.h:
 * fr_iut_repro, fr_iut_open_variant), with tests/iut/scripts/repro.sh, a persistent runner that declares
 * "repro": true and variants fp32 / fp16:
 *   - the hook is run as `CMD ARGS --repro CASE_DIR OUT` with both paths quoted (a quote and a space in them reach
 *     the runner intact); exit 0 writes OUT; 77 is FR_E_UNSUPPORTED, any other exit FR_E_INTERNAL with the runner's
 *     stderr; a hook that never ends is killed at the per-case timeout;
 *   - a runner that declared no hook or nothing yet, a callback without a repro function: FR_E_UNSUPPORTED;
 *   - fr_iut_open_variant swaps the declared variant's word of the command: the runner restarted as fp32 declares
 *     fp32; an undeclared variant is FR_E_INVALID_ARG; a variant that is not exactly one word of the command, no
 *     declared variants or a callback: FR_E_UNSUPPORTED. */
#include "iut_testutil.h"
#include "core/core.h"
#include "verify/iut/iut_callback.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *g_root;

/* One case through iut (both scripts answer 77), so that a persistent runner's declaration is received. */
static void run_one(fr_iut *iut) {
    fr_error err;
    fr_gen_spec s = {.name = "repro", .B = 1, .N1 = 1, .S1 = 4, .S2 = 4, .D = 8};
    fr_case c;
    if (CHECKED(iut_case(&s, 1, g_root, &c, &err) == FR_OK, "case: %s", err.msg)) {
        fr_case_outputs o;
        memset(&o, 0, sizeof o);
        fr_status st = fr_iut_run(iut, &c, 0, &o, &err);
        CHECK(st == FR_E_UNSUPPORTED, "the runner answers 77: %s %s", fr_status_name(st), err.msg);
        fr_case_outputs_free(&o);
        fr_case_free(&c);
    }
}

/* persistent:sh 'SCRIPTS/repro.sh' ARGS, its declaration received. */
static fr_iut *open_runner(const char *scripts, const char *args) {
    char spec[2000];
    snprintf(spec, sizeof spec, "persistent:sh '%s/repro.sh' %s", scripts, args);
    fr_iut *iut = NULL;
    fr_error err;
    if (!CHECKED(fr_iut_open(spec, &iut, &err) == FR_OK, "%s: %s", spec, err.msg)) return NULL;
    run_one(iut);
    return iut;
}

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *b = calloc(1, 4096);
    if (b) fread(b, 1, 4095, f);
    fclose(f);
    return b;
}

static char *dir_in_root(const char *name) {
    size_t n = strlen(g_root) + strlen(name) + 2;
    char *p = malloc(n);
    if (!p) abort();
    snprintf(p, n, "%s/%s", g_root, name);
    mkdir(p, 0700);
    return p;
}

static void test_repro(const char *scripts) {
    fr_iut *iut = open_runner(scripts, "fp16");
    if (!iut) return;
    const fr_caps *c;
    CHECK(fr_iut_caps(iut, &c) == FR_CAPS_DECLARED && c->repro && !strcmp(c->variant, "fp16"), "declaration");
    fr_error err;
    /* written: both paths arrive as one argument each, a quote and a space included */
    char *cdir = dir_in_root("case 'a' b");
    char out[1200];
    snprintf(out, sizeof out, "%s/it's repro.py", g_root);
    fr_status st = fr_iut_repro(iut, cdir, out, &err);
    CHECK(st == FR_OK, "repro: %s %s", fr_status_name(st), err.msg);
    char *text = read_all(out);
    char want[1400];
    snprintf(want, sizeof want, "case %s\nvariant fp16\n", cdir);
    CHECK(text && !strcmp(text, want), "repro file: '%s', want '%s'", text ? text : "(none)", want);
    free(text);
    free(cdir);
    /* declined: 77 */
    char *d = dir_in_root("decline");
    st = fr_iut_repro(iut, d, out, &err);
    CHECK(st == FR_E_UNSUPPORTED && strstr(err.msg, "77") && strstr(err.msg, "not this case"), "decline: %s %s",
          fr_status_name(st), err.msg);
    free(d);
    /* failed: exit 3, the runner's stderr in the message */
    d = dir_in_root("crash");
    st = fr_iut_repro(iut, d, out, &err);
    CHECK(st == FR_E_INTERNAL && strstr(err.msg, "exit") && strstr(err.msg, "broke on"), "crash: %s %s",
          fr_status_name(st), err.msg);
    free(d);
    /* a hook that never ends: killed at the per-case timeout */
    d = dir_in_root("hang");
    CHECK(fr_iut_set_timeout(iut, 1.0, &err) == FR_OK, "%s", err.msg);
    st = fr_iut_repro(iut, d, out, &err);
    CHECK(st == FR_E_INTERNAL && strstr(err.msg, "no exit after 1 s"), "hang: %s %s", fr_status_name(st), err.msg);
    free(d);
    CHECK(fr_iut_repro(iut, NULL, out, &err) == FR_E_NULL && fr_iut_repro(iut, g_root, NULL, &err) == FR_E_NULL,
          "NULL paths");
    fr_iut_close(iut);

    /* No hook declared (caps.sh declares one without "repro"), or nothing declared yet. */
    char spec[2000];
    snprintf(spec, sizeof spec,
             "persistent:sh '%s/caps.sh' '{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{}}}'", scripts);
    if (CHECKED(fr_iut_open(spec, &iut, &err) == FR_OK, "%s", err.msg)) {
        st = fr_iut_repro(iut, g_root, out, &err);
        CHECK(st == FR_E_UNSUPPORTED && strstr(err.msg, "declares no repro hook"), "pending: %s %s",
              fr_status_name(st), err.msg);
        run_one(iut);
        CHECK(fr_iut_caps(iut, NULL) == FR_CAPS_DECLARED, "caps.sh declared");
        st = fr_iut_repro(iut, g_root, out, &err);
        CHECK(st == FR_E_UNSUPPORTED && strstr(err.msg, "declares no repro hook"), "no hook: %s %s",
              fr_status_name(st), err.msg);
        fr_iut_close(iut);
    }
}

static fr_status nothing(void *ud, const fr_verify_case *c, fr_fwd_outputs *fwd, fr_bwd_outputs *bwd,
                         fr_error *err) {
    (void)ud, (void)c, (void)fwd, (void)bwd;
    return fr_fail(err, FR_E_UNSUPPORTED, "nothing");
}

static void test_variants(const char *scripts) {
    fr_error err;
    fr_iut *iut = open_runner(scripts, "fp16"), *v = NULL;
    if (!iut) return;
    /* the fp32 variant: the same command with the word fp16 replaced; the restarted runner declares fp32 */
    fr_status st = fr_iut_open_variant(iut, "fp32", &v, &err);
    if (CHECKED(st == FR_OK && v, "variant fp32: %s %s", fr_status_name(st), err.msg)) {
        CHECK(strstr(fr_iut_name(v), "repro.sh' fp32") && !strstr(fr_iut_name(v), "fp16"), "name %s",
              fr_iut_name(v));
        fr_iut_close(v);
        v = open_runner(scripts, "fp32"); /* what the variant runs */
        const fr_caps *c;
        CHECK(v && fr_iut_caps(v, &c) == FR_CAPS_DECLARED && !strcmp(c->variant, "fp32"), "fp32 declares fp32");
        fr_iut_close(v);
        v = NULL;
    }
    st = fr_iut_open_variant(iut, "bf16", &v, &err);
    CHECK(st == FR_E_INVALID_ARG && !v && strstr(err.msg, "not among"), "undeclared variant: %s %s",
          fr_status_name(st), err.msg);
    CHECK(fr_iut_open_variant(iut, NULL, &v, &err) == FR_E_NULL &&
              fr_iut_open_variant(NULL, "fp32", &v, &err) == FR_E_NULL,
          "NULL");
    fr_iut_close(iut);
    /* declared fp16 but started as "odd": fp16 is not a word of the command */
    iut = open_runner(scripts, "odd");
    if (iut) {
        st = fr_iut_open_variant(iut, "fp32", &v, &err);
        CHECK(st == FR_E_UNSUPPORTED && strstr(err.msg, "not a word"), "odd: %s %s", fr_status_name(st), err.msg);
        fr_iut_close(iut);
    }
    /* fp16 twice in the command: which one to swap is ambiguous */
    iut = open_runner(scripts, "fp16 fp16");
    if (iut) {
        st = fr_iut_open_variant(iut, "fp32", &v, &err);
        CHECK(st == FR_E_UNSUPPORTED && strstr(err.msg, "more than one"), "twice: %s %s", fr_status_name(st),
              err.msg);
        fr_iut_close(iut);
    }
    /* nothing declared (caps.sh without a line); a callback */
    char spec[2000];
    snprintf(spec, sizeof spec, "persistent:sh '%s/caps.sh' ''", scripts);
    if (CHECKED(fr_iut_open(spec, &iut, &err) == FR_OK, "%s", err.msg)) {
        run_one(iut);
        st = fr_iut_open_variant(iut, "fp32", &v, &err);
        CHECK(st == FR_E_UNSUPPORTED && strstr(err.msg, "declares no variants"), "none: %s %s", fr_status_name(st),
              err.msg);
        fr_iut_close(iut);
    }
    if (CHECKED(fr_iut_callback_open(nothing, NULL, "cb", &iut, &err) == FR_OK, "%s", err.msg)) {
        st = fr_iut_open_variant(iut, "fp32", &v, &err);
        CHECK(st == FR_E_UNSUPPORTED && strstr(err.msg, "runner's"), "callback: %s %s", fr_status_name(st), err.msg);
        st = fr_iut_repro(iut, g_root, g_root, &err);
        CHECK(st == FR_E_UNSUPPORTED, "a callback without a repro function: %s", fr_status_name(st));
        fr_iut_close(iut);
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_iut_repro SCRIPTS_DIR\n");
        return 2;
    }
    g_root = iut_tmpdir("iut_repro");
    if (!g_root) return 1;
    test_repro(argv[1]);
    test_variants(argv[1]);
    iut_rmtree(g_root);
    free(g_root);
    return fr_test_exit("test_iut_repro");
}
