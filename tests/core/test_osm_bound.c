/* The proved rounding bound (proofs/round, core/osm_bound.h) checked numerically:
 *  1. the transcription of the bound's formula: its first-order expansion, monotonicity, the numbers of
 *     proofs/README.md (n = 4096 and 1M, fp32 and fp64);
 *  2. rows whose scores are exact in fp32 (q = e_1, k = x e_1, scale 1), against softmax(x) . v in long double:
 *     - osm.h driven as the theorem's model (the kernel's expsum_f32 per tile, P.V by an fma chain, plain
 *       accumulation across tiles, split in two partial rows merged by fr_osm_f32_merge), tiles of 1, 7, 128;
 *     - the fast kernels (fr_fwd, FR_ENGINE_FAST: Kahan-compensated across tiles, decode chunks merged);
 *     - the golden (fp64 bound);
 *     adversarial rows: random, cancellation, a dominant key last, scores rising over the row (a rescale every
 *     tile), a wide range with underflowing weights; n = 4096, 65536, 1M. Every error must sit below its bound;
 *     the table says how far;
 *  3. negative controls that must EXCEED the bound: the same model with an update that does not rescale l (the
 *     mutated update of proofs/prove.py's Coq control) and with l accumulated in bf16 (a worse summation);
 *  4. the golden computes the operations of the Coq golden model (Model.v gkey / gblock): a C transcription of them
 *     gives the golden's outputs bit for bit.
 * Usage: test_osm_bound [seed] */
#include "common/check.h"
#include "common/seed.h"
#include "core/osm.h"
#include "core/osm_bound.h"
#include "kernels/kernels.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DV 4
#define NMAX (1 << 20)

static uint64_t rng;

typedef struct {
    int64_t n;
    float *x;        /* scores [n] */
    float *v;        /* values [n][DV] */
    const char *kind;
} row_t;

/* softmax(x) . v in long double, two passes; V = max |v|; range = max x - min x. */
static void reference(const row_t *r, long double out[DV], double *V, double *range) {
    float mx = -INFINITY, mn = INFINITY;
    for (int64_t j = 0; j < r->n; j++) mx = fmaxf(mx, r->x[j]), mn = fminf(mn, r->x[j]);
    long double l = 0, o[DV] = {0};
    double vm = 0;
    for (int64_t j = 0; j < r->n; j++) {
        long double p = expl((long double)r->x[j] - (long double)mx);
        l += p;
        for (int d = 0; d < DV; d++) o[d] += p * (long double)r->v[j * DV + d], vm = fmax(vm, fabs(r->v[j * DV + d]));
    }
    for (int d = 0; d < DV; d++) out[d] = o[d] / l;
    *V = vm;
    *range = (double)mx - (double)mn;
}

/* The theorem's model (Model.v kstep / merge) with the real osm.h and the real kernel exp: keys [j0, j1) in tiles of
 * T. mutate 1: l not rescaled when the reference moves; 2: l accumulated in bf16. */
