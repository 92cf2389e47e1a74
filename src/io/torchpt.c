/* torch.save files of one tensor (torchpt.h): the zip container, then the pickle read by an interpreter of the one
 * shape torch.save gives a tensor. Nothing in the file is executed or trusted: every count and offset is checked
 * against the bytes present before it is used, and a file that is not exactly that shape is FR_E_FORMAT naming what
 * is wrong. */
#define _XOPEN_SOURCE 700
#include "io/torchpt.h"

#include "core/core.h"
#include "io/io_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PT_MAX_ENTRIES 4096
#define PT_MAX_CD (INT64_C(4) << 20)
#define PT_MAX_PKL (INT64_C(1) << 20)
#define PT_MAX_NAME 1024
#define PT_EOCD 22
#define PT_EOCD_SEARCH (PT_EOCD + 65535)

/* ---- the bytes: a buffer in memory or an open file ---- */

typedef struct src {
    const uint8_t *buf; /* NULL: read fd */
    int fd;
    int64_t size;
    const char *what;
} src;

static fr_status src_read(const src *s, int64_t off, int64_t n, void *dst, const char *field, fr_error *err) {
    if (off < 0 || n < 0 || off > s->size || n > s->size - off)
        return fr_fail(err, FR_E_FORMAT, "%s: %s: %lld bytes at offset %lld lie past the end of the file (%lld bytes)",
                       s->what, field, (long long)n, (long long)off, (long long)s->size);
    if (!n) return FR_OK;
    if (s->buf) {
        memcpy(dst, s->buf + off, (size_t)n);
        return FR_OK;
    }
    if (!fr_io_pread_full(s->fd, dst, (size_t)n, (off_t)off))
        return fr_fail(err, FR_E_IO, "%s: %s: cannot read %lld bytes at offset %lld: %s", s->what, field,
                       (long long)n, (long long)off, errno ? fr_io_strerror() : "unexpected end of file");
    return FR_OK;
}

static uint32_t rd16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32(const uint8_t *p) { return rd16(p) | rd16(p + 2) << 16; }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static uint32_t crc32_of(const uint8_t *p, size_t n) {
    uint32_t table[256];
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[i] = c;
    }
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

/* ---- the zip container ---- */

typedef struct zent {
    const uint8_t *name; /* into the central directory buffer, not NUL-terminated */
    uint32_t nlen;
    int64_t size, loff;
    uint32_t crc;
} zent;

typedef struct zip {
    uint8_t *cd;  /* the central directory, owned */
    zent *e;      /* owned */
    int n;
    int64_t cd_off; /* records lie before it */
} zip;

static void zip_free(zip *z) {
    free(z->cd);
    free(z->e);
    memset(z, 0, sizeof *z);
}

/* The zip64 extended information of a central directory entry: the fields whose 32-bit value is the 0xFFFFFFFF
 * sentinel, in the order the format gives them. */
static fr_status zip64_extra(const src *s, const uint8_t *x, uint32_t xlen, int64_t *usize, int64_t *csize,
                             int64_t *loff, uint32_t *disk, fr_error *err) {
    uint32_t p = 0;
    while (p + 4 <= xlen) {
        uint32_t id = rd16(x + p), sz = rd16(x + p + 2);
        if (sz > xlen - p - 4) return fr_fail(err, FR_E_FORMAT, "%s: zip extra field runs past its entry", s->what);
        if (id == 1) {
            const uint8_t *f = x + p + 4;
            uint32_t q = 0;
            int64_t *v[3] = {usize, csize, loff};
            for (int k = 0; k < 3; k++) {
                if (*v[k] != INT64_C(0xFFFFFFFF)) continue;
                if (q + 8 > sz) return fr_fail(err, FR_E_FORMAT, "%s: zip64 extra field too short", s->what);
                uint64_t u = rd64(f + q);
                if (u > (uint64_t)INT64_MAX) return fr_fail(err, FR_E_FORMAT, "%s: zip64 size out of range", s->what);
                *v[k] = (int64_t)u;
                q += 8;
            }
            if (*disk == 0xFFFF) {
                if (q + 4 > sz) return fr_fail(err, FR_E_FORMAT, "%s: zip64 extra field too short", s->what);
                *disk = rd32(f + q);
            }
        }
        p += 4 + sz;
    }
    return FR_OK;
}

