/* Each rounding knob of the emulator against an independent, plainly written model of the same per-row algorithm
 * (fp64 dot products rounded once to fp32, the rest in fp32): threshold (exact / lazy), exp base, P dtype, row sum
 * source, KV tile size, tile order (forward / reverse / permutation), fp16 accumulators of l and O. The model and the
 * emulator agree to < 2e-5 rel-L2 while the knobs move the output by far more (so each knob is really applied). */
#include "common/check.h"
#include "flashref_emulate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { S1 = 12, S2 = 300, D = 16 };

static float q[S1 * D], k[S2 * D], v[S2 * D]; /* values exactly representable in bf16 */
static uint16_t qb[S1 * D], kb[S2 * D], vb[S2 * D];

static uint64_t rs;
static double urand(void) {
    rs = rs * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rs >> 11) * 0x1p-53;
}

static double r32(double x) { return (double)(float)x; }
static double rnd(double x, fr_dtype t, fr_round r) { return fr_emu_round(x, t, r, FR_SAT); }
static double acc(double x, fr_dtype t) { return t == FR_F16 ? fr_emu_round(x, FR_F16, FR_ROUND_NEAREST_EVEN, FR_NO_SAT) : r32(x); }

/* The model: one row, returns out[D] (fp32 values), m (natural units) and l. */
static void model(const fr_numerics *nc, int i, double *out, double *m_out, double *l_out) {
    const double LOG2E = 1.4426950408889634, LN2 = 0.6931471805599453;
    bool b2 = nc->exp_base == FR_EMU_EXP_2;
    double scale = r32(1.0 / 4.0), sy = b2 ? r32(scale * LOG2E) : scale, thr = b2 ? nc->rescale_threshold : nc->rescale_threshold * LN2;
    fr_dtype pdt = nc->p_dtype == FR_DT_NONE ? FR_BF16 : nc->p_dtype;
    double y[S2];
    for (int j = 0; j < S2; j++) {
        double s = 0;
        for (int d = 0; d < D; d++) s += (double)q[i * D + d] * k[j * D + d];
        y[j] = r32(r32(s) * sy);
    }
    int nt = (S2 + (int)nc->kv_tile - 1) / (int)nc->kv_tile;
    double m = -INFINITY, l = 0, O[D] = {0};
    for (int t = 0; t < nt; t++) {
        int tile = nc->order == FR_EMU_ORDER_REVERSE ? nt - 1 - t : nc->order == FR_EMU_ORDER_PERM ? (int)nc->perm[t] : t;
        int j0 = tile * (int)nc->kv_tile, j1 = j0 + (int)nc->kv_tile < S2 ? j0 + (int)nc->kv_tile : S2;
        double tmax = -INFINITY;
        for (int j = j0; j < j1; j++) tmax = fmax(tmax, y[j]);
        if (tmax - m > thr) {
            double a = b2 ? (double)exp2f((float)(m - tmax)) : (double)expf((float)(m - tmax));
            m = tmax;
            l = acc(r32(l * a), nc->acc_l);
            for (int d = 0; d < D; d++) O[d] = acc(r32(O[d] * a), nc->acc_o);
        }
        double ts = 0, pv[D] = {0};
        for (int j = j0; j < j1; j++) {
            double p = b2 ? (double)exp2f((float)r32(y[j] - m)) : (double)expf((float)r32(y[j] - m));
            double pr = rnd(p, pdt, nc->p_round);
            ts = r32(ts + (nc->rowsum == FR_EMU_ROWSUM_ROUNDED ? pr : p));
            for (int d = 0; d < D; d++) pv[d] = r32(pv[d] + r32(pr * v[j * D + d]));
        }
        l = acc(r32(l + ts), nc->acc_l);
        for (int d = 0; d < D; d++) O[d] = acc(r32(O[d] + pv[d]), nc->acc_o);
    }
    for (int d = 0; d < D; d++) out[d] = b2 ? r32(O[d] * r32(1.0 / l)) : r32(O[d] / l);
    *m_out = b2 ? r32(m * LN2) : m;
    *l_out = l;
}

static double rel_l2(const double *a, const double *b, int n) {
    double e = 0, r = 0;
    for (int k2 = 0; k2 < n; k2++) e += (a[k2] - b[k2]) * (a[k2] - b[k2]), r += b[k2] * b[k2];
    return sqrt(e / r);
}

