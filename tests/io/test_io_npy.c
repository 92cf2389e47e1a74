/* .npy reader/writer: round trips for every dtype and both format versions (memory and file), strided writes, and
 * every class of malformed file rejected with FR_E_FORMAT / FR_E_IO and a message naming the field. */
#define _XOPEN_SOURCE 700
#include "io/npy.h"

#include "core/core.h"
#include "io_test_util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const fr_dtype all_dtypes[] = {FR_F64, FR_F32, FR_F16, FR_BF16, FR_E4M3FN, FR_E5M2,
                                      FR_HIF8, FR_I32, FR_I64, FR_U8, FR_BOOL};

static void fill_random(fr_tensor *t, uint64_t *rng) {
    int64_t n = fr_tensor_numel(t);
    size_t es = fr_dtype_size(t->dtype);
    unsigned char *d = t->data;
    for (int64_t i = 0; i < n * (int64_t)es; i++) d[i] = (unsigned char)(fr_test_rand(rng) >> 24);
    if (t->dtype == FR_BOOL)
        for (int64_t i = 0; i < n; i++) d[i] &= 1;
}

static void test_round_trips(uint64_t *rng, const char *tmp) {
    static const int64_t shapes[][4] = {{0}, {7}, {0, 3}, {2, 3, 5}, {3, 1, 4, 2}};
    static const int ndims[] = {0, 1, 2, 3, 4};
    for (size_t di = 0; di < sizeof all_dtypes / sizeof all_dtypes[0]; di++) {
        for (size_t si = 0; si < sizeof ndims / sizeof ndims[0]; si++) {
            for (int version = 1; version <= 2; version++) {
                fr_dtype dt = all_dtypes[di];
                fr_tensor t = fr_tensor_make(dt, NULL, ndims[si], shapes[si]);
                int64_t n = fr_tensor_numel(&t);
                size_t bytes = (size_t)n * fr_dtype_size(dt);
                t.data = malloc(bytes ? bytes : 1);
                fill_random(&t, rng);
                void *buf;
                size_t len;
                fr_error e;
                CHECK_OK(fr_npy_write_mem(&t, version, &buf, &len, &e), e);
                CHECK(((unsigned char *)buf)[6] == version, "version byte %d", version);
                fr_npy_header h;
                CHECK_OK(fr_npy_parse_header(buf, len, &h, "mem", &e), e);
                CHECK(h.data_offset % 64 == 0, "data offset %lld not 64-aligned", (long long)h.data_offset);
                CHECK(!strcmp(h.descr, fr_npy_descr_for(dt)), "descr %s for %s", h.descr, fr_dtype_name(dt));
                fr_tensor r;
                CHECK_OK(fr_npy_read_mem(buf, len, dt, &r, "mem", &e), e);
                CHECK(same_tensor(&t, &r), "mem round trip %s ndim %d v%d", fr_dtype_name(dt), ndims[si], version);
                free(r.data);
                char path[512];
                snprintf(path, sizeof path, "%s/rt_%s_%zu_%d.npy", tmp, fr_dtype_name(dt), si, version);
                CHECK_OK(fr_npy_write_file(path, &t, version, &e), e);
                CHECK_OK(fr_npy_read_file(path, dt, &r, &e), e);
                CHECK(same_tensor(&t, &r), "file round trip %s ndim %d v%d", fr_dtype_name(dt), ndims[si], version);
                free(r.data);
                /* The file is byte-identical to the memory image. */
                size_t flen;
                char *fbuf = read_whole(path, &flen);
                CHECK(fbuf && flen == len && !memcmp(fbuf, buf, len), "file and memory images differ (%s)", path);
                free(fbuf);
                /* Native read (want NONE) gives numpy's own types; <u2 reads as bf16. */
                fr_status st = fr_npy_read_mem(buf, len, FR_DT_NONE, &r, "mem", &e);
                if (dt == FR_E4M3FN || dt == FR_E5M2 || dt == FR_HIF8) {
                    CHECK(st == FR_OK && r.dtype == FR_U8, "fp8 read native as uint8");
                } else {
                    CHECK(st == FR_OK && r.dtype == dt, "native read of %s gave %s", fr_dtype_name(dt),
                          fr_dtype_name(r.dtype));
                }
                free(r.data);
                free(buf);
                free(t.data);
            }
        }
    }
}

