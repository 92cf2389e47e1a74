/* libFuzzer: the runner capability handshake (docs/exec-protocol.md, "Runner capabilities (declared)") on what a runner
 * may send: the text after "flashref-capabilities: " through fr_caps_parse, and through fr_iut_declare as a callback
 * implementation declares it. Checked on every input:
 * - a refusal is FR_E_FORMAT with a message "capabilities: ..." that is valid UTF-8 without control characters, and
 *   leaves the capabilities at "everything allowed" (fr_caps_any); "not valid JSON" only for text that is not JSON;
 * - an accepted declaration is UTF-8 text of well-formed JSON and parses to values in range: bit sets inside their vocabularies, the
 *   default mask handover always honoured, head_dim min <= max <= 2^20, a multiple >= 1, one scale rule at most,
 *   variants distinct shell words with the variant among them, strings valid UTF-8 without control characters, an
 *   undeclared axis left at "anything" (its key unmarked), an op absent from "ops" otherwise untouched;
 * - the declaration written back as canonical JSON (every value it holds, every axis it named) parses to the same
 *   capabilities, and parsing is deterministic;
 * - fr_iut_declare agrees with fr_caps_parse (status, message, the capabilities, the text kept verbatim; a refusal
 *   marks the IUT refused) and a callback re-declared with the canonical text holds the same capabilities;
 * - fr_caps_describe stays inside buffers of every size, NUL-terminated and valid UTF-8;
 * - nothing is left open (the lowest free descriptor stays free) and, under LeakSanitizer, nothing leaks. */
#include "core/core.h"
#include "io/io_util.h"
#include "verify/iut/caps.h"
#include "verify/iut/iut.h"
#include "verify/iut/iut_callback.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Valid UTF-8 (no overlong form, surrogate or code point above U+10FFFF) of n bytes; ctl: control characters
 * (U+0000..U+001F, U+007F) allowed. Written here, apart from the library's, as the oracle. */
static int utf8_ok(const unsigned char *p, size_t n, int ctl) {
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        if (c < 0x80) {
            if (!ctl && (c < 0x20 || c == 0x7F)) return 0;
            i++;
            continue;
        }
        size_t k = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (!k || i + k > n) return 0;
        unsigned v = c & (0x7Fu >> k);
        for (size_t j = 1; j < k; j++) {
            if ((p[i + j] & 0xC0) != 0x80) return 0;
            v = (v << 6) | (p[i + j] & 0x3Fu);
        }
        unsigned min = k == 2 ? 0x80 : k == 3 ? 0x800 : 0x10000;
        if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
        i += k;
    }
    return 1;
}

/* A string field: NUL-terminated inside its n bytes, valid UTF-8 without control characters. */
static void check_str(const char *s, size_t n) {
    const char *z = memchr(s, 0, n);
    if (!z || !utf8_ok((const unsigned char *)s, (size_t)(z - s), 0)) abort();
}

static int word(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || strchr("_.+-", *s)))
            return 0;
    return 1;
}

static const unsigned kAllKeys = FR_CAPS_KEY_DTYPES | FR_CAPS_KEY_LAYOUTS | FR_CAPS_KEY_SPARSE | FR_CAPS_KEY_MASK |
                                 FR_CAPS_KEY_PSE | FR_CAPS_KEY_BAND | FR_CAPS_KEY_DROPOUT | FR_CAPS_KEY_SINK |
                                 FR_CAPS_KEY_TOPK | FR_CAPS_KEY_GQA | FR_CAPS_KEY_HEADDIM;

