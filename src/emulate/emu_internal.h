/* Internal to src/emulate: the per-call context shared by the forward and the backward. */
#ifndef FR_EMULATE_EMU_INTERNAL_H
#define FR_EMULATE_EMU_INTERNAL_H

#include "flashref_emulate.h"

#include "core/problem.h"
#include "semantics/semantics.h"

/* Operands widened once per call into contiguous [heads][rows][D] arrays (rows: TND q0 + i, else b * S + i), as
 * float when compute = fp32 (inputs are exact in fp32 except fp64 inputs, which the fp32 hardware would round too)
 * or double when compute = fp64. */
typedef struct emu_ops {
    bool f32;
    void *q, *k, *v, *qr, *kr; /* qr/kr: rope parts (NULL without rope) */
    int64_t Tq, Tk;            /* rows of q and of k/v */
} emu_ops;

/* Alike kernels/fwd.c:fwd_ctx: kept apart because only the shape is alike: this context carries the numerics
 * configuration the emulator varies, that one the ISA table (ops). */
typedef struct emu_ctx {
    const fr_problem *pb;
    const fr_params *p;
    const fr_fwd_inputs *in;
    const fr_numerics *nc;
    fr_sem sem;
    fr_sem_batch *batches; /* B entries */
    fr_dtype p_dt, ds_dt;  /* resolved P / dS rounding dtypes (FR_F64 = no rounding) */
    bool f32;
    double thr;            /* threshold in the exp base's units */
    double scale_y;        /* scale in y units: fp32(scale * log2e) for base 2 (folded), fp32 scale for base e */
    bool fold;             /* base 2 and nothing between qk and scale: y = s * scale_y */
    emu_ops ops;
} emu_ctx;

/* Slots of one row: key column (or -1: not taking part), y in the exp base's units, dropout factor (0 or 1/keep or
 * 1). n = S2_b (dense) or W (top-k). */
typedef struct emu_row {
    int64_t n;
    int64_t *j;
    double *y;
    double *z;
    double *p;   /* forward replay: rounded P as P.V consumed it (dropout applied) */
    double *pu;  /* forward replay: rounded P without dropout */
    int64_t *step; /* forward replay: the step that processed each slot */
    double *alpha; /* forward replay: alpha applied at each step (size ntiles + 1) */
} emu_row;

fr_status emu_ctx_init(emu_ctx *c, const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in,
                       const fr_numerics *nc, fr_error *err);
void emu_ctx_free(emu_ctx *c);
int64_t emu_qrow(const emu_ctx *c, const fr_sem_batch *sb, int64_t i);
int64_t emu_krow(const emu_ctx *c, const fr_sem_batch *sb, int64_t j);
/* Rounds to the compute dtype. */
static inline double emu_rc(const emu_ctx *c, double x) { return c->f32 ? (double)(float)x : x; }

fr_status emu_row_alloc(emu_row *r, int64_t n, int64_t ntiles_max);
void emu_row_free(emu_row *r);
/* Fills r->j, r->y, r->z for row i of head h in batch sb. */
void emu_row_scores(const emu_ctx *c, const fr_sem_batch *sb, int64_t h, int64_t i, emu_row *r);
int64_t emu_row_slots(const emu_ctx *c, const fr_sem_batch *sb);
int64_t emu_ntiles(const emu_ctx *c, int64_t nslots);
/* Tile visited at step t. */
int64_t emu_tile_at(const emu_ctx *c, int64_t ntiles, int64_t t);

/* The forward of one row over r (emu_row_scores filled): o[0..Dv) = the unrounded output (compute dtype),
 * *m_nat / *l_out = softmax_max / softmax_sum (natural units; D1 values for a fully masked row). Fills r->p with the
 * rounded P each slot contributed, r->step and r->alpha for a replay. Returns false for a D1 row (o = 0). sink_y:
 * the sink in y units, used when has_sink. o_acc: Dv scratch; pv: Dv scratch. */
bool emu_fwd_row(const emu_ctx *c, const fr_sem_batch *sb, int64_t h, int64_t i, emu_row *r, double *o,
                 double *pv, double *m_nat, double *l_out);

/* Widens tensor t (q-like when is_q: N1 heads and query rows; else k/v-like) into a malloc'd [heads][rows][D]
 * array of the compute dtype; NULL when out of memory. */
void *emu_load_op(const emu_ctx *c, const fr_tensor *t, int64_t heads, int64_t rows, int64_t D, bool is_q);
/* Dot product of n elements of two compute-dtype arrays (16 lanes, then a tree; rounded to the compute dtype). */
double emu_dot(bool f32, const void *a, const void *b, int64_t n);
/* exp or exp2 (per the exp base) in the compute dtype. */
double emu_exp(const emu_ctx *c, double a);

#endif
