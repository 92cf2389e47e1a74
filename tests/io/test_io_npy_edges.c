/* .npy header edges test_io_npy's table leaves: keys and strings the dict lexer refuses (unquoted, escaped, control
 * characters, too long, unterminated), duplicate fortran_order / shape, a shape that is a list, lacks a comma or
 * overflows, a missing key of each kind, a big-endian-looking unknown descr, a word cut short, whitespace and the
 * Python 2 'L' suffix accepted; a version 2 preamble cut in its length; the NULL-argument refusals of every entry point
 * (named "npy" when no name is given), a negative dimension and an unknown version for the header writer; which
 * descrs fit which dtypes. Each refusal with its status and exact message. */
#define _XOPEN_SOURCE 700
#include "io/npy.h"

#include "io_test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A version 1 .npy image of dict text (no data), in buf; its length. */
static size_t image(const char *dict, unsigned char *buf, size_t cap) {
    size_t n = strlen(dict);
    if (n + 10 > cap) return 0;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)(n & 0xff), buf[9] = (unsigned char)(n >> 8);
    memcpy(buf + 10, dict, n);
    return n + 10;
}

static void test_dicts(void) {
    static const struct {
        const char *dict, *msg; /* msg NULL: accepted */
    } cases[] = {
        {"{5: 1}", "t: header: expected a key"},
        {"{'descr\\'': '<f4', 'fortran_order': False, 'shape': ()}", "t: header: expected a key"},
        {"{'descr': '<f\x01', 'fortran_order': False, 'shape': ()}",
         "t: header: descr: expected a simple type string"},
        {"{'descr': '<f4444444444444444444444444444444444444', 'fortran_order': False, 'shape': ()}",
         "t: header: descr: expected a simple type string"},
        {"{'descr", "t: header: expected a key"},
        {"{'descr': '<f4', 'fortran_order': False, 'fortran_order': False, 'shape': ()}",
         "t: header: duplicate key 'fortran_order'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (), 'shape': ()}", "t: header: duplicate key 'shape'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [3]}", "t: header: shape: expected a tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3 4)}", "t: header: shape: expected ',' or ')'"},
        {"{'descr': '<f4' 'shape': ()}", "t: header: expected ',' or '}'"},
        {"{'fortran_order': False, 'shape': ()}", "t: header: missing key 'descr'"},
        {"{'descr': '<f4', 'shape': ()}", "t: header: missing key 'fortran_order'"},
        {"{'descr': '<f4', 'fortran_order': False}", "t: header: missing key 'shape'"},
        {"{'descr': '>x9', 'fortran_order': False, 'shape': ()}", "t: header: descr '>x9' not supported"},
        {"{'descr': '<f4', 'fortran_order': Fa", "t: header: fortran_order: expected False"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
         "t: header: shape[0]: expected a non-negative integer"},
        {"{\t'descr':\r'<f4',\n'fortran_order': False, 'shape': (3L, 2L), }  \n", NULL},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        unsigned char buf[256];
        size_t len = image(cases[k].dict, buf, sizeof buf);
        fr_npy_header h;
        fr_error err = {0};
        fr_status st = fr_npy_parse_header(buf, len, &h, "t", &err);
        if (cases[k].msg)
            CHECK(st == FR_E_FORMAT && !strcmp(err.msg, cases[k].msg), "case %zu: %s: \"%s\", want \"%s\"", k,
                  fr_status_name(st), err.msg, cases[k].msg);
        else
            CHECK(st == FR_OK && h.ndim == 2 && h.shape[0] == 3 && h.shape[1] == 2 && h.data_bytes == 24,
                  "case %zu: %s", k, err.msg);
    }
    /* version 2: its length takes four bytes, the image stops after three */
    fr_npy_header h;
    fr_error err = {0};
    fr_status st = fr_npy_parse_header("\x93NUMPY\x02\x00\x10\x00\x00", 11, &h, "t", &err);
    CHECK(st == FR_E_FORMAT && !strcmp(err.msg, "t: truncated in the header length"), "%s", err.msg);
}

