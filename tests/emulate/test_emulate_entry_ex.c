/* The emulator's entry points (emulate_entry.c) beyond fr_fwd / fr_bwd: fr_emulate_fwd_ex's o_lo residual,
 * fr_emulate_bwd_ex's dpsum sources (o_extra), and every refusal of both with its status and message; plus the
 * backward paths test_emulate_golden does not draw: exp base 2 with a sink, fp8 inputs with fp32 compute, keys of
 * length 0 (D8), all against the golden.
 *   o_lo (exact preset, fp64 compute): attention_out (bf16) + o_lo = the golden's fp64 output to 1e-12 relative,
 *     and o_lo is not all zero (the bf16 rounding really happened);
 *   dpsum: D_i from attention_in + o_lo (OUT_LO) and from the unrounded output (F32) agree to 1e-12 (fp64 compute)
 *     or 1e-5 (fp32 compute), and differ from D_i of the rounded output (OUT) by more than that;
 *   exp base 2 + sink (fp64 compute): the golden backward to 1e-12 (gradients normwise, floor 1e-3);
 *   fp8 e4m3fn + dequant scales, fp32 compute, dS in fp32: the golden backward to rel-L2 2e-5;
 *   key-tile permutations where a batch has no query or no key; P as the forward consumed it (fp32 compute);
 *   a NaN or an Inf in dY: non-finite gradients exactly where the golden's are (a regression test: an Inf dS was
 *     saturated to FLT_MAX with ds_dtype fp32). */
#include "common/check.h"
#include "golden/gt_case.h"

#include "flashref_emulate.h"

#include <float.h>

static fr_tensor like(const fr_tensor *t, fr_dtype dt, uint64_t *r) {
    fr_tensor o = gt_tensor(dt, t->ndim, t->shape, 0, r);
    if (dt == FR_F64 || dt == FR_F32) gt_fill_nan_raw(&o);
    return o;
}

static double rel_l2(const fr_tensor *a, const fr_tensor *r) {
    int64_t idx[FR_MAX_DIMS] = {0}, n = gt_numel(r);
    double e2 = 0, r2 = 0;
    for (int64_t e = 0; e < n; e++) {
        double av = gt_get(a, idx), rv = gt_get(r, idx);
        e2 += (av - rv) * (av - rv), r2 += rv * rv;
        for (int k = r->ndim - 1; k >= 0; k--) {
            if (++idx[k] < r->shape[k]) break;
            idx[k] = 0;
        }
    }
    return r2 > 0 ? sqrt(e2 / r2) : sqrt(e2);
}

/* A case with its golden forward and backward run (c.ain = the golden output rounded to the operator dtype). */
static bool make(gt_case *c, const gt_opts *o, uint64_t *r) {
    gt_make_inputs(c, o, r);
    gt_make_outputs(c, 1, r);
    fr_error err;
    fr_status st = gt_run_fwd(c, 1, &err);
    if (st == FR_OK) st = gt_run_bwd(c, 1, &err);
    return CHECKED(st == FR_OK, "golden: %s", err.msg);
}

static fr_bwd_inputs bwd_in(const gt_case *c) {
    fr_bwd_inputs bi;
    memset(&bi, 0, sizeof bi);
    bi.fwd = c->in, bi.dy = c->dy, bi.attention_in = c->ain, bi.softmax_max = c->smax, bi.softmax_sum = c->ssum;
    return bi;
}

