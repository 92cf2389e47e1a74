/* The option matrix (matrix.h): the axis table, the classifier, the draw, pairwise coverage and greedy batches. The
 * draw knows how to realize each value as casegen spec fields; which combinations exist is left to the validator
 * (fr_gen_check): a draw that it rejects, or that does not classify as wanted, is simply drawn again. */
#include "verify/cases/matrix.h"

#include "core/core.h"
#include "core/validate.h"

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

/* The dtypes of the dtype axis, in its order (FR_AXV_DTYPE_*): the draw and the classifier read the same table. */
static const fr_dtype kDtypes[6] = {FR_F32, FR_F16, FR_BF16, FR_E4M3FN, FR_E5M2, FR_HIF8};

/* ---------------------------------------------------------------------------------------------------------------- */
/* Classification. */

static bool is_tnd(const fr_gen_spec *s) { return s->layout == FR_TND; }
/* The sparse_mode axis value of mode FR_SPARSE_<name>; ranges of modes are ranges in fr_sparse_mode's order. */
#define SPV(name) FR_AXV_SPARSE_MODE(FR_SPARSE_##name)

static bool compressed_mode(int m) { return fr_sparse_mode_is_valid(m) && !fr_sparse_mode_reads_mask(m); }

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
    cell[FR_AX_DTYPE] = FR_AXV_DTYPE_FP32;
    for (int k = 0; k < (int)(sizeof kDtypes / sizeof kDtypes[0]); k++)
        if (kDtypes[k] == dt) cell[FR_AX_DTYPE] = k;
    cell[FR_AX_HEADS] = n2 == s->N1 ? 0 : n2 == 1 ? 2 : 1;
    cell[FR_AX_HEADDIM] = s->Drope > 0 ? 3 : s->D % 16 ? 2 : (s->Dv && s->Dv < s->D) ? 1 : 0;
    bool mask = s->mask != FR_GEN_MASK_NONE;
    cell[FR_AX_SPARSE] = mask ? FR_AXV_SPARSE_MODE(s->sparse_mode) : FR_AXV_SPARSE_NO_MASK;
    int ms = FR_AXV_MASK_NONE;
    switch (s->mask) {
    case FR_GEN_MASK_NONE: ms = FR_AXV_MASK_NONE; break;
    case FR_GEN_MASK_CANONICAL: ms = compressed_mode(s->sparse_mode) ? FR_AXV_MASK_COMPRESSED : FR_AXV_MASK_SS; break;
    case FR_GEN_MASK_SS: ms = FR_AXV_MASK_SS; break;
    case FR_GEN_MASK_11SS: ms = FR_AXV_MASK_11SS; break;
    case FR_GEN_MASK_B1SS: ms = FR_AXV_MASK_B1SS; break;
    case FR_GEN_MASK_BNSS: ms = FR_AXV_MASK_BNSS; break;
    case FR_GEN_MASK_COUNT: break; /* not a shape */
    }
    cell[FR_AX_MASK] = ms;
    int m = s->sparse_mode;
    bool band_used =
        mask && s->set_band && (m == FR_SPARSE_DEFAULT_MASK || m == FR_SPARSE_BAND || fr_sparse_mode_tnd_only(m));
    cell[FR_AX_BAND] = !band_used ? 0 : (s->pre_tokens < 0 || s->next_tokens < 0) ? 2 : 1;
    cell[FR_AX_PSE] = s->pse == FR_GEN_PSE_NONE ? FR_AXV_PSE_NONE : FR_AXV_PSE_TYPE(s->pse_type);
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
    if (s->in_scale != 0 && s->in_scale != 1) k = put(buf, n, k, " in_scale %g", s->in_scale);
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

/* A draw in progress: the wanted values, the generator, the spec being filled and what the axes drawn so far decided
 * for the ones after them. The axes are drawn in a fixed order, so a draw is a pure function of want and *rng. */
