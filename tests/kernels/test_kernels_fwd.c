/* Fast forward kernels against the fp64 oracle and the straightforward fp32 implementation of kt_harness.h, over a
 * seeded grid that crosses every tile boundary (FR_K_BM = 64 query rows, FR_K_BN = 128 key rows) and every semantic; every ISA variant the
 * CPU has (others skipped loudly); NaN-prefilled outputs must be fully written; results bit-identical across
 * thread counts.
 *
 * Bounds (stated units):
 *  fp32: rel-L2(out) <= 2e-7 (cases with symmetric V, whose outputs are cancelling means, or large scores: no
 *        more than 1.25 x the straightforward fp32's own rel-L2, which exceeds 2e-7 there), and max |out - ref64| <= 4 * max |naive32 - ref64| + 2^-24 max|ref64| (the naive's
 *        own error with a half-ulp floor for cases where the naive is exact).
 *  bf16 / fp16: per element |out - ref64| <= u (|ref64| + A) + 2^-25 n vmax + 1e-5 A, with u = 2^-8 (bf16) or
 *        2^-11 (fp16) the half-ulp relative rounding of P (before P.V) and of the output (D3), A = sum_j p_j |v_j|
 *        (the row's absolute P.V mass, from the oracle), n vmax the fp16-subnormal absolute rounding of P.
 *  softmax_max: |m - m64| <= 4 |m32 - m64| + 2^-20 xmag (xmag = the row's largest scale sum |q k| + |pse|, the
 *        scale of a score's rounding); softmax_sum: relative 1e-5 (fp32) / 1e-4 (16-bit) + 2^-20 xmag,
 *        D1 rows exactly (-FLT_MAX, FLT_MAX) and out exactly 0. */
#include "common/check.h"
#include "core/isa.h"
#include "kt_harness.h"

#define NOLIM FR_TOKENS_MAX

static const int64_t k_pref1[1] = {40};
static const int64_t k_pref2[2] = {70, 150};
static const int64_t k_lq[4] = {65, 0, 1, 130};
static const int64_t k_lkv[4] = {70, 5, 64, 129};
static const int64_t k_lq8[3] = {0, 70, 64};
static const int64_t k_lkv8[3] = {0, 90, 64};