typedef struct grads {
    fr_bwd_outputs o;
} grads;
static grads grads_like(const gt_case *c, uint64_t *r) {
    grads g;
    memset(&g, 0, sizeof g);
    g.o.dq = like(&c->dq, FR_F64, r), g.o.dk = like(&c->dk, FR_F64, r), g.o.dv = like(&c->dv, FR_F64, r);
    if (c->Dr) g.o.dq_rope = like(&c->dqr, FR_F64, r), g.o.dk_rope = like(&c->dkr, FR_F64, r);
    if (fr_tensor_present(&c->dsink)) g.o.dsink = like(&c->dsink, FR_F64, r);
    return g;
}
static void grads_free(grads *g) {
    gt_free(&g->o.dq), gt_free(&g->o.dk), gt_free(&g->o.dv), gt_free(&g->o.dq_rope), gt_free(&g->o.dk_rope);
    gt_free(&g->o.dsink);
}
/* The worst normwise error of g against the case's golden gradients (floor 1e-3: O(1) inputs). */
static double grads_err(const grads *g, const gt_case *c) {
    double e = gt_normwise(&g->o.dq, &c->dq, 1e-3);
    e = fmax(e, gt_normwise(&g->o.dk, &c->dk, 1e-3));
    e = fmax(e, gt_normwise(&g->o.dv, &c->dv, 1e-3));
    if (c->Dr) e = fmax(e, fmax(gt_normwise(&g->o.dq_rope, &c->dqr, 1e-3), gt_normwise(&g->o.dk_rope, &c->dkr, 1e-3)));
    if (fr_tensor_present(&c->dsink)) e = fmax(e, gt_normwise(&g->o.dsink, &c->dsink, 1e-3));
    return e;
}

#define REFUSED(call, want_st, want_msg)                                                                               \
    do {                                                                                                               \
        fr_status s_ = (call);                                                                                         \
        CHECK(s_ == (want_st) && strstr(err.msg, want_msg), "%s: %s '%s', want %s '%s'", #call, fr_status_name(s_),   \
              err.msg, fr_status_name(want_st), want_msg);                                                             \
    } while (0)

