"""ctypes bindings of libflashref: the public C structs mirrored, the library located and checked, C errors raised as
Python exceptions. Internal: use the functions of the flashref package."""

from __future__ import annotations

import ctypes as C
import math
import numbers
import operator
import os
import sys
from pathlib import Path
from typing import Any, List, Optional

MAX_DIMS = 8
MSG_LEN = 512

# fr_status, in enum order (include/flashref.h).
STATUS_NAMES = [
    "FR_OK", "FR_E_NULL", "FR_E_DTYPE", "FR_E_LAYOUT", "FR_E_RANK", "FR_E_SHAPE", "FR_E_RANGE", "FR_E_HEADS",
    "FR_E_HEAD_DIM", "FR_E_KEEP_PROB", "FR_E_SCALE", "FR_E_SPARSE_MODE", "FR_E_BAND", "FR_E_MASK", "FR_E_PSE",
    "FR_E_PREFIX", "FR_E_SEQLEN", "FR_E_DROPOUT", "FR_E_FP8", "FR_E_DEQUANT_SCALE", "FR_E_ROPE", "FR_E_SINK",
    "FR_E_TOPK", "FR_E_OUTPUT", "FR_E_SOFTMAX_STATS", "FR_E_OVERFLOW", "FR_E_NOMEM", "FR_E_IO", "FR_E_FORMAT",
    "FR_E_UNSUPPORTED", "FR_E_NOT_AVAILABLE", "FR_E_INVALID_ARG", "FR_E_INTERNAL",
]
STATUS = {n: i for i, n in enumerate(STATUS_NAMES)}
OK = 0
E_UNSUPPORTED = STATUS["FR_E_UNSUPPORTED"]
E_INVALID_ARG = STATUS["FR_E_INVALID_ARG"]

# fr_dtype, in enum order; names as fr_dtype_name writes them.
DT_NONE, F64, F32, F16, BF16, E4M3FN, E5M2, HIF8, I32, I64, U8, BOOL = range(12)
DTYPE_NAMES = ["none", "fp64", "fp32", "fp16", "bf16", "e4m3fn", "e5m2", "hif8", "int32", "int64", "uint8", "bool"]
DTYPE_SIZES = [0, 8, 4, 2, 2, 1, 1, 1, 4, 8, 1, 1]
LAYOUTS = ["NONE", "BSH", "SBH", "BSND", "BNSD", "TND"]


class Tensor(C.Structure):
    _fields_ = [("dtype", C.c_int), ("ndim", C.c_int), ("shape", C.c_int64 * MAX_DIMS),
                ("strides", C.c_int64 * MAX_DIMS), ("data", C.c_void_p)]


class Params(C.Structure):
    _fields_ = [
        ("head_num", C.c_int64), ("input_layout", C.c_int), ("scale_value", C.c_double), ("keep_prob", C.c_double),
        ("pre_tokens", C.c_int64), ("next_tokens", C.c_int64), ("inner_precise", C.c_int), ("sparse_mode", C.c_int),
        ("pse_type", C.c_int), ("prefix", C.POINTER(C.c_int64)), ("prefix_len", C.c_int64),
        ("actual_seq_qlen", C.POINTER(C.c_int64)), ("actual_seq_kvlen", C.POINTER(C.c_int64)),
        ("actual_seq_len", C.c_int64), ("q_start_idx", C.c_int64), ("kv_start_idx", C.c_int64),
        ("out_dtype", C.c_int), ("softmax_layout", C.c_int),
    ]


FWD_INPUTS = ["query", "key", "value", "real_shift", "drop_mask", "atten_mask", "d_scale_q", "d_scale_k", "d_scale_v",
              "query_rope", "key_rope", "sink", "topk_indices"]


class FwdInputs(C.Structure):
    _fields_ = [(n, Tensor) for n in FWD_INPUTS]


class FwdOutputs(C.Structure):
    _fields_ = [("attention_out", Tensor), ("softmax_max", Tensor), ("softmax_sum", Tensor)]


class BwdInputs(C.Structure):
    _fields_ = [("fwd", FwdInputs), ("dy", Tensor), ("attention_in", Tensor), ("softmax_max", Tensor),
                ("softmax_sum", Tensor)]


