/* Exhaustive number-format check: ALL 2^32 fp32 bit patterns through every encoder variant (5 formats x 2 roundings x
 * 2 saturation modes = 20 scalar encoders, and the array versions), and every code through every decoder, against the
 * independent slow reference of tests/common/convert_ref.h (the format's values sorted, a virtual overflow value one
 * step past max, nearest by the tie rule). Positive inputs are walked in increasing order with a moving pointer into
 * the value list (O(1) amortized); each magnitude's reference index serves both signs and both saturation modes.
 *
 * Standalone: prints one summary line per variant (inputs checked, mismatches, seconds) and, for a mismatch, the
 * input and both outputs in hex. Exit status 0 when everything matches, 1 otherwise, 2 on a usage error.
 *
 *   exhaustive_convert [--format fp16|bf16|e4m3fn|e5m2|hif8] [--round nearest-even|half-away] [--threads N]
 *                      [--stride K] [--all-variants]
 *
 * --stride K checks one block of inputs in K (a quick sample, for development); --all-variants also runs the array
 * code under every ISA the machine has (by default: the scalar encoders, the array dispatch fr_convert_array, and
 * for the vectorized pairs fp32 -> fp16/bf16 every other vector ISA available). Seconds are the wall time of the pass
 * that checked the variant: one pass per (format, rounding) checks all its variants together.
 */
#include "common/convert_ref.h"
#include "core/isa.h"
#include "flashref_convert.h"

#include <inttypes.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BLOCK = 8192, MAX_KINDS = 6, MAX_PRINT = 10 };

static const char *const round_name[2] = {"nearest-even", "half-away"};
static const char *const sat_name[2] = {"no-sat", "sat"};

typedef struct variant_kind {
    const char *name; /* "scalar" or "array-<isa>" */
    int array;        /* 0: scalar encoder function; 1: fr_convert_array_isa(isa) */
    fr_isa isa;
} variant_kind;

/* "array-<variant>" (static strings: one per variant of the list). */
static const char *array_name(fr_isa isa) {
    static char names[16][32];
    int k = (int)isa & 15;
    snprintf(names[k], sizeof names[k], "array-%s", fr_isa_name(isa));
    return names[k];
}

static int kinds_for(int f, int all, variant_kind *k) {
    int nk = 0;
    k[nk++] = (variant_kind){"scalar", 0, FR_ISA_AUTO};
    k[nk++] = (variant_kind){"array-auto", 1, FR_ISA_AUTO};
    fr_isa sel = fr_convert_isa_selected();
    int vectorized = f == REF_F16 || f == REF_BF16;
    for (int i = 0; fr_isa_variant(i) != FR_ISA_AUTO; i++) { /* the library's one variant list */
        fr_isa isa = fr_isa_variant(i);
        if (!fr_convert_isa_available(isa) || isa == sel) continue;
        /* by default: the other base ISA families' code on the vectorized pairs (a variant runs its family's code,
         * e.g. avx512bf16 and amx the avx512 one: one variant per family is enough) */
        int wanted = all || (vectorized && isa != FR_ISA_SCALAR && fr_isa_family(isa) == isa &&
                             isa != fr_isa_family(sel));
        if (wanted) k[nk++] = (variant_kind){array_name(isa), 1, isa};
    }
    return nk;
}

typedef struct counts {
    int64_t inputs, mismatches;
} counts;

static int64_t print_budget[REF_NFMT][2][2][MAX_KINDS];

static void report_mismatch(int f, int ri, int si, const variant_kind *k, int ki, uint32_t u, uint32_t got,
                            uint32_t want) {
    int print;
#pragma omp critical(fr_exh_print)
    print = print_budget[f][ri][si][ki]++ < MAX_PRINT;
    if (print) {
        float x;
        memcpy(&x, &u, sizeof x);
        printf("MISMATCH %s %s %s %s: input 0x%08" PRIx32 " (%a) got 0x%0*" PRIx32 " want 0x%0*" PRIx32 "\n",
               ref_fmt_name[f], round_name[ri], sat_name[si], k->name, u, (double)x, ref_fmt_bits[f] / 4, got,
               ref_fmt_bits[f] / 4, want);
        fflush(stdout);
    }
}

