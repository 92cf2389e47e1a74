/* The mutant zoo: built-in BROKEN attention implementations, each one real defect that attention kernels have
 * shipped with (docs/verification-method.md 5). `flashref selftest` runs the suites against every mutant: a mutant the
 * verifier does not kill with its expected verdict and diagnosis is a hole in the verifier.
 *
 * Every mutant except seed000 is the same plain tiled online-softmax implementation (mutants_base.c: query tiles of
 * 64 rows, key tiles of 64, fp32 math with fp64 row sums, the whole operator: layouts, masks, sparse modes, pse,
 * dropout, GQA, TND, sink, rope, fully masked rows per D1) with exactly one defect switched on. With no defect it
 * agrees with the golden (tests/mutants). Mutants whose defect is in the forward use the base's correct backward,
 * so gradient suites still run. fp8 inputs and top-k gathers are FR_E_UNSUPPORTED (SKIP). seed000 is the forward
 * of a published PyTorch tutorial (FlashAttentionVerifier.flash_attention) reproduced op by op: mutants_seed000.c.
 *
 * The entry points have the engine contract: they validate first (FR_E_* with a message), never print or abort,
 * keep no global state, and write every element of the requested outputs unless the defect is "rows unwritten". */
#ifndef FR_VERIFY_MUTANTS_H
#define FR_VERIFY_MUTANTS_H

#include "verify/judge/verdict.h"

#include <stdio.h> /* iut_mutant.c formats the zoo's names with snprintf and relies on this include */

typedef struct fr_mutant {
    const char *name;             /* "nan-fully-masked" */
    const char *bug;              /* one line: what is wrong, as in real kernels */
    fr_diag expected;             /* the diagnosis the verifier must give */
    fr_verdict expected_verdict;  /* FR_FAIL, or FR_WARN for precision-only defects */
    fr_status (*fwd)(const fr_params *, const fr_fwd_inputs *, const fr_fwd_outputs *, fr_error *);
    fr_status (*bwd)(const fr_params *, const fr_bwd_inputs *, const fr_bwd_outputs *, fr_error *); /* NULL: none */
    const char *trigger;          /* one line: the case features that expose it */
} fr_mutant;

/* The zoo (static, never NULL); *count set to its size. */
const fr_mutant *fr_mutants(int *count);
/* The mutant of that name, or NULL. */
const fr_mutant *fr_mutant_find(const char *name);

/* The defect-free base (not in the zoo): the reference the mutants are built from, exposed for the tests. */
fr_status fr_mutant_base_fwd(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out, fr_error *err);
fr_status fr_mutant_base_bwd(const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out, fr_error *err);

#endif
