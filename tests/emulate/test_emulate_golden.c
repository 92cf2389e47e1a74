/* The emulator with fp64 everywhere and threshold 0 ("exact") agrees with the golden engine to 1e-12 relative,
 * forward and backward, on a random grid over layouts, dtypes, GQA, masks and sparse modes, pse types, dropout,
 * sink, rope and top-k. Also: thread-count invariance of a rounding preset. */
#include "common/check.h"
#include "golden/gt_case.h"

#include "flashref_emulate.h"

static int ran = 0, skipped = 0;
static const char *preset = "exact";
static double worst_fwd = 0, worst_bwd = 0; /* argv[3]: another preset must FAIL this test (it has teeth) */

/* max |a - r| / max(max |r|, floor) over the finite elements; a NaN/Inf mismatch counts as Inf. The floor keeps
 * gradients that cancel to ~0 (e.g. every row has one key: dS = P (dP - D) = 0 up to rounding) from turning fp64
 * rounding noise into a large relative error; inputs are O(1), so typical gradients are O(1). */
static double normwise(const fr_tensor *a, const fr_tensor *r) { return gt_normwise(a, r, 0.0); }
static double gnorm(const fr_tensor *a, const fr_tensor *r) { return gt_normwise(a, r, 1e-3); }

static fr_tensor like(const fr_tensor *t, uint64_t *r) {
    fr_tensor o = gt_tensor(FR_F64, t->ndim, t->shape, 0, r);
    gt_fill_nan_raw(&o);
    return o;
}

/* A copy of t in dtype dt (rounded to nearest even): the operator takes dy and attention_in in its dtype. */
static fr_tensor conv(const fr_tensor *t, fr_dtype dt, uint64_t *r) {
    fr_tensor o = gt_tensor(dt, t->ndim, t->shape, 0, r);
    int64_t idx[FR_MAX_DIMS] = {0}, n = gt_numel(t);
    for (int64_t e = 0; e < n; e++) {
        gt_put(&o, idx, gt_get(t, idx));
        for (int k = t->ndim - 1; k >= 0; k--) {
            if (++idx[k] < t->shape[k]) break;
            idx[k] = 0;
        }
    }
    return o;
}

static fr_status run_bwd(gt_case *c, const fr_bwd_inputs *bi, const fr_engine *e, fr_error *err) {
    fr_bwd_outputs bo = {c->dq, c->dk, c->dv, c->dqr, c->dkr, c->dsink};
    return fr_bwd(&c->p, bi, &bo, e, err);
}

/* Alike golden/test_golden_isa.c:one_case and mutants/test_mutants.c:base_case: kept apart because each test draws
 * its own ranges (here 5 dtypes with hif8, S up to 40) in its own order, and the seed each prints must keep
 * reproducing its cases. Their common start (zeroed case, default params, the layout) is gt_case.c:gt_draw_start. */
