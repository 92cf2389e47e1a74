/* Throughput of the fast engine (make bench; never a test). One run measures, back to back so that a shared
 * machine's load hits all of them alike:
 *   - machine peak: an FMA loop (AVX-512, else AVX2), a vdpbf16ps loop and an AMX TDPBF16PS loop on all threads;
 *   - baseline "standard attention": OpenBLAS sgemm for Q K^T (blocks of 512 query rows), row softmax, sgemm P V;
 *   - flashref fast forward and backward, fp32 and bf16 (through fr_fwd / fr_bwd);
 *   - the golden engine, for scale (one small shape).
 * FLOPs: forward 4 B N1 S1 S2 D (half for causal), backward 2.5 x that.
 * Environment: FLASHREF_BENCH_THREADS (default: OpenMP's), FLASHREF_BENCH_HEADS (N1, default 16; N2 scales with it),
 * FLASHREF_BENCH_MAXS (largest S, default 16384), FLASHREF_BENCH_SCALING_MAXS (largest S of the S^2 check, 32768). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "flashref.h"

#include <cblas.h>
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) { return omp_get_wtime(); }
/* Process CPU seconds (all threads): on a machine shared with other jobs, rates per CPU-second are what the kernel
 * achieves while it runs; wall-clock rates also count the time other jobs held the cores. */
static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
typedef struct meas {
    double wall, cpu; /* seconds */
} meas;

/* ---- machine peak ------------------------------------------------------------------------------------------------ */
/* Alike bench_kernels.c:fma_loop_256 / dpbf16_loop: kept apart because each measures the peak of one instruction on
 * its own ISA (target attributes per function, style.md 3). */
__attribute__((target("avx512f"))) static float fma_loop_512(int64_t iters) {
    __m512 a[12], b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (int k = 0; k < 12; k++) a[k] = _mm512_set1_ps((float)k);
    for (int64_t it = 0; it < iters; it++)
        for (int k = 0; k < 12; k++) a[k] = _mm512_fmadd_ps(a[k], b, c);
    __m512 s = a[0];
    for (int k = 1; k < 12; k++) s = _mm512_add_ps(s, a[k]);
    return _mm512_reduce_add_ps(s);
}
/* Alike bench_kernels.c:fma_loop_512: kept apart because each measures the peak of one instruction on its own ISA
 * (target attributes per function, style.md 3). */
__attribute__((target("avx2,fma"))) static float fma_loop_256(int64_t iters) {
    __m256 a[12], b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    for (int k = 0; k < 12; k++) a[k] = _mm256_set1_ps((float)k);
    for (int64_t it = 0; it < iters; it++)
        for (int k = 0; k < 12; k++) a[k] = _mm256_fmadd_ps(a[k], b, c);
    float o[8], s = 0;
    for (int k = 1; k < 12; k++) a[0] = _mm256_add_ps(a[0], a[k]);
    _mm256_storeu_ps(o, a[0]);
    for (int k = 0; k < 8; k++) s += o[k];
    return s;
}
__attribute__((target("avx512f,avx512bf16"))) static float dpbf16_loop(int64_t iters) {
    __m512 a[12];
    __m512bh x = (__m512bh)_mm512_set1_epi32(0x3f803f80), y = (__m512bh)_mm512_set1_epi32(0x3a803a80);
    for (int k = 0; k < 12; k++) a[k] = _mm512_set1_ps((float)k);
    for (int64_t it = 0; it < iters; it++)
        for (int k = 0; k < 12; k++) a[k] = _mm512_dpbf16_ps(a[k], x, y);
    __m512 s = a[0];
    for (int k = 1; k < 12; k++) s = _mm512_add_ps(s, a[k]);
    return _mm512_reduce_add_ps(s);
}

/* AMX TDPBF16PS loop: four 16 x 16 fp32 accumulators, A and B tiles loaded once (2 * 16 * 16 * 32 FLOPs per
 * instruction). The tile configuration is per thread; the process permission comes from fr_isa_available. */
