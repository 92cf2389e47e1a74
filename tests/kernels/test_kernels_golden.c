/* The fast engine through the public API (fr_fwd / fr_bwd: validation, dispatch, engine.isa) against the golden
 * engine (fp64, written independently from the spec), on a seeded grid across tiles and semantics.
 * Bounds: fp32 attention_out rel-L2 <= 2e-7 (cases with cancelling symmetric V: 1.25 x the straightforward fp32's)
 * and max error <= 4 x the straightforward fp32's (kt_harness.h) + 2^-24 max|golden|; dsink rel-L2 1e-4 (its
 * terms cancel; test_kernels_bwd bounds it against the sum of their magnitudes); bf16/fp16 per element
 * u (|golden| + A) + 2^-25 n vmax + 1e-5 A (test_kernels_fwd.c explains it); fp32 gradients rel-L2 <= 1e-6,
 * 16-bit gradients 4e-3. Also: engine.isa forcing every variant the CPU has, and refusing an unknown one. */
#include "common/check.h"
#include "kt_harness.h"

#define NOLIM FR_TOKENS_MAX

static const int64_t k_lq[4] = {65, 0, 1, 130};
static const int64_t k_lkv[4] = {70, 5, 64, 129};
static const int64_t k_pref[2] = {70, 150};
static const int64_t k_pref1[1] = {40};
static const int64_t k_lq8[3] = {30, 70, 64};
static const int64_t k_lkv8[3] = {30, 70, 64};


static double rel_l2(const fr_tensor *a, const fr_tensor *g, double *emax, double *gmax, int64_t *nnan) {
    double e2 = 0, r2 = 0;
    int64_t n = kt_numel(a);
    for (int64_t k = 0; k < n; k++) {
        double x = kt_get(a, k), r = kt_get(g, k);
        if (isnan(x) != isnan(r)) (*nnan)++;
        if (isnan(x) || isnan(r)) continue;
        e2 += (x - r) * (x - r), r2 += r * r;
        if (fabs(x - r) > *emax) *emax = fabs(x - r);
        if (fabs(r) > *gmax) *gmax = fabs(r);
    }
    return r2 > 0 ? sqrt(e2 / r2) : sqrt(e2);
}

static void fwd_case(const kt_case *c, uint64_t seed, fr_isa isa) {
    kt_prob P;
    kt_build(&P, c, seed);
    kt_ref R;
    kt_reference(&P, &R);
    fr_fwd_outputs fo = kt_outputs_as(&P, c->dt, FR_F32), go = kt_outputs_as(&P, FR_F64, FR_F64);
    fr_engine ef = fr_engine_default(FR_ENGINE_FAST), eg = fr_engine_default(FR_ENGINE_GOLDEN);
    ef.isa = isa;
    ef.num_threads = 2;
    fr_error err;
    fr_status st = fr_fwd(&P.p, &P.in, &fo, &ef, &err);
    fr_status sg = fr_fwd(&P.p, &P.in, &go, &eg, &err);
    bool ok = st == FR_OK && sg == FR_OK;
    if (!ok) fprintf(stderr, "  [%s] fast %s golden %s: %s\n", c->name, fr_status_name(st), fr_status_name(sg), err.msg);
    double emax = 0, gmax = 0, rel = 0, nmax = 0, n2 = 0, r2 = 0;
    int64_t nnan = 0, nbad = 0;
    if (ok) {
        rel = rel_l2(&fo.attention_out, &go.attention_out, &emax, &gmax, &nnan);
        double u = c->dt == FR_BF16 ? 0x1p-8 : 0x1p-11;
        /* the straightforward fp32 against the golden, and the 16-bit per-element bound */
        for (int64_t b = 0; b < c->B; b++) {
            int64_t q0, S1b, k0, S2b;
            kt_rows(&P, b, &q0, &S1b, &k0, &S2b);
            for (int64_t h = 0; h < c->N1; h++)
                for (int64_t i = 0; i < S1b; i++)
                    for (int64_t d = 0; d < c->Dv; d++) {
                        int64_t off = fr_layout_offset(&go.attention_out, c->layout, c->Dv, q0, b, h, i, d);
                        int64_t row = kt_row_index(&P, b, h, i);
                        double g = kt_get(&go.attention_out, off), f = kt_get(&fo.attention_out, off);
                        double n32 = R.out32[row * c->Dv + d];
                        if (fabs(n32 - g) > nmax) nmax = fabs(n32 - g);
                        n2 += (n32 - g) * (n32 - g), r2 += g * g;
                        if (c->dt != FR_F32) {
                            double A = R.pvabs[row];
                            if (fabs(f - g) > u * (fabs(g) + A) + 0x1p-25 * (double)S2b * c->amp + 1e-5 * A + 1e-30)
                                nbad++;
                        }
                    }
        }
        double nrel = r2 > 0 ? sqrt(n2 / r2) : 0;
        if (c->W) { /* the harness's own fp32 reference knows no top-k: the golden alone judges */
            ok = rel <= 2e-7;
        } else if (c->dt == FR_F32) {
            double lim = c->vsym ? 1.25 * nrel : 2e-7;
            ok = rel <= lim && emax <= 4 * nmax + 0x1p-24 * gmax;
        } else {
            ok = nbad == 0;
        }
        double e1 = 0, g1 = 0;
        double rm = rel_l2(&fo.softmax_max, &go.softmax_max, &e1, &g1, &nnan);
        double rs = rel_l2(&fo.softmax_sum, &go.softmax_sum, &e1, &g1, &nnan);
        ok = ok && nnan == 0 && rm <= 1e-6 && rs <= 1e-5;
        printf("  %-24s fwd isa %d: rel-L2 out %.3g (naive fp32 %.3g) max %.3g (naive %.3g) max/sum %.3g %.3g%s\n",
               c->name, (int)isa, rel, nrel, emax, nmax, rm, rs, ok ? "" : "  FAIL");
    }
    CHECK(ok, "the row above");
    kt_free_outputs(&fo), kt_free_outputs(&go);
    kt_free_ref(&R);
    kt_free_prob(&P);
}


