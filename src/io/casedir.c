/* Case directories: parse and validate case.json and load the tensors beside it (docs/case-format.md); writing them
 * is casedir_write.c's, the outputs casedir_outputs.c's.
 * Strict by design: every key is known, typed and checked, because a typo in a case must not silently change the
 * problem. Tensor files are checked for the dtype their field needs before their data is read. */
#define _DEFAULT_SOURCE /* realpath */
#include "io/casedir.h"
#include "io/casedir_internal.h"

#include "core/core.h"
#include "core/problem.h"
#include "core/validate.h"
#include "io/io_util.h"
#include "io/npy.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The arrays of case.json (prefix, actual_seq_qlen / kvlen) have B entries, and validation allows them only with
 * B <= 2K (prefix: FR_LIMIT_B_PREFIX; varlen: FR_LIMIT_B_TND): a valid case.json is a few tens of KB. Longer arrays
 * and larger files are refused while parsing (a 5M-entry prefix in a mode-0 case took 450 MB to parse and pass). */
#define CASE_ARRAY_MAX (FR_LIMIT_B_PREFIX > FR_LIMIT_B_TND ? FR_LIMIT_B_PREFIX : FR_LIMIT_B_TND)
#define CASE_JSON_MAX (INT64_C(1) << 20)

static const char *const input_names[FR_CASE_NUM_INPUTS] = {
    "query",     "key",       "value",      "real_shift", "atten_mask",   "drop_mask",
    "d_scale_q", "d_scale_k", "d_scale_v",  "query_rope", "key_rope",     "sink",
    "topk_indices", "dy",     "attention_in", "softmax_max", "softmax_sum",
};
static const char *const output_names[FR_CASE_NUM_OUTPUTS] = {
    "attention_out", "softmax_max", "softmax_sum", "dq", "dk", "dv", "dq_rope", "dk_rope", "dsink",
};

const char *fr_case_input_name(fr_case_input i) {
    return (unsigned)i < FR_CASE_NUM_INPUTS ? input_names[i] : "invalid";
}
const char *fr_case_output_name(fr_case_output o) {
    return (unsigned)o < FR_CASE_NUM_OUTPUTS ? output_names[o] : "invalid";
}
const char *fr_case_op_name(fr_case_op op) { return op == FR_CASE_FWD ? "fwd" : op == FR_CASE_BWD ? "bwd" : "invalid"; }

fr_tensor *fr_case_input_slot(fr_bwd_inputs *in, fr_case_input i) {
    if (!in) return NULL;
    fr_fwd_inputs *f = &in->fwd;
    switch (i) {
    case FR_CI_QUERY: return &f->query;
    case FR_CI_KEY: return &f->key;
    case FR_CI_VALUE: return &f->value;
    case FR_CI_REAL_SHIFT: return &f->real_shift;
    case FR_CI_ATTEN_MASK: return &f->atten_mask;
    case FR_CI_DROP_MASK: return &f->drop_mask;
    case FR_CI_D_SCALE_Q: return &f->d_scale_q;
    case FR_CI_D_SCALE_K: return &f->d_scale_k;
    case FR_CI_D_SCALE_V: return &f->d_scale_v;
    case FR_CI_QUERY_ROPE: return &f->query_rope;
    case FR_CI_KEY_ROPE: return &f->key_rope;
    case FR_CI_SINK: return &f->sink;
    case FR_CI_TOPK_INDICES: return &f->topk_indices;
    case FR_CI_DY: return &in->dy;
    case FR_CI_ATTENTION_IN: return &in->attention_in;
    case FR_CI_SOFTMAX_MAX: return &in->softmax_max;
    case FR_CI_SOFTMAX_SUM: return &in->softmax_sum;
    default: return NULL;
    }
}

const fr_tensor *fr_case_input_cslot(const fr_bwd_inputs *in, fr_case_input i) {
    return fr_case_input_slot((fr_bwd_inputs *)in, i);
}

fr_tensor *fr_case_output_slot(fr_case_outputs *o, fr_case_output i) {
    if (!o) return NULL;
    switch (i) {
    case FR_CO_ATTENTION_OUT: return &o->fwd.attention_out;
    case FR_CO_SOFTMAX_MAX: return &o->fwd.softmax_max;
    case FR_CO_SOFTMAX_SUM: return &o->fwd.softmax_sum;
    case FR_CO_DQ: return &o->bwd.dq;
    case FR_CO_DK: return &o->bwd.dk;
    case FR_CO_DV: return &o->bwd.dv;
    case FR_CO_DQ_ROPE: return &o->bwd.dq_rope;
    case FR_CO_DK_ROPE: return &o->bwd.dk_rope;
    case FR_CO_DSINK: return &o->bwd.dsink;
    default: return NULL;
    }
}

