/* The golden's row reference (golden_rowref.c: the plain per-row algorithm test_golden_long checks the blocked golden
 * against, so far only on dense fp32 rows) on every semantic: seeded random cases over layouts, dtypes (fp8 with its
 * dequant scales), GQA, masks and sparse modes, pse types and shapes, dropout, sink, rope, top-k, varlen with empty
 * sequences, strided views, query row blocks (GD_BR = 128) and key blocks (GD_BC = 64) crossed. Every row of every
 * (batch, head) is recomputed by gd_rowref_fwd_rows, in ranges that start and end inside the blocks, and must agree
 * with the blocked golden (fr_fwd, engine golden) to 1e-12 relative to the largest output (both fp64; they differ
 * only in rounding: fma chains against mul-then-add); D1 rows exactly (-FLT_MAX, FLT_MAX, out 0).
 * Also its refusals (each status and message): batch or head out of range, rows outside the batch, invalid inputs;
 * and absent outputs are skipped (only softmax_max asked for). */
#include "common/check.h"
#include "golden/golden_internal.h"
#include "golden/gt_case.h"

static int ran = 0, skipped = 0;
static double worst = 0;

static fr_tensor like(const fr_tensor *t, uint64_t *r) {
    fr_tensor o = gt_tensor(FR_F64, t->ndim, t->shape, 0, r);
    gt_fill_nan_raw(&o);
    return o;
}

static int64_t q_len(const gt_case *c, int64_t b) { return c->L == FR_TND ? c->lq[b] : c->S1; }

/* The golden forward of c, then every row of every (batch, head) by the row reference (in two ranges split at a
 * random row), compared; false when validation refuses the case. */
static bool compare(gt_case *c, const char *what, uint64_t *r) {
    gt_make_outputs(c, 0, r);
    fr_error err;
    if (gt_run_fwd(c, 2, &err) != FR_OK) { /* a combination validation refuses: not this test's subject */
        skipped++;
        return false;
    }
    ran++;
    fr_fwd_outputs ref = {like(&c->out, r), like(&c->smax, r), like(&c->ssum, r)};
    bool ok = true;
    for (int64_t b = 0; b < c->B && ok; b++)
        for (int64_t h = 0; h < c->N1 && ok; h++) {
            int64_t s1 = q_len(c, b), cut = fr_test_range(r, 0, s1);
            fr_status st = gd_rowref_fwd_rows(&c->p, &c->in, &ref, b, h, 0, cut, &err);
            if (st == FR_OK) st = gd_rowref_fwd_rows(&c->p, &c->in, &ref, b, h, cut, s1 - cut, &err);
            ok = CHECKED(st == FR_OK, "%s b %lld h %lld: %s", what, (long long)b, (long long)h, err.msg);
        }
    if (ok) {
        double eo = gt_normwise(&ref.attention_out, &c->out, 0), em = gt_normwise(&ref.softmax_max, &c->smax, 0);
        double es = gt_normwise(&ref.softmax_sum, &c->ssum, 0), e = fmax(eo, fmax(em, es));
        worst = fmax(worst, e);
        CHECK(e <= 1e-12, "%s: out %.3g max %.3g sum %.3g", what, eo, em, es);
    }
    gt_free(&ref.attention_out), gt_free(&ref.softmax_max), gt_free(&ref.softmax_sum);
    return true;
}

