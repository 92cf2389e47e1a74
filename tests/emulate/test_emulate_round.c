/* fr_emu_round (the emulator's one rounding routine) agrees with the library's fp32 encoders (fr_f32_to_*) for
 * every format, both rounding modes and both overflow behaviours, on boundary and random fp32 inputs; and the
 * presets and the configuration check behave. */
#include "common/check.h"
#include "flashref_emulate.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double via_encoder(float x, fr_dtype dt, fr_round r, fr_sat s) {
    switch (dt) {
    case FR_F16: return fr_f16_to_f32(fr_f32_to_f16(x, r, s));
    case FR_BF16: return fr_bf16_to_f32(fr_f32_to_bf16(x, r, s));
    case FR_E4M3FN: return fr_e4m3fn_to_f32(fr_f32_to_e4m3fn(x, r, s));
    case FR_E5M2: return fr_e5m2_to_f32(fr_f32_to_e5m2(x, r, s));
    case FR_HIF8: return fr_hif8_to_f32(fr_f32_to_hif8(x, r, s));
    default: return x;
    }
}

static void check_one(float x, fr_dtype dt, fr_round r, fr_sat s) {
    double a = fr_emu_round((double)x, dt, r, s), b = via_encoder(x, dt, r, s);
    bool same = (isnan(a) && isnan(b)) || a == b;
    if (a == 0 && b == 0 && dt != FR_HIF8) same = signbit(a) == signbit(b);
    CHECK(same, "%s round %d sat %d: x = %a (%.9g): emu %.9g, encoder %.9g", fr_dtype_name(dt), (int)r, (int)s,
          (double)x, (double)x, a, b);
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 12345;
    printf("test_emulate_round seed=%llu\n", (unsigned long long)seed);
    const fr_dtype dts[5] = {FR_F16, FR_BF16, FR_E4M3FN, FR_E5M2, FR_HIF8};
    uint64_t z = seed;
    for (int k = 0; k < 400000; k++) {
        z = z * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t u = (uint32_t)(z >> 32);
        float x;
        if (k % 4 == 0) { /* values near the formats' ranges: exponents -30 .. 20 */
            x = ldexpf(1.0f + (float)(u & 0xFFFFFF) * 0x1p-24f, (int)((u >> 24) % 51) - 30);
            if (u & 1) x = -x;
        } else {
            memcpy(&x, &u, 4);
        }
        for (int d = 0; d < 5; d++)
            for (int r = 0; r < 2; r++)
                for (int s = 0; s < 2; s++) check_one(x, dts[d], (fr_round)r, (fr_sat)s);
    }
    /* ties and boundaries: every value halfway between consecutive codes of each 8-bit format */
    for (int d = 2; d < 5; d++)
        for (int c = 0; c < 256; c++) {
            double v0 = dts[d] == FR_E4M3FN ? fr_e4m3fn_to_f32((uint8_t)c)
                        : dts[d] == FR_E5M2 ? fr_e5m2_to_f32((uint8_t)c)
                                            : fr_hif8_to_f32((uint8_t)c);
            if (!isfinite(v0)) continue;
            for (int r = 0; r < 2; r++)
                for (int s = 0; s < 2; s++) {
                    check_one((float)v0, dts[d], (fr_round)r, (fr_sat)s);
                    check_one((float)(v0 * 1.0625), dts[d], (fr_round)r, (fr_sat)s);
                    check_one((float)(v0 * 1.03125), dts[d], (fr_round)r, (fr_sat)s);
                }
        }
    const float edge[] = {65504.0f, 65519.0f, 65520.0f, 448.0f, 464.0f, 480.0f, 57344.0f, 61440.0f, 32768.0f,
                          40959.0f, 40960.0f, 0x1p-23f, 0x1p-24f, 0x1.8p-23f, 0x1p-149f, FLT_MAX, INFINITY};
    for (size_t k = 0; k < sizeof edge / sizeof edge[0]; k++)
        for (int d = 0; d < 5; d++)
            for (int r = 0; r < 2; r++)
                for (int s = 0; s < 2; s++) {
                    check_one(edge[k], dts[d], (fr_round)r, (fr_sat)s);
                    check_one(-edge[k], dts[d], (fr_round)r, (fr_sat)s);
                }
    /* presets */
    for (const char *const *n = fr_numerics_preset_names(); *n; n++) {
        fr_numerics nc;
        fr_error e;
        CHECK(fr_numerics_preset(*n, &nc, &e) == FR_OK && fr_numerics_check(&nc, &e) == FR_OK, "preset %s: %s", *n,
              e.msg);
    }
    fr_numerics a, b;
    fr_numerics_preset("fa4-sm100-fwd-inference", &a, NULL);
    fr_numerics_preset("fa4-sm100-fwd-train", &b, NULL);
    CHECK(a.rescale_threshold == 8.0 && b.rescale_threshold == 0.0 && b.dpsum == FR_EMU_DPSUM_OUT_LO,
          "fa4 presets: inference threshold %g, train threshold %g", a.rescale_threshold, b.rescale_threshold);
    fr_error e;
    CHECK(fr_numerics_preset("no-such-gpu", &a, &e) == FR_E_INVALID_ARG && strstr(e.msg, "no-such-gpu"),
          "unknown preset accepted or message without the name");
    a.kv_tile = 0;
    CHECK(fr_numerics_check(&a, &e) == FR_E_INVALID_ARG && strstr(e.msg, "kv_tile"), "kv_tile");
    fr_numerics_preset("exact", &a, NULL);
    int64_t perm[3] = {0, 2, 2};
    a.order = FR_EMU_ORDER_PERM, a.perm = perm, a.perm_len = 3;
    CHECK(fr_numerics_check(&a, &e) == FR_E_INVALID_ARG, "perm duplicate accepted");
    printf("%ld checks (conversions compared, presets, configuration checks)\n", checks);
    return fr_test_exit("test_emulate_round");
}