BWD_OUTPUTS = ["dq", "dk", "dv", "dq_rope", "dk_rope", "dsink"]


class BwdOutputs(C.Structure):
    _fields_ = [(n, Tensor) for n in BWD_OUTPUTS]


class Error(C.Structure):
    _fields_ = [("status", C.c_int), ("msg", C.c_char * MSG_LEN)]


class Engine(C.Structure):
    _fields_ = [("kind", C.c_int), ("num_threads", C.c_int), ("isa", C.c_int), ("numerics", C.c_void_p),
                ("progress", C.c_void_p), ("progress_ud", C.c_void_p)]


class Numerics(C.Structure):
    _fields_ = [
        ("name", C.c_char * 48), ("compute", C.c_int), ("q_tile", C.c_int64), ("kv_tile", C.c_int64),
        ("rescale_threshold", C.c_double), ("exp_base", C.c_int), ("p_dtype", C.c_int), ("p_round", C.c_int),
        ("rowsum", C.c_int), ("order", C.c_int), ("perm", C.POINTER(C.c_int64)), ("perm_len", C.c_int64),
        ("acc_o", C.c_int), ("acc_l", C.c_int), ("out_round", C.c_int), ("dpsum", C.c_int), ("bwd_p", C.c_int),
        ("ds_dtype", C.c_int), ("ds_round", C.c_int), ("grad_round", C.c_int),
    ]


class VerifyCase(C.Structure):
    _fields_ = [("name", C.c_char_p), ("category", C.c_char_p), ("op", C.c_int), ("dtype", C.c_int),
                ("params", C.POINTER(Params)), ("inputs", C.POINTER(BwdInputs))]


class VerifyOpts(C.Structure):
    _fields_ = [("set", C.c_char_p), ("filter", C.c_char_p), ("exact", C.c_char_p), ("seed", C.c_uint64),
                ("threads", C.c_int), ("k_out", C.c_double), ("k_max", C.c_double), ("k_grad", C.c_double),
                ("k_stats", C.c_double), ("gain_warn", C.c_double), ("growth_warn", C.c_double),
                ("external", C.c_int), ("impl_name", C.c_char_p), ("standard", C.c_char_p)]


CALLBACK = C.CFUNCTYPE(C.c_int, C.c_void_p, C.POINTER(VerifyCase), C.POINTER(FwdOutputs), C.POINTER(BwdOutputs),
                       C.POINTER(Error))
LIST_FN = C.CFUNCTYPE(None, C.c_void_p, C.c_char_p, C.c_char_p, C.c_char_p)


class FlashrefError(Exception):
    """An error status of the C library: .status is its name ("FR_E_DTYPE"), .code its number, .message the
    library's message naming the parameter."""

    def __init__(self, status: int, message: str):
        self.code = int(status)
        self.status = STATUS_NAMES[status] if 0 <= status < len(STATUS_NAMES) else "FR_STATUS_%d" % status
        self.message = message
        super().__init__("%s: %s" % (self.status, message))


_INT_BITS = {"int32": 32, "int64": 64, "uint64": -64}


def c_int(name: str, v: Any, kind: str = "int64", status: str = "FR_E_INVALID_ARG") -> int:
    """v as an integer that fits the C field (kind int32 / int64 / uint64), checked before ctypes would wrap it
    (sparse_mode=2**32+2 ran as mode 2): FlashrefError with `status` naming the parameter otherwise. Integral floats
    (8.0) are taken, others (2.5) refused; anything else is a TypeError."""
    if isinstance(v, numbers.Integral) or (hasattr(v, "__index__") and not isinstance(v, numbers.Real)):
        i = operator.index(v)
    elif isinstance(v, numbers.Real):
        f = float(v)
        if not (math.isfinite(f) and f.is_integer()):
            raise FlashrefError(STATUS[status], "%s: %r is not an integer" % (name, v))
        i = int(f)
    else:
        raise TypeError("%s: %r is not an integer" % (name, v))
    bits = _INT_BITS[kind]
    lo, hi = (0, 2 ** 64 - 1) if bits < 0 else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if not lo <= i <= hi:
        raise FlashrefError(STATUS[status], "%s: %d is outside the C library's %s range %d..%d" % (
            name, i, kind, lo, hi))
    return int(i)


