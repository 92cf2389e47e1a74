/* What the judge hands the diagnosis (diagnose.h) and what every part of the diagnosis reads: the case, what it
 * exercises, and the judge's fp64 views of the outputs. The lowest header of the diagnosis, so that its re-runs
 * (diagnose_rerun.h) and candidates (diagnose_cands.h) need nothing of the judge above them. */
#ifndef FR_VERIFY_JUDGE_DIAGNOSE_IN_H
#define FR_VERIFY_JUDGE_DIAGNOSE_IN_H

#include "core/problem.h"
#include "io/casedir.h"

/* What a case exercises: guides the diagnosis when the error's shape alone is ambiguous. */
enum {
    FR_TAG_D1 = 1u << 0,         /* has fully masked rows */
    FR_TAG_NAN_KV = 1u << 1,     /* NaN/Inf placed in masked-out K/V */
    FR_TAG_LARGE = 1u << 2,      /* huge logits / large magnitudes */
    FR_TAG_SENTINEL = 1u << 3,   /* very negative real scores next to masked positions */
    FR_TAG_TAIL = 1u << 4,       /* lengths just below / above a tile size */
    FR_TAG_HEADDIM = 1u << 5,    /* head dim not a multiple of 8 */
    FR_TAG_VARLEN = 1u << 6,     /* TND with empty sequences */
    FR_TAG_INDEX64 = 1u << 7,    /* tensor of more than 2^31 elements */
    FR_TAG_DROPOUT = 1u << 8,    /* keep_prob < 1 */
    FR_TAG_PEAKED = 1u << 9,     /* q_i += beta k_i */
    FR_TAG_GQA = 1u << 10,       /* N1 != N2 */
    FR_TAG_CAUSAL_NE = 1u << 11, /* causal with S1 != S2 */
    FR_TAG_PSE = 1u << 12,       /* position bias */
    FR_TAG_MASK = 1u << 13,      /* mask / band / sparse mode */
    FR_TAG_LONG = 1u << 14       /* > 32K keys */
};

/* What the judge hands the diagnosis: views into its own arrays (nothing is owned). */
typedef struct fr_diag_in {
    const fr_case *c;
    unsigned tags, purpose;     /* as passed to fr_judge */
    const fr_problem *pb;       /* the case's problem */
    const double *const *a;     /* [FR_CASE_NUM_OUTPUTS]: the IUT's outputs as fp64 (NULL: absent), D1 rows zeroed */
    const double *const *r;     /* [FR_CASE_NUM_OUTPUTS]: the golden's, same layout */
    const int64_t *n;           /* [FR_CASE_NUM_OUTPUTS]: element counts (0: absent) */
    int64_t nrows, row_len;     /* out-like rows (attention_out forward, dq backward) and their length */
    const int32_t *head;        /* [nrows]: query head of each out-like row */
    const uint8_t *d1;          /* [nrows]: the golden row is fully masked (zeroed in a and r) */
    const fr_case_outputs *iut; /* the IUT's outputs as returned */
} fr_diag_in;

#endif