const fr_tensor *fr_case_output_cslot(const fr_case_outputs *o, fr_case_output i) {
    return fr_case_output_slot((fr_case_outputs *)o, i);
}

static bool is_bwd_input(int i) { return i >= FR_CI_DY; }

bool fr_case_path_ok(const char *name) {
    if (!name || !*name || name[0] == '/' || strchr(name, '\\')) return false;
    const char *s = name;
    for (;;) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.') return false;
        if (!e) break;
        s = e + 1;
    }
    size_t n = strlen(name);
    return name[n - 1] != '/';
}

/* The dtype names case.json uses for "dtype" and "out_dtype" (docs/case-format.md). */
fr_dtype fr_case_dtype_from_name(const char *s) {
    static const fr_dtype allowed[] = {FR_F32, FR_F16, FR_BF16, FR_E4M3FN, FR_E5M2, FR_HIF8};
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        if (!strcmp(s, fr_dtype_name(allowed[i]))) return allowed[i];
    return FR_DT_NONE;
}

/* ---- case.json parsing ---- */


static fr_status get_int(const cJSON *j, const char *what, const char *field, int64_t lo, int64_t hi, int64_t *v,
                         fr_error *err) {
    if (!cJSON_IsNumber(j))
        return fr_fail(err, FR_E_FORMAT, "%s: %s: expected an integer, got %s", what, field, fr_io_json_type(j));
    double d = j->valuedouble;
    if (!(fabs(d) <= FR_CASE_JSON_INT_MAX) || d != floor(d))
        return fr_fail(err, FR_E_FORMAT, "%s: %s: expected an integer, got %.17g", what, field, d);
    int64_t x = (int64_t)d;
    if (x < lo || x > hi)
        return fr_fail(err, FR_E_FORMAT, "%s: %s: %lld outside [%lld, %lld]", what, field, (long long)x,
                       (long long)lo, (long long)hi);
    *v = x;
    return FR_OK;
}

static fr_status get_number(const cJSON *j, const char *what, const char *field, double *v, fr_error *err) {
    if (!cJSON_IsNumber(j))
        return fr_fail(err, FR_E_FORMAT, "%s: %s: expected a number, got %s", what, field, fr_io_json_type(j));
    *v = j->valuedouble;
    return FR_OK;
}

/* null -> *arr NULL, *n 0; [ints] -> owned array (non-NULL even when empty, so "present but empty" survives). */
static fr_status get_int_array(const cJSON *j, const char *what, const char *field, int64_t **arr, int64_t *n,
                               fr_error *err) {
    *arr = NULL;
    *n = 0;
    if (cJSON_IsNull(j)) return FR_OK;
    if (!cJSON_IsArray(j))
        return fr_fail(err, FR_E_FORMAT, "%s: %s: expected null or an array of integers, got %s", what, field,
                       fr_io_json_type(j));
    int64_t cnt = 0;
    for (const cJSON *e = j->child; e; e = e->next) cnt++;
    if (cnt > CASE_ARRAY_MAX)
        return fr_fail(err, FR_E_FORMAT, "%s: %s: %lld entries, more than any valid case has (%lld: B <= %lld where "
                       "a prefix or varlen lengths are allowed)", what, field, (long long)cnt,
                       (long long)CASE_ARRAY_MAX, (long long)CASE_ARRAY_MAX);
    int64_t *a = malloc((size_t)(cnt ? cnt : 1) * sizeof *a);
    if (!a) return fr_fail(err, FR_E_NOMEM, "%s: %s: cannot allocate %lld integers", what, field, (long long)cnt);
    int64_t k = 0;
    for (const cJSON *e = j->child; e; e = e->next, k++) {
        char f[64];
        snprintf(f, sizeof f, "%s[%lld]", field, (long long)k);
        fr_status st = get_int(e, what, f, -INT64_C(9007199254740992), INT64_C(9007199254740992), &a[k], err);
        if (st != FR_OK) {
            free(a);
            return st;
        }
    }
    *arr = a;
    *n = cnt;
    return FR_OK;
}