class Unsupported(Exception):
    """Raise it from an implementation under test for a case it does not handle: the case is a SKIP."""


def _candidates() -> list:
    env = os.environ.get("FLASHREF_LIBRARY")
    if env:
        return [Path(env)]
    here = Path(__file__).resolve().parent
    out = [here / "_native" / "libflashref.so"]
    # A source checkout (python/flashref next to build/): the CMake build's library.
    root = here.parent.parent
    build = Path(os.environ.get("FLASHREF_BUILD", root / "build"))
    out.append(build / "libflashref.so")
    return out


def _load() -> C.CDLL:
    tried = []
    for p in _candidates():
        if p.exists():
            return C.CDLL(str(p))
        tried.append(str(p))
    raise ImportError("flashref: libflashref.so not found (tried %s); install the package (pip install .) or set "
                      "FLASHREF_LIBRARY" % ", ".join(tried))


lib = _load()


def _sig(name, res, *args):
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = list(args)
    return f


P = C.POINTER
_sig("fr_version", C.c_char_p)
_sig("fr_isa_variant", C.c_int, C.c_int)
_sig("fr_isa_name", C.c_char_p, C.c_int)
_sig("fr_status_name", C.c_char_p, C.c_int)
_sig("fr_fwd", C.c_int, P(Params), P(FwdInputs), P(FwdOutputs), P(Engine), P(Error))
_sig("fr_bwd", C.c_int, P(Params), P(BwdInputs), P(BwdOutputs), P(Engine), P(Error))
_sig("fr_params_default", Params)
_sig("fr_engine_default", Engine, C.c_int)
_sig("fr_engine_available", C.c_int, P(Engine), P(Error))
_sig("fr_numerics_preset", C.c_int, C.c_char_p, P(Numerics), P(Error))
_sig("fr_numerics_preset_names", P(C.c_char_p))
_sig("fr_numerics_ideal", Numerics, C.c_int)
_sig("fr_numerics_check", C.c_int, P(Numerics), P(Error))
_sig("fr_emulate_fwd_ex", C.c_int, P(Params), P(FwdInputs), P(FwdOutputs), P(Numerics), P(Tensor), C.c_int, P(Error))
_sig("fr_emulate_bwd_ex", C.c_int, P(Params), P(BwdInputs), P(BwdOutputs), P(Numerics), P(Tensor), C.c_int, P(Error))
_sig("fr_emu_round", C.c_double, C.c_double, C.c_int, C.c_int, C.c_int)
_sig("fr_convert_array", C.c_int, C.c_int, C.c_void_p, C.c_int, C.c_void_p, C.c_size_t, C.c_int, C.c_int)
_sig("fr_verify_abi_version", C.c_int)
_sig("fr_verify_sizeof", C.c_size_t, C.c_char_p)
_sig("fr_verify_output_specs", C.c_int, C.c_int, P(Params), P(BwdInputs), Tensor * 9, P(Error))
_sig("fr_verify_opts_default", VerifyOpts)
_sig("fr_verify_run_callback", C.c_int, P(VerifyOpts), CALLBACK, C.c_void_p, P(C.c_void_p), P(Error))
_sig("fr_verify_run_callback_caps", C.c_int, P(VerifyOpts), C.c_char_p, CALLBACK, C.c_void_p, P(C.c_void_p),
     P(Error))
