/* The golden gives the same bits whatever product variant (each of GD_GEMM_VARIANTS, through fr_engine.isa) and
 * thread count runs it: seeded random cases of every layout, dtype and semantic option (masks,
 * sparse modes, pse, dropout, sink, rope, top-k, fp8), shapes below, at and above the 128-row / 64-key blocks,
 * forward and backward, compared bit for bit with the scalar variant on one thread. Inf/NaN planted in masked and
 * unmasked K/V rows of some cases exercise the skipping path. A variant the CPU lacks is SKIPPED loudly. */
#include "common/check.h"
#include "golden/golden_gemm.h"
#include "golden/gt_case.h"

static int skipped = 0, compared = 0;

#define NOUT 9
static void outputs(gt_case *c, fr_tensor **t) {
    fr_tensor *o[NOUT] = {&c->out, &c->smax, &c->ssum, &c->dq, &c->dk, &c->dv, &c->dqr, &c->dkr, &c->dsink};
    memcpy(t, o, sizeof o);
}
static size_t nbytes(const fr_tensor *t) {
    if (!fr_tensor_present(t)) return 0;
    size_t n = fr_dtype_size(t->dtype);
    for (int k = 0; k < t->ndim; k++) n *= (size_t)t->shape[k]; /* gt_tensor: strided tensors hold more, see below */
    return n;
}

/* Alike emulate/test_emulate_golden.c:one_case and mutants/test_mutants.c:base_case: kept apart because each test
 * draws its own ranges (here 4 dtypes and shapes across the 128 x 64 blocks) in its own order, and the seed each
 * prints must keep reproducing its cases. Their common start (zeroed case, default params, the layout) is
 * gt_case.c:gt_draw_start. */
static void one_case(uint64_t seed, int id, const fr_isa *isas, int nisa) {
    uint64_t rr = seed * 7919 + (uint64_t)id, *r = &rr;
    gt_case c;
    gt_opts o;
    gt_draw_start(&c, &o, r);
    const fr_dtype dts[4] = {FR_F32, FR_BF16, FR_F16, FR_E4M3FN};
    c.dt = dts[fr_test_below(r, 4)];
    int fp8 = c.dt == FR_E4M3FN;
    int big = fr_test_below(r, 3) == 0; /* crosses the 128-row and 64-key blocks */
    c.B = fr_test_range(r, 1, 2);
    c.N2 = fr_test_range(r, 1, 2);
    c.N1 = c.N2 * fr_test_range(r, 1, 2);
    c.S1 = big ? fr_test_range(r, 120, 300) : fr_test_range(r, 1, 40);
    c.S2 = big ? fr_test_range(r, 60, 200) : fr_test_range(r, 1, 40);
    c.Dk = fr_test_range(r, 1, 40);
    c.Dv = fr_test_range(r, 1, c.Dk);
    c.Dr = fr_test_range(r, 1, 9);
    for (int64_t b = 0; b < c.B; b++) c.lq[b] = fr_test_range(r, 0, c.S1), c.lkv[b] = fr_test_range(r, 1, c.S2);
    c.p.scale_value = 1.0 / sqrt((double)c.Dk);
    if (!fp8) gt_draw_semantics(&c, &o, r, 40);
    gt_draw_topk(&c, &o, r, 30);
    o.amp = 2.0;
    gt_make_inputs(&c, &o, r);
    if (fr_test_below(r, 4) == 0 && c.in.value.dtype == FR_F32) { /* an Inf and a NaN in V (masked or not) */
        int64_t n = gt_numel(&c.in.value), idx[FR_MAX_DIMS] = {0};
        for (int k = 0; k < 2; k++) {
            int64_t e = fr_test_below(r, n);
            for (int q = c.in.value.ndim - 1; q >= 0; q--) idx[q] = e % c.in.value.shape[q], e /= c.in.value.shape[q];
            gt_put(&c.in.value, idx, k ? NAN : INFINITY);
        }
    }
    gt_make_outputs(&c, 1, r);
    fr_error err;
    fr_tensor *now[NOUT];
    outputs(&c, now);
    void *ref[NOUT] = {0};
    fr_status st = gt_run_fwd_isa(&c, FR_ISA_SCALAR, 1, &err);
    if (st == FR_OK) st = gt_run_bwd_isa(&c, FR_ISA_SCALAR, 1, &err);
    if (st != FR_OK) { /* a combination validation refuses: not this test's subject */
        skipped++;
        gt_case_free(&c);
        return;
    }
    /* gt_tensor allocates the strided tensors' whole span: compare the span (padding is never written). */
    size_t span[NOUT];
    for (int q = 0; q < NOUT; q++) {
        span[q] = 0;
        if (!fr_tensor_present(now[q])) continue;
        int64_t last = 0;
        for (int k = 0; k < now[q]->ndim; k++) last += (now[q]->shape[k] - 1) * now[q]->strides[k];
        span[q] = now[q]->shape[0] == 0 || nbytes(now[q]) == 0 ? 0 : (size_t)(last + 1) * fr_dtype_size(now[q]->dtype);
        ref[q] = malloc(span[q] + 1);
        memcpy(ref[q], now[q]->data, span[q]);
    }
    for (int v = 0; v < nisa; v++)
        for (int threads = 1; threads <= 3; threads += 2) {
            if (isas[v] == FR_ISA_SCALAR && threads == 1) continue;
            st = gt_run_fwd_isa(&c, isas[v], threads, &err);
            if (st == FR_OK) st = gt_run_bwd_isa(&c, isas[v], threads, &err);
            if (!CHECKED(st == FR_OK, "case %d isa %d: %s", id, (int)isas[v], err.msg)) {
                continue;
            }
            for (int q = 0; q < NOUT; q++)
                CHECK(!span[q] || memcmp(ref[q], now[q]->data, span[q]) == 0,
                      "case %d (seed %llu): isa %d, %d threads: output %d differs from scalar, 1 thread", id,
                      (unsigned long long)seed, (int)isas[v], threads, q);
            compared++;
        }
    for (int q = 0; q < NOUT; q++) free(ref[q]);
    gt_case_free(&c);
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 20261201;
    printf("test_golden_isa: seed %llu\n", (unsigned long long)seed);
    const fr_isa all[] = { /* the golden's product variants, each asked for through fr_engine.isa */
#define GD_VAR(name, e) e,
        GD_GEMM_VARIANTS(GD_VAR)
#undef GD_VAR
    };
    enum { NALL = (int)(sizeof all / sizeof all[0]) };
    fr_isa isas[NALL];
    int nisa = 0;
    for (int k = 0; k < NALL; k++) {
        fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
        e.isa = all[k];
        fr_error err;
        if (fr_engine_available(&e, &err) == FR_OK)
            isas[nisa++] = all[k];
        else
            printf("SKIP: golden variant %s: %s\n", fr_isa_name(all[k]), err.msg);
    }
    for (int id = 0; id < 60; id++) one_case(seed, id, isas, nisa);
    printf("test_golden_isa: %d runs compared bit for bit, %d cases refused by validation (seed %llu)\n", compared,
           skipped, (unsigned long long)seed);
    CHECK(compared > 0, "nothing compared");
    return fr_test_exit("test_golden_isa");
}
