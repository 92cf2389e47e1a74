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

/* A zip of the n records r (zip_of's flags): refused as expect_refused says. */
static void expect_refused_zip(const rec *r, int n, int flags, const char *what, const char *needle) {
    buf z = zip_of(r, n, flags);
    expect_refused(&z, what, needle);
    free(z.p);
}

/* A .pt of pickle pl over the n bytes of data: refused as expect_refused says; frees pl. */
static void expect_refused_pkl(buf pl, const void *data, size_t n, const char *what, const char *needle) {
    buf z = pt_file(&pl, (const uint8_t *)data, n, 0);
    expect_refused(&z, what, needle);
    free(z.p);
    free(pl.p);
}

/* Every proper prefix of the archive z of the 2x3 tensor v is refused with a message; every single-byte flip is
 * refused with one or reads the same tensor (a field the reader does not use: a version, a time), never another. */
static void prefixes_and_flips(buf *z, const float *v, const char *kind) {
    int ok_flips = 0;
    for (size_t n = 0; n < z->n; n++) {
        fr_tensor tt;
        fr_error ee;
        fr_status s = fr_pt_read_mem(z->p, n, &tt, "prefix", &ee);
        CHECK(s != FR_OK && ee.msg[0], "%sa prefix of %zu of %zu bytes read", kind, n, z->n);
        if (s == FR_OK) free(tt.data);
        z->p[n] ^= 0xFF;
        s = fr_pt_read_mem(z->p, z->n, &tt, "flip", &ee);
        if (s == FR_OK) {
            ok_flips++;
            CHECK(tt.dtype == FR_F32 && tt.ndim == 2 && tt.shape[0] == 2 && tt.shape[1] == 3 &&
                      !memcmp(tt.data, v, 6 * sizeof *v), "%sbyte %zu flipped: read as another tensor", kind, n);
            free(tt.data);
        } else {
            CHECK(ee.msg[0], "%sbyte %zu flipped: status without a message", kind, n);
        }
        z->p[n] ^= 0xFF;
    }
    printf("single-byte flips of a %zu-byte %sarchive: %d read the same tensor (unused zip fields), %zu refused\n",
           z->n, kind, ok_flips, z->n - (size_t)ok_flips);
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
    expect_refused_zip(lying, 4, Z_LYING_SIZE, "lying size of an unread record", "does not fit before the central directory");
    rec dup[4] = {{"archive/data.pkl", pk.p, pk.n}, {"archive/data/0", (const uint8_t *)v, sizeof v},
                  {"archive/data/0", (const uint8_t *)v, sizeof v}, {"b/data.pkl", pk.p, pk.n}};
    expect_refused_zip(dup, 3, 0, "duplicate record", "listed twice");
    expect_refused_zip(dup, 4, 0, "two data.pkl", "more than one data.pkl");
    expect_refused_zip(dup, 1, 0, "no storage", "is missing");
    rec big[2] = {{"archive/data.pkl", pk.p, pk.n}, {"archive/byteorder", (const uint8_t *)"big", 3}};
    expect_refused_zip(big, 2, 0, "big-endian", "little-endian");
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
    prefixes_and_flips(&z, v, "");
    free(z.p);
    free(pk.p);
    free(pm.p);
    free(pt.p);
}

/* ---- the pickle interpreter's every opcode and every refusal of a malformed tensor call ---- */

#define PK(s) s, sizeof(s) - 1
#define P2 "\x80\x02"
#define REB2 "ctorch._utils\n_rebuild_tensor_v2\n"
#define REB3 "ctorch._utils\n_rebuild_tensor_v3\n"
#define STOR "X\x07\0\0\0storage"
#define FLT "ctorch\nFloatStorage\n"
#define UNTYPED "ctorch.storage\nUntypedStorage\n"
#define KEY0 "X\x01\0\0\0" "0"
#define CPU "X\x03\0\0\0" "cpu"
#define PID(cls, numel) "(" STOR cls KEY0 CPU numel "tQ"
#define ODICT "ccollections\nOrderedDict\n)R"
#define SZ "(K\x02K\x03t"
#define ST "(K\x03K\x01t"
#define OFF0 "K\x00"
/* the six arguments after the storage of the tensor [[1,2,3],[4,5,6]] */
#define TAIL OFF0 SZ ST "\x89" ODICT

