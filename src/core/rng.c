/* Philox4x32-10 counter-based generator and the fill functions built on it (see rng.h for the contract). */
#include "core/rng.h"

#include "core/core.h"

#include <math.h>

#define PHILOX_M0 UINT32_C(0xD2511F53)
#define PHILOX_M1 UINT32_C(0xCD9E8D57)
#define PHILOX_W0 UINT32_C(0x9E3779B9)
#define PHILOX_W1 UINT32_C(0xBB67AE85)

void fr_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        if (r > 0) { /* key schedule: bump before rounds 2..10 */
            k0 += PHILOX_W0;
            k1 += PHILOX_W1;
        }
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

void fr_rng_block(uint64_t seed, uint64_t stream, uint64_t c, uint32_t out[4]) {
    const uint32_t ctr[4] = {(uint32_t)c, (uint32_t)(c >> 32), (uint32_t)stream, (uint32_t)(stream >> 32)};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    fr_philox4x32_10(ctr, key, out);
}

/* 53-bit fraction in [0, 1) from two words, high word first. */
static double pair_to_unit(uint32_t hi, uint32_t lo) {
    uint64_t v = (((uint64_t)hi << 32) | lo) >> 11;
    return (double)v * 0x1.0p-53;
}

double fr_rng_uniform01(uint64_t seed, uint64_t stream, uint64_t n) {
    uint32_t w[4];
    fr_rng_block(seed, stream, n / 2, w);
    int k = (int)(n % 2) * 2;
    return pair_to_unit(w[k], w[k + 1]);
}

double fr_rng_normal01(uint64_t seed, uint64_t stream, uint64_t n) {
    uint32_t w[4];
    fr_rng_block(seed, stream, n / 2, w);
    double u1 = 1.0 - pair_to_unit(w[0], w[1]); /* (0, 1]: log is finite */
    double u2 = pair_to_unit(w[2], w[3]);
    double r = sqrt(-2.0 * log(u1));
    double a = 6.283185307179586476925 * u2;
    return (n % 2 == 0) ? r * cos(a) : r * sin(a);
}

void fr_rng_uniform_f32(float *dst, int64_t n, uint64_t seed, uint64_t stream, uint64_t first, double lo, double hi) {
    for (int64_t k = 0; k < n; k++)
        dst[k] = (float)(lo + (hi - lo) * fr_rng_uniform01(seed, stream, first + (uint64_t)k));
}

void fr_rng_normal_f32(float *dst, int64_t n, uint64_t seed, uint64_t stream, uint64_t first, double mean,
                       double stddev) {
    for (int64_t k = 0; k < n; k++)
        dst[k] = (float)(mean + stddev * fr_rng_normal01(seed, stream, first + (uint64_t)k));
}

static uint64_t keep_threshold(double keep_prob) {
    if (keep_prob >= 1.0) return UINT64_C(1) << 32;
    return (uint64_t)floor(keep_prob * 4294967296.0);
}

bool fr_rng_keep_bit(uint64_t seed, uint64_t stream, uint64_t k, double keep_prob) {
    uint32_t w[4];
    fr_rng_block(seed, stream, k / 4, w);
    return (uint64_t)w[k % 4] < keep_threshold(keep_prob);
}

int64_t fr_drop_mask_nbits(int64_t B, int64_t N1, int64_t S1, int64_t S2, const int64_t *cu_q, const int64_t *cu_kv) {
    if (B < 0 || N1 < 0 || S1 < 0 || S2 < 0) return -1;
    int64_t total = 0, t;
    if (cu_q && cu_kv) {
        int64_t pq = 0, pk = 0;
        for (int64_t b = 0; b < B; b++) {
            int64_t s1 = cu_q[b] - pq, s2 = cu_kv[b] - pk;
            if (s1 < 0 || s2 < 0) return -1;
            pq = cu_q[b];
            pk = cu_kv[b];
            if (!fr_mul_ok(s1, s2, &t) || !fr_add_ok(total, t, &total)) return -1;
        }
        return fr_mul_ok(total, N1, &t) ? t : -1;
    }
    if (!fr_mul_ok(B, N1, &t) || !fr_mul_ok(t, S1, &t) || !fr_mul_ok(t, S2, &t)) return -1;
    return t;
}

fr_status fr_rng_drop_mask(uint8_t *dst, int64_t nbytes, int64_t nbits, double keep_prob, uint64_t seed,
                           uint64_t stream, fr_error *err) {
    if (!(keep_prob > 0.0 && keep_prob <= 1.0))
        return fr_fail(err, FR_E_KEEP_PROB, "keep_prob: %g is not in (0, 1]", keep_prob);
    if (nbits < 0) return fr_fail(err, FR_E_INVALID_ARG, "nbits: %lld < 0", (long long)nbits);
    int64_t need = nbits / 8 + (nbits % 8 != 0);
    if (nbytes < need)
        return fr_fail(err, FR_E_INVALID_ARG, "nbytes: %lld < %lld needed for %lld bits", (long long)nbytes,
                       (long long)need, (long long)nbits);
    if (!dst && nbytes > 0) return fr_fail(err, FR_E_NULL, "drop mask: NULL destination");
    const uint64_t thr = keep_threshold(keep_prob);
    for (int64_t i = 0; i < nbytes; i++) dst[i] = 0;
    uint32_t w[4];
    for (int64_t k = 0; k < nbits; k++) {
        if (k % 4 == 0) fr_rng_block(seed, stream, (uint64_t)k / 4, w);
        if ((uint64_t)w[k % 4] < thr) dst[k / 8] |= (uint8_t)(1u << (k % 8));
    }
    return FR_OK;
}
