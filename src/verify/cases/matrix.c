/* The option matrix (matrix.h): the axis table, the classifier, the draw, pairwise coverage and greedy batches. The
 * draw knows how to realize each value as casegen spec fields; which combinations exist is left to the validator
 * (fr_gen_check): a draw that it rejects, or that does not classify as wanted, is simply drawn again. */
#include "verify/cases/matrix.h"

#include "core/core.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const fr_axis kAxes[FR_AX_COUNT] = {
    {"direction", 2, {"fwd", "bwd"}},
    {"layout", 5, {"BSH", "SBH", "BSND", "BNSD", "TND"}},
    {"dtype", 6, {"fp32", "fp16", "bf16", "e4m3fn", "e5m2", "hif8"}},
    {"heads", 3, {"mha", "gqa", "mqa"}},
    {"head_dim", 4, {"dv=dk", "dv<dk", "dk%16!=0", "rope"}},
    {"sparse_mode", 10, {"no mask", "0", "1", "2", "3", "4", "5", "6", "7", "8"}},
    {"mask_shape", 6, {"none", "SS", "11SS", "B1SS", "BNSS", "compressed"}},
    {"band", 3, {"unused", "set", "negative"}},
    {"pse_type", 5, {"none", "0", "1", "2", "3"}},
    {"pse_shape", 8, {"none", "BNSS", "BN1S", "1NSS", "comp B", "comp 1", "slopes BN", "slopes N"}},
    {"dropout", 2, {"off", "on"}},
    {"sink", 2, {"off", "on"}},
    {"topk", 3, {"off", "B,S1,W", "B,N2,S1,W"}},
    {"varlen", 4, {"not TND", "uniform", "ragged", "empty seq"}},
    {"softmax_layout", 2, {"default", "same_as_input"}},
    {"out_dtype", 3, {"unset", "fp16", "bf16"}},
    {"queries", 3, {"S1<=1", "S1<256", "S1>=256"}},
    {"keys", 3, {"S2<256", "S2<1024", "S2>=1024"}},
    {"residue", 3, {"S2%64=0", "S2%32=+-1", "other"}},
};

const fr_axis *fr_matrix_axes(void) { return kAxes; }

/* ---------------------------------------------------------------------------------------------------------------- */
/* Classification. */

static bool is_tnd(const fr_gen_spec *s) { return s->layout == FR_TND; }
static bool compressed_mode(int m) { return m == 2 || m == 3 || m == 4 || m == 6 || m == 7 || m == 8; }

static void longest(const fr_gen_spec *s, int64_t *s1, int64_t *s2) {
    if (!is_tnd(s)) {
        *s1 = s->S1, *s2 = s->S2;
        return;
    }
    *s1 = *s2 = 0;
    for (int64_t b = 0; b < s->B && b < FR_GEN_MAX_BATCH; b++) {
        if (s->seq_q[b] > *s1) *s1 = s->seq_q[b];
        if (s->seq_kv[b] > *s2) *s2 = s->seq_kv[b];
    }
}

static bool pm1(int64_t s) { return s % 32 == 1 || s % 32 == 31; }

