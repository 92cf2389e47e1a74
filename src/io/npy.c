/* .npy read and write (format 1.0 / 2.0, little-endian, C order). See npy.h for the contract.
 * The header is a Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
 * spaces and ending in '\n'. We parse exactly that grammar (any key order, either quote style, trailing comma) and
 * reject everything else: a reader that guesses turns a corrupt file into wrong numbers. */
#define _POSIX_C_SOURCE 200809L
#include "io/npy.h"

#include "core/core.h"
#include "io/io_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* numpy refuses headers above 10000 bytes by default; allow more (huge ndim shapes do not exist: FR_MAX_DIMS),
 * but never allocate from an unchecked length. */
#define NPY_MAX_HEADER (1 << 20)

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static const struct {
    const char *descr;
    fr_dtype native; /* FR_DT_NONE: bit-pattern storage only */
    size_t size;
} npy_descrs[] = {
    {"<f8", FR_F64, 8}, {"<f4", FR_F32, 4}, {"<f2", FR_F16, 2}, {"<i4", FR_I32, 4}, {"<i8", FR_I64, 8},
    {"|u1", FR_U8, 1},  {"<u1", FR_U8, 1},  {"|b1", FR_BOOL, 1}, {"<u2", FR_DT_NONE, 2}, {"|i1", FR_DT_NONE, 1},
};
#define NPY_NDESCR (sizeof npy_descrs / sizeof npy_descrs[0])

static int descr_index(const char *d) {
    for (size_t i = 0; i < NPY_NDESCR; i++)
        if (!strcmp(d, npy_descrs[i].descr)) return (int)i;
    return -1;
}

fr_dtype fr_npy_native_dtype(const char *descr) {
    int i = descr ? descr_index(descr) : -1;
    return i < 0 ? FR_DT_NONE : npy_descrs[i].native;
}

bool fr_npy_descr_fits(const char *descr, fr_dtype want) {
    if (!descr) return false;
    int i = descr_index(descr);
    if (i < 0) return false;
    switch (want) {
    case FR_DT_NONE: return npy_descrs[i].native != FR_DT_NONE || !strcmp(descr, "<u2");
    case FR_BF16: return !strcmp(descr, "<u2");
    case FR_E4M3FN:
    case FR_E5M2:
    case FR_HIF8: return npy_descrs[i].size == 1 && strcmp(descr, "|b1") != 0;
    case FR_U8: return npy_descrs[i].native == FR_U8;
    default: return npy_descrs[i].native == want;
    }
}

const char *fr_npy_descr_for(fr_dtype t) {
    switch (t) {
    case FR_F64: return "<f8";
    case FR_F32: return "<f4";
    case FR_F16: return "<f2";
    case FR_BF16: return "<u2";
    case FR_E4M3FN:
    case FR_E5M2:
    case FR_HIF8:
    case FR_U8: return "|u1";
    case FR_I32: return "<i4";
    case FR_I64: return "<i8";
    case FR_BOOL: return "|b1";
    default: return NULL;
    }
}

/* ---- header parsing ---- */

typedef struct hdr_lex {
    const char *p, *end;
} hdr_lex;

static void skip_ws(hdr_lex *x) {
    while (x->p < x->end && (*x->p == ' ' || *x->p == '\t' || *x->p == '\n' || *x->p == '\r')) x->p++;
}

static bool eat(hdr_lex *x, char c) {
    skip_ws(x);
    if (x->p < x->end && *x->p == c) {
        x->p++;
        return true;
    }
    return false;
}

/* A quoted string without escapes into out[cap]; false when malformed or too long. */
static bool lex_string(hdr_lex *x, char *out, size_t cap) {
    skip_ws(x);
    if (x->p >= x->end || (*x->p != '\'' && *x->p != '"')) return false;
    char q = *x->p++;
    size_t n = 0;
    while (x->p < x->end && *x->p != q) {
        if (*x->p == '\\' || (unsigned char)*x->p < 0x20 || n + 1 >= cap) return false;
        out[n++] = *x->p++;
    }
    if (x->p >= x->end) return false;
    x->p++;
    out[n] = 0;
    return true;
}

static bool lex_word(hdr_lex *x, const char *w) {
    skip_ws(x);
    size_t n = strlen(w);
    if ((size_t)(x->end - x->p) < n || memcmp(x->p, w, n) != 0) return false;
    x->p += n;
    return true;
}

