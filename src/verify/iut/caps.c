/* The capability declaration of a runner (caps.h), parsed strictly: the runner is not trusted, so every known key is
 * checked for its type and values, with the key's path in the message. Unknown keys are ignored (the vocabulary may
 * grow) and listed. */
#include "verify/iut/caps.h"

#include "core/core.h"
#include "io/io_util.h"
#include "verify/iut/iut_proc.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fr_caps_any(fr_caps *c) {
    memset(c, 0, sizeof *c);
    for (int o = 0; o < 2; o++) {
        fr_caps_op *op = &c->op[o];
        op->present = true;
        op->dtypes = FR_CAPS_BIT(FR_F32) | FR_CAPS_BIT(FR_F16) | FR_CAPS_BIT(FR_BF16) | FR_CAPS_BIT(FR_E4M3FN) |
                     FR_CAPS_BIT(FR_E5M2) | FR_CAPS_BIT(FR_HIF8);
        op->layouts = 0x1Fu;
        op->sparse_modes = 0x1FFu;
        op->mask_shapes = 0xFu;
        op->pse_types = 0xFu;
        op->pse_shapes = 0xFu;
        op->handover = FR_CAPS_BIT(FR_MASK_HINT_DEFAULT);
        op->band = op->prefix = op->dropout = op->sink = op->rope = op->gqa = op->dv_ne_dk = op->empty = true;
        op->topk = FR_CAPS_TOPK_ANY;
        op->head_dim_min = 1;
        op->head_dim_max = INT64_MAX;
        op->head_dim_multiple = 1;
    }
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Typed getters: each fails with the key's path. */

typedef struct ctx {
    fr_error *err;
    fr_caps *c;
} ctx;

/* Alike verify/report/report.c:thr_line: kept apart because only the varargs-into-a-buffer lines are alike: this
 * turns a capability file's fault into an error status, that prints a line of a report (another room). */
