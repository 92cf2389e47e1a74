# needs: jax
# signature: ALG_DOT_BF16_BF16_F32
# found-on: jax==0.10.2, jaxlib==0.10.2
# jax.jit(jax.nn.dot_product_attention) on bfloat16 with batch 1, one head, one query and one key fails to compile on
# the CPU ("Algorithm not supported by the ElementalIrEmitter: ALG_DOT_BF16_BF16_F32"); any larger B, N, S1 or S2
# compiles. The function asks for the BF16_BF16_F32 dot algorithm; XLA:CPU lowers this degenerate dot elementally.
import os
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import numpy as np, jax, jax.numpy as jnp
B, S, N, D = 1, 1, 1, 8
rng = np.random.default_rng(0)
q, k, v = (jnp.asarray(rng.standard_normal((B, S, N, D)), dtype=jnp.bfloat16) for _ in range(3))
print("jax", jax.__version__, "backend", jax.default_backend())
out = jax.jit(jax.nn.dot_product_attention)(q, k, v)  # compile error on jax 0.10.2 / CPU
ref = np.asarray(v.astype(jnp.float32), np.float64)  # one key: softmax weight 1, the output is v
err = np.abs(np.asarray(out.astype(jnp.float32), np.float64) - ref).max()
assert err < 1e-2, "result off by %g" % err
print("fixed: bf16 single token compiles, max error %.2e" % err)
