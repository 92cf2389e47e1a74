"""numpy arrays and CPU torch tensors <-> fr_tensor views (zero-copy when the strides are whole elements)."""

from __future__ import annotations

import ctypes as C
from typing import Any, Optional, Tuple

import numpy as np

from . import _lib as L

try:
    import ml_dtypes as _mld
except ImportError:  # pragma: no cover - ml_dtypes is a dependency; raw bit patterns still work without it
    _mld = None

_NP_TO_FR = {"float64": L.F64, "float32": L.F32, "float16": L.F16, "bfloat16": L.BF16, "float8_e4m3fn": L.E4M3FN,
             "float8_e5m2": L.E5M2, "int32": L.I32, "int64": L.I64, "uint8": L.U8, "bool": L.BOOL}
# Raw bit patterns: the container dtype a narrow format may travel in.
_RAW = {L.BF16: "uint16", L.F16: "uint16", L.E4M3FN: "uint8", L.E5M2: "uint8", L.HIF8: "uint8"}
_NAMES = {n: i for i, n in enumerate(L.DTYPE_NAMES)}
_NAMES.update({"float32": L.F32, "float64": L.F64, "float16": L.F16, "bfloat16": L.BF16, "float8_e4m3fn": L.E4M3FN,
               "float8_e5m2": L.E5M2, "hifloat8": L.HIF8})


def dtype_code(name: Any) -> int:
    """A dtype given as flashref name ("bf16"), numpy / torch dtype or None (-> FR_DT_NONE)."""
    if name is None:
        return L.DT_NONE
    if isinstance(name, int):
        return name
    s = str(name).replace("torch.", "")
    if s in _NAMES:
        return _NAMES[s]
    try:
        return _NP_TO_FR[np.dtype(name).name]
    except (TypeError, KeyError):
        raise ValueError("unknown dtype %r (expected fp32, fp16, bf16, e4m3fn, e5m2, hif8, ...)" % (name,)) from None


def numpy_dtype(code: int, raw: bool = False) -> np.dtype:
    """The numpy dtype holding flashref dtype `code`: ml_dtypes for bf16/fp8 (raw=True or no ml_dtypes: uint16 /
    uint8 bit patterns); hif8 always as uint8 bit patterns."""
    if code == L.HIF8 or (raw and code in (L.BF16, L.E4M3FN, L.E5M2)) or (_mld is None and code in _RAW):
        return np.dtype(_RAW[code])
    table = {L.F64: np.float64, L.F32: np.float32, L.F16: np.float16, L.I32: np.int32, L.I64: np.int64,
             L.U8: np.uint8, L.BOOL: np.bool_}
    if code in table:
        return np.dtype(table[code])
    return np.dtype({L.BF16: _mld.bfloat16, L.E4M3FN: _mld.float8_e4m3fn, L.E5M2: _mld.float8_e5m2}[code])


def is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def _resolve(x):
    """A torch tensor whose memory holds its values: a negative- or conjugate-bit view (z.conj().imag) stores the
    un-negated buffer and negates lazily, so its data_ptr() would be read as the opposite values."""
    if x.is_neg():
        x = x.resolve_neg()
    if x.is_conj():
        x = x.resolve_conj()
    return x


def _torch_dtype(code: int):
    import torch
    table = {L.F64: torch.float64, L.F32: torch.float32, L.F16: torch.float16, L.BF16: torch.bfloat16,
             L.E4M3FN: torch.float8_e4m3fn, L.E5M2: torch.float8_e5m2, L.HIF8: torch.uint8, L.I32: torch.int32,
             L.I64: torch.int64, L.U8: torch.uint8, L.BOOL: torch.bool}
    return table[code]


def _torch_code(t) -> int:
    s = str(t.dtype).replace("torch.", "")
    if s in _NP_TO_FR:
        return _NP_TO_FR[s]
    if s in ("uint16", "int16"):
        return -2  # raw 16-bit pattern: needs a dtype hint
    raise TypeError("torch dtype %s is not a flashref dtype" % t.dtype)


class Keep:
    """Keeps the Python objects whose memory fr_tensor views point into alive for one call."""

    def __init__(self) -> None:
        self.refs: list = []