static void one_case(uint64_t seed, int id) {
    uint64_t rr = seed * 7919 + (uint64_t)id, *r = &rr;
    gt_case c;
    gt_opts o;
    gt_draw_start(&c, &o, r);
    const fr_dtype dts[5] = {FR_F32, FR_BF16, FR_F16, FR_E4M3FN, FR_HIF8};
    c.dt = dts[fr_test_below(r, 5)];
    int fp8 = c.dt == FR_E4M3FN || c.dt == FR_HIF8;
    c.B = fr_test_range(r, 1, 3);
    c.N2 = fr_test_range(r, 1, 2);
    c.N1 = c.N2 * fr_test_range(r, 1, 3);
    c.S1 = fr_test_range(r, 1, 40);
    c.S2 = fr_test_range(r, 1, 40);
    c.Dk = fr_test_range(r, 1, 24);
    c.Dv = fr_test_range(r, 1, c.Dk);
    c.Dr = 8;
    for (int64_t b = 0; b < c.B; b++) c.lq[b] = fr_test_range(r, 0, 30), c.lkv[b] = fr_test_range(r, 1, 30);
    c.p.scale_value = 1.0 / sqrt((double)c.Dk);
    if (!fp8) {
        gt_draw_semantics(&c, &o, r, 20);
    }
    gt_draw_topk(&c, &o, r, 12);
    o.amp = 2.0;
    gt_make_inputs(&c, &o, r);
    gt_make_outputs(&c, 1, r);
    fr_error err;
    fr_status st = gt_run_fwd(&c, 1, &err);
    if (st != FR_OK) { /* a combination validation refuses: not this test's subject */
        skipped++;
        gt_case_free(&c);
        return;
    }
    fr_dtype opdt = fp8 ? FR_F16 : c.dt;
    fr_tensor dy = conv(&c.dy, opdt, r), ain = conv(&c.out, opdt, r);
    fr_bwd_inputs bi;
    memset(&bi, 0, sizeof bi);
    bi.fwd = c.in;
    bi.dy = dy;
    bi.attention_in = ain;
    bi.softmax_max = c.smax;
    bi.softmax_sum = c.ssum;
    fr_engine ge = fr_engine_default(FR_ENGINE_GOLDEN);
    st = run_bwd(&c, &bi, &ge, &err);
    CHECK(st == FR_OK, "case %d: golden bwd failed: %s", id, err.msg);
    if (st != FR_OK) {
        gt_free(&dy), gt_free(&ain);
        gt_case_free(&c);
        return;
    }
    fr_numerics nc;
    fr_numerics_preset(preset, &nc, NULL);
    nc.kv_tile = fr_test_range(r, 1, 16); /* the tiling must not matter in fp64 */
    nc.order = (fr_emu_order)fr_test_below(r, 2);
    nc.bwd_p = (fr_emu_bwd_p)fr_test_below(r, 2); /* P recomputed from the stats, or replayed as the forward used it */
    if (getenv("EMU_BWD_P")) nc.bwd_p = (fr_emu_bwd_p)atoi(getenv("EMU_BWD_P"));
    fr_tensor eo = like(&c.out, r), em = like(&c.smax, r), es = like(&c.ssum, r);
    fr_fwd_outputs fo = {eo, em, es};
    fr_engine e = fr_engine_default(FR_ENGINE_EMULATE);
    e.numerics = &nc;
    e.num_threads = (int)fr_test_range(r, 1, 2);
    st = fr_fwd(&c.p, &c.in, &fo, &e, &err);
    double ef = 0;
    CHECK(st == FR_OK, "case %d: emulate fwd: %s", id, err.msg);
    if (st == FR_OK) {
        double e1 = normwise(&eo, &c.out), e2 = normwise(&em, &c.smax), e3 = normwise(&es, &c.ssum);
        ef = fmax(e1, fmax(e2, e3));
        worst_fwd = fmax(worst_fwd, ef);
        CHECK(ef <= 1e-12, "case %d (layout %s dtype %s mode %d pse %d topk %d): fwd out %.3g max %.3g sum %.3g", id,
              fr_layout_name(c.L), fr_dtype_name(c.dt), c.p.sparse_mode, o.pse ? c.p.pse_type : -1, o.topk, e1, e2, e3);
    }
    /* backward on the same inputs (the golden's forward statistics, dy and O in the operator dtype) */
    fr_tensor gq = like(&c.dq, r), gk = like(&c.dk, r), gv = like(&c.dv, r), gqr = {0}, gkr = {0}, gs = {0};
    if (c.Dr) gqr = like(&c.dqr, r), gkr = like(&c.dkr, r);
    if (fr_tensor_present(&c.dsink)) gs = like(&c.dsink, r);
    fr_bwd_outputs bo = {gq, gk, gv, gqr, gkr, gs};
    st = fr_bwd(&c.p, &bi, &bo, &e, &err);
    CHECK(st == FR_OK, "case %d: emulate bwd: %s", id, err.msg);
    if (st == FR_OK) {
        double g1 = gnorm(&gq, &c.dq), g2 = gnorm(&gk, &c.dk), g3 = gnorm(&gv, &c.dv);
        double g4 = gnorm(&gqr, &c.dqr), g5 = gnorm(&gkr, &c.dkr), g6 = gnorm(&gs, &c.dsink);
        double eg = fmax(fmax(g1, g2), fmax(fmax(g3, g4), fmax(g5, g6)));
        worst_bwd = fmax(worst_bwd, eg);
        CHECK(eg <= 1e-12,
              "case %d (layout %s dtype %s mode %d pse %d drop %d sink %d rope %d topk %d): bwd dq %.3g dk %.3g dv "
              "%.3g dqr %.3g dkr %.3g dsink %.3g",
              id, fr_layout_name(c.L), fr_dtype_name(c.dt), c.p.sparse_mode, o.pse ? c.p.pse_type : -1, o.drop, o.sink,
              o.rope, o.topk, g1, g2, g3, g4, g5, g6);
    }
    ran++;
    gt_free(&eo), gt_free(&em), gt_free(&es), gt_free(&gq), gt_free(&gk), gt_free(&gv);
    gt_free(&gqr), gt_free(&gkr), gt_free(&gs), gt_free(&dy), gt_free(&ain);
    gt_case_free(&c);
}

