/* Internal interface of the fast engine: the per-ISA microkernel table and the fused drivers.
 *
 * Naming (style.md 4): fr_k_<op>_<dtype>_<tile>_<isa>, e.g. fr_k_gemm_f32_6x64_avx512 is the fp32 GEMM microkernel
 * that keeps a 6-row x 64-column block of C in registers, fr_k_expsum_f32_avx512 the row exp-and-sum. The drivers
 * (fwd.c, bwd.c) are portable C and see only the fr_kops table; every slot of every resolved table is filled (a
 * variant inherits what it does not override from the one below it, scalar underneath, style.md 1) and tested against
 * the scalar slot (tests/kernels/test_kernels_slots.c). The microkernel tiles are a column of core/variants.inc. */
#ifndef FR_KERNELS_KERNELS_H
#define FR_KERNELS_KERNELS_H

#include "core/problem.h"

/* Tile sizes of the drivers: BM query rows x BN key rows (a 64 x 128 tile of S). d_scale blocks (128 / 256) are
 * multiples of BN. */
#define FR_K_BM 64
#define FR_K_BN 128
/* Query rows per forward task (at most): its sub-tiles of FR_K_BM rows share each packed key tile. The driver uses
 * FR_K_BQ for head dims up to 128 (packing cost / 8, +4% measured) and half of it above (keeps Q and O in L2). */
#define FR_K_BQ 512
/* GEMM k blocking: every microkernel sums k in blocks of FR_K_KB terms in fresh registers and adds each block to C
 * (two-level summation: the rounding error grows with sqrt(KB) + sqrt(k / KB), not sqrt(k); it is what keeps the fp32
 * rel-L2 under 2e-7 where a straightforward loop is at 3e-7; 32 rather than 16: 6% faster, still ~1e-7). */
#define FR_K_KB 32

/* The slots of a kernel table, one function type each (the table below and the inheritance in dispatch.c are both
 * expanded from FR_KOPS_SLOTS, so a new slot cannot be left out of either). */
/* C[m x n] = (acc ? C : 0) + A[m x k] . B[k x n]; row-major with leading dims; fp32 accumulation in k order in blocks
 * of FR_K_KB (each block summed from 0, then added to C). */
typedef void fr_k_gemm_f32_fn(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const float *B,
                              int64_t ldb, float *C, int64_t ldc, bool acc);
/* Largest of x[0..n) (-inf for n = 0). */
typedef float fr_k_max_f32_fn(int64_t n, const float *x);
/* x[j] = exp(x[j] - sub) in place (exp(-inf) = 0); returns the sum. */
typedef float fr_k_expsum_f32_fn(int64_t n, float *x, float sub);
/* dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols. */
typedef void fr_k_transpose_f32_fn(int64_t rows, int64_t cols, const float *src, int64_t lds, float *dst,
                                   int64_t ldd);
/* acc[e] += t[e] for e < n with Kahan compensation comp (acc - comp is the running sum). */
typedef void fr_k_kahan_add_f32_fn(int64_t n, float *acc, float *comp, const float *t);
/* bf16 helpers of the bf16 GEMM path: out[j] = bf16 bits of x[j] rounded half away from zero (D3; x >= 0 and finite:
 * P), out[n] = 0 when n is odd; and V rows interleaved into pairs along j: out[(j / 2) * dv + d] = v[j][d] |
 * v[j + 1][d] << 16 (a zero high half for the last row when n is odd). */
typedef void fr_k_pack_bf16_away_fn(int64_t n, const float *x, uint16_t *out);
typedef void fr_k_interleave_bf16_fn(int64_t n, int64_t dv, const uint16_t *v, int64_t ldv, uint32_t *out);
/* bf16 GEMM: C[m x n] = (acc ? C : 0) + A . B with A bf16 [m x 2*k2] (row r at A + r*lda2 as k2 bf16 pairs) and B bf16
 * pair-packed [k2][n] (pair p of column c at B[p*ldb + c]); products exact, fp32 accumulation (the hardware dot
 * instructions treat subnormal bf16 inputs as zero and flush subnormal results). */
typedef void fr_k_gemm_bf16_fn(int64_t m, int64_t n, int64_t k2, const uint32_t *A, int64_t lda2, const uint32_t *B,
                               int64_t ldb, float *C, int64_t ldc, bool acc);