static void refusals(uint64_t *r) {
    gt_case c;
    gt_base_case(&c, FR_BSND, 1, 2, 1, 10, 300, 8, 8);
    gt_opts o;
    memset(&o, 0, sizeof o);
    if (!make(&c, &o, r)) return;
    fr_fwd_outputs fo = {like(&c.out, FR_F32, r), like(&c.smax, FR_F32, r), like(&c.ssum, FR_F32, r)};
    fr_numerics ex;
    fr_numerics_preset("exact", &ex, NULL);
    fr_error err;
    /* what the _ex entries check first */
    REFUSED(fr_emulate_fwd_ex(&c.p, &c.in, NULL, &ex, NULL, 1, &err), FR_E_NULL, "outputs: NULL");
    REFUSED(fr_emulate_fwd_ex(&c.p, &c.in, &fo, &ex, NULL, -1, &err), FR_E_INVALID_ARG, "num_threads: -1 < 0");
    fr_numerics bad = ex;
    bad.kv_tile = 0;
    REFUSED(fr_emulate_fwd_ex(&c.p, &c.in, &fo, &bad, NULL, 1, &err), FR_E_INVALID_ARG, "kv_tile");
    fr_params p3 = c.p;
    p3.head_num = 3;
    fr_status want = fr_validate_fwd(&p3, &c.in, NULL, &err);
    char wmsg[sizeof err.msg];
    snprintf(wmsg, sizeof wmsg, "%s", err.msg);
    REFUSED(fr_emulate_fwd_ex(&p3, &c.in, &fo, NULL, NULL, 1, &err), want, wmsg);
    fr_fwd_outputs fbad = fo;
    fbad.softmax_sum = fo.attention_out;
    REFUSED(fr_emulate_fwd_ex(&c.p, &c.in, &fbad, NULL, NULL, 1, &err), FR_E_OUTPUT, "softmax_sum: shape");
    /* o_lo: attention_out's shape, a float dtype, data */
    fr_tensor lo_shape = like(&c.smax, FR_F32, r), lo_int = like(&c.out, FR_I32, r), lo_null = like(&c.out, FR_F32, r);
    void *keep = lo_null.data;
    lo_null.data = NULL;
    REFUSED(fr_emulate_fwd_ex(&c.p, &c.in, &fo, &ex, &lo_shape, 1, &err), FR_E_OUTPUT,
            "o_lo: must have attention_out's shape and a float dtype (got fp32)");
    REFUSED(fr_emulate_fwd_ex(&c.p, &c.in, &fo, &ex, &lo_int, 1, &err), FR_E_OUTPUT,
            "o_lo: must have attention_out's shape and a float dtype (got int32)");
    REFUSED(fr_emulate_fwd_ex(&c.p, &c.in, &fo, &ex, &lo_null, 1, &err), FR_E_OUTPUT, "o_lo: must have");
    lo_null.data = keep;
    /* a permutation must have one entry per KV tile: 300 keys in tiles of 64 are 5 */
    static const int64_t perm3[3] = {2, 0, 1};
    fr_numerics pm = ex;
    pm.kv_tile = 64, pm.order = FR_EMU_ORDER_PERM, pm.perm = perm3, pm.perm_len = 3;
    REFUSED(fr_emulate_fwd_ex(&c.p, &c.in, &fo, &pm, NULL, 1, &err), FR_E_INVALID_ARG,
            "numerics.perm_len: 3, but batch 0 has 5 KV tiles");
    /* an absent o_lo is not written and not an error */
    fr_tensor absent;
    memset(&absent, 0, sizeof absent);
    CHECK(fr_emulate_fwd_ex(&c.p, &c.in, &fo, &ex, &absent, 0, &err) == FR_OK, "absent o_lo: %s", err.msg);
    CHECK(gt_normwise(&fo.attention_out, &c.out, 0) <= 1e-7, "absent o_lo: output");

    /* the backward's */
    fr_bwd_inputs bi = bwd_in(&c);
    grads g = grads_like(&c, r);
    REFUSED(fr_emulate_bwd_ex(&c.p, &bi, NULL, &ex, NULL, 1, &err), FR_E_NULL, "outputs: NULL");
    REFUSED(fr_emulate_bwd_ex(&c.p, &bi, &g.o, &ex, NULL, -2, &err), FR_E_INVALID_ARG, "num_threads: -2 < 0");
    REFUSED(fr_emulate_bwd_ex(&c.p, &bi, &g.o, &bad, NULL, 1, &err), FR_E_INVALID_ARG, "kv_tile");
    want = fr_validate_bwd(&p3, &bi, NULL, &err);
    snprintf(wmsg, sizeof wmsg, "%s", err.msg);
    REFUSED(fr_emulate_bwd_ex(&p3, &bi, &g.o, &ex, NULL, 1, &err), want, wmsg);
    grads gb = g;
    gb.o.dk = g.o.dq; /* dq's shape: 2 heads, not 1 */
    REFUSED(fr_emulate_bwd_ex(&c.p, &bi, &gb.o, &ex, NULL, 1, &err), FR_E_OUTPUT, "dk: shape");
    fr_numerics f32o = ex;
    f32o.dpsum = FR_EMU_DPSUM_F32;
    REFUSED(fr_emulate_bwd_ex(&c.p, &bi, &g.o, &f32o, NULL, 1, &err), FR_E_INVALID_ARG,
            "numerics.dpsum: fp32 O requested but o_extra is absent");
    REFUSED(fr_emulate_bwd_ex(&c.p, &bi, &g.o, &f32o, &absent, 1, &err), FR_E_INVALID_ARG,
            "numerics.dpsum: fp32 O requested but o_extra is absent");
    REFUSED(fr_emulate_bwd_ex(&c.p, &bi, &g.o, &f32o, &lo_shape, 1, &err), FR_E_SHAPE,
            "o_extra: must have attention_in's shape and a float dtype");
    fr_numerics olo = ex;
    olo.dpsum = FR_EMU_DPSUM_OUT_LO;
    REFUSED(fr_emulate_bwd_ex(&c.p, &bi, &g.o, &olo, &lo_int, 1, &err), FR_E_SHAPE, "o_extra: must have");
    lo_null.data = NULL;
    REFUSED(fr_emulate_bwd_ex(&c.p, &bi, &g.o, &olo, &lo_null, 1, &err), FR_E_SHAPE, "o_extra: must have");
    lo_null.data = keep;
    /* dpsum OUT ignores o_extra, whatever it is */
    CHECK(fr_emulate_bwd_ex(&c.p, &bi, &g.o, &ex, &lo_int, 1, &err) == FR_OK, "OUT with a bad o_extra: %s", err.msg);
    CHECK(grads_err(&g, &c) <= 1e-12, "OUT: %.3g", grads_err(&g, &c));
    /* the engine's availability check reads the numerics */
    fr_engine e = fr_engine_default(FR_ENGINE_EMULATE);
    CHECK(fr_engine_available(&e, &err) == FR_OK, "no numerics: %s", err.msg);
    e.numerics = &ex;
    CHECK(fr_engine_available(&e, &err) == FR_OK, "exact: %s", err.msg);
    e.numerics = &bad;
    REFUSED(fr_engine_available(&e, &err), FR_E_INVALID_ARG, "kv_tile");
    grads_free(&g);
    gt_free(&lo_shape), gt_free(&lo_int), gt_free(&lo_null);
    gt_free(&fo.attention_out), gt_free(&fo.softmax_max), gt_free(&fo.softmax_sum);
    gt_case_free(&c);
}

