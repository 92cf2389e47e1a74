/* The problem a validated (params, inputs) pair describes: every dimension resolved from the layout.
 * Produced by validation (validate_problem.c); read by every engine. Layout -> index helpers live here too (design.md:
 * "core: tensor views (dtype, layout -> index)"). Masks, pse and sparse modes are NOT here: the golden writes its
 * own from the spec, and src/semantics serves the fast kernels and the emulator. */
#ifndef FR_CORE_PROBLEM_H
#define FR_CORE_PROBLEM_H

#include "flashref.h"

typedef struct fr_problem {
    fr_layout layout;
    fr_dtype dtype;        /* q/k/v (and dy, attention_in) dtype */
    fr_dtype out_dtype;    /* attention_out dtype of the operator (resolved default) */
    bool fp8;              /* dtype is e4m3fn, e5m2 or hif8 */
    int64_t B, N1, N2, G;  /* G = N1 / N2 */
    int64_t S1, S2;        /* non-TND: the sequence lengths; TND: the largest per-batch lengths */
    int64_t Dk, Dv, Drope; /* Drope = 0 without rope */
    int64_t T1, T2;        /* TND: total query / key tokens (last cumulative offsets); else B*S1, B*S2 */
    int64_t W;             /* top-k width, 0 without topk_indices */
    bool topk_per_kv_head; /* topk_indices has an N2 dimension */
    const int64_t *cu_q;   /* TND: cumulative end offsets (length B), else NULL */
    const int64_t *cu_kv;
    bool has_pse, has_mask, has_drop, has_rope, has_sink, has_topk;
    int pse_type;
    int sparse_mode;
} fr_problem;

/* Per-batch query/key row range: start row in the T dimension (TND) or 0, and the length. */
static inline void fr_problem_q_rows(const fr_problem *p, int64_t b, int64_t *start, int64_t *len) {
    if (p->layout == FR_TND) {
        int64_t s = b == 0 ? 0 : p->cu_q[b - 1];
        *start = s;
        *len = p->cu_q[b] - s;
    } else {
        *start = 0;
        *len = p->S1;
    }
}
static inline void fr_problem_kv_rows(const fr_problem *p, int64_t b, int64_t *start, int64_t *len) {
    if (p->layout == FR_TND) {
        int64_t s = b == 0 ? 0 : p->cu_kv[b - 1];
        *start = s;
        *len = p->cu_kv[b] - s;
    } else {
        *start = 0;
        *len = p->S2;
    }
}

/* Offset in elements of element (b, n, i, d) of a q/k/v/out-like tensor in the given layout, where n is the head
 * (query head for q/out/dy, kv head for k/v), i the row within batch b (TND: row0 is the batch's first row), d the
 * column within the head, D the head dim of that tensor. */
static inline int64_t fr_layout_offset(const fr_tensor *t, fr_layout l, int64_t D, int64_t row0, int64_t b,
                                       int64_t n, int64_t i, int64_t d) {
    const int64_t *st = t->strides;
    switch (l) {
    case FR_BSH: return b * st[0] + i * st[1] + (n * D + d) * st[2];
    case FR_SBH: return i * st[0] + b * st[1] + (n * D + d) * st[2];
    case FR_BSND: return b * st[0] + i * st[1] + n * st[2] + d * st[3];
    case FR_BNSD: return b * st[0] + n * st[1] + i * st[2] + d * st[3];
    case FR_TND: return (row0 + i) * st[0] + n * st[1] + d * st[2];
    default: return 0;
    }
}

/* Offset of softmax_max/sum element (b, h, i, c) (c in 0..7) in the spec's shapes: [B,N1,S1,8];
 * TND [N1,T,8] (default) or [T,N1,8] (same_as_input). row0 as above. */
static inline int64_t fr_softmax_offset(const fr_tensor *t, fr_layout l, fr_softmax_layout sl, int64_t row0,
                                        int64_t b, int64_t h, int64_t i, int64_t c) {
    const int64_t *st = t->strides;
    if (l == FR_TND) {
        if (sl == FR_SOFTMAX_SAME_AS_INPUT) return (row0 + i) * st[0] + h * st[1] + c * st[2];
        return h * st[0] + (row0 + i) * st[1] + c * st[2];
    }
    return b * st[0] + h * st[1] + i * st[2] + c * st[3];
}

/* Validates and resolves the problem (implemented in validate_problem.c). */
fr_status fr_problem_from_fwd(const fr_params *p, const fr_fwd_inputs *in, fr_problem *pb, fr_error *err);
fr_status fr_problem_from_bwd(const fr_params *p, const fr_bwd_inputs *in, fr_problem *pb, fr_error *err);
/* Output checks (shapes/dtypes of out tensors against the problem; engine decides allowed dtypes). */
fr_status fr_check_fwd_outputs(const fr_problem *pb, const fr_params *p, const fr_fwd_outputs *out, fr_error *err);
fr_status fr_check_bwd_outputs(const fr_problem *pb, const fr_params *p, const fr_bwd_outputs *out, fr_error *err);

#endif
