#!/usr/bin/env python3
"""The CPU golden of Ascend's accuracy tool for npu_fusion_attention (PyPI `mindstudio-probe`, module
msprobe.pytorch.bench_functions.npu_fusion_attention: npu_fusion_attention and npu_fusion_attention_grad), as an
implementation under test (the panel, docs/verifier.md). It is the reference Ascend users compare their NPU's
FlashAttentionScore against (msprobe's accuracy comparison swaps the NPU call for it).

usage: msprobe_fa.py [CASE_DIR | --capabilities | --repro CASE_DIR OUT.py]

Mapping: the case's own arguments, as a torch_npu user passes them to torch_npu.npu_fusion_attention (the tool takes
the same signature): query, key, value as torch tensors in the case's layout (BSH, SBH, BSND, BNSD) and dtype,
head_num, input_layout, pse = real_shift, atten_mask (the case's tensor, bool, including the compressed 2048 x 2048
one of modes 2-4), scale, pre_tockens, next_tockens, sparse_mode, prefix; backward: npu_fusion_attention_grad(query,
key, value, dy, head_num, input_layout, ...) with softmax_max / softmax_sum / attention_in of the case and
scale_value. The tool computes in float64; its outputs are cast back to the case's dtype with torch (.to(dtype),
round to nearest even), softmax_max / softmax_sum (its own, forward) to fp32.

SKIP (the tool cannot be handed these): TND (the tool raises "does not supported for now"), dropout (the tool forces
keep_prob = 1 whatever it is given), pse_type 0, 2, 3 (it adds pse before scaling, pse_type 1, and takes no slopes),
the compressed pse, rope, sink, top-k, fp8. What it computes differently from the operator shows up as departures:
masked positions get -40000 added instead of being excluded, the band of mode 0 is ignored when a mask is given,
sparse mode 4 is rebuilt with top-left offsets, modes 6-8 are not rebuilt at all.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from panel_case import THREADS, Call, Unsupported, axes, caps, runner, runner_main  # noqa: E402

import logging  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from msprobe.pytorch.bench_functions.npu_fusion_attention import (npu_fusion_attention,  # noqa: E402
                                                                    npu_fusion_attention_grad)

logging.disable(logging.INFO)
torch.set_num_threads(THREADS)
IMPORTS = ("import torch\nfrom msprobe.pytorch.bench_functions.npu_fusion_attention import (npu_fusion_attention,\n"
           "                                                                    npu_fusion_attention_grad)")
try:
    from importlib.metadata import version as _version
    VERSION = _version("mindstudio-probe")
except Exception:  # pragma: no cover
    VERSION = "unknown"


# ---- the framework call (copied verbatim into reproducers) -----------------------------------------------------------

def prepare(S, P):
    """Canonical [B, N, S, D] inputs -> torch tensors in the case's layout and dtype, the case's own atten_mask and
    pse, and (backward) the case's softmax_max / softmax_sum / attention_in."""
    dt = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[P["dtype"]]

    def lay(x):  # [B, N, S, D] -> the case layout
        B, N, L, D = x.shape
        if P["layout"] == "BNSD":
            y = x
        elif P["layout"] == "BSND":
            y = x.transpose(0, 2, 1, 3)
        elif P["layout"] == "BSH":
            y = x.transpose(0, 2, 1, 3).reshape(B, L, N * D)
        else:  # SBH
            y = x.transpose(2, 0, 1, 3).reshape(L, B, N * D)
        return torch.from_numpy(np.array(y)).to(dt)

    a = {"query": lay(S["q"]), "key": lay(S["k"]), "value": lay(S["v"])}
    if "atten_mask" in S:
        a["atten_mask"] = torch.from_numpy(np.array(S["atten_mask"]).astype(bool))
    if "pse" in S:
        a["pse"] = torch.from_numpy(np.array(S["pse"])).to(dt)
    if "dy" in S:
        a["dy"] = lay(S["dy"])
        a["attention_in"] = lay(S["attention_in"])
        a["softmax_max"] = torch.from_numpy(np.array(S["softmax_max"]))
        a["softmax_sum"] = torch.from_numpy(np.array(S["softmax_sum"]))
    return a


def build(P):
    return None  # a function call: nothing to build


