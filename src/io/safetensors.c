/* safetensors read and write (see safetensors.h). The format's own rules are enforced: the header is a JSON object
 * of at most 100 MB, every tensor's byte range matches dtype x shape, and the ranges tile the data buffer exactly
 * (no holes, no overlap), so a lying header can never make us read outside the buffer or allocate from it. */
#include "io/safetensors.h"

#include "core/core.h"
#include "io/io_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ST_MAX_HEADER (INT64_C(100) * 1000 * 1000) /* the reference implementation's limit */
#define ST_JSON_INT_MAX 9007199254740992.0

static const struct {
    const char *name;
    fr_dtype dt;
} st_dtypes[] = {
    {"F64", FR_F64}, {"F32", FR_F32}, {"F16", FR_F16}, {"BF16", FR_BF16}, {"I32", FR_I32}, {"I64", FR_I64},
    {"U8", FR_U8},   {"BOOL", FR_BOOL}, {"F8_E4M3", FR_E4M3FN}, {"F8_E5M2", FR_E5M2},
};
#define ST_NDT (sizeof st_dtypes / sizeof st_dtypes[0])

const char *fr_st_dtype_name(fr_dtype t) {
    for (size_t i = 0; i < ST_NDT; i++)
        if (st_dtypes[i].dt == t) return st_dtypes[i].name;
    return NULL;
}

fr_dtype fr_st_dtype_from_name(const char *name) {
    if (!name) return FR_DT_NONE;
    for (size_t i = 0; i < ST_NDT; i++)
        if (!strcmp(st_dtypes[i].name, name)) return st_dtypes[i].dt;
    return FR_DT_NONE;
}

void fr_st_free(fr_safetensors *s) {
    if (!s) return;
    for (int i = 0; i < s->count; i++) {
        free(s->entries[i].name);
        free(s->entries[i].t.data);
    }
    free(s->entries);
    for (int i = 0; i < s->meta_count; i++) {
        free(s->meta[i].key);
        free(s->meta[i].value);
    }
    free(s->meta);
    memset(s, 0, sizeof *s);
}

const fr_tensor *fr_st_find(const fr_safetensors *s, const char *name) {
    if (!s || !name) return NULL;
    for (int i = 0; i < s->count; i++)
        if (!strcmp(s->entries[i].name, name)) return &s->entries[i].t;
    return NULL;
}