static void one_case(uint64_t seed, int id) {
    uint64_t rr = seed * 6151 + (uint64_t)id, *r = &rr;
    gt_case c;
    gt_opts o;
    gt_draw_start(&c, &o, r);
    const fr_dtype dts[5] = {FR_F32, FR_BF16, FR_F16, FR_E4M3FN, FR_E5M2};
    c.dt = dts[fr_test_below(r, 5)];
    int fp8 = c.dt == FR_E4M3FN || c.dt == FR_E5M2;
    c.B = fr_test_range(r, 1, 3);
    c.N2 = fr_test_range(r, 1, 2);
    c.N1 = c.N2 * fr_test_range(r, 1, 2);
    bool big = fr_test_below(r, 3) == 0; /* across GD_BR query rows and several GD_BC key blocks */
    c.S1 = big ? fr_test_range(r, 120, 140) : fr_test_range(r, 1, 40);
    c.S2 = big ? fr_test_range(r, 60, 200) : fr_test_range(r, 1, 70);
    c.Dk = fr_test_range(r, 1, 20);
    c.Dv = fr_test_range(r, 1, c.Dk);
    c.Dr = fr_test_range(r, 1, 6);
    for (int64_t b = 0; b < c.B; b++)
        c.lq[b] = fr_test_range(r, 0, c.S1), c.lkv[b] = c.lq[b] ? fr_test_range(r, 1, c.S2) : fr_test_range(r, 0, 4);
    c.p.scale_value = 1.0 / sqrt((double)c.Dk);
    c.strided = (int)fr_test_below(r, 2);
    if (!fp8) gt_draw_semantics(&c, &o, r, 30);
    else if (fr_test_below(r, 2)) o.sink = 1; /* fp8 with the sink and dequant scales */
    gt_draw_topk(&c, &o, r, 10);
    o.amp = 2.0;
    gt_make_inputs(&c, &o, r);
    char what[160];
    snprintf(what, sizeof what, "case %d (layout %s dtype %s mode %d pse %d topk %d drop %d sink %d rope %d)", id,
             fr_layout_name(c.L), fr_dtype_name(c.dt), o.mask ? c.p.sparse_mode : -1, o.pse ? c.p.pse_type : -1, o.topk,
             o.drop, o.sink, o.rope);
    compare(&c, what, r);
    gt_case_free(&c);
}