def run(_, a, P):
    """Returns canonical float32 outputs: {"out", "softmax_max", "softmax_sum"} or {"dq", "dk", "dv"}."""
    dt = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[P["dtype"]]
    kw = {"pse": a.get("pse"), "atten_mask": a.get("atten_mask"), "pre_tockens": P["pre_tokens"],
          "next_tockens": P["next_tokens"], "sparse_mode": P["sparse_mode"], "prefix": P["prefix"],
          "keep_prob": 1.0}

    def canon(x, N):  # the case layout -> [B, N, S, D] float32 (rounded to the dtype first, as a user keeps it)
        x = x.to(dt).float().numpy()
        if P["layout"] == "BNSD":
            return x
        if P["layout"] == "BSND":
            return x.transpose(0, 2, 1, 3)
        if P["layout"] == "BSH":
            return x.reshape(x.shape[0], x.shape[1], N, -1).transpose(0, 2, 1, 3)
        return x.reshape(x.shape[0], x.shape[1], N, -1).transpose(1, 2, 0, 3)  # SBH

    if "dy" not in a:
        out, smax, ssum = npu_fusion_attention(a["query"], a["key"], a["value"], P["head_num"], P["layout"],
                                               scale=P["scale"], **kw)
        return {"out": canon(out, P["head_num"]), "softmax_max": smax[..., 0].float().numpy(),
                "softmax_sum": ssum[..., 0].float().numpy()}
    dq, dk, dv = npu_fusion_attention_grad(a["query"], a["key"], a["value"], a["dy"], P["head_num"], P["layout"],
                                           softmax_max=a["softmax_max"], softmax_sum=a["softmax_sum"],
                                           attention_in=a["attention_in"], scale_value=P["scale"], **kw)
    return {"dq": canon(dq, P["head_num"]), "dk": canon(dk, P["kv_heads"]), "dv": canon(dv, P["kv_heads"])}


# ---- the runner ----------------------------------------------------------------------------------------------------

def plan(c, variant=None):
    if c.layout == "TND":
        raise Unsupported("TND (the tool: 'input_layout TND does not supported for now')")
    c.check_supported()
    for name in ("topk_indices", "query_rope", "sink"):
        if name in c.t:
            raise Unsupported("%s (not an argument of the tool)" % name)
    if "real_shift" in c.t:
        pt, rs = int(c.p.get("pse_type", 1)), c.t["real_shift"]
        if pt != 1:
            raise Unsupported("pse_type %d (the tool adds pse before the scale: pse_type 1 only)" % pt)
        if rs.shape[2] not in (1, c.S1):
            raise Unsupported("compressed pse [.., %d, S2] (the tool adds pse as a full tensor)" % rs.shape[2])
    calls = c.calls_per_batch()
    if not calls:
        return []
    batches, sem = calls[0]
    if "atten_mask" in c.t:
        sem["atten_mask"] = c.t["atten_mask"].astype(bool)
    if "real_shift" in c.t:
        sem["pse"] = c.t["real_shift"]
    if c.op == "bwd":
        sem["attention_in"] = np.stack([c.heads("attention_in", b, c.N1, c.Dv, False) for b in batches])
        sem["softmax_max"] = c.t["softmax_max"].astype(np.float32)
        sem["softmax_sum"] = c.t["softmax_sum"].astype(np.float32)
    p = c.p
    pf = p.get("prefix")
    return [Call(batches, sem, {"dtype": c.dtype, "layout": c.layout, "head_num": c.N1, "kv_heads": c.N2,
                                "scale": c.scale, "pre_tokens": int(p.get("pre_tokens", 2147483647)),
                                "next_tokens": int(p.get("next_tokens", 2147483647)),
                                "sparse_mode": int(p.get("sparse_mode", 0)),
                                "prefix": None if pf is None else [int(x) for x in pf]})]


def describe(variant):
    return {"pip": ["mindstudio-probe==%s" % VERSION, "torch"], "runner": "msprobe_fa.py",
            "title": "mindstudio-probe %s: the CPU golden of npu_fusion_attention (msprobe bench_functions)"
                     % VERSION,
            "versions": "mindstudio-probe %s, torch %s, numpy %s" % (VERSION, torch.__version__, np.__version__)}

handle, repro = runner(plan, prepare, build, run, IMPORTS, describe, None, None)


def capabilities(variant):
    op = axes(layouts=["BSH", "SBH", "BSND", "BNSD"], pse_types=[1], pse_shapes=["BNSS", "BN1S", "1NSS"], topk="none",
              rope=False)
    return caps("msprobe_fa.py", "mindstudio-probe", VERSION, {"fwd": op, "bwd": dict(op)})


if __name__ == "__main__":
    runner_main(handle, capabilities, repro)
