/* The plain reference in the case's dtype (docs/verification-method.md 1): standard attention as people write it, the
 * reference FlashAttention's own tests and PyTorch's math backend amount to. Its error against the golden is what
 * an ordinary *correct* implementation of that dtype reaches, and the judge's bounds are multiples of it (judge.h).
 *
 * Forward, per query row: S = q.k^T in fp32 (8-lane blocked accumulation, not compensated), x = S * scale (+ pse in
 * the spec's order), the full row's max, p = exp(x - max) with an ordinary fp32 polynomial exp (Cephes-style range
 * reduction, about 1-2 ulp, not correctly rounded), l = sum p in fp32 (8 lanes), P = p * (1 / l) in fp32, dropout
 * P * z / keep, P rounded once to the input dtype when that is narrower than fp32 (a 16-bit kernel's P.V operand),
 * O = P.V in fp32 (8 lanes over keys), rounded once to the output dtype. softmax_max / softmax_sum are the row's max
 * and l. Backward as autograd of the same: dP = dO.V^T, D = sum_j P_j dP'_j (from P, not from the output),
 * dS = P (dP' - D) in fp32, rounded to the input dtype for the gradient matmuls when narrower than fp32, then
 * dQ = scale dS.K, dK = scale dS^T.Q, dV = (P z)^T.dO in fp32, each rounded once.
 *
 * Semantics (mask, sparse mode, band, pse, dropout bit, GQA, top-k, sink, rope) come from src/semantics, as the
 * kernels and the emulator take them; never from the golden. fp8 backward is not modelled (FR_E_NOT_AVAILABLE: the
 * judge then bounds by the ideal pipeline alone). Outputs: the operator's dtypes (fr_case_alloc_outputs). */
#ifndef FR_VERIFY_PLAIN_REF_H
#define FR_VERIFY_PLAIN_REF_H

#include "flashref.h"

fr_status fr_plain_fwd(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out, fr_error *err);
fr_status fr_plain_bwd(const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out, fr_error *err);

/* The same in the input dtype throughout, as a textbook 16-bit attention computes it (FlashAttention's own test
 * baseline, PyTorch's math attention on bf16 / fp16 tensors): the scores as 16-bit operations leave them, each
 * rounded to the input dtype (style FR_PLAIN_SCALE_AFTER: dt(dt(q.k) scale), `(q @ k^T) * scale`; FR_PLAIN_SCALE_Q:
 * dt(dt(q scale).k), FlashAttention's attention_ref `q / sqrt(d) @ k^T`; a bias added in the same way), the softmax
 * in fp32 on those (as a 16-bit softmax does inside), P rounded to the input dtype, P.V and the output as above; the
 * backward the autograd of that. For fp32 inputs the roundings are nothing. The judge's --standard fa bounds by it;
 * the diagnosis names an implementation that matches it (native-dtype). */
enum { FR_PLAIN_SCALE_AFTER = 1, FR_PLAIN_SCALE_Q = 2 };
fr_status fr_plain_fwd_native(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out, int style,
                              fr_error *err);
fr_status fr_plain_bwd_native(const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out, int style,
                              fr_error *err);

/* The plain reference's exp (exposed for its test): fp32 in, fp32 out, within a few ulp of exp. */
float fr_plain_expf(float x);

#endif
