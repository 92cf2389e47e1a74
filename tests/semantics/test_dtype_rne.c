/* The inline fp32 -> bf16 / fp16 nearest-even encoders of semantics/dtype_inline.h (the fast backward's
 * inner_precise = 1 casts, semantics-decisions.md D17) against the library's fr_f32_to_bf16 / fr_f32_to_f16 with
 * FR_ROUND_NEAREST_EVEN and FR_SAT: every tie point and its two neighbours of every binade (normals, subnormals,
 * overflow edge), specials, and 2^24 seeded random fp32 bit patterns. NaN: both NaN. */
#include "common/check.h"
#include "common/seed.h"
#include "flashref.h"
#include "semantics/dtype_inline.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

static int n_bad;

static void one(uint32_t u) {
    float x = fr_bits_f32(u);
    uint16_t b = fr_enc_bf16_rne(x), bl = fr_f32_to_bf16(x, FR_ROUND_NEAREST_EVEN, FR_SAT);
    uint16_t h = fr_enc_f16_rne(x), hl = fr_f32_to_f16(x, FR_ROUND_NEAREST_EVEN, FR_SAT);
    bool bok = isnan(x) ? isnan(fr_dec_bf16(b)) && isnan(fr_bf16_to_f32(bl)) : b == bl;
    bool hok = isnan(x) ? isnan(fr_dec_f16(h)) && isnan(fr_f16_to_f32(hl)) : h == hl;
    if ((!bok || !hok) && n_bad++ < 10)
        printf("  x = %a (0x%08x): bf16 0x%04x vs 0x%04x, fp16 0x%04x vs 0x%04x\n", (double)x, u, b, bl, h, hl);
}

int main(int argc, char **argv) {
    uint64_t seed = fr_test_seed(argc, argv, "test_dtype_rne");
    for (uint32_t s = 0; s < 2; s++) {
        for (uint32_t e = 0; e < 256; e++) {
            for (uint32_t m = 0; m < 128; m++) { /* bf16: ties at bit 15 */
                uint32_t t = s << 31 | e << 23 | m << 16 | 0x8000u;
                one(t - 1), one(t), one(t + 1);
            }
            for (uint32_t m = 0; m < 1024; m++) { /* fp16 normals: ties at bit 12 */
                uint32_t t = s << 31 | e << 23 | m << 13 | 0x1000u;
                one(t - 1), one(t), one(t + 1);
            }
        }
        for (uint32_t q = 0; q <= 2048; q++) { /* fp16 subnormals: ties at (q + 1/2) 2^-24 */
            float v = ((float)q + 0.5f) * 0x1p-24f;
            uint32_t t = fr_f32_bits(v) | s << 31;
            one(t - 1), one(t), one(t + 1);
        }
        const float sp[] = {0.0f, INFINITY, NAN, 65504.0f, 65519.99f, 65520.0f, 0x1.fep127f, 0x1.ffp127f, FLT_MAX};
        for (size_t k = 0; k < sizeof sp / sizeof sp[0]; k++) one(fr_f32_bits(sp[k]) | s << 31);
    }
    for (int k = 0; k < (1 << 24); k++) one((uint32_t)fr_test_rand(&seed));
    CHECK(n_bad == 0, "%d fp32 values encode differently", n_bad);
    return fr_test_exit("test_dtype_rne");
}