static void check_op(const fr_caps_op *op, const fr_caps_op *any) {
    if (op->dtypes & ~any->dtypes || op->layouts & ~0x1Fu || op->sparse_modes & ~0x1FFu || op->mask_shapes & ~0xFu ||
        op->pse_types & ~0xFu || op->pse_shapes & ~0xFu || op->keys & ~kAllKeys)
        abort();
    if (!(op->handover & FR_CAPS_BIT(FR_MASK_HINT_DEFAULT)) || op->handover >> FR_MASK_HINT_COUNT) abort();
    if ((unsigned)op->topk > FR_CAPS_TOPK_ANY || (op->scale_pow2 && op->scale_dtype)) abort();
    if (op->head_dim_multiple < 1 || op->head_dim_multiple > (1 << 20) || op->head_dim_min < 0 ||
        op->head_dim_min > op->head_dim_max)
        abort();
    if (!(op->head_dim_min == 1 && op->head_dim_max == INT64_MAX) && op->head_dim_max > (1 << 20)) abort();
    /* an axis whose key is unmarked was not declared: it still allows everything */
    if ((!(op->keys & FR_CAPS_KEY_DTYPES) && op->dtypes != any->dtypes) ||
        (!(op->keys & FR_CAPS_KEY_LAYOUTS) && op->layouts != any->layouts) ||
        (!(op->keys & FR_CAPS_KEY_SPARSE) && op->sparse_modes != any->sparse_modes) ||
        (!(op->keys & FR_CAPS_KEY_MASK) && op->mask_shapes != any->mask_shapes) ||
        (!(op->keys & FR_CAPS_KEY_PSE) && op->pse_types != any->pse_types) ||
        (!(op->keys & FR_CAPS_KEY_TOPK) && op->topk != any->topk) || (!(op->keys & FR_CAPS_KEY_BAND) && !op->band) ||
        (!(op->keys & FR_CAPS_KEY_DROPOUT) && !op->dropout) || (!(op->keys & FR_CAPS_KEY_SINK) && !op->sink) ||
        (!(op->keys & FR_CAPS_KEY_GQA) && !op->gqa) ||
        (!(op->keys & FR_CAPS_KEY_HEADDIM) && !(op->rope && op->dv_ne_dk)))
        abort();
}

static void check_caps(const fr_caps *c, const fr_caps *any) {
    check_str(c->runner, sizeof c->runner);
    check_str(c->framework, sizeof c->framework);
    check_str(c->version, sizeof c->version);
    check_str(c->variant, sizeof c->variant);
    check_str(c->unavailable, sizeof c->unavailable);
    const char *z = memchr(c->ignored, 0, sizeof c->ignored);
    if (!z) abort();
    for (const char *p = c->ignored; p < z; p++)
        if (*p < 0x20 || *p >= 0x7F) abort(); /* ignored keys are shown as printable ASCII */
    if (c->nvariants < 0 || c->nvariants > FR_CAPS_MAX_VARIANTS) abort();
    int in = 0;
    for (int i = 0; i < c->nvariants; i++) {
        check_str(c->variants[i], sizeof c->variants[i]);
        if (!word(c->variants[i])) abort();
        for (int m = 0; m < i; m++)
            if (!strcmp(c->variants[m], c->variants[i])) abort();
        in |= !strcmp(c->variants[i], c->variant);
    }
    if (c->variant[0] && (!word(c->variant) || (c->nvariants && !in))) abort();
    if (!c->declared && memcmp(c, any, sizeof *c)) abort(); /* "{}": nothing declared */
    for (int o = 0; o < 2; o++) {
        check_op(&c->op[o], &any->op[o]);
        fr_caps_op absent = any->op[o];
        absent.present = false;
        if (!c->ops_declared && memcmp(&c->op[o], &any->op[o], sizeof absent)) abort();
        if (!c->op[o].present && (!c->ops_declared || memcmp(&c->op[o], &absent, sizeof absent))) abort();
    }
}

/* ---- the capabilities written back as JSON ---- */

typedef struct out {
    char b[16384];
    size_t n;
} out;

static void put(out *o, const char *s) {
    size_t l = strlen(s);
    if (o->n + l >= sizeof o->b) abort(); /* every bounded field fits */
    memcpy(o->b + o->n, s, l + 1);
    o->n += l;
}

