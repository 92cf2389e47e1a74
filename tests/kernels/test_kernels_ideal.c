/* The fast kernels' accuracy goal: their bf16 and fp16 forward is within 1.25 x the accuracy of the "ideal" pipeline
 * of that dtype (verification-method 1: exact running max, P rounded once, fp32 accumulation, one final rounding), both
 * measured against the fp64 golden, over a seeded grid that crosses every tile boundary (fast: 64-row query
 * sub-tiles, 128-key tiles, 512-row tasks; S1, S2 in {1, 63, 64, 65, 127, 128, 129, 200, 1000}) and every semantic
 * (layouts incl. TND, GQA/MQA, sparse modes 0-8, pse types 0-3 and every pse shape, dropout, sink, rope, top-k,
 * D1 rows, peaked inputs q_i += a k_i, head dims 64/128 and odd ones).
 *
 * Per case and per ISA variant the CPU has (others skipped loudly): attention_out in the operator dtype (softmax
 * stats fp32) from the fast engine and from the emulator, both against the golden (fp64 outputs), metrics of
 * src/verify/metrics/metrics.h over rows (b, h, i) of Dv elements. Asserted:
 *     fast rel_l2   <= 1.25 * ideal rel_l2   (+ 1e-12 only when ideal rel_l2 is exactly 0)
 *     fast gain_rms <= 1.25 * ideal gain_rms (+ 1e-12 only when ideal gain_rms is exactly 0)
 * The ideal is exactly 0 when every output is exact (S2 = 1: out = v; all rows D1); then the fast must be exact too
 * up to that slack. The same two ratios over the whole grid per dtype (sums of squares: rel-L2 from summed error and
 * reference energies, gain rms from summed squared gains weighted by rows used) are asserted and printed.
 *
 * Rounding: the fast kernels round P and the output half away from zero (spec D3); fr_numerics_ideal rounds to
 * nearest even. The ideal is used unchanged: the tie rule alone does not move the metrics (ties are rare at fp32
 * precision of P; measured with p_round = out_round = FR_ROUND_HALF_AWAY the per-case ratios and the aggregates
 * are the same to 3 digits), so no operator-matched ideal is needed.
 *
 * Usage: test_kernels_ideal [seed]. */
#include "common/check.h"
#include "kt_harness.h"
#include "flashref_emulate.h"
#include "verify/metrics/metrics.h"

#define NOLIM FR_TOKENS_MAX
#define RATIO 1.25
#define ZERO_SLACK 1e-12

static const int64_t k_lq[4] = {65, 0, 1, 130};
static const int64_t k_lkv[4] = {70, 5, 64, 129};
static const int64_t k_lq8[3] = {30, 70, 64};
static const int64_t k_lkv8[3] = {30, 70, 64};
static const int64_t k_pref1[1] = {40};
static const int64_t k_pref2[2] = {70, 150};

typedef struct acc {
    double e2, r2;     /* summed squared error and reference energy */
    double g2;         /* summed gain_rms^2 * rows_used */
    double rows;
} acc;
typedef struct dt_total {
    acc fast[16], ideal; /* fast per variant (index into k_isas) */
    double max_rel_ratio, max_gain_ratio;
    char worst_rel[96], worst_gain[96];
} dt_total;
static dt_total g_tot[2]; /* 0 bf16, 1 fp16 */

typedef struct gcase {
    kt_case c;
    double peak; /* > 0: q_i += peak * k_i (i < min(S1b, S2b)), rounded to the dtype */
} gcase;


static void peak_inputs(kt_prob *P, double a) {
    const kt_case *c = &P->c;
    int64_t G = c->N1 / c->N2;
    for (int64_t b = 0; b < c->B; b++) {
        int64_t q0, S1b, k0, S2b;
        kt_rows(P, b, &q0, &S1b, &k0, &S2b);
        for (int64_t h = 0; h < c->N1; h++)
            for (int64_t i = 0; i < S1b && i < S2b; i++)
                for (int64_t d = 0; d < c->Dk; d++) {
                    int64_t oq = fr_layout_offset(&P->in.query, c->layout, c->Dk, q0, b, h, i, d);
                    int64_t ok = fr_layout_offset(&P->in.key, c->layout, c->Dk, k0, b, h / G, i, d);
                    double v = kt_get(&P->in.query, oq) + a * kt_get(&P->in.key, ok);
                    kt_put(&P->in.query, oq, kt_round_dt(c->dt, v));
                }
    }
}