_sig("fr_verify_hunt", C.c_int, C.c_char_p, C.c_char_p, CALLBACK, C.c_void_p, P(C.c_void_p), P(Error))
_sig("fr_verify_hunt_stop", None)
_sig("fr_verify_run_impl", C.c_int, P(VerifyOpts), C.c_char_p, P(C.c_void_p), P(Error))
_sig("fr_verify_msprobe", C.c_int, P(VerifyOpts), C.c_char_p, C.c_char_p, C.c_char_p, P(C.c_void_p), P(Error))
_sig("fr_verify_npu_schemas", P(C.c_char_p))
_sig("fr_verify_result_overall", C.c_int, C.c_void_p)
_sig("fr_verify_result_count", C.c_int, C.c_void_p)
_sig("fr_verify_result_json", C.c_int, C.c_void_p, P(C.c_void_p), P(Error))
_sig("fr_verify_result_html", C.c_int, C.c_void_p, C.c_char_p, P(Error))
_sig("fr_verify_result_free", None, C.c_void_p)
_sig("fr_verify_free", None, C.c_void_p)
_sig("fr_verify_list", C.c_int, C.c_char_p, C.c_char_p, LIST_FN, C.c_void_p)
_sig("fr_verify_set_names", P(C.c_char_p))
_sig("fr_verify_judge_outputs", C.c_int, C.c_int, P(Params), P(BwdInputs), P(FwdOutputs), P(BwdOutputs),
     P(VerifyOpts), P(C.c_void_p), P(Error))
_sig("fr_verify_metrics_json", C.c_int, P(C.c_double), P(C.c_double), C.c_int64, C.c_int64, C.c_int, P(C.c_void_p),
     P(Error))
_sig("fr_verify_ulp", C.c_double, C.c_int, C.c_double)
_sig("fr_verify_study_order_invariance", C.c_int, C.c_int64, C.c_int64, C.c_int64, C.c_int64, C.c_int64, C.c_double,
     C.c_uint64, C.c_double, C.c_int, C.c_int, P(C.c_void_p), P(Error))
_sig("fr_verify_study_seqlen", C.c_int, P(C.c_int64), C.c_int, C.c_int64, C.c_int64, C.c_uint64, C.c_int,
     P(C.c_void_p), P(Error))

# The mirrors must match the library's structs exactly: a mismatch would read garbage, so it is an import error.
for _name, _cls in [("fr_tensor", Tensor), ("fr_params", Params), ("fr_fwd_inputs", FwdInputs),
                    ("fr_bwd_inputs", BwdInputs), ("fr_fwd_outputs", FwdOutputs), ("fr_bwd_outputs", BwdOutputs),
                    ("fr_error", Error), ("fr_numerics", Numerics), ("fr_verify_case", VerifyCase),
                    ("fr_verify_opts", VerifyOpts)]:
    _n = lib.fr_verify_sizeof(_name.encode())
    if _n != C.sizeof(_cls):
        raise ImportError("flashref: %s is %d bytes in the library, %d in the bindings: library and package versions "
                          "differ" % (_name, _n, C.sizeof(_cls)))
if lib.fr_verify_abi_version() != 1:
    raise ImportError("flashref: library verify ABI %d, bindings expect 1" % lib.fr_verify_abi_version())


def check(status: int, err: Optional[Error]) -> None:
    """Raises FlashrefError for a non-OK status."""
    if status != OK:
        msg = err.msg.decode("utf-8", "replace") if err is not None else ""
        raise FlashrefError(status, msg or lib.fr_status_name(status).decode())


def take_string(p: C.c_void_p) -> str:
    """A malloc'd C string as str, freed."""
    try:
        return C.string_at(p.value).decode("utf-8", "replace")
    finally:
        lib.fr_verify_free(p)


def name_list(p) -> List[str]:
    """A NULL-terminated C array of names (char **, owned by the library) as a list of str."""
    out, k = [], 0
    while p[k]:
        out.append(p[k].decode())
        k += 1
    return out


def isa_variants() -> List[tuple]:
    """The library's ISA variants as (name, fr_isa value), best last: its one list (src/core/variants.inc), asked at
    run time, so the bindings never spell it out."""
    out, k = [], 0
    while True:
        v = lib.fr_isa_variant(k)
        if v == 0:  # FR_ISA_AUTO: past the end
            return out
        out.append((lib.fr_isa_name(v).decode(), v))
        k += 1


def version() -> str:
    return lib.fr_version().decode()


def library_path() -> str:
    return lib._name


def cli_path() -> Optional[str]:
    """The bundled flashref command (wheel), or the CMake build's (source checkout)."""
    d = Path(lib._name).resolve().parent
    for c in (d / "flashref", d / "bin" / "flashref"):
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return None


_ = sys  # (kept for platform checks later)
