/* What the case-directory files share: casedir.c (case.json parsed, inputs loaded), casedir_write.c (cases and
 * outputs written) and casedir_outputs.c (outputs allocated, checked, read). Internal to io. */
#ifndef FR_IO_CASEDIR_INTERNAL_H
#define FR_IO_CASEDIR_INTERNAL_H

#include "io/casedir.h"

/* Integers travel as JSON numbers (doubles): exact only up to 2^53. */
#define FR_CASE_JSON_INT_MAX 9007199254740992.0

/* The dtype names case.json uses for "dtype" and "out_dtype" (docs/case-format.md); FR_DT_NONE for any other. */
fr_dtype fr_case_dtype_from_name(const char *s);

/* Outputs from dq on are the backward's. */
static inline bool fr_case_output_is_bwd(int k) { return k >= FR_CO_DQ; }

#endif
