/* The zoo table (mutants.h): name, defect, the verdict and diagnosis the verifier must give, the case features that
 * expose it, and the entry points (the base of mutants_base.c with one defect switched on, or seed000). */
#include "verify/zoo/mutants.h"

#include "verify/zoo/mutants_base.h"

#include <string.h>

fr_status fr_mutant_seed000_fwd(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                                fr_error *err);

fr_status fr_mutant_base_fwd(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out, fr_error *err) {
    return mb_fwd(MB_NONE, p, in, out, err);
}
fr_status fr_mutant_base_bwd(const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out, fr_error *err) {
    return mb_bwd(MB_NONE, p, in, out, err);
}

/* One forward and one backward per defect; a forward-only defect gets the correct backward (MB_NONE). */
#define MB_ENTRY(id, fbug, bbug)                                                                                   \
    static fr_status id##_fwd(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,             \
                              fr_error *err) {                                                                     \
        return mb_fwd(fbug, p, in, out, err);                                                                      \
    }                                                                                                              \
    static fr_status id##_bwd(const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out,             \
                              fr_error *err) {                                                                     \
        return mb_bwd(bbug, p, in, out, err);                                                                      \
    }

MB_ENTRY(nan_fully_masked, MB_NO_INF_GUARD, MB_NONE)
MB_ENTRY(mask_sentinel, MB_ADDITIVE_MASK, MB_NONE)
MB_ENTRY(nan_leak, MB_MASKED_TIMES_V, MB_NONE)
MB_ENTRY(overflow, MB_NO_MAX_SUB, MB_NONE)
MB_ENTRY(causal, MB_CAUSAL_TOP_LEFT, MB_NONE)
MB_ENTRY(tail, MB_TAIL_DROP_LAST, MB_NONE)
MB_ENTRY(head_dim, MB_HEAD_DIM_TAIL, MB_NONE)
MB_ENTRY(index32, MB_INDEX32, MB_NONE)
MB_ENTRY(varlen, MB_VARLEN_ZERO, MB_NONE)
MB_ENTRY(drop_shift, MB_NONE, MB_DROP_BWD_SHIFT)
MB_ENTRY(drop_twice, MB_DROP_SCALE_TWICE, MB_DROP_SCALE_TWICE)
MB_ENTRY(stale, MB_STALE_MAX, MB_NONE)
MB_ENTRY(unwritten, MB_SKIP_LAST_QTILE, MB_NONE)
MB_ENTRY(gqa, MB_GQA_MOD, MB_GQA_MOD)
MB_ENTRY(pse, MB_PSE_ORDER, MB_PSE_ORDER)
MB_ENTRY(lse, MB_LSE_FOR_SUM, MB_NONE)
MB_ENTRY(maxlast, MB_MAX_BEFORE_LAST, MB_NONE)
MB_ENTRY(dksum, MB_NONE, MB_DK_NOT_SUMMED)
MB_ENTRY(splitkv, MB_SPLIT_KV_ORDER, MB_NONE)
MB_ENTRY(f16sum, MB_F16_ROW_SUM, MB_NONE)

/* Table order: name, bug, diagnosis, verdict, trigger, fwd, bwd. */
#define M(n, b, d, v, t, f, bw) {n, b, d, v, f, bw, t}
#define F FR_FAIL
#define W FR_WARN
/* Alike mutants.c:kZoo (its rows, to one another): kept apart because each row is one mutant (name, defect,
 * diagnosis, trigger, its fwd/bwd); the rows share a shape, not logic. */
