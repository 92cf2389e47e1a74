/* Verdicts and diagnoses (docs/verification-method.md 3): what one case of a suite concluded, with the numbers that
 * decided it. Shared by the judge, the suites, the mutant zoo (each mutant names the diagnosis it must get) and the
 * reports. */
#ifndef FR_VERIFY_VERDICT_H
#define FR_VERIFY_VERDICT_H

#include "io/casedir.h"
#include "verify/metrics/metrics.h"

typedef enum fr_verdict { FR_PASS = 0, FR_WARN = 1, FR_FAIL = 2, FR_SKIP = 3 } fr_verdict;
const char *fr_verdict_name(fr_verdict v); /* "PASS", "WARN", "FAIL", "SKIP" */

/* The likeliest cause (docs/verification-method.md 3 and 5; diagnose.h): a candidate defect that the golden re-run shows, a shape
 * unique to one class, or "unknown". One per known failure class. */
#define FR_DIAGNOSES(X)                                                                                             \
    X(NONE, "none", "no defect found")                                                                              \
    X(ERROR_STATUS, "error-status", "the implementation returned an error status")                                  \
    X(CRASH, "crash", "the implementation crashed, exited or was killed before finishing the case")                \
    X(TIMEOUT, "timeout", "the implementation did not finish the case within the timeout (--timeout)")             \
    X(SHAPE, "shape", "output shape or dtype wrong")                                                                \
    X(UNWRITTEN, "unwritten", "output elements left unwritten (still NaN prefill) or guard words overwritten")      \
    X(NAN_FULLY_MASKED, "nan-fully-masked", "NaN/Inf on fully masked rows or tiles")                                \
    X(FULLY_MASKED, "fully-masked", "fully masked rows do not follow D1 (out 0, max -FLT_MAX, sum FLT_MAX)")         \
    X(MASK_SENTINEL, "mask-sentinel", "mask written as a finite additive sentinel that collides with real scores")  \
    X(NAN_LEAK, "nan-leak", "NaN/Inf in masked-out K/V leaks into the output")                                      \
    X(OVERFLOW, "overflow", "overflow with large logits or narrow accumulators")                                    \
    X(CAUSAL_ALIGN, "causal-align", "causal mask aligned top-left where bottom-right was meant (or vice versa)")     \
    X(TILE_TAIL, "tile-tail", "error confined to a tile tail / unaligned length (off by one)")                       \
    X(HEAD_DIM, "head-dim", "error only for head dims not a multiple of the vector width")                          \
    X(INDEX32, "index32", "32-bit index overflow past 2^31 elements")                                                \
    X(VARLEN, "varlen", "varlen batches: zero-length sequences or reads past cu_seqlens")                           \
    X(DROPOUT, "dropout", "dropout mask or scaling differs (forward vs backward, or 1/keep_prob)")                   \
    X(STALE_MAX, "stale-max", "whole rows scaled: stale running max with rounded P (coherent row gain)")            \
    X(GQA_MAP, "gqa-map", "GQA head mapping wrong (h % N2 instead of h / G)")                                       \
    X(PSE_ORDER, "pse-order", "scale applied before vs after pse (pse_type 0 vs 1)")                                \
    X(LSE_FOR_SUM, "lse-for-sum", "log-sum-exp stored where the sum was expected (softmax_sum)")                    \
    X(SOFTMAX_STATS, "softmax-stats", "softmax_max / softmax_sum wrong while the output is right")                  \
    X(ORDER_DEPENDENCE, "order-dependence", "result changes with KV order beyond the noise floor")                  \
    X(NONDETERMINISM, "nondeterminism", "results differ between repeated runs or thread counts")                    \
    X(GRADIENT, "gradient", "gradients wrong while the forward is right")                                           \
    X(PRECISION, "precision", "error above the ideal pipeline's by more than the allowed factor")                   \
    X(GROWTH, "growth", "error grows with sequence length faster than the ideal pipeline's")                       \
    X(MASK, "mask", "error confined to masked / band positions (mask or sparse mode wrong)")                        \
    X(PSE, "pse", "error that follows the position bias")                                                           \
    X(SCALE, "scale", "every row off by a smooth factor: scale_value applied wrongly")                             \
    X(NAN, "nan", "NaN/Inf where the golden is finite (no more specific cause found)")                            \
    X(BAND, "band", "band or causal bounds off by one (pre_tokens / next_tokens +-1)")                             \
    X(NO_RESCALE, "no-rescale", "accumulator not rescaled when the running max grows (online softmax)")           \
    X(ACCUMULATION, "accumulation", "output accumulated in fp16 instead of fp32")                                  \
    X(P_ROUNDING, "p-rounding", "P rounded to another dtype (or truncated) before P.V")                            \
    X(GRAD_SCALE, "grad-scale", "a gradient (dq or dk) missing the softmax scale or scaled twice")                 \
    X(DPSUM, "dpsum", "dpsum D = rowsum(dO * O) computed wrongly (from dO alone, or zero)")                        \
    X(DKDV_REDUCE, "dkdv-reduce", "dK/dV of a kv head not summed over its G query heads")                          \
    X(NATIVE_DTYPE, "native-dtype", "scores or softmax computed in the input dtype (a textbook 16-bit attention: "  \
                                    "scores and P rounded to bf16 / fp16), not in fp32 (see --standard fa)")        \
    X(INPUT, "input-error", "the case itself could not be used (an invalid or broken case directory, or a stored "  \
                            "golden that a fresh ideal pipeline contradicts): not the implementation's fault")      \
    X(UNKNOWN, "unknown", "beyond the bounds, but no candidate defect matches (see the error's shape)")

typedef enum fr_diag {
#define FR_DIAG_ENUM(id, name, text) FR_DIAG_##id,
    FR_DIAGNOSES(FR_DIAG_ENUM)
#undef FR_DIAG_ENUM
    FR_DIAG_COUNT
} fr_diag;

const char *fr_diag_name(fr_diag d); /* "stale-max" */
const char *fr_diag_text(fr_diag d); /* one line for people */
fr_diag fr_diag_from_name(const char *name); /* FR_DIAG_COUNT when unknown */

/* One case's judgement (fr_judge, judge.h): its verdict, its diagnosis and every number that decided them. */

/* One output tensor's comparison. */
typedef struct fr_out_judgement {
    bool present;
    fr_metrics m;     /* IUT vs golden */
    fr_metrics ideal; /* ideal pipeline vs golden */
    bool have_ideal;
    fr_metrics plain; /* plain reference vs golden */
    bool have_plain;
    double x_plain, x_ideal; /* rel-L2 (softmax stats: max rel) as a multiple of the plain's / the ideal's (0: none) */
    /* msprobe-style columns of the IUT against the golden: share of elements whose relative error exceeds 1/1000
     * and 5/1000 (cosine, max abs / rel are in m) */
    double frac_1e3, frac_5e3;
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

#endif