/* Strided views (transpose, broadcast, negative stride) are written contiguously in C order. */
static void test_strided(uint64_t *rng) {
    float src[24];
    for (int i = 0; i < 24; i++) src[i] = (float)(fr_test_rand(rng) % 1000) - 500.0f;
    int64_t shp[3] = {2, 3, 4};
    fr_tensor base = fr_tensor_make(FR_F32, src, 3, shp);
    struct {
        const char *name;
        int64_t shape[3], strides[3], off;
    } views[] = {
        {"transpose(2,1,0)", {4, 3, 2}, {1, 4, 12}, 0},
        {"broadcast dim1", {2, 5, 4}, {12, 0, 1}, 0},
        {"reversed last", {2, 3, 4}, {12, 4, -1}, 3},
        {"inner slice", {2, 3, 2}, {12, 4, 1}, 1},
    };
    for (size_t v = 0; v < sizeof views / sizeof views[0]; v++) {
        fr_tensor t = base;
        memcpy(t.shape, views[v].shape, sizeof views[v].shape);
        memcpy(t.strides, views[v].strides, sizeof views[v].strides);
        t.data = src + views[v].off;
        void *buf;
        size_t len;
        fr_error e;
        CHECK_OK(fr_npy_write_mem(&t, 0, &buf, &len, &e), e);
        fr_tensor r;
        CHECK_OK(fr_npy_read_mem(buf, len, FR_F32, &r, "mem", &e), e);
        int64_t k = 0;
        for (int64_t a = 0; a < t.shape[0]; a++)
            for (int64_t b = 0; b < t.shape[1]; b++)
                for (int64_t c = 0; c < t.shape[2]; c++, k++) {
                    float want = ((float *)t.data)[a * t.strides[0] + b * t.strides[1] + c * t.strides[2]];
                    CHECK(((float *)r.data)[k] == want, "%s: element %lld", views[v].name, (long long)k);
                }
        free(r.data);
        free(buf);
    }
}

/* A .npy image with the given version, raw dict text (padded to 64 like numpy) and data_len bytes of data. */
static char *mk(int version, const char *dict, size_t data_len, size_t *len) {
    size_t pre = version == 1 ? 10 : 12, n = strlen(dict);
    size_t total = (pre + n + 1 + 63) / 64 * 64, hl = total - pre;
    char *b = calloc(total + data_len + 1, 1);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (char)version;
    b[7] = 0;
    for (size_t i = 0; i < pre - 8; i++) b[8 + i] = (char)(hl >> (8 * i));
    memcpy(b + pre, dict, n);
    memset(b + pre + n, ' ', hl - n - 1);
    b[total - 1] = '\n';
    *len = total + data_len;
    return b;
}

#define GOOD "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"

/* Alike test_io_npy.c:test_malformed (its rows): kept apart because each row is one malformed .npy header (its own text
 * and expected status); the likeness is the row format. */
