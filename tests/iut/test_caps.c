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

/* head, then item n times, then tail: refused with want. */
static void refused_repeat(const char *head, const char *item, int n, const char *tail, const char *want) {
    char big[4096];
    snprintf(big, sizeof big, "%s", head);
    for (int k = 0; k < n; k++) strncat(big, item, sizeof big - strlen(big) - 1);
    strncat(big, tail, sizeof big - strlen(big) - 1);
    refused(big, want);
}

/* Every refusal of the parser names the key's path and what is wrong; the keys it reads beyond the first test's. */
static void test_parser_keys(void) {
#define F "{\"format\":\"flashref-capabilities/1\","
    static const struct {
        const char *json, *want;
    } bad[] = {
        {F "\"runner\":\"a\\u0001b\"}", "capabilities: runner: a control character in the string"},
        {F "\"runner\":\"a\\u007fb\"}", "runner: a control character"},
        {F "\"runner\":3}", "runner: expected a string, got"},
        {F "\"framework\":[]}", "framework: expected an object"},
        {F "\"framework\":{\"name\":1}}", "framework.name: expected a string"},
        {F "\"framework\":{\"version\":true}}", "framework.version: expected a string"},
        {F "\"variants\":\"a\"}", "variants: expected an array of strings"},
        {F "\"variants\":[\"a\",\"a\"]}", "variants[1]: \"a\" twice"},
        {F "\"variants\":[\"a\",\"b c\"]}", "variants[1]: \"b c\" is not one word"},
        {F "\"variants\":[\"a\",7]}", "variants[1]: expected a string"},
        {F "\"variant\":\"\"}", "variant: \"\" is not one word"},
        {F "\"unavailable\":\"\"}", "unavailable: an empty reason"},
        {F "\"notes\":{}}", "notes: expected an array of strings"},
        {F "\"notes\":[\"a\",2]}", "notes[1]: expected a string"},
        {F "\"repro\":\"yes\"}", "repro: expected true or false"},
        {F "\"ops\":[]}", "ops: expected an object"},
        {F "\"ops\":{\"fwd\":3}}", "ops.fwd: expected an object"},
        {F "\"ops\":{\"bwd\":{\"dtypes\":\"fp16\"}}}", "ops.bwd.dtypes: expected an array of names"},
        {F "\"ops\":{\"fwd\":{\"layouts\":[3]}}}", "ops.fwd.layouts: entry 0: a number is not one of BSH, SBH"},
        {F "\"ops\":{\"fwd\":{\"mask_shapes\":[\"SS\",\"S1\"]}}}", "entry 1: \"S1\" is not one of SS, 11SS"},
        {F "\"ops\":{\"fwd\":{\"pse_shapes\":[\"BNS\"]}}}", "ops.fwd.pse_shapes: entry 0"},
        {F "\"ops\":{\"fwd\":{\"mask_handover\":[\"none\"]}}}", "ops.fwd.mask_handover: entry 0"},
        {F "\"ops\":{\"fwd\":{\"pse_types\":3}}}", "ops.fwd.pse_types: expected an array of integers"},
        {F "\"ops\":{\"fwd\":{\"pse_types\":[4]}}}", "ops.fwd.pse_types[0]: 4 is not an integer in 0..3"},
        {F "\"ops\":{\"fwd\":{\"sparse_modes\":[1.5]}}}", "sparse_modes[0]: 1.5 is not an integer"},
        {F "\"ops\":{\"fwd\":{\"sparse_modes\":[\"1\"]}}}", "sparse_modes[0]: expected an integer"},
        {F "\"ops\":{\"fwd\":{\"topk\":1}}}", "ops.fwd.topk: expected \"none\", \"unique\" or \"any\""},
        {F "\"ops\":{\"fwd\":{\"topk\":\"some\"}}}", "ops.fwd.topk: \"some\" is not none, unique or any"},
        {F "\"ops\":{\"fwd\":{\"scale\":\"2^k\"}}}", "ops.fwd.scale: expected \"any\""},
        {F "\"ops\":{\"fwd\":{\"scale\":1}}}", "ops.fwd.scale: expected \"any\""},
        {F "\"ops\":{\"fwd\":{\"head_dim\":[1]}}}", "ops.fwd.head_dim: expected [min, max], got an array"},
        {F "\"ops\":{\"fwd\":{\"head_dim\":64}}}", "ops.fwd.head_dim: expected [min, max], got a number"},
        {F "\"ops\":{\"fwd\":{\"head_dim\":[-1,4]}}}", "ops.fwd.head_dim[0]: -1 is not an integer"},
        {F "\"ops\":{\"fwd\":{\"head_dim\":[1,2097152]}}}", "ops.fwd.head_dim[1]: 2097152 is not an integer"},
        {F "\"ops\":{\"fwd\":{\"head_dim_multiple\":0}}}", "head_dim_multiple: 0 is not an integer in 1..1048576"},
        {F "\"ops\":{\"fwd\":{\"sink\":null}}}", "ops.fwd.sink: expected true or false, got null"},
        {F "\"ops\":{\"fwd\":{\"dtypes\":[],\"dtypes\":[]}}}", "ops.fwd: duplicate key \"dtypes\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fr_caps c;
        refused(bad[i].json, bad[i].want);
        fr_error err;
        if (parse(bad[i].json, &c, &err) != FR_OK)
            CHECK(!c.declared && c.op[FR_CAPS_FWD].present && !c.ignored[0], "%s: caps reset to 'anything'",
                  bad[i].json);
    }
    /* more entries than any list needs, a string longer than its field, more notes than allowed */
    char big[4096];
    refused_repeat(F "\"ops\":{\"fwd\":{\"dtypes\":[\"fp16\"", ",\"fp16\"", 64, "]}}}",
                   "ops.fwd.dtypes: more than 64 entries");
    refused_repeat(F "\"ops\":{\"fwd\":{\"sparse_modes\":[0", ",0", 64, "]}}}",
                   "ops.fwd.sparse_modes: more than 64 entries");
    refused_repeat(F "\"notes\":[\"n\"", ",\"n\"", 64, "]}", "notes: more than 64");
    refused_repeat(F "\"runner\":\"", "r", 200, "\"}", "runner: a string of 200 bytes (at most 127)");
    strcpy(big, F "\"variants\":[\"v0\"");
    for (int k = 1; k <= FR_CAPS_MAX_VARIANTS; k++) snprintf(big + strlen(big), 16, ",\"v%d\"", k);
    strcat(big, "]}");
    refused(big, "variants: more than 16");
    /* the arguments, and text that is not text */
    fr_caps c;
    fr_error err;
    CHECK(fr_caps_parse("{}", 2, NULL, &err) == FR_E_NULL, "NULL caps");
    CHECK(fr_caps_parse(NULL, 3, &c, &err) == FR_E_NULL && strstr(err.msg, "NULL text"), "NULL text: %s", err.msg);
    CHECK(fr_caps_parse("{}\0", 3, &c, &err) == FR_E_FORMAT && strstr(err.msg, "a NUL byte"), "NUL: %s", err.msg);
    CHECK(fr_caps_parse(NULL, 0, &c, &err) == FR_E_FORMAT && strstr(err.msg, "not valid JSON (byte 0)"), "empty: %s",
          err.msg);
    /* accepted: the rest of the keys, read into their fields */
    const char *ok = F "\"runner\":\"rr\",\"unavailable\":\"no device\",\"notes\":[\"a\",\"b\"],\"framework\":{\"name\":"
                     "\"fw\",\"version\":\"2.0\",\"build\":\"x\"},\"ops\":{\"fwd\":{\"pse_shapes\":[\"BNSS\",\"compressed\"],"
                     "\"pse_types\":[0,3],\"topk\":\"any\",\"scale\":\"2^k/sqrt(D)\",\"band\":false,\"prefix\":true,"
                     "\"s1_le_s2\":true,\"empty\":false,\"dv_ne_dk\":false,\"fancy\":1},\"bwd\":{\"dtypes\":[\"bf16\","
                     "\"e4m3fn\",\"hif8\"],\"scale\":\"dtype\",\"topk\":\"unique\",\"layouts\":[\"TND\"]},"
                     "\"mid\":{}},\"k\\u0007y\":1}";
    CHECK(parse(ok, &c, &err) == FR_OK, "%s", err.msg);
    const fr_caps_op *f = &c.op[FR_CAPS_FWD], *b = &c.op[FR_CAPS_BWD];
    CHECK(!strcmp(c.runner, "rr") && !strcmp(c.unavailable, "no device") && !strcmp(c.version, "2.0") &&
              c.ops_declared && f->present && b->present, "top keys");
    CHECK(f->pse_shapes == (FR_CAPS_BIT(0) | FR_CAPS_BIT(3)) && f->pse_types == (FR_CAPS_BIT(0) | FR_CAPS_BIT(3)) &&
              f->topk == FR_CAPS_TOPK_ANY && f->scale_pow2 && !f->scale_dtype && !f->band && f->prefix &&
              f->s1_le_s2 && !f->empty && !f->dv_ne_dk, "fwd keys");
    CHECK(b->dtypes == (FR_CAPS_BIT(FR_BF16) | FR_CAPS_BIT(FR_E4M3FN) | FR_CAPS_BIT(FR_HIF8)) && b->scale_dtype &&
              !b->scale_pow2 && b->topk == FR_CAPS_TOPK_UNIQUE && b->layouts == FR_CAPS_BIT(FR_TND - FR_BSH),
          "bwd keys");
    CHECK(!strcmp(c.ignored, "framework.build, ops.fwd.fancy, ops.mid, k?y"), "ignored keys, sanitised: '%s'",
          c.ignored);
    char d[256];
    fr_caps_describe(&c, d, sizeof d);
    CHECK(!strcmp(d, "fw 2.0 / rr; fwd fp32,fp16,bf16,e4m3fn,e5m2,hif8; bwd bf16,e4m3fn,hif8; unavailable: no device"),
          "describe: '%s'", d);
    char small[12];
    fr_caps_describe(&c, small, sizeof small);
    CHECK(!strcmp(small, "fw 2.0 / rr"), "describe into 12 bytes: '%s'", small);
    fr_caps_describe(&c, small, 0);
    CHECK(parse("{}", &c, &err) == FR_OK, "{}");
    fr_caps_describe(&c, d, sizeof d);
    CHECK(!strcmp(d, "nothing declared"), "describe of nothing: '%s'", d);
    /* the list of ignored keys stops before it overflows (160 bytes): the first keys listed, never a partial one */
    strcpy(big, F "\"ops\":{");
    for (int k = 0; k < 40; k++) snprintf(big + strlen(big), 64, "%s\"unknown_op_%02d\":{}", k ? "," : "", k);
    strcat(big, "}}");
    CHECK(parse(big, &c, &err) == FR_OK && !strncmp(c.ignored, "ops.unknown_op_00, ops.unknown_op_01", 36) &&
              strlen(c.ignored) < sizeof c.ignored, "ignored list bounded: '%s'", c.ignored);
#undef F
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_caps SCRIPTS_DIR\n");
        return 2;
    }
    test_parser();
    test_parser_keys();
    test_persistent(argv[1]);
    test_callback();
    return fr_test_exit("test_caps");
}