static fr_status zip_open(const src *s, zip *z, fr_error *err) {
    memset(z, 0, sizeof *z);
    if (s->size < PT_EOCD) return fr_fail(err, FR_E_FORMAT, "%s: %lld bytes: not a torch.save (zip) file", s->what,
                                          (long long)s->size);
    int64_t tail = s->size < PT_EOCD_SEARCH ? s->size : PT_EOCD_SEARCH;
    uint8_t *t = malloc((size_t)tail);
    if (!t) return fr_fail(err, FR_E_NOMEM, "%s: out of memory", s->what);
    fr_status st = src_read(s, s->size - tail, tail, t, "end of central directory", err);
    int64_t eocd = -1;
    /* The record whose comment ends exactly at the end of the file: a signature inside a comment cannot match. */
    for (int64_t p = tail - PT_EOCD; st == FR_OK && p >= 0; p--)
        if (rd32(t + p) == 0x06054b50u && p + PT_EOCD + (int64_t)rd16(t + p + 20) == tail) {
            eocd = p;
            break;
        }
    if (st == FR_OK && eocd < 0)
        st = fr_fail(err, FR_E_FORMAT, "%s: no zip end-of-central-directory record: not a torch.save file (torch "
                     "older than 1.6 wrote another format: load and save it again)", s->what);
    if (st != FR_OK) {
        free(t);
        return st;
    }
    const uint8_t *e = t + eocd;
    int64_t eocd_pos = s->size - tail + eocd;
    uint32_t disk = rd16(e + 4), cd_disk = rd16(e + 6), n_disk = rd16(e + 8), n_total = rd16(e + 10);
    int64_t cd_size = rd32(e + 12), cd_off = rd32(e + 16), limit = eocd_pos, n = n_total;
    bool z64 = n_total == 0xFFFF || cd_size == INT64_C(0xFFFFFFFF) || cd_off == INT64_C(0xFFFFFFFF);
    free(t);
    if (z64) {
        uint8_t loc[20], r[56];
        if (eocd_pos < 20 || (st = src_read(s, eocd_pos - 20, 20, loc, "zip64 locator", err)) != FR_OK ||
            rd32(loc) != 0x07064b50u)
            return st != FR_OK ? st : fr_fail(err, FR_E_FORMAT, "%s: zip64 end-of-central-directory locator missing",
                                              s->what);
        uint64_t z64_off = rd64(loc + 8);
        if (rd32(loc + 4) != 0 || rd32(loc + 16) != 1 || z64_off > (uint64_t)(eocd_pos - 20) ||
            (uint64_t)(eocd_pos - 20) - z64_off < 56)
            return fr_fail(err, FR_E_FORMAT, "%s: zip64 locator: bad disk count or offset %llu", s->what,
                           (unsigned long long)z64_off);
        if ((st = src_read(s, (int64_t)z64_off, 56, r, "zip64 end of central directory", err)) != FR_OK) return st;
        if (rd32(r) != 0x06064b50u || rd64(r + 4) < 44)
            return fr_fail(err, FR_E_FORMAT, "%s: zip64 end-of-central-directory record malformed", s->what);
        disk = rd32(r + 16);
        cd_disk = rd32(r + 20);
        uint64_t nd = rd64(r + 24), nt = rd64(r + 32), cs = rd64(r + 40), co = rd64(r + 48);
        if (nd != nt || nt > PT_MAX_ENTRIES || cs > (uint64_t)PT_MAX_CD || co > (uint64_t)z64_off)
            return fr_fail(err, FR_E_FORMAT, "%s: zip64 directory of %llu entries, %llu bytes at %llu: out of range",
                           s->what, (unsigned long long)nt, (unsigned long long)cs, (unsigned long long)co);
        n = (int64_t)nt;
        n_disk = (uint32_t)nd;
        cd_size = (int64_t)cs;
        cd_off = (int64_t)co;
        limit = (int64_t)z64_off;
    }
    if (disk != 0 || cd_disk != 0 || (int64_t)n_disk != n)
        return fr_fail(err, FR_E_FORMAT, "%s: a multi-disk zip archive", s->what);
    if (n < 1 || n > PT_MAX_ENTRIES || cd_size > PT_MAX_CD || cd_size < 46 * n || cd_off > limit ||
        cd_size > limit - cd_off)
        return fr_fail(err, FR_E_FORMAT, "%s: central directory of %lld entries, %lld bytes at offset %lld: out of "
                       "range (the archive holds %lld bytes before its end record)", s->what, (long long)n,
                       (long long)cd_size, (long long)cd_off, (long long)limit);
    z->cd = malloc((size_t)cd_size);
    z->e = calloc((size_t)n, sizeof *z->e);
    if (!z->cd || !z->e) {
        zip_free(z);
        return fr_fail(err, FR_E_NOMEM, "%s: out of memory", s->what);
    }
    if ((st = src_read(s, cd_off, cd_size, z->cd, "central directory", err)) != FR_OK) {
        zip_free(z);
        return st;
    }
    z->cd_off = cd_off;
    int64_t p = 0;
    for (int64_t k = 0; k < n && st == FR_OK; k++) {
        const uint8_t *c = z->cd + p;
        if (cd_size - p < 46 || rd32(c) != 0x02014b50u) {
            st = fr_fail(err, FR_E_FORMAT, "%s: central directory entry %lld malformed", s->what, (long long)k);
            break;
        }
        uint32_t flags = rd16(c + 8), method = rd16(c + 10), nlen = rd16(c + 28), xlen = rd16(c + 30),
                 clen = rd16(c + 32), edisk = rd16(c + 34);
        int64_t csize = rd32(c + 20), usize = rd32(c + 24), loff = rd32(c + 42);
        if ((int64_t)nlen + xlen + clen > cd_size - p - 46) {
            st = fr_fail(err, FR_E_FORMAT, "%s: central directory entry %lld runs past the directory", s->what,
                         (long long)k);
            break;
        }
        const uint8_t *name = c + 46;
        if ((st = zip64_extra(s, name + nlen, xlen, &usize, &csize, &loff, &edisk, err)) != FR_OK) break;
        if (nlen == 0 || nlen > PT_MAX_NAME || memchr(name, 0, nlen))
            st = fr_fail(err, FR_E_FORMAT, "%s: zip entry %lld has an empty, over-long or NUL-holding name", s->what,
                         (long long)k);
        else if (flags & 1)
            st = fr_fail(err, FR_E_FORMAT, "%s: zip entry '%.*s' is encrypted", s->what, (int)nlen, name);
        else if (method != 0)
            st = fr_fail(err, FR_E_FORMAT, "%s: zip entry '%.*s' is compressed (method %u): torch.save stores "
                         "records uncompressed", s->what, (int)nlen, name, method);
        else if (csize != usize || edisk != 0)
            st = fr_fail(err, FR_E_FORMAT, "%s: zip entry '%.*s': stored size %lld differs from its size %lld",
                         s->what, (int)nlen, name, (long long)csize, (long long)usize);
        /* Every record, read or not, must fit before the directory: a header that lies about one is not torch's. */
        else if (loff < 0 || loff > cd_off || cd_off - loff < 30 + (int64_t)nlen || usize > cd_off - loff - 30 - nlen)
            st = fr_fail(err, FR_E_FORMAT, "%s: zip entry '%.*s' (%lld bytes at offset %lld) does not fit before the "
                         "central directory at %lld", s->what, (int)nlen, name, (long long)usize, (long long)loff,
                         (long long)cd_off);
        z->e[k] = (zent){name, nlen, usize, loff, rd32(c + 16)};
        p += 46 + nlen + xlen + clen;
    }
    if (st != FR_OK) {
        zip_free(z);
        return st;
    }
    z->n = (int)n;
    return FR_OK;
}