/* o_lo and the three dpsum sources, on bf16 inputs. */
static void residual(uint64_t *r, fr_dtype compute) {
    gt_case c;
    gt_base_case(&c, FR_BNSD, 2, 2, 2, 33, 70, 16, 16);
    c.dt = FR_BF16;
    gt_opts o;
    memset(&o, 0, sizeof o);
    o.amp = 2.0;
    if (!make(&c, &o, r)) return;
    fr_numerics nc;
    fr_numerics_preset("exact", &nc, NULL);
    nc.compute = compute;
    fr_fwd_outputs fo = {like(&c.out, FR_BF16, r), like(&c.smax, FR_F32, r), like(&c.ssum, FR_F32, r)};
    fr_tensor lo = like(&c.out, FR_F64, r), o64 = like(&c.out, FR_F64, r);
    fr_error err;
    const char *cn = fr_dtype_name(compute);
    if (!CHECKED(fr_emulate_fwd_ex(&c.p, &c.in, &fo, &nc, &lo, 2, &err) == FR_OK, "%s o_lo: %s", cn, err.msg)) return;
    int64_t idx[FR_MAX_DIMS] = {0}, n = gt_numel(&c.out), nonzero = 0;
    for (int64_t e = 0; e < n; e++) {
        double a = gt_get(&fo.attention_out, idx), l = gt_get(&lo, idx);
        gt_put(&o64, idx, a + l);
        nonzero += l != 0.0;
        for (int k = c.out.ndim - 1; k >= 0; k--) {
            if (++idx[k] < c.out.shape[k]) break;
            idx[k] = 0;
        }
    }
    double lim = compute == FR_F64 ? 1e-12 : 1e-6, eo = gt_normwise(&o64, &c.out, 0);
    printf("  %s compute: |attention_out + o_lo - golden| %.3g, %lld of %lld residuals nonzero\n", cn, eo,
           (long long)nonzero, (long long)n);
    CHECK(eo <= lim && nonzero > n / 2, "%s: out + o_lo vs golden %.3g, nonzero %lld of %lld", cn, eo,
          (long long)nonzero, (long long)n);
    /* the backward fed the bf16 output as attention_in, three ways to form D_i */
    fr_bwd_inputs bi = bwd_in(&c);
    bi.attention_in = fo.attention_out;
    grads g_out = grads_like(&c, r), g_lo = grads_like(&c, r), g_f32 = grads_like(&c, r);
    fr_numerics n_lo = nc, n_f32 = nc;
    n_lo.dpsum = FR_EMU_DPSUM_OUT_LO, n_f32.dpsum = FR_EMU_DPSUM_F32;
    bool ok = CHECKED(fr_emulate_bwd_ex(&c.p, &bi, &g_out.o, &nc, NULL, 2, &err) == FR_OK, "OUT: %s", err.msg);
    ok = ok && CHECKED(fr_emulate_bwd_ex(&c.p, &bi, &g_lo.o, &n_lo, &lo, 2, &err) == FR_OK, "OUT_LO: %s", err.msg);
    ok = ok && CHECKED(fr_emulate_bwd_ex(&c.p, &bi, &g_f32.o, &n_f32, &o64, 1, &err) == FR_OK, "F32: %s", err.msg);
    if (ok) {
        double same = fmax(gt_normwise(&g_lo.o.dq, &g_f32.o.dq, 1e-3), gt_normwise(&g_lo.o.dk, &g_f32.o.dk, 1e-3));
        double moved = fmax(gt_normwise(&g_out.o.dq, &g_f32.o.dq, 1e-3), gt_normwise(&g_out.o.dk, &g_f32.o.dk, 1e-3));
        double slim = compute == FR_F64 ? 1e-12 : 1e-5;
        printf("  %s compute: dq/dk with D from out + o_lo vs from fp32 O %.3g; from the rounded out %.3g\n", cn, same,
               moved);
        CHECK(same <= slim && moved > 10 * slim, "%s dpsum: lo vs f32 %.3g, out vs f32 %.3g", cn, same, moved);
    }
    grads_free(&g_out), grads_free(&g_lo), grads_free(&g_f32);
    gt_free(&lo), gt_free(&o64);
    gt_free(&fo.attention_out), gt_free(&fo.softmax_max), gt_free(&fo.softmax_sum);
    gt_case_free(&c);
}