def view(x: Any, name: str, keep: Keep, hint: Optional[int] = None) -> L.Tensor:
    """An fr_tensor over x's memory. hint: the flashref dtype of a raw-bit-pattern container (uint16 for bf16/fp16,
    uint8 for e4m3fn/e5m2/hif8). Absent (None) -> an empty view."""
    t = L.Tensor()
    if x is None:
        return t
    if is_torch(x):
        if x.device.type != "cpu":
            raise ValueError("%s: a %s tensor: flashref computes on the CPU (pass x.cpu())" % (name, x.device.type))
        x = _resolve(x.detach())
        code = _torch_code(x)
        ptr, shape, strides = x.data_ptr(), tuple(x.shape), tuple(x.stride())
        keep.refs.append(x)
    else:
        if isinstance(x, (list, tuple)) or np.isscalar(x):
            # A list (or a scalar) has no dtype: guessing one (float64, int64) would be refused by the operator
            # with a message about a dtype the user never chose.
            raise TypeError("%s: a %s; pass a numpy array (e.g. np.asarray(x, dtype=np.float32)) or a CPU torch "
                            "tensor" % (name, type(x).__name__))
        a = np.asarray(x)
        code = _NP_TO_FR.get(a.dtype.name, -2 if a.dtype.name in ("uint16", "int16") else -1)
        if code == -1:
            raise TypeError("%s: numpy dtype %s is not a flashref dtype" % (name, a.dtype))
        if any(s % a.itemsize for s in a.strides):
            a = np.ascontiguousarray(a)
        ptr, shape, strides = a.ctypes.data, a.shape, tuple(s // a.itemsize for s in a.strides)
        keep.refs.append(a)
    if code == -2 or (code == L.U8 and hint in (L.E4M3FN, L.E5M2, L.HIF8)):
        if hint not in _RAW or _RAW[hint] != ("uint16" if code == -2 else "uint8"):
            raise TypeError("%s: %s bit patterns need dtype='bf16' or 'fp16' (16-bit) or 'e4m3fn', 'e5m2', 'hif8' "
                            "(8-bit)" % (name, "16-bit" if code == -2 else "8-bit"))
        code = hint
    if len(shape) > L.MAX_DIMS:
        raise ValueError("%s: %d dimensions (at most %d)" % (name, len(shape), L.MAX_DIMS))
    t.dtype, t.ndim = code, len(shape)
    for k, (n, s) in enumerate(zip(shape, strides)):
        t.shape[k], t.strides[k] = n, s
    t.data = ptr or None
    return t


def alloc(spec: L.Tensor, like_torch: bool, raw: bool, keep: Keep, as_dtype: Optional[int] = None):
    """A new array of spec's shape (dtype: as_dtype or spec's) and its fr_tensor view."""
    code = as_dtype if as_dtype is not None else spec.dtype
    shape = tuple(spec.shape[k] for k in range(spec.ndim))
    if like_torch:
        import torch
        arr = torch.empty(shape, dtype=_torch_dtype(code) if not (raw and code in _RAW) else
                          (torch.int16 if _RAW[code] == "uint16" else torch.uint8))
        ptr, strides = arr.data_ptr(), arr.stride()
    else:
        arr = np.empty(shape, dtype=numpy_dtype(code, raw))
        ptr, strides = arr.ctypes.data, tuple(s // arr.itemsize for s in arr.strides)
    t = L.Tensor()
    t.dtype, t.ndim = code, len(shape)
    for k in range(len(shape)):
        t.shape[k], t.strides[k] = shape[k], strides[k]
    t.data = ptr or None
    keep.refs.append(arr)
    return arr, t


def from_view(t: L.Tensor, writable: bool = False) -> np.ndarray:
    """A numpy view of an fr_tensor's memory (any strides, including 0 and negative), or None when absent."""
    if t.dtype == L.DT_NONE:
        return None
    dt = numpy_dtype(t.dtype)
    es = dt.itemsize
    shape = tuple(t.shape[k] for k in range(t.ndim))
    strides = tuple(t.strides[k] for k in range(t.ndim))
    if not t.data or any(n == 0 for n in shape):
        return np.empty(shape, dtype=dt)
    lo = sum(s * (n - 1) for s, n in zip(strides, shape) if s < 0)
    hi = sum(s * (n - 1) for s, n in zip(strides, shape) if s > 0)
    nbytes = (hi - lo + 1) * es
    buf = (C.c_uint8 * nbytes).from_address(t.data + lo * es)
    a = np.ndarray(shape, dtype=dt, buffer=buf, offset=-lo * es, strides=tuple(s * es for s in strides))
    if not writable:
        a.flags.writeable = False
    return a


def to_numpy(x: Any) -> np.ndarray:
    """A numpy array (no copy where possible) of a numpy array or CPU torch tensor; bf16/fp8 torch tensors come
    back as ml_dtypes arrays."""
    if is_torch(x):
        import torch
        x = _resolve(x.detach())
        if x.device.type != "cpu":
            x = x.cpu()
        s = str(x.dtype).replace("torch.", "")
        if s == "bfloat16":
            return x.view(torch.int16).numpy().view(numpy_dtype(L.BF16))
        if s in ("float8_e4m3fn", "float8_e5m2"):
            return x.view(torch.uint8).numpy().view(numpy_dtype(_NP_TO_FR[s]))
        return x.numpy()
    return np.asarray(x)


def to_torch(a: np.ndarray, copy: bool = True):
    """A torch tensor of a numpy array (bf16/fp8 through their bit patterns)."""
    import torch
    a = np.array(a, copy=True) if copy else a
    name = a.dtype.name
    if name == "bfloat16":
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    if name in ("float8_e4m3fn", "float8_e5m2"):
        return torch.from_numpy(a.view(np.uint8)).view(getattr(torch, name))
    return torch.from_numpy(a)


def shape_of(t: L.Tensor) -> Tuple[int, ...]:
    return tuple(t.shape[k] for k in range(t.ndim))
