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

uint16_t fr_f32_to_f16(float x, fr_round r, fr_sat s) {
    uint32_t u = f32_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (uint16_t)(sign | 0x7E00u);
    if (a == 0x7F800000u) return (uint16_t)(sign | (s == FR_SAT ? 0x7BFFu : 0x7C00u));
    uint32_t c = round_ieee_like(a, 10, -14, r);
    if (c > 0x7BFFu) c = s == FR_SAT ? 0x7BFFu : 0x7C00u;
    return (uint16_t)(sign | c);
}

uint16_t fr_f32_to_bf16(float x, fr_round r, fr_sat s) {
    uint32_t u = f32_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7FFFFFFFu;
    /* Quiet NaN keeping the sign and the top 6 payload bits (the usual (x >> 16) | 0x40 rule). */
    if (a > 0x7F800000u) return (uint16_t)((u >> 16) | 0x0040u);
    if (a == 0x7F800000u) return (uint16_t)(sign | (s == FR_SAT ? 0x7F7Fu : 0x7F80u));
    uint32_t c = round_ieee_like(a, 7, -126, r);
    if (c > 0x7F7Fu) c = s == FR_SAT ? 0x7F7Fu : 0x7F80u;
    return (uint16_t)(sign | c);
}

uint8_t fr_f32_to_e4m3fn(float x, fr_round r, fr_sat s) {
    uint32_t u = f32_bits(x);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7FFFFFFFu;
    /* No Inf: NaN and non-saturated overflow both give S.1111.111. The virtual overflow value is 480 (code 0x7F,
     * odd), so under nearest-even the tie 464 stays at 448. */
    if (a > 0x7F800000u) return (uint8_t)(sign | 0x7Fu);
    if (a == 0x7F800000u) return (uint8_t)(sign | (s == FR_SAT ? 0x7Eu : 0x7Fu));
    uint32_t c = round_ieee_like(a, 3, -6, r);
    if (c > 0x7Eu) c = s == FR_SAT ? 0x7Eu : 0x7Fu;
    return (uint8_t)(sign | c);
}

uint8_t fr_f32_to_e5m2(float x, fr_round r, fr_sat s) {
    uint32_t u = f32_bits(x);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (uint8_t)(sign | 0x7Eu);
    if (a == 0x7F800000u) return (uint8_t)(sign | (s == FR_SAT ? 0x7Bu : 0x7Cu));
    uint32_t c = round_ieee_like(a, 2, -14, r);
    if (c > 0x7Bu) c = s == FR_SAT ? 0x7Bu : 0x7Cu;
    return (uint8_t)(sign | c);
}

/* ---- HiFloat8 (spec 9.1, 9.3) ---------------------------------------------------------------------------------- */

#define HIF8_NAN 0x80u
#define HIF8_INF 0x6Fu
#define HIF8_MAX 0x6Eu /* 2^15 */

/* Stored mantissa bits of the binade 2^e, -22 <= e <= 15 (0 in the denormal binades -22..-16). */
static inline int hif8_width(int e) {
    int m = e < 0 ? -e : e;
    if (m <= 3) return 3;
    if (m <= 7) return 2;
    if (m <= 15) return 1;
    return 0;
}

/* Magnitude code of 2^e * (1 + m / 2^width(e)), -22 <= e <= 15 (m = 0 in the denormal binades). */
static inline uint32_t hif8_emit(int e, uint32_t m) {
    if (e <= -16) return (uint32_t)(e + 23); /* denormals 0x01..0x07 = 2^(M-23) */
    uint32_t neg = e < 0 ? 1u : 0u;
    uint32_t ae = (uint32_t)(e < 0 ? -e : e);
    if (ae == 0) return 0x08u | m;                                         /* 0001 mmm */
    if (ae == 1) return 0x10u | (neg << 3) | m;                            /* 001 s mmm */
    if (ae <= 3) return 0x20u | (neg << 4) | ((ae - 2u) << 3) | m;         /* 01 s e mmm */
    if (ae <= 7) return 0x40u | (neg << 4) | ((ae - 4u) << 2) | m;         /* 10 s ee mm */
    return 0x60u | (neg << 4) | ((ae - 8u) << 1) | m;                      /* 11 s eee m */
}

