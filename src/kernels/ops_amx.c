/* AMX variant: the AVX512-BF16 slots, with the bf16 GEMM on AMX tiles (TDPBF16PS: a 16 x 16 fp32 tile of C plus a
 * 16-row x 16-pair bf16 tile of A times a 16-pair x 16-column tile of B, products exact, fp32 accumulation; like
 * vdpbf16ps it treats subnormal inputs as zero and flushes subnormal results). C is computed in 32 x 32 blocks held in
 * four tile registers (tmm0-3), A and B tiles in tmm4-5 and tmm6-7, loaded straight from the packed operands (their
 * layouts are the AMX ones: A rows of bf16 pairs, B pairs along k); blocks at the edges go through zero-padded
 * 16 x 16 buffers. The dispatcher (core/isa.c) has asked Linux for the tile state before this table is used. */
#include "kernels/kernels.h"

#include <immintrin.h>
#include <string.h>

/* Palette 1, eight tiles of 16 rows x 64 bytes. Loaded at the start of every call: the tile configuration is per
 * thread and someone else (another library on this thread) may have changed it. */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_cfg;

static void amx_configure(void) {
    amx_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.colsb[t] = 64, cfg.rows[t] = 16;
    _tile_loadconfig(&cfg);
}

/* One 32 x 32 block of C, every dimension full and k2 a multiple of 16. */
static void block_32x32(int64_t k2, const uint32_t *A, int64_t lda2, const uint32_t *B, int64_t ldb, float *C,
                        int64_t ldc, bool acc) {
    int64_t sa = lda2 * 4, sb = ldb * 4, sc = ldc * 4;
    if (acc) {
        _tile_loadd(0, C, sc);
        _tile_loadd(1, C + 16, sc);
        _tile_loadd(2, C + 16 * ldc, sc);
        _tile_loadd(3, C + 16 * ldc + 16, sc);
    } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    }
    /* Tile registers are not renamed: a load into tmm4 waits until every TDPBF16PS reading tmm4 is done. So each
     * step's loads are placed right after the last use of their register, the next step's A0 and B0 overlapping
     * this step's last products. */
    _tile_loadd(4, A, sa);
    _tile_loadd(6, B, sb);
    for (int64_t p = 0; p < k2; p += 16) {
        _tile_loadd(7, B + p * ldb + 16, sb);
        _tile_dpbf16ps(0, 4, 6);
        _tile_loadd(5, A + 16 * lda2 + p, sa);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        if (p + 16 < k2) _tile_loadd(4, A + p + 16, sa);
        _tile_dpbf16ps(3, 5, 7);
        if (p + 16 < k2) _tile_loadd(6, B + (p + 16) * ldb, sb);
    }
    _tile_stored(0, C, sc);
    _tile_stored(1, C + 16, sc);
    _tile_stored(2, C + 16 * ldc, sc);
    _tile_stored(3, C + 16 * ldc + 16, sc);
}

/* One block of mr <= 16 rows x nc <= 16 columns: full tiles are loaded in place, partial ones from zero-padded
 * copies (zero pairs add exact zeros). */
static void block_edge(int64_t mr, int64_t nc, int64_t k2, const uint32_t *A, int64_t lda2, const uint32_t *B,
                       int64_t ldb, float *C, int64_t ldc, bool acc) {
    uint32_t ab[16 * 16], bb[16 * 16];
    float cb[16 * 16];
    memset(cb, 0, sizeof cb);
    if (acc)
        for (int64_t r = 0; r < mr; r++) memcpy(cb + r * 16, C + r * ldc, sizeof(float) * (size_t)nc);
    _tile_loadd(0, cb, 64);
    for (int64_t p = 0; p < k2; p += 16) {
        int64_t kp = k2 - p < 16 ? k2 - p : 16;
        if (mr == 16 && kp == 16) {
            _tile_loadd(4, A + p, lda2 * 4);
        } else {
            memset(ab, 0, sizeof ab);
            for (int64_t r = 0; r < mr; r++) memcpy(ab + r * 16, A + r * lda2 + p, sizeof(uint32_t) * (size_t)kp);
            _tile_loadd(4, ab, 64);
        }
        if (nc == 16 && kp == 16) {
            _tile_loadd(6, B + p * ldb, ldb * 4);
        } else {
            memset(bb, 0, sizeof bb);
            for (int64_t q = 0; q < kp; q++) memcpy(bb + q * 16, B + (p + q) * ldb, sizeof(uint32_t) * (size_t)nc);
            _tile_loadd(6, bb, 64);
        }
        _tile_dpbf16ps(0, 4, 6);
    }
    _tile_stored(0, cb, 64);
    for (int64_t r = 0; r < mr; r++) memcpy(C + r * ldc, cb + r * 16, sizeof(float) * (size_t)nc);
}

void fr_k_gemm_bf16_32x32_amx(int64_t m, int64_t n, int64_t k2, const uint32_t *A, int64_t lda2, const uint32_t *B,
                              int64_t ldb, float *C, int64_t ldc, bool acc);

void fr_k_gemm_bf16_32x32_amx(int64_t m, int64_t n, int64_t k2, const uint32_t *A, int64_t lda2, const uint32_t *B,
                              int64_t ldb, float *C, int64_t ldc, bool acc) {
    if (m <= 0 || n <= 0) return;
    amx_configure();
    /* columns outer: one 32-column panel of B (k2 x 32 pairs) stays in L1 while every row block of A passes (the
     * forward's A is 64 rows: A, the B panel and the C blocks together fit in L1; rows outer streamed B from L2) */
    for (int64_t j = 0; j < n; j += 32)
        for (int64_t i = 0; i < m; i += 32) {
            if (i + 32 <= m && j + 32 <= n && k2 % 16 == 0) {
                block_32x32(k2, A + i * lda2, lda2, B + j, ldb, C + i * ldc + j, ldc, acc);
                continue;
            }
            for (int64_t ii = i; ii < i + 32 && ii < m; ii += 16)
                for (int64_t jj = j; jj < j + 32 && jj < n; jj += 16) {
                    int64_t mr = m - ii < 16 ? m - ii : 16, nc = n - jj < 16 ? n - jj : 16;
                    block_edge(mr, nc, k2, A + ii * lda2, lda2, B + jj, ldb, C + ii * ldc + jj, ldc, acc);
                }
        }
}

/* What amx overrides: the bf16 GEMM; the rest stays avx512bf16's (dot_rows_bf16 included: it works one row at a
 * time, where AMX tiles would sit mostly empty). */
const fr_kops fr_kops_over_amx = {
    .gemm_bf16 = fr_k_gemm_bf16_32x32_amx,
};
