# needs: msprobe, torch
# signature: sparse_mode 4 rebuilt with a top-left origin
# found-on: mindstudio-probe==26.2.0, torch==2.15.0
# mindstudio-probe's CPU golden of torch_npu.npu_fusion_attention rebuilds the band of sparse_mode 4 from the
# compressed 2048 x 2048 mask with a top-left origin (triu(next + 1), tril(-pre - 1)), while it rebuilds mode 3
# (rightDownCausal) with the bottom-right origin. In FlashAttentionScore mode 4 is anchored bottom-right like mode 3:
# with pre_tockens unbounded and next_tockens = 0 it is exactly rightDownCausal. Wrong whenever S1 != S2.
import numpy as np, torch
from msprobe.pytorch.bench_functions.npu_fusion_attention import npu_fusion_attention
B, N, S1, S2, D = 1, 1, 3, 6, 8
rng = np.random.default_rng(0)
q, k, v = (rng.standard_normal((B, N, s, D)) for s in (S1, S2, S2))
mask = torch.from_numpy(np.triu(np.ones((2048, 2048)), k=1)).bool()  # the compressed mask of modes 2, 3, 4
t = lambda x: torch.from_numpy(x).float()
run = lambda mode: npu_fusion_attention(t(q), t(k), t(v), N, "BNSD", atten_mask=mask, scale=D ** -0.5,
                                        sparse_mode=mode, pre_tockens=2147483647, next_tockens=0)[0].double().numpy()
s = q @ k.transpose(0, 1, 3, 2) * D ** -0.5
i, j = np.arange(S1)[:, None], np.arange(S2)[None, :]
def attend(keep):
    p = np.where(keep, np.exp(s - np.where(keep, s, -np.inf).max(-1, keepdims=True)), 0.0)
    return (p / p.sum(-1, keepdims=True)) @ v
bottom_right, top_left = attend(j - i <= S2 - S1), attend(j <= i)
e3, e4 = np.abs(run(3) - bottom_right).max(), np.abs(run(4) - bottom_right).max()
print("mode 3 vs bottom-right causal: %.1e; mode 4 (pre = inf, next = 0) vs bottom-right: %.1e, vs top-left: %.1e"
      % (e3, e4, np.abs(run(4) - top_left).max()))
assert e4 < 1e-5, "sparse_mode 4 rebuilt with a top-left origin (error %.3g vs bottom-right)" % e4
print("fixed: mode 4 anchored bottom-right")
