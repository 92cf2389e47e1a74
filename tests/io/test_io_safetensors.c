/* safetensors: round trip of every dtype with metadata (memory and file, strided input), and every class of
 * malformed file rejected with FR_E_FORMAT and a message naming the field. */
#define _XOPEN_SOURCE 700
#include "io/safetensors.h"

#include "io_test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_round_trip(uint64_t *rng, const char *tmp) {
    static const fr_dtype dts[] = {FR_F64, FR_F32, FR_F16, FR_BF16, FR_I32, FR_I64, FR_U8, FR_BOOL, FR_E4M3FN, FR_E5M2};
    enum { N = sizeof dts / sizeof dts[0] };
    fr_tensor t[N + 2];
    const char *names[N + 2];
    char namebuf[N + 2][32];
    for (int i = 0; i < N; i++) {
        int64_t shape[3] = {1 + (int64_t)(fr_test_rand(rng) % 3), 0, 1 + (int64_t)(fr_test_rand(rng) % 5)};
        shape[1] = i == 3 ? 0 : 2; /* one empty tensor */
        t[i] = fr_tensor_make(dts[i], NULL, 3, shape);
        size_t bytes = (size_t)fr_tensor_numel(&t[i]) * fr_dtype_size(dts[i]);
        unsigned char *d = malloc(bytes + 1);
        for (size_t k = 0; k < bytes; k++) d[k] = (unsigned char)(fr_test_rand(rng) >> 32);
        if (dts[i] == FR_BOOL)
            for (size_t k = 0; k < bytes; k++) d[k] &= 1;
        t[i].data = d;
        snprintf(namebuf[i], sizeof namebuf[i], "t%d_%s", i, fr_st_dtype_name(dts[i]));
        names[i] = namebuf[i];
    }
    /* a 0-d scalar and a transposed view */
    double scalar = 3.5;
    t[N] = fr_tensor_make(FR_F64, &scalar, 0, NULL);
    names[N] = "scalar";
    float m[6] = {1, 2, 3, 4, 5, 6};
    int64_t s23[2] = {3, 2};
    t[N + 1] = fr_tensor_make(FR_F32, m, 2, s23);
    t[N + 1].strides[0] = 1;
    t[N + 1].strides[1] = 3; /* the transpose of a [2,3] matrix */
    names[N + 1] = "transposed";
    fr_st_meta meta[2] = {{"format", "pt"}, {"flashref", "case/1"}};
    void *buf;
    size_t len;
    fr_error e;
    CHECK_OK(fr_st_write_mem(N + 2, names, t, 2, meta, &buf, &len, &e), e);
    CHECK(len >= 8 && ((unsigned char *)buf)[8] == '{', "header starts with '{'");
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | ((unsigned char *)buf)[i];
    CHECK(hl % 8 == 0, "header padded to 8 bytes (%llu)", (unsigned long long)hl);
    char path[600];
    snprintf(path, sizeof path, "%s/rt.safetensors", tmp);
    CHECK_OK(fr_st_write_file(path, N + 2, names, t, 2, meta, &e), e);
    size_t flen;
    char *fb = read_whole(path, &flen);
    CHECK(fb && flen == len && !memcmp(fb, buf, len), "file and memory images differ");
    free(fb);
    for (int via = 0; via < 2; via++) {
        fr_safetensors s;
        fr_status st = via ? fr_st_read_file(path, &s, &e) : fr_st_parse(buf, len, &s, "mem", &e);
        CHECK(st == FR_OK, "read back: %s", e.msg);
        if (st != FR_OK) continue;
        CHECK(s.count == N + 2, "count %d", s.count);
        for (int i = 0; i < N + 1; i++) {
            const fr_tensor *r = fr_st_find(&s, names[i]);
            CHECK(r && same_tensor(&t[i], r), "%s differs", names[i]);
        }
        const fr_tensor *tr = fr_st_find(&s, "transposed");
        float want[6] = {1, 4, 2, 5, 3, 6};
        CHECK(tr && tr->dtype == FR_F32 && tr->shape[0] == 3 && !memcmp(tr->data, want, sizeof want),
              "transposed view written in C order");
        CHECK(fr_st_meta_get(&s, "format") && !strcmp(fr_st_meta_get(&s, "format"), "pt") &&
                  fr_st_meta_get(&s, "flashref") && !fr_st_meta_get(&s, "nope"),
              "metadata");
        CHECK(fr_st_find(&s, "missing") == NULL, "find of a missing name");
        fr_st_free(&s);
    }
    free(buf);
    for (int i = 0; i < N; i++) free(t[i].data);
    /* hif8 has no safetensors dtype */
    uint8_t h8 = 0;
    int64_t one = 1;
    fr_tensor h = fr_tensor_make(FR_HIF8, &h8, 1, &one);
    const char *hn = "h";
    CHECK(fr_st_write_mem(1, &hn, &h, 0, NULL, &buf, &len, &e) == FR_E_DTYPE, "hif8 refused: %s", e.msg);
}

