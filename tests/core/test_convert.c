/* Number formats (src/core/convert*.c): the spec's test vectors (sections 9.4 and 10), every code of every format
 * through the decoders against an independent decoder, encoders on boundary and random inputs against the slow
 * reference of tests/common/convert_ref.h, and every array variant against the scalar routines.
 * Usage: test_convert [seed]. The exhaustive 2^32 check is tests/exhaustive/exhaustive_convert.c. */
#include "common/check.h"
#include "common/convert_ref.h"
#include "common/seed.h"
#include "flashref_convert.h"

#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int reported; /* failures printed by the checks below that print their own message (at most 50) */

static uint64_t rng_state;
static uint64_t rnd(void) { return fr_test_rand(&rng_state); }

static float f32(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}
static uint32_t bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static const fr_round rounds[2] = {FR_ROUND_NEAREST_EVEN, FR_ROUND_HALF_AWAY};
static const fr_sat sats[2] = {FR_NO_SAT, FR_SAT};
static const char *const round_name[2] = {"nearest-even", "half-away"};
static const char *const sat_name[2] = {"no-sat", "sat"};

static float decode(int f, uint32_t c) {
    switch (f) {
    case REF_F16: return fr_f16_to_f32((uint16_t)c);
    case REF_BF16: return fr_bf16_to_f32((uint16_t)c);
    case REF_E4M3FN: return fr_e4m3fn_to_f32((uint8_t)c);
    case REF_E5M2: return fr_e5m2_to_f32((uint8_t)c);
    default: return fr_hif8_to_f32((uint8_t)c);
    }
}