/* A rounding preset gives bit-identical outputs for 1 and 2 threads (forward and backward). */
static void thread_invariance(uint64_t seed) {
    uint64_t rr = seed, *r = &rr;
    gt_case c;
    memset(&c, 0, sizeof c);
    gt_opts o;
    memset(&o, 0, sizeof o);
    c.p = fr_params_default();
    c.L = FR_BNSD, c.dt = FR_BF16, c.B = 2, c.N2 = 1, c.N1 = 2, c.S1 = 150, c.S2 = 300, c.Dk = 16, c.Dv = 16;
    c.p.scale_value = 0.25;
    gt_make_inputs(&c, &o, r);
    gt_make_outputs(&c, 1, r);
    fr_numerics nc;
    fr_numerics_preset("fa4-sm100-fwd-inference", &nc, NULL);
    fr_tensor out[2], gq[2], gk[2], gv[2];
    fr_error err;
    for (int t = 0; t < 2; t++) {
        out[t] = like(&c.out, r), gq[t] = like(&c.dq, r), gk[t] = like(&c.dk, r), gv[t] = like(&c.dv, r);
        fr_fwd_outputs fo = {out[t], c.smax, c.ssum};
        fr_engine e = fr_engine_default(FR_ENGINE_EMULATE);
        e.numerics = &nc;
        e.num_threads = t + 1;
        CHECK(fr_fwd(&c.p, &c.in, &fo, &e, &err) == FR_OK, "fwd: %s", err.msg);
        fr_bwd_inputs bi;
        memset(&bi, 0, sizeof bi);
        fr_tensor dyb = conv(&c.dy, FR_BF16, r), ob = conv(&out[t], FR_BF16, r);
        bi.fwd = c.in, bi.dy = dyb, bi.attention_in = ob, bi.softmax_max = c.smax, bi.softmax_sum = c.ssum;
        fr_bwd_outputs bo = {gq[t], gk[t], gv[t], {0}, {0}, {0}};
        CHECK(fr_bwd(&c.p, &bi, &bo, &e, &err) == FR_OK, "bwd: %s", err.msg);
        gt_free(&dyb), gt_free(&ob);
    }
    size_t n = (size_t)gt_numel(&c.out) * 8;
    bool differ = memcmp(out[0].data, out[1].data, n) || memcmp(gq[0].data, gq[1].data, (size_t)gt_numel(&c.dq) * 8) ||
                  memcmp(gk[0].data, gk[1].data, (size_t)gt_numel(&c.dk) * 8) ||
                  memcmp(gv[0].data, gv[1].data, (size_t)gt_numel(&c.dv) * 8);
    CHECK(!differ, "results differ between 1 and 2 threads");
    /* and the preset really rounds: it is not the golden */
    if (gt_run_fwd(&c, 1, &err) == FR_OK)
        CHECK(normwise(&out[0], &c.out) > 1e-5, "fa4 preset output equals the golden to %.3g (no rounding?)",
              normwise(&out[0], &c.out));
    for (int t = 0; t < 2; t++) gt_free(&out[t]), gt_free(&gq[t]), gt_free(&gk[t]), gt_free(&gv[t]);
    gt_case_free(&c);
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 20261129;
    int cases = argc > 2 ? atoi(argv[2]) : 150;
    if (argc > 3) preset = argv[3];
    printf("test_emulate_golden seed=%llu cases=%d\n", (unsigned long long)seed, cases);
    int only = getenv("EMU_CASE") ? atoi(getenv("EMU_CASE")) : -1;
    for (int k = 0; k < cases; k++)
        if (only < 0 || k == only) one_case(seed, k);
    thread_invariance(seed);
    printf("%d cases ran, %d refused by validation, %d failures; worst normwise error fwd %.3g, bwd %.3g\n", ran,
           skipped, failures, worst_fwd, worst_bwd);
    CHECK(ran >= cases / 3, "too few cases ran");
    return fr_test_exit("test_emulate_golden");
}
