"""Assertions for a user's own tests: one tensor judged against flashref's fp64 golden with the verifier's rule."""

from __future__ import annotations

import ctypes as C
import inspect
import json
from typing import Any, Dict, Union

from . import _lib as L
from ._arrays import Keep, dtype_code, to_numpy, view
from ._ops import _fwd_inputs, _hint, make_params
from ._verify import Case

_FWD = ("attention_out", "softmax_max", "softmax_sum")
_BWD = ("dq", "dk", "dv", "dq_rope", "dk_rope", "dsink")


def assert_attention_close(actual: Any, expected_case: Union[Case, Dict[str, Any]], *, output: str = "attention_out",
                           k_out: float = 2.0, k_max: float = 4.0, k_grad: float = 3.0,
                           k_stats: float = 4.0) -> Dict[str, float]:
    """Asserts that `actual` (numpy array or torch tensor) is output `output` of the case, judged by the verifier's
    own judge exactly as a suite case is (fr_verify_judge_outputs): against the fp64 golden, within k (k_out for
    attention_out, k_grad for gradients, k_stats for the softmax statistics) times max(the plain reference's, the
    ideal pipeline's, u/4) on rel-L2, attention_out's max abs within k_max times max(theirs, 1 ulp) and the a-priori
    ceiling, NaN/Inf where the golden has them. expected_case: a flashref.Case (Case.from_dir, or from a verify
    callback), or a dict of flashref.attention's keyword arguments with query, key, value (and dy, attention_in,
    softmax_max, softmax_sum for a gradient). Raises AssertionError with the judge's numbers; returns the metrics."""
    if isinstance(expected_case, Case):
        case = expected_case
    else:
        d = dict(expected_case)
        inputs = {n: d.pop(n) for n in list(d) if n in ("query", "key", "value", "dy", "attention_in", "softmax_max",
                                                        "softmax_sum")}
        if "pse" in d:
            inputs["real_shift"] = d.pop("pse")
        for n in L.FWD_INPUTS[3:]:
            if n in d:
                inputs[n] = d.pop(n)
        op = "bwd" if "dy" in inputs else "fwd"
        dt = str(to_numpy(inputs["query"]).dtype)
        dtype = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(dt, d.get("dtype") or dt)
        params = dict(scale_value=d.pop("scale", 1.0), **d)
        params.setdefault("softmax_layout", "")
        params.setdefault("out_dtype", None)
        params.setdefault("keep_prob", 1.0)
        case = Case("", "", op, dtype, params, inputs)
    names = _FWD if case.op == "fwd" else _BWD
    if output not in names:
        raise ValueError("output: %r is not an output of a %s case (%s)" % (output, case.op, ", ".join(names)))
    kw = case.kwargs()
    tensors = {n: kw.pop("pse" if n == "real_shift" else n, None) for n in L.FWD_INPUTS[3:]}
    raw = kw.pop("dtype", None)
    keep = Keep()
    q, k, v = case.inputs["query"], case.inputs["key"], case.inputs["value"]
    hint = _hint(raw, q)
    p = make_params(keep, **{n: kw[n] for n in inspect.signature(make_params).parameters if n != "keep" and n in kw})
    bi = L.BwdInputs()
    bi.fwd = _fwd_inputs(keep, hint, q, k, v, tensors)
    fo, bo = L.FwdOutputs(), L.BwdOutputs()
    if case.op == "bwd":
        out_hint = dtype_code(case.out_dtype) if (case.out_dtype is not None and hint is not None) else hint
        bi.dy = view(case.inputs["dy"], "dy", keep, out_hint)
        bi.attention_in = view(case.inputs["attention_in"], "attention_in", keep, out_hint)
        bi.softmax_max = view(case.inputs["softmax_max"], "softmax_max", keep)
        bi.softmax_sum = view(case.inputs["softmax_sum"], "softmax_sum", keep)
    setattr(fo if case.op == "fwd" else bo, output, view(actual, output, keep, hint))
    o = L.lib.fr_verify_opts_default()
    o.k_out, o.k_max, o.k_grad, o.k_stats = float(k_out), float(k_max), float(k_grad), float(k_stats)
    out, err = C.c_void_p(), L.Error()
    L.check(L.lib.fr_verify_judge_outputs(0 if case.op == "fwd" else 1, C.byref(p), C.byref(bi), C.byref(fo),
                                          C.byref(bo), C.byref(o), C.byref(out), C.byref(err)), err)
    rec = json.loads(L.take_string(out))
    if rec["verdict"] == "FAIL":
        raise AssertionError("%s of %s: %s: %s" % (output, case.name or "the case", rec["diagnosis"], rec["why"]))
    m = rec.get("outputs", {}).get(output, {}).get("iut", {})
    return {k2: (float(v2.replace("inf", "Inf").lower()) if isinstance(v2, str) else v2) for k2, v2 in m.items()}
