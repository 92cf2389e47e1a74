/* The FA4 sparse-MLA order-invariance test (docs/emulator.md) on the emulator, at a size that runs in seconds.
 * Absorbed sparse MLA in bf16, emulated FA4 SM100 forward (exp2, kv tile 128 slots, reverse order):
 *  - exact running max: the coherent part of the difference between "dominant key processed first" and "last" is
 *    < 2x its noise floor, each order's row gain vs fp64 < 2x the ideal bf16 output floor, and the dq/dk/dv rel-L2
 *    vs fp64 agree between the orders within 5%;
 *  - lazy threshold 8 forced: the same check FAILS by a wide margin (asserted, so the test has teeth);
 *  - beyond the write-up (exact max): random permutations of the top-k list, the dominant key at tile edges, -1
 *    sentinels anywhere, all-invalid rows (D1: output 0, max -FLT_MAX, sum FLT_MAX, zero gradients). */
#include "study/emu_study.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

enum { T = 512, W = 256, H = 2, DL = 512, DR = 64 };

static bool within5(double a, double b) { return fabs(a - b) <= 0.05 * fmin(a, b); }

static void seed_check(uint64_t seed) {
    fr_oi_result r;
    fr_error err;
    fr_status st = fr_study_order_invariance(T, W, H, DL, DR, 0.25, seed, 8.0, true, 0, &r, &err);
    CHECK(st == FR_OK, "study: %s", err.msg);
    if (st != FR_OK) return;
    const double floor_gain = r.bf16_floor_gain;
    printf("bf16 floor gain %.3e; self weight p50 %.3f\n", floor_gain, r.self_weight_p50);
    for (int k = 0; k < 3; k++)
        printf("%-18s gain first %.3e last %.3e | diff gain/floor %.2fx | dq %.3e/%.3e (o_lo %.3e/%.3e)\n",
               r.rows[k].label, r.rows[k].gain_rms[0], r.rows[k].gain_rms[1], r.rows[k].diff_gain_over_floor,
               r.rows[k].dq[0][0], r.rows[k].dq[1][0], r.rows[k].dq[0][1], r.rows[k].dq[1][1]);
    const fr_oi_row *ex = &r.rows[1], *lz = &r.rows[0];
    /* exact max: the write-up's three assertions */
    CHECK(ex->diff_gain_over_floor < 2.0, "exact: coherent diff %.2fx the noise floor", ex->diff_gain_over_floor);
    for (int o = 0; o < 2; o++)
        CHECK(ex->gain_rms[o] < 2.0 * floor_gain, "exact order %d: row gain %.3e vs 2x floor %.3e", o,
              ex->gain_rms[o], 2 * floor_gain);
    for (int f = 0; f < 2; f++) {
        CHECK(within5(ex->dq[0][f], ex->dq[1][f]), "exact dq %.4e vs %.4e (fix %d)", ex->dq[0][f], ex->dq[1][f], f);
        CHECK(within5(ex->dk[0][f], ex->dk[1][f]), "exact dk %.4e vs %.4e (fix %d)", ex->dk[0][f], ex->dk[1][f], f);
        CHECK(within5(ex->dv[0][f], ex->dv[1][f]), "exact dv %.4e vs %.4e (fix %d)", ex->dv[0][f], ex->dv[1][f], f);
    }
    /* the o_lo dpsum fix helps the gradients that depend on D (dq, dk) */
    CHECK(ex->dq[1][1] < 0.9 * ex->dq[1][0], "o_lo fix: dq %.3e vs %.3e without", ex->dq[1][1], ex->dq[1][0]);
    /* lazy threshold 8 forced: the same check fails by a wide margin (the write-up: 7-10x) */
    CHECK(lz->diff_gain_over_floor > 4.0, "lazy: coherent diff only %.2fx the floor", lz->diff_gain_over_floor);
    CHECK(lz->gain_rms[1] > 4.0 * floor_gain, "lazy, dominant last: gain %.3e not >> floor %.3e", lz->gain_rms[1],
          floor_gain);
    CHECK(lz->gain_rms[0] < 2.0 * floor_gain, "lazy, dominant first: gain %.3e (expected at the floor)",
          lz->gain_rms[0]);
}

/* Output of the exact-max FA4 emulation for the case's current arrangement. */
static double *run_out(const fr_mla_case *mc, const fr_numerics *nc, fr_mla_run *keep) {
    fr_mla_run r;
    fr_error err;
    if (!CHECKED(fr_mla_fwd(mc, nc, 0, &r, &err) == FR_OK, "fwd: %s", err.msg)) {
        return NULL;
    }
    double *o = malloc(sizeof(double) * T * H * DL);
    memcpy(o, r.out, sizeof(double) * T * H * DL);
    if (keep) *keep = r;
    else fr_mla_run_free(&r);
    return o;
}

static void compare(const char *what, const double *a, const double *base, const double *ref, double floor_gain) {
    fr_metrics d, g;
    fr_metrics_compute(a, base, T * H, DL, NULL, &d, NULL);
    fr_metrics_compute(a, ref, T * H, DL, NULL, &g, NULL);
    printf("%-28s diff gain/floor %.2fx, gain vs fp64 %.3e\n", what, d.gain_over_floor, g.gain_rms);
    CHECK(d.gain_over_floor < 2.0, "%s: coherent diff %.2fx the floor", what, d.gain_over_floor);
    CHECK(g.gain_rms < 2.0 * floor_gain, "%s: row gain %.3e vs 2x floor %.3e", what, g.gain_rms, 2 * floor_gain);
}

