# needs: msprobe, torch
# signature: shape .* is invalid for input of size
# found-on: mindstudio-probe==26.2.0, torch==2.15.0
# mindstudio-probe's CPU golden of torch_npu.npu_fusion_attention_grad sums the GQA group of dv with the head size
# of q / k (dv.reshape(b, n2, g, s2, d)); with a value head size Dv != Dk (which npu_fusion_attention takes) the
# backward raises a shape error. Expectation: dv of a softmax(QK^T * scale) V attention, summed over each group.
import numpy as np, torch
from msprobe.pytorch.bench_functions.npu_fusion_attention import npu_fusion_attention_grad
B, N1, N2, S1, S2, Dk, Dv = 1, 2, 1, 3, 5, 8, 4
rng = np.random.default_rng(0)
q, k = rng.standard_normal((B, N1, S1, Dk)), rng.standard_normal((B, N2, S2, Dk))
v, dy = rng.standard_normal((B, N2, S2, Dv)), rng.standard_normal((B, N1, S1, Dv))
t = lambda x: torch.from_numpy(x).float()
dq, dk, dv = npu_fusion_attention_grad(t(q), t(k), t(v), t(dy), N1, "BNSD", scale_value=Dk ** -0.5)  # RuntimeError
s = q @ np.repeat(k, N1 // N2, 1).transpose(0, 1, 3, 2) * Dk ** -0.5
p = np.exp(s - s.max(-1, keepdims=True))
p /= p.sum(-1, keepdims=True)
ref_dv = (p.transpose(0, 1, 3, 2) @ dy).reshape(B, N2, N1 // N2, S2, Dv).sum(2)
err = np.abs(dv.double().numpy() - ref_dv).max()
assert err < 1e-4, "dv off by %g" % err
print("fixed: GQA dv with Dv != Dk, max error %.1e" % err)
