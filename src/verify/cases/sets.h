/* The suite's named sets and their cases (verification-method.md 4): the categories, the case table
 * (suite_cases.c) with each case's sets, tags and post-processing, and the list of cases a run selects from it
 * (sets.c: the table, casegen's cross-check grid in the default set, or random draws of the option matrix). What
 * is drawn, not how it is run or judged: the suite (verify/suite/) runs these. */
#ifndef FR_VERIFY_CASES_SETS_H
#define FR_VERIFY_CASES_SETS_H

#include "verify/cases/casegen.h"
#include "verify/cases/matrix.h"
#include "verify/judge/judge.h"

#include <stddef.h>

typedef enum fr_suite_cat {
    FR_CAT_REGRESSION = 0,
    FR_CAT_BOUNDARIES,
    FR_CAT_EQUIVALENCE,
    FR_CAT_PROPERTIES,
    FR_CAT_ORDER,
    FR_CAT_GRADIENTS,
    FR_CAT_DETERMINISM,
    FR_CAT_IMPLDEF, /* implementation-defined: a point the spec leaves open; INFO says which reading, never FAIL */
    FR_CAT_COUNT
} fr_suite_cat;

const char *fr_suite_cat_name(fr_suite_cat c); /* "regression", "boundaries", ..., "order invariance", ... */

/* Named sets: "quick" (< 30 s), "default" (< 3 min on 2 cores), "long" (> 32K and > 64K keys), "all". */
bool fr_suite_set_known(const char *set);
extern const char *const fr_suite_set_names[]; /* NULL-terminated */

/* FR_SET_ALL_ONLY: in --set all but in no smaller set (the 1M-key case). */
enum { FR_SET_QUICK = 1u, FR_SET_DEFAULT = 2u, FR_SET_LONG = 4u, FR_SET_ALL_ONLY = 8u };

/* Post-processing of a generated case. */
typedef enum fr_suite_mod {
    FR_MOD_NONE = 0,
    FR_MOD_NAN_KV,            /* key columns masked for every query row, their K = NaN and V = +Inf (needs mask SS) */
    FR_MOD_SENTINEL,          /* pse (type 0, BNSS, fp32) in [-3e30, -1e30]: real scores far below any additive mask */
    FR_MOD_SENTINEL_1E4,      /* pse (type 0, BNSS) -1e4 on kept positions, 0 on masked ones (needs mask SS): a mask
                                 added as -1e4 puts the masked keys level with the real ones */
    FR_MOD_V_IDENTITY,        /* V = identity (Dv = S2, BNSD): attention_out is the probability matrix itself */
    FR_MOD_FIRST_TILE_MASKED, /* the first 128 keys masked for every row, every 7th row fully masked (needs mask SS) */
    FR_MOD_KEY_PAST_2G,       /* K re-homed as a strided view whose element offsets pass 2^31 (BNSD; a sparse 5 GB
                                 virtual buffer, a few MB touched): 64-bit index arithmetic and strided inputs */
    /* The hunt's value corners (suite/hunt.h); each needs the mask shape named. */
    FR_MOD_PAD_RIGHT,         /* [B,1,S1,S2] mask = right padding: batch b keeps its first L_b keys (b = 0 all) */
    FR_MOD_PAD_LEFT,          /* the same, left padding: batch b keeps its last L_b keys */
    FR_MOD_ONE_KEY            /* [S1,S2] mask keeping one key per row (nearly fully masked rows), every 5th row none */
} fr_suite_mod;

typedef struct fr_suite_entry {
    fr_suite_cat cat;
    unsigned sets; /* FR_SET_* */
    unsigned tags; /* FR_TAG_* beyond those derived from the spec */
    fr_suite_mod mod;
    const char *what;
    fr_gen_spec spec;
    const char *series; /* cases of one series differ only in S2: the error / ideal ratio must not grow along it */
} fr_suite_entry;

extern const fr_suite_entry fr_suite_entries[];
extern const int fr_suite_entry_count;

/* ---- the case list (sets.c) ---- */

/* One case a run selects: a table entry, a cross-check grid case or a random draw. */
typedef struct fr_suite_item {
    const fr_suite_entry *e; /* NULL for an xcheck case or a random draw */
    const fr_gen_spec *spec;
    fr_suite_cat cat;
    unsigned tags;
    fr_suite_mod mod;
    const char *what;
    bool drawn; /* a random draw (matrix.h) */
    fr_mask_hint hint; /* case.json hints.mask handed to the implementation (the hunt's mask handover axis) */
} fr_suite_item;

/* The case selection: --filter (substring) and --only (exact name). */
typedef struct fr_suite_select {
    const char *filter, *only;
} fr_suite_select;

unsigned fr_suite_set_bits(const char *set); /* FR_SET_* of a set name; 0 for an unknown one */
unsigned fr_suite_spec_tags(const fr_gen_spec *s); /* the FR_TAG_* a spec implies */
/* A generated case with no table entry (a random draw, a cross-check grid case): gradients when backward, else
 * equivalence; tags from the spec, no post-processing. */
fr_suite_item fr_suite_item_of_spec(const fr_gen_spec *s, const char *what, bool drawn);
bool fr_suite_selected(const char *name, const fr_suite_select *sel);
/* Fills items (when non-NULL) and returns the count: the random draws when there are any, else the set's cases. */
int fr_suite_collect(unsigned bits, const fr_suite_select *sel, const fr_draw *draws, int ndraws,
                     fr_suite_item *items);
/* A generated case as the fr_case the IUT, golden and judge take (views into g, no copy). */
void fr_suite_case_view(const fr_gen_case *g, fr_case *c);
/* The category name as suite.txt spells it: spaces as '_' ("order_invariance"). */
void fr_suite_cat_key(fr_suite_cat c, char *buf, size_t n);

/* Lists the cases of a set: calls fn once per case (name, category, tags, one-line description). Returns the count. */
int fr_suite_list(const char *set, const char *filter,
                  void (*fn)(void *ud, const char *name, fr_suite_cat cat, unsigned tags, const char *what), void *ud);

/* The coverage of a set's generated cases (without running them): the starting point of random batches. */
fr_status fr_suite_set_coverage(const char *set, fr_coverage *cv, fr_error *err);

#endif
