#!/usr/bin/env python3
"""ONNX Runtime's contrib attention operators (domain com.microsoft, CPU execution provider) as implementations
under test (the panel, docs/verifier.md).

usage: ort_contrib.py gqa|mha [CASE_DIR | --capabilities | --repro CASE_DIR OUT.py]

gqa  GroupQueryAttention: query [B, S1, N1 * D], key / value [B, S1, N2 * D] (the new tokens), past_key / past_value
     [B, N2, S2 - S1, D] (the S2 - S1 keys before them; the op requires S1 <= S2 and Dv = Dk), seqlens_k = S2 - 1,
     total_sequence_length = S2, so query row i sits at absolute position S2 - S1 + i. The operator's mask maps to
     causal = 1 (bottom-right: sparse mode 3, and mode 2 with S1 = S2), local_window_size = w (a bottom-right band
     S2 - S1 - w + 1 <= j - i <= S2 - S1), or causal = 0; what those leave (a user mask, prefix, top-k, other bands)
     and the pse go in attention_bias (pse where a position takes part, -inf where not; of the input dtype, so a pse
     it cannot hold SKIPs). The sink goes in head_sink (an extra softmax term per head, the operator's D6). With past
     keys and S1 > 1 the op takes B > 1 only with query_seqlens (which needs causal = 1); otherwise the runner makes
     one call per batch.
mha  MultiHeadAttention: query [B, S1, N1 * D], key [B, S2, N1 * D], value [B, S2, N1 * Dv] (GQA by repeating the K / V
     heads: the op has one head count), scale attribute, unidirectional = 1 for the top-left causal triangle (sparse
     mode 2; "every token can only attend to previous tokens"), a 3-D key_padding_mask (B, S1, S2) of 0 / 1 for a
     mask that does not vary over heads, with mask_filter_value = the dtype's lowest finite value (the op adds that
     value to masked scores; -inf there would give 0 x -inf = NaN nowhere but fully masked rows, the lowest finite
     value is what Hugging Face exports use), and attention_bias [B|1, N|1, S1, S2] for the pse (and for a per-head
     mask, as -inf).

fp32 and fp16 (the CPU kernels have no bf16); TND: one call per sequence. Forward only. softmax_max / softmax_sum are
computed by the runner from fp32 scores.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from panel_case import THREADS, Call, Unsupported, axes, band_keep, bias_as, caps, runner, runner_main  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402
import onnxruntime as ort  # noqa: E402

VARIANTS = ("gqa", "mha")
IMPORTS = "import onnxruntime as ort\nfrom onnx import TensorProto, helper"
_cache = {}


# ---- the framework calls (copied verbatim into reproducers) ----------------------------------------------------------

def prepare(S, P):
    """Canonical [B, N, S, D] inputs -> the contrib op's inputs (float32; the graph casts them to the dtype)."""
    q, k, v = S["q"], S["k"], S["v"]
    B, N1, S1, D = q.shape
    bsh = lambda t: np.ascontiguousarray(t.transpose(0, 2, 1, 3).reshape(t.shape[0], t.shape[2],  # noqa: E731
                                                                          t.shape[1] * t.shape[3]))
    if P["op"] == "mha":
        G = N1 // k.shape[1]
        a = {"query": bsh(q), "key": bsh(np.repeat(k, G, axis=1)), "value": bsh(np.repeat(v, G, axis=1))}
        if P["mask"] == "padding":  # [B, S1, S2]: 1 = takes part
            a["key_padding_mask"] = np.ascontiguousarray(np.broadcast_to(
                S["keep"][:, 0], (B, S1, k.shape[2]))).astype(np.int32)
    else:
        past = k.shape[2] - S1  # the keys before the query block
        a = {"query": bsh(q), "key": bsh(k[:, :, past:]), "value": bsh(v[:, :, past:]),
             "past_key": np.ascontiguousarray(k[:, :, :past]), "past_value": np.ascontiguousarray(v[:, :, :past]),
             "seqlens_k": np.full((B,), k.shape[2] - 1, dtype=np.int32),
             "total_sequence_length": np.array(k.shape[2], dtype=np.int32)}
        if P["query_seqlens"]:
            a["query_seqlens"] = np.full((B,), S1, dtype=np.int32)
        if P["sink"]:
            a["head_sink"] = S["sink"].astype(np.float32)
    if P["bias"]:
        bias = S["bias"] if S.get("bias") is not None else 0.0
        a["attention_bias"] = np.where(S["keep"], bias, -np.inf).astype(np.float32)
    return a


