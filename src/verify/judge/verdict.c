/* Verdict and diagnosis names, and the judgement's release (verdict.h). */
#include "verify/judge/verdict.h"

#include <stdlib.h>
#include <string.h>

const char *fr_verdict_name(fr_verdict v) {
    switch (v) {
    case FR_PASS: return "PASS";
    case FR_WARN: return "WARN";
    case FR_FAIL: return "FAIL";
    case FR_SKIP: return "SKIP";
    }
    return "INVALID";
}

static const char *const kDiagNames[] = {
#define FR_DIAG_NAME(id, name, text) name,
    FR_DIAGNOSES(FR_DIAG_NAME)
#undef FR_DIAG_NAME
};

static const char *const kDiagTexts[] = {
#define FR_DIAG_TEXT(id, name, text) text,
    FR_DIAGNOSES(FR_DIAG_TEXT)
#undef FR_DIAG_TEXT
};

const char *fr_diag_name(fr_diag d) { return (unsigned)d < FR_DIAG_COUNT ? kDiagNames[d] : "invalid"; }

const char *fr_diag_text(fr_diag d) { return (unsigned)d < FR_DIAG_COUNT ? kDiagTexts[d] : "invalid diagnosis"; }

fr_diag fr_diag_from_name(const char *name) {
    if (!name) return FR_DIAG_COUNT;
    for (int d = 0; d < FR_DIAG_COUNT; d++)
        if (strcmp(kDiagNames[d], name) == 0) return (fr_diag)d;
    return FR_DIAG_COUNT;
}

void fr_judgement_free(fr_judgement *j) {
    if (!j) return;
    free(j->gains);
    j->gains = NULL;
    j->n_gains = 0;
}