static fr_status bad(ctx *x, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static fr_status bad(ctx *x, const char *path, const char *fmt, ...) {
    char m[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    return fr_fail(x->err, FR_E_FORMAT, "capabilities: %s: %s", path, m);
}

/* A runner's string as a message shows it: at most 40 bytes, cut between characters, a control character (a JSON escape
 * may make one) as '?', so that the message stays one line of valid UTF-8 (the text is valid UTF-8 by then). */
static const char *shown(const char *s, char out[static 48]) {
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && n < 40; p++) {
        if ((*p & 0xC0) == 0xC0) { /* a lead byte: its whole sequence, or stop */
            size_t k = *p >= 0xF0 ? 4 : *p >= 0xE0 ? 3 : 2;
            if (n + k > 40) break;
        }
        out[n++] = (char)(*p < 0x20 || *p == 0x7F ? '?' : *p);
    }
    out[n] = 0;
    return out;
}

static void note_ignored(ctx *x, const char *path, const char *key) {
    size_t k = strlen(x->c->ignored);
    if (k + 4 >= sizeof x->c->ignored) return;
    char san[64];
    size_t n = 0;
    for (const char *p = key; *p && n + 1 < sizeof san; p++) /* printable ASCII only: the runner chose these bytes */
        san[n++] = (*p >= 0x20 && *p < 0x7F) ? *p : '?';
    san[n] = 0;
    snprintf(x->c->ignored + k, sizeof x->c->ignored - k, "%s%s%s%s", k ? ", " : "", path, *path ? "." : "", san);
}

/* Rejects duplicate keys (cJSON keeps both) and non-objects. */
static fr_status object(ctx *x, const cJSON *j, const char *path) {
    if (!cJSON_IsObject(j)) return bad(x, path, "expected an object, got %s", fr_io_json_type(j));
    for (const cJSON *a = j->child; a; a = a->next)
        for (const cJSON *b = a->next; b; b = b->next)
            if (!strcmp(a->string, b->string)) {
                char s[48];
                return bad(x, path, "duplicate key \"%s\"", shown(a->string, s));
            }
    return FR_OK;
}

/* A string of at most n - 1 bytes of printable UTF-8 (no control characters). */
static fr_status string(ctx *x, const cJSON *j, const char *path, char *out, size_t n) {
    if (!cJSON_IsString(j)) return bad(x, path, "expected a string, got %s", fr_io_json_type(j));
    size_t l = strlen(j->valuestring);
    if (l >= n) return bad(x, path, "a string of %zu bytes (at most %zu)", l, n - 1);
    for (size_t i = 0; i < l; i++)
        if ((unsigned char)j->valuestring[i] < 0x20 || j->valuestring[i] == 0x7F)
            return bad(x, path, "a control character in the string");
    memcpy(out, j->valuestring, l + 1);
    return FR_OK;
}

static fr_status boolean(ctx *x, const cJSON *j, const char *path, bool *out) {
    if (!cJSON_IsBool(j)) return bad(x, path, "expected true or false, got %s", fr_io_json_type(j));
    *out = cJSON_IsTrue(j);
    return FR_OK;
}

static fr_status integer(ctx *x, const cJSON *j, const char *path, int64_t lo, int64_t hi, int64_t *out) {
    if (!cJSON_IsNumber(j)) return bad(x, path, "expected an integer, got %s", fr_io_json_type(j));
    double v = j->valuedouble;
    if (!(v >= (double)lo && v <= (double)hi) || v != (double)(int64_t)v)
        return bad(x, path, "%.17g is not an integer in %lld..%lld", v, (long long)lo, (long long)hi);
    *out = (int64_t)v;
    return FR_OK;
}

/* An array of names from names[0..n): bits |= 1 << index (values[index] when values is non-NULL). */
static fr_status name_set(ctx *x, const cJSON *j, const char *path, const char *const *names, int n,
                          const unsigned *values, unsigned *bits) {
    if (!cJSON_IsArray(j)) return bad(x, path, "expected an array of names, got %s", fr_io_json_type(j));
    *bits = 0;
    int i = 0;
    for (const cJSON *e = j->child; e; e = e->next, i++) {
        if (i >= 64) return bad(x, path, "more than 64 entries");
        int k = -1;
        for (int m = 0; cJSON_IsString(e) && m < n && k < 0; m++)
            if (!strcmp(e->valuestring, names[m])) k = m;
        if (k < 0) {
            char list[200];
            size_t w = 0;
            for (int m = 0; m < n && w < sizeof list; m++)
                w += (size_t)snprintf(list + w, sizeof list - w, "%s%s", m ? ", " : "", names[m]);
            char s[48];
            return bad(x, path, "entry %d: %s%s%s is not one of %s", i, cJSON_IsString(e) ? "\"" : "",
                       cJSON_IsString(e) ? shown(e->valuestring, s) : fr_io_json_type(e), cJSON_IsString(e) ? "\"" : "",
                       list);
        }
        *bits |= values ? values[k] : FR_CAPS_BIT(k);
    }
    return FR_OK;
}

/* An array of integers in 0..hi: bits |= 1 << v. */
static fr_status int_set(ctx *x, const cJSON *j, const char *path, int hi, unsigned *bits) {
    if (!cJSON_IsArray(j)) return bad(x, path, "expected an array of integers, got %s", fr_io_json_type(j));
    *bits = 0;
    int i = 0;
    for (const cJSON *e = j->child; e; e = e->next, i++) {
        if (i >= 64) return bad(x, path, "more than 64 entries");
        int64_t v = 0;
        char p[96];
        snprintf(p, sizeof p, "%s[%d]", path, i);
        fr_status st = integer(x, e, p, 0, hi, &v);
        if (st != FR_OK) return st;
        *bits |= FR_CAPS_BIT(v);
    }
    return FR_OK;
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* The per-op axes. */

static const char *const kDtypeNames[] = {"fp32", "fp16", "bf16", "e4m3fn", "e5m2", "hif8"};
static const char *const kLayoutNames[] = {"BSH", "SBH", "BSND", "BNSD", "TND"};
static const char *const kMaskShapeNames[] = {"SS", "11SS", "B1SS", "BNSS"};
static const char *const kPseShapeNames[] = {"BNSS", "BN1S", "1NSS", "compressed"};
static const char *const kHandoverNames[] = {"bool", "additive_inf", "additive_min"};
static const char *const kTopkNames[] = {"none", "unique", "any"};

/* Alike caps.c:parse_op (its own branches, key by key): kept apart because each branch reads another key into its own
 * field with its own names or range (docs/exec-protocol.md's capability keys); only the "parse, mark the key" shape
 * repeats. */
static fr_status parse_op(ctx *x, const cJSON *j, const char *opname, fr_caps_op *op) {
    char path[64], p[128];
    snprintf(path, sizeof path, "ops.%s", opname);
    fr_status st = object(x, j, path);
    if (st != FR_OK) return st;
    op->present = true;
    bool have_min = false;
    for (const cJSON *a = j->child; a && st == FR_OK; a = a->next) {
        const char *k = a->string;
        snprintf(p, sizeof p, "%s.%.40s", path, k);
        if (!strcmp(k, "dtypes")) {
            unsigned v[6];
            for (int i = 0; i < 6; i++) v[i] = FR_CAPS_BIT(fr_dtype_from_name(kDtypeNames[i]));
            st = name_set(x, a, p, kDtypeNames, 6, v, &op->dtypes);
            op->keys |= FR_CAPS_KEY_DTYPES;
        } else if (!strcmp(k, "layouts")) {
            st = name_set(x, a, p, kLayoutNames, 5, NULL, &op->layouts);
            op->keys |= FR_CAPS_KEY_LAYOUTS;
        } else if (!strcmp(k, "sparse_modes")) {
            st = int_set(x, a, p, 8, &op->sparse_modes);
            op->keys |= FR_CAPS_KEY_SPARSE;
        } else if (!strcmp(k, "mask_shapes")) {
            st = name_set(x, a, p, kMaskShapeNames, 4, NULL, &op->mask_shapes);
            op->keys |= FR_CAPS_KEY_MASK;
        } else if (!strcmp(k, "pse_types")) {
            st = int_set(x, a, p, 3, &op->pse_types);
            op->keys |= FR_CAPS_KEY_PSE;
        } else if (!strcmp(k, "pse_shapes")) {
            st = name_set(x, a, p, kPseShapeNames, 4, NULL, &op->pse_shapes);
        } else if (!strcmp(k, "mask_handover")) {
            static const unsigned v[3] = {FR_CAPS_BIT(FR_MASK_HINT_BOOL), FR_CAPS_BIT(FR_MASK_HINT_ADD_INF),
                                          FR_CAPS_BIT(FR_MASK_HINT_ADD_MIN)};
            st = name_set(x, a, p, kHandoverNames, 3, v, &op->handover);
            op->handover |= FR_CAPS_BIT(FR_MASK_HINT_DEFAULT);
        } else if (!strcmp(k, "topk")) {
            if (!cJSON_IsString(a)) {
                st = bad(x, p, "expected \"none\", \"unique\" or \"any\", got %s", fr_io_json_type(a));
            } else {
                int m = -1;
                for (int i = 0; i < 3; i++)
                    if (!strcmp(a->valuestring, kTopkNames[i])) m = i;
                char s[48];
                if (m < 0) st = bad(x, p, "\"%s\" is not none, unique or any", shown(a->valuestring, s));
                else op->topk = (fr_caps_topk)m, op->keys |= FR_CAPS_KEY_TOPK;
            }
        } else if (!strcmp(k, "scale")) {
            if (!cJSON_IsString(a) || (strcmp(a->valuestring, "any") && strcmp(a->valuestring, "2^k/sqrt(D)") &&
                                       strcmp(a->valuestring, "dtype")))
                st = bad(x, p, "expected \"any\", \"2^k/sqrt(D)\" or \"dtype\"");
            else {
                op->scale_pow2 = !strcmp(a->valuestring, "2^k/sqrt(D)");
                op->scale_dtype = !strcmp(a->valuestring, "dtype");
            }
        } else if (!strcmp(k, "head_dim")) {
            if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != 2) {
                st = bad(x, p, "expected [min, max], got %s", fr_io_json_type(a));
            } else {
                char q[140];
                snprintf(q, sizeof q, "%s[0]", p);
                st = integer(x, a->child, q, 0, 1 << 20, &op->head_dim_min);
                snprintf(q, sizeof q, "%s[1]", p);
                if (st == FR_OK) st = integer(x, a->child->next, q, 0, 1 << 20, &op->head_dim_max);
                if (st == FR_OK && op->head_dim_min > op->head_dim_max)
                    st = bad(x, p, "min %lld > max %lld", (long long)op->head_dim_min, (long long)op->head_dim_max);
                have_min = true;
            }
        } else if (!strcmp(k, "head_dim_multiple")) {
            st = integer(x, a, p, 1, 1 << 20, &op->head_dim_multiple);
        } else {
            static const char *const kFlags[] = {"band", "prefix", "dropout", "sink", "rope", "gqa",
                                                 "dv_ne_dk", "empty", "s1_le_s2"};
            bool *dst[] = {&op->band, &op->prefix, &op->dropout, &op->sink, &op->rope, &op->gqa,
                           &op->dv_ne_dk, &op->empty, &op->s1_le_s2};
            int f = -1;
            for (int i = 0; i < (int)(sizeof kFlags / sizeof kFlags[0]); i++)
                if (!strcmp(k, kFlags[i])) f = i;
            static const unsigned kKey[] = {FR_CAPS_KEY_BAND, 0, FR_CAPS_KEY_DROPOUT, FR_CAPS_KEY_SINK,
                                            FR_CAPS_KEY_HEADDIM, FR_CAPS_KEY_GQA, FR_CAPS_KEY_HEADDIM, 0, 0};
            if (f >= 0) st = boolean(x, a, p, dst[f]), op->keys |= kKey[f];
            else note_ignored(x, path, k);
        }
    }
    (void)have_min;
    return st;
}

/* ---------------------------------------------------------------------------------------------------------------- */

static bool variant_word(const char *s) {
    if (!*s) return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("_.+-", *p)))
            return false;
    return true;
}