static void check(const kt_prob *P, const kt_ref *R, const fr_fwd_outputs *o, const char *variant, int *bad) {
    const kt_case *c = &P->c;
    double e2 = 0, r2 = 0, emax = 0, nmax = 0, rmax = 0, n2 = 0;
    int64_t nbad = 0;
    double u = c->dt == FR_BF16 ? 0x1p-8 : 0x1p-11;
    for (int64_t b = 0; b < c->B; b++) {
        int64_t q0, S1b, k0, S2b;
        kt_rows(P, b, &q0, &S1b, &k0, &S2b);
        for (int64_t h = 0; h < c->N1; h++)
            for (int64_t i = 0; i < S1b; i++) {
                int64_t row = kt_row_index(P, b, h, i);
                bool d1 = R->sm[row] == FLT_MAX && R->mx[row] == -FLT_MAX;
                for (int64_t d = 0; d < c->Dv; d++) {
                    double f = kt_get(&o->attention_out,
                                      fr_layout_offset(&o->attention_out, c->layout, c->Dv, q0, b, h, i, d));
                    double r = R->out[row * c->Dv + d], n32 = R->out32[row * c->Dv + d];
                    double e = fabs(f - r);
                    bool ok = !isnan(f);
                    if (d1) ok = ok && f == 0.0;
                    if (c->dt != FR_F32) {
                        double A = R->pvabs[row];
                        double lim = u * (fabs(r) + A) + 0x1p-25 * (double)S2b * c->amp + 1e-5 * A + 1e-30;
                        ok = ok && e <= lim;
                    }
                    if (!ok && nbad++ < 3)
                        fprintf(stderr, "  [%s %s] out b=%lld h=%lld i=%lld d=%lld: fast %.9g ref %.9g\n", c->name,
                                variant, (long long)b, (long long)h, (long long)i, (long long)d, f, r);
                    e2 += (f - r) * (f - r), r2 += r * r;
                    if (e > emax) emax = e;
                    if (fabs(n32 - r) > nmax) nmax = fabs(n32 - r);
                    n2 += (n32 - r) * (n32 - r);
                    if (fabs(r) > rmax) rmax = fabs(r);
                }
                const fr_tensor *tm = &o->softmax_max, *ts = &o->softmax_sum;
                for (int k = 0; k < 8; k++) {
                    double m = kt_get(tm, fr_softmax_offset(tm, c->layout, FR_SOFTMAX_DEFAULT, q0, b, h, i, k));
                    double s = kt_get(ts, fr_softmax_offset(ts, c->layout, FR_SOFTMAX_DEFAULT, q0, b, h, i, k));
                    bool ok;
                    if (d1) {
                        ok = m == -FLT_MAX && s == FLT_MAX;
                    } else {
                        double m64 = R->mx[row], m32 = R->mx32[row];
                        ok = fabs(m - m64) <= 4 * fabs(m32 - m64) + 0x1p-20 * R->xmag[row] + 1e-30;
                        /* l: every exp argument carries the score's rounding (about u * xmag) */
                        double ls = (c->dt == FR_F32 ? 1e-5 : 1e-4) + 0x1p-20 * R->xmag[row];
                        ok = ok && fabs(s - R->sm[row]) <= ls * R->sm[row];
                    }
                    if (!ok && nbad++ < 3)
                        fprintf(stderr, "  [%s %s] stats b=%lld h=%lld i=%lld: max %.9g (ref %.9g) sum %.9g (ref %.9g)\n",
                                c->name, variant, (long long)b, (long long)h, (long long)i, m, R->mx[row], s,
                                R->sm[row]);
                }
            }
    }
    double rel = r2 > 0 ? sqrt(e2 / r2) : sqrt(e2);
    if (c->dt == FR_F32) {
        double nrel0 = r2 > 0 ? sqrt(n2 / r2) : sqrt(n2);
        double lim = c->vsym || c->amp > 1.0 ? 1.25 * nrel0 : 2e-7;
        if (rel > lim) {
            fprintf(stderr, "  [%s %s] rel-L2 %.3g > %.3g\n", c->name, variant, rel, lim);
            nbad++;
        }
        if (emax > 4 * nmax + 0x1p-24 * rmax) {
            fprintf(stderr, "  [%s %s] max err %.3g > 4 x naive fp32 %.3g\n", c->name, variant, emax, nmax);
            nbad++;
        }
    }
    double nrel = r2 > 0 ? sqrt(n2 / r2) : sqrt(n2);
    printf("  %-24s %-10s rel-L2 %.3g max %.3g (naive fp32: %.3g, %.3g)%s\n", c->name, variant, rel, emax, nrel,
           nmax, nbad ? "  FAIL" : "");
    if (nbad) *bad = 1;
}

/* Bitwise comparison of two output sets. */
static bool same_bits(const fr_tensor *a, const fr_tensor *b) {
    return memcmp(a->data, b->data, (size_t)kt_numel(a) * fr_dtype_size(a->dtype)) == 0;
}