/* Backward paths against the golden: exp base 2 with a sink (fp64), fp8 (fp32 compute), S2 = 0. */
static void backward_paths(uint64_t *r) {
    fr_error err;
    {
        gt_case c;
        gt_base_case(&c, FR_SBH, 2, 4, 2, 21, 45, 12, 10);
        gt_opts o;
        memset(&o, 0, sizeof o);
        o.sink = 1, o.mask = 1;
        c.p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL;
        if (make(&c, &o, r)) {
            fr_numerics nc;
            fr_numerics_preset("exact", &nc, NULL);
            nc.exp_base = FR_EMU_EXP_2;
            fr_bwd_inputs bi = bwd_in(&c);
            grads g = grads_like(&c, r);
            for (int bp = 0; bp < 2; bp++) {
                nc.bwd_p = (fr_emu_bwd_p)bp;
                CHECK(fr_emulate_bwd_ex(&c.p, &bi, &g.o, &nc, NULL, 2, &err) == FR_OK, "exp2: %s", err.msg);
                double e = grads_err(&g, &c);
                printf("  exp2 + sink, bwd_p %d (fp64): gradients vs golden %.3g\n", bp, e);
                CHECK(e <= 1e-12, "exp2 + sink bwd_p %d: %.3g", bp, e);
            }
            grads_free(&g);
        }
        gt_case_free(&c);
    }
    {
        gt_case c;
        gt_base_case(&c, FR_BSH, 1, 2, 1, 140, 300, 16, 16);
        c.dt = FR_E4M3FN;
        gt_opts o;
        memset(&o, 0, sizeof o);
        o.sink = 1;
        if (make(&c, &o, r)) {
            fr_numerics nc = fr_numerics_ideal(FR_F32); /* fp32 compute, nothing rounded before the gradients */
            nc.ds_dtype = FR_F32;
            fr_bwd_inputs bi = bwd_in(&c);
            grads g = grads_like(&c, r);
            CHECK(fr_emulate_bwd_ex(&c.p, &bi, &g.o, &nc, NULL, 2, &err) == FR_OK, "fp8: %s", err.msg);
            double e = fmax(rel_l2(&g.o.dq, &c.dq), fmax(rel_l2(&g.o.dk, &c.dk), rel_l2(&g.o.dv, &c.dv)));
            printf("  e4m3fn + scales (fp32 compute): gradients rel-L2 vs golden %.3g\n", e);
            CHECK(e <= 2e-5, "fp8 bwd: %.3g", e);
            grads_free(&g);
        }
        gt_case_free(&c);
    }
    {
        gt_case c;
        gt_base_case(&c, FR_BNSD, 2, 2, 1, 6, 0, 8, 8); /* D8: no keys, every row D1, gradients 0 */
        gt_opts o;
        memset(&o, 0, sizeof o);
        if (make(&c, &o, r)) {
            fr_bwd_inputs bi = bwd_in(&c);
            grads g = grads_like(&c, r);
            CHECK(fr_emulate_bwd_ex(&c.p, &bi, &g.o, NULL, NULL, 1, &err) == FR_OK, "S2 = 0: %s", err.msg);
            int64_t idx[4] = {1, 1, 5, 7};
            CHECK(gt_get(&g.o.dq, idx) == 0.0 && grads_err(&g, &c) == 0.0, "S2 = 0: dq %.3g, vs golden %.3g",
                  gt_get(&g.o.dq, idx), grads_err(&g, &c));
            grads_free(&g);
        }
        gt_case_free(&c);
    }
}

