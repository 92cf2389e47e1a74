#!/usr/bin/env python3
"""A plain numpy attention, forward and backward, written for the panel (docs/verifier.md) as a textbook would:
S = Q K^T * scale + bias in fp32, masked positions -inf, softmax in fp32 (np.exp), P cast to the case's dtype for
P V (fp16 / bf16 through ml_dtypes), O in fp32 then cast; backward by the chain rule (dV = P^T dO, dP = dO V^T,
dS = P (dP - rowsum(P dP)), dQ = dS K scale, dK = dS^T Q scale), GQA by repeating K/V heads and summing back.
Fully masked rows give P = 0 (no NaN). NaN in masked-out V still reaches the output (0 * NaN): the textbook
behaviour, listed as a known departure in docs/verifier.md.

usage: numpy_attention.py [CASE_DIR | --capabilities]   (exec: per case, or persistent: with FLASHREF_PROTOCOL set)
Same mapping and the same SKIPs as torch_sdpa.py (runners/panel_case.py), the pse added in fp32.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from panel_case import axes, caps, serve, softmax_stats  # noqa: E402

import numpy as np  # noqa: E402

try:
    import ml_dtypes  # noqa: E402

    BF16 = ml_dtypes.bfloat16
except ImportError:  # the case then SKIPs (below)
    BF16 = None


def to_dtype(x, dtype):
    """x rounded to the case's dtype and back to fp32 (what a 16-bit operand holds)."""
    if dtype == "fp16":
        return x.astype(np.float16).astype(np.float32)
    if dtype == "bf16":
        return x.astype(BF16).astype(np.float32)
    return x.astype(np.float32)


def forward(q, k, v, keep, bias, scale, dtype):
    x = np.matmul(q, k.transpose(0, 2, 1)) * np.float32(scale)
    if bias is not None:
        x = x + bias
    x = np.where(keep, x, np.float32(-np.inf)).astype(np.float32)
    m = x.max(axis=-1, keepdims=True) if x.shape[-1] else np.zeros(x.shape[:2] + (1,), np.float32)
    m = np.where(np.isfinite(m), m, 0).astype(np.float32)
    e = np.exp(x - m).astype(np.float32)
    s = e.sum(axis=-1, keepdims=True, dtype=np.float32)
    P = np.where(s > 0, e / np.where(s > 0, s, 1), 0).astype(np.float32)
    Pr = to_dtype(P, dtype)
    return np.matmul(Pr, v).astype(np.float32), P, Pr, x


def handle(c):
    c.check_supported()
    if c.dtype == "bf16" and BF16 is None:
        from panel_case import Unsupported
        raise Unsupported("bf16 needs ml_dtypes")
    scale = np.float32(c.p["scale_value"])
    G = c.N1 // c.N2
    bwd = c.op == "bwd"
    outs = c.alloc_outputs()
    for b in c.batches():
        q, kk, vv = c.qkv(b)
        keep, bias = c.keep(b), c.pse_as(b, "fp32")  # the textbook adds it to fp32 scores
        o, P, Pr, x = forward(q, kk, vv, keep, bias, scale, c.dtype)
        if not bwd:
            c.put(outs["attention_out"], b, to_dtype(o, c.dtype), False)
            m, l = softmax_stats(x)
            c.put_stats(outs["softmax_max"], b, m)
            c.put_stats(outs["softmax_sum"], b, l)
            continue
        dy = c.heads("dy", b, c.N1, c.Dv, False)
        dv = np.matmul(Pr.transpose(0, 2, 1), dy)
        dP = np.matmul(dy, vv.transpose(0, 2, 1))
        D = (P * dP).sum(axis=-1, keepdims=True, dtype=np.float32)
        dS = to_dtype(P * (dP - D), c.dtype)
        dq = np.matmul(dS, kk) * scale
        dk = np.matmul(dS.transpose(0, 2, 1), q) * scale
        dk = dk.reshape(c.N2, G, *dk.shape[1:]).sum(axis=1, dtype=np.float32)
        dv = dv.reshape(c.N2, G, *dv.shape[1:]).sum(axis=1, dtype=np.float32)
        c.put(outs["dq"], b, to_dtype(dq[..., :c.Dk], c.dtype), False)
        c.put(outs["dk"], b, to_dtype(dk[..., :c.Dk], c.dtype), True)
        c.put(outs["dv"], b, to_dtype(dv, c.dtype), True)
        if c.Drope:
            c.put(outs["dq_rope"], b, to_dtype(dq[..., c.Dk:], c.dtype), False)
            c.put(outs["dk_rope"], b, to_dtype(dk[..., c.Dk:], c.dtype), True)
    c.save_outputs(outs)


def capabilities():
    op = axes()
    return caps("numpy_attention.py", "numpy", np.__version__, {"fwd": op, "bwd": dict(op)})


if __name__ == "__main__":
    serve(handle, capabilities=capabilities)
