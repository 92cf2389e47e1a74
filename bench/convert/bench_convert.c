/* Conversion throughput (Gelem/s), per format and direction: the scalar routines in a loop vs fr_convert_array
 * under every ISA variant this machine has. Inputs: n fp32 values spread over the formats' ranges (plus a few
 * specials), so the branches see realistic data. Each number is the best of `reps` timed runs.
 *   bench_convert [n=1048576] [reps=15] */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "flashref_convert.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const fr_dtype fmts[] = {FR_F16, FR_BF16, FR_E4M3FN, FR_E5M2, FR_HIF8};

static volatile uint32_t sink;

/* Alike convert_array.c:encode_scalar: kept apart because that loop is private to the library; the baseline here is
 * the public per-element routines in the benchmark's own loop, timed against fr_convert_array_isa. */
/* Alike bench_convert.c:scalar_encode (its cases, to one another): kept apart because each case calls its own
 * format's encoder with its own code width. */
static void scalar_encode(fr_dtype t, void *dst, const float *x, size_t n, fr_round r, fr_sat s) {
    switch (t) {
    case FR_F16:
        for (size_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = fr_f32_to_f16(x[i], r, s);
        break;
    case FR_BF16:
        for (size_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = fr_f32_to_bf16(x[i], r, s);
        break;
    case FR_E4M3FN:
        for (size_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = fr_f32_to_e4m3fn(x[i], r, s);
        break;
    case FR_E5M2:
        for (size_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = fr_f32_to_e5m2(x[i], r, s);
        break;
    default:
        for (size_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = fr_f32_to_hif8(x[i], r, s);
        break;
    }
}

static void scalar_decode(fr_dtype t, float *y, const void *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        switch (t) {
        case FR_F16: y[i] = fr_f16_to_f32(((const uint16_t *)src)[i]); break;
        case FR_BF16: y[i] = fr_bf16_to_f32(((const uint16_t *)src)[i]); break;
        case FR_E4M3FN: y[i] = fr_e4m3fn_to_f32(((const uint8_t *)src)[i]); break;
        case FR_E5M2: y[i] = fr_e5m2_to_f32(((const uint8_t *)src)[i]); break;
        default: y[i] = fr_hif8_to_f32(((const uint8_t *)src)[i]); break;
        }
    }
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 0) : (size_t)1 << 20;
    int reps = argc > 2 ? atoi(argv[2]) : 15;
    if (n == 0 || reps < 1) {
        fprintf(stderr, "usage: bench_convert [n] [reps]\n");
        return 2;
    }
    float *x = malloc(sizeof(float) * n);
    float *y = malloc(sizeof(float) * n);
    void *c = malloc(2 * n);
    if (!x || !y || !c) return 1;
    uint64_t st = 12345;
    for (size_t i = 0; i < n; i++) { /* lcg: value 1.xxx * 2^[-20, 16), random sign; 1/1024 specials */
        st = st * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t r = (uint32_t)(st >> 32);
        x[i] = ldexpf(1.0f + (float)(r & 0xFFFFF) * 0x1p-20f, (int)((r >> 20) % 36) - 20) * ((r >> 31) ? -1.0f : 1.0f);
        if ((r & 0x3FF) == 0) x[i] = (r & 0x400) ? INFINITY : NAN;
    }
    fr_isa isas[16]; /* the library's one variant list */
    size_t nisa = 0;
    for (int k = 0; fr_isa_variant(k) != FR_ISA_AUTO && nisa < 16; k++) isas[nisa++] = fr_isa_variant(k);
    static const fr_round rounds[] = {FR_ROUND_NEAREST_EVEN, FR_ROUND_HALF_AWAY};
    static const char *const round_name[] = {"nearest-even", "half-away"};
    printf("bench_convert: n = %zu, best of %d; Gelem/s; array dispatch uses %s\n", n, reps,
           fr_isa_name(fr_convert_isa_selected()));
    printf("%-7s %-6s %-12s %10s", "format", "dir", "round", "scalar-fn");
    for (size_t k = 0; k < nisa; k++) printf(" %11s", fr_isa_name(isas[k]));
    printf("\n");
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        for (int dir = 0; dir < 2; dir++) {
            for (int ri = 0; ri < (dir == 0 ? 2 : 1); ri++) {
                double best = 1e30;
                for (int rep = 0; rep < reps; rep++) {
                    double t0 = now();
                    if (dir == 0) scalar_encode(fmts[f], c, x, n, rounds[ri], FR_SAT);
                    else scalar_decode(fmts[f], y, c, n);
                    double t = now() - t0;
                    if (t < best) best = t;
                }
                printf("%-7s %-6s %-12s %10.3f", fr_dtype_name(fmts[f]), dir == 0 ? "encode" : "decode",
                       dir == 0 ? round_name[ri] : "-", (double)n / best * 1e-9);
                for (size_t k = 0; k < nisa; k++) {
                    if (!fr_convert_isa_available(isas[k])) {
                        printf(" %11s", "n/a");
                        continue;
                    }
                    best = 1e30;
                    for (int rep = 0; rep < reps; rep++) {
                        double t0 = now();
                        if (dir == 0) fr_convert_array_isa(isas[k], fmts[f], c, FR_F32, x, n, rounds[ri], FR_SAT);
                        else fr_convert_array_isa(isas[k], FR_F32, y, fmts[f], c, n, rounds[ri], FR_SAT);
                        double t = now() - t0;
                        if (t < best) best = t;
                    }
                    printf(" %11.3f", (double)n / best * 1e-9);
                }
                printf("\n");
                sink += ((uint8_t *)c)[n / 2] + (uint32_t)y[n / 3];
            }
        }
    }
    free(x);
    free(y);
    free(c);
    return 0;
}
