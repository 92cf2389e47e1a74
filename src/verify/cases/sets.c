/* The suite's sets and their case list (sets.h): set names and bits, category names, the tags a spec implies, and
 * the cases a run selects (the table of suite_cases.c, casegen's cross-check grid, random draws), their coverage. */
#include "verify/cases/sets.h"

#include "core/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const fr_suite_set_names[] = {"quick", "default", "long", "all", NULL};

static const char *const kCatNames[FR_CAT_COUNT] = {"regression",       "boundaries", "equivalence", "properties",
                                                    "order invariance", "gradients",  "determinism",
                                                    "implementation-defined"};

const char *fr_suite_cat_name(fr_suite_cat c) { return (unsigned)c < FR_CAT_COUNT ? kCatNames[c] : "invalid"; }

void fr_suite_cat_key(fr_suite_cat c, char *buf, size_t n) {
    snprintf(buf, n, "%s", fr_suite_cat_name(c));
    for (char *p = buf; *p; p++)
        if (*p == ' ') *p = '_';
}

unsigned fr_suite_set_bits(const char *set) {
    if (!set || !strcmp(set, "default")) return FR_SET_DEFAULT;
    if (!strcmp(set, "quick")) return FR_SET_QUICK;
    if (!strcmp(set, "long")) return FR_SET_LONG;
    if (!strcmp(set, "all")) return FR_SET_QUICK | FR_SET_DEFAULT | FR_SET_LONG | FR_SET_ALL_ONLY;
    return 0;
}

bool fr_suite_set_known(const char *set) { return fr_suite_set_bits(set) != 0; }

/* ---------------------------------------------------------------------------------------------------------------- */
/* The case list: the table of suite_cases.c plus casegen's cross-check grid in the default set. */

unsigned fr_suite_spec_tags(const fr_gen_spec *s) {
    unsigned t = 0;
    int64_t n2 = s->N2 ? s->N2 : s->N1;
    if (n2 != s->N1) t |= FR_TAG_GQA;
    if (s->mask != FR_GEN_MASK_NONE) t |= FR_TAG_MASK;
    if (s->pse != FR_GEN_PSE_NONE) t |= FR_TAG_PSE;
    if (s->keep_prob > 0 && s->keep_prob < 1) t |= FR_TAG_DROPOUT;
    if (s->beta > 0) t |= FR_TAG_PEAKED;
    if (s->D % 8 != 0 || (s->Dv && s->Dv % 8 != 0)) t |= FR_TAG_HEADDIM;
    if (s->mask != FR_GEN_MASK_NONE &&
        (s->sparse_mode == FR_SPARSE_LEFT_UP_CAUSAL || s->sparse_mode == FR_SPARSE_RIGHT_DOWN_CAUSAL)) {
        bool ne = s->S1 != s->S2;
        if (s->layout == FR_TND)
            for (int64_t b = 0; b < s->B && b < FR_GEN_MAX_BATCH; b++)
                ne |= s->seq_q[b] != s->seq_kv[b];
        if (ne) t |= FR_TAG_CAUSAL_NE;
    }
    if (s->layout == FR_TND)
        for (int64_t b = 0; b < s->B && b < FR_GEN_MAX_BATCH; b++)
            if (s->seq_q[b] == 0 || s->seq_kv[b] == 0) t |= FR_TAG_VARLEN;
    return t;
}

fr_suite_item fr_suite_item_of_spec(const fr_gen_spec *s, const char *what, bool drawn) {
    return (fr_suite_item){NULL,        s,    s->bwd ? FR_CAT_GRADIENTS : FR_CAT_EQUIVALENCE, fr_suite_spec_tags(s),
                           FR_MOD_NONE, what, drawn, FR_MASK_HINT_DEFAULT};
}

static bool name_ok(const char *name, const char *filter) { return !filter || !*filter || strstr(name, filter); }
bool fr_suite_selected(const char *name, const fr_suite_select *sel) {
    return name_ok(name, sel->filter) && (!sel->only || !*sel->only || !strcmp(name, sel->only));
}