enum {
    P_HEAD_NUM, P_INPUT_LAYOUT, P_SCALE_VALUE, P_KEEP_PROB, P_PRE_TOKENS, P_NEXT_TOKENS, P_INNER_PRECISE,
    P_SPARSE_MODE, P_PSE_TYPE, P_PREFIX, P_ACTUAL_SEQ_QLEN, P_ACTUAL_SEQ_KVLEN, P_Q_START_IDX, P_KV_START_IDX,
    P_OUT_DTYPE, P_SOFTMAX_LAYOUT, P_COUNT
};
static const char *const param_names[P_COUNT] = {
    "head_num",        "input_layout",     "scale_value", "keep_prob",    "pre_tokens", "next_tokens",
    "inner_precise",   "sparse_mode",      "pse_type",    "prefix",       "actual_seq_qlen",
    "actual_seq_kvlen", "q_start_idx",     "kv_start_idx", "out_dtype",   "softmax_layout",
};

static int find_name(const char *const *names, int n, const char *s) {
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], s)) return i;
    return -1;
}

static fr_status parse_params(const cJSON *obj, fr_case *c, const char *what, fr_error *err) {
    if (!cJSON_IsObject(obj))
        return fr_fail(err, FR_E_FORMAT, "%s: params: expected an object, got %s", what, fr_io_json_type(obj));
    fr_params *p = &c->params;
    bool seen[P_COUNT] = {false};
    int64_t nq = 0, nkv = 0;
    fr_status st = FR_OK;
    for (const cJSON *j = obj->child; j && st == FR_OK; j = j->next) {
        int k = find_name(param_names, P_COUNT, j->string);
        if (k < 0) return fr_fail(err, FR_E_FORMAT, "%s: params: unknown key \"%s\"", what, j->string);
        if (seen[k]) return fr_fail(err, FR_E_FORMAT, "%s: params: duplicate key \"%s\"", what, j->string);
        seen[k] = true;
        char field[48];
        snprintf(field, sizeof field, "params.%s", param_names[k]);
        int64_t v = 0;
        switch (k) {
        case P_HEAD_NUM: st = get_int(j, what, field, INT64_MIN, INT64_MAX, &p->head_num, err); break;
        case P_INPUT_LAYOUT:
            if (!cJSON_IsString(j))
                return fr_fail(err, FR_E_FORMAT, "%s: %s: expected a string, got %s", what, field, fr_io_json_type(j));
            if ((p->input_layout = fr_layout_from_name(j->valuestring)) == FR_LAYOUT_NONE)
                return fr_fail(err, FR_E_FORMAT, "%s: %s: unknown layout \"%s\" (BSH, SBH, BSND, BNSD, TND)", what,
                               field, j->valuestring);
            break;
        case P_SCALE_VALUE: st = get_number(j, what, field, &p->scale_value, err); break;
        case P_KEEP_PROB: st = get_number(j, what, field, &p->keep_prob, err); break;
        case P_PRE_TOKENS: st = get_int(j, what, field, INT64_MIN, INT64_MAX, &p->pre_tokens, err); break;
        case P_NEXT_TOKENS: st = get_int(j, what, field, INT64_MIN, INT64_MAX, &p->next_tokens, err); break;
        case P_INNER_PRECISE:
        case P_SPARSE_MODE:
        case P_PSE_TYPE:
            st = get_int(j, what, field, INT32_MIN, INT32_MAX, &v, err);
            if (k == P_INNER_PRECISE) p->inner_precise = (int)v;
            if (k == P_SPARSE_MODE) p->sparse_mode = (int)v;
            if (k == P_PSE_TYPE) p->pse_type = (int)v;
            break;
        case P_PREFIX: st = get_int_array(j, what, field, &c->prefix, &p->prefix_len, err); break;
        case P_ACTUAL_SEQ_QLEN: st = get_int_array(j, what, field, &c->actual_seq_qlen, &nq, err); break;
        case P_ACTUAL_SEQ_KVLEN: st = get_int_array(j, what, field, &c->actual_seq_kvlen, &nkv, err); break;
        case P_Q_START_IDX: st = get_int(j, what, field, INT64_MIN, INT64_MAX, &p->q_start_idx, err); break;
        case P_KV_START_IDX: st = get_int(j, what, field, INT64_MIN, INT64_MAX, &p->kv_start_idx, err); break;
        case P_OUT_DTYPE:
            if (cJSON_IsNull(j)) {
                p->out_dtype = FR_DT_NONE;
            } else if (!cJSON_IsString(j)) {
                return fr_fail(err, FR_E_FORMAT, "%s: %s: expected null or a string, got %s", what, field,
                               fr_io_json_type(j));
            } else if ((p->out_dtype = fr_case_dtype_from_name(j->valuestring)) == FR_DT_NONE) {
                return fr_fail(err, FR_E_FORMAT, "%s: %s: unknown dtype \"%s\"", what, field, j->valuestring);
            }
            break;
        case P_SOFTMAX_LAYOUT:
            if (!cJSON_IsString(j))
                return fr_fail(err, FR_E_FORMAT, "%s: %s: expected a string, got %s", what, field, fr_io_json_type(j));
            if (!strcmp(j->valuestring, ""))
                p->softmax_layout = FR_SOFTMAX_DEFAULT;
            else if (!strcmp(j->valuestring, "same_as_input"))
                p->softmax_layout = FR_SOFTMAX_SAME_AS_INPUT;
            else
                return fr_fail(err, FR_E_FORMAT, "%s: %s: \"%s\" (expected \"\" or \"same_as_input\")", what, field,
                               j->valuestring);
            break;
        default: break;
        }
    }
    if (st != FR_OK) return st;
    if (!seen[P_HEAD_NUM]) return fr_fail(err, FR_E_FORMAT, "%s: params.head_num: missing (required)", what);
    if (!seen[P_INPUT_LAYOUT]) return fr_fail(err, FR_E_FORMAT, "%s: params.input_layout: missing (required)", what);
    if (!c->actual_seq_qlen != !c->actual_seq_kvlen)
        return fr_fail(err, FR_E_FORMAT, "%s: params.%s is null but params.%s is not", what,
                       c->actual_seq_qlen ? "actual_seq_kvlen" : "actual_seq_qlen",
                       c->actual_seq_qlen ? "actual_seq_qlen" : "actual_seq_kvlen");
    if (nq != nkv)
        return fr_fail(err, FR_E_FORMAT, "%s: params.actual_seq_qlen has %lld entries, actual_seq_kvlen %lld", what,
                       (long long)nq, (long long)nkv);
    p->actual_seq_len = nq;
    p->prefix = c->prefix;
    p->actual_seq_qlen = c->actual_seq_qlen;
    p->actual_seq_kvlen = c->actual_seq_kvlen;
    return FR_OK;
}

