/* Internals of the fp64 golden engine (src/golden): one context per call, the per-element semantics written
 * straight from the spec (masks, sparse modes, pse, dropout bit, top-k, fp8 dequant scales) and the block score
 * routine shared by the forward and both backward passes. Nothing here is shared with src/semantics on purpose:
 * the golden must not inherit the kernels' bugs (verification-method.md 1). docs/golden.md has the choices made. */
#ifndef FR_GOLDEN_INTERNAL_H
#define FR_GOLDEN_INTERNAL_H

#include "core/core.h"
#include "core/problem.h"
#include "golden/golden_gemm.h"

/* Row / key block sizes of the tiled loops. GD_BR (query rows per task) changes only memory and speed; GD_BC (keys
 * per block) also fixes where the forward's online softmax rescales, so it is part of what the forward computes
 * (the backward depends on neither). Every reduction has a fixed order for a given problem, whatever the thread
 * count, the ISA variant or the split into parts (golden_part.h). */
#define GD_BR 128
#define GD_BC 64

/* Alike semantics/semantics.h:fr_sem: kept apart because the golden shares no mask/pse/semantics code with the kernels
 * it judges (design.md); the golden's context is fp64 and written from the spec. */
typedef struct gd_ctx {
    const fr_problem *pb;
    const fr_params *p;
    const fr_fwd_inputs *in;
    double scale;          /* (double)(float)scale_value (D10) */
    bool drop;             /* dropout active: a drop mask and keep_prob < 1 */
    double dropfac;        /* (double)(1.0f / (float)keep_prob) */
    bool has_mask, has_pse, has_topk, has_sink, has_rope, fp8;
    int pse_type, mode;
    int64_t first_nonempty, last_nonempty; /* first / last batch with S1_b != 0 (modes 7, 8); -1 if none */
    int64_t kscale_block;  /* rows per d_scale_k / d_scale_v block: 256 (forward) or 128 (backward shape) */
    int64_t *qblk;         /* [B+1]: first global query block of batch b (GD_BR rows per block) */
    int64_t *kvblk;        /* [B+1]: first global key block of batch b (GD_BC keys per block) */
    int64_t *drop_base;    /* [B]: first drop-mask bit of batch b, when drop */
    gd_gemm_fn mm;         /* the product variant (golden_gemm.h); every variant gives the same bits */
    int alt;               /* fr_golden_alt (golden_alt.h, test-only): a rule read the other way; 0 = the decisions */
} gd_ctx;

/* One batch: rows of q / kv in the T dimension (0 unless TND) and the lengths. */
typedef struct gd_batch {
    int64_t b, q0, S1, kv0, S2;
} gd_batch;

fr_status gd_ctx_init(gd_ctx *c, const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in, fr_error *err);
void gd_ctx_free(gd_ctx *c);
/* Batch b's rows. */
gd_batch gd_batch_of(const gd_ctx *c, int64_t b);
/* The batch whose global block range [blk[b], blk[b+1]) holds global block g (binary search). */
int64_t gd_find_batch(const int64_t *blk, int64_t B, int64_t g);
/* OpenMP thread count for an engine: e->num_threads, or the OpenMP default when 0. */
int gd_threads(const fr_engine *e);

/* Loads n elements base, base+stride, ... of t, exactly widened. */
void gd_load_vec(const fr_tensor *t, int64_t base, int64_t stride, int64_t n, double *dst);
/* Loads rows [i0, i0+nr) of head n of a q/k/v/dy/out-like tensor (head dim D) into dst[nr][D]. */
void gd_load_rows(const fr_tensor *t, fr_layout l, int64_t D, int64_t row0, int64_t b, int64_t n, int64_t i0,
                  int64_t nr, double *dst);
/* dst[nr][Dk + Dr] = q | q_rope (or k | k_rope): rows [i0, i0+nr) of head n of t (Dk columns) and tr (Dr columns,
 * none when Dr = 0). */
