#!/usr/bin/env python3
"""OpenVINO's ScaledDotProductAttention (opset13, built with openvino's Python graph API) on the CPU plugin, as an
implementation under test (the panel, docs/verifier.md).

usage: openvino_sdpa.py default|f32|bf16|f16 [CASE_DIR | --capabilities | --repro CASE_DIR OUT.py]
  default  the plugin's own choice of inference precision (no hint; f32 on a CPU without AVX512-BF16/AMX)
  f32|bf16|f16  INFERENCE_PRECISION_HINT set to that precision. A hint the plugin does not honour on this CPU (the
           compiled model reports another precision) makes the whole runner unavailable: every case SKIPs with the
           reason and --capabilities says "unavailable" (tests/panel/check_panel.py then SKIPs loudly). A hint below
           fp32 runs only the cases of its own dtype (bf16 / fp16), since it lowers the precision of an fp32 model
           by design.

Mapping (what a user of the op writes): the model's inputs have the case's element type (f32 / f16 / bf16);
SDPA(query, key, value, attention_mask, scale, causal). GQA by broadcasting: query [B, N2, G, S1, D] against key and
value [B, N2, 1, S2, D] (the spec broadcasts the leading dims). The operator's mask (sparse modes 0-8, band,
prefix, top-k without repeats) goes as causal=True when it is exactly the top-left causal triangle and there is no
pse (the op ignores the mask input when causal), else as a boolean attention_mask (True = takes part) in its
broadcast shape, or, with a pse, as one float mask (pse where a position takes part, -inf where not) of the model's
element type. The scale input is left out when the case's scale is fp32(1 / sqrt(D)) (the op's default); otherwise it
is a constant of the model's element type, and a scale that element type cannot hold exactly SKIPs. TND: one call
per sequence. Forward only (OpenVINO is an inference runtime). softmax_max / softmax_sum are computed by the runner
from fp32 scores (the op does not return them).
"""
import os
import sys

