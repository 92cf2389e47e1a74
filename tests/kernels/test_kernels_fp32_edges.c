/* Paths of the fast engine (fr_fwd / fr_bwd, engine fast) that test_kernels_fwd, _bwd and _golden leave out, each
 * against the golden engine on the same inputs:
 *   q/k/v with a non-unit last stride (fp32 K and V loaded row by row instead of read in place, the backward's Q and
 *   dY rows copied, its fused query cache holding them);
 *   a head dim of 512 + 64 rope (the K rows widened in blocks of fewer than 16, a half-size query tile);
 *   fp8 inputs with a top-k gather (the gather path's dequant scales of Q and V);
 *   top-k with a sink in the backward (the gather backward's dsink);
 *   the fast backward refusing fp8 (spec 7.2 is [U]) with its own status and message;
 *   outputs the kernels may be given without (attention_out; dq, rope gradients, dsink): the rest bit-identical;
 *   stored statistics that mark a row D1 under a sink: that row takes no part (against the emulator);
 *   a NaN or an Inf in dY: non-finite gradients exactly where the golden's are (a regression test);
 *   problems validation would refuse, handed to the kernels: a status and message, never a crash.
 * Bounds: fp32 attention_out rel-L2 <= 2e-6 and statistics 1e-6 (max) / 1e-5 (sum), fp32 gradients rel-L2 <= 1e-5,
 * dsink 1e-4 (its terms cancel); fp8 attention_out rel-L2 <= 2^-5 (P rounded to e4m3fn: half an ulp is 2^-4). */
#include "common/check.h"
#include "core/validate.h"
#include "flashref_emulate.h"
#include "kt_harness.h"

static const int64_t k_lq[3] = {40, 0, 70};
static const int64_t k_lkv[3] = {50, 9, 64};

/* t's elements three apart: a non-unit last stride, same logical content (alike test_kernels_bf16_path.c:restride,
 * kept apart for the reason given there). */
static void restride(fr_tensor *t) {
    int64_t n = kt_numel(t);
    size_t es = fr_dtype_size(t->dtype);
    char *d = calloc((size_t)(3 * n + 1), es);
    for (int64_t k = 0; k < n; k++) memcpy(d + (size_t)(3 * k) * es, (const char *)t->data + (size_t)k * es, es);
    free(t->data);
    t->data = d;
    for (int k = 0; k < t->ndim; k++) t->strides[k] *= 3;
}