/* 8-byte length + header + data_len bytes of data; patch_len overrides the length field when non-zero. */
static unsigned char *mk(const char *hdr, size_t data_len, uint64_t patch_len, size_t *len) {
    size_t hl = strlen(hdr);
    unsigned char *b = calloc(8 + hl + data_len + 1, 1);
    uint64_t L = patch_len ? patch_len : hl;
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(L >> (8 * i));
    memcpy(b + 8, hdr, hl);
    *len = 8 + hl + data_len;
    return b;
}

/* Alike test_io_safetensors.c:test_malformed (its rows): kept apart because each row is one malformed header (its own
 * text and expected message); the likeness is the row format. */
static void test_malformed(void) {
    struct {
        const char *name, *hdr;
        size_t data_len;
        uint64_t patch_len;
        fr_status st;
        const char *msg;
    } cases[] = {
        {"valid (control)", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, 0, FR_OK, ""},
        {"valid with padding and metadata (control)",
         "{\"__metadata__\":{\"k\":\"v\"},\"a\":{\"shape\":[],\"dtype\":\"I64\",\"data_offsets\":[0,8]}}   ", 8, 0,
         FR_OK, ""},
        {"empty file list (control)", "{}", 0, 0, FR_OK, ""},
        {"huge header length", "{}", 0, UINT64_MAX, FR_E_FORMAT, "too large"},
        {"lying header length", "{}", 0, 4096, FR_E_FORMAT, "truncated"},
        {"not an object", "[1,2]", 0, 0, FR_E_FORMAT, "'{'"},
        {"invalid JSON", "{\"a\":", 0, 0, FR_E_FORMAT, "not valid JSON"},
        {"trailing garbage", "{} x", 0, 0, FR_E_FORMAT, "not valid JSON"},
        {"unknown dtype", "{\"a\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, 0, FR_E_FORMAT,
         "dtype"},
        {"unknown entry key", "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2],\"x\":1}}", 2, 0,
         FR_E_FORMAT, "unknown key \"x\""},
        {"missing data_offsets", "{\"a\":{\"dtype\":\"U8\",\"shape\":[2]}}", 2, 0, FR_E_FORMAT, "data_offsets"},
        {"entry not an object", "{\"a\":3}", 0, 0, FR_E_FORMAT, "expected an object"},
        {"negative dim", "{\"a\":{\"dtype\":\"U8\",\"shape\":[-2],\"data_offsets\":[0,2]}}", 2, 0, FR_E_FORMAT,
         "shape[0]"},
        {"fractional dim", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1.5],\"data_offsets\":[0,2]}}", 2, 0, FR_E_FORMAT,
         "shape[0]"},
        {"too many dims", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,2]}}", 2, 0,
         FR_E_FORMAT, "dimensions"},
        {"size overflow", "{\"a\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8,
         0, FR_E_FORMAT, "overflow"},
        {"reversed offsets", "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[2,0]}}", 2, 0, FR_E_FORMAT,
         "begin <= end"},
        {"size mismatch", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, 0, FR_E_FORMAT,
         "need 12"},
        {"beyond the data", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8, 0, FR_E_FORMAT,
         "data buffer"},
        {"hole", "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}", 4, 0, FR_E_FORMAT, "hole"},
        {"overlap",
         "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
         "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}",
         4, 0, FR_E_FORMAT, "overlap"},
        {"uncovered trailing data", "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 3, 0,
         FR_E_FORMAT, "data buffer"},
        {"duplicate name",
         "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
         "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
         2, 0, FR_E_FORMAT, "duplicate"},
        {"metadata not strings", "{\"__metadata__\":{\"k\":1}}", 0, 0, FR_E_FORMAT, "__metadata__"},
        {"metadata not object", "{\"__metadata__\":[]}", 0, 0, FR_E_FORMAT, "__metadata__"},
        {"duplicate metadata", "{\"__metadata__\":{},\"__metadata__\":{}}", 0, 0, FR_E_FORMAT,
         "duplicate \"__metadata__\""},
        {"duplicate entry key", "{\"a\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2,
         0, FR_E_FORMAT, "duplicate key \"dtype\""},
        {"missing dtype", "{\"a\":{\"shape\":[2],\"data_offsets\":[0,2]}}", 2, 0, FR_E_FORMAT, "missing \"dtype\""},
        {"missing shape", "{\"a\":{\"dtype\":\"U8\",\"data_offsets\":[0,2]}}", 2, 0, FR_E_FORMAT, "missing \"shape\""},
        {"dtype not a string", "{\"a\":{\"dtype\":8,\"shape\":[2],\"data_offsets\":[0,2]}}", 2, 0, FR_E_FORMAT,
         "not a supported dtype (not a string)"},
        {"shape not an array", "{\"a\":{\"dtype\":\"U8\",\"shape\":2,\"data_offsets\":[0,2]}}", 2, 0, FR_E_FORMAT,
         ".shape: expected an array"},
        {"dim not a number", "{\"a\":{\"dtype\":\"U8\",\"shape\":[\"2\"],\"data_offsets\":[0,2]}}", 2, 0,
         FR_E_FORMAT, "shape[0]"},
        {"dim past 2^53", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1e300],\"data_offsets\":[0,2]}}", 2, 0, FR_E_FORMAT,
         "shape[0]"},
        {"three offsets", "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2,4]}}", 2, 0, FR_E_FORMAT,
         "data_offsets: expected [begin, end]"},
        {"offsets not an array", "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":{}}}", 2, 0, FR_E_FORMAT,
         "data_offsets: expected [begin, end]"},
        {"negative end", "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,-2]}}", 2, 0, FR_E_FORMAT,
         "data_offsets: expected [begin, end]"},
        {"two tensors at one offset",
         "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
         "\"b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
         2, 0, FR_E_FORMAT, "overlap"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len;
        unsigned char *b = mk(cases[i].hdr, cases[i].data_len, cases[i].patch_len, &len);
        fr_safetensors s;
        fr_error e;
        memset(&e, 0, sizeof e);
        fr_status st = fr_st_parse(b, len, &s, "mem.st", &e);
        CHECK(st == cases[i].st, "%s: status %s, expected %s: %s", cases[i].name, fr_status_name(st),
              fr_status_name(cases[i].st), e.msg);
        if (st != FR_OK)
            CHECK(strstr(e.msg, cases[i].msg) && strstr(e.msg, "mem.st") && s.count == 0 && s.entries == NULL,
                  "%s: message \"%s\" lacks \"%s\" (or output not cleared)", cases[i].name, e.msg, cases[i].msg);
        fr_st_free(&s);
        free(b);
    }
    fr_safetensors s;
    fr_error e;
    CHECK(fr_st_parse("\x02\0\0\0", 4, &s, "mem.st", &e) == FR_E_FORMAT && strstr(e.msg, "truncated"), "short: %s",
          e.msg);
    unsigned char nul[] = {4, 0, 0, 0, 0, 0, 0, 0, '{', 0, '}', ' '};
    CHECK(fr_st_parse(nul, sizeof nul, &s, "mem.st", &e) == FR_E_FORMAT && strstr(e.msg, "NUL"), "NUL: %s", e.msg);
}