static const fr_mutant kZoo[] = {
    M("nan-fully-masked", "no -inf guard: exp(-inf - -inf) = NaN on a row's all-masked tiles, 0/0 on fully masked rows",
     FR_DIAG_NAN_FULLY_MASKED, F, "atten_mask with a fully masked row, or a row whose first key tiles are all masked",
     nan_fully_masked_fwd, nan_fully_masked_bwd),
    M("mask-sentinel", "mask added as a finite -10000 instead of a select (empty tiles still skipped): masked keys "
                       "take part near scores ~1e4",
     FR_DIAG_MASK_SENTINEL, F,
     "fully masked rows (mean of V instead of 0, no D1 stats); masked scores within ~20 of max + 10000 (|x| ~ 1e4)",
     mask_sentinel_fwd, mask_sentinel_bwd),
    M("nan-leak", "masked positions multiply P = 0 into V instead of skipping: 0 * NaN = NaN leaks",
     FR_DIAG_NAN_LEAK, F,
     "NaN/Inf in V rows that are masked for some query row (partially kept rows)", nan_leak_fwd, nan_leak_bwd),
    M("overflow-no-max", "p = exp(x) without the running-max subtraction: overflows past x = 88.7 (underflows < -87)",
     FR_DIAG_OVERFLOW, F, "scaled scores above ~88 (large-magnitude inputs), or every score of a row below ~-87",
     overflow_fwd, overflow_bwd),
    M("fp16-row-sum", "fp16 kernel: the output divided by the row sum converted to half: inf past 65504 (out 0)",
     FR_DIAG_OVERFLOW, F, "fp16 rows whose sum of exp(x - max) passes 65504 (~65536+ near-equal weights)", f16sum_fwd,
     f16sum_bwd),
    M("causal-top-left", "sparse_mode 3 (bottom-right causal) aligned top-left (j <= i) like mode 2",
     FR_DIAG_CAUSAL_ALIGN, F, "sparse_mode 3 with S1 != S2 (per batch)", causal_fwd, causal_bwd),
    M("tile-tail", "off by one in the last partial key tile: its last key is dropped", FR_DIAG_TILE_TAIL, F,
     "S2 (per batch) not a multiple of 64", tail_fwd, tail_bwd),
    M("head-dim-tail", "q.k in vectors of 16 with no tail loop: the Dk % 16 last columns never enter the scores",
     FR_DIAG_HEAD_DIM, F, "Dk not a multiple of 16", head_dim_fwd, head_dim_bwd),
    M("index32", "q/k/v element offsets computed in 32 bits (read at offset mod 2^31)", FR_DIAG_INDEX32, F,
     "a q/k/v element offset past 2^31 - 1 (tensor over 2^31 elements, or a strided view that far)", index32_fwd,
     index32_bwd),
    M("varlen-zero-len", "varlen: key offset = end of the last sequence processed, and a zero-length query "
                         "sequence is skipped: the next one reads its keys",
     FR_DIAG_VARLEN, F, "TND: a batch of 0 queries and > 0 keys followed by a batch with queries", varlen_fwd,
     varlen_bwd),
    M("dropout-bwd-shift", "backward reads the drop bit of (i, j+1): its mask differs from the forward's",
     FR_DIAG_DROPOUT, F, "backward with keep_prob < 1", drop_shift_fwd, drop_shift_bwd),
    M("dropout-scale-twice", "kept positions scaled by 1/keep_prob twice (kernel and wrapper), forward and backward",
     FR_DIAG_DROPOUT, F, "keep_prob < 1", drop_twice_fwd, drop_twice_bwd),
    M("stale-max-bf16", "FA4 lazy rescale (threshold 8, log2) with P rounded to the input dtype for P.V, row sum "
                       "from the unrounded P",
     FR_DIAG_STALE_MAX, W, "bf16/fp16, S2 > 64, rows whose max grows by < 8 log2 units after the first key tile",
     stale_fwd, stale_bwd),
    M("rows-unwritten", "the grid covers S1 / 64 query tiles: a partial last query tile is never computed",
     FR_DIAG_UNWRITTEN, F, "S1 (per batch) not a multiple of 64", unwritten_fwd, unwritten_bwd),
    M("gqa-mod", "GQA kv head = h % N2 instead of h / G (forward and backward)", FR_DIAG_GQA_MAP, F,
     "1 < N2 < N1", gqa_fwd, gqa_bwd),
    M("pse-order", "pse_type 1 computed as pse_type 0: qk * scale + pse instead of (qk + pse) * scale",
     FR_DIAG_PSE_ORDER, F, "pse_type 1 with a pse tensor and scale_value != 1", pse_fwd, pse_bwd),
    M("lse-for-sum", "softmax_sum holds the log-sum-exp m + log(l) instead of the sum", FR_DIAG_LSE_FOR_SUM, F,
     "every forward (softmax_sum compared); attention_out is right", lse_fwd, lse_bwd),
    M("max-before-last-tile", "softmax_max stored before the last key tile's rescale", FR_DIAG_SOFTMAX_STATS, F,
     "S2 > 64 with a row max in the last key tile (or a sink)", maxlast_fwd, maxlast_bwd),
    M("dk-not-summed", "backward: dK/dV of a kv head written by each of its G query heads in turn, not summed",
     FR_DIAG_DKDV_REDUCE, F, "backward with N1 > N2 (G > 1)", dksum_fwd, dksum_bwd),
    M("split-kv-order", "split-KV partial states merged in the order the splits finish: the bits change run to run",
     FR_DIAG_NONDETERMINISM, W, "repeated runs of any forward with S2 > 64 (determinism cases)", splitkv_fwd,
     splitkv_bwd),
    M("seed000", "a torch tutorial's flash_attention: loop bound from the query length (decode reads key 0 only), "
                "1/sqrt(D), m_safe; torch raises for S > 1",
     FR_DIAG_MASK, F, "S1 == 1 with S2 > 1 (UNSUPPORTED for S1 > 1, masks, pse, TND, ...)", fr_mutant_seed000_fwd,
     NULL),
};
#undef M
#undef F
#undef W

/* Alike casegen.c:fr_gen_sets / fr_gen_set_find: kept apart because the tables hold different element types; C has
 * no generic table lookup short of a macro. */
const fr_mutant *fr_mutants(int *count) {
    if (count) *count = (int)(sizeof kZoo / sizeof kZoo[0]);
    return kZoo;
}

const fr_mutant *fr_mutant_find(const char *name) {
    if (!name) return NULL;
    for (size_t k = 0; k < sizeof kZoo / sizeof kZoo[0]; k++)
        if (!strcmp(kZoo[k].name, name)) return &kZoo[k];
    return NULL;
}
