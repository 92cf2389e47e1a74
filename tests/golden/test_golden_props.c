/* Properties of the golden engine that need no second implementation:
 *  - softmax: stored max = the row max of the scaled scores, stored sum = sum exp(x - max) (scores recomputed here);
 *  - D1: fully masked rows by user mask, band (mode 0), sparse modes 3 and 4, S2 = 0, top-k all -1, with and without
 *    sink: out = 0, max = -FLT_MAX / sum = +FLT_MAX (sink: max = sink, sum = 1), zero gradients;
 *  - D8: every empty dimension, NaN-prefilled outputs fully written;
 *  - NaN/Inf in masked (or unlisted top-k) K/V rows leave every output bitwise unchanged;
 *  - a very negative finite score (-1e30 via pse) is a real score, not a mask;
 *  - bit-identical results for 1, 2 and 3 threads;
 *  - attention_out in the operator dtype is the fp64 result rounded once (half away, spec D3). */
#include "common/check.h"
#include "golden/gt_case.h"



static int run(gt_case *c, int threads, int bwd) {
    fr_error err;
    fr_status st = gt_run_fwd(c, threads, &err);
    if (st == FR_OK && bwd) st = gt_run_bwd(c, threads, &err);
    CHECK(st == FR_OK, "%s: %s", fr_status_name(st), err.msg);
    return st == FR_OK;
}

/* Every element of a tensor (logical) */
#define FOR_EACH(t, idx)                                                                                              \
    for (int64_t idx[FR_MAX_DIMS] = {0}, _n = gt_numel(t), _e = 0; _e < _n;                                           \
         _e++, gt_next_idx(t, idx))
static void gt_next_idx(const fr_tensor *t, int64_t *idx) {
    for (int k = t->ndim - 1; k >= 0; k--) {
        if (++idx[k] < t->shape[k]) break;
        idx[k] = 0;
    }
}
static int64_t count_nonfinite(const fr_tensor *t) {
    int64_t n = 0;
    if (!fr_tensor_present(t)) return 0;
    FOR_EACH(t, idx) n += !isfinite(gt_get(t, idx));
    return n;
}

/* ---- softmax properties ------------------------------------------------------------------------------------- */
static void test_softmax(uint64_t *r) {
    gt_case c;
    gt_opts o;
    memset(&o, 0, sizeof o);
    gt_base_case(&c, FR_BNSD, 2, 3, 3, 37, 70, 5, 4);
    c.p.sparse_mode = FR_SPARSE_BAND;
    c.p.pre_tokens = 40, c.p.next_tokens = -10; /* bottom-right band */
    c.p.pse_type = FR_PSE_OUTER_MUL_ADD;
    o.mask = 1, o.pse = 1, o.pse_shape = FR_GEN_PSE_BNSS, o.amp = 2.0;
    gt_make_inputs(&c, &o, r);
    gt_make_outputs(&c, 0, r);
    if (!run(&c, 2, 0)) return;
    const double sc = (double)(float)c.p.scale_value;
    double worst_m = 0, worst_l = 0;
    int64_t rows = 0;
    for (int64_t b = 0; b < c.B; b++)
        for (int64_t h = 0; h < c.N1; h++)
            for (int64_t i = 0; i < c.S1; i++) {
                double x[70], m = -INFINITY;
                int in[70], any = 0;
                for (int64_t j = 0; j < c.S2; j++) {
                    int64_t k = j - i, d2 = c.S2 - c.S1;
                    in[j] = !(k > c.p.next_tokens + d2 || -k > c.p.pre_tokens - d2);
                    if (!in[j]) continue;
                    double s = 0;
                    for (int64_t d = 0; d < c.Dk; d++)
                        s += gt_qkv(&c, &c.in.query, 0, b, h, i, d, c.Dk) * gt_qkv(&c, &c.in.key, 1, b, h, j, d, c.Dk);
                    int64_t pi[4] = {b, h, i, j};
                    x[j] = s * sc + gt_get(&c.in.real_shift, pi);
                    if (x[j] > m) m = x[j];
                    any = 1;
                }
                int64_t si[4];
                gt_sidx(&c, b, h, i, 0, si);
                double M = gt_get(&c.smax, si), Lsum = gt_get(&c.ssum, si);
                if (!any) {
                    CHECK(M == -FLT_MAX && Lsum == FLT_MAX, "softmax: empty row %lld max %g sum %g", (long long)i, M, Lsum);
                    continue;
                }
                double l = 0;
                for (int64_t j = 0; j < c.S2; j++)
                    if (in[j]) l += exp(x[j] - m);
                rows++;
                if (fabs(M - m) > worst_m) worst_m = fabs(M - m);
                if (fabs(Lsum - l) / l > worst_l) worst_l = fabs(Lsum - l) / l;
                /* the 8 copies agree */
                for (int64_t q = 1; q < 8; q++) {
                    int64_t sq[4];
                    gt_sidx(&c, b, h, i, q, sq);
                    CHECK(gt_get(&c.smax, sq) == M && gt_get(&c.ssum, sq) == Lsum, "softmax: copy %lld differs", (long long)q);
                }
                /* out is a convex combination of the taking-part V rows (no dropout) */
                for (int64_t d = 0; d < c.Dv; d++) {
                    double lo = INFINITY, hi = -INFINITY, o_ = gt_qkv(&c, &c.out, 0, b, h, i, d, c.Dv);
                    for (int64_t j = 0; j < c.S2; j++)
                        if (in[j]) {
                            double v = gt_qkv(&c, &c.in.value, 1, b, h, j, d, c.Dv);
                            lo = v < lo ? v : lo, hi = v > hi ? v : hi;
                        }
                    CHECK(o_ >= lo - 1e-12 && o_ <= hi + 1e-12, "softmax: out %g outside [%g, %g]", o_, lo, hi);
                }
            }
    CHECK(worst_m <= 1e-13 && worst_l <= 1e-13, "softmax: max err %g, sum rel err %g", worst_m, worst_l);
    printf("softmax properties: %lld rows, max |m - rowmax| %.2e, max rel |l - sum exp| %.2e\n", (long long)rows,
           worst_m, worst_l);
    gt_case_free(&c);
}