__attribute__((target("amx-tile,amx-bf16"))) static float amx_loop(int64_t iters) {
    struct {
        uint8_t palette, start_row, reserved[14];
        uint16_t colsb[16];
        uint8_t rows[16];
    } cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.colsb[t] = 64, cfg.rows[t] = 16;
    _tile_loadconfig(&cfg);
    static const uint32_t ab[16 * 16] = {0x3f803f80u}; /* mostly zeros: the rate does not depend on the values */
    float c[16 * 16];
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, ab, 64);
    _tile_loadd(5, ab, 64);
    _tile_loadd(6, ab, 64);
    _tile_loadd(7, ab, 64);
    for (int64_t it = 0; it < iters; it++) {
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, c, 64);
    _tile_release();
    return c[0];
}

/* Rates of a loop on nt threads; kind 0 = FMA, 1 = vdpbf16ps, 2 = AMX: *wall_g GFLOP/s and, returned, GFLOP per CPU-second
 * times nt (what nt threads reach while they hold the cores). Short bursts, best of reps; 0 when the CPU lacks it. */
static double peak_reps(int kind, int nt, int reps, double *wall_g) {
    /* what the CPU runs: the library's dispatcher, as for the kernels (cpuid is read there only) */
    bool z512 = fr_isa_available(FR_ISA_AVX512), avx2 = fr_isa_available(FR_ISA_AVX2);
    bool bf16 = fr_isa_available(FR_ISA_AVX512_BF16);
    *wall_g = 0;
    if ((kind == 1 && !bf16) || (kind == 0 && !z512 && !avx2) || (kind == 2 && !fr_isa_available(FR_ISA_AMX)))
        return 0;
    /* ~20-50 ms per burst: CPU-time accounting of much shorter bursts is unreliable */
    int64_t iters = kind == 2 ? 1000000 : 8000000;
    double flops_per_iter = kind == 2 ? 4.0 * 16384 : kind == 1 ? 12.0 * 64 : 12.0 * (z512 ? 32 : 16);
    volatile float sink = 0;
    double best = 0;
    for (int rep = 0; rep < reps; rep++) {
        double t0 = now(), c0 = cpu_now();
#pragma omp parallel num_threads(nt)
        {
            float r = kind == 2   ? amx_loop(iters)
                      : kind == 1 ? dpbf16_loop(iters)
                      : z512      ? fma_loop_512(iters)
                                  : fma_loop_256(iters);
#pragma omp atomic
            sink += r;
        }
        double w = now() - t0, c = cpu_now() - c0, f = flops_per_iter * (double)iters * nt;
        if (f / w * 1e-9 > *wall_g) *wall_g = f / w * 1e-9;
        if (f / c * nt * 1e-9 > best) best = f / c * nt * 1e-9;
    }
    (void)sink;
    return best;
}
static double peak(int kind, int nt, double *wall_g) { return peak_reps(kind, nt, 8, wall_g); }
/* The peak right now (a few bursts): the reference for the measurement that follows it. */
static double local_peak(int kind, int nt) {
    double w;
    return peak_reps(kind, nt, 2, &w);
}

/* ---- problems ---------------------------------------------------------------------------------------------------- */
typedef struct shape {
    int64_t N1, N2, S1, S2, D;
    bool causal;
} shape;

typedef struct bufs {
    fr_params p;
    fr_fwd_inputs in;
    fr_fwd_outputs out;
    fr_bwd_inputs bin;
    fr_bwd_outputs bout;
    void *mem[16];
    int nmem;
} bufs;

static void *take(bufs *b, size_t n) {
    void *m = malloc(n ? n : 1);
    b->mem[b->nmem++] = m;
    return m;
}

static fr_tensor tensor4(bufs *bf, fr_dtype dt, int64_t a, int64_t b, int64_t c, int64_t d, uint64_t seed) {
    int64_t sh[4] = {a, b, c, d}, n = a * b * c * d;
    void *m = take(bf, (size_t)n * fr_dtype_size(dt));
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int64_t k = 0; k < n; k++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        float v = (float)((double)(s >> 11) * 0x1p-53 * 2.0 - 1.0);
        if (dt == FR_F32) ((float *)m)[k] = v;
        else ((uint16_t *)m)[k] = fr_f32_to_bf16(v, FR_ROUND_NEAREST_EVEN, FR_SAT);
    }
    return fr_tensor_make(dt, m, 4, sh);
}

