/* Mutant "seed000": the block-wise PyTorch FlashAttention of a published tutorial on verifying FlashAttention on Ascend
 * NPUs (the method flash_attention of its FlashAttentionVerifier class; the first of the examples this project started
 * from, hence the name), reproduced op by op, bugs included. Its code, for B,H,S,D tensors q, k, v and block_size = 128:
 *
 *   O = zeros_like(q); m = full((B,H,S,1), -inf); l = zeros((B,H,S,1))
 *   for i in range(ceil(S / 128)):                       # S = q.shape[2]; key blocks of the QUERY length
 *       start_i, end_i = i*128, min(i*128 + 128, S)
 *       k_i, v_i = k[:,:,start_i:end_i], v[:,:,start_i:end_i]
 *       scores_i = (q @ k_i^T) * (1 / sqrt(D))            # every query row; scale_value ignored
 *       m_i = rowmax(scores_i); p_i = exp(scores_i - m_i); l_i = rowsum(p_i)      # [B,H,S,1] per block
 *       m_new = maximum(m[:,:,start_i:end_i], m_i)        # query rows sliced by the KEY block's bounds
 *       m_safe = where(isinf(m_new), 0, m_new)
 *       p_i_scaled = exp(m_i - m_safe); l_i_scaled = p_i_scaled * l_i
 *       old_scale = exp(m[:,:,s:e] - m_safe); old_scale = where(isinf(old_scale), 0, old_scale)
 *       O_old = O[:,:,s:e] * old_scale; l_old = l[:,:,s:e] * old_scale
 *       O_new = (p_i_scaled / (l_i_scaled + 1e-10)) @ v_i # [B,H,S,1] @ [B,H,n,D]
 *       l_combined = l_i_scaled + l_old
 *       O[:,:,s:e] = (O_old + O_new) / (l_combined + 1e-10)   # final division inside the loop
 *       m[:,:,s:e] = m_safe; l[:,:,s:e] = l_combined
 *   return O, None
 *
 * Where torch runs it. torch.maximum needs [n,1] and [S,1] to broadcast (n == S, n == 1 or S == 1) and the matmul
 * [S,1] @ [n,D] needs n == 1; n = min(128, S) for the first block, so the function runs only for S == 1 (one block
 * of one key: k[:,:,0:1], whatever k's length is) and S == 0 (no block: O = zeros). For S == 1 and S2 == 0,
 * amax over an empty dimension raises. Everything torch would raise on is FR_E_UNSUPPORTED here (SKIP):
 *   S1 > 1; S1 == 1 with S2 == 0; TND (no B,H,S,D view); atten_mask, pse, dropout (keep_prob < 1), sink, rope,
 *   top-k, fp8 (the function takes none of them); Dv != Dk (O = zeros_like(q) cannot hold Dv columns); N2 not in
 *   {1, N1} (the matmul broadcasts a kv head dim of 1, nothing else).
 * Mapping onto our inputs: BNSD is q[b, h, s, d]; BSND/BSH/SBH are the same elements read through their strides
 * (what q.transpose(1, 2) etc. would give the function). torch ops run in fp32 (q.float(): fp16/bf16 inputs are
 * widened exactly; the results of torch's fp16/bf16 ops are not modelled: for S == 1 they are exact anyway). Python
 * floats enter fp32 ops as fp32: scale = (float)(1 / sqrt(D)), eps = 1e-10f. The matmul's dot is accumulated in fp64
 * and rounded once. softmax_max / softmax_sum: the function returns none; we store its m and l (what an author
 * would wire out), which for S == 1 equal the spec's max and sum.
 * What it gets wrong where it runs: a decode row (S1 == 1, S2 > 1) attends to key 0 only (the loop bound comes from
 * the query length), and scores past fp32's range make m_safe 0 and p_i = exp(inf - inf) = NaN. */
#include "verify/zoo/mutants.h"

#include "core/core.h"
#include "core/problem.h"

#include <math.h>
#include <stdlib.h>

static fr_status unsupported(fr_error *err, const char *what) {
    return fr_fail(err, FR_E_UNSUPPORTED, "mutant seed000: %s", what);
}

fr_status fr_mutant_seed000_fwd(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                                fr_error *err);