/* Non-negative decimal integer (Python 2 'L' suffix tolerated); false on overflow or no digits. */
static bool lex_dim(hdr_lex *x, int64_t *v) {
    skip_ws(x);
    int64_t r = 0;
    const char *s = x->p;
    while (x->p < x->end && *x->p >= '0' && *x->p <= '9') {
        if (!fr_mul_ok(r, 10, &r) || !fr_add_ok(r, *x->p - '0', &r)) return false;
        x->p++;
    }
    if (x->p == s) return false;
    if (x->p < x->end && *x->p == 'L') x->p++;
    *v = r;
    return true;
}

static fr_status parse_dict(const char *txt, size_t n, fr_npy_header *h, const char *what, fr_error *err) {
    hdr_lex x = {txt, txt + n};
    bool have_descr = false, have_fortran = false, have_shape = false;
    if (!eat(&x, '{')) return fr_fail(err, FR_E_FORMAT, "%s: header: expected a dict '{'", what);
    for (;;) {
        if (eat(&x, '}')) break;
        char key[32];
        if (!lex_string(&x, key, sizeof key)) return fr_fail(err, FR_E_FORMAT, "%s: header: expected a key", what);
        if (!eat(&x, ':')) return fr_fail(err, FR_E_FORMAT, "%s: header: expected ':' after '%s'", what, key);
        if (!strcmp(key, "descr")) {
            if (have_descr) return fr_fail(err, FR_E_FORMAT, "%s: header: duplicate key 'descr'", what);
            have_descr = true;
            char d[32];
            if (!lex_string(&x, d, sizeof d))
                return fr_fail(err, FR_E_FORMAT, "%s: header: descr: expected a simple type string", what);
            if (descr_index(d) < 0) {
                if (d[0] == '>' && strlen(d) == 3 && descr_index((char[4]){'<', d[1], d[2], 0}) >= 0)
                    return fr_fail(err, FR_E_FORMAT, "%s: header: descr '%s' is big-endian (little-endian only)",
                                   what, d);
                return fr_fail(err, FR_E_FORMAT, "%s: header: descr '%s' not supported", what, d);
            }
            strcpy(h->descr, d);
        } else if (!strcmp(key, "fortran_order")) {
            if (have_fortran) return fr_fail(err, FR_E_FORMAT, "%s: header: duplicate key 'fortran_order'", what);
            have_fortran = true;
            if (lex_word(&x, "True"))
                return fr_fail(err, FR_E_FORMAT, "%s: header: fortran_order True not supported (C order only)",
                               what);
            if (!lex_word(&x, "False"))
                return fr_fail(err, FR_E_FORMAT, "%s: header: fortran_order: expected False", what);
        } else if (!strcmp(key, "shape")) {
            if (have_shape) return fr_fail(err, FR_E_FORMAT, "%s: header: duplicate key 'shape'", what);
            have_shape = true;
            if (!eat(&x, '(')) return fr_fail(err, FR_E_FORMAT, "%s: header: shape: expected a tuple", what);
            h->ndim = 0;
            if (!eat(&x, ')')) {
                for (;;) {
                    int64_t v;
                    if (!lex_dim(&x, &v))
                        return fr_fail(err, FR_E_FORMAT, "%s: header: shape[%d]: expected a non-negative integer",
                                       what, h->ndim);
                    if (h->ndim >= FR_MAX_DIMS)
                        return fr_fail(err, FR_E_FORMAT, "%s: header: shape: more than %d dimensions", what,
                                       FR_MAX_DIMS);
                    h->shape[h->ndim++] = v;
                    bool comma = eat(&x, ',');
                    if (eat(&x, ')')) {
                        /* Python writes (3,) for one dimension; (3) would be an int, not a tuple. */
                        if (h->ndim == 1 && !comma)
                            return fr_fail(err, FR_E_FORMAT, "%s: header: shape: '(n)' is not a tuple", what);
                        break;
                    }
                    if (!comma) return fr_fail(err, FR_E_FORMAT, "%s: header: shape: expected ',' or ')'", what);
                }
            }
        } else {
            return fr_fail(err, FR_E_FORMAT, "%s: header: unknown key '%s'", what, key);
        }
        if (eat(&x, '}')) break;
        if (!eat(&x, ',')) return fr_fail(err, FR_E_FORMAT, "%s: header: expected ',' or '}'", what);
    }
    skip_ws(&x);
    if (x.p != x.end) return fr_fail(err, FR_E_FORMAT, "%s: header: trailing characters after the dict", what);
    if (!have_descr || !have_fortran || !have_shape)
        return fr_fail(err, FR_E_FORMAT, "%s: header: missing key '%s'", what,
                       !have_descr ? "descr" : !have_fortran ? "fortran_order" : "shape");
    return FR_OK;
}