static fr_status parse_top(ctx *x, const cJSON *root) {
    fr_caps *c = x->c;
    fr_status st = object(x, root, "(top)");
    if (st != FR_OK) return st;
    c->declared = root->child != NULL;
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (c->declared && !fmt) return bad(x, "format", "missing (expected \"%s\")", FR_CAPS_FORMAT);
    for (const cJSON *a = root->child; a && st == FR_OK; a = a->next) {
        const char *k = a->string;
        if (!strcmp(k, "format")) {
            char f[64];
            st = string(x, a, "format", f, sizeof f);
            if (st == FR_OK && strcmp(f, FR_CAPS_FORMAT) != 0)
                st = bad(x, "format", "\"%s\" is not supported (this build reads \"%s\")", f, FR_CAPS_FORMAT);
        } else if (!strcmp(k, "runner")) {
            st = string(x, a, "runner", c->runner, sizeof c->runner);
        } else if (!strcmp(k, "framework")) {
            if ((st = object(x, a, "framework")) != FR_OK) break;
            for (const cJSON *f = a->child; f && st == FR_OK; f = f->next) {
                if (!strcmp(f->string, "name")) st = string(x, f, "framework.name", c->framework, sizeof c->framework);
                else if (!strcmp(f->string, "version"))
                    st = string(x, f, "framework.version", c->version, sizeof c->version);
                else note_ignored(x, "framework", f->string);
            }
        } else if (!strcmp(k, "variant")) {
            st = string(x, a, "variant", c->variant, sizeof c->variant);
            if (st == FR_OK && !variant_word(c->variant))
                st = bad(x, "variant", "\"%s\" is not one word of letters, digits and _.+-", c->variant);
        } else if (!strcmp(k, "variants")) {
            if (!cJSON_IsArray(a)) {
                st = bad(x, "variants", "expected an array of strings, got %s", fr_io_json_type(a));
                break;
            }
            int i = 0;
            for (const cJSON *e = a->child; e && st == FR_OK; e = e->next, i++) {
                char p[32];
                snprintf(p, sizeof p, "variants[%d]", i);
                if (i >= FR_CAPS_MAX_VARIANTS) st = bad(x, "variants", "more than %d", FR_CAPS_MAX_VARIANTS);
                else st = string(x, e, p, c->variants[i], sizeof c->variants[i]);
                if (st == FR_OK && !variant_word(c->variants[i]))
                    st = bad(x, p, "\"%s\" is not one word of letters, digits and _.+-", c->variants[i]);
                for (int m = 0; st == FR_OK && m < i; m++)
                    if (!strcmp(c->variants[m], c->variants[i])) st = bad(x, p, "\"%s\" twice", c->variants[i]);
            }
            if (st == FR_OK) c->nvariants = i;
        } else if (!strcmp(k, "unavailable")) {
            st = string(x, a, "unavailable", c->unavailable, sizeof c->unavailable);
            if (st == FR_OK && !c->unavailable[0]) st = bad(x, "unavailable", "an empty reason");
        } else if (!strcmp(k, "notes")) {
            if (!cJSON_IsArray(a)) st = bad(x, "notes", "expected an array of strings, got %s", fr_io_json_type(a));
            int i = 0;
            for (const cJSON *e = st == FR_OK ? a->child : NULL; e && st == FR_OK; e = e->next, i++) {
                char p[32], tmp[1024];
                snprintf(p, sizeof p, "notes[%d]", i);
                st = i >= 64 ? bad(x, "notes", "more than 64") : string(x, e, p, tmp, sizeof tmp);
            }
        } else if (!strcmp(k, "repro")) {
            st = boolean(x, a, "repro", &c->repro);
        } else if (!strcmp(k, "ops")) {
            if ((st = object(x, a, "ops")) != FR_OK) break;
            c->ops_declared = true;
            c->op[FR_CAPS_FWD].present = c->op[FR_CAPS_BWD].present = false;
            for (const cJSON *o = a->child; o && st == FR_OK; o = o->next) {
                if (!strcmp(o->string, "fwd")) st = parse_op(x, o, "fwd", &c->op[FR_CAPS_FWD]);
                else if (!strcmp(o->string, "bwd")) st = parse_op(x, o, "bwd", &c->op[FR_CAPS_BWD]);
                else note_ignored(x, "ops", o->string);
            }
        } else {
            note_ignored(x, "", k);
        }
    }
    if (st == FR_OK && c->variant[0] && c->nvariants) {
        bool in = false;
        for (int i = 0; i < c->nvariants; i++) in |= !strcmp(c->variants[i], c->variant);
        if (!in) st = bad(x, "variant", "\"%s\" is not among \"variants\"", c->variant);
    }
    return st;
}