static void build(bufs *b, const shape *s, fr_dtype dt, bool bwd) {
    memset(b, 0, sizeof *b);
    b->p = fr_params_default();
    b->p.head_num = s->N1;
    b->p.input_layout = FR_BNSD;
    b->p.scale_value = 1.0 / sqrt((double)s->D);
    b->in.query = tensor4(b, dt, 1, s->N1, s->S1, s->D, 1);
    b->in.key = tensor4(b, dt, 1, s->N2, s->S2, s->D, 2);
    b->in.value = tensor4(b, dt, 1, s->N2, s->S2, s->D, 3);
    if (s->causal) {
        int64_t sh[2] = {2048, 2048};
        uint8_t *m = take(b, 2048 * 2048);
        for (int64_t i = 0; i < 2048; i++)
            for (int64_t j = 0; j < 2048; j++) m[i * 2048 + j] = j > i;
        b->in.atten_mask = fr_tensor_make(FR_U8, m, 2, sh);
        b->p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL;
    }
    int64_t shs[4] = {1, s->N1, s->S1, 8};
    b->out.attention_out = tensor4(b, dt, 1, s->N1, s->S1, s->D, 4);
    b->out.softmax_max = fr_tensor_make(FR_F32, take(b, sizeof(float) * (size_t)(s->N1 * s->S1 * 8)), 4, shs);
    b->out.softmax_sum = fr_tensor_make(FR_F32, take(b, sizeof(float) * (size_t)(s->N1 * s->S1 * 8)), 4, shs);
    if (bwd) {
        b->bin.fwd = b->in;
        b->bin.dy = tensor4(b, dt, 1, s->N1, s->S1, s->D, 5);
        b->bin.attention_in = b->out.attention_out;
        b->bin.softmax_max = b->out.softmax_max;
        b->bin.softmax_sum = b->out.softmax_sum;
        b->bout.dq = tensor4(b, dt, 1, s->N1, s->S1, s->D, 6);
        b->bout.dk = tensor4(b, dt, 1, s->N2, s->S2, s->D, 7);
        b->bout.dv = tensor4(b, dt, 1, s->N2, s->S2, s->D, 8);
    }
}
static void release(bufs *b) {
    for (int k = 0; k < b->nmem; k++) free(b->mem[k]);
}

static double fwd_flops(const shape *s) {
    return 4.0 * (double)s->N1 * (double)s->S1 * (double)s->S2 * (double)s->D * (s->causal ? 0.5 : 1.0);
}

/* Fast (or golden) calls repeated until at least min_s seconds of wall time (at least one call): mean wall and CPU
 * seconds per call; wall < 0 on error. */
static meas time_call(bufs *b, fr_engine_kind kind, int nt, bool bwd, double min_s) {
    fr_engine e = fr_engine_default(kind);
    e.num_threads = nt;
    fr_error err;
    meas m = {0, 0};
    int reps = 0;
    double t0 = now(), c0 = cpu_now();
    do {
        fr_status st = bwd ? fr_bwd(&b->p, &b->bin, &b->bout, &e, &err) : fr_fwd(&b->p, &b->in, &b->out, &e, &err);
        if (st != FR_OK) {
            fprintf(stderr, "bench: %s %s: %s\n", fr_engine_name(kind), bwd ? "bwd" : "fwd", err.msg);
            m.wall = -1;
            return m;
        }
        reps++;
    } while (now() - t0 < min_s);
    m.wall = (now() - t0) / reps;
    m.cpu = (cpu_now() - c0) / reps;
    return m;
}

