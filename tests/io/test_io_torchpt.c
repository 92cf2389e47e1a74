/* torch.save files (io/torchpt.h), the reader of msprobe's dumped tensors: what torch writes is read back exactly
 * (the committed files of fuzz/corpus/torchpt, made by tests/io/make_torchpt_seeds.py: every dtype, 0-d and empty
 * tensors, a view with an offset, an NPU tensor with torch_npu's metadata); zip64 archives; and every hostile shape
 * refused with FR_E_FORMAT naming what is wrong: a pickle global that would run code, unknown opcodes, stack and memo
 * bombs, lying sizes, records out of place, compression, encryption, duplicates, a corrupted CRC, every truncation
 * and every single-byte corruption of a valid file (never a crash: make asan runs this too).
 *   usage: test_io_torchpt [SEED_DIR] (default: the source tree's, compiled in) */
#define _XOPEN_SOURCE 700
#include "io/torchpt.h"

#include "io_test_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- building archives and pickles ---- */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) exit(1);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void put_le(buf *b, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) {
        uint8_t c = (uint8_t)(v >> (8 * i));
        put(b, &c, 1);
    }
}
static void put_s(buf *b, const char *s) { put(b, s, strlen(s)); }

static uint32_t crc32_of(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xFFFFFFFFu;
}

typedef struct rec {
    const char *name;
    const uint8_t *data;
    size_t n;
} rec;

enum { Z_ZIP64 = 1, Z_COMPRESSED = 2, Z_ENCRYPTED = 4, Z_BAD_CRC = 8, Z_COMMENT = 16, Z_LOCAL_NAME = 32,
       Z_LYING_SIZE = 64 };

/* A stored zip of the records (zip64: every size and offset through the zip64 extra field and end records). */
static buf zip_of(const rec *r, int n, int flags) {
    buf z = {0}, cd = {0};
    for (int k = 0; k < n; k++) {
        uint64_t off = z.n;
        uint32_t crc = crc32_of(r[k].data, r[k].n) ^ ((flags & Z_BAD_CRC) && k == n - 1 ? 1u : 0u);
        size_t nl = strlen(r[k].name);
        uint16_t method = (flags & Z_COMPRESSED) && k == 0 ? 8 : 0, gp = (flags & Z_ENCRYPTED) && k == 0 ? 1 : 0;
        put_le(&z, 0x04034b50u, 4);
        put_le(&z, 20, 2);
        put_le(&z, gp, 2);
        put_le(&z, method, 2);
        put_le(&z, 0, 4);
        put_le(&z, crc, 4);
        put_le(&z, r[k].n, 4);
        put_le(&z, r[k].n, 4);
        put_le(&z, nl, 2);
        put_le(&z, 0, 2);
        if ((flags & Z_LOCAL_NAME) && k == n - 1) put_s(&z, "x"), put(&z, r[k].name + 1, nl - 1);
        else put(&z, r[k].name, nl);
        put(&z, r[k].data, r[k].n);
        bool z64 = flags & Z_ZIP64;
        put_le(&cd, 0x02014b50u, 4);
        put_le(&cd, 45, 2);
        put_le(&cd, 45, 2);
        put_le(&cd, gp, 2);
        put_le(&cd, method, 2);
        put_le(&cd, 0, 4);
        put_le(&cd, crc, 4);
        uint64_t csz = (flags & Z_LYING_SIZE) && k == n - 1 ? 0x7FFFFFF0u : r[k].n; /* the central size lies */
        put_le(&cd, z64 ? 0xFFFFFFFFu : csz, 4);
        put_le(&cd, z64 ? 0xFFFFFFFFu : csz, 4);
        put_le(&cd, nl, 2);
        put_le(&cd, z64 ? 28 : 0, 2);
        put_le(&cd, 0, 2);
        put_le(&cd, 0, 2);
        put_le(&cd, 0, 2);
        put_le(&cd, 0, 4);
        put_le(&cd, z64 ? 0xFFFFFFFFu : off, 4);
        put(&cd, r[k].name, nl);
        if (z64) {
            put_le(&cd, 1, 2);
            put_le(&cd, 24, 2);
            put_le(&cd, r[k].n, 8);
            put_le(&cd, r[k].n, 8);
            put_le(&cd, off, 8);
        }
    }
    uint64_t cd_off = z.n;
    put(&z, cd.p, cd.n);
    if (flags & Z_ZIP64) {
        uint64_t z64_off = z.n;
        put_le(&z, 0x06064b50u, 4);
        put_le(&z, 44, 8);
        put_le(&z, 45, 2);
        put_le(&z, 45, 2);
        put_le(&z, 0, 4);
        put_le(&z, 0, 4);
        put_le(&z, (uint64_t)n, 8);
        put_le(&z, (uint64_t)n, 8);
        put_le(&z, cd.n, 8);
        put_le(&z, cd_off, 8);
        put_le(&z, 0x07064b50u, 4);
        put_le(&z, 0, 4);
        put_le(&z, z64_off, 8);
        put_le(&z, 1, 4);
    }
    const char *comment = flags & Z_COMMENT ? "PK\x05\x06 a comment holding a fake end record" : "";
    put_le(&z, 0x06054b50u, 4);
    put_le(&z, 0, 4);
    put_le(&z, flags & Z_ZIP64 ? 0xFFFF : (uint64_t)n, 2);
    put_le(&z, flags & Z_ZIP64 ? 0xFFFF : (uint64_t)n, 2);
    put_le(&z, flags & Z_ZIP64 ? 0xFFFFFFFFu : cd.n, 4);
    put_le(&z, flags & Z_ZIP64 ? 0xFFFFFFFFu : cd_off, 4);
    put_le(&z, strlen(comment), 2);
    put_s(&z, comment);
    free(cd.p);
    return z;
}

