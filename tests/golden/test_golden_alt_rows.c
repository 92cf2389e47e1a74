/* The golden's alternative readings (golden_alt.h) checked against themselves: fr_golden_alt_differs walks the
 * structure only (mask, pse, top-k, prefix, lengths) and says where a reading changes which positions take part or
 * with which pse; fr_golden_fwd_alt runs the golden under it. On seeded draws built so that each reading applies
 * (mode 0 with a band, mode 5 with a prefix, TND modes 7 / 8 with an empty end batch, TND compressed ALiBi, ALiBi start
 * indices in TND mode 8, top-k lists with duplicates; masks contiguous or strided), for every reading:
 *   no position differs  ->  the golden's outputs under the reading are bit-identical to the decision's;
 *   a position differs   ->  the row it names (b, h, i) has another output, max or sum under the reading.
 * The decision-sensitivity test (tests/verify) runs the readings over the suites' cases; this one pins the walk's
 * answer to the golden's own outputs on small cases, row by row. Also: an unknown reading is refused by both, and
 * the readings' names. */
#include "common/check.h"
#include "core/problem.h"
#include "golden/golden_alt.h"
#include "golden/gt_case.h"

static int applied[FR_GALT_COUNT], differed[FR_GALT_COUNT];

static fr_tensor like(const fr_tensor *t, uint64_t *r) {
    fr_tensor o = gt_tensor(FR_F64, t->ndim, t->shape, 0, r);
    gt_fill_nan_raw(&o);
    return o;
}

static bool same_bits(const fr_tensor *a, const fr_tensor *b) {
    return !memcmp(a->data, b->data, (size_t)gt_numel(a) * sizeof(double));
}

/* Whether row (b, h, i) of the two output sets differs anywhere (out, max or sum; NaN = NaN). */
static bool row_differs(const gt_case *c, const fr_fwd_outputs *x, const fr_fwd_outputs *y, int64_t b, int64_t h,
                        int64_t i) {
    int64_t idx[FR_MAX_DIMS];
    for (int64_t d = 0; d < c->Dv; d++) {
        gt_lidx(c, 0, b, h, i, d, c->Dv, idx);
        double u = gt_get(&x->attention_out, idx), v = gt_get(&y->attention_out, idx);
        if (!(u == v || (isnan(u) && isnan(v)))) return true;
    }
    gt_sidx(c, b, h, i, 0, idx);
    double m0 = gt_get(&x->softmax_max, idx), m1 = gt_get(&y->softmax_max, idx);
    double l0 = gt_get(&x->softmax_sum, idx), l1 = gt_get(&y->softmax_sum, idx);
    return !(m0 == m1 || (isnan(m0) && isnan(m1))) || !(l0 == l1 || (isnan(l0) && isnan(l1)));
}