fr_status fr_caps_parse(const char *json, size_t len, fr_caps *c, fr_error *err) {
    if (!c) return fr_fail(err, FR_E_NULL, "capabilities: NULL");
    fr_caps_any(c);
    if (!json && len) return fr_fail(err, FR_E_NULL, "capabilities: NULL text");
    if (len > FR_CAPS_MAX_BYTES)
        return fr_fail(err, FR_E_FORMAT, "capabilities: %zu bytes (at most %d)", len, FR_CAPS_MAX_BYTES);
    if (len && memchr(json, 0, len)) return fr_fail(err, FR_E_FORMAT, "capabilities: a NUL byte in the text");
    for (size_t i = 0, slashes = 0; i + 5 < len; i++) { /* cJSON turns \u0000 into a NUL that silently ends a string */
        if (json[i] == '\\' && slashes % 2 == 0 && json[i + 1] == 'u' && !memcmp(json + i + 2, "0000", 4))
            return fr_fail(err, FR_E_FORMAT, "capabilities: \\u0000 in a string");
        slashes = json[i] == '\\' ? slashes + 1 : 0; /* "\\u0000" is a backslash and the text u0000 */
    }
    size_t bad_at = fr_utf8_invalid_at(json, len); /* the line is UTF-8 (the reports copy its strings) */
    if (bad_at < len) return fr_fail(err, FR_E_FORMAT, "capabilities: not UTF-8 (byte %zu)", bad_at);
    char *buf = malloc(len + 1);
    if (!buf) return fr_fail(err, FR_E_NOMEM, "capabilities: out of memory");
    if (len) memcpy(buf, json, len);
    buf[len] = 0;
    const char *end = NULL;
    bool nomem;
    cJSON *root = fr_io_json_parse(buf, &end, &nomem); /* strict JSON only (RFC 8259) */
    fr_status st;
    if (nomem) {
        st = fr_fail(err, FR_E_NOMEM, "capabilities: out of memory");
    } else if (!root) {
        size_t off = end && end >= buf && end <= buf + len ? (size_t)(end - buf) : 0;
        if (!end) st = fr_fail(err, FR_E_FORMAT, "capabilities: not valid JSON (RFC 8259)");
        else st = fr_fail(err, FR_E_FORMAT, "capabilities: not valid JSON (byte %zu)", off);
    } else {
        ctx x = {err, c};
        st = parse_top(&x, root);
        cJSON_Delete(root);
    }
    free(buf);
    if (st != FR_OK) {
        fr_caps_any(c);
        return st;
    }
    return FR_OK;
}