static void beyond_the_seed(uint64_t seed) {
    fr_mla_case mc;
    fr_error err;
    if (!CHECKED(fr_mla_case_make(&mc, T, W, H, DL, DR, W, 0.25, seed, &err) == FR_OK, "case: %s", err.msg)) {
        return;
    }
    fr_mla_run ref;
    if (!CHECKED(fr_mla_fwd(&mc, NULL, 0, &ref, &err) == FR_OK, "golden: %s", err.msg)) {
        fr_mla_case_free(&mc);
        return;
    }
    double *tmp = malloc(sizeof(double) * T * H * DL);
    for (int64_t k = 0; k < T * H * DL; k++)
        tmp[k] = fr_bf16_to_f32(fr_f32_to_bf16((float)ref.out[k], FR_ROUND_NEAREST_EVEN, FR_SAT));
    fr_metrics fm;
    fr_metrics_compute(tmp, ref.out, T * H, DL, NULL, &fm, NULL);
    const double floor_gain = fm.gain_rms;
    fr_numerics ex;
    fr_numerics_preset("fa4-sm100-fwd-train", &ex, NULL); /* threshold 0 */
    fr_mla_case_arrange(&mc, FR_MLA_SELF_SLOT0, 0);
    double *base = run_out(&mc, &ex, NULL);
    for (uint64_t k = 1; k <= 3 && base; k++) {
        fr_mla_case_arrange(&mc, FR_MLA_RANDOM, seed + k);
        double *o = run_out(&mc, &ex, NULL);
        char what[64];
        snprintf(what, sizeof what, "random permutation %llu", (unsigned long long)k);
        if (o) compare(what, o, base, ref.out, floor_gain);
        free(o);
    }
    const uint64_t edges[4] = {127, 128, 129, 255}; /* last slot of tile 0, first of tile 1, ..., last slot */
    for (int k = 0; k < 4 && base; k++) {
        fr_mla_case_arrange(&mc, FR_MLA_SELF_AT, edges[k]);
        double *o = run_out(&mc, &ex, NULL);
        char what[64];
        snprintf(what, sizeof what, "dominant key at slot %llu", (unsigned long long)edges[k]);
        if (o) compare(what, o, base, ref.out, floor_gain);
        free(o);
    }
    free(base);
    fr_mla_run_free(&ref);
    fr_mla_case_free(&mc);

    /* -1 sentinels anywhere (3/4 of the slots used) and all-invalid rows (every 7th row) */
    if (!CHECKED(fr_mla_case_make(&mc, T, W, H, DL, DR, 3 * W / 4, 0.25, seed + 17, &err) == FR_OK, "case: %s",
                 err.msg)) {
        free(tmp);
        return;
    }
    fr_mla_case_invalidate_rows(&mc, 7);
    fr_mla_case_arrange(&mc, FR_MLA_SELF_SLOT0, 0);
    if (CHECKED(fr_mla_fwd(&mc, NULL, 0, &ref, &err) == FR_OK, "golden: %s", err.msg)) {
        fr_mla_run rb;
        base = run_out(&mc, &ex, &rb);
        for (uint64_t k = 1; k <= 2 && base; k++) {
            fr_mla_case_arrange(&mc, FR_MLA_SCATTER, seed + 100 + k);
            double *o = run_out(&mc, &ex, NULL);
            char what[64];
            snprintf(what, sizeof what, "sentinels scattered %llu", (unsigned long long)k);
            if (o) compare(what, o, base, ref.out, floor_gain);
            free(o);
        }
        if (base) { /* D1 rows, forward and backward, with the lazy threshold too */
            fr_numerics lz = ex;
            lz.rescale_threshold = 8.0;
            const fr_numerics *cfgs[2] = {&ex, &lz};
            for (int c = 0; c < 2; c++) {
                fr_mla_run rr;
                if (!CHECKED(fr_mla_fwd(&mc, cfgs[c], 0, &rr, &err) == FR_OK &&
                                 fr_mla_bwd(&mc, FR_EMU_DPSUM_OUT_LO, 0, &rr, &err) == FR_OK,
                             "run: %s", err.msg))
                    continue;
                int64_t bad = 0, rows = 0;
                for (int64_t t = 6; t < T; t += 7)
                    for (int64_t h = 0; h < H; h++) {
                        rows++;
                        int64_t r = t * H + h;
                        bool ok = rr.m[r] == -FLT_MAX && rr.l[r] == FLT_MAX;
                        for (int64_t d = 0; d < DL; d++) ok = ok && rr.out[r * DL + d] == 0.0 && rr.dq[r * DL + d] == 0.0;
                        for (int64_t d = 0; d < DR; d++) ok = ok && rr.dqr[r * DR + d] == 0.0;
                        if (!ok) bad++;
                    }
                printf("all-invalid rows (%s): %lld of %lld rows wrong\n", c ? "lazy" : "exact", (long long)bad,
                       (long long)rows);
                CHECK(bad == 0 && rows > 0, "D1 rows: %lld wrong", (long long)bad);
                fr_mla_run_free(&rr);
            }
            fr_mla_run_free(&rb);
        }
        free(base);
    }
    fr_mla_run_free(&ref);
    fr_mla_case_free(&mc);
    free(tmp);
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
    printf("test_order_invariance seed=%llu T=S=%d W=%d H=%d D=%d+%d\n", (unsigned long long)seed, T, W, H, DL, DR);
    seed_check(seed);
    beyond_the_seed(seed);
    return fr_test_exit("test_order_invariance");
}
