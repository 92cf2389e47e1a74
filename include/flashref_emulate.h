/* flashref numerics emulator: the tiled online-softmax forward and backward with every rounding decision a
 * parameter, to reproduce how accelerator FlashAttention kernels differ from the fp64 golden (docs/design.md).
 *
 * Use it as an engine:
 *     fr_numerics nc;  fr_numerics_preset("fa4-sm100-fwd-inference", &nc, &err);
 *     fr_engine e = fr_engine_default(FR_ENGINE_EMULATE);  e.numerics = &nc;
 *     fr_fwd(&params, &in, &out, &e, &err);
 * or through fr_emulate_fwd_ex / fr_emulate_bwd_ex, which add the o_lo residual output and the backward's dpsum
 * source. e.numerics = NULL means fr_numerics_ideal(input dtype).
 *
 * The model, per query row (b, h, i): the positions that take part (mask, sparse mode, band, top-k slots; the same
 * semantics as the golden) are cut into KV tiles of kv_tile positions (top-k: kv_tile consecutive slots of the
 * index list, -1 sentinels included, as a gather kernel does); the tiles are visited in `order`; per tile:
 *     y_j    = score in the exp base's units (base 2: x * log2(e), folded into the fp32 scale when there is no pse)
 *     m_use  = the running reference max after fr_osm update with `rescale_threshold` (log2 units)
 *     O     *= alpha; l *= alpha                             (rounded to acc_o / acc_l)
 *     p_j    = exp(y_j - m_use)                              (compute dtype)
 *     pr_j   = round_p(p_j * dropout)                        (p_dtype, p_round)
 *     l     += sum_j p_j  or  sum_j round_p(p_j)             (rowsum; sum in compute dtype, then acc_l)
 *     O     += sum_j pr_j * v_j                              (the tile's P.V in compute dtype, then acc_o)
 * then out = O / l (compute dtype), rounded once to the output dtype with out_round; o_lo = fp32(out) - round(out).
 * compute = FR_F64 with every other dtype FR_F64 is the exact algorithm (agrees with the golden to ~1e-15).
 * q_tile only groups rows; it does not change any number in this model (rows are independent).
 */
#ifndef FLASHREF_EMULATE_H
#define FLASHREF_EMULATE_H

#include "flashref.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fr_emu_exp_base {
    FR_EMU_EXP_E = 0, /* exp(x - m): Ascend (spec 3, step 5) */
    FR_EMU_EXP_2 = 1  /* exp2(x * log2e - m): GPU kernels (FA2/3/4) fold log2(e) into the scale */
} fr_emu_exp_base;

typedef enum fr_emu_order {
    FR_EMU_ORDER_FORWARD = 0, /* tile 0 first */
    FR_EMU_ORDER_REVERSE = 1, /* last tile first (FA4: n_block = n_block_max - 1 down to 0) */
    FR_EMU_ORDER_PERM = 2     /* tile perm[k] at step k; perm_len must equal every row's tile count */
} fr_emu_order;

typedef enum fr_emu_rowsum {
    FR_EMU_ROWSUM_UNROUNDED = 0, /* l sums p before its rounding (FA4, Ascend) */
    FR_EMU_ROWSUM_ROUNDED = 1    /* l sums the rounded p that P.V consumes: normalisation exact for what was used */
} fr_emu_rowsum;

typedef enum fr_emu_dpsum {
    FR_EMU_DPSUM_OUT = 0,    /* D_i = sum dy * attention_in (the rounded forward output) */
    FR_EMU_DPSUM_OUT_LO = 1, /* D_i = sum dy * (attention_in + o_lo): the residual fix; = OUT when o_lo is absent */
    FR_EMU_DPSUM_F32 = 2     /* D_i = sum dy * fp32 O (o_extra holds the unrounded output) */
} fr_emu_dpsum;

typedef enum fr_emu_bwd_p {
    FR_EMU_P_RECOMPUTE = 0, /* P = exp(x - m) / l from the stored max and sum (spec 8.2) */
    FR_EMU_P_LOADED = 1     /* P as the forward consumed it: round_p(exp(y - m_use)) times the later rescales / l */
} fr_emu_bwd_p;

#define FR_NUMERICS_NAME_LEN 48

