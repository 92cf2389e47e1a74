/* Validation's ground floor (src/core/validate.c): the band rules of spec 4.1 one refusal at a time with its exact
 * message, the generic view check (rank, negative dims, int64 overflow of the element count, the span and the byte
 * size, NULL data, empty views), the shape helpers at their edges, and fr_problem_is_valid: a valid problem of
 * every layout, then one invariant broken at a time must read false (the proofs and the random validation test
 * rely on it to reject what validation must never produce). test_validate.c covers the rules through the API; this
 * test pins the helpers' own branches. */
#include "common/check.h"
#include "core/problem.h"
#include "core/validate.h"
#include "core/validate_internal.h"

#include <stdio.h>
#include <string.h>

static void band(int64_t pre, int64_t next, int64_t S1, int64_t S2, fr_status want, const char *msg) {
    fr_error err;
    fr_error_clear(&err);
    fr_status st = vd_band_rules(pre, next, S1, S2, "test", &err);
    CHECK(st == want, "band pre %lld next %lld S %lld x %lld: status %s, want %s", LL(pre), LL(next), LL(S1), LL(S2),
          fr_status_name(st), fr_status_name(want));
    if (msg) CHECK(!strcmp(err.msg, msg), "band pre %lld next %lld: message '%s', want '%s'", LL(pre), LL(next), err.msg, msg);
}

static void test_band(void) {
    band(-1, -1, 4, 4, FR_E_BAND, "pre_tokens = -1 and next_tokens = -1 are both negative (test)");
    band(2, -3, 8, 8, FR_E_BAND, "pre_tokens = 2 must be >= |next_tokens| = 3 when next_tokens < 0 (test)");
    band(-3, 2, 8, 8, FR_E_BAND, "next_tokens = 2 must be >= |pre_tokens| = 3 when pre_tokens < 0 (test)");
    /* the rules with S1 or S2 apply only when neither is empty (D8) */
    band(10, -6, 0, 4, FR_OK, NULL);
    band(-6, 10, 4, 0, FR_OK, NULL);
    band(10, -6, 4, 6, FR_E_BAND, "next_tokens = -6 < 0 requires |next_tokens| < S2 = 6 (test)");
    band(10, -5, 8, 6, FR_OK, NULL); /* -5 > -6: a band that still meets the scores */
    band(10, -5, 4, 6, FR_E_BAND, /* j - i <= -5 needs a query row i >= 5 */
         "pre_tokens = 10, next_tokens = -5: the band does not overlap the S1 x S2 = 4 x 6 scores (test)");
    band(-4, 10, 4, 6, FR_E_BAND, "pre_tokens = -4 < 0 requires |pre_tokens| < S1 = 4 (test)");
    band(-3, 10, 4, 6, FR_OK, NULL);
    /* j - i spans [-(S1-1), S2-1] = [-3, 5]: a band [8, 9] or [-20, -10] misses it */
    band(-8, 9, 4, 6, FR_E_BAND, "pre_tokens = -8 < 0 requires |pre_tokens| < S1 = 4 (test)");
    band(20, -10, 40, 6, FR_E_BAND, "next_tokens = -10 < 0 requires |next_tokens| < S2 = 6 (test)");
    band(-2, 3, 1, 3, FR_E_BAND, "pre_tokens = -2 < 0 requires |pre_tokens| < S1 = 1 (test)");
    band(-2, 3, 3, 3, FR_OK, NULL); /* j - i = 2 only: (0, 2) */
    band(-2, 3, 3, 2, FR_E_BAND,
         "pre_tokens = -2, next_tokens = 3: the band does not overlap the S1 x S2 = 3 x 2 scores (test)");
    band(6, -5, 3, 3, FR_E_BAND, "next_tokens = -5 < 0 requires |next_tokens| < S2 = 3 (test)");
    band(6, -2, 8, 3, FR_OK, NULL);
    band(0, 0, 1, 1, FR_OK, NULL);
    band(-2, 5, 8, 1, FR_E_BAND,
         "pre_tokens = -2, next_tokens = 5: the band does not overlap the S1 x S2 = 8 x 1 scores (test)");
    CHECK(vd_clamp_band(INT64_MAX) == BAND_CLAMP && vd_clamp_band(INT64_MIN) == -BAND_CLAMP &&
              vd_clamp_band(-7) == -7 && vd_clamp_band(BAND_CLAMP) == BAND_CLAMP,
          "clamp");
}

static float buf[64];

/* A contiguous fp32 view over buf (strides saturate for huge shapes; the cases set the ones they test). */
static fr_tensor view(int nd, const int64_t *shape) {
    fr_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = FR_F32;
    t.ndim = nd;
    t.data = buf;
    int64_t st = 1;
    for (int k = nd - 1; k >= 0; k--) {
        t.shape[k] = shape[k];
        t.strides[k] = st;
        if (shape[k] > 1 && __builtin_mul_overflow(st, shape[k], &st)) st = INT64_MAX; /* huge shapes: no UB here */
    }
    return t;
}

