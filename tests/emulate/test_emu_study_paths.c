/* The emulator studies' case builder and runs (src/study/emu_study.c) at tiny sizes, the paths test_order_invariance
 * and the API's study checks leave out:
 *   - fr_mla_case_make refuses nkeys outside 1..W, sizes beyond int32 key indices and sizes whose buffers overflow,
 *     each with its status and message;
 *   - a case without rope (Dr = 0): no rope tensors, and the forward / backward run without them;
 *   - every slot arrangement keeps each row's key set: self first, self last, self at a slot (clamped to the row's
 *     valid count), a random permutation, a scatter over W slots (and a full row, where nothing can scatter);
 *     rows made invalid list no key;
 *   - fr_mla_order_for with a reverse tile order swaps first and last;
 *   - the emulated backward with the fp32 output for D (FR_EMU_DPSUM_F32) agrees with the fp64 reference as closely
 *     as with the o_lo fix;
 *   - a negative thread count stops the golden and emulated runs and both studies with its status; the seqlen
 *     study's argument and size checks called directly. */
#include "common/check.h"
#include "core/core.h"
#include "study/emu_study.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_refusals(void) {
    fr_mla_case mc;
    fr_error err;
    CHECK(fr_mla_case_make(&mc, 8, 4, 2, 16, 8, 5, 0.0, 1, &err) == FR_E_INVALID_ARG &&
              strstr(err.msg, "mla case: T 8 W 4 H 2 Dl 16 Dr 8 nkeys 5"),
          "nkeys > W: %s", err.msg);
    CHECK(fr_mla_case_make(&mc, 8, 4, 2, 16, 8, 0, 0.0, 1, &err) == FR_E_INVALID_ARG && strstr(err.msg, "nkeys 0"),
          "nkeys 0: %s", err.msg);
    CHECK(fr_mla_case_make(&mc, 8, 4, 2, 16, -1, 4, 0.0, 1, &err) == FR_E_INVALID_ARG && strstr(err.msg, "Dr -1"),
          "Dr -1: %s", err.msg);
    CHECK(fr_mla_case_make(&mc, (int64_t)INT32_MAX + 1, 4, 1, 1, 0, 4, 0.0, 1, &err) == FR_E_INVALID_ARG &&
              strstr(err.msg, "beyond int32 key indices"),
          "T past int32: %s", err.msg);
    CHECK(fr_mla_case_make(&mc, 1 << 20, 4, (int64_t)1 << 40, 16, 0, 4, 0.0, 1, &err) == FR_E_OVERFLOW &&
              strstr(err.msg, "sizes overflow"),
          "T x H overflow: %s", err.msg);
    CHECK(fr_mla_case_make(&mc, INT32_MAX, INT32_MAX, 1, 1, 0, 4, 0.0, 1, &err) == FR_E_OVERFLOW &&
              strstr(err.msg, "sizes overflow"),
          "T x W x 4 overflow: %s", err.msg);
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Row t's listed keys (slots != -1), sorted, equal the case's key set of row t; *self_at: the slot of key t. */
static bool row_ok(const fr_mla_case *mc, int64_t t, int64_t *self_at) {
    const int32_t *s = (const int32_t *)mc->in.topk_indices.data + t * mc->W;
    int32_t got[64], want[64];
    int64_t ng = 0, nv = mc->nvalid[t];
    *self_at = -1;
    for (int64_t k = 0; k < mc->W; k++) {
        if (s[k] < 0) continue;
        if (s[k] == t) *self_at = k;
        got[ng++] = s[k];
    }
    if (ng != nv) return false;
    for (int64_t k = 0; k < nv; k++) want[k] = mc->keys[t * mc->nkeys + k];
    qsort(got, (size_t)ng, sizeof *got, cmp_i32);
    qsort(want, (size_t)nv, sizeof *want, cmp_i32);
    return !memcmp(got, want, sizeof(int32_t) * (size_t)nv);
}