static void bwd_case(const kt_case *c, uint64_t seed) {
    kt_prob P;
    kt_build(&P, c, seed);
    fr_fwd_outputs fo = kt_outputs_as(&P, c->dt, FR_F32);
    fr_engine ef = fr_engine_default(FR_ENGINE_FAST), eg = fr_engine_default(FR_ENGINE_GOLDEN);
    ef.num_threads = 2;
    fr_error err;
    fr_status st = fr_fwd(&P.p, &P.in, &fo, &ef, &err);
    fr_bwd_inputs bi = kt_bwd_inputs(&P, &fo, seed);
    fr_bwd_outputs fg = kt_grads(&P, c->dt), gg = kt_grads(&P, FR_F64);
    fr_status sf = st == FR_OK ? fr_bwd(&P.p, &bi, &fg, &ef, &err) : st;
    fr_status sg = st == FR_OK ? fr_bwd(&P.p, &bi, &gg, &eg, &err) : st;
    bool ok = sf == FR_OK && sg == FR_OK;
    if (!ok) fprintf(stderr, "  [%s] bwd fast %s golden %s: %s\n", c->name, fr_status_name(sf), fr_status_name(sg),
                     err.msg);
    if (ok) {
        double lim = c->dt == FR_F32 ? 1e-6 : 4e-3, worst = 0, e = 0, g = 0;
        int64_t nnan = 0;
        const fr_tensor *a[6] = {&fg.dq, &fg.dk, &fg.dv, &fg.dq_rope, &fg.dk_rope, &fg.dsink};
        const fr_tensor *b[6] = {&gg.dq, &gg.dk, &gg.dv, &gg.dq_rope, &gg.dk_rope, &gg.dsink};
        double rl[6] = {0};
        for (int k = 0; k < 6; k++) {
            if (!fr_tensor_present(a[k])) continue;
            rl[k] = rel_l2(a[k], b[k], &e, &g, &nnan);
            double kl = k == 5 ? 1e-4 : lim; /* dsink: a sum whose terms cancel, over N1 entries only */
            if (rl[k] / kl > worst) worst = rl[k] / kl;
        }
        ok = worst <= 1.0 && nnan == 0;
        printf("  %-24s bwd: rel-L2 dq %.3g dk %.3g dv %.3g dq_rope %.3g dk_rope %.3g dsink %.3g%s\n", c->name,
               rl[0], rl[1], rl[2], rl[3], rl[4], rl[5], ok ? "" : "  FAIL");
    }
    CHECK(ok, "the row above");
    kt_free_grads(&fg), kt_free_grads(&gg);
    free(bi.dy.data);
    kt_free_outputs(&fo);
    kt_free_prob(&P);
}

/* Alike test_kernels_fwd.c:main and test_kernels_bwd.c:main: kept apart because each test has its own default seed and
 * its own case table (sizes and options for what it checks); a shared table would couple their coverage. */