/* ---- D1 ----------------------------------------------------------------------------------------------------- */
/* Checks row (b, h, i): out = 0, stats D1 (or sink values), dq row = 0. */
static void expect_d1_row(const gt_case *c, int64_t b, int64_t h, int64_t i, const char *what) {
    int64_t si[4];
    gt_sidx(c, b, h, i, 0, si);
    double M = gt_get(&c->smax, si), L = gt_get(&c->ssum, si);
    if (fr_tensor_present(&c->in.sink)) {
        int64_t ih = h;
        double sk = gt_get(&c->in.sink, &ih);
        CHECK(M == sk && L == 1.0, "D1 %s: row %lld with sink: max %g (sink %g) sum %g", what, (long long)i, M, sk, L);
    } else {
        CHECK(M == -FLT_MAX && L == FLT_MAX, "D1 %s: row %lld max %g sum %g", what, (long long)i, M, L);
    }
    for (int64_t d = 0; d < c->Dv; d++) {
        double o = gt_qkv(c, &c->out, 0, b, h, i, d, c->Dv);
        CHECK(o == 0.0 && !signbit(o), "D1 %s: out[%lld][%lld] = %g", what, (long long)i, (long long)d, o);
    }
    if (fr_tensor_present(&c->dq))
        for (int64_t d = 0; d < c->Dk; d++) {
            double g = gt_qkv(c, &c->dq, 0, b, h, i, d, c->Dk);
            CHECK(g == 0.0, "D1 %s: dq[%lld][%lld] = %g", what, (long long)i, (long long)d, g);
        }
}

