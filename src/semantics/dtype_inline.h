/* Exact fp16/bf16 decoders and the operator's fp32 -> fp16/bf16 rounding (D3: half away from zero, saturating),
 * inline for the per-element paths of src/semantics and src/kernels. Portable C, no intrinsics. */
#ifndef FR_SEMANTICS_DTYPE_INLINE_H
#define FR_SEMANTICS_DTYPE_INLINE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static inline float fr_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint32_t fr_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float fr_dec_bf16(uint16_t h) { return fr_bits_f32((uint32_t)h << 16); }

static inline float fr_dec_f16(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ffu;
    if (e == 0x1f) return fr_bits_f32(sign | 0x7f800000u | (m << 13)); /* Inf / NaN (payload kept) */
    if (e == 0) {
        float v = (float)m * 0x1p-24f; /* subnormal or zero: exact */
        return sign ? -v : v;
    }
    return fr_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

/* fp32 -> bf16 bits, saturating to +-max finite, NaN stays NaN; ties away from zero (D3) or, rne, to even (the fast
 * engine's inner_precise = 1 casts of P and dS, semantics-decisions.md D17). */
static inline uint16_t fr_enc_bf16_r(float x, bool rne) {
    uint32_t u = fr_f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    uint32_t s = u & 0x80000000u, a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return (uint16_t)((s | 0x7f7f0000u) >> 16); /* Inf saturates */
    a += rne ? 0x7fffu + ((a >> 16) & 1u) : 0x8000u;
    if (a >= 0x7f800000u) a = 0x7f7f0000u;
    return (uint16_t)((s | a) >> 16);
}

/* fp32 -> fp16 bits, saturating to +-65504, NaN stays NaN; ties away from zero or, rne, to even. */
static inline uint16_t fr_enc_f16_r(float x, bool rne) {
    uint32_t u = fr_f32_bits(x);
    uint16_t s = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00u);
    float ax = fr_bits_f32(a);
    if (ax < 0x1p-14f) { /* fp16 subnormal range: quantum 2^-24 */
        float y = ax * 0x1p24f, q;     /* exact: ax * 2^24 < 2^10 */
        if (rne) {
            float f = floorf(y), d = y - f; /* both exact */
            q = d > 0.5f || (d == 0.5f && fmodf(f, 2.0f) != 0.0f) ? f + 1.0f : f;
        } else {
            q = floorf(y + 0.5f);
        }
        return (uint16_t)(s | (uint16_t)q); /* q == 1024 is the smallest normal, encoded the same way */
    }
    uint32_t r = a + (rne ? 0xfffu + ((a >> 13) & 1u) : 0x1000u); /* half an fp16 ulp at fp32 position 13 */
    int32_t e = (int32_t)(r >> 23) - 127;
    if (e > 15) return (uint16_t)(s | 0x7bffu);
    return (uint16_t)(s | (uint16_t)(((uint32_t)(e + 15) << 10) | ((r >> 13) & 0x3ffu)));
}

static inline uint16_t fr_enc_bf16_away(float x) { return fr_enc_bf16_r(x, false); }
static inline uint16_t fr_enc_f16_away(float x) { return fr_enc_f16_r(x, false); }
static inline uint16_t fr_enc_bf16_rne(float x) { return fr_enc_bf16_r(x, true); }
static inline uint16_t fr_enc_f16_rne(float x) { return fr_enc_f16_r(x, true); }

/* The value of x rounded to bf16 / fp16 (as fp32), same rounding as the encoders. */
static inline float fr_round_bf16_away(float x) { return fr_dec_bf16(fr_enc_bf16_away(x)); }
static inline float fr_round_f16_away(float x) { return fr_dec_f16(fr_enc_f16_away(x)); }
static inline float fr_round_bf16_rne(float x) { return fr_dec_bf16(fr_enc_bf16_rne(x)); }
static inline float fr_round_f16_rne(float x) { return fr_dec_f16(fr_enc_f16_rne(x)); }

#endif
