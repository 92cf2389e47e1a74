/* A 64-bit hash to notice a change, not to resist an adversary: a multiply-xorshift over 8-byte words (the tail
 * zero-padded) that can be fed piece by piece. Used where two copies of data must be the same (src/dist: the case
 * every rank read; the callback IUT: the inputs before and after the implementation ran). */
#ifndef FR_CORE_HASH_H
#define FR_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FR_HASH_SEED UINT64_C(0x6a09e667f3bcc908)

static inline uint64_t fr_hash_word(uint64_t h, uint64_t w) {
    h ^= w;
    h *= UINT64_C(0x9e3779b97f4a7c15);
    return h ^ (h >> 29);
}

/* h updated with n bytes at p. */
static inline uint64_t fr_hash_bytes(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    size_t k = 0;
    for (; k + 8 <= n; k += 8) {
        uint64_t w;
        memcpy(&w, b + k, 8);
        h = fr_hash_word(h, w);
    }
    if (k < n) {
        uint64_t w = 0;
        memcpy(&w, b + k, n - k);
        h = fr_hash_word(h, w ^ ((uint64_t)(n - k) << 56));
    }
    return h;
}

#endif
