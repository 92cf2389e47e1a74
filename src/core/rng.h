/* Counter-based random numbers for test inputs and drop masks (spec D4).
 *
 * Generator: Philox4x32-10 (Salmon et al., SC'11, "Parallel random numbers: as easy as 1, 2, 3"), the same function
 * as Random123's philox4x32_10, checked against its known-answer vectors. It is stateless: the value at element
 * `index` of stream `stream` under `seed` is
 *     block = philox4x32_10(ctr = {lo32(c), hi32(c), lo32(stream), hi32(stream)}, key = {lo32(seed), hi32(seed)})
 * with c = index / (words per element) as documented per function below. So any element can be computed on its own,
 * in any order, by any thread, and a buffer's contents depend only on (seed, stream, index): never on sizes, thread
 * counts or call order. Streams separate the tensors of one case (q, k, v, dy, drop mask, ...).
 *
 * This is the project's own generator; it is NOT the Ascend on-device dropout generator (which the spec says cannot
 * be reproduced on a CPU). A drop mask made here is passed to the operator explicitly.
 */
#ifndef FR_CORE_RNG_H
#define FR_CORE_RNG_H

#include "flashref.h"

/* The raw Philox4x32-10 block function: out = philox4x32_10(ctr, key). */
void fr_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* Word k (0..3) of block c: the four 32-bit outputs of counter c. */
void fr_rng_block(uint64_t seed, uint64_t stream, uint64_t c, uint32_t out[4]);

/* Uniform double in [0, 1) with 53 random bits: element n uses words 2*(n%2), 2*(n%2)+1 of block n/2
 * (high word first). */
double fr_rng_uniform01(uint64_t seed, uint64_t stream, uint64_t n);

/* Standard normal: element n of block n/2 by Box-Muller in double, u1 = 1 - (53-bit word pair 0,1) in (0,1],
 * u2 = (53-bit word pair 2,3); even n takes r*cos(2 pi u2), odd n takes r*sin(2 pi u2). */
double fr_rng_normal01(uint64_t seed, uint64_t stream, uint64_t n);

/* dst[k] = (float)(lo + (hi - lo) * uniform01(seed, stream, first + k)), k in [0, n). n < 0 is treated as 0. */
void fr_rng_uniform_f32(float *dst, int64_t n, uint64_t seed, uint64_t stream, uint64_t first, double lo, double hi);
/* dst[k] = (float)(mean + stddev * normal01(seed, stream, first + k)). */
void fr_rng_normal_f32(float *dst, int64_t n, uint64_t seed, uint64_t stream, uint64_t first, double mean,
                       double stddev);

/* Keep decision of drop-mask bit k: 1 (keep) iff word (k % 4) of block k / 4 < floor(keep_prob * 2^32); keep_prob
 * >= 1 keeps everything. So for a fixed (seed, stream) a smaller keep_prob drops a superset of positions. */
bool fr_rng_keep_bit(uint64_t seed, uint64_t stream, uint64_t k, double keep_prob);

/* Number of drop-mask bits a problem needs (spec section 6): B*N1*S1*S2, or for TND (cu_q/cu_kv non-NULL, length B,
 * cumulative end offsets) N1 * sum_b S1_b*S2_b. Returns -1 on overflow or inconsistent offsets. */
int64_t fr_drop_mask_nbits(int64_t B, int64_t N1, int64_t S1, int64_t S2, const int64_t *cu_q, const int64_t *cu_kv);

/* Writes the bit-packed drop mask (LSB first, 1 = keep, spec D4) of nbits bits into dst[0..nbytes): bit k from
 * fr_rng_keep_bit; bits past nbits in the last byte and bytes past ceil(nbits/8) are 0.
 * Errors: FR_E_NULL (dst NULL with nbytes > 0), FR_E_KEEP_PROB (keep_prob not in (0, 1]),
 * FR_E_INVALID_ARG (nbits < 0 or nbytes < ceil(nbits / 8)). */
fr_status fr_rng_drop_mask(uint8_t *dst, int64_t nbytes, int64_t nbits, double keep_prob, uint64_t seed,
                           uint64_t stream, fr_error *err);

#endif