typedef struct draw_ctx {
    const int *want;
    uint64_t *rng;
    fr_draw_limits lim;
    fr_gen_spec *s;
    bool fp8, tnd;
    int ps;      /* the pse_shape value */
    bool comp;   /* a compressed pse: S1 == S2 > 1024 (or TND) */
    bool eq_len; /* the pse needs S1 == S2 */
    int tk;      /* the topk value */
    int64_t S1, S2;
    int kc, rc; /* the keys and residue values */
} draw_ctx;

/* dtype, direction and layout, as far as the wanted values of the other axes allow them (fp8 is forward-only and
 * has no mask, pse or dropout; TND alone has varlen, same_as_input and modes 7 and 8; mode 5 is not drawn in TND). */
static void draw_kind(draw_ctx *x) {
    const int *want = x->want;
    uint64_t *rng = x->rng;
    fr_gen_spec *s = x->s;
    int w_var = want[FR_AX_VARLEN], w_sp = want[FR_AX_SPARSE];
    bool need_tnd = w_var > FR_AXV_VARLEN_NOT_TND || want[FR_AX_SOFTMAX] == FR_AXV_SOFTMAX_SAME_AS_INPUT ||
                    w_sp == SPV(RIGHT_DOWN_CAUSAL_BAND) || w_sp == SPV(BAND_LEFT_UP_CAUSAL);
    bool no_tnd = w_var == FR_AXV_VARLEN_NOT_TND || w_sp == SPV(PREFIX);
    bool no_fp8 = want[FR_AX_DIR] == FR_AXV_DIR_BWD || w_sp > FR_AXV_SPARSE_NO_MASK ||
                  want[FR_AX_MASK] > FR_AXV_MASK_NONE || want[FR_AX_PSE] > FR_AXV_PSE_NONE ||
                  want[FR_AX_PSE_SHAPE] > FR_GEN_PSE_NONE || want[FR_AX_DROPOUT] == 1 ||
                  want[FR_AX_HEADDIM] == FR_AXV_HEADDIM_ROPE;
    int dt = want[FR_AX_DTYPE];
    if (dt < 0)
        dt = no_fp8 || u01(rng) < 0.8 ? (int)irange(rng, FR_AXV_DTYPE_FP32, FR_AXV_DTYPE_BF16)
                                      : (int)irange(rng, FR_AXV_DTYPE_E4M3FN, FR_AXV_DTYPE_HIF8);
    s->dtype = kDtypes[dt];
    x->fp8 = dt >= FR_AXV_DTYPE_E4M3FN;
    int dir = want[FR_AX_DIR] >= 0 ? want[FR_AX_DIR] : (!x->fp8 && u01(rng) < 0.35);
    s->bwd = dir == FR_AXV_DIR_BWD;
    int lay = want[FR_AX_LAYOUT];
    if (lay < 0)
        lay = need_tnd ? FR_AXV_LAYOUT_TND
              : no_tnd ? (int)irange(rng, 0, FR_AXV_LAYOUT_TND - 1)
                       : (int)irange(rng, 0, FR_AXV_LAYOUT_TND);
    s->layout = (fr_layout)(FR_BSH + lay);
    x->tnd = s->layout == FR_TND;
}

static void draw_heads(draw_ctx *x) {
    fr_gen_spec *s = x->s;
    uint64_t *rng = x->rng;
    switch (pick(x->want, FR_AX_HEADS, rng, 0.4)) {
    case FR_AXV_HEADS_MHA: s->N1 = irange(rng, 1, 4), s->N2 = s->N1; break;
    case FR_AXV_HEADS_GQA: s->N2 = irange(rng, 2, 3), s->N1 = s->N2 * irange(rng, 2, 3); break;
    default: s->N2 = 1, s->N1 = irange(rng, 2, 6); break; /* MQA */
    }
}

