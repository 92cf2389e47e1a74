/* Philox4x32-10 known answers (Random123 kat_vectors) and the drop-mask / fill contracts of src/core/rng.h. */
#include "common/check.h"
#include "common/seed.h"
#include "core/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static void test_kat(void) {
    static const uint32_t v[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e, 0xa20bc7c6,
         0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb, 0x5001e420,
         0x24126ea1},
    };
    for (int t = 0; t < 3; t++) {
        uint32_t out[4];
        fr_philox4x32_10(v[t], v[t] + 4, out);
        for (int k = 0; k < 4; k++) {
            if (out[k] != v[t][6 + k])
                fprintf(stderr, "kat %d word %d: got %08x want %08x\n", t, k, out[k], v[t][6 + k]);
            CHECK(out[k] == v[t][6 + k]);
        }
    }
    /* fr_rng_block maps (seed, stream, counter) onto (key, ctr) as documented. */
    uint32_t a[4], b[4];
    fr_rng_block(UINT64_C(0x299f31d0a4093822), UINT64_C(0x0370734413198a2e), UINT64_C(0x85a308d3243f6a88), a);
    fr_philox4x32_10(v[2], v[2] + 4, b);
    CHECK(memcmp(a, b, sizeof a) == 0);
}

static void test_moments(uint64_t seed) {
    enum { N = 200000 };
    static float x[N];
    fr_rng_normal_f32(x, N, seed, 1, 0, 0.0, 1.0);
    double s = 0, s2 = 0;
    for (int i = 0; i < N; i++) {
        s += x[i];
        s2 += (double)x[i] * x[i];
        CHECK(isfinite(x[i]));
    }
    double mean = s / N, var = s2 / N - mean * mean;
    printf("normal: mean %.5f var %.5f\n", mean, var);
    CHECK(fabs(mean) < 0.02 && fabs(var - 1.0) < 0.02);
    fr_rng_uniform_f32(x, N, seed, 2, 0, -1.0, 3.0);
    s = 0;
    for (int i = 0; i < N; i++) {
        s += x[i];
        CHECK(x[i] >= -1.0f && x[i] <= 3.0f);
    }
    printf("uniform[-1,3): mean %.5f\n", s / N);
    CHECK(fabs(s / N - 1.0) < 0.02);
    /* Any sub-range equals the same slice of the whole buffer (counter-based, order-free). */
    float y[10];
    fr_rng_uniform_f32(y, 10, seed, 2, 777, -1.0, 3.0);
    CHECK(memcmp(y, x + 777, sizeof y) == 0);
    fr_rng_normal_f32(x, 100, seed, 1, 0, 0.0, 1.0);
    fr_rng_normal_f32(y, 10, seed, 1, 33, 0.0, 1.0);
    CHECK(memcmp(y, x + 33, sizeof y) == 0);
    /* Streams differ. */
    fr_rng_normal_f32(y, 10, seed, 3, 33, 0.0, 1.0);
    CHECK(memcmp(y, x + 33, sizeof y) != 0);
}

static void test_drop_mask(uint64_t seed) {
    enum { NB = 1001 };
    uint8_t m[NB / 8 + 3];
    memset(m, 0xAA, sizeof m);
    CHECK(fr_rng_drop_mask(m, (int64_t)sizeof m, NB, 0.7, seed, 5, NULL) == FR_OK);
    int kept = 0;
    for (int k = 0; k < NB; k++) {
        int bit = (m[k / 8] >> (k % 8)) & 1;
        CHECK(bit == (int)fr_rng_keep_bit(seed, 5, (uint64_t)k, 0.7));
        kept += bit;
    }
    for (int k = NB; k < (int)sizeof m * 8; k++) CHECK(((m[k / 8] >> (k % 8)) & 1) == 0);
    printf("drop mask: kept %d of %d at keep_prob 0.7\n", kept, NB);
    CHECK(kept > 600 && kept < 800);
    uint8_t all[4];
    CHECK(fr_rng_drop_mask(all, 4, 32, 1.0, seed, 5, NULL) == FR_OK);
    CHECK(all[0] == 0xff && all[3] == 0xff);
    fr_error e;
    CHECK(fr_rng_drop_mask(m, (int64_t)sizeof m, NB, 0.0, seed, 5, &e) == FR_E_KEEP_PROB);
    CHECK(strstr(e.msg, "keep_prob") != NULL);
    CHECK(fr_rng_drop_mask(m, 2, 17, 0.5, seed, 5, &e) == FR_E_INVALID_ARG);
    CHECK(fr_rng_drop_mask(m, 3, -1, 0.5, seed, 5, &e) == FR_E_INVALID_ARG);
    const int64_t cq[3] = {2, 2, 5}, ck[3] = {3, 3, 7};
    CHECK(fr_drop_mask_nbits(3, 2, 0, 0, cq, ck) == 2 * (2 * 3 + 0 + 3 * 4));
    CHECK(fr_drop_mask_nbits(2, 3, 4, 5, NULL, NULL) == 120);
    CHECK(fr_drop_mask_nbits(INT64_MAX, 3, 4, 5, NULL, NULL) == -1);
}

int main(int argc, char **argv) {
    uint64_t seed = fr_test_seed(argc, argv, "test_rng");
    test_kat();
    test_moments(seed);
    test_drop_mask(seed);
    return fr_test_exit("test_rng");
}
