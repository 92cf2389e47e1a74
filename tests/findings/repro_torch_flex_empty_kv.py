# needs: torch
# signature: IndexError
# found-on: torch==2.15.0
# torch.nn.attention.flex_attention (eager, CPU) with an empty key sequence (S2 = 0) raises IndexError from an
# internal max() over the empty key dimension; scaled_dot_product_attention returns an output of zeros for the same
# inputs.
import numpy as np, torch
from torch.nn.attention.flex_attention import flex_attention
B, N, S1, S2, D = 1, 2, 3, 0, 8
rng = np.random.default_rng(0)
q = torch.tensor(rng.standard_normal((B, N, S1, D)), dtype=torch.float32)
k = v = torch.zeros(B, N, S2, D)
print("torch", torch.__version__)
print("sdpa:", torch.nn.functional.scaled_dot_product_attention(q, k, v).abs().max().item())
out = flex_attention(q, k, v)  # IndexError on torch 2.15
assert out.shape == (B, N, S1, D) and torch.equal(out, torch.zeros_like(out)), out
print("fixed: zero rows for 0 keys")