/* Same value, same sign of zero, both NaN or neither. */
static int same_value(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

static ref_fmt fmts[REF_NFMT];

/* Checks one encoder input against the reference in all four modes; prints input and both codes in hex. */
static void check_encode(int f, uint32_t u) {
    size_t hint = SIZE_MAX;
    float x = f32(u);
    for (int ri = 0; ri < 2; ri++) {
        size_t idx = 0;
        if (!isnan(x) && !isinf(x)) idx = ref_nearest(&fmts[f], ref_f32_value(u), ri == 1, &hint);
        hint = SIZE_MAX;
        for (int si = 0; si < 2; si++) {
            uint32_t want = ref_finish(&fmts[f], u, idx, si == 1);
            uint32_t got = ref_lib_encode(f, x, rounds[ri], sats[si]);
            if (got != want) {
                if (reported++ < 50)
                    fprintf(stderr, "encode %s %s %s: input 0x%08" PRIx32 " (%a) got 0x%" PRIx32 " want 0x%" PRIx32 "\n",
                            ref_fmt_name[f], round_name[ri], sat_name[si], u, (double)x, got, want);
                failures++;
            }
        }
    }
}

/* ---- spec vectors ---------------------------------------------------------------------------------------------- */

static void test_hif8_spec(void) {
    /* Section 9.4 decode table. */
    static const struct { uint8_t code; double v; } dec[] = {
        {0x00, 0.0},          {0x01, 0x1p-22},      {0x07, 0x1p-16},        {0x08, 1.0},       {0x09, 1.125},
        {0x0F, 1.875},        {0x10, 2.0},          {0x14, 3.0},            {0x18, 0.5},       {0x1F, 0.9375},
        {0x20, 4.0},          {0x28, 8.0},          {0x2F, 15.0},           {0x30, 0.25},      {0x38, 0.125},
        {0x3F, 0.234375},     {0x40, 16.0},         {0x48, 64.0},           {0x5C, 0.0078125}, {0x5F, 0.013671875},
        {0x60, 256.0},        {0x6E, 32768.0},      {0x6F, INFINITY},       {0x70, 0x1p-8},    {0x7E, 0x1p-15},
        {0x7F, 1.5 * 0x1p-15}, {0x80, NAN},          {0x88, -1.0},           {0x92, -2.5},      {0xEE, -32768.0},
        {0xEF, -INFINITY},    {0xFF, -1.5 * 0x1p-15},
    };
    for (size_t i = 0; i < sizeof dec / sizeof dec[0]; i++) {
        double got = fr_hif8_to_f32(dec[i].code), ref = ref_decode_hif8(dec[i].code);
        if (!same_value(got, dec[i].v) || !same_value(ref, dec[i].v))
            fprintf(stderr, "hif8 decode 0x%02x: got %a ref %a want %a\n", dec[i].code, got, ref, dec[i].v);
        CHECK(same_value(got, dec[i].v));
        CHECK(same_value(ref, dec[i].v));
    }
    /* Section 9.3 / 9.4 encode examples (half away from zero, non-saturating), plus their saturating and
     * nearest-even counterparts (where a tie or an overflow makes them differ). */
    static const struct { float x; uint8_t ta_nosat, ta_sat, rne_nosat, rne_sat; } enc[] = {
        {1.0625f, 0x09, 0x09, 0x08, 0x08}, /* tie: away -> 1.125; even -> 1.0 (0x08) */
        {1.06249f, 0x08, 0x08, 0x08, 0x08},
        {3.0f, 0x14, 0x14, 0x14, 0x14},
        {-2.5f, 0x92, 0x92, 0x92, 0x92},
        {0.3f, 0x32, 0x32, 0x32, 0x32},
        {100.0f, 0x4A, 0x4A, 0x4A, 0x4A},
        {1000.0f, 0x64, 0x64, 0x64, 0x64},
        {5000.0f, 0x68, 0x68, 0x68, 0x68},
        {40000.0f, 0x6E, 0x6E, 0x6E, 0x6E},
        {40960.0f, 0x6F, 0x6E, 0x6E, 0x6E}, /* tie with the virtual 49152 (odd code 0x6F) */
        {65504.0f, 0x6F, 0x6E, 0x6F, 0x6E},
        {1e-7f, 0x00, 0x00, 0x00, 0x00},
        {0x1p-23f, 0x01, 0x01, 0x00, 0x00}, /* tie between 0 (even) and 2^-22 (0x01) */
        {-0x1p-23f, 0x81, 0x81, 0x00, 0x00}, /* no -0 */
        {1.5f * 0x1p-17f, 0x07, 0x07, 0x06, 0x06},
        {1.49f * 0x1p-17f, 0x06, 0x06, 0x06, 0x06},
        {1.25f * 0x1p-15f, 0x7F, 0x7F, 0x7E, 0x7E},
        {1.9f * 0x1p-16f, 0x7E, 0x7E, 0x7E, 0x7E},
        {1.5f * 0x1p-16f, 0x7E, 0x7E, 0x7E, 0x7E}, /* tie 2^-16 (0x07, odd) / 2^-15 (0x7E, even) */
        {1.5f * 0x1p-18f, 0x06, 0x06, 0x06, 0x06}, /* tie 2^-18 (0x05, odd) / 2^-17 (0x06, even) */
        {-0.0f, 0x00, 0x00, 0x00, 0x00},
        {INFINITY, 0x6F, 0x6E, 0x6F, 0x6E},
        {-INFINITY, 0xEF, 0xEE, 0xEF, 0xEE},
        {NAN, 0x80, 0x80, 0x80, 0x80},
        {-NAN, 0x80, 0x80, 0x80, 0x80},
        {15.5f, 0x40, 0x40, 0x40, 0x40}, /* tie 15 (0x2F, odd) / 16 (0x40, even) */
        {-1e30f, 0xEF, 0xEE, 0xEF, 0xEE},
    };
    for (size_t i = 0; i < sizeof enc / sizeof enc[0]; i++) {
        const uint8_t want[4] = {enc[i].ta_nosat, enc[i].ta_sat, enc[i].rne_nosat, enc[i].rne_sat};
        const fr_round r[4] = {FR_ROUND_HALF_AWAY, FR_ROUND_HALF_AWAY, FR_ROUND_NEAREST_EVEN, FR_ROUND_NEAREST_EVEN};
        const fr_sat s[4] = {FR_NO_SAT, FR_SAT, FR_NO_SAT, FR_SAT};
        for (int k = 0; k < 4; k++) {
            uint8_t got = fr_f32_to_hif8(enc[i].x, r[k], s[k]);
            if (got != want[k])
                fprintf(stderr, "hif8 encode %a (mode %d): got 0x%02x want 0x%02x\n", (double)enc[i].x, k, got, want[k]);
            CHECK(got == want[k]);
            /* the reference agrees with the spec too */
            uint32_t u = bits(enc[i].x);
            size_t hint = SIZE_MAX, idx = 0;
            if (!isnan(enc[i].x) && !isinf(enc[i].x)) idx = ref_nearest(&fmts[REF_HIF8], ref_f32_value(u), k < 2, &hint);
            CHECK(ref_finish(&fmts[REF_HIF8], u, idx, s[k] == FR_SAT) == want[k]);
        }
    }
}

static void test_ocp_fp8_spec(void) {
    /* Section 10 decode facts. */
    CHECK(fr_e4m3fn_to_f32(0x7E) == 448.0f);
    CHECK(fr_e4m3fn_to_f32(0xFE) == -448.0f);
    CHECK(fr_e4m3fn_to_f32(0x01) == 0x1p-9f);
    CHECK(fr_e4m3fn_to_f32(0x07) == 7 * 0x1p-9f);
    CHECK(fr_e4m3fn_to_f32(0x08) == 0x1p-6f);
    CHECK(fr_e4m3fn_to_f32(0x38) == 1.0f);
    CHECK(fr_e4m3fn_to_f32(0x78) == 256.0f); /* E = 15 is a normal binade except 0x7F */
    CHECK(isnan(fr_e4m3fn_to_f32(0x7F)) && isnan(fr_e4m3fn_to_f32(0xFF)));
    CHECK(fr_e4m3fn_to_f32(0x80) == 0.0f && signbit(fr_e4m3fn_to_f32(0x80)));
    CHECK(fr_e5m2_to_f32(0x7B) == 57344.0f);
    CHECK(fr_e5m2_to_f32(0x01) == 0x1p-16f);
    CHECK(fr_e5m2_to_f32(0x04) == 0x1p-14f);
    CHECK(fr_e5m2_to_f32(0x3C) == 1.0f);
    CHECK(fr_e5m2_to_f32(0x7C) == INFINITY && fr_e5m2_to_f32(0xFC) == -INFINITY);
    CHECK(isnan(fr_e5m2_to_f32(0x7D)) && isnan(fr_e5m2_to_f32(0x7E)) && isnan(fr_e5m2_to_f32(0x7F)));
    CHECK(fr_e5m2_to_f32(0x80) == 0.0f && signbit(fr_e5m2_to_f32(0x80)));
    /* Encoders: the FA kernel's RNE + SAT, and OCP non-saturating. */
    const fr_round E = FR_ROUND_NEAREST_EVEN, A = FR_ROUND_HALF_AWAY;
    CHECK(fr_f32_to_e4m3fn(1000.0f, E, FR_SAT) == 0x7E);
    CHECK(fr_f32_to_e4m3fn(-1000.0f, E, FR_SAT) == 0xFE);
    CHECK(fr_f32_to_e4m3fn(1000.0f, E, FR_NO_SAT) == 0x7F);
    CHECK(fr_f32_to_e4m3fn(-1000.0f, E, FR_NO_SAT) == 0xFF);
    CHECK(fr_f32_to_e4m3fn(INFINITY, E, FR_SAT) == 0x7E);
    CHECK(fr_f32_to_e4m3fn(-INFINITY, E, FR_SAT) == 0xFE);
    CHECK(fr_f32_to_e4m3fn(INFINITY, E, FR_NO_SAT) == 0x7F);
    CHECK(fr_f32_to_e4m3fn(NAN, E, FR_SAT) == 0x7F);
    CHECK(fr_f32_to_e4m3fn(-NAN, E, FR_SAT) == 0xFF);
    CHECK(fr_f32_to_e4m3fn(464.0f, E, FR_NO_SAT) == 0x7E); /* tie 448 (even) / virtual 480 (odd) */
    CHECK(fr_f32_to_e4m3fn(464.0f, A, FR_NO_SAT) == 0x7F);
    CHECK(fr_f32_to_e4m3fn(464.0f, A, FR_SAT) == 0x7E);
    CHECK(fr_f32_to_e4m3fn(465.0f, E, FR_NO_SAT) == 0x7F);
    CHECK(fr_f32_to_e4m3fn(0x1p-10f, E, FR_SAT) == 0x00);  /* tie 0 / 2^-9 */
    CHECK(fr_f32_to_e4m3fn(-0x1p-10f, E, FR_SAT) == 0x80); /* underflow keeps the sign */
    CHECK(fr_f32_to_e4m3fn(0x1p-10f, A, FR_SAT) == 0x01);
    CHECK(fr_f32_to_e4m3fn(1.0625f, E, FR_SAT) == 0x38); /* tie 1 / 1.125 -> even */
    CHECK(fr_f32_to_e4m3fn(1.1875f, E, FR_SAT) == 0x3A); /* tie 1.125 / 1.25 -> even 1.25 */
    CHECK(fr_f32_to_e5m2(60000.0f, E, FR_SAT) == 0x7B);
    CHECK(fr_f32_to_e5m2(60000.0f, E, FR_NO_SAT) == 0x7B);
    CHECK(fr_f32_to_e5m2(61440.0f, E, FR_NO_SAT) == 0x7C); /* tie 57344 (odd) / 65536 (even) */
    CHECK(fr_f32_to_e5m2(61440.0f, E, FR_SAT) == 0x7B);
    CHECK(fr_f32_to_e5m2(-1e9f, E, FR_NO_SAT) == 0xFC);
    CHECK(fr_f32_to_e5m2(-INFINITY, E, FR_SAT) == 0xFB);
    CHECK(fr_f32_to_e5m2(NAN, E, FR_SAT) == 0x7E);
    CHECK(fr_f32_to_e5m2(-NAN, A, FR_NO_SAT) == 0xFE);
    CHECK(fr_f32_to_e5m2(0x1p-17f, E, FR_SAT) == 0x00);
    CHECK(fr_f32_to_e5m2(0x1p-17f, A, FR_SAT) == 0x01);
    CHECK(fr_f32_to_e5m2(-0x1p-17f, E, FR_SAT) == 0x80);
    /* fp16 / bf16 corner cases (IEEE, D3). */
    CHECK(fr_f32_to_f16(65520.0f, E, FR_NO_SAT) == 0x7C00);
    CHECK(fr_f32_to_f16(65520.0f, E, FR_SAT) == 0x7BFF);
    CHECK(fr_f32_to_f16(nextafterf(65520.0f, 0.0f), A, FR_NO_SAT) == 0x7BFF);
    CHECK(fr_f32_to_f16(0x1p-25f, E, FR_NO_SAT) == 0x0000);
    CHECK(fr_f32_to_f16(0x1p-25f, A, FR_NO_SAT) == 0x0001);
    CHECK(fr_f32_to_f16(-0x1p-26f, A, FR_NO_SAT) == 0x8000);
    CHECK(fr_f32_to_f16(1.0f + 0x1p-11f, E, FR_SAT) == 0x3C00);
    CHECK(fr_f32_to_f16(1.0f + 0x1p-11f, A, FR_SAT) == 0x3C01);
    CHECK(fr_f32_to_f16(NAN, E, FR_SAT) == 0x7E00);
    CHECK(fr_f32_to_f16(-NAN, E, FR_SAT) == 0xFE00);
    CHECK(fr_f32_to_f16(f32(0x7F800001u), E, FR_SAT) == 0x7E00);
    CHECK(fr_f32_to_f16(f32(0x00000001u), A, FR_SAT) == 0x0000); /* fp32 subnormal, far below 2^-25 */
    CHECK(fr_f32_to_bf16(1.0f + 0x1p-8f, E, FR_SAT) == 0x3F80);
    CHECK(fr_f32_to_bf16(1.0f + 0x1p-8f, A, FR_SAT) == 0x3F81);
    CHECK(fr_f32_to_bf16(FLT_MAX, E, FR_NO_SAT) == 0x7F80);
    CHECK(fr_f32_to_bf16(FLT_MAX, E, FR_SAT) == 0x7F7F);
    CHECK(fr_f32_to_bf16(-INFINITY, A, FR_SAT) == 0xFF7F);
    CHECK(fr_f32_to_bf16(f32(0x7FA00001u), E, FR_SAT) == 0x7FE0);
    CHECK(fr_f32_to_bf16(f32(0xFF800001u), E, FR_SAT) == 0xFFC0);
    CHECK(fr_f32_to_bf16(f32(0x00008000u), E, FR_SAT) == 0x0000); /* subnormal tie -> even 0 */
    CHECK(fr_f32_to_bf16(f32(0x00008000u), A, FR_SAT) == 0x0001);
    CHECK(fr_f32_to_bf16(f32(0x00018000u), E, FR_SAT) == 0x0002);
}

/* ---- decoders: every code ---------------------------------------------------------------------------------------- */

static void test_decoders_all_codes(void) {
    for (int f = 0; f < REF_NFMT; f++) {
        uint32_t ncodes = 1u << ref_fmt_bits[f];
        for (uint32_t c = 0; c < ncodes; c++) {
            float got = decode(f, c);
            double want = ref_decode(f, c);
            if (!same_value(got, want)) {
                if (reported++ < 50)
                    fprintf(stderr, "decode %s 0x%04" PRIx32 ": got %a (0x%08" PRIx32 ") want %a\n", ref_fmt_name[f], c,
                            (double)got, bits(got), want);
                failures++;
            }
            /* NaN bits: bf16 widens unchanged; the others give a quiet NaN with the sign and shifted payload */
            if (isnan(want)) {
                uint32_t b = bits(got), want_bits;
                if (f == REF_BF16) want_bits = c << 16;
                else if (f == REF_F16) want_bits = ((c & 0x8000u) << 16) | 0x7FC00000u | ((c & 0x3FFu) << 13);
                else if (f == REF_E5M2) want_bits = ((c & 0x80u) << 24) | 0x7FC00000u | ((c & 0x3u) << 21);
                else if (f == REF_E4M3FN) want_bits = ((c & 0x80u) << 24) | 0x7FC00000u;
                else want_bits = 0x7FC00000u;
                CHECK(b == want_bits);
            }
            /* every finite code survives decode -> encode in every mode */
            if (isfinite(want)) {
                for (int k = 0; k < 4; k++) {
                    uint32_t back = ref_lib_encode(f, got, rounds[k & 1], sats[k >> 1]);
                    if (back != c) {
                        if (reported++ < 50)
                            fprintf(stderr, "roundtrip %s 0x%04" PRIx32 " -> 0x%04" PRIx32 "\n", ref_fmt_name[f], c, back);
                        failures++;
                    }
                }
            }
        }
    }
    /* the reference tables are what the spec says */
    CHECK(fmts[REF_F16].val[fmts[REF_F16].n - 1] == 65504.0);
    CHECK(fmts[REF_BF16].val[fmts[REF_BF16].n - 1] == 0x1.FEp127);
    CHECK(fmts[REF_E4M3FN].val[fmts[REF_E4M3FN].n - 1] == 448.0);
    CHECK(fmts[REF_E5M2].val[fmts[REF_E5M2].n - 1] == 57344.0);
    CHECK(fmts[REF_HIF8].val[fmts[REF_HIF8].n - 1] == 32768.0);
    CHECK(fmts[REF_HIF8].n == 127); /* 0, 7 denormals, 7*8 (|e| <= 3) + 8*4 (4..7) + 16*2 - 1 (8..15, no 1.5*2^15) */
    CHECK(fmts[REF_HIF8].val[1] == 0x1p-22);
}

/* ---- encoders: boundaries and random inputs ---------------------------------------------------------------------- */

static void test_encoders_boundaries(void) {
    for (int f = 0; f < REF_NFMT; f++) {
        const ref_fmt *t = &fmts[f];
        for (size_t i = 0; i < t->n; i++) { /* includes the pair (max, overflow value) */
            double lo = t->val[i], hi = t->val[i + 1], mid = lo + (hi - lo) / 2;
            float fm = (float)mid;
            CHECK((double)fm == mid);
            const float xs[6] = {(float)lo, nextafterf((float)lo, INFINITY), nextafterf(fm, 0.0f), fm,
                                 nextafterf(fm, INFINITY), nextafterf((float)hi, 0.0f)};
            for (int k = 0; k < 6; k++) {
                check_encode(f, bits(xs[k]));
                check_encode(f, bits(xs[k]) | 0x80000000u);
            }
        }
        static const uint32_t specials[] = {0x00000000u, 0x00000001u, 0x007FFFFFu, 0x00800000u, 0x7F7FFFFFu,
                                            0x7F800000u, 0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu, 0x3F800000u};
        for (size_t k = 0; k < sizeof specials / sizeof specials[0]; k++) {
            check_encode(f, specials[k]);
            check_encode(f, specials[k] | 0x80000000u);
        }
    }
}

static void test_encoders_random(int count) {
    for (int it = 0; it < count; it++) {
        uint64_t r = rnd();
        uint32_t u = (uint32_t)r;
        for (int f = 0; f < REF_NFMT; f++) check_encode(f, u);
        /* values in the formats' range: exponent uniform over [-30, 20] */
        float x = ldexpf(1.0f + (float)((r >> 32) & 0xFFFFFF) * 0x1p-24f, (int)((r >> 56) % 51) - 30);
        for (int f = 0; f < REF_NFMT; f++) check_encode(f, bits(x) | (uint32_t)(r & 0x80000000u));
    }
}

/* ---- array variants ---------------------------------------------------------------------------------------------- */

static void test_arrays(void) {
    fr_isa isas[16] = {FR_ISA_AUTO}; /* auto, then the library's one variant list */
    const char *isa_name[16] = {"auto"};
    size_t nisa = 1;
    for (int k = 0; fr_isa_variant(k) != FR_ISA_AUTO && nisa < 16; k++, nisa++)
        isas[nisa] = fr_isa_variant(k), isa_name[nisa] = fr_isa_name(isas[nisa]);
    enum { NMAX = 4099, GUARD = 8 };
    float *x = malloc(sizeof(float) * (NMAX + 1));
    float *y = malloc(sizeof(float) * (NMAX + GUARD + 1));
    uint16_t *c = malloc(sizeof(uint16_t) * (NMAX + GUARD + 1));
    if (!x || !y || !c) {
        CHECK(!"malloc");
        goto done;
    }
    for (size_t ii = 0; ii < nisa; ii++) {
        if (!fr_convert_isa_available(isas[ii])) {
            printf("  array variant %s: not available on this machine (skipped)\n", isa_name[ii]);
            CHECK(fr_convert_array_isa(isas[ii], FR_F16, c, FR_F32, x, 1, FR_ROUND_NEAREST_EVEN, FR_SAT) ==
                  FR_E_NOT_AVAILABLE);
            continue;
        }
        for (int trial = 0; trial < 60; trial++) {
            size_t n = trial < 40 ? (size_t)trial : (size_t)(rnd() % NMAX);
            size_t off = rnd() % 2; /* misalign by one element */
            for (size_t i = 0; i < n + off; i++) {
                uint64_t r = rnd();
                /* mix raw bit patterns (NaN, Inf, subnormals) with values near the formats' grids and ties */
                x[i] = (r & 3) ? f32((uint32_t)(r >> 32))
                               : ldexpf((float)((r >> 8) & 0xFFF) * 0x1p-11f, (int)((r >> 24) % 48) - 30);
                /* exact powers of two over the whole fp32 range (ties and grid edges at every exponent) */
                if ((r & 0x70) == 0) x[i] = f32(((uint32_t)(r >> 40) % 255u) << 23 | (uint32_t)(r & 0x80000000u));
            }
            for (int f = 0; f < REF_NFMT; f++) {
                fr_dtype dt = ref_fmt_dtype[f];
                size_t es = ref_fmt_bits[f] / 8;
                for (int k = 0; k < 4; k++) {
                    fr_round r = rounds[k & 1];
                    fr_sat s = sats[k >> 1];
                    memset(c, 0xA5, sizeof(uint16_t) * (NMAX + GUARD + 1));
                    fr_status st = fr_convert_array_isa(isas[ii], dt, (char *)c + off * es, FR_F32, x + off, n, r, s);
                    CHECK(st == FR_OK);
                    for (size_t i = 0; i < n; i++) {
                        uint32_t got = es == 2 ? ((uint16_t *)((char *)c + off * es))[i]
                                               : ((uint8_t *)((char *)c + off * es))[i];
                        uint32_t w = ref_lib_encode(f, x[off + i], r, s);
                        if (got != w) {
                            if (reported++ < 50)
                                fprintf(stderr, "array %s %s %s %s n=%zu i=%zu: input 0x%08" PRIx32 " got 0x%" PRIx32
                                                " want 0x%" PRIx32 "\n",
                                        isa_name[ii], ref_fmt_name[f], round_name[k & 1], sat_name[k >> 1], n, i,
                                        bits(x[off + i]), got, w);
                            failures++;
                        }
                    }
                    /* nothing written past n elements */
                    const unsigned char *g = (const unsigned char *)c + (off + n) * es;
                    for (size_t i = 0; i < GUARD; i++) CHECK(g[i] == 0xA5);
                    /* decode the codes back (exact): array == scalar, bit for bit */
                    for (size_t i = 0; i < n + GUARD; i++) y[i] = f32(0xDEADBEEFu);
                    st = fr_convert_array_isa(isas[ii], FR_F32, y, dt, (char *)c + off * es, n, r, s);
                    CHECK(st == FR_OK);
                    for (size_t i = 0; i < n; i++) {
                        uint32_t code = es == 2 ? ((uint16_t *)((char *)c + off * es))[i]
                                                : ((uint8_t *)((char *)c + off * es))[i];
                        CHECK(bits(y[i]) == bits(decode(f, code)));
                    }
                    for (size_t i = n; i < n + GUARD; i++) CHECK(bits(y[i]) == 0xDEADBEEFu);
                }
            }
        }
        /* every 16-bit code through the array decoders */
        uint16_t *all = malloc(sizeof(uint16_t) * 65536);
        float *dec = malloc(sizeof(float) * 65536);
        if (all && dec) {
            for (uint32_t i = 0; i < 65536; i++) all[i] = (uint16_t)i;
            for (int f = 0; f < REF_NFMT; f++) { /* 8-bit formats: the low bytes of all[] repeat 0..255 */
                const void *codes = all;
                uint8_t bytes[256 + 13];
                uint32_t ncodes = 65536;
                if (ref_fmt_bits[f] == 8) {
                    ncodes = 256 + 13; /* a tail that is not a multiple of the vector width */
                    for (uint32_t i = 0; i < ncodes; i++) bytes[i] = (uint8_t)(i * 7u);
                    codes = bytes;
                }
                CHECK(fr_convert_array_isa(isas[ii], FR_F32, dec, ref_fmt_dtype[f], codes, ncodes,
                                           FR_ROUND_NEAREST_EVEN, FR_SAT) == FR_OK);
                for (uint32_t i = 0; i < ncodes; i++) {
                    uint32_t code = ncodes == 65536 ? i : bytes[i];
                    if (bits(dec[i]) != bits(decode(f, code))) {
                        if (reported++ < 50)
                            fprintf(stderr, "array decode %s %s code 0x%04" PRIx32 ": got 0x%08" PRIx32
                                            " want 0x%08" PRIx32 "\n",
                                    isa_name[ii], ref_fmt_name[f], code, bits(dec[i]), bits(decode(f, code)));
                        failures++;
                    }
                }
            }
        }
        free(all);
        free(dec);
        printf("  array variant %s: checked\n", isa_name[ii]);
    }
    /* fp32 -> fp32 copies; argument errors */
    for (int i = 0; i < 10; i++) x[i] = (float)i - 3.5f;
    CHECK(fr_convert_array(FR_F32, y, FR_F32, x, 10, FR_ROUND_NEAREST_EVEN, FR_SAT) == FR_OK);
    CHECK(memcmp(x, y, 10 * sizeof(float)) == 0);
    CHECK(fr_convert_array(FR_F16, c, FR_F64, x, 10, FR_ROUND_NEAREST_EVEN, FR_SAT) == FR_E_DTYPE);
    CHECK(fr_convert_array(FR_BF16, c, FR_F16, x, 10, FR_ROUND_NEAREST_EVEN, FR_SAT) == FR_E_DTYPE);
    CHECK(fr_convert_array(FR_I32, c, FR_F32, x, 10, FR_ROUND_NEAREST_EVEN, FR_SAT) == FR_E_DTYPE);
    CHECK(fr_convert_array(FR_F16, NULL, FR_F32, x, 10, FR_ROUND_NEAREST_EVEN, FR_SAT) == FR_E_NULL);
    CHECK(fr_convert_array(FR_F16, c, FR_F32, NULL, 10, FR_ROUND_NEAREST_EVEN, FR_SAT) == FR_E_NULL);
    CHECK(fr_convert_array(FR_F16, NULL, FR_F32, NULL, 0, FR_ROUND_NEAREST_EVEN, FR_SAT) == FR_OK);
    CHECK(fr_convert_array(FR_F16, c, FR_F32, x, SIZE_MAX / 2, FR_ROUND_NEAREST_EVEN, FR_SAT) == FR_E_OVERFLOW);
    CHECK(fr_convert_array(FR_F16, c, FR_F32, x, 10, (fr_round)7, FR_SAT) == FR_E_INVALID_ARG);
    CHECK(fr_convert_array(FR_F16, c, FR_F32, x, 10, FR_ROUND_NEAREST_EVEN, (fr_sat)7) == FR_E_INVALID_ARG);
    CHECK(fr_convert_array_isa((fr_isa)99, FR_F16, c, FR_F32, x, 10, FR_ROUND_NEAREST_EVEN, FR_SAT) ==
          FR_E_INVALID_ARG);
done:
    free(x);
    free(y);
    free(c);
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t)time(NULL);
    rng_state = seed;
    printf("test_convert: seed %" PRIu64 " (rerun with: test_convert %" PRIu64 ")\n", seed, seed);
    for (int f = 0; f < REF_NFMT; f++) {
        if (ref_fmt_init(&fmts[f], f) != 0) {
            fprintf(stderr, "reference table for %s is inconsistent\n", ref_fmt_name[f]);
            return 1;
        }
    }
    printf("  array conversions use variant %d on this machine\n", (int)fr_convert_isa_selected());
    test_hif8_spec();
    test_ocp_fp8_spec();
    test_decoders_all_codes();
    test_encoders_boundaries();
    test_encoders_random(300000);
    test_arrays();
    for (int f = 0; f < REF_NFMT; f++) ref_fmt_free(&fmts[f]);
    return fr_test_exit("test_convert");
}