static void test_arrangements(void) {
    fr_mla_case mc;
    fr_error err;
    const int64_t T = 12, W = 8;
    if (!CHECKED(fr_mla_case_make(&mc, T, W, 2, 16, 0, 6, 0.5, 3, &err) == FR_OK, "%s", err.msg)) return;
    CHECK(mc.in.query_rope.data == NULL && mc.in.key_rope.data == NULL && mc.in.query_rope.ndim == 0,
          "Dr 0: rope tensors present");
    fr_mla_case_invalidate_rows(&mc, 0); /* none */
    int64_t valid = 0;
    for (int64_t t = 0; t < T; t++) valid += mc.nvalid[t] > 0;
    CHECK(valid == T, "invalidate 0 removed rows");
    fr_mla_case_invalidate_rows(&mc, 5); /* rows 4 and 9 */
    CHECK(mc.nvalid[4] == 0 && mc.nvalid[9] == 0 && mc.nvalid[5] == 6 && mc.nvalid[2] == 3, "nvalid %lld %lld %lld",
          (long long)mc.nvalid[4], (long long)mc.nvalid[5], (long long)mc.nvalid[2]);
    static const struct {
        fr_mla_order order;
        uint64_t arg;
    } kOrders[] = {{FR_MLA_SELF_SLOT0, 0}, {FR_MLA_SELF_LAST, 0}, {FR_MLA_SELF_AT, 2},
                   {FR_MLA_SELF_AT, 100}, {FR_MLA_RANDOM, 7},   {FR_MLA_SCATTER, 9}};
    for (size_t k = 0; k < sizeof kOrders / sizeof kOrders[0]; k++) {
        fr_mla_case_arrange(&mc, kOrders[k].order, kOrders[k].arg);
        int bad = 0, spread = 0;
        for (int64_t t = 0; t < T; t++) {
            int64_t at;
            if (!row_ok(&mc, t, &at)) bad++;
            int64_t nv = mc.nvalid[t];
            if (nv == 0) {
                bad += at != -1;
                continue;
            }
            switch (kOrders[k].order) {
            case FR_MLA_SELF_SLOT0: bad += at != 0; break;
            case FR_MLA_SELF_LAST: bad += at != nv - 1; break;
            case FR_MLA_SELF_AT: bad += at != ((int64_t)kOrders[k].arg < nv - 1 ? (int64_t)kOrders[k].arg : nv - 1); break;
            default: break;
            }
            const int32_t *s = (const int32_t *)mc.in.topk_indices.data + t * W;
            for (int64_t q = 0; q < nv; q++) spread += s[q] < 0; /* a hole among the first nv slots */
        }
        CHECK(bad == 0, "order %d (arg %llu): %d rows wrong", (int)kOrders[k].order,
              (unsigned long long)kOrders[k].arg, bad);
        if (kOrders[k].order == FR_MLA_SCATTER) CHECK(spread > 0, "scatter left every key in the first slots");
        if (kOrders[k].order != FR_MLA_SCATTER) CHECK(spread == 0, "order %d left holes", (int)kOrders[k].order);
    }
    fr_mla_case_free(&mc);
    /* Full rows (nkeys = W): a scatter is a permutation only. */
    if (!CHECKED(fr_mla_case_make(&mc, 10, 4, 1, 8, 4, 4, 0.0, 4, &err) == FR_OK, "%s", err.msg)) return;
    fr_mla_case_arrange(&mc, FR_MLA_SCATTER, 5);
    int bad = 0;
    for (int64_t t = 0; t < 10; t++) {
        int64_t at;
        bad += !row_ok(&mc, t, &at);
    }
    CHECK(bad == 0, "full rows scattered wrong: %d", bad);
    fr_mla_case_free(&mc);

    fr_numerics nc;
    CHECK(fr_numerics_preset("fa4-sm100-fwd-inference", &nc, &err) == FR_OK, "%s", err.msg);
    nc.order = FR_EMU_ORDER_FORWARD;
    CHECK(fr_mla_order_for(&nc, true) == FR_MLA_SELF_SLOT0 && fr_mla_order_for(&nc, false) == FR_MLA_SELF_LAST,
          "forward order");
    nc.order = FR_EMU_ORDER_REVERSE;
    CHECK(fr_mla_order_for(&nc, true) == FR_MLA_SELF_LAST && fr_mla_order_for(&nc, false) == FR_MLA_SELF_SLOT0,
          "reverse order");
    CHECK(fr_mla_order_for(NULL, true) == FR_MLA_SELF_SLOT0, "NULL numerics");
}

static double rel(const double *a, const double *r, int64_t n) {
    double e = 0, s = 0;
    for (int64_t k = 0; k < n; k++) e += (a[k] - r[k]) * (a[k] - r[k]), s += r[k] * r[k];
    return s > 0 ? sqrt(e / s) : sqrt(e);
}

static void test_runs(void) {
    fr_mla_case mc;
    fr_error err;
    const int64_t T = 16, W = 8, H = 2, Dl = 16;
    if (!CHECKED(fr_mla_case_make(&mc, T, W, H, Dl, 0, W, 0.25, 5, &err) == FR_OK, "%s", err.msg)) return;
    fr_mla_run ref, run;
    if (!CHECKED(fr_mla_fwd(&mc, NULL, 1, &ref, &err) == FR_OK && fr_mla_bwd(&mc, FR_EMU_DPSUM_F32, 1, &ref, &err) == FR_OK,
                 "reference: %s", err.msg)) {
        fr_mla_case_free(&mc);
        return;
    }
    CHECK(ref.dqr == NULL && ref.dkr == NULL && ref.dq && ref.dk && ref.dv, "no rope gradients without rope");
    fr_numerics nc;
    CHECK(fr_numerics_preset("fa4-sm100-fwd-inference", &nc, &err) == FR_OK, "%s", err.msg);
    if (CHECKED(fr_mla_fwd(&mc, &nc, 1, &run, &err) == FR_OK, "%s", err.msg)) {
        double e[3] = {0, 0, 0};
        static const fr_emu_dpsum kD[3] = {FR_EMU_DPSUM_OUT, FR_EMU_DPSUM_OUT_LO, FR_EMU_DPSUM_F32};
        for (int k = 0; k < 3; k++) {
            CHECK(fr_mla_bwd(&mc, kD[k], 1, &run, &err) == FR_OK, "dpsum %d: %s", k, err.msg);
            e[k] = rel(run.dq, ref.dq, T * H * Dl);
        }
        printf("dq rel-L2: D from bf16 O %.3g, with o_lo %.3g, fp32 O %.3g\n", e[0], e[1], e[2]);
        CHECK(e[2] > 0 && e[2] < 2e-2 && fabs(e[2] - e[1]) <= 0.05 * e[1], "dq rel-L2: o_lo %g, fp32 O %g", e[1],
              e[2]);
        fr_mla_run_free(&run);
    }
    fr_mla_run_free(&ref);
    fr_mla_case_free(&mc);
}