static void put_str(out *o, const char *s) { /* control characters are already excluded */
    put(o, "\"");
    for (; *s; s++) {
        char c[3] = {*s, 0, 0};
        if (*s == '"' || *s == '\\') c[0] = '\\', c[1] = *s;
        put(o, c);
    }
    put(o, "\"");
}

static void put_names(out *o, const char *key, unsigned bits, const unsigned *values, const char *const *names,
                      int n) {
    put(o, key);
    put(o, ":[");
    int first = 1;
    for (int i = 0; i < n; i++)
        if (bits & values[i]) put(o, first ? "" : ","), put_str(o, names[i]), first = 0;
    put(o, "],");
}

static void put_ints(out *o, const char *key, unsigned bits, int hi) {
    char t[16];
    put(o, key);
    put(o, ":[");
    int first = 1;
    for (int i = 0; i <= hi; i++)
        if (bits & FR_CAPS_BIT(i)) snprintf(t, sizeof t, "%s%d", first ? "" : ",", i), put(o, t), first = 0;
    put(o, "],");
}

static void put_bool(out *o, const char *key, bool v) {
    put(o, key);
    put(o, v ? ":true," : ":false,");
}

static void put_op(out *o, const fr_caps_op *op, const fr_caps_op *any) {
    static const char *const dt[] = {"fp32", "fp16", "bf16", "e4m3fn", "e5m2", "hif8"};
    unsigned dtv[6];
    for (int i = 0; i < 6; i++) dtv[i] = FR_CAPS_BIT(fr_dtype_from_name(dt[i]));
    static const char *const lay[] = {"BSH", "SBH", "BSND", "BNSD", "TND"};
    static const char *const ms[] = {"SS", "11SS", "B1SS", "BNSS"};
    static const char *const ps[] = {"BNSS", "BN1S", "1NSS", "compressed"};
    static const char *const ho[] = {"bool", "additive_inf", "additive_min"};
    static const unsigned bit[] = {1, 2, 4, 8, 16};
    const unsigned hov[] = {FR_CAPS_BIT(FR_MASK_HINT_BOOL), FR_CAPS_BIT(FR_MASK_HINT_ADD_INF),
                            FR_CAPS_BIT(FR_MASK_HINT_ADD_MIN)};
    static const char *const topk[] = {"none", "unique", "any"};
    char t[96];
    put(o, "{");
    if (op->keys & FR_CAPS_KEY_DTYPES) put_names(o, "\"dtypes\"", op->dtypes, dtv, dt, 6);
    if (op->keys & FR_CAPS_KEY_LAYOUTS) put_names(o, "\"layouts\"", op->layouts, bit, lay, 5);
    if (op->keys & FR_CAPS_KEY_SPARSE) put_ints(o, "\"sparse_modes\"", op->sparse_modes, 8);
    if (op->keys & FR_CAPS_KEY_MASK) put_names(o, "\"mask_shapes\"", op->mask_shapes, bit, ms, 4);
    if (op->keys & FR_CAPS_KEY_PSE) put_ints(o, "\"pse_types\"", op->pse_types, 3);
    if (op->keys & FR_CAPS_KEY_TOPK) snprintf(t, sizeof t, "\"topk\":\"%s\",", topk[op->topk]), put(o, t);
    if (op->keys & FR_CAPS_KEY_BAND) put_bool(o, "\"band\"", op->band);
    if (op->keys & FR_CAPS_KEY_DROPOUT) put_bool(o, "\"dropout\"", op->dropout);
    if (op->keys & FR_CAPS_KEY_SINK) put_bool(o, "\"sink\"", op->sink);
    if (op->keys & FR_CAPS_KEY_GQA) put_bool(o, "\"gqa\"", op->gqa);
    if (op->keys & FR_CAPS_KEY_HEADDIM) put_bool(o, "\"rope\"", op->rope), put_bool(o, "\"dv_ne_dk\"", op->dv_ne_dk);
    put_names(o, "\"pse_shapes\"", op->pse_shapes, bit, ps, 4);
    put_names(o, "\"mask_handover\"", op->handover, hov, ho, 3);
    put_bool(o, "\"prefix\"", op->prefix);
    put_bool(o, "\"empty\"", op->empty);
    put_bool(o, "\"s1_le_s2\"", op->s1_le_s2);
    if (op->head_dim_min != any->head_dim_min || op->head_dim_max != any->head_dim_max)
        snprintf(t, sizeof t, "\"head_dim\":[%lld,%lld],", (long long)op->head_dim_min, (long long)op->head_dim_max),
            put(o, t);
    snprintf(t, sizeof t, "\"head_dim_multiple\":%lld,", (long long)op->head_dim_multiple);
    put(o, t);
    put(o, op->scale_pow2 ? "\"scale\":\"2^k/sqrt(D)\"}" : op->scale_dtype ? "\"scale\":\"dtype\"}" : "\"scale\":\"any\"}");
}