uint8_t fr_f32_to_hif8(float x, fr_round r, fr_sat s) {
    uint32_t u = f32_bits(x);
    uint32_t sign = (u >> 24) & 0x80u;
    uint32_t a = u & 0x7FFFFFFFu;
    uint32_t ovf = sign | (s == FR_SAT ? HIF8_MAX : HIF8_INF);
    if (a > 0x7F800000u) return HIF8_NAN;
    if (a >= 0x47800000u) return (uint8_t)ovf; /* >= 2^16 (and Inf): past the virtual 49152 */
    if (a < 0x34000000u) return 0x00;          /* < 2^-23: below half of 2^-22; no -0 */
    int e = (int)(a >> 23) - 127;              /* -23..15 */
    uint32_t sig = (a & 0x7FFFFFu) | 0x800000u;
    /* Quantum 2^(e - w); e = -23 rounds on the 2^-22 grid (candidates 0 and 2^-22), i.e. w = -1. */
    int w = e == -23 ? -1 : hif8_width(e);
    int sh = 23 - w; /* 20..24 */
    uint32_t half = 1u << (sh - 1);
    uint32_t n = sig >> sh;
    uint32_t rem = sig & ((1u << sh) - 1u);
    if (rem > half) {
        n++;
    } else if (rem == half) {
        if (r == FR_ROUND_HALF_AWAY) {
            n++;
        } else {
            /* Tie: go up when the lower candidate's code is odd. With w != 0 that code's lowest bit is n's; in the
             * denormal binades (w = 0, n = 1) the lower candidate 2^e has code e + 23. */
            uint32_t lower_odd = w == 0 ? (uint32_t)(e + 23) & 1u : n & 1u;
            n += lower_odd;
        }
    }
    if (n == 0) return 0x00;
    int e2;
    uint32_t m;
    if (w < 0) { /* n == 1: 2^-22 */
        e2 = -22;
        m = 0;
    } else if (n >= (2u << w)) { /* carry into the next binade */
        e2 = e + 1;
        m = 0;
    } else {
        e2 = e;
        m = n - (1u << w);
    }
    if (e2 > 15 || (e2 == 15 && m != 0)) return (uint8_t)ovf; /* the virtual 49152 = 1.5 * 2^15 */
    return (uint8_t)(sign | hif8_emit(e2, m));
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
    if (e == 15 && m == 7) return bits_f32(sign | 0x7FC00000u);
    if (e == 0) return bits_f32(f32_bits((float)m * 0x1p-9f) | sign);
    return bits_f32(sign | ((e + 120u) << 23) | (m << 20));
}

/* e5m2 is the top byte of fp16. */
float fr_e5m2_to_f32(uint8_t c) { return fr_f16_to_f32((uint16_t)(c << 8)); }

float fr_hif8_to_f32(uint8_t c) {
    if (c == 0x00) return 0.0f;
    if (c == HIF8_NAN) return bits_f32(0x7FC00000u);
    uint32_t sign = (uint32_t)(c & 0x80u) << 24;
    uint32_t b = c & 0x7Fu;
    if (b == HIF8_INF) return bits_f32(sign | 0x7F800000u);
    int e;
    uint32_t m, w;
    if (b < 0x08u) { /* denormal 2^(M-23) */
        e = (int)b - 23;
        m = 0;
        w = 0;
    } else if (b < 0x10u) { /* 0001 mmm: e = 0 */
        e = 0;
        m = b & 7u;
        w = 3;
    } else if (b < 0x20u) { /* 001 s mmm */
        e = (b & 0x08u) ? -1 : 1;
        m = b & 7u;
        w = 3;
    } else {
        /* dot 01 / 10 / 11: exponent field F of k + 1 bits (sign-magnitude with implicit top bit 2^k). */
        uint32_t dot = (b >> 5) & 3u;
        uint32_t k = dot;            /* 01: k = 1, 10: k = 2, 11: k = 3 */
        w = 4u - dot;                /* 3, 2, 1 mantissa bits */
        uint32_t F = (b >> w) & ((2u << k) - 1u);
        m = b & ((1u << w) - 1u);
        e = F >= (1u << k) ? -(int)F : (int)(F + (1u << k));
    }
    /* 2^e (1 + m / 2^w), e in [-22, 15]: a normal fp32. */
    return bits_f32(sign | ((uint32_t)(e + 127) << 23) | (m << (23 - w)));
}
