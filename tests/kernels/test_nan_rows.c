/* NaN propagation (docs/golden.md 4; issue: one NaN in the query came back from the fast and emulate engines as a
 * fully masked row 0, -FLT_MAX, FLT_MAX while the golden gave NaN). One NaN planted in a query row and one in a key
 * row that some query rows see; then, for the golden, every fast ISA variant the CPU has (others SKIPPED loudly)
 * and the emulator's ideal pipeline and every preset:
 *   forward: a row is all NaN (every attention_out element, softmax_max and softmax_sum) exactly where the golden's
 *            is, never partly; every other row is bit-identical to the same engine's run on the clean inputs;
 *            the poisoned query row is a NaN row of the golden (independent check of the golden itself);
 *   backward (from the golden's poisoned forward): dq, dk, dv (and dsink) NaN exactly where the golden's are, e.g.
 *            dk / dv of a key the NaN row does not see stay finite (0 x NaN must not leak); finite elements within
 *            a loose bound of the golden (2e-4 fp32, 3e-2 16-bit or an emulator preset, relative to the tensor's
 *            largest magnitude).
 * Usage: test_nan_rows [seed]. */
#include "common/check.h"
#include "core/isa.h"
#include "flashref_emulate.h"
#include "kt_harness.h"

#define NOLIM FR_TOKENS_MAX
#define MAXE 16

static const int64_t k_lq[3] = {40, 0, 70};
static const int64_t k_lkv[3] = {90, 5, 130};

typedef struct eng {
    char name[48];
    fr_engine e;
    fr_numerics nc;
} eng;

static eng E[MAXE];
static int ne;