static fr_status parse_inputs(const cJSON *obj, fr_case *c, const char *what, fr_error *err) {
    if (!cJSON_IsObject(obj))
        return fr_fail(err, FR_E_FORMAT, "%s: inputs: expected an object, got %s", what, fr_io_json_type(obj));
    for (const cJSON *j = obj->child; j; j = j->next) {
        int k = find_name(input_names, FR_CASE_NUM_INPUTS, j->string);
        if (k < 0) return fr_fail(err, FR_E_FORMAT, "%s: inputs: unknown key \"%s\"", what, j->string);
        if (c->files[k]) return fr_fail(err, FR_E_FORMAT, "%s: inputs: duplicate key \"%s\"", what, j->string);
        if (is_bwd_input(k) && c->op == FR_CASE_FWD)
            return fr_fail(err, FR_E_FORMAT, "%s: inputs.%s: a backward-only input in a forward case", what,
                           j->string);
        if (!cJSON_IsString(j))
            return fr_fail(err, FR_E_FORMAT, "%s: inputs.%s: expected a file name string, got %s", what, j->string,
                           fr_io_json_type(j));
        if (!fr_case_path_ok(j->valuestring))
            return fr_fail(err, FR_E_FORMAT,
                           "%s: inputs.%s: file name \"%s\" must be relative and stay inside the case directory",
                           what, j->string, j->valuestring);
        size_t n = strlen(j->valuestring);
        if (!(c->files[k] = malloc(n + 1))) return fr_fail(err, FR_E_NOMEM, "%s: out of memory", what);
        memcpy(c->files[k], j->valuestring, n + 1);
    }
    static const int required_fwd[] = {FR_CI_QUERY, FR_CI_KEY, FR_CI_VALUE};
    static const int required_bwd[] = {FR_CI_DY, FR_CI_ATTENTION_IN, FR_CI_SOFTMAX_MAX, FR_CI_SOFTMAX_SUM};
    for (size_t i = 0; i < 3; i++)
        if (!c->files[required_fwd[i]])
            return fr_fail(err, FR_E_FORMAT, "%s: inputs.%s: missing (required)", what, input_names[required_fwd[i]]);
    if (c->op == FR_CASE_BWD)
        for (size_t i = 0; i < 4; i++)
            if (!c->files[required_bwd[i]])
                return fr_fail(err, FR_E_FORMAT, "%s: inputs.%s: missing (required for a backward case)", what,
                               input_names[required_bwd[i]]);
    return FR_OK;
}