int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 20261131u;
    printf("test_kernels_golden: seed %llu (rerun: test_kernels_golden %llu)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    kt_case cs[32];
    int n = 0;
#define ADD(...) KT_ADD(cs, n, __VA_ARGS__)
    ADD(k_->name = "dense GQA 129x200 BSH", k_->layout = FR_BSH, k_->S1 = 129, k_->S2 = 200, k_->B = 2, k_->N1 = 4,
        k_->N2 = 2, k_->Dk = 24, k_->Dv = 16);
    ADD(k_->name = "dense symmetric V", k_->vsym = true, k_->S1 = 64, k_->S2 = 257);
    ADD(k_->name = "mode0 mask+band (D1)", k_->mask = true, k_->pre = 20, k_->next = 5);
    ADD(k_->name = "mode3 S1>S2 (D1)", k_->mask = true, k_->sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, k_->S1 = 150,
        k_->S2 = 70);
    ADD(k_->name = "mode4 band", k_->mask = true, k_->sparse_mode = FR_SPARSE_BAND, k_->pre = 30, k_->next = 10,
        k_->S1 = 100, k_->S2 = 180);
    ADD(k_->name = "mode6 prefix B=2", k_->mask = true, k_->sparse_mode = FR_SPARSE_PREFIX_COMPRESS,
        k_->prefix = k_pref, k_->B = 2, k_->S1 = 140, k_->S2 = 200);
    ADD(k_->name = "mode5 prefix", k_->mask = true, k_->sparse_mode = FR_SPARSE_PREFIX, k_->prefix = k_pref1,
        k_->mask_density = 0.1, k_->S1 = 100, k_->S2 = 130);
    ADD(k_->name = "TND mode8 alibi", k_->layout = FR_TND, k_->B = 3, k_->lq = k_lq8, k_->lkv = k_lkv8, k_->mask = true,
        k_->sparse_mode = FR_SPARSE_BAND_LEFT_UP_CAUSAL, k_->pre = 200, k_->next = 30, k_->pse = FR_GEN_PSE_SLOPES_N,
        k_->pse_type = FR_PSE_INNER_MUL_ADD, k_->q_start = 2, k_->kv_start = 5);
    ADD(k_->name = "pse0 full + dropout", k_->pse = FR_GEN_PSE_BNSS, k_->pse_type = FR_PSE_OUTER_MUL_ADD,
        k_->keep_prob = 0.7);
    ADD(k_->name = "alibi2 + sink", k_->pse = FR_GEN_PSE_SLOPES_N, k_->pse_type = FR_PSE_INNER_MUL_ADD, k_->S1 = 130,
        k_->S2 = 130, k_->q_start = 2, k_->sink = true);
    ADD(k_->name = "TND mode0 drop", k_->layout = FR_TND, k_->B = 4, k_->lq = k_lq, k_->lkv = k_lkv, k_->mask = true,
        k_->pre = 40, k_->next = 0, k_->mask_density = 0.1, k_->keep_prob = 0.8);
    ADD(k_->name = "bf16 causal", k_->dt = FR_BF16, k_->mask = true, k_->sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL,
        k_->S1 = 130, k_->N1 = 4, k_->N2 = 2, k_->Dk = 64, k_->Dv = 64);
    ADD(k_->name = "fp16 dense", k_->dt = FR_F16, k_->Dk = 48, k_->Dv = 40);
    ADD(k_->name = "topk W=40 causal sink", k_->W = 40, k_->mask = true, k_->sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL,
        k_->sink = true, k_->S1 = 130, k_->N1 = 4, k_->N2 = 2);
    ADD(k_->name = "topk W=7 TND dropout", k_->layout = FR_TND, k_->B = 4, k_->lq = k_lq, k_->lkv = k_lkv, k_->W = 7,
        k_->keep_prob = 0.8);
    ADD(k_->name = "NaN V / Inf K masked", k_->mask = true, k_->poison = 70, k_->N1 = 2, k_->N2 = 2);
    ADD(k_->name = "bf16 NaN V / Inf K masked", k_->dt = FR_BF16, k_->mask = true, k_->sparse_mode = FR_SPARSE_ALL_MASK,
        k_->poison = 33, k_->Dk = 64, k_->Dv = 64);
    int ncases = n;
    ADD(k_->name = "TND rope 128+64", k_->layout = FR_TND, k_->B = 4, k_->lq = k_lq, k_->lkv = k_lkv, k_->Dk = 128,
        k_->Dv = 128, k_->Drope = 64, k_->N1 = 2, k_->N2 = 2);
    for (int k = 0; k < n; k++) fwd_case(&cs[k], seed + (uint64_t)k, FR_ISA_AUTO);
    /* every variant through engine.isa */
    static const fr_isa isas[] = { /* the library's one variant list (core/variants.inc) */
#define FR_VARIANT(name, e, ...) e,
#include "core/variants.inc"
#undef FR_VARIANT
    };
    for (size_t k = 0; k < sizeof isas / sizeof isas[0]; k++) {
        fr_engine e = fr_engine_default(FR_ENGINE_FAST);
        e.isa = isas[k];
        fr_error err;
        if (fr_engine_available(&e, &err) != FR_OK) {
            printf("  isa %s SKIPPED: %s\n", fr_isa_name(isas[k]), err.msg);
            continue;
        }
        fwd_case(&cs[0], seed, isas[k]);
        fwd_case(&cs[11], seed + 11, isas[k]); /* bf16 causal */
    }
    {
        fr_engine e = fr_engine_default(FR_ENGINE_FAST);
        e.isa = (fr_isa)42;
        fr_error err;
        fr_status st = fr_engine_available(&e, &err);
        printf("  engine.isa = 42: %s (%s)%s\n", fr_status_name(st), err.msg, st == FR_E_INVALID_ARG ? "" : "  FAIL");
        CHECK(st == FR_E_INVALID_ARG);
    }
    for (int k = 0; k < n; k++)
        if (k < ncases || cs[k].Drope) bwd_case(&cs[k], seed + 100 + (uint64_t)k);
    /* fp8 / hif8 inputs (forward only: the fast backward refuses fp8, spec 7.2 being [U]): per-block dequant scales
     * across the 128-row (q) and 256-row (k, v) blocks; P rounded to the input format (e4m3fn: 3 mantissa bits, so
     * half an ulp is 2^-4 relative; e5m2 2^-3; hif8 2^-4 near 1): rel-L2 against the golden <= 2^-5 (e5m2 2^-4),
     * statistics (fp32 scores) 1e-5. */
    {
        static const fr_dtype f8[3] = {FR_E4M3FN, FR_E5M2, FR_HIF8};
        for (int k = 0; k < 3; k++) {
            kt_case c8 = kt_base_case;
            c8.name = fr_dtype_name(f8[k]);
            c8.dt = f8[k], c8.dscale = true, c8.S1 = 300, c8.S2 = 600, c8.Dk = 64, c8.Dv = 48, c8.N1 = 2, c8.N2 = 1;
            kt_prob P;
            kt_build(&P, &c8, seed + 500 + (uint64_t)k);
            fr_fwd_outputs fo = kt_outputs_as(&P, FR_F16, FR_F32), go = kt_outputs_as(&P, FR_F64, FR_F64);
            fr_engine ef = fr_engine_default(FR_ENGINE_FAST), eg = fr_engine_default(FR_ENGINE_GOLDEN);
            fr_error err, err2;
            fr_status st = fr_fwd(&P.p, &P.in, &fo, &ef, &err), sg = fr_fwd(&P.p, &P.in, &go, &eg, &err2);
            bool ok = st == FR_OK && sg == FR_OK;
            double rel = 0, rm = 0, rs = 0, e = 0, g = 0;
            int64_t nnan = 0;
            if (ok) {
                rel = rel_l2(&fo.attention_out, &go.attention_out, &e, &g, &nnan);
                rm = rel_l2(&fo.softmax_max, &go.softmax_max, &e, &g, &nnan);
                rs = rel_l2(&fo.softmax_sum, &go.softmax_sum, &e, &g, &nnan);
                ok = nnan == 0 && rel <= (f8[k] == FR_E5M2 ? 0x1p-4 : 0x1p-5) && rm <= 1e-5 && rs <= 1e-5;
            } else {
                fprintf(stderr, "    fast %s: %s / golden %s: %s\n", fr_status_name(st), err.msg, fr_status_name(sg),
                        err2.msg);
            }
            printf("  %-24s fwd: rel-L2 out %.3g max/sum %.3g %.3g%s\n", c8.name, rel, rm, rs, ok ? "" : "  FAIL");
            CHECK(ok, "the row above");
            kt_free_outputs(&fo), kt_free_outputs(&go);
            kt_free_prob(&P);
        }
    }
    /* TND with softmax_layout "same_as_input": statistics [T, N1, 8] */
    {
        kt_case ct = kt_base_case;
        ct.name = "TND softmax same_as_input", ct.layout = FR_TND, ct.B = 4, ct.lq = k_lq, ct.lkv = k_lkv, ct.N1 = 4,
        ct.N2 = 2, ct.sink = true;
        kt_prob P;
        kt_build(&P, &ct, seed + 700);
        P.p.softmax_layout = FR_SOFTMAX_SAME_AS_INPUT;
        fr_fwd_outputs fo = kt_outputs_as(&P, FR_F32, FR_F32), go = kt_outputs_as(&P, FR_F64, FR_F64);
        fr_tensor *st4[4] = {&fo.softmax_max, &fo.softmax_sum, &go.softmax_max, &go.softmax_sum};
        for (int k = 0; k < 4; k++) { /* [N1, T, 8] -> [T, N1, 8] */
            int64_t sh[3] = {P.T1, ct.N1, 8};
            fr_dtype dt = st4[k]->dtype;
            free(st4[k]->data);
            *st4[k] = kt_alloc(dt, 3, sh);
            kt_fill_nan(st4[k]);
        }
        fr_engine ef = fr_engine_default(FR_ENGINE_FAST), eg = fr_engine_default(FR_ENGINE_GOLDEN);
        fr_error err, err2;
        fr_status st = fr_fwd(&P.p, &P.in, &fo, &ef, &err), sg = fr_fwd(&P.p, &P.in, &go, &eg, &err2);
        double e = 0, g = 0;
        int64_t nnan = 0;
        bool ok = st == FR_OK && sg == FR_OK;
        double rm = 1, rs = 1, ro = 1;
        if (ok) {
            ro = rel_l2(&fo.attention_out, &go.attention_out, &e, &g, &nnan);
            rm = rel_l2(&fo.softmax_max, &go.softmax_max, &e, &g, &nnan);
            rs = rel_l2(&fo.softmax_sum, &go.softmax_sum, &e, &g, &nnan);
            ok = nnan == 0 && ro <= 2e-7 && rm <= 1e-6 && rs <= 1e-5;
        } else {
            fprintf(stderr, "    fast %s: %s / golden %s: %s\n", fr_status_name(st), err.msg, fr_status_name(sg), err2.msg);
        }
        printf("  %-24s fwd: rel-L2 out %.3g max %.3g sum %.3g%s\n", ct.name, ro, rm, rs, ok ? "" : "  FAIL");
        CHECK(ok, "the row above");
        kt_free_outputs(&fo), kt_free_outputs(&go);
        kt_free_prob(&P);
    }
    /* D8: every empty dimension, through validation (S2 = 0 with S1 > 0 gives D1 rows, checked against the golden) */
    kt_case e8[6];
    for (int k = 0; k < 6; k++) {
        e8[k] = kt_base_case;
        e8[k].S1 = 5, e8[k].S2 = 3, e8[k].Dk = e8[k].Dv = 4, e8[k].N1 = e8[k].N2 = 1;
    }
    e8[0].name = "D8 B=0", e8[0].B = 0;
    e8[1].name = "D8 N=0", e8[1].N1 = e8[1].N2 = 0;
    e8[2].name = "D8 S1=0", e8[2].S1 = 0;
    e8[3].name = "D8 S2=0", e8[3].S2 = 0;
    e8[4].name = "D8 D=0", e8[4].Dk = e8[4].Dv = 0;
    e8[5].name = "D8 S1=0 S2=0", e8[5].S1 = 0, e8[5].S2 = 0;
    for (int k = 0; k < 6; k++) {
        kt_prob P;
        kt_build(&P, &e8[k], seed);
        fr_fwd_outputs fo = kt_outputs_as(&P, FR_F32, FR_F32), go = kt_outputs_as(&P, FR_F64, FR_F64);
        fr_engine ef = fr_engine_default(FR_ENGINE_FAST), eg = fr_engine_default(FR_ENGINE_GOLDEN);
        fr_error err, err2;
        fr_status st = fr_fwd(&P.p, &P.in, &fo, &ef, &err), sg = fr_fwd(&P.p, &P.in, &go, &eg, &err2);
        double emax = 0, gmax = 0;
        int64_t nnan = 0;
        bool ok = st == sg;
        if (st == FR_OK && sg == FR_OK) {
            rel_l2(&fo.attention_out, &go.attention_out, &emax, &gmax, &nnan);
            rel_l2(&fo.softmax_max, &go.softmax_max, &emax, &gmax, &nnan);
            rel_l2(&fo.softmax_sum, &go.softmax_sum, &emax, &gmax, &nnan);
            ok = ok && nnan == 0 && emax <= 1e-6 * (1 + gmax);
        }
        printf("  %-24s fast %s golden %s%s\n", e8[k].name, fr_status_name(st), fr_status_name(sg), ok ? "" : "  FAIL");
        CHECK(ok, "%s: fast: %s / golden: %s", e8[k].name, err.msg, err2.msg);
        kt_free_outputs(&fo), kt_free_outputs(&go);
        kt_free_prob(&P);
    }
    return fr_test_exit("test_kernels_golden");
}