def build(P):
    """One contrib node between Casts from / to float32 (exact: the values are of the dtype already)."""
    et = {"fp32": TensorProto.FLOAT, "fp16": TensorProto.FLOAT16}[P["dtype"]]
    if P["op"] == "mha":
        order = ["query", "key", "value", "bias", "key_padding_mask", "attention_bias"]
        ints = ("key_padding_mask",)
        attrs = {"num_heads": P["num_heads"], "scale": P["scale"], "unidirectional": P["unidirectional"]}
        if P["mask"] == "padding":
            attrs["mask_filter_value"] = P["mask_filter_value"]
        present = ["query", "key", "value"] + (["key_padding_mask"] if P["mask"] == "padding" else []) + \
            (["attention_bias"] if P["bias"] else [])
        op = "MultiHeadAttention"
    else:
        order = ["query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length", "cos_cache",
                 "sin_cache", "position_ids", "attention_bias", "head_sink", "k_scale", "v_scale", "q_norm_weight",
                 "k_norm_weight", "query_seqlens"]
        ints = ("seqlens_k", "total_sequence_length", "query_seqlens")
        attrs = {"num_heads": P["num_heads"], "kv_num_heads": P["kv_num_heads"], "scale": P["scale"],
                 "causal": P["causal"], "local_window_size": P["local_window_size"]}
        present = ["query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length"] + \
            (["attention_bias"] if P["bias"] else []) + (["head_sink"] if P["sink"] else []) + \
            (["query_seqlens"] if P["query_seqlens"] else [])
        op = "GroupQueryAttention"
    ins = [helper.make_tensor_value_info(n, TensorProto.INT32 if n in ints else TensorProto.FLOAT, None)
           for n in present]
    nodes = [helper.make_node("Cast", [n], [n + "_t"], to=et) for n in present if n not in ints]
    args = [(n if n in ints else n + "_t") if n in present else "" for n in order]
    while args and not args[-1]:
        args.pop()
    outs = ["out"] + (["present_key", "present_value"] if op == "GroupQueryAttention" else [])
    nodes.append(helper.make_node(op, args, outs, domain="com.microsoft", **attrs))
    nodes.append(helper.make_node("Cast", ["out"], ["O"], to=TensorProto.FLOAT))
    graph = helper.make_graph(nodes, op, ins, [helper.make_tensor_value_info("O", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft",
                                                                                                     1)])
    model.ir_version = 10
    so = ort.SessionOptions()
    so.intra_op_num_threads = P["threads"]
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def run(sess, a, P):
    """Returns {"out": [B, N1, S1, Dv] float32}."""
    o = sess.run(["O"], a)[0]  # [B, S1, N1 * Dv]
    return {"out": o.reshape(o.shape[0], o.shape[1], P["num_heads"], -1).transpose(0, 2, 1, 3)}


# ---- the runner ----------------------------------------------------------------------------------------------------

def plan_gqa(c, batches, sem, lo, hi):
    S1, S2, Dk, Dv = sem["q"].shape[2], sem["k"].shape[2], sem["q"].shape[3], sem["v"].shape[3]
    if S1 > S2:
        raise Unsupported("S1 > S2 (GroupQueryAttention's new keys are the query tokens: S1 <= S2)")
    if Dk != Dv:
        raise Unsupported("Dv != Dk (GroupQueryAttention has one head size for key and value)")
    if Dk % 8:
        raise Unsupported("head size %d (the CPU GroupQueryAttention kernel checks: head_size must be a multiple "
                          "of 8)" % Dk)
    keep = sem["keep"]
    causal, window = 0, -1
    if hi == S2 - S1:  # bottom-right causal, maybe with a left window
        causal = 1
        if lo is not None:
            window = S2 - S1 - lo + 1
    fk = band_keep(None if window < 0 else S2 - S1 - window + 1, S2 - S1 if causal else None, S1, S2)
    if not np.array_equal(keep & fk, keep):  # a prefix reaches past the causal frontier
        causal, window, fk = 0, -1, np.ones((S1, S2), dtype=bool)
    bias = sem["bias"] is not None or not bool((keep == fk).all())
    if sem["bias"] is not None:
        sem["bias"] = bias_as(sem["bias"], c.dtype)
    if "sink" in sem:
        bias_as(sem["sink"].astype(np.float64), c.dtype, "sink")  # head_sink has the input dtype: exact or SKIP
    p = {"op": "gqa", "dtype": c.dtype, "num_heads": c.N1, "kv_num_heads": c.N2, "scale": c.scale, "causal": causal,
         "local_window_size": window, "bias": bias, "sink": "sink" in sem, "query_seqlens": False,
         "threads": THREADS}
    B = sem["q"].shape[0]
    if B > 1 and S1 > 1 and S2 > S1:
        if causal:
            p["query_seqlens"] = True  # batched chunks with past keys
        else:  # the op takes past keys with S1 > 1 only for B = 1 then: one call per batch
            return [Call([b], _one(sem, i), p) for i, b in enumerate(batches)]
    return [Call(batches, sem, p)]