static const char *const kMaskHints[FR_MASK_HINT_COUNT] = {"", "bool", "additive_inf", "additive_min"};

const char *fr_mask_hint_name(fr_mask_hint h) {
    return (int)h >= 0 && h < FR_MASK_HINT_COUNT ? kMaskHints[h] : "invalid";
}

fr_mask_hint fr_mask_hint_from_name(const char *s) {
    for (int k = 0; s && k < FR_MASK_HINT_COUNT; k++)
        if (!strcmp(s, kMaskHints[k])) return (fr_mask_hint)k;
    return FR_MASK_HINT_COUNT;
}

/* "hints": {"mask": "bool" | "additive_inf" | "additive_min"}: how a runner should hand things over (optional). */
static fr_status parse_hints(const cJSON *obj, fr_case *c, const char *what, fr_error *err) {
    if (!cJSON_IsObject(obj))
        return fr_fail(err, FR_E_FORMAT, "%s: hints: expected an object, got %s", what, fr_io_json_type(obj));
    bool seen = false;
    for (const cJSON *j = obj->child; j; j = j->next) {
        if (strcmp(j->string, "mask") != 0)
            return fr_fail(err, FR_E_FORMAT, "%s: hints: unknown key \"%s\" (expected mask)", what, j->string);
        if (seen) return fr_fail(err, FR_E_FORMAT, "%s: hints: duplicate key \"mask\"", what);
        seen = true;
        fr_mask_hint h = cJSON_IsString(j) ? fr_mask_hint_from_name(j->valuestring) : FR_MASK_HINT_COUNT;
        if (h == FR_MASK_HINT_COUNT || h == FR_MASK_HINT_DEFAULT)
            return fr_fail(err, FR_E_FORMAT, "%s: hints.mask: expected \"bool\", \"additive_inf\" or \"additive_min\"",
                           what);
        c->mask_hint = h;
    }
    return FR_OK;
}

enum { K_FORMAT, K_OP, K_DTYPE, K_PARAMS, K_INPUTS, K_HINTS, K_COUNT };
static const char *const top_names[K_COUNT] = {"format", "op", "dtype", "params", "inputs", "hints"};

static fr_status parse_top(const cJSON *root, fr_case *c, const char *what, fr_error *err) {
    if (!cJSON_IsObject(root))
        return fr_fail(err, FR_E_FORMAT, "%s: expected a JSON object at the top, got %s", what, fr_io_json_type(root));
    const cJSON *item[K_COUNT] = {NULL};
    for (const cJSON *j = root->child; j; j = j->next) {
        int k = find_name(top_names, K_COUNT, j->string);
        if (k < 0) return fr_fail(err, FR_E_FORMAT, "%s: unknown key \"%s\"", what, j->string);
        if (item[k]) return fr_fail(err, FR_E_FORMAT, "%s: duplicate key \"%s\"", what, j->string);
        item[k] = j;
    }
    for (int k = 0; k < K_COUNT; k++)
        if (!item[k] && k != K_HINTS) /* hints are optional */
            return fr_fail(err, FR_E_FORMAT, "%s: %s: missing (required)", what, top_names[k]);
    const cJSON *f = item[K_FORMAT];
    if (!cJSON_IsString(f))
        return fr_fail(err, FR_E_FORMAT, "%s: format: expected a string, got %s", what, fr_io_json_type(f));
    if (strcmp(f->valuestring, FLASHREF_CASE_FORMAT) != 0) {
        if (!strncmp(f->valuestring, "flashref-case/", 14))
            return fr_fail(err, FR_E_FORMAT, "%s: format: version \"%s\" not supported (this build reads %s)", what,
                           f->valuestring, FLASHREF_CASE_FORMAT);
        return fr_fail(err, FR_E_FORMAT, "%s: format: \"%s\" is not a flashref case (expected \"%s\")", what,
                       f->valuestring, FLASHREF_CASE_FORMAT);
    }
    const cJSON *op = item[K_OP];
    if (!cJSON_IsString(op) || (strcmp(op->valuestring, "fwd") && strcmp(op->valuestring, "bwd")))
        return fr_fail(err, FR_E_FORMAT, "%s: op: expected \"fwd\" or \"bwd\"", what);
    c->op = !strcmp(op->valuestring, "fwd") ? FR_CASE_FWD : FR_CASE_BWD;
    const cJSON *dt = item[K_DTYPE];
    if (!cJSON_IsString(dt))
        return fr_fail(err, FR_E_FORMAT, "%s: dtype: expected a string, got %s", what, fr_io_json_type(dt));
    if ((c->dtype = fr_case_dtype_from_name(dt->valuestring)) == FR_DT_NONE)
        return fr_fail(err, FR_E_FORMAT, "%s: dtype: \"%s\" (expected fp32, fp16, bf16, e4m3fn, e5m2 or hif8)", what,
                       dt->valuestring);
    fr_status st = parse_params(item[K_PARAMS], c, what, err);
    if (st == FR_OK && item[K_HINTS]) st = parse_hints(item[K_HINTS], c, what, err);
    if (st != FR_OK) return st;
    return parse_inputs(item[K_INPUTS], c, what, err);
}

