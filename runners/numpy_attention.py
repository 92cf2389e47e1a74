#!/usr/bin/env python3
"""A plain numpy attention, forward and backward, written for the panel (docs/verifier.md) as a textbook would:
S = Q K^T * scale + bias in fp32, masked positions -inf, softmax in fp32 (np.exp), P cast to the case's dtype for
P V (fp16 / bf16 through ml_dtypes), O in fp32 then cast; backward by the chain rule (dV = P^T dO, dP = dO V^T,
dS = P (dP - rowsum(P dP)), dQ = dS K scale, dK = dS^T Q scale), GQA by repeating K/V heads and summing back.
Fully masked rows give P = 0 (no NaN). NaN in masked-out V still reaches the output (0 * NaN): the textbook
behaviour, listed as a known departure in docs/verifier.md.

usage: numpy_attention.py [CASE_DIR | --capabilities | --repro CASE_DIR OUT.py]
  (exec: per case, or persistent: with FLASHREF_PROTOCOL set; --repro writes a standalone numpy script of the case)
Same mapping and the same SKIPs as torch_sdpa.py (runners/panel_case.py), the pse added in fp32: one call on whole
batches [B, N, S, D] (TND: one per sequence) with the boolean "takes part" mask and the bias in their broadcast
shapes. bf16 needs ml_dtypes (else SKIP). softmax_max / softmax_sum: from the same fp32 scores (panel_case).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from panel_case import Call, Unsupported, axes, bias_as, caps, runner, runner_main  # noqa: E402

import numpy as np  # noqa: E402

try:
    import ml_dtypes  # noqa: E402

    ML_DTYPES = ml_dtypes.__version__
except ImportError:  # bf16 cases then SKIP (plan)
    ML_DTYPES = None
IMPORTS = ""  # numpy only (run() imports ml_dtypes for bf16 itself)


# ---- the framework call (copied verbatim into reproducers) -----------------------------------------------------------

def prepare(S, P):
    """Canonical inputs as the textbook takes them: float32 q, k, v (and dy), the boolean keep mask (True = takes
    part) and the float32 bias (or None)."""
    a = {n: np.asarray(S[n], dtype=np.float32) for n in ("q", "k", "v", "dy") if n in S}
    a["keep"] = np.asarray(S["keep"], dtype=bool)
    a["bias"] = None if S.get("bias") is None else np.asarray(S["bias"], dtype=np.float32)
    return a


def build(P):
    return None  # plain numpy: nothing to build


def run(_, a, P):
    """The textbook attention of [B, N, S, D] arrays: returns {"out": [B, N1, S1, Dv]} or the chain-rule gradients
    {"dq", "dk", "dv"}, float32 holding values of the dtype."""
    if P["dtype"] == "bf16":
        import ml_dtypes  # numpy has no bf16 of its own

    def rd(x):  # x rounded to the case's dtype and back to fp32 (what a 16-bit operand holds)
        if P["dtype"] == "fp16":
            return x.astype(np.float16).astype(np.float32)
        if P["dtype"] == "bf16":
            return x.astype(ml_dtypes.bfloat16).astype(np.float32)
        return x.astype(np.float32)

    scale = np.float32(P["scale"])
    q, k, v, keep, bias = a["q"], a["k"], a["v"], a["keep"], a["bias"]
    G = q.shape[1] // k.shape[1]
    kk, vv = np.repeat(k, G, axis=1), np.repeat(v, G, axis=1)  # GQA / MQA: each K / V head serves G query heads
    x = np.matmul(q, kk.swapaxes(-1, -2)) * scale
    if bias is not None:
        x = x + bias
    x = np.where(keep, x, np.float32(-np.inf)).astype(np.float32)
    m = x.max(axis=-1, keepdims=True) if x.shape[-1] else np.zeros(x.shape[:-1] + (1,), np.float32)
    m = np.where(np.isfinite(m), m, 0).astype(np.float32)
    e = np.exp(x - m).astype(np.float32)
    s = e.sum(axis=-1, keepdims=True, dtype=np.float32)
    p = np.where(s > 0, e / np.where(s > 0, s, 1), 0).astype(np.float32)  # a fully masked row: P = 0
    pr = rd(p)
    if "dy" not in a:
        return {"out": rd(np.matmul(pr, vv).astype(np.float32))}
    dy = a["dy"]
    dv = np.matmul(pr.swapaxes(-1, -2), dy)
    dp = np.matmul(dy, vv.swapaxes(-1, -2))
    d = (p * dp).sum(axis=-1, keepdims=True, dtype=np.float32)
    ds = rd(p * (dp - d))
    dq = np.matmul(ds, kk) * scale
    dk = np.matmul(ds.swapaxes(-1, -2), q) * scale
    B, N2, S2 = k.shape[0], k.shape[1], k.shape[2]
    dk = dk.reshape(B, N2, G, S2, -1).sum(axis=2, dtype=np.float32)  # the G query heads' shares summed back
    dv = dv.reshape(B, N2, G, S2, -1).sum(axis=2, dtype=np.float32)
    return {"dq": rd(dq), "dk": rd(dk), "dv": rd(dv)}


# ---- the runner ----------------------------------------------------------------------------------------------------

def plan(c, variant=None):
    c.check_supported()
    if c.dtype == "bf16" and ML_DTYPES is None:
        raise Unsupported("bf16 needs ml_dtypes")
    calls = []
    for batches, sem in c.calls_per_batch():
        if sem["bias"] is not None:
            sem["bias"] = bias_as(sem["bias"], "fp32")  # the textbook adds it to fp32 scores
        calls.append(Call(batches, sem, {"dtype": c.dtype, "scale": c.scale}))
    return calls


def describe(variant):
    pip = ["numpy==%s" % np.__version__] + (["ml_dtypes==%s" % ML_DTYPES] if ML_DTYPES else [])
    return {"pip": pip, "runner": "numpy_attention.py",
            "title": "numpy %s: a textbook attention (fp32 softmax, P rounded to the dtype for P.V)" % np.__version__,
            "versions": "numpy %s%s" % (np.__version__, ", ml_dtypes %s" % ML_DTYPES if ML_DTYPES else "")}

handle, repro = runner(plan, prepare, build, run, IMPORTS, describe, None, None)


def capabilities(variant):
    op = axes()
    return caps("numpy_attention.py", "numpy", np.__version__, {"fwd": op, "bwd": dict(op)})


if __name__ == "__main__":
    runner_main(handle, capabilities, repro)