const char *fr_st_meta_get(const fr_safetensors *s, const char *key) {
    if (!s || !key) return NULL;
    for (int i = 0; i < s->meta_count; i++)
        if (!strcmp(s->meta[i].key, key)) return s->meta[i].value;
    return NULL;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

static bool json_u53(const cJSON *j, int64_t *v) {
    if (!cJSON_IsNumber(j)) return false;
    double d = j->valuedouble;
    if (!(d >= 0 && d <= ST_JSON_INT_MAX) || d != floor(d)) return false;
    *v = (int64_t)d;
    return true;
}

/* A parsed entry before its data is copied. */
typedef struct st_raw {
    const char *name;
    fr_dtype dt;
    int ndim;
    int64_t shape[FR_MAX_DIMS];
    int64_t begin, end;
} st_raw;

static int cmp_raw(const void *a, const void *b) {
    const st_raw *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static fr_status parse_entry(const cJSON *j, st_raw *r, const char *what, fr_error *err) {
    if (!cJSON_IsObject(j)) return fr_fail(err, FR_E_FORMAT, "%s: \"%s\": expected an object", what, j->string);
    const cJSON *dt = NULL, *shape = NULL, *offs = NULL;
    for (const cJSON *k = j->child; k; k = k->next) {
        const cJSON **slot = !strcmp(k->string, "dtype")          ? &dt
                             : !strcmp(k->string, "shape")        ? &shape
                             : !strcmp(k->string, "data_offsets") ? &offs
                                                                  : NULL;
        if (!slot) return fr_fail(err, FR_E_FORMAT, "%s: \"%s\": unknown key \"%s\"", what, j->string, k->string);
        if (*slot) return fr_fail(err, FR_E_FORMAT, "%s: \"%s\": duplicate key \"%s\"", what, j->string, k->string);
        *slot = k;
    }
    if (!dt || !shape || !offs)
        return fr_fail(err, FR_E_FORMAT, "%s: \"%s\": missing \"%s\"", what, j->string,
                       !dt ? "dtype" : !shape ? "shape" : "data_offsets");
    if (!cJSON_IsString(dt) || (r->dt = fr_st_dtype_from_name(dt->valuestring)) == FR_DT_NONE)
        return fr_fail(err, FR_E_FORMAT, "%s: \"%s\".dtype: not a supported dtype (%s)", what, j->string,
                       cJSON_IsString(dt) ? dt->valuestring : "not a string");
    if (!cJSON_IsArray(shape)) return fr_fail(err, FR_E_FORMAT, "%s: \"%s\".shape: expected an array", what, j->string);
    r->ndim = 0;
    for (const cJSON *d = shape->child; d; d = d->next) {
        if (r->ndim >= FR_MAX_DIMS)
            return fr_fail(err, FR_E_FORMAT, "%s: \"%s\".shape: more than %d dimensions", what, j->string,
                           FR_MAX_DIMS);
        if (!json_u53(d, &r->shape[r->ndim]))
            return fr_fail(err, FR_E_FORMAT, "%s: \"%s\".shape[%d]: expected a non-negative integer", what, j->string,
                           r->ndim);
        r->ndim++;
    }
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 || !json_u53(offs->child, &r->begin) ||
        !json_u53(offs->child->next, &r->end) || r->begin > r->end)
        return fr_fail(err, FR_E_FORMAT, "%s: \"%s\".data_offsets: expected [begin, end] with 0 <= begin <= end",
                       what, j->string);
    int64_t bytes = (int64_t)fr_dtype_size(r->dt);
    for (int k = 0; k < r->ndim; k++)
        if (!fr_mul_ok(bytes, r->shape[k], &bytes))
            return fr_fail(err, FR_E_FORMAT, "%s: \"%s\".shape: size overflows", what, j->string);
    if (r->end - r->begin != bytes)
        return fr_fail(err, FR_E_FORMAT, "%s: \"%s\": data_offsets span %lld bytes, dtype and shape need %lld", what,
                       j->string, (long long)(r->end - r->begin), (long long)bytes);
    r->name = j->string;
    return FR_OK;
}

/* The header's tensors, checked whole (names, dtypes, shapes, offsets tiling [0, data_len) exactly) before any data
 * is allocated or read; then each tensor's bytes from data (in memory) or, data NULL, from fd at base + offset. */
static fr_status parse_root(const cJSON *root, const unsigned char *data, uint64_t data_len, int fd, int64_t base,
                            fr_safetensors *out, const char *what, fr_error *err) {
    if (!cJSON_IsObject(root)) return fr_fail(err, FR_E_FORMAT, "%s: header: expected a JSON object", what);
    int n = 0;
    const cJSON *meta = NULL;
    for (const cJSON *j = root->child; j; j = j->next) {
        if (!strcmp(j->string, "__metadata__")) {
            if (meta) return fr_fail(err, FR_E_FORMAT, "%s: header: duplicate \"__metadata__\"", what);
            meta = j;
        } else {
            n++;
        }
    }
    st_raw *raw = calloc((size_t)(n ? n : 1), sizeof *raw);
    if (!raw) return fr_fail(err, FR_E_NOMEM, "%s: out of memory", what);
    fr_status st = FR_OK;
    int i = 0;
    for (const cJSON *j = root->child; j && st == FR_OK; j = j->next) {
        if (j == meta) continue;
        for (int k = 0; k < i && st == FR_OK; k++)
            if (!strcmp(raw[k].name, j->string))
                st = fr_fail(err, FR_E_FORMAT, "%s: header: duplicate tensor name \"%s\"", what, j->string);
        if (st == FR_OK) st = parse_entry(j, &raw[i++], what, err);
    }
    if (st == FR_OK) {
        /* The ranges must tile [0, data_len) exactly. */
        qsort(raw, (size_t)n, sizeof *raw, cmp_raw);
        int64_t pos = 0;
        for (int k = 0; k < n && st == FR_OK; k++) {
            if (raw[k].begin != pos)
                st = fr_fail(err, FR_E_FORMAT, "%s: \"%s\": data_offsets begin %lld, expected %lld (%s)", what,
                             raw[k].name, (long long)raw[k].begin, (long long)pos,
                             raw[k].begin < pos ? "overlap" : "hole");
            pos = raw[k].end;
        }
        if (st == FR_OK && (uint64_t)pos != data_len)
            st = fr_fail(err, FR_E_FORMAT, "%s: tensors cover %lld bytes but the data buffer has %llu", what,
                         (long long)pos, (unsigned long long)data_len);
    }
    if (st == FR_OK && meta) {
        if (!cJSON_IsObject(meta)) {
            st = fr_fail(err, FR_E_FORMAT, "%s: __metadata__: expected an object of strings", what);
        } else {
            int m = cJSON_GetArraySize(meta);
            out->meta = calloc((size_t)(m ? m : 1), sizeof *out->meta);
            if (!out->meta) st = fr_fail(err, FR_E_NOMEM, "%s: out of memory", what);
            for (const cJSON *j = meta->child; j && st == FR_OK; j = j->next) {
                if (!cJSON_IsString(j)) {
                    st = fr_fail(err, FR_E_FORMAT, "%s: __metadata__.%s: expected a string", what, j->string);
                    break;
                }
                fr_st_meta *e = &out->meta[out->meta_count++];
                e->key = dup_str(j->string);
                e->value = dup_str(j->valuestring);
                if (!e->key || !e->value) st = fr_fail(err, FR_E_NOMEM, "%s: out of memory", what);
            }
        }
    }
    if (st == FR_OK) {
        out->entries = calloc((size_t)(n ? n : 1), sizeof *out->entries);
        if (!out->entries) st = fr_fail(err, FR_E_NOMEM, "%s: out of memory", what);
        for (int k = 0; k < n && st == FR_OK; k++) {
            fr_st_entry *e = &out->entries[out->count++];
            e->name = dup_str(raw[k].name);
            e->t = fr_tensor_make(raw[k].dt, NULL, raw[k].ndim, raw[k].shape);
            int64_t bytes = raw[k].end - raw[k].begin;
            if (!e->name || (bytes && !(e->t.data = malloc((size_t)bytes)))) {
                st = fr_fail(err, FR_E_NOMEM, "%s: \"%s\": cannot allocate %lld bytes", what, raw[k].name,
                             (long long)bytes);
                break;
            }
            if (bytes && data) {
                memcpy(e->t.data, data + raw[k].begin, (size_t)bytes);
            } else if (bytes && !fr_io_pread_full(fd, e->t.data, (size_t)bytes, (off_t)(base + raw[k].begin))) {
                st = fr_fail(err, FR_E_IO, "%s: \"%s\": read error: %s", what, raw[k].name,
                             errno ? fr_io_strerror() : "truncated");
                break;
            }
        }
    }
    free(raw);
    return st;
}

/* The n header bytes hdr (JSON), then the tensors (parse_root: from data, or from fd at base). */
static fr_status parse_header(const unsigned char *hdr, uint64_t n, const unsigned char *data, uint64_t data_len,
                              int fd, int64_t base, fr_safetensors *out, const char *what, fr_error *err) {
    if (n < 2 || hdr[0] != '{') return fr_fail(err, FR_E_FORMAT, "%s: header: must start with '{'", what);
    if (memchr(hdr, 0, (size_t)n)) return fr_fail(err, FR_E_FORMAT, "%s: header: contains a NUL byte", what);
    char *text = malloc((size_t)n + 1);
    if (!text) return fr_fail(err, FR_E_NOMEM, "%s: cannot allocate the header", what);
    memcpy(text, hdr, (size_t)n);
    text[n] = 0;
    bool nomem;
    cJSON *root = fr_io_json_parse(text, NULL, &nomem); /* strict JSON only (RFC 8259) */
    fr_status st;
    if (nomem)
        st = fr_fail(err, FR_E_NOMEM, "%s: header: out of memory while parsing", what);
    else if (!root)
        st = fr_fail(err, FR_E_FORMAT, "%s: header: not valid JSON", what);
    else
        st = parse_root(root, data, data_len, fd, base, out, what, err);
    cJSON_Delete(root);
    free(text);
    if (st != FR_OK) fr_st_free(out);
    return st;
}

fr_status fr_st_parse(const void *buf, size_t len, fr_safetensors *out, const char *what, fr_error *err) {
    if (!what) what = "safetensors";
    if (!out) return fr_fail(err, FR_E_NULL, "%s: out: NULL", what);
    memset(out, 0, sizeof *out);
    if (!buf && len) return fr_fail(err, FR_E_NULL, "%s: buffer: NULL", what);
    const unsigned char *b = buf;
    if (len < 8) return fr_fail(err, FR_E_FORMAT, "%s: truncated: %zu bytes, no header length", what, len);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | b[i];
    if (n > (uint64_t)ST_MAX_HEADER)
        return fr_fail(err, FR_E_FORMAT, "%s: header length %llu too large (max %lld)", what, (unsigned long long)n,
                       (long long)ST_MAX_HEADER);
    if (n > len - 8)
        return fr_fail(err, FR_E_FORMAT, "%s: truncated: header length %llu but only %zu bytes follow", what,
                       (unsigned long long)n, len - 8);
    return parse_header(b + 8, n, b + 8 + n, len - 8 - n, -1, 0, out, what, err);
}

/* Alike npy.c:fr_npy_read_file: kept apart because the two formats share only the argument check and the open; their
 * headers and data layouts differ. */
fr_status fr_st_read_file(const char *path, fr_safetensors *out, fr_error *err) {
    if (!path || !out) return fr_fail(err, FR_E_NULL, "safetensors: NULL path or out");
    memset(out, 0, sizeof *out);
    FILE *f;
    int64_t size;
    fr_status st = fr_io_open_read(path, &f, &size, err);
    if (st != FR_OK) return st;
    /* Check the header length against the file size before reading the file. */
    unsigned char pre[8];
    if (size < 8 || fread(pre, 1, 8, f) != 8) {
        fclose(f);
        return fr_fail(err, FR_E_FORMAT, "%s: truncated: %lld bytes, no header length", path, (long long)size);
    }
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | pre[i];
    if (n > (uint64_t)ST_MAX_HEADER || n > (uint64_t)(size - 8)) {
        fclose(f);
        return fr_fail(err, FR_E_FORMAT, "%s: header length %llu impossible for a %lld-byte file", path,
                       (unsigned long long)n, (long long)size);
    }
    /* The header is read and checked whole (parse_root) before any tensor data is allocated or read: a file that
     * lies about its tensors costs its header, never its size. */
    unsigned char *hdr = malloc((size_t)n + 1);
    if (!hdr) {
        fclose(f);
        return fr_fail(err, FR_E_NOMEM, "%s: cannot allocate the header (%llu bytes)", path, (unsigned long long)n);
    }
    if (!fr_io_pread_full(fileno(f), hdr, (size_t)n, 8))
        st = fr_fail(err, FR_E_FORMAT, "%s: truncated while reading the header", path);
    else
        st = parse_header(hdr, n, NULL, (uint64_t)size - 8 - n, fileno(f), 8 + (int64_t)n, out, path, err);
    free(hdr);
    fclose(f);
    return st;
}

/* Header JSON for the tensors (padded with spaces to a multiple of 8) and the data size. */
static fr_status make_header(int n, const char *const *names, const fr_tensor *tensors, int meta_count,
                             const fr_st_meta *meta, char **hdr, size_t *hlen, int64_t *data_len, fr_error *err) {
    *hdr = NULL;
    cJSON *root = cJSON_CreateObject();
    bool ok = root != NULL;
    fr_status st = FR_OK;
    int64_t pos = 0;
    if (ok && meta_count > 0) {
        cJSON *m = cJSON_AddObjectToObject(root, "__metadata__");
        ok = m != NULL;
        for (int i = 0; ok && i < meta_count; i++) ok = cJSON_AddStringToObject(m, meta[i].key, meta[i].value) != NULL;
    }
    for (int i = 0; ok && st == FR_OK && i < n; i++) {
        const fr_tensor *t = &tensors[i];
        const char *dn = fr_st_dtype_name(t->dtype);
        int64_t numel = fr_tensor_numel(t), bytes;
        if (!names[i] || !strcmp(names[i], "__metadata__")) {
            st = fr_fail(err, FR_E_INVALID_ARG, "safetensors: tensor %d: invalid name", i);
        } else if (!dn) {
            st = fr_fail(err, FR_E_DTYPE, "safetensors: %s: dtype %s has no safetensors dtype", names[i],
                         fr_dtype_name(t->dtype));
        } else if (numel < 0 || !fr_mul_ok(numel, (int64_t)fr_dtype_size(t->dtype), &bytes) ||
                   !fr_add_ok(pos, bytes, &bytes) || bytes > (int64_t)ST_JSON_INT_MAX) {
            st = fr_fail(err, FR_E_OVERFLOW, "safetensors: %s: size overflows", names[i]);
        } else if (numel > 0 && !t->data) {
            st = fr_fail(err, FR_E_NULL, "safetensors: %s: data NULL", names[i]);
        } else if (cJSON_GetObjectItemCaseSensitive(root, names[i])) {
            st = fr_fail(err, FR_E_INVALID_ARG, "safetensors: duplicate tensor name \"%s\"", names[i]);
        } else {
            cJSON *e = cJSON_AddObjectToObject(root, names[i]);
            cJSON *sh = e ? cJSON_AddArrayToObject(e, "shape") : NULL;
            cJSON *of = sh && cJSON_AddStringToObject(e, "dtype", dn) ? cJSON_AddArrayToObject(e, "data_offsets")
                                                                       : NULL;
            ok = of != NULL;
            for (int k = 0; ok && k < t->ndim; k++)
                ok = cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t->shape[k]));
            ok = ok && cJSON_AddItemToArray(of, cJSON_CreateNumber((double)pos)) &&
                 cJSON_AddItemToArray(of, cJSON_CreateNumber((double)bytes));
            pos = bytes;
        }
    }
    char *text = ok && st == FR_OK ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (st != FR_OK) return st;
    if (!text) return fr_fail(err, FR_E_NOMEM, "safetensors: cannot build the header");
    size_t tl = strlen(text), padded = (tl + 7) / 8 * 8;
    char *h = malloc(padded + 1);
    if (!h) {
        free(text);
        return fr_fail(err, FR_E_NOMEM, "safetensors: out of memory");
    }
    memcpy(h, text, tl);
    memset(h + tl, ' ', padded - tl);
    h[padded] = 0;
    free(text);
    *hdr = h;
    *hlen = padded;
    *data_len = pos;
    return FR_OK;
}

