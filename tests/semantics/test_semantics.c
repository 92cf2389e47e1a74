/* src/semantics against the spec's formulas written out here (decisions D12, D7, D1, D6, D4), on seeded random
 * problems and tiles of random size:
 *  - fr_sem_tile_keep equals the per-position formula for every sparse mode (0..8), band and prefix;
 *  - fr_sem_tile_class is consistent with it: SKIP iff no position takes part, FULL only when all do;
 *  - pse: external full / row-broadcast / [1,N1,...] / compressed (Toeplitz, last 1024 rows), ALiBi types 2/3 with
 *    start indices, fp32 and fp64 fills;
 *  - dropout bit order (LSB first, [B,N1,S1,S2], TND batches concatenated); dequant scale blocks; top-k rows; sink. */
#include "common/check.h"
#include "common/seed.h"
#include "core/core.h"
#include "semantics/semantics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static uint64_t g_s;
static uint64_t rnd(void) { return fr_test_rand(&g_s); }
static int64_t rint_(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

typedef struct setup {
    fr_problem pb;
    fr_params p;
    fr_fwd_inputs in;
    int64_t cuq[8], cukv[8], lq[8], lkv[8], prefix[8];
    uint8_t *mask;
} setup;

/* The spec's mask rule for batch b (lengths S1b, S2b), written independently of semantics.c.
 * Alike tests/kernels/kt_harness.c:kt_takes_part: kept apart because each test spells the rule out itself (this one for
 * semantics.c, that one for the kernels); a shared rule would carry one misreading into both. */
static bool spec_keeps(const setup *u, int64_t b, int64_t h, int64_t i, int64_t j, int64_t S1b, int64_t S2b) {
    const fr_params *p = &u->p;
    int mode = p->sparse_mode;
    if (!u->pb.has_mask) return true;
    if (mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND || mode == FR_SPARSE_BAND_LEFT_UP_CAUSAL) {
        int64_t special = -1;
        for (int64_t k = 0; k < u->pb.B; k++) {
            int64_t kk = mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND ? u->pb.B - 1 - k : k;
            if (u->lq[kk]) {
                special = kk;
                break;
            }
        }
        mode = b == special                                ? FR_SPARSE_BAND
               : mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND ? FR_SPARSE_RIGHT_DOWN_CAUSAL
                                                          : FR_SPARSE_LEFT_UP_CAUSAL;
    }
    bool user = false;
    if (mode == FR_SPARSE_DEFAULT_MASK || mode == FR_SPARSE_ALL_MASK || mode == FR_SPARSE_PREFIX) {
        const fr_tensor *t = &u->in.atten_mask;
        user = t->ndim == 2 ? u->mask[i * t->shape[1] + j] : u->mask[((b * u->pb.N1 + h) * u->pb.S1 + i) * u->pb.S2 + j];
    }
    int64_t pre = p->pre_tokens, next = p->next_tokens;
    switch (mode) {
    case FR_SPARSE_DEFAULT_MASK: return !user && j - i <= next && i - j <= pre;
    case FR_SPARSE_ALL_MASK: return !user;
    case FR_SPARSE_LEFT_UP_CAUSAL: return j <= i;
    case FR_SPARSE_RIGHT_DOWN_CAUSAL: return j <= i + S2b - S1b;
    case FR_SPARSE_BAND: return j - i <= next + S2b - S1b && i - j <= pre - (S2b - S1b);
    case FR_SPARSE_PREFIX:
        return !user && (!(p->prefix && p->prefix[b] <= S2b) || !(j > i + S2b - S1b && j >= p->prefix[b]));
    case FR_SPARSE_PREFIX_COMPRESS: return !(j > i + S2b - S1b && j >= p->prefix[b]);
    default: /* a mode added to fr_sparse_mode without its rule here */
        CHECK(false, "sparse_mode %d: spec_keeps (test_semantics.c) has no rule for it (spec 4.2)", mode);
        return true;
    }
}

static void make(setup *u, int mode, bool tnd) {
    memset(u, 0, sizeof *u);
    fr_problem *pb = &u->pb;
    u->p = fr_params_default();
    pb->B = tnd ? rint_(1, 5) : rint_(1, 2);
    pb->N2 = rint_(1, 2);
    pb->G = rint_(1, 2);
    pb->N1 = pb->N2 * pb->G;
    pb->layout = tnd ? FR_TND : FR_BNSD;
    pb->has_mask = true;
    pb->sparse_mode = mode;
    u->p.sparse_mode = mode;
    u->p.head_num = pb->N1;
    if (tnd) {
        int64_t a = 0, c = 0, m1 = 0, m2 = 0;
        for (int64_t b = 0; b < pb->B; b++) {
            u->lq[b] = rnd() % 4 == 0 ? 0 : rint_(1, 150);
            bool rd = mode == FR_SPARSE_RIGHT_DOWN_CAUSAL || mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND ||
                      mode == FR_SPARSE_BAND_LEFT_UP_CAUSAL;
            u->lkv[b] = rd ? u->lq[b] + rint_(0, 40) : rint_(1, 150);
            a += u->lq[b], c += u->lkv[b];
            u->cuq[b] = a, u->cukv[b] = c;
            if (u->lq[b] > m1) m1 = u->lq[b];
            if (u->lkv[b] > m2) m2 = u->lkv[b];
        }
        pb->S1 = m1, pb->S2 = m2, pb->cu_q = u->cuq, pb->cu_kv = u->cukv;
    } else {
        pb->S1 = rint_(1, 200), pb->S2 = rint_(1, 200);
        for (int64_t b = 0; b < pb->B; b++) u->lq[b] = pb->S1, u->lkv[b] = pb->S2;
    }
    u->p.pre_tokens = rint_(-20, 120);
    u->p.next_tokens = rint_(u->p.pre_tokens < 0 ? -u->p.pre_tokens : -20, 150);
    for (int64_t b = 0; b < pb->B; b++) u->prefix[b] = rint_(0, pb->S2 + 5);
    u->p.prefix = u->prefix, u->p.prefix_len = pb->B;
    int64_t sh[4];
    if (tnd || mode >= FR_SPARSE_LEFT_UP_CAUSAL) {
        sh[0] = pb->S1, sh[1] = pb->S2;
        u->mask = malloc((size_t)(sh[0] * sh[1] + 1));
        u->in.atten_mask = fr_tensor_make(FR_U8, u->mask, 2, sh);
    } else {
        sh[0] = pb->B, sh[1] = pb->N1, sh[2] = pb->S1, sh[3] = pb->S2;
        u->mask = malloc((size_t)(sh[0] * sh[1] * sh[2] * sh[3] + 1));
        u->in.atten_mask = fr_tensor_make(FR_BOOL, u->mask, 4, sh);
    }
    int64_t n = fr_tensor_numel(&u->in.atten_mask);
    double dens = (double)(rnd() % 4) / 4.0; /* 0, 0.25, 0.5, 0.75: all-kept and heavily masked tiles both occur */
    for (int64_t k = 0; k < n; k++) u->mask[k] = (double)(rnd() >> 11) * 0x1p-53 < dens;
}

static void test_masks(void) {
    int ntiles = 0, nskip = 0, nfull = 0;
    for (int mode = FR_SPARSE_DEFAULT_MASK; mode < FR_SPARSE_MODE_COUNT; mode++)
        for (int rep = 0; rep < 40; rep++) {
            bool tnd = mode >= FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND || rep % 3 == 0;
            setup u;
            make(&u, mode, tnd);
            fr_sem s;
            fr_error err;
            CHECK(fr_sem_init(&s, &u.pb, &u.p, &u.in, &err) == FR_OK, "init: %s", err.msg);
            for (int64_t b = 0; b < u.pb.B; b++) {
                fr_sem_batch sb;
                fr_sem_batch_get(&s, b, &sb);
                CHECK(sb.S1 == u.lq[b] && sb.S2 == u.lkv[b], "batch %lld lengths", (long long)b);
                for (int t = 0; t < 12; t++) {
                    int64_t h = rint_(0, u.pb.N1 - 1), ni = rint_(1, 70), nj = rint_(1, 70);
                    int64_t i0 = rint_(0, sb.S1 + 5), j0 = rint_(0, sb.S2 + 5);
                    uint8_t keep[70 * 70];
                    fr_sem_tile_keep(&s, &sb, h, i0, ni, j0, nj, keep, 70);
                    int64_t in_range = 0, kept = 0, bad = 0;
                    for (int64_t r = 0; r < ni; r++)
                        for (int64_t c = 0; c < nj; c++) {
                            int64_t i = i0 + r, j = j0 + c;
                            bool inr = i < sb.S1 && j < sb.S2;
                            bool want = inr && spec_keeps(&u, b, h, i, j, sb.S1, sb.S2);
                            if (keep[r * 70 + c] != want && bad++ < 2)
                                fprintf(stderr, "  mode %d b %lld h %lld (%lld,%lld): keep %d, spec %d\n", mode,
                                        (long long)b, (long long)h, (long long)i, (long long)j, keep[r * 70 + c], want);
                            in_range += inr, kept += want;
                        }
                    CHECK(bad == 0, "mode %d tile keep differs from the spec at %lld positions", mode, (long long)bad);
                    fr_tile_class cls = fr_sem_tile_class(&s, &sb, h, i0, ni, j0, nj);
                    CHECK((cls == FR_TILE_SKIP) == (kept == 0),
                          "mode %d: class %d but %lld kept (tile %lld+%lld x %lld+%lld, S %lld x %lld, lo %lld hi %lld)",
                          mode, cls, (long long)kept, (long long)i0, (long long)ni, (long long)j0, (long long)nj,
                          (long long)sb.S1, (long long)sb.S2, (long long)sb.lo, (long long)sb.hi);
                    if (cls == FR_TILE_FULL) CHECK(kept == in_range, "mode %d: FULL but %lld of %lld kept", mode,
                                                   (long long)kept, (long long)in_range);
                    ntiles++, nskip += cls == FR_TILE_SKIP, nfull += cls == FR_TILE_FULL;
                }
            }
            free(u.mask);
        }
    printf("  masks: %d tiles over modes 0..8 (%d skipped, %d full) agree with the spec\n", ntiles, nskip, nfull);
    CHECK(nskip > 0 && nfull > 0, "the grid must reach SKIP and FULL tiles");
}

static void test_pse(void) {
    /* compressed ALiBi: full Toeplitz f(j - i); compressed = last 1024 rows */
    enum { S = 1100, N1 = 2 };
    fr_problem pb = {0};
    pb.layout = FR_BNSD, pb.B = 1, pb.N1 = N1, pb.N2 = 1, pb.G = N1, pb.S1 = S, pb.S2 = S, pb.has_pse = true;
    pb.pse_type = FR_PSE_OUTER_ADD_MUL;
    fr_params p = fr_params_default();
    fr_fwd_inputs in;
    memset(&in, 0, sizeof in);
    int64_t sh[4] = {1, N1, 1024, S};
    float *c = malloc(sizeof(float) * N1 * 1024 * S);
    for (int64_t h = 0; h < N1; h++)
        for (int64_t r = 0; r < 1024; r++)
            for (int64_t j = 0; j < S; j++) c[(h * 1024 + r) * S + j] = (float)(j - (S - 1024 + r)) + 0.25f * (float)h;
    in.real_shift = fr_tensor_make(FR_F32, c, 4, sh);
    fr_sem s;
    fr_error err;
    CHECK(fr_sem_init(&s, &pb, &p, &in, &err) == FR_OK && s.pse_compressed, "compressed pse init");
    fr_sem_batch sb;
    fr_sem_batch_get(&s, 0, &sb);
    int bad = 0;
    float tile[16 * 16];
    double t64[16 * 16];
    int64_t i0s[4] = {0, 70, 500, 1084};
    for (int k = 0; k < 4; k++) {
        int64_t i0 = i0s[k], j0 = i0 >= 8 ? i0 - 8 : 0;
        fr_sem_tile_pse_f32(&s, &sb, 1, i0, 16, j0, 16, tile, 16);
        fr_sem_tile_pse_f64(&s, &sb, 1, i0, 16, j0, 16, t64, 16);
        for (int r = 0; r < 16; r++)
            for (int cc = 0; cc < 16; cc++) {
                int64_t i = i0 + r, j = j0 + cc;
                if (j > i || i >= S) continue; /* only the lower triangle is defined */
                float want = (float)(j - i) + 0.25f;
                bad += tile[r * 16 + cc] != want || t64[r * 16 + cc] != (double)want;
            }
    }
    CHECK(bad == 0, "compressed pse: %d positions off the Toeplitz diagonal", bad);
    free(c);

    /* ALiBi types 2 and 3 with start indices; slopes [N1] */
    float slopes[2] = {0.5f, 0.125f};
    int64_t sh1[1] = {2};
    in.real_shift = fr_tensor_make(FR_F32, slopes, 1, sh1);
    p.q_start_idx = 3, p.kv_start_idx = 1;
    for (int type = 2; type <= 3; type++) {
        pb.pse_type = type;
        CHECK(fr_sem_init(&s, &pb, &p, &in, &err) == FR_OK, "alibi init");
        fr_sem_batch_get(&s, 0, &sb);
        fr_sem_tile_pse_f32(&s, &sb, 1, 10, 4, 0, 16, tile, 16);
        fr_sem_tile_pse_f64(&s, &sb, 1, 10, 4, 0, 16, t64, 16);
        bad = 0;
        for (int r = 0; r < 4; r++)
            for (int cc = 0; cc < 16; cc++) {
                double d = fabs((double)((cc + 1) - (10 + r + 3)));
                double want = -0.125 * (type == 3 ? sqrt(d) : d);
                bad += fabs(tile[r * 16 + cc] - want) > 1e-6 * (1 + fabs(want)) || fabs(t64[r * 16 + cc] - want) > 1e-15;
            }
        CHECK(bad == 0, "alibi type %d: %d wrong values", type, bad);
    }
    printf("  pse: compressed Toeplitz reconstruction, ALiBi 2/3 with start indices (fp32 and fp64)\n");
}

static void test_drop_scale_topk_sink(void) {
    /* TND: batch b starts at bit N1 * sum S1_b' S2_b' (D4) */
    fr_problem pb = {0};
    int64_t cuq[3] = {2, 2, 5}, cukv[3] = {3, 7, 9};
    pb.layout = FR_TND, pb.B = 3, pb.N1 = 2, pb.N2 = 1, pb.G = 2, pb.S1 = 3, pb.S2 = 4;
    pb.cu_q = cuq, pb.cu_kv = cukv, pb.has_drop = true, pb.has_sink = true;
    fr_params p = fr_params_default();
    p.keep_prob = 0.5;
    fr_fwd_inputs in;
    memset(&in, 0, sizeof in);
    uint8_t bits[16] = {0};
    int64_t k = 2 * 2 * 3 + 0 * 4 + ((1 * 3 + 2) * 2 + 1); /* b = 2, h = 1, i = 2, j = 1 */
    bits[k >> 3] |= (uint8_t)(1u << (k & 7));
    int64_t sh[1] = {16};
    in.drop_mask = fr_tensor_make(FR_U8, bits, 1, sh);
    float sink[2] = {0.5f, -2.0f};
    int64_t sh2[1] = {2};
    in.sink = fr_tensor_make(FR_F32, sink, 1, sh2);
    fr_sem s;
    fr_error err;
    CHECK(fr_sem_init(&s, &pb, &p, &in, &err) == FR_OK && s.dropout && s.rkeep == 2.0f, "dropout init");
    int ones = 0;
    for (int64_t b = 0; b < 3; b++) {
        fr_sem_batch sb;
        fr_sem_batch_get(&s, b, &sb);
        for (int64_t h = 0; h < 2; h++)
            for (int64_t i = 0; i < sb.S1; i++)
                for (int64_t j = 0; j < sb.S2; j++)
                    if (fr_sem_drop_bit(&s, &sb, h, i, j)) {
                        ones++;
                        CHECK(b == 2 && h == 1 && i == 2 && j == 1, "drop bit at b %lld h %lld i %lld j %lld",
                              (long long)b, (long long)h, (long long)i, (long long)j);
                    }
    }
    CHECK(ones == 1, "exactly one kept position expected, got %d", ones);
    CHECK(fr_sem_sink(&s, 1) == -2.0f, "sink");
    CHECK(fr_sem_kv_head(&s, 1) == 0, "GQA h / G");

    /* dequant scales: [B, N, ceil(S/128 or 256), 1] */
    fr_problem pq = {0};
    pq.layout = FR_BNSD, pq.B = 1, pq.N1 = 1, pq.N2 = 1, pq.G = 1, pq.S1 = 300, pq.S2 = 600, pq.fp8 = true;
    float dq[3] = {1, 2, 3}, dk[3] = {4, 5, 6};
    int64_t shq[4] = {1, 1, 3, 1};
    memset(&in, 0, sizeof in);
    in.d_scale_q = fr_tensor_make(FR_F32, dq, 4, shq);
    in.d_scale_k = fr_tensor_make(FR_F32, dk, 4, shq);
    CHECK(fr_sem_init(&s, &pq, &p, &in, &err) == FR_OK, "fp8 init");
    fr_sem_batch sb;
    fr_sem_batch_get(&s, 0, &sb);
    CHECK(fr_sem_dscale_q(&s, &sb, 0, 127) == 1 && fr_sem_dscale_q(&s, &sb, 0, 128) == 2 &&
              fr_sem_dscale_q(&s, &sb, 0, 299) == 3,
          "d_scale_q blocks of 128");
    CHECK(fr_sem_dscale_k(&s, &sb, 0, 255) == 4 && fr_sem_dscale_k(&s, &sb, 0, 256) == 5 &&
              fr_sem_dscale_v(&s, &sb, 0, 5) == 1.0f,
          "d_scale_k blocks of 256, absent d_scale_v = 1");

    /* top-k rows: [B, S1, W], -1 and out-of-range dropped, duplicates kept */
    fr_problem pt = {0};
    pt.layout = FR_BNSD, pt.B = 1, pt.N1 = 2, pt.N2 = 1, pt.G = 2, pt.S1 = 2, pt.S2 = 10, pt.W = 4;
    pt.has_topk = true;
    int32_t idx[8] = {3, -1, 3, 12, 9, 0, 10, -5};
    int64_t sht[3] = {1, 2, 4};
    memset(&in, 0, sizeof in);
    in.topk_indices = fr_tensor_make(FR_I32, idx, 3, sht);
    CHECK(fr_sem_init(&s, &pt, &p, &in, &err) == FR_OK, "topk init");
    fr_sem_batch_get(&s, 0, &sb);
    int64_t cols[4];
    int64_t n0 = fr_sem_topk_row(&s, &sb, 1, 0, cols);
    CHECK(n0 == 2 && cols[0] == 3 && cols[1] == 3, "topk row 0: n %lld", (long long)n0);
    int64_t n1 = fr_sem_topk_row(&s, &sb, 0, 1, cols);
    CHECK(n1 == 2 && cols[0] == 9 && cols[1] == 0, "topk row 1: n %lld", (long long)n1);
    CHECK(fr_sem_tile_class(&s, &sb, 0, 0, 2, 0, 10) == FR_TILE_PARTIAL, "topk tiles are PARTIAL");
    printf("  dropout bit order (TND), sink, GQA, dequant blocks, top-k rows\n");
}

int main(int argc, char **argv) {
    uint64_t seed = fr_test_seed(argc, argv, "test_semantics");
    g_s = seed;
    test_masks();
    test_pse();
    test_drop_scale_topk_sink();
    return fr_test_exit("test_semantics");
}