static void test_pickles(void) {
    float v[6] = {1, 2, 3, 4, 5, 6};
    /* read: each spells the same 2x3 float tensor with other opcodes */
    static const struct {
        const char *pkl;
        size_t n;
        const char *what;
    } good[] = {
        {PK(P2 REB2 "(" PID(FLT, "K\x06") TAIL "tR."), "the plain spelling"},
        {PK(P2 "\x8c\x0c" "torch._utils" "\x8c\x12" "_rebuild_tensor_v2" "\x93" "(" PID(FLT, "K\x06") TAIL "tR."),
         "STACK_GLOBAL of SHORT_BINUNICODE strings"},
        {PK(P2 "\x95\x10\0\0\0\0\0\0\0" REB2 "\x94(" PID(FLT, "M\x06\0") TAIL "tR."), "FRAME, MEMOIZE, BININT2"},
        {PK(P2 REB2 "(" PID(FLT, "J\x06\0\0\0") OFF0 "(K\x02K\x03r\x09\0\0\0t(j\x09\0\0\0K\x01t\x89" ODICT "tR."),
         "LONG_BINPUT past a gap, LONG_BINGET"},
        {PK(P2 REB2 "(" PID(FLT, "\x8a\x01\x06") "\x8a\x00(K\x02K\x03t(K\x03K\x01t\x89}tR."),
         "LONG1 ints, an empty dict for the hooks"},
        {PK(P2 REB2 "(" PID(FLT, "K\x06") TAIL "}X\x01\0\0\0" "a\x89sX\x01\0\0\0" "b\x89" "stR."),
         "metadata through SETITEM"},
        {PK(P2 REB3 "(" PID(FLT, "K\x06") TAIL "ctorch\nfloat32\ntR."), "_rebuild_tensor_v3 of a typed storage"},
        {PK(P2 REB3 "(" PID(UNTYPED, "K\x18") TAIL "ctorch\nfloat32\n}tR."),
         "_rebuild_tensor_v3 of an untyped storage, with metadata"},
    };
    for (size_t q = 0; q < sizeof good / sizeof good[0]; q++) {
        buf p = {(uint8_t *)good[q].pkl, good[q].n, 0};
        buf z = pt_file(&p, (const uint8_t *)v, sizeof v, 0);
        fr_tensor t;
        fr_error e;
        fr_status s = read_mem(&z, &t, &e);
        CHECK(s == FR_OK && t.dtype == FR_F32 && t.ndim == 2 && t.shape[0] == 2 && t.shape[1] == 3 &&
                  !memcmp(t.data, v, sizeof v),
              "%s: %s (%s)", good[q].what, fr_status_name(s), e.msg);
        if (s == FR_OK) free(t.data);
        free(z.p);
    }
    /* refused, each with the message naming what is wrong */
    static const struct {
        const char *pkl;
        size_t n;
        const char *needle;
    } bad[] = {
        {PK("\x80\x01."), "protocol other than 2-5"},
        {PK(P2 "ctorch._utils"), "GLOBAL without newline"},
        {PK(P2 "ctorch._utils\n_rebuild"), "GLOBAL without newline"},
        {PK(P2 "ctorch\nInt8Storage\n."), "'torch.Int8Storage'"},
        {PK(P2 "K\x01K\x02\x93"), "STACK_GLOBAL of non-strings"},
        {PK(P2 "\x93"), "stack underflow"},
        {PK(P2 "q\x00"), "memo store of nothing"},
        {PK(P2 "(q\x00"), "memo store of nothing"},
        {PK(P2 "K\x01r\x00\x10\0\0"), "memo index out of range"},
        {PK(P2 "K\x01q\x03j\x02\0\0\0."), "memo get of an unset index"},
        {PK(P2 "\x86"), "stack underflow"},
        {PK(P2 "(K\x01\x86"), "MARK inside a short tuple"},
        {PK(P2 "K\x01)R"), "REDUCE of something not callable"},
        {PK(P2 "ccollections\nOrderedDict\nK\x01\x85R"), "OrderedDict with contents"},
        {PK(P2 FLT ")R"), "a class called as a function"},
        {PK(P2 REB2 ")R"), "other than 6 or 7 arguments"},
        {PK(P2 REB3 "(" PID(FLT, "K\x06") TAIL "tR."), "other than 7 or 8 arguments"},
        {PK(P2 REB2 "(K\x00" TAIL "tR."), "the first argument is not a storage"},
        {PK(P2 REB2 "(" PID(FLT, "K\x06") "\x8a\x01\xff" SZ ST "\x89" ODICT "tR."), "storage offset not an int >= 0"},
        {PK(P2 REB2 "(" PID(FLT, "K\x06") OFF0 SZ "(K\x01t\x89" ODICT "tR."), "size and stride are not int tuples"},
        {PK(P2 REB2 "(" PID(FLT, "K\x06") OFF0 SZ "(K\x03Nt\x89" ODICT "tR."), "size and stride are not int tuples"},
        {PK(P2 REB2 "(" PID(FLT, "K\x06") OFF0 SZ ST "N" ODICT "tR."), "requires_grad is not a bool"},
        {PK(P2 REB2 "(" PID(FLT, "K\x06") OFF0 SZ ST "\x89N" "tR."), "backward hooks present"},
        {PK(P2 REB2 "(" PID(FLT, "K\x06") OFF0 SZ ST "\x89}X\x01\0\0\0" "a\x89stR."), "backward hooks present"},
        {PK(P2 REB2 "(" PID(FLT, "K\x06") TAIL "NtR."), "metadata is not a dict"},
        {PK(P2 REB3 "(" PID(FLT, "K\x06") TAIL "NtR."), "_rebuild_tensor_v3: no dtype"},
        {PK(P2 REB3 "(" PID(FLT, "K\x06") TAIL "ctorch\nfloat16\ntR."), "the dtype is not the storage's"},
        {PK(P2 REB3 "(" PID(UNTYPED, "K\x17") TAIL "ctorch\nfloat32\ntR."), "not a whole number of elements"},
        {PK(P2 REB2 "(" PID(UNTYPED, "K\x18") TAIL "tR."), "_rebuild_tensor_v2 of an untyped storage"},
        {PK(P2 "K\x01Q"), "persistent id is not a 5-tuple"},
        {PK(P2 "(K\x01K\x02tQ"), "persistent id is not a 5-tuple"},
        {PK(P2 "(X\x07\0\0\0storagf" FLT KEY0 CPU "K\x06tQ"), "persistent id is not a storage"},
        {PK(P2 "(K\x01" FLT KEY0 CPU "K\x06tQ"), "persistent id is not a storage"},
        {PK(P2 "(" STOR "K\x01" KEY0 CPU "K\x06tQ"), "not a storage class"},
        {PK(P2 "(" STOR REB2 KEY0 CPU "K\x06tQ"), "not a storage class"},
        {PK(P2 "(" STOR FLT "K\x00" CPU "K\x06tQ"), "bad storage key"},
        {PK(P2 "(" STOR FLT "X\0\0\0\0" CPU "K\x06tQ"), "bad storage key"},
        {PK(P2 "(" STOR FLT "X\x15\0\0\0" "012345678901234567890" CPU "K\x06tQ"), "bad storage key"},
        {PK(P2 "(" STOR FLT "X\x01\0\0\0" "a" CPU "K\x06tQ"), "bad storage key"},
        {PK(P2 "(" STOR FLT KEY0 "N" "K\x06tQ"), "bad location"},
        {PK(P2 "(" STOR FLT KEY0 "X\x03\0\0\0" "c\x01u" "K\x06tQ"), "bad location"},
        {PK(P2 "(" STOR FLT KEY0 "X\x41\0\0\0" "cpucpucpucpucpucpucpucpucpucpucpucpucpucpucpucpucpucpucpucpucpucp"
            "K\x06tQ"), "bad location"},
        {PK(P2 "(" STOR FLT KEY0 CPU "J\xff\xff\xff\xfftQ"), "bad storage size"},
        {PK(P2 "(" STOR FLT KEY0 CPU "NtQ"), "bad storage size"},
        {PK(P2 "}u"), "SETITEMS without MARK"},
        {PK(P2 "}(NNNu"), "odd number of items"},
        {PK(P2 "K\x01K\x02s"), "SETITEM without a dict"},
        {PK(P2 "(u"), "SETITEM without a dict"},
        {PK(P2 "K\x01K\x02K\x03s"), "SETITEM on something not a dict"},
        {PK(P2 "}(K\x01s"), "MARK inside SETITEM"},
        {PK(P2 "}K\x01\x89s"), "metadata entry not {str: bool}"},
        {PK(P2 "}X\x01\0\0\0" "aKxs"), "metadata entry not {str: bool}"},
        {PK(P2 REB2 "(" PID(FLT, "K\x06") TAIL "tR.."), "bytes after STOP"},
        {PK(P2 "(."), "not one tensor"},
    };
    for (size_t q = 0; q < sizeof bad / sizeof bad[0]; q++) {
        char what[32];
        snprintf(what, sizeof what, "pickle %zu", q);
        buf p = {(uint8_t *)bad[q].pkl, bad[q].n, 0};
        buf z = pt_file(&p, (const uint8_t *)v, sizeof v, 0);
        expect_refused(&z, what, bad[q].needle);
        free(z.p);
    }
    /* more values than a saved tensor has: 21 tuples of 200 Nones; more tuple items: 42 tuples of 200 memo gets */
    buf many = {0};
    put(&many, P2, 2);
    for (int t = 0; t < 21; t++) {
        put_s(&many, "(");
        for (int q = 0; q < 200; q++) put_s(&many, "N");
        put_s(&many, "t");
    }
    put_s(&many, ".");
    expect_refused_pkl(many, v, sizeof v, "value bomb", "more objects than a saved tensor holds");
    buf items = {0};
    put(&items, P2 "Nq\x00", 5);
    for (int t = 0; t < 42; t++) {
        put_s(&items, "(");
        for (int q = 0; q < 200; q++) put(&items, "h\x00", 2);
        put_s(&items, "t");
    }
    put_s(&items, ".");
    expect_refused_pkl(items, v, sizeof v, "item bomb", "more tuple items than a saved tensor holds");
}

