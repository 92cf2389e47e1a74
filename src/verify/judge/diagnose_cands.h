/* The diagnosis's candidate table (diagnose_cands.c), read by the matching (diagnose.c) and by the registry test.
 * Internal to the diagnosis. */
#ifndef FR_VERIFY_JUDGE_DIAGNOSE_CANDS_H
#define FR_VERIFY_JUDGE_DIAGNOSE_CANDS_H

#include "verify/judge/diagnose_rerun.h"
#include "verify/judge/verdict.h"

typedef bool (*dg_cand_fn)(const fr_diag_in *x, int arg, dg_cres *out);

/* The candidate list. ops: 1 forward, 2 backward; 4: a numerics candidate (the emulator), tried only when no other
 * candidate matched: an implementation that matches a semantic candidate differs from the golden by that defect, and
 * from a numerics candidate by at least as much, so the numerics ones could not have been within reach. */
typedef struct dg_cand {
    const char *name;
    fr_diag diag;
    unsigned ops;
    dg_cand_fn fn;
    int arg;
} dg_cand;

extern const dg_cand dg_cands[];
extern const size_t dg_ncands;
#define DG_MAX_CANDS 64 /* at least dg_ncands (checked where the table is) */

#endif