static void write_back(out *o, const fr_caps *c, const fr_caps *any) {
    o->n = 0;
    o->b[0] = 0;
    if (!c->declared) {
        put(o, "{}");
        return;
    }
    put(o, "{\"format\":\"" FR_CAPS_FORMAT "\",\"runner\":");
    put_str(o, c->runner);
    put(o, ",\"framework\":{\"name\":");
    put_str(o, c->framework);
    put(o, ",\"version\":");
    put_str(o, c->version);
    put(o, "}");
    if (c->variant[0]) put(o, ",\"variant\":"), put_str(o, c->variant);
    if (c->nvariants) {
        put(o, ",\"variants\":[");
        for (int i = 0; i < c->nvariants; i++) put(o, i ? "," : ""), put_str(o, c->variants[i]);
        put(o, "]");
    }
    if (c->unavailable[0]) put(o, ",\"unavailable\":"), put_str(o, c->unavailable);
    put(o, c->repro ? ",\"repro\":true" : ",\"repro\":false");
    if (c->ops_declared) {
        put(o, ",\"ops\":{");
        int first = 1;
        for (int k = 0; k < 2; k++) {
            if (!c->op[k].present) continue;
            put(o, first ? "" : ","), put(o, k ? "\"bwd\":" : "\"fwd\":"), first = 0;
            put_op(o, &c->op[k], &any->op[k]);
        }
        put(o, "}");
    }
    put(o, "}");
}

/* Equal but for the ignored keys (the written-back text has none). */
static int same(const fr_caps *a, const fr_caps *b) {
    fr_caps x = *a, y = *b;
    memset(x.ignored, 0, sizeof x.ignored);
    memset(y.ignored, 0, sizeof y.ignored);
    return !memcmp(&x, &y, sizeof x);
}

static fr_status nothing(void *ud, const fr_verify_case *c, fr_fwd_outputs *fwd, fr_bwd_outputs *bwd,
                         fr_error *err) {
    (void)ud, (void)c, (void)fwd, (void)bwd;
    return fr_fail(err, FR_E_UNSUPPORTED, "fuzz_caps runs no case");
}

/* The declaration through a callback implementation, as flashref.verify(fn, capabilities=...) hands it over. */
static void through_iut(const uint8_t *data, size_t size, fr_status want, const fr_error *perr, const fr_caps *c,
                        const out *canon) {
    fr_iut *iut = NULL;
    fr_error err;
    if (fr_iut_callback_open(nothing, NULL, "fuzz_caps", &iut, &err) != FR_OK) abort();
    fr_status st = fr_iut_declare(iut, (const char *)data, size, &err);
    const fr_caps *held = NULL;
    fr_caps_state state = fr_iut_caps(iut, &held);
    if (st != want) abort();
    if (st != FR_OK) {
        if (strcmp(err.msg, perr->msg) || !fr_iut_refused(iut) || strcmp(fr_iut_refused(iut), perr->msg) ||
            !fr_iut_gave_up(iut) || state != FR_CAPS_NONE || held || fr_iut_caps_json(iut))
            abort();
    } else {
        const char *kept = fr_iut_caps_json(iut);
        if (fr_iut_refused(iut) || fr_iut_gave_up(iut) || !kept || memcmp(kept, data, size) || kept[size]) abort();
        if (state != (c->declared ? FR_CAPS_DECLARED : FR_CAPS_NONE) || (c->declared != !!held)) abort();
        if (held && memcmp(held, c, sizeof *c)) abort();
        /* declared again, in the canonical form: the same capabilities */
        if (fr_iut_declare(iut, canon->b, canon->n, &err) != FR_OK) abort();
        state = fr_iut_caps(iut, &held);
        if (state != (c->declared ? FR_CAPS_DECLARED : FR_CAPS_NONE) || (held && !same(held, c))) abort();
    }
    fr_iut_close(iut);
}