fr_status fr_case_parse_json(const char *json, size_t len, fr_case *c, const char *what, fr_error *err) {
    if (!what) what = "case.json";
    if (!c) return fr_fail(err, FR_E_NULL, "%s: case: NULL", what);
    memset(c, 0, sizeof *c);
    c->params = fr_params_default();
    if (!json && len) return fr_fail(err, FR_E_NULL, "%s: json: NULL", what);
    if (len && memchr(json, 0, len))
        return fr_fail(err, FR_E_FORMAT, "%s: contains a NUL byte (not JSON text)", what);
    /* cJSON decodes \u0000 into a NUL that silently ends the string ("query.npy\u0000x" would name query.npy). */
    for (size_t i = 0; i + 1 < len; i++) {
        if (json[i] != '\\') continue;
        if (json[i + 1] == 'u' && i + 5 < len && !memcmp(json + i + 2, "0000", 4))
            return fr_fail(err, FR_E_FORMAT, "%s: \\u0000 (NUL) in a string, at byte %zu: not allowed", what, i);
        i++; /* the escaped character */
    }
    char *buf = malloc(len + 1);
    if (!buf) return fr_fail(err, FR_E_NOMEM, "%s: cannot allocate %zu bytes", what, len + 1);
    if (len) memcpy(buf, json, len);
    buf[len] = 0;
    const char *end = NULL;
    bool nomem;
    cJSON *root = fr_io_json_parse(buf, &end, &nomem); /* strict: "query.npy\uzzzzjunk" does not name query.npy */
    fr_status st;
    if (nomem) {
        st = fr_fail(err, FR_E_NOMEM, "%s: out of memory while parsing", what);
    } else if (!root && !end) {
        st = fr_fail(err, FR_E_FORMAT, "%s: not valid JSON (RFC 8259: a bad \\u escape, a leading zero, ...)", what);
    } else if (!root) {
        size_t off = end && end >= buf && end <= buf + len ? (size_t)(end - buf) : 0;
        int line = 1;
        for (size_t i = 0; i < off; i++) line += buf[i] == '\n';
        st = fr_fail(err, FR_E_FORMAT, "%s: not valid JSON (line %d, byte %zu)", what, line, off);
    } else {
        st = parse_top(root, c, what, err);
        cJSON_Delete(root);
    }
    free(buf);
    if (st != FR_OK) fr_case_free(c);
    return st;
}

/* ---- loading ---- */

