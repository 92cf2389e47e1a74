"""The numerics emulator's configuration (include/flashref_emulate.h, docs/emulator.md): presets and every knob of
fr_numerics as attributes.

    nc = flashref.emulate.preset("fa4-sm100-fwd-inference")
    nc.rescale_threshold = 0          # exact running max
    out, m, l = flashref.attention(q, k, v, ..., engine="emulate", numerics=nc)
"""

from __future__ import annotations

import ctypes as C
from typing import Any, Dict, List, Optional, Sequence

from . import _lib as L
from ._arrays import dtype_code

_ENUMS: Dict[str, Dict[str, int]] = {
    "exp_base": {"e": 0, "2": 1},
    "order": {"forward": 0, "reverse": 1, "perm": 2},
    "rowsum": {"unrounded": 0, "rounded": 1},
    "dpsum": {"out": 0, "out_lo": 1, "f32": 2},
    "bwd_p": {"recompute": 0, "loaded": 1},
    "p_round": {"nearest_even": 0, "half_away": 1},
    "out_round": {"nearest_even": 0, "half_away": 1},
    "ds_round": {"nearest_even": 0, "half_away": 1},
    "grad_round": {"nearest_even": 0, "half_away": 1},
}
_DTYPES = ("compute", "p_dtype", "acc_o", "acc_l", "ds_dtype")
KNOBS = ("compute", "q_tile", "kv_tile", "rescale_threshold", "exp_base", "p_dtype", "p_round", "rowsum", "order",
         "perm", "acc_o", "acc_l", "out_round", "dpsum", "bwd_p", "ds_dtype", "ds_round", "grad_round")


class Numerics:
    """One emulator configuration. Enumerated knobs read and write as strings (exp_base "e"/"2", order
    "forward"/"reverse"/"perm", rowsum "unrounded"/"rounded", dpsum "out"/"out_lo"/"f32", bwd_p
    "recompute"/"loaded", *_round "nearest_even"/"half_away"); dtypes as names ("fp32", "bf16", None = the input
    dtype); perm as a list of tile indices. Checked (fr_numerics_check) before every use."""

    def __init__(self, c: Optional[L.Numerics] = None, **knobs: Any):
        object.__setattr__(self, "_c", c if c is not None else L.lib.fr_numerics_ideal(L.F32))
        object.__setattr__(self, "_perm", None)
        for k, v in knobs.items():
            setattr(self, k, v)

    @property
    def name(self) -> str:
        return self._c.name.decode()

    def __getattr__(self, key: str) -> Any:
        if key not in KNOBS:
            raise AttributeError(key)
        if key == "perm":
            return None if self._perm is None else list(self._perm)
        v = getattr(self._c, key)
        if key in _DTYPES:
            return None if v == L.DT_NONE else L.DTYPE_NAMES[v]
        if key in _ENUMS:
            return {i: n for n, i in _ENUMS[key].items()}.get(v, v)
        return v

    def __setattr__(self, key: str, value: Any) -> None:
        if key not in KNOBS:
            raise AttributeError("Numerics has no knob %r (knobs: %s)" % (key, ", ".join(KNOBS)))
        if key == "perm":
            if value is None:
                self._c.perm, self._c.perm_len = None, 0
                object.__setattr__(self, "_perm", None)
            else:
                arr = (C.c_int64 * len(value))(*[int(x) for x in value])
                object.__setattr__(self, "_perm", arr)
                self._c.perm, self._c.perm_len = C.cast(arr, C.POINTER(C.c_int64)), len(value)
            return
        if key in _DTYPES:
            value = dtype_code(value)
        elif key in _ENUMS:
            if isinstance(value, str):
                if value not in _ENUMS[key]:
                    raise ValueError("%s: %r (expected one of %s)" % (key, value, ", ".join(_ENUMS[key])))
                value = _ENUMS[key][value]
            value = int(value)
        setattr(self._c, key, value)

    def check(self) -> None:
        """Raises FlashrefError (FR_E_INVALID_ARG) naming a knob out of range."""
        err = L.Error()
        L.check(L.lib.fr_numerics_check(C.byref(self._c), C.byref(err)), err)

    def as_dict(self) -> Dict[str, Any]:
        return {k: getattr(self, k) for k in KNOBS}

    def copy(self) -> "Numerics":
        n = Numerics(L.Numerics.from_buffer_copy(self._c))
        if self._perm is not None:
            n.perm = list(self._perm)
        return n

    def __repr__(self) -> str:
        return "Numerics(%r, %s)" % (self.name, ", ".join("%s=%r" % kv for kv in self.as_dict().items()))


def preset(name: str) -> Numerics:
    """A named preset: exact, ideal-bf16, ideal-fp16, ascend-a2, fa4-sm100-fwd-inference, fa4-sm100-fwd-train, fast-ip1."""
    c, err = L.Numerics(), L.Error()
    L.check(L.lib.fr_numerics_preset(name.encode(), C.byref(c), C.byref(err)), err)
    return Numerics(c)


def preset_names() -> List[str]:
    return L.name_list(L.lib.fr_numerics_preset_names())


def ideal(dtype: Any) -> Numerics:
    """The ideal pipeline of an input dtype (docs/verification-method.md 1)."""
    return Numerics(L.lib.fr_numerics_ideal(dtype_code(dtype)))


def round_to(x: Sequence[float], dtype: Any, rounding: str = "nearest_even", saturate: bool = False):
    """Rounds values to a format (the emulator's one rounding routine), returned as float64 numpy values."""
    import numpy as np
    r = _ENUMS["p_round"][rounding]
    d = dtype_code(dtype)
    a = np.asarray(x, dtype=np.float64)
    return np.vectorize(lambda v: L.lib.fr_emu_round(float(v), d, r, int(bool(saturate))), otypes=[np.float64])(a)
