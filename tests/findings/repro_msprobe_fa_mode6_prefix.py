# needs: msprobe, torch
# signature: RuntimeError: The size of tensor a
# found-on: mindstudio-probe==26.2.0, torch==2.15.0
# mindstudio-probe's CPU golden of torch_npu.npu_fusion_attention rebuilds the compressed masks of sparse modes 2, 3
# and 4 only. Mode 6 (prefix, compressed: a 3072 x 2048 mask plus prefix = N per batch, documented by torch_npu)
# reaches the score matrix as the compressed mask itself and fails with a broadcast error. Expectation: masked iff
# j > i + S2 - S1 and j >= prefix[b].
import numpy as np, torch
from msprobe.pytorch.bench_functions.npu_fusion_attention import npu_fusion_attention
B, N, S1, S2, D, prefix = 1, 1, 4, 6, 8, [1]
rng = np.random.default_rng(0)
q, k, v = (rng.standard_normal((B, N, s, D)) for s in (S1, S2, S2))
cm = np.zeros((3072, 2048))
cm[:2048] = np.triu(np.ones((2048, 2048)), k=1)
cm[2048:, 1024:] = 1  # rows 2048..3071 = [zeros(1024, 1024) ones(1024, 1024)]
t = lambda x: torch.from_numpy(x).float()
out = npu_fusion_attention(t(q), t(k), t(v), N, "BNSD", atten_mask=torch.from_numpy(cm).bool(), scale=D ** -0.5,
                           sparse_mode=6, prefix=prefix)[0]  # RuntimeError on 26.2.0
i, j = np.arange(S1)[:, None], np.arange(S2)[None, :]
keep = (j <= i + S2 - S1) | (j < prefix[0])
s = q @ k.transpose(0, 1, 3, 2) * D ** -0.5
p = np.where(keep, np.exp(s - np.where(keep, s, -np.inf).max(-1, keepdims=True)), 0.0)
err = np.abs(out.double().numpy() - (p / p.sum(-1, keepdims=True)) @ v).max()
assert err < 1e-5, "mode 6 output off by %g" % err
print("fixed: mode 6 rebuilt, max error %.1e" % err)
