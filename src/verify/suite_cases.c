/* The suite's cases (verification-method.md 4), by category. The cross-check grid of casegen.c ("xcheck") is added to
 * the default set at run time (forward cases as equivalence, backward ones as gradients). Shapes are chosen so that
 * "quick" runs in well under 30 s and "default" under 3 minutes on 2 cores, golden and ideal pipeline included. */
#include "verify/suite_internal.h"

#define SQ (FR_SET_QUICK | FR_SET_DEFAULT)
#define SD FR_SET_DEFAULT
#define SL FR_SET_LONG
#define CANON FR_GEN_MASK_CANONICAL
#define SS FR_GEN_MASK_SS
#define BAND(pre, nxt) .set_band = true, .pre_tokens = (pre), .next_tokens = (nxt)
#define E(cat_, sets_, tags_, mod_, what_, ...)                                                                        \
    {.cat = cat_, .sets = sets_, .tags = tags_, .mod = mod_, .what = what_, .spec = {__VA_ARGS__}}
/* One case of a length series: same problem, S2 keys. */
#define GW(dt_, s2_, name_)                                                                                         \
    {.cat = FR_CAT_PROPERTIES, .sets = FR_SET_DEFAULT, .tags = FR_TAG_PEAKED, .mod = FR_MOD_NONE,                     \
     .what = "length series: error / ideal's must not grow with S2", .series = "gw_" #dt_,                          \
     .spec = {.name = name_, .dtype = dt_, .B = 1, .N1 = 2, .S1 = 32, .S2 = s2_, .D = 64, .beta = 0.4}}
/* One case of the long set's length series (32K .. 256K keys): same problem, S2 keys. */
#define GL(dt_, s2_, name_)                                                                                         \
    {.cat = FR_CAT_PROPERTIES, .sets = FR_SET_LONG, .tags = FR_TAG_LONG | FR_TAG_PEAKED, .mod = FR_MOD_NONE,          \
     .what = "long length series: error / ideal's must not grow with S2", .series = "gl_" #dt_,                     \
     .spec = {.name = name_, .dtype = dt_, .B = 1, .N1 = 1, .S1 = 16, .S2 = s2_, .D = 64, .beta = 0.4}}
#define EQ FR_CAT_EQUIVALENCE
#define BD FR_CAT_BOUNDARIES
#define PR FR_CAT_PROPERTIES
#define OR FR_CAT_ORDER
#define GR FR_CAT_GRADIENTS
#define DT FR_CAT_DETERMINISM
#define ID FR_CAT_IMPLDEF

