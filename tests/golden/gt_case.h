/* Test helpers of the golden engine (tests/golden; also the emulator's and the mutants' tests, which judge against
 * the golden): tensors over the test's own buffers with contiguous or permuted-and-padded strides, element access by
 * logical index (the test's own stride arithmetic, not src/core's layout helpers), and a case builder that makes
 * every optional input of the operator. Random draws come from the kit's generator (common/seed.h; r is its
 * state); the tensors' shapes come from the case builder's src/verify/cases/case_shapes.h, as casegen's do. The
 * bodies are in gt_case.c, compiled once into fr_test_gtcase. */
#ifndef FR_TESTS_GOLDEN_GT_CASE_H
#define FR_TESTS_GOLDEN_GT_CASE_H

#include "common/seed.h"
#include "flashref.h"
#include "verify/cases/case_shapes.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tensors ------------------------------------------------------------------------------------------------- */
/* A tensor with its own zeroed buffer. strided: a random memory order of the dimensions (transposed views) and one
 * element of padding per dimension, so nothing is contiguous. */
fr_tensor gt_tensor(fr_dtype dt, int ndim, const int64_t *shape, int strided, uint64_t *r);
void gt_free(fr_tensor *t);
static inline int64_t gt_off(const fr_tensor *t, const int64_t *idx) {
    int64_t o = 0;
    for (int k = 0; k < t->ndim; k++) o += idx[k] * t->strides[k];
    return o;
}
static inline int64_t gt_numel(const fr_tensor *t) {
    int64_t n = 1;
    for (int k = 0; k < t->ndim; k++) n *= t->shape[k];
    return n;
}
/* Decoded element at a raw offset. */
double gt_get_off(const fr_tensor *t, int64_t o);
double gt_get(const fr_tensor *t, const int64_t *idx);
/* Stores v rounded to nearest even (inputs are generated this way). */
void gt_put_off(const fr_tensor *t, int64_t o, double v);
void gt_put(const fr_tensor *t, const int64_t *idx, double v);
/* max |a - r| / max(max |r|, floor) over the logical elements of r (a shaped like r): a NaN or Inf where the other
 * differs counts as Inf; with max |r| and floor both 0, max |a - r| itself. 0 when r is absent. */
double gt_normwise(const fr_tensor *a, const fr_tensor *r, double floor_);
/* Visits every logical element: fills with f(rng) (uniform in [lo, hi]). */
void gt_fill_uniform(fr_tensor *t, uint64_t *r, double lo, double hi);
/* Fills every byte of the buffer behind t (padding included) with NaN of its dtype (fp64 / fp32 outputs). */
void gt_fill_nan_raw(fr_tensor *t);

/* ---- a case ------------------------------------------------------------------------------------------------- */
#define GT_MAXB 8

typedef struct gt_case {
    fr_params p;
    fr_layout L;
    fr_dtype dt;
    int64_t B, N1, N2, G, S1, S2, Dk, Dv, Dr, W; /* TND: S1, S2 = the largest batch lengths */
    int64_t lq[GT_MAXB], lkv[GT_MAXB];           /* per-batch lengths */
    int64_t cuq[GT_MAXB], cukv[GT_MAXB];         /* TND cumulative ends */
    int64_t T1, T2;
    int64_t prefix[GT_MAXB];
    int strided;
    int topk_kv; /* topk has an N2 dimension */
    int mask_shared; /* in.atten_mask belongs to the caller */
    fr_fwd_inputs in;
    fr_tensor out, smax, ssum;                  /* fp64 forward outputs */
    fr_tensor dy, ain;                          /* backward inputs, operator dtype; ain = out rounded */
    fr_tensor dq, dk, dv, dqr, dkr, dsink;      /* fp64 gradients */
} gt_case;

static inline int64_t gt_q0(const gt_case *c, int64_t b) { return c->L == FR_TND ? (b ? c->cuq[b - 1] : 0) : 0; }
static inline int64_t gt_kv0(const gt_case *c, int64_t b) { return c->L == FR_TND ? (b ? c->cukv[b - 1] : 0) : 0; }

/* Logical index of element (b, n, i, d) (i within batch b) of a q/k/v-like tensor in layout L, head dim D. */
void gt_lidx(const gt_case *c, int kv, int64_t b, int64_t n, int64_t i, int64_t d, int64_t D, int64_t *idx);
/* Shape of a q/k/v-like tensor with N heads of dim D. */
int gt_shape(const gt_case *c, int kv, int64_t N, int64_t D, int64_t *sh);
double gt_qkv(const gt_case *c, const fr_tensor *t, int kv, int64_t b, int64_t n, int64_t i, int64_t d,
              int64_t D);
