/* Every slot of every kernel variant against the scalar reference slot (style.md 1, 6; XNNPACK's habit), on seeded
 * random inputs at sizes tile - 1, tile, tile + 1 and 2 x tile of the variant's microkernel (the tile columns of
 * core/variants.inc) and of the k blocking FR_K_KB; variants the CPU lacks are skipped loudly. First, every variant's
 * resolved table (its overrides over the variant below it) has every slot filled, whatever this CPU runs.
 *
 * Bounds (stated units): exact slots (max, transpose, Kahan add, bf16 packing and interleave) bit-identical; the GEMMs
 * |C - C_scalar| <= 2 (k + 2) 2^-24 sum_k |a_ik b_kj| + |C_in| 2^-23 (fp32 summation error of both, any order);
 * expsum: per element 4 ulp-ish (|x - x_scalar| <= 2^-21 x_scalar + 2^-126), sum relative 2^-20. */
#include "common/check.h"
#include "core/isa.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_rng;
static const fr_kops *g_ref; /* the scalar table: the reference of every slot */

static uint64_t next(void) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return g_rng;
}
static float unif(void) { return (float)((double)(next() >> 11) * 0x1p-53 * 2.0 - 1.0); } /* [-1, 1) */
static uint16_t bf16_of(float x) {                                                         /* truncation: any bf16 */
    union { float f; uint32_t u; } v = {x};
    return (uint16_t)(v.u >> 16);
}
static float f_of_bf16(uint16_t h) {
    union { uint32_t u; float f; } v = {(uint32_t)h << 16};
    return v.f;
}

static void sizes(int64_t t, int64_t out[4]) { out[0] = t > 1 ? t - 1 : 1, out[1] = t, out[2] = t + 1, out[3] = 2 * t; }

/* fp32 GEMM: m x n x k over the size sets, acc on and off. */
/* Alike test_kernels_slots.c:check_gemm_bf16: kept apart because the operands differ (fp32 here, bf16 pairs there) and
 * so do the error mass and bound (k products here, 2 k2 there). */
static void check_gemm_f32(const fr_kops *v, int64_t mr, int64_t nr) {
    int64_t ms[4], ns[4], ks[4], nbad = 0, ncase = 0;
    sizes(mr, ms), sizes(nr, ns), sizes(FR_K_KB, ks);
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 4; c++)
                for (int acc = 0; acc < 2; acc++) {
                    int64_t m = ms[a], n = ns[b], k = ks[c], lda = k + 3, ldb = n + 5, ldc = n + 2;
                    float *A = malloc(sizeof(float) * (size_t)(m * lda)), *B = malloc(sizeof(float) * (size_t)(k * ldb));
                    float *C0 = malloc(sizeof(float) * (size_t)(m * ldc)), *C1 = malloc(sizeof(float) * (size_t)(m * ldc));
                    for (int64_t e = 0; e < m * lda; e++) A[e] = unif();
                    for (int64_t e = 0; e < k * ldb; e++) B[e] = unif();
                    for (int64_t e = 0; e < m * ldc; e++) C0[e] = C1[e] = unif();
                    g_ref->gemm_f32(m, n, k, A, lda, B, ldb, C0, ldc, acc);
                    v->gemm_f32(m, n, k, A, lda, B, ldb, C1, ldc, acc);
                    for (int64_t i = 0; i < m; i++)
                        for (int64_t j = 0; j < ldc; j++) {
                            double mass = 0;
                            for (int64_t p = 0; p < k; p++) mass += fabs((double)A[i * lda + p] * B[p * ldb + j % ldb]);
                            double lim = 2.0 * (double)(k + 2) * 0x1p-24 * mass + 0x1p-22;
                            double e = fabs((double)C1[i * ldc + j] - C0[i * ldc + j]);
                            bool ok = j < n ? e <= lim : C1[i * ldc + j] == C0[i * ldc + j]; /* padding untouched */
                            if (!ok && nbad++ < 3)
                                printf("    gemm_f32 %s m=%lld n=%lld k=%lld acc=%d C[%lld][%lld]: %.9g vs scalar %.9g\n",
                                       v->name, (long long)m, (long long)n, (long long)k, acc, (long long)i,
                                       (long long)j, C1[i * ldc + j], C0[i * ldc + j]);
                        }
                    ncase++;
                    free(A), free(B), free(C0), free(C1);
                }
    printf("  %-10s gemm_f32  tile %lldx%lld: %lld shapes, %lld bad%s\n", v->name, (long long)mr, (long long)nr,
           (long long)ncase, (long long)nbad, nbad ? "  FAIL" : "");
    CHECK(nbad == 0, "%s: %lld bad (the line above)", v->name, (long long)nbad);
}

