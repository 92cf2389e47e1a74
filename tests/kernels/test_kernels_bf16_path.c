/* The fast engine's bf16 path (fwd.c / bwd.c with c->bf16: Q, K^T, P and V as bf16 pairs on gemm_bf16, decode rows
 * read in place by dot_rows_bf16 / axpy_rows_bf16) on every machine: the path runs only on a variant with a hardware
 * bf16 dot (avx512bf16, amx), so a CPU without one never ran its packing, its NaN-in-V scan or its in-place decode.
 * Here the table the dispatcher picks, with bf16_gemm switched on, drives that path with its own bf16 slots (on an
 * AVX2 machine the scalar reference slots that test_kernels_slots checks the hardware ones against): what is tested
 * is the drivers' tiling and packing, against the fp64 oracle of kt_harness.h and the golden backward.
 *
 * Cases: decode with the K and V rows in place (partial tiles with a poisoned masked column, a last chunk of one key,
 * GQA with a sink), decode that must pack (rope, odd head dim), full tiles through the 32-bit transpose and the V
 * interleave, q/k/v with a non-unit last stride (every element loaded one by one, an odd tile of keys), TND with
 * empty batches. Bounds as test_kernels_fwd (bf16): per element |out - ref64| <= 2^-8 (|ref64| + A) + 2^-25 n amp +
 * 1e-5 A; softmax_max within 1e-6 (1 + |m|) + 2^-20 xmag, softmax_sum relative 1e-4 + 2^-20 xmag; D1 rows exact.
 * Backward (fp32 gradients from bf16 inputs, inner_precise 0): rel-L2 <= 2e-5 against the golden backward fed the
 * same forward; dsink relative 1e-4. */
#include "common/check.h"
#include "kt_harness.h"

#define NOLIM FR_TOKENS_MAX

static fr_kops g_ops; /* the dispatcher's table with bf16_gemm on */

static const int64_t k_lq[5] = {65, 0, 3, 0, 130};
static const int64_t k_lkv[5] = {70, 5, 2, 0, 129};

/* t's elements two apart (strides doubled): a non-unit last stride, same logical content.
 * Alike test_kernels_fp32_edges.c:restride: kept apart because each test owns its own case builder (the spacing
 * differs: 2 here, 3 there), and tests/common is not this test's to change. */
static void restride(fr_tensor *t) {
    int64_t n = kt_numel(t);
    size_t es = fr_dtype_size(t->dtype);
    char *d = calloc((size_t)(2 * n + 1), es);
    for (int64_t k = 0; k < n; k++) memcpy(d + (size_t)(2 * k) * es, (const char *)t->data + (size_t)k * es, es);
    free(t->data);
    t->data = d;
    for (int k = 0; k < t->ndim; k++) t->strides[k] *= 2;
}

typedef struct bp_case {
    kt_case c;
    int strided;  /* non-unit last stride: 1 query, 2 key, 4 value (7: all, rope too) */
    bool bwd;     /* the backward too */
} bp_case;