static void run_case(const kt_case *c, uint64_t seed, bool threads_check) {
    kt_prob P;
    kt_build(&P, c, seed);
    kt_ref R;
    kt_reference(&P, &R);
    fr_fwd_outputs first;
    bool have_first = false;
    int bad = 0;
/* Alike test_kernels_bwd.c:run_case and test_kernels_emu_ip1.c:run_case (their variant loops): kept apart because
 * the loop bodies check different things (forward outputs here; gradients against the fp64 backward, the emulator's
 * preset there); they share only the skip-a-missing-variant and keep-the-first-variant bookkeeping. */
#define FR_VARIANT(vname, visa, ...)                                                                                   \
    do {                                                                                                               \
        const fr_kops *ops = fr_kops_get(visa);                                                                        \
        if (!ops) {                                                                                                    \
            printf("  %-28s %-10s SKIPPED: this CPU lacks it\n", c->name, #vname);                                     \
            break;                                                                                                     \
        }                                                                                                              \
        fr_fwd_outputs o = kt_outputs(&P, c->dt);                                                                      \
        fr_error err;                                                                                                  \
        fr_status st = kt_run_fast(&P, ops, 2, &o, &err);                                                              \
        if (st != FR_OK) {                                                                                             \
            fprintf(stderr, "  [%s %s] status %s: %s\n", c->name, #vname, fr_status_name(st), err.msg);                \
            bad = 1;                                                                                                   \
        } else {                                                                                                       \
            check(&P, &R, &o, #vname, &bad);                                                                           \
        }                                                                                                              \
        if (!have_first) {                                                                                             \
            first = o;                                                                                                 \
            have_first = true;                                                                                         \
        } else {                                                                                                       \
            kt_free_outputs(&o);                                                                                       \
        }                                                                                                              \
    } while (0);
#include "core/variants.inc"
#undef FR_VARIANT
    if (threads_check) {
        /* the auto variant with 1 and 3 threads twice: bit-identical */
        fr_fwd_outputs a = kt_outputs(&P, c->dt), b3 = kt_outputs(&P, c->dt);
        fr_error err;
        kt_run_fast(&P, NULL, 1, &a, &err);
        kt_run_fast(&P, NULL, 3, &b3, &err);
        bool same = same_bits(&a.attention_out, &b3.attention_out) && same_bits(&a.softmax_max, &b3.softmax_max) &&
                    same_bits(&a.softmax_sum, &b3.softmax_sum);
        printf("  %-28s threads 1 vs 3: %s\n", c->name, same ? "bit-identical" : "DIFFER  FAIL");
        if (!same) bad = 1;
        kt_free_outputs(&a), kt_free_outputs(&b3);
    }
    if (have_first) kt_free_outputs(&first);
    kt_free_ref(&R);
    kt_free_prob(&P);
    CHECK(!bad, "%s", c->name);
}

/* Alike test_kernels_golden.c:main: kept apart because each test has its own default seed and its own case table (sizes
 * and options for what it checks); a shared table would couple their coverage. */
int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 20261129u;
    printf("test_kernels_fwd: seed %llu (rerun: test_kernels_fwd %llu)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    /* dispatch: FLASHREF_ISA lowers the automatic choice (style.md 2); an unknown name is an error */
    {
        const fr_kops *best = fr_kops_get(FR_ISA_AUTO);
        const char *top = fr_isa_name(fr_isa_variant(fr_isa_count - 1)); /* the list's best */
        fr_isa sc = FR_ISA_AUTO, hi = FR_ISA_AUTO, none = FR_ISA_AUTO;
        fr_error err;
        bool ok = fr_isa_choose("scalar", &sc, NULL) == FR_OK && sc == FR_ISA_SCALAR;
        ok = ok && fr_isa_choose(top, &hi, NULL) == FR_OK && fr_isa_available(hi); /* above the CPU: its best */
        ok = ok && fr_isa_choose(NULL, &none, NULL) == FR_OK && none == hi;
        fr_status su = fr_isa_choose("no-such-isa", NULL, &err);
        ok = ok && su == FR_E_INVALID_ARG && strstr(err.msg, "no-such-isa") && strstr(err.msg, top); /* the names */
        ok = ok && best && fr_kops_get(FR_ISA_SCALAR) == fr_kops_table(FR_ISA_SCALAR) && fr_kops_get((fr_isa)77) == NULL;
        printf("  dispatch: auto = %s, FLASHREF_ISA=scalar -> %s, =%s -> %s, unknown -> %s (%s)%s\n",
               best ? best->name : "NULL", fr_isa_name(sc), top, fr_isa_name(hi), fr_status_name(su), err.msg,
               ok ? "" : "  FAIL");
        CHECK(ok, "the row above");
    }
    kt_case cs[64];
    int n = 0;
#define ADD(...) KT_ADD(cs, n, __VA_ARGS__)
    /* shapes across the 64 x 128 tiles: below, at, above, multiple */
    ADD(k_->name = "dense 1x1", k_->S1 = 1, k_->S2 = 1, k_->Dk = 1, k_->Dv = 1, k_->N1 = 1);
    ADD(k_->name = "dense 63x64 D17", k_->S1 = 63, k_->S2 = 64, k_->Dk = 17, k_->Dv = 9);
    ADD(k_->name = "dense 64x65 D64", k_->S1 = 64, k_->S2 = 65, k_->Dk = 64, k_->Dv = 64, k_->N1 = 4, k_->N2 = 2);
    ADD(k_->name = "dense 129x200 BSH", k_->layout = FR_BSH, k_->S1 = 129, k_->S2 = 200, k_->B = 2, k_->N1 = 3,
        k_->N2 = 1, k_->Dk = 24, k_->Dv = 16);
    ADD(k_->name = "dense SBH D72 Dv40", k_->layout = FR_SBH, k_->S1 = 70, k_->S2 = 128, k_->Dk = 72, k_->Dv = 40);
    ADD(k_->name = "dense BSND big-scores", k_->layout = FR_BSND, k_->scale = 4.0, k_->amp = 2.0);
    ADD(k_->name = "dense symmetric V", k_->vsym = true, k_->S1 = 100, k_->S2 = 300);
    ADD(k_->name = "causal symmetric V", k_->vsym = true, k_->mask = true,
        k_->sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, k_->S2 = 300);
    ADD(k_->name = "S2=0 (D1 rows)", k_->S2 = 0);
    /* sparse modes */
    ADD(k_->name = "mode0 mask+band", k_->mask = true, k_->pre = 20, k_->next = 5);
    ADD(k_->name = "mode0 neg next", k_->mask = true, k_->mask_density = 0.0, k_->pre = 100, k_->next = -3);
    ADD(k_->name = "mode1 user mask", k_->mask = true, k_->sparse_mode = FR_SPARSE_ALL_MASK, k_->pre = 1, k_->next = 1);
    ADD(k_->name = "mode2 causal", k_->mask = true, k_->sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL, k_->S1 = 200,
        k_->S2 = 140);
    ADD(k_->name = "mode3 rightdown", k_->mask = true, k_->sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, k_->S1 = 70,
        k_->S2 = 200);
    ADD(k_->name = "mode3 S1>S2 (D1)", k_->mask = true, k_->sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, k_->S1 = 150,
        k_->S2 = 70);
    ADD(k_->name = "mode4 band", k_->mask = true, k_->sparse_mode = FR_SPARSE_BAND, k_->pre = 30, k_->next = 10,
        k_->S1 = 100, k_->S2 = 180);
    ADD(k_->name = "mode5 prefix", k_->mask = true, k_->sparse_mode = FR_SPARSE_PREFIX, k_->prefix = k_pref1,
        k_->mask_density = 0.1, k_->S1 = 100, k_->S2 = 130);
    ADD(k_->name = "mode6 prefix B=2", k_->mask = true, k_->sparse_mode = FR_SPARSE_PREFIX_COMPRESS,
        k_->prefix = k_pref2, k_->B = 2, k_->S1 = 140, k_->S2 = 200);
    /* pse */
    ADD(k_->name = "pse1 full", k_->pse = FR_GEN_PSE_BNSS, k_->pse_type = FR_PSE_OUTER_ADD_MUL);
    ADD(k_->name = "pse0 full GQA", k_->pse = FR_GEN_PSE_BNSS, k_->pse_type = FR_PSE_OUTER_MUL_ADD, k_->N1 = 4,
        k_->N2 = 2);
    ADD(k_->name = "pse1 row-bcast", k_->pse = FR_GEN_PSE_BN1S, k_->pse_type = FR_PSE_OUTER_ADD_MUL, k_->B = 2);
    ADD(k_->name = "pse0 [1,N1,S1,S2]", k_->pse = FR_GEN_PSE_1NSS, k_->pse_type = FR_PSE_OUTER_MUL_ADD, k_->B = 2);
    ADD(k_->name = "alibi2 slopes[N1]", k_->pse = FR_GEN_PSE_SLOPES_N, k_->pse_type = FR_PSE_INNER_MUL_ADD,
        k_->S1 = 130, k_->S2 = 130, k_->q_start = 3, k_->kv_start = 1);
    ADD(k_->name = "alibi3 slopes[B,N1]", k_->pse = FR_GEN_PSE_SLOPES_BN, k_->pse_type = FR_PSE_INNER_MUL_ADD_SQRT,
        k_->B = 2, k_->S1 = 100, k_->S2 = 100, k_->mask = true, k_->sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL);
    ADD(k_->name = "pse compressed 1100", k_->pse = FR_GEN_PSE_COMP_B, k_->pse_type = FR_PSE_OUTER_ADD_MUL,
        k_->S1 = 1100, k_->S2 = 1100, k_->Dk = 8, k_->Dv = 8, k_->N1 = 1, k_->mask = true,
        k_->sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL);
    /* dropout, sink, rope */
    ADD(k_->name = "dropout 0.7", k_->keep_prob = 0.7);
    ADD(k_->name = "dropout+causal", k_->keep_prob = 0.5, k_->mask = true, k_->sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL,
        k_->S1 = 130);
    ADD(k_->name = "sink", k_->sink = true);
    ADD(k_->name = "sink + S1>S2 causal", k_->sink = true, k_->mask = true,
        k_->sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, k_->S1 = 100, k_->S2 = 64);
    ADD(k_->name = "rope 32+16", k_->Drope = 16);
    /* varlen */
    ADD(k_->name = "TND mode0 empties", k_->layout = FR_TND, k_->B = 4, k_->lq = k_lq, k_->lkv = k_lkv,
        k_->mask = true, k_->pre = 40, k_->next = 0, k_->mask_density = 0.1, k_->keep_prob = 0.8);
    ADD(k_->name = "TND mode8 alibi", k_->layout = FR_TND, k_->B = 3, k_->lq = k_lq8, k_->lkv = k_lkv8, k_->mask = true,
        k_->sparse_mode = FR_SPARSE_BAND_LEFT_UP_CAUSAL, k_->pre = 200, k_->next = 30, k_->pse = FR_GEN_PSE_SLOPES_N,
        k_->pse_type = FR_PSE_INNER_MUL_ADD, k_->q_start = 2, k_->kv_start = 5);
    ADD(k_->name = "TND mode7", k_->layout = FR_TND, k_->B = 4, k_->lq = k_lq, k_->lkv = k_lkv, k_->mask = true,
        k_->sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND, k_->pre = 200, k_->next = 0);
    /* 16-bit inputs */
    ADD(k_->name = "bf16 dense", k_->dt = FR_BF16, k_->N1 = 4, k_->N2 = 2, k_->Dk = 64, k_->Dv = 64);
    ADD(k_->name = "bf16 odd D causal drop", k_->dt = FR_BF16, k_->Dk = 33, k_->Dv = 31, k_->mask = true,
        k_->sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL, k_->keep_prob = 0.6, k_->S1 = 130);
    ADD(k_->name = "bf16 rope pse0", k_->dt = FR_BF16, k_->Drope = 8, k_->pse = FR_GEN_PSE_BNSS,
        k_->pse_type = FR_PSE_OUTER_MUL_ADD);
    ADD(k_->name = "fp16 dense", k_->dt = FR_F16, k_->Dk = 64, k_->Dv = 48);
    ADD(k_->name = "fp16 mode4 sink", k_->dt = FR_F16, k_->mask = true, k_->sparse_mode = FR_SPARSE_BAND, k_->pre = 10,
        k_->next = 40, k_->sink = true);
    int nmain = n;
    /* decode (S1 <= 16, S2 > 4096): keys split in chunks of 4096 merged in order; threads 1 vs 3 bit-identical */
    ADD(k_->name = "decode S1=1 S2=9000", k_->S1 = 1, k_->S2 = 9000, k_->N1 = 4, k_->N2 = 2, k_->Dk = 64, k_->Dv = 64);
    ADD(k_->name = "decode S1=16 causal sink", k_->S1 = 16, k_->S2 = 8300, k_->N1 = 2, k_->N2 = 1, k_->Dk = 32,
        k_->Dv = 32, k_->mask = true, k_->sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, k_->sink = true);
    ADD(k_->name = "decode bf16 drop pse", k_->dt = FR_BF16, k_->S1 = 3, k_->S2 = 8193, k_->N1 = 2, k_->N2 = 2,
        k_->Dk = 64, k_->Dv = 64, k_->keep_prob = 0.8, k_->pse = FR_GEN_PSE_BNSS, k_->pse_type = FR_PSE_OUTER_ADD_MUL);
    ADD(k_->name = "decode band mode4", k_->S1 = 2, k_->S2 = 12300, k_->N1 = 2, k_->N2 = 2, k_->Dk = 16,
        k_->Dv = 16, k_->mask = true, k_->sparse_mode = FR_SPARSE_BAND, k_->pre = 12300, k_->next = -5000);
    /* bf16 decode reads K and V rows in place (dot_rows_bf16 / axpy_rows_bf16): PARTIAL tiles, a masked column whose
     * K is +Inf and V NaN (must not leak), GQA with a sink, a head dim with a vector tail */
    ADD(k_->name = "decode bf16 band mode4", k_->dt = FR_BF16, k_->S1 = 2, k_->S2 = 12300, k_->N1 = 2, k_->N2 = 2,
        k_->Dk = 16, k_->Dv = 16, k_->mask = true, k_->sparse_mode = FR_SPARSE_BAND, k_->pre = 12300, k_->next = -5000);
    ADD(k_->name = "decode bf16 poisoned column", k_->dt = FR_BF16, k_->S1 = 4, k_->S2 = 9000, k_->N1 = 2, k_->N2 = 2,
        k_->Dk = 64, k_->Dv = 64, k_->mask = true, k_->poison = 4100);
    ADD(k_->name = "decode bf16 S1=16 GQA causal sink", k_->dt = FR_BF16, k_->S1 = 16, k_->S2 = 8300, k_->N1 = 4,
        k_->N2 = 2, k_->Dk = 48, k_->Dv = 136, k_->mask = true, k_->sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL,
        k_->sink = true);
    for (int k = 0; k < n; k++) run_case(&cs[k], seed + (uint64_t)k, k % 5 == 0 || k >= nmain);
    return fr_test_exit("test_kernels_fwd");
}