/* The dtypes input k of case c may have on disk, in order of preference. */
static int allowed_dtypes(const fr_case *c, int k, fr_dtype *out) {
    int n = 0;
    fr_dtype dt = c->dtype;
    switch (k) {
    case FR_CI_QUERY:
    case FR_CI_KEY:
    case FR_CI_VALUE:
    case FR_CI_QUERY_ROPE:
    case FR_CI_KEY_ROPE: out[n++] = dt; break;
    case FR_CI_DY:
    case FR_CI_ATTENTION_IN:
        /* fp8 backward: attention_in (and possibly dy) are fp16/bf16 (spec 7.2) */
        out[n++] = dt;
        if (fr_dtype_is_fp8(dt)) {
            out[n++] = FR_F16;
            out[n++] = FR_BF16;
        }
        break;
    case FR_CI_REAL_SHIFT:
        if (fr_pse_type_is_slopes(c->params.pse_type)) {
            out[n++] = FR_F32; /* slopes */
        } else if (fr_dtype_is_fp8(dt)) {
            out[n++] = FR_F16;
            out[n++] = FR_BF16;
        } else {
            out[n++] = dt;
        }
        break;
    case FR_CI_ATTEN_MASK:
        out[n++] = FR_BOOL;
        out[n++] = FR_U8;
        break;
    case FR_CI_DROP_MASK: out[n++] = FR_U8; break;
    case FR_CI_D_SCALE_Q:
    case FR_CI_D_SCALE_K:
    case FR_CI_D_SCALE_V:
    case FR_CI_SINK: out[n++] = FR_F32; break;
    case FR_CI_TOPK_INDICES: out[n++] = FR_I32; break;
    case FR_CI_SOFTMAX_MAX:
    case FR_CI_SOFTMAX_SUM:
        out[n++] = FR_F32;
        out[n++] = FR_F64;
        break;
    default: break;
    }
    return n;
}

static fr_status load_tensor(const char *path, const fr_dtype *allowed, int nallowed, const char *field,
                             fr_tensor *t, fr_error *err) {
    fr_npy_header h;
    fr_status st = fr_npy_read_file_header(path, &h, err);
    if (st != FR_OK) return st;
    for (int i = 0; i < nallowed; i++)
        if (fr_npy_descr_fits(h.descr, allowed[i])) return fr_npy_read_file(path, allowed[i], t, err);
    char list[128] = "";
    for (int i = 0; i < nallowed; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s ('%s')", i ? ", " : "",
                 fr_dtype_name(allowed[i]), fr_npy_descr_for(allowed[i]));
    return fr_fail(err, FR_E_FORMAT, "%s: descr '%s' is the wrong dtype for %s (expected %s)", path, h.descr, field,
                   list);
}

/* True when path, with symbolic links resolved, is inside dir (also resolved): a link in a case directory may point
 * elsewhere in it, never out of it. */
bool fr_case_path_inside(const char *dir, const char *path) {
    /* Into buffers of our own: realpath(p, NULL) allocates, and an allocation failure must not read as "outside". */
    char bd[PATH_MAX], bp[PATH_MAX];
    const char *rd = realpath(dir, bd), *rp = realpath(path, bp);
    bool ok = false;
    if (rd && rp) {
        size_t n = strlen(rd);
        ok = !strncmp(rp, rd, n) && (rp[n] == '/' || (n == 1 && rd[0] == '/'));
    }
    return ok;
}

/* The dtype input k is read as, from its header (FR_E_FORMAT naming the allowed ones otherwise). */
static fr_status header_dtype(const char *path, const fr_npy_header *h, const fr_dtype *allowed, int nallowed,
                              const char *field, fr_dtype *dt, fr_error *err) {
    for (int i = 0; i < nallowed; i++)
        if (fr_npy_descr_fits(h->descr, allowed[i])) {
            *dt = allowed[i];
            return FR_OK;
        }
    char list[128] = "";
    for (int i = 0; i < nallowed; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s ('%s')", i ? ", " : "",
                 fr_dtype_name(allowed[i]), fr_npy_descr_for(allowed[i]));
    return fr_fail(err, FR_E_FORMAT, "%s: descr '%s' is the wrong dtype for %s (expected %s)", path, h->descr, field,
                   list);
}

/* Check before read: every input's header is read and the problem's limits checked on those shapes (validation
 * reads no data) before any tensor data is read or allocated, so a 4-million-row query or a 2 TB header is rejected
 * by its limit (FR_E_RANGE) at the cost of a few hundred bytes. */
fr_status fr_case_load(const char *dir, fr_case *c, fr_error *err) { return fr_case_load_except(dir, c, 0, err); }

