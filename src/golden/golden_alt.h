/* The golden under an alternative reading of a rule the spec leaves open (docs/semantics-decisions.md, "Readings
 * that could decide a verdict"). Test-only: nothing in the library or the CLI runs these; the decision-sensitivity
 * test (tests/verify/decision_sensitivity.c) runs every suite case and random draw under each alternative, and a case
 * whose golden output changes hinges on a reading (it must be changed or made implementation-defined). The rules
 * stay the golden's own (golden_rules.c): an alternative is a switch inside them, not a second copy.
 *
 *   fr_golden_alt_diff d;
 *   fr_golden_alt_differs(&pb, &p, &in.fwd, FR_GALT_M0_MASK_ONLY, &d, &err);   // cheap: positions only, no scores
 *   if (d.count) fr_golden_fwd_alt(&pb, &p, &in.fwd, &out, &e, FR_GALT_M0_MASK_ONLY, &err);
 */
#ifndef FR_GOLDEN_ALT_H
#define FR_GOLDEN_ALT_H

#include "core/problem.h"

typedef enum fr_golden_alt {
    FR_GALT_NONE = 0,        /* the project's decisions */
    FR_GALT_M0_MASK_ONLY,    /* D12 mode 0: the user mask alone (pre/next only let a kernel skip blocks) */
    FR_GALT_M5_FORMULA_ONLY, /* D12 mode 5: the prefix formula alone (the mask's content ignored, as mode 6) */
    FR_GALT_M5_MASK_ONLY,    /* D12 mode 5: the user mask alone (no causal / prefix band, as mode 1) */
    FR_GALT_M78_END_BATCH,   /* D12 modes 7/8: the band on batch B-1 / batch 0 even when it has no queries */
    FR_GALT_D14_TOP_LEFT,    /* D14: a TND batch shorter than S at the top-left of the Toeplitz matrix */
    FR_GALT_D14_CLAMP,       /* D14: a diagonal the compressed pse does not hold reads its nearest column, not 0 */
    FR_GALT_D15_EVERY_BATCH, /* D15: ALiBi start indices apply to every batch in mode 8 */
    FR_GALT_D7_TOPK_ONCE,    /* D7: a key listed twice in a top-k row takes part once */
    FR_GALT_COUNT
} fr_golden_alt;

/* "D12 mode 0: the user mask alone ..." (the rule and the alternative reading, one line); "?" when out of range. */
const char *fr_golden_alt_name(fr_golden_alt a);

/* The golden forward / backward under reading a (FR_GALT_NONE: fr_golden_fwd / fr_golden_bwd). The problem comes
 * validated and the outputs checked, as for the engine's entries (golden_entry.h). */
fr_status fr_golden_fwd_alt(const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in,
                            const fr_fwd_outputs *out, const fr_engine *e, fr_golden_alt a, fr_error *err);
fr_status fr_golden_bwd_alt(const fr_problem *pb, const fr_params *p, const fr_bwd_inputs *in,
                            const fr_bwd_outputs *out, const fr_engine *e, fr_golden_alt a, fr_error *err);

/* Where reading a changes the problem's structure: the positions (b, h, i, j) whose multiplicity (taking part or
 * not, top-k occurrences) differs, or that take part with another pse value. Reads only the mask, pse, top-k,
 * prefix and sequence lengths (q, k, v and the rest may be shapes without data: casegen's structure build). */
typedef struct fr_golden_alt_diff {
    bool applies;            /* the problem has what the rule is about (e.g. mode 0 with a mask) */
    int64_t count;           /* positions that differ (heads that cannot differ are counted once) */
    int64_t b, h, i, j;      /* the first of them (batch-local i, j) */
    int m0, m1;              /* its multiplicity under the decision and under the alternative */
} fr_golden_alt_diff;
fr_status fr_golden_alt_differs(const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in, fr_golden_alt a,
                                fr_golden_alt_diff *d, fr_error *err);

#endif
