/* The option matrix as data (docs/coverage.md): every axis of the operator with its values, in one table (matrix.c)
 * that the random generator, the classifier and the pairwise coverage report all read. A configuration's "cell" is one
 * value per axis. Which cells exist is not re-encoded here: a draw is realized as a casegen spec and kept only when the
 * validator accepts it (fr_gen_check), and a pair of axis values is "allowed" when some validated draw shows it.
 *
 *   int cell[FR_AX_COUNT];  fr_matrix_classify(&spec, cell);            // the cell of any spec (suite cases too)
 *   fr_draw d;  fr_matrix_draw(want, &rng, &lim, &d);                   // a spec realizing the wanted values
 *   fr_coverage cv;  fr_coverage_init(&cv);  fr_coverage_add(&cv, cell);  ...  fr_coverage_free(&cv);
 *
 * Random batches (fr_random_batch) are drawn greedily: each draw is the best of a few candidates, each pinned to an
 * uncovered allowed pair, scored by how many uncovered pairs it adds; so the default set plus ~200 draws covers every
 * pair validation allows (tests/verify/test_matrix.c). Sizes are drawn log-uniformly inside their class, tile
 * residues (multiples of 32/64/128/256 +- 1) favoured.
 */
#ifndef FR_VERIFY_MATRIX_H
#define FR_VERIFY_MATRIX_H

#include "verify/cases/casegen.h"

typedef enum fr_axis_id {
    FR_AX_DIR = 0,   /* fwd, bwd */
    FR_AX_LAYOUT,    /* BSH, SBH, BSND, BNSD, TND */
    FR_AX_DTYPE,     /* fp32, fp16, bf16, e4m3fn, e5m2, hif8 */
    FR_AX_HEADS,     /* mha (N2 = N1), gqa (1 < N2 < N1), mqa (N2 = 1 < N1) */
    FR_AX_HEADDIM,   /* dv=dk (D % 16 = 0), dv<dk, odd (Dk % 16 != 0), rope */
    FR_AX_SPARSE,    /* no mask, sparse_mode 0..8 */
    FR_AX_MASK,      /* atten_mask shape: none, SS, 11SS, B1SS, BNSS, compressed */
    FR_AX_BAND,      /* pre/next: unused, set >= 0, one negative */
    FR_AX_PSE,       /* pse_type: none, 0, 1, 2, 3 */
    FR_AX_PSE_SHAPE, /* none, BNSS, BN1S, 1NSS, compressed [B,..], compressed [1,..], slopes [B,N1], slopes [N1] */
    FR_AX_DROPOUT,   /* off, on */
    FR_AX_SINK,      /* off, on */
    FR_AX_TOPK,      /* off, [B,S1,W], [B,N2,S1,W] */
    FR_AX_VARLEN,    /* not TND, uniform, ragged, with an empty query sequence */
    FR_AX_SOFTMAX,   /* softmax layout: default, same_as_input */
    FR_AX_OUT,       /* out_dtype: unset, fp16, bf16 */
    FR_AX_QUERIES,   /* S1 (TND: longest): <= 1, < 256, >= 256 */
    FR_AX_KEYS,      /* S2 (TND: longest): < 256, 256..1023, >= 1024 */
    FR_AX_RESIDUE,   /* S2 mod tiles: aligned (S2 % 64 = 0), +-1 (S2 % 32 in {1, 31}), other */
    FR_AX_COUNT
} fr_axis_id;

#define FR_AX_MAX_VALUES (FR_SPARSE_MODE_COUNT + 1) /* the longest axis: sparse_mode (no mask, then every mode) */

/* Axis values by name: the index of the value on its axis (the order of the table in matrix.c). sparse_mode m is the
 * value FR_AXV_SPARSE_MODE(m); pse_type t the value FR_AXV_PSE_TYPE(t); pse_shape values are casegen's fr_gen_pse;
 * a layout's value is its fr_layout - FR_BSH. */