/* Alike safetensors.c:fr_st_write_file: kept apart because this builds the whole image in one buffer while the file
 * writer streams each tensor to disk (no second copy of the data); the header is shared (make_header). */
fr_status fr_st_write_mem(int n, const char *const *names, const fr_tensor *tensors, int meta_count,
                          const fr_st_meta *meta, void **buf, size_t *len, fr_error *err) {
    if (!buf || !len || n < 0 || (n && (!names || !tensors)) || meta_count < 0 || (meta_count && !meta))
        return fr_fail(err, FR_E_NULL, "safetensors: invalid arguments");
    *buf = NULL;
    *len = 0;
    char *h;
    size_t hl;
    int64_t dl;
    fr_status st = make_header(n, names, tensors, meta_count, meta, &h, &hl, &dl, err);
    if (st != FR_OK) return st;
    unsigned char *b = malloc(8 + hl + (size_t)dl);
    if (!b) {
        free(h);
        return fr_fail(err, FR_E_NOMEM, "safetensors: cannot allocate %lld bytes", (long long)dl);
    }
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(b + 8, h, hl);
    free(h);
    unsigned char *p = b + 8 + hl;
    for (int i = 0; i < n; i++) {
        fr_io_gather(&tensors[i], p);
        p += (size_t)fr_tensor_numel(&tensors[i]) * fr_dtype_size(tensors[i].dtype);
    }
    *buf = b;
    *len = 8 + hl + (size_t)dl;
    return FR_OK;
}