/* The entry named exactly prefix + "/" + rest; NULL when absent. A name listed twice is ambiguous: FR_E_FORMAT. */
static fr_status zip_find(const src *s, const zip *z, const char *prefix, size_t plen, const char *rest,
                          const zent **out, fr_error *err) {
    *out = NULL;
    size_t rlen = strlen(rest), want = plen + 1 + rlen;
    for (int k = 0; k < z->n; k++) {
        const zent *e = &z->e[k];
        if (e->nlen != want || memcmp(e->name, prefix, plen) || e->name[plen] != '/' ||
            memcmp(e->name + plen + 1, rest, rlen))
            continue;
        if (*out) return fr_fail(err, FR_E_FORMAT, "%s: the record '%.*s/%s' is listed twice", s->what, (int)plen,
                                 prefix, rest);
        *out = e;
    }
    return FR_OK;
}

/* Where an entry's bytes start (after its local header), checked to lie before the central directory. */
static fr_status zip_data_offset(const src *s, const zip *z, const zent *e, int64_t *off, fr_error *err) {
    uint8_t h[30];
    fr_status st = src_read(s, e->loff, 30, h, "local file header", err);
    if (st != FR_OK) return st;
    if (rd32(h) != 0x04034b50u)
        return fr_fail(err, FR_E_FORMAT, "%s: '%.*s': no local file header at offset %lld", s->what, (int)e->nlen,
                       e->name, (long long)e->loff);
    uint32_t nlen = rd16(h + 26), xlen = rd16(h + 28);
    if (nlen != e->nlen)
        return fr_fail(err, FR_E_FORMAT, "%s: '%.*s': the local header names another record", s->what, (int)e->nlen,
                       e->name);
    uint8_t name[PT_MAX_NAME];
    if ((st = src_read(s, e->loff + 30, nlen, name, "local file name", err)) != FR_OK) return st;
    if (memcmp(name, e->name, nlen))
        return fr_fail(err, FR_E_FORMAT, "%s: '%.*s': the local header names another record", s->what, (int)e->nlen,
                       e->name);
    int64_t d = e->loff + 30 + nlen + xlen;
    if (d > z->cd_off || e->size > z->cd_off - d)
        return fr_fail(err, FR_E_FORMAT, "%s: record '%.*s' (%lld bytes at offset %lld) overlaps the central "
                       "directory", s->what, (int)e->nlen, e->name, (long long)e->size, (long long)d);
    *off = d;
    return FR_OK;
}

/* ---- the pickle ---- */

enum { G_REBUILD_V2 = 1, G_REBUILD_V3, G_ODICT, G_STORAGE, G_DTYPE };
typedef enum pv_kind { PV_NONE, PV_BOOL, PV_INT, PV_STR, PV_TUPLE, PV_GLOBAL, PV_PERSID, PV_ODICT, PV_DICT,
                       PV_TENSOR } pv_kind;

typedef struct pv {
    pv_kind k;
    int64_t i;      /* bool, int; global: G_*; persistent id: its storage's fr_dtype */
    int64_t a, b;   /* str: offset, length in the pickle; tuple: first item, count; dict: entries, true values;
                       storage global: fr_dtype, untyped; dtype global: fr_dtype; persistent id: items, untyped */
} pv;

#define PK_VALUES 4096
#define PK_ITEMS 8192
#define PK_STACK 256
#define PK_MEMO 4096

typedef struct pk {
    const uint8_t *p;
    int64_t n, pos;
    pv v[PK_VALUES];
    int nv;
    int items[PK_ITEMS];
    int ni;
    int stack[PK_STACK]; /* value indices; -1 = MARK */
    int sp;
    int memo[PK_MEMO];
    int nmemo; /* highest memo index used + 1 (MEMOIZE appends here) */
    /* the tensor, once rebuilt */
    bool have_tensor;
    fr_dtype dtype;
    int64_t offset, numel_storage;
    int ndim;
    int64_t shape[FR_MAX_DIMS], stride[FR_MAX_DIMS];
    char key[24], location[32];
    const char *what;
} pk;

static fr_status pk_err(pk *k, fr_error *err, const char *msg) {
    return fr_fail(err, FR_E_FORMAT, "%s: data.pkl: %s (byte %lld)", k->what, msg, (long long)k->pos);
}

static int pk_new(pk *k, pv v) {
    if (k->nv >= PK_VALUES) return -1;
    k->v[k->nv] = v;
    return k->nv++;
}

static fr_status pk_push(pk *k, int idx, fr_error *err) {
    if (idx < 0) return pk_err(k, err, "more objects than a saved tensor holds");
    if (k->sp >= PK_STACK) return pk_err(k, err, "stack deeper than a saved tensor needs");
    k->stack[k->sp++] = idx;
    return FR_OK;
}

static fr_status pk_pop(pk *k, int *idx, fr_error *err) {
    if (k->sp < 1 || k->stack[k->sp - 1] < 0) return pk_err(k, err, "stack underflow");
    *idx = k->stack[--k->sp];
    return FR_OK;
}

static fr_status pk_bytes(pk *k, int64_t n, const uint8_t **out, fr_error *err) {
    if (n < 0 || n > k->n - k->pos) return pk_err(k, err, "truncated");
    *out = k->p + k->pos;
    k->pos += n;
    return FR_OK;
}

/* A tuple of the top n stack entries (n < 0: down to the last MARK, which is removed). */
static fr_status pk_tuple(pk *k, int n, fr_error *err) {
    int first, keep;
    if (n < 0) {
        int m = k->sp - 1;
        while (m >= 0 && k->stack[m] >= 0) m--;
        if (m < 0) return pk_err(k, err, "TUPLE without MARK");
        first = m + 1;
        keep = m;
        n = k->sp - first;
    } else {
        if (k->sp < n) return pk_err(k, err, "stack underflow");
        first = keep = k->sp - n;
        for (int q = first; q < k->sp; q++)
            if (k->stack[q] < 0) return pk_err(k, err, "MARK inside a short tuple");
    }
    if (k->ni + n > PK_ITEMS) return pk_err(k, err, "more tuple items than a saved tensor holds");
    int a = k->ni;
    for (int q = 0; q < n; q++) k->items[k->ni++] = k->stack[first + q];
    k->sp = keep;
    return pk_push(k, pk_new(k, (pv){PV_TUPLE, 0, a, n}), err);
}

