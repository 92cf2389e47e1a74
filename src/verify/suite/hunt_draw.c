/* The hunt's draws (hunt.h): the option matrix's draw (matrix.h) pinned to axis values the implementation declared
 * and has not SKIPped, then pushed into one corner where kernels break (decode rows with broadcast masks, padding,
 * nearly fully masked rows, extreme scores, NaN in masked K/V, odd key counts, odd head dims, GQA with broadcast
 * masks) or to boundary sizes, and kept when the validator and the capabilities admit it. */
#include "verify/suite/hunt.h"

#include "core/core.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static uint64_t mix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static int pick(uint64_t *s, int n) { return n > 0 ? (int)(mix(s) % (uint64_t)n) : 0; }
#define PICK(s, arr) ((arr)[pick(s, (int)(sizeof(arr) / sizeof((arr)[0])))])

static const char *const kCornerNames[FR_CORNER_COUNT] = {
    "none", "decode", "pad-right", "pad-left", "nearly-masked", "first-tile-masked", "extreme-scores",
    "nan-in-masked", "odd-keys", "head-dim", "gqa-broadcast-mask", "causal-s1-ne-s2", "varlen-empty"};
const char *fr_hunt_corner_name(fr_hunt_corner c) {
    return (int)c >= 0 && c < FR_CORNER_COUNT ? kCornerNames[c] : "invalid";
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Capabilities. */

static fr_dtype dtype_of(const fr_gen_spec *s) { return s->dtype == FR_DT_NONE ? FR_F32 : s->dtype; }

static bool is_16bit(const fr_gen_spec *s) { return dtype_of(s) == FR_F16 || dtype_of(s) == FR_BF16; }

/* The case's scale (casegen writes 1/sqrt(D) for 0). */
static double scale_of(const fr_gen_spec *s) {
    return s->scale != 0 ? s->scale : (s->D > 0 ? 1.0 / sqrt((double)s->D) : 1.0);
}

/* The case's scale rounded to its 16-bit input dtype (the scale itself for other dtypes). */
static double scale_in_dtype(const fr_gen_spec *s) {
    float v = (float)scale_of(s);
    if (dtype_of(s) == FR_F16) return fr_f16_to_f32(fr_f32_to_f16(v, FR_ROUND_NEAREST_EVEN, FR_SAT));
    if (dtype_of(s) == FR_BF16) return fr_bf16_to_f32(fr_f32_to_bf16(v, FR_ROUND_NEAREST_EVEN, FR_SAT));
    return scale_of(s);
}
static fr_layout layout_of(const fr_gen_spec *s) { return s->layout == FR_LAYOUT_NONE ? FR_BNSD : s->layout; }

bool fr_hunt_caps_admit(const fr_caps *c, const fr_gen_spec *s, fr_mask_hint hint, const char **why) {
    const char *w = NULL;
    const fr_caps_op *op = &c->op[s->bwd ? FR_CAPS_BWD : FR_CAPS_FWD];
    int64_t N2 = s->N2 ? s->N2 : s->N1, Dv = s->Dv ? s->Dv : s->D, Dk = s->D + s->Drope;
    bool tnd = layout_of(s) == FR_TND;
    if (!op->present) w = s->bwd ? "bwd" : "fwd";
    else if (!(op->dtypes & FR_CAPS_BIT(dtype_of(s)))) w = "dtypes";
    else if (!(op->layouts & FR_CAPS_BIT(layout_of(s) - FR_BSH))) w = "layouts";
    else if (s->mask != FR_GEN_MASK_NONE && !(op->sparse_modes & FR_CAPS_BIT(s->sparse_mode))) w = "sparse_modes";
    else if (s->mask != FR_GEN_MASK_NONE && s->mask != FR_GEN_MASK_CANONICAL) {
        static const unsigned kBit[] = {0, 0, FR_CAPS_MASK_SS, FR_CAPS_MASK_11SS, FR_CAPS_MASK_B1SS, FR_CAPS_MASK_BNSS};
        if (!(op->mask_shapes & kBit[s->mask])) w = "mask_shapes";
    } else if (s->mask == FR_GEN_MASK_CANONICAL &&
               (s->sparse_mode == 0 || s->sparse_mode == 1 || s->sparse_mode == 5) &&
               !(op->mask_shapes & FR_CAPS_MASK_SS)) { /* modes 0, 1, 5 take a random [S1,S2] mask */
        w = "mask_shapes";
    }
    if (w) goto out;
    if (s->mask != FR_GEN_MASK_NONE && s->set_band && !op->band) w = "band";
    else if (s->mask != FR_GEN_MASK_NONE && s->prefix && !op->prefix) w = "prefix";
    else if (s->pse != FR_GEN_PSE_NONE && !(op->pse_types & FR_CAPS_BIT(s->pse_type))) w = "pse_types";
    else if ((s->pse == FR_GEN_PSE_BNSS && !(op->pse_shapes & FR_CAPS_PSE_BNSS)) ||
             (s->pse == FR_GEN_PSE_BN1S && !(op->pse_shapes & FR_CAPS_PSE_BN1S)) ||
             (s->pse == FR_GEN_PSE_1NSS && !(op->pse_shapes & FR_CAPS_PSE_1NSS)) ||
             ((s->pse == FR_GEN_PSE_COMP_B || s->pse == FR_GEN_PSE_COMP_1) &&
              !(op->pse_shapes & FR_CAPS_PSE_COMPRESSED)))
        w = "pse_shapes";
    else if (s->keep_prob > 0 && s->keep_prob < 1 && !op->dropout) w = "dropout";
    else if (s->sink && !op->sink) w = "sink";
    else if (s->topk_w > 0 && op->topk != FR_CAPS_TOPK_ANY) w = "topk"; /* drawn lists may repeat an index */
    else if (s->Drope > 0 && !op->rope) w = "rope";
    else if (N2 != s->N1 && !op->gqa) w = "gqa";
    else if (Dv != Dk && !op->dv_ne_dk) w = "dv_ne_dk"; /* Dk with the rope part: runners concatenate it */
    else if (Dk < op->head_dim_min || Dk > op->head_dim_max || s->D % op->head_dim_multiple) w = "head_dim";
    else if (op->scale_pow2 && s->scale != 0) {
        int e;
        double m = frexp(s->scale * sqrt((double)s->D), &e);
        if (m != 0.5) w = "scale";
    } else if (op->scale_dtype && is_16bit(s) && scale_in_dtype(s) != scale_of(s)) {
        w = "scale";
    }
    if (w) goto out;
    bool empty = false, longer = false;
    if (tnd) {
        for (int b = 0; b < s->B && b < FR_GEN_MAX_BATCH; b++) {
            empty |= s->seq_q[b] == 0 || s->seq_kv[b] == 0;
            longer |= s->seq_q[b] > s->seq_kv[b];
        }
    } else {
        empty = s->B == 0 || s->S1 == 0 || s->S2 == 0;
        longer = s->S1 > s->S2;
    }
    if ((empty || s->N1 == 0 || s->D == 0) && !op->empty) w = "empty";
    else if (longer && op->s1_le_s2) w = "s1_le_s2";
    else if (hint != FR_MASK_HINT_DEFAULT && (s->mask == FR_GEN_MASK_NONE || !(op->handover & FR_CAPS_BIT(hint))))
        w = "mask_handover";
out:
    if (why) *why = w;
    return !w;
}

/* The axis values the capabilities of op allow (a bit per value; all bits: free). */
static unsigned caps_values(const fr_caps_op *op, int axis, unsigned all) {
    switch (axis) {
    case FR_AX_LAYOUT: return op->layouts & all;
    case FR_AX_DTYPE: {
        static const char *const names[] = {"fp32", "fp16", "bf16", "e4m3fn", "e5m2", "hif8"};
        unsigned v = 0;
        for (int i = 0; i < 6; i++)
            if (op->dtypes & FR_CAPS_BIT(fr_dtype_from_name(names[i]))) v |= 1u << i;
        return v;
    }
    case FR_AX_HEADS: return op->gqa ? all : 1u;
    case FR_AX_HEADDIM:
        return 1u | (op->dv_ne_dk ? 1u << FR_AXV_HEADDIM_DV_LT : 0) |
               (op->head_dim_multiple % 16 ? 1u << FR_AXV_HEADDIM_ODD : 0) | (op->rope ? 1u << FR_AXV_HEADDIM_ROPE : 0);
    case FR_AX_SPARSE: return 1u | ((op->sparse_modes << 1) & all);
    case FR_AX_MASK:
        return 1u | (op->mask_shapes & FR_CAPS_MASK_SS ? 1u << FR_AXV_MASK_SS : 0) |
               (op->mask_shapes & FR_CAPS_MASK_11SS ? 1u << FR_AXV_MASK_11SS : 0) |
               (op->mask_shapes & FR_CAPS_MASK_B1SS ? 1u << FR_AXV_MASK_B1SS : 0) |
               (op->mask_shapes & FR_CAPS_MASK_BNSS ? 1u << FR_AXV_MASK_BNSS : 0) |
               (op->sparse_modes & 0x1DCu ? 1u << FR_AXV_MASK_COMPRESSED : 0);
    case FR_AX_BAND: return op->band ? all : 1u;
    case FR_AX_PSE: return 1u | ((op->pse_types << 1) & all);
    case FR_AX_DROPOUT: return op->dropout ? all : 1u;
    case FR_AX_SINK: return op->sink ? all : 1u;
    case FR_AX_TOPK: return op->topk == FR_CAPS_TOPK_ANY ? all : 1u;
    case FR_AX_VARLEN: return op->layouts & FR_CAPS_BIT(FR_AXV_LAYOUT_TND) ? all : 1u;
    default: return all;
    }
}

bool fr_hunt_learn_applies(const fr_caps *c, int dir, int a) {
    if (!c || dir < 0) return true;
    unsigned k = c->op[dir].keys;
    switch (a) {
    case FR_AX_DIR: return !c->ops_declared;
    case FR_AX_LAYOUT:
    case FR_AX_VARLEN: return !(k & FR_CAPS_KEY_LAYOUTS);
    case FR_AX_DTYPE: return !(k & FR_CAPS_KEY_DTYPES);
    case FR_AX_HEADS: return !(k & FR_CAPS_KEY_GQA);
    case FR_AX_HEADDIM: return !(k & FR_CAPS_KEY_HEADDIM);
    case FR_AX_SPARSE: return !(k & FR_CAPS_KEY_SPARSE);
    case FR_AX_MASK: return !(k & (FR_CAPS_KEY_MASK | FR_CAPS_KEY_SPARSE));
    case FR_AX_BAND: return !(k & FR_CAPS_KEY_BAND);
    case FR_AX_PSE: return !(k & FR_CAPS_KEY_PSE);
    case FR_AX_DROPOUT: return !(k & FR_CAPS_KEY_DROPOUT);
    case FR_AX_SINK: return !(k & FR_CAPS_KEY_SINK);
    case FR_AX_TOPK: return !(k & FR_CAPS_KEY_TOPK);
    default: return true;
    }
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Learning from SKIPs. */

static bool in_range(int v) { return v >= 0 && v < FR_AX_MAX_VALUES; }

/* Pairs: the suspects of SKIPped draws none of whose single values is a suspect. */
static void learn_pairs(fr_hunt_learn *l) {
    unsigned short(*blame)[FR_AX_MAX_VALUES][FR_AX_COUNT][FR_AX_MAX_VALUES] = l->pair_blame;
    memset(l->pair_blame, 0, sizeof l->pair_blame);
    for (int k = 0; k < l->nskipped; k++) {
        const unsigned char *c = l->skipped_cells[k];
        bool single = false;
        for (int a = 0; a < FR_AX_COUNT && !single; a++)
            single = l->judged[a][c[a]] == 0;
        if (single) continue;
        for (int a = 0; a < FR_AX_COUNT; a++)
            for (int b = a + 1; b < FR_AX_COUNT; b++)
                if (!l->judged_pair[a][c[a]][b][c[b]] && blame[a][c[a]][b][c[b]] < 0xffff) blame[a][c[a]][b][c[b]]++;
    }
    for (int a = 0; a < FR_AX_COUNT; a++)
        for (int v = 0; v < FR_AX_MAX_VALUES; v++)
            for (int b = a + 1; b < FR_AX_COUNT; b++)
                for (int w = 0; w < FR_AX_MAX_VALUES; w++)
                    l->excluded_pair[a][v][b][w] = !l->judged_pair[a][v][b][w] &&
                                                   blame[a][v][b][w] >= FR_HUNT_LEARN_PAIR_SKIPS;
}

void fr_hunt_learn_note(fr_hunt_learn *l, const int cell[FR_AX_COUNT], bool judged) {
    if (judged) {
        for (int a = 0; a < FR_AX_COUNT; a++)
            if (in_range(cell[a])) l->judged[a][cell[a]]++;
        for (int a = 0; a < FR_AX_COUNT; a++)
            for (int b = a + 1; b < FR_AX_COUNT; b++)
                if (in_range(cell[a]) && in_range(cell[b])) l->judged_pair[a][cell[a]][b][cell[b]] = 1;
    } else if (l->nskipped < FR_HUNT_LEARN_KEEP) {
        for (int a = 0; a < FR_AX_COUNT; a++)
            l->skipped_cells[l->nskipped][a] = (unsigned char)(in_range(cell[a]) ? cell[a] : 0);
        l->nskipped++;
    }
    int blame[FR_AX_COUNT][FR_AX_MAX_VALUES], sole[FR_AX_COUNT][FR_AX_MAX_VALUES];
    memset(blame, 0, sizeof blame);
    memset(sole, 0, sizeof sole);
    for (int k = 0; k < l->nskipped; k++) {
        const unsigned char *c = l->skipped_cells[k];
        int n = 0;
        for (int a = 0; a < FR_AX_COUNT; a++)
            n += l->judged[a][c[a]] == 0;
        if (n == 0 || n > FR_HUNT_LEARN_SUSPECTS) continue;
        for (int a = 0; a < FR_AX_COUNT; a++)
            if (l->judged[a][c[a]] == 0) blame[a][c[a]]++, sole[a][c[a]] += n == 1;
    }
    for (int a = 0; a < FR_AX_COUNT; a++)
        for (int v = 0; v < FR_AX_MAX_VALUES; v++) {
            l->excluded[a][v] = l->judged[a][v] == 0 && (sole[a][v] >= FR_HUNT_LEARN_SKIPS ||
                                                         blame[a][v] >= FR_HUNT_LEARN_SKIPS + 1);
            l->excluded_declared[a][v] = l->judged[a][v] == 0 && (sole[a][v] >= 2 * FR_HUNT_LEARN_SKIPS ||
                                                                  blame[a][v] >= 2 * (FR_HUNT_LEARN_SKIPS + 1));
        }
    learn_pairs(l);
}

bool fr_hunt_learn_excludes(const fr_hunt_learn *l, const fr_caps *c, int dir, int axis, int value) {
    if (!fr_hunt_learn_excluded(l, axis, value)) return false;
    return fr_hunt_learn_applies(c, dir, axis) || l->excluded_declared[axis][value];
}

bool fr_hunt_learn_pair_in(const fr_hunt_learn *l, const int cell[FR_AX_COUNT]) {
    if (!l) return false;
    for (int a = 0; a < FR_AX_COUNT; a++)
        for (int b = a + 1; b < FR_AX_COUNT; b++)
            if (in_range(cell[a]) && in_range(cell[b]) && l->excluded_pair[a][cell[a]][b][cell[b]]) return true;
    return false;
}

bool fr_hunt_learn_excluded(const fr_hunt_learn *l, int axis, int value) {
    return l && value >= 0 && value < FR_AX_MAX_VALUES && l->excluded[axis][value];
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Corners and boundary sizes. */

static const int64_t kPrimes[] = {2, 3, 5, 7, 13, 31, 61, 67, 97, 127, 131, 193, 251, 257, 383, 509, 521, 1021};
static const int64_t kHeadDims[] = {1, 2, 3, 5, 8, 12, 15, 17, 24, 31, 33, 40, 48, 63, 65, 72, 80, 96, 100, 112,
                                    120, 160, 192, 200, 256, 320, 384, 512, 576};
static const int64_t kEdgeS1[] = {1, 2, 3, 7, 8, 63, 64, 65, 127, 128, 129};
static const int64_t kEdgeS2[] = {1, 2, 3, 15, 16, 17, 63, 64, 65, 127, 128, 129, 255, 256, 257};

/* A broadcast mask over batch or heads with sparse_mode 0, no band, no prefix. */
static void broadcast_mask(fr_gen_spec *s, uint64_t *r, bool b1ss_only) {
    static const fr_gen_mask kShapes[] = {FR_GEN_MASK_SS, FR_GEN_MASK_11SS, FR_GEN_MASK_B1SS};
    s->mask = b1ss_only ? FR_GEN_MASK_B1SS : PICK(r, kShapes);
    s->sparse_mode = 0;
    s->set_band = false;
    s->prefix = false;
    s->mask_any = false;
}

/* Pushes s into corner c; false when c does not fit it (TND, ...). */
static bool corner(fr_gen_spec *s, fr_hunt_corner c, uint64_t *r, const fr_draw_limits *lim, fr_suite_mod *mod) {
    bool tnd = layout_of(s) == FR_TND;
    bool fp8 = dtype_of(s) == FR_E4M3FN || dtype_of(s) == FR_E5M2 || dtype_of(s) == FR_HIF8;
    bool needs_mask = c == FR_CORNER_DECODE || c == FR_CORNER_PAD_RIGHT || c == FR_CORNER_PAD_LEFT ||
                      c == FR_CORNER_NEARLY_MASKED || c == FR_CORNER_FIRST_MASKED || c == FR_CORNER_NAN_MASKED ||
                      c == FR_CORNER_GQA_BCAST;
    if (c == FR_CORNER_VARLEN_EMPTY) return tnd; /* pinned before the draw (fr_hunt_draw_one) */
    if (c == FR_CORNER_CAUSAL_NE) {             /* the mode pinned before the draw; lengths made unequal here */
        if (tnd || s->mask == FR_GEN_MASK_NONE || (s->sparse_mode != 2 && s->sparse_mode != 3)) return tnd;
        if (s->S1 == s->S2) s->S1 = s->S2 > 1 ? 1 + pick(r, (int)(s->S2 - 1)) : 2;
        return true;
    }
    if (tnd && c != FR_CORNER_EXTREME && c != FR_CORNER_HEAD_DIM) return false;
    if (needs_mask && fp8) return false; /* fp8 takes no mask */
    /* A mask rewritten after generation would not match a backward case's forward statistics (attention_in,
     * softmax_max/sum come from the golden forward with the generated mask): those corners are forward only. */
    if (s->bwd && (c == FR_CORNER_PAD_RIGHT || c == FR_CORNER_PAD_LEFT || c == FR_CORNER_NEARLY_MASKED ||
                   c == FR_CORNER_FIRST_MASKED || c == FR_CORNER_NAN_MASKED))
        return false;
    if (s->pse == FR_GEN_PSE_COMP_B || s->pse == FR_GEN_PSE_COMP_1) s->pse = FR_GEN_PSE_NONE; /* needs S1 == S2 */
    switch (c) {
    case FR_CORNER_NONE: return true;
    case FR_CORNER_DECODE:
        s->S1 = 1 + pick(r, 8);
        s->B = 2 + pick(r, 3);
        broadcast_mask(s, r, false);
        return true;
    case FR_CORNER_PAD_RIGHT:
    case FR_CORNER_PAD_LEFT:
        if (s->B < 2) s->B = 2 + pick(r, 2);
        broadcast_mask(s, r, true);
        *mod = c == FR_CORNER_PAD_RIGHT ? FR_MOD_PAD_RIGHT : FR_MOD_PAD_LEFT;
        return true;
    case FR_CORNER_NEARLY_MASKED:
    case FR_CORNER_NAN_MASKED:
        broadcast_mask(s, r, false);
        s->mask = FR_GEN_MASK_SS;
        *mod = c == FR_CORNER_NEARLY_MASKED ? FR_MOD_ONE_KEY : FR_MOD_NAN_KV;
        if (s->S2 < 2) s->S2 = 2 + pick(r, 60);
        return true;
    case FR_CORNER_FIRST_MASKED:
        broadcast_mask(s, r, false);
        s->mask = FR_GEN_MASK_SS;
        *mod = FR_MOD_FIRST_TILE_MASKED;
        if (s->S2 <= 128) s->S2 = 129 + pick(r, 200);
        return true;
    case FR_CORNER_EXTREME: {
        static const double kScale[] = {4, 8, 16, 30};
        s->in_scale = PICK(r, kScale);
        return true;
    }
    case FR_CORNER_ODD_KEYS: {
        int64_t v = pick(r, 2) ? PICK(r, kPrimes) : 64 * (1 + pick(r, 8)) + (pick(r, 2) ? 1 : -1);
        if (v > lim->max_s2) return false;
        s->S2 = v;
        return true;
    }
    case FR_CORNER_HEAD_DIM:
        s->D = PICK(r, kHeadDims);
        s->Dv = 0;
        return true;
    case FR_CORNER_GQA_BCAST: {
        int64_t n2 = 1 + pick(r, 3), g = 2 + pick(r, 4);
        s->N2 = n2;
        s->N1 = n2 * g;
        broadcast_mask(s, r, false);
        return true;
    }
    default: return false;
    }
}

static void boundary_sizes(fr_gen_spec *s, uint64_t *r) {
    if (layout_of(s) == FR_TND) return;
    if (pick(r, 2)) s->S1 = PICK(r, kEdgeS1);
    if (pick(r, 2)) s->S2 = PICK(r, kEdgeS2);
    if (pick(r, 3) == 0) s->B = 1 + pick(r, 3);
}

static bool within(const fr_gen_spec *s, const fr_draw_limits *lim) {
    if (layout_of(s) == FR_TND) {
        double work = 0;
        for (int b = 0; b < s->B && b < FR_GEN_MAX_BATCH; b++) {
            if (s->seq_q[b] > lim->max_s1 || s->seq_kv[b] > lim->max_s2) return false;
            work += (double)s->N1 * (double)s->seq_q[b] * (double)s->seq_kv[b];
        }
        return work <= (double)lim->max_work;
    }
    double work = (double)s->B * (double)s->N1 * (double)s->S1 * (double)s->S2;
    return s->S1 <= lim->max_s1 && s->S2 <= lim->max_s2 && work <= (double)lim->max_work;
}

/* ---------------------------------------------------------------------------------------------------------------- */

#define HUNT_TRIES 400

void fr_hunt_draw_one(uint64_t seed, int k, const fr_caps *caps, const fr_hunt_learn *l, const fr_draw_limits *lim,
                      bool no_corners, fr_hunt_draw *out, bool *inside) {
    uint64_t r = seed ^ ((uint64_t)(k + 1) * 0xD1B54A32D192ED03ull);
    const fr_axis *axes = fr_matrix_axes();
    *inside = false;
    int any[FR_AX_COUNT];
    for (int a = 0; a < FR_AX_COUNT; a++)
        any[a] = -1;
    memset(out, 0, sizeof *out); /* a plain draw, in case no candidate below passes validation */
    fr_matrix_draw(any, &r, lim, &out->d);
    snprintf(out->d.name, sizeof out->d.name, "hunt_%d", k);
    out->d.spec.name = out->d.name;
    for (int t = 0; t < HUNT_TRIES; t++) {
        int want[FR_AX_COUNT];
        int dir = -1;
        if (caps) { /* the direction first: the other axes follow its op's capabilities */
            unsigned dv = (caps->op[FR_CAPS_FWD].present ? 1u : 0) | (caps->op[FR_CAPS_BWD].present ? 2u : 0);
            dir = dv == 3 ? pick(&r, 2) : dv == 2 ? 1 : 0;
        }
        for (int a = 0; a < FR_AX_COUNT; a++) {
            unsigned all = (1u << axes[a].n) - 1, ok = all;
            if (caps && a != FR_AX_DIR) ok &= caps_values(&caps->op[dir], a, all);
            if (a == FR_AX_DIR && dir >= 0) ok = 1u << dir;
            unsigned learned = ok;
            for (int v = 0; v < axes[a].n; v++)
                if (fr_hunt_learn_excludes(l, caps, dir, a, v)) learned &= ~(1u << v);
            if (learned) ok = learned; /* never exclude a whole axis */
            if (ok == all || !ok) {
                want[a] = -1;
                continue;
            }
            int n = __builtin_popcount(ok), m = pick(&r, n);
            for (int v = 0; v < axes[a].n; v++)
                if ((ok >> v) & 1u && m-- == 0) want[a] = v;
        }
        /* The corner first: two of them pin matrix axes before the draw. */
        fr_hunt_corner cn = FR_CORNER_NONE;
        int u = no_corners ? 9 : pick(&r, 10);
        if (u < 7) cn = (fr_hunt_corner)(1 + pick(&r, FR_CORNER_COUNT - 1));
        if (cn == FR_CORNER_VARLEN_EMPTY) want[FR_AX_VARLEN] = FR_AXV_VARLEN_EMPTY;
        if (cn == FR_CORNER_CAUSAL_NE) want[FR_AX_SPARSE] = FR_AXV_SPARSE_MODE(2 + pick(&r, 2));
        fr_hunt_draw d;
        memset(&d, 0, sizeof d);
        fr_matrix_draw(want, &r, lim, &d.d);
        snprintf(d.d.name, sizeof d.d.name, "hunt_%d", k);
        d.d.spec.name = d.d.name;
        if (cn != FR_CORNER_NONE) { /* 70 %: a corner */
            d.corner = cn;
            if (!corner(&d.d.spec, d.corner, &r, lim, &d.mod)) continue;
        } else if (u < 9) { /* 20 %: boundary sizes */
            boundary_sizes(&d.d.spec, &r);
        }
        if (!within(&d.d.spec, lim)) continue;
        if (caps && d.d.spec.mask != FR_GEN_MASK_NONE) { /* the runner's mask handover: one of its declared ways */
            unsigned h = caps->op[d.d.spec.bwd ? FR_CAPS_BWD : FR_CAPS_FWD].handover;
            int n = __builtin_popcount(h), m = pick(&r, n);
            for (int v = 0; v < FR_MASK_HINT_COUNT; v++)
                if ((h >> v) & 1u && m-- == 0) d.hint = (fr_mask_hint)v;
        }
        if (caps && caps->op[d.d.spec.bwd ? FR_CAPS_BWD : FR_CAPS_FWD].scale_dtype && is_16bit(&d.d.spec))
            d.d.spec.scale = scale_in_dtype(&d.d.spec); /* a scale its 16-bit inputs hold: the runner can hand it */
        fr_error e;
        if (fr_gen_check(&d.d.spec, &e) != FR_OK) continue;
        *out = d;
        out->d.spec.name = out->d.name;
        int cell[FR_AX_COUNT];
        fr_matrix_classify(&d.d.spec, cell);
        bool excluded = false;
        for (int a = 0; a < FR_AX_COUNT && l; a++)
            excluded |= fr_hunt_learn_excludes(l, caps, d.d.spec.bwd, a, cell[a]);
        excluded |= fr_hunt_learn_pair_in(l, cell);
        if ((!caps || fr_hunt_caps_admit(caps, &d.d.spec, d.hint, NULL)) && !excluded) {
            *inside = true;
            return;
        }
    }
}
