/* Scalar number-format conversions: fp32 <-> fp16, bf16, e4m3fn, e5m2, hif8 (spec sections 9, 10, decision D3).
 *
 * Encoders work on the fp32 bit pattern with integer arithmetic only, so they do not depend on the FPU's rounding
 * mode or on FTZ/DAZ, and fp32 subnormal inputs are rounded like any other value. The rules (docs/number-formats.md):
 *   - the result is the format value nearest to x; a tie goes to the even code (lowest code bit 0) for
 *     FR_ROUND_NEAREST_EVEN and to the larger magnitude for FR_ROUND_HALF_AWAY;
 *   - a value past the largest finite one competes with a virtual "overflow" value one step further (the value the
 *     next code would have); rounding to it is overflow: +-max under FR_SAT, +-Inf (NaN for e4m3fn) under FR_NO_SAT;
 *   - +-Inf inputs: +-max under FR_SAT, the format's Inf (NaN for e4m3fn) under FR_NO_SAT;
 *   - NaN inputs: the format's canonical NaN (see each encoder); underflow keeps the sign (no -0 in hif8).
 */
#include "core/core.h"

#include <string.h>

static inline uint32_t f32_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float bits_f32(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* cond ? a : b without a branch: conversions of real data take both sides unpredictably. */
static inline uint32_t select_u32(bool cond, uint32_t a, uint32_t b) {
    uint32_t m = 0u - (uint32_t)cond;
    return (a & m) | (b & ~m);
}

/* Rounds a finite fp32 magnitude `a` (bits, sign cleared) to a binary format with `mbits` stored mantissa bits and
 * minimum normal exponent `emin`, returning the magnitude code ((biased exponent << mbits) | mantissa), which may
 * exceed the format's largest code (the caller decides overflow). Carries propagate from mantissa into exponent,
 * and the code's lowest bit is the lowest bit of the rounded significand, so "ties to even" is "ties to even code". */
static inline uint32_t round_ieee_like(uint32_t a, int mbits, int emin, fr_round r) {
    int E = (int)(a >> 23);
    uint32_t sig = a & 0x7FFFFFu;
    int e; /* unbiased exponent; only max(e, emin) matters, and every fp32 subnormal is below every emin here */
    if (E != 0) {
        sig |= 0x800000u;
        e = E - 127;
    } else {
        E = 1;
        e = -127;
    }
    int base = e > emin ? e : emin;       /* exponent of the target binade (subnormals share emin's) */
    int s = (base - mbits) - (E - 150);   /* value = sig * 2^(E-150); target quantum 2^(base-mbits) */
    if (s > 31) s = 31;                   /* sig < 2^24: any s >= 25 already rounds to 0 (below half a quantum) */
    uint32_t half = 1u << (s - 1);        /* s >= 23 - mbits >= 13 */
    uint32_t n;
    if (r == FR_ROUND_HALF_AWAY) {
        n = (sig + half) >> s;
    } else {
        n = (sig + (half - 1u) + ((sig >> s) & 1u)) >> s;
    }
    return ((uint32_t)(base - emin) << mbits) + n;
}

/* The non-NaN part of an IEEE-like encoder: |x| (fp32 bits a, not NaN) rounded to mbits mantissa bits with minimum
 * normal exponent emin; +-Inf and results above max_code become max_code (saturating) or over_code (Inf, or NaN for
 * e4m3fn). Returns the magnitude code; the caller adds the sign. */
static inline uint32_t encode_ieee_like(uint32_t a, int mbits, int emin, uint32_t max_code, uint32_t over_code,
                                        fr_round r, fr_sat s) {
    const uint32_t over = s == FR_SAT ? max_code : over_code;
    if (a == 0x7F800000u) return over;
    uint32_t c = round_ieee_like(a, mbits, emin, r);
    return select_u32(c > max_code, over, c);
}

/* Alike convert.c:fr_f32_to_e4m3fn (and _bf16, _e5m2): kept apart because each format has its own NaN code, largest
 * finite code and overflow code around the shared encode_ieee_like; a wrapper is one row of that table. */
uint16_t fr_f32_to_f16(float x, fr_round r, fr_sat s) {
    uint32_t u = f32_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (uint16_t)(sign | 0x7E00u);
    return (uint16_t)(sign | encode_ieee_like(a, 10, -14, 0x7BFFu, 0x7C00u, r, s));
}

uint16_t fr_f32_to_bf16(float x, fr_round r, fr_sat s) {
    uint32_t u = f32_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7FFFFFFFu;
    /* Quiet NaN keeping the sign and the top 6 payload bits (the usual (x >> 16) | 0x40 rule). */
    if (a > 0x7F800000u) return (uint16_t)((u >> 16) | 0x0040u);
    return (uint16_t)(sign | encode_ieee_like(a, 7, -126, 0x7F7Fu, 0x7F80u, r, s));
}

/* Alike convert.c:fr_f32_to_f16 (and _e5m2): kept apart because each format has its own NaN code, largest finite
 * code and overflow code around the shared encode_ieee_like. */
uint8_t fr_f32_to_e4m3fn(float x, fr_round r, fr_sat s) {
    uint32_t u = f32_bits(x);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7FFFFFFFu;
    /* No Inf: NaN and non-saturated overflow both give S.1111.111. The virtual overflow value is 480 (code 0x7F,
     * odd), so under nearest-even the tie 464 stays at 448. */
    if (a > 0x7F800000u) return (uint8_t)(sign | 0x7Fu);
    return (uint8_t)(sign | encode_ieee_like(a, 3, -6, 0x7Eu, 0x7Fu, r, s));
}

/* Alike convert.c:fr_f32_to_e4m3fn (and _f16): kept apart because each format has its own NaN code, largest finite
 * code and overflow code around the shared encode_ieee_like. */
uint8_t fr_f32_to_e5m2(float x, fr_round r, fr_sat s) {
    uint32_t u = f32_bits(x);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (uint8_t)(sign | 0x7Eu);
    return (uint8_t)(sign | encode_ieee_like(a, 2, -14, 0x7Bu, 0x7Cu, r, s));
}

/* ---- HiFloat8 (spec 9.1, 9.3) ---------------------------------------------------------------------------------- */

#define HIF8_NAN 0x80u
#define HIF8_INF 0x6Fu
#define HIF8_MAX 0x6Eu /* 2^15 */

/* Magnitude code of 2^e (mantissa bits zero), e = -22..15, by spec 9.1: the denormals 0x01..0x07 = 2^(M-23), then
 * 11 s eee m (|e| 8..15), 10 s ee mm (4..7), 01 s e mmm (2..3), 001 s mmm (1), 0001 mmm (0); s = exponent sign.
 * The mantissa always sits in the low bits, so the code of 2^e (1 + m/2^w) is hif8_exp_code[e + 22] | m. */
static const uint8_t hif8_exp_code[38] = {
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,                         /* e = -22..-16: denormals */
    0x7E, 0x7C, 0x7A, 0x78, 0x76, 0x74, 0x72, 0x70,                   /* -15..-8 */
    0x5C, 0x58, 0x54, 0x50,                                           /* -7..-4 */
    0x38, 0x30, 0x18, 0x08, 0x10, 0x20, 0x28,                         /* -3..3 */
    0x40, 0x44, 0x48, 0x4C,                                           /* 4..7 */
    0x60, 0x62, 0x64, 0x66, 0x68, 0x6A, 0x6C, 0x6E,                   /* 8..15 */
};

uint8_t fr_f32_to_hif8(float x, fr_round r, fr_sat s) {
    uint32_t u = f32_bits(x);
    uint32_t sign = (u >> 24) & 0x80u;
    uint32_t a = u & 0x7FFFFFFFu;
    uint32_t ovf = sign | (s == FR_SAT ? HIF8_MAX : HIF8_INF);
    if (a > 0x7F800000u) return HIF8_NAN;
    if (a >= 0x47800000u) return (uint8_t)ovf; /* >= 2^16 (and Inf): past the virtual 49152 */
    if (a < 0x34000000u) return 0x00;          /* < 2^-23: below half of 2^-22; no -0 */
    int e = (int)(a >> 23) - 127;              /* -23..15 */
    uint32_t ae = (uint32_t)(e < 0 ? -e : e);
    /* Quantum 2^(e - w): w = 3, 2, 1 mantissa bits for |e| <= 3, 7, 15, 0 in the denormal binades -22..-16, and
     * e = -23 rounds on the 2^-22 grid (candidates 0 and 2^-22), i.e. w = -1. Shift sh = 23 - w = 20..24. */
    uint32_t sh = 20u + (ae > 3) + (ae > 7) + (ae > 15) + (ae > 22);
    uint32_t sig = (a & 0x7FFFFFu) | 0x800000u;
    uint32_t n = sig >> sh;
    uint32_t rem = sig & ((1u << sh) - 1u);
    uint32_t half = 1u << (sh - 1u);
    if (r == FR_ROUND_HALF_AWAY) {
        n += rem >= half;
    } else {
        /* Tie: go up when the lower candidate's code is odd. With w != 0 that code's lowest bit is n's; in the
         * denormal binades (w = 0, n = 1) the lower candidate 2^e has code e + 23. */
        uint32_t lower = sh == 23u ? (uint32_t)(e + 23) : n;
        n += (uint32_t)(rem > half) | ((uint32_t)(rem == half) & lower & 1u);
    }
    if (n == 0) return 0x00; /* e = -23 rounded down; no -0 */
    /* n reached 2^(w+1): the next binade (for e = -23, n = 1 is 2^-22) */
    uint32_t carry = (n >> (24u - sh)) != 0;
    int e2 = e + (int)carry;
    uint32_t m = carry || sh >= 23u ? 0u : n & ((1u << (23u - sh)) - 1u);
    if (e2 > 15 || (e2 == 15 && m != 0)) return (uint8_t)ovf; /* the virtual 49152 = 1.5 * 2^15 */
    return (uint8_t)(sign | hif8_exp_code[e2 + 22] | m);
}

/* ---- Decoders (exact) ------------------------------------------------------------------------------------------ */

/* NaN codes decode to a quiet fp32 NaN with the sign and the payload shifted up (what F16C hardware does for fp16);
 * bf16 decodes by widening the bits unchanged. */

float fr_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu;
    uint32_t m = h & 0x3FFu;
    if (e == 0) {
        float v = (float)m * 0x1p-24f; /* exact: m < 2^10 */
        return bits_f32(f32_bits(v) | sign);
    }
    if (e == 31) return bits_f32(sign | 0x7F800000u | (m ? 0x400000u : 0u) | (m << 13));
    return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

float fr_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

float fr_e4m3fn_to_f32(uint8_t c) {
    uint32_t sign = (uint32_t)(c & 0x80u) << 24;
    uint32_t e = (c >> 3) & 0xFu;
    uint32_t m = c & 7u;
    uint32_t normal = (e + 120u) << 23 | (m << 20);
    uint32_t subnormal = f32_bits((float)m * 0x1p-9f); /* exact: m < 8 */
    uint32_t mag = select_u32(e == 0, subnormal, normal);
    mag = select_u32(e == 15 && m == 7, 0x7FC00000u, mag);
    return bits_f32(sign | mag);
}

/* e5m2 is the top byte of fp16. */
float fr_e5m2_to_f32(uint8_t c) { return fr_f16_to_f32((uint16_t)(c << 8)); }

/* fp32 bits of the hif8 magnitudes 0x00..0x7F (0x6F = Inf), from the table of spec 9.1 (e.g. 0x08 = 1.0 = 0x3F800000,
 * 0x6E = 32768 = 0x47000000, 0x01 = 2^-22 = 0x34800000). */
static const uint32_t hif8_mag_bits[128] = {
    0x00000000u, 0x34800000u, 0x35000000u, 0x35800000u, 0x36000000u, 0x36800000u, 0x37000000u, 0x37800000u,
    0x3F800000u, 0x3F900000u, 0x3FA00000u, 0x3FB00000u, 0x3FC00000u, 0x3FD00000u, 0x3FE00000u, 0x3FF00000u,
    0x40000000u, 0x40100000u, 0x40200000u, 0x40300000u, 0x40400000u, 0x40500000u, 0x40600000u, 0x40700000u,
    0x3F000000u, 0x3F100000u, 0x3F200000u, 0x3F300000u, 0x3F400000u, 0x3F500000u, 0x3F600000u, 0x3F700000u,
    0x40800000u, 0x40900000u, 0x40A00000u, 0x40B00000u, 0x40C00000u, 0x40D00000u, 0x40E00000u, 0x40F00000u,
    0x41000000u, 0x41100000u, 0x41200000u, 0x41300000u, 0x41400000u, 0x41500000u, 0x41600000u, 0x41700000u,
    0x3E800000u, 0x3E900000u, 0x3EA00000u, 0x3EB00000u, 0x3EC00000u, 0x3ED00000u, 0x3EE00000u, 0x3EF00000u,
    0x3E000000u, 0x3E100000u, 0x3E200000u, 0x3E300000u, 0x3E400000u, 0x3E500000u, 0x3E600000u, 0x3E700000u,
    0x41800000u, 0x41A00000u, 0x41C00000u, 0x41E00000u, 0x42000000u, 0x42200000u, 0x42400000u, 0x42600000u,
    0x42800000u, 0x42A00000u, 0x42C00000u, 0x42E00000u, 0x43000000u, 0x43200000u, 0x43400000u, 0x43600000u,
    0x3D800000u, 0x3DA00000u, 0x3DC00000u, 0x3DE00000u, 0x3D000000u, 0x3D200000u, 0x3D400000u, 0x3D600000u,
    0x3C800000u, 0x3CA00000u, 0x3CC00000u, 0x3CE00000u, 0x3C000000u, 0x3C200000u, 0x3C400000u, 0x3C600000u,
    0x43800000u, 0x43C00000u, 0x44000000u, 0x44400000u, 0x44800000u, 0x44C00000u, 0x45000000u, 0x45400000u,
    0x45800000u, 0x45C00000u, 0x46000000u, 0x46400000u, 0x46800000u, 0x46C00000u, 0x47000000u, 0x7F800000u,
    0x3B800000u, 0x3BC00000u, 0x3B000000u, 0x3B400000u, 0x3A800000u, 0x3AC00000u, 0x3A000000u, 0x3A400000u,
    0x39800000u, 0x39C00000u, 0x39000000u, 0x39400000u, 0x38800000u, 0x38C00000u, 0x38000000u, 0x38400000u,
};

float fr_hif8_to_f32(uint8_t c) {
    if (c == HIF8_NAN) return bits_f32(0x7FC00000u);
    return bits_f32(((uint32_t)(c & 0x80u) << 24) | hif8_mag_bits[c & 0x7Fu]); /* 0x00 is +0: sign bit clear */
}