/* Standard attention with OpenBLAS: per head, blocks of 512 query rows: S = Q K^T, softmax, O = P V. */
static meas time_blas(const shape *s, int nt) {
    bufs b;
    build(&b, s, FR_F32, false);
    openblas_set_num_threads(nt);
    int64_t BR = 512, S2 = s->S2, D = s->D;
    float *S = malloc(sizeof(float) * (size_t)(BR * S2));
    float scale = (float)(1.0 / sqrt((double)D));
    double t0 = now(), c0 = cpu_now();
    for (int64_t h = 0; h < s->N1; h++) {
        int64_t kv = h / (s->N1 / s->N2);
        const float *q = (const float *)b.in.query.data + h * s->S1 * D;
        const float *k = (const float *)b.in.key.data + kv * S2 * D;
        const float *v = (const float *)b.in.value.data + kv * S2 * D;
        float *o = (float *)b.out.attention_out.data + h * s->S1 * D;
        for (int64_t i0 = 0; i0 < s->S1; i0 += BR) {
            int64_t m = s->S1 - i0 < BR ? s->S1 - i0 : BR;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)S2, (int)D, scale, q + i0 * D, (int)D,
                        k, (int)D, 0.0f, S, (int)S2);
#pragma omp parallel for num_threads(nt)
            for (int64_t r = 0; r < m; r++) {
                float *x = S + r * S2, mx = -INFINITY, sum = 0;
                int64_t lim = s->causal ? i0 + r + (S2 - s->S1) + 1 : S2;
                for (int64_t j = 0; j < S2; j++) {
                    if (j >= lim) x[j] = -INFINITY;
                    mx = x[j] > mx ? x[j] : mx;
                }
                for (int64_t j = 0; j < S2; j++) sum += (x[j] = expf(x[j] - mx));
                float il = 1.0f / sum;
                for (int64_t j = 0; j < S2; j++) x[j] *= il;
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)D, (int)S2, 1.0f, S, (int)S2, v, (int)D,
                        0.0f, o + i0 * D, (int)D);
        }
    }
    meas m = {now() - t0, cpu_now() - c0};
    free(S);
    release(&b);
    return m;
}

static int64_t env_int(const char *name, int64_t dflt) {
    const char *v = getenv(name);
    return v && *v ? strtoll(v, NULL, 10) : dflt;
}

/* Sum of x[0..n) (n a multiple of 64) with four independent accumulators: a read loop limited by memory, not by the
 * latency of one add chain. AVX-512, AVX2 or plain C as the library's dispatcher says the CPU runs (the AVX-512 one
 * alone died with SIGILL on AVX2 machines). */
/* Alike bench_kernels.c:read_sum_256: kept apart because each is one ISA's loop (16-lane zmm here, 8-lane ymm there),
 * compiled for its own target. */
__attribute__((target("avx512f"))) static double read_sum_512(const float *x, size_t n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < n; i += 64) {
        a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
        a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + i + 16));
        a2 = _mm512_add_ps(a2, _mm512_loadu_ps(x + i + 32));
        a3 = _mm512_add_ps(a3, _mm512_loadu_ps(x + i + 48));
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

/* Alike bench_kernels.c:read_sum_512: kept apart because each is one ISA's loop (8-lane ymm here, 16-lane zmm there),
 * compiled for its own target. */
__attribute__((target("avx2"))) static double read_sum_256(const float *x, size_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < n; i += 32) {
        a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
        a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + i + 24));
    }
    float l[8];
    _mm256_storeu_ps(l, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    return (double)(((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7])));
}

static double read_sum_c(const float *x, size_t n) {
    float a[8] = {0};
    for (size_t i = 0; i < n; i += 8)
        for (int k = 0; k < 8; k++) a[k] += x[i + k];
    return (double)(((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])));
}

typedef double read_sum_fn(const float *x, size_t n);
static read_sum_fn *read_sum_pick(const char **name) {
    if (fr_isa_available(FR_ISA_AVX512)) return *name = "AVX-512", read_sum_512;
    if (fr_isa_available(FR_ISA_AVX2)) return *name = "AVX2", read_sum_256;
    return *name = "C", read_sum_c;
}