/* bf16 GEMM over pairs: A [m][k2] pairs, B [k2][n] pairs. */
/* Alike test_kernels_slots.c:check_gemm_f32: kept apart because the operands differ (bf16 pairs here, fp32 there) and
 * so do the error mass and bound (2 k2 products here, k there). */
static void check_gemm_bf16(const fr_kops *v, int64_t mr, int64_t nr) {
    int64_t ms[4], ns[4], ks[4], nbad = 0, ncase = 0;
    sizes(mr, ms), sizes(nr, ns), sizes(FR_K_KB, ks);
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 4; c++)
                for (int acc = 0; acc < 2; acc++) {
                    int64_t m = ms[a], n = ns[b], k2 = ks[c], lda = k2 + 1, ldb = n + 3, ldc = n + 2;
                    uint32_t *A = malloc(sizeof(uint32_t) * (size_t)(m * lda));
                    uint32_t *B = malloc(sizeof(uint32_t) * (size_t)(k2 * ldb));
                    float *C0 = malloc(sizeof(float) * (size_t)(m * ldc)), *C1 = malloc(sizeof(float) * (size_t)(m * ldc));
                    for (int64_t e = 0; e < m * lda; e++) A[e] = bf16_of(unif()) | (uint32_t)bf16_of(unif()) << 16;
                    for (int64_t e = 0; e < k2 * ldb; e++) B[e] = bf16_of(unif()) | (uint32_t)bf16_of(unif()) << 16;
                    for (int64_t e = 0; e < m * ldc; e++) C0[e] = C1[e] = unif();
                    g_ref->gemm_bf16(m, n, k2, A, lda, B, ldb, C0, ldc, acc);
                    v->gemm_bf16(m, n, k2, A, lda, B, ldb, C1, ldc, acc);
                    for (int64_t i = 0; i < m; i++)
                        for (int64_t j = 0; j < ldc; j++) {
                            double mass = 0;
                            for (int64_t p = 0; j < n && p < k2; p++) {
                                uint32_t x = A[i * lda + p], y = B[p * ldb + j];
                                mass += fabs((double)f_of_bf16((uint16_t)x) * f_of_bf16((uint16_t)y));
                                mass += fabs((double)f_of_bf16((uint16_t)(x >> 16)) * f_of_bf16((uint16_t)(y >> 16)));
                            }
                            double lim = 2.0 * (double)(2 * k2 + 2) * 0x1p-24 * mass + 0x1p-22;
                            double e = fabs((double)C1[i * ldc + j] - C0[i * ldc + j]);
                            bool ok = j < n ? e <= lim : C1[i * ldc + j] == C0[i * ldc + j];
                            if (!ok && nbad++ < 3)
                                printf("    gemm_bf16 %s m=%lld n=%lld k2=%lld acc=%d C[%lld][%lld]: %.9g vs scalar %.9g\n",
                                       v->name, (long long)m, (long long)n, (long long)k2, acc, (long long)i,
                                       (long long)j, C1[i * ldc + j], C0[i * ldc + j]);
                        }
                    ncase++;
                    free(A), free(B), free(C0), free(C1);
                }
    printf("  %-10s gemm_bf16 tile %lldx%lld: %lld shapes, %lld bad%s\n", v->name, (long long)mr, (long long)nr,
           (long long)ncase, (long long)nbad, nbad ? "  FAIL" : "");
    CHECK(nbad == 0, "%s: %lld bad (the line above)", v->name, (long long)nbad);
}

/* The decode slots (dot_rows_bf16, axpy_rows_bf16) at up to 16 rows, key counts and widths around the vector width
 * (16 pairs / 16 columns) and the 128-column block of axpy: dot within the gemm_bf16 bound, axpy bit-identical (one
 * fused multiply-add a step in j order in every variant), with and without a keep mask. */
/* Alike test_kernels_slots.c:check_gemm_bf16 (its error-mass loop): kept apart because B is read by rows here and by
 * pair rows there, and the case loop also drives axpy_rows_bf16's bit-identical check. */