static bool check_fwd(const kt_prob *P, const kt_ref *R, const fr_fwd_outputs *o) {
    const kt_case *c = &P->c;
    int64_t nbad = 0, nrows = 0, nd1 = 0;
    double worst = 0;
    for (int64_t b = 0; b < c->B; b++) {
        int64_t q0, S1b, k0, S2b;
        kt_rows(P, b, &q0, &S1b, &k0, &S2b);
        for (int64_t h = 0; h < c->N1; h++)
            for (int64_t i = 0; i < S1b; i++) {
                int64_t row = kt_row_index(P, b, h, i);
                bool d1 = R->sm[row] == FLT_MAX && R->mx[row] == -FLT_MAX;
                nrows++, nd1 += d1;
                for (int64_t d = 0; d < c->Dv; d++) {
                    const fr_tensor *t = &o->attention_out;
                    double f = kt_get(t, fr_layout_offset(t, c->layout, c->Dv, q0, b, h, i, d));
                    double r = R->out[row * c->Dv + d], A = R->pvabs[row];
                    double lim = 0x1p-8 * (fabs(r) + A) + 0x1p-25 * (double)S2b * c->amp + 1e-5 * A + 1e-30;
                    bool ok = !isnan(f) && (d1 ? f == 0.0 : fabs(f - r) <= lim);
                    if (!d1 && fabs(f - r) / lim > worst) worst = fabs(f - r) / lim;
                    if (!ok && nbad++ < 3)
                        fprintf(stderr, "  [%s] out b=%lld h=%lld i=%lld d=%lld: %.9g, ref %.9g\n", c->name,
                                (long long)b, (long long)h, (long long)i, (long long)d, f, r);
                }
                const fr_tensor *tm = &o->softmax_max, *ts = &o->softmax_sum;
                double m = kt_get(tm, fr_softmax_offset(tm, c->layout, FR_SOFTMAX_DEFAULT, q0, b, h, i, 0));
                double s = kt_get(ts, fr_softmax_offset(ts, c->layout, FR_SOFTMAX_DEFAULT, q0, b, h, i, 0));
                bool ok = d1 ? m == -FLT_MAX && s == FLT_MAX
                             : fabs(m - R->mx[row]) <= 1e-6 * (1 + fabs(R->mx[row])) + 0x1p-20 * R->xmag[row] &&
                                   fabs(s - R->sm[row]) <= (1e-4 + 0x1p-20 * R->xmag[row]) * R->sm[row];
                if (!ok && nbad++ < 3)
                    fprintf(stderr, "  [%s] stats b=%lld h=%lld i=%lld: max %.9g (ref %.9g) sum %.9g (ref %.9g)\n",
                            c->name, (long long)b, (long long)h, (long long)i, m, R->mx[row], s, R->sm[row]);
            }
    }
    printf("  %-34s fwd: %lld rows (%lld D1), worst error / bound %.3f%s\n", c->name, (long long)nrows,
           (long long)nd1, worst, nbad ? "  FAIL" : "");
    return nbad == 0;
}

static bool check_bwd(const kt_prob *P, const fr_fwd_outputs *fo, uint64_t seed) {
    const kt_case *c = &P->c;
    fr_bwd_inputs bi = kt_bwd_inputs(P, fo, seed);
    fr_bwd_outputs fg = kt_grads(P, FR_F32), gg = kt_grads(P, FR_F64);
    fr_engine eg = fr_engine_default(FR_ENGINE_GOLDEN);
    fr_error err;
    fr_status sf = fr_k_bwd(&g_ops, 2, &P->pb, &P->p, &bi, &fg, &err);
    bool ok = CHECKED(sf == FR_OK, "[%s] bwd: %s", c->name, err.msg);
    fr_status sg = fr_bwd(&P->p, &bi, &gg, &eg, &err);
    ok = ok && CHECKED(sg == FR_OK, "[%s] golden bwd: %s", c->name, err.msg);
    if (ok) {
        const fr_tensor *a[6] = {&fg.dq, &fg.dk, &fg.dv, &fg.dq_rope, &fg.dk_rope, &fg.dsink};
        const fr_tensor *g[6] = {&gg.dq, &gg.dk, &gg.dv, &gg.dq_rope, &gg.dk_rope, &gg.dsink};
        double rl[6] = {0};
        int64_t nnan = 0;
        for (int k = 0; k < 6; k++) {
            if (!fr_tensor_present(a[k])) continue;
            rl[k] = kt_rel_l2(a[k], g[k], &nnan);
            if (rl[k] > (k == 5 ? 1e-4 : 2e-5)) ok = false;
        }
        ok = ok && nnan == 0;
        printf("  %-34s bwd: rel-L2 dq %.3g dk %.3g dv %.3g dq_rope %.3g dk_rope %.3g dsink %.3g nan %lld%s\n", c->name,
               rl[0], rl[1], rl[2], rl[3], rl[4], rl[5], (long long)nnan, ok ? "" : "  FAIL");
    }
    kt_free_grads(&fg), kt_free_grads(&gg);
    free(bi.dy.data);
    return ok;
}

