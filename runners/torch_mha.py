#!/usr/bin/env python3
"""PyTorch `torch.nn.MultiheadAttention` on the CPU, as an implementation under test (the panel, docs/verifier.md).

usage: torch_mha.py weights|noweights [CASE_DIR | --capabilities | --repro CASE_DIR OUT.py]
  weights    need_weights=True (the module computes the softmax weights itself and returns them, averaged)
  noweights  need_weights=False (the module hands the heads to scaled_dot_product_attention)

Mapping (what a user who wants plain attention from the module writes): MultiheadAttention(embed_dim = N1 * D,
num_heads = N1, bias=False, batch_first=True) in the case's dtype, eval mode, dropout 0, its input projection
in_proj_weight = [c I; I; I] and out_proj.weight = I, so that the heads it splits are the case's heads. The module
scales by 1 / sqrt(D) itself; c = scale * sqrt(D) must be a power of two (then c * q is exact), else the case SKIPs.
D includes the rope columns (q | q_rope, k | k_rope); Dv must equal D (the module has one head size). GQA / MQA: the
K / V heads repeated G times (the module has one head count). The operator's mask goes as attn_mask, whose True means
"not allowed" (the opposite of SDPA's boolean mask): [S1, S2] when it is the same for every batch and head, else
[B * N1, S1, S2]; with a pse it is one float attn_mask (pse where a position takes part, -inf where not; of the
dtype, so a pse the dtype cannot hold SKIPs). TND: one call per sequence. Backward: autograd of the module's output
with respect to query, key and value (through the identity projections: dq carries c). softmax_max / softmax_sum are
computed by the runner from fp32 scores.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from panel_case import THREADS, Call, Unsupported, axes, bias_as, caps, runner, runner_main  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(THREADS)
VARIANTS = ("weights", "noweights")
IMPORTS = "import torch"


# ---- the framework call (copied verbatim into reproducers) -----------------------------------------------------------

def prepare(S, P):
    """Canonical inputs -> tensors of the dtype ([B, S, N * D] as the module takes them; the K / V heads repeated for
    GQA) and the attn_mask (True = not allowed, or a float mask)."""
    dt = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[P["dtype"]]
    q, k, v = S["q"], S["k"], S["v"]
    B, N1, S1, _ = q.shape
    G = N1 // k.shape[1]
    t = lambda x: torch.from_numpy(np.array(x)).to(dt)  # noqa: E731
    a = {"q": t(q), "k": t(k), "v": t(v), "G": G}
    keep = S["keep"]
    if P["mask"] == "bool2d":
        a["attn_mask"] = torch.from_numpy(np.array(~keep[0, 0]))
    elif P["mask"] == "bool3d":
        a["attn_mask"] = torch.from_numpy(np.array(
            ~np.broadcast_to(keep, (B, N1) + keep.shape[2:]).reshape(B * N1, *keep.shape[2:])))
    elif P["mask"] == "float3d":
        m = np.where(keep, S["bias"] if S.get("bias") is not None else 0.0, -np.inf)
        a["attn_mask"] = t(np.broadcast_to(m, (B, N1) + m.shape[2:]).reshape(B * N1, *m.shape[2:]))
    if "dy" in S:
        a["dy"] = t(S["dy"])
    return a


def build(P):
    """The module with identity projections (the query's scaled by P["c"], a power of two)."""
    dt = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[P["dtype"]]
    E = P["heads"] * P["head_dim"]
    mha = torch.nn.MultiheadAttention(E, P["heads"], bias=False, batch_first=True).to(dt).eval()
    with torch.no_grad():
        eye = torch.eye(E, dtype=dt)
        mha.in_proj_weight.copy_(torch.cat([eye * P["c"], eye, eye]))
        mha.out_proj.weight.copy_(eye)
    return mha


def run(mha, a, P):
    """Returns {"out": [B, N1, S1, D]} or the gradients {"dq", "dk", "dv"} (canonical [B, N, S, D] float32)."""
    q, k, v = (a[n].clone().requires_grad_(P["bwd"]) for n in ("q", "k", "v"))
    B, N1, S1, D = q.shape
    bsh = lambda x: x.transpose(1, 2).reshape(x.shape[0], x.shape[2], x.shape[1] * x.shape[3])  # noqa: E731
    kk, vv = k.repeat_interleave(a["G"], dim=1), v.repeat_interleave(a["G"], dim=1)
    o, _ = mha(bsh(q), bsh(kk), bsh(vv), attn_mask=a.get("attn_mask"), need_weights=P["need_weights"])
    o = o.reshape(B, S1, N1, D).transpose(1, 2)
    if not P["bwd"]:
        return {"out": o.detach().float().numpy()}
    o.backward(a["dy"])
    return {n: x.grad.float().numpy() for n, x in (("dq", q), ("dk", k), ("dv", v))}


# ---- the runner ----------------------------------------------------------------------------------------------------

def plan(c, variant):
    c.check_supported()
    D = c.Dk + c.Drope
    if c.Dv != D:
        raise Unsupported("Dv = %d != D = %d (MultiheadAttention has one head size)" % (c.Dv, D))
    cc = float(np.float32(c.scale)) * math.sqrt(D)
    k2 = round(math.log2(cc)) if cc > 0 else None
    if k2 is None or abs(cc / 2.0 ** k2 - 1) > 2e-7:
        raise Unsupported("scale * sqrt(D) = %g is not a power of two (the module scales by 1 / sqrt(D) itself; "
                          "another factor on q would round)" % cc)
    calls = []
    for batches, sem in c.calls_per_batch():
        keep = sem["keep"]
        if sem["bias"] is not None:
            sem["bias"] = bias_as(sem["bias"], c.dtype)
            mask = "float3d"
        elif bool(keep.all()):
            mask = "none"
        elif keep.shape[0] == 1 and keep.shape[1] == 1:
            mask = "bool2d"
        else:
            mask = "bool3d"
        calls.append(Call(batches, sem, {"dtype": c.dtype, "heads": c.N1, "head_dim": D, "c": 2.0 ** k2,
                                         "mask": mask, "need_weights": variant == "weights",
                                         "bwd": c.op == "bwd"}))
    return calls


_cache = {}


def describe(variant):
    return {"pip": ["torch==%s" % torch.__version__.split("+")[0]], "runner": "torch_mha.py %s" % variant,
            "title": "PyTorch %s: torch.nn.MultiheadAttention, need_weights=%s, CPU"
                     % (torch.__version__, variant == "weights"),
            "versions": "torch %s, numpy %s" % (torch.__version__, np.__version__)}

handle, repro = runner(plan, prepare, build, run, IMPORTS, describe, VARIANTS, _cache)


# Alike torch_sdpa.py:capabilities: kept apart because each runner declares its own framework's axes and notes (data);
# the logic they share is panel_case.caps and panel_case.axes.
def capabilities(variant):
    op = axes(dv_ne_dk=False, empty=False, scale="2^k/sqrt(D)")
    return caps("torch_mha.py %s" % variant, "torch", torch.__version__, {"fwd": op, "bwd": dict(op)},
                variant=variant, variants=list(VARIANTS),
                notes=["scale must be a power of two times 1/sqrt(D) (D with rope)",
                       "fp16/bf16: a pse the dtype cannot hold exactly SKIPs"])


if __name__ == "__main__":
    runner_main(handle, capabilities, repro, VARIANTS)
