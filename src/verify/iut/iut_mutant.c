/* Mutants as implementations under test (`--impl mutant:NAME`): the zoo of mutants.h behind the IUT interface.
 * Built only once the zoo exists (mutants.h); before that, opening a mutant reports FR_E_NOT_AVAILABLE. */
#include "verify/iut/iut_internal.h"

#include "core/core.h"

#include <stdio.h>
#include <string.h>

#if defined(__has_include)
#if __has_include("verify/zoo/mutants.h")
#define FR_HAVE_MUTANTS 1
#endif
#endif

fr_status fr_iut_mutant_open(const char *name, fr_iut *iut, fr_error *err);

#ifdef FR_HAVE_MUTANTS
#include "verify/zoo/mutants.h"

static fr_status mutant_run(fr_iut *iut, const fr_case *c, int threads, fr_case_outputs *o, fr_error *err) {
    (void)threads;
    const fr_mutant *m = iut->impl;
    /* Validate first, as every engine does: a mutant judges valid problems only. */
    fr_status st = c->op == FR_CASE_FWD ? fr_validate_fwd(&c->params, &c->in.fwd, NULL, err)
                                        : fr_validate_bwd(&c->params, &c->in, NULL, err);
    if (st != FR_OK) return st;
    if (c->op == FR_CASE_FWD)
        return m->fwd ? m->fwd(&c->params, &c->in.fwd, &o->fwd, err)
                      : fr_fail(err, FR_E_UNSUPPORTED, "mutant %s: no forward", m->name);
    return m->bwd ? m->bwd(&c->params, &c->in, &o->bwd, err)
                  : fr_fail(err, FR_E_UNSUPPORTED, "mutant %s: no backward", m->name);
}

static void mutant_close(fr_iut *iut) { (void)iut; }

static const fr_iut_ops kMutantOps = {mutant_run, mutant_close, NULL, NULL};

/* "base": the defect-free implementation every mutant is built from (not in the zoo): it must PASS, or the
 * mutants' verdicts mix their defect with the base's. */
static const fr_mutant kBase = {
    "base", "none: the mutants' defect-free base", FR_DIAG_NONE, FR_PASS, fr_mutant_base_fwd, fr_mutant_base_bwd,
    "none"};

fr_status fr_iut_mutant_open(const char *name, fr_iut *iut, fr_error *err) {
    const fr_mutant *m = strcmp(name, "base") ? fr_mutant_find(name) : &kBase;
    if (!m) {
        int n = 0;
        const fr_mutant *all = fr_mutants(&n);
        char list[400] = "";
        size_t len = 0;
        for (int k = 0; k < n && len + 40 < sizeof list; k++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", k ? ", " : "", all[k].name);
        return fr_fail(err, FR_E_INVALID_ARG, "--impl mutant:%s: unknown mutant (known: %s)", name, list);
    }
    iut->kind = FR_IUT_MUTANT;
    iut->ops = &kMutantOps;
    iut->impl = (void *)m;
    return FR_OK;
}
#else
fr_status fr_iut_mutant_open(const char *name, fr_iut *iut, fr_error *err) {
    (void)iut;
    return fr_fail(err, FR_E_NOT_AVAILABLE, "--impl mutant:%s: the mutant zoo is not in this build", name);
}
#endif