static bool pk_str_is(const pk *k, const pv *v, const char *s) {
    size_t n = strlen(s);
    return v->k == PV_STR && v->b == (int64_t)n && !memcmp(k->p + v->a, s, n);
}

static const struct {
    const char *name;
    fr_dtype dt;
} pt_storages[] = {
    {"FloatStorage", FR_F32}, {"HalfStorage", FR_F16},  {"BFloat16Storage", FR_BF16}, {"DoubleStorage", FR_F64},
    {"IntStorage", FR_I32},   {"LongStorage", FR_I64},  {"ByteStorage", FR_U8},       {"BoolStorage", FR_BOOL},
    {"Float8_e4m3fnStorage", FR_E4M3FN}, {"Float8_e5m2Storage", FR_E5M2},
};

/* The dtypes _rebuild_tensor_v3 names (torch.<name>), for tensors on an UntypedStorage (float8 ones, for instance). */
static const struct {
    const char *name;
    fr_dtype dt;
} pt_dtypes[] = {
    {"float32", FR_F32}, {"float16", FR_F16}, {"bfloat16", FR_BF16}, {"float64", FR_F64}, {"int32", FR_I32},
    {"int64", FR_I64},   {"uint8", FR_U8},    {"bool", FR_BOOL},     {"float8_e4m3fn", FR_E4M3FN},
    {"float8_e5m2", FR_E5M2},
};

/* A global of the allowed shape (module and name as given), else FR_E_FORMAT naming it. */
static fr_status pk_global(pk *k, const uint8_t *mod, int64_t ml, const uint8_t *name, int64_t nl, fr_error *err) {
#define IS(p, l, s) ((l) == (int64_t)strlen(s) && !memcmp((p), (s), (size_t)(l)))
    pv g = {PV_GLOBAL, 0, 0, 0};
    if (IS(mod, ml, "torch._utils") && IS(name, nl, "_rebuild_tensor_v2")) {
        g.i = G_REBUILD_V2;
    } else if (IS(mod, ml, "torch._utils") && IS(name, nl, "_rebuild_tensor_v3")) {
        g.i = G_REBUILD_V3;
    } else if (IS(mod, ml, "collections") && IS(name, nl, "OrderedDict")) {
        g.i = G_ODICT;
    } else if (IS(mod, ml, "torch.storage") && IS(name, nl, "UntypedStorage")) {
        g.i = G_STORAGE;
        g.a = FR_U8;
        g.b = 1;
    } else if (IS(mod, ml, "torch")) {
        for (size_t q = 0; q < sizeof pt_storages / sizeof pt_storages[0]; q++)
            if (IS(name, nl, pt_storages[q].name)) {
                g.i = G_STORAGE;
                g.a = pt_storages[q].dt;
            }
        for (size_t q = 0; q < sizeof pt_dtypes / sizeof pt_dtypes[0]; q++)
            if (IS(name, nl, pt_dtypes[q].name)) {
                g.i = G_DTYPE;
                g.a = pt_dtypes[q].dt;
            }
    }
#undef IS
    if (!g.i)
        return fr_fail(err, FR_E_FORMAT, "%s: data.pkl: global '%.*s.%.*s' is not part of a saved tensor (flashref "
                       "reads plain tensors saved by torch.save and never runs pickle code)", k->what,
                       (int)(ml > 64 ? 64 : ml), (const char *)mod, (int)(nl > 64 ? 64 : nl), (const char *)name);
    return pk_push(k, pk_new(k, g), err);
}

static bool pk_int_tuple(const pk *k, const pv *t, int64_t *out, int *n, int max) {
    if (t->k != PV_TUPLE || t->b > max) return false;
    for (int64_t q = 0; q < t->b; q++) {
        const pv *x = &k->v[k->items[t->a + q]];
        if (x->k != PV_INT) return false;
        out[q] = x->i;
    }
    *n = (int)t->b;
    return true;
}