static void test_d1(uint64_t *r) {
    int64_t nrows = 0;
    for (int sink = 0; sink < 2; sink++) {
        /* (a) user mask: row 2 fully masked, mode 1 */
        gt_case c;
        gt_opts o;
        memset(&o, 0, sizeof o);
        gt_base_case(&c, FR_BSND, 1, 2, 1, 5, 6, 3, 3);
        c.p.sparse_mode = FR_SPARSE_ALL_MASK;
        o.mask = 1, o.mask_shape = FR_GEN_MASK_SS, o.mask_density = 0.0, o.sink = sink;
        gt_make_inputs(&c, &o, r);
        for (int64_t i = 0; i < c.S1; i++)
            for (int64_t j = 0; j < c.S2; j++) {
                int64_t mi[2] = {i, j};
                gt_put(&c.in.atten_mask, mi, i == 2 ? 1.0 : 0.0);
            }
        gt_make_outputs(&c, 1, r);
        if (run(&c, 2, 1))
            for (int64_t h = 0; h < c.N1; h++) expect_d1_row(&c, 0, h, 2, "user mask"), nrows++;
        /* the other rows are not D1 */
        int64_t si[4];
        gt_sidx(&c, 0, 0, 1, 0, si);
        CHECK(gt_get(&c.ssum, si) < 100.0, "D1 user mask: row 1 wrongly empty");
        gt_case_free(&c);

        /* (b) mode 0 band: pre = 0, next = 0 with S1 > S2: rows i >= S2 have no key */
        gt_base_case(&c, FR_BSH, 2, 2, 2, 7, 4, 2, 2);
        memset(&o, 0, sizeof o);
        c.p.sparse_mode = FR_SPARSE_DEFAULT_MASK, c.p.pre_tokens = 0, c.p.next_tokens = 0;
        o.mask = 1, o.mask_shape = FR_GEN_MASK_11SS, o.mask_density = 0.0, o.sink = sink;
        gt_make_inputs(&c, &o, r);
        for (int64_t i = 0; i < c.S1; i++)
            for (int64_t j = 0; j < c.S2; j++) {
                int64_t mi[4] = {0, 0, i, j};
                gt_put(&c.in.atten_mask, mi, 0.0);
            }
        gt_make_outputs(&c, 1, r);
        if (run(&c, 2, 1))
            for (int64_t b = 0; b < c.B; b++)
                for (int64_t h = 0; h < c.N1; h++)
                    for (int64_t i = c.S2; i < c.S1; i++) expect_d1_row(&c, b, h, i, "band"), nrows++;
        gt_case_free(&c);

        /* (c) mode 3 with S1 > S2: rows i < S1 - S2 fully masked */
        gt_base_case(&c, FR_SBH, 1, 2, 1, 6, 3, 2, 1);
        memset(&o, 0, sizeof o);
        c.p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL;
        o.mask = 1, o.sink = sink;
        gt_make_inputs(&c, &o, r);
        gt_make_outputs(&c, 1, r);
        if (run(&c, 2, 1))
            for (int64_t h = 0; h < c.N1; h++)
                for (int64_t i = 0; i < c.S1 - c.S2; i++) expect_d1_row(&c, 0, h, i, "mode 3"), nrows++;
        gt_case_free(&c);

        /* (d) mode 4 with next = -1, pre = 2, S1 = S2: row 0 has no key */
        gt_base_case(&c, FR_BNSD, 1, 1, 1, 5, 5, 2, 2);
        memset(&o, 0, sizeof o);
        c.p.sparse_mode = FR_SPARSE_BAND, c.p.pre_tokens = 2, c.p.next_tokens = -1;
        o.mask = 1, o.sink = sink;
        gt_make_inputs(&c, &o, r);
        gt_make_outputs(&c, 1, r);
        if (run(&c, 2, 1)) expect_d1_row(&c, 0, 0, 0, "mode 4"), nrows++;
        gt_case_free(&c);

        /* (e) S2 = 0 */
        gt_base_case(&c, FR_BNSD, 2, 2, 1, 3, 0, 2, 2);
        memset(&o, 0, sizeof o);
        o.sink = sink;
        gt_make_inputs(&c, &o, r);
        gt_make_outputs(&c, 1, r);
        if (run(&c, 2, 1))
            for (int64_t b = 0; b < c.B; b++)
                for (int64_t h = 0; h < c.N1; h++)
                    for (int64_t i = 0; i < c.S1; i++) expect_d1_row(&c, b, h, i, "S2 = 0"), nrows++;
        gt_case_free(&c);

        /* (f) top-k all -1 (and out-of-range) for row 1 */
        gt_base_case(&c, FR_TND, 2, 2, 2, 0, 0, 3, 2);
        memset(&o, 0, sizeof o);
        c.lq[0] = 3, c.lkv[0] = 4, c.lq[1] = 2, c.lkv[1] = 5, c.W = 3;
        o.topk = 1, o.sink = sink;
        gt_make_inputs(&c, &o, r);
        for (int64_t n = 0; n < 1; n++)
            for (int64_t w = 0; w < c.W; w++) {
                int64_t ti[2] = {1, w};
                gt_put(&c.in.topk_indices, ti, w == 0 ? 4.0 : -1.0); /* 4 = S2 of batch 0: out of range */
            }
        gt_make_outputs(&c, 1, r);
        if (run(&c, 2, 1))
            for (int64_t h = 0; h < c.N1; h++) expect_d1_row(&c, 0, h, 1, "top-k all -1"), nrows++;
        gt_case_free(&c);

        /* (g) top-k of width W = 0: no row lists a key */
        gt_base_case(&c, FR_BSH, 2, 2, 1, 3, 4, 2, 2);
        memset(&o, 0, sizeof o);
        c.W = 0;
        o.topk = 1, o.sink = sink;
        gt_make_inputs(&c, &o, r);
        gt_make_outputs(&c, 1, r);
        if (run(&c, 1, 1))
            for (int64_t b = 0; b < c.B; b++)
                for (int64_t h = 0; h < c.N1; h++)
                    for (int64_t i = 0; i < c.S1; i++) expect_d1_row(&c, b, h, i, "top-k W = 0"), nrows++;
        gt_case_free(&c);
    }
    printf("D1: %lld fully masked rows checked\n", (long long)nrows);
}