void gd_load_cat(const fr_tensor *t, const fr_tensor *tr, fr_layout L, int64_t Dk, int64_t Dr, int64_t row0,
                 int64_t b, int64_t n, int64_t i0, int64_t nr, double *dst);
/* dst: [cols][rows] = src: [rows][cols]^T. */
static inline void gd_transpose(const double *src, int64_t rows, int64_t cols, double *dst) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < cols; k++) dst[k * rows + r] = src[r * cols + k];
}
/* fp8 dequant scale of query row i of head h, and of key row j of kv head n (1 when not fp8). */
double gd_qscale(const gd_ctx *c, const gd_batch *bt, int64_t h, int64_t i);
double gd_kscale(const gd_ctx *c, const fr_tensor *t, const gd_batch *bt, int64_t n, int64_t j);
/* Dropout factor of position (h, i, j): dropfac or 0; 1 without dropout. */
double gd_drop_z(const gd_ctx *c, const gd_batch *bt, int64_t h, int64_t i, int64_t j);
double gd_sink(const gd_ctx *c, int64_t h);

/* Block of scaled scores x[r][col] = x(i0 + r, j0 + col) of query head h, and the multiplicity cnt[r][col] of each
 * position (0 = excluded by the mask / sparse mode / top-k, 1 in the dense case, the number of occurrences in the
 * top-k list otherwise). x is only meaningful where cnt > 0. Q: [nr][Dk], Qr: [nr][Drope], K: [nc][Dk], Kr:
 * [nc][Drope], qs: [nr], ks: [nc] fp8 dequant scales. Returns the number of positions with cnt > 0. */
int64_t gd_scores(const gd_ctx *c, const gd_batch *bt, int64_t h, int64_t i0, int64_t nr, int64_t j0, int64_t nc,
                  const double *Q, const double *Qr, const double *qs, const double *K, const double *Kr,
                  const double *ks, double *x, int32_t *cnt);

/* The same block of scaled scores from the blocked product (golden_gemm.h), Dc = Dk + Drope, each raw score the fma
 * chain over the Dc columns of q | q_rope and k | k_rope. tr = false: A = Qc: [nr][Dc], B = Kt: [Dc][nc], x and cnt
 * are [nr][nc]. tr = true: A = Kc: [nc][Dc], B = Qt: [Dc][nr], x and cnt are [nc][nr] (the transpose). */
int64_t gd_scores_mm(const gd_ctx *c, const gd_batch *bt, int64_t h, int64_t i0, int64_t nr, int64_t j0, int64_t nc,
                     const double *A, const double *B, int64_t Dc, bool tr, const double *qs, const double *ks,
                     double *x, int32_t *cnt);

/* The row reference (golden_rowref.c, the previous golden algorithm): rows [i0, i0+n) of batch b, head h of the
 * forward, written into out at their places (other rows untouched). */
fr_status gd_rowref_fwd_rows(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out, int64_t b,
                            int64_t h, int64_t i0, int64_t n, fr_error *err);

/* Resolves e's ISA request to the product variant, into c->mm (FR_E_NOT_AVAILABLE when a forced ISA is missing). */
fr_status gd_ctx_pick(gd_ctx *c, const fr_engine *e, fr_error *err);

/* out[r][col] = A[r] . B[col] (rows of length D, each a sequential sum over d) where cnt[r][col] != 0; other
 * entries may be written or not. A: [nr][D], B: [nc][D], cnt and out: [nr][nc]. */
void gd_gemm_nt(const double *A, int64_t nr, const double *B, int64_t nc, int64_t D, const int32_t *cnt,
                double *out);

/* Sequential dot product (fixed order). */
static inline double gd_dot(const double *a, const double *b, int64_t n) {
    double s = 0.0;
    for (int64_t d = 0; d < n; d++) s += a[d] * b[d];
    return s;
}

#endif