/* Alike safetensors.c:fr_st_write_mem: kept apart because this streams each tensor to disk while the memory writer
 * builds one buffer (no second copy of the data here); the header is shared (make_header). */
fr_status fr_st_write_file(const char *path, int n, const char *const *names, const fr_tensor *tensors,
                           int meta_count, const fr_st_meta *meta, fr_error *err) {
    if (!path || n < 0 || (n && (!names || !tensors)) || meta_count < 0 || (meta_count && !meta))
        return fr_fail(err, FR_E_NULL, "safetensors: invalid arguments");
    char *h;
    size_t hl;
    int64_t dl;
    fr_status st = make_header(n, names, tensors, meta_count, meta, &h, &hl, &dl, err);
    if (st != FR_OK) return st;
    fr_io_out o; /* never through a link at path (io_util.h) */
    if ((st = fr_io_out_open(&o, path, err)) != FR_OK) {
        free(h);
        return st;
    }
    FILE *f = o.f;
    unsigned char pre[8];
    for (int i = 0; i < 8; i++) pre[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    bool ok = fwrite(pre, 1, 8, f) == 8 && fwrite(h, 1, hl, f) == hl;
    free(h);
    for (int i = 0; ok && i < n; i++) ok = fr_io_write_tensor(f, &tensors[i]);
    return fr_io_out_close(&o, ok, err);
}