/* ---- D8 ----------------------------------------------------------------------------------------------------- */
static void test_d8(uint64_t *r) {
    struct {
        const char *what;
        fr_layout L;
        int64_t B, N1, N2, S1, S2, Dk, Dv;
    } e[] = {
        {"B = 0", FR_BSH, 0, 2, 1, 3, 4, 2, 2},    {"N1 = N2 = 0", FR_BNSD, 2, 0, 0, 3, 4, 2, 2},
        {"S1 = 0", FR_SBH, 2, 2, 2, 0, 4, 2, 2},   {"S2 = 0", FR_BSND, 2, 2, 1, 3, 0, 2, 2},
        {"Dv = 0", FR_BNSD, 1, 2, 2, 3, 4, 2, 0},  {"Dk = Dv = 0", FR_BNSD, 1, 2, 1, 3, 4, 0, 0},
        {"TND T = 0", FR_TND, 2, 2, 2, 0, 0, 2, 2},
    };
    for (size_t k = 0; k < sizeof e / sizeof e[0]; k++) {
        gt_case c;
        gt_opts o;
        memset(&o, 0, sizeof o);
        gt_base_case(&c, e[k].L, e[k].B, e[k].N1, e[k].N2, e[k].S1, e[k].S2, e[k].Dk, e[k].Dv);
        o.sink = e[k].N1 > 0;
        gt_make_inputs(&c, &o, r);
        gt_make_outputs(&c, 1, r);
        if (!run(&c, 2, 1)) {
            printf("  (D8 %s)\n", e[k].what);
            gt_case_free(&c);
            continue;
        }
        const fr_tensor *outs[] = {&c.out, &c.smax, &c.ssum, &c.dq, &c.dk, &c.dv, &c.dsink};
        const char *names[] = {"out", "softmax_max", "softmax_sum", "dq", "dk", "dv", "dsink"};
        for (int q = 0; q < 7; q++) {
            int64_t bad = count_nonfinite(outs[q]);
            CHECK(bad == 0, "D8 %s: %s has %lld unwritten (NaN) elements", e[k].what, names[q], (long long)bad);
        }
        printf("D8 %-12s ok (out %lld, stats %lld, dq %lld, dk %lld, dv %lld elements)\n", e[k].what,
               (long long)gt_numel(&c.out), (long long)gt_numel(&c.smax), (long long)gt_numel(&c.dq),
               (long long)gt_numel(&c.dk), (long long)gt_numel(&c.dv));
        gt_case_free(&c);
    }
}