enum {
    FR_AXV_DIR_FWD = 0, FR_AXV_DIR_BWD,
    FR_AXV_DTYPE_FP32 = 0, FR_AXV_DTYPE_FP16, FR_AXV_DTYPE_BF16, FR_AXV_DTYPE_E4M3FN, FR_AXV_DTYPE_E5M2,
    FR_AXV_DTYPE_HIF8, /* the fp8 formats are the values from FR_AXV_DTYPE_E4M3FN on */
    FR_AXV_HEADS_MHA = 0, FR_AXV_HEADS_GQA, FR_AXV_HEADS_MQA,
    FR_AXV_HEADDIM_EQ = 0, FR_AXV_HEADDIM_DV_LT, FR_AXV_HEADDIM_ODD, FR_AXV_HEADDIM_ROPE,
    FR_AXV_SPARSE_NO_MASK = 0,
    FR_AXV_MASK_NONE = 0, FR_AXV_MASK_SS, FR_AXV_MASK_11SS, FR_AXV_MASK_B1SS, FR_AXV_MASK_BNSS, FR_AXV_MASK_COMPRESSED,
    FR_AXV_BAND_UNUSED = 0, FR_AXV_BAND_SET, FR_AXV_BAND_NEGATIVE,
    FR_AXV_PSE_NONE = 0,
    FR_AXV_TOPK_OFF = 0, FR_AXV_TOPK_BS1W, FR_AXV_TOPK_BN2S1W,
    FR_AXV_VARLEN_NOT_TND = 0, FR_AXV_VARLEN_UNIFORM, FR_AXV_VARLEN_RAGGED, FR_AXV_VARLEN_EMPTY,
    FR_AXV_SOFTMAX_DEFAULT = 0, FR_AXV_SOFTMAX_SAME_AS_INPUT,
    FR_AXV_OUT_UNSET = 0, FR_AXV_OUT_FP16, FR_AXV_OUT_BF16,
    FR_AXV_QUERIES_ONE = 0, FR_AXV_QUERIES_SHORT, FR_AXV_QUERIES_LONG, /* S1 <= 1, < 256, >= 256 */
    FR_AXV_KEYS_SHORT = 0, FR_AXV_KEYS_MID, FR_AXV_KEYS_LONG,          /* S2 < 256, < 1024, >= 1024 */
    FR_AXV_RESIDUE_ALIGNED = 0, FR_AXV_RESIDUE_PM1, FR_AXV_RESIDUE_OTHER
};
#define FR_AXV_SPARSE_MODE(m) ((m) + 1)
#define FR_AXV_PSE_TYPE(t) ((t) + 1)
#define FR_AXV_LAYOUT_TND ((int)FR_TND - (int)FR_BSH)

typedef struct fr_axis {
    const char *name;
    int n;
    const char *values[FR_AX_MAX_VALUES];
} fr_axis;

/* The table: FR_AX_COUNT axes in fr_axis_id order. */
const fr_axis *fr_matrix_axes(void);

/* The cell of spec: cell[a] = the index of its value on axis a. */
void fr_matrix_classify(const fr_gen_spec *spec, int cell[FR_AX_COUNT]);

/* One line naming every axis value and size of spec ("bwd bf16 TND heads 4/2 D 64/64 seq_q [..] ..."). */
void fr_matrix_describe(const fr_gen_spec *spec, char *buf, size_t n);

/* A drawn configuration: the spec and the storage of its name. Copy with fr_draw_copy (spec.name points into it). */
typedef struct fr_draw {
    fr_gen_spec spec;
    char name[48];
} fr_draw;
void fr_draw_copy(fr_draw *dst, const fr_draw *src);

/* Limits of a draw: the largest S2 and S1 drawn, and a cap on B*N1*S1*S2 (the golden's work). */
typedef struct fr_draw_limits {
    int64_t max_s2, max_s1, max_work;
} fr_draw_limits;
fr_draw_limits fr_draw_limits_default(void); /* S2 <= 8192, S1 <= 2048, work <= 2^22 */

/* Realizes a spec with the values want[a] (-1: any) from the generator state *rng (advanced). The result is not yet
 * validated nor checked against want (fr_gen_check, fr_matrix_classify). */
void fr_matrix_draw(const int want[FR_AX_COUNT], uint64_t *rng, const fr_draw_limits *lim, fr_draw *out);

/* Pairwise coverage: a hit count for every pair of values of two different axes. */
typedef struct fr_coverage {
    int npairs;
    uint32_t *hits;
} fr_coverage;
fr_status fr_coverage_init(fr_coverage *cv, fr_error *err);
void fr_coverage_free(fr_coverage *cv);
void fr_coverage_add(fr_coverage *cv, const int cell[FR_AX_COUNT]);
int fr_coverage_gain(const fr_coverage *cv, const uint8_t *allowed, const int cell[FR_AX_COUNT]);
/* Pair index <-> (axis a, value va, axis b, value vb), a < b. */
int fr_coverage_index(int a, int va, int b, int vb);
void fr_coverage_pair(int idx, int *a, int *va, int *b, int *vb);
int fr_coverage_npairs(void);

/* allowed[p] = 1 (p < fr_coverage_npairs()) for every pair of axis values that some validated draw realizes: for each
 * pair, pinned draws (FR_MATRIX_TRIES of them at most) until one passes fr_gen_check with both values. A fraction of a
 * second; callers compute it once. */
#define FR_MATRIX_TRIES 64
fr_status fr_matrix_allowed(uint8_t *allowed, fr_error *err); /* FR_E_NOMEM: a check ran out of memory */

/* N draws (names rnd_0 .. rnd_N-1), greedy for pairs not yet in *cv (which they are added to): draw k depends only on
 * seed and the draws before it, so a batch's draw k is reproduced by any batch of more than k draws. */
fr_status fr_random_batch(uint64_t seed, int n, fr_coverage *cv, const fr_draw_limits *lim, fr_draw *out,
                          fr_error *err);
/* The same with the allowed pairs computed once by the caller (fr_matrix_allowed), for many batches. */
fr_status fr_random_batch_allowed(uint64_t seed, int n, fr_coverage *cv, const fr_draw_limits *lim,
                                  const uint8_t *allowed, fr_draw *out, fr_error *err);

#endif