/* Head dims: fp8 draws none above its limit (D <= 128, spec D9). */
static void draw_head_dim(draw_ctx *x) {
    fr_gen_spec *s = x->s;
    uint64_t *rng = x->rng;
    switch (pick(x->want, FR_AX_HEADDIM, rng, 0.4)) {
    case FR_AXV_HEADDIM_EQ: {
        static const int64_t kD[5] = {16, 32, 64, 128, 256};
        s->D = kD[irange(rng, 0, x->fp8 ? 3 : 4)];
        break;
    }
    case FR_AXV_HEADDIM_DV_LT: {
        static const int64_t kD[4] = {32, 64, 128, 192};
        s->D = kD[irange(rng, 0, x->fp8 ? 2 : 3)];
        s->Dv = s->D - 16 * irange(rng, 1, s->D / 16 - 1);
        break;
    }
    case FR_AXV_HEADDIM_ODD: {
        static const int64_t kD[8] = {1, 3, 8, 24, 40, 59, 72, 100};
        s->D = kD[irange(rng, 0, 7)];
        if (u01(rng) < 0.4) s->Dv = irange(rng, 1, s->D);
        break;
    }
    default: /* rope */
        s->D = u01(rng) < 0.5 ? 64 : 128;
        s->Drope = 16 << irange(rng, 0, 2);
        break;
    }
}

/* pse: the shape decides the type's family (a tensor for types 0/1, slopes for 2/3), and what the lengths must be. */
static void draw_pse(draw_ctx *x) {
    fr_gen_spec *s = x->s;
    uint64_t *rng = x->rng;
    int ps = x->want[FR_AX_PSE_SHAPE], pt = x->want[FR_AX_PSE];
    if (ps < 0) {
        if (pt == FR_AXV_PSE_NONE || (pt < 0 && (x->fp8 || u01(rng) < 0.5)))
            ps = FR_GEN_PSE_NONE;
        else if (pt > FR_AXV_PSE_NONE && fr_pse_type_is_slopes(pt - FR_AXV_PSE_TYPE(0)))
            ps = (int)irange(rng, FR_GEN_PSE_SLOPES_BN, FR_GEN_PSE_SLOPES_N);
        else if (x->tnd)
            ps = (int)irange(rng, FR_GEN_PSE_COMP_B, FR_GEN_PSE_COMP_1);
        else
            ps = pt > FR_AXV_PSE_NONE ? (int)irange(rng, FR_GEN_PSE_BNSS, FR_GEN_PSE_COMP_1)
                                      : (int)irange(rng, FR_GEN_PSE_BNSS, FR_GEN_PSE_SLOPES_N);
    }
    s->pse = (fr_gen_pse)ps;
    if (ps != FR_GEN_PSE_NONE) {
        if (pt > FR_AXV_PSE_NONE)
            s->pse_type = pt - FR_AXV_PSE_TYPE(0);
        else
            s->pse_type = ps >= FR_GEN_PSE_SLOPES_BN
                              ? (int)irange(rng, FR_PSE_INNER_MUL_ADD, FR_PSE_INNER_MUL_ADD_SQRT)
                              : (int)irange(rng, FR_PSE_OUTER_MUL_ADD, FR_PSE_OUTER_ADD_MUL);
        if (fr_pse_type_is_slopes(s->pse_type) && u01(rng) < 0.5)
            s->q_start_idx = irange(rng, 0, 5), s->kv_start_idx = irange(rng, 0, 5);
    }
    x->ps = ps;
    x->comp = ps == FR_GEN_PSE_COMP_B || ps == FR_GEN_PSE_COMP_1;
    x->eq_len = ps >= FR_GEN_PSE_SLOPES_BN || (ps != FR_GEN_PSE_NONE && x->tnd) || x->comp;
}

/* The sparse mode and the mask's shape (a compressed pse wants a causal pattern: modes 2, 3, 8, or mode 0 with a
 * band next <= 0). */
