#!/usr/bin/env python3
"""ONNX Runtime (CPU execution provider) running the ONNX `Attention` operator, as an implementation under test
(the panel, docs/verifier.md).

usage: ort_attention.py opset24|opset25 [CASE_DIR | --capabilities | --repro CASE_DIR OUT.py]
  opset24  the model imports ai.onnx opset 24: ONNX Runtime runs its own CPU Attention kernel (registered for opsets
           23 and 24)
  opset25  opset 25 (sliding windows): ONNX Runtime 1.32 has no kernel for it and runs the operator's ONNX function
           body (Reshape, MatMul, Softmax ... nodes), so this variant judges that expansion on ORT's kernels

Mapping (what a user of the operator writes): one Attention node; BSH / SBH / BSND cases use the 3-D form
Q [B, S1, N1 * D], K [B, S2, N2 * D], V [B, S2, N2 * Dv] with q_num_heads / kv_num_heads, BNSD and TND cases the
4-D form [B, N, S, D]; GQA / MQA natively (N1 a multiple of N2); the `scale` attribute set to the case's scale.
The operator's mask goes, as far as the ONNX attributes express it, natively:
- the top-left causal triangle (sparse mode 2, mode 3 with S1 = S2): is_causal = 1;
- the bottom-right causal triangle with S1 != S2 (mode 3): is_causal = 1 with nonpad_kv_seqlen = S2 per batch, which
  makes the causal offset S2 - S1 (the spec's "external cache" case; S1 > S2 gives the leading rows no key);
- opset25 only: a band with lo <= 0 <= hi (mode 0 / 4 with non-negative sides): left_window_size /
  right_window_size;
and everything else (a user mask, a prefix, top-k, a band with a negative side) as a boolean attn_mask (True = takes
part) in its broadcast shape, composed with those attributes (its positions all lie inside them). With a pse the
mask is one float attn_mask (pse where a position takes part, -inf where not; the float mask has the input dtype, so
a pse that dtype cannot hold SKIPs). fp32 and fp16 (the CPU EP has no bf16 Attention kernel); TND: one call per
sequence. Forward only. softmax_max / softmax_sum are computed by the runner from fp32 scores (the operator does not
return them). The ONNX spec says a fully masked row gives a zero output row, not NaN.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from panel_case import THREADS, Call, axes, bias_as, caps, runner, runner_main  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402
import onnxruntime as ort  # noqa: E402

IMPORTS = "import onnxruntime as ort\nfrom onnx import TensorProto, helper"
VARIANTS = ("opset24", "opset25")
_cache = {}


# ---- the framework call (copied verbatim into reproducers) -----------------------------------------------------------

def prepare(S, P):
    """Canonical [B, N, S, D] inputs -> the node's inputs (3-D [B, S, N * D] when P["form"] is "3d")."""
    if P["form"] == "3d":
        a = {n: np.ascontiguousarray(S[x].transpose(0, 2, 1, 3).reshape(S[x].shape[0], S[x].shape[2], -1))
             for n, x in (("Q", "q"), ("K", "k"), ("V", "v"))}
    else:
        a = {"Q": S["q"], "K": S["k"], "V": S["v"]}
    if P["mask"] == "bool":
        a["M"] = S["keep"]
    elif P["mask"] == "float":
        bias = S["bias"] if S.get("bias") is not None else 0.0
        a["M"] = np.where(S["keep"], bias, -np.inf).astype(np.float32)
    if P["nonpad"]:
        a["L"] = np.full((S["q"].shape[0],), S["k"].shape[2], dtype=np.int64)
    return a