/* The golden first, then every fast variant the CPU has, the emulator's ideal pipeline and its presets. */
static int engines(void) {
    int n = 0;
    E[n].e = fr_engine_default(FR_ENGINE_GOLDEN);
    snprintf(E[n++].name, sizeof E[0].name, "golden");
#define FR_VARIANT(vname, visa, ...)                                                                                   \
    if (fr_isa_available(visa)) {                                                                                      \
        E[n].e = fr_engine_default(FR_ENGINE_FAST);                                                                    \
        E[n].e.isa = visa;                                                                                             \
        snprintf(E[n++].name, sizeof E[0].name, "fast %s", #vname);                                                  \
    } else {                                                                                                           \
        printf("  fast %-12s SKIPPED: this CPU lacks it (its NaN handling is the shared driver's: fwd.c, bwd.c)\n", \
               #vname);                                                                                                \
    }
#include "core/variants.inc"
#undef FR_VARIANT
    E[n].e = fr_engine_default(FR_ENGINE_EMULATE);
    snprintf(E[n++].name, sizeof E[0].name, "emulate ideal");
    for (const char *const *p = fr_numerics_preset_names(); *p && n < MAXE; p++) {
        fr_error err;
        if (fr_numerics_preset(*p, &E[n].nc, &err) != FR_OK) continue;
        E[n].e = fr_engine_default(FR_ENGINE_EMULATE);
        E[n].e.numerics = &E[n].nc;
        snprintf(E[n].name, sizeof E[0].name, "emulate %s", *p);
        n++;
    }
    return n;
}

/* Row (b, h, i): 0 = no NaN, 1 = all NaN (out, max, sum), 2 = partly NaN (always wrong). */
static int nan_row(const kt_prob *P, const fr_fwd_outputs *o, int64_t q0, int64_t b, int64_t h, int64_t i) {
    const kt_case *c = &P->c;
    int64_t nn = 0, tot = 0;
    for (int64_t d = 0; d < c->Dv; d++, tot++)
        nn += isnan(kt_get(&o->attention_out, fr_layout_offset(&o->attention_out, c->layout, c->Dv, q0, b, h, i, d)));
    for (int k = 0; k < 8; k++, tot += 2) {
        nn += isnan(kt_get(&o->softmax_max, fr_softmax_offset(&o->softmax_max, c->layout, 0, q0, b, h, i, k)));
        nn += isnan(kt_get(&o->softmax_sum, fr_softmax_offset(&o->softmax_sum, c->layout, 0, q0, b, h, i, k)));
    }
    return nn == 0 ? 0 : nn == tot ? 1 : 2;
}

static bool same_row(const kt_prob *P, const fr_fwd_outputs *a, const fr_fwd_outputs *b_, int64_t q0, int64_t b,
                     int64_t h, int64_t i) {
    const kt_case *c = &P->c;
    for (int64_t d = 0; d < c->Dv; d++) {
        int64_t off = fr_layout_offset(&a->attention_out, c->layout, c->Dv, q0, b, h, i, d);
        if (memcmp((char *)a->attention_out.data + off * (int64_t)fr_dtype_size(a->attention_out.dtype),
                   (char *)b_->attention_out.data + off * (int64_t)fr_dtype_size(a->attention_out.dtype),
                   fr_dtype_size(a->attention_out.dtype)))
            return false;
    }
    for (int k = 0; k < 8; k++) {
        int64_t om = fr_softmax_offset(&a->softmax_max, c->layout, 0, q0, b, h, i, k);
        int64_t os = fr_softmax_offset(&a->softmax_sum, c->layout, 0, q0, b, h, i, k);
        if (((float *)a->softmax_max.data)[om] != ((float *)b_->softmax_max.data)[om] ||
            ((float *)a->softmax_sum.data)[os] != ((float *)b_->softmax_sum.data)[os])
            return false;
    }
    return true;
}

/* Every element of t and ref: NaN in the same places; the others within tol x max |ref|. */
static void grad_check(const char *cn, const char *en, const char *what, const fr_tensor *t, const fr_tensor *ref,
                       double tol, int64_t *nnan) {
    if (!fr_tensor_present(ref)) return;
    int64_t n = kt_numel(ref), mism = 0, first = -1, far = 0;
    double amax = 0, emax = 0;
    for (int64_t k = 0; k < n; k++) {
        double r = kt_get(ref, k);
        if (!isnan(r) && fabs(r) > amax) amax = fabs(r);
    }
    for (int64_t k = 0; k < n; k++) {
        double r = kt_get(ref, k), v = kt_get(t, k);
        if (isnan(r)) ++*nnan;
        if (isnan(r) != isnan(v)) {
            if (first < 0) first = k;
            mism++;
        } else if (!isnan(r) && !(fabs(v - r) <= tol * amax + 1e-30)) {
            far++;
            if (fabs(v - r) > emax || isnan(v - r)) emax = fabs(v - r);
        }
    }
    CHECK(mism == 0, "[%s %s] %s: %lld NaN positions differ from the golden's, first at %lld (%g vs golden %g)", cn, en,
          what, (long long)mism, (long long)first, first >= 0 ? kt_get(t, first) : 0.0,
          first >= 0 ? kt_get(ref, first) : 0.0);
    CHECK(far == 0, "[%s %s] %s: %lld finite elements off the golden by up to %g (bound %g)", cn, en, what,
          (long long)far, emax, tol * amax);
}

static void run_case(const kt_case *c, uint64_t seed, bool bwd) {
    kt_prob P;
    kt_build(&P, c, seed);
    fr_fwd_outputs clean[MAXE], dirty[MAXE];
    bool ran[MAXE];
    fr_error err;
    for (int k = 0; k < ne; k++) {
        clean[k] = kt_outputs(&P, c->dt);
        fr_status st = fr_fwd(&P.p, &P.in, &clean[k], &E[k].e, &err);
        ran[k] = st == FR_OK;
        if (st == FR_E_UNSUPPORTED) printf("  %-26s %-28s SKIPPED: %s\n", c->name, E[k].name, err.msg);
        else CHECK(st == FR_OK, "[%s %s] clean run: %s", c->name, E[k].name, err.msg);
    }
    /* The poisoned query row: the first batch with rows, head N1 - 1, a row with a taking-part position (its clean
     * golden row is not D1); the poisoned key: kv head 0, the middle key of the first batch with keys. */
    int64_t pb_ = -1, pi = -1, kb = -1, q0, S1b, k0, S2b;
    for (int64_t b = 0; b < c->B && pb_ < 0; b++) {
        kt_rows(&P, b, &q0, &S1b, &k0, &S2b);
        for (int64_t i = S1b / 2; i < S1b && pb_ < 0; i++) {
            float m = ((float *)clean[0].softmax_max.data)[fr_softmax_offset(&clean[0].softmax_max, c->layout, 0,
                                                                              q0, b, c->N1 - 1, i, 0)];
            if (m > -FLT_MAX) pb_ = b, pi = i;
        }
    }
    for (int64_t b = 0; b < c->B && kb < 0; b++) {
        kt_rows(&P, b, &q0, &S1b, &k0, &S2b);
        if (S2b > 0) kb = b;
    }
    CHECK(pb_ >= 0 && kb >= 0, "[%s] no live row or no key to poison", c->name);
    if (pb_ < 0 || kb < 0) goto done;
    kt_rows(&P, pb_, &q0, &S1b, &k0, &S2b);
    kt_put(&P.in.query, fr_layout_offset(&P.in.query, c->layout, c->Dk, q0, pb_, c->N1 - 1, pi, c->Dk / 2), NAN);
    int64_t kq0, kS1, kk0, kS2;
    kt_rows(&P, kb, &kq0, &kS1, &kk0, &kS2);
    int64_t pj = kS2 / 2;
    kt_put(&P.in.key, fr_layout_offset(&P.in.key, c->layout, c->Dk, kk0, kb, 0, pj, 0), NAN);
    for (int k = 0; k < ne; k++) {
        dirty[k] = kt_outputs(&P, c->dt);
        if (!ran[k]) continue;
        fr_status st = fr_fwd(&P.p, &P.in, &dirty[k], &E[k].e, &err);
        CHECK(st == FR_OK, "[%s %s] poisoned run: %s", c->name, E[k].name, err.msg);
    }
    int64_t golden_nan = 0;
    CHECK(nan_row(&P, &dirty[0], q0, pb_, c->N1 - 1, pi) == 1, "[%s] golden: the row with a NaN query is not NaN",
          c->name);
    for (int k = 0; k < ne; k++) {
        if (!ran[k]) continue;
        int64_t bad = 0, nanr = 0;
        for (int64_t b = 0; b < c->B; b++) {
            int64_t r0, s1, kr0, s2;
            kt_rows(&P, b, &r0, &s1, &kr0, &s2);
            for (int64_t h = 0; h < c->N1; h++)
                for (int64_t i = 0; i < s1; i++) {
                    int g = nan_row(&P, &dirty[0], r0, b, h, i), x = nan_row(&P, &dirty[k], r0, b, h, i);
                    bool ok = g == x && x != 2 && (x == 1 || same_row(&P, &dirty[k], &clean[k], r0, b, h, i));
                    nanr += x == 1;
                    if (!ok && bad++ < 3)
                        fprintf(stderr, "  [%s %s] row b=%lld h=%lld i=%lld: golden %s, this %s\n", c->name,
                                E[k].name, (long long)b, (long long)h, (long long)i,
                                g ? "NaN row" : "finite", x == 2 ? "partly NaN" : x ? "NaN row" : "finite (changed?)");
                }
        }
        if (k == 0) golden_nan = nanr;
        CHECK(bad == 0, "[%s %s] %lld rows differ from the golden's NaN rows or from the clean run", c->name,
              E[k].name, (long long)bad);
        printf("  %-26s %-28s fwd: %lld NaN rows%s\n", c->name, E[k].name, (long long)nanr, bad ? "  FAIL" : "");
    }
    CHECK(golden_nan >= 2, "[%s] golden: %lld NaN rows (the NaN key reached none?)", c->name, (long long)golden_nan);
    if (bwd) {
        fr_bwd_inputs bi = kt_bwd_inputs(&P, &dirty[0], seed);
        fr_bwd_outputs G[MAXE];
        for (int k = 0; k < ne; k++) {
            G[k] = kt_grads(&P, c->dt);
            if (!ran[k]) continue;
            fr_status st = fr_bwd(&P.p, &bi, &G[k], &E[k].e, &err);
            if (st == FR_E_UNSUPPORTED) {
                printf("  %-26s %-28s bwd SKIPPED: %s\n", c->name, E[k].name, err.msg);
                ran[k] = false;
                continue;
            }
            CHECK(st == FR_OK, "[%s %s] backward: %s", c->name, E[k].name, err.msg);
        }
        for (int k = 1; k < ne; k++) {
            if (!ran[k]) continue;
            /* the presets round P or dS to 16 bits whatever the input dtype */
            double tol = c->dt == FR_F32 && E[k].e.numerics == NULL ? 2e-4 : 3e-2;
            int64_t nn = 0;
            grad_check(c->name, E[k].name, "dq", &G[k].dq, &G[0].dq, tol, &nn);
            grad_check(c->name, E[k].name, "dk", &G[k].dk, &G[0].dk, tol, &nn);
            grad_check(c->name, E[k].name, "dv", &G[k].dv, &G[0].dv, tol, &nn);
            grad_check(c->name, E[k].name, "dsink", &G[k].dsink, &G[0].dsink, 1e30, &nn);
            printf("  %-26s %-28s bwd: %lld NaN gradient elements (the golden's)\n", c->name, E[k].name,
                   (long long)nn);
        }
        for (int k = 0; k < ne; k++) kt_free_grads(&G[k]);
        free(bi.dy.data);
    }
done:
    for (int k = 0; k < ne; k++) {
        kt_free_outputs(&clean[k]);
        if (pb_ >= 0 && kb >= 0) kt_free_outputs(&dirty[k]);
    }
    kt_free_prob(&P);
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 20261203u;
    printf("test_nan_rows: seed %llu (rerun: test_nan_rows %llu)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    ne = engines();
    kt_case cs[16];
    int n = 0;
#define ADD(...) KT_ADD(cs, n, __VA_ARGS__)
    /* across key tiles (FR_K_BN 128) and query sub-tiles (64); masked: the NaN key is excluded for some rows */
    ADD(k_->name = "dense fp32 70x300", k_->S1 = 70, k_->S2 = 300);
    ADD(k_->name = "causal mode3 fp32", k_->mask = true, k_->sparse_mode = 3, k_->S1 = 130, k_->S2 = 200);
    ADD(k_->name = "user mask bf16", k_->dt = FR_BF16, k_->mask = true, k_->S1 = 70, k_->S2 = 260);
    ADD(k_->name = "band fp16 GQA", k_->dt = FR_F16, k_->mask = true, k_->mask_density = 0.0, k_->pre = 40,
        k_->next = 3, k_->N1 = 4, k_->N2 = 2);
    /* decode: S1 <= 16, S2 > 4096 splits the keys in chunks merged in order (fwd.c); bf16 reads rows in place */
    ADD(k_->name = "decode fp32 4x4500", k_->S1 = 4, k_->S2 = 4500, k_->Dk = 16, k_->Dv = 16);
    ADD(k_->name = "decode bf16 causal", k_->dt = FR_BF16, k_->S1 = 8, k_->S2 = 4300, k_->mask = true,
        k_->sparse_mode = 3, k_->Dk = 16, k_->Dv = 16);
    ADD(k_->name = "sink + dropout", k_->sink = true, k_->keep_prob = 0.8, k_->S1 = 40, k_->S2 = 150);
    ADD(k_->name = "top-k W=24", k_->W = 24, k_->S1 = 40, k_->S2 = 90);
    ADD(k_->name = "TND varlen causal", k_->layout = FR_TND, k_->B = 3, k_->lq = k_lq, k_->lkv = k_lkv,
        k_->mask = true, k_->sparse_mode = 3);
    ADD(k_->name = "pse BSH rope", k_->layout = FR_BSH, k_->pse = 1, k_->Drope = 8, k_->S1 = 66, k_->S2 = 140);
#undef ADD
    for (int k = 0; k < n; k++) run_case(&cs[k], seed + (uint64_t)k, true);
    return fr_test_exit("test_nan_rows");
}