def _one(sem, i):
    """Batch i of canonical inputs, as a batch of one."""
    out = dict(sem)
    for n in ("q", "k", "v", "dy"):
        if n in sem:
            out[n] = sem[n][i:i + 1]
    for n in ("keep", "bias"):
        if sem.get(n) is not None:
            out[n] = sem[n][i:i + 1] if sem[n].shape[0] > 1 else sem[n]
    return out


def plan_mha(c, batches, sem, lo, hi):
    S1, S2 = sem["q"].shape[2], sem["k"].shape[2]
    keep = sem["keep"]
    uni = 1 if (lo is None and hi == 0) else 0
    fk = band_keep(None, 0, S1, S2) if uni else np.ones((S1, S2), dtype=bool)
    if not np.array_equal(keep & fk, keep):
        uni, fk = 0, np.ones((S1, S2), dtype=bool)
    mask, bias = "none", False
    if sem["bias"] is not None:
        sem["bias"] = bias_as(sem["bias"], c.dtype)
        bias = True
    if not bool((keep == fk).all()):
        if keep.shape[1] == 1 and not bias:
            mask = "padding"
        else:
            bias = True
    lowest = {"fp32": float(np.finfo(np.float32).min), "fp16": float(np.finfo(np.float16).min)}[c.dtype]
    return [Call(batches, sem, {"op": "mha", "dtype": c.dtype, "num_heads": c.N1, "scale": c.scale,
                                "unidirectional": uni, "mask": mask, "mask_filter_value": lowest, "bias": bias,
                                "threads": THREADS})]


def plan(c, variant):
    c.check_supported(sink=variant == "gqa", bwd="backward (ONNX Runtime inference has no autograd)",
                      bf16="bf16 (the CPU execution provider's contrib attention kernels take fp32 and fp16)")
    calls = []
    for batches, sem in c.calls_per_batch():
        lo, hi, _, _ = c.band(batches[0])
        calls += (plan_gqa if variant == "gqa" else plan_mha)(c, batches, sem, lo, hi)
    return calls


def describe(variant):
    name = {"gqa": "GroupQueryAttention", "mha": "MultiHeadAttention"}[variant]
    return {"pip": ["onnxruntime==%s" % ort.__version__, "onnx==%s" % onnx.__version__],
            "runner": "ort_contrib.py %s" % variant,
            "title": "ONNX Runtime %s: com.microsoft %s, CPU execution provider" % (ort.__version__, name),
            "versions": "onnxruntime %s, onnx %s, numpy %s" % (ort.__version__, onnx.__version__, np.__version__)}

handle, repro = runner(plan, prepare, build, run, IMPORTS, describe, VARIANTS, _cache)


def capabilities(variant):
    fwd = axes(dtypes=["fp32", "fp16"], sink=variant == "gqa", dv_ne_dk=variant == "mha",
               empty=variant == "mha")
    if variant == "gqa":
        fwd["head_dim_multiple"] = 8
        fwd["s1_le_s2"] = True  # the note below, in the vocabulary (a hunt draws inside it)
    notes = ["fp16: a pse (or sink) the dtype cannot hold exactly SKIPs"]
    if variant == "gqa":
        notes.append("S1 <= S2 only (per TND batch too)")
    return caps("ort_contrib.py %s" % variant, "onnxruntime", ort.__version__, {"fwd": fwd}, variant=variant,
                variants=list(VARIANTS), notes=notes)


if __name__ == "__main__":
    runner_main(handle, capabilities, repro, VARIANTS)