void fr_matrix_classify(const fr_gen_spec *s, int cell[FR_AX_COUNT]) {
    fr_layout l = s->layout ? s->layout : FR_BNSD;
    fr_dtype dt = s->dtype ? s->dtype : FR_F32;
    int64_t n2 = s->N2 ? s->N2 : s->N1, s1, s2;
    longest(s, &s1, &s2);
    cell[FR_AX_DIR] = s->bwd;
    cell[FR_AX_LAYOUT] = (int)l - (int)FR_BSH;
    static const fr_dtype kDt[6] = {FR_F32, FR_F16, FR_BF16, FR_E4M3FN, FR_E5M2, FR_HIF8};
    cell[FR_AX_DTYPE] = 0;
    for (int k = 0; k < 6; k++)
        if (kDt[k] == dt) cell[FR_AX_DTYPE] = k;
    cell[FR_AX_HEADS] = n2 == s->N1 ? 0 : n2 == 1 ? 2 : 1;
    cell[FR_AX_HEADDIM] = s->Drope > 0 ? 3 : s->D % 16 ? 2 : (s->Dv && s->Dv < s->D) ? 1 : 0;
    bool mask = s->mask != FR_GEN_MASK_NONE;
    cell[FR_AX_SPARSE] = mask ? 1 + s->sparse_mode : 0;
    int ms = 0;
    switch (s->mask) {
    case FR_GEN_MASK_NONE: ms = 0; break;
    case FR_GEN_MASK_CANONICAL: ms = compressed_mode(s->sparse_mode) ? 5 : 1; break;
    case FR_GEN_MASK_SS: ms = 1; break;
    case FR_GEN_MASK_11SS: ms = 2; break;
    case FR_GEN_MASK_B1SS: ms = 3; break;
    case FR_GEN_MASK_BNSS: ms = 4; break;
    }
    cell[FR_AX_MASK] = ms;
    int m = s->sparse_mode;
    bool band_used = mask && s->set_band && (m == 0 || m == 4 || m == 7 || m == 8);
    cell[FR_AX_BAND] = !band_used ? 0 : (s->pre_tokens < 0 || s->next_tokens < 0) ? 2 : 1;
    cell[FR_AX_PSE] = s->pse == FR_GEN_PSE_NONE ? 0 : 1 + s->pse_type;
    cell[FR_AX_PSE_SHAPE] = (int)s->pse;
    cell[FR_AX_DROPOUT] = s->keep_prob > 0 && s->keep_prob < 1;
    cell[FR_AX_SINK] = s->sink;
    cell[FR_AX_TOPK] = s->topk_w > 0 ? (s->topk_per_kv_head ? 2 : 1) : 0;
    int vl = 0;
    if (is_tnd(s)) {
        bool empty = false, uniform = true;
        for (int64_t b = 0; b < s->B && b < FR_GEN_MAX_BATCH; b++) {
            empty |= s->seq_q[b] == 0;
            uniform &= s->seq_q[b] == s->seq_q[0] && s->seq_kv[b] == s->seq_kv[0];
        }
        vl = empty ? 3 : uniform ? 1 : 2;
    }
    cell[FR_AX_VARLEN] = vl;
    cell[FR_AX_SOFTMAX] = s->softmax_layout == FR_SOFTMAX_SAME_AS_INPUT;
    cell[FR_AX_OUT] = s->out_dtype == FR_F16 ? 1 : s->out_dtype == FR_BF16 ? 2 : 0;
    cell[FR_AX_QUERIES] = s1 <= 1 ? 0 : s1 < 256 ? 1 : 2;
    cell[FR_AX_KEYS] = s2 < 256 ? 0 : s2 < 1024 ? 1 : 2;
    int rs;
    if (is_tnd(s)) {
        bool any_pm1 = false, aligned = true;
        for (int64_t b = 0; b < s->B && b < FR_GEN_MAX_BATCH; b++) {
            any_pm1 |= pm1(s->seq_kv[b]);
            aligned &= s->seq_kv[b] % 64 == 0;
        }
        rs = any_pm1 ? 1 : aligned ? 0 : 2;
    } else {
        rs = pm1(s->S2) ? 1 : s->S2 % 64 == 0 ? 0 : 2;
    }
    cell[FR_AX_RESIDUE] = rs;
}

static int put(char *buf, size_t n, int k, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int put(char *buf, size_t n, int k, const char *fmt, ...) {
    if (k < 0 || (size_t)k >= n) return k;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + k, n - (size_t)k, fmt, ap);
    va_end(ap);
    return w < 0 ? k : k + w;
}