/* A draw for reading a. */
static void draw(gt_case *c, gt_opts *o, fr_golden_alt a, uint64_t *r) {
    memset(c, 0, sizeof *c);
    memset(o, 0, sizeof *o);
    c->p = fr_params_default();
    c->dt = FR_F32;
    c->B = fr_test_range(r, 1, 3);
    c->N2 = fr_test_range(r, 1, 2);
    c->N1 = c->N2 * fr_test_range(r, 1, 2);
    c->S1 = fr_test_range(r, 4, 30);
    c->S2 = fr_test_range(r, 4, 40);
    c->Dk = 8, c->Dv = 4;
    c->p.scale_value = 0.3;
    c->strided = (int)fr_test_below(r, 2);
    const fr_layout nontnd[4] = {FR_BSH, FR_SBH, FR_BSND, FR_BNSD};
    c->L = fr_test_below(r, 3) ? nontnd[fr_test_below(r, 4)] : FR_TND;
    for (int64_t b = 0; b < GT_MAXB; b++) c->lq[b] = fr_test_range(r, 1, c->S1), c->lkv[b] = fr_test_range(r, 1, c->S2);
    o->mask_density = 0.3;
    switch (a) {
    case FR_GALT_M0_MASK_ONLY:
        o->mask = 1, c->p.sparse_mode = FR_SPARSE_DEFAULT_MASK;
        c->p.pre_tokens = fr_test_range(r, 0, 6), c->p.next_tokens = fr_test_range(r, 0, 6);
        o->mask_shape = FR_GEN_MASK_SS + (int)fr_test_below(r, 4);
        if (fr_test_below(r, 3) == 0) o->topk = 1, c->W = fr_test_range(r, 2, 10); /* multiplicities, not masked() */
        break;
    case FR_GALT_M5_FORMULA_ONLY:
    case FR_GALT_M5_MASK_ONLY:
        o->mask = 1, c->p.sparse_mode = FR_SPARSE_PREFIX;
        if (c->L == FR_TND) c->L = FR_BNSD; /* mode 5 is not a TND mode (6 is) */
        o->mask_shape = FR_GEN_MASK_SS + (int)fr_test_below(r, 4);
        break;
    case FR_GALT_M78_END_BATCH:
    case FR_GALT_D15_EVERY_BATCH:
        c->L = FR_TND, c->B = 3, o->mask = 1;
        c->p.sparse_mode = fr_test_below(r, 2) ? FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND : FR_SPARSE_BAND_LEFT_UP_CAUSAL;
        if (a == FR_GALT_D15_EVERY_BATCH) c->p.sparse_mode = FR_SPARSE_BAND_LEFT_UP_CAUSAL;
        /* the band batch's rules (next <= 0, next >= S1 - S2, pre >= S2): every batch with S1 <= S2 */
        c->p.pre_tokens = 1000, c->p.next_tokens = 0;
        for (int64_t b = 0; b < c->B; b++) c->lkv[b] = c->lq[b] + fr_test_range(r, 0, 5);
        if (a == FR_GALT_M78_END_BATCH) /* the band's batch (last for 7, first for 8) without queries */
            c->lq[c->p.sparse_mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND ? 2 : 0] = 0;
        if (a == FR_GALT_D15_EVERY_BATCH) {
            o->pse = 1, c->p.pse_type = FR_PSE_INNER_MUL_ADD + (int)fr_test_below(r, 2);
            o->pse_shape = FR_GEN_PSE_SLOPES_BN + (int)fr_test_below(r, 2);
            c->p.q_start_idx = fr_test_range(r, 0, 4), c->p.kv_start_idx = c->p.q_start_idx + fr_test_range(r, 1, 3);
            c->p.next_tokens = 0;
            for (int64_t b = 0; b < c->B; b++) c->lkv[b] = c->lq[b];
        }
        break;
    case FR_GALT_D14_TOP_LEFT:
    case FR_GALT_D14_CLAMP: /* TND compressed ALiBi [B, N1, 1024, maxS2] under a causal pattern */
        c->L = FR_TND, o->mask = 1, o->pse = 1;
        c->p.sparse_mode = fr_test_below(r, 2) ? FR_SPARSE_RIGHT_DOWN_CAUSAL : FR_SPARSE_LEFT_UP_CAUSAL;
        c->p.pse_type = fr_test_below(r, 2) ? FR_PSE_OUTER_ADD_MUL : FR_PSE_OUTER_MUL_ADD;
        o->pse_shape = fr_test_below(r, 2) ? FR_GEN_PSE_COMP_B : FR_GEN_PSE_COMP_1;
        c->N1 = c->N2 = 1;
        for (int64_t b = 0; b < c->B; b++) c->lkv[b] = c->lq[b];
        break;
    case FR_GALT_D7_TOPK_ONCE:
        o->topk = 1, o->topk_kv = (int)fr_test_below(r, 2);
        c->W = fr_test_range(r, 2, 12);
        if (fr_test_below(r, 2)) o->mask = 1, c->p.sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL;
        break;
    default: break;
    }
    o->sink = fr_test_below(r, 4) == 0;
    o->amp = 1.5;
}

