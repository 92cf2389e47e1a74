"""The emulator's numerics studies (`flashref study`, docs/emulator.md) returning numpy arrays, for notebooks."""

from __future__ import annotations

import ctypes as C
import json
from typing import Any, Dict, Sequence

import numpy as np

from . import _lib as L


def _floats(d: Any) -> Any:
    if isinstance(d, list):
        return [_floats(v) for v in d]
    if isinstance(d, (int, float)) or d in ("nan", "inf", "-inf"):
        return float(d)
    raise TypeError


def _arrays(d: Any) -> Any:
    """JSON -> dicts with numeric lists as float64 arrays."""
    if isinstance(d, dict):
        return {k: _arrays(v) for k, v in d.items()}
    if isinstance(d, list):
        try:
            return np.array(_floats(d), dtype=np.float64)
        except TypeError:
            return [_arrays(v) for v in d]
    if d in ("nan", "inf", "-inf"):
        return float(d)
    return d


def order_invariance(T: int = 1024, W: int = 512, H: int = 4, dl: int = 512, dr: int = 64, beta: float = 0.25,
                     threshold: float = 8.0, seed: int = 1, bwd: bool = True, threads: int = 0) -> Dict[str, Any]:
    """Seed 001's experiment (`flashref study order-invariance`): per configuration ("lazy-8", "exact-0",
    "rowsum-rounded-8") out_rel_l2 / gain_rms as arrays [first, last], the difference between orders, dq/dk/dv as
    [order][no fix, o_lo fix] arrays; plus the bf16 floor."""
    out, err = C.c_void_p(), L.Error()
    st = L.lib.fr_verify_study_order_invariance(T, W, H, dl, dr, float(beta), seed, float(threshold), int(bwd),
                                                threads, C.byref(out), C.byref(err))
    L.check(st, err)
    return _arrays(json.loads(L.take_string(out)))


def seqlen(lens: Sequence[int] = tuple(1024 << k for k in range(7)), rows: int = 16, d: int = 64, seed: int = 1,
           threads: int = 0) -> Dict[str, Any]:
    """Error vs sequence length (`flashref study seqlen`): "lens" [L], "pipelines" [P] names, and [P, L] arrays
    "rel_l2", "gain_rms", "sum_rel", "nonfinite"."""
    arr = (C.c_int64 * len(lens))(*[int(x) for x in lens])
    out, err = C.c_void_p(), L.Error()
    st = L.lib.fr_verify_study_seqlen(arr, len(lens), rows, d, seed, threads, C.byref(out), C.byref(err))
    L.check(st, err)
    return _arrays(json.loads(L.take_string(out)))