/* REDUCE of an allowed callable: OrderedDict() or _rebuild_tensor_v2(...). */
static fr_status pk_reduce(pk *k, fr_error *err) {
    int ai = 0, fi = 0;
    fr_status st = pk_pop(k, &ai, err);
    if (st == FR_OK) st = pk_pop(k, &fi, err);
    if (st != FR_OK) return st;
    const pv *f = &k->v[fi], *args = &k->v[ai];
    if (f->k != PV_GLOBAL || args->k != PV_TUPLE) return pk_err(k, err, "REDUCE of something not callable");
    if (f->i == G_ODICT) {
        if (args->b != 0) return pk_err(k, err, "OrderedDict with contents (backward hooks are not saved tensors)");
        return pk_push(k, pk_new(k, (pv){PV_ODICT, 0, 0, 0}), err);
    }
    if (f->i != G_REBUILD_V2 && f->i != G_REBUILD_V3) return pk_err(k, err, "a class called as a function");
    if (k->have_tensor) return pk_err(k, err, "more than one tensor in the file");
    /* v2: (storage, offset, size, stride, requires_grad, hooks[, metadata]); v3 adds the dtype before metadata */
    bool v3 = f->i == G_REBUILD_V3;
    int nfix = v3 ? 7 : 6;
    if (args->b != nfix && args->b != nfix + 1)
        return pk_err(k, err, v3 ? "_rebuild_tensor_v3 with other than 7 or 8 arguments"
                                 : "_rebuild_tensor_v2 with other than 6 or 7 arguments");
    const pv *a[8];
    for (int q = 0; q < args->b; q++) a[q] = &k->v[k->items[args->a + q]];
    if (a[0]->k != PV_PERSID) return pk_err(k, err, "_rebuild_tensor_v2: the first argument is not a storage");
    if (a[1]->k != PV_INT || a[1]->i < 0) return pk_err(k, err, "_rebuild_tensor_v2: storage offset not an int >= 0");
    int nd = 0, ns = 0;
    if (!pk_int_tuple(k, a[2], k->shape, &nd, FR_MAX_DIMS) || !pk_int_tuple(k, a[3], k->stride, &ns, FR_MAX_DIMS) ||
        nd != ns)
        return pk_err(k, err, "_rebuild_tensor_v2: size and stride are not int tuples of the same length (at most 8)");
    if (a[4]->k != PV_BOOL) return pk_err(k, err, "_rebuild_tensor_v2: requires_grad is not a bool");
    if (a[5]->k != PV_ODICT && !(a[5]->k == PV_DICT && a[5]->a == 0))
        return pk_err(k, err, "_rebuild_tensor_v2: backward hooks present");
    if (args->b == nfix + 1) {
        const pv *m = a[nfix];
        if (m->k != PV_DICT) return pk_err(k, err, "_rebuild_tensor: metadata is not a dict");
        if (m->b > 0)
            return pk_err(k, err, "the tensor is in an NPU private format (its metadata has a true flag): its bytes "
                                  "are not in logical order; save it in ND format (tensor.cpu())");
    }
    const pv *pid = a[0];
    k->dtype = (fr_dtype)pid->i;
    const pv *key = &k->v[k->items[pid->a + 0]], *loc = &k->v[k->items[pid->a + 1]];
    k->numel_storage = k->v[k->items[pid->a + 2]].i;
    if (v3) {
        if (a[6]->k != PV_GLOBAL || a[6]->i != G_DTYPE) return pk_err(k, err, "_rebuild_tensor_v3: no dtype");
        fr_dtype dt = (fr_dtype)a[6]->a;
        if (pid->b) { /* an UntypedStorage counts bytes */
            int64_t es = (int64_t)fr_dtype_size(dt);
            if (k->numel_storage % es) return pk_err(k, err, "untyped storage not a whole number of elements");
            k->numel_storage /= es;
        } else if (dt != k->dtype) {
            return pk_err(k, err, "_rebuild_tensor_v3: the dtype is not the storage's");
        }
        k->dtype = dt;
    } else if (pid->b) {
        return pk_err(k, err, "_rebuild_tensor_v2 of an untyped storage");
    }
    snprintf(k->key, sizeof k->key, "%.*s", (int)key->b, (const char *)k->p + key->a);
    snprintf(k->location, sizeof k->location, "%.*s", (int)(loc->b < 31 ? loc->b : 31), (const char *)k->p + loc->a);
    k->offset = a[1]->i;
    k->ndim = nd;
    k->have_tensor = true;
    return pk_push(k, pk_new(k, (pv){PV_TENSOR, 0, 0, 0}), err);
}

/* BINPERSID: ('storage', torch.<T>Storage, key, location, numel). */
static fr_status pk_persid(pk *k, fr_error *err) {
    int ti = 0;
    fr_status st = pk_pop(k, &ti, err);
    if (st != FR_OK) return st;
    const pv *t = &k->v[ti];
    if (t->k != PV_TUPLE || t->b != 5) return pk_err(k, err, "persistent id is not a 5-tuple");
    const pv *tag = &k->v[k->items[t->a]], *cls = &k->v[k->items[t->a + 1]], *key = &k->v[k->items[t->a + 2]],
             *loc = &k->v[k->items[t->a + 3]], *numel = &k->v[k->items[t->a + 4]];
    if (!pk_str_is(k, tag, "storage")) return pk_err(k, err, "persistent id is not a storage");
    if (cls->k != PV_GLOBAL || cls->i != G_STORAGE) return pk_err(k, err, "persistent id: not a storage class");
    if (key->k != PV_STR || key->b < 1 || key->b > 20) return pk_err(k, err, "persistent id: bad storage key");
    for (int64_t q = 0; q < key->b; q++)
        if (k->p[key->a + q] < '0' || k->p[key->a + q] > '9') return pk_err(k, err, "persistent id: bad storage key");
    if (loc->k != PV_STR || loc->b > 64) return pk_err(k, err, "persistent id: bad location");
    for (int64_t q = 0; q < loc->b; q++)
        if (k->p[loc->a + q] < 0x20 || k->p[loc->a + q] > 0x7e) return pk_err(k, err, "persistent id: bad location");
    if (numel->k != PV_INT || numel->i < 0) return pk_err(k, err, "persistent id: bad storage size");
    if (k->ni + 3 > PK_ITEMS) return pk_err(k, err, "more tuple items than a saved tensor holds");
    int a = k->ni;
    k->items[k->ni++] = k->items[t->a + 2];
    k->items[k->ni++] = k->items[t->a + 3];
    k->items[k->ni++] = k->items[t->a + 4];
    return pk_push(k, pk_new(k, (pv){PV_PERSID, cls->a, a, cls->b}), err);
}

static fr_status pk_setitems(pk *k, int npairs, fr_error *err) {
    /* npairs < 0: down to the MARK */
    int first = k->sp - 2 * npairs;
    if (npairs < 0) {
        int m = k->sp - 1;
        while (m >= 0 && k->stack[m] >= 0) m--;
        if (m < 0) return pk_err(k, err, "SETITEMS without MARK");
        first = m + 1;
        if ((k->sp - first) % 2) return pk_err(k, err, "SETITEMS with an odd number of items");
    }
    int dict_at = npairs < 0 ? first - 2 : first - 1;
    if (first < 0 || dict_at < 0 || k->stack[dict_at] < 0) return pk_err(k, err, "SETITEM without a dict");
    for (int q = first; q < k->sp; q++)
        if (k->stack[q] < 0) return pk_err(k, err, "MARK inside SETITEM");
    pv *d = &k->v[k->stack[dict_at]];
    if (d->k != PV_DICT) return pk_err(k, err, "SETITEM on something not a dict");
    for (int q = first; q < k->sp; q += 2) {
        const pv *key = &k->v[k->stack[q]], *val = &k->v[k->stack[q + 1]];
        if (key->k != PV_STR || val->k != PV_BOOL) return pk_err(k, err, "metadata entry not {str: bool}");
        d->a++;
        d->b += val->i != 0;
    }
    k->sp = npairs < 0 ? first - 1 : first;
    return FR_OK;
}