/* Forward (and backward) fast against golden; out_lim bounds attention_out's rel-L2. */
static void run_case(const kt_case *c, bool strided, bool bwd, double out_lim, uint64_t seed) {
    kt_prob P;
    kt_build(&P, c, seed);
    if (strided) {
        restride(&P.in.query), restride(&P.in.key), restride(&P.in.value);
        if (c->Drope) restride(&P.in.query_rope), restride(&P.in.key_rope);
    }
    fr_dtype odt = fr_dtype_is_fp8(c->dt) ? FR_F16 : c->dt;
    fr_fwd_outputs fo = kt_outputs_as(&P, odt, FR_F32), go = kt_outputs_as(&P, FR_F64, FR_F64);
    fr_engine ef = fr_engine_default(FR_ENGINE_FAST), eg = fr_engine_default(FR_ENGINE_GOLDEN);
    ef.num_threads = 2;
    fr_error err, err2;
    fr_status st = fr_fwd(&P.p, &P.in, &fo, &ef, &err), sg = fr_fwd(&P.p, &P.in, &go, &eg, &err2);
    bool ok = CHECKED(st == FR_OK && sg == FR_OK, "[%s] fwd fast %s (%s) golden %s (%s)", c->name,
                      fr_status_name(st), err.msg, fr_status_name(sg), err2.msg);
    if (ok) {
        int64_t nnan = 0;
        double ro = kt_rel_l2(&fo.attention_out, &go.attention_out, &nnan);
        double rm = kt_rel_l2(&fo.softmax_max, &go.softmax_max, &nnan), rs = kt_rel_l2(&fo.softmax_sum, &go.softmax_sum, &nnan);
        bool good = nnan == 0 && ro <= out_lim && rm <= 1e-6 && rs <= 1e-5;
        printf("  %-30s fwd: rel-L2 out %.3g max %.3g sum %.3g nan %lld%s\n", c->name, ro, rm, rs, (long long)nnan,
               good ? "" : "  FAIL");
        CHECK(good, "%s: forward against the golden", c->name);
    }
    if (ok && bwd) {
        fr_bwd_inputs bi = kt_bwd_inputs(&P, &fo, seed);
        fr_bwd_outputs fg = kt_grads(&P, FR_F32), gg = kt_grads(&P, FR_F64);
        st = fr_bwd(&P.p, &bi, &fg, &ef, &err), sg = fr_bwd(&P.p, &bi, &gg, &eg, &err2);
        if (CHECKED(st == FR_OK && sg == FR_OK, "[%s] bwd fast %s (%s) golden %s (%s)", c->name, fr_status_name(st),
                    err.msg, fr_status_name(sg), err2.msg)) {
            const fr_tensor *a[6] = {&fg.dq, &fg.dk, &fg.dv, &fg.dq_rope, &fg.dk_rope, &fg.dsink};
            const fr_tensor *g[6] = {&gg.dq, &gg.dk, &gg.dv, &gg.dq_rope, &gg.dk_rope, &gg.dsink};
            double rl[6] = {0};
            int64_t nnan = 0;
            bool good = true;
            for (int k = 0; k < 6; k++) {
                if (!fr_tensor_present(a[k])) continue;
                rl[k] = kt_rel_l2(a[k], g[k], &nnan);
                good = good && rl[k] <= (k == 5 ? 1e-4 : 1e-5);
            }
            good = good && nnan == 0;
            printf("  %-30s bwd: rel-L2 dq %.3g dk %.3g dv %.3g dq_rope %.3g dk_rope %.3g dsink %.3g%s\n", c->name,
                   rl[0], rl[1], rl[2], rl[3], rl[4], rl[5], good ? "" : "  FAIL");
            CHECK(good, "%s: backward against the golden", c->name);
        }
        kt_free_grads(&fg), kt_free_grads(&gg);
        free(bi.dy.data);
    }
    kt_free_outputs(&fo), kt_free_outputs(&go);
    kt_free_prob(&P);
}

/* The kernels' outputs other than the statistics are optional to them (fr_k_fwd without attention_out; fr_k_bwd
 * without dq, the rope gradients or dsink): what they do write must be the same bits as in a full run. */
static bool bits_eq(const fr_tensor *a, const fr_tensor *b) {
    return !memcmp(a->data, b->data, (size_t)kt_numel(a) * fr_dtype_size(a->dtype));
}
static void optional_outputs(uint64_t seed) {
    kt_case cs[2] = {kt_base_case, kt_base_case};
    cs[0].name = "fused rope sink", cs[0].B = 2, cs[0].N1 = cs[0].N2 = 2, cs[0].Drope = 8, cs[0].sink = true;
    cs[1].name = "topk sink", cs[1].W = 5, cs[1].sink = true, cs[1].Drope = 4;
    const fr_kops *ops = fr_kops_get(FR_ISA_AUTO);
    for (int k = 0; k < 2; k++) {
        kt_prob P;
        kt_build(&P, &cs[k], seed + (uint64_t)k);
        fr_fwd_outputs full = kt_outputs(&P, FR_F32), part = kt_outputs(&P, FR_F32);
        fr_tensor keep = part.attention_out;
        memset(&part.attention_out, 0, sizeof part.attention_out);
        fr_error err;
        bool ok = fr_k_fwd(ops, 2, &P.pb, &P.p, &P.in, &full, &err) == FR_OK &&
                  fr_k_fwd(ops, 2, &P.pb, &P.p, &P.in, &part, &err) == FR_OK;
        CHECK(ok && bits_eq(&full.softmax_max, &part.softmax_max) && bits_eq(&full.softmax_sum, &part.softmax_sum) &&
                  isnan(kt_get(&keep, 0)),
              "[%s] forward without attention_out: %s", cs[k].name, err.msg);
        part.attention_out = keep;
        fr_bwd_inputs bi = kt_bwd_inputs(&P, &full, seed);
        fr_bwd_outputs g = kt_grads(&P, FR_F32), h = kt_grads(&P, FR_F32);
        fr_bwd_outputs hp = h;
        memset(&hp.dq, 0, sizeof hp.dq), memset(&hp.dq_rope, 0, sizeof hp.dq_rope);
        memset(&hp.dk_rope, 0, sizeof hp.dk_rope), memset(&hp.dsink, 0, sizeof hp.dsink);
        ok = fr_k_bwd(ops, 2, &P.pb, &P.p, &bi, &g, &err) == FR_OK && fr_k_bwd(ops, 2, &P.pb, &P.p, &bi, &hp, &err) == FR_OK;
        CHECK(ok && bits_eq(&g.dk, &h.dk) && bits_eq(&g.dv, &h.dv) && isnan(kt_get(&h.dq, 0)) &&
                  isnan(kt_get(&h.dsink, 0)),
              "[%s] backward with dk, dv only: %s", cs[k].name, err.msg);
        printf("  %-30s optional outputs left out: the others bit-identical%s\n", cs[k].name, ok ? "" : "  FAIL");
        kt_free_grads(&g), kt_free_grads(&h);
        free(bi.dy.data);
        kt_free_outputs(&full), kt_free_outputs(&part);
        kt_free_prob(&P);
    }
}

