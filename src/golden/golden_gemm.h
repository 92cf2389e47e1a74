/* The golden's one product, C += A . B in fp64, and its variants (the scalar reference and one SIMD variant per base
 * ISA family).
 *
 * Contract, the same for every variant: for each (r, c), C[r][c] is updated by the chain
 *     for k = 0 .. K-1:  C[r][c] = fma(A[r][k], B[k][c], C[r][c])
 * in that order, each step one correctly rounded fused multiply-add. A[r][k] is A[r * rsa + k * csa] (A may be the
 * transpose of a stored matrix), B[k][c] is B[k * ldb + c], C[r][c] is C[r * ldc + c]. The chain of an element
 * depends on nothing else (not on the tile it sits in, the variant, or the thread), so every variant gives
 * bit-identical results: the SIMD variants vectorize across c (and r), never across k. */
#ifndef FR_GOLDEN_GEMM_H
#define FR_GOLDEN_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "flashref.h"

typedef void (*gd_gemm_fn)(int64_t M, int64_t N, int64_t K, const double *A, int64_t rsa, int64_t csa, const double *B,
                           int64_t ldb, double *C, int64_t ldc);

/* The variants (X-macro list, style.md 5): name (gd_gemm_acc_<name>), fr_isa. One per base ISA family of the library's
 * variant list (core/variants.inc's family column): the variant whose code serves a whole family (tests/variants
 * checks both ways). */
#define GD_GEMM_VARIANTS(X)                                                                                            \
    X(scalar, FR_ISA_SCALAR)                                                                                           \
    X(avx2, FR_ISA_AVX2)                                                                                               \
    X(avx512, FR_ISA_AVX512)

void gd_gemm_acc_scalar(int64_t M, int64_t N, int64_t K, const double *A, int64_t rsa, int64_t csa, const double *B,
                        int64_t ldb, double *C, int64_t ldc);
void gd_gemm_acc_avx2(int64_t M, int64_t N, int64_t K, const double *A, int64_t rsa, int64_t csa, const double *B,
                      int64_t ldb, double *C, int64_t ldc);
void gd_gemm_acc_avx512(int64_t M, int64_t N, int64_t K, const double *A, int64_t rsa, int64_t csa, const double *B,
                        int64_t ldb, double *C, int64_t ldc);

/* The variant for an engine request (the one place the golden chooses, style.md 1-2), asked of the one CPU
 * dispatcher (core/isa.c): want when set (its family must run on this CPU; FLASHREF_ISA plays no part, as for the
 * kernels), else fr_isa_selected (the best the CPU has, lowered by FLASHREF_ISA). *isa: the base ISA family of that
 * variant (fr_isa_family: a variant that adds bf16 arithmetic runs its family's product, the golden having no bf16
 * arithmetic), one of GD_GEMM_VARIANTS. FR_E_INVALID_ARG for an unknown want or an unknown FLASHREF_ISA;
 * FR_E_NOT_AVAILABLE when want does not run here. */
fr_status gd_gemm_select(fr_isa want, fr_isa *isa, fr_error *err);
/* gd_gemm_select's variant, FR_ISA_AUTO where it fails. */
fr_isa gd_gemm_isa(fr_isa want);
/* The product function of gd_gemm_select's variant (*fn = NULL and its status where it fails). */
fr_status gd_gemm_pick(fr_isa want, gd_gemm_fn *fn, fr_error *err);

/* C += A . B with the contract above, except that terms with A[r][k] == 0 are skipped: for finite B that is the
 * same value (fma(0, b, c) = c, up to the sign of a zero c), and where B holds an Inf or a NaN a zero weight (masked,
 * dropped or underflowed position) must contribute nothing. Uses mm when B is finite, a scalar skipping loop
 * otherwise: the choice depends on the data only, never on the variant or the thread count. */
void gd_mm(gd_gemm_fn mm, int64_t M, int64_t N, int64_t K, const double *A, int64_t rsa, int64_t csa, const double *B,
           int64_t ldb, double *C, int64_t ldc);

#endif