static void run_case(const bp_case *bc, uint64_t seed) {
    kt_prob P;
    kt_build(&P, &bc->c, seed);
    if (bc->strided & 1) restride(&P.in.query);
    if (bc->strided & 2) restride(&P.in.key);
    if (bc->strided & 4) restride(&P.in.value);
    if (bc->strided == 7 && bc->c.Drope) restride(&P.in.query_rope), restride(&P.in.key_rope);
    kt_ref R;
    kt_reference(&P, &R);
    fr_fwd_outputs o = kt_outputs(&P, bc->c.dt), o3 = kt_outputs(&P, bc->c.dt);
    fr_error err;
    fr_status st = kt_run_fast(&P, &g_ops, 2, &o, &err);
    bool ok = CHECKED(st == FR_OK, "[%s] fwd: %s", bc->c.name, err.msg);
    if (ok && bc->c.W) { /* kt_reference knows no top-k: the golden judges (P rounded to bf16: 2^-9 relative) */
        fr_fwd_outputs go = kt_outputs_as(&P, FR_F64, FR_F64);
        fr_engine eg = fr_engine_default(FR_ENGINE_GOLDEN);
        ok = CHECKED(fr_fwd(&P.p, &P.in, &go, &eg, &err) == FR_OK, "[%s] golden: %s", bc->c.name, err.msg);
        int64_t nnan = 0;
        double ro = ok ? kt_rel_l2(&o.attention_out, &go.attention_out, &nnan) : 1;
        double rs = ok ? kt_rel_l2(&o.softmax_sum, &go.softmax_sum, &nnan) : 1;
        ok = ok && nnan == 0 && ro <= 4e-3 && rs <= 1e-5;
        printf("  %-34s fwd: rel-L2 against the golden out %.3g sum %.3g%s\n", bc->c.name, ro, rs, ok ? "" : "  FAIL");
        kt_free_outputs(&go);
    } else if (ok) {
        ok = check_fwd(&P, &R, &o);
    }
    /* bit-identical for any thread count on this path too */
    if (ok && CHECKED(kt_run_fast(&P, &g_ops, 3, &o3, &err) == FR_OK, "[%s] fwd 3 threads: %s", bc->c.name, err.msg)) {
        size_t n = (size_t)kt_numel(&o.attention_out) * fr_dtype_size(o.attention_out.dtype);
        bool same = !memcmp(o.attention_out.data, o3.attention_out.data, n) &&
                    !memcmp(o.softmax_sum.data, o3.softmax_sum.data, (size_t)kt_numel(&o.softmax_sum) * 4);
        CHECK(same, "[%s] 2 and 3 threads differ", bc->c.name);
    }
    if (ok && bc->bwd) ok = check_bwd(&P, &o, seed);
    CHECK(ok, "%s", bc->c.name);
    kt_free_outputs(&o), kt_free_outputs(&o3);
    kt_free_ref(&R);
    kt_free_prob(&P);
}