/* Statistics given to the backward that mark a row D1 (-FLT_MAX, FLT_MAX) although the problem has a sink (stats no
 * forward makes: a sink always takes part): the fast backward reads the markers as a row that takes no part (dq 0, no
 * dsink term), in the fused and the two-pass backward alike, as the emulator does (emulate_entry.c: m <= -FLT_MAX is
 * a D1 row). The golden reads them literally (D13: exp(x + FLT_MAX) / FLT_MAX) and gives Inf / NaN there, so the
 * reference here is the emulator with fp64 compute ("exact"). */
static void d1_stats_with_sink(uint64_t seed) {
    kt_case cs[2] = {kt_base_case, kt_base_case};
    cs[0].name = "D1 stats sink fused", cs[0].B = 2, cs[0].N1 = cs[0].N2 = 2, cs[0].sink = true;
    cs[1].name = "D1 stats sink two-pass", cs[1].sink = true;
    fr_numerics exact;
    fr_numerics_preset("exact", &exact, NULL);
    for (int k = 0; k < 2; k++) {
        kt_prob P;
        kt_build(&P, &cs[k], seed + (uint64_t)k);
        fr_fwd_outputs fo = kt_outputs(&P, FR_F32);
        fr_error err;
        fr_engine ef = fr_engine_default(FR_ENGINE_FAST), ee = fr_engine_default(FR_ENGINE_EMULATE);
        ee.numerics = &exact;
        if (!CHECKED(fr_fwd(&P.p, &P.in, &fo, &ef, &err) == FR_OK, "%s", err.msg)) continue;
        for (int64_t i = 3; i < 5; i++) /* rows 3, 4 of batch 0, head 1 */
            for (int j = 0; j < 8; j++) {
                kt_put(&fo.softmax_max, fr_softmax_offset(&fo.softmax_max, FR_BNSD, FR_SOFTMAX_DEFAULT, 0, 0, 1, i, j),
                       -FLT_MAX);
                kt_put(&fo.softmax_sum, fr_softmax_offset(&fo.softmax_sum, FR_BNSD, FR_SOFTMAX_DEFAULT, 0, 0, 1, i, j),
                       FLT_MAX);
            }
        fr_bwd_inputs bi = kt_bwd_inputs(&P, &fo, seed);
        fr_bwd_outputs fg = kt_grads(&P, FR_F32), gg = kt_grads(&P, FR_F64);
        fr_status sf = fr_bwd(&P.p, &bi, &fg, &ef, &err), sg = fr_bwd(&P.p, &bi, &gg, &ee, &err);
        if (CHECKED(sf == FR_OK && sg == FR_OK, "[%s] %s", cs[k].name, err.msg)) {
            int64_t nnan = 0;
            double rq = kt_rel_l2(&fg.dq, &gg.dq, &nnan), rk = kt_rel_l2(&fg.dk, &gg.dk, &nnan);
            double rv = kt_rel_l2(&fg.dv, &gg.dv, &nnan), rs = kt_rel_l2(&fg.dsink, &gg.dsink, &nnan);
            double z = kt_get(&fg.dq, fr_layout_offset(&fg.dq, FR_BNSD, cs[k].Dk, 0, 0, 1, 3, 0));
            bool ok = nnan == 0 && rq <= 1e-5 && rk <= 1e-5 && rv <= 1e-5 && rs <= 1e-4 && z == 0.0;
            printf("  %-30s bwd vs emulator: dq %.3g dk %.3g dv %.3g dsink %.3g, D1 row dq %g%s\n", cs[k].name, rq, rk,
                   rv, rs, z, ok ? "" : "  FAIL");
            CHECK(ok, "%s", cs[k].name);
        }
        kt_free_grads(&fg), kt_free_grads(&gg);
        free(bi.dy.data);
        kt_free_outputs(&fo);
        kt_free_prob(&P);
    }
}

