# needs: jax
# signature: F16_F16_F32
# found-on: jax==0.10.2, jaxlib==0.10.2
# jax.nn.dot_product_attention on float16 works eagerly on the CPU but fails under jax.jit: the function asks for the
# F16_F16_F32 dot algorithm and falls back to the default precision in a try/except, which only catches the error
# when the einsum runs eagerly; under jit the error comes at compile time, outside the try.
import os
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import numpy as np, jax, jax.numpy as jnp
B, S1, S2, N, D = 1, 4, 6, 2, 8
rng = np.random.default_rng(0)
q, k, v = (rng.standard_normal((B, s, N, D)).astype(np.float16) for s in (S1, S2, S2))
print("jax", jax.__version__, "backend", jax.default_backend())
eager = jax.nn.dot_product_attention(q, k, v)  # fine
out = jax.jit(jax.nn.dot_product_attention)(q, k, v)  # ValueError on jax 0.10.2 / CPU
s = np.einsum("bqnd,bknd->bnqk", q.astype(np.float64), k.astype(np.float64)) / np.sqrt(D)
p = np.exp(s - s.max(-1, keepdims=True))
ref = np.einsum("bnqk,bknd->bqnd", p / p.sum(-1, keepdims=True), v.astype(np.float64))
err = np.abs(np.asarray(out, np.float64) - ref).max()
assert err < 4e-3, "jit result off by %g" % err
print("fixed: jit fp16 matches the fp64 reference, max error %.2e" % err)