struct fr_numerics {
    char name[FR_NUMERICS_NAME_LEN];
    fr_dtype compute;          /* FR_F32 or FR_F64: scores, exp, scales, per-tile sums and the final division */
    int64_t q_tile;            /* >= 1; documentation of the kernel's row grouping (no numeric effect here) */
    int64_t kv_tile;           /* >= 1: positions (dense) or index slots (top-k) per KV tile */
    double rescale_threshold;  /* >= 0, log2 units; 0 = exact running max; 8 = FA4 lazy rescale */
    fr_emu_exp_base exp_base;
    fr_dtype p_dtype;          /* P before P.V: FR_DT_NONE = the input dtype (fp32 and fp64 inputs: no rounding);
                                  FR_F64/FR_F32/FR_F16/FR_BF16/FR_E4M3FN/FR_E5M2/FR_HIF8 */
    fr_round p_round;
    fr_emu_rowsum rowsum;
    fr_emu_order order;
    const int64_t *perm;       /* FR_EMU_ORDER_PERM only */
    int64_t perm_len;
    fr_dtype acc_o, acc_l;     /* FR_F64 (exact), FR_F32 or FR_F16 (overflows past 65504 as fp16 hardware does) */
    fr_round out_round;        /* final rounding of attention_out when its tensor dtype is narrower than fp32 */
    /* Backward. */
    fr_emu_dpsum dpsum;
    fr_emu_bwd_p bwd_p;
    fr_dtype ds_dtype;         /* dS and P before the gradient matmuls: FR_DT_NONE = input dtype (as p_dtype) */
    fr_round ds_round;
    fr_round grad_round;       /* dq/dk/dv rounding when their tensors are narrower than fp32 */
};

/* The "ideal" pipeline of a dtype (verification-method.md 1): exact running max, P rounded once (RNE) to that dtype,
 * fp32 accumulation, one final rounding (RNE). FR_F64 / FR_F32 inputs: exact / fp32 without P rounding. */
FR_API fr_numerics fr_numerics_ideal(fr_dtype input_dtype);

/* Named presets; see docs/emulator.md for where each setting comes from:
 *   "exact"                    fp64 everywhere, threshold 0, nothing rounded but the output tensor's dtype
 *   "ideal-bf16", "ideal-fp16" fr_numerics_ideal of that dtype
 *   "ascend-a2"                spec D3: fp32, exp, threshold 0 (rescale whenever the max grows), kv tile 512,
 *                              P and output rounded half away from zero (CAST_ROUND) to the input dtype
 *   "fa4-sm100-fwd-inference"  fp32, exp2 with log2e folded, lazy threshold 8, kv tile 128, reverse KV order,
 *                              P bf16/fp16 RNE, row sum from unrounded P, dpsum from the rounded output
 *   "fa4-sm100-fwd-train"      the same with threshold 0 (exact running max) and the o_lo dpsum fix
 *   "fast-ip1"                 flashref's fast engine with inner_precise 1 (D17): fp32, exp, threshold 0, kv tile
 *                              128, P and output cast half away, P o Z and dS cast nearest even to the input dtype
 * Returns FR_E_INVALID_ARG for an unknown name (the message lists the names). */
FR_API fr_status fr_numerics_preset(const char *name, fr_numerics *out, fr_error *err);
/* The preset names, NULL-terminated. */
FR_API const char *const *fr_numerics_preset_names(void);
/* FR_OK when every field is in range; else FR_E_INVALID_ARG naming the field and its value. */
FR_API fr_status fr_numerics_check(const fr_numerics *nc, fr_error *err);

/* Forward with the emulator, plus an optional o_lo output (attention_out's shape, fp32 or any float dtype):
 * o_lo = fp32(out) - round(out), the residual a training kernel can store for the backward. NULL or an absent
 * tensor: not written. nc NULL: fr_numerics_ideal(input dtype). */
FR_API fr_status fr_emulate_fwd_ex(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                                   const fr_numerics *nc, const fr_tensor *o_lo, int num_threads, fr_error *err);
/* Backward with the emulator. o_extra: for FR_EMU_DPSUM_OUT_LO the o_lo tensor, for FR_EMU_DPSUM_F32 the
 * unrounded output (attention_out's shape); ignored for FR_EMU_DPSUM_OUT. FR_EMU_DPSUM_F32 without it is an error. */
FR_API fr_status fr_emulate_bwd_ex(const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out,
                                   const fr_numerics *nc, const fr_tensor *o_extra, int num_threads,
                                   fr_error *err);

/* Rounds x to the nearest value of format dt (fp64/fp32/fp16/bf16/e4m3fn/e5m2/hif8) with rounding r and overflow
 * behaviour s, returned as a double (exact). The emulator's one rounding routine; agrees with the fr_f32_to_*
 * encoders for every fp32 input. */
FR_API double fr_emu_round(double x, fr_dtype dt, fr_round r, fr_sat s);

#ifdef __cplusplus
}
#endif

#endif /* FLASHREF_EMULATE_H */
