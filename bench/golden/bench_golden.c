/* bench_golden: throughput and working memory of the fp64 golden engine.
 *
 *   bench_golden [S1 [S2 [D [N1 [B [threads [fwd|bwd|both [causal]]]]]]]]   (defaults 2048 2048 128 1 1 0 fwd)
 *
 * BNSD fp32 inputs, uniform in [-1, 1]. Forward FLOPs = 4*B*N1*S1*S2*D (QK^T and PV, no mask discount);
 * backward counted as 2.5x the forward (the usual convention). Working memory = peak RSS (getrusage ru_maxrss)
 * minus the bytes of every input and output tensor minus the RSS before any tensor was allocated. Every tensor is
 * written before the run so that it is resident. The golden must stay within 64 MiB of working memory at
 * S1 = S2 = 65536, D = 128 (it holds O(rows x D) per thread, never S1 x S2).
 *
 * Baseline (built with OpenBLAS): dgemm at the same FLOPs in the same run, on the same threads: per head,
 * S = Q K^T ([S1 x D] . [D x S2]) and O = S V ([S1 x S2] . [S2 x D]) in blocks of 512 query rows, 4*S1*S2*D FLOP,
 * and the golden again, interleaved (dgemm, forward, backward) three times, the best of each kept, so that a
 * machine whose load changes during the run biases neither side. The line "ratio" is the golden's best GFLOP/s
 * over dgemm's best (the target is >= 0.5 for the forward and for the backward). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "flashref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#ifdef FR_HAVE_CBLAS
#include <cblas.h>
#endif

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double rss_mib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0; /* kB on Linux */
}

static int64_t io_bytes = 0;
static fr_tensor make(fr_dtype dt, int nd, int64_t a, int64_t b, int64_t c, int64_t d, uint64_t *seed) {
    int64_t sh[4] = {a, b, c, d};
    size_t n = 1;
    for (int k = 0; k < nd; k++) n *= (size_t)sh[k];
    size_t es = fr_dtype_size(dt);
    void *p = malloc(n * es + 1);
    if (!p) {
        fprintf(stderr, "bench_golden: out of memory (%zu bytes)\n", n * es);
        exit(2);
    }
    if (dt == FR_F32) {
        float *f = p;
        for (size_t i = 0; i < n; i++) {
            *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
            f[i] = (float)((double)(*seed >> 11) * 0x1.0p-53 * 2.0 - 1.0);
        }
    } else {
        memset(p, 0, n * es);
    }
    io_bytes += (int64_t)(n * es);
    return fr_tensor_make(dt, p, nd, sh);
}

#ifdef FR_HAVE_CBLAS
/* dgemm GFLOP/s at the forward's FLOPs for one head's shapes (fp64 copies of uniform data; blocks of 512 rows). */
static double dgemm_gflops(int64_t S1, int64_t S2, int64_t D, int threads) {
    int64_t bm = S1 < 512 ? S1 : 512;
    double *q = malloc((size_t)(bm * D) * sizeof(double)), *k = malloc((size_t)(S2 * D) * sizeof(double));
    double *v = malloc((size_t)(S2 * D) * sizeof(double)), *s = malloc((size_t)(bm * S2) * sizeof(double));
    double *o = malloc((size_t)(bm * D) * sizeof(double));
    if (!q || !k || !v || !s || !o) {
        fprintf(stderr, "bench_golden: out of memory for the dgemm baseline\n");
        exit(2);
    }
    for (int64_t i = 0; i < bm * D; i++) q[i] = (double)((i * 7919) % 1000) * 1e-3 - 0.5;
    for (int64_t i = 0; i < S2 * D; i++) k[i] = v[i] = (double)((i * 104729) % 1000) * 1e-3 - 0.5;
    openblas_set_num_threads(threads > 0 ? threads : openblas_get_num_procs());
    double best = 0.0;
    for (int rep = 0; rep < 1; rep++) {
        double t0 = now();
        for (int64_t i0 = 0; i0 < S1; i0 += bm) {
            int m = (int)(S1 - i0 < bm ? S1 - i0 : bm);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, (int)S2, (int)D, 1.0, q, (int)D, k, (int)D, 0.0,
                        s, (int)S2);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, (int)D, (int)S2, 1.0, s, (int)S2, v, (int)D,
                        0.0, o, (int)D);
        }
        double t = now() - t0, g = 4.0 * (double)S1 * (double)S2 * (double)D / t * 1e-9;
        if (g > best) best = g;
    }
    free(q), free(k), free(v), free(s), free(o);
    return best;
}
#endif