/* One pass: format f, rounding ri, all magnitudes (every stride-th block), both signs, both sat modes, all kinds. */
static void run_pass(const ref_fmt *t, int ri, const variant_kind *kinds, int nk, int64_t stride,
                     counts c[2][MAX_KINDS]) {
    const int f = t->f;
    const fr_round r = ri ? FR_ROUND_HALF_AWAY : FR_ROUND_NEAREST_EVEN;
    const int64_t nblocks = (INT64_C(1) << 31) / BLOCK;
    const size_t es = (size_t)ref_fmt_bits[f] / 8;
    int64_t mis[2][MAX_KINDS] = {{0}}, inputs = 0;
#pragma omp parallel reduction(+ : inputs)
    {
        float *x = malloc(sizeof(float) * BLOCK);
        uint32_t *idx = malloc(sizeof(uint32_t) * BLOCK);
        uint32_t *want = malloc(sizeof(uint32_t) * BLOCK);
        uint32_t *got = malloc(sizeof(uint32_t) * BLOCK);
        void *out = malloc(2 * BLOCK);
        int64_t lmis[2][MAX_KINDS] = {{0}};
        size_t hint = SIZE_MAX;
        if (!x || !idx || !want || !got || !out) {
#pragma omp critical(fr_exh_print)
            printf("error: out of memory\n");
            lmis[0][0] = 1;
        } else {
#pragma omp for schedule(dynamic, 16)
            for (int64_t b = 0; b < nblocks; b += stride) {
                uint32_t base = (uint32_t)(b * BLOCK);
                for (uint32_t i = 0; i < BLOCK; i++) {
                    uint32_t u = base + i;
                    idx[i] = u < 0x7F800000u ? (uint32_t)ref_nearest(t, ref_f32_value(u), ri, &hint) : 0;
                }
                for (int sg = 0; sg < 2; sg++) {
                    uint32_t sbit = sg ? 0x80000000u : 0u;
                    for (uint32_t i = 0; i < BLOCK; i++) {
                        uint32_t u = (base + i) | sbit;
                        memcpy(&x[i], &u, sizeof u);
                    }
                    for (int si = 0; si < 2; si++) {
                        const fr_sat s = si ? FR_SAT : FR_NO_SAT;
                        for (uint32_t i = 0; i < BLOCK; i++) want[i] = ref_finish(t, (base + i) | sbit, idx[i], si);
                        for (int ki = 0; ki < nk; ki++) {
                            /* results into got[], counted in a tight loop; reported only when something differs */
                            int64_t bad = 0;
                            if (!kinds[ki].array) {
                                for (uint32_t i = 0; i < BLOCK; i++) got[i] = ref_lib_encode(f, x[i], r, s);
                            } else {
                                fr_status st = fr_convert_array_isa(kinds[ki].isa, ref_fmt_dtype[f], out, FR_F32, x,
                                                                    BLOCK, r, s);
                                if (st != FR_OK) { /* every input of the block counts as a mismatch */
                                    lmis[si][ki] += BLOCK;
                                    continue;
                                }
                                if (es == 2)
                                    for (uint32_t i = 0; i < BLOCK; i++) got[i] = ((const uint16_t *)out)[i];
                                else
                                    for (uint32_t i = 0; i < BLOCK; i++) got[i] = ((const uint8_t *)out)[i];
                            }
                            for (uint32_t i = 0; i < BLOCK; i++) bad += got[i] != want[i];
                            if (bad)
                                for (uint32_t i = 0; i < BLOCK; i++)
                                    if (got[i] != want[i])
                                        report_mismatch(f, ri, si, &kinds[ki], ki, (base + i) | sbit, got[i], want[i]);
                            lmis[si][ki] += bad;
                        }
                    }
                }
                inputs += 2 * BLOCK;
            }
        }
#pragma omp critical(fr_exh_sum)
        for (int si = 0; si < 2; si++)
            for (int ki = 0; ki < nk; ki++) mis[si][ki] += lmis[si][ki];
        free(x);
        free(idx);
        free(want);
        free(got);
        free(out);
    }
    for (int si = 0; si < 2; si++)
        for (int ki = 0; ki < nk; ki++) c[si][ki] = (counts){inputs, mis[si][ki]};
}