/* A key-tile permutation must match each batch's tile count, except a batch without queries (or without keys), which
 * has no row to order; with fp64 compute the order changes nothing beyond rounding: the golden to 1e-12. Then the
 * backward with P as the forward consumed it (bwd_p LOADED) in fp32 compute: the golden to rel-L2 1e-5. */
static void perm_and_loaded(uint64_t *r) {
    fr_error err;
    static const int64_t perm3[3] = {2, 0, 1}, perm1[1] = {0};
    {
        gt_case c;
        gt_base_case(&c, FR_TND, 3, 2, 1, 0, 0, 8, 8);
        c.lq[0] = 5, c.lkv[0] = 130; /* 3 tiles of 64 */
        c.lq[1] = 0, c.lkv[1] = 10;  /* 1 tile, no query */
        c.lq[2] = 7, c.lkv[2] = 150; /* 3 tiles */
        gt_opts o;
        memset(&o, 0, sizeof o);
        if (make(&c, &o, r)) {
            fr_numerics nc;
            fr_numerics_preset("exact", &nc, NULL);
            nc.kv_tile = 64, nc.order = FR_EMU_ORDER_PERM, nc.perm = perm3, nc.perm_len = 3;
            fr_fwd_outputs fo = {like(&c.out, FR_F64, r), like(&c.smax, FR_F64, r), like(&c.ssum, FR_F64, r)};
            fr_status st = fr_emulate_fwd_ex(&c.p, &c.in, &fo, &nc, NULL, 2, &err);
            double e = st == FR_OK ? fmax(gt_normwise(&fo.attention_out, &c.out, 0),
                                          gt_normwise(&fo.softmax_sum, &c.ssum, 0))
                                     : 1;
            printf("  TND permutation of 3 tiles, a batch of 1 tile without queries: %s, vs golden %.3g\n",
                   fr_status_name(st), e);
            CHECK(st == FR_OK && e <= 1e-12, "perm TND: %s %.3g", err.msg, e);
            gt_free(&fo.attention_out), gt_free(&fo.softmax_max), gt_free(&fo.softmax_sum);
        }
        gt_case_free(&c);
    }
    {
        gt_case c;
        gt_base_case(&c, FR_BSH, 2, 2, 2, 4, 0, 8, 8); /* no keys: no tile to order */
        gt_opts o;
        memset(&o, 0, sizeof o);
        if (make(&c, &o, r)) {
            fr_numerics nc;
            fr_numerics_preset("exact", &nc, NULL);
            nc.order = FR_EMU_ORDER_PERM, nc.perm = perm1, nc.perm_len = 1;
            fr_fwd_outputs fo = {like(&c.out, FR_F64, r), like(&c.smax, FR_F64, r), like(&c.ssum, FR_F64, r)};
            fr_status st = fr_emulate_fwd_ex(&c.p, &c.in, &fo, &nc, NULL, 1, &err);
            int64_t idx[4] = {1, 1, 3, 0}; /* batch 1, head 1, row 3: D1 */
            CHECK(st == FR_OK && gt_get(&fo.softmax_max, idx) == -FLT_MAX &&
                      gt_normwise(&fo.attention_out, &c.out, 0) == 0,
                  "perm S2 = 0: %s", err.msg);
            gt_free(&fo.attention_out), gt_free(&fo.softmax_max), gt_free(&fo.softmax_sum);
        }
        gt_case_free(&c);
    }
    {
        gt_case c;
        gt_base_case(&c, FR_BNSD, 1, 2, 1, 40, 300, 16, 16);
        gt_opts o;
        memset(&o, 0, sizeof o);
        o.sink = 1;
        if (make(&c, &o, r)) {
            fr_numerics nc = fr_numerics_ideal(FR_F32);
            nc.bwd_p = FR_EMU_P_LOADED, nc.kv_tile = 64;
            fr_bwd_inputs bi = bwd_in(&c);
            grads g = grads_like(&c, r);
            CHECK(fr_emulate_bwd_ex(&c.p, &bi, &g.o, &nc, NULL, 2, &err) == FR_OK, "loaded: %s", err.msg);
            double e = fmax(rel_l2(&g.o.dq, &c.dq), fmax(rel_l2(&g.o.dk, &c.dk), rel_l2(&g.o.dv, &c.dv)));
            printf("  bwd_p loaded, fp32 compute, 5 tiles: gradients rel-L2 vs golden %.3g\n", e);
            CHECK(e <= 1e-5, "loaded fp32: %.3g", e);
            grads_free(&g);
        }
        gt_case_free(&c);
    }
}