static void p_int(buf *b, int64_t v) {
    if (v >= 0 && v < 256) {
        put_s(b, "K");
        put_le(b, (uint64_t)v, 1);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        put_s(b, "J");
        put_le(b, (uint64_t)(uint32_t)(int32_t)v, 4);
    } else {
        put(b, "\x8a\x08", 2);
        put_le(b, (uint64_t)v, 8);
    }
}
static void p_str(buf *b, const char *s) {
    put_s(b, "X");
    put_le(b, strlen(s), 4);
    put_s(b, s);
}

/* data.pkl of one tensor as torch.save writes it; meta: -1 none, 0 a {str: False} dict, 1 a {str: True} dict. */
static buf pkl_tensor(const char *storage, int64_t numel, int ndim, const int64_t *size, const int64_t *stride,
                      int64_t offset, int meta) {
    buf b = {0};
    put(&b, "\x80\x02", 2);
    put_s(&b, "ctorch._utils\n_rebuild_tensor_v2\nq\x01((");
    p_str(&b, "storage");
    put_s(&b, "ctorch\n");
    put_s(&b, storage);
    put_s(&b, "\n");
    p_str(&b, "0");
    p_str(&b, "cpu");
    p_int(&b, numel);
    put_s(&b, "tq\x01Q");
    p_int(&b, offset);
    put_s(&b, "(");
    for (int d = 0; d < ndim; d++) p_int(&b, size[d]);
    put_s(&b, "t(");
    for (int d = 0; d < ndim; d++) p_int(&b, stride[d]);
    put_s(&b, "t\x89" "ccollections\nOrderedDict\n)R");
    if (meta >= 0) {
        put_s(&b, "}(");
        p_str(&b, "npu_format_nz");
        put_s(&b, meta ? "\x88" : "\x89");
        put_s(&b, "u");
    }
    put_s(&b, "tR.");
    return b;
}

static buf pt_file(const buf *pkl, const uint8_t *data, size_t n, int flags) {
    rec r[3] = {{"archive/data.pkl", pkl->p, pkl->n}, {"archive/byteorder", (const uint8_t *)"little", 6},
                {"archive/data/0", data, n}};
    return zip_of(r, 3, flags);
}

/* ---- checks ---- */

static fr_status read_mem(const buf *z, fr_tensor *t, fr_error *e) { return fr_pt_read_mem(z->p, z->n, t, "mem", e); }

static void expect_refused(const buf *z, const char *what, const char *needle) {
    fr_tensor t;
    fr_error e;
    memset(&e, 0, sizeof e);
    fr_status st = read_mem(z, &t, &e);
    CHECK(st == FR_E_FORMAT && strstr(e.msg, needle), "%s: %s (%s), expected FR_E_FORMAT with '%s'", what,
          fr_status_name(st), e.msg, needle);
    if (st == FR_OK) free(t.data);
}

/* A .pt of pickle pl over the n bytes of data: refused as expect_refused says; frees pl. */
static void expect_refused_pkl(buf pl, const void *data, size_t n, const char *what, const char *needle) {
    buf z = pt_file(&pl, (const uint8_t *)data, n, 0);
    expect_refused(&z, what, needle);
    free(z.p);
    free(pl.p);
}