/* Checks magic and version and reads the header length: pre = bytes before the dict (10 or 12), hl = dict bytes. */
static fr_status parse_preamble(const unsigned char *b, size_t len, int *version, size_t *pre, uint64_t *hl,
                                const char *what, fr_error *err) {
    if (len < 10) return fr_fail(err, FR_E_FORMAT, "%s: truncated: %zu bytes, no npy preamble", what, len);
    if (memcmp(b, npy_magic, 6) != 0) return fr_fail(err, FR_E_FORMAT, "%s: bad magic (not an .npy file)", what);
    if ((b[6] != 1 && b[6] != 2) || b[7] != 0)
        return fr_fail(err, FR_E_FORMAT, "%s: version %u.%u not supported (1.0 or 2.0)", what, b[6], b[7]);
    *version = b[6];
    *pre = *version == 1 ? 10 : 12;
    if (len < *pre) return fr_fail(err, FR_E_FORMAT, "%s: truncated in the header length", what);
    *hl = *version == 1 ? (uint64_t)b[8] | (uint64_t)b[9] << 8
                        : (uint64_t)b[8] | (uint64_t)b[9] << 8 | (uint64_t)b[10] << 16 | (uint64_t)b[11] << 24;
    if (*hl > NPY_MAX_HEADER)
        return fr_fail(err, FR_E_FORMAT, "%s: header length %llu too large (max %d)", what,
                       (unsigned long long)*hl, NPY_MAX_HEADER);
    return FR_OK;
}

fr_status fr_npy_parse_header(const void *buf, size_t len, fr_npy_header *h, const char *what, fr_error *err) {
    if (!what) what = "npy";
    if (!h || (!buf && len)) return fr_fail(err, FR_E_NULL, "%s: NULL buffer or header", what);
    memset(h, 0, sizeof *h);
    const unsigned char *b = buf;
    size_t pre;
    uint64_t hl;
    fr_status st = parse_preamble(b, len, &h->version, &pre, &hl, what, err);
    if (st != FR_OK) return st;
    if (len - pre < hl)
        return fr_fail(err, FR_E_FORMAT, "%s: truncated: header length %llu but only %zu bytes follow", what,
                       (unsigned long long)hl, len - pre);
    if ((st = parse_dict((const char *)b + pre, (size_t)hl, h, what, err)) != FR_OK) {
        memset(h, 0, sizeof *h);
        return st;
    }
    h->data_offset = (int64_t)(pre + hl);
    int64_t n = (int64_t)npy_descrs[descr_index(h->descr)].size;
    for (int k = 0; k < h->ndim; k++)
        if (!fr_mul_ok(n, h->shape[k], &n)) {
            memset(h, 0, sizeof *h);
            return fr_fail(err, FR_E_FORMAT, "%s: shape: size overflows 64-bit", what);
        }
    h->data_bytes = n;
    return FR_OK;
}

/* Dtype of the tensor read for `want` from a header, or a FR_E_FORMAT explaining the mismatch. */
static fr_status resolve_dtype(const fr_npy_header *h, fr_dtype want, fr_dtype *dt, const char *what,
                               fr_error *err) {
    if (!fr_npy_descr_fits(h->descr, want)) {
        if (want == FR_DT_NONE)
            return fr_fail(err, FR_E_FORMAT, "%s: descr '%s' is bit-pattern storage; its dtype must be given", what,
                           h->descr);
        return fr_fail(err, FR_E_FORMAT, "%s: descr '%s' does not hold dtype %s (expected '%s')", what, h->descr,
                       fr_dtype_name(want), fr_npy_descr_for(want) ? fr_npy_descr_for(want) : "?");
    }
    *dt = want != FR_DT_NONE ? want : !strcmp(h->descr, "<u2") ? FR_BF16 : fr_npy_native_dtype(h->descr);
    return FR_OK;
}