/* ---- NaN / Inf in masked K/V -------------------------------------------------------------------------------- */
static int same_bits(const fr_tensor *a, const fr_tensor *b) {
    int64_t n = 0;
    FOR_EACH(a, idx) {
        double x = gt_get(a, idx), y = gt_get(b, idx);
        if (memcmp(&x, &y, sizeof x) != 0) n++;
    }
    return n == 0;
}
static void copy_outputs(const gt_case *c, fr_tensor *save) {
    const fr_tensor *src[] = {&c->out, &c->smax, &c->ssum, &c->dq, &c->dk, &c->dv, &c->dsink};
    for (int q = 0; q < 7; q++) {
        if (!fr_tensor_present(src[q])) {
            memset(&save[q], 0, sizeof save[q]);
            continue;
        }
        save[q] = gt_tensor(src[q]->dtype, src[q]->ndim, src[q]->shape, 0, NULL);
        FOR_EACH(src[q], idx) gt_put(&save[q], idx, gt_get(src[q], idx));
    }
}
static void test_nan_masked(uint64_t *r) {
    const double poison[3] = {NAN, INFINITY, -INFINITY};
    for (int variant = 0; variant < 2; variant++) {
        gt_case c;
        gt_opts o;
        memset(&o, 0, sizeof o);
        gt_base_case(&c, variant ? FR_BNSD : FR_BSH, 2, 2, 1, 5, 7, 3, 3);
        int64_t jm = 3; /* key 3: masked for every row (mode 1 column), or never listed in the top-k */
        if (variant == 0) {
            c.p.sparse_mode = FR_SPARSE_ALL_MASK;
            o.mask = 1, o.mask_shape = FR_GEN_MASK_B1SS, o.mask_density = 0.2;
        } else {
            c.W = 4;
            o.topk = 1;
        }
        o.sink = 1, o.drop = 1;
        c.p.keep_prob = 0.75;
        gt_make_inputs(&c, &o, r);
        if (variant == 0) {
            FOR_EACH(&c.in.atten_mask, idx) if (idx[3] == jm) gt_put(&c.in.atten_mask, idx, 1.0);
        } else {
            FOR_EACH(&c.in.topk_indices, idx) if (gt_get(&c.in.topk_indices, idx) == (double)jm)
                gt_put(&c.in.topk_indices, idx, -1.0);
        }
        gt_make_outputs(&c, 1, r);
        if (!run(&c, 2, 1)) continue;
        fr_tensor ref[7];
        copy_outputs(&c, ref);
        for (int p = 0; p < 3; p++) {
            for (int64_t b = 0; b < c.B; b++)
                for (int64_t d = 0; d < c.Dk; d++) {
                    int64_t idx[4];
                    gt_lidx(&c, 1, b, 0, jm, d, c.Dk, idx);
                    gt_put(&c.in.key, idx, poison[p]);
                    gt_lidx(&c, 1, b, 0, jm, d, c.Dv, idx);
                    gt_put(&c.in.value, idx, poison[(p + 1) % 3]);
                }
            if (!run(&c, 2, 1)) continue;
            const fr_tensor *now[] = {&c.out, &c.smax, &c.ssum, &c.dq, &c.dk, &c.dv, &c.dsink};
            for (int q = 0; q < 7; q++)
                if (fr_tensor_present(now[q]))
                    CHECK(same_bits(now[q], &ref[q]), "NaN/Inf in %s K/V (poison %d): output %d changed",
                          variant ? "unlisted top-k" : "masked", p, q);
        }
        for (int q = 0; q < 7; q++) gt_free(&ref[q]);
        gt_case_free(&c);
    }
    printf("NaN/Inf in masked and unlisted K/V rows: outputs bitwise unchanged\n");
}

/* ---- very negative finite scores ---------------------------------------------------------------------------- */
/* Alike test_golden_props.c:test_broadcast (and the other property tests): kept apart because only the opening is alike
 * (base_case, then each test's own sizes, options and checks). */
static void test_very_negative(uint64_t *r) {
    gt_case c;
    gt_opts o;
    memset(&o, 0, sizeof o);
    gt_base_case(&c, FR_BNSD, 1, 1, 1, 3, 4, 2, 2);
    c.p.pse_type = FR_PSE_OUTER_MUL_ADD;
    o.pse = 1, o.pse_shape = FR_GEN_PSE_BNSS;
    gt_make_inputs(&c, &o, r);
    /* row 1: every pse -1e30 (fp32), so every score is about -1e30: a real row, softmax over equal logits */
    FOR_EACH(&c.in.real_shift, idx) gt_put(&c.in.real_shift, idx, idx[2] == 1 ? -1e30 : 0.0);
    gt_make_outputs(&c, 0, r);
    if (!run(&c, 1, 0)) return;
    int64_t si[4];
    gt_sidx(&c, 0, 0, 1, 0, si);
    double M = gt_get(&c.smax, si), L = gt_get(&c.ssum, si);
    CHECK(M < -9e29 && M > -1.1e30 && M != -FLT_MAX, "-1e30: max %g", M);
    CHECK(L == (double)c.S2, "-1e30: sum %g, expected %lld equal logits", L, (long long)c.S2);
    for (int64_t d = 0; d < c.Dv; d++) {
        double mean = 0;
        for (int64_t j = 0; j < c.S2; j++) mean += gt_qkv(&c, &c.in.value, 1, 0, 0, j, d, c.Dv);
        mean /= (double)c.S2;
        double o_ = gt_qkv(&c, &c.out, 0, 0, 0, 1, d, c.Dv);
        CHECK(fabs(o_ - mean) <= 1e-15, "-1e30: out %g, expected the mean of V %g", o_, mean);
    }
    printf("very negative finite scores (-1e30 via pse): a real row (max %g, sum %g)\n", M, L);
    gt_case_free(&c);
}

