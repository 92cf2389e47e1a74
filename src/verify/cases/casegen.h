/* Case generation in memory: seeded random attention problems (inputs + params) described by a small spec struct,
 * and the named sets of them ("smoke", "xcheck", ...) that `flashref golden`, the suites and the tests use.
 *
 *   const fr_gen_set *s = fr_gen_set_find("xcheck");
 *   for (int k = 0; k < s->count; k++) {
 *       fr_gen_case c;
 *       if (fr_gen_build(&s->specs[k], seed, &c, &err) != FR_OK) ...;   // inputs of a forward or backward case
 *       ... fr_fwd(&c.params, &c.in.fwd, ...) or fr_bwd(&c.params, &c.in, ...) ...
 *       fr_gen_case_free(&c);
 *   }
 *
 * Everything random comes from the Philox generator of core/rng.h with one stream per tensor, so a case depends only
 * on (spec, seed). Floating inputs are normal samples in fp32 rounded to the case's dtype with the dtype's encoder
 * (round to nearest even, saturating). Masks are the canonical ones of each sparse mode (compressed 2048x2048
 * triu(1) for modes 2, 3, 4, 7, 8; 3072x2048 for mode 6); modes 0, 1, 5 get a random user mask, inside the
 * operator's contract where the spec asks one (mode 0: it holds the band; mode 5: it is the formula), so that no
 * verdict hinges on a reading the spec leaves open (mask_any keeps the random one for implementation-defined
 * cases). Backward cases also carry dy (random) and attention_in / softmax_max / softmax_sum from the golden forward
 * (attention_in in the input dtype, max/sum fp32), as the operator's backward would receive them.
 *
 * To add a set: add a static array of fr_gen_spec and one row to the set table in casegen.c. What each option's
 * tensor looks like (and which sparse modes take a canonical compressed mask) is case_shapes.h, shared with the
 * kernel and golden tests' builders.
 */
#ifndef FR_VERIFY_CASEGEN_H
#define FR_VERIFY_CASEGEN_H

#include "flashref.h"
#include "verify/cases/case_shapes.h"

#define FR_GEN_MAX_BATCH 16 /* TND sequence-length arrays in a spec */

/* One case to generate. Zero fields take the defaults noted. */
typedef struct fr_gen_spec {
    const char *name;          /* case directory name; unique within its set */
    bool bwd;                  /* backward case */
    fr_dtype dtype;            /* q/k/v (and dy); FR_DT_NONE = fp32 */
    fr_layout layout;          /* FR_LAYOUT_NONE = BNSD */
    int64_t B, N1, N2, S1, S2, D, Dv, Drope; /* N2 0 = N1; Dv 0 = D; TND: B, S1, S2 come from seq_q/seq_kv */
    int64_t seq_q[FR_GEN_MAX_BATCH], seq_kv[FR_GEN_MAX_BATCH]; /* TND per-batch lengths (not cumulative), B of them */
    double scale;              /* 0 = 1/sqrt(D) */
    int sparse_mode;
    int64_t pre_tokens, next_tokens; /* used when set_band */
    bool set_band;             /* false: defaults 2147483647 */
    fr_gen_mask mask;
    int pse_type;              /* 0..3; the spec's default 1 when pse is NONE */
    fr_gen_pse pse;
    int64_t q_start_idx, kv_start_idx;
    double keep_prob;          /* 0 = 1 (no dropout) */
    bool sink;
    int64_t topk_w;            /* 0 = no top-k; else W slots */
    bool topk_per_kv_head;     /* [B,N2,S1,W] instead of [B,S1,W] */
    double beta;               /* peaked inputs: q_i += beta * k_i (0 = iid) */
    bool prefix;               /* modes 5/6: generate a prefix array */
    bool mask_any;             /* keep the random user mask where readings of the spec differ (implementation-
                                  defined cases). Default: mode 5's mask agrees with the formula (masked iff
                                  j > i + S2 - S1 and j >= prefix[b]; none without a prefix) and mode 0's mask holds
                                  the band (masked where j - i > next or i - j > pre), so every reading agrees */
    bool topk_dup;             /* keep repeated keys in a top-k row (implementation-defined); default: a repeat is -1,
                                  so "once per occurrence" (D7) and "once" agree */
    fr_softmax_layout softmax_layout;
    int inner_precise;
    fr_dtype out_dtype;        /* fp8 inputs: FR_F16 or FR_BF16 (FR_DT_NONE = the spec's default) */
    double in_scale;           /* standard deviation of q/k/v samples; 0 = 1 */
} fr_gen_spec;

