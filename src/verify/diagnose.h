/* The diagnosis (verification.md section 3, last bullet): the likeliest cause of a case the judge found beyond its
 * bounds. The judge (judge.c) decides the verdict; it calls these functions only for a failing output and passes
 * what it has already loaded (every output of the IUT and the golden widened to fp64, the per-row head map). */
#ifndef FR_VERIFY_DIAGNOSE_H
#define FR_VERIFY_DIAGNOSE_H

#include "core/problem.h"
#include "verify/judge.h"

/* What the judge hands the diagnosis: views into its own arrays (nothing is owned). */
typedef struct fr_diag_in {
    const fr_case *c;
    unsigned tags, purpose;  /* as passed to fr_judge */
    const fr_problem *pb;    /* the case's problem */
    const double *const *a;  /* [FR_CASE_NUM_OUTPUTS]: the IUT's outputs as fp64 (NULL: absent), D1 rows zeroed */
    const double *const *r;  /* [FR_CASE_NUM_OUTPUTS]: the golden's, same layout */
    const int64_t *n;        /* [FR_CASE_NUM_OUTPUTS]: element counts (0: absent) */
    int64_t nrows, row_len;  /* out-like rows (attention_out forward, dq backward) and their length */
    const int32_t *head;     /* [nrows]: query head of each out-like row */
    const fr_case_outputs *iut; /* the IUT's outputs as returned */
} fr_diag_in;

/* Why attention_out is beyond its bound (j->out[FR_CO_ATTENTION_OUT] holds the metrics and bound_l2). */
fr_diag fr_diagnose_forward(const fr_diag_in *in, const fr_judgement *j);

/* Why a gradient is beyond its bound while the forward is not in question. */
fr_diag fr_diagnose_gradient(const fr_diag_in *in, const fr_judgement *j, fr_case_output k);

/* Why softmax_max / softmax_sum is beyond its bound (k: which one). */
fr_diag fr_diagnose_stats(const fr_diag_in *in, fr_case_output k);

#endif