/* The malformed headers as files (fr_st_read_file checks the length against the file before reading), the writers'
 * refusals, and the entry points' argument checks. */
static void test_file_and_args(const char *tmp) {
    char path[600];
    snprintf(path, sizeof path, "%s/bad.safetensors", tmp);
    fr_safetensors s;
    fr_error e;
    write_whole(path, "\x02\0\0", 3);
    CHECK(fr_st_read_file(path, &s, &e) == FR_E_FORMAT && strstr(e.msg, "truncated: 3 bytes, no header length"),
          "3-byte file: %s", e.msg);
    size_t len;
    unsigned char *b = mk("{}", 0, 40, &len);
    write_whole(path, b, len);
    free(b);
    CHECK(fr_st_read_file(path, &s, &e) == FR_E_FORMAT && strstr(e.msg, "header length 40 impossible for a 10-byte"),
          "lying length in a file: %s", e.msg);
    b = mk("{}", 0, UINT64_MAX, &len);
    write_whole(path, b, len);
    free(b);
    CHECK(fr_st_read_file(path, &s, &e) == FR_E_FORMAT && strstr(e.msg, "impossible"), "huge length: %s", e.msg);
    b = mk("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}}", 8, 0, &len);
    write_whole(path, b, len);
    free(b);
    CHECK(fr_st_read_file(path, &s, &e) == FR_E_FORMAT && strstr(e.msg, "cover 12 bytes but the data buffer has 8") &&
              strstr(e.msg, path) && s.count == 0, "file shorter than its header says: %s", e.msg);
    snprintf(path, sizeof path, "%s/absent.safetensors", tmp);
    CHECK(fr_st_read_file(path, &s, &e) == FR_E_IO && strstr(e.msg, "absent.safetensors"), "absent: %s", e.msg);
    CHECK(fr_st_read_file(NULL, &s, &e) == FR_E_NULL && fr_st_read_file(path, NULL, &e) == FR_E_NULL, "NULL path");
    CHECK(fr_st_parse("", 0, NULL, NULL, &e) == FR_E_NULL && strstr(e.msg, "safetensors: out"), "parse into NULL");
    CHECK(fr_st_parse(NULL, 9, &s, "m", &e) == FR_E_NULL && strstr(e.msg, "buffer"), "parse of NULL");
    CHECK(fr_st_parse(NULL, 0, &s, NULL, &e) == FR_E_FORMAT && strstr(e.msg, "safetensors: truncated: 0 bytes"),
          "empty: %s", e.msg);
    /* the writers */
    float x[2] = {1, 2};
    int64_t two = 2, huge[2] = {INT64_C(1) << 31, INT64_C(1) << 31};
    fr_tensor t[2] = {fr_tensor_make(FR_F32, x, 1, &two), fr_tensor_make(FR_F32, x, 1, &two)};
    const char *dup[2] = {"a", "a"}, *meta_name[1] = {"__metadata__"}, *null_name[1] = {NULL}, *one[1] = {"a"};
    void *buf = NULL;
    CHECK(fr_st_write_mem(2, dup, t, 0, NULL, &buf, &len, &e) == FR_E_INVALID_ARG &&
              strstr(e.msg, "duplicate tensor name \"a\"") && !buf, "duplicate: %s", e.msg);
    CHECK(fr_st_write_mem(1, meta_name, t, 0, NULL, &buf, &len, &e) == FR_E_INVALID_ARG && strstr(e.msg, "invalid name"),
          "__metadata__ as a name: %s", e.msg);
    CHECK(fr_st_write_mem(1, null_name, t, 0, NULL, &buf, &len, &e) == FR_E_INVALID_ARG, "NULL name: %s", e.msg);
    fr_tensor big = fr_tensor_make(FR_F64, x, 2, huge);
    CHECK(fr_st_write_mem(1, one, &big, 0, NULL, &buf, &len, &e) == FR_E_OVERFLOW && strstr(e.msg, "size overflows"),
          "2^62 doubles: %s", e.msg);
    fr_tensor nodata = fr_tensor_make(FR_F32, NULL, 1, &two);
    CHECK(fr_st_write_mem(1, one, &nodata, 0, NULL, &buf, &len, &e) == FR_E_NULL && strstr(e.msg, "a: data NULL"),
          "no data: %s", e.msg);
    CHECK(fr_st_write_mem(1, one, t, 0, NULL, NULL, &len, &e) == FR_E_NULL &&
              fr_st_write_mem(-1, one, t, 0, NULL, &buf, &len, &e) == FR_E_NULL &&
              fr_st_write_mem(1, NULL, t, 0, NULL, &buf, &len, &e) == FR_E_NULL &&
              fr_st_write_mem(1, one, t, 1, NULL, &buf, &len, &e) == FR_E_NULL &&
              fr_st_write_mem(1, one, t, -1, NULL, &buf, &len, &e) == FR_E_NULL, "write_mem argument checks");
    CHECK(fr_st_write_file(NULL, 1, one, t, 0, NULL, &e) == FR_E_NULL &&
              fr_st_write_file(path, 1, NULL, t, 0, NULL, &e) == FR_E_NULL, "write_file argument checks");
    CHECK(fr_st_write_file(path, 2, dup, t, 0, NULL, &e) == FR_E_INVALID_ARG, "write_file of a duplicate");
    FILE *gone = fopen(path, "rb");
    CHECK(gone == NULL, "a refused write left %s", path);
    if (gone) fclose(gone);
    snprintf(path, sizeof path, "%s/no/such/dir/x.safetensors", tmp);
    CHECK(fr_st_write_file(path, 1, one, t, 0, NULL, &e) == FR_E_IO && strstr(e.msg, "x.safetensors"),
          "write into a missing directory: %s", e.msg);
    /* an empty file list with metadata only: written and read back */
    fr_st_meta m = {"k", "v"};
    CHECK_OK(fr_st_write_mem(0, NULL, NULL, 1, &m, &buf, &len, &e), e);
    CHECK_OK(fr_st_parse(buf, len, &s, "m", &e), e);
    CHECK(s.count == 0 && s.meta_count == 1 && !strcmp(fr_st_meta_get(&s, "k"), "v"), "metadata only");
    fr_st_free(&s);
    free(buf);
    fr_st_free(NULL);
    CHECK(!fr_st_find(NULL, "a") && !fr_st_find(&s, NULL) && !fr_st_meta_get(NULL, "k") && !fr_st_meta_get(&s, NULL) &&
              fr_st_dtype_from_name(NULL) == FR_DT_NONE && fr_st_dtype_from_name("F32") == FR_F32,
          "lookups of NULL");
}

int main(void) {
    uint64_t rng;
    char tmp[] = "/tmp/fr_io_st_XXXXXX";
    if (!io_test_open("test_io_safetensors", &rng, tmp)) return 1;
    test_round_trip(&rng, tmp);
    test_malformed();
    test_file_and_args(tmp);
    remove_tree(tmp);
    return io_report("test_io_safetensors");
}