static void view_check(const fr_tensor *t, fr_status want, const char *msg) {
    fr_error err;
    fr_error_clear(&err);
    fr_status st = vd_check_view(t, "x", &err);
    CHECK(st == want, "view: status %s, want %s (%s)", fr_status_name(st), fr_status_name(want), err.msg);
    if (msg) CHECK(!strcmp(err.msg, msg), "view: message '%s', want '%s'", err.msg, msg);
}

static void test_view(void) {
    fr_tensor t = view(2, (const int64_t[]){2, 3});
    view_check(&t, FR_OK, NULL);
    t.ndim = -1;
    view_check(&t, FR_E_RANK, "x: ndim = -1 is outside 0..8");
    t.ndim = FR_MAX_DIMS + 1;
    view_check(&t, FR_E_RANK, "x: ndim = 9 is outside 0..8");
    t = view(0, NULL);
    view_check(&t, FR_OK, NULL); /* a scalar: one element */
    t.data = NULL;
    view_check(&t, FR_E_NULL, "x: data is NULL but the tensor has 1 elements");
    t = view(3, (const int64_t[]){2, -1, 3});
    view_check(&t, FR_E_SHAPE, "x: shape[1] = -1 is negative");
    t = view(3, (const int64_t[]){2, 0, 3});
    t.data = NULL;
    view_check(&t, FR_OK, NULL); /* D8: empty, data may be NULL */
    t = view(2, (const int64_t[]){INT64_C(1) << 62, 8});
    t.strides[0] = t.strides[1] = 1; /* the span fits; the element count 2^65 does not */
    view_check(&t, FR_E_OVERFLOW, "x: element count of shape overflows int64 (dim 1 = 8)");
    t = view(2, (const int64_t[]){3, 2});
    t.strides[0] = INT64_MIN;
    view_check(&t, FR_E_OVERFLOW, "x: strides[0] = -9223372036854775808 with shape[0] = 3 overflows int64 offsets");
    t.strides[0] = INT64_C(1) << 62;
    view_check(&t, FR_E_OVERFLOW, "x: strides[0] = 4611686018427387904 with shape[0] = 3 overflows int64 offsets");
    t = view(2, (const int64_t[]){3, 3});
    t.strides[0] = -(INT64_C(1) << 61), t.strides[1] = INT64_C(1) << 61; /* each extent fits, their sum does not */
    view_check(&t, FR_E_OVERFLOW, "x: strides[1] = 2305843009213693952 with shape[1] = 3 overflows int64 offsets");
    t = view(2, (const int64_t[]){3, 2});
    t.strides[0] = -2; /* negative strides count by their magnitude */
    view_check(&t, FR_OK, NULL);
    t = view(1, (const int64_t[]){INT64_C(1) << 61}); /* 2^61 elements fit int64, 2^63 bytes do not */
    view_check(&t, FR_E_OVERFLOW, "x: size in bytes (2305843009213693952 elements of fp32) overflows int64");
    t = view(2, (const int64_t[]){2, 1});
    t.strides[0] = INT64_C(1) << 61; /* 2 elements, but the addressed span is 2^61 + 1 floats */
    view_check(&t, FR_E_OVERFLOW, "x: size in bytes (2 elements of fp32) overflows int64");
}

