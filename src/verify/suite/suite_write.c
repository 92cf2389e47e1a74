/* `flashref suite --write` and `flashref golden --set`: the generated cases of a run as case directories (inputs,
 * case.json, golden/ fp64 outputs, suite.txt), so that an external implementation can run them and `flashref verify`
 * judge them. */
#include "verify/suite/suite_internal.h"

#include "core/core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static fr_status write_one(const fr_gen_case *g, const char *dir, fr_suite_cat cat, unsigned tags, fr_error *err) {
    fr_case c;
    fr_suite_case_view(g, &c);
    fr_status st = fr_case_write_parts(dir, c.op, c.dtype, &c.params, &c.in, err);
    if (st != FR_OK) return st;
    fr_case_outputs go;
    if ((st = fr_suite_run_engine(&c, FR_ENGINE_GOLDEN, &go, err)) != FR_OK) return st;
    char p[4200];
    snprintf(p, sizeof p, "%.4000s/golden", dir);
    mkdir(p, 0777);
    st = fr_case_write_outputs(p, &go, err);
    fr_case_outputs_free(&go);
    if (st != FR_OK) return st;
    snprintf(p, sizeof p, "%.4000s/suite.txt", dir);
    FILE *f = fopen(p, "w");
    if (!f) return fr_fail(err, errno == ENOMEM ? FR_E_NOMEM : FR_E_IO, "%s: cannot write: %s", p, strerror(errno));
    char nm[64];
    fr_suite_cat_key(cat, nm, sizeof nm);
    bool ok = fprintf(f, "category=%s tags=%u\n", nm, tags) > 0;
    ok = fclose(f) == 0 && ok; /* a full disk shows here: the line was only buffered */
    if (!ok) {
        int e = errno;
        unlink(p); /* absent, never a cut line the regression loader would misread */
        return fr_fail(err, FR_E_IO, "%s: write error: %s", p, strerror(e));
    }
    return FR_OK;
}

fr_status fr_suite_write_spec(const fr_gen_spec *spec, uint64_t seed, const char *dir, fr_suite_cat cat,
                              fr_error *err) {
    fr_gen_case g;
    fr_status st = fr_gen_build(spec, seed, &g, err);
    if (st != FR_OK) return st;
    mkdir(dir, 0777);
    st = write_one(&g, dir, cat, fr_suite_spec_tags(spec), err);
    fr_gen_case_free(&g);
    return st;
}

fr_status fr_suite_write_cases(const char *set, const char *filter, uint64_t seed, const char *dir, int *written,
                               fr_error *err) {
    return fr_suite_write_cases_part(set, filter, seed, dir, 0, 1, written, err);
}

/* Case k of the set is written when k % parts == part (mpirun flashref golden --set: one share per rank). */
static fr_status write_opts_part(const fr_suite_opts *o, const char *dir, int part, int parts, int *written,
                                 fr_error *err);

fr_status fr_suite_write_cases_part(const char *set, const char *filter, uint64_t seed, const char *dir, int part,
                                    int parts, int *written, fr_error *err) {
    fr_suite_opts o = fr_suite_opts_default();
    o.set = set;
    o.filter = filter;
    o.seed = seed;
    return write_opts_part(&o, dir, part, parts, written, err);
}

fr_status fr_suite_write_opts(const fr_suite_opts *o, const char *dir, int *written, fr_error *err) {
    return write_opts_part(o, dir, 0, 1, written, err);
}

static fr_status write_opts_part(const fr_suite_opts *o, const char *dir, int part, int parts, int *written,
                                 fr_error *err) {
    if (written) *written = 0;
    unsigned bits = fr_suite_set_bits(o->set);
    uint64_t seed = o->seed;
    if (!bits)
        return fr_fail(err, FR_E_INVALID_ARG, "--set: '%s': expected quick, default, long or all",
                       o->set ? o->set : "");
    fr_draw *draws;
    int nd;
    fr_status st = fr_suite_make_draws(o, &draws, &nd, err);
    if (st != FR_OK) return st;
    mkdir(dir, 0777);
    fr_suite_select sel = {o->filter, o->only};
    int n = fr_suite_collect(bits, &sel, draws, nd, NULL);
    fr_suite_item *it = calloc((size_t)n + 1, sizeof *it);
    if (!it) {
        free(draws);
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    }
    fr_suite_collect(bits, &sel, draws, nd, it);
    for (int k = 0; k < n && st == FR_OK; k++) {
        if (parts > 1 && k % parts != part) continue; /* another rank's case (mpirun flashref golden --set) */
        int variants = it[k].cat == FR_CAT_ORDER && it[k].spec->topk_w ? 4 : 1;
        for (int v = 0; v < variants && st == FR_OK; v++) {
            fr_gen_case g;
            if ((st = fr_gen_build(it[k].spec, seed, &g, err)) != FR_OK) break;
            st = fr_suite_apply_mod(&g, it[k].mod, err);
            fr_suite_override_params(&g.params, o);
            if (st == FR_OK && v) fr_suite_permute_topk(&g.in.fwd.topk_indices, v, g.seed);
            char p[4096];
            if (v)
                snprintf(p, sizeof p, "%s/%s_order%d", dir, it[k].spec->name, v);
            else
                snprintf(p, sizeof p, "%s/%s", dir, it[k].spec->name);
            if (st == FR_OK) st = write_one(&g, p, it[k].cat, it[k].tags, err);
            if (st == FR_OK && written) (*written)++;
            fr_gen_case_free(&g);
        }
    }
    free(it);
    free(draws);
    return st;
}
