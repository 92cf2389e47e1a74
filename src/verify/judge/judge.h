/* The judge (docs/verification-method.md 3): one case's verdict from the IUT's outputs, the fp64 golden's, the ideal
 * pipeline's (the emulator as the best kernel of the IUT's dtype, run on the same inputs) and the plain reference's
 * (plain_ref.h: what an ordinary correct implementation of that dtype reaches). Bounds are k x max(plain, ideal,
 * floor): FAIL above, WARN in the band above warn_frac of it; each verdict states the error as a multiple of the
 * plain reference's and of the ideal pipeline's. A reference (ideal or plain) with NaN/Inf where the golden is
 * finite, or far off the golden (the plain reference: above 64 x the ideal pipeline's error), is not used and the
 * verdict says so. Every threshold is a
 * field of fr_judge_opts (printed by the suite, overridable on the command line); every verdict carries the numbers
 * that decided it and one diagnosis (verdict.h; diagnose.h: the golden re-run under candidate defects, a cause named
 * only when one matches, else "unknown" with the error's shape). */
#ifndef FR_VERIFY_JUDGE_H
#define FR_VERIFY_JUDGE_H

#include "io/casedir.h"
#include "verify/metrics/metrics.h"
#include "verify/judge/diagnose_in.h"
#include "verify/judge/verdict.h"

/* Precision standards a run can be judged by (--standard), printed with every run. */
typedef enum fr_standard {
    FR_STD_FLASHREF = 0, /* k x max(plain, ideal, floor) on rel-L2 / max abs, WARN band, row gain (default) */
    FR_STD_ASCEND_L0 = 1,/* Ascend dual benchmark against the plain reference: max-rel / mean-rel / RMSE ratios
                            <= 10 / 2 / 2, plus the dtype's mean-relative threshold */
    FR_STD_ASCEND_L1 = 2,/* ratios <= 5 / 1.5 / 1.5 */
    FR_STD_ASCEND_L2 = 3,/* ratios <= 2 / 1.2 / 1.2 */
    FR_STD_FA = 4        /* FlashAttention's tests: max abs error <= 2 x the plain reference's (+ 1 ulp of slack) */
} fr_standard;
const char *fr_standard_name(fr_standard s);
/* FR_OK and *s for "flashref", "ascend-L0", "ascend-L1", "ascend-L2", "fa"; FR_E_INVALID_ARG otherwise. */
fr_status fr_standard_parse(const char *name, fr_standard *s, fr_error *err);

typedef struct fr_judge_opts {
    double k_out;       /* FAIL: attention_out rel-L2 above k_out x max(plain's, ideal's, floor) (default 2) */
    double k_max;       /* FAIL: attention_out max abs error above k_max x max(plain's, ideal's, 1 ulp) (default 4) */
    double k_grad;      /* FAIL: a gradient's rel-L2 above k_grad x max(plain's, ideal's, floor) (default 3) */
    double k_stats;     /* FAIL: softmax max / sum error above k_stats x max(plain's, ideal's) (default 4) */
    double warn_frac;   /* WARN: a rel-L2 above warn_frac x its FAIL bound (default 0.75; outputs of >= 1024
                           elements) */
    double gain_warn;   /* WARN: row-gain rms above gain_warn x the noise floor and x the plain reference's (and
                           the ideal's) (default 2) */
    fr_standard standard; /* which standard decides PASS / FAIL (default FR_STD_FLASHREF) */
    double growth_warn; /* WARN (suite): error / ideal's error grows by more than this factor along a length series
                           (default 2) */
    bool external;      /* fully masked rows are implementation-defined (D1): finite required, not compared */
    unsigned absent_ok; /* outputs (1u << fr_case_output) the IUT may leave absent: not judged (an msprobe dump that
                           holds no dsink of a call); present ones are judged as always */
} fr_judge_opts;

fr_judge_opts fr_judge_opts_default(void);

/* Judges one case. tags: what the case exercises; purpose: the subset it was designed for (its tag-based diagnosis
 * is preferred to the error-shape heuristics). iut_st / iut_msg: what running the IUT returned (FR_E_UNSUPPORTED =
 * SKIP). iut: its outputs (ignored unless iut_st is FR_OK). golden: fp64 outputs; ideal: the ideal pipeline's outputs
 * (NULL when it could not run: the floors of the dtype are used). Returns FR_OK when a verdict was reached (even FAIL);
 * else an internal error (out of memory). */
fr_status fr_judge(const fr_case *c, unsigned tags, unsigned purpose, const fr_judge_opts *opt, fr_status iut_st,
                   const char *iut_msg, const fr_case_outputs *iut, const fr_case_outputs *golden,
                   const fr_case_outputs *ideal, fr_judgement *j, fr_error *err);
/* The same with the plain reference's outputs (operator dtypes; NULL: bounds from the ideal pipeline alone). */
fr_status fr_judge_plain(const fr_case *c, unsigned tags, unsigned purpose, const fr_judge_opts *opt,
                         fr_status iut_st, const char *iut_msg, const fr_case_outputs *iut,
                         const fr_case_outputs *golden, const fr_case_outputs *ideal, const fr_case_outputs *plain,
                         fr_judgement *j, fr_error *err);
/* The plain reference's outputs of case c, allocated in the operator's dtypes (FR_E_NOT_AVAILABLE where it is not
 * modelled: fp8 backward); under --standard fa (opt->standard), for 16-bit inputs, the one in the input dtype
 * throughout (fr_plain_fwd_native, q scaled first: FlashAttention's own test baseline). opt may be NULL. */
fr_status fr_judge_run_plain(const fr_case *c, const fr_judge_opts *opt, fr_case_outputs *o, fr_error *err);

/* Whether a stored golden (a case directory's golden/, which whoever wrote the outputs there could write too) agrees
 * with a fresh ideal pipeline run on the case's inputs (issue 28: all-zero golden files made all-zero outputs PASS):
 * false, with why naming the file, when it is contradicted: NaN/Inf positions that differ, an output more than half
 * its norm off, attention_out off by more than the a-priori ceiling of any correct implementation. */
bool fr_judge_golden_agrees(const fr_case *c, const fr_case_outputs *golden, const fr_case_outputs *ideal,
                            char *why, size_t n);

/* Bitwise equality of two outputs (determinism); *first receives the first differing output or -1. */
bool fr_outputs_identical(const fr_case_outputs *a, const fr_case_outputs *b, int *first);

#endif
