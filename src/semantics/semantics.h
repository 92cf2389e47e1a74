/* What element (b, h, i, j) of the attention problem means, for the fast kernels and the emulator.
 *
 * Written from docs/operator-spec.md and docs/semantics-decisions.md (binding); it shares no code with
 * src/golden, which writes its own masks and pse from the same formulas so that a bug here cannot hide in both.
 *
 * Usage by a tiled algorithm of any tile size (fp32 or fp64 arithmetic):
 *   fr_sem s;           fr_sem_init(&s, pb, p, in, err);            once per call, no allocation
 *   fr_sem_batch sb;    fr_sem_batch_get(&s, b, &sb);               once per batch (O(b) for TND: cache it)
 *   per (h, query tile [i0, i0+ni), key tile [j0, j0+nj)) with i, j positions WITHIN the batch:
 *     fr_sem_tile_class()  -> SKIP (no position takes part), FULL (every position takes part, no mask needed),
 *                             PARTIAL (call fr_sem_tile_keep for the per-position mask)
 *     fr_sem_tile_keep()   -> 1 = the position takes part (atten_mask / sparse mode / band / prefix)
 *     fr_sem_tile_pse_f32/_f64() -> the pse value to add (external tensor of any shape incl. compressed, or ALiBi)
 *     fr_sem_tile_drop()   -> dropout bit (1 = keep), only when s.dropout
 *   top-k (s.topk): fr_sem_topk_row() lists the key columns of one row; the tile functions still give mask/pse/drop.
 * Where the score goes: pse_type 1: x = (qk + pse) * scale; pse_type 0/2/3: x = qk * scale + pse; no pse:
 * x = qk * scale (fp8: qk * dq * dk first, fr_sem_dscale_*). A position that does not take part is excluded (not a
 * finite sentinel); a row with no position and no sink follows D1 (FR_SEM_D1_MAX / FR_SEM_D1_SUM, output 0). */
#ifndef FR_SEMANTICS_SEMANTICS_H
#define FR_SEMANTICS_SEMANTICS_H

#include "core/problem.h"

#include <float.h>

/* D1: softmax_max / softmax_sum of a fully masked row (no sink); attention_out and gradients are 0. */
#define FR_SEM_D1_MAX (-FLT_MAX)
#define FR_SEM_D1_SUM (FLT_MAX)
/* D5: dequant scale blocks (forward): query rows per d_scale_q entry, key rows per d_scale_k / d_scale_v entry. */
#define FR_SEM_DSCALE_Q_ROWS 128
#define FR_SEM_DSCALE_KV_ROWS 256

/* Alike golden/golden_internal.h:gd_ctx: kept apart because the golden shares no mask/pse/semantics code with the
 * kernels it judges (design.md); this context serves the fast kernels and the emulator. */
typedef struct fr_sem {
    const fr_problem *pb;
    const fr_params *p;
    const fr_fwd_inputs *in;
    float scale;        /* (float)scale_value (D10) */
    float rkeep;        /* 1.0f / (float)keep_prob */
    bool dropout;       /* drop_mask present and keep_prob < 1 */
    bool masked;        /* atten_mask present: sparse mode, band and user mask apply (else nothing is masked) */
    bool pse;           /* a pse applies (external tensor for pse_type 0/1, slopes for 2/3) */
    int pse_type;
    bool pse_compressed;/* external pse [B|1, N1, 1024, S2] read along diagonals (spec 5.2) */
    bool topk;
    bool sink;
} fr_sem;

/* One batch: row ranges and the resolved mask rule. (i, j) takes part iff
 *   !(user_mask && atten_mask[i, j]) && (!band || (lo <= j - i && j - i <= hi) || j < prefix). */
typedef struct fr_sem_batch {
    int64_t b;
    int64_t q0, S1;     /* first query row in the T dimension (TND) or 0; the batch's query length */
    int64_t kv0, S2;    /* same for keys / values */
    bool band;
    int64_t lo, hi;     /* band on d = j - i (top-left origin) */
    int64_t prefix;     /* columns j < prefix ignore the band (modes 5/6); 0 = none */
    bool user_mask;     /* atten_mask read element by element (modes 0, 1, 5) */
    int64_t drop_bit0;  /* drop-mask bit of (b, h = 0, i = 0, j = 0) */
    int64_t q_start, kv_start; /* ALiBi (pse_type 2/3) offsets for this batch */
} fr_sem_batch;