static void draw_sparse(draw_ctx *x) {
    fr_gen_spec *s = x->s;
    uint64_t *rng = x->rng;
    const bool tnd = x->tnd;
    int sp = x->want[FR_AX_SPARSE], mk = x->want[FR_AX_MASK];
    const bool mk_random = mk >= FR_AXV_MASK_SS && mk <= FR_AXV_MASK_BNSS; /* a wanted random-mask shape */
    if (sp < 0) {
        if (x->fp8)
            sp = FR_AXV_SPARSE_NO_MASK;
        else if (x->comp)
            sp = x->want[FR_AX_BAND] > FR_AXV_BAND_UNUSED || mk_random ? SPV(DEFAULT_MASK)
                 : tnd && u01(rng) < 0.3                             ? SPV(BAND_LEFT_UP_CAUSAL)
                                         : (int)irange(rng, SPV(LEFT_UP_CAUSAL), SPV(RIGHT_DOWN_CAUSAL));
        else if (mk == FR_AXV_MASK_NONE)
            sp = FR_AXV_SPARSE_NO_MASK;
        else if (mk == FR_AXV_MASK_COMPRESSED) {
            static const int kC[4] = {SPV(LEFT_UP_CAUSAL), SPV(RIGHT_DOWN_CAUSAL), SPV(BAND),
                                      SPV(PREFIX_COMPRESS)};
            sp = tnd && u01(rng) < 0.4 ? (int)irange(rng, SPV(RIGHT_DOWN_CAUSAL_BAND), SPV(BAND_LEFT_UP_CAUSAL))
                                       : kC[irange(rng, 0, 3)];
        } else if (mk > FR_AXV_MASK_NONE)
            sp = mk >= FR_AXV_MASK_B1SS && !tnd && u01(rng) < 0.3
                     ? SPV(PREFIX)
                     : (int)irange(rng, SPV(DEFAULT_MASK), SPV(ALL_MASK));
        else if (u01(rng) < 0.35)
            sp = FR_AXV_SPARSE_NO_MASK;
        else
            sp = tnd ? (int)irange(rng, SPV(DEFAULT_MASK), SPV(BAND_LEFT_UP_CAUSAL))
                     : (int)irange(rng, SPV(DEFAULT_MASK), SPV(PREFIX_COMPRESS));
    }
    if (sp == FR_AXV_SPARSE_NO_MASK) return;
    s->sparse_mode = sp - SPV(DEFAULT_MASK);
    int m = s->sparse_mode;
    if (m == FR_SPARSE_DEFAULT_MASK || m == FR_SPARSE_ALL_MASK) {
        if (!mk_random)
            mk = tnd ? (int)irange(rng, FR_AXV_MASK_SS, FR_AXV_MASK_11SS)
                     : (int)irange(rng, FR_AXV_MASK_SS, FR_AXV_MASK_BNSS);
    } else if (m == FR_SPARSE_PREFIX) {
        if (!mk_random) mk = (int)irange(rng, FR_AXV_MASK_B1SS, FR_AXV_MASK_BNSS);
    }
    static const fr_gen_mask kM[5] = {FR_GEN_MASK_NONE, FR_GEN_MASK_SS, FR_GEN_MASK_11SS, FR_GEN_MASK_B1SS,
                                      FR_GEN_MASK_BNSS};
    s->mask = compressed_mode(m) ? FR_GEN_MASK_CANONICAL : kM[mk];
    if (m == FR_SPARSE_PREFIX) s->prefix = u01(rng) < 0.7;
    if (m == FR_SPARSE_PREFIX_COMPRESS) s->prefix = true;
    if (m == FR_SPARSE_BAND_LEFT_UP_CAUSAL) s->kv_start_idx = s->q_start_idx; /* they cancel whichever batches they
                                                                                * apply to (D15) */
}

