"""The judge's precision metrics (docs/verification-method.md 2) on arrays: rel-L2, max abs / rel, ulp, row gain, noise floor."""

from __future__ import annotations

import ctypes as C
import json
from typing import Any, Dict, Optional

import numpy as np

from . import _lib as L
from ._arrays import dtype_code, to_numpy


def _num(v: Any) -> float:
    return float(v) if not isinstance(v, str) else float(v.replace("inf", "Inf").lower())


def metrics(actual: Any, reference: Any, *, row_len: Optional[int] = None, ulp_dtype: Any = None) -> Dict[str, float]:
    """Every metric of actual against reference (numpy arrays or torch tensors of one shape, any float dtype). Rows
    are the last dimension (row_len overrides): the row gain <a - r, r> / <r, r> per row, its rms / max / mean /
    percentiles, the noise floor (the gain rms independent rounding would give) and gain_over_floor. ulp_dtype
    ("bf16", ...): also max_ulp / mean_ulp in that format's ulps."""
    a = np.ascontiguousarray(to_numpy(actual), dtype=np.float64)
    r = np.ascontiguousarray(to_numpy(reference), dtype=np.float64)
    if a.shape != r.shape:
        raise ValueError("metrics: shapes %s and %s differ" % (a.shape, r.shape))
    n = a.size
    rl = int(row_len) if row_len else (a.shape[-1] if a.ndim else 1)
    if rl <= 0 or n % rl:
        raise ValueError("metrics: row_len %d does not divide %d elements" % (rl, n))
    out, err = C.c_void_p(), L.Error()
    P = C.POINTER(C.c_double)
    st = L.lib.fr_verify_metrics_json(a.ctypes.data_as(P), r.ctypes.data_as(P), n // rl if rl else 0, rl,
                                      dtype_code(ulp_dtype), C.byref(out), C.byref(err))
    L.check(st, err)
    return {k: _num(v) for k, v in json.loads(L.take_string(out)).items()}


def ulp(dtype: Any, x: float) -> float:
    """The spacing of format dtype at magnitude |x| (subnormals included; hif8 tapered)."""
    return float(L.lib.fr_verify_ulp(dtype_code(dtype), float(x)))