typedef enum fr_tile_class { FR_TILE_SKIP = 0, FR_TILE_FULL = 1, FR_TILE_PARTIAL = 2 } fr_tile_class;

/* Reads the validated problem; never allocates. Returns FR_E_INTERNAL on an input validation should have refused. */
fr_status fr_sem_init(fr_sem *s, const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in, fr_error *err);
/* Batch b (0 <= b < B). O(b) for TND (sums of earlier lengths): call once per batch and keep the result. */
void fr_sem_batch_get(const fr_sem *s, int64_t b, fr_sem_batch *sb);

/* GQA/MQA: the kv head of query head h (spec 2.2: h / G, never h % N2). */
static inline int64_t fr_sem_kv_head(const fr_sem *s, int64_t h) { return h / s->pb->G; }

/* Tile [i0, i0+ni) x [j0, j0+nj) of query head h, positions within the batch. The tile may extend past S1/S2: the
 * part outside never takes part, and FULL means every position INSIDE the batch takes part. Top-k problems answer
 * PARTIAL for every tile that is not skipped. */
fr_tile_class fr_sem_tile_class(const fr_sem *s, const fr_sem_batch *sb, int64_t h, int64_t i0, int64_t ni,
                                int64_t j0, int64_t nj);
/* keep[r * ld + c] = 1 iff (i0 + r, j0 + c) takes part (mask rule above; out-of-range positions 0). Does not apply
 * top-k or dropout. */
void fr_sem_tile_keep(const fr_sem *s, const fr_sem_batch *sb, int64_t h, int64_t i0, int64_t ni, int64_t j0,
                      int64_t nj, uint8_t *keep, int64_t ld);
/* pse[r * ld + c] = pse value of (i0 + r, j0 + c) (0 when !s->pse or outside the pse's defined area). pse_type 2/3 are
 * computed in fp32 by _f32 as the kernels do (spec 5.1) and in fp64 from the fp32 slope by _f64. */
void fr_sem_tile_pse_f32(const fr_sem *s, const fr_sem_batch *sb, int64_t h, int64_t i0, int64_t ni, int64_t j0,
                         int64_t nj, float *pse, int64_t ld);
void fr_sem_tile_pse_f64(const fr_sem *s, const fr_sem_batch *sb, int64_t h, int64_t i0, int64_t ni, int64_t j0,
                         int64_t nj, double *pse, int64_t ld);
/* keep[r * ld + c] = dropout bit of (i0 + r, j0 + c) (1 = keep; all 1 when !s->dropout; out-of-range 0). */
void fr_sem_tile_drop(const fr_sem *s, const fr_sem_batch *sb, int64_t h, int64_t i0, int64_t ni, int64_t j0,
                      int64_t nj, uint8_t *keep, int64_t ld);
/* One dropout bit (1 = keep). */
bool fr_sem_drop_bit(const fr_sem *s, const fr_sem_batch *sb, int64_t h, int64_t i, int64_t j);

/* fp8 dequant scales (spec D5), 1.0f when the tensor is absent. i, j within the batch. */
float fr_sem_dscale_q(const fr_sem *s, const fr_sem_batch *sb, int64_t h, int64_t i);
float fr_sem_dscale_k(const fr_sem *s, const fr_sem_batch *sb, int64_t kv, int64_t j);
float fr_sem_dscale_v(const fr_sem *s, const fr_sem_batch *sb, int64_t kv, int64_t j);

/* Top-k (D7): writes the valid listed key columns of row i of query head h into cols[0..W) in listed order
 * (duplicates kept, -1 and out-of-range slots dropped) and returns how many. */
int64_t fr_sem_topk_row(const fr_sem *s, const fr_sem_batch *sb, int64_t h, int64_t i, int64_t *cols);

/* Sink logit of head h (D6); 0 when absent. */
float fr_sem_sink(const fr_sem *s, int64_t h);

#endif
