/* What the suite's files share: the run's draws (suite.c), post-processing and category checks (suite_modify.c),
 * judging one case (suite_judge.c), running (suite_run.c), regression folders (suite_regress.c), the summary
 * (suite_summary.c), --write (suite_write.c) and shrinking (suite_shrink.c). The sets and their case list are
 * cases/sets.h. Private to src/verify and its tests. */
#ifndef FR_VERIFY_SUITE_INTERNAL_H
#define FR_VERIFY_SUITE_INTERNAL_H

#include "verify/suite/suite.h"

#include <stddef.h>

/* ---- the run's draws and clock (suite.c) ---- */

/* The random draws a run asks for (o->random, or `--only rnd_K`); *d NULL, *n 0 when none. */
fr_status fr_suite_make_draws(const fr_suite_opts *o, fr_draw **d, int *n, fr_error *err);
double fr_suite_now_s(void); /* monotonic seconds, for case and run times */

/* ---- post-processing and category checks (suite_modify.c) ---- */

fr_status fr_suite_apply_mod(fr_gen_case *g, fr_suite_mod mod, fr_error *err);
/* The run's overrides of a case's parameters (o->set_inner_precise). */
void fr_suite_override_params(fr_params *p, const fr_suite_opts *o);
/* Top-k order variant 1..3 of the index tensor t, in place: reversed, a seeded shuffle, rotated by half a row. */
void fr_suite_permute_topk(const fr_tensor *t, int variant, uint64_t seed);
/* Explicit softmax properties of a V = I case (ideal: the ideal pipeline's outputs or NULL); may FAIL cr. */
void fr_suite_check_props(const fr_case *c, const fr_case_outputs *iut, const fr_case_outputs *ideal,
                          fr_case_result *cr);
/* Implementation-defined case: which reading the IUT's outputs follow (INFO in cr), never a FAIL on numbers.
 * FR_E_NOMEM (cr untouched) when a reading could not be computed for want of memory; else FR_OK. */
fr_status fr_suite_impldef_reading(const fr_case *c, const fr_case_outputs *iut, fr_case_result *cr, fr_error *err);
/* rel-L2 of output k of a against b over the elements finite in both (0 when either is absent). */
double fr_suite_out_rel_l2(const fr_case_outputs *a, const fr_case_outputs *b, fr_case_output k);

/* ---- judging one case (suite_judge.c) ---- */

/* Allocates o and runs a built-in engine on c; o is freed on failure. */
fr_status fr_suite_run_engine(const fr_case *c, fr_engine_kind kind, fr_case_outputs *o, fr_error *err);
/* Runs the IUT, the golden (unless stored_golden) and the ideal pipeline on c and judges into cr; iut_out_keep, when
 * non-NULL, receives the IUT's outputs (zeroed when it failed). */
fr_status fr_suite_judge_one(fr_iut *iut, const fr_case *c, const fr_case_outputs *stored_golden, unsigned tags,
                             const fr_suite_opts *o, fr_case_outputs *iut_out_keep, fr_case_result *cr, fr_error *err);
/* Lowers a PASS to v (WARN or FAIL), or a WARN to FAIL, with diagnosis d and why; a FAIL or a SKIP stays. */
void fr_suite_downgrade(fr_case_result *cr, fr_verdict v, fr_diag d, const char *why);
/* One case a run selects (fr_suite_collect), built, post-processed and judged into cr, with its category's checks. */
fr_status fr_suite_run_item(fr_iut *iut, const fr_suite_item *it, const fr_suite_opts *o, fr_case_result *cr,
                            fr_error *err);
/* Judges a generated spec like a random draw: IUT, golden, ideal pipeline, judge. */
fr_status fr_suite_judge_spec(fr_iut *iut, const fr_gen_spec *spec, const fr_suite_opts *o, fr_case_result *cr,
                              fr_error *err);

/* ---- regression folders (suite_regress.c) ---- */

/* Sorted paths DIR/NAME of the subdirectories of dir that hold a case.json (malloc'd); -1 with errno when dir
 * cannot be read or the list cannot be allocated (ENOMEM: nothing is returned). */
int fr_suite_list_case_dirs(const char *dir, char ***out);
const char *fr_suite_base_name(const char *p); /* the last component of a path */
/* Judges one case directory (against its stored golden/ when present); iut NULL: the outputs on disk. */
fr_status fr_suite_run_dir(fr_iut *iut, const char *dir, fr_suite_cat cat, const fr_suite_opts *o, fr_case_result *cr,
                           fr_error *err);

/* ---- summary (suite_summary.c) ---- */

/* Length series: WARNs the largest-S2 case of a series whose error / ideal's grows with S2. */
void fr_suite_check_growth(fr_suite_result *r, const fr_judge_opts *jo);

/* Writes a spec as a regression-style case directory: inputs, golden/ outputs, suite.txt (suite_write.c). */
fr_status fr_suite_write_spec(const fr_gen_spec *spec, uint64_t seed, const char *dir, fr_suite_cat cat,
                              fr_error *err);
/* Shrinks (o->shrink) and promotes (o->promote_dir) every failing draw of r (suite_shrink.c). */
fr_status fr_suite_shrink_failures(fr_iut *iut, fr_suite_result *r, const fr_draw *draws, int nd,
                                   const fr_suite_opts *o, fr_error *err);

#endif