static void check_decode_slots(const fr_kops *v) {
    static const int64_t ms[] = {1, 2, 15, 16}, ns[] = {1, 15, 16, 17, 128}, ks[] = {1, 15, 16, 17, 64},
                         dvs[] = {1, 15, 16, 17, 128, 129};
    int64_t nbad = 0, ncase = 0;
    for (size_t a = 0; a < 4; a++)
        for (size_t b = 0; b < 5; b++)
            for (size_t c = 0; c < 6; c++) {
                int64_t m = ms[a], n = ns[b], k2 = ks[c < 5 ? c : 4], dv = dvs[c];
                int64_t lda = k2 + 1, ldb = k2 + 3, ldc = n + 2, ldp = n + 1, ldv = dv + 5, ldo = dv + 2;
                uint32_t *A = malloc(sizeof(uint32_t) * (size_t)(m * lda)), *B = malloc(sizeof(uint32_t) * (size_t)(n * ldb));
                float *C0 = malloc(sizeof(float) * (size_t)(m * ldc)), *C1 = malloc(sizeof(float) * (size_t)(m * ldc));
                uint16_t *P = malloc(sizeof(uint16_t) * (size_t)(m * ldp)), *V = malloc(sizeof(uint16_t) * (size_t)(n * ldv));
                uint8_t *keep = malloc((size_t)(m * ldp));
                float *O0 = malloc(sizeof(float) * (size_t)(m * ldo)), *O1 = malloc(sizeof(float) * (size_t)(m * ldo));
                for (int64_t e = 0; e < m * lda; e++) A[e] = bf16_of(unif()) | (uint32_t)bf16_of(unif()) << 16;
                for (int64_t e = 0; e < n * ldb; e++) B[e] = bf16_of(unif()) | (uint32_t)bf16_of(unif()) << 16;
                for (int64_t e = 0; e < m * ldc; e++) C0[e] = C1[e] = 7.0f;
                for (int64_t e = 0; e < m * ldp; e++) P[e] = bf16_of(fabsf(unif())), keep[e] = (uint8_t)(next() & 1);
                for (int64_t e = 0; e < n * ldv; e++) V[e] = bf16_of(unif());
                if (n > 2) V[1 * ldv] = 0x7fc0; /* a NaN in row 1: reaches O where row 1 is kept, nowhere else */
                g_ref->dot_rows_bf16(m, n, k2, A, lda, B, ldb, C0, ldc);
                v->dot_rows_bf16(m, n, k2, A, lda, B, ldb, C1, ldc);
                for (int64_t i = 0; i < m; i++)
                    for (int64_t j = 0; j < ldc; j++) {
                        double mass = 0;
                        for (int64_t p = 0; j < n && p < k2; p++) {
                            uint32_t x = A[i * lda + p], y = B[j * ldb + p];
                            mass += fabs((double)f_of_bf16((uint16_t)x) * f_of_bf16((uint16_t)y));
                            mass += fabs((double)f_of_bf16((uint16_t)(x >> 16)) * f_of_bf16((uint16_t)(y >> 16)));
                        }
                        double e = fabs((double)C1[i * ldc + j] - C0[i * ldc + j]);
                        bool ok = j < n ? e <= 2.0 * (double)(2 * k2 + 2) * 0x1p-24 * mass + 0x1p-22
                                        : C1[i * ldc + j] == C0[i * ldc + j];
                        if (!ok && nbad++ < 3)
                            printf("    dot_rows_bf16 %s m=%lld n=%lld k2=%lld C[%lld][%lld]: %.9g vs scalar %.9g\n",
                                   v->name, (long long)m, (long long)n, (long long)k2, (long long)i, (long long)j,
                                   C1[i * ldc + j], C0[i * ldc + j]);
                    }
                for (int mask = 0; mask < 2; mask++) {
                    for (int64_t e = 0; e < m * ldo; e++) O0[e] = O1[e] = unif();
                    g_ref->axpy_rows_bf16(m, n, dv, P, ldp, mask ? keep : NULL, ldp, V, ldv, O0, ldo);
                    v->axpy_rows_bf16(m, n, dv, P, ldp, mask ? keep : NULL, ldp, V, ldv, O1, ldo);
                    if (memcmp(O0, O1, sizeof(float) * (size_t)(m * ldo)) && nbad++ < 3)
                        printf("    axpy_rows_bf16 %s m=%lld n=%lld dv=%lld keep=%d: not bit-identical\n", v->name,
                               (long long)m, (long long)n, (long long)dv, mask);
                    for (int64_t i = 0; mask && n > 2 && i < m; i++) /* the NaN of V row 1 only where it is kept */
                        if ((isnan(O0[i * ldo]) != 0) != (keep[i * ldp + 1] != 0) && nbad++ < 3)
                            printf("    axpy_rows_bf16 scalar m=%lld n=%lld row %lld: keep mask not honoured\n",
                                   (long long)m, (long long)n, (long long)i);
                }
                ncase++;
                free(A), free(B), free(C0), free(C1), free(P), free(V), free(keep), free(O0), free(O1);
            }
    printf("  %-10s dot_rows_bf16, axpy_rows_bf16: %lld shapes, %lld bad%s\n", v->name, (long long)ncase,
           (long long)nbad, nbad ? "  FAIL" : "");
    CHECK(nbad == 0, "%s: %lld bad (the line above)", v->name, (long long)nbad);
}