os.environ.setdefault("OPENVINO_TELEMETRY_DISABLE", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from panel_case import THREADS, Call, Unsupported, axes, bias_as, caps, round_to, runner, runner_main  # noqa: E402

import numpy as np  # noqa: E402
import openvino as ov  # noqa: E402
import openvino.opset13 as ops  # noqa: E402

VARIANTS = ("default", "f32", "bf16", "f16")
IMPORTS = "import openvino as ov\nimport openvino.opset13 as ops"
_cache = {}


# ---- the framework call (copied verbatim into reproducers: numpy, ov and ops only) ----------------------------------

def prepare(S, P):
    """Canonical inputs -> the model's inputs: GQA as [B, N2, G, S1, D] queries against [B, N2, 1, S2, D] keys."""
    q, k, v = S["q"], S["k"], S["v"]
    B, N1, S1, D = q.shape
    N2 = k.shape[1]
    G = N1 // N2
    a = {"q": q.reshape(B, N2, G, S1, D), "k": k[:, :, None], "v": v[:, :, None]}
    if P["mask"] == "bool":
        m = S["keep"]  # [Bm, Nm, S1, S2]: True = takes part
    elif P["mask"] == "float":
        bias = S["bias"] if S.get("bias") is not None else 0.0
        m = np.where(S["keep"], bias, -np.inf).astype(np.float32)
    else:
        return a
    a["mask"] = m.reshape(m.shape[0], N2, G, S1, m.shape[-1]) if m.shape[1] > 1 else m[:, :, None]
    return a


def build(P):
    """The model: SDPA over rank-5 inputs of the case's element type, compiled for the CPU with P's hint."""
    et = {"fp32": ov.Type.f32, "fp16": ov.Type.f16, "bf16": ov.Type.bf16}[P["dtype"]]
    params = [ops.parameter([-1] * 5, et, name=n) for n in ("q", "k", "v")]
    mask = scale = None
    if P["mask"] != "none":
        mask = ops.parameter([-1] * 5, ov.Type.boolean if P["mask"] == "bool" else et, name="mask")
        params.append(mask)
    if P["scale"] is not None:  # exact in the element type (the runner checked)
        scale = ops.convert(ops.constant(np.array(P["scale"], dtype=np.float32)), et)
        if mask is None:  # the spec's "scalar float zero" stands for no mask when a scale follows
            mask = ops.convert(ops.constant(np.array(0, dtype=np.float32)), et)
    node = ops.scaled_dot_product_attention(params[0], params[1], params[2], mask, scale, causal=P["causal"])
    out = ops.convert(node, ov.Type.f32)  # exact: the output is widened for numpy (which has no bf16)
    config = {"INFERENCE_NUM_THREADS": P["threads"]}
    if P["hint"] != "default":
        config["INFERENCE_PRECISION_HINT"] = P["hint"]
    return ov.Core().compile_model(ov.Model([out], params), "CPU", config)


def run(model, a, P):
    """Runs the compiled model; returns {"out": [B, N1, S1, Dv] float32}."""
    def typed(x):
        x = np.ascontiguousarray(x)
        if x.dtype == bool or P["dtype"] == "fp32":
            return x.astype(x.dtype if x.dtype == bool else np.float32)
        if P["dtype"] == "fp16":
            return x.astype(np.float16)
        bits = (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)  # exact: the values are bf16
        return ov.Tensor(bits, x.shape, ov.Type.bf16)
    o = model({n: typed(x) for n, x in a.items()})[0]
    B, N2, G, S1, Dv = o.shape
    return {"out": np.asarray(o, dtype=np.float32).reshape(B, N2 * G, S1, Dv)}


# ---- the runner ----------------------------------------------------------------------------------------------------

def honoured(variant):
    """None when the plugin honours the precision hint on this CPU, else the reason it does not."""
    if variant == "default":
        return None
    key = ("probe", variant)
    if key not in _cache:
        p = ops.parameter([2, 2], ov.Type.f32, name="x")
        m = ov.Core().compile_model(ov.Model([ops.multiply(p, p)], [p]), "CPU",
                                    {"INFERENCE_PRECISION_HINT": variant, "INFERENCE_NUM_THREADS": 1})
        got = m.get_property("INFERENCE_PRECISION_HINT").get_type_name()
        want = variant
        _cache[key] = None if got == want else (
            "the CPU plugin does not honour INFERENCE_PRECISION_HINT=%s on this CPU: the compiled model reports %s "
            "(OpenVINO %s)" % (variant, got, VERSION))
    return _cache[key]


def plan(c, variant):
    why = honoured(variant)
    if why:
        raise Unsupported(why)
    if c.op == "bwd":
        raise Unsupported("backward (OpenVINO is an inference runtime: no autograd)")
    if variant in ("bf16", "f16") and c.dtype != {"bf16": "bf16", "f16": "fp16"}[variant]:
        raise Unsupported("hint %s runs only %s cases (it lowers the precision of other models by design)"
                          % (variant, variant))
    c.check_supported()
    calls = []
    for batches, sem in c.calls_per_batch():
        S1, S2, D = sem["q"].shape[2], sem["k"].shape[2], sem["q"].shape[3]
        keep, bias = sem["keep"], sem["bias"]
        if bias is not None:
            sem["bias"] = bias_as(bias, c.dtype)  # the float mask has the model's element type
        tri = np.tril(np.ones((S1, S2), dtype=bool))
        causal = bias is None and S1 > 0 and S2 > 0 and bool((keep == tri).all())
        mask = "none" if causal or bool(keep.all()) and bias is None else "float" if bias is not None else "bool"
        scale = None if np.float32(1 / np.sqrt(np.float32(D))) == np.float32(c.scale) else c.scale
        if scale is not None and float(round_to(np.float32([scale]), c.dtype)[0]) != scale:
            raise Unsupported("scale %r is not a %s value (SDPA takes the scale in the query's element type)"
                              % (scale, c.dtype))
        calls.append(Call(batches, sem, {"dtype": c.dtype, "hint": variant, "mask": mask, "causal": causal,
                                         "scale": scale, "threads": THREADS}))
    return calls


def describe(variant):
    return {"pip": ["openvino==%s" % VERSION], "runner": "openvino_sdpa.py %s" % variant,
            "title": "OpenVINO %s: ScaledDotProductAttention (opset13) on the CPU plugin, precision %s"
                     % (VERSION, variant),
            "versions": "openvino %s, numpy %s" % (VERSION, np.__version__)}

handle, repro = runner(plan, prepare, build, run, IMPORTS, describe, VARIANTS, _cache)


def capabilities(variant):
    fwd = axes(dtypes=["fp32", "fp16", "bf16"] if variant in ("default", "f32") else
               [{"bf16": "bf16", "f16": "fp16"}[variant]])
    fwd["scale"] = "dtype"  # SDPA takes the scale in the query's element type: a 16-bit case's scale must be held
    return caps("openvino_sdpa.py %s" % variant, "openvino", VERSION, {"fwd": fwd}, variant=variant,
                variants=list(VARIANTS), unavailable=honoured(variant),
                notes=["fp16/bf16: a pse the element type cannot hold exactly SKIPs (the scale: declared)",
                       "bf16/f16 hints: only cases of that dtype"])


VERSION = ov.__version__.split("-")[0]
if __name__ == "__main__":
    runner_main(handle, capabilities, repro, VARIANTS)