void fr_matrix_describe(const fr_gen_spec *s, char *buf, size_t n) {
    int c[FR_AX_COUNT];
    fr_matrix_classify(s, c);
    int k = 0;
    k = put(buf, n, k, "%s %s %s N1 %lld N2 %lld D %lld", s->bwd ? "bwd" : "fwd",
            kAxes[FR_AX_DTYPE].values[c[FR_AX_DTYPE]], kAxes[FR_AX_LAYOUT].values[c[FR_AX_LAYOUT]], (long long)s->N1,
            (long long)(s->N2 ? s->N2 : s->N1), (long long)s->D);
    if (s->Dv) k = put(buf, n, k, " Dv %lld", (long long)s->Dv);
    if (s->Drope) k = put(buf, n, k, " Drope %lld", (long long)s->Drope);
    if (is_tnd(s)) {
        k = put(buf, n, k, " seq_q [");
        for (int64_t b = 0; b < s->B && b < FR_GEN_MAX_BATCH; b++)
            k = put(buf, n, k, b ? ",%lld" : "%lld", (long long)s->seq_q[b]);
        k = put(buf, n, k, "] seq_kv [");
        for (int64_t b = 0; b < s->B && b < FR_GEN_MAX_BATCH; b++)
            k = put(buf, n, k, b ? ",%lld" : "%lld", (long long)s->seq_kv[b]);
        k = put(buf, n, k, "]");
    } else {
        k = put(buf, n, k, " B %lld S1 %lld S2 %lld", (long long)s->B, (long long)s->S1, (long long)s->S2);
    }
    if (s->mask != FR_GEN_MASK_NONE)
        k = put(buf, n, k, " sparse_mode %d mask %s", s->sparse_mode, kAxes[FR_AX_MASK].values[c[FR_AX_MASK]]);
    if (s->set_band) k = put(buf, n, k, " pre %lld next %lld", (long long)s->pre_tokens, (long long)s->next_tokens);
    if (s->prefix) k = put(buf, n, k, " prefix");
    if (s->pse != FR_GEN_PSE_NONE)
        k = put(buf, n, k, " pse_type %d pse %s", s->pse_type, kAxes[FR_AX_PSE_SHAPE].values[s->pse]);
    if (s->q_start_idx || s->kv_start_idx)
        k = put(buf, n, k, " q_start %lld kv_start %lld", (long long)s->q_start_idx, (long long)s->kv_start_idx);
    if (c[FR_AX_DROPOUT]) k = put(buf, n, k, " keep_prob %g", s->keep_prob);
    if (s->sink) k = put(buf, n, k, " sink");
    if (s->topk_w)
        k = put(buf, n, k, " topk W %lld%s", (long long)s->topk_w, s->topk_per_kv_head ? " per kv head" : "");
    if (s->softmax_layout) k = put(buf, n, k, " softmax same_as_input");
    if (s->out_dtype) k = put(buf, n, k, " out %s", fr_dtype_name(s->out_dtype));
    if (s->beta != 0) k = put(buf, n, k, " beta %g", s->beta);
    (void)k;
}

void fr_draw_copy(fr_draw *dst, const fr_draw *src) {
    *dst = *src;
    dst->spec.name = dst->name;
}