/* ---- thread counts ------------------------------------------------------------------------------------------ */
static void test_threads(uint64_t *r) {
    for (int variant = 0; variant < 2; variant++) {
        gt_case c;
        gt_opts o;
        memset(&o, 0, sizeof o);
        if (variant == 0) {
            gt_base_case(&c, FR_BSH, 2, 4, 2, 150, 200, 8, 6);
            c.p.sparse_mode = FR_SPARSE_DEFAULT_MASK, c.p.pre_tokens = 120, c.p.next_tokens = 30, c.p.keep_prob = 0.9;
            o.mask = 1, o.mask_shape = FR_GEN_MASK_BNSS, o.mask_density = 0.1, o.drop = 1, o.sink = 1, o.pse = 1;
            o.pse_shape = FR_GEN_PSE_BN1S;
            c.p.pse_type = FR_PSE_OUTER_ADD_MUL;
        } else {
            gt_base_case(&c, FR_TND, 3, 2, 1, 0, 0, 6, 5);
            c.lq[0] = 130, c.lkv[0] = 140, c.lq[1] = 0, c.lkv[1] = 3, c.lq[2] = 70, c.lkv[2] = 129;
            c.Dr = 3, c.W = 40;
            c.p.sparse_mode = FR_SPARSE_PREFIX_COMPRESS;
            o.mask = 1, o.rope = 1, o.topk = 1, o.topk_kv = 1, o.sink = 1;
        }
        gt_make_inputs(&c, &o, r);
        gt_make_outputs(&c, 1, r);
        fr_tensor ref[7];
        if (!run(&c, 1, 1)) continue;
        copy_outputs(&c, ref);
        for (int t = 2; t <= 3; t++) {
            gt_free(&c.out), gt_free(&c.smax), gt_free(&c.ssum);
            gt_make_outputs(&c, 0, r); /* fresh NaN forward outputs; gradients are overwritten */
            if (!run(&c, t, 1)) continue;
            const fr_tensor *now[] = {&c.out, &c.smax, &c.ssum, &c.dq, &c.dk, &c.dv, &c.dsink};
            for (int q = 0; q < 7; q++)
                if (fr_tensor_present(now[q]))
                    CHECK(same_bits(now[q], &ref[q]), "threads: %d threads differ from 1 in output %d (variant %d)", t,
                          q, variant);
        }
        for (int q = 0; q < 7; q++) gt_free(&ref[q]);
        gt_case_free(&c);
    }
    printf("thread counts 1, 2, 3: bit-identical forward and backward\n");
}