static void test_shapes(void) {
    char s[64];
    fr_tensor t = view(3, (const int64_t[]){2, 3, 4});
    CHECK(!strcmp(vd_shape_str(&t, s, sizeof s), "[2,3,4]"), "%s", s);
    t.ndim = -2;
    CHECK(!strcmp(vd_shape_str(&t, s, sizeof s), "[]"), "negative rank: %s", s);
    t = view(8, (const int64_t[]){1, 2, 3, 4, 5, 6, 7, 8});
    t.ndim = 12; /* an invalid rank prints the first FR_MAX_DIMS dims only */
    CHECK(!strcmp(vd_shape_str(&t, s, sizeof s), "[1,2,3,4,5,6,7,8]"), "rank 12: %s", s);
    char tiny[6];
    t = view(3, (const int64_t[]){1000, 2000, 3});
    CHECK(!strcmp(vd_shape_str(&t, tiny, sizeof tiny), "[1000"), "truncated: %s", tiny);
    CHECK(!strcmp(vd_expect_str(2, (const int64_t[]){7, 9}, s, sizeof s), "[7,9]"), "%s", s);
    CHECK(vd_shape_eq2(&t, 1000, 2000) == false && vd_shape_eq4(&t, 1000, 2000, 3, 1) == false, "rank differs");
    CHECK(vd_shape_eq(&t, 3, (const int64_t[]){1000, 2000, 3}) && !vd_shape_eq(&t, 3, (const int64_t[]){1000, 2000, 4}),
          "eq");
    fr_tensor k = view(3, (const int64_t[]){1, 2, 3});
    k.dtype = FR_BF16;
    fr_error err;
    CHECK(vd_same_dtype(&k, "key", FR_BF16, "query", FR_E_DTYPE, &err) == FR_OK, "same dtype");
    fr_status st = vd_same_dtype(&k, "key", FR_F16, "query", FR_E_DTYPE, &err);
    CHECK(st == FR_E_DTYPE && !strcmp(err.msg, "key: dtype bf16 differs from query dtype fp16"), "%s", err.msg);

    /* layout dims and the shapes validation expects, every layout; an invalid layout gives none */
    fr_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.B = 2, pb.S1 = 5, pb.S2 = 7, pb.T1 = 9, pb.T2 = 11, pb.N1 = 4;
    int64_t e[4];
    const struct {
        fr_layout l;
        int nd;
        int64_t q[4], kv[4];
    } rows[] = {
        {FR_BSH, 3, {2, 5, 12}, {2, 7, 12}},       {FR_SBH, 3, {5, 2, 12}, {7, 2, 12}},
        {FR_BSND, 4, {2, 5, 3, 4}, {2, 7, 3, 4}},  {FR_BNSD, 4, {2, 3, 5, 4}, {2, 3, 7, 4}},
        {FR_TND, 3, {9, 3, 4}, {11, 3, 4}},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        pb.layout = rows[r].l;
        int nq = vd_layout_shape(&pb, false, 3, 4, e);
        CHECK(nq == rows[r].nd && !memcmp(e, rows[r].q, sizeof(int64_t) * (size_t)nq), "%s q", fr_layout_name(pb.layout));
        int nk = vd_layout_shape(&pb, true, 3, 4, e);
        CHECK(nk == rows[r].nd && !memcmp(e, rows[r].kv, sizeof(int64_t) * (size_t)nk), "%s kv", fr_layout_name(pb.layout));
        fr_tensor q = view(nq, rows[r].q);
        vd_lay_dims d = vd_dims_of(&q, pb.layout);
        bool h3 = nq == 3 && pb.layout != FR_TND;
        CHECK(d.S == (pb.layout == FR_TND ? 9 : 5) && (h3 ? d.H == 12 && d.N == -1 : d.N == 3 && d.D == 4 && d.H == -1),
              "%s dims", fr_layout_name(pb.layout));
    }
    pb.layout = (fr_layout)77;
    CHECK(vd_layout_shape(&pb, false, 3, 4, e) == 0, "invalid layout: no shape");
    vd_lay_dims d = vd_dims_of(&t, (fr_layout)77);
    CHECK(d.B == -1 && d.S == -1 && d.N == -1 && d.D == -1 && d.H == -1, "invalid layout: no dims");
    pb.layout = FR_TND;
    CHECK(vd_softmax_shape(&pb, FR_SOFTMAX_SAME_AS_INPUT, e) == 3 && e[0] == 9 && e[1] == 4 && e[2] == 8, "TND same");
    CHECK(vd_softmax_shape(&pb, FR_SOFTMAX_DEFAULT, e) == 3 && e[0] == 4 && e[1] == 9 && e[2] == 8, "TND default");
    pb.layout = FR_BSND;
    CHECK(vd_softmax_shape(&pb, FR_SOFTMAX_SAME_AS_INPUT, e) == 4 && e[0] == 2 && e[1] == 4 && e[2] == 5 && e[3] == 8,
          "BSND");
}

/* A valid resolved problem of layout l (TND: two batches, the second empty). */
static int64_t cuq[2] = {5, 5}, cukv[2] = {7, 7};
static fr_problem valid(fr_layout l) {
    fr_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.layout = l, pb.dtype = FR_BF16, pb.out_dtype = FR_BF16;
    pb.B = 2, pb.N1 = 4, pb.N2 = 2, pb.G = 2, pb.S1 = 5, pb.S2 = 7, pb.Dk = 16, pb.Dv = 8;
    if (l == FR_TND) {
        pb.T1 = 5, pb.T2 = 7, pb.cu_q = cuq, pb.cu_kv = cukv;
    } else {
        pb.T1 = 10, pb.T2 = 14;
    }
    pb.pse_type = FR_PSE_OUTER_ADD_MUL;
    return pb;
}