static void test_nulls(void) {
    fr_error err = {0};
    fr_npy_header h;
    CHECK(fr_npy_parse_header(NULL, 5, &h, NULL, &err) == FR_E_NULL && !strcmp(err.msg, "npy: NULL buffer or header"),
          "%s", err.msg);
    CHECK(fr_npy_parse_header("x", 1, NULL, "t", &err) == FR_E_NULL && !strcmp(err.msg, "t: NULL buffer or header"));
    CHECK(fr_npy_read_mem("x", 1, FR_F32, NULL, NULL, &err) == FR_E_NULL && !strcmp(err.msg, "npy: out: NULL"), "%s",
          err.msg);
    CHECK(fr_npy_read_file_header(NULL, &h, &err) == FR_E_NULL && !strcmp(err.msg, "npy: NULL path or header"));
    CHECK(fr_npy_read_file_header("x.npy", NULL, &err) == FR_E_NULL && !strcmp(err.msg, "npy: NULL path or header"));
    fr_tensor t;
    CHECK(fr_npy_read_file(NULL, FR_F32, &t, &err) == FR_E_NULL && !strcmp(err.msg, "npy: NULL path or out"));
    CHECK(fr_npy_read_file("x.npy", FR_F32, NULL, &err) == FR_E_NULL && !strcmp(err.msg, "npy: NULL path or out"));
    char hb[FR_NPY_HEADER_MAX];
    size_t hl = 0;
    float x[6] = {0};
    int64_t sh[2] = {2, 3};
    t = fr_tensor_make(FR_F32, x, 2, sh);
    CHECK(fr_npy_header_bytes(NULL, 1, hb, &hl, NULL, "t", &err) == FR_E_NULL && !strcmp(err.msg, "t: tensor: NULL"));
    CHECK(fr_npy_header_bytes(&t, 1, NULL, &hl, NULL, NULL, &err) == FR_E_NULL &&
          !strcmp(err.msg, "npy: header buffer: NULL"), "%s", err.msg);
    CHECK(fr_npy_header_bytes(&t, 1, hb, NULL, NULL, "t", &err) == FR_E_NULL &&
          !strcmp(err.msg, "t: header buffer: NULL"));
    CHECK(fr_npy_header_bytes(&t, 3, hb, &hl, NULL, "t", &err) == FR_E_INVALID_ARG &&
          !strcmp(err.msg, "t: version 3 (0, 1 or 2)"), "%s", err.msg);
    fr_tensor neg = t;
    neg.shape[0] = -1;
    CHECK(fr_npy_header_bytes(&neg, 1, hb, &hl, NULL, "t", &err) == FR_E_OVERFLOW &&
          !strcmp(err.msg, "t: element count overflows or a dimension is negative"), "%s", err.msg);
    int64_t db = 0;
    CHECK(fr_npy_header_bytes(&t, 0, hb, &hl, &db, "t", &err) == FR_OK && db == 24 && hl % 64 == 0 &&
          !memcmp(hb, "\x93NUMPY\x01", 7), "version 0 (the smallest that fits): %s", err.msg);
    size_t len;
    void *buf;
    CHECK(fr_npy_write_mem(&t, 1, NULL, &len, &err) == FR_E_NULL && !strcmp(err.msg, "npy: buf/len: NULL"));
    CHECK(fr_npy_write_mem(&t, 1, &buf, NULL, &err) == FR_E_NULL && !strcmp(err.msg, "npy: buf/len: NULL"));
    CHECK(fr_npy_write_file(NULL, &t, 1, &err) == FR_E_NULL && !strcmp(err.msg, "npy: path: NULL"));
    /* the writers refuse a negative dimension before writing anything */
    CHECK(fr_npy_write_mem(&neg, 1, &buf, &len, &err) == FR_E_OVERFLOW &&
              !strcmp(err.msg, "npy: element count overflows or a dimension is negative"), "%s", err.msg);
    CHECK(fr_npy_write_file("never-written.npy", &neg, 1, &err) == FR_E_OVERFLOW &&
              !strcmp(err.msg, "never-written.npy: element count overflows or a dimension is negative"), "%s", err.msg);
    /* the dtype a header is read as, no name given */
    fr_dtype dt = FR_DT_NONE;
    memset(&h, 0, sizeof h);
    snprintf(h.descr, sizeof h.descr, "<f4");
    CHECK(fr_npy_header_dtype(&h, FR_F32, &dt, NULL, &err) == FR_OK && dt == FR_F32);
    CHECK(fr_npy_header_dtype(&h, FR_F16, &dt, NULL, &err) == FR_E_FORMAT &&
              !strcmp(err.msg, "npy: descr '<f4' does not hold dtype fp16 (expected '<f2')"), "%s", err.msg);
}

static void test_descrs(void) {
    CHECK(fr_npy_native_dtype(NULL) == FR_DT_NONE);
    CHECK(fr_npy_native_dtype("<q9") == FR_DT_NONE);
    CHECK(fr_npy_native_dtype("<f2") == FR_F16);
    CHECK(!fr_npy_descr_fits(NULL, FR_F32));
    CHECK(!fr_npy_descr_fits("<q9", FR_F32));
    CHECK(fr_npy_descr_fits("|u1", FR_HIF8) && fr_npy_descr_fits("|i1", FR_E5M2) && !fr_npy_descr_fits("|b1", FR_HIF8));
    CHECK(!fr_npy_descr_fits("<f2", FR_E4M3FN));
    /* a dtype with no descr of its own: the message says '?' */
    unsigned char buf[256];
    size_t len = image("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", buf, sizeof buf);
    memcpy(buf + len, "\0\0\0\0", 4);
    fr_tensor t;
    fr_error err = {0};
    fr_status st = fr_npy_read_mem(buf, len + 4, FR_DTYPE_COUNT, &t, "t", &err);
    CHECK(st == FR_E_FORMAT && strstr(err.msg, "t: descr '<f4' does not hold dtype ") &&
              strstr(err.msg, "(expected '?')"),
          "%s: %s", fr_status_name(st), err.msg);
}

int main(void) {
    test_dicts();
    test_nulls();
    test_descrs();
    return fr_test_exit("test_io_npy_edges");
}
