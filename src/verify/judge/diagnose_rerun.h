/* Re-running a modified copy of a failing case (diagnose_rerun.c): the helpers the diagnosis's candidates
 * (diagnose_cands.h) and its matching (diagnose.c) share. Internal to the diagnosis. */
#ifndef FR_VERIFY_JUDGE_DIAGNOSE_RERUN_H
#define FR_VERIFY_JUDGE_DIAGNOSE_RERUN_H

#include "verify/judge/diagnose_in.h"

bool dg_is_d1_max(double m); /* a softmax max that marks a fully masked row */

/* A contiguous copy of t (any strides), same dtype; shape may differ from t's only where `map` says: element k of
 * the copy (C order, copy's shape) comes from element map(k) of t (C order, t's shape); map < 0 leaves it zero. */
typedef int64_t (*dg_index_map)(const void *ctx, const int64_t *idx);
fr_tensor dg_t_remap(const fr_tensor *t, int ndim, const int64_t *shape, dg_index_map map, const void *ctx);
fr_tensor dg_t_slice(const fr_tensor *t, int dim, int64_t j0, int64_t j1); /* [j0, j1) of dimension dim */
fr_tensor dg_t_copy(const fr_tensor *t);

/* Candidate outputs: fp64 arrays in the layout of the judge's (C order of the output tensors). */
typedef struct dg_cres {
    double *v[FR_CASE_NUM_OUTPUTS];
    int64_t n[FR_CASE_NUM_OUTPUTS];
} dg_cres;
void dg_cres_free(dg_cres *c);

/* A modified copy of the case: tensors it allocated are freed by dg_alt_free. */
typedef struct dg_alt {
    fr_case c;
    void *owned[8];
    int n_owned;
} dg_alt;
void dg_alt_init(dg_alt *a, const fr_diag_in *x);
/* Puts t in slot and owns its data (false, t freed: no data or no room). */
bool dg_alt_own(dg_alt *a, fr_tensor *slot, fr_tensor t);
void dg_alt_free(dg_alt *a);

/* Runs the (modified) case on engine e and loads the outputs the diagnosis compares (and the forward's stats). */
bool dg_run_alt(const fr_case *c, const fr_engine *e, bool fp64, dg_cres *out);
/* With e NULL: the plain reference in the input dtype of that style (plain_ref.h FR_PLAIN_SCALE_*). */
bool dg_run_alt_native(const fr_case *c, const fr_engine *e, int style, bool fp64, dg_cres *out);
/* The same on the golden, one thread (the re-runs are small). */
bool dg_run_golden(const fr_case *c, dg_cres *out);
/* The case re-run on the golden with parameters p. */
bool dg_params_run(const fr_diag_in *x, const fr_params *p, dg_cres *out);
/* The compared outputs: attention_out (forward), dq, dk, dv (backward). */
int dg_cmp_first(const fr_diag_in *x);
int dg_cmp_last(const fr_diag_in *x);
/* A copy of the golden's compared outputs (for candidates that transform them). */
bool dg_copy_golden(const fr_diag_in *x, dg_cres *out);
/* Which dimension of a q/k/v-like tensor holds the sequence (non-TND). */
int dg_seq_dim(fr_layout l);

#endif