fr_status fr_npy_read_mem(const void *buf, size_t len, fr_dtype want, fr_tensor *out, const char *what,
                          fr_error *err) {
    if (!what) what = "npy";
    if (!out) return fr_fail(err, FR_E_NULL, "%s: out: NULL", what);
    memset(out, 0, sizeof *out);
    fr_npy_header h;
    fr_status st = fr_npy_parse_header(buf, len, &h, what, err);
    if (st != FR_OK) return st;
    fr_dtype dt;
    if ((st = resolve_dtype(&h, want, &dt, what, err)) != FR_OK) return st;
    uint64_t have = len - (size_t)h.data_offset;
    if (have != (uint64_t)h.data_bytes)
        return fr_fail(err, FR_E_FORMAT, "%s: data size %llu bytes does not match shape and descr (%lld bytes)",
                       what, (unsigned long long)have, (long long)h.data_bytes);
    void *data = NULL;
    if (h.data_bytes > 0) {
        if (!(data = malloc((size_t)h.data_bytes)))
            return fr_fail(err, FR_E_NOMEM, "%s: cannot allocate %lld bytes", what, (long long)h.data_bytes);
        memcpy(data, (const char *)buf + h.data_offset, (size_t)h.data_bytes);
    }
    *out = fr_tensor_make(dt, data, h.ndim, h.shape);
    return FR_OK;
}

/* Opens path and reads and parses its header; *fp stays open on success, positioned at the data, and the file
 * size has been checked to be exactly header + data (before anything is allocated from the header). */
static fr_status open_header(const char *path, FILE **fp, fr_npy_header *h, fr_error *err) {
    *fp = NULL;
    memset(h, 0, sizeof *h);
    int64_t size;
    FILE *f;
    fr_status st = fr_io_open_read(path, &f, &size, err);
    if (st != FR_OK) return st;
    unsigned char pre[12];
    size_t got = size < 12 ? (size_t)size : 12;
    size_t prelen = 0;
    uint64_t hl = 0;
    int version;
    unsigned char *hb = NULL;
    if (fread(pre, 1, got, f) != got) {
        st = fr_fail(err, FR_E_IO, "%s: read error", path);
    } else if ((st = parse_preamble(pre, got, &version, &prelen, &hl, path, err)) != FR_OK) {
    } else if ((uint64_t)size < prelen + hl) {
        st = fr_fail(err, FR_E_FORMAT, "%s: truncated: header length %llu but the file has %lld bytes", path,
                     (unsigned long long)hl, (long long)size);
    } else if (!(hb = malloc(prelen + hl))) {
        st = fr_fail(err, FR_E_NOMEM, "%s: cannot allocate the header", path);
    } else {
        size_t need = prelen + (size_t)hl, have = got < need ? got : need;
        memcpy(hb, pre, have);
        if (fread(hb + have, 1, need - have, f) != need - have)
            st = fr_fail(err, FR_E_IO, "%s: read error", path);
        else
            st = fr_npy_parse_header(hb, need, h, path, err);
        free(hb);
        if (st == FR_OK && fseek(f, (long)h->data_offset, SEEK_SET) != 0)
            st = fr_fail(err, FR_E_IO, "%s: seek error", path);
        if (st == FR_OK && size - h->data_offset != h->data_bytes)
            st = fr_fail(err, FR_E_FORMAT,
                         "%s: data size %lld bytes does not match shape and descr '%s' (%lld bytes expected)", path,
                         (long long)(size - h->data_offset), h->descr, (long long)h->data_bytes);
    }
    if (st != FR_OK) {
        fclose(f);
        return st;
    }
    *fp = f;
    return FR_OK;
}

fr_status fr_npy_header_dtype(const fr_npy_header *h, fr_dtype want, fr_dtype *dt, const char *what, fr_error *err) {
    return resolve_dtype(h, want, dt, what ? what : "npy", err);
}

