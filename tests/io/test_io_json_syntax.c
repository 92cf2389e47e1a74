/* fr_io_json_syntax_ok (src/io/io_util.c), the allocation-free check that tells a malformed JSON text (FR_E_FORMAT)
 * from a parse that failed for want of memory (FR_E_NOMEM): what it accepts, cJSON (as fr_io_json_parse calls it)
 * must accept too, else a malformed case.json, history line or capability declaration is reported as out of memory.
 * Checked on strict JSON texts (all accepted), on texts cJSON alone accepts, on the two it once accepted wrongly (a
 * lone UTF-16 surrogate escape, arrays nested one level past cJSON's limit), and on every prefix and every one-byte
 * change of the corpus (seeded, printed). Also fr_io_json_type, and fr_io_mkdir / fr_io_new_dir refusing what they
 * must (a file in the way, a tree past 64 levels). */
#include "common/check.h"
#include "common/kit.h"
#include "common/seed.h"
#include "core/core.h"
#include "io/io_util.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* cJSON itself, as fr_io_json_parse calls it (fr_io_json_parse is strict: it would agree with the check by
 * construction). */
static bool cjson_ok(const char *t) {
    cJSON *j = cJSON_ParseWithOpts(t, NULL, 1);
    cJSON_Delete(j);
    return j != NULL;
}

static long g_checked;

/* The contract on one text: never accepted where cJSON refuses. */
static void strict_subset(const char *t, const char *what) {
    g_checked++;
    if (fr_io_json_syntax_ok(t)) CHECK(cjson_ok(t), "%s: accepted, cJSON refuses: '%.120s'", what, t);
}

static char *nested(int n, const char *open, const char *inner, const char *close) {
    size_t lo = strlen(open), lc = strlen(close), li = strlen(inner);
    char *b = malloc((size_t)n * (lo + lc) + li + 1);
    if (!b) abort();
    char *p = b;
    for (int k = 0; k < n; k++) memcpy(p, open, lo), p += lo;
    memcpy(p, inner, li), p += li;
    for (int k = 0; k < n; k++) memcpy(p, close, lc), p += lc;
    *p = 0;
    return b;
}

static const char *const kValid[] = {
    "0", "-0", "1", "-12.5e+3", "6.02E23", "1e-7", "true", "false", "null", "\"\"", "  \"a\\u00e9\\n\\t\\\\\\/\"  ",
    "\"\\ud83d\\ude00\"", "\"\\u0000\"", "[]", "{}", "[1, [2, [3, {\"k\": [true, false, null]}]]]",
    "{\"a\": 1, \"b\": \"x\", \"c\": [], \"d\": {}, \"e\": -0.5}", "\r\n\t[ 1 ,2 ]\r\n",
    "{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"dtypes\":[\"fp32\"],\"head_dim\":[1,256]}}}",
};

/* Texts that are not strict JSON: refused here whatever cJSON does (cJSON takes some of them: "01", "1.", a raw tab
 * in a string, a form feed as white space). */
static const char *const kInvalid[] = {
    "", " ", "01", "1.", ".5", "-", "1e", "1e+", "+1", "0x10", "tru", "nul", "falsey", "[1,]", "{\"a\":1,}", "{1:2}",
    "{\"a\" 1}", "[1 2]", "\"\t\"", "\"abc", "\"\\x\"", "\"\\u12G4\"", "\"\\u123\"", "\f1", "1 2", "[", "]", "{",
    "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800x\"", "\"\\ud800\\u0041\"", "\"\\ud800\\\"\"", "\"\\udbff\\ud800\"",
    "NaN", "Infinity", "'a'", "[1]]", "{}{}",
};

static void test_corpus(void) {
    for (size_t k = 0; k < sizeof kValid / sizeof kValid[0]; k++) {
        CHECK(fr_io_json_syntax_ok(kValid[k]) && cjson_ok(kValid[k]), "valid '%s': ok %d, cJSON %d", kValid[k],
              fr_io_json_syntax_ok(kValid[k]), cjson_ok(kValid[k]));
    }
    for (size_t k = 0; k < sizeof kInvalid / sizeof kInvalid[0]; k++) {
        CHECK(!fr_io_json_syntax_ok(kInvalid[k]), "invalid '%s' accepted", kInvalid[k]);
        strict_subset(kInvalid[k], "invalid");
        /* fr_io_json_parse refuses it too, as malformed (not out of memory), even where cJSON alone takes it */
        bool nomem = true;
        cJSON *j = fr_io_json_parse(kInvalid[k], NULL, &nomem);
        CHECK(!j && !nomem, "invalid '%s': fr_io_json_parse %s", kInvalid[k], j ? "took it" : "said no memory");
        cJSON_Delete(j);
    }
    /* cJSON's nesting limit: containers inside 1000 others are refused; accepted up to there, here too */
    static const struct {
        const char *open, *inner, *close;
    } nest[] = {{"[", "", "]"}, {"[", "1", "]"}, {"{\"a\":", "1", "}"}, {"{\"a\":", "{}", "}"}, {"[", "{}", "]"}};
    for (size_t k = 0; k < sizeof nest / sizeof nest[0]; k++)
        for (int n = CJSON_NESTING_LIMIT - 2; n <= CJSON_NESTING_LIMIT + 2; n++) {
            char *t = nested(n, nest[k].open, nest[k].inner, nest[k].close);
            bool c = cjson_ok(t);
            CHECK(fr_io_json_syntax_ok(t) == c, "%d x '%s' around '%s': ok %d, cJSON %d", n, nest[k].open,
                  nest[k].inner, fr_io_json_syntax_ok(t), c);
            free(t);
        }
}

