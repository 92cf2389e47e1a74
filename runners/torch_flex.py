#!/usr/bin/env python3
"""PyTorch `torch.nn.attention.flex_attention.flex_attention` in eager mode on the CPU, as an implementation under test
(the panel, docs/verifier.md).

usage: torch_flex.py [CASE_DIR | --capabilities | --repro CASE_DIR OUT.py]

Mapping (what a user of FlexAttention writes): flex_attention(q, k, v, score_mod, block_mask, scale, enable_gqa=True)
on [B, N, S, D] tensors of the case's dtype. The operator's mask is a mask_mod written from its formula (spec 4,
D12): the band lo <= kv - q <= hi of the batch's sparse mode (0-8, pre/next tokens, causal top-left or bottom-right),
OR kv < prefix[b] (modes 5 / 6), AND NOT the user atten_mask (modes 0 / 1 / 5; a captured tensor), AND the top-k list
(a captured boolean tensor; repeated indices SKIP), turned into a BlockMask with create_block_mask. The pse is a
score_mod: pse_type 0 `score + pse[b, h, q, kv]`; pse_type 1 `(score + pse) * scale` with flex's own scale set to 1
(the operator adds pse before scaling, D11); pse types 2 / 3 (ALiBi) `score - slope[h] * |kv + kv_start - q -
q_start|` (or its square root), computed inside the score_mod from the slopes; the compressed pse is handed over as
the full bias it stands for (D14). TND: one call per sequence. Eager flex_attention has no backward on the CPU
(NotImplementedError), so backward cases SKIP; sink SKIPs (no extra logit). softmax_max / softmax_sum are computed by
the runner from fp32 scores.
"""
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from panel_case import THREADS, Call, axes, caps, runner, runner_main  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.nn.attention.flex_attention import create_block_mask, flex_attention  # noqa: E402

torch.set_num_threads(THREADS)
warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
IMPORTS = "import torch\nfrom torch.nn.attention.flex_attention import create_block_mask, flex_attention"


# ---- the framework call (copied verbatim into reproducers) -----------------------------------------------------------

def prepare(S, P):
    """Canonical inputs -> tensors: q, k, v of the dtype; the user mask / top-k as one boolean `allowed` tensor (the
    band and prefix are computed by the mask_mod from P); the bias as float32 (the scores are fp32 in eager)."""
    dt = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[P["dtype"]]
    a = {n: torch.from_numpy(np.array(S[n])).to(dt) for n in ("q", "k", "v")}
    if P["allowed"]:
        a["allowed"] = torch.from_numpy(np.array(S["allowed"]))
    if P["pse"] in ("tensor0", "tensor1"):
        a["pse"] = torch.from_numpy(np.array(S["pse"], dtype=np.float32))
    elif P["pse"] in ("alibi2", "alibi3"):
        a["slopes"] = torch.from_numpy(np.array(S["slopes"], dtype=np.float32))
    return a


def build(P):
    return None  # eager: nothing to build


def run(_, a, P):
    """flex_attention with a mask_mod / score_mod written from P; returns {"out": [B, N1, S1, Dv] float32}."""
    q, k, v = a["q"], a["k"], a["v"]
    B, N1, S1, _ = q.shape
    S2 = k.shape[2]
    lo, hi, prefix = P["lo"], P["hi"], P["prefix"]
    pre = torch.tensor(prefix if prefix is not None else [0] * B)
    allowed = a.get("allowed")

    def mask_mod(b, h, qi, kv):
        ok = qi >= 0  # every position, as a tensor
        d = kv - qi
        if lo is not None or hi is not None:
            band = (d >= lo) if lo is not None else (d >= d)
            if hi is not None:
                band = band & (d <= hi)
            ok = band | (kv < pre[b])
        if allowed is not None:
            ok = ok & allowed[b if allowed.shape[0] > 1 else 0, h if allowed.shape[1] > 1 else 0, qi, kv]
        return ok

    pse, slopes = a.get("pse"), a.get("slopes")
    # The scale as a captured 0-d tensor: a captured Python float makes eager flex_attention fail from the second
    # call with another value on (torch 2.15: dynamo turns it into a SymFloat the op refuses).
    sc = torch.tensor(P["scale"], dtype=torch.float32)

    def score_mod(score, b, h, qi, kv):
        if P["pse"] == "tensor0":
            return score + pse[b if pse.shape[0] > 1 else 0, h if pse.shape[1] > 1 else 0, qi, kv]
        if P["pse"] == "tensor1":  # (s + pse) * scale: flex's own scale is 1 then
            return (score + pse[b if pse.shape[0] > 1 else 0, h if pse.shape[1] > 1 else 0, qi, kv]) * sc
        dist = (kv + P["kv_start"] - qi - P["q_start"]).abs().to(torch.float32)
        if P["pse"] == "alibi3":
            dist = dist.sqrt()
        return score - slopes[b if slopes.shape[0] > 1 else 0, h] * dist

    block_mask = None
    if P["masked"]:
        block_mask = create_block_mask(mask_mod, B=B, H=N1 if allowed is not None and allowed.shape[1] > 1
                                       else None, Q_LEN=S1, KV_LEN=S2, device="cpu")
    o = flex_attention(q, k, v, score_mod=score_mod if P["pse"] != "none" else None, block_mask=block_mask,
                       scale=1.0 if P["pse"] == "tensor1" else P["scale"], enable_gqa=True)
    return {"out": o.float().numpy()}