fr_status fr_npy_read_fd_header(int fd, fr_npy_header *h, const char *what, fr_error *err) {
    if (!what) what = "npy";
    if (!h) return fr_fail(err, FR_E_NULL, "%s: NULL header", what);
    memset(h, 0, sizeof *h);
    struct stat sb;
    if (fstat(fd, &sb) != 0) return fr_fail(err, FR_E_IO, "%s: cannot stat: %s", what, fr_io_strerror());
    if (!S_ISREG(sb.st_mode)) return fr_fail(err, FR_E_IO, "%s: not a regular file", what);
    int64_t size = (int64_t)sb.st_size;
    unsigned char pre[12];
    size_t got = size < 12 ? (size_t)size : 12, prelen = 0;
    uint64_t hl = 0;
    int version;
    if (!fr_io_pread_full(fd, pre, got, 0)) return fr_fail(err, FR_E_IO, "%s: read error", what);
    fr_status st = parse_preamble(pre, got, &version, &prelen, &hl, what, err);
    if (st != FR_OK) return st;
    if ((uint64_t)size < prelen + hl)
        return fr_fail(err, FR_E_FORMAT, "%s: truncated: header length %llu but the file has %lld bytes", what,
                       (unsigned long long)hl, (long long)size);
    unsigned char *hb = malloc(prelen + hl);
    if (!hb) return fr_fail(err, FR_E_NOMEM, "%s: cannot allocate the header", what);
    if (!fr_io_pread_full(fd, hb, prelen + (size_t)hl, 0))
        st = fr_fail(err, FR_E_IO, "%s: read error", what);
    else
        st = fr_npy_parse_header(hb, prelen + (size_t)hl, h, what, err);
    free(hb);
    if (st == FR_OK && size - h->data_offset != h->data_bytes)
        st = fr_fail(err, FR_E_FORMAT,
                     "%s: data size %lld bytes does not match shape and descr '%s' (%lld bytes expected)", what,
                     (long long)(size - h->data_offset), h->descr, (long long)h->data_bytes);
    if (st != FR_OK) memset(h, 0, sizeof *h);
    return st;
}

fr_status fr_npy_read_file_header(const char *path, fr_npy_header *h, fr_error *err) {
    if (!path || !h) return fr_fail(err, FR_E_NULL, "npy: NULL path or header");
    FILE *f;
    fr_status st = open_header(path, &f, h, err);
    if (st == FR_OK) fclose(f);
    return st;
}

/* Alike safetensors.c:fr_st_read_file: kept apart because the two formats share only the argument check and the
 * open; their headers and data layouts differ. */
fr_status fr_npy_read_file(const char *path, fr_dtype want, fr_tensor *out, fr_error *err) {
    if (!path || !out) return fr_fail(err, FR_E_NULL, "npy: NULL path or out");
    memset(out, 0, sizeof *out);
    FILE *f;
    fr_npy_header h;
    fr_status st = open_header(path, &f, &h, err);
    if (st != FR_OK) return st;
    fr_dtype dt;
    if ((st = resolve_dtype(&h, want, &dt, path, err)) != FR_OK) {
        fclose(f);
        return st;
    }
    void *data = NULL;
    if (h.data_bytes > 0) {
        if (!(data = malloc((size_t)h.data_bytes))) {
            fclose(f);
            return fr_fail(err, FR_E_NOMEM, "%s: cannot allocate %lld bytes", path, (long long)h.data_bytes);
        }
        if (fread(data, 1, (size_t)h.data_bytes, f) != (size_t)h.data_bytes) {
            free(data);
            fclose(f);
            return fr_fail(err, FR_E_IO, "%s: read error in the data", path);
        }
    }
    fclose(f);
    *out = fr_tensor_make(dt, data, h.ndim, h.shape);
    return FR_OK;
}

/* ---- writing ---- */

/* Header bytes (preamble + padded dict) into hb[cap]; returns its length or 0 when the version cannot hold it. */
static size_t make_header(const fr_tensor *t, const char *descr, int version, char *hb, size_t cap) {
    char dict[512];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int k = 0; k < t->ndim; k++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%s%lld", k ? ", " : "", (long long)t->shape[k]);
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", t->ndim == 1 ? "," : "");
    size_t pre = version == 1 ? 10 : 12;
    /* numpy pads with spaces so the data starts at a multiple of 64, and ends the header with '\n'. */
    size_t total = (pre + (size_t)n + 1 + 63) / 64 * 64;
    size_t hl = total - pre;
    if (total > cap || (version == 1 && hl > 65535)) return 0;
    memcpy(hb, npy_magic, 6);
    hb[6] = (char)version;
    hb[7] = 0;
    for (size_t i = 0; i < pre - 8; i++) hb[8 + i] = (char)(hl >> (8 * i) & 0xff);
    memcpy(hb + pre, dict, (size_t)n);
    memset(hb + pre + n, ' ', hl - (size_t)n - 1);
    hb[total - 1] = '\n';
    return total;
}