/* The central directory entry k of a stored zip (the end record's offset, then entry by entry). */
static uint8_t *cd_entry(buf *z, int k) {
    uint8_t *e = z->p + z->n - 22;
    uint32_t off = (uint32_t)e[16] | (uint32_t)e[17] << 8 | (uint32_t)e[18] << 16 | (uint32_t)e[19] << 24;
    uint8_t *c = z->p + off;
    for (int q = 0; q < k; q++) c += 46 + (c[28] | c[29] << 8) + (c[30] | c[31] << 8) + (c[32] | c[33] << 8);
    return c;
}

static void test_zip(void) {
    float v[6] = {1, 2, 3, 4, 5, 6};
    int64_t sz[2] = {2, 3}, cs[2] = {3, 1};
    buf pk = pkl_tensor("FloatStorage", 6, 2, sz, cs, 0, -1);
    /* the central directory's fields, one wrong at a time */
    static const struct {
        int entry, at, len, flags;
        uint64_t value;
        const char *needle;
    } cd[] = {
        {0, 24, 4, 0, 5, "differs from its size 5"},                    /* the uncompressed size */
        {2, 34, 2, 0, 1, "differs from its size"},                      /* the entry's disk */
        {2, 42, 4, 0, 0x7FFFFFF0u, "does not fit before the central"},  /* the record's offset */
        {0, 46 + 16 + 2, 2, Z_ZIP64, 30, "extra field runs past its entry"}, /* zip64 extra of 30 bytes in 28 */
        {0, 46 + 16 + 2, 2, Z_ZIP64, 8, "zip64 extra field too short"},      /* two sizes and an offset in 8 bytes */
        {0, 46 + 16 + 4 + 7, 1, Z_ZIP64, 0x80, "zip64 size out of range"},
        {0, 34, 2, Z_ZIP64, 0xFFFF, "zip64 extra field too short"},     /* the disk through zip64, not given */
    };
    for (size_t q = 0; q < sizeof cd / sizeof cd[0]; q++) {
        buf z = pt_file(&pk, (const uint8_t *)v, sizeof v, cd[q].flags);
        uint8_t *c = cd_entry(&z, cd[q].flags & Z_ZIP64 ? 0 : cd[q].entry) + cd[q].at;
        if (cd[q].flags & Z_ZIP64) { /* the zip64 end record hides the classic one's offset: entry 0 is at the
                                        data's end, found by its signature */
            c = z.p;
            while (!(c[0] == 'P' && c[1] == 'K' && c[2] == 1 && c[3] == 2)) c++;
            c += cd[q].at;
        }
        for (int b = 0; b < cd[q].len; b++) c[b] = (uint8_t)(cd[q].value >> (8 * b));
        expect_refused(&z, cd[q].needle, cd[q].needle);
        free(z.p);
    }
    /* local headers: no signature, a name of another length, an extra field that runs into the directory */
    buf z = pt_file(&pk, (const uint8_t *)v, sizeof v, 0);
    z.p[0] = 'Q';
    expect_refused(&z, "local signature", "no local file header at offset 0");
    z.p[0] = 'P';
    z.p[26] = 17;
    expect_refused(&z, "local name length", "the local header names another record");
    z.p[26] = 16;
    uint8_t *l = z.p + 30 + 16 + pk.n + 30 + 17 + 6; /* the storage record's local header, after data.pkl and byteorder */
    CHECK(l[0] == 'P' && l[1] == 'K' && l[2] == 3 && l[3] == 4, "the storage record's local header");
    l[28] = 0xFF;
    expect_refused(&z, "local extra", "overlaps the central directory");
    free(z.p);
    /* records: an empty name, no data.pkl, a byteorder too long, a data.pkl over 1 MiB, data.pkl's CRC */
    rec r[3] = {{"archive/data.pkl", pk.p, pk.n}, {"", (const uint8_t *)"x", 1},
                {"archive/data/0", (const uint8_t *)v, sizeof v}};
    expect_refused_zip(r, 3, 0, "empty name", "empty, over-long or NUL-holding name");
    rec nopkl[2] = {{"data.pkl", pk.p, pk.n}, {"a/b/data.pkl", pk.p, pk.n}};
    expect_refused_zip(nopkl, 2, 0, "no data.pkl", "no <archive>/data.pkl record");
    rec longbo[2] = {{"archive/data.pkl", pk.p, pk.n}, {"archive/byteorder", (const uint8_t *)"littlelittlelittle", 18}};
    expect_refused_zip(longbo, 2, 0, "long byteorder", "byteorder record too long");
    uint8_t *mib = calloc((1u << 20) + 1, 1);
    rec bigpkl[1] = {{"archive/data.pkl", mib, (1u << 20) + 1}};
    expect_refused_zip(bigpkl, 1, 0, "big data.pkl", "data.pkl of 1048577 bytes");
    free(mib);
    rec pkl_last[2] = {{"archive/data/0", (const uint8_t *)v, sizeof v}, {"archive/data.pkl", pk.p, pk.n}};
    expect_refused_zip(pkl_last, 2, Z_BAD_CRC, "data.pkl CRC", "data.pkl: CRC-32 mismatch");
    /* a storage of 2^62 floats: its byte count overflows */
    int64_t one = 1;
    expect_refused_pkl(pkl_tensor("FloatStorage", INT64_C(1) << 62, 1, &one, &one, 0, -1), v, sizeof v,
                       "storage overflow", "overflows");
    /* a dimension of size 1 may have any stride; an empty tensor needs no storage bytes */
    int64_t s1[2] = {1, 6}, st1[2] = {99, 1}, s0[2] = {0, 3};
    buf p1 = pkl_tensor("FloatStorage", 6, 2, s1, st1, 0, -1);
    z = pt_file(&p1, (const uint8_t *)v, sizeof v, 0);
    fr_tensor t;
    fr_error e;
    fr_status s = read_mem(&z, &t, &e);
    CHECK(s == FR_OK && t.ndim == 2 && t.shape[0] == 1 && t.shape[1] == 6 && !memcmp(t.data, v, sizeof v),
          "size-1 dimension with stride 99: %s", e.msg);
    if (s == FR_OK) free(t.data);
    free(z.p);
    free(p1.p);
    p1 = pkl_tensor("FloatStorage", 0, 2, s0, cs, 0, -1);
    z = pt_file(&p1, (const uint8_t *)v, 0, 0);
    s = read_mem(&z, &t, &e);
    CHECK(s == FR_OK && t.ndim == 2 && t.shape[0] == 0 && t.shape[1] == 3 && t.data == NULL, "empty: %s", e.msg);
    free(z.p);
    free(p1.p);
    /* every truncation and byte flip of a zip64 archive too (its locator and end record) */
    z = pt_file(&pk, (const uint8_t *)v, sizeof v, Z_ZIP64);
    prefixes_and_flips(&z, v, "zip64 ");
    free(z.p);
    free(pk.p);
}