/* dropout, sink, top-k (its W comes with the sizes), softmax layout, out dtype and peaked rows. */
static void draw_features(draw_ctx *x) {
    fr_gen_spec *s = x->s;
    uint64_t *rng = x->rng;
    const int *want = x->want;
    if (pick(want, FR_AX_DROPOUT, rng, x->fp8 ? 1.0 : 0.6)) s->keep_prob = u01(rng) < 0.5 ? 0.8 : 0.5;
    s->sink = pick(want, FR_AX_SINK, rng, 0.6) == 1;
    x->tk = pick(want, FR_AX_TOPK, rng, 0.7);
    s->topk_per_kv_head = x->tk == FR_AXV_TOPK_BN2S1W;
    if (x->tnd)
        s->softmax_layout = pick(want, FR_AX_SOFTMAX, rng, 0.6) ? FR_SOFTMAX_SAME_AS_INPUT : FR_SOFTMAX_DEFAULT;
    else if (want[FR_AX_SOFTMAX] == FR_AXV_SOFTMAX_SAME_AS_INPUT)
        s->softmax_layout = FR_SOFTMAX_SAME_AS_INPUT;
    int od = want[FR_AX_OUT];
    if (od < 0) od = x->fp8 ? (int)irange(rng, FR_AXV_OUT_UNSET, FR_AXV_OUT_BF16) : FR_AXV_OUT_UNSET;
    s->out_dtype = od == FR_AXV_OUT_FP16 ? FR_F16 : od == FR_AXV_OUT_BF16 ? FR_BF16 : FR_DT_NONE;
    if (u01(rng) < 0.25) s->beta = 0.4; /* peaked rows now and then (stale running max) */
}

/* The longest query and key lengths (x->S1, x->S2), inside the limits' work. */
static void draw_lengths(draw_ctx *x) {
    const int *want = x->want;
    uint64_t *rng = x->rng;
    const fr_draw_limits *lim = &x->lim;
    int kc = want[FR_AX_KEYS] >= 0 ? want[FR_AX_KEYS] : (int)irange(rng, FR_AXV_KEYS_SHORT, FR_AXV_KEYS_LONG);
    int rc = want[FR_AX_RESIDUE] >= 0                ? want[FR_AX_RESIDUE]
             : u01(rng) < 0.5                        ? FR_AXV_RESIDUE_PM1
                              : (int)irange(rng, FR_AXV_RESIDUE_ALIGNED, FR_AXV_RESIDUE_OTHER);
    int qc = want[FR_AX_QUERIES] >= 0 ? want[FR_AX_QUERIES]
             : u01(rng) < 0.15        ? FR_AXV_QUERIES_ONE
             : u01(rng) < 0.7         ? FR_AXV_QUERIES_SHORT
                                      : FR_AXV_QUERIES_LONG;
    int64_t S2, S1;
    if (x->tnd && (x->ps == FR_GEN_PSE_BNSS || x->ps == FR_GEN_PSE_1NSS)) {
        S1 = S2 = 1024; /* a full-shaped pse in TND is the compressed shape when maxS1 = 1024 */
    } else if (x->comp && !x->tnd) { /* compressed: S1 == S2 > 1024 */
        S2 = draw_len(rng, FR_AXV_KEYS_LONG, rc, lim->max_s2 < 2100 ? lim->max_s2 : 2100);
        if (S2 <= 1024) S2 = 1025;
        S1 = S2;
    } else {
        S2 = draw_len(rng, kc, rc, lim->max_s2);
        if (x->eq_len && S2 * S2 > lim->max_work) S2 = draw_len(rng, kc, rc, (int64_t)sqrt((double)lim->max_work));
        S1 = x->eq_len ? S2 : draw_q(rng, qc, lim->max_s1);
        int64_t qmin = qc == FR_AXV_QUERIES_LONG ? 256 : qc == FR_AXV_QUERIES_SHORT ? 2 : 1;
        if (!x->eq_len && S2 > 0 && S1 * S2 > lim->max_work)
            S1 = lim->max_work / S2 > qmin ? lim->max_work / S2 : qmin;
    }
    x->S1 = S1, x->S2 = S2, x->kc = kc, x->rc = rc;
}

/* The batch (TND: every sequence's lengths, uniform, ragged or with an empty query sequence), then fewer batches and
 * heads while the golden's work is above the limit; top-k's W once the key length is known. */