static fr_status pk_run(pk *k, fr_error *err) {
    const uint8_t *b = NULL;
    fr_status st = FR_OK;
    while (st == FR_OK) {
        if (k->pos >= k->n) return pk_err(k, err, "no STOP");
        uint8_t op = k->p[k->pos++];
        switch (op) {
        case 0x80: /* PROTO */
            if ((st = pk_bytes(k, 1, &b, err)) == FR_OK && (b[0] < 2 || b[0] > 5))
                st = pk_err(k, err, "pickle protocol other than 2-5");
            break;
        case 0x95: st = pk_bytes(k, 8, &b, err); break; /* FRAME: framing only */
        case 'c': {                                      /* GLOBAL module\nname\n */
            const uint8_t *m = k->p + k->pos, *e1 = memchr(m, '\n', (size_t)(k->n - k->pos));
            if (!e1) return pk_err(k, err, "GLOBAL without newline");
            const uint8_t *nm = e1 + 1, *e2 = memchr(nm, '\n', (size_t)(k->p + k->n - nm));
            if (!e2) return pk_err(k, err, "GLOBAL without newline");
            k->pos = e2 + 1 - k->p;
            st = pk_global(k, m, e1 - m, nm, e2 - nm, err);
            break;
        }
        case 0x93: { /* STACK_GLOBAL */
            int ni = 0, mi = 0;
            if ((st = pk_pop(k, &ni, err)) == FR_OK && (st = pk_pop(k, &mi, err)) == FR_OK) {
                if (k->v[ni].k != PV_STR || k->v[mi].k != PV_STR) return pk_err(k, err, "STACK_GLOBAL of non-strings");
                st = pk_global(k, k->p + k->v[mi].a, k->v[mi].b, k->p + k->v[ni].a, k->v[ni].b, err);
            }
            break;
        }
        case 'q':
        case 'r':
        case 0x94: { /* BINPUT, LONG_BINPUT, MEMOIZE */
            int64_t idx = k->nmemo;
            if (op == 'q' && (st = pk_bytes(k, 1, &b, err)) == FR_OK) idx = b[0];
            if (op == 'r' && (st = pk_bytes(k, 4, &b, err)) == FR_OK) idx = rd32(b);
            if (st != FR_OK) break;
            if (k->sp < 1 || k->stack[k->sp - 1] < 0) return pk_err(k, err, "memo store of nothing");
            if (idx < 0 || idx >= PK_MEMO) return pk_err(k, err, "memo index out of range");
            for (int64_t q = k->nmemo; q < idx; q++) k->memo[q] = -1;
            k->memo[idx] = k->stack[k->sp - 1];
            if (idx >= k->nmemo) k->nmemo = (int)idx + 1;
            break;
        }
        case 'h':
        case 'j': { /* BINGET, LONG_BINGET */
            int64_t idx = 0;
            if ((st = pk_bytes(k, op == 'h' ? 1 : 4, &b, err)) != FR_OK) break;
            idx = op == 'h' ? b[0] : rd32(b);
            if (idx >= k->nmemo || k->memo[idx] < 0) return pk_err(k, err, "memo get of an unset index");
            st = pk_push(k, k->memo[idx], err);
            break;
        }
        case '(':
            if (k->sp >= PK_STACK) return pk_err(k, err, "stack deeper than a saved tensor needs");
            k->stack[k->sp++] = -1;
            break;
        case 't': st = pk_tuple(k, -1, err); break;
        case ')': st = pk_tuple(k, 0, err); break;
        case 0x85: st = pk_tuple(k, 1, err); break;
        case 0x86: st = pk_tuple(k, 2, err); break;
        case 0x87: st = pk_tuple(k, 3, err); break;
        case 'J':
            if ((st = pk_bytes(k, 4, &b, err)) == FR_OK)
                st = pk_push(k, pk_new(k, (pv){PV_INT, (int32_t)rd32(b), 0, 0}), err);
            break;
        case 'K':
            if ((st = pk_bytes(k, 1, &b, err)) == FR_OK) st = pk_push(k, pk_new(k, (pv){PV_INT, b[0], 0, 0}), err);
            break;
        case 'M':
            if ((st = pk_bytes(k, 2, &b, err)) == FR_OK) st = pk_push(k, pk_new(k, (pv){PV_INT, rd16(b), 0, 0}), err);
            break;
        case 0x8a: { /* LONG1: n little-endian two's-complement bytes, n <= 8 */
            if ((st = pk_bytes(k, 1, &b, err)) != FR_OK) break;
            int n = b[0];
            if (n > 8) return pk_err(k, err, "integer wider than 64 bits");
            if ((st = pk_bytes(k, n, &b, err)) != FR_OK) break;
            uint64_t u = 0;
            for (int q = n - 1; q >= 0; q--) u = u << 8 | b[q];
            if (n > 0 && n < 8 && (b[n - 1] & 0x80)) u |= ~UINT64_C(0) << (8 * n); /* sign extension */
            int64_t v;
            memcpy(&v, &u, sizeof v);
            st = pk_push(k, pk_new(k, (pv){PV_INT, v, 0, 0}), err);
            break;
        }
        case 'X':
        case 0x8c: { /* BINUNICODE, SHORT_BINUNICODE */
            int64_t n;
            if ((st = pk_bytes(k, op == 'X' ? 4 : 1, &b, err)) != FR_OK) break;
            n = op == 'X' ? (int64_t)rd32(b) : b[0];
            int64_t at = k->pos;
            if ((st = pk_bytes(k, n, &b, err)) == FR_OK) st = pk_push(k, pk_new(k, (pv){PV_STR, 0, at, n}), err);
            break;
        }
        case 'Q': st = pk_persid(k, err); break;
        case 0x88:
        case 0x89: st = pk_push(k, pk_new(k, (pv){PV_BOOL, op == 0x88, 0, 0}), err); break;
        case 'N': st = pk_push(k, pk_new(k, (pv){PV_NONE, 0, 0, 0}), err); break;
        case 'R': st = pk_reduce(k, err); break;
        case '}': st = pk_push(k, pk_new(k, (pv){PV_DICT, 0, 0, 0}), err); break;
        case 's': st = pk_setitems(k, 1, err); break;
        case 'u': st = pk_setitems(k, -1, err); break;
        case '.': /* STOP */
            if (k->sp != 1 || k->stack[0] < 0 || k->v[k->stack[0]].k != PV_TENSOR)
                return pk_err(k, err, "the pickled object is not one tensor");
            if (k->pos != k->n) return pk_err(k, err, "bytes after STOP");
            return FR_OK;
        default: {
            char msg[96];
            snprintf(msg, sizeof msg, "opcode 0x%02x is not part of a saved tensor", op);
            k->pos--;
            return pk_err(k, err, msg);
        }
        }
    }
    return st;
}