static void check_describe(const fr_caps *c) {
    static const size_t sizes[] = {1, 2, 5, 17, 64, 400, 4096};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        char *b = malloc(n); /* exactly n: a write past it is an ASan report */
        if (!b) abort();
        memset(b, 'x', n);
        fr_caps_describe(c, b, n);
        const char *z = memchr(b, 0, n);
        if (!z || !utf8_ok((const unsigned char *)b, (size_t)(z - b), 0)) abort();
        if (n == 4096 && !c->declared && strcmp(b, "nothing declared")) abort();
        free(b);
    }
    fr_caps_describe(c, NULL, 0); /* n 0: nothing written */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int free_fd = -1;
    static fr_caps any;
    if (free_fd < 0) {
        free_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (free_fd < 0) abort();
        close(free_fd);
        fr_caps_any(&any);
    }
    fr_caps c, again;
    fr_error err, err2;
    memset(&err, 0, sizeof err);
    memset(&c, 0x5A, sizeof c); /* the parser must set every byte either way */
    fr_status st = fr_caps_parse((const char *)data, size, &c, &err);
    fr_status st2 = fr_caps_parse((const char *)data, size, &again, &err2);
    if (st != st2 || memcmp(&c, &again, sizeof c) || (st != FR_OK && strcmp(err.msg, err2.msg))) abort();
    out *canon = malloc(sizeof *canon);
    if (!canon) abort();
    canon->n = 0;
    canon->b[0] = 0;
    if (st != FR_OK) {
        const char *z = memchr(err.msg, 0, sizeof err.msg);
        if (st != FR_E_FORMAT || err.status != FR_E_FORMAT || !z || strncmp(err.msg, "capabilities: ", 14) ||
            !err.msg[14] || !utf8_ok((const unsigned char *)err.msg, (size_t)(z - err.msg), 0))
            abort();
        if (memcmp(&c, &any, sizeof c)) abort(); /* refused: everything allowed, as documented */
        if (!strncmp(err.msg, "capabilities: not valid JSON", 28)) {
            char *text = malloc(size + 1); /* well-formed JSON that cJSON refused would be out of memory */
            if (!text) abort();
            memcpy(text, data, size);
            text[size] = 0;
            if (fr_io_json_syntax_ok(text)) abort();
            free(text);
        }
    } else {
        if (!utf8_ok(data, size, 1)) abort(); /* the declaration is UTF-8 (control characters: JSON's whitespace) */
        char *text = malloc(size + 1);       /* and well-formed JSON (RFC 8259), not what cJSON merely tolerates */
        if (!text) abort();
        memcpy(text, data, size);
        text[size] = 0;
        if (!fr_io_json_syntax_ok(text)) abort();
        free(text);
        check_caps(&c, &any);
        write_back(canon, &c, &any);
        fr_caps back;
        if (fr_caps_parse(canon->b, canon->n, &back, &err2) != FR_OK || !same(&back, &c) || back.ignored[0]) abort();
    }
    through_iut(data, size, st, &err, &c, canon);
    free(canon);
    check_describe(&c);
    if (fcntl(free_fd, F_GETFD) != -1) abort(); /* something opened and not closed */
    return 0;
}