const fr_suite_entry fr_suite_entries[] = {
    /* ---- equivalence: layouts x dtypes x heads x modes ---- */
    E(EQ, SQ, 0, FR_MOD_NONE, "fp32 BNSD MHA", .name = "eq_fp32_bnsd_mha", .B = 2, .N1 = 2, .S1 = 128, .S2 = 200,
      .D = 64),
    E(EQ, SQ, 0, FR_MOD_NONE, "bf16 BSND GQA 8/2", .name = "eq_bf16_bsnd_gqa", .dtype = FR_BF16, .layout = FR_BSND,
      .B = 1, .N1 = 8, .N2 = 2, .S1 = 100, .S2 = 333, .D = 128),
    E(EQ, SD, 0, FR_MOD_NONE, "fp16 BSH MQA", .name = "eq_fp16_bsh_mqa", .dtype = FR_F16, .layout = FR_BSH, .B = 2,
      .N1 = 4, .N2 = 1, .S1 = 96, .S2 = 257, .D = 64),
    E(EQ, SD, 0, FR_MOD_NONE, "bf16 SBH S1 > S2, Dv < Dk", .name = "eq_bf16_sbh_s1gt", .dtype = FR_BF16,
      .layout = FR_SBH, .B = 2, .N1 = 2, .S1 = 300, .S2 = 100, .D = 80, .Dv = 64),
    E(EQ, SD, 0, FR_MOD_NONE, "fp32 TND varlen", .name = "eq_fp32_tnd_varlen", .layout = FR_TND, .B = 3, .N1 = 4,
      .N2 = 2, .seq_q = {100, 1, 64}, .seq_kv = {129, 200, 64}, .D = 64),
    E(EQ, SQ, 0, FR_MOD_NONE, "bf16 causal bottom-right, S1 < S2", .name = "eq_bf16_causal_m3_s1lt", .dtype = FR_BF16,
      .B = 1, .N1 = 2, .S1 = 100, .S2 = 300, .D = 64, .sparse_mode = 3, .mask = CANON),
    E(EQ, SD, 0, FR_MOD_NONE, "fp32 causal top-left, S1 > S2", .name = "eq_fp32_causal_m2_s1gt", .B = 1, .N1 = 2,
      .S1 = 200, .S2 = 150, .D = 32, .sparse_mode = 2, .mask = CANON),
    E(EQ, SD, 0, FR_MOD_NONE, "fp16 causal S1 = S2", .name = "eq_fp16_causal_m3_sq", .dtype = FR_F16, .B = 1, .N1 = 2,
      .S1 = 256, .S2 = 256, .D = 64, .sparse_mode = 3, .mask = CANON),
    E(EQ, SD, 0, FR_MOD_NONE, "bf16 band mode 4", .name = "eq_bf16_band_m4", .dtype = FR_BF16, .B = 1, .N1 = 2,
      .S1 = 300, .S2 = 300, .D = 64, .sparse_mode = 4, .mask = CANON, BAND(64, 16)),
    E(EQ, SQ, 0, FR_MOD_NONE, "fp32 pse type 1 (add then scale)", .name = "eq_fp32_pse1_bnss", .B = 1, .N1 = 2,
      .S1 = 64, .S2 = 100, .D = 32, .pse_type = 1, .pse = FR_GEN_PSE_BNSS),
    E(EQ, SD, 0, FR_MOD_NONE, "bf16 pse type 0 (scale then add)", .name = "eq_bf16_pse0_bn1s", .dtype = FR_BF16,
      .B = 2, .N1 = 2, .S1 = 64, .S2 = 130, .D = 64, .pse_type = 0, .pse = FR_GEN_PSE_BN1S),
    E(EQ, SD, 0, FR_MOD_NONE, "fp16 ALiBi pse type 2", .name = "eq_fp16_alibi_pse2", .dtype = FR_F16, .B = 1, .N1 = 4,
      .S1 = 128, .S2 = 128, .D = 64, .pse_type = 2, .pse = FR_GEN_PSE_SLOPES_N),
    E(EQ, SD, 0, FR_MOD_NONE, "bf16 ALiBi pse type 3 with start indices", .name = "eq_bf16_alibi_pse3",
      .dtype = FR_BF16, .B = 1, .N1 = 4, .S1 = 128, .S2 = 128, .D = 64, .pse_type = 3, .pse = FR_GEN_PSE_SLOPES_BN,
      .q_start_idx = 3, .kv_start_idx = 1),
    E(EQ, SQ, 0, FR_MOD_NONE, "bf16 dropout keep 0.8", .name = "eq_bf16_dropout", .dtype = FR_BF16, .B = 1, .N1 = 2,
      .S1 = 100, .S2 = 256, .D = 64, .keep_prob = 0.8),
    E(EQ, SD, 0, FR_MOD_NONE, "fp16 sink", .name = "eq_fp16_sink", .dtype = FR_F16, .B = 1, .N1 = 4, .S1 = 64,
      .S2 = 190, .D = 64, .sink = true),
    E(EQ, SD, 0, FR_MOD_NONE, "bf16 rope 128+64", .name = "eq_bf16_rope", .dtype = FR_BF16, .layout = FR_BSND, .B = 1,
      .N1 = 2, .S1 = 64, .S2 = 100, .D = 128, .Drope = 64),
    E(EQ, SD, 0, FR_MOD_NONE, "e4m3fn with dequant scales", .name = "eq_e4m3fn", .dtype = FR_E4M3FN, .B = 1, .N1 = 2,
      .S1 = 200, .S2 = 300, .D = 64, .out_dtype = FR_F16),
    E(EQ, SD, 0, FR_MOD_NONE, "e5m2 with dequant scales", .name = "eq_e5m2", .dtype = FR_E5M2, .B = 1, .N1 = 2,
      .S1 = 130, .S2 = 260, .D = 64, .out_dtype = FR_BF16),
    E(EQ, SD, 0, FR_MOD_NONE, "hif8 with dequant scales", .name = "eq_hif8", .dtype = FR_HIF8, .B = 1, .N1 = 2,
      .S1 = 130, .S2 = 270, .D = 64, .out_dtype = FR_F16),
    E(EQ, SD, 0, FR_MOD_NONE, "bf16 MLA-like Dk 576 / Dv 512", .name = "eq_bf16_d576_dv512", .dtype = FR_BF16, .B = 1,
      .N1 = 2, .N2 = 1, .S1 = 32, .S2 = 100, .D = 576, .Dv = 512),
    E(EQ, SD, 0, FR_MOD_NONE, "fp32 GQA 6/3 mask BNSS", .name = "eq_fp32_gqa_bnss_mask", .B = 1, .N1 = 6, .N2 = 3,
      .S1 = 40, .S2 = 70, .D = 32, .mask = FR_GEN_MASK_BNSS),

    E(EQ, SD, 0, FR_MOD_NONE, "bf16 2048 x 2048, D 128, causal, 4 heads (real tile counts)", .name = "eq_bf16_2k_causal",
      .dtype = FR_BF16, .B = 1, .N1 = 4, .N2 = 2, .S1 = 2048, .S2 = 2048, .D = 128, .sparse_mode = 3, .mask = CANON),
    E(EQ, SD, 0, FR_MOD_NONE, "fp32 1024 x 3000, D 64, BSND", .name = "eq_fp32_1k_3k", .layout = FR_BSND, .B = 1,
      .N1 = 2, .S1 = 1024, .S2 = 3000, .D = 64),
    E(EQ, SD, 0, FR_MOD_NONE, "fp16 TND 3 x ~700, D 128, GQA", .name = "eq_fp16_tnd_700", .dtype = FR_F16,
      .layout = FR_TND, .B = 3, .N1 = 4, .N2 = 1, .seq_q = {700, 333, 1000}, .seq_kv = {700, 900, 1000}, .D = 128),

    /* ---- boundaries ---- */
    E(BD, SD, 0, FR_MOD_NONE, "empty batch", .name = "bd_empty_b0", .B = 0, .N1 = 2, .S1 = 8, .S2 = 8, .D = 16),
    E(BD, SD, 0, FR_MOD_NONE, "no query rows", .name = "bd_empty_s1", .B = 1, .N1 = 2, .S1 = 0, .S2 = 8, .D = 16),
    E(BD, SQ, FR_TAG_D1, FR_MOD_NONE, "no keys: every row fully masked (D8 -> D1)", .name = "bd_empty_s2", .B = 1,
      .N1 = 2, .S1 = 8, .S2 = 0, .D = 16),
    E(BD, SD, 0, FR_MOD_NONE, "one token", .name = "bd_one_token", .dtype = FR_BF16, .B = 1, .N1 = 1, .S1 = 1,
      .S2 = 1, .D = 64),
    E(BD, SQ, 0, FR_MOD_NONE, "one query per head (decode)", .name = "bd_one_query", .B = 4, .N1 = 4, .S1 = 1,
      .S2 = 777, .D = 64),
    E(BD, SQ, FR_TAG_INDEX64, FR_MOD_KEY_PAST_2G, "strided key whose element offsets pass 2^31 (64-bit indexing)",
      .name = "bd_key_offsets_past_2g", .dtype = FR_BF16, .B = 1, .N1 = 2, .N2 = 1, .S1 = 64, .S2 = 640, .D = 64),
    /* Tile tails: lengths just below / at / above 64, 128, 256, 512 (and nothing else special: D = 64, no mask). */
    E(BD, SD, FR_TAG_TAIL, FR_MOD_NONE, "lengths 63 x 127", .name = "bd_tail_63x127", .dtype = FR_BF16, .B = 1,
      .N1 = 2, .S1 = 63, .S2 = 127, .D = 64),
    E(BD, SD, FR_TAG_TAIL, FR_MOD_NONE, "lengths 64 x 128", .name = "bd_tail_64x128", .dtype = FR_BF16, .B = 1,
      .N1 = 2, .S1 = 64, .S2 = 128, .D = 64),
    E(BD, SQ, FR_TAG_TAIL, FR_MOD_NONE, "lengths 65 x 129", .name = "bd_tail_65x129", .B = 1, .N1 = 2, .S1 = 65,
      .S2 = 129, .D = 64),
    E(BD, SD, FR_TAG_TAIL, FR_MOD_NONE, "lengths 127 x 255", .name = "bd_tail_127x255", .dtype = FR_F16, .B = 1,
      .N1 = 2, .S1 = 127, .S2 = 255, .D = 64),
    E(BD, SD, FR_TAG_TAIL, FR_MOD_NONE, "lengths 129 x 257", .name = "bd_tail_129x257", .B = 1, .N1 = 2, .S1 = 129,
      .S2 = 257, .D = 64),
    E(BD, SD, FR_TAG_TAIL, FR_MOD_NONE, "lengths 257 x 513", .name = "bd_tail_257x513", .dtype = FR_BF16, .B = 1,
      .N1 = 1, .S1 = 257, .S2 = 513, .D = 64),
    E(BD, SD, FR_TAG_TAIL, FR_MOD_NONE, "lengths 1 x 63", .name = "bd_tail_1x63", .B = 1, .N1 = 2, .S1 = 1, .S2 = 63,
      .D = 64),
    E(BD, SD, FR_TAG_TAIL, FR_MOD_NONE, "lengths 31 x 65", .name = "bd_tail_31x65", .dtype = FR_F16, .B = 1, .N1 = 2,
      .S1 = 31, .S2 = 65, .D = 64),
    E(BD, SD, FR_TAG_TAIL, FR_MOD_NONE, "lengths 200 x 191", .name = "bd_tail_200x191", .dtype = FR_BF16, .B = 1,
      .N1 = 2, .S1 = 200, .S2 = 191, .D = 64),
    E(BD, SD, FR_TAG_TAIL, FR_MOD_NONE, "lengths 100 x 511, BSND", .name = "bd_tail_100x511", .layout = FR_BSND,
      .B = 1, .N1 = 2, .S1 = 100, .S2 = 511, .D = 64),
    E(BD, SD, FR_TAG_TAIL, FR_MOD_NONE, "lengths 77 x 1025", .name = "bd_tail_77x1025", .dtype = FR_F16, .B = 1,
      .N1 = 1, .S1 = 77, .S2 = 1025, .D = 64),
    E(BD, SD, FR_TAG_TAIL, FR_MOD_NONE, "lengths 66 x 321, 2 batches", .name = "bd_tail_66x321", .dtype = FR_BF16,
      .B = 2, .N1 = 1, .S1 = 66, .S2 = 321, .D = 64),
    E(BD, SQ, FR_TAG_D1, FR_MOD_NONE, "causal S1 > S2: fully masked rows (D1)", .name = "bd_d1_rows_m3", .dtype = FR_BF16,
      .B = 1, .N1 = 2, .S1 = 200, .S2 = 120, .D = 64, .sparse_mode = 3, .mask = CANON),
    E(BD, SD, FR_TAG_D1, FR_MOD_NONE, "fp32 fully masked rows, band", .name = "bd_d1_rows_band", .B = 1, .N1 = 2, .S1 = 150,
      .S2 = 150, .D = 32, .mask = SS, BAND(0, 0)),
    E(BD, SD, FR_TAG_MASK | FR_TAG_D1, FR_MOD_FIRST_TILE_MASKED, "first key tile masked, later ones not; every 7th row empty",
      .name = "bd_first_tile_masked", .dtype = FR_BF16, .B = 1, .N1 = 2, .S1 = 100, .S2 = 300, .D = 64, .mask = SS),
    E(BD, SQ, FR_TAG_LARGE, FR_MOD_NONE, "scores around +-1e4 (fp32)", .name = "bd_huge_scores_fp32", .B = 1, .N1 = 2,
      .S1 = 64, .S2 = 128, .D = 16, .in_scale = 100.0),
    E(BD, SD, FR_TAG_LARGE, FR_MOD_NONE, "large bf16 inputs (|x| ~ 1e5)", .name = "bd_huge_inputs_bf16",
      .dtype = FR_BF16, .B = 1, .N1 = 2, .S1 = 64, .S2 = 128, .D = 16, .in_scale = 3e4, .scale = 1e-8),
    E(BD, SD, 0, FR_MOD_NONE, "tiny inputs (1e-10)", .name = "bd_tiny_inputs", .B = 1, .N1 = 2, .S1 = 64, .S2 = 100,
      .D = 32, .in_scale = 1e-10),
    E(BD, SQ, FR_TAG_SENTINEL | FR_TAG_MASK, FR_MOD_SENTINEL, "real scores near -1e30 next to masked positions",
      .name = "bd_neg_scores_not_masks", .B = 1, .N1 = 2, .S1 = 40, .S2 = 128, .D = 16, .mask = SS, .pse_type = 0,
      .pse = FR_GEN_PSE_BNSS),
    E(BD, SD, FR_TAG_SENTINEL | FR_TAG_MASK, FR_MOD_SENTINEL, "real scores near -1e30 next to masked positions, bf16",
      .name = "bd_neg_scores_not_masks_bf16", .dtype = FR_BF16, .B = 1, .N1 = 2, .S1 = 40, .S2 = 256, .D = 32,
      .mask = SS, .pse_type = 0, .pse = FR_GEN_PSE_BNSS),
    E(BD, SD, FR_TAG_SENTINEL | FR_TAG_MASK, FR_MOD_SENTINEL_1E4,
      "kept scores near -1e4 (pse), masked ones near 0: an additive -1e4 mask puts them level",
      .name = "bd_kept_scores_minus_1e4", .B = 1, .N1 = 2, .S1 = 64, .S2 = 128, .D = 32, .mask = SS, .pse_type = 0,
      .pse = FR_GEN_PSE_BNSS),
    E(BD, SQ, FR_TAG_NAN_KV | FR_TAG_MASK, FR_MOD_NAN_KV, "NaN/Inf in masked-out K/V (fp32)", .name = "bd_nan_in_masked_kv",
      .B = 1, .N1 = 2, .S1 = 50, .S2 = 128, .D = 32, .mask = SS),
    E(BD, SD, FR_TAG_NAN_KV | FR_TAG_MASK, FR_MOD_NAN_KV, "NaN/Inf in masked-out K/V (bf16)",
      .name = "bd_nan_in_masked_kv_bf16", .dtype = FR_BF16, .B = 1, .N1 = 2, .S1 = 50, .S2 = 256, .D = 64, .mask = SS),
    E(BD, SD, FR_TAG_HEADDIM, FR_MOD_NONE, "head dim 1", .name = "bd_headdim_1", .B = 1, .N1 = 2, .S1 = 33, .S2 = 128, .D = 1),
    E(BD, SD, FR_TAG_HEADDIM, FR_MOD_NONE, "head dim 3", .name = "bd_headdim_3", .dtype = FR_BF16, .B = 1, .N1 = 2, .S1 = 33,
      .S2 = 128, .D = 3),
    E(BD, SQ, FR_TAG_HEADDIM, FR_MOD_NONE, "head dim 59", .name = "bd_headdim_59", .B = 1, .N1 = 2, .S1 = 70, .S2 = 256, .D = 59),
    E(BD, SD, FR_TAG_HEADDIM, FR_MOD_NONE, "head dim 111", .name = "bd_headdim_111", .dtype = FR_F16, .B = 1, .N1 = 2, .S1 = 40,
      .S2 = 128, .D = 111),
    E(BD, SD, FR_TAG_HEADDIM, FR_MOD_NONE, "head dim 127", .name = "bd_headdim_127", .dtype = FR_BF16, .B = 1, .N1 = 2, .S1 = 40,
      .S2 = 128, .D = 127),
    E(BD, SD, FR_TAG_HEADDIM, FR_MOD_NONE, "head dim 129", .name = "bd_headdim_129", .B = 1, .N1 = 2, .S1 = 40, .S2 = 128, .D = 129),
    E(BD, SQ, FR_TAG_VARLEN, FR_MOD_NONE, "varlen with empty sequences", .name = "bd_varlen_empty", .dtype = FR_BF16,
      .layout = FR_TND, .B = 4, .N1 = 2, .seq_q = {0, 70, 0, 130}, .seq_kv = {128, 128, 0, 256}, .D = 64),
    E(BD, SD, FR_TAG_VARLEN, FR_MOD_NONE, "varlen, first batch empty", .name = "bd_varlen_empty_first",
      .layout = FR_TND, .B = 3, .N1 = 2, .seq_q = {0, 30, 65}, .seq_kv = {0, 128, 256}, .D = 32),

    E(BD, SQ, FR_TAG_LARGE | FR_TAG_LONG, FR_MOD_NONE, "70144 near-equal weights: the row sum passes 65504",
      .name = "bd_sum_past_fp16_max", .dtype = FR_F16, .B = 1, .N1 = 1, .S1 = 8, .S2 = 70144, .D = 64,
      .in_scale = 0.05),

    /* ---- properties ---- */
    E(PR, SQ, 0, FR_MOD_V_IDENTITY, "V = I: the output is P (sum 1, >= 0, argmax), fp32", .name = "pr_explicit_p_fp32",
      .B = 1, .N1 = 2, .S1 = 64, .S2 = 96, .D = 96, .scale = 0.3),
    E(PR, SD, 0, FR_MOD_V_IDENTITY, "V = I: the output is P, bf16", .name = "pr_explicit_p_bf16", .dtype = FR_BF16,
      .B = 1, .N1 = 2, .S1 = 64, .S2 = 128, .D = 128, .scale = 0.2),
    E(PR, SD, 0, FR_MOD_V_IDENTITY, "V = I: the output is P, fp16", .name = "pr_explicit_p_fp16", .dtype = FR_F16,
      .B = 1, .N1 = 2, .S1 = 64, .S2 = 128, .D = 128, .scale = 0.2),
    E(PR, SQ, FR_TAG_PEAKED, FR_MOD_NONE, "peaked rows beta 0.4 (coherent gain), bf16", .name = "pr_peaked_b04_bf16",
      .dtype = FR_BF16, .B = 1, .N1 = 2, .S1 = 256, .S2 = 1024, .D = 64, .beta = 0.4),
    E(PR, SQ, FR_TAG_PEAKED, FR_MOD_NONE, "dominant own key (weight ~0.7) in a late key tile, bf16",
      .name = "pr_dominant_late_bf16", .dtype = FR_BF16, .B = 1, .N1 = 2, .S1 = 256, .S2 = 256, .D = 128,
      .beta = 0.6),
    E(PR, SD, FR_TAG_PEAKED, FR_MOD_NONE, "dominant own key (weight ~0.7) in a late key tile, fp16",
      .name = "pr_dominant_late_fp16", .dtype = FR_F16, .B = 1, .N1 = 2, .S1 = 256, .S2 = 256, .D = 128,
      .beta = 0.6),
    E(PR, SD, FR_TAG_PEAKED, FR_MOD_NONE, "peaked rows beta 0.25, bf16", .name = "pr_peaked_b025_bf16",
      .dtype = FR_BF16, .B = 1, .N1 = 2, .S1 = 256, .S2 = 1024, .D = 64, .beta = 0.25),
    E(PR, SD, FR_TAG_PEAKED, FR_MOD_NONE, "peaked rows beta 0.4, fp16", .name = "pr_peaked_b04_fp16", .dtype = FR_F16,
      .B = 1, .N1 = 2, .S1 = 256, .S2 = 1024, .D = 64, .beta = 0.4),
    E(PR, SD, FR_TAG_PEAKED, FR_MOD_NONE, "peaked rows beta 0.4, fp32", .name = "pr_peaked_b04_fp32", .B = 1, .N1 = 2,
      .S1 = 128, .S2 = 512, .D = 64, .beta = 0.4),
    E(PR, SD, FR_TAG_PEAKED, FR_MOD_NONE, "peaked rows, long keys, bf16", .name = "pr_peaked_long_bf16",
      .dtype = FR_BF16, .B = 1, .N1 = 1, .S1 = 64, .S2 = 4096, .D = 64, .beta = 0.4),

    GW(FR_BF16, 256, "gw_bf16_s256"), GW(FR_BF16, 1024, "gw_bf16_s1024"), GW(FR_BF16, 4096, "gw_bf16_s4096"),
    GW(FR_BF16, 16384, "gw_bf16_s16384"), GW(FR_F16, 256, "gw_fp16_s256"), GW(FR_F16, 2048, "gw_fp16_s2048"),
    GW(FR_F16, 16384, "gw_fp16_s16384"), GW(FR_F32, 256, "gw_fp32_s256"), GW(FR_F32, 4096, "gw_fp32_s4096"),
    GW(FR_F32, 32768, "gw_fp32_s32768"),

    /* ---- order invariance (sparse top-k): the same key set in several orders ---- */
    E(OR, SQ, FR_TAG_PEAKED, FR_MOD_NONE, "top-k, 4 orders of the same keys, fp32", .name = "or_topk_fp32", .B = 1,
      .N1 = 2, .S1 = 64, .S2 = 300, .D = 32, .topk_w = 96, .beta = 0.4),
    E(OR, SD, FR_TAG_PEAKED, FR_MOD_NONE, "top-k per kv head, GQA, bf16", .name = "or_topk_bf16_gqa",
      .dtype = FR_BF16, .B = 1, .N1 = 4, .N2 = 2, .S1 = 64, .S2 = 400, .D = 64, .topk_w = 200, .topk_per_kv_head = true,
      .beta = 0.4),

    /* ---- gradients ---- */
    E(GR, SQ, 0, FR_MOD_NONE, "bf16 GQA causal", .name = "gr_bf16_gqa_causal", .bwd = true, .dtype = FR_BF16, .B = 1,
      .N1 = 4, .N2 = 2, .S1 = 96, .S2 = 160, .D = 64, .sparse_mode = 3, .mask = CANON),
    E(GR, SQ, 0, FR_MOD_NONE, "fp16 dropout 0.7", .name = "gr_fp16_dropout", .bwd = true, .dtype = FR_F16, .B = 1,
      .N1 = 2, .S1 = 80, .S2 = 128, .D = 64, .keep_prob = 0.7),
    E(GR, SD, FR_TAG_D1, FR_MOD_NONE, "fp32 fully masked rows", .name = "gr_fp32_d1_rows", .bwd = true, .B = 1, .N1 = 2,
      .S1 = 120, .S2 = 70, .D = 32, .sparse_mode = 3, .mask = CANON),
    E(GR, SD, 0, FR_MOD_NONE, "bf16 sink", .name = "gr_bf16_sink", .bwd = true, .dtype = FR_BF16, .B = 1, .N1 = 2,
      .S1 = 64, .S2 = 100, .D = 64, .sink = true),
    E(GR, SD, FR_TAG_TAIL, FR_MOD_NONE, "fp32 tails 65 x 129", .name = "gr_fp32_tail", .bwd = true, .B = 1, .N1 = 2,
      .S1 = 65, .S2 = 129, .D = 64),
    E(GR, SD, 0, FR_MOD_NONE, "bf16 pse type 1", .name = "gr_bf16_pse1", .bwd = true, .dtype = FR_BF16, .B = 1,
      .N1 = 2, .S1 = 64, .S2 = 96, .D = 64, .pse_type = 1, .pse = FR_GEN_PSE_BNSS),
    E(GR, SD, FR_TAG_PEAKED, FR_MOD_NONE, "fp16 peaked TND", .name = "gr_fp16_tnd_peaked", .bwd = true,
      .dtype = FR_F16, .layout = FR_TND, .B = 2, .N1 = 2, .seq_q = {60, 0}, .seq_kv = {90, 7}, .D = 64, .beta = 0.4),

    /* ---- determinism (built-in engines: repeats and thread counts, bitwise) ---- */
    E(DT, SQ, 0, FR_MOD_NONE, "bf16 forward, threads 1 / 2 / default, repeated", .name = "dt_fwd_bf16_gqa",
      .dtype = FR_BF16, .B = 2, .N1 = 4, .N2 = 2, .S1 = 200, .S2 = 300, .D = 64),
    E(DT, SD, 0, FR_MOD_NONE, "fp32 backward, threads 1 / 2 / default, repeated", .name = "dt_bwd_fp32", .bwd = true,
      .B = 1, .N1 = 2, .S1 = 130, .S2 = 200, .D = 64, .sparse_mode = 3, .mask = CANON),
    E(DT, SD, 0, FR_MOD_NONE, "fp16 TND forward, threads 1 / 2 / default", .name = "dt_fwd_fp16_tnd", .dtype = FR_F16,
      .layout = FR_TND, .B = 3, .N1 = 2, .seq_q = {100, 30, 200}, .seq_kv = {150, 30, 260}, .D = 64),

    /* ---- implementation-defined (INFO, never FAIL): mode 5 with a prefix and a user mask that contradicts the
     * formula; the other mode-5 cases use a mask that agrees with it, so every reading gives the same answer ---- */
    E(ID, SQ, FR_TAG_MASK, FR_MOD_NONE, "mode 5 + prefix, random [B,1,S1,S2] mask against the formula: which reading",
      .name = "impldef_m5_mask_b1ss", .B = 2, .N1 = 2, .S1 = 24, .S2 = 24, .D = 16, .sparse_mode = 5,
      .mask = FR_GEN_MASK_B1SS, .prefix = true, .mask_any = true),
    E(ID, SD, FR_TAG_MASK, FR_MOD_NONE, "mode 5 + prefix, S1 > S2, random [B,N1,S1,S2] mask, fp16: which reading",
      .name = "impldef_m5_mask_bnss_fp16", .dtype = FR_F16, .B = 2, .N1 = 2, .S1 = 24, .S2 = 16, .D = 32,
      .sparse_mode = 5, .mask = FR_GEN_MASK_BNSS, .prefix = true, .mask_any = true),

    /* ---- long sequences (> 32K and > 64K keys) ---- */
    E(BD, SL, FR_TAG_LONG, FR_MOD_NONE, "40000 keys, bf16", .name = "long_keys_40k_bf16", .dtype = FR_BF16, .B = 1,
      .N1 = 1, .S1 = 32, .S2 = 40000, .D = 64),
    E(BD, SL, FR_TAG_LONG | FR_TAG_PEAKED, FR_MOD_NONE, "70000 keys, fp32, peaked", .name = "long_keys_70k_fp32",
      .B = 1, .N1 = 1, .S1 = 16, .S2 = 70000, .D = 64, .beta = 0.4),
    E(BD, SL, FR_TAG_LONG, FR_MOD_NONE, "66000 keys causal, fp16", .name = "long_keys_66k_causal_fp16",
      .dtype = FR_F16, .B = 1, .N1 = 1, .S1 = 64, .S2 = 66000, .D = 64, .sparse_mode = 3, .mask = CANON),
    E(BD, SL, FR_TAG_LONG | FR_TAG_PEAKED, FR_MOD_NONE, "256 queries x 70000 keys, GQA, bf16, peaked",
      .name = "long_keys_70k_bf16_gqa", .dtype = FR_BF16, .B = 1, .N1 = 4, .N2 = 2, .S1 = 256, .S2 = 70000, .D = 64,
      .beta = 0.4),
    E(GR, SL, FR_TAG_LONG, FR_MOD_NONE, "backward with 66000 keys, fp32, causal", .name = "long_bwd_66k_fp32_causal",
      .bwd = true, .B = 1, .N1 = 1, .S1 = 64, .S2 = 66000, .D = 64, .sparse_mode = 3, .mask = CANON),
    E(GR, SL, FR_TAG_LONG, FR_MOD_NONE, "backward with 33000 keys, bf16", .name = "long_bwd_33k_bf16", .bwd = true,
      .dtype = FR_BF16, .B = 1, .N1 = 1, .S1 = 16, .S2 = 33000, .D = 64),
    /* ---- long context, 128K to 1M keys: the length series of the report, and the far end ---- */
    GL(FR_BF16, 32768, "long_series_32k_bf16"),
    GL(FR_BF16, 65536, "long_series_64k_bf16"),
    GL(FR_BF16, 131072, "long_series_128k_bf16"),
    GL(FR_BF16, 262144, "long_series_256k_bf16"),
    E(BD, SL, FR_TAG_LONG, FR_MOD_NONE, "262144 keys causal (bottom-right), fp16", .name = "long_keys_256k_causal_fp16",
      .dtype = FR_F16, .B = 1, .N1 = 1, .S1 = 32, .S2 = 262144, .D = 64, .sparse_mode = 3, .mask = CANON),
    E(GR, SL, FR_TAG_LONG, FR_MOD_NONE, "backward with 131072 keys, bf16", .name = "long_bwd_128k_bf16", .bwd = true,
      .dtype = FR_BF16, .B = 1, .N1 = 1, .S1 = 16, .S2 = 131072, .D = 64),
    E(BD, FR_SET_ALL_ONLY, FR_TAG_LONG | FR_TAG_PEAKED, FR_MOD_NONE, "1048576 keys (the spec's S limit), bf16, peaked",
      .name = "long_keys_1m_bf16", .dtype = FR_BF16, .B = 1, .N1 = 1, .S1 = 8, .S2 = 1048576, .D = 64, .beta = 0.4),
};

const int fr_suite_entry_count = (int)(sizeof fr_suite_entries / sizeof fr_suite_entries[0]);