/* Decode (a task of at most 16 query rows, bf16 on a variant with a bf16 dot), K and V read in place instead of
 * packed: C[i][j] = sum over p < k2 of the pair products of A row i and B row j (A [m][lda2], B [n][ldb2] bf16 pairs;
 * products exact, fp32 sums in an order of the variant's; C overwritten), and O[i][d] += P[i][j] V[j][d] for j < n in
 * order (P [m][ldp], V [n][ldv] bf16 bits; O [m][ldo] fp32; each step one fused multiply-add, so every variant gives
 * the same bits), skipping j where keep[i * ldk + j] == 0 when keep is not NULL (a PARTIAL tile: an excluded
 * position's V, even NaN, never reaches O). */
typedef void fr_k_dot_rows_bf16_fn(int64_t m, int64_t n, int64_t k2, const uint32_t *A, int64_t lda2,
                                   const uint32_t *B, int64_t ldb2, float *C, int64_t ldc);
typedef void fr_k_axpy_rows_bf16_fn(int64_t m, int64_t n, int64_t dv, const uint16_t *P, int64_t ldp,
                                    const uint8_t *keep, int64_t ldk, const uint16_t *V, int64_t ldv, float *O,
                                    int64_t ldo);

/* X(slot): every slot of fr_kops, in table order. */
#define FR_KOPS_SLOTS(X)                                                                                               \
    X(gemm_f32)                                                                                                        \
    X(max_f32)                                                                                                         \
    X(expsum_f32)                                                                                                      \
    X(transpose_f32)                                                                                                   \
    X(kahan_add_f32)                                                                                                   \
    X(pack_bf16_away)                                                                                                  \
    X(interleave_bf16)                                                                                                 \
    X(gemm_bf16)                                                                                                       \
    X(dot_rows_bf16)                                                                                                   \
    X(axpy_rows_bf16)

/* A variant's kernel table. The tables the drivers get (fr_kops_select, fr_kops_get, fr_kops_table) are resolved:
 * every slot filled. The ones the ISA files define (fr_kops_over_<name>) hold only the slots the variant overrides,
 * the others NULL: inherited from the variant before it in core/variants.inc (BLIS-style; scalar, the first, fills
 * every slot). name, isa and bf16_gemm come from the list's row. */
typedef struct fr_kops {
    const char *name;
    fr_isa isa;
#define FR_KOPS_FIELD(slot) fr_k_##slot##_fn *slot;
    FR_KOPS_SLOTS(FR_KOPS_FIELD)
#undef FR_KOPS_FIELD
    /* Whether the forward runs bf16 inputs through gemm_bf16 (a hardware bf16 dot; the list's bf16 dot column);
     * otherwise it widens them to fp32 for gemm_f32 (same exact products; the scalar gemm_bf16 is then only the
     * reference the others are tested against). */
    bool bf16_gemm;
} fr_kops;

#define FR_VARIANT(name, ...) extern const fr_kops fr_kops_over_##name;
#include "core/variants.inc"
#undef FR_VARIANT

/* The microkernels the tables name (the tests and benchmarks call some directly).
 * Alike kernels.h (these declarations, variant by variant): kept apart because each declares another variant's own
 * kernel (style.md 4 names them fr_k_<op>_<dtype>_<tile>_<isa>); only the argument lists of a slot are alike. */
void fr_k_gemm_f32_1x1_scalar(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const float *B,
                              int64_t ldb, float *C, int64_t ldc, bool acc);
float fr_k_max_f32_scalar(int64_t n, const float *x);
float fr_k_expsum_f32_scalar(int64_t n, float *x, float sub);
void fr_k_kahan_add_f32_scalar(int64_t n, float *acc, float *comp, const float *t);
void fr_k_transpose_f32_scalar(int64_t rows, int64_t cols, const float *src, int64_t lds, float *dst, int64_t ldd);
void fr_k_pack_bf16_away_scalar(int64_t n, const float *x, uint16_t *out);
void fr_k_interleave_bf16_scalar(int64_t n, int64_t dv, const uint16_t *v, int64_t ldv, uint32_t *out);
void fr_k_gemm_bf16_1x1_scalar(int64_t m, int64_t n, int64_t k2, const uint32_t *A, int64_t lda2, const uint32_t *B,
                               int64_t ldb, float *C, int64_t ldc, bool acc);
void fr_k_dot_rows_bf16_scalar(int64_t m, int64_t n, int64_t k2, const uint32_t *A, int64_t lda2, const uint32_t *B,
                               int64_t ldb2, float *C, int64_t ldc);
