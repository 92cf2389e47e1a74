/* Runner capabilities (src/verify/iut/caps.c, iut_exec.c): the strict parser (every known key typed, the offending
 * key's path in the message, unknown keys ignored and listed, duplicates and oversize refused), a persistent runner's
 * declaration under persistent-2 (DECLARED after its first answer; none declared: NONE; a malformed line: the run
 * stops with FR_E_FORMAT), and a callback's declaration (fr_iut_declare). */
#include "iut_testutil.h"
#include "core/core.h"
#include "verify/iut/caps.h"
#include "verify/iut/iut_callback.h"

#include <stdlib.h>
#include <string.h>

static fr_status parse(const char *json, fr_caps *c, fr_error *err) { return fr_caps_parse(json, strlen(json), c, err); }

static void refused(const char *json, const char *want) {
    fr_caps c;
    fr_error err;
    fr_status st = parse(json, &c, &err);
    CHECK(st == FR_E_FORMAT && strstr(err.msg, want), "%s: %s %s (want '%s')", json, fr_status_name(st), err.msg,
          want);
}

static void test_parser(void) {
    fr_caps c;
    fr_error err;
    const char *ok = "{\"format\":\"flashref-capabilities/1\",\"runner\":\"r.py fp16\",\"framework\":{\"name\":\"fw\","
                     "\"version\":\"1.2\"},\"variant\":\"fp16\",\"variants\":[\"fp32\",\"fp16\"],\"repro\":true,"
                     "\"ops\":{\"fwd\":{\"dtypes\":[\"fp32\",\"fp16\"],\"layouts\":[\"BNSD\"],\"sparse_modes\":[0,2],"
                     "\"mask_shapes\":[\"SS\",\"B1SS\"],\"mask_handover\":[\"bool\",\"additive_min\"],\"gqa\":true,"
                     "\"dropout\":false,\"topk\":\"none\",\"head_dim\":[1,256],\"head_dim_multiple\":2}},"
                     "\"future_key\":1}";
    CHECK(parse(ok, &c, &err) == FR_OK, "%s", err.msg);
    CHECK(c.declared && c.repro && c.nvariants == 2 && !strcmp(c.variant, "fp16") && !strcmp(c.framework, "fw"));
    const fr_caps_op *f = &c.op[FR_CAPS_FWD];
    CHECK(f->present && !c.op[FR_CAPS_BWD].present, "an op left out of ops is not supported");
    CHECK(f->dtypes == (FR_CAPS_BIT(FR_F32) | FR_CAPS_BIT(FR_F16)));
    CHECK(f->layouts == FR_CAPS_BIT(FR_BNSD - FR_BSH) && f->sparse_modes == (FR_CAPS_BIT(0) | FR_CAPS_BIT(2)));
    CHECK(f->mask_shapes == (FR_CAPS_MASK_SS | FR_CAPS_MASK_B1SS));
    CHECK(f->handover == (FR_CAPS_BIT(FR_MASK_HINT_DEFAULT) | FR_CAPS_BIT(FR_MASK_HINT_BOOL) |
                          FR_CAPS_BIT(FR_MASK_HINT_ADD_MIN)));
    CHECK(f->gqa && !f->dropout && f->topk == FR_CAPS_TOPK_NONE && f->head_dim_max == 256 &&
          f->head_dim_multiple == 2);
    CHECK(f->sink && f->rope, "undeclared axes allow everything");
    CHECK(strstr(c.ignored, "future_key"), "ignored: '%s'", c.ignored);
    CHECK(parse("{}", &c, &err) == FR_OK && !c.declared && c.op[FR_CAPS_BWD].present, "{}: nothing declared");
    refused("{\"runner\":\"x\"}", "format: missing");
    refused("{\"format\":\"flashref-capabilities/2\"}", "format");
    refused("{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"dtypes\":[\"fp64\"]}}}", "ops.fwd.dtypes");
    refused("{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"sparse_modes\":[9]}}}", "sparse_modes[0]");
    refused("{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"head_dim\":[9,3]}}}", "min 9 > max 3");
    refused("{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"gqa\":1}}}", "ops.fwd.gqa");
    refused("{\"format\":\"flashref-capabilities/1\",\"repro\":true,\"repro\":false}", "duplicate key");
    refused("{\"format\":\"flashref-capabilities/1\",\"variant\":\"a b\"}", "one word");
    refused("{\"format\":\"flashref-capabilities/1\",\"variant\":\"c\",\"variants\":[\"a\",\"b\"]}", "not among");
    refused("{\"format\":\"flashref-capabilities/1\",\"runner\":\"a\\u0000b\"}", "\\u0000");
    refused("[1]", "expected an object");
    /* Found by fuzz_caps (fuzz/corpus/caps keeps each input): what the runner wrote reaches the message only as one
     * line of valid UTF-8 (a duplicate key "ESC[31m\n", a name cut inside a character) ... */
    const char *dup = "{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"\\u001b[31m\\n\":1,\"\\u001b[31m\\n\":2}}}";
    CHECK(parse(dup, &c, &err) == FR_E_FORMAT && strstr(err.msg, "duplicate key \"?[31m?\"") &&
              !strchr(err.msg, '\n') && !strchr(err.msg, 0x1b), "%s", err.msg);
    char cut[200];
    snprintf(cut, sizeof cut, "{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"dtypes\":[\"%s\u00e9\"]}}}",
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"); /* 39 bytes, then a 2-byte character across the 40th */
    CHECK(parse(cut, &c, &err) == FR_E_FORMAT && strstr(err.msg, "aaa\" is not one of"), "%s", err.msg);
    /* ... the text is UTF-8 and strict JSON: a bad \u escape (cJSON reads it as U+0000, cutting the string to "a"), a
     * lone surrogate (FR_E_FORMAT, not the out of memory a well-formed text cJSON refuses would mean) ... */
    refused("{\"format\":\"flashref-capabilities/1\",\"runner\":\"caf\xe9\"}", "not UTF-8 (byte 49)");
    refused("{\"format\":\"flashref-capabilities/1\",\"runner\":\"a\\uzzzzb\"}", "not valid JSON");
    refused("{\"format\":\"flashref-capabilities/1\",\"runner\":\"\\ud800\"}", "not valid JSON");
    refused("{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"head_dim\":[01,8]}}}", "not valid JSON");
    char *deep = malloc(2100);
    if (deep) { /* 1001 levels: past cJSON's limit, a malformed text (not out of memory) */
        int k = snprintf(deep, 2100, "{\"format\":\"flashref-capabilities/1\",\"x\":");
        memset(deep + k, '[', 1000), memset(deep + k + 1000, ']', 1000);
        strcpy(deep + k + 2000, "}");
        refused(deep, "not valid JSON");
        free(deep);
    }
    /* ... and an escaped backslash before u0000 is text, not a NUL. */
    const char *text = "{\"format\":\"flashref-capabilities/1\",\"runner\":\"a\\\\u0000\"}";
    CHECK(parse(text, &c, &err) == FR_OK && !strcmp(c.runner, "a\\u0000"), "%s: %s", text, err.msg);
    /* fr_caps_describe cuts between characters (the hunt's report line holds 400 bytes) */
    CHECK(parse("{\"format\":\"flashref-capabilities/1\",\"runner\":\"\u00e9\u00e9\u00e9\"}", &c, &err) == FR_OK,
          "%s", err.msg);
    char d[10]; /* "? / " and 2.5 characters of 2 bytes */
    fr_caps_describe(&c, d, sizeof d);
    CHECK(!strcmp(d, "? / \u00e9\u00e9"), "describe cut inside a character: '%s'", d);
    refused("{\"format\":", "not valid JSON");
    char *big = malloc(FR_CAPS_MAX_BYTES + 10);
    if (big) {
        memset(big, ' ', FR_CAPS_MAX_BYTES + 9);
        big[0] = '{', big[FR_CAPS_MAX_BYTES + 8] = '}', big[FR_CAPS_MAX_BYTES + 9] = 0;
        refused(big, "bytes (at most");
        free(big);
    }
}

/* One case through persistent:sh caps.sh ARG; returns the run's status. */
static fr_status run_caps(const char *scripts, const char *root, const char *arg, fr_iut **out, fr_error *err) {
    char spec[2000];
    snprintf(spec, sizeof spec, "persistent:sh '%s/caps.sh' '%s'", scripts, arg);
    fr_iut *iut;
    CHECK(fr_iut_open(spec, &iut, err) == FR_OK, "%s: %s", spec, err->msg);
    CHECK(fr_iut_caps(iut, NULL) == FR_CAPS_PENDING, "a persistent runner's declaration comes with its first answer");
    fr_gen_spec s = {.name = "caps", .B = 1, .N1 = 1, .S1 = 4, .S2 = 4, .D = 8};
    fr_case c;
    fr_status st = iut_case(&s, 1, root, &c, err);
    CHECK(st == FR_OK, "case: %s", err->msg);
    fr_case_outputs o;
    memset(&o, 0, sizeof o);
    st = fr_iut_run(iut, &c, 0, &o, err);
    fr_case_outputs_free(&o); /* fr_iut_run's outputs are the caller's on failure too */
    fr_case_free(&c);
    *out = iut;
    return st;
}

static void test_persistent(const char *scripts) {
    char *root = iut_tmpdir("caps");
    fr_iut *iut;
    fr_error err;
    const fr_caps *c;
    fr_status st = run_caps(scripts, root, "{\"format\":\"flashref-capabilities/1\",\"runner\":\"caps.sh\","
                                            "\"ops\":{\"fwd\":{\"dtypes\":[\"fp16\"]}}}", &iut, &err);
    CHECK(st == FR_E_UNSUPPORTED, "%s %s", fr_status_name(st), err.msg);
    CHECK(fr_iut_caps(iut, &c) == FR_CAPS_DECLARED && c && !strcmp(c->runner, "caps.sh") &&
          c->op[FR_CAPS_FWD].dtypes == FR_CAPS_BIT(FR_F16) && !c->op[FR_CAPS_BWD].present);
    CHECK(fr_iut_caps_json(iut) && strstr(fr_iut_caps_json(iut), "caps.sh"));
    fr_iut_close(iut);
    st = run_caps(scripts, root, "", &iut, &err);
    CHECK(st == FR_E_UNSUPPORTED && fr_iut_caps(iut, &c) == FR_CAPS_NONE && !c, "no line: nothing declared");
    fr_iut_close(iut);
    st = run_caps(scripts, root, "-", &iut, &err);
    CHECK(st == FR_E_FORMAT && strstr(err.msg, "capability line is refused") && fr_iut_refused(iut),
          "a malformed line stops the run: %s %s", fr_status_name(st), err.msg);
    fr_iut_close(iut);
    iut_rmtree(root);
    free(root);
}

static fr_status nothing(void *ud, const fr_verify_case *c, fr_fwd_outputs *fwd, fr_bwd_outputs *bwd,
                         fr_error *err) {
    (void)ud, (void)c, (void)fwd, (void)bwd;
    return fr_fail(err, FR_E_UNSUPPORTED, "nothing");
}

static void test_callback(void) {
    fr_iut *iut;
    fr_error err;
    CHECK(fr_iut_callback_open(nothing, NULL, "cb", &iut, &err) == FR_OK, "%s", err.msg);
    CHECK(fr_iut_caps(iut, NULL) == FR_CAPS_NONE);
    const char *j = "{\"format\":\"flashref-capabilities/1\",\"ops\":{\"bwd\":{}}}";
    CHECK(fr_iut_declare(iut, j, strlen(j), &err) == FR_OK, "%s", err.msg);
    const fr_caps *c;
    CHECK(fr_iut_caps(iut, &c) == FR_CAPS_DECLARED && !c->op[FR_CAPS_FWD].present && c->op[FR_CAPS_BWD].present);
    CHECK(fr_iut_declare(iut, "{\"x\":", 5, &err) == FR_E_FORMAT && fr_iut_refused(iut));
    fr_iut_close(iut);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_caps SCRIPTS_DIR\n");
        return 2;
    }
    test_parser();
    test_persistent(argv[1]);
    test_callback();
    return fr_test_exit("test_caps");
}