static int put_names(char *b, size_t n, int k, unsigned bits, const char *const *names, int cnt) {
    bool first = true;
    for (int i = 0; i < cnt; i++) {
        if (!(bits & FR_CAPS_BIT(i)) || k < 0 || (size_t)k >= n) continue;
        k += snprintf(b + k, n - (size_t)k, "%s%s", first ? "" : ",", names[i]);
        first = false;
    }
    return k;
}

/* Drops a character that a full buffer cut in two (the strings are valid UTF-8). */
static void cut_whole(char *buf) {
    size_t l = strlen(buf), j = l;
    while (j > 0 && ((unsigned char)buf[j - 1] & 0xC0) == 0x80) j--;
    if (j == 0 || (unsigned char)buf[j - 1] < 0xC0) return;
    unsigned char lead = (unsigned char)buf[j - 1];
    size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    if (l - (j - 1) < want) buf[j - 1] = 0;
}

void fr_caps_describe(const fr_caps *c, char *buf, size_t n) {
    if (!n) return;
    buf[0] = 0;
    if (!c->declared) {
        snprintf(buf, n, "nothing declared");
        return;
    }
    int k = snprintf(buf, n, "%s%s%s%s%s", c->framework[0] ? c->framework : "?", c->version[0] ? " " : "", c->version,
                     c->runner[0] ? " / " : "", c->runner);
    for (int o = 0; o < 2 && k >= 0 && (size_t)k < n; o++) {
        const fr_caps_op *op = &c->op[o];
        if (!op->present) continue;
        k += snprintf(buf + k, n - (size_t)k, "; %s ", o ? "bwd" : "fwd");
        unsigned dt = 0;
        for (int i = 0; i < 6; i++)
            if (op->dtypes & FR_CAPS_BIT(fr_dtype_from_name(kDtypeNames[i]))) dt |= FR_CAPS_BIT(i);
        k = put_names(buf, n, k, dt, kDtypeNames, 6);
    }
    if (c->unavailable[0] && k >= 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, "; unavailable: %s", c->unavailable);
    cut_whole(buf);
}
