/* The reference variant (style.md 1, 13): portable C, no intrinsics, reads like the math. Every other variant is
 * tested against this one on the same inputs. */
#include "kernels/kernels.h"

#include <math.h>

/* C[m x n] = (acc ? C : 0) + A[m x k] . B[k x n], k summed in blocks of FR_K_KB. */
void fr_k_gemm_f32_1x1_scalar(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const float *B,
                              int64_t ldb, float *C, int64_t ldc, bool acc) {
    enum { NC = 64 };
    float t[NC];
    for (int64_t i = 0; i < m; i++) {
        float *c = C + i * ldc;
        if (!acc)
            for (int64_t j = 0; j < n; j++) c[j] = 0.0f;
        for (int64_t j0 = 0; j0 < n; j0 += NC) {
            int64_t nc = n - j0 < NC ? n - j0 : NC;
            for (int64_t k0 = 0; k0 < k; k0 += FR_K_KB) {
                int64_t ke = k - k0 < FR_K_KB ? k : k0 + FR_K_KB;
                for (int64_t j = 0; j < nc; j++) t[j] = 0.0f;
                for (int64_t kk = k0; kk < ke; kk++) {
                    float a = A[i * lda + kk];
                    const float *b = B + kk * ldb + j0;
                    for (int64_t j = 0; j < nc; j++) t[j] += a * b[j];
                }
                for (int64_t j = 0; j < nc; j++) c[j0 + j] += t[j];
            }
        }
    }
}

float fr_k_max_f32_scalar(int64_t n, const float *x) {
    float m = -INFINITY;
    for (int64_t j = 0; j < n; j++) m = x[j] > m ? x[j] : m;
    return m;
}

float fr_k_expsum_f32_scalar(int64_t n, float *x, float sub) {
    float s[8] = {0, 0, 0, 0, 0, 0, 0, 0}; /* 8 interleaved partial sums, then a tree: as the SIMD variants do */
    for (int64_t j = 0; j < n; j++) {
        x[j] = expf(x[j] - sub);
        s[j & 7] += x[j];
    }
    float a = s[0] + s[4], b = s[1] + s[5], c = s[2] + s[6], d = s[3] + s[7];
    return (a + c) + (b + d);
}

void fr_k_kahan_add_f32_scalar(int64_t n, float *acc, float *comp, const float *t) {
    for (int64_t e = 0; e < n; e++) {
        float y = t[e] - comp[e], s = acc[e] + y;
        comp[e] = (s - acc[e]) - y;
        acc[e] = s;
    }
}

void fr_k_transpose_f32_scalar(int64_t rows, int64_t cols, const float *src, int64_t lds, float *dst, int64_t ldd) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) dst[c * ldd + r] = src[r * lds + c];
}

void fr_k_pack_bf16_away_scalar(int64_t n, const float *x, uint16_t *out) {
    for (int64_t j = 0; j < n; j++) {
        union { float f; uint32_t u; } v = {x[j]};
        out[j] = (uint16_t)((v.u + 0x8000u) >> 16); /* half away from zero for x >= 0 */
    }
    if (n & 1) out[n] = 0;
}

void fr_k_interleave_bf16_scalar(int64_t n, int64_t dv, const uint16_t *v, int64_t ldv, uint32_t *out) {
    for (int64_t j = 0; j < n; j += 2) {
        const uint16_t *a = v + j * ldv, *b = j + 1 < n ? v + (j + 1) * ldv : NULL;
        uint32_t *o = out + (j / 2) * dv;
        for (int64_t d = 0; d < dv; d++) o[d] = (uint32_t)a[d] | (b ? (uint32_t)b[d] << 16 : 0u);
    }
}

/* C[m x n] = (acc ? C : 0) + A . B over bf16 pairs: A row r = k2 pairs at A + r*lda2, B pair p of column c at
 * B[p*ldb + c]; each pair's two products (exact in fp32) added in order, k2 summed in blocks of FR_K_KB pairs. */
static float bf16_lo(uint32_t w) {
    union { uint32_t u; float f; } v = {w << 16};
    return v.f;
}
static float bf16_hi(uint32_t w) {
    union { uint32_t u; float f; } v = {w & 0xffff0000u};
    return v.f;
}

/* c + the pair products of a[p] and b[p * sb] for p < k2, summed in blocks of FR_K_KB pairs (each block from 0). */
static float pair_dot(float c, int64_t k2, const uint32_t *a, const uint32_t *b, int64_t sb) {
    for (int64_t p0 = 0; p0 < k2; p0 += FR_K_KB) {
        float t = 0.0f;
        for (int64_t p = p0; p < k2 && p < p0 + FR_K_KB; p++) {
            t += bf16_lo(a[p]) * bf16_lo(b[p * sb]);
            t += bf16_hi(a[p]) * bf16_hi(b[p * sb]);
        }
        c += t;
    }
    return c;
}

void fr_k_gemm_bf16_1x1_scalar(int64_t m, int64_t n, int64_t k2, const uint32_t *A, int64_t lda2, const uint32_t *B,
                               int64_t ldb, float *C, int64_t ldc, bool acc) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            C[i * ldc + j] = pair_dot(acc ? C[i * ldc + j] : 0.0f, k2, A + i * lda2, B + j, ldb);
}

void fr_k_dot_rows_bf16_scalar(int64_t m, int64_t n, int64_t k2, const uint32_t *A, int64_t lda2, const uint32_t *B,
                               int64_t ldb2, float *C, int64_t ldc) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) C[i * ldc + j] = pair_dot(0.0f, k2, A + i * lda2, B + j * ldb2, 1);
}

void fr_k_axpy_rows_bf16_scalar(int64_t m, int64_t n, int64_t dv, const uint16_t *P, int64_t ldp, const uint8_t *keep,
                                int64_t ldk, const uint16_t *V, int64_t ldv, float *O, int64_t ldo) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            if (keep && !keep[i * ldk + j]) continue;
            float p = bf16_lo(P[i * ldp + j]), *o = O + i * ldo;
            for (int64_t d = 0; d < dv; d++) o[d] = fmaf(p, bf16_lo(V[j * ldv + d]), o[d]);
        }
}

/* The root of the inheritance (core/variants.inc's first row): every slot, each the reference the other variants'
 * slots are tested against.
 * Alike ops_avx2.c:fr_kops_over_avx2, ops_avx512.c:fr_kops_over_avx512, ops_avx512bf16.c:fr_kops_over_avx512bf16 and
 * the other variants' tables: kept apart because each table is one
 * variant's own slots (style.md 1); what they share is the slot names. */
const fr_kops fr_kops_over_scalar = {
    .gemm_f32 = fr_k_gemm_f32_1x1_scalar,
    .max_f32 = fr_k_max_f32_scalar,
    .expsum_f32 = fr_k_expsum_f32_scalar,
    .kahan_add_f32 = fr_k_kahan_add_f32_scalar,
    .transpose_f32 = fr_k_transpose_f32_scalar,
    .pack_bf16_away = fr_k_pack_bf16_away_scalar,
    .interleave_bf16 = fr_k_interleave_bf16_scalar,
    .gemm_bf16 = fr_k_gemm_bf16_1x1_scalar, /* the reference; bf16 inputs are widened for gemm_f32 */
    .dot_rows_bf16 = fr_k_dot_rows_bf16_scalar,
    .axpy_rows_bf16 = fr_k_axpy_rows_bf16_scalar,
};