static double *load_all(const fr_tensor *t) {
    int64_t n = kt_numel(t);
    double *x = malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t k = 0; k < n; k++) x[k] = kt_get(t, k);
    return x;
}

/* metrics of t against the golden array g */
static bool metrics_of(const fr_tensor *t, const double *g, int64_t Dv, fr_metrics *m) {
    double *a = load_all(t);
    int64_t n = kt_numel(t);
    fr_metrics_opts opt = fr_metrics_opts_default();
    fr_error err;
    fr_status st = fr_metrics_compute(a, g, Dv ? n / Dv : 0, Dv, &opt, m, &err);
    free(a);
    if (st != FR_OK) printf("  metrics: %s: %s\n", fr_status_name(st), err.msg);
    return st == FR_OK && m->n_anomaly_mismatch == 0;
}

static void acc_add(acc *a, const fr_metrics *m, const double *g, int64_t n) {
    double r2 = 0;
    for (int64_t k = 0; k < n; k++)
        if (isfinite(g[k])) r2 += g[k] * g[k];
    a->r2 += r2;
    a->e2 += m->rel_l2 * m->rel_l2 * r2;
    a->g2 += m->gain_rms * m->gain_rms * (double)m->rows_used;
    a->rows += (double)m->rows_used;
}

static bool within(double fast, double ideal) {
    return fast <= RATIO * ideal + (ideal == 0.0 ? ZERO_SLACK : 0.0);
}
static double ratio(double fast, double ideal) { return ideal > 0 ? fast / ideal : (fast > 0 ? INFINITY : 0.0); }

static const char *isa_name(fr_isa isa) { return fr_isa_name(isa); }

/* the library's one variant list (core/variants.inc) */
static const fr_isa k_isas[] = {
#define FR_VARIANT(name, e, ...) e,
#include "core/variants.inc"
#undef FR_VARIANT
};
#define N_ISAS ((int)(sizeof k_isas / sizeof k_isas[0]))
static bool g_isa_ok[N_ISAS];

