/* The judge's a-priori scales (judge_apriori.c): ceilings and conditions of a case's error computed from its inputs
 * and the proved rounding bounds alone (proofs/round, core/osm_bound.h), never from an implementation's outputs, so
 * that no reference can talk the judge into a bound. Internal to the judge. */
#ifndef FR_VERIFY_JUDGE_APRIORI_H
#define FR_VERIFY_JUDGE_APRIORI_H

#include "core/problem.h"
#include "io/casedir.h"

/* Unit roundoff of a dtype (half an ulp at 1; fp32's for a dtype it does not know). */
double fr_judge_unit_roundoff(fr_dtype dt);
/* Ceiling on attention_out's max abs error of any fp32 implementation of case c (problem pb), outputs in out_dt. */
double fr_judge_apriori_abs(const fr_case *c, const fr_problem *pb, fr_dtype out_dt);
/* The absolute scale of gradient k's rounding where its golden is exactly zero (0 for outputs it does not cover). */
double fr_judge_apriori_grad_abs(const fr_case *c, const fr_problem *pb, fr_case_output k);
/* The condition of dsink's sum of terms of both signs over the heads (>= 1; 1 when it cannot be formed). */
double fr_judge_dsink_cond(const fr_case *c, const fr_problem *pb);

#endif