/* ---- the tensor ---- */

static fr_status pt_info(const src *s, fr_pt_info *info, fr_error *err) {
    memset(info, 0, sizeof *info);
    zip z;
    fr_status st = zip_open(s, &z, err);
    if (st != FR_OK) return st;
    /* The archive's data.pkl: <prefix>/data.pkl with a prefix of one path component. */
    const zent *pkl = NULL;
    for (int q = 0; q < z.n && st == FR_OK; q++) {
        const zent *e = &z.e[q];
        if (e->nlen < 10 || memcmp(e->name + e->nlen - 9, "/data.pkl", 9) || memchr(e->name, '/', e->nlen - 9))
            continue;
        if (pkl) st = fr_fail(err, FR_E_FORMAT, "%s: more than one data.pkl record", s->what);
        pkl = e;
    }
    if (st == FR_OK && !pkl)
        st = fr_fail(err, FR_E_FORMAT, "%s: no <archive>/data.pkl record: not a torch.save file", s->what);
    char prefix[PT_MAX_NAME];
    size_t plen = 0;
    if (st == FR_OK) {
        plen = pkl->nlen - 9;
        memcpy(prefix, pkl->name, plen);
    }
    const zent *bo = NULL;
    if (st == FR_OK) st = zip_find(s, &z, prefix, plen, "byteorder", &bo, err);
    if (st == FR_OK && bo) {
        int64_t off;
        char v[16] = "";
        if (bo->size > 15) st = fr_fail(err, FR_E_FORMAT, "%s: byteorder record too long", s->what);
        if (st == FR_OK) st = zip_data_offset(s, &z, bo, &off, err);
        if (st == FR_OK) st = src_read(s, off, bo->size, v, "byteorder", err);
        if (st == FR_OK && strcmp(v, "little"))
            st = fr_fail(err, FR_E_FORMAT, "%s: byteorder '%s': only little-endian files are read", s->what, v);
    }
    pk *k = NULL;
    uint8_t *pb = NULL;
    if (st == FR_OK && pkl->size > PT_MAX_PKL)
        st = fr_fail(err, FR_E_FORMAT, "%s: data.pkl of %lld bytes: a saved tensor's is a few hundred", s->what,
                     (long long)pkl->size);
    int64_t poff = 0;
    if (st == FR_OK) st = zip_data_offset(s, &z, pkl, &poff, err);
    if (st == FR_OK && (!(pb = malloc((size_t)pkl->size + 1)) || !(k = calloc(1, sizeof *k))))
        st = fr_fail(err, FR_E_NOMEM, "%s: out of memory", s->what);
    if (st == FR_OK) st = src_read(s, poff, pkl->size, pb, "data.pkl", err);
    if (st == FR_OK && crc32_of(pb, (size_t)pkl->size) != pkl->crc)
        st = fr_fail(err, FR_E_FORMAT, "%s: data.pkl: CRC-32 mismatch (the file is corrupted)", s->what);
    if (st == FR_OK) {
        k->p = pb;
        k->n = pkl->size;
        k->what = s->what;
        st = pk_run(k, err);
    }
    /* The view: contiguous, inside its storage. */
    int64_t numel = 1;
    size_t es = st == FR_OK ? fr_dtype_size(k->dtype) : 0;
    for (int d = 0; st == FR_OK && d < k->ndim; d++)
        if (k->shape[d] < 0 || (k->shape[d] && numel > INT64_MAX / k->shape[d]))
            st = fr_fail(err, FR_E_FORMAT, "%s: tensor size %lld in dimension %d", s->what, (long long)k->shape[d], d);
        else
            numel *= k->shape[d];
    if (st == FR_OK && numel > 0) {
        int64_t want = 1;
        for (int d = k->ndim - 1; d >= 0 && st == FR_OK; d--) {
            if (k->shape[d] != 1 && k->stride[d] != want)
                st = fr_fail(err, FR_E_FORMAT, "%s: a non-contiguous view (stride %lld in dimension %d, %lld for C "
                             "order): save tensor.contiguous()", s->what, (long long)k->stride[d], d, (long long)want);
            want *= k->shape[d];
        }
        if (st == FR_OK && (k->offset > k->numel_storage || numel > k->numel_storage - k->offset))
            st = fr_fail(err, FR_E_FORMAT, "%s: the view (offset %lld, %lld elements) lies outside its storage of "
                         "%lld elements", s->what, (long long)k->offset, (long long)numel,
                         (long long)k->numel_storage);
    }
    if (st == FR_OK && k->numel_storage > INT64_MAX / (int64_t)es)
        st = fr_fail(err, FR_E_FORMAT, "%s: storage of %lld elements overflows", s->what, (long long)k->numel_storage);
    const zent *rec = NULL;
    char rest[40];
    if (st == FR_OK) {
        snprintf(rest, sizeof rest, "data/%s", k->key);
        st = zip_find(s, &z, prefix, plen, rest, &rec, err);
        if (st == FR_OK && !rec)
            st = fr_fail(err, FR_E_FORMAT, "%s: the storage record '%.*s/%s' is missing", s->what, (int)plen, prefix,
                         rest);
    }
    if (st == FR_OK && rec->size != k->numel_storage * (int64_t)es)
        st = fr_fail(err, FR_E_FORMAT, "%s: storage record '%s' holds %lld bytes, its %lld %s elements need %lld",
                     s->what, rest, (long long)rec->size, (long long)k->numel_storage, fr_dtype_name(k->dtype),
                     (long long)(k->numel_storage * (int64_t)es));
    int64_t roff = 0;
    if (st == FR_OK) st = zip_data_offset(s, &z, rec, &roff, err);
    if (st == FR_OK) {
        info->dtype = k->dtype;
        info->ndim = k->ndim;
        memcpy(info->shape, k->shape, sizeof info->shape);
        info->data_offset = roff + k->offset * (int64_t)es;
        info->data_bytes = numel * (int64_t)es;
        info->record_offset = roff;
        info->record_bytes = rec->size;
        info->record_crc = rec->crc;
        info->has_crc = true;
        snprintf(info->location, sizeof info->location, "%s", k->location);
    }
    free(k);
    free(pb);
    zip_free(&z);
    if (st != FR_OK) memset(info, 0, sizeof *info);
    return st;
}