static void run_case(const gcase *gc, uint64_t seed) {
    const kt_case *c = &gc->c;
    dt_total *T = &g_tot[c->dt == FR_BF16 ? 0 : 1];
    kt_prob P;
    kt_build(&P, c, seed);
    if (gc->peak > 0) peak_inputs(&P, gc->peak);
    fr_error err;
    /* golden, fp64 outputs */
    fr_fwd_outputs go = kt_outputs_as(&P, FR_F64, FR_F64);
    fr_engine eg = fr_engine_default(FR_ENGINE_GOLDEN);
    eg.num_threads = 2;
    fr_status st = fr_fwd(&P.p, &P.in, &go, &eg, &err);
    if (!CHECKED(st == FR_OK, "[%s] golden %s: %s", c->name, fr_status_name(st), err.msg)) {
        kt_free_outputs(&go), kt_free_prob(&P);
        return;
    }
    double *g = load_all(&go.attention_out);
    int64_t n = kt_numel(&go.attention_out);
    /* the ideal pipeline of the dtype, as fr_numerics_ideal defines it (RNE; see the header) */
    fr_numerics nc = fr_numerics_ideal(c->dt);
    fr_fwd_outputs io = kt_outputs_as(&P, c->dt, FR_F32);
    fr_engine ee = fr_engine_default(FR_ENGINE_EMULATE);
    ee.numerics = &nc;
    ee.num_threads = 2;
    fr_metrics mi;
    st = fr_fwd(&P.p, &P.in, &io, &ee, &err);
    if (!CHECKED(st == FR_OK && metrics_of(&io.attention_out, g, c->Dv, &mi), "[%s] ideal %s: %s", c->name,
                 fr_status_name(st), st ? err.msg : "anomaly")) {
    } else {
        acc_add(&T->ideal, &mi, g, n);
        for (int k = 0; k < N_ISAS; k++) {
            if (!g_isa_ok[k]) continue;
            fr_fwd_outputs fo = kt_outputs_as(&P, c->dt, FR_F32);
            fr_engine ef = fr_engine_default(FR_ENGINE_FAST);
            ef.isa = k_isas[k];
            ef.num_threads = 2;
            fr_metrics mf;
            st = fr_fwd(&P.p, &P.in, &fo, &ef, &err);
            if (!CHECKED(st == FR_OK && metrics_of(&fo.attention_out, g, c->Dv, &mf), "[%s %s] fast %s: %s", c->name,
                         isa_name(k_isas[k]), fr_status_name(st), st ? err.msg : "anomaly")) {
                kt_free_outputs(&fo);
                continue;
            }
            acc_add(&T->fast[k], &mf, g, n);
            bool ok = within(mf.rel_l2, mi.rel_l2) && within(mf.gain_rms, mi.gain_rms);
            double rr = ratio(mf.rel_l2, mi.rel_l2), gr = ratio(mf.gain_rms, mi.gain_rms);
            if (rr > T->max_rel_ratio) {
                T->max_rel_ratio = rr;
                snprintf(T->worst_rel, sizeof T->worst_rel, "%s [%s]", c->name, isa_name(k_isas[k]));
            }
            if (gr > T->max_gain_ratio) {
                T->max_gain_ratio = gr;
                snprintf(T->worst_gain, sizeof T->worst_gain, "%s [%s]", c->name, isa_name(k_isas[k]));
            }
            printf("  %-4s %-30s %-10s %9.3e %9.3e %6.3f   %9.3e %9.3e %6.3f %s\n", fr_dtype_name(c->dt), c->name,
                   isa_name(k_isas[k]), mf.rel_l2, mi.rel_l2, rr, mf.gain_rms, mi.gain_rms, gr, ok ? "" : " FAIL");
            CHECK(ok, "the row above");
            kt_free_outputs(&fo);
        }
    }
    free(g);
    kt_free_outputs(&io), kt_free_outputs(&go), kt_free_prob(&P);
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 20261129u;
    printf("test_kernels_ideal: seed %llu (rerun: test_kernels_ideal %llu)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    for (int k = 0; k < N_ISAS; k++) {
        fr_engine e = fr_engine_default(FR_ENGINE_FAST);
        e.isa = k_isas[k];
        fr_error err;
        g_isa_ok[k] = fr_engine_available(&e, &err) == FR_OK;
        if (!g_isa_ok[k]) printf("  variant %s SKIPPED: this CPU lacks it (%s)\n", isa_name(k_isas[k]), err.msg);
    }
    const kt_case base = {.name = "", .layout = FR_BNSD, .dt = FR_BF16, .B = 1, .N1 = 2, .N2 = 1, .S1 = 65,
                          .S2 = 130, .Dk = 64, .Dv = 64, .pre = NOLIM, .next = NOLIM, .mask_density = 0.3,
                          .pse_type = FR_PSE_OUTER_ADD_MUL, .keep_prob = 1.0, .scale = 0.125, .amp = 1.0};
    gcase cs[64];
    int n = 0;
#define ADD(pk, ...)                                                                                                \
    do {                                                                                                            \
        cs[n].c = base;                                                                                             \
        cs[n].peak = (pk);                                                                                          \
        kt_case *k_ = &cs[n++].c;                                                                                   \
        __VA_ARGS__;                                                                                                \
    } while (0)
    /* shapes across the tiles */
    ADD(0, k_->name = "1x1", k_->S1 = 1, k_->S2 = 1);
    ADD(0, k_->name = "63x63 D128", k_->S1 = 63, k_->S2 = 63, k_->Dk = 128, k_->Dv = 128);
    ADD(0, k_->name = "64x64 MQA N1=4", k_->S1 = 64, k_->S2 = 64, k_->N1 = 4);
    ADD(0, k_->name = "65x65 GQA 4/2", k_->S1 = 65, k_->S2 = 65, k_->N1 = 4, k_->N2 = 2);
    ADD(0, k_->name = "127x129 BSH D33/31", k_->layout = FR_BSH, k_->S1 = 127, k_->S2 = 129, k_->Dk = 33,
        k_->Dv = 31);
    ADD(0, k_->name = "128x128 BSND D128", k_->layout = FR_BSND, k_->S1 = 128, k_->S2 = 128, k_->Dk = 128,
        k_->Dv = 128, k_->N2 = 2);
    ADD(0, k_->name = "129x200 SBH D72/40", k_->layout = FR_SBH, k_->S1 = 129, k_->S2 = 200, k_->Dk = 72,
        k_->Dv = 40, k_->B = 2);
    ADD(0, k_->name = "200x1000 MQA", k_->S1 = 200, k_->S2 = 1000, k_->N1 = 2);
    ADD(0, k_->name = "1000x127 N1=1 D17", k_->S1 = 1000, k_->S2 = 127, k_->N1 = 1, k_->Dk = 17, k_->Dv = 17);
    ADD(0, k_->name = "big scores 129x200", k_->S1 = 129, k_->S2 = 200, k_->scale = 0.25, k_->amp = 2.0);
    ADD(0, k_->name = "symmetric V 64x257", k_->vsym = true, k_->S1 = 64, k_->S2 = 257);
    /* peaked inputs (amplitude 2: the diagonal score stands 3-4 sd above the row) */
    ADD(0.25, k_->name = "peak .25 128x1000", k_->S1 = 128, k_->S2 = 1000, k_->amp = 2.0);
    ADD(0.4, k_->name = "peak .4 129x200 D128", k_->S1 = 129, k_->S2 = 200, k_->Dk = 128, k_->Dv = 128,
        k_->scale = 0.0884, k_->amp = 2.0);
    ADD(0.4, k_->name = "peak .4 causal 200x200", k_->S1 = 200, k_->S2 = 200, k_->mask = true,
        k_->sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL, k_->amp = 2.0);
    ADD(0.25, k_->name = "peak .25 1000x1000 rdown", k_->S1 = 1000, k_->S2 = 1000, k_->N1 = 1, k_->mask = true,
        k_->sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, k_->amp = 2.0);
    ADD(0.4, k_->name = "peak .4 mask0 sink", k_->mask = true, k_->sink = true, k_->amp = 2.0);
    /* masks and sparse modes (mode 0/1 masks carry one fully masked row: D1) */
    ADD(0, k_->name = "mode0 mask+band (D1)", k_->mask = true, k_->pre = 20, k_->next = 5);
    ADD(0, k_->name = "mode1 user mask", k_->mask = true, k_->sparse_mode = FR_SPARSE_ALL_MASK, k_->S1 = 127,
        k_->S2 = 200);
    ADD(0, k_->name = "mode2 causal 200x140", k_->mask = true, k_->sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL, k_->S1 = 200,
        k_->S2 = 140);
    ADD(0, k_->name = "mode3 S1>S2 (D1)", k_->mask = true, k_->sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, k_->S1 = 150,
        k_->S2 = 70);
    ADD(0, k_->name = "mode4 band", k_->mask = true, k_->sparse_mode = FR_SPARSE_BAND, k_->pre = 30, k_->next = 10,
        k_->S1 = 100, k_->S2 = 180);
    ADD(0, k_->name = "mode5 prefix", k_->mask = true, k_->sparse_mode = FR_SPARSE_PREFIX, k_->prefix = k_pref1,
        k_->mask_density = 0.1, k_->S1 = 100, k_->S2 = 130);
    ADD(0, k_->name = "mode6 prefix B=2", k_->mask = true, k_->sparse_mode = FR_SPARSE_PREFIX_COMPRESS,
        k_->prefix = k_pref2, k_->B = 2, k_->S1 = 140, k_->S2 = 200);
    /* varlen */
    ADD(0, k_->name = "TND mode0 drop", k_->layout = FR_TND, k_->B = 4, k_->lq = k_lq, k_->lkv = k_lkv,
        k_->mask = true, k_->pre = 40, k_->next = 0, k_->mask_density = 0.1, k_->keep_prob = 0.8);
    ADD(0, k_->name = "TND mode7", k_->layout = FR_TND, k_->B = 3, k_->lq = k_lq8, k_->lkv = k_lkv8, k_->mask = true,
        k_->sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND, k_->pre = 200, k_->next = 0);
    ADD(0, k_->name = "TND mode8 alibi2", k_->layout = FR_TND, k_->B = 3, k_->lq = k_lq8, k_->lkv = k_lkv8,
        k_->mask = true, k_->sparse_mode = FR_SPARSE_BAND_LEFT_UP_CAUSAL, k_->pre = 200, k_->next = 30,
        k_->pse = FR_GEN_PSE_SLOPES_N, k_->pse_type = FR_PSE_INNER_MUL_ADD, k_->q_start = 2, k_->kv_start = 5);
    /* pse types 0-3, every shape */
    ADD(0, k_->name = "pse1 full", k_->pse = FR_GEN_PSE_BNSS, k_->pse_type = FR_PSE_OUTER_ADD_MUL);
    ADD(0, k_->name = "pse0 full GQA", k_->pse = FR_GEN_PSE_BNSS, k_->pse_type = FR_PSE_OUTER_MUL_ADD, k_->N1 = 4,
        k_->N2 = 2);
    ADD(0, k_->name = "pse1 row-bcast B=2", k_->pse = FR_GEN_PSE_BN1S, k_->pse_type = FR_PSE_OUTER_ADD_MUL, k_->B = 2);
    ADD(0, k_->name = "pse0 [1,N1,S1,S2] B=2", k_->pse = FR_GEN_PSE_1NSS, k_->pse_type = FR_PSE_OUTER_MUL_ADD,
        k_->B = 2);
    ADD(0, k_->name = "alibi2 slopes[N1]", k_->pse = FR_GEN_PSE_SLOPES_N, k_->pse_type = FR_PSE_INNER_MUL_ADD,
        k_->S1 = 130, k_->S2 = 130, k_->q_start = 3, k_->kv_start = 1);
    ADD(0, k_->name = "alibi3 slopes[B,N1] causal", k_->pse = FR_GEN_PSE_SLOPES_BN,
        k_->pse_type = FR_PSE_INNER_MUL_ADD_SQRT, k_->B = 2, k_->S1 = 100, k_->S2 = 100, k_->mask = true,
        k_->sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL);
    ADD(0, k_->name = "pse compressed 1100 D8", k_->pse = FR_GEN_PSE_COMP_B, k_->pse_type = FR_PSE_OUTER_ADD_MUL,
        k_->S1 = 1100, k_->S2 = 1100, k_->Dk = 8, k_->Dv = 8, k_->N1 = 1, k_->mask = true,
        k_->sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL);
    /* dropout, sink, rope, top-k */
    ADD(0, k_->name = "dropout 0.7", k_->keep_prob = 0.7, k_->S2 = 200);
    ADD(0.25, k_->name = "dropout .5 causal peak .25", k_->keep_prob = 0.5, k_->mask = true,
        k_->sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL, k_->S1 = 130);
    ADD(0, k_->name = "sink", k_->sink = true);
    ADD(0, k_->name = "sink S1>S2 causal (D1)", k_->sink = true, k_->mask = true,
        k_->sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, k_->S1 = 100, k_->S2 = 64);
    ADD(0, k_->name = "TND rope 128+64", k_->layout = FR_TND, k_->B = 4, k_->lq = k_lq, k_->lkv = k_lkv,
        k_->Dk = 128, k_->Dv = 128, k_->Drope = 64, k_->N1 = 2, k_->N2 = 2);
    ADD(0, k_->name = "topk W=40 causal sink", k_->W = 40, k_->mask = true, k_->sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL,
        k_->sink = true, k_->S1 = 130, k_->N1 = 4, k_->N2 = 2);
    ADD(0, k_->name = "topk W=7 TND dropout", k_->layout = FR_TND, k_->B = 4, k_->lq = k_lq, k_->lkv = k_lkv,
        k_->W = 7, k_->keep_prob = 0.8);
    printf("  dt   case                           variant    fast-rL2  ideal-rL2 ratio   fast-gain ideal-gain ratio\n");
    for (int k = 0; k < n; k++) {
        for (int d = 0; d < 2; d++) {
            gcase gc = cs[k];
            gc.c.dt = d ? FR_F16 : FR_BF16;
            run_case(&gc, seed + (uint64_t)(2 * k + d));
        }
    }
    /* aggregates over the grid (sums of squares) */
    printf("  aggregate over %d cases per dtype:\n", n);
    for (int d = 0; d < 2; d++) {
        dt_total *T = &g_tot[d];
        double irel = T->ideal.r2 > 0 ? sqrt(T->ideal.e2 / T->ideal.r2) : 0;
        double igain = T->ideal.rows > 0 ? sqrt(T->ideal.g2 / T->ideal.rows) : 0;
        for (int k = 0; k < N_ISAS; k++) {
            if (!g_isa_ok[k]) continue;
            const acc *a = &T->fast[k];
            double frel = a->r2 > 0 ? sqrt(a->e2 / a->r2) : 0, fgain = a->rows > 0 ? sqrt(a->g2 / a->rows) : 0;
            bool ok = within(frel, irel) && within(fgain, igain);
            printf("  %-4s %-30s %-10s %9.3e %9.3e %6.3f   %9.3e %9.3e %6.3f %s\n", d ? "fp16" : "bf16", "ALL",
                   isa_name(k_isas[k]), frel, irel, ratio(frel, irel), fgain, igain, ratio(fgain, igain),
                   ok ? "" : " FAIL");
            CHECK(ok, "the row above");
        }
        printf("  %s: max per-case ratio rel-L2 %.3f (%s), gain %.3f (%s)\n", d ? "fp16" : "bf16", T->max_rel_ratio,
               T->worst_rel, T->max_gain_ratio, T->worst_gain);
    }
    return fr_test_exit("test_kernels_ideal");
}