static void one(fr_golden_alt a, uint64_t seed, int id) {
    uint64_t rr = seed * 1299709 + (uint64_t)a * 1000 + (uint64_t)id, *r = &rr;
    gt_case c;
    gt_opts o;
    draw(&c, &o, a, r);
    gt_make_inputs(&c, &o, r);
    gt_make_outputs(&c, 0, r);
    if (a == FR_GALT_D14_TOP_LEFT && id % 2) { /* row 1022 moved off its diagonals: not Toeplitz, every column read */
        const fr_tensor *t = &c.in.real_shift;
        int64_t idx[4] = {0, 0, 1022, 0};
        for (idx[0] = 0; idx[0] < t->shape[0]; idx[0]++)
            for (idx[1] = 0; idx[1] < t->shape[1]; idx[1]++)
                for (idx[3] = 0; idx[3] < t->shape[3]; idx[3]++) gt_put(t, idx, gt_get(t, idx) + 0.25);
    }
    fr_problem pb;
    fr_error err;
    fr_status st = fr_problem_from_fwd(&c.p, &c.in, &pb, &err);
    if (!CHECKED(st == FR_OK, "%s draw %d: %s", fr_golden_alt_name(a), id, err.msg)) {
        gt_case_free(&c);
        return;
    }
    fr_golden_alt_diff d;
    st = fr_golden_alt_differs(&pb, &c.p, &c.in, a, &d, &err);
    fr_fwd_outputs o0 = {like(&c.out, r), like(&c.smax, r), like(&c.ssum, r)};
    fr_fwd_outputs o1 = {like(&c.out, r), like(&c.smax, r), like(&c.ssum, r)};
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    e.num_threads = 1;
    fr_error e0, e1;
    fr_status s0 = fr_golden_fwd_alt(&pb, &c.p, &c.in, &o0, &e, FR_GALT_NONE, &e0);
    fr_status s1 = fr_golden_fwd_alt(&pb, &c.p, &c.in, &o1, &e, a, &e1);
    if (CHECKED(st == FR_OK && s0 == FR_OK && s1 == FR_OK, "%s draw %d: walk %s, golden %s / %s", fr_golden_alt_name(a),
                id, err.msg, e0.msg, e1.msg)) {
        applied[a] += d.applies;
        differed[a] += d.count > 0;
        bool same = same_bits(&o0.attention_out, &o1.attention_out) && same_bits(&o0.softmax_max, &o1.softmax_max) &&
                    same_bits(&o0.softmax_sum, &o1.softmax_sum);
        if (d.count == 0) {
            CHECK(same, "%s draw %d: no position differs, but the outputs do", fr_golden_alt_name(a), id);
        } else {
            bool row = row_differs(&c, &o0, &o1, d.b, d.h, d.i);
            CHECK(d.applies && row, "%s draw %d: %lld positions differ, first (b %lld h %lld i %lld j %lld: %d -> %d), "
                  "but its row's outputs do not", fr_golden_alt_name(a), id, (long long)d.count, (long long)d.b,
                  (long long)d.h, (long long)d.i, (long long)d.j, d.m0, d.m1);
        }
    }
    gt_free(&o0.attention_out), gt_free(&o0.softmax_max), gt_free(&o0.softmax_sum);
    gt_free(&o1.attention_out), gt_free(&o1.softmax_max), gt_free(&o1.softmax_sum);
    gt_case_free(&c);
}