fr_draw_limits fr_draw_limits_default(void) {
    fr_draw_limits l = {8192, 2048, INT64_C(1) << 22};
    return l;
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Drawing. splitmix64: a draw is a pure function of the generator state. */

static uint64_t nx(uint64_t *s) {
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}
static double u01(uint64_t *s) { return (double)(nx(s) >> 11) * 0x1p-53; }
static int64_t irange(uint64_t *s, int64_t lo, int64_t hi) { /* inclusive */
    return hi <= lo ? lo : lo + (int64_t)(u01(s) * (double)(hi - lo + 1));
}
static int64_t logu(uint64_t *s, int64_t lo, int64_t hi) { /* log-uniform in [lo, hi], lo >= 1 */
    if (hi <= lo) return lo;
    int64_t v = (int64_t)floor(exp(log((double)lo) + u01(s) * (log((double)hi + 1) - log((double)lo))));
    return v < lo ? lo : v > hi ? hi : v;
}
/* The wanted value, else the axis's first (plainest) value with probability p0, else any. */
static int pick(const int *want, int a, uint64_t *s, double p0) {
    if (want[a] >= 0) return want[a];
    return u01(s) < p0 ? 0 : (int)irange(s, 0, kAxes[a].n - 1);
}

/* A key length of class kc (0 short, 1 mid, 2 long) and residue class rc (0 aligned, 1 +-1, 2 other). */
static int64_t draw_len(uint64_t *s, int kc, int rc, int64_t max_s2) {
    int64_t lo = kc == 0 ? 1 : kc == 1 ? 256 : 1024, hi = kc == 0 ? 255 : kc == 1 ? 1023 : max_s2;
    if (hi < lo) hi = lo;
    for (int t = 0; t < 16; t++) {
        int64_t v = logu(s, lo, hi);
        if (rc == 0) {
            v = (v + 32) / 64 * 64;
        } else if (rc == 1) {
            static const int64_t kTiles[4] = {32, 64, 128, 256};
            int64_t base = kTiles[irange(s, 0, 3)], m = (v + base / 2) / base;
            if (m < 1) m = 1;
            v = m * base + (u01(s) < 0.5 ? -1 : 1);
        } else {
            while (v % 32 <= 1 || v % 32 == 31)
                v++;
        }
        if (v >= lo && v <= hi) return v;
    }
    return lo;
}

static int64_t draw_q(uint64_t *s, int qc, int64_t max_s1) {
    if (qc == 0) return u01(s) < 0.1 ? 0 : 1;
    if (qc == 1) return logu(s, 2, 255);
    return logu(s, 256, max_s1 > 256 ? max_s1 : 256);
}

static const fr_dtype kDtypes[6] = {FR_F32, FR_F16, FR_BF16, FR_E4M3FN, FR_E5M2, FR_HIF8};

void fr_matrix_draw(const int want[FR_AX_COUNT], uint64_t *rng, const fr_draw_limits *lim_in, fr_draw *out) {
    fr_draw_limits lim = lim_in ? *lim_in : fr_draw_limits_default();
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "draw");
    fr_gen_spec *s = &out->spec;
    s->name = out->name;

    /* What the wanted values imply for the layout and the dtype. */
    int w_var = want[FR_AX_VARLEN], w_sp = want[FR_AX_SPARSE];
    bool need_tnd = w_var > 0 || want[FR_AX_SOFTMAX] == 1 || w_sp == 8 || w_sp == 9;
    bool no_tnd = w_var == 0 || w_sp == 6;
    bool no_fp8 = want[FR_AX_DIR] == 1 || (w_sp > 0) || (want[FR_AX_MASK] > 0) || want[FR_AX_PSE] > 0 ||
                  want[FR_AX_PSE_SHAPE] > 0 || want[FR_AX_DROPOUT] == 1 || want[FR_AX_HEADDIM] == 3;

    int dt = want[FR_AX_DTYPE];
    if (dt < 0) dt = no_fp8 || u01(rng) < 0.8 ? (int)irange(rng, 0, 2) : (int)irange(rng, 3, 5);
    s->dtype = kDtypes[dt];
    bool fp8 = dt >= 3;
    int dir = want[FR_AX_DIR] >= 0 ? want[FR_AX_DIR] : (!fp8 && u01(rng) < 0.35);
    s->bwd = dir == 1;
    int lay = want[FR_AX_LAYOUT];
    if (lay < 0) lay = need_tnd ? 4 : no_tnd ? (int)irange(rng, 0, 3) : (int)irange(rng, 0, 4);
    s->layout = (fr_layout)(FR_BSH + lay);
    bool tnd = s->layout == FR_TND;

    switch (pick(want, FR_AX_HEADS, rng, 0.4)) {
    case 0: s->N1 = irange(rng, 1, 4), s->N2 = s->N1; break;
    case 1: s->N2 = irange(rng, 2, 3), s->N1 = s->N2 * irange(rng, 2, 3); break;
    default: s->N2 = 1, s->N1 = irange(rng, 2, 6); break;
    }
    switch (pick(want, FR_AX_HEADDIM, rng, 0.4)) {
    case 0: {
        static const int64_t kD[5] = {16, 32, 64, 128, 256};
        s->D = kD[irange(rng, 0, fp8 ? 3 : 4)];
        break;
    }
    case 1: {
        static const int64_t kD[4] = {32, 64, 128, 192};
        s->D = kD[irange(rng, 0, fp8 ? 2 : 3)];
        s->Dv = s->D - 16 * irange(rng, 1, s->D / 16 - 1);
        break;
    }
    case 2: {
        static const int64_t kD[8] = {1, 3, 8, 24, 40, 59, 72, 100};
        s->D = kD[irange(rng, 0, 7)];
        if (u01(rng) < 0.4) s->Dv = irange(rng, 1, s->D);
        break;
    }
    default:
        s->D = u01(rng) < 0.5 ? 64 : 128;
        s->Drope = 16 << irange(rng, 0, 2);
        break;
    }

    /* pse: the shape decides the type's family (tensor 0/1, slopes 2/3). */
    int ps = want[FR_AX_PSE_SHAPE], pt = want[FR_AX_PSE];
    if (ps < 0) {
        if (pt == 0 || (pt < 0 && (fp8 || u01(rng) < 0.5)))
            ps = 0;
        else if (pt == 3 || pt == 4)
            ps = (int)irange(rng, 6, 7);
        else if (tnd)
            ps = (int)irange(rng, 4, 5);
        else
            ps = pt > 0 ? (int)irange(rng, 1, 5) : (int)irange(rng, 1, 7);
    }
    s->pse = (fr_gen_pse)ps;
    if (ps != 0) {
        if (pt > 0)
            s->pse_type = pt - 1;
        else
            s->pse_type = ps >= 6 ? (int)irange(rng, 2, 3) : (int)irange(rng, 0, 1);
        if (s->pse_type >= 2 && u01(rng) < 0.5) s->q_start_idx = irange(rng, 0, 5), s->kv_start_idx = irange(rng, 0, 5);
    }
    bool comp = ps == 4 || ps == 5;
    bool eq_len = ps >= 6 || (ps != 0 && tnd) || comp;

    /* sparse mode and mask shape */
    int sp = w_sp, mk = want[FR_AX_MASK];
    if (sp < 0) {
        if (fp8)
            sp = 0;
        else if (comp) /* a causal pattern: modes 2, 3, or mode 0 with next <= 0 */
            sp = want[FR_AX_BAND] > 0 || (mk >= 1 && mk <= 4) ? 1 : tnd && u01(rng) < 0.3 ? 9 : (int)irange(rng, 3, 4);
        else if (mk == 0)
            sp = 0;
        else if (mk == 5) {
            static const int kC[4] = {3, 4, 5, 7};
            sp = tnd && u01(rng) < 0.4 ? (int)irange(rng, 8, 9) : kC[irange(rng, 0, 3)];
        } else if (mk > 0)
            sp = mk >= 3 && !tnd && u01(rng) < 0.3 ? 6 : (int)irange(rng, 1, 2);
        else if (u01(rng) < 0.35)
            sp = 0;
        else
            sp = tnd ? (int)irange(rng, 1, 9) : (int)irange(rng, 1, 7);
    }
    if (sp > 0) {
        s->sparse_mode = sp - 1;
        int m = s->sparse_mode;
        if (m == 0 || m == 1) {
            if (mk < 1 || mk > 4) mk = tnd ? (int)irange(rng, 1, 2) : (int)irange(rng, 1, 4);
        } else if (m == 5) {
            if (mk < 1 || mk > 4) mk = (int)irange(rng, 3, 4);
        }
        static const fr_gen_mask kM[5] = {FR_GEN_MASK_NONE, FR_GEN_MASK_SS, FR_GEN_MASK_11SS, FR_GEN_MASK_B1SS,
                                          FR_GEN_MASK_BNSS};
        s->mask = compressed_mode(m) ? FR_GEN_MASK_CANONICAL : kM[mk];
        if (m == 5) s->prefix = u01(rng) < 0.7;
        if (m == 6) s->prefix = true;
    }
    if (pick(want, FR_AX_DROPOUT, rng, fp8 ? 1.0 : 0.6)) s->keep_prob = u01(rng) < 0.5 ? 0.8 : 0.5;
    s->sink = pick(want, FR_AX_SINK, rng, 0.6) == 1;
    int tk = pick(want, FR_AX_TOPK, rng, 0.7);
    s->topk_per_kv_head = tk == 2;
    if (tnd)
        s->softmax_layout = pick(want, FR_AX_SOFTMAX, rng, 0.6) ? FR_SOFTMAX_SAME_AS_INPUT : FR_SOFTMAX_DEFAULT;
    else if (want[FR_AX_SOFTMAX] == 1)
        s->softmax_layout = FR_SOFTMAX_SAME_AS_INPUT;
    int od = want[FR_AX_OUT];
    if (od < 0) od = fp8 ? (int)irange(rng, 0, 2) : 0;
    s->out_dtype = od == 1 ? FR_F16 : od == 2 ? FR_BF16 : FR_DT_NONE;
    if (u01(rng) < 0.25) s->beta = 0.4; /* peaked rows now and then (stale running max) */

    /* sizes */
    int kc = want[FR_AX_KEYS] >= 0 ? want[FR_AX_KEYS] : (int)irange(rng, 0, 2);
    int rc = want[FR_AX_RESIDUE] >= 0 ? want[FR_AX_RESIDUE] : u01(rng) < 0.5 ? 1 : (int)irange(rng, 0, 2);
    int qc = want[FR_AX_QUERIES] >= 0 ? want[FR_AX_QUERIES] : u01(rng) < 0.15 ? 0 : u01(rng) < 0.7 ? 1 : 2;
    int64_t S2, S1;
    if (tnd && (ps == 1 || ps == 3)) { /* a full-shaped pse in TND is the compressed shape when maxS1 = 1024 */
        S1 = S2 = 1024;
    } else if (comp && !tnd) { /* compressed: S1 == S2 > 1024 */
        S2 = draw_len(rng, 2, rc, lim.max_s2 < 2100 ? lim.max_s2 : 2100);
        if (S2 <= 1024) S2 = 1025;
        S1 = S2;
    } else {
        S2 = draw_len(rng, kc, rc, lim.max_s2);
        if (eq_len && S2 * S2 > lim.max_work) S2 = draw_len(rng, kc, rc, (int64_t)sqrt((double)lim.max_work));
        S1 = eq_len ? S2 : draw_q(rng, qc, lim.max_s1);
        int64_t qmin = qc == 2 ? 256 : qc == 1 ? 2 : 1;
        if (!eq_len && S2 > 0 && S1 * S2 > lim.max_work) S1 = lim.max_work / S2 > qmin ? lim.max_work / S2 : qmin;
    }
    int64_t B = u01(rng) < 0.5 ? 1 : irange(rng, 2, 3), work;
    if (tnd) {
        int vl = w_var > 0 ? w_var : (int)irange(rng, 1, 3);
        B = irange(rng, 2, 4);
        int64_t big = irange(rng, 0, B - 1), empty = vl == 3 ? irange(rng, 0, B - 2) : -1;
        if (empty == big) big = B - 1;
        for (int64_t b = 0; b < B; b++) {
            int64_t q = S1, kv = S2;
            if (vl >= 2 && b != big) { /* shorter sequences of the same residue class */
                kv = draw_len(rng, (int)irange(rng, 0, kc), rc, S2 > 1 ? S2 : 1);
                if (kv > S2) kv = S2;
                q = eq_len ? kv : (S1 > 0 ? logu(rng, 1, S1) : 0);
            }
            if (b == empty) q = 0, kv = u01(rng) < 0.5 ? 0 : draw_len(rng, 0, rc, S2 > 1 ? S2 : 1);
            s->seq_q[b] = q;
            s->seq_kv[b] = kv;
        }
        if (vl == 2 && B >= 2 && s->seq_q[0] == s->seq_q[1] && s->seq_kv[0] == s->seq_kv[1] && S2 > 1)
            s->seq_kv[big == 0 ? 1 : 0] = S2 - 1, s->seq_q[big == 0 ? 1 : 0] = eq_len ? S2 - 1 : s->seq_q[0];
        work = 0;
        for (int64_t b = 0; b < B; b++)
            work += s->seq_q[b] * s->seq_kv[b];
    } else {
        s->S1 = S1;
        s->S2 = S2;
        work = B * S1 * S2;
    }
    /* keep the golden's work bounded: fewer batches, then fewer heads */
    while (!tnd && B > 1 && s->N1 * work > lim.max_work)
        B--, work = B * S1 * S2;
    while (s->N1 > s->N2 && s->N1 * work > lim.max_work && s->N1 / s->N2 > 2)
        s->N1 -= s->N2;
    if (s->N1 == s->N2)
        while (s->N1 > 1 && s->N1 * work > lim.max_work)
            s->N1--, s->N2 = s->N1;
    s->B = B;
    if (tk) s->topk_w = logu(rng, 1, S2 + 4 < 512 ? S2 + 4 : 512);

    /* band (after the sizes: its rules are about them) */
    int bd = pick(want, FR_AX_BAND, rng, 0.4);
    int m = s->sparse_mode;
    if (comp && m == 0 && bd == 0 && want[FR_AX_BAND] < 0) bd = 1;
    if (s->mask != FR_GEN_MASK_NONE && (m == 0 || m == 4) && bd > 0) {
        s->set_band = true;
        int64_t span = S1 + S2 > 1 ? S1 + S2 : 2;
        if (comp) { /* causal: next <= 0 */
            s->next_tokens = bd == 2 && S2 > 1 ? -irange(rng, 1, S2 - 1 < 64 ? S2 - 1 : 64) : 0;
            s->pre_tokens = -s->next_tokens + logu(rng, 1, span);
        } else if (m == 4) { /* bottom-right: pre reaches back from key S2 - S1 (validation: pre' = pre + S1 - S2) */
            int64_t r = bd == 2 && S2 > 1 ? irange(rng, 1, S2 - 1 < 64 ? S2 - 1 : 64) : 0;
            int64_t back = u01(rng) < 0.5 ? (S2 > S1 ? S2 - S1 : 0) : 0;
            s->next_tokens = bd == 2 ? -r : logu(rng, 1, span) - 1;
            s->pre_tokens = (r > back ? r : back) + logu(rng, 1, span);
        } else if (bd == 1) {
            s->pre_tokens = logu(rng, 1, span) - 1;
            s->next_tokens = logu(rng, 1, span) - 1;
        } else if (u01(rng) < 0.5 && S2 > 1) {
            int64_t r = irange(rng, 1, S2 - 1);
            s->next_tokens = -r;
            s->pre_tokens = r + logu(rng, 1, span);
        } else {
            int64_t r = irange(rng, 1, S1 > 1 ? S1 - 1 : 1);
            s->pre_tokens = -r;
            s->next_tokens = r + logu(rng, 1, span);
        }
    } else if (s->mask != FR_GEN_MASK_NONE && (m == 7 || m == 8) && tnd) {
        /* mode 7 looks at the last batch with queries, mode 8 at the first */
        int64_t bq = -1;
        for (int64_t b = 0; b < B; b++)
            if (s->seq_q[b] > 0 && (m == 7 || bq < 0)) bq = b;
        int64_t q = bq >= 0 ? s->seq_q[bq] : 0, kv = bq >= 0 ? s->seq_kv[bq] : 0;
        if (comp && m == 8) bd = bd ? bd : 1; /* causal: next = 0 (S1_b = S2_b) */
        if (m == 7 || bd > 0) {
            s->set_band = true;
            s->pre_tokens = S2 + irange(rng, 0, 64);
            if (m == 7)
                s->next_tokens = bd == 2 && kv > q ? -irange(rng, 1, kv - q) : 0;
            else if (comp)
                s->next_tokens = 0;
            else
                s->next_tokens =
                    bd == 2 && kv > q ? irange(rng, q - kv, -1) : (q - kv > 0 ? q - kv : 0) + irange(rng, 0, 64);
        }
    }
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Coverage. Pairs (a, va, b, vb), a < b, numbered axis pair by axis pair. */

static int pair_base(int a, int b) {
    int base = 0;
    for (int x = 0; x < FR_AX_COUNT; x++)
        for (int y = x + 1; y < FR_AX_COUNT; y++) {
            if (x == a && y == b) return base;
            base += kAxes[x].n * kAxes[y].n;
        }
    return base;
}

int fr_coverage_npairs(void) { return pair_base(FR_AX_COUNT, FR_AX_COUNT); }

int fr_coverage_index(int a, int va, int b, int vb) {
    if (a > b) {
        int t = a;
        a = b, b = t, t = va, va = vb, vb = t;
    }
    return pair_base(a, b) + va * kAxes[b].n + vb;
}

void fr_coverage_pair(int idx, int *a, int *va, int *b, int *vb) {
    int base = 0;
    for (int x = 0; x < FR_AX_COUNT; x++)
        for (int y = x + 1; y < FR_AX_COUNT; y++) {
            int n = kAxes[x].n * kAxes[y].n;
            if (idx < base + n) {
                *a = x, *b = y, *va = (idx - base) / kAxes[y].n, *vb = (idx - base) % kAxes[y].n;
                return;
            }
            base += n;
        }
    *a = *b = *va = *vb = -1;
}

/* Every pair of a cell, in index order (out: FR_AX_COUNT * (FR_AX_COUNT - 1) / 2 indices). */
static int cell_pairs(const int *cell, int *out) {
    int k = 0, base = 0;
    for (int x = 0; x < FR_AX_COUNT; x++)
        for (int y = x + 1; y < FR_AX_COUNT; y++) {
            out[k++] = base + cell[x] * kAxes[y].n + cell[y];
            base += kAxes[x].n * kAxes[y].n;
        }
    return k;
}

#define NPAIRS_CELL (FR_AX_COUNT * (FR_AX_COUNT - 1) / 2)

fr_status fr_coverage_init(fr_coverage *cv, fr_error *err) {
    cv->npairs = fr_coverage_npairs();
    cv->hits = calloc((size_t)cv->npairs, sizeof *cv->hits);
    if (!cv->hits) return fr_fail(err, FR_E_NOMEM, "coverage: out of memory");
    return FR_OK;
}

void fr_coverage_free(fr_coverage *cv) {
    if (!cv) return;
    free(cv->hits);
    memset(cv, 0, sizeof *cv);
}

void fr_coverage_add(fr_coverage *cv, const int cell[FR_AX_COUNT]) {
    int p[NPAIRS_CELL], n = cell_pairs(cell, p);
    for (int k = 0; k < n; k++)
        cv->hits[p[k]]++;
}

int fr_coverage_gain(const fr_coverage *cv, const uint8_t *allowed, const int cell[FR_AX_COUNT]) {
    int p[NPAIRS_CELL], n = cell_pairs(cell, p), g = 0;
    for (int k = 0; k < n; k++)
        g += !cv->hits[p[k]] && (!allowed || allowed[p[k]]);
    return g;
}

/* A validated draw with the wanted values (FR_OK), within `tries` attempts. */
static bool draw_valid(const int *want, uint64_t *rng, const fr_draw_limits *lim, int tries, fr_draw *d, int *cell) {
    for (int t = 0; t < tries; t++) {
        fr_matrix_draw(want, rng, lim, d);
        fr_matrix_classify(&d->spec, cell);
        bool ok = true;
        for (int a = 0; a < FR_AX_COUNT && ok; a++)
            ok = want[a] < 0 || want[a] == cell[a];
        if (!ok) continue;
        fr_error e;
        if (fr_gen_check(&d->spec, &e) == FR_OK) return true;
    }
    return false;
}

void fr_matrix_allowed(uint8_t *allowed) {
    int np = fr_coverage_npairs(), want[FR_AX_COUNT], cell[FR_AX_COUNT], p[NPAIRS_CELL];
    memset(allowed, 0, (size_t)np);
    fr_draw_limits lim = fr_draw_limits_default();
    fr_draw d;
    uint64_t rng = UINT64_C(0x5eed0a11);
    for (int a = 0; a < FR_AX_COUNT; a++)
        want[a] = -1;
    /* free draws first: each marks all its pairs; then pinned draws for the pairs still unseen */
    for (int t = 0; t < 2000; t++)
        if (draw_valid(want, &rng, &lim, 1, &d, cell))
            for (int k = 0, n = cell_pairs(cell, p); k < n; k++)
                allowed[p[k]] = 1;
    for (int idx = 0; idx < np; idx++) {
        if (allowed[idx]) continue;
        int a, va, b, vb;
        fr_coverage_pair(idx, &a, &va, &b, &vb);
        want[a] = va, want[b] = vb;
        if (draw_valid(want, &rng, &lim, FR_MATRIX_TRIES, &d, cell))
            for (int k = 0, n = cell_pairs(cell, p); k < n; k++)
                allowed[p[k]] = 1;
        want[a] = want[b] = -1;
    }
}

fr_status fr_random_batch(uint64_t seed, int n, fr_coverage *cv, const fr_draw_limits *lim, fr_draw *out,
                          fr_error *err) {
    int np = fr_coverage_npairs();
    uint8_t *allowed = malloc((size_t)np);
    if (!allowed) return fr_fail(err, FR_E_NOMEM, "random: out of memory");
    fr_matrix_allowed(allowed);
    enum { CANDIDATES = 12 };
    for (int k = 0; k < n; k++) {
        uint64_t rng = seed ^ (UINT64_C(0x9e3779b97f4a7c15) * (uint64_t)(k + 1));
        int best_gain = -1, want[FR_AX_COUNT], cell[FR_AX_COUNT];
        fr_draw cand, best;
        memset(&best, 0, sizeof best);
        for (int c = 0; c < CANDIDATES; c++) {
            for (int a = 0; a < FR_AX_COUNT; a++)
                want[a] = -1;
            if (c < CANDIDATES - 2) { /* pin a random uncovered allowed pair */
                int start = (int)irange(&rng, 0, np - 1);
                for (int i = 0; i < np; i++) {
                    int idx = (start + i) % np;
                    if (allowed[idx] && !cv->hits[idx]) {
                        int a, va, b, vb;
                        fr_coverage_pair(idx, &a, &va, &b, &vb);
                        want[a] = va, want[b] = vb;
                        break;
                    }
                }
            }
            if (!draw_valid(want, &rng, lim, 8, &cand, cell)) continue;
            int g = fr_coverage_gain(cv, allowed, cell);
            if (g > best_gain) best_gain = g, fr_draw_copy(&best, &cand);
        }
        if (best_gain < 0) { /* nothing valid among the candidates: any valid draw */
            for (int a = 0; a < FR_AX_COUNT; a++)
                want[a] = -1;
            if (!draw_valid(want, &rng, lim, 1000, &best, cell)) {
                free(allowed);
                return fr_fail(err, FR_E_INTERNAL, "random: no valid draw found (draw %d)", k);
            }
        }
        snprintf(best.name, sizeof best.name, "rnd_%d", k);
        fr_draw_copy(&out[k], &best);
        fr_matrix_classify(&out[k].spec, cell);
        fr_coverage_add(cv, cell);
    }
    free(allowed);
    return FR_OK;
}