/* A NaN or an Inf in dY (row 9 of batch 0, head 0) under a causal mask: the gradients it reaches are non-finite
 * exactly where the golden's are (dq of that row; dk, dv of the keys it attends), and nothing else moves: a key the
 * row does not see never takes 0 * NaN through dS = P (dP - D_i) with D_i non-finite (it did before the fix in
 * bwd.c:tile_grad: dk of every masked key was NaN). Fused (B N2 >= 4) and two-pass alike; the finite rest against
 * the golden to rel-L2 1e-5. */
static void bad_dy(uint64_t seed) {
    kt_case cs[2] = {kt_base_case, kt_base_case};
    cs[0].name = "dy fused", cs[0].B = 2, cs[0].N1 = cs[0].N2 = 2;
    cs[1].name = "dy two-pass";
    for (int k = 0; k < 4; k++) {
        kt_case *c = &cs[k % 2];
        double bad = k < 2 ? NAN : INFINITY;
        c->mask = true, c->sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL, c->S1 = 40, c->S2 = 40;
        kt_prob P;
        kt_build(&P, c, seed + (uint64_t)k);
        fr_fwd_outputs fo = kt_outputs(&P, FR_F32);
        fr_error err;
        fr_engine ef = fr_engine_default(FR_ENGINE_FAST), eg = fr_engine_default(FR_ENGINE_GOLDEN);
        if (!CHECKED(fr_fwd(&P.p, &P.in, &fo, &ef, &err) == FR_OK, "%s", err.msg)) continue;
        fr_bwd_inputs bi = kt_bwd_inputs(&P, &fo, seed);
        kt_put(&bi.dy, fr_layout_offset(&bi.dy, FR_BNSD, c->Dv, 0, 0, 0, 9, 3), bad);
        fr_bwd_outputs fg = kt_grads(&P, FR_F32), gg = kt_grads(&P, FR_F64);
        fr_status sf = fr_bwd(&P.p, &bi, &fg, &ef, &err), sg = fr_bwd(&P.p, &bi, &gg, &eg, &err);
        if (CHECKED(sf == FR_OK && sg == FR_OK, "[%s] %s", c->name, err.msg)) {
            const fr_tensor *a[3] = {&fg.dq, &fg.dk, &fg.dv}, *g[3] = {&gg.dq, &gg.dk, &gg.dv};
            int64_t bad_f = 0, mismatch = 0;
            double e2 = 0, r2 = 0;
            for (int t = 0; t < 3; t++)
                for (int64_t e = 0; e < kt_numel(a[t]); e++) {
                    double x = kt_get(a[t], e), y = kt_get(g[t], e);
                    bad_f += !isfinite(x);
                    if (isfinite(x) != isfinite(y)) mismatch++;
                    else if (isfinite(x)) e2 += (x - y) * (x - y), r2 += y * y;
                }
            double rel = sqrt(e2 / r2);
            /* dq row 9 (32), dk and dv of keys 0..9 of kv head 0: dk every column (32 x 10), dv column 3 (10) */
            bool ok = mismatch == 0 && bad_f == 32 + 320 + 10 && rel <= 1e-5;
            printf("  %-14s %-15s %lld non-finite gradients, %lld where the golden's differ, the rest rel-L2 %.3g%s\n",
                   k < 2 ? "NaN in dy" : "Inf in dy", c->name, (long long)bad_f, (long long)mismatch, rel,
                   ok ? "" : "  FAIL");
            CHECK(ok, "%s %s", k < 2 ? "NaN" : "Inf", c->name);
        }
        kt_free_grads(&fg), kt_free_grads(&gg);
        free(bi.dy.data);
        kt_free_outputs(&fo);
        kt_free_prob(&P);
    }
}

