/* The golden's product C += A . B: the scalar reference (C99 fma, the contract of golden_gemm.h written plainly),
 * the choice of variant (asked of the one CPU dispatcher, core/isa.c), and the skipping path for non-finite
 * operands. */
#include "golden/golden_gemm.h"
#include "core/core.h"
#include "core/isa.h"

#include <math.h>

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

fr_status gd_gemm_select(fr_isa want, fr_isa *isa, fr_error *err) {
    if (!fr_isa_known(want)) return fr_fail(err, FR_E_INVALID_ARG, "engine.isa: unknown value %d", (int)want);
    if (want == FR_ISA_AUTO) {
        fr_status st = fr_isa_selected(&want, err); /* an unknown FLASHREF_ISA is FR_E_INVALID_ARG, as for the kernels */
        if (st != FR_OK) return st;
    }
    fr_isa v = fr_isa_family(want); /* the golden's products are one per base ISA family (core/variants.inc) */
    if (!fr_isa_available(v))
        return fr_fail(err, FR_E_NOT_AVAILABLE, "golden: engine.isa %s does not run on this CPU", fr_isa_name(want));
    *isa = v;
    return FR_OK;
}

fr_isa gd_gemm_isa(fr_isa want) {
    fr_isa v = FR_ISA_AUTO;
    return gd_gemm_select(want, &v, NULL) == FR_OK ? v : FR_ISA_AUTO;
}

fr_status gd_gemm_pick(fr_isa want, gd_gemm_fn *fn, fr_error *err) {
    fr_isa v = FR_ISA_AUTO;
    *fn = NULL;
    fr_status st = gd_gemm_select(want, &v, err);
    if (st != FR_OK) return st;
#define GD_FN(name, e)                                                                                                 \
    if (v == e) *fn = gd_gemm_acc_##name;
    GD_GEMM_VARIANTS(GD_FN)
#undef GD_FN
    return *fn ? FR_OK : fr_fail(err, FR_E_INTERNAL, "golden: no product for %s", fr_isa_name(v));
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
