/* Test harness of the fast kernels: builds a seeded attention problem in any layout/dtype with every semantic, runs
 * the fast engine, and computes two references written here from the spec, independently of src/semantics:
 *   - ref64: fp64 throughout (the oracle, style.md 8),
 *   - ref32: the straightforward fp32 implementation (two-pass softmax, expf, sequential sums).
 * Random draws come from the kit's generator (common/seed.h); the tensors' shapes (layouts, masks, pse, top-k, scales)
 * come from the case builder's src/verify/cases/case_shapes.h, as casegen's do. The bodies are in kt_harness.c,
 * compiled once into fr_test_kharness for the kernel tests (tests/kernels). */
#ifndef FR_TESTS_KT_HARNESS_H
#define FR_TESTS_KT_HARNESS_H

#include "common/kit.h"
#include "common/seed.h"
#include "kernels/fast_entry.h"
#include "core/core.h"
#include "flashref.h"
#include "kernels/kernels.h"
#include "semantics/dtype_inline.h"
#include "verify/cases/case_shapes.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kt_case {
    const char *name;
    fr_layout layout;    /* FR_BNSD, FR_BSH, FR_BSND, FR_SBH or FR_TND */
    fr_dtype dt;         /* fp32, bf16, fp16 */
    int64_t B, N1, N2, S1, S2, Dk, Dv, Drope;
    const int64_t *lq, *lkv; /* TND: per-batch lengths (B entries) */
    bool mask;           /* atten_mask given (sparse mode applies) */
    int sparse_mode;
    int64_t pre, next;
    const int64_t *prefix; /* modes 5/6 */
    double mask_density; /* user mask: probability of masked */
    fr_gen_pse pse;      /* real_shift's shape (FR_GEN_PSE_NONE: none; COMP_1 is not built here) */
    int pse_type;
    int64_t q_start, kv_start;
    double keep_prob;    /* < 1: a drop mask is given */
    bool sink;
    double scale;
    double amp;          /* input amplitude */
    bool vsym;           /* V uniform in [-amp, amp] (outputs are cancelling means); else amp * [0.25, 1.25] */
    int64_t W;           /* top-k width (D7), 0 = none: [B,S1,W] (TND [T1,W]) with -1, out-of-range and duplicates */
    int64_t poison;      /* > 0: key column masked for every query (modes 0/1, non-TND) whose K is +Inf and V NaN */
    bool dscale;         /* fp8: d_scale_q [B,N1,ceil(S1/128),1], d_scale_k/v [B,N2,ceil(S2/256),1] in [0.5, 2] */
} kt_case;

/* The small fp32 case the kernel tests vary: KT_ADD(cs, n, k_->field = ..., ...) appends a copy of it with the
 * given changes (k_ names the new case), and stops the test if cs is full. */
extern const kt_case kt_base_case;
#define KT_ADD(cs, n, ...)                                                                                             \
    do {                                                                                                               \
        if ((size_t)(n) >= sizeof(cs) / sizeof((cs)[0])) {                                                             \
            fprintf(stderr, "%s:%d: case table full\n", __FILE__, __LINE__);                                         \
            exit(1);                                                                                                   \
        }                                                                                                              \
        (cs)[n] = kt_base_case;                                                                                        \
        kt_case *k_ = &(cs)[(n)++];                                                                                    \
        (void)k_;                                                                                                      \
        __VA_ARGS__;                                                                                                   \
    } while (0)

/* ---- tensors --------------------------------------------------------------------------------------------------- */
/* v rounded to dtype dt (bf16 / fp16: half away from zero, else fp32). */
double kt_round_dt(fr_dtype dt, double v);
static inline void kt_put(const fr_tensor *t, int64_t off, double v) { fr_store_f64(t, off, v); }
static inline double kt_get(const fr_tensor *t, int64_t off) { return fr_load_f64(t, off); }

/* A contiguous zeroed tensor (free its data). */
fr_tensor kt_alloc(fr_dtype dt, int ndim, const int64_t *shape);
static inline int64_t kt_numel(const fr_tensor *t) { return fr_tensor_numel(t); }
/* NaN in every element of a floating-point tensor (so an unwritten output shows). */
void kt_fill_nan(const fr_tensor *t);
/* ||a - g|| / ||g|| (2-norms; ||a - g|| when g is all zero) over the elements where neither is NaN; *nnan counts
 * the elements where either is (same shape, contiguous). */