static void test_is_valid(void) {
    CHECK(!fr_problem_is_valid(NULL), "NULL");
    for (int l = FR_BSH; l <= FR_TND; l++) {
        fr_problem pb = valid((fr_layout)l);
        CHECK(fr_problem_is_valid(&pb), "valid %s", fr_layout_name((fr_layout)l));
    }
    /* one invariant broken at a time */
#define BROKEN(layout, what, ...)                                                                                      \
    do {                                                                                                               \
        fr_problem pb = valid(layout);                                                                                 \
        __VA_ARGS__;                                                                                                   \
        CHECK(!fr_problem_is_valid(&pb), "accepted: %s", what);                                                        \
    } while (0)
    BROKEN(FR_BSH, "layout", pb.layout = (fr_layout)99);
    BROKEN(FR_BSH, "dtype", pb.dtype = FR_I32);
    BROKEN(FR_BSH, "fp8 flag without an fp8 dtype", pb.fp8 = true);
    BROKEN(FR_BSH, "fp8 dtype without the flag", pb.dtype = FR_E4M3FN);
    BROKEN(FR_BSH, "B < 0", pb.B = -1, pb.T1 = pb.T2 = 0);
    BROKEN(FR_BSH, "N1 < 0", pb.N1 = -2);
    BROKEN(FR_BSH, "N2 < 0", pb.N2 = -2);
    BROKEN(FR_BSH, "S1 < 0", pb.S1 = -1);
    BROKEN(FR_BSH, "S2 < 0", pb.S2 = -1);
    BROKEN(FR_BSH, "Dk < 0", pb.Dk = -1);
    BROKEN(FR_BSH, "Dv < 0", pb.Dv = -1);
    BROKEN(FR_BSH, "Drope < 0", pb.Drope = -1);
    BROKEN(FR_BSH, "T1 < 0", pb.T1 = -1);
    BROKEN(FR_BSH, "T2 < 0", pb.T2 = -1);
    BROKEN(FR_BSH, "W < 0", pb.W = -1);
    BROKEN(FR_BSH, "N2 = 0 with N1", pb.N2 = 0, pb.G = 0);
    BROKEN(FR_BSH, "N2 = 0 with G", pb.N2 = 0, pb.N1 = 0, pb.G = 1);
    BROKEN(FR_BSH, "N1 % N2", pb.N1 = 5);
    BROKEN(FR_BSH, "G", pb.G = 3);
    BROKEN(FR_BSH, "Dv > Dk", pb.Dv = 32);
    BROKEN(FR_BSH, "N1 above the limit", pb.N1 = FR_LIMIT_N1 + 2, pb.N2 = 1, pb.G = pb.N1);
    BROKEN(FR_BSH, "Dk above the limit", pb.Dk = FR_LIMIT_D + 1);
    BROKEN(FR_BSH, "has_rope without Drope", pb.has_rope = true);
    BROKEN(FR_BSH, "Drope without has_rope", pb.Drope = 8);
    BROKEN(FR_BSH, "W without top-k", pb.W = 3);
    BROKEN(FR_BSH, "pse_type", pb.pse_type = FR_PSE_TYPE_COUNT);
    BROKEN(FR_BSH, "sparse_mode", pb.has_mask = true, pb.sparse_mode = FR_SPARSE_MODE_COUNT);
    BROKEN(FR_BSH, "sparse mode without a mask", pb.sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL);
    BROKEN(FR_TND, "TND without cu_q", pb.cu_q = NULL);
    BROKEN(FR_TND, "TND without cu_kv", pb.cu_kv = NULL);
    BROKEN(FR_TND, "TND T1 differs from cu_q", pb.T1 = 4);
    BROKEN(FR_TND, "TND T2 differs from cu_kv", pb.T2 = 8);
    BROKEN(FR_BSND, "cu_q outside TND", pb.cu_q = cuq);
    BROKEN(FR_BSND, "cu_kv outside TND", pb.cu_kv = cukv);
    BROKEN(FR_BSND, "T1 != B S1", pb.T1 = 11);
    BROKEN(FR_BSND, "T2 != B S2", pb.T2 = 13);
#undef BROKEN
    /* and the edges that are valid */
    fr_problem pb = valid(FR_BNSD);
    pb.N1 = pb.N2 = pb.G = 0;
    CHECK(fr_problem_is_valid(&pb), "no heads at all (D8)");
    pb = valid(FR_TND);
    pb.B = 0, pb.T1 = pb.T2 = 0, pb.cu_q = pb.cu_kv = NULL;
    CHECK(fr_problem_is_valid(&pb), "TND with no batch");
    pb = valid(FR_SBH);
    pb.has_topk = true, pb.W = 0;
    pb.has_rope = true, pb.Drope = 4;
    pb.has_mask = true, pb.sparse_mode = FR_SPARSE_PREFIX_COMPRESS;
    pb.fp8 = true, pb.dtype = FR_HIF8;
    CHECK(fr_problem_is_valid(&pb), "top-k W = 0, rope, mode 6, hif8");
}

int main(void) {
    printf("test_validate_floor\n");
    test_band();
    test_view();
    test_shapes();
    test_is_valid();
    return fr_test_exit("test_validate_floor");
}