static void test_built(void) {
    float v[6] = {1, 2, 3, 4, 5, 6};
    int64_t sz[2] = {2, 3}, cs[2] = {3, 1};
    buf pk = pkl_tensor("FloatStorage", 6, 2, sz, cs, 0, -1);
    for (int flags = 0; flags <= (Z_ZIP64 | Z_COMMENT); flags += Z_ZIP64 | Z_COMMENT) {
        for (int f = 0; f < 2; f++) {
            int fl = f ? flags : (flags & Z_ZIP64);
            buf z = pt_file(&pk, (const uint8_t *)v, sizeof v, fl);
            fr_tensor t;
            fr_error e;
            fr_status s = read_mem(&z, &t, &e);
            CHECK(s == FR_OK && t.dtype == FR_F32 && t.ndim == 2 && t.shape[0] == 2 && t.shape[1] == 3 &&
                      !memcmp(t.data, v, sizeof v),
                  "flags %d: %s", fl, e.msg);
            if (s == FR_OK) free(t.data);
            free(z.p);
        }
    }
    /* metadata all false: read; a true flag (an NPU private format): refused */
    buf pm = pkl_tensor("FloatStorage", 6, 2, sz, cs, 0, 0), pt = pkl_tensor("FloatStorage", 6, 2, sz, cs, 0, 1);
    buf z = pt_file(&pm, (const uint8_t *)v, sizeof v, 0);
    fr_tensor t;
    fr_error e;
    CHECK_OK(read_mem(&z, &t, &e), e);
    free(t.data);
    free(z.p);
    z = pt_file(&pt, (const uint8_t *)v, sizeof v, 0);
    expect_refused(&z, "metadata true", "private format");
    free(z.p);
    /* zip-level malformations */
    static const struct {
        int flags;
        const char *needle;
    } zbad[] = {{Z_COMPRESSED, "compressed"}, {Z_ENCRYPTED, "encrypted"}, {Z_BAD_CRC, "CRC-32 mismatch"},
                {Z_LOCAL_NAME, "names another record"}};
    for (size_t k = 0; k < sizeof zbad / sizeof zbad[0]; k++) {
        z = pt_file(&pk, (const uint8_t *)v, sizeof v, zbad[k].flags);
        expect_refused(&z, zbad[k].needle, zbad[k].needle);
        free(z.p);
    }
    /* a record the reader never reads (version), its central size lying (2 GB in a small file): refused all the same */
    rec lying[4] = {{"archive/data.pkl", pk.p, pk.n}, {"archive/byteorder", (const uint8_t *)"little", 6},
                    {"archive/data/0", (const uint8_t *)v, sizeof v}, {"archive/version", (const uint8_t *)"3\n", 2}};
    z = zip_of(lying, 4, 0);
    fr_tensor tl;
    fr_error el;
    fr_status sl = read_mem(&z, &tl, &el);
    CHECK(sl == FR_OK, "the four-record archive: %s", el.msg);
    if (sl == FR_OK) free(tl.data);
    free(z.p);
    z = zip_of(lying, 4, Z_LYING_SIZE);
    expect_refused(&z, "lying size of an unread record", "does not fit before the central directory");
    free(z.p);
    rec dup[4] = {{"archive/data.pkl", pk.p, pk.n}, {"archive/data/0", (const uint8_t *)v, sizeof v},
                  {"archive/data/0", (const uint8_t *)v, sizeof v}, {"b/data.pkl", pk.p, pk.n}};
    z = zip_of(dup, 3, 0);
    expect_refused(&z, "duplicate record", "listed twice");
    free(z.p);
    z = zip_of(dup, 4, 0);
    expect_refused(&z, "two data.pkl", "more than one data.pkl");
    free(z.p);
    z = zip_of(dup, 1, 0);
    expect_refused(&z, "no storage", "is missing");
    free(z.p);
    rec big[2] = {{"archive/data.pkl", pk.p, pk.n}, {"archive/byteorder", (const uint8_t *)"big", 3}};
    z = zip_of(big, 2, 0);
    expect_refused(&z, "big-endian", "little-endian");
    free(z.p);
    /* lying sizes: a storage larger than its record, a view outside its storage, overflowing sizes */
    int64_t huge[2] = {INT64_C(1) << 40, INT64_C(1) << 40}, hs[2] = {INT64_C(1) << 40, 1};
    int64_t tr[2] = {1, 2};
    expect_refused_pkl(pkl_tensor("FloatStorage", INT64_C(1) << 40, 1, huge, hs + 1, 0, -1), v, sizeof v,
                       "storage larger than its record", "holds 24 bytes");
    expect_refused_pkl(pkl_tensor("FloatStorage", 6, 2, sz, cs, 1, -1), v, sizeof v, "view outside",
                       "outside its storage");
    expect_refused_pkl(pkl_tensor("FloatStorage", 6, 2, huge, hs, 0, -1), v, sizeof v, "numel overflow",
                       "tensor size");
    expect_refused_pkl(pkl_tensor("FloatStorage", 6, 2, sz, tr, 0, -1), v, sizeof v, "strided", "non-contiguous");
    expect_refused_pkl(pkl_tensor("CharStorage", 6, 2, sz, cs, 0, -1), v, 6, "int8", "'torch.CharStorage'");
    /* pickles that are not a tensor */
    static const struct {
        const char *pkl;
        size_t n;
        const char *needle;
    } pbad[] = {
        {"\x80\x02" "cposix\nsystem\nq\x00X\x04\x00\x00\x00touchq\x01\x85q\x02Rq\x03.", 33, "'posix.system'"},
        {"\x80\x02" "cbuiltins\neval\n.", 18, "'builtins.eval'"},
        {"\x80\x02(i__main__\nX\n.", 16, "opcode 0x69"},
        {"\x80\x02K\x01.", 5, "not one tensor"},
        {"\x80\x02r\x00\xca\x9a\x3b.", 8, "memo"},
        {"\x80\x02h\x05.", 5, "unset index"},
        {"\x80\x09.", 3, "protocol"},
        {"\x80\x02", 2, "no STOP"},
        {"\x80\x02t.", 4, "without MARK"},
        {"\x80\x02\x8a\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09.", 14, "wider than 64"},
        {"\x80\x02X\xff\xff\xff\x7f", 8, "truncated"},
    };
    for (size_t k = 0; k < sizeof pbad / sizeof pbad[0]; k++) {
        buf p = {(uint8_t *)pbad[k].pkl, pbad[k].n, 0};
        z = pt_file(&p, (const uint8_t *)v, sizeof v, 0);
        expect_refused(&z, pbad[k].needle, pbad[k].needle);
        free(z.p);
    }
    /* a stack bomb: more MARKs than a tensor needs */
    buf bomb = {0};
    put(&bomb, "\x80\x02", 2);
    for (int k = 0; k < 100000; k++) put_s(&bomb, "(");
    put_s(&bomb, ".");
    z = pt_file(&bomb, (const uint8_t *)v, sizeof v, 0);
    expect_refused(&z, "stack bomb", "stack deeper");
    free(z.p);
    free(bomb.p);
    /* two tensors in one pickle */
    buf two = {0};
    put(&two, pk.p, pk.n - 1);
    put(&two, pk.p + 2, pk.n - 3);
    put_s(&two, "\x86.");
    z = pt_file(&two, (const uint8_t *)v, sizeof v, 0);
    expect_refused(&z, "two tensors", "more than one tensor");
    free(z.p);
    free(two.p);
    /* every truncation and every single-byte corruption of a valid archive: a status, never a crash */
    z = pt_file(&pk, (const uint8_t *)v, sizeof v, 0);
    int ok_flips = 0;
    for (size_t n = 0; n < z.n; n++) {
        fr_tensor tt;
        fr_error ee;
        fr_status s = fr_pt_read_mem(z.p, n, &tt, "prefix", &ee);
        CHECK(s != FR_OK && ee.msg[0], "a prefix of %zu of %zu bytes read", n, z.n);
        if (s == FR_OK) free(tt.data);
        z.p[n] ^= 0xFF;
        s = fr_pt_read_mem(z.p, z.n, &tt, "flip", &ee);
        if (s == FR_OK) { /* a field the reader does not use (a version, a time): the same tensor, never another */
            ok_flips++;
            CHECK(tt.dtype == FR_F32 && tt.ndim == 2 && tt.shape[0] == 2 && tt.shape[1] == 3 &&
                      !memcmp(tt.data, v, sizeof v), "byte %zu flipped: read as another tensor", n);
            free(tt.data);
        } else {
            CHECK(ee.msg[0], "byte %zu flipped: status without a message", n);
        }
        z.p[n] ^= 0xFF;
    }
    printf("single-byte flips of a %zu-byte archive: %d read the same tensor (unused zip fields), %zu refused\n",
           z.n, ok_flips, z.n - (size_t)ok_flips);
    free(z.p);
    free(pk.p);
    free(pm.p);
    free(pt.p);
}

