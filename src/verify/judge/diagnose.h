/* The diagnosis (docs/verification-method.md section 3, last bullet): the likeliest cause of a case the judge found
 * beyond its bounds, named only when evidence separates it from the alternatives.
 *
 * The evidence is a re-run: the golden (or the emulator, for a numerics defect) is run again on the case's own inputs
 * under each candidate defect of a fixed list (diagnose_cands.c, dg_cands; docs/verifier.md's candidate table says
 * what each one is, and docs/adding-a-diagnosis-candidate.md how to add one).
 * For each candidate c
 *     rho_c = max over the compared outputs k of  rel-L2(IUT_k, candidate_k) / bound_k
 * (compared: attention_out forward, dq dk dv backward; bound_k: the judge's rel-L2 bound of output k; rho_0 is the
 * same against the correct golden, > 1 for a failing case). The best candidate c* is named when it matches
 * (rho_c* <= 1.5, or <= rho_0 / 20 for a large defect), is clearly closer than the correct output (rho_0 >= 4 rho_c*)
 * and than every candidate of another diagnosis (each >= max(4 rho_c*, 1.5)). Otherwise only a shape unique to one
 * class names a cause (GQA: exactly the heads whose kv head differs under h / G and h % N2 are wrong; overflow: a
 * case built for overflow-sized sums whose output has whole rows zero or non-finite); else "unknown", and the error's
 * shape (each compared output's error in bounds, rows and heads above the bound, worst row, nearest candidate) is
 * appended to the verdict's line. The numerics candidates are re-run only when no other matched and the IUT's
 * rel-L2 is below 5 %. Bounded work: only for failing cases, only when B N1 S1 S2 (Dk + Dv) <= 1.5e9;
 * nothing is re-run for a WARN. */
#ifndef FR_VERIFY_DIAGNOSE_H
#define FR_VERIFY_DIAGNOSE_H

#include "verify/judge/diagnose_in.h"
#include "verify/judge/verdict.h"

/* Why the case's outputs are beyond their bounds: called once every output's bound is set in j (j->out[k]).
 * k_fail: the first output beyond its bound (attention_out or a gradient). shape: receives a short description of
 * the error's shape and the nearest candidate (always written, "" when none; n bytes). */
fr_diag fr_diagnose(const fr_diag_in *in, const fr_judgement *j, fr_case_output k_fail, char *shape, size_t n);

/* Why softmax_max / softmax_sum is beyond its bound (k: which one). */
fr_diag fr_diagnose_stats(const fr_diag_in *in, fr_case_output k);
/* For a 16-bit case inside its bounds but near them (WARN precision): whether the implementation is the textbook
 * attention in the input dtype (the native-dtype candidates), by the same matching rule; why names the candidate. */
bool fr_diagnose_native(const fr_diag_in *in, const fr_judgement *j, char *why, size_t n);

#endif