double kt_rel_l2(const fr_tensor *a, const fr_tensor *g, int64_t *nnan);

/* A q/k/v-like tensor of the case's layout: n heads of dim D; rows: S (or T for TND). */
fr_tensor kt_qkv(const kt_case *c, fr_dtype dt, int64_t n, int64_t S, int64_t T, int64_t D);

typedef struct kt_prob {
    kt_case c;
    fr_params p;
    fr_problem pb;
    fr_fwd_inputs in;
    int64_t cuq[64], cukv[64]; /* TND cumulative */
    int64_t T1, T2;
    uint8_t *umask;            /* the user mask as generated ([B|1, N1|1, S1, S2] or [S1,S2]) */
} kt_prob;

/* Batch b's first query row q0 and key row k0 (TND: cumulative; else 0) and its lengths s1, s2. */
void kt_rows(const kt_prob *P, int64_t b, int64_t *q0, int64_t *s1, int64_t *k0, int64_t *s2);

/* Builds inputs (seeded). */
void kt_build(kt_prob *P, const kt_case *c, uint64_t seed);

void kt_free_prob(kt_prob *P);

/* Forward outputs of the problem (attention_out in dtype dt). */
fr_fwd_outputs kt_outputs(const kt_prob *P, fr_dtype dt);
void kt_free_outputs(fr_fwd_outputs *o);
/* kt_outputs with attention_out in dtype out and softmax_max / softmax_sum in dtype stats (zeroed when not fp32). */
fr_fwd_outputs kt_outputs_as(const kt_prob *P, fr_dtype out, fr_dtype stats);
/* Backward outputs of the problem in dtype dt (dsink: fp64 when dt is, else fp32), NaN-prefilled. */
fr_bwd_outputs kt_grads(const kt_prob *P, fr_dtype dt);
void kt_free_grads(fr_bwd_outputs *o);
/* The backward's inputs after forward outputs fo: attention_in and the softmax statistics from fo, dy drawn uniform in
 * [-1, 1) (rounded to the case's dtype) from seed ^ 0xd1 (free bi.dy.data). */
fr_bwd_inputs kt_bwd_inputs(const kt_prob *P, const fr_fwd_outputs *fo, uint64_t seed);

/* ---- the spec, written out independently ------------------------------------------------------------------------ */

/* Does (i, j) of batch b, head h take part? (docs/semantics-decisions.md D12, written from the table) */
bool kt_takes_part(const kt_prob *P, int64_t b, int64_t h, int64_t i, int64_t j, int64_t S1b, int64_t S2b);

/* The pse term added to score (i, j) of batch b, head h, from the spec's formulas. */
double kt_pse(const kt_prob *P, int64_t b, int64_t h, int64_t i, int64_t j, int64_t S1b);

/* Is (i, j) kept by the drop mask (bit k of the [B,N1,S1,S2] (TND: per-batch) bit order)? */
bool kt_drop_keep(const kt_prob *P, int64_t b, int64_t h, int64_t i, int64_t j, int64_t S1b, int64_t S2b);

typedef struct kt_ref {
    double *out;  /* [B][N1][S1max][Dv] logical (TND: per-batch rows) */
    double *mx, *sm;
    double *pvabs; /* per row: sum_j p_j |v_j|max over d, for dtype bounds */
    double *xmag;  /* per row: max_j scale * sum_d |q_d k_d| + |pse|, the scale of a score's rounding error */
    float *out32, *mx32, *sm32;
    int64_t rows;
} kt_ref;

static inline int64_t kt_row_index(const kt_prob *P, int64_t b, int64_t h, int64_t i) {
    return (b * P->c.N1 + h) * P->pb.S1 + i;
}

/* fp64 oracle and straightforward fp32 implementation, per (b, h, i). */
void kt_reference(const kt_prob *P, kt_ref *R);
void kt_free_ref(kt_ref *R);

/* Runs the fast engine on the problem with variant ops (NULL = auto) and threads. */
fr_status kt_run_fast(const kt_prob *P, const fr_kops *ops, int threads, const fr_fwd_outputs *out,
                      fr_error *err);

#endif
