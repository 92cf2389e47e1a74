/* The judge (docs/verification-method.md 3): one case's verdict from the IUT's outputs, the fp64 golden's and the ideal
 * pipeline's (the emulator as the best kernel of the IUT's dtype, run on the same inputs). Every threshold is a
 * field of fr_judge_opts (printed by the suite, overridable on the command line); every verdict carries the numbers
 * that decided it and one diagnosis (verdict.h; diagnose.h: the golden re-run under candidate defects, a cause named
 * only when one matches, else "unknown" with the error's shape). */
#ifndef FR_VERIFY_JUDGE_H
#define FR_VERIFY_JUDGE_H

#include "io/casedir.h"
#include "verify/metrics.h"
#include "verify/verdict.h"

/* What a case exercises: guides the diagnosis when the error's shape alone is ambiguous. */
enum {
    FR_TAG_D1 = 1u << 0,         /* has fully masked rows */
    FR_TAG_NAN_KV = 1u << 1,     /* NaN/Inf placed in masked-out K/V */
    FR_TAG_LARGE = 1u << 2,      /* huge logits / large magnitudes */
    FR_TAG_SENTINEL = 1u << 3,   /* very negative real scores next to masked positions */
    FR_TAG_TAIL = 1u << 4,       /* lengths just below / above a tile size */
    FR_TAG_HEADDIM = 1u << 5,    /* head dim not a multiple of 8 */
    FR_TAG_VARLEN = 1u << 6,     /* TND with empty sequences */
    FR_TAG_INDEX64 = 1u << 7,    /* tensor of more than 2^31 elements */
    FR_TAG_DROPOUT = 1u << 8,    /* keep_prob < 1 */
    FR_TAG_PEAKED = 1u << 9,     /* q_i += beta k_i */
    FR_TAG_GQA = 1u << 10,       /* N1 != N2 */
    FR_TAG_CAUSAL_NE = 1u << 11, /* causal with S1 != S2 */
    FR_TAG_PSE = 1u << 12,       /* position bias */
    FR_TAG_MASK = 1u << 13,      /* mask / band / sparse mode */
    FR_TAG_LONG = 1u << 14       /* > 32K keys */
};

typedef struct fr_judge_opts {
    double k_out;       /* FAIL: attention_out rel-L2 above k_out x the ideal's (default 2) */
    double k_max;       /* FAIL: attention_out max abs error above k_max x the ideal's (default 4) */
    double k_grad;      /* FAIL: a gradient's rel-L2 above k_grad x the ideal's (default 3) */
    double k_stats;     /* FAIL: softmax max / sum error above k_stats x the ideal's (default 4) */
    double gain_warn;   /* WARN: row-gain rms above gain_warn x the noise floor (and x the ideal's) (default 2) */
    double growth_warn; /* WARN (suite): error / ideal's error grows by more than this factor along a length series
                           (default 2) */
    bool external;      /* fully masked rows are implementation-defined (D1): finite required, not compared */
} fr_judge_opts;

fr_judge_opts fr_judge_opts_default(void);

/* One output tensor's comparison. */
typedef struct fr_out_judgement {
    bool present;
    fr_metrics m;     /* IUT vs golden */
    fr_metrics ideal; /* ideal pipeline vs golden */
    bool have_ideal;
    double bound_l2;    /* the rel-L2 threshold applied */
    double bound_abs;   /* the max abs threshold applied (0: not applied) */
    double apriori_abs; /* the a-priori ceiling (attention_out only; 0: not applied) */
    double ratio;       /* max over the applied thresholds of measured / threshold */
} fr_out_judgement;

#define FR_HEAT_R 32 /* heat map rows (query row buckets) */
#define FR_HEAT_C 16 /* heat map columns (head-dim column buckets) */

typedef struct fr_judgement {
    fr_verdict verdict;
    fr_diag diag;
    char why[384]; /* the numbers that decided it, one line */
    fr_out_judgement out[FR_CASE_NUM_OUTPUTS];
    int64_t d1_rows; /* fully masked rows in the golden */
    double ratio;    /* worst measured / threshold over every check (< 1 = inside) */
    /* For reports: |error| / ulp of attention_out over query rows x columns (max per bucket), and the row gains. */
    float heat[FR_HEAT_R][FR_HEAT_C];
    int heat_rows, heat_cols;
    double *gains; /* malloc'd row gains of attention_out (n_gains); NULL if none */
    int64_t n_gains;
} fr_judgement;

void fr_judgement_free(fr_judgement *j);

/* Judges one case. tags: what the case exercises; purpose: the subset it was designed for (its tag-based diagnosis
 * is preferred to the error-shape heuristics). iut_st / iut_msg: what running the IUT returned (FR_E_UNSUPPORTED =
 * SKIP). iut: its outputs (ignored unless iut_st is FR_OK). golden: fp64 outputs; ideal: the ideal pipeline's outputs
 * (NULL when it could not run: the floors of the dtype are used). Returns FR_OK when a verdict was reached (even FAIL);
 * else an internal error (out of memory). */
fr_status fr_judge(const fr_case *c, unsigned tags, unsigned purpose, const fr_judge_opts *opt, fr_status iut_st,
                   const char *iut_msg, const fr_case_outputs *iut, const fr_case_outputs *golden,
                   const fr_case_outputs *ideal, fr_judgement *j, fr_error *err);

/* Bitwise equality of two outputs (determinism); *first receives the first differing output or -1. */
bool fr_outputs_identical(const fr_case_outputs *a, const fr_case_outputs *b, int *first);

#endif