/* A generated case. Owns every buffer: params.prefix / actual_seq_* point into prefix / cu_q / cu_kv, every present
 * tensor's data is malloc'd. Forward cases use in.fwd only. */
typedef struct fr_gen_case {
    char name[96];
    bool bwd;
    fr_dtype dtype;
    fr_params params;
    fr_bwd_inputs in;
    int64_t *prefix, *cu_q, *cu_kv;
    uint64_t seed; /* fr_gen_case_seed(seed, name): the seed of every stream of this case */
} fr_gen_case;

/* The seed a case's tensors are drawn with: a hash of (seed, spec name), so that cases of one set are independent
 * of each other while (set seed, case name) still reproduces each one. Stored in fr_gen_case.seed. */
uint64_t fr_gen_case_seed(uint64_t seed, const char *name);

/* Builds the case of `spec` with `seed` (every tensor's stream is fixed, so (spec, seed) determines the case).
 * Backward cases run the golden forward to make attention_in / softmax_max / softmax_sum (fp8 backward:
 * FR_E_UNSUPPORTED). Errors: FR_E_INVALID_ARG for an inconsistent spec (message names the field), FR_E_OVERFLOW,
 * FR_E_NOMEM, or the golden's status. On failure c is left empty. */
fr_status fr_gen_build(const fr_gen_spec *spec, uint64_t seed, fr_gen_case *c, fr_error *err);
void fr_gen_case_free(fr_gen_case *c);

/* The case's shapes with the data of only the tensors that decide which positions take part and where their pse
 * is read (atten_mask, topk_indices, a compressed pse, ALiBi slopes; prefix and sequence lengths are always real),
 * as fr_gen_build draws them:
 * q, k, v and the rest are shapes whose data must not be read, and a backward case gets no golden forward. For
 * checks of the masking structure over thousands of cases (tests/verify/decision_sensitivity.c). */
fr_status fr_gen_build_structure(const fr_gen_spec *spec, uint64_t seed, fr_gen_case *c, fr_error *err);

/* Whether the case of `spec` is one the operator accepts: builds its shapes only (no data drawn, no golden run) and
 * runs the validator on them (fr_validate_fwd / fr_validate_bwd), so thousands of draws are checked in milliseconds.
 * FR_OK, or the generator's or the validator's status and message (fp8 backward: FR_E_UNSUPPORTED). */
fr_status fr_gen_check(const fr_gen_spec *spec, fr_error *err);

/* Writes c as a case directory (docs/case-format.md): validates first (nothing is written for an invalid case), then
 * dir/case.json and the inputs, then, unless inputs_only, the golden engine's fp64 outputs. */
fr_status fr_gen_case_write(const fr_gen_case *c, const char *dir, bool inputs_only, fr_error *err);

/* The ALiBi slopes recipe of spec 5.1 for N heads: slopes[0..N). */
void fr_gen_alibi_slopes(int64_t n, float *slopes);

/* Named sets. */
typedef struct fr_gen_set {
    const char *name;
    const char *doc;
    const fr_gen_spec *specs;
    int count;
} fr_gen_set;

/* The set called name, or NULL. */
const fr_gen_set *fr_gen_set_find(const char *name);
/* All sets: *count receives their number. */
const fr_gen_set *fr_gen_sets(int *count);

#endif