/* The runs' and studies' own refusals: a negative thread count stops the golden, the emulated run and both studies
 * with its status; the seqlen study's argument and size checks; the case's other size overflows. */
static void test_run_refusals(void) {
    fr_mla_case mc;
    fr_error err;
    CHECK(fr_mla_case_make(&mc, 16, 4, INT64_C(1) << 60, 16, 0, 4, 0.0, 1, &err) == FR_E_OVERFLOW, "T x H: %s",
          err.msg);
    CHECK(fr_mla_case_make(&mc, 1, 4, INT64_C(1) << 58, 8, 0, 4, 0.0, 1, &err) == FR_E_OVERFLOW, "x 8 x 8: %s",
          err.msg);
    if (!CHECKED(fr_mla_case_make(&mc, 8, 4, 1, 8, 0, 4, 0.0, 2, &err) == FR_OK, "%s", err.msg)) return;
    fr_mla_run r;
    CHECK(fr_mla_fwd(&mc, NULL, -1, &r, &err) == FR_E_INVALID_ARG && strstr(err.msg, "num_threads") && !r.out,
          "golden, -1 threads: %s", err.msg);
    fr_numerics nc;
    CHECK(fr_numerics_preset("fa4-sm100-fwd-inference", &nc, &err) == FR_OK, "%s", err.msg);
    CHECK(fr_mla_fwd(&mc, &nc, -1, &r, &err) == FR_E_INVALID_ARG && strstr(err.msg, "num_threads") && !r.out,
          "emulated, -1 threads: %s", err.msg);
    fr_mla_case_free(&mc);
    fr_oi_result oi;
    CHECK(fr_study_order_invariance(8, 4, 1, 8, 0, 0.25, 1, 8.0, false, -1, &oi, &err) == FR_E_INVALID_ARG &&
              strstr(err.msg, "num_threads"),
          "order invariance, -1 threads: %s", err.msg);
    CHECK(fr_study_order_invariance(0, 4, 1, 8, 0, 0.25, 1, 8.0, false, 1, &oi, &err) == FR_E_INVALID_ARG &&
              strstr(err.msg, "mla case: T 0"),
          "order invariance, T 0: %s", err.msg);
    fr_seqlen_result sl;
    int64_t lens[2] = {8, 16};
    CHECK(fr_study_seqlen(NULL, 1, 4, 8, 1, 1, &sl, &err) == FR_E_INVALID_ARG && strstr(err.msg, "seqlen study: 1 lengths"),
          "NULL lengths: %s", err.msg);
    CHECK(fr_study_seqlen(lens, FR_SEQLEN_MAX_LENS + 1, 4, 8, 1, 1, &sl, &err) == FR_E_INVALID_ARG, "17 lengths: %s",
          err.msg);
    CHECK(fr_study_seqlen(lens, 2, 0, 8, 1, 1, &sl, &err) == FR_E_INVALID_ARG && strstr(err.msg, "S1 0"), "S1 0: %s",
          err.msg);
    CHECK(fr_study_seqlen(lens, 2, 4, 0, 1, 1, &sl, &err) == FR_E_INVALID_ARG && strstr(err.msg, "D 0"), "D 0: %s",
          err.msg);
    CHECK(fr_study_seqlen(lens, 2, 4, INT64_C(1) << 60, 1, 1, &sl, &err) == FR_E_OVERFLOW &&
              strstr(err.msg, "sizes overflow"),
          "D 2^60: %s", err.msg);
    CHECK(fr_study_seqlen(lens, 2, 4, 8, 1, -1, &sl, &err) == FR_E_INVALID_ARG && strstr(err.msg, "num_threads"),
          "seqlen, -1 threads: %s", err.msg);
}

int main(void) {
    test_refusals();
    test_arrangements();
    test_runs();
    test_run_refusals();
    return fr_test_exit("test_emu_study_paths");
}
