/* Numerics experiments on the emulator (docs/emulator.md), shared by `flashref study` and tests/emulate.
 *
 * Order invariance (the FA4 sparse-MLA experiment, docs/emulator.md): absorbed sparse MLA, one kv head, head dims Dl latent + Dr rope, key == value latent,
 * scale (Dl + Dr)^-0.5, causal top-k rows that always list the query's own key, peaked inputs
 * (q_t += beta k_t, qv_t += beta v_t), bf16. The same key set is laid out in different slot orders and run through a
 * numerics configuration; outputs and gradients are compared with the fp64 reference and with each other. */
#ifndef FR_STUDY_EMU_STUDY_H
#define FR_STUDY_EMU_STUDY_H

#include "flashref_emulate.h"

#include "verify/metrics/metrics.h"

/* One sparse-MLA problem: TND, B = 1, T query tokens = T keys, H query heads, one kv head. */
typedef struct fr_mla_case {
    int64_t T, W, H, Dl, Dr;
    int64_t nkeys;          /* valid keys listed per row (<= W), the rest -1; rows t < nkeys list t + 1 keys */
    int64_t cu[1];          /* actual_seq_qlen = actual_seq_kvlen = {T} */
    fr_params p;
    fr_fwd_inputs in;       /* query [T,H,Dl], query_rope [T,H,Dr], key = value [T,1,Dl], key_rope [T,1,Dr],
                               topk_indices [T,W] int32 (bf16 tensors) */
    fr_tensor dy;           /* [T,H,Dl] bf16 */
    int32_t *keys;          /* [T][nkeys]: the row's key set, self first then ascending; -1 padded */
    int64_t *nvalid;        /* [T] valid keys per row (0 for rows made all-invalid) */
    uint16_t *kbuf;         /* the shared key/value latent */
} fr_mla_case;

/* Arrangements of each row's key set into its W slots. */
typedef enum fr_mla_order {
    FR_MLA_SELF_SLOT0 = 0,  /* self in slot 0 (a top-k indexer's strongest-first list), others ascending after it */
    FR_MLA_SELF_LAST = 1,   /* others ascending, self in the last valid slot */
    FR_MLA_SELF_AT = 2,     /* self at slot `arg` (clamped to the valid count), others ascending around it */
    FR_MLA_RANDOM = 3,      /* a random permutation of the key set (seed arg) */
    FR_MLA_SCATTER = 4      /* a random permutation spread over all W slots with -1 sentinels between (seed arg) */
} fr_mla_order;

fr_status fr_mla_case_make(fr_mla_case *mc, int64_t T, int64_t W, int64_t H, int64_t Dl, int64_t Dr,
                           int64_t nkeys, double beta, uint64_t seed, fr_error *err);
void fr_mla_case_free(fr_mla_case *mc);
/* Rows t with t % every == every - 1 get no valid key at all (D1 rows); every = 0: none. Call before arrange. */
void fr_mla_case_invalidate_rows(fr_mla_case *mc, int64_t every);
/* Rewrites topk_indices. */
void fr_mla_case_arrange(fr_mla_case *mc, fr_mla_order order, uint64_t arg);
/* In the emulator's processing order of nc (forward/reverse tiles), the slot arrangement that processes the self
 * key first (first = true) or last. */
fr_mla_order fr_mla_order_for(const fr_numerics *nc, bool first);

/* One run: the forward's tensors (kept for the backward) and fp64 copies, all [rows][D]: out [T*H][Dl],
 * dq [T*H][Dl], dqr [T*H][Dr], dk, dv [T][Dl], dkr [T][Dr]; m, l [T*H] (natural units). */
typedef struct fr_mla_run {
    const fr_numerics *nc;  /* NULL: the fp64 golden */
    fr_tensor t_out, t_olo, t_m, t_l;
    double *out, *olo, *m, *l;
    double *dq, *dqr, *dk, *dv, *dkr;
} fr_mla_run;

/* Forward with nc (NULL: the fp64 golden): output bf16 (golden: fp64) plus o_lo (fp32). */
fr_status fr_mla_fwd(const fr_mla_case *mc, const fr_numerics *nc, int threads, fr_mla_run *r, fr_error *err);
/* Backward of the run's numerics with its dpsum overridden by `dpsum`, gradients rounded to bf16 (golden: the
 * "exact" emulator, which agrees with the golden to 1e-12, with D from the fp64 output; fp64 gradients). */
fr_status fr_mla_bwd(const fr_mla_case *mc, fr_emu_dpsum dpsum, int threads, fr_mla_run *r, fr_error *err);
void fr_mla_run_free(fr_mla_run *r);

/* The FA4 sparse-MLA order-invariance experiment: {lazy threshold, exact, row sum from rounded P} x {dominant first, last}. */
typedef struct fr_oi_row {
    char label[40];                 /* "lazy-8", "exact-0", "rowsum-rounded" */
    double out_rel_l2[2], gain_rms[2];      /* [first, last] vs fp64 */
    double diff_rel_l2, diff_gain_rms, diff_noise_floor, diff_gain_over_floor; /* last vs first */
    double dq[2][2], dk[2][2], dv[2][2];    /* [order][no fix, o_lo fix] rel-L2 vs fp64 */
} fr_oi_row;

typedef struct fr_oi_result {
    int64_t T, W, H, Dl, Dr;
    double beta;
    double bf16_floor_rel_l2;  /* bf16(o_ref) vs o_ref: the output rounding floor */
    double bf16_floor_gain;    /* its row-gain rms */
    double self_weight_p50, self_weight_p90; /* the dominant key's probability */
    fr_oi_row rows[3];
    double seconds;
} fr_oi_result;

/* base: the preset to vary ("fa4-sm100-fwd-inference"); thresholds lazy/exact. bwd: also the gradients. */
fr_status fr_study_order_invariance(int64_t T, int64_t W, int64_t H, int64_t Dl, int64_t Dr, double beta,
                                    uint64_t seed, double lazy_threshold, bool bwd, int threads, fr_oi_result *res,
                                    fr_error *err);

/* Error vs sequence length (item 5): S1 query rows against S2 = lens[k] keys, iid N(0,1) q/k/v, D, per pipeline. */
#define FR_SEQLEN_MAX_PIPES 16
#define FR_SEQLEN_MAX_LENS 16
typedef struct fr_seqlen_result {
    int npipes, nlens;
    char pipe[FR_SEQLEN_MAX_PIPES][48];
    int64_t len[FR_SEQLEN_MAX_LENS];
    double rel_l2[FR_SEQLEN_MAX_PIPES][FR_SEQLEN_MAX_LENS];
    double gain_rms[FR_SEQLEN_MAX_PIPES][FR_SEQLEN_MAX_LENS];
    double sum_rel[FR_SEQLEN_MAX_PIPES][FR_SEQLEN_MAX_LENS]; /* max relative error of softmax_sum vs fp64 */
    int64_t nonfinite[FR_SEQLEN_MAX_PIPES][FR_SEQLEN_MAX_LENS]; /* Inf/NaN outputs (fp16 overflow) */
    double seconds;
} fr_seqlen_result;

fr_status fr_study_seqlen(const int64_t *lens, int nlens, int64_t S1, int64_t D, uint64_t seed, int threads,
                          fr_seqlen_result *res, fr_error *err);

#endif