static float bf16(float x) {
    uint32_t b;
    memcpy(&b, &x, 4);
    b = (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u;
    memcpy(&x, &b, 4);
    return x;
}

static fr_osm_f32 model_part(const fr_kops *ops, const row_t *r, int64_t j0, int64_t j1, int64_t T, int mutate,
                             float o[DV], float *p) {
    fr_osm_f32 st = fr_osm_f32_init();
    for (int d = 0; d < DV; d++) o[d] = 0;
    for (int64_t t0 = j0; t0 < j1; t0 += T) {
        int64_t nj = t0 + T < j1 ? T : j1 - t0;
        float tmax = ops->max_f32(nj, r->x + t0), alpha, mu, l0 = st.l;
        bool moved = fr_osm_f32_update(&st, tmax, 0.0f, &alpha, &mu);
        if (mutate == 1 && moved) st.l = l0; /* the mutated update: l keeps its old reference */
        for (int d = 0; d < DV; d++) o[d] *= alpha;
        memcpy(p, r->x + t0, sizeof(float) * (size_t)nj);
        float s = ops->expsum_f32(nj, p, mu);
        float t[DV] = {0};
        for (int64_t j = 0; j < nj; j++)
            for (int d = 0; d < DV; d++) t[d] = fmaf(p[j], r->v[(t0 + j) * DV + d], t[d]);
        fr_osm_f32_add_sum(&st, s);
        if (mutate == 2) st.l = bf16(st.l);
        for (int d = 0; d < DV; d++) o[d] += t[d];
    }
    return st;
}

static void model(const fr_kops *ops, const row_t *r, int64_t T, int mutate, bool split, float out[DV], float *p) {
    float o[DV], ob[DV];
    int64_t h = split ? (r->n / 2 / T) * T : r->n;
    fr_osm_f32 st = model_part(ops, r, 0, h > 0 ? h : r->n, T, mutate, o, p);
    if (split && h > 0 && h < r->n) {
        fr_osm_f32 sb = model_part(ops, r, h, r->n, T, mutate, ob, p);
        fr_osm_f32_merge(&st, o, sb, ob, DV);
    }
    float inv_l, mx, sm;
    fr_osm_f32_finalize(&st, &inv_l, &mx, &sm);
    for (int d = 0; d < DV; d++) out[d] = o[d] / sm; /* the kernels' final division */
}

/* fr_fwd of one row: query [1, 1, 1, DV] = (1, 0, ..), key [1, n, 1, DV] = (x, 0, ..), so the score is x exactly;
 * value [1, n, 1, DV]; fp64 output. kbuf: n * DV floats of scratch. */
static fr_status run_engine(fr_engine_kind kind, const row_t *r, float *kbuf, double out[DV], double *l_out) {
    float q[DV] = {1.0f};
    memset(kbuf, 0, sizeof(float) * (size_t)(r->n * DV));
    for (int64_t j = 0; j < r->n; j++) kbuf[j * DV] = r->x[j];
    int64_t qs[4] = {1, 1, 1, DV}, ks[4] = {1, r->n, 1, DV}, vs[4] = {1, r->n, 1, DV}, os[4] = {1, 1, 1, DV},
            ss[4] = {1, 1, 1, 8};
    double sm[8], sl[8];
    fr_fwd_inputs in;
    memset(&in, 0, sizeof in);
    in.query = fr_tensor_make(FR_F32, q, 4, qs);
    in.key = fr_tensor_make(FR_F32, kbuf, 4, ks);
    in.value = fr_tensor_make(FR_F32, r->v, 4, vs);
    fr_fwd_outputs o;
    memset(&o, 0, sizeof o);
    o.attention_out = fr_tensor_make(FR_F64, out, 4, os);
    o.softmax_max = fr_tensor_make(FR_F64, sm, 4, ss);
    o.softmax_sum = fr_tensor_make(FR_F64, sl, 4, ss);
    fr_params p = fr_params_default();
    p.head_num = 1;
    p.input_layout = FR_BSND;
    p.scale_value = 1.0;
    fr_engine e = fr_engine_default(kind);
    fr_error err;
    fr_status st = fr_fwd(&p, &in, &o, &e, &err);
    if (st != FR_OK) printf("  fr_fwd(%s): %s\n", fr_engine_name(kind), err.msg);
    *l_out = sl[0];
    return st;
}

/* The Coq golden model (Model.v gkey / gblock) in C: blocks of 64 keys, alpha = exp(m - bm), l += p, acc = fma(p, v,
 * acc), acc / l. */
static void golden_model(const row_t *r, double out[DV]) {
    double m = -INFINITY, l = 0, acc[DV] = {0};
    for (int64_t b0 = 0; b0 < r->n; b0 += 64) {
        int64_t b1 = b0 + 64 < r->n ? b0 + 64 : r->n;
        double bm = -INFINITY;
        for (int64_t j = b0; j < b1; j++) bm = fmax(bm, (double)r->x[j]);
        if (bm > m) {
            double a = exp(m - bm);
            l *= a;
            for (int d = 0; d < DV; d++) acc[d] *= a;
            m = bm;
        }
        for (int64_t j = b0; j < b1; j++) {
            double p = exp((double)r->x[j] - m);
            l += p;
            for (int d = 0; d < DV; d++) acc[d] = fma(p, (double)r->v[j * DV + d], acc[d]);
        }
    }
    for (int d = 0; d < DV; d++) out[d] = acc[d] / l;
}

static void make_row(row_t *r, int64_t n, int kind) {
    static const char *const names[] = {"random", "cancellation", "dominant last", "rising", "wide range"};
    r->n = n;
    r->kind = names[kind];
    for (int64_t j = 0; j < n; j++) {
        double x = 0;
        switch (kind) {
        case 0: x = 3.0 * fr_test_sym(&rng); break;
        case 1: x = 1e-3 * fr_test_unif(&rng); break;
        case 2: x = j == n - 1 ? 15.0 : fr_test_sym(&rng); break;
        case 3: x = 20.0 * (double)j / (double)n; break;
        default: x = -80.0 * fr_test_unif(&rng); break;
        }
        r->x[j] = (float)x;
        for (int d = 0; d < DV; d++) /* random: values of one sign, so that an error of l shows in full */
            r->v[j * DV + d] = kind == 0   ? (float)(0.5 + 0.5 * fr_test_unif(&rng))
                               : kind == 1 ? (float)((j + d) % 2 ? -1.0 : 1.0)
                                           : (float)fr_test_sym(&rng);
    }
}

static double err_of(const long double ref[DV], const double *a) {
    double e = 0;
    for (int d = 0; d < DV; d++) e = fmax(e, (double)fabsl((long double)a[d] - ref[d]));
    return e;
}

/* A negative control: the model with mutation 1 (update without rescaling l) or 2 (l summed in bf16), tiles of 128;
 * its error must exceed the bound. Returns error / bound. */
static double negative(const fr_kops *ops, const row_t *r, int mutate, const long double ref[DV], double V, double R,
                       float *p) {
    fr_osm_bound_params kp = fr_osm_bound_f32_kernels();
    float o32[DV];
    double out[DV];
    model(ops, r, 128, mutate, false, o32, p);
    for (int d = 0; d < DV; d++) out[d] = o32[d];
    double e = err_of(ref, out) / V, b = fr_osm_bound_kernel(&kp, (double)r->n, (double)((r->n + 127) / 128), R, 1.0);
    const char *name = mutate == 1 ? "NEG: no rescale of l" : "NEG: l summed in bf16";
    printf("%-13s %8lld  %-22s %10.3g %10.3g %9s\n", r->kind, (long long)r->n, name, e, b, e > b ? "exceeds" : "BELOW");
    CHECK(e > b, "negative control (%s) stays below the bound: %.3g <= %.3g", name, e, b);
    return e / b;
}

static void check_formula(void) {
    fr_osm_bound_params k = fr_osm_bound_f32_kernels(), g = fr_osm_bound_f64_golden();
    /* first order: V (dl + do) ~ V ((2n + 2K - 3) u + 2 (K - 1) eps_a + 2 eps_l + 2 u R) */
    double n = 4096, K = 32, R = 10, b = fr_osm_bound_kernel(&k, n, K, R, 1.0);
    double first = (2 * n + 2 * K - 3) * k.u + 2 * (K - 1) * k.eps_a + 2 * k.eps_l + 2 * k.u * R;
    CHECK(b > first && b < first * 1.01, "bound %.6g vs first order %.6g", b, first);
    CHECK(fr_osm_bound_kernel(&k, n, 2 * K, R, 1) > b && fr_osm_bound_kernel(&k, 2 * n, K, R, 1) > b &&
          fr_osm_bound_kernel(&k, n, K, 2 * R, 1) > b && fr_osm_bound_kernel(&k, n, K, R, 2) > b);
    CHECK(isinf(fr_osm_bound_kernel(&k, 0, 1, 0, 1)) && isinf(fr_osm_bound_kernel(&k, 10, 11, 0, 1)) &&
          isinf(fr_osm_bound_kernel(&k, 1e9, 1e9, 0, 1)), "invalid or hopeless: +inf");
    /* The numbers of proofs/README.md (V = 1, range 0). */
    struct { double got, want; const char *what; } t[] = {
        {fr_osm_bound_kernel(&k, 4096, 32, 0, 1), 4.961e-4, "fp32 kernels n 4096, K n/128"},
        {fr_osm_bound_kernel(&k, 4096, 4096, 0, 1), 1.474e-3, "fp32 any tiling n 4096"},
        {fr_osm_bound_kernel(&k, 1048576, 8192, 0, 1), 0.1403, "fp32 kernels n 1M, K n/128"},
        {fr_osm_bound_golden(&g, 4096, 64, 0, 1), 9.52e-13, "fp64 golden n 4096"},
        {fr_osm_bound_golden(&g, 1048576, 16384, 0, 1), 2.437e-10, "fp64 golden n 1M"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        printf("bound %-30s %.4g\n", t[i].what, t[i].got);
        CHECK(fabs(t[i].got / t[i].want - 1) < 2e-3, "%s: %.5g, README says %.4g", t[i].what, t[i].got, t[i].want);
    }
}

int main(int argc, char **argv) {
    rng = fr_test_seed(argc, argv, "test_osm_bound");
    check_formula();
    const fr_kops *ops = fr_kops_get(FR_ISA_AUTO);
    row_t r;
    r.x = malloc(sizeof(float) * NMAX);
    r.v = malloc(sizeof(float) * NMAX * DV);
    float *p = malloc(sizeof(float) * NMAX), *kbuf = malloc(sizeof(float) * NMAX * DV);
    if (!r.x || !r.v || !p || !kbuf || !ops) {
        printf("test_osm_bound: no memory or no kernel table\n");
        return 1;
    }
    fr_osm_bound_params kp = fr_osm_bound_f32_kernels(), gp = fr_osm_bound_f64_golden();
    double worst_model = 0, worst_fast = 0, worst_golden = 0, least_neg = INFINITY;
    printf("%-13s %8s  %-22s %10s %10s %9s\n", "row", "n", "implementation", "error/V", "bound/V", "below by");
    const int64_t ns[3] = {4096, 65536, NMAX};
    for (int in = 0; in < 3; in++)
        for (int kind = 0; kind < 5; kind++) {
            int64_t n = ns[in];
            make_row(&r, n, kind);
            long double ref[DV];
            double V, R, e, b, out[DV], l;
            reference(&r, ref, &V, &R);
            /* the theorem's model: tiles of 128 (split and merged), 7, and 1 (up to 64K keys) */
            const int64_t Ts[3] = {128, 7, 1};
            for (int it = 0; it < 3; it++) {
                int64_t T = Ts[it];
                if (T == 1 && n > 65536) continue;
                float o32[DV];
                model(ops, &r, T, 0, T == 128, o32, p);
                for (int d = 0; d < DV; d++) out[d] = o32[d];
                e = err_of(ref, out) / V;
                b = fr_osm_bound_kernel(&kp, (double)n, (double)((n + T - 1) / T + (T == 128)), R, 1.0);
                char name[32];
                snprintf(name, sizeof name, "osm.h model T=%lld%s", (long long)T, T == 128 ? "+merge" : "");
                printf("%-13s %8lld  %-22s %10.3g %10.3g %8.0fx\n", r.kind, (long long)n, name, e, b,
                       b / fmax(e, 1e-30));
                CHECK(e <= b, "%s n %lld %s: error %.3g > proved bound %.3g", r.kind, (long long)n, name, e, b);
                worst_model = fmax(worst_model, e / b);
            }
            /* negative controls on the rows where the mutation shows: they must exceed the bound */
            if (kind == 2) least_neg = fmin(least_neg, negative(ops, &r, 1, ref, V, R, p));
            if (kind == 0) least_neg = fmin(least_neg, negative(ops, &r, 2, ref, V, R, p));
            /* the fast kernels (Kahan across tiles, decode chunks merged: outside the theorem, measured) */
            if (run_engine(FR_ENGINE_FAST, &r, kbuf, out, &l) == FR_OK) {
                e = err_of(ref, out) / V;
                b = fr_osm_bound_kernel(&kp, (double)n, (double)((n + FR_K_BN - 1) / FR_K_BN), R, 1.0);
                printf("%-13s %8lld  %-22s %10.3g %10.3g %8.0fx\n", r.kind, (long long)n, "fast kernels", e, b,
                       b / fmax(e, 1e-30));
                CHECK(e <= b, "%s n %lld fast: error %.3g > bound %.3g", r.kind, (long long)n, e, b);
                worst_fast = fmax(worst_fast, e / b);
            } else {
                CHECK(0, "fast engine failed");
            }
            /* the golden: its fp64 bound, and the Coq golden model bit for bit */
            if (run_engine(FR_ENGINE_GOLDEN, &r, kbuf, out, &l) == FR_OK) {
                e = err_of(ref, out) / V;
                b = fr_osm_bound_golden(&gp, (double)n, (double)((n + 63) / 64), R, 1.0);
                printf("%-13s %8lld  %-22s %10.3g %10.3g %8.0fx\n", r.kind, (long long)n, "golden (fp64)", e, b,
                       b / fmax(e, 1e-30));
                CHECK(e <= b, "%s n %lld golden: error %.3g > bound %.3g", r.kind, (long long)n, e, b);
                worst_golden = fmax(worst_golden, e / b);
                double gm[DV];
                golden_model(&r, gm);
                CHECK(memcmp(gm, out, sizeof gm) == 0, "%s n %lld: the golden differs from the Coq golden model "
                      "(%.17g vs %.17g)", r.kind, (long long)n, out[0], gm[0]);
            } else {
                CHECK(0, "golden engine failed");
            }
        }
    printf("worst error / proved bound: osm.h model %.3g, fast kernels %.3g, golden %.3g; negative controls exceed "
           "it by %.3gx at least\n", worst_model, worst_fast, worst_golden, least_neg);
    free(r.x), free(r.v), free(p), free(kbuf);
    return fr_test_exit("test_osm_bound");
}