int main(int argc, char **argv) {
    uint64_t seed = fr_test_seed(argc, argv, "test_golden_alt_rows");
    int n = argc > 2 ? atoi(argv[2]) : 8;
    for (int a = 1; a < FR_GALT_COUNT; a++)
        for (int id = 0; id < n; id++) one((fr_golden_alt)a, seed, id);
    for (int a = 1; a < FR_GALT_COUNT; a++) {
        printf("  %-100.100s applied %d, differed %d of %d\n", fr_golden_alt_name((fr_golden_alt)a), applied[a],
               differed[a], n);
        /* each draw is built for its reading: it must apply, and (over the draws) change something; but the clamp
         * reading differs only on a diagonal the compressed tensor does not hold, and with maxS2 <= 1024 rows every
         * diagonal a causal pattern reads is held: there the readings must agree (the top-left reading too, on a
         * Toeplitz tensor; the odd draws' tensors are not) */
        bool agree = a == FR_GALT_D14_CLAMP;
        CHECK(applied[a] == n && (agree ? differed[a] == 0 : differed[a] > 0), "%s: applied %d, differed %d of %d draws",
              fr_golden_alt_name((fr_golden_alt)a), applied[a], differed[a], n);
    }
    /* an unknown reading */
    {
        gt_case c;
        gt_base_case(&c, FR_BNSD, 1, 1, 1, 3, 3, 4, 4);
        uint64_t r = seed;
        gt_opts o;
        memset(&o, 0, sizeof o);
        gt_make_inputs(&c, &o, &r);
        gt_make_outputs(&c, 0, &r);
        fr_problem pb;
        fr_error err;
        CHECK(fr_problem_from_fwd(&c.p, &c.in, &pb, &err) == FR_OK, "%s", err.msg);
        fr_golden_alt_diff d;
        fr_status st = fr_golden_alt_differs(&pb, &c.p, &c.in, FR_GALT_COUNT, &d, &err);
        CHECK(st == FR_E_INVALID_ARG && !strcmp(err.msg, "golden: alternative 9 unknown") && d.count == 0 && !d.applies,
              "differs: %s", err.msg);
        fr_fwd_outputs fo = {c.out, c.smax, c.ssum};
        fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
        st = fr_golden_fwd_alt(&pb, &c.p, &c.in, &fo, &e, (fr_golden_alt)-1, &err);
        CHECK(st == FR_E_INVALID_ARG && !strcmp(err.msg, "golden: alternative -1 unknown"), "fwd: %s", err.msg);
        /* a reading that does not apply to a dense case: nothing to walk */
        for (int a = 1; a < FR_GALT_COUNT; a++) {
            st = fr_golden_alt_differs(&pb, &c.p, &c.in, (fr_golden_alt)a, &d, &err);
            CHECK(st == FR_OK && !d.applies && d.count == 0, "dense case, %s: applies %d count %lld",
                  fr_golden_alt_name((fr_golden_alt)a), d.applies, (long long)d.count);
        }
        gt_case_free(&c);
    }
    /* cases with a mask or a pse that are not what a reading is about: it does not apply */
    {
        static const struct {
            fr_layout L;
            int mode, pse_type;
            fr_gen_pse shape;
            int64_t qs, ks;
        } na[] = {
            {FR_BNSD, FR_SPARSE_RIGHT_DOWN_CAUSAL, FR_PSE_OUTER_ADD_MUL, FR_GEN_PSE_BNSS, 0, 0}, /* full pse */
            {FR_BSH, FR_SPARSE_ALL_MASK, FR_PSE_OUTER_MUL_ADD, FR_GEN_PSE_BN1S, 0, 0},          /* row pse */
            {FR_TND, FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND, 0, FR_GEN_PSE_NONE, 0, 0}, /* its band batch has queries */
            {FR_TND, FR_SPARSE_BAND_LEFT_UP_CAUSAL, FR_PSE_INNER_MUL_ADD_SQRT, FR_GEN_PSE_SLOPES_BN, 3, 3}, /* equal starts */
        };
        for (size_t k = 0; k < sizeof na / sizeof na[0]; k++) {
            gt_case c;
            gt_base_case(&c, na[k].L, 2, 2, 1, 12, 12, 4, 4);
            c.lq[0] = c.lkv[0] = 5, c.lq[1] = c.lkv[1] = 9;
            uint64_t r = seed + k;
            gt_opts o;
            memset(&o, 0, sizeof o);
            o.mask = 1, o.pse = na[k].shape != FR_GEN_PSE_NONE, o.pse_shape = na[k].shape;
            c.p.sparse_mode = na[k].mode, c.p.pse_type = na[k].pse_type;
            c.p.q_start_idx = na[k].qs, c.p.kv_start_idx = na[k].ks;
            c.p.pre_tokens = 1000, c.p.next_tokens = 0;
            gt_make_inputs(&c, &o, &r);
            fr_problem pb;
            fr_error err;
            if (CHECKED(fr_problem_from_fwd(&c.p, &c.in, &pb, &err) == FR_OK, "not-applying case %zu: %s", k, err.msg))
                for (int a = 1; a < FR_GALT_COUNT; a++) {
                    fr_golden_alt_diff d;
                    fr_status st = fr_golden_alt_differs(&pb, &c.p, &c.in, (fr_golden_alt)a, &d, &err);
                    /* the mode-0/5 readings need modes 0/5; 7/8's need an empty end batch; D14 a compressed pse,
                     * D15 unequal starts, D7 a top-k list: none here */
                    CHECK(st == FR_OK && !d.applies && d.count == 0, "case %zu, %s: applies %d", k,
                          fr_golden_alt_name((fr_golden_alt)a), d.applies);
                }
            gt_case_free(&c);
        }
    }
    CHECK(!strcmp(fr_golden_alt_name(FR_GALT_NONE), "the project's decisions") &&
              !strcmp(fr_golden_alt_name(FR_GALT_COUNT), "?") && !strcmp(fr_golden_alt_name((fr_golden_alt)-2), "?"),
          "names");
    return fr_test_exit("test_golden_alt_rows");
}
