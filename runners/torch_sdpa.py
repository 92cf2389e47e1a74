#!/usr/bin/env python3
"""PyTorch scaled_dot_product_attention as an implementation under test (the panel, docs/verifier.md).

usage: torch_sdpa.py math|flash [CASE_DIR | --capabilities | --repro CASE_DIR OUT.py]
  flashref suite --impl exec:"python3 runners/torch_sdpa.py flash"        (one process per case)
  flashref suite --impl persistent:"python3 runners/torch_sdpa.py flash"  (torch imported once)
  python3 runners/torch_sdpa.py flash --repro CASE_DIR OUT.py              (a standalone torch script of the case)

Backend: math (SDPBackend.MATH) or flash (SDPBackend.FLASH_ATTENTION, PyTorch's CPU flash kernel), on the CPU, in
the case's dtype (fp32 / fp16 / bf16). One call on whole batches [B, N, S, D] (TND: one call per sequence).
Forward: attention_out from SDPA; softmax_max / softmax_sum are not returned by SDPA, so the runner computes them
from fp32 scores (runners/panel_case.py). Backward: autograd of the same SDPA call with dy (dq, dk, dv; with rope,
q | q_rope and k | k_rope are one tensor along the head dim, so dq_rope / dk_rope come from autograd too). Mapped:
every layout (transposes), GQA/MQA (repeat_interleave, the gradients summed back by autograd), atten_mask, sparse
modes 0-8, band, prefix and top-k without repeats (a boolean attn_mask, True = takes part), pse types 0-3 and the
compressed pse as an additive float mask of the dtype (pse where a position takes part, -inf where not; a pse the
dtype cannot hold exactly SKIPs). A case's mask hint (case.json "hints", declared `mask_handover`) hands the mask
over as a user does: boolean, additive with -inf, or additive with torch.finfo(dtype).min as Hugging Face builds
it. Exit 77 (SKIP) for the rest: dropout, sink, top-k with a repeated index, fp8, or a
shape the chosen backend refuses ("No available kernel").
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from panel_case import THREADS, Call, Unsupported, axes, bias_as, caps, drive, runner, runner_main  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

torch.set_num_threads(THREADS)
VARIANTS = ("math", "flash")
IMPORTS = "import torch\nimport torch.nn.functional as F\nfrom torch.nn.attention import SDPBackend, sdpa_kernel"


# ---- the framework call (copied verbatim into reproducers) -----------------------------------------------------------

def prepare(S, P):
    """Canonical [B, N, S, D] inputs -> tensors of the dtype and the attn_mask: boolean (True = takes part) or, with a
    pse, a float mask of the dtype (pse where a position takes part, -inf where not)."""
    dt = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[P["dtype"]]
    a = {n: torch.from_numpy(np.array(S[n], dtype=np.float32)).to(dt) for n in ("q", "k", "v", "dy") if n in S}
    if P["mask"] == "bool":
        a["attn_mask"] = torch.from_numpy(np.array(S["keep"], dtype=bool))
    elif P["mask"] in ("float", "float_min"):
        # additive: the pse (or 0) where a position takes part; -inf, or the dtype's lowest value as Hugging Face
        # builds its masks (torch.finfo(dtype).min), where not
        fill = -np.inf if P["mask"] == "float" else float(torch.finfo(dt).min)
        bias = S["bias"] if S.get("bias") is not None else 0.0
        a["attn_mask"] = torch.from_numpy(np.where(S["keep"], bias, fill).astype(np.float32)).to(dt)
    return a


def build(P):
    return None  # a function call: nothing to build


def run(_, a, P):
    """SDPA restricted to the backend P["backend"]: {"out": [B, N1, S1, Dv]}, or with dy the autograd gradients of
    the same call {"dq", "dk", "dv"} (canonical [B, N, S, D] float32)."""
    backend = {"math": SDPBackend.MATH, "flash": SDPBackend.FLASH_ATTENTION}[P["backend"]]
    bwd = "dy" in a
    q, k, v = (a[n].clone().requires_grad_(bwd) for n in ("q", "k", "v"))
    G = q.shape[1] // k.shape[1]
    kk, vv = k.repeat_interleave(G, 1), v.repeat_interleave(G, 1)  # GQA / MQA; autograd sums the gradients back
    with sdpa_kernel([backend]):
        o = F.scaled_dot_product_attention(q, kk, vv, attn_mask=a.get("attn_mask"), dropout_p=0.0, scale=P["scale"])
        if bwd:
            o.backward(a["dy"])
    if not bwd:
        return {"out": o.detach().float().numpy()}
    return {n: x.grad.float().numpy() for n, x in (("dq", q), ("dk", k), ("dv", v))}


# ---- the runner ----------------------------------------------------------------------------------------------------

def plan(c, variant):
    c.check_supported()
    calls = []
    for batches, sem in c.calls_per_batch():
        if sem["bias"] is not None:
            sem["bias"] = bias_as(sem["bias"], c.dtype)  # SDPA takes a float mask of the query dtype
            mask = "float_min" if c.mask_hint == "additive_min" else "float"
        elif bool(sem["keep"].all()):
            mask = "none"
        else:  # the case's handover hint: boolean (default), additive with -inf or with the dtype's lowest value
            mask = {"additive_inf": "float", "additive_min": "float_min"}.get(c.mask_hint, "bool")
        calls.append(Call(batches, sem, {"dtype": c.dtype, "backend": variant, "scale": c.scale, "mask": mask}))
    return calls


def describe(variant):
    return {"pip": ["torch==%s" % torch.__version__.split("+")[0]], "runner": "torch_sdpa.py %s" % variant,
            "title": "PyTorch %s: torch.nn.functional.scaled_dot_product_attention, SDPBackend.%s, CPU"
                     % (torch.__version__, "MATH" if variant == "math" else "FLASH_ATTENTION"),
            "versions": "torch %s, numpy %s" % (torch.__version__, np.__version__)}

_, repro = runner(plan, prepare, build, run, IMPORTS, describe, VARIANTS, None)


def handle(variant, c):
    """runner()'s handle, with the backend's refusal of a shape as a SKIP (it is the backend's documented limit)."""
    try:
        drive(c, plan(c, variant), prepare, build, run)
    except RuntimeError as e:
        if "No available kernel" in str(e) or "not supported" in str(e).lower():
            raise Unsupported("%s backend: %s" % (variant, str(e).splitlines()[0][:200]))
        raise


# Alike torch_mha.py:capabilities: kept apart because each runner declares its own framework's axes and notes (data);
# the logic they share is panel_case.caps and panel_case.axes.
def capabilities(variant):
    # PyTorch's CPU flash kernel takes one head size for q, k and v ("No available kernel" for Dv != Dk, a rope part
    # included): declared, so that a hunt does not draw them.
    op = axes(dv_ne_dk=False) if variant == "flash" else axes()
    op["mask_handover"] = ["bool", "additive_inf", "additive_min"]  # attn_mask: boolean or additive float
    return caps("torch_sdpa.py %s" % variant, "torch", torch.__version__, {"fwd": op, "bwd": dict(op)},
                variant=variant, variants=sorted(VARIANTS),
                notes=["fp16/bf16: a pse the dtype cannot hold exactly SKIPs",
                       "the flash backend refuses some shapes (SKIP): Dv != Dk (declared)"])


if __name__ == "__main__":
    runner_main(handle, capabilities, repro, VARIANTS)