/* A NaN or an Inf in one dY element under a causal mask, fp64 and fp32 compute: the emulator's gradients are
 * non-finite exactly where the golden's are (the keys the row sees, its dq), finite and equal to 1e-12 / rel-L2 1e-5
 * elsewhere (a masked key never takes 0 * NaN). */
static void bad_dy(uint64_t *r) {
    for (int k = 0; k < 4; k++) {
        gt_case c;
        gt_base_case(&c, FR_BNSD, 1, 2, 1, 30, 30, 8, 8);
        gt_opts o;
        memset(&o, 0, sizeof o);
        o.mask = 1;
        c.p.sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL;
        gt_make_inputs(&c, &o, r);
        gt_make_outputs(&c, 1, r);
        int64_t at[4] = {0, 0, 7, 2};
        gt_put(&c.dy, at, k % 2 ? INFINITY : NAN);
        fr_error err;
        if (!CHECKED(gt_run_fwd(&c, 1, &err) == FR_OK && gt_run_bwd(&c, 1, &err) == FR_OK, "golden: %s", err.msg)) {
            gt_case_free(&c);
            continue;
        }
        fr_numerics nc;
        fr_numerics_preset("exact", &nc, NULL);
        if (k >= 2) nc = fr_numerics_ideal(FR_F32);
        fr_bwd_inputs bi = bwd_in(&c);
        grads g = grads_like(&c, r);
        if (CHECKED(fr_emulate_bwd_ex(&c.p, &bi, &g.o, &nc, NULL, 1, &err) == FR_OK, "%s", err.msg)) {
            const fr_tensor *a[3] = {&g.o.dq, &g.o.dk, &g.o.dv}, *gd[3] = {&c.dq, &c.dk, &c.dv};
            int64_t nbad = 0, mismatch = 0;
            double e2 = 0, r2 = 0;
            for (int t = 0; t < 3; t++) {
                int64_t idx[4] = {0}, n = gt_numel(gd[t]);
                for (int64_t e = 0; e < n; e++) {
                    double x = gt_get(a[t], idx), y = gt_get(gd[t], idx);
                    nbad += !isfinite(x);
                    if (isfinite(x) != isfinite(y)) mismatch++;
                    else if (isfinite(x)) e2 += (x - y) * (x - y), r2 += y * y;
                    for (int q = 3; q >= 0; q--) {
                        if (++idx[q] < gd[t]->shape[q]) break;
                        idx[q] = 0;
                    }
                }
            }
            double rel = sqrt(e2 / r2);
            /* dq row 7 (8), dk of keys 0..7 (8 x 8), dv column 2 of keys 0..7 (8) */
            bool ok = mismatch == 0 && nbad == 8 + 64 + 8 && rel <= (k >= 2 ? 1e-5 : 1e-12);
            printf("  %s in dy, %s compute: %lld non-finite gradients, %lld where the golden's differ, rest %.3g%s\n",
                   k % 2 ? "Inf" : "NaN", k >= 2 ? "fp32" : "fp64", (long long)nbad, (long long)mismatch, rel,
                   ok ? "" : "  FAIL");
            CHECK(ok, "bad dy %d", k);
        }
        grads_free(&g);
        gt_case_free(&c);
    }
}

int main(int argc, char **argv) {
    uint64_t seed = fr_test_seed(argc, argv, "test_emulate_entry_ex"), r = seed;
    refusals(&r);
    residual(&r, FR_F64);
    residual(&r, FR_F32);
    backward_paths(&r);
    perm_and_loaded(&r);
    bad_dy(&r);
    return fr_test_exit("test_emulate_entry_ex");
}
