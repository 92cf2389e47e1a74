#!/usr/bin/env python3
"""JAX `jax.nn.dot_product_attention` on the CPU (implementation "xla"), as an implementation under test (the panel,
docs/verifier.md).

usage: jax_dpa.py [CASE_DIR | --capabilities | --repro CASE_DIR OUT.py]

Mapping (what a user of the function writes): jax.jit of dot_product_attention(query [B, S1, N1, D], key / value
[B, S2, N2, D], bias, mask, scale=..., is_causal, local_window_size, query_seq_lengths, key_value_seq_lengths) on
arrays of the case's dtype (GQA natively; value must have key's shape, so Dv != Dk SKIPs). The operator's mask goes
natively as far as the arguments express it: is_causal=True for the top-left causal triangle (sparse mode 2, mode 3
with S1 = S2), local_window_size=(left, right) for a top-left band with non-negative sides (mode 0 pre / next,
documented as "token c attends [c - left, c + right]"); everything else (a user mask, prefix, top-k, bottom-right
bands, negative sides) as a boolean `mask` (True = takes part) in its broadcast shape. TND: one padded batch with
query_seq_lengths / key_value_seq_lengths (the function's padding masks). The pse goes as `bias` (float32, added to
the fp32 logits). Backward: jax.vjp of the same call (dq, dk, dv). softmax_max / softmax_sum are computed by the
runner from fp32 scores. Fully masked rows: the function masks with a large finite negative value (-0.7 x the fp32
maximum), so such rows get a finite mean of V (implementation-defined for flashref, D1).
"""
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from panel_case import Call, Unsupported, axes, caps, runner, runner_main  # noqa: E402

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

IMPORTS = "import jax\nimport jax.numpy as jnp"
_cache = {}


# ---- the framework call (copied verbatim into reproducers) -----------------------------------------------------------

def prepare(S, P):
    """Canonical [B, N, S, D] -> the function's [B, S, N, D] arrays of the dtype, mask, bias, sequence lengths."""
    dt = {"fp32": jnp.float32, "fp16": jnp.float16, "bf16": jnp.bfloat16}[P["dtype"]]
    a = {n: jnp.asarray(np.ascontiguousarray(S[x].transpose(0, 2, 1, 3)), dtype=dt)
         for n, x in (("query", "q"), ("key", "k"), ("value", "v"))}
    if P["mask"]:
        a["mask"] = jnp.asarray(S["keep"])
    if S.get("bias") is not None:
        a["bias"] = jnp.asarray(S["bias"], dtype=jnp.float32)
    if P["padded"]:
        a["query_seq_lengths"] = jnp.asarray(S["q_len"], dtype=jnp.int32)
        a["key_value_seq_lengths"] = jnp.asarray(S["kv_len"], dtype=jnp.int32)
    if "dy" in S:
        a["dy"] = jnp.asarray(np.ascontiguousarray(S["dy"].transpose(0, 2, 1, 3)), dtype=dt)
    return a


def build(P):
    """The jitted call (P's static arguments baked in)."""
    window = tuple(P["window"]) if P["window"] is not None else None

    def f(query, key, value, **kw):
        return jax.nn.dot_product_attention(query, key, value, scale=P["scale"], is_causal=P["is_causal"],
                                            local_window_size=window, implementation="xla", **kw)

    if not P["bwd"]:
        return jax.jit(f)

    def grads(query, key, value, dy, **kw):
        _, vjp = jax.vjp(lambda q, k, v: f(q, k, v, **kw), query, key, value)
        return vjp(dy)
    return jax.jit(grads)


def run(fn, a, P):
    """Returns {"out": [B, N1, S1, Dv]} or {"dq", "dk", "dv"} (canonical [B, N, S, D] float32)."""
    t = lambda x: np.asarray(x.astype(jnp.float32)).transpose(0, 2, 1, 3)  # noqa: E731
    if not P["bwd"]:
        return {"out": t(fn(**a))}
    dq, dk, dv = fn(**a)
    return {"dq": t(dq), "dk": t(dk), "dv": t(dv)}


# ---- the runner ----------------------------------------------------------------------------------------------------

def _band_keep(is_causal, window, S1, S2):
    i, j = np.arange(S1)[:, None], np.arange(S2)[None, :]
    ok = np.ones((S1, S2), dtype=bool)
    if is_causal:
        ok &= j <= i
    if window is not None:
        ok &= (i <= j + window[0]) & (i >= j - window[1])
    return ok


def plan(c, variant=None):
    c.check_supported()
    if c.Dv != c.Dk + c.Drope:
        raise Unsupported("Dv != D (dot_product_attention wants value with key's shape; D includes the rope "
                          "columns)")
    padded = c.layout == "TND"
    if padded:
        if not c.batches():
            return []
        sem, batches = c.canon_padded(), list(range(c.B))
    else:
        if not c.calls_per_batch():
            return []
        batches, sem = c.calls_per_batch()[0]
    B, S1, S2 = sem["q"].shape[0], sem["q"].shape[2], sem["k"].shape[2]
    # the top-left band every batch shares (TND: in each sequence's own coordinates, like the padded layout)
    lo, hi, prefix, _ = c.band(c.first_nonempty if c.first_nonempty >= 0 else 0)
    same = all(c.band(b)[:3] == (lo, hi, prefix) for b in range(c.B))
    is_causal, window = False, None
    if same and not prefix and S1 and S2:
        if lo is None and hi == 0:
            is_causal = True
        elif (lo is None or lo <= 0) and (hi is None or hi >= 0) and (lo is not None or hi is not None):
            window = [S1 + S2 if lo is None else -lo, S1 + S2 if hi is None else hi]
    pad = np.ones((B, 1, S1, S2), dtype=bool)
    if padded:  # what query_seq_lengths / key_value_seq_lengths mask
        pad = (np.arange(S1)[None, None, :, None] < sem["q_len"][:, None, None, None]) & \
              (np.arange(S2)[None, None, None, :] < sem["kv_len"][:, None, None, None])
    fk = pad & _band_keep(is_causal, window, S1, S2)
    keep = np.broadcast_to(sem["keep"], np.broadcast_shapes(sem["keep"].shape, fk.shape))
    if not np.array_equal(keep & fk, keep):  # the mask reaches outside the band (a prefix): no band argument
        is_causal, window, fk = False, None, pad
    mask = not np.array_equal(keep, np.broadcast_to(fk, keep.shape))
    p = {"dtype": c.dtype, "scale": c.scale, "is_causal": is_causal, "window": window, "mask": mask,
         "padded": padded, "bwd": c.op == "bwd"}
    return [Call(batches, sem, p)]


def describe(variant):
    return {"pip": ["jax==%s" % jax.__version__], "runner": "jax_dpa.py",
            "title": "JAX %s: jax.nn.dot_product_attention (xla) on the CPU" % jax.__version__,
            "versions": "jax %s, jaxlib %s, numpy %s" % (jax.__version__, jax.lib.__version__, np.__version__)}

handle, repro = runner(plan, prepare, build, run, IMPORTS, describe, None, _cache)


def capabilities(variant):
    op = axes(dv_ne_dk=False)
    return caps("jax_dpa.py", "jax", jax.__version__, {"fwd": op, "bwd": dict(op)})


if __name__ == "__main__":
    runner_main(handle, capabilities, repro)
