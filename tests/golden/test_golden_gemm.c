/* The golden's product C += A . B (src/golden/golden_gemm.h): every variant the CPU runs gives the bits of the scalar
 * reference (the fma chain over k, per element), on seeded random shapes below, at and above each tile (8 x 16
 * AVX-512, 6 x 8 AVX2; every variant of GD_GEMM_VARIANTS), with A stored plain or transposed, nonzero C on entry; and the scalar reference is within
 * the fma-chain error bound of a long double sum. A variant the CPU lacks is SKIPPED loudly. */
#include "common/check.h"
#include "golden/golden_gemm.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double unif(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) * 0x1.0p-53 * 2.0 - 1.0;
}

int main(void) {
    const uint64_t seed = rng;
    printf("test_golden_gemm: seed %llu\n", (unsigned long long)seed);
    static const int64_t sizes[] = {0, 1, 2, 5, 6, 7, 8, 9, 15, 16, 17, 24, 33, 64, 129};
    const int ns = (int)(sizeof sizes / sizeof sizes[0]);
    struct {
        const char *name;
        gd_gemm_fn fn;
        fr_isa isa;
    } vars[] = { /* the golden's product variants (the scalar one is the reference) */
#define GD_VAR(name, e) {#name, gd_gemm_acc_##name, e},
        GD_GEMM_VARIANTS(GD_VAR)
#undef GD_VAR
    };
    enum { NV = (int)(sizeof vars / sizeof vars[0]) };
    int have[NV];
    for (int v = 0; v < NV; v++) {
        have[v] = vars[v].isa != FR_ISA_SCALAR && gd_gemm_isa(vars[v].isa) == vars[v].isa;
        if (!have[v] && vars[v].isa != FR_ISA_SCALAR) printf("SKIP: variant %s: this CPU lacks the ISA\n", vars[v].name);
    }
    int64_t cases = 0;
    double worst = 0.0;
    for (int t = 0; t < 400; t++) {
        int64_t M = sizes[(rng >> 7) % (uint64_t)ns];
        unif();
        int64_t N = sizes[(rng >> 9) % (uint64_t)ns];
        unif();
        int64_t K = sizes[(rng >> 11) % (uint64_t)ns];
        int trans = (int)((rng >> 13) & 1);
        int64_t lda = (trans ? M : K) + (int64_t)((rng >> 17) % 3), ldb = N + (int64_t)((rng >> 19) % 3);
        int64_t ldc = N + (int64_t)((rng >> 23) % 3);
        int64_t rsa = trans ? 1 : lda, csa = trans ? lda : 1;
        size_t na = (size_t)((trans ? K : M) * lda + 1), nb = (size_t)(K * ldb + 1), nc = (size_t)(M * ldc + 1);
        double *A = malloc(na * sizeof(double)), *B = malloc(nb * sizeof(double));
        double *C0 = malloc(nc * sizeof(double)), *C = malloc(nc * sizeof(double)), *Cr = malloc(nc * sizeof(double));
        for (size_t i = 0; i < na; i++) A[i] = unif();
        for (size_t i = 0; i < nb; i++) B[i] = unif();
        for (size_t i = 0; i < nc; i++) C0[i] = unif();
        memcpy(Cr, C0, nc * sizeof(double));
        gd_gemm_acc_scalar(M, N, K, A, rsa, csa, B, ldb, Cr, ldc);
        /* The reference against a long double sum: |err| <= (K + 1) eps sum |terms|. */
        for (int64_t r = 0; r < M; r++)
            for (int64_t c = 0; c < N; c++) {
                long double s = C0[r * ldc + c], mag = fabs(C0[r * ldc + c]);
                for (int64_t k = 0; k < K; k++) {
                    long double p = (long double)A[r * rsa + k * csa] * (long double)B[k * ldb + c];
                    s += p;
                    mag += fabsl(p);
                }
                double err = (double)fabsl((long double)Cr[r * ldc + c] - s),
                       bound = (double)(K + 1) * DBL_EPSILON * (double)mag;
                CHECK(err <= bound, "scalar M=%lld N=%lld K=%lld (%lld,%lld): err %.3e > bound %.3e", (long long)M,
                      (long long)N, (long long)K, (long long)r, (long long)c, err, bound);
                if (mag > 0 && err / (double)mag > worst) worst = err / (double)mag;
            }
        for (int v = 0; v < NV; v++) {
            if (!have[v]) continue;
            memcpy(C, C0, nc * sizeof(double));
            vars[v].fn(M, N, K, A, rsa, csa, B, ldb, C, ldc);
            /* also: nothing outside the M x N block is written */
            CHECK(memcmp(C, Cr, nc * sizeof(double)) == 0,
                  "%s M=%lld N=%lld K=%lld trans=%d: not bit-identical to the scalar reference", vars[v].name,
                  (long long)M, (long long)N, (long long)K, trans);
        }
        cases++;
        free(A), free(B), free(C0), free(C), free(Cr);
    }
    printf("test_golden_gemm: %lld shapes, worst |err| / sum|terms| of the reference %.2e (seed %llu)\n",
           (long long)cases, worst, (unsigned long long)seed);
    return fr_test_exit("test_golden_gemm");
}