/* bench_kernels --peaks: "fma dpbf16 amx" wall GFLOP/s on nt threads (0 where the CPU lacks one).
 * bench_kernels --row S D CAUSAL: "fwd_f32 fwd_bf16 bwd_f32 bwd_bf16 blas_f32" wall GFLOP/s (a warm-up call, then
 * the best of 4 calls, 2 at S >= 4096: what side_by_side.py gives PyTorch)
 * for B = 1, N1 = N2 = FLASHREF_BENCH_HEADS, S1 = S2 = S.
 * bench_kernels --decode: "stream_read f32 bf16 f32_s8 bf16_s8" GB/s: a read loop over 1 GiB, then decode (S1 = 1,
 * then S1 = 8; S2 = 128K, N1 = N2 = 8, D = 128) as K and V bytes per second. Used by bench/kernels/side_by_side.py, which measures
 * PyTorch between these calls and prints the table with ratios. */
static int side_by_side(int argc, char **argv, int nt, int64_t heads) {
    if (!strcmp(argv[1], "--peaks")) {
        double w[3];
        for (int k = 0; k < 3; k++) peak(k, nt, &w[k]);
        printf("%.1f %.1f %.1f\n", w[0], w[1], w[2]);
        return 0;
    }
    if (!strcmp(argv[1], "--decode")) {
        /* decode S1 = 1, S2 = 128K, N1 = N2 = 8, D = 128: K and V bytes read per second, fp32 and bf16, against a
         * STREAM-like read loop (sum of a 1 GiB array) on the same threads */
        size_t nf = (size_t)1 << 28;
        float *big = malloc(sizeof(float) * nf);
        if (!big) return 1;
#pragma omp parallel for num_threads(nt) schedule(static)
        for (size_t i = 0; i < nf; i++) big[i] = 1.0f;
        double bw = 0;
        const char *rname;
        read_sum_fn *read_sum = read_sum_pick(&rname);
        fprintf(stderr, "bench_kernels --decode: read loop on %s\n", rname);
        for (int rep = 0; rep < 3; rep++) {
            double t0 = now(), acc = 0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : acc)
            for (size_t i = 0; i < nf; i += 1u << 16) acc += read_sum(big + i, 1u << 16);
            double g = (double)nf * 4 / (now() - t0) * 1e-9;
            if (g > bw && acc > 0) bw = g;
        }
        free(big);
        printf("%.2f", bw);
        for (int v = 0; v < 4; v++) { /* fp32 and bf16 at S1 = 1, then at S1 = 8 */
            shape s = {8, 8, v < 2 ? 1 : 8, 131072, 128, false};
            bufs b;
            build(&b, &s, v % 2 ? FR_BF16 : FR_F32, false);
            double best = 1e30;
            if (time_call(&b, FR_ENGINE_FAST, nt, false, 0).wall < 0) return 1; /* warm-up, as for --row */
            for (int rep = 0; rep < 4; rep++) {
                meas m = time_call(&b, FR_ENGINE_FAST, nt, false, 0);
                if (m.wall < 0) return 1;
                if (m.wall < best) best = m.wall;
            }
            release(&b);
            printf(" %.2f", 2.0 * 8 * 131072 * 128 * (v % 2 ? 2 : 4) / best * 1e-9);
        }
        printf("\n");
        return 0;
    }
    if (argc < 5) return 2;
    shape s = {heads, heads, atoll(argv[2]), atoll(argv[2]), atoll(argv[3]), atoi(argv[4]) != 0};
    double F = fwd_flops(&s), g[5] = {0};
    for (int v = 0; v < 4; v++) {
        bufs b;
        bool bwd = v >= 2;
        build(&b, &s, v % 2 ? FR_BF16 : FR_F32, bwd);
        if (bwd) time_call(&b, FR_ENGINE_FAST, nt, false, 0);
        /* one warm-up call (first-touch page faults, the thread pool, the clock ramping up), then the best of as
         * many calls as side_by_side.py gives PyTorch: at S = 1024 the first calls ran at half speed */
        if (time_call(&b, FR_ENGINE_FAST, nt, bwd, 0).wall < 0) return 1;
        double best = 1e30;
        for (int rep = 0; rep < (s.S1 >= 4096 ? 2 : 4); rep++) {
            meas m = time_call(&b, FR_ENGINE_FAST, nt, bwd, 0);
            if (m.wall < 0) return 1;
            if (m.wall < best) best = m.wall;
        }
        g[v] = (bwd ? 2.5 : 1.0) * F / best * 1e-9;
        release(&b);
    }
    double bb = 1e30;
    for (int rep = 0; rep < 2; rep++) {
        meas mb = time_blas(&s, nt);
        if (mb.wall < bb) bb = mb.wall;
    }
    g[4] = F / bb * 1e-9;
    printf("%.1f %.1f %.1f %.1f %.1f\n", g[0], g[1], g[2], g[3], g[4]);
    return 0;
}