int main(int argc, char **argv) {
    uint64_t seed = fr_test_seed(argc, argv, "test_kernels_fp32_edges");
    kt_case cs[8];
    int n = 0;
#define ADD(...) KT_ADD(cs, n, __VA_ARGS__)
    ADD(k_->name = "strided mode0 GQA", k_->S1 = 70, k_->S2 = 140, k_->N1 = 4, k_->N2 = 2, k_->mask = true,
        k_->pre = 60, k_->next = 10);
    ADD(k_->name = "strided fused B=4 rope sink", k_->B = 4, k_->N1 = 2, k_->N2 = 1, k_->S1 = 33, k_->S2 = 50,
        k_->Dk = 16, k_->Dv = 16, k_->Drope = 8, k_->sink = true);
    ADD(k_->name = "strided TND", k_->layout = FR_TND, k_->B = 3, k_->lq = k_lq, k_->lkv = k_lkv);
    ADD(k_->name = "D 512 + rope 64", k_->S1 = 20, k_->S2 = 40, k_->N1 = 1, k_->Dk = 512, k_->Dv = 64,
        k_->Drope = 64, k_->scale = 0.04);
    ADD(k_->name = "topk W=9 sink", k_->W = 9, k_->sink = true, k_->S1 = 40, k_->S2 = 60, k_->N1 = 4, k_->N2 = 2);
    ADD(k_->name = "topk W=5 TND sink", k_->layout = FR_TND, k_->B = 3, k_->lq = k_lq, k_->lkv = k_lkv, k_->W = 5,
        k_->sink = true, k_->keep_prob = 0.8);
#undef ADD
    run_case(&cs[0], true, true, 2e-6, seed);
    run_case(&cs[1], true, true, 2e-6, seed + 1);
    run_case(&cs[2], true, true, 2e-6, seed + 2);
    run_case(&cs[3], false, true, 2e-6, seed + 3);
    run_case(&cs[4], false, true, 2e-6, seed + 4);
    run_case(&cs[5], false, true, 2e-6, seed + 5);
    {
        kt_case c8 = kt_base_case;
        c8.name = "e4m3fn topk W=6", c8.dt = FR_E4M3FN, c8.dscale = true, c8.W = 6, c8.S1 = 140, c8.S2 = 300,
        c8.Dk = 32, c8.Dv = 24;
        run_case(&c8, false, false, 0x1p-5, seed + 6);
        /* the fast backward refuses fp8 before any work */
        kt_prob P;
        kt_build(&P, &c8, seed + 6);
        fr_fwd_outputs fo = kt_outputs_as(&P, FR_F16, FR_F32);
        fr_bwd_inputs bi = fr_test_bwd_inputs(&P.in, fo.attention_out, fo.attention_out, fo.softmax_max, fo.softmax_sum);
        fr_bwd_outputs g = kt_grads(&P, FR_F16);
        fr_error err;
        fr_problem pb; /* the validated problem (kt_build's own leaves fp8 unset) */
        fr_status st = fr_problem_from_fwd(&P.p, &P.in, &pb, &err);
        CHECK(st == FR_OK && pb.fp8, "fp8 problem: %s", err.msg);
        st = fr_k_bwd(fr_kops_get(FR_ISA_AUTO), 1, &pb, &P.p, &bi, &g, &err);
        CHECK(st == FR_E_UNSUPPORTED && !strcmp(err.msg, "engine 'fast': fp8 backward not supported (spec 7.2 is [U])"),
              "fp8 backward: %s: %s", fr_status_name(st), err.msg);
        kt_free_grads(&g);
        kt_free_outputs(&fo);
        kt_free_prob(&P);
    }
    optional_outputs(seed + 8);
    d1_stats_with_sink(seed + 9);
    bad_dy(seed + 11);
    /* D8 with a decode shape: no heads, 5000 keys (no task, no key split) */
    {
        kt_case c0 = kt_base_case;
        c0.name = "D8 decode N=0", c0.N1 = c0.N2 = 0, c0.S1 = 1, c0.S2 = 5000, c0.Dk = c0.Dv = 8;
        kt_prob P;
        kt_build(&P, &c0, seed + 10);
        fr_fwd_outputs fo = kt_outputs(&P, FR_F32);
        fr_engine ef = fr_engine_default(FR_ENGINE_FAST);
        fr_error err;
        CHECK(fr_fwd(&P.p, &P.in, &fo, &ef, &err) == FR_OK, "D8 decode N=0: %s", err.msg);
        kt_free_outputs(&fo);
        kt_free_prob(&P);
    }
    /* problems validation would refuse, handed to the kernels directly: a status, never a crash */
    {
        kt_case cm = kt_base_case;
        cm.name = "unvalidated", cm.mask = true, cm.S1 = 8, cm.S2 = 8;
        kt_prob P;
        kt_build(&P, &cm, seed + 7);
        fr_fwd_outputs fo = kt_outputs(&P, FR_F32);
        fr_bwd_inputs bi = fr_test_bwd_inputs(&P.in, fo.attention_out, fo.attention_out, fo.softmax_max, fo.softmax_sum);
        fr_bwd_outputs g = kt_grads(&P, FR_F32);
        const fr_kops *ops = fr_kops_get(FR_ISA_AUTO);
        fr_error err;
        P.in.atten_mask.ndim = 3; /* [B, N1, S1, S2] read as rank 3 */
        bi.fwd = P.in;
        fr_status st = fr_k_fwd(ops, 1, &P.pb, &P.p, &P.in, &fo, &err);
        CHECK(st == FR_E_INTERNAL && !strcmp(err.msg, "atten_mask: ndim 3, expected 2 or 4"), "fwd mask rank: %s", err.msg);
        st = fr_k_bwd(ops, 1, &P.pb, &P.p, &bi, &g, &err);
        CHECK(st == FR_E_INTERNAL && !strcmp(err.msg, "atten_mask: ndim 3, expected 2 or 4"), "bwd mask rank: %s", err.msg);
        P.in.atten_mask.ndim = 4;
        bi.fwd = P.in;
        fr_problem big = P.pb; /* B * N1 * query tiles past int64 */
        big.B = INT64_C(1) << 62, big.T1 = big.T2 = 0;
        st = fr_k_fwd(ops, 1, &big, &P.p, &P.in, &fo, &err);
        CHECK(st == FR_E_OVERFLOW && !strcmp(err.msg, "engine 'fast': B * N1 * query tiles overflows"), "fwd: %s",
              err.msg);
        st = fr_k_bwd(ops, 1, &big, &P.p, &bi, &g, &err);
        CHECK(st == FR_E_OVERFLOW && !strcmp(err.msg, "engine 'fast': task count overflows"), "bwd: %s", err.msg);
        big = P.pb; /* B * N1 fits, times the query tiles it does not */
        big.B = INT64_C(1) << 60, big.S1 = INT64_C(1) << 20, big.T1 = big.T2 = 0;
        st = fr_k_fwd(ops, 1, &big, &P.p, &P.in, &fo, &err);
        CHECK(st == FR_E_OVERFLOW && !strcmp(err.msg, "engine 'fast': B * N1 * query tiles overflows"), "fwd 2: %s",
              err.msg);
        big = P.pb; /* N1 * T1 (the D_i rows) past int64 */
        big.T1 = INT64_C(1) << 62;
        st = fr_k_bwd(ops, 1, &big, &P.p, &bi, &g, &err);
        CHECK(st == FR_E_OVERFLOW && !strcmp(err.msg, "engine 'fast': N1 * T overflows"), "bwd D_i: %s", err.msg);
        kt_free_grads(&g);
        kt_free_outputs(&fo);
        kt_free_prob(&P);
    }
    return fr_test_exit("test_kernels_fp32_edges");
}