/* The files torch wrote: NAME = DTYPE_SHAPE.pt (read back, some values checked) or refuse_*.pt. */
static void test_seeds(const char *dir) {
    DIR *d = opendir(dir);
    if (!CHECKED(d != NULL, "cannot open %s", dir)) return;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *nm = de->d_name;
        size_t nl = strlen(nm);
        if (nl < 4 || strcmp(nm + nl - 3, ".pt")) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, nm);
        size_t len;
        char *mem = read_whole(path, &len);
        int fd = open(path, O_RDONLY);
        fr_pt_info info;
        fr_tensor t, tm;
        fr_error e, em;
        fr_status s = fr_pt_info_fd(fd, &info, nm, &e);
        if (s == FR_OK) s = fr_pt_data_fd(fd, &info, &t, nm, &e);
        fr_status sm = fr_pt_read_mem(mem, len, &tm, nm, &em);
        CHECK(s == sm, "%s: file %s, memory %s", nm, fr_status_name(s), fr_status_name(sm));
        if (!strncmp(nm, "refuse_", 7)) {
            CHECK(s == FR_E_FORMAT, "%s: read (%s)", nm, e.msg);
            CHECK(strstr(e.msg, strstr(nm, "legacy") ? "older than 1.6" : "non-contiguous") != NULL, "%s: %s", nm,
                  e.msg);
        } else if (CHECKED(s == FR_OK && sm == FR_OK, "%s: %s / %s", nm, e.msg, em.msg)) {
            CHECK(same_tensor(&t, &tm), "%s: file and memory reads differ", nm);
            char dt[16];
            snprintf(dt, sizeof dt, "%.*s", (int)strcspn(nm, "_"), nm);
            const char *want = !strcmp(dt, "int64") ? "int64" : dt;
            CHECK(!strcmp(fr_dtype_name(t.dtype), want), "%s: dtype %s", nm, fr_dtype_name(t.dtype));
            if (!strcmp(nm, "fp32_view4.pt")) {
                float w[4] = {3, 4, 5, 6};
                CHECK(t.ndim == 1 && t.shape[0] == 4 && !memcmp(t.data, w, sizeof w), "view offset");
            } else if (!strcmp(nm, "int64_scalar.pt")) {
                int64_t w = INT64_C(12345678901);
                CHECK(t.ndim == 0 && !memcmp(t.data, &w, 8), "0-d int64");
            } else if (!strcmp(nm, "fp32_2x3_npu.pt")) {
                float w[6] = {0, 1, 2, 3, 4, 5};
                CHECK(t.ndim == 2 && !memcmp(t.data, w, sizeof w) && !strcmp(info.location, "npu:0"), "npu file");
            } else if (!strcmp(nm, "e4m3fn_3.pt")) {
                uint8_t w[3] = {0x30, 0xC0, 0x7E}; /* 0.5, -2, 448 */
                CHECK(t.ndim == 1 && t.shape[0] == 3 && !memcmp(t.data, w, 3), "float8 through _rebuild_tensor_v3");
            } else if (!strcmp(nm, "fp16_0x5.pt")) {
                CHECK(t.ndim == 2 && t.shape[0] == 0 && t.shape[1] == 5, "empty tensor");
            } else if (!strcmp(nm, "uint8_7.pt")) {
                uint8_t w[7] = {0, 1, 2, 3, 4, 5, 6};
                CHECK(!memcmp(t.data, w, 7), "uint8");
            }
        }
        if (s == FR_OK) free(t.data);
        if (sm == FR_OK) free(tm.data);
        free(mem);
        close(fd);
        n++;
    }
    closedir(d);
    CHECK(n >= 13, "%d seed files in %s", n, dir);
    CHECK(fr_pt_dtype_from_torch_name("torch.bfloat16") == FR_BF16 && fr_pt_dtype_from_torch_name("torch.int8") ==
              FR_DT_NONE, "dtype names");
}

int main(int argc, char **argv) {
    test_built();
    test_seeds(argc > 1 ? argv[1] : FR_TORCHPT_SEEDS);
    return fr_test_exit("test_io_torchpt");
}