int main(int argc, char **argv) {
    uint64_t seed = fr_test_seed(argc, argv, "test_kernels_bf16_path");
    const fr_kops *base = fr_kops_get(FR_ISA_AUTO);
    if (!CHECKED(base != NULL, "no kernel table")) return fr_test_exit("test_kernels_bf16_path");
    g_ops = *base;
    g_ops.bf16_gemm = true;
    printf("  the %s table's bf16 slots with bf16_gemm on%s\n", base->name,
           base->bf16_gemm ? " (this CPU has a bf16 dot: the variant's own path)" : "");
    bp_case cs[24];
    int n = 0;
#define ADD(strided_, bwd_, ...) /* strided_: bits of bp_case.strided */                                                                                       \
    do {                                                                                                               \
        kt_case one[1];                                                                                                \
        int k1 = 0;                                                                                                    \
        KT_ADD(one, k1, k_->dt = FR_BF16, __VA_ARGS__);                                                                \
        cs[n].c = one[0], cs[n].strided = strided_, cs[n].bwd = bwd_;                                                  \
        n++;                                                                                                           \
    } while (0)
    /* decode, K and V rows in place */
    ADD(0, false, k_->name = "decode in place causal", k_->S1 = 4, k_->S2 = 9000, k_->N1 = 2, k_->N2 = 2,
        k_->Dk = 64, k_->Dv = 64, k_->mask = true, k_->sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL);
    ADD(0, false, k_->name = "decode in place poisoned column", k_->S1 = 4, k_->S2 = 4400, k_->N1 = 2, k_->N2 = 1,
        k_->Dk = 32, k_->Dv = 40, k_->mask = true, k_->poison = 4200);
    ADD(0, false, k_->name = "decode last chunk of one key", k_->S1 = 1, k_->S2 = 4097, k_->N1 = 4, k_->N2 = 2,
        k_->Dk = 16, k_->Dv = 8, k_->sink = true, k_->keep_prob = 0.8);
    ADD(0, false, k_->name = "decode BSH GQA band", k_->layout = FR_BSH, k_->S1 = 3, k_->S2 = 4500, k_->N1 = 4,
        k_->N2 = 2, k_->Dk = 24, k_->Dv = 24, k_->mask = true, k_->sparse_mode = FR_SPARSE_BAND, k_->pre = 4500,
        k_->next = -100);
    /* decode that packs: rope, an odd head dim */
    ADD(0, false, k_->name = "decode rope", k_->S1 = 2, k_->S2 = 4300, k_->Dk = 32, k_->Dv = 32, k_->Drope = 8);
    ADD(0, false, k_->name = "decode odd Dk", k_->S1 = 5, k_->S2 = 300, k_->Dk = 33, k_->Dv = 17,
        k_->pse = FR_GEN_PSE_BNSS, k_->pse_type = FR_PSE_OUTER_ADD_MUL);
    /* full tiles: 32-bit transpose of K pairs, V interleave; masks with D1 rows and a poisoned column */
    ADD(0, true, k_->name = "tiles mode0 poisoned", k_->S1 = 130, k_->S2 = 200, k_->Dk = 64, k_->Dv = 48,
        k_->mask = true, k_->pre = 100, k_->next = 20, k_->poison = 150);
    ADD(0, true, k_->name = "tiles BSND GQA sink drop", k_->layout = FR_BSND, k_->S1 = 70, k_->S2 = 140,
        k_->N1 = 4, k_->N2 = 2, k_->Dk = 32, k_->Dv = 32, k_->sink = true, k_->keep_prob = 0.75);
    ADD(0, true, k_->name = "tiles fused MHA B=2 rope", k_->B = 2, k_->N1 = 2, k_->N2 = 2, k_->S1 = 65,
        k_->S2 = 129, k_->Dk = 40, k_->Dv = 24, k_->Drope = 8, k_->mask = true,
        k_->sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL);
    ADD(0, true, k_->name = "tiles odd D SBH alibi", k_->layout = FR_SBH, k_->S1 = 100, k_->S2 = 100, k_->Dk = 31,
        k_->Dv = 15, k_->pse = FR_GEN_PSE_SLOPES_N, k_->pse_type = FR_PSE_INNER_MUL_ADD);
    /* non-unit last strides: every K and V row loaded element by element; 129 keys = a tile and one */
    ADD(7, true, k_->name = "strided q/k/v", k_->S1 = 66, k_->S2 = 129, k_->Dk = 32, k_->Dv = 24);
    ADD(0, false, k_->name = "decode a tile and one key", k_->S1 = 2, k_->S2 = 129, k_->Dk = 16, k_->Dv = 16);
    /* one of K, V strided: the other still read in place or transposed / interleaved as words */
    ADD(4, false, k_->name = "decode V strided", k_->S1 = 3, k_->S2 = 300, k_->Dk = 16, k_->Dv = 16);
    ADD(2, true, k_->name = "tiles K strided", k_->S1 = 70, k_->S2 = 130, k_->Dk = 16, k_->Dv = 16);
    ADD(7, false, k_->name = "strided decode odd keys", k_->S1 = 2, k_->S2 = 4099, k_->Dk = 16, k_->Dv = 16,
        k_->mask = true, k_->sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL);
    ADD(7, true, k_->name = "strided rope poisoned", k_->S1 = 40, k_->S2 = 77, k_->Dk = 16, k_->Dv = 16,
        k_->Drope = 4, k_->mask = true, k_->poison = 30);
    /* varlen with empty batches (one without queries, one without either) */
    ADD(0, true, k_->name = "TND empties mode0", k_->layout = FR_TND, k_->B = 5, k_->lq = k_lq, k_->lkv = k_lkv,
        k_->mask = true, k_->pre = 50, k_->next = 5, k_->mask_density = 0.1, k_->Dk = 32, k_->Dv = 32);
    /* top-k: the gather path, never the bf16 GEMM (bf16_gemm is ignored there) */
    ADD(0, true, k_->name = "topk W=6 sink", k_->W = 6, k_->S1 = 30, k_->S2 = 50, k_->Dk = 16, k_->Dv = 16,
        k_->sink = true);
#undef ADD
    for (int k = 0; k < n; k++) run_case(&cs[k], seed + (uint64_t)k);
    return fr_test_exit("test_kernels_bf16_path");
}
