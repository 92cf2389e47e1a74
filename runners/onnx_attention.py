#!/usr/bin/env python3
"""ONNX Runtime (CPU execution provider) running a MatMul-Softmax-MatMul graph, as an implementation under test
(the panel, docs/verifier.md). The graph is the usual export of attention: Q K^T (MatMul with a Transpose),
Mul by scale, Add of a bias (0 where a position takes part, -inf where it does not, plus the pse), Softmax over
the keys, MatMul with V. fp32 and fp16 graphs (ONNX Runtime's CPU kernels); forward only.

usage: onnx_attention.py [CASE_DIR | --capabilities]   (exec: per case, or persistent: with FLASHREF_PROTOCOL set)
softmax_max / softmax_sum are not graph outputs: the runner computes them from fp32 scores with numpy. Exit 77
(SKIP): backward cases (no autograd), bf16, and what runners/panel_case.py cannot map (dropout, sink, top-k with a
repeated index, fp8, a pse the fp16 bias cannot hold exactly).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from panel_case import Unsupported, axes, caps, serve, softmax_stats  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402
import onnxruntime as ort  # noqa: E402

_sessions = {}


def session(dtype):
    if dtype in _sessions:
        return _sessions[dtype]
    et = TensorProto.FLOAT if dtype == "fp32" else TensorProto.FLOAT16
    ins = [helper.make_tensor_value_info(n, et, s) for n, s in
           (("Q", ["N", "S1", "D"]), ("K", ["N", "S2", "D"]), ("V", ["N", "S2", "Dv"]), ("B", ["M", "S1", "S2"]),
            ("scale", []))]
    out = helper.make_tensor_value_info("O", et, ["N", "S1", "Dv"])
    nodes = [helper.make_node("Transpose", ["K"], ["Kt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["Q", "Kt"], ["S"]),
             helper.make_node("Mul", ["S", "scale"], ["X"]),
             helper.make_node("Add", ["X", "B"], ["Y"]),
             helper.make_node("Softmax", ["Y"], ["P"], axis=-1),
             helper.make_node("MatMul", ["P", "V"], ["O"])]
    model = helper.make_model(helper.make_graph(nodes, "attention", ins, [out]),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = int(os.environ.get("FR_PANEL_THREADS", "1"))
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # the graph as written
    try:
        s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    except Exception as e:  # e.g. a CPU build without fp16 kernels
        raise Unsupported("onnxruntime %s graph: %s" % (dtype, str(e).splitlines()[0][:200]))
    _sessions[dtype] = s
    return s


def handle(c):
    if c.op == "bwd":
        raise Unsupported("backward (ONNX Runtime inference has no autograd)")
    if c.dtype == "bf16":
        raise Unsupported("bf16 (the CPU execution provider has no bf16 MatMul/Softmax)")
    c.check_supported()
    npd = np.float32 if c.dtype == "fp32" else np.float16
    sess = session(c.dtype)
    scale = np.float32(c.p["scale_value"])
    outs = c.alloc_outputs()
    for b in c.batches():
        q, kk, vv = c.qkv(b)
        keep, pse = c.keep(b), c.pse_as(b, c.dtype)  # the graph adds a bias of its dtype
        bias = np.where(keep, np.float32(0) if pse is None else pse, np.float32(-np.inf)).astype(np.float32)
        try:
            o = sess.run(["O"], {"Q": q.astype(npd), "K": kk.astype(npd), "V": vv.astype(npd),
                                 "B": bias.astype(npd), "scale": np.array(scale, dtype=npd)})[0]
        except Exception as e:
            if "NOT_IMPLEMENTED" in str(e):
                raise Unsupported("onnxruntime: %s" % str(e).splitlines()[0][:200])
            raise
        c.put(outs["attention_out"], b, o.astype(np.float32), False)
        x = np.matmul(q, kk.transpose(0, 2, 1)) * scale + (0 if pse is None else pse)
        m, l = softmax_stats(np.where(keep, x, np.float32(-np.inf)))
        c.put_stats(outs["softmax_max"], b, m)
        c.put_stats(outs["softmax_sum"], b, l)
    c.save_outputs(outs)


def capabilities():
    op = axes(dtypes=["fp32", "fp16"])
    return caps("onnx_attention.py", "onnxruntime", ort.__version__, {"fwd": op},
                notes=["fp16: a pse the dtype cannot hold exactly SKIPs"])


if __name__ == "__main__":
    serve(handle, capabilities=capabilities)
