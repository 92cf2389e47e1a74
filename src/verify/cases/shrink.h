/* Shrinking a configuration of the option matrix (shrink.c): while a smaller one (sizes halved, heads and batches
 * fewer, features switched off one by one) still answers yes to the caller's question (the suite asks: does it still
 * FAIL with the same diagnosis?), take it. The steps and their order are fixed, so a shrink is reproducible. */
#ifndef FR_VERIFY_CASES_SHRINK_H
#define FR_VERIFY_CASES_SHRINK_H

#include "verify/cases/matrix.h"

/* The question: *fails receives the answer for spec; a status other than FR_OK ends the shrinking with it. */
typedef fr_status (*fr_shrink_fails_fn)(void *ud, const fr_gen_spec *spec, bool *fails, fr_error *err);

/* *smallest receives the last configuration (spec itself at first, the same name: the same input streams) for which
 * fails answered yes; *runs the questions asked (at most max_runs). */
fr_status fr_shrink(const fr_gen_spec *spec, int max_runs, fr_shrink_fails_fn fails, void *ud, fr_draw *smallest,
                    int *runs, fr_error *err);

#endif
