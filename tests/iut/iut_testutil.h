/* Helpers of the tests/iut tests: cases built from casegen specs through a case directory (so they are exactly what
 * an external implementation receives), the golden's fp64 outputs, and a per-dtype tolerance comparison. */
#ifndef FR_TESTS_IUT_TESTUTIL_H
#define FR_TESTS_IUT_TESTUTIL_H

#include "common/check.h"
#include "common/seed.h"
#include "io/casedir.h"
#include "verify/cases/casegen.h"
#include "verify/iut/iut.h"

#include <stdio.h>

/* A fresh directory under TMPDIR (malloc'd path); removed by iut_rmtree. */
char *iut_tmpdir(const char *tag);
void iut_rmtree(const char *dir);
/* Builds spec with seed, writes its inputs to a subdirectory of root and loads it back into c. */
fr_status iut_case(const fr_gen_spec *spec, uint64_t seed, const char *root, fr_case *c, fr_error *err);
/* The golden's fp64 outputs of c. */
fr_status iut_golden(const fr_case *c, fr_case_outputs *g, fr_error *err);
/* Every output of got within tolerance of the golden g: |a - g| <= atol + rtol |g| per element, by the output's
 * dtype (fp32 rtol 1e-4, fp16 4e-3, bf16 2e-2; atol the same times 0.1); a NaN anywhere fails. Returns the worst
 * |a - g| / (atol + rtol |g|) (> 1 is a mismatch, INFINITY for a missing output or a shape mismatch). */
double iut_compare(const fr_case_outputs *got, const fr_case_outputs *g);

#endif