/* The refusals, and a call that asks for softmax_max only. */
static void edges(uint64_t seed) {
    uint64_t rr = seed, *r = &rr;
    gt_case c;
    gt_base_case(&c, FR_BNSD, 2, 2, 1, 9, 12, 8, 8);
    gt_opts o;
    memset(&o, 0, sizeof o);
    o.sink = 1;
    gt_make_inputs(&c, &o, r);
    gt_make_outputs(&c, 0, r);
    fr_error err;
    if (!CHECKED(gt_run_fwd(&c, 1, &err) == FR_OK, "edges: golden %s", err.msg)) {
        gt_case_free(&c);
        return;
    }
    fr_fwd_outputs ref = {like(&c.out, r), like(&c.smax, r), like(&c.ssum, r)};
    const struct {
        int64_t b, h, i0, n;
        const char *msg;
    } bad[] = {
        {2, 0, 0, 1, "golden rowref: batch 2 / head 0 out of range"},
        {-1, 0, 0, 1, "golden rowref: batch -1 / head 0 out of range"},
        {0, 2, 0, 1, "golden rowref: batch 0 / head 2 out of range"},
        {1, -1, 0, 1, "golden rowref: batch 1 / head -1 out of range"},
        {0, 0, 5, 5, "golden rowref: rows [5, 10) outside batch 0's 9 rows"},
        {1, 1, -1, 2, "golden rowref: rows [-1, 1) outside batch 1's 9 rows"},
        {0, 1, 3, -1, "golden rowref: rows [3, 2) outside batch 0's 9 rows"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        fr_status st = gd_rowref_fwd_rows(&c.p, &c.in, &ref, bad[k].b, bad[k].h, bad[k].i0, bad[k].n, &err);
        CHECK(st == FR_E_RANGE && !strcmp(err.msg, bad[k].msg), "refusal %zu: %s: '%s', want '%s'", k,
              fr_status_name(st), err.msg, bad[k].msg);
    }
    fr_params p = c.p;
    p.head_num = 3; /* query has 2 heads */
    fr_status st = gd_rowref_fwd_rows(&p, &c.in, &ref, 0, 0, 0, 1, &err);
    fr_status sv = fr_validate_fwd(&p, &c.in, NULL, NULL);
    CHECK(st != FR_OK && st == sv && strstr(err.msg, "head_num"), "invalid inputs: %s: %s", fr_status_name(st), err.msg);
    /* an empty range writes nothing */
    CHECK(gd_rowref_fwd_rows(&c.p, &c.in, &ref, 1, 1, 9, 0, &err) == FR_OK && isnan(gt_get_off(&ref.softmax_max, 0)),
          "empty range: %s", err.msg);
    /* softmax_max only: the others stay untouched (NaN) */
    fr_fwd_outputs only = {{0}, ref.softmax_max, {0}};
    for (int64_t b = 0; b < 2; b++)
        for (int64_t h = 0; h < 2; h++)
            CHECK(gd_rowref_fwd_rows(&c.p, &c.in, &only, b, h, 0, 9, &err) == FR_OK, "max only: %s", err.msg);
    double em = gt_normwise(&ref.softmax_max, &c.smax, 0);
    CHECK(em <= 1e-12, "max only: %.3g", em);
    CHECK(isnan(gt_get_off(&ref.attention_out, 0)) && isnan(gt_get_off(&ref.softmax_sum, 0)), "absent outputs written");
    gt_free(&ref.attention_out), gt_free(&ref.softmax_max), gt_free(&ref.softmax_sum);
    gt_case_free(&c);
}

/* Fixed cases the draws do not reach: compressed ALiBi with S > 1024 (rows above the stored 1024 read their diagonal
 * from row 0), and sparse mode 5 without a prefix, which is the user mask alone: the golden's outputs then equal mode
 * 1's with the same mask, value for value. */
static void fixed_cases(uint64_t seed) {
    uint64_t rr = seed ^ 0x5eed, *r = &rr;
    gt_case c;
    gt_opts o;
    gt_base_case(&c, FR_BSND, 1, 1, 1, 1100, 1100, 8, 8);
    memset(&o, 0, sizeof o);
    o.mask = 1, o.pse = 1, o.pse_shape = FR_GEN_PSE_COMP_B;
    c.p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, c.p.pse_type = FR_PSE_OUTER_MUL_ADD;
    gt_make_inputs(&c, &o, r);
    CHECK(compare(&c, "compressed pse S = 1100", r), "compressed pse S = 1100: refused");
    gt_case_free(&c);
    for (int strided = 0; strided < 2; strided++) {
        gt_base_case(&c, FR_BNSD, 2, 2, 1, 30, 45, 8, 8);
        c.strided = strided;
        memset(&o, 0, sizeof o);
        o.mask = 1, o.mask_shape = FR_GEN_MASK_BNSS, o.mask_density = 0.4;
        c.p.sparse_mode = FR_SPARSE_PREFIX; /* gt_make_inputs draws a prefix: removed below */
        gt_make_inputs(&c, &o, r);
        c.p.prefix = NULL, c.p.prefix_len = 0;
        if (!CHECKED(compare(&c, strided ? "mode 5 no prefix strided" : "mode 5 no prefix", r), "mode 5: refused")) {
            gt_case_free(&c);
            continue;
        }
        fr_tensor out5 = c.out, sum5 = c.ssum; /* mode 5's outputs, kept; compare makes new ones */
        gt_free(&c.smax);
        memset(&c.out, 0, sizeof c.out), memset(&c.ssum, 0, sizeof c.ssum);
        c.p.sparse_mode = FR_SPARSE_ALL_MASK;
        if (compare(&c, "mode 1, same mask", r))
            CHECK(gt_normwise(&out5, &c.out, 0) == 0.0 && gt_normwise(&sum5, &c.ssum, 0) == 0.0,
                  "mode 5 without a prefix differs from mode 1 (strided %d): out %.3g sum %.3g", strided,
                  gt_normwise(&out5, &c.out, 0), gt_normwise(&sum5, &c.ssum, 0));
        gt_free(&out5), gt_free(&sum5);
        gt_case_free(&c);
    }
}

int main(int argc, char **argv) {
    uint64_t seed = fr_test_seed(argc, argv, "test_golden_rowref_semantics");
    int n = argc > 2 ? atoi(argv[2]) : 60;
    for (int id = 0; id < n; id++) one_case(seed, id);
    edges(seed);
    fixed_cases(seed);
    printf("test_golden_rowref_semantics: %d cases (%d refused by validation), worst normwise %.3g\n", ran, skipped,
           worst);
    CHECK(ran >= n * 3 / 4, "too many cases refused: %d of %d", skipped, n);
    return fr_test_exit("test_golden_rowref_semantics");
}