# ---- the runner ----------------------------------------------------------------------------------------------------

def plan(c, variant=None):
    c.check_supported(bwd="backward (eager flex_attention raises NotImplementedError for backward on the CPU)")
    calls = []
    for batches, sem in c.calls_per_batch():
        S1, S2 = sem["q"].shape[2], sem["k"].shape[2]
        lo, hi, prefix, user = c.band(batches[0])
        pf = None
        if prefix:  # per batch (modes 5 / 6)
            pf = [int(c.band(b)[2]) for b in batches]
        # the part of the mask the formula in mask_mod does not produce: the user mask and top-k, as `allowed`
        allowed = None
        if user or "topk_indices" in c.t:
            al = [np.ones((1, S1, S2), dtype=bool) for _ in batches]
            for i, b in enumerate(batches):
                if user:
                    al[i] = al[i] & ~c._user(b, S1, S2)
                if "topk_indices" in c.t:
                    al[i] = al[i] & c._topk(b, S1, S2)
            n = max(x.shape[0] for x in al)
            allowed = np.stack([np.broadcast_to(x, (n, S1, S2)) for x in al])
            if all(np.array_equal(allowed[0], x) for x in allowed):
                allowed = allowed[:1]
        if allowed is not None:
            sem["allowed"] = allowed
        pt, pse = int(c.p.get("pse_type", 1)), "none"
        if "real_shift" in c.t:
            rs = c.t["real_shift"]
            if pt in (2, 3):
                pse = "alibi%d" % pt
                sem["slopes"] = (rs[batches] if rs.ndim == 2 else rs[None]).astype(np.float32)  # [B | 1, N1]
            else:  # the tensor (compressed: the full bias it stands for), as the operator adds it
                pse = "tensor%d" % pt
                # Case.canon()'s bias is pse * scale for pse_type 1, exact in fp64: divided back exactly
                sem["pse"] = sem["bias"] / np.float64(c.scale) if pt == 1 else sem["bias"]
        qs, ks = int(c.p.get("q_start_idx", 0)), int(c.p.get("kv_start_idx", 0))
        if c.layout == "TND" and "atten_mask" in c.t and c.p.get("sparse_mode") == 8 and batches[0] != 0:
            qs = ks = 0  # D15
        masked = lo is not None or hi is not None or allowed is not None
        p = {"dtype": c.dtype, "scale": c.scale, "lo": lo, "hi": hi, "prefix": pf, "allowed": allowed is not None,
             "masked": masked, "pse": pse, "q_start": qs, "kv_start": ks}
        calls.append(Call(batches, sem, p))
    return calls


def describe(variant):
    return {"pip": ["torch==%s" % torch.__version__.split("+")[0]], "runner": "torch_flex.py",
            "title": "PyTorch %s: torch.nn.attention.flex_attention.flex_attention, eager, CPU" % torch.__version__,
            "versions": "torch %s, numpy %s" % (torch.__version__, np.__version__)}

handle, repro = runner(plan, prepare, build, run, IMPORTS, describe, None, None)


def capabilities(variant):
    fwd = axes()
    return caps("torch_flex.py", "torch", torch.__version__, {"fwd": fwd})


if __name__ == "__main__":
    runner_main(handle, capabilities, repro)