int main(int argc, char **argv) {
    int64_t S1 = argc > 1 ? atoll(argv[1]) : 2048, S2 = argc > 2 ? atoll(argv[2]) : 2048;
    int64_t D = argc > 3 ? atoll(argv[3]) : 128, N1 = argc > 4 ? atoll(argv[4]) : 1, B = argc > 5 ? atoll(argv[5]) : 1;
    int threads = argc > 6 ? atoi(argv[6]) : 0;
    const char *what = argc > 7 ? argv[7] : "fwd";
    int causal = argc > 8 ? atoi(argv[8]) : 0;
    int do_fwd = 1, do_bwd = strcmp(what, "bwd") == 0 || strcmp(what, "both") == 0;
    uint64_t seed = 12345;
    double rss0 = rss_mib();
    printf("bench_golden: B=%lld N1=%lld S1=%lld S2=%lld D=%lld threads=%d %s%s (seed %llu)\n", (long long)B,
           (long long)N1, (long long)S1, (long long)S2, (long long)D, threads, what, causal ? " causal" : "",
           (unsigned long long)seed);

    fr_params p = fr_params_default();
    p.head_num = N1;
    p.input_layout = FR_BNSD;
    p.scale_value = 1.0 / 11.3137;
    fr_fwd_inputs in;
    memset(&in, 0, sizeof in);
    in.query = make(FR_F32, 4, B, N1, S1, D, &seed);
    in.key = make(FR_F32, 4, B, N1, S2, D, &seed);
    in.value = make(FR_F32, 4, B, N1, S2, D, &seed);
    if (causal) {
        p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL;
        in.atten_mask = make(FR_U8, 2, 2048, 2048, 0, 0, &seed);
    }
    fr_fwd_outputs out;
    out.attention_out = make(FR_F32, 4, B, N1, S1, D, &seed);
    out.softmax_max = make(FR_F32, 4, B, N1, S1, 8, &seed);
    out.softmax_sum = make(FR_F32, 4, B, N1, S1, 8, &seed);
    fr_bwd_inputs bi;
    fr_bwd_outputs bo;
    memset(&bi, 0, sizeof bi);
    memset(&bo, 0, sizeof bo);
    if (do_bwd) {
        bi.fwd = in;
        bi.dy = make(FR_F32, 4, B, N1, S1, D, &seed);
        bi.attention_in = out.attention_out;
        bi.softmax_max = out.softmax_max;
        bi.softmax_sum = out.softmax_sum;
        bo.dq = make(FR_F32, 4, B, N1, S1, D, &seed);
        bo.dk = make(FR_F32, 4, B, N1, S2, D, &seed);
        bo.dv = make(FR_F32, 4, B, N1, S2, D, &seed);
    }
    double rss_io = rss_mib();
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    e.num_threads = threads;
    fr_error err;
    double flops = 4.0 * (double)B * (double)N1 * (double)S1 * (double)S2 * (double)D;
    double gf_fwd = 0.0, gf_bwd = 0.0;
    /* Alike bench_golden.c (the backward block below): kept apart because forward and backward take different
     * structs and count FLOPs differently (1 x vs 2.5 x). */
    if (do_fwd) {
        double t0 = now();
        fr_status st = fr_fwd(&p, &in, &out, &e, &err);
        double t = now() - t0;
        if (st != FR_OK) {
            printf("fr_fwd: %s\n", err.msg);
            return 1;
        }
        printf("forward:  %.3f s, %.3f GFLOP/s (%.4g FLOP)\n", t, flops / t * 1e-9, flops);
        gf_fwd = flops / t * 1e-9;
    }
    /* Alike bench_golden.c (the forward block above): kept apart because forward and backward take different
     * structs and count FLOPs differently (2.5 x vs 1 x). */
    if (do_bwd) {
        double t0 = now();
        fr_status st = fr_bwd(&p, &bi, &bo, &e, &err);
        double t = now() - t0;
        if (st != FR_OK) {
            printf("fr_bwd: %s\n", err.msg);
            return 1;
        }
        printf("backward: %.3f s, %.3f GFLOP/s (counted as 2.5 x %.4g FLOP)\n", t, 2.5 * flops / t * 1e-9, flops);
        gf_bwd = 2.5 * flops / t * 1e-9;
    }
    double peak = rss_mib(); /* before the baseline's own buffers */
    double io = (double)io_bytes / (1024.0 * 1024.0);
    printf("memory: peak RSS %.1f MiB, inputs+outputs %.1f MiB, RSS before tensors %.1f MiB, after tensors %.1f MiB\n",
           peak, io, rss0, rss_io);
    printf("working memory (peak - inputs/outputs - baseline): %.2f MiB\n", peak - io - rss0);
#ifdef FR_HAVE_CBLAS
    double gd = 0.0;
    for (int rep = 0; rep < 3; rep++) {
        double g = dgemm_gflops(S1, S2, D, threads);
        if (g > gd) gd = g;
        double t0 = now();
        if (fr_fwd(&p, &in, &out, &e, &err) != FR_OK) return 1;
        double t = now() - t0;
        if (flops / t * 1e-9 > gf_fwd) gf_fwd = flops / t * 1e-9;
        if (!do_bwd) continue;
        t0 = now();
        if (fr_bwd(&p, &bi, &bo, &e, &err) != FR_OK) return 1;
        t = now() - t0;
        if (2.5 * flops / t * 1e-9 > gf_bwd) gf_bwd = 2.5 * flops / t * 1e-9;
    }
    printf("dgemm:    %.3f GFLOP/s (OpenBLAS, same FLOPs per head, %d threads, best of 3)\n", gd, threads);
    printf("golden:   forward %.3f", gf_fwd);
    if (do_bwd) printf("  backward %.3f", gf_bwd);
    printf(" GFLOP/s (best of 4, interleaved with dgemm)\n");
    printf("ratio:    forward %.3f", gf_fwd / gd);
    if (do_bwd) printf("  backward %.3f", gf_bwd / gd);
    printf("  (golden GFLOP/s / dgemm GFLOP/s)\n");
#else
    (void)gf_fwd, (void)gf_bwd;
    printf("dgemm:    not measured (built without OpenBLAS)\n");
#endif
    return 0;
}
