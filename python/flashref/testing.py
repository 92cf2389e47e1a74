"""Assertions for a user's own tests: one tensor judged against flashref's fp64 golden with the verifier's rule."""

from __future__ import annotations

from typing import Any, Dict, Optional, Union

import numpy as np

from . import _lib as L
from ._arrays import to_numpy
from ._verify import Case
from .metrics import metrics, ulp

_FWD = ("attention_out", "softmax_max", "softmax_sum")
_BWD = ("dq", "dk", "dv", "dq_rope", "dk_rope", "dsink")
_U = {"fp32": 2.0 ** -24, "fp16": 2.0 ** -11, "bf16": 2.0 ** -8, "fp64": 2.0 ** -53}


def _unit(dtype: str) -> float:
    return _U.get(dtype, 2.0 ** -4)


def assert_attention_close(actual: Any, expected_case: Union[Case, Dict[str, Any]], *, output: str = "attention_out",
                           k_out: float = 2.0, k_max: float = 4.0, k_grad: float = 3.0) -> Dict[str, float]:
    """Asserts that `actual` (numpy array or torch tensor) is output `output` of the case within the verifier's
    bounds: its rel-L2 against the fp64 golden at most k (k_out for attention_out / softmax statistics, k_grad for
    gradients) times max(the ideal pipeline of the dtype's rel-L2, u/4), and (attention_out) its max abs error at
    most k_max times max(the ideal's, 1 ulp of the output's largest value). expected_case: a flashref.Case
    (Case.from_dir, or from a verify callback), or a dict of flashref.attention's keyword arguments with query, key,
    value (and dy, attention_in, softmax_max, softmax_sum for a gradient). Raises AssertionError with the numbers;
    returns the metrics."""
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
    k = names.index(output)
    golden = case.attention(engine="golden", out_precision="fp64")[k]
    ideal = case.attention(engine="emulate")[k]
    if golden is None:
        raise ValueError("output: %s is absent for this case" % output)
    a, g, i = to_numpy(actual), to_numpy(golden), to_numpy(ideal)
    if tuple(a.shape) != tuple(g.shape):
        raise AssertionError("%s: shape %s, expected %s" % (output, tuple(a.shape), tuple(g.shape)))
    op_dtype = case.out_dtype or ("fp16" if case.dtype in ("e4m3fn", "e5m2", "hif8") else case.dtype)
    out_dtype = "fp32" if output.startswith("softmax") or output == "dsink" else (
        op_dtype if output == "attention_out" or case.dtype in ("e4m3fn", "e5m2", "hif8") else case.dtype)
    ma = metrics(a, g)
    mi = metrics(i, g)
    kk = k_grad if case.op == "bwd" else k_out
    bound = kk * max(mi["rel_l2"], _unit(out_dtype) / 4)
    msgs = []
    if not np.isfinite(np.asarray(a, dtype=np.float64)).all() and np.isfinite(g).all():
        msgs.append("NaN/Inf where the golden is finite")
    if not ma["rel_l2"] <= bound:
        msgs.append("rel-L2 %.3g > %.3g (%g x the ideal pipeline's %.3g, floor u/4 = %.3g)" % (
            ma["rel_l2"], bound, kk, mi["rel_l2"], _unit(out_dtype) / 4))
    if output == "attention_out":
        big = float(np.nanmax(np.abs(g))) if g.size else 0.0
        abs_bound = k_max * max(mi["max_abs"], ulp(out_dtype, big) if big > 0 else 0.0)
        if not ma["max_abs"] <= abs_bound:
            msgs.append("max abs %.3g > %.3g (%g x max(ideal's %.3g, 1 ulp))" % (ma["max_abs"], abs_bound, k_max,
                                                                                 mi["max_abs"]))
    if msgs:
        raise AssertionError("%s of %s: %s" % (output, case.name or "the case", "; ".join(msgs)))
    return ma


_ = Optional