fr_status fr_case_load_except(const char *dir, fr_case *c, unsigned skip, fr_error *err) {
    if (!dir || !c) return fr_fail(err, FR_E_NULL, "case: NULL dir or case");
    memset(c, 0, sizeof *c);
    char *path = fr_io_join(dir, "case.json");
    if (!path) return fr_fail(err, FR_E_NOMEM, "case: out of memory");
    char *json;
    size_t len;
    fr_status st = fr_io_read_all(path, CASE_JSON_MAX, &json, &len, err);
    if (st == FR_OK) {
        st = fr_case_parse_json(json, len, c, path, err);
        free(json);
    }
    free(path);
    if (st != FR_OK) return st;
    size_t dl = strlen(dir);
    if (!(c->dir = malloc(dl + 1))) {
        fr_case_free(c);
        return fr_fail(err, FR_E_NOMEM, "case: out of memory");
    }
    memcpy(c->dir, dir, dl + 1);
    char *paths[FR_CASE_NUM_INPUTS] = {0};
    static char dummy; /* the data pointer of a header-only view (validation never dereferences it) */
    for (int k = 0; k < FR_CASE_NUM_INPUTS && st == FR_OK; k++) {
        if (!c->files[k]) continue;
        fr_dtype allowed[4];
        int na = allowed_dtypes(c, k, allowed);
        char field[64];
        snprintf(field, sizeof field, "inputs.%s of a %s case", input_names[k], fr_dtype_name(c->dtype));
        if (!(paths[k] = fr_io_join(dir, c->files[k]))) {
            st = fr_fail(err, FR_E_NOMEM, "case: out of memory");
            break;
        }
        if (access(paths[k], F_OK) != 0) {
            st = fr_fail(err, FR_E_IO, "%s: cannot open: %s", paths[k], strerror(errno));
            break;
        }
        if (!fr_case_path_inside(dir, paths[k])) {
            st = fr_fail(err, FR_E_FORMAT, "%s: inputs.%s: \"%s\" resolves (through a symbolic link) to a file "
                         "outside the case directory: not followed", dir, input_names[k], c->files[k]);
            break;
        }
        fr_npy_header h;
        fr_dtype dt = FR_DT_NONE;
        if ((st = fr_npy_read_file_header(paths[k], &h, err)) != FR_OK) break;
        if ((st = header_dtype(paths[k], &h, allowed, na, field, &dt, err)) != FR_OK) break;
        *fr_case_input_slot(&c->in, (fr_case_input)k) = fr_tensor_make(dt, &dummy, h.ndim, h.shape);
    }
    if (st == FR_OK) {
        fr_error ve;
        fr_status vs = c->op == FR_CASE_FWD ? fr_validate_fwd(&c->params, &c->in.fwd, NULL, &ve)
                                            : fr_validate_bwd(&c->params, &c->in, NULL, &ve);
        /* Only the limits stop the load here: a case directory may hold an invalid problem on purpose (validation
         * tests); the caller validates it. */
        if (vs == FR_E_RANGE || vs == FR_E_OVERFLOW) st = fr_fail(err, vs, "%s: %s", dir, ve.msg);
    }
    for (int k = 0; k < FR_CASE_NUM_INPUTS; k++) {
        fr_tensor *t = fr_case_input_slot(&c->in, (fr_case_input)k);
        if (t->data != &dummy) continue;
        if (st == FR_OK && (skip >> k & 1u)) t->data = NULL; /* described, not read: the caller fills it */
        else memset(t, 0, sizeof *t);
    }
    for (int k = 0; k < FR_CASE_NUM_INPUTS && st == FR_OK; k++) {
        if (!paths[k] || (skip >> k & 1u)) continue;
        fr_dtype allowed[4];
        int na = allowed_dtypes(c, k, allowed);
        char field[64];
        snprintf(field, sizeof field, "inputs.%s of a %s case", input_names[k], fr_dtype_name(c->dtype));
        st = load_tensor(paths[k], allowed, na, field, fr_case_input_slot(&c->in, (fr_case_input)k), err);
    }
    for (int k = 0; k < FR_CASE_NUM_INPUTS; k++) free(paths[k]);
    if (st != FR_OK) fr_case_free(c);
    return st;
}

void fr_case_free(fr_case *c) {
    if (!c) return;
    free(c->prefix);
    free(c->actual_seq_qlen);
    free(c->actual_seq_kvlen);
    for (int k = 0; k < FR_CASE_NUM_INPUTS; k++) {
        free(c->files[k]);
        fr_tensor *t = fr_case_input_slot(&c->in, (fr_case_input)k);
        if (t) free(t->data);
    }
    free(c->dir);
    memset(c, 0, sizeof *c);
}