static void draw_batches(draw_ctx *x) {
    fr_gen_spec *s = x->s;
    uint64_t *rng = x->rng;
    const int64_t S1 = x->S1, S2 = x->S2, max_work = x->lim.max_work;
    int64_t B = u01(rng) < 0.5 ? 1 : irange(rng, 2, 3), work;
    if (x->tnd) {
        int w_var = x->want[FR_AX_VARLEN];
        int vl = w_var > FR_AXV_VARLEN_NOT_TND ? w_var : (int)irange(rng, FR_AXV_VARLEN_UNIFORM, FR_AXV_VARLEN_EMPTY);
        B = irange(rng, 2, 4);
        /* the empty query sequence is never the band's batch of mode 7 (the last) or 8 (the first): whether an empty
         * one counts there is a reading (D12) */
        const bool first = s->mask != FR_GEN_MASK_NONE && s->sparse_mode == FR_SPARSE_BAND_LEFT_UP_CAUSAL;
        int64_t big = irange(rng, 0, B - 1);
        int64_t empty = vl != FR_AXV_VARLEN_EMPTY ? -1 : first ? irange(rng, 1, B - 1) : irange(rng, 0, B - 2);
        if (empty == big) big = first ? 0 : B - 1;
        for (int64_t b = 0; b < B; b++) {
            int64_t q = S1, kv = S2;
            if (vl >= FR_AXV_VARLEN_RAGGED && b != big) { /* shorter sequences of the same residue class */
                kv = draw_len(rng, (int)irange(rng, FR_AXV_KEYS_SHORT, x->kc), x->rc, S2 > 1 ? S2 : 1);
                if (kv > S2) kv = S2;
                q = x->eq_len ? kv : (S1 > 0 ? logu(rng, 1, S1) : 0);
            }
            if (b == empty) q = 0, kv = u01(rng) < 0.5 ? 0 : draw_len(rng, FR_AXV_KEYS_SHORT, x->rc, S2 > 1 ? S2 : 1);
            s->seq_q[b] = q;
            s->seq_kv[b] = kv;
        }
        if (vl == FR_AXV_VARLEN_RAGGED && B >= 2 && s->seq_q[0] == s->seq_q[1] && s->seq_kv[0] == s->seq_kv[1] &&
            S2 > 1)
            s->seq_kv[big == 0 ? 1 : 0] = S2 - 1, s->seq_q[big == 0 ? 1 : 0] = x->eq_len ? S2 - 1 : s->seq_q[0];
        work = 0;
        for (int64_t b = 0; b < B; b++)
            work += s->seq_q[b] * s->seq_kv[b];
    } else {
        s->S1 = S1;
        s->S2 = S2;
        work = B * S1 * S2;
    }
    /* keep the golden's work bounded: fewer batches, then fewer heads */
    while (!x->tnd && B > 1 && s->N1 * work > max_work)
        B--, work = B * S1 * S2;
    while (s->N1 > s->N2 && s->N1 * work > max_work && s->N1 / s->N2 > 2)
        s->N1 -= s->N2;
    if (s->N1 == s->N2)
        while (s->N1 > 1 && s->N1 * work > max_work)
            s->N1--, s->N2 = s->N1;
    s->B = B;
    if (x->tk != FR_AXV_TOPK_OFF) s->topk_w = logu(rng, 1, S2 + 4 < 512 ? S2 + 4 : 512);
}