static fr_status pt_data(const src *s, const fr_pt_info *info, fr_tensor *out, fr_error *err) {
    memset(out, 0, sizeof *out);
    if (!info || info->dtype == FR_DT_NONE) return fr_fail(err, FR_E_NULL, "%s: no tensor description", s->what);
    fr_tensor t = fr_tensor_make(info->dtype, NULL, info->ndim, info->shape);
    if (fr_tensor_numel(&t) < 0 || fr_tensor_numel(&t) * (int64_t)fr_dtype_size(t.dtype) != info->data_bytes)
        return fr_fail(err, FR_E_INVALID_ARG, "%s: inconsistent tensor description", s->what);
    if (info->data_bytes == 0) {
        *out = t;
        return FR_OK;
    }
    /* The whole record when the view is all of it (the CRC then covers what is read); else the view alone. */
    bool whole = info->has_crc && info->data_offset == info->record_offset && info->data_bytes == info->record_bytes;
    uint8_t *d = malloc((size_t)info->data_bytes);
    if (!d) return fr_fail(err, FR_E_NOMEM, "%s: cannot allocate %lld bytes", s->what, (long long)info->data_bytes);
    fr_status st = src_read(s, info->data_offset, info->data_bytes, d, "tensor data", err);
    if (st == FR_OK && whole && crc32_of(d, (size_t)info->data_bytes) != info->record_crc)
        st = fr_fail(err, FR_E_FORMAT, "%s: tensor data: CRC-32 mismatch (the file is corrupted)", s->what);
    if (st != FR_OK) {
        free(d);
        return st;
    }
    t.data = d;
    *out = t;
    return FR_OK;
}

static fr_status src_fd(int fd, src *s, const char *what, fr_error *err) {
    struct stat sb;
    if (fstat(fd, &sb) != 0) return fr_fail(err, FR_E_IO, "%s: %s", what, fr_io_strerror());
    if (!S_ISREG(sb.st_mode)) return fr_fail(err, FR_E_IO, "%s: not a regular file", what);
    *s = (src){NULL, fd, (int64_t)sb.st_size, what};
    return FR_OK;
}

fr_status fr_pt_info_mem(const void *buf, size_t len, fr_pt_info *info, const char *what, fr_error *err) {
    if (!info || (!buf && len)) return fr_fail(err, FR_E_NULL, "pt: NULL buffer or result");
    if (len > (size_t)INT64_MAX) return fr_fail(err, FR_E_FORMAT, "pt: buffer too large");
    src s = {buf ? buf : (const uint8_t *)"", -1, (int64_t)len, what ? what : "pt"};
    return pt_info(&s, info, err);
}

fr_status fr_pt_info_fd(int fd, fr_pt_info *info, const char *what, fr_error *err) {
    if (!info) return fr_fail(err, FR_E_NULL, "pt: NULL result");
    src s;
    fr_status st = src_fd(fd, &s, what ? what : "pt", err);
    return st == FR_OK ? pt_info(&s, info, err) : st;
}

fr_status fr_pt_data_mem(const void *buf, size_t len, const fr_pt_info *info, fr_tensor *out, const char *what,
                         fr_error *err) {
    if (!out || (!buf && len)) return fr_fail(err, FR_E_NULL, "pt: NULL buffer or result");
    src s = {buf ? buf : (const uint8_t *)"", -1, (int64_t)len, what ? what : "pt"};
    return pt_data(&s, info, out, err);
}

fr_status fr_pt_data_fd(int fd, const fr_pt_info *info, fr_tensor *out, const char *what, fr_error *err) {
    if (!out) return fr_fail(err, FR_E_NULL, "pt: NULL result");
    memset(out, 0, sizeof *out);
    src s;
    fr_status st = src_fd(fd, &s, what ? what : "pt", err);
    return st == FR_OK ? pt_data(&s, info, out, err) : st;
}

fr_status fr_pt_read_mem(const void *buf, size_t len, fr_tensor *out, const char *what, fr_error *err) {
    if (out) memset(out, 0, sizeof *out);
    fr_pt_info info;
    fr_status st = fr_pt_info_mem(buf, len, &info, what, err);
    return st == FR_OK ? fr_pt_data_mem(buf, len, &info, out, what, err) : st;
}

fr_dtype fr_pt_dtype_from_torch_name(const char *name) {
    if (!name || strncmp(name, "torch.", 6)) return FR_DT_NONE;
    static const char *const alias[][2] = {{"float", "float32"}, {"half", "float16"}, {"double", "float64"},
                                            {"int", "int32"}, {"long", "int64"}};
    const char *n = name + 6;
    for (size_t q = 0; q < sizeof alias / sizeof alias[0]; q++)
        if (!strcmp(n, alias[q][0])) n = alias[q][1];
    for (size_t q = 0; q < sizeof pt_dtypes / sizeof pt_dtypes[0]; q++)
        if (!strcmp(n, pt_dtypes[q].name)) return pt_dtypes[q].dt;
    return FR_DT_NONE;
}
