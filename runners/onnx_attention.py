#!/usr/bin/env python3
"""ONNX Runtime (CPU execution provider) running a MatMul-Softmax-MatMul graph, as an implementation under test
(the panel, docs/verifier.md). The graph is the usual export of attention: Q K^T (MatMul with a Transpose),
Mul by scale, Add of a bias (0 where a position takes part, -inf where it does not, plus the pse), Softmax over
the keys, MatMul with V. fp32 and fp16 graphs (ONNX Runtime's CPU kernels); forward only.

usage: onnx_attention.py [CASE_DIR | --capabilities | --repro CASE_DIR OUT.py]
  (exec: per case, or persistent: with FLASHREF_PROTOCOL set; --repro writes a standalone onnxruntime script)
One run of the graph on whole batches [B, N, S, D] (TND: one per sequence), K and V heads repeated for GQA / MQA, the
bias in its broadcast shape [B or 1, N or 1, S1, S2]; the scale is a graph input of the dtype. softmax_max /
softmax_sum are not graph outputs: the runner computes them from fp32 scores with numpy. Exit 77 (SKIP): backward
cases (no autograd), bf16, what runners/panel_case.py cannot map (dropout, sink, top-k with a repeated index, fp8,
a pse the fp16 bias cannot hold exactly), and a graph ONNX Runtime cannot build or run (NOT_IMPLEMENTED).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from panel_case import THREADS, Call, Unsupported, axes, bias_as, caps, drive, runner, runner_main  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402
import onnxruntime as ort  # noqa: E402

IMPORTS = "import onnxruntime as ort\nfrom onnx import TensorProto, helper"
_cache = {}


# ---- the framework call (copied verbatim into reproducers) -----------------------------------------------------------

def prepare(S, P):
    """Canonical [B, N, S, D] inputs -> the graph's inputs in its dtype: Q, K and V (K / V heads repeated G times),
    the bias B (0 or the pse where a position takes part, -inf where not) and the scale."""
    npd = {"fp32": np.float32, "fp16": np.float16}[P["dtype"]]
    G = S["q"].shape[1] // S["k"].shape[1]
    bias = np.where(S["keep"], np.float32(0) if S.get("bias") is None else S["bias"], np.float32(-np.inf))
    return {"Q": np.asarray(S["q"]).astype(npd), "K": np.repeat(S["k"], G, axis=1).astype(npd),
            "V": np.repeat(S["v"], G, axis=1).astype(npd), "B": bias.astype(np.float32).astype(npd),
            "scale": np.array(P["scale"], dtype=npd)}


def build(P):
    """The graph Transpose, MatMul, Mul, Add, Softmax, MatMul in P["dtype"], run as written (no graph optimisation)."""
    et = TensorProto.FLOAT if P["dtype"] == "fp32" else TensorProto.FLOAT16
    ins = [helper.make_tensor_value_info(n, et, s) for n, s in
           (("Q", ["B", "N", "S1", "D"]), ("K", ["B", "N", "S2", "D"]), ("V", ["B", "N", "S2", "Dv"]),
            ("B", ["Bm", "M", "S1", "S2"]), ("scale", []))]
    out = helper.make_tensor_value_info("O", et, ["B", "N", "S1", "Dv"])
    nodes = [helper.make_node("Transpose", ["K"], ["Kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["Q", "Kt"], ["S"]),
             helper.make_node("Mul", ["S", "scale"], ["X"]),
             helper.make_node("Add", ["X", "B"], ["Y"]),
             helper.make_node("Softmax", ["Y"], ["P"], axis=-1),
             helper.make_node("MatMul", ["P", "V"], ["O"])]
    model = helper.make_model(helper.make_graph(nodes, "attention", ins, [out]),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = P["threads"]
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # the graph as written
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def run(sess, a, P):
    """Returns {"out": [B, N1, S1, Dv] float32}."""
    return {"out": sess.run(["O"], a)[0].astype(np.float32)}


# ---- the runner ----------------------------------------------------------------------------------------------------

def plan(c, variant=None):
    c.check_supported(bwd="backward (ONNX Runtime inference has no autograd)",
                      bf16="bf16 (the CPU execution provider has no bf16 MatMul/Softmax)")
    calls = []
    for batches, sem in c.calls_per_batch():
        if sem["bias"] is not None:
            sem["bias"] = bias_as(sem["bias"], c.dtype)  # the graph adds a bias of its dtype
        calls.append(Call(batches, sem, {"dtype": c.dtype, "scale": c.scale, "threads": THREADS}))
    return calls


def describe(variant):
    return {"pip": ["onnxruntime==%s" % ort.__version__, "onnx==%s" % onnx.__version__],
            "runner": "onnx_attention.py",
            "title": "ONNX Runtime %s: a MatMul-Softmax-MatMul attention graph, CPU execution provider"
                     % ort.__version__,
            "versions": "onnxruntime %s, onnx %s, numpy %s" % (ort.__version__, onnx.__version__, np.__version__)}

_, repro = runner(plan, prepare, build, run, IMPORTS, describe, None, _cache)


def skipping_build(P):
    """build(), a graph ONNX Runtime cannot load (e.g. a CPU build without fp16 kernels) as a SKIP."""
    try:
        return build(P)
    except Exception as e:
        raise Unsupported("onnxruntime %s graph: %s" % (P["dtype"], str(e).splitlines()[0][:200]))


def skipping_run(sess, a, P):
    """run(), a kernel ONNX Runtime does not implement for these inputs as a SKIP."""
    try:
        return run(sess, a, P)
    except Exception as e:
        if "NOT_IMPLEMENTED" in str(e):
            raise Unsupported("onnxruntime: %s" % str(e).splitlines()[0][:200])
        raise


def handle(variant, c):
    drive(c, plan(c, variant), prepare, skipping_build, skipping_run, _cache)


def capabilities(variant):
    op = axes(dtypes=["fp32", "fp16"])
    return caps("onnx_attention.py", "onnxruntime", ort.__version__, {"fwd": op},
                notes=["fp16: a pse the dtype cannot hold exactly SKIPs"])


if __name__ == "__main__":
    runner_main(handle, capabilities, repro)