/* softmax_max/sum element (b, h, i, k): [B,N1,S1,8]; TND [N1,T,8] (default) or [T,N1,8]. */
void gt_sidx(const gt_case *c, int64_t b, int64_t h, int64_t i, int64_t k, int64_t *idx);

/* Sets B and per-batch lengths; TND uses lq/lkv as given. Computes S1/S2 (max), cumulative ends, T. */
void gt_set_lengths(gt_case *c);

/* Options of the optional inputs. */
typedef struct gt_opts {
    int mask;        /* atten_mask given (sparse_mode from c->p) */
    fr_gen_mask mask_shape; /* modes 0/1/5: FR_GEN_MASK_SS (also when unset), _11SS, _B1SS or _BNSS */
    double mask_density;
    int pse;         /* real_shift given (pse_type from c->p) */
    fr_gen_pse pse_shape; /* types 0/1: BNSS (also when unset), BN1S, 1NSS, COMP_B, COMP_1; types 2/3: SLOPES_BN (also
                             when unset), SLOPES_N */
    int drop;        /* keep_prob < 1 and a drop mask */
    int sink, rope, topk, topk_kv;
    double amp;      /* inputs uniform in [-amp, amp] */
    const fr_tensor *cmask, *cmask6; /* shared compressed masks (else one is made per case) */
} gt_opts;

/* The canonical compressed mask of sparse mode `mode` (2/3/4/7/8: [2048,2048] triu(1); 6: [3072,2048]); contents are
 * never read by the golden but are the canonical ones. */
fr_tensor gt_compressed_mask(int mode);

/* Starts a random case: c and o zeroed, the default params, and a layout drawn (the first draw of r). Shared by the
 * random-case tests (golden per ISA, emulator vs golden, the mutants' base); each then draws its own ranges. */
void gt_draw_start(gt_case *c, gt_opts *o, uint64_t *r);

/* Draws the semantics of a random case: mask and sparse mode (band up to band_max), pse type and shape, dropout,
 * sink and rope. Shared by the random-case tests (emulator vs golden, the mutants' base vs golden). */
void gt_draw_semantics(gt_case *c, gt_opts *o, uint64_t *r, int64_t band_max);

/* One time in four, a top-k gather of 1..w_max slots (shared by all heads of a kv group, or per kv head). */
void gt_draw_topk(gt_case *c, gt_opts *o, uint64_t *r, int64_t w_max);

/* Allocates and fills q, k, v and every optional input the options ask for. The params (layout, head_num, modes,
 * band, keep_prob, scale) must be set before. */
void gt_make_inputs(gt_case *c, const gt_opts *o, uint64_t *r);

/* The dtype of dy and attention_in: the inputs' dtype; fp8 inputs: out_dtype, fp16 by default. */
fr_dtype gt_op_dtype(const gt_case *c);

/* fp64 forward outputs (NaN-prefilled), and backward tensors when bwd. */
void gt_make_outputs(gt_case *c, int bwd, uint64_t *r);

/* The golden forward into out, smax, ssum; the _isa form with fr_engine.isa = isa (FR_ISA_AUTO: the dispatcher's). */
fr_status gt_run_fwd(gt_case *c, int threads, fr_error *err);
fr_status gt_run_fwd_isa(gt_case *c, fr_isa isa, int threads, fr_error *err);
/* Backward fed the golden's own forward (run gt_run_fwd first): fp64 softmax max/sum, attention_in = the fp64
 * attention_out rounded to the operator's dtype (nearest even). */
fr_status gt_run_bwd(gt_case *c, int threads, fr_error *err);
fr_status gt_run_bwd_isa(gt_case *c, fr_isa isa, int threads, fr_error *err);

/* A plain fp32 case of layout L and these sizes (scale 0.5, default parameters otherwise), no tensors yet. */
void gt_base_case(gt_case *c, fr_layout L, int64_t B, int64_t N1, int64_t N2, int64_t S1, int64_t S2, int64_t Dk,
                  int64_t Dv);

/* Frees every tensor of the case (not a shared compressed mask). */
void gt_case_free(gt_case *c);

#endif