static fr_status check_writable(const fr_tensor *t, const char *what, int64_t *bytes, fr_error *err) {
    if (!t) return fr_fail(err, FR_E_NULL, "%s: tensor: NULL", what);
    if (!fr_npy_descr_for(t->dtype)) return fr_fail(err, FR_E_DTYPE, "%s: dtype %s cannot be written", what,
                                                     fr_dtype_name(t->dtype));
    if (t->ndim < 0 || t->ndim > FR_MAX_DIMS)
        return fr_fail(err, FR_E_SHAPE, "%s: ndim %d outside 0..%d", what, t->ndim, FR_MAX_DIMS);
    int64_t n = fr_tensor_numel(t);
    if (n < 0) return fr_fail(err, FR_E_OVERFLOW, "%s: element count overflows or a dimension is negative", what);
    if (n > 0 && !t->data) return fr_fail(err, FR_E_NULL, "%s: data: NULL with %lld elements", what, (long long)n);
    if (!fr_mul_ok(n, (int64_t)fr_dtype_size(t->dtype), bytes))
        return fr_fail(err, FR_E_OVERFLOW, "%s: byte size overflows", what);
    return FR_OK;
}

fr_status fr_npy_header_bytes(const fr_tensor *t, int version, char *buf, size_t *len, int64_t *data_bytes,
                             const char *what, fr_error *err) {
    if (!what) what = "npy";
    if (!buf || !len) return fr_fail(err, FR_E_NULL, "%s: header buffer: NULL", what);
    *len = 0;
    int64_t bytes = 0;
    fr_status st = check_writable(t, what, &bytes, err);
    if (st != FR_OK) return st;
    if (version < 0 || version > 2) return fr_fail(err, FR_E_INVALID_ARG, "%s: version %d (0, 1 or 2)", what, version);
    size_t hl = make_header(t, fr_npy_descr_for(t->dtype), version ? version : 1, buf, FR_NPY_HEADER_MAX);
    if (!hl && !version) hl = make_header(t, fr_npy_descr_for(t->dtype), 2, buf, FR_NPY_HEADER_MAX);
    if (!hl) return fr_fail(err, FR_E_INTERNAL, "%s: header does not fit", what);
    *len = hl;
    if (data_bytes) *data_bytes = bytes;
    return FR_OK;
}

fr_status fr_npy_write_mem(const fr_tensor *t, int version, void **buf, size_t *len, fr_error *err) {
    if (!buf || !len) return fr_fail(err, FR_E_NULL, "npy: buf/len: NULL");
    *buf = NULL;
    *len = 0;
    int64_t bytes = 0;
    fr_status st = check_writable(t, "npy", &bytes, err);
    if (st != FR_OK) return st;
    char hb[FR_NPY_HEADER_MAX];
    size_t hl;
    if ((st = fr_npy_header_bytes(t, version, hb, &hl, NULL, "npy", err)) != FR_OK) return st;
    if ((uint64_t)bytes > SIZE_MAX - hl) return fr_fail(err, FR_E_OVERFLOW, "npy: size overflows");
    char *b = malloc(hl + (size_t)bytes);
    if (!b) return fr_fail(err, FR_E_NOMEM, "npy: cannot allocate %lld bytes", (long long)bytes);
    memcpy(b, hb, hl);
    fr_io_gather(t, b + hl);
    *buf = b;
    *len = hl + (size_t)bytes;
    return FR_OK;
}

fr_status fr_npy_write_file(const char *path, const fr_tensor *t, int version, fr_error *err) {
    if (!path) return fr_fail(err, FR_E_NULL, "npy: path: NULL");
    int64_t bytes = 0;
    fr_status st = check_writable(t, path, &bytes, err);
    if (st != FR_OK) return st;
    char hb[FR_NPY_HEADER_MAX];
    size_t hl;
    if ((st = fr_npy_header_bytes(t, version, hb, &hl, NULL, path, err)) != FR_OK) return st;
    fr_io_out o; /* never through a link at path (issue: CASE/attention_out.npy -> /victim was overwritten) */
    if ((st = fr_io_out_open(&o, path, err)) != FR_OK) return st;
    bool ok = fwrite(hb, 1, hl, o.f) == hl && fr_io_write_tensor(o.f, t);
    return fr_io_out_close(&o, ok, err);
}