/* Fills items (when non-NULL) and returns the count: the random draws when there are any, else the set's cases. */
int fr_suite_collect(unsigned bits, const fr_suite_select *sel, const fr_draw *draws, int ndraws,
                     fr_suite_item *items) {
    int n = 0;
    if (draws) {
        for (int k = 0; k < ndraws; k++) {
            const fr_gen_spec *s = &draws[k].spec;
            if (!fr_suite_selected(s->name, sel)) continue;
            if (items) items[n] = fr_suite_item_of_spec(s, "random draw from the option matrix", true);
            n++;
        }
        return n;
    }
    for (int k = 0; k < fr_suite_entry_count; k++) {
        const fr_suite_entry *e = &fr_suite_entries[k];
        if (!(e->sets & bits) || !fr_suite_selected(e->spec.name, sel)) continue;
        if (items)
            items[n] = (fr_suite_item){e,      &e->spec, e->cat, e->tags | fr_suite_spec_tags(&e->spec),
                                       e->mod, e->what,  false, FR_MASK_HINT_DEFAULT};
        n++;
    }
    const fr_gen_set *xs = fr_gen_set_find("xcheck");
    if (xs && (bits & FR_SET_DEFAULT))
        for (int k = 0; k < xs->count; k++) {
            const fr_gen_spec *s = &xs->specs[k];
            if (!fr_suite_selected(s->name, sel)) continue;
            if (items) items[n] = fr_suite_item_of_spec(s, "cross-check grid (casegen xcheck)", false);
            n++;
        }
    return n;
}

int fr_suite_list(const char *set, const char *filter,
                  void (*fn)(void *ud, const char *name, fr_suite_cat cat, unsigned tags, const char *what), void *ud) {
    unsigned bits = fr_suite_set_bits(set);
    if (!bits) return 0;
    fr_suite_select sel = {filter, NULL};
    int n = fr_suite_collect(bits, &sel, NULL, 0, NULL);
    fr_suite_item *it = calloc((size_t)n + 1, sizeof *it);
    if (!it) return 0;
    fr_suite_collect(bits, &sel, NULL, 0, it);
    for (int k = 0; k < n && fn; k++)
        fn(ud, it[k].spec->name, it[k].cat, it[k].tags, it[k].what);
    free(it);
    return n;
}

/* Alike tests/kernels/kt_harness.c:kt_build: kept apart because only the shape is alike (field-by-field assignments of
 * different structs). */
void fr_suite_case_view(const fr_gen_case *g, fr_case *c) {
    memset(c, 0, sizeof *c);
    c->op = g->bwd ? FR_CASE_BWD : FR_CASE_FWD;
    c->dtype = g->dtype;
    c->params = g->params;
    c->prefix = g->prefix;
    c->actual_seq_qlen = g->cu_q;
    c->actual_seq_kvlen = g->cu_kv;
    c->in = g->in;
}

fr_status fr_suite_set_coverage(const char *set, fr_coverage *cv, fr_error *err) {
    unsigned bits = fr_suite_set_bits(set);
    if (!bits)
        return fr_fail(err, FR_E_INVALID_ARG, "--set: '%s': expected quick, default, long or all", set ? set : "");
    fr_suite_select sel = {NULL, NULL};
    int n = fr_suite_collect(bits, &sel, NULL, 0, NULL);
    fr_suite_item *it = calloc((size_t)n + 1, sizeof *it);
    if (!it) return fr_fail(err, FR_E_NOMEM, "suite: out of memory");
    fr_suite_collect(bits, &sel, NULL, 0, it);
    for (int k = 0; k < n; k++) {
        int cell[FR_AX_COUNT];
        fr_matrix_classify(it[k].spec, cell);
        fr_coverage_add(cv, cell);
    }
    free(it);
    return FR_OK;
}
