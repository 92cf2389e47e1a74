/* The references of a case (the golden, the ideal pipeline, the plain reference) kept across the suite runs of one
 * process. `flashref selftest` runs the same cases against every implementation of its zoo, and the references are
 * the same for every one of them: computing them was most of its time. An entry is found by a hash of everything
 * the three references read (the case's op and dtype, its parameters with their arrays, every input tensor's
 * description and bytes, and the judge options the plain reference reads), so a case that differs in any of them,
 * such as an order variant under the same name, misses. Private to src/verify/suite. */
#ifndef FR_VERIFY_SUITE_REFS_H
#define FR_VERIFY_SUITE_REFS_H

#include "verify/suite/suite.h"

#include <stddef.h>

/* The three references, in the order fr_suite_judge_one computes them. */
typedef enum fr_suite_ref_kind { FR_REF_GOLDEN = 0, FR_REF_IDEAL, FR_REF_PLAIN, FR_REF_COUNT } fr_suite_ref_kind;

/* One case's references: each computed at most once; an out-of-memory status is never kept (the next run tries
 * again), any other status is (the golden rejecting a case rejects it for every implementation). */
typedef struct fr_suite_ref_entry {
    uint64_t key;
    bool done[FR_REF_COUNT];
    fr_status st[FR_REF_COUNT];
    fr_error err[FR_REF_COUNT];
    fr_case_outputs out[FR_REF_COUNT];
} fr_suite_ref_entry;

/* The entry of c (created when absent), or NULL: no cache, a case the hash cannot describe (a non-contiguous input),
 * or out of memory (the caller then computes as without a cache). */
fr_suite_ref_entry *fr_suite_refs_entry(fr_suite_refs *r, const fr_case *c, const fr_judge_opts *judge);
/* Keeps out (computed with status st and err) as reference k of e when it fits; returns whether it was kept (the
 * entry then owns out, and the caller must not free it). */
bool fr_suite_refs_keep(fr_suite_refs *r, fr_suite_ref_entry *e, fr_suite_ref_kind k, fr_status st,
                        const fr_error *err, const fr_case_outputs *out);

#endif