def build(P):
    """One Attention node (opset P["opset"]) between Casts from / to float32 (exact: the values are fp16 already)."""
    et = {"fp32": TensorProto.FLOAT, "fp16": TensorProto.FLOAT16}[P["dtype"]]
    names = ["Q", "K", "V"] + (["M"] if P["mask"] != "none" else []) + (["L"] if P["nonpad"] else [])
    ins = [helper.make_tensor_value_info(n, TensorProto.BOOL if (n == "M" and P["mask"] == "bool") else
                                         TensorProto.INT64 if n == "L" else TensorProto.FLOAT, None) for n in names]
    nodes = [helper.make_node("Cast", [n], [n + "t"], to=et) for n in names if n in "QKV" or
             (n == "M" and P["mask"] == "float")]
    typed = {n: (n + "t" if n in "QKV" or (n == "M" and P["mask"] == "float") else n) for n in names}
    args = [typed["Q"], typed["K"], typed["V"], typed.get("M", "")]
    if P["nonpad"]:  # inputs 4, 5 (past key / value) absent, 6 = nonpad_kv_seqlen
        args += ["", "", typed["L"]]
    attrs = {"scale": P["scale"]}
    for a in ("is_causal", "left_window_size", "right_window_size", "q_num_heads", "kv_num_heads"):
        if P.get(a) is not None:
            attrs[a] = P[a]
    nodes.append(helper.make_node("Attention", args, ["Y"], **attrs))
    nodes.append(helper.make_node("Cast", ["Y"], ["O"], to=TensorProto.FLOAT))
    graph = helper.make_graph(nodes, "attention", ins, [helper.make_tensor_value_info("O", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", P["opset"])])
    model.ir_version = 10
    so = ort.SessionOptions()
    so.intra_op_num_threads = P["threads"]
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def run(sess, a, P):
    """Returns {"out": [B, N1, S1, Dv] float32}."""
    o = sess.run(["O"], {n: np.ascontiguousarray(x) for n, x in a.items()})[0]
    if P["form"] == "3d":  # [B, S1, N1 * Dv]
        o = o.reshape(o.shape[0], o.shape[1], P["q_num_heads"], -1).transpose(0, 2, 1, 3)
    return {"out": o}


# ---- the runner ----------------------------------------------------------------------------------------------------

def flags(lo, hi, S1, S2, opset):
    """Attributes expressing the band lo <= j - i <= hi (None: unbounded), or None when they cannot."""
    if lo is None and hi == 0:
        return {"is_causal": 1}, False
    if lo is None and hi == S2 - S1:
        return {"is_causal": 1}, True  # offset S2 - S1 through nonpad_kv_seqlen
    if opset >= 25 and (lo is None or lo <= 0) and (hi is None or hi >= 0):
        return {"left_window_size": -1 if lo is None else -lo, "right_window_size": -1 if hi is None else hi}, False
    return None, False


def flag_keep(f, nonpad, S1, S2):
    d = np.arange(S2)[None, :] - np.arange(S1)[:, None] - ((S2 - S1) if nonpad else 0)  # j - (offset + i)
    ok = np.ones((S1, S2), dtype=bool)
    if f.get("is_causal"):
        ok &= d <= 0
    if f.get("left_window_size", -1) >= 0:
        ok &= d >= -f["left_window_size"]
    if f.get("right_window_size", -1) >= 0:
        ok &= d <= f["right_window_size"]
    return ok


def plan(c, variant):
    opset = int(variant[len("opset"):])
    c.check_supported(bwd="backward (ONNX Runtime inference has no autograd)",
                      bf16="bf16 (the CPU execution provider has no bf16 Attention kernel: NOT_IMPLEMENTED)")
    calls = []
    for batches, sem in c.calls_per_batch():
        S1, S2 = sem["q"].shape[2], sem["k"].shape[2]
        keep = sem["keep"]
        lo, hi, prefix, _ = c.band(batches[0])
        f, nonpad = flags(lo, hi, S1, S2, opset) if (lo is not None or hi is not None) else ({}, False)
        if f is None or (S1 == 0 or S2 == 0):
            f, nonpad = {}, False
        fk = flag_keep(f, nonpad, S1, S2)
        if not np.array_equal(keep & fk, keep):  # the mask would reach outside the attributes (a prefix)
            f, nonpad, fk = {}, False, np.ones((S1, S2), dtype=bool)
        if sem["bias"] is not None:
            sem["bias"] = bias_as(sem["bias"], c.dtype)
            mask = "float"
        else:
            mask = "none" if bool((keep == fk).all()) else "bool"
        p = {"dtype": c.dtype, "scale": c.scale, "mask": mask, "nonpad": nonpad, "opset": opset,
             "threads": THREADS, "form": "4d" if c.layout in ("BNSD", "TND") else "3d"}
        if p["form"] == "3d":
            p.update(q_num_heads=c.N1, kv_num_heads=c.N2)
        p.update(f)
        calls.append(Call(batches, sem, p))
    return calls


def describe(variant):
    return {"pip": ["onnxruntime==%s" % ort.__version__, "onnx==%s" % onnx.__version__],
            "runner": "ort_attention.py %s" % variant,
            "title": "ONNX Runtime %s: the ONNX Attention operator (%s), CPU execution provider"
                     % (ort.__version__, variant),
            "versions": "onnxruntime %s, onnx %s, numpy %s" % (ort.__version__, onnx.__version__, np.__version__)}

handle, repro = runner(plan, prepare, build, run, IMPORTS, describe, VARIANTS, _cache)


def capabilities(variant):
    fwd = axes(dtypes=["fp32", "fp16"])
    return caps("ort_attention.py %s" % variant, "onnxruntime", ort.__version__, {"fwd": fwd}, variant=variant,
                variants=list(VARIANTS),
                notes=["fp16: a pse the dtype cannot hold exactly SKIPs"])


if __name__ == "__main__":
    runner_main(handle, capabilities, repro, VARIANTS)