void fr_k_axpy_rows_bf16_scalar(int64_t m, int64_t n, int64_t dv, const uint16_t *P, int64_t ldp, const uint8_t *keep,
                                int64_t ldk, const uint16_t *V, int64_t ldv, float *O, int64_t ldo);
void fr_k_gemm_f32_4x24_avx2(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const float *B,
                             int64_t ldb, float *C, int64_t ldc, bool acc);
float fr_k_max_f32_avx2(int64_t n, const float *x);
float fr_k_expsum_f32_avx2(int64_t n, float *x, float sub);
void fr_k_kahan_add_f32_avx2(int64_t n, float *acc, float *comp, const float *t);
void fr_k_transpose_f32_8x8_avx2(int64_t rows, int64_t cols, const float *src, int64_t lds, float *dst, int64_t ldd);
void fr_k_gemm_f32_6x64_avx512(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const float *B,
                               int64_t ldb, float *C, int64_t ldc, bool acc);
float fr_k_max_f32_avx512(int64_t n, const float *x);
float fr_k_expsum_f32_avx512(int64_t n, float *x, float sub);
void fr_k_kahan_add_f32_avx512(int64_t n, float *acc, float *comp, const float *t);
void fr_k_transpose_f32_16x16_avx512(int64_t rows, int64_t cols, const float *src, int64_t lds, float *dst,
                                     int64_t ldd);
void fr_k_gemm_bf16_6x64_avx512bf16(int64_t m, int64_t n, int64_t k2, const uint32_t *A, int64_t lda2,
                                    const uint32_t *B, int64_t ldb, float *C, int64_t ldc, bool acc);
void fr_k_dot_rows_bf16_avx512bf16(int64_t m, int64_t n, int64_t k2, const uint32_t *A, int64_t lda2,
                                   const uint32_t *B, int64_t ldb2, float *C, int64_t ldc);
void fr_k_axpy_rows_bf16_avx512bf16(int64_t m, int64_t n, int64_t dv, const uint16_t *P, int64_t ldp,
                                    const uint8_t *keep, int64_t ldk, const uint16_t *V, int64_t ldv, float *O,
                                    int64_t ldo);
void fr_k_pack_bf16_away_avx512bf16(int64_t n, const float *x, uint16_t *out);
void fr_k_interleave_bf16_avx512bf16(int64_t n, int64_t dv, const uint16_t *v, int64_t ldv, uint32_t *out);

/* Whether this CPU runs the variant (core/isa.c decides). */
bool fr_kops_isa_available(fr_isa isa);
/* The resolved table of a variant of the list, whatever this CPU runs (tests: every slot filled), NULL for anything
 * else. */
const fr_kops *fr_kops_table(fr_isa isa);
/* The table for a request: FR_ISA_AUTO = the dispatcher's choice (fr_isa_selected: FLASHREF_ISA invalid ->
 * FR_E_INVALID_ARG); an explicit ISA is used as is (FR_E_NOT_AVAILABLE when the CPU lacks it, FR_E_INVALID_ARG for a
 * value outside the enum). *ops = NULL on failure. */
fr_status fr_kops_select(fr_isa isa, const fr_kops **ops, fr_error *err);
/* Same, NULL on any failure (tests, benchmarks). */
const fr_kops *fr_kops_get(fr_isa isa);

/* The fused drivers (fwd.c, bwd.c), called after validation. ops: the variant to use; num_threads 0 = default. */
fr_status fr_k_fwd(const fr_kops *ops, int num_threads, const fr_problem *pb, const fr_params *p,
                   const fr_fwd_inputs *in, const fr_fwd_outputs *out, fr_error *err);
fr_status fr_k_bwd(const fr_kops *ops, int num_threads, const fr_problem *pb, const fr_params *p,
                   const fr_bwd_inputs *in, const fr_bwd_outputs *out, fr_error *err);
/* The same, reporting progress to e->progress (flashref.h; e may be NULL): the fast engine's entry. */
fr_status fr_k_fwd_ex(const fr_kops *ops, int num_threads, const fr_engine *e, const fr_problem *pb,
                      const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out, fr_error *err);
fr_status fr_k_bwd_ex(const fr_kops *ops, int num_threads, const fr_engine *e, const fr_problem *pb,
                      const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out, fr_error *err);

#endif