/* Every prefix and seeded one-byte changes of each valid text: the contract holds on all. */
static void test_mutations(uint64_t seed) {
    static const char alphabet[] = "{}[]\":,\\u0123456789abcdefABCDEF-+.eEtrnl \t\n\x01\x7f";
    uint64_t s = seed;
    for (size_t k = 0; k < sizeof kValid / sizeof kValid[0]; k++) {
        const char *v = kValid[k];
        size_t n = strlen(v);
        char *t = malloc(n + 2);
        if (!t) abort();
        for (size_t cut = 0; cut < n; cut++) { /* prefixes */
            memcpy(t, v, cut);
            t[cut] = 0;
            strict_subset(t, "prefix");
        }
        for (int r = 0; r < 400; r++) { /* one byte replaced, or one inserted */
            size_t at = (size_t)fr_test_below(&s, (int64_t)n + 1);
            char ch = alphabet[fr_test_below(&s, (int64_t)sizeof alphabet - 1)];
            if (r & 1) {
                memcpy(t, v, n + 1);
                if (at < n) t[at] = ch;
            } else {
                memcpy(t, v, at);
                t[at] = ch;
                memcpy(t + at + 1, v + at, n - at + 1);
            }
            strict_subset(t, "changed");
        }
        free(t);
    }
}

static void test_types(void) {
    static const struct {
        const char *text, *type;
    } k[] = {{"null", "null"},    {"true", "a boolean"}, {"2", "a number"},
             {"\"s\"", "a string"}, {"[]", "an array"},    {"{}", "an object"}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        cJSON *j = fr_io_json_parse(k[i].text, NULL, NULL);
        CHECK(j && !strcmp(fr_io_json_type(j), k[i].type), "%s: %s", k[i].text, j ? fr_io_json_type(j) : "(none)");
        cJSON_Delete(j);
    }
    CHECK(!strcmp(fr_io_json_type(NULL), "invalid"), "NULL");
}

static void test_dirs(void) {
    const char *base = getenv("TMPDIR");
    char root[600];
    snprintf(root, sizeof root, "%.500s/fr_io_json_XXXXXX", base && *base ? base : "/tmp");
    if (!CHECKED(mkdtemp(root) != NULL, "%s", root)) return;
    fr_error err;
    char *file = fr_io_join(root, "file");
    FILE *f = file ? fopen(file, "w") : NULL;
    if (f) fclose(f);
    CHECK(f && fr_io_mkdir(file, &err) == FR_E_IO && strstr(err.msg, "exists and is not a directory"), "%s",
          err.msg);
    char *sub = fr_io_join(file, "below");
    CHECK(sub && fr_io_mkdir(sub, &err) == FR_E_IO, "a folder below a file: %s", err.msg);
    /* 66 levels under deep/: fr_io_new_dir(force) empties folders up to 64 levels deep and no deeper */
    char *deep = fr_io_join(root, "deep");
    size_t cap = strlen(deep) + 66 * 2 + 8;
    char *p = malloc(cap);
    if (p && deep) {
        snprintf(p, cap, "%s", deep);
        for (int k = 0; k < 66; k++) strcat(p, "/d");
        CHECK(fr_io_mkdir(p, &err) == FR_OK, "%s", err.msg);
        fr_status st = fr_io_new_dir(deep, true, &err);
        CHECK(st == FR_E_IO && strstr(err.msg, "more than 64 levels"), "66 levels: %s %s", fr_status_name(st),
              err.msg);
        fr_test_rm_rf(deep);
        CHECK(fr_io_new_dir(deep, false, &err) == FR_OK, "a fresh folder: %s", err.msg);
    }
    free(p), free(deep), free(sub), free(file);
    fr_test_rm_rf(root);
}

int main(int argc, char **argv) {
    uint64_t seed = fr_test_seed(argc, argv, "test_io_json_syntax");
    test_corpus();
    test_mutations(seed);
    test_types();
    test_dirs();
    printf("%ld texts checked against cJSON\n", g_checked);
    return fr_test_exit("test_io_json_syntax");
}