/* The entry points' argument checks, a file that is not one, and a file that shrinks between info and data. */
static void test_api(const char *tmp) {
    float v[6] = {1, 2, 3, 4, 5, 6};
    int64_t sz[2] = {2, 3}, cs[2] = {3, 1};
    buf pk = pkl_tensor("FloatStorage", 6, 2, sz, cs, 0, -1);
    buf z = pt_file(&pk, (const uint8_t *)v, sizeof v, 0);
    fr_pt_info info;
    fr_tensor t;
    fr_error e;
    CHECK(fr_pt_info_mem(NULL, 4, &info, "m", &e) == FR_E_NULL, "info_mem of NULL");
    CHECK(fr_pt_info_mem(z.p, z.n, NULL, "m", &e) == FR_E_NULL, "info_mem into NULL");
    CHECK(fr_pt_info_mem(NULL, 0, &info, NULL, &e) == FR_E_FORMAT && strstr(e.msg, "pt: 0 bytes"), "empty: %s",
          e.msg);
    CHECK(fr_pt_info_fd(0, NULL, "f", &e) == FR_E_NULL, "info_fd into NULL");
    CHECK(fr_pt_info_fd(-1, &info, "f", &e) == FR_E_IO && strstr(e.msg, "f: "), "bad fd: %s", e.msg);
    int dfd = open(tmp, O_RDONLY);
    CHECK(fr_pt_info_fd(dfd, &info, "dir", &e) == FR_E_IO && strstr(e.msg, "not a regular file"), "dir: %s", e.msg);
    CHECK(fr_pt_data_fd(dfd, &info, &t, "dir", &e) == FR_E_IO && strstr(e.msg, "not a regular file"), "dir: %s",
          e.msg);
    close(dfd);
    CHECK(fr_pt_data_mem(z.p, z.n, &info, NULL, "m", &e) == FR_E_NULL, "data_mem into NULL");
    CHECK(fr_pt_data_mem(NULL, 3, &info, &t, "m", &e) == FR_E_NULL, "data_mem of NULL");
    CHECK(fr_pt_data_fd(0, &info, NULL, "m", &e) == FR_E_NULL, "data_fd into NULL");
    CHECK(fr_pt_data_mem(z.p, z.n, NULL, &t, "m", &e) == FR_E_NULL && strstr(e.msg, "no tensor description"),
          "no info: %s", e.msg);
    CHECK_OK(fr_pt_info_mem(z.p, z.n, &info, "m", &e), e);
    CHECK(info.dtype == FR_F32 && info.ndim == 2 && info.data_bytes == 24 && info.has_crc && info.data_offset ==
              info.record_offset && !strcmp(info.location, "cpu"), "info of the 2x3 tensor");
    fr_pt_info bad = info;
    bad.data_bytes = 20;
    CHECK(fr_pt_data_mem(z.p, z.n, &bad, &t, "m", &e) == FR_E_INVALID_ARG && strstr(e.msg, "inconsistent"),
          "inconsistent: %s", e.msg);
    bad = info;
    bad.dtype = FR_DT_NONE;
    CHECK(fr_pt_data_mem(z.p, z.n, &bad, &t, "m", &e) == FR_E_NULL, "info of no dtype");
    /* the file shrinks after its description was read: the data lie past its end */
    char path[512];
    snprintf(path, sizeof path, "%s/t.pt", tmp);
    write_whole(path, z.p, z.n);
    int fd = open(path, O_RDWR);
    CHECK_OK(fr_pt_info_fd(fd, &info, "t.pt", &e), e);
    CHECK(ftruncate(fd, (off_t)info.data_offset + 4) == 0, "ftruncate");
    CHECK(fr_pt_data_fd(fd, &info, &t, "t.pt", &e) == FR_E_FORMAT && strstr(e.msg, "t.pt: tensor data: 24 bytes"),
          "shrunk file: %s", e.msg);
    close(fd);
    remove(path);
    /* dtype names: torch's aliases, and what is not a torch dtype */
    CHECK(fr_pt_dtype_from_torch_name("torch.float") == FR_F32 && fr_pt_dtype_from_torch_name("torch.half") ==
              FR_F16 && fr_pt_dtype_from_torch_name("torch.double") == FR_F64 &&
              fr_pt_dtype_from_torch_name("torch.int") == FR_I32 && fr_pt_dtype_from_torch_name("torch.long") ==
              FR_I64 && fr_pt_dtype_from_torch_name("float32") == FR_DT_NONE &&
              fr_pt_dtype_from_torch_name(NULL) == FR_DT_NONE, "dtype aliases");
    free(z.p);
    free(pk.p);
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
    char tmp[] = "/tmp/fr_torchpt_XXXXXX";
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    test_built();
    test_pickles();
    test_zip();
    test_api(tmp);
    remove_tree(tmp);
    test_seeds(argc > 1 ? argv[1] : FR_TORCHPT_SEEDS);
    return fr_test_exit("test_io_torchpt");
}