/* ---- output dtype -------------------------------------------------------------------------------------------- */
static void test_out_dtype(uint64_t *r) {
    const fr_dtype dts[3] = {FR_F16, FR_BF16, FR_HIF8};
    for (int k = 0; k < 3; k++) {
        gt_case c;
        gt_opts o;
        memset(&o, 0, sizeof o);
        gt_base_case(&c, FR_BSND, 1, 2, 2, 9, 11, 4, 4);
        c.dt = dts[k];
        o.amp = 3.0;
        gt_make_inputs(&c, &o, r);
        gt_make_outputs(&c, 0, r);
        if (!run(&c, 2, 0)) continue;
        fr_dtype od = gt_op_dtype(&c);
        fr_tensor o16 = gt_tensor(od, c.out.ndim, c.out.shape, 1, r);
        fr_fwd_outputs fo = {o16, c.smax, c.ssum};
        fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
        fr_error err;
        fr_status st = fr_fwd(&c.p, &c.in, &fo, &e, &err);
        CHECK(st == FR_OK, "out dtype: %s", err.msg);
        int64_t bad = 0;
        FOR_EACH(&c.out, idx) {
            float f = (float)gt_get(&c.out, idx);
            uint16_t want = od == FR_BF16 ? fr_f32_to_bf16(f, FR_ROUND_HALF_AWAY, FR_SAT)
                                          : fr_f32_to_f16(f, FR_ROUND_HALF_AWAY, FR_SAT);
            bad += ((const uint16_t *)o16.data)[gt_off(&o16, idx)] != want;
        }
        CHECK(bad == 0, "out dtype %s: %lld elements not the rounded fp64 result", fr_dtype_name(od), (long long)bad);
        gt_free(&o16);
        gt_case_free(&c);
    }
    printf("attention_out in fp16 / bf16 (and fp16 for hif8 inputs): the fp64 result rounded half away\n");
}

/* ---- broadcast (stride 0) views -------------------------------------------------------------------------------- */
/* K and V with batch stride 0 (every batch the same rows) and a [B,N1,S1,S2] mask with stride 0 over b and h give the
 * same bits as the same values materialised. */
/* Alike test_golden_props.c:test_very_negative (and the other property tests): kept apart because only the opening is
 * alike (base_case, then each test's own sizes, options and checks). */
static void test_broadcast(uint64_t *r) {
    gt_case c;
    gt_opts o;
    memset(&o, 0, sizeof o);
    gt_base_case(&c, FR_BNSD, 3, 2, 1, 6, 9, 4, 3);
    c.p.sparse_mode = FR_SPARSE_ALL_MASK;
    o.mask = 1, o.mask_shape = FR_GEN_MASK_BNSS, o.mask_density = 0.3;
    gt_make_inputs(&c, &o, r);
    /* materialise: batch 0's K/V rows and (b=0, h=0) mask copied everywhere */
    FOR_EACH(&c.in.key, idx) {
        int64_t i0[4] = {0, idx[1], idx[2], idx[3]};
        gt_put(&c.in.key, idx, gt_get(&c.in.key, i0));
    }
    FOR_EACH(&c.in.value, idx) {
        int64_t i0[4] = {0, idx[1], idx[2], idx[3]};
        gt_put(&c.in.value, idx, gt_get(&c.in.value, i0));
    }
    FOR_EACH(&c.in.atten_mask, idx) {
        int64_t i0[4] = {0, 0, idx[2], idx[3]};
        gt_put(&c.in.atten_mask, idx, gt_get(&c.in.atten_mask, i0));
    }
    gt_make_outputs(&c, 1, r);
    if (!run(&c, 1, 1)) return;
    fr_tensor ref[7];
    copy_outputs(&c, ref);
    fr_tensor kf = c.in.key, vf = c.in.value, mf = c.in.atten_mask;
    c.in.key.strides[0] = 0, c.in.value.strides[0] = 0;
    c.in.atten_mask.strides[0] = 0, c.in.atten_mask.strides[1] = 0;
    /* the backward writes dk/dv per batch: they stay full tensors */
    if (run(&c, 2, 1)) {
        const fr_tensor *now[] = {&c.out, &c.smax, &c.ssum, &c.dq, &c.dk, &c.dv, &c.dsink};
        for (int q = 0; q < 7; q++)
            if (fr_tensor_present(now[q]))
                CHECK(same_bits(now[q], &ref[q]), "broadcast: output %d differs from the materialised inputs", q);
        printf("stride-0 (broadcast) K, V and mask: same bits as materialised\n");
    }
    c.in.key = kf, c.in.value = vf, c.in.atten_mask = mf;
    for (int q = 0; q < 7; q++) gt_free(&ref[q]);
    gt_case_free(&c);
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 4242u;
    printf("test_golden_props: seed %llu\n", (unsigned long long)seed);
    uint64_t r = seed;
    test_softmax(&r);
    test_d1(&r);
    test_d8(&r);
    test_nan_masked(&r);
    test_very_negative(&r);
    test_threads(&r);
    test_out_dtype(&r);
    test_broadcast(&r);
    printf("test_golden_props: seed %llu\n", (unsigned long long)seed);
    return fr_test_exit("test_golden_props");
}