/* The band of modes 0 and 4 (pre/next: set, or one negative). */
static void draw_band_0_4(draw_ctx *x, int bd) {
    fr_gen_spec *s = x->s;
    uint64_t *rng = x->rng;
    const int64_t S1 = x->S1, S2 = x->S2;
    s->set_band = true;
    int64_t span = S1 + S2 > 1 ? S1 + S2 : 2;
    if (x->comp) { /* causal: next <= 0 */
        s->next_tokens = bd == FR_AXV_BAND_NEGATIVE && S2 > 1 ? -irange(rng, 1, S2 - 1 < 64 ? S2 - 1 : 64) : 0;
        s->pre_tokens = -s->next_tokens + logu(rng, 1, span);
    } else if (s->sparse_mode == FR_SPARSE_BAND) {
        /* bottom-right: pre reaches back from key S2 - S1 (pre' = pre + S1 - S2) */
        int64_t r = bd == FR_AXV_BAND_NEGATIVE && S2 > 1 ? irange(rng, 1, S2 - 1 < 64 ? S2 - 1 : 64) : 0;
        int64_t back = u01(rng) < 0.5 ? (S2 > S1 ? S2 - S1 : 0) : 0;
        s->next_tokens = bd == FR_AXV_BAND_NEGATIVE ? -r : logu(rng, 1, span) - 1;
        s->pre_tokens = (r > back ? r : back) + logu(rng, 1, span);
    } else if (bd == FR_AXV_BAND_SET) {
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
}

/* The band of modes 7 and 8 (TND): mode 7 looks at the last batch with queries, mode 8 at the first. */
static void draw_band_7_8(draw_ctx *x, int bd) {
    fr_gen_spec *s = x->s;
    uint64_t *rng = x->rng;
    const int m = s->sparse_mode;
    int64_t bq = -1;
    for (int64_t b = 0; b < s->B; b++)
        if (s->seq_q[b] > 0 && (m == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND || bq < 0)) bq = b;
    int64_t q = bq >= 0 ? s->seq_q[bq] : 0, kv = bq >= 0 ? s->seq_kv[bq] : 0;
    if (x->comp && m == FR_SPARSE_BAND_LEFT_UP_CAUSAL) /* causal: next = 0 (S1_b = S2_b) */
        bd = bd ? bd : FR_AXV_BAND_SET;
    if (m != FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND && bd == FR_AXV_BAND_UNUSED) return;
    s->set_band = true;
    s->pre_tokens = x->S2 + irange(rng, 0, 64);
    if (m == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND)
        s->next_tokens = bd == FR_AXV_BAND_NEGATIVE && kv > q ? -irange(rng, 1, kv - q) : 0;
    else if (x->comp)
        s->next_tokens = 0;
    else
        s->next_tokens = bd == FR_AXV_BAND_NEGATIVE && kv > q ? irange(rng, q - kv, -1)
                                                              : (q - kv > 0 ? q - kv : 0) + irange(rng, 0, 64);
}

/* The band, after the sizes: its rules are about them. */
static void draw_band(draw_ctx *x) {
    fr_gen_spec *s = x->s;
    int bd = pick(x->want, FR_AX_BAND, x->rng, 0.4);
    int m = s->sparse_mode;
    if (x->comp && m == FR_SPARSE_DEFAULT_MASK && bd == FR_AXV_BAND_UNUSED && x->want[FR_AX_BAND] < 0)
        bd = FR_AXV_BAND_SET;
    if (s->mask != FR_GEN_MASK_NONE && (m == FR_SPARSE_DEFAULT_MASK || m == FR_SPARSE_BAND) && bd > FR_AXV_BAND_UNUSED)
        draw_band_0_4(x, bd);
    else if (s->mask != FR_GEN_MASK_NONE && fr_sparse_mode_tnd_only(m) && x->tnd)
        draw_band_7_8(x, bd);
}

void fr_matrix_draw(const int want[FR_AX_COUNT], uint64_t *rng, const fr_draw_limits *lim, fr_draw *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "draw");
    draw_ctx x = {.want = want, .rng = rng, .lim = lim ? *lim : fr_draw_limits_default(), .s = &out->spec};
    x.s->name = out->name;
    draw_kind(&x);
    draw_heads(&x);
    draw_head_dim(&x);
    draw_pse(&x);
    draw_sparse(&x);
    draw_features(&x);
    draw_lengths(&x);
    draw_batches(&x);
    draw_band(&x);
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

/* A validated draw with the wanted values within `tries` attempts: 1; none: 0; -1: the check ran out of memory (a
 * draw counted invalid for want of memory would silently shrink the allowed pairs, or change the batch). */
static int draw_valid(const int *want, uint64_t *rng, const fr_draw_limits *lim, int tries, fr_draw *d, int *cell) {
    for (int t = 0; t < tries; t++) {
        fr_matrix_draw(want, rng, lim, d);
        fr_matrix_classify(&d->spec, cell);
        bool ok = true;
        for (int a = 0; a < FR_AX_COUNT && ok; a++)
            ok = want[a] < 0 || want[a] == cell[a];
        if (!ok) continue;
        fr_error e;
        fr_status st = fr_gen_check(&d->spec, &e);
        if (st == FR_OK) return 1;
        if (st == FR_E_NOMEM) return -1;
    }
    return 0;
}

fr_status fr_matrix_allowed(uint8_t *allowed, fr_error *err) {
    int np = fr_coverage_npairs(), want[FR_AX_COUNT], cell[FR_AX_COUNT], p[NPAIRS_CELL];
    memset(allowed, 0, (size_t)np);
    fr_draw_limits lim = fr_draw_limits_default();
    fr_draw d;
    uint64_t rng = UINT64_C(0x5eed0a11);
    for (int a = 0; a < FR_AX_COUNT; a++)
        want[a] = -1;
    /* free draws first: each marks all its pairs; then pinned draws for the pairs still unseen */
    for (int t = 0; t < 2000; t++) {
        int v = draw_valid(want, &rng, &lim, 1, &d, cell);
        if (v < 0) return fr_fail(err, FR_E_NOMEM, "option matrix: out of memory");
        if (v)
            for (int k = 0, n = cell_pairs(cell, p); k < n; k++)
                allowed[p[k]] = 1;
    }
    for (int idx = 0; idx < np; idx++) {
        if (allowed[idx]) continue;
        int a, va, b, vb;
        fr_coverage_pair(idx, &a, &va, &b, &vb);
        want[a] = va, want[b] = vb;
        int v = draw_valid(want, &rng, &lim, FR_MATRIX_TRIES, &d, cell);
        if (v < 0) return fr_fail(err, FR_E_NOMEM, "option matrix: out of memory");
        if (v)
            for (int k = 0, n = cell_pairs(cell, p); k < n; k++)
                allowed[p[k]] = 1;
        want[a] = want[b] = -1;
    }
    return FR_OK;
}

fr_status fr_random_batch(uint64_t seed, int n, fr_coverage *cv, const fr_draw_limits *lim, fr_draw *out,
                          fr_error *err) {
    uint8_t *allowed = malloc((size_t)fr_coverage_npairs());
    if (!allowed) return fr_fail(err, FR_E_NOMEM, "random: out of memory");
    fr_status st = fr_matrix_allowed(allowed, err);
    if (st == FR_OK) st = fr_random_batch_allowed(seed, n, cv, lim, allowed, out, err);
    free(allowed);
    return st;
}

fr_status fr_random_batch_allowed(uint64_t seed, int n, fr_coverage *cv, const fr_draw_limits *lim,
                                  const uint8_t *allowed, fr_draw *out, fr_error *err) {
    int np = fr_coverage_npairs();
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
            int v = draw_valid(want, &rng, lim, 8, &cand, cell);
            if (v < 0) return fr_fail(err, FR_E_NOMEM, "random: out of memory");
            if (!v) continue;
            int g = fr_coverage_gain(cv, allowed, cell);
            if (g > best_gain) best_gain = g, fr_draw_copy(&best, &cand);
        }
        if (best_gain < 0) { /* nothing valid among the candidates: any valid draw */
            for (int a = 0; a < FR_AX_COUNT; a++)
                want[a] = -1;
            int v = draw_valid(want, &rng, lim, 1000, &best, cell);
            if (v <= 0)
                return v < 0 ? fr_fail(err, FR_E_NOMEM, "random: out of memory")
                             : fr_fail(err, FR_E_INTERNAL, "random: no valid draw found (draw %d)", k);
        }
        snprintf(best.name, sizeof best.name, "rnd_%d", k);
        fr_draw_copy(&out[k], &best);
        fr_matrix_classify(&out[k].spec, cell);
        fr_coverage_add(cv, cell);
    }
    return FR_OK;
}