int main(int argc, char **argv) {
    int nt = (int)env_int("FLASHREF_BENCH_THREADS", omp_get_max_threads());
    int64_t heads = env_int("FLASHREF_BENCH_HEADS", 16), maxs = env_int("FLASHREF_BENCH_MAXS", 16384);
    int64_t smax = env_int("FLASHREF_BENCH_SCALING_MAXS", 32768);
    if (argc > 1) return side_by_side(argc, argv, nt, heads);
    fr_isa isa;
    fr_error err0;
    if (fr_isa_selected(&isa, &err0) != FR_OK) {
        fprintf(stderr, "bench_kernels: %s\n", err0.msg);
        return 2;
    }
    printf("variant: %s (the library's dispatcher; FLASHREF_ISA lowers it)\n", fr_isa_name(isa));
    printf("bench_kernels: %d threads, N1 = %lld. The machine may be shared: GFLOP/s are wall-clock; %%peak compares\n"
           "the kernel's rate per CPU-second with the FMA (or vdpbf16ps) loop's, measured just before and after it;\n"
           "f32/BLAS compares rates per CPU-second too.\n", nt, (long long)heads);
    double wf, wb, wa, pf = peak(0, nt, &wf), pb = peak(1, nt, &wb), pa = peak(2, nt, &wa);
    printf("peak (%d threads): FMA %.1f GFLOP/s (wall %.1f), vdpbf16ps %.1f GFLOP/s (wall %.1f), AMX %.1f (wall %.1f)\n\n",
           nt, pf, wf, pb, wb, pa, wa);
    printf("%-30s %8s %6s %8s %6s %8s %6s %8s %6s %8s %8s\n", "shape (B=1, BNSD)", "fwd f32", "%FMA", "fwd bf16",
           "%dpbf", "bwd f32", "%FMA", "bwd bf16", "%FMA", "BLAS std", "f32/BLAS");
    shape list[32];
    int n = 0;
    int64_t Ss[3] = {1024, 4096, 16384}, Ds[2] = {64, 128};
    for (int a = 0; a < 3; a++)
        for (int d = 0; d < 2; d++)
            for (int c = 0; c < 2; c++)
                if (Ss[a] <= maxs) list[n++] = (shape){heads, heads, Ss[a], Ss[a], Ds[d], c == 1};
    if (4096 <= maxs) list[n++] = (shape){heads, heads > 4 ? heads / 4 : 1, 4096, 4096, 128, false}; /* GQA 16/4 */
    list[n++] = (shape){heads, heads, 1, 32768, 128, false};                                              /* decode */
    for (int k = 0; k < n; k++) {
        shape *s = &list[k];
        double F = fwd_flops(s), g[4] = {0}, eff[4] = {0}, rate_cpu_f32 = 0;
        for (int v = 0; v < 4; v++) {
            bufs b;
            bool bwd = v >= 2;
            build(&b, s, v % 2 ? FR_BF16 : FR_F32, bwd);
            if (bwd) time_call(&b, FR_ENGINE_FAST, nt, false, 0); /* the forward's O, max, sum */
            int kind = v == 1 ? 1 : 0; /* the bf16 backward computes in fp32: its reference is the FMA peak */
            double lp = local_peak(kind, nt);
            meas m = time_call(&b, FR_ENGINE_FAST, nt, bwd, 0.3);
            lp = (lp + local_peak(kind, nt)) / 2; /* the peak just before and just after */
            double fl = (bwd ? 2.5 : 1.0) * F;
            if (m.wall > 0) {
                g[v] = fl / m.wall * 1e-9;
                double rc = fl / m.cpu * nt * 1e-9; /* per CPU-second, times nt */
                eff[v] = 100.0 * rc / lp;
                if (v == 0) rate_cpu_f32 = rc;
            }
            release(&b);
        }
        meas mb = time_blas(s, nt);
        double rb = F / mb.cpu * nt * 1e-9;
        char name[64];
        snprintf(name, sizeof name, "N%lld/%lld S%lldx%lld D%lld%s", (long long)s->N1, (long long)s->N2,
                 (long long)s->S1, (long long)s->S2, (long long)s->D, s->causal ? " causal" : "");
        printf("%-30s %8.1f %5.0f%% %8.1f %5.0f%% %8.1f %5.0f%% %8.1f %5.0f%% %8.1f %7.2fx\n", name, g[0], eff[0], g[1],
               eff[1], g[2], eff[2], g[3], eff[3], F / mb.wall * 1e-9, rate_cpu_f32 / rb);
        fflush(stdout);
    }
    /* time ~ S^2: forward fp32, D = 128, one head, non-causal */
    printf("\nscaling (fwd fp32, N1 = 1, D = 128): CPU time / S^2 relative to S = 1024\n");
    double base = 0;
    for (int64_t S = 1024; S <= smax; S *= 2) {
        shape s = {1, 1, S, S, 128, false};
        bufs b;
        build(&b, &s, FR_F32, false);
        meas m = time_call(&b, FR_ENGINE_FAST, nt, false, 0.3);
        release(&b);
        double r = m.cpu / ((double)S * (double)S);
        if (base == 0) base = r;
        printf("  S = %6lld: wall %8.3f s  cpu %8.3f s  %7.1f GFLOP/s  cpu/S^2 = %.3f x\n", (long long)S, m.wall, m.cpu,
               fwd_flops(&s) / m.wall * 1e-9, r / base);
        fflush(stdout);
    }
    /* thread speedup: forward fp32 S = 4096, D = 128, 4 heads (wall clock: meaningful only on an idle machine) */
    {
        shape s = {4, 4, 4096, 4096, 128, false};
        bufs b;
        build(&b, &s, FR_F32, false);
        meas t1 = time_call(&b, FR_ENGINE_FAST, 1, false, 0.5), tn = time_call(&b, FR_ENGINE_FAST, nt, false, 0.5);
        release(&b);
        printf("\nthreads (fwd fp32 N4 S4096 D128): 1 thread %.3f s (cpu %.3f), %d threads %.3f s (cpu %.3f): wall "
               "speedup %.2fx; from CPU time (no idle cores needed) %.2fx\n", t1.wall, t1.cpu, nt, tn.wall, tn.cpu,
               t1.wall / tn.wall, nt * t1.cpu / tn.cpu);
    }
    /* the golden, for scale */
    {
        shape s = {1, 1, 1024, 1024, 64, false};
        bufs b;
        build(&b, &s, FR_F32, false);
        fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
        fr_error err;
        if (fr_engine_available(&e, &err) == FR_OK) {
            meas tg = time_call(&b, FR_ENGINE_GOLDEN, nt, false, 0), tf = time_call(&b, FR_ENGINE_FAST, nt, false, 0.3);
            printf("golden (fwd N1 S1024 D64): %.2f GFLOP/s; fast %.1f GFLOP/s (%.0fx, CPU time)\n",
                   fwd_flops(&s) / tg.wall * 1e-9, fwd_flops(&s) / tf.wall * 1e-9, tg.cpu / tf.cpu);
        }
        release(&b);
    }
    return 0;
}