/* Every code through the scalar decoder and every array decoder variant, against the reference decoder. */
static int64_t check_decoders(int f) {
    fr_isa isas[16] = {FR_ISA_AUTO}; /* auto, then the library's one variant list */
    int nisa = 1;
    for (int k = 0; fr_isa_variant(k) != FR_ISA_AUTO && nisa < 16; k++) isas[nisa++] = fr_isa_variant(k);
    uint32_t ncodes = 1u << ref_fmt_bits[f];
    size_t es = (size_t)ref_fmt_bits[f] / 8;
    int64_t total = 0;
    unsigned char *codes = malloc(es * ncodes);
    float *y = malloc(sizeof(float) * ncodes);
    if (!codes || !y) {
        free(codes);
        free(y);
        printf("error: out of memory\n");
        return 1;
    }
    for (uint32_t c = 0; c < ncodes; c++) {
        if (es == 2) ((uint16_t *)codes)[c] = (uint16_t)c;
        else codes[c] = (unsigned char)c;
    }
    for (int v = -1; v < nisa; v++) {
        if (v >= 0 && !fr_convert_isa_available(isas[v])) continue;
        double t0 = omp_get_wtime();
        if (v < 0) {
            for (uint32_t c = 0; c < ncodes; c++) {
                switch (f) {
                case REF_F16: y[c] = fr_f16_to_f32((uint16_t)c); break;
                case REF_BF16: y[c] = fr_bf16_to_f32((uint16_t)c); break;
                case REF_E4M3FN: y[c] = fr_e4m3fn_to_f32((uint8_t)c); break;
                case REF_E5M2: y[c] = fr_e5m2_to_f32((uint8_t)c); break;
                default: y[c] = fr_hif8_to_f32((uint8_t)c); break;
                }
            }
        } else if (fr_convert_array_isa(isas[v], FR_F32, y, ref_fmt_dtype[f], codes, ncodes, FR_ROUND_NEAREST_EVEN,
                                        FR_SAT) != FR_OK) {
            memset(y, 0xFF, sizeof(float) * ncodes);
        }
        int64_t bad = 0;
        for (uint32_t c = 0; c < ncodes; c++) {
            double want = ref_decode(f, c), got = y[c];
            int ok = (isnan(want) || isnan(got)) ? (isnan(want) && isnan(got))
                                                 : (got == want && signbit(got) == signbit(want));
            if (!ok && bad++ < MAX_PRINT)
                printf("MISMATCH decode %s %s: code 0x%0*" PRIx32 " got %a want %a\n", ref_fmt_name[f],
                       v < 0 ? "scalar" : array_name(isas[v]), ref_fmt_bits[f] / 4, c, got, want);
        }
        printf("decode %-6s %-17s inputs %10" PRIu32 " mismatches %" PRId64 " seconds %.3f\n", ref_fmt_name[f],
               v < 0 ? "scalar" : array_name(isas[v]), ncodes, bad, omp_get_wtime() - t0);
        total += bad;
    }
    free(codes);
    free(y);
    return total;
}

static int usage(void) {
    fprintf(stderr, "usage: exhaustive_convert [--format fp16|bf16|e4m3fn|e5m2|hif8] [--round nearest-even|half-away]"
                    " [--threads N] [--stride K] [--all-variants]\n");
    return 2;
}

int main(int argc, char **argv) {
    int only_f = -1, only_r = -1, all = 0;
    int64_t stride = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--format") && i + 1 < argc) {
            const char *v = argv[++i];
            for (int f = 0; f < REF_NFMT; f++)
                if (!strcmp(v, ref_fmt_name[f])) only_f = f;
            if (only_f < 0) return usage();
        } else if (!strcmp(argv[i], "--round") && i + 1 < argc) {
            const char *v = argv[++i];
            only_r = !strcmp(v, "nearest-even") ? 0 : !strcmp(v, "half-away") ? 1 : -2;
            if (only_r < 0) return usage();
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            int n = atoi(argv[++i]);
            if (n < 1) return usage();
            omp_set_num_threads(n);
        } else if (!strcmp(argv[i], "--stride") && i + 1 < argc) {
            stride = atoll(argv[++i]);
            if (stride < 1) return usage();
        } else if (!strcmp(argv[i], "--all-variants")) {
            all = 1;
        } else {
            return usage();
        }
    }
    printf("exhaustive_convert: %d threads, array dispatch variant %d, stride %" PRId64 "%s\n", omp_get_max_threads(),
           (int)fr_convert_isa_selected(), stride, stride > 1 ? " (SAMPLE, not exhaustive)" : "");
    fflush(stdout);
    int64_t total_bad = 0;
    double t_all = omp_get_wtime();
    for (int f = 0; f < REF_NFMT; f++) {
        if (only_f >= 0 && f != only_f) continue;
        ref_fmt t;
        if (ref_fmt_init(&t, f) != 0) {
            printf("error: reference table for %s is inconsistent\n", ref_fmt_name[f]);
            return 1;
        }
        total_bad += check_decoders(f);
        variant_kind kinds[MAX_KINDS];
        int nk = kinds_for(f, all, kinds);
        for (int ri = 0; ri < 2; ri++) {
            if (only_r >= 0 && ri != only_r) continue;
            counts c[2][MAX_KINDS];
            double t0 = omp_get_wtime();
            run_pass(&t, ri, kinds, nk, stride, c);
            double sec = omp_get_wtime() - t0;
            for (int si = 0; si < 2; si++) {
                for (int ki = 0; ki < nk; ki++) {
                    printf("encode %-6s %-12s %-6s %-17s inputs %10" PRId64 " mismatches %" PRId64
                           " seconds %.1f\n",
                           ref_fmt_name[f], round_name[ri], sat_name[si], kinds[ki].name, c[si][ki].inputs,
                           c[si][ki].mismatches, sec);
                    total_bad += c[si][ki].mismatches;
                }
            }
            fflush(stdout);
        }
        ref_fmt_free(&t);
    }
    printf("exhaustive_convert: %s, %" PRId64 " mismatches, %.1f s\n", total_bad ? "FAIL" : "PASS", total_bad,
           omp_get_wtime() - t_all);
    return total_bad ? 1 : 0;
}
