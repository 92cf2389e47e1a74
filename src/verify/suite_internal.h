/* The suite's case table (suite_cases.c) and its post-processing steps, shared by the runner (suite.c). */
#ifndef FR_VERIFY_SUITE_INTERNAL_H
#define FR_VERIFY_SUITE_INTERNAL_H

#include "verify/casegen.h"
#include "verify/suite.h"

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
    FR_MOD_KEY_PAST_2G        /* K re-homed as a strided view whose element offsets pass 2^31 (BNSD; a sparse 5 GB
                                 virtual buffer, a few MB touched): 64-bit index arithmetic and strided inputs */
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

/* Judges a generated spec like a random draw (suite.c): IUT, golden, ideal pipeline, judge. */
fr_status fr_suite_judge_spec(fr_iut *iut, const fr_gen_spec *spec, const fr_suite_opts *o, fr_case_result *cr,
                              fr_error *err);
/* Writes a spec as a regression-style case directory: inputs, golden/ outputs, suite.txt (suite.c). */
fr_status fr_suite_write_spec(const fr_gen_spec *spec, uint64_t seed, const char *dir, fr_suite_cat cat,
                              fr_error *err);
/* Shrinks (o->shrink) and promotes (o->promote_dir) every failing draw of r (random.c). */
fr_status fr_suite_shrink_failures(fr_iut *iut, fr_suite_result *r, const fr_draw *draws, int nd,
                                   const fr_suite_opts *o, fr_error *err);

#endif
