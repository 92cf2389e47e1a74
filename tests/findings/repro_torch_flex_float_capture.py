# needs: torch
# signature: SymFloat
# found-on: torch==2.15.0
# torch.nn.attention.flex_attention (eager, CPU): a score_mod that captures a Python float (an ALiBi slope, a soft-cap)
# works on the first call and fails on the next call with another value of that float: the internal compile of the
# flex_attention higher-order op marks the float dynamic, and the op's argument check accepts only Tensor / int /
# SymInt captures ("... can only be of (Tensor, int, SymInt) but got (SymFloat,)").
import numpy as np, torch
from torch.nn.attention.flex_attention import flex_attention
B, N, S1, S2, D = 1, 2, 4, 6, 8
rng = np.random.default_rng(0)
q, k, v = (rng.standard_normal((B, N, s, D)) for s in (S1, S2, S2))
tq, tk, tv = (torch.tensor(x, dtype=torch.float32) for x in (q, k, v))
print("torch", torch.__version__)
for slope in (0.5, 0.25):  # the second value fails on torch 2.15
    def alibi(score, b, h, q_idx, kv_idx):
        return score - slope * (q_idx - kv_idx).abs()
    out = flex_attention(tq, tk, tv, score_mod=alibi).double().numpy()
    i, j = np.arange(S1)[:, None], np.arange(S2)[None, :]
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D) - slope * np.abs(i - j)
    p = np.exp(s - s.max(-1, keepdims=True))
    err = np.abs(out - (p / p.sum(-1, keepdims=True)) @ v).max()
    assert err < 1e-5, "slope %g: error %g" % (slope, err)
    print("slope %g: max error %.1e" % (slope, err))
print("fixed: both calls match the fp64 reference")