fr_status fr_mutant_seed000_fwd(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                                fr_error *err) {
    fr_error_clear(err);
    if (!out) return fr_fail(err, FR_E_NULL, "outputs: NULL");
    fr_problem pb;
    fr_status st = fr_problem_from_fwd(p, in, &pb, err);
    if (st == FR_OK) st = fr_check_fwd_outputs(&pb, p, out, err);
    if (st != FR_OK) return st;
    if (pb.layout == FR_TND) return unsupported(err, "TND has no B,H,S,D view");
    if (pb.has_mask || pb.has_pse || pb.has_sink || pb.has_rope || pb.has_topk || pb.fp8 ||
        (pb.has_drop && p->keep_prob < 1.0))
        return unsupported(err, "the function takes q, k, v only (no mask, pse, dropout, sink, rope, top-k, fp8)");
    if (pb.Dv != pb.Dk) return unsupported(err, "Dv != Dk: O = zeros_like(q) has Dk columns");
    if (pb.N2 != pb.N1 && pb.N2 != 1) return unsupported(err, "torch.matmul broadcasts N2 = 1 or N2 = N1 only");
    if (pb.S1 > 1)
        return fr_fail(err, FR_E_UNSUPPORTED,
                       "mutant seed000: S = %lld > 1: torch raises (maximum() of [%lld,1] and [%lld,1] rows, matmul "
                       "[S,1] @ [n,D])",
                       (long long)pb.S1, (long long)(pb.S1 < 128 ? pb.S1 : 128), (long long)pb.S1);
    if (pb.S1 == 1 && pb.S2 == 0) return unsupported(err, "S2 = 0: amax() over an empty dimension raises");
    if (pb.S1 == 0) return FR_OK; /* no block: O = zeros of shape [B,H,0,D], nothing to write */
    const int64_t D = pb.Dk;
    const float scale = (float)(1.0 / sqrt((double)D)), eps = 1e-10f;
    float *q = malloc((size_t)(2 * D + 1) * sizeof(float));
    if (!q) return fr_fail(err, FR_E_NOMEM, "mutant seed000: cannot allocate %lld floats", (long long)(2 * D + 1));
    float *k = q + D, *v = q; /* v reuses q's storage once the score is known */
    const fr_layout L = pb.layout;
    for (int64_t b = 0; b < pb.B; b++)
        for (int64_t h = 0; h < pb.N1; h++) {
            const int64_t n2 = pb.N2 == 1 ? 0 : h;
            for (int64_t d = 0; d < D; d++) {
                q[d] = (float)fr_load_f64(&in->query, fr_layout_offset(&in->query, L, D, 0, b, h, 0, d));
                k[d] = (float)fr_load_f64(&in->key, fr_layout_offset(&in->key, L, D, 0, b, n2, 0, d));
            }
            double dot = 0.0;
            for (int64_t d = 0; d < D; d++) dot += (double)q[d] * (double)k[d];
            const float s = (float)dot * scale;       /* scores_i: [1, 1] (the block holds key 0 only) */
            const float m_i = s, p_i = expf(s - m_i), l_i = p_i;
            const float m_old = -INFINITY, l_old0 = 0.0f;
            const float m_new = isnan(m_old) || isnan(m_i) ? NAN : (m_old > m_i ? m_old : m_i); /* torch.maximum */
            const float m_safe = isinf(m_new) ? 0.0f : m_new;
            const float p_i_scaled = expf(m_i - m_safe), l_i_scaled = p_i_scaled * l_i;
            float old_scale = expf(m_old - m_safe);
            if (isinf(old_scale)) old_scale = 0.0f;
            const float l_old = l_old0 * old_scale, coef = p_i_scaled / (l_i_scaled + eps);
            const float l_combined = l_i_scaled + l_old;
            for (int64_t d = 0; d < D; d++)
                v[d] = (float)fr_load_f64(&in->value, fr_layout_offset(&in->value, L, D, 0, b, n2, 0, d));
            if (fr_tensor_present(&out->attention_out))
                for (int64_t d = 0; d < D; d++) {
                    float o_old = 0.0f * old_scale, o_new = coef * v[d];
                    fr_store_f64(&out->attention_out, fr_layout_offset(&out->attention_out, L, D, 0, b, h, 0, d),
                                 (double)((o_old + o_new) / (l_combined + eps)));
                }
            for (int64_t c = 0; c < 8; c++) {
                if (fr_tensor_present(&out->softmax_max))
                    fr_store_f64(&out->softmax_max,
                                 fr_softmax_offset(&out->softmax_max, L, p->softmax_layout, 0, b, h, 0, c), m_safe);
                if (fr_tensor_present(&out->softmax_sum))
                    fr_store_f64(&out->softmax_sum,
                                 fr_softmax_offset(&out->softmax_sum, L, p->softmax_layout, 0, b, h, 0, c),
                                 l_combined);
            }
        }
    free(q);
    return FR_OK;
}