static void test_malformed(const char *tmp) {
    struct {
        const char *name;     /* the class of malformation */
        int version;
        const char *dict;
        long data_len;        /* bytes of data after the header */
        int patch;            /* 0 none; 1 bad magic; 2 version 3.0; 3 version 1.1; 4 huge v2 header length;
                                 5 header length beyond the file; 6 truncate to 5 bytes; 7 header length 0 */
        fr_dtype want;
        fr_status status;
        const char *msg;      /* substring the message must contain */
    } cases[] = {
        {"valid (control)", 1, GOOD, 24, 0, FR_F32, FR_OK, ""},
        {"valid v2 (control)", 2, GOOD, 24, 0, FR_F32, FR_OK, ""},
        {"valid dict variants (control)", 1, "{\"shape\":(2,3),\"descr\":\"<f4\",\"fortran_order\":False}", 24, 0,
         FR_F32, FR_OK, ""},
        {"truncated data", 1, GOOD, 23, 0, FR_F32, FR_E_FORMAT, "data size"},
        {"extra data", 1, GOOD, 25, 0, FR_F32, FR_E_FORMAT, "data size"},
        {"no data", 1, GOOD, 0, 0, FR_F32, FR_E_FORMAT, "data size"},
        {"truncated preamble", 1, GOOD, 24, 6, FR_F32, FR_E_FORMAT, "truncated"},
        {"bad magic", 1, GOOD, 24, 1, FR_F32, FR_E_FORMAT, "magic"},
        {"version 3.0", 1, GOOD, 24, 2, FR_F32, FR_E_FORMAT, "version"},
        {"version 1.1", 1, GOOD, 24, 3, FR_F32, FR_E_FORMAT, "version"},
        {"huge header length", 2, GOOD, 24, 4, FR_F32, FR_E_FORMAT, "header length"},
        {"lying header length", 2, GOOD, 24, 5, FR_F32, FR_E_FORMAT, "truncated"},
        {"empty header", 1, GOOD, 24, 7, FR_F32, FR_E_FORMAT, "header"},
        {"not a dict", 1, "['descr', '<f4']", 24, 0, FR_F32, FR_E_FORMAT, "header"},
        {"missing key", 1, "{'descr': '<f4', 'shape': (2, 3), }", 24, 0, FR_F32, FR_E_FORMAT, "fortran_order"},
        {"unknown key", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", 24, 0, FR_F32,
         FR_E_FORMAT, "unknown key"},
        {"duplicate key", 1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", 24, 0,
         FR_F32, FR_E_FORMAT, "duplicate"},
        {"fortran order not a bool", 1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3), }", 24, 0, FR_F32,
         FR_E_FORMAT, "fortran_order: expected False"},
        {"fortran order", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24, 0, FR_F32,
         FR_E_FORMAT, "fortran_order"},
        {"big-endian", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", 24, 0, FR_F32, FR_E_FORMAT,
         "big-endian"},
        {"unsupported descr", 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3), }", 48, 0, FR_F32,
         FR_E_FORMAT, "descr"},
        {"structured descr", 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 3), }", 24, 0,
         FR_F32, FR_E_FORMAT, "descr"},
        {"negative dim", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }", 24, 0, FR_F32,
         FR_E_FORMAT, "shape"},
        {"shape not a tuple", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6), }", 24, 0, FR_F32,
         FR_E_FORMAT, "tuple"},
        {"shape size overflow", 1,
         "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 24, 0, FR_F32,
         FR_E_FORMAT, "overflow"},
        {"dim overflow", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 24, 0,
         FR_F32, FR_E_FORMAT, "shape"},
        {"huge lying shape", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000, 1000), }", 24, 0,
         FR_F64, FR_E_FORMAT, "data size"},
        {"shape/size mismatch", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }", 24, 0, FR_F32,
         FR_E_FORMAT, "data size"},
        {"too many dims", 1,
         "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,6), }", 24, 0, FR_F32, FR_E_FORMAT,
         "dimensions"},
        {"trailing garbage", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } x", 24, 0, FR_F32,
         FR_E_FORMAT, "trailing"},
        {"unterminated string", 1, "{'descr: '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24, 0, FR_F32,
         FR_E_FORMAT, "header"},
        {"wrong dtype for field", 1, GOOD, 24, 0, FR_BF16, FR_E_FORMAT, "does not hold dtype bf16"},
        {"bit patterns need a dtype", 1, "{'descr': '|i1', 'fortran_order': False, 'shape': (2, 3), }", 6, 0,
         FR_DT_NONE, FR_E_FORMAT, "bit-pattern"},
        {"bool is not fp8", 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }", 6, 0, FR_E4M3FN,
         FR_E_FORMAT, "does not hold"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len;
        char *b = mk(cases[i].version, cases[i].dict, (size_t)cases[i].data_len, &len);
        switch (cases[i].patch) {
        case 1: b[1] = 'X'; break;
        case 2: b[6] = 3; break;
        case 3: b[7] = 1; break;
        case 4: b[8] = b[9] = b[10] = b[11] = (char)0xff; break;
        case 5: b[10] = 0x01; break;
        case 6: len = 5; break;
        case 7: b[8] = b[9] = 0; break;
        default: break;
        }
        /* via 0: memory; 1: a file by path; 2: an open file's header (fr_npy_read_fd_header, as the MPI layer reads
         * it), then its dtype (fr_npy_header_dtype) */
        for (int via = 0; via < 3; via++) {
            bool via_file = via > 0;
            fr_error e;
            fr_tensor t;
            memset(&e, 0, sizeof e);
            memset(&t, 0, sizeof t);
            fr_status st;
            if (via == 2) {
                char path[512];
                snprintf(path, sizeof path, "%s/bad%zu.npy", tmp, i);
                int fd = open(path, O_RDONLY);
                fr_npy_header h;
                fr_dtype dt = FR_DT_NONE;
                st = fr_npy_read_fd_header(fd, &h, path, &e);
                if (st != FR_OK)
                    CHECK(h.ndim == 0 && h.data_bytes == 0, "%s: fd header not cleared on failure", cases[i].name);
                else if ((st = fr_npy_header_dtype(&h, cases[i].want, &dt, path, &e)) == FR_OK)
                    CHECK(dt == cases[i].want && h.ndim == 2 && h.shape[0] == 2 && h.shape[1] == 3 &&
                              h.data_bytes == 24, "%s: the fd header", cases[i].name);
                close(fd);
            } else if (via_file) {
                char path[512];
                snprintf(path, sizeof path, "%s/bad%zu.npy", tmp, i);
                write_whole(path, b, len);
                st = fr_npy_read_file(path, cases[i].want, &t, &e);
            } else {
                st = fr_npy_read_mem(b, len, cases[i].want, &t, "mem", &e);
            }
            CHECK(st == cases[i].status, "%s (%s): status %s, expected %s: %s", cases[i].name,
                  via_file ? "file" : "mem", fr_status_name(st), fr_status_name(cases[i].status), e.msg);
            if (st != FR_OK) {
                CHECK(strstr(e.msg, cases[i].msg) != NULL, "%s: message \"%s\" lacks \"%s\"", cases[i].name, e.msg,
                      cases[i].msg);
                CHECK(strstr(e.msg, via_file ? "bad" : "mem") != NULL, "%s: message \"%s\" does not name the file",
                      cases[i].name, e.msg);
                CHECK(t.data == NULL && t.dtype == FR_DT_NONE, "%s: output not cleared on failure", cases[i].name);
            } else if (via < 2) {
                free(t.data);
            }
        }
        free(b);
    }
    /* Files that are not there, or are not files. */
    fr_error e;
    fr_tensor t;
    char path[512];
    snprintf(path, sizeof path, "%s/does_not_exist.npy", tmp);
    CHECK(fr_npy_read_file(path, FR_F32, &t, &e) == FR_E_IO && strstr(e.msg, "does_not_exist"), "missing: %s",
          e.msg);
    CHECK(fr_npy_read_file(tmp, FR_F32, &t, &e) == FR_E_IO, "a directory: %s", e.msg);
    /* Writing an absent tensor is refused. */
    fr_tensor none;
    memset(&none, 0, sizeof none);
    void *buf;
    size_t len;
    CHECK(fr_npy_write_mem(&none, 0, &buf, &len, &e) == FR_E_DTYPE, "write of an absent tensor: %s", e.msg);
    /* An open file's header: argument checks, a descriptor that is not a file, none at all. */
    fr_npy_header h;
    CHECK(fr_npy_read_fd_header(0, NULL, NULL, &e) == FR_E_NULL && strstr(e.msg, "npy: NULL header"), "NULL: %s",
          e.msg);
    CHECK(fr_npy_read_fd_header(-1, &h, "fd", &e) == FR_E_IO && strstr(e.msg, "fd: cannot stat"), "fd -1: %s", e.msg);
    int dfd = open(tmp, O_RDONLY);
    CHECK(fr_npy_read_fd_header(dfd, &h, NULL, &e) == FR_E_IO && strstr(e.msg, "npy: not a regular file"),
          "directory: %s", e.msg);
    close(dfd);
    /* Tensors that cannot be written: more dimensions than a tensor has, a byte size past 64 bits. */
    float x = 0;
    int64_t big[2] = {INT64_C(1) << 31, INT64_C(1) << 31};
    fr_tensor bad = fr_tensor_make(FR_F32, &x, 2, big);
    CHECK(fr_npy_write_mem(&bad, 0, &buf, &len, &e) == FR_E_OVERFLOW && strstr(e.msg, "byte size overflows"),
          "2^62 floats: %s", e.msg);
    bad.ndim = FR_MAX_DIMS + 1;
    CHECK(fr_npy_write_mem(&bad, 0, &buf, &len, &e) == FR_E_SHAPE && strstr(e.msg, "ndim 9 outside 0..8"),
          "9 dimensions: %s", e.msg);
    bad.ndim = -1;
    CHECK(fr_npy_write_mem(&bad, 0, &buf, &len, &e) == FR_E_SHAPE, "-1 dimensions: %s", e.msg);
}

int main(void) {
    uint64_t rng;
    char tmp[] = "/tmp/fr_io_npy_XXXXXX";
    if (!io_test_open("test_io_npy", &rng, tmp)) return 1;
    test_round_trips(&rng, tmp);
    test_strided(&rng);
    test_malformed(tmp);
    remove_tree(tmp);
    return io_report("test_io_npy");
}
