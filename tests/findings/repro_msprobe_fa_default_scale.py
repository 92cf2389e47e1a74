# needs: msprobe, torch
# signature: default scale is not torch_npu
# found-on: mindstudio-probe==26.2.0, torch==2.15.0
# mindstudio-probe's CPU golden of torch_npu.npu_fusion_attention defaults `scale` to 1 / sqrt(D) when the caller
# omits it, while torch_npu.npu_fusion_attention documents `float scale=1.` (default 1). A call that relies on the
# default is compared against a golden computed with another scale.
import numpy as np, torch
from msprobe.pytorch.bench_functions.npu_fusion_attention import npu_fusion_attention
B, N, S1, S2, D = 1, 1, 3, 5, 16
rng = np.random.default_rng(0)
q, k, v = (rng.standard_normal((B, N, s, D)) for s in (S1, S2, S2))
t = lambda x: torch.from_numpy(x).float()
out = npu_fusion_attention(t(q), t(k), t(v), N, "BNSD")[0].double().numpy()  # scale omitted: torch_npu uses 1.0
def attend(scale):
    s = q @ k.transpose(0, 1, 3, 2) * scale
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v
e1, e_rsqrt = np.abs(out - attend(1.0)).max(), np.abs(out - attend(D ** -0.5)).max()
print("omitted scale: error vs scale = 1 (torch_npu's default): %.1e, vs 1/sqrt(D): %.1e" % (e1, e_rsqrt))
assert e1 < 1e-5, "default scale is not torch_npu's documented 1.0 (error %.3g)" % e1
print("fixed: the default scale is 1.0")
