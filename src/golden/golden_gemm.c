/* The golden's product C += A . B: the scalar reference (C99 fma, the contract of golden_gemm.h written plainly),
 * the choice of variant, and the skipping path for non-finite operands. */
#include "golden/golden_gemm.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* C: [M][N] += A: [M][K] . B: [K][N]; element (r, c) is the fma chain over k = 0 .. K-1. */
void gd_gemm_acc_scalar(int64_t M, int64_t N, int64_t K, const double *A, int64_t rsa, int64_t csa, const double *B,
                        int64_t ldb, double *C, int64_t ldc) {
    for (int64_t r = 0; r < M; r++)
        for (int64_t c = 0; c < N; c++) {
            double s = C[r * ldc + c];
            for (int64_t k = 0; k < K; k++) s = fma(A[r * rsa + k * csa], B[k * ldb + c], s);
            C[r * ldc + c] = s;
        }
}

static bool isa_available(fr_isa isa) {
    switch (isa) {
    case FR_ISA_AUTO:
    case FR_ISA_SCALAR:
        return true;
    case FR_ISA_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case FR_ISA_AVX512:
    case FR_ISA_AVX512_BF16:
    case FR_ISA_AMX: /* the golden's fp64 product has no AMX variant: AVX-512 serves these */
        return __builtin_cpu_supports("avx512f") && isa_available(FR_ISA_AVX2);
    }
    return false;
}

static fr_isa env_isa(void) {
    const char *v = getenv("FLASHREF_ISA");
    if (!v) return FR_ISA_AUTO;
#define GD_ENV(name, e, str)                                                                                           \
    if (!strcmp(v, str)) return e;
    GD_GEMM_VARIANTS(GD_ENV)
#undef GD_ENV
    if (!strcmp(v, "avx512bf16") || !strcmp(v, "amx")) return FR_ISA_AVX512;
    return FR_ISA_AUTO; /* unknown names are ignored: the library cannot print */
}

static _Atomic int best_cached = -1; /* the cpuid result, identical for every thread that races to fill it */

fr_isa gd_gemm_isa(fr_isa want) {
    if (want == FR_ISA_AVX512_BF16 || want == FR_ISA_AMX) want = FR_ISA_AVX512;
    if (want != FR_ISA_AUTO) return isa_available(want) ? want : FR_ISA_AUTO;
    int v = atomic_load_explicit(&best_cached, memory_order_relaxed);
    if (v < 0) {
        v = isa_available(FR_ISA_AVX512) ? FR_ISA_AVX512 : isa_available(FR_ISA_AVX2) ? FR_ISA_AVX2 : FR_ISA_SCALAR;
        atomic_store_explicit(&best_cached, v, memory_order_relaxed);
    }
    fr_isa best = (fr_isa)v, env = env_isa();
    if (env != FR_ISA_AUTO && env < best) best = env; /* scalar < avx2 < avx512 */
    return best;
}

gd_gemm_fn gd_gemm_pick(fr_isa want) {
    switch (gd_gemm_isa(want)) {
    case FR_ISA_SCALAR:
        return gd_gemm_acc_scalar;
    case FR_ISA_AVX2:
        return gd_gemm_acc_avx2;
    case FR_ISA_AVX512:
        return gd_gemm_acc_avx512;
    default:
        return NULL;
    }
}

void gd_mm(gd_gemm_fn mm, int64_t M, int64_t N, int64_t K, const double *A, int64_t rsa, int64_t csa, const double *B,
           int64_t ldb, double *C, int64_t ldc) {
    int finite = 1;
    for (int64_t k = 0; k < K; k++) {
        const double *b = B + k * ldb;
        for (int64_t c = 0; c < N; c++) finite &= (b[c] - b[c]) == 0.0; /* NaN for an Inf or a NaN */
    }
    if (finite) {
        mm(M, N, K, A, rsa, csa, B, ldb, C, ldc);
        return;
    }
    for (int64_t r = 0; r < M; r++)
        for (int64_t c = 0; c < N; c++) {
            double s = C[r * ldc + c];
            for (int64_t k = 0; k < K; k++) {
                double a = A[r * rsa + k * csa];
                if (a != 0.0) s = fma(a, B[k * ldb + c], s);
            }
            C[r * ldc + c] = s;
        }
}