/* Runs the emulator with nc; fills out[S1*D]. */
static void emulate(const fr_numerics *nc, double *out, double *m, double *l) {
    int64_t shq[4] = {1, 1, S1, D}, shk[4] = {1, 1, S2, D}, shs[4] = {1, 1, S1, 8};
    float o[S1 * D], mm[S1 * 8], ll[S1 * 8];
    fr_fwd_inputs in;
    memset(&in, 0, sizeof in);
    in.query = fr_tensor_make(FR_BF16, qb, 4, shq);
    in.key = fr_tensor_make(FR_BF16, kb, 4, shk);
    in.value = fr_tensor_make(FR_BF16, vb, 4, shk);
    fr_fwd_outputs fo = {fr_tensor_make(FR_F32, o, 4, shq), fr_tensor_make(FR_F32, mm, 4, shs),
                         fr_tensor_make(FR_F32, ll, 4, shs)};
    fr_params p = fr_params_default();
    p.head_num = 1;
    p.input_layout = FR_BNSD;
    p.scale_value = 0.25;
    fr_error err;
    CHECK(fr_emulate_fwd_ex(&p, &in, &fo, nc, NULL, 1, &err) == FR_OK, "%s: %s", nc->name, err.msg);
    for (int e = 0; e < S1 * D; e++) out[e] = o[e];
    for (int i = 0; i < S1; i++) m[i] = mm[i * 8], l[i] = ll[i * 8];
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 4242;
    printf("test_emulate_knobs seed=%llu\n", (unsigned long long)seed);
    rs = seed;
    /* peaked rows: row i's strongest key sits in a late tile, so a lazy max goes stale */
    for (int e = 0; e < S2 * D; e++) {
        kb[e] = fr_f32_to_bf16((float)(2 * urand() - 1), FR_ROUND_NEAREST_EVEN, FR_SAT);
        vb[e] = fr_f32_to_bf16((float)(2 * urand() - 1), FR_ROUND_NEAREST_EVEN, FR_SAT);
        k[e] = fr_bf16_to_f32(kb[e]), v[e] = fr_bf16_to_f32(vb[e]);
    }
    for (int i = 0; i < S1; i++)
        for (int d = 0; d < D; d++) {
            int jdom = S2 - 1 - 7 * i;
            double x = 0.5 * (2 * urand() - 1) + 4.0 * k[jdom * D + d];
            qb[i * D + d] = fr_f32_to_bf16((float)x, FR_ROUND_NEAREST_EVEN, FR_SAT);
            q[i * D + d] = fr_bf16_to_f32(qb[i * D + d]);
        }
    int64_t perm[3] = {2, 0, 1};
    fr_numerics base = fr_numerics_ideal(FR_BF16);
    fr_numerics cfg[9];
    const char *names[9] = {"baseline exact/e/bf16/128", "lazy 8 base 2 reverse", "lazy 8 rowsum rounded",
                            "P fp16",                    "P e4m3fn",             "kv tile 64",
                            "tile permutation",          "fp16 l",               "fp16 O and l"};
    for (int c = 0; c < 9; c++) cfg[c] = base;
    cfg[1].rescale_threshold = 8, cfg[1].exp_base = FR_EMU_EXP_2, cfg[1].order = FR_EMU_ORDER_REVERSE;
    cfg[2] = cfg[1], cfg[2].rowsum = FR_EMU_ROWSUM_ROUNDED;
    cfg[3].p_dtype = FR_F16;
    cfg[4].p_dtype = FR_E4M3FN;
    cfg[5].kv_tile = 64;
    cfg[6].order = FR_EMU_ORDER_PERM, cfg[6].perm = perm, cfg[6].perm_len = 3, cfg[6].rescale_threshold = 8,
    cfg[6].exp_base = FR_EMU_EXP_2;
    cfg[7].acc_l = FR_F16;
    cfg[8].acc_l = FR_F16, cfg[8].acc_o = FR_F16;
    static double eo[9][S1 * D];
    for (int c = 0; c < 9; c++) {
        double mo[S1 * D], mm[S1], ml[S1], em[S1], el[S1];
        for (int i = 0; i < S1; i++) model(&cfg[c], i, mo + i * D, &mm[i], &ml[i]);
        emulate(&cfg[c], eo[c], em, el);
        double e = rel_l2(eo[c], mo, S1 * D), es = rel_l2(el, ml, S1), emax = rel_l2(em, mm, S1);
        double dk = c ? rel_l2(eo[c], eo[0], S1 * D) : 0;
        printf("%-28s emulator vs model: out %.2e  l %.2e  m %.2e | vs baseline %.2e\n", names[c], e, es, emax, dk);
        CHECK(e < 2e-5 && es < 2e-5 && emax < 2e-5, "%s: emulator and the model disagree", names[c]);
        /* every knob moves the output measurably (the kv tile too: P is rounded relative to the running max,
         * which the tile boundaries decide) */
        CHECK(c == 0 || dk > 1e-4, "%s: no effect on the output (%.2e)", names[c], dk);
    }
    return fr_test_exit("test_emulate_knobs");
}