/* The vector slots at lengths around the vector widths (8, 16) and the tiles (8 x 8, 16 x 16 transpose). */
static void check_vector_slots(const fr_kops *v) {
    static const int64_t lens[] = {1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129};
    int64_t nbad = 0;
    enum { NMAX = 129 };
    float x[NMAX], y0[NMAX], y1[NMAX], acc0[NMAX], acc1[NMAX], cp0[NMAX], cp1[NMAX];
    uint16_t p0[NMAX + 1], p1[NMAX + 1];
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        int64_t n = lens[li];
        for (int64_t j = 0; j < n; j++) x[j] = 8.0f * unif();
        if (n > 3) x[n / 2] = -INFINITY;
        float m0 = g_ref->max_f32(n, x), m1 = v->max_f32(n, x);
        if (m0 != m1 && nbad++ < 3) printf("    max_f32 %s n=%lld: %.9g vs %.9g\n", v->name, (long long)n, m1, m0);
        memcpy(y0, x, sizeof(float) * (size_t)n), memcpy(y1, x, sizeof(float) * (size_t)n);
        float s0 = g_ref->expsum_f32(n, y0, m0), s1 = v->expsum_f32(n, y1, m0);
        bool ok = fabsf(s1 - s0) <= 0x1p-20f * s0;
        for (int64_t j = 0; j < n; j++) ok = ok && fabsf(y1[j] - y0[j]) <= 0x1p-21f * y0[j] + 0x1p-126f;
        if (!ok && nbad++ < 3) printf("    expsum_f32 %s n=%lld: sum %.9g vs %.9g\n", v->name, (long long)n, s1, s0);
        for (int64_t j = 0; j < n; j++) acc0[j] = acc1[j] = unif(), cp0[j] = cp1[j] = 1e-8f * unif(), y0[j] = unif();
        g_ref->kahan_add_f32(n, acc0, cp0, y0);
        v->kahan_add_f32(n, acc1, cp1, y0);
        if ((memcmp(acc0, acc1, sizeof(float) * (size_t)n) || memcmp(cp0, cp1, sizeof(float) * (size_t)n)) &&
            nbad++ < 3)
            printf("    kahan_add_f32 %s n=%lld: not bit-identical\n", v->name, (long long)n);
        for (int64_t j = 0; j < n; j++) y0[j] = fabsf(x[j]) * 1e-3f; /* P: >= 0, finite */
        memset(p0, 0xee, sizeof p0), memset(p1, 0xee, sizeof p1);
        g_ref->pack_bf16_away(n, y0, p0);
        v->pack_bf16_away(n, y0, p1);
        if (memcmp(p0, p1, sizeof(uint16_t) * (size_t)(n + (n & 1))) && nbad++ < 3)
            printf("    pack_bf16_away %s n=%lld: not bit-identical\n", v->name, (long long)n);
    }
    /* transpose and interleave: rows x cols around the 8 x 8 (avx2) and 16 x 16 (avx512) blocks */
    static const int64_t dims[] = {1, 7, 8, 9, 15, 16, 17, 32};
    for (size_t a = 0; a < 8; a++)
        for (size_t b = 0; b < 8; b++) {
            int64_t r = dims[a], c = dims[b], lds = c + 3, ldd = r + 2;
            float src[32 * 35], d0[35 * 34], d1[35 * 34];
            for (int64_t e = 0; e < r * lds; e++) src[e] = unif();
            for (int64_t e = 0; e < c * ldd; e++) d0[e] = d1[e] = 7.0f;
            g_ref->transpose_f32(r, c, src, lds, d0, ldd);
            v->transpose_f32(r, c, src, lds, d1, ldd);
            if (memcmp(d0, d1, sizeof(float) * (size_t)(c * ldd)) && nbad++ < 3)
                printf("    transpose_f32 %s %lldx%lld: not bit-identical\n", v->name, (long long)r, (long long)c);
            uint16_t vv[32 * 35];
            uint32_t o0[16 * 35], o1[16 * 35];
            for (int64_t e = 0; e < r * lds; e++) vv[e] = (uint16_t)next();
            memset(o0, 0, sizeof o0), memset(o1, 0, sizeof o1);
            g_ref->interleave_bf16(r, c, vv, lds, o0);
            v->interleave_bf16(r, c, vv, lds, o1);
            if (memcmp(o0, o1, sizeof o0) && nbad++ < 3)
                printf("    interleave_bf16 %s %lldx%lld: not bit-identical\n", v->name, (long long)r, (long long)c);
        }
    printf("  %-10s max, expsum, kahan_add, transpose, pack_bf16_away, interleave_bf16: %lld bad%s\n", v->name,
           (long long)nbad, nbad ? "  FAIL" : "");
    CHECK(nbad == 0, "%s: %lld bad (the line above)", v->name, (long long)nbad);
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 20261201u;
    printf("test_kernels_slots: seed %llu (rerun: test_kernels_slots %llu)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    g_rng = seed | 1u;
    g_ref = fr_kops_table(FR_ISA_SCALAR);
    for (int k = 0; k < fr_isa_count; k++) { /* inheritance: no slot of a resolved table left empty */
        const fr_kops *t = fr_kops_table(fr_isa_list[k]);
        int empty = 0;
#define FR_SLOT_FILLED(slot)                                                                                           \
    if (t && !t->slot) {                                                                                               \
        printf("  %-10s slot %s empty after inheritance: FAIL (src/kernels/ops_%s.c and those below it)\n",             \
               fr_isa_name(fr_isa_list[k]), #slot, fr_isa_name(fr_isa_list[k]));                                       \
        empty = 1;                                                                                                     \
    }
        FR_KOPS_SLOTS(FR_SLOT_FILLED)
#undef FR_SLOT_FILLED
        if (!t || t->isa != fr_isa_list[k] || strcmp(t->name, fr_isa_name(fr_isa_list[k]))) {
            printf("  %-10s no resolved table (or a wrong name / isa): FAIL\n", fr_isa_name(fr_isa_list[k]));
            empty = 1;
        }
        CHECK(!empty, "%s: the resolved table (the lines above)", fr_isa_name(fr_isa_list[k]));
    }
    if (failures) return fr_test_exit("test_kernels_slots (empty slots)");
#define FR_VARIANT(vname, visa, family, bf16, fmr, fnr, bmr, bnr, ...)                                                 \
    do {                                                                                                               \
        const fr_kops *v = fr_kops_get(visa);                                                                          \
        if (!v) {                                                                                                      \
            printf("  %-10s SKIPPED: this CPU lacks it\n", #vname);                                                    \
            break;                                                                                                     \
        }                                                                                                              \
        check_gemm_f32(v, fmr, fnr);                                                                                   \
        check_gemm_bf16(v, bmr, bnr);                                                                                  \
        check_vector_slots(v);                                                                                         \
        check_decode_slots(v);                                                                                         \
    } while (0);
#include "core/variants.inc"
#undef FR_VARIANT
    if (!fr_isa_cpu_amx_fp16())
        printf("  amx fp16   SKIPPED: this CPU has no AMX-FP16 (cpuid 7.1 EAX bit 21): fp16 inputs keep the fp32 path\n");
    else
        printf("  amx fp16   NOTE: this CPU has AMX-FP16, which no variant uses yet: fp16 inputs keep the fp32 path\n");
    return fr_test_exit("test_kernels_slots");
}
