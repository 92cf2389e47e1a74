"""flashref.attention and flashref.attention_backward: the operator on numpy arrays or CPU torch tensors."""

from __future__ import annotations

import ctypes as C
from typing import Any, List, NamedTuple, Optional, Sequence, Union

from . import _lib as L
from ._arrays import Keep, alloc, dtype_code, is_torch, view
from .emulate import Numerics, preset

_ENGINES = {"golden": 0, "fast": 1, "emulate": 2}
# isa= spellings: the library's variant list (None and "auto": FR_ISA_AUTO, the dispatcher's choice).
_ISAS = dict([(None, 0), ("auto", 0)] + L.isa_variants())
_SOFTMAX_LAYOUT = {"": 0, None: 0, "default": 0, "same_as_input": 1}


class AttentionOutput(NamedTuple):
    """attention_out, softmax_max and softmax_sum ([B,N1,S1,8] fp32; TND [N1,T,8] or [T,N1,8])."""
    out: Any
    softmax_max: Any
    softmax_sum: Any


class Gradients(NamedTuple):
    """dq, dk, dv; dq_rope / dk_rope with rope inputs, dsink with a sink (else None)."""
    dq: Any
    dk: Any
    dv: Any
    dq_rope: Any = None
    dk_rope: Any = None
    dsink: Any = None


def _ints(x: Optional[Sequence[int]], keep: Keep, name: str, status: str):
    if x is None:
        return None, 0
    vals = [L.c_int("%s[%d]" % (name, k), v, "int64", status)
            for k, v in enumerate(x.tolist() if hasattr(x, "tolist") else x)]
    arr = (C.c_int64 * max(len(vals), 1))(*vals)
    keep.refs.append(arr)
    return C.cast(arr, C.POINTER(C.c_int64)), len(vals)


def make_params(keep: Keep, *, input_layout: str, head_num: int, scale: float = 1.0, keep_prob: float = 1.0,
                pre_tokens: int = 2147483647, next_tokens: int = 2147483647, inner_precise: int = 0,
                sparse_mode: int = 0, pse_type: int = 1, prefix: Optional[Sequence[int]] = None,
                actual_seq_qlen: Optional[Sequence[int]] = None, actual_seq_kvlen: Optional[Sequence[int]] = None,
                q_start_idx: int = 0, kv_start_idx: int = 0, out_dtype: Any = None,
                softmax_layout: Optional[str] = None) -> L.Params:
    p = L.lib.fr_params_default()
    lay = str(input_layout).upper()
    if lay not in L.LAYOUTS[1:]:
        raise L.FlashrefError(L.STATUS["FR_E_LAYOUT"], "input_layout: '%s' (expected BSH, SBH, BSND, BNSD or TND)"
                              % input_layout)
    p.input_layout = L.LAYOUTS.index(lay)
    # Every integer range-checked for its C field first: ctypes would wrap 2**32 + 2 to 2 silently.
    p.head_num = L.c_int("head_num", head_num, "int64", "FR_E_HEADS")
    p.scale_value, p.keep_prob = float(scale), float(keep_prob)
    p.pre_tokens = L.c_int("pre_tokens", pre_tokens, "int64", "FR_E_BAND")
    p.next_tokens = L.c_int("next_tokens", next_tokens, "int64", "FR_E_BAND")
    p.inner_precise = L.c_int("inner_precise", inner_precise, "int32")
    p.sparse_mode = L.c_int("sparse_mode", sparse_mode, "int32", "FR_E_SPARSE_MODE")
    p.pse_type = L.c_int("pse_type", pse_type, "int32", "FR_E_PSE")
    p.prefix, p.prefix_len = _ints(prefix, keep, "prefix", "FR_E_PREFIX")
    p.actual_seq_qlen, nq = _ints(actual_seq_qlen, keep, "actual_seq_qlen", "FR_E_SEQLEN")
    p.actual_seq_kvlen, nk = _ints(actual_seq_kvlen, keep, "actual_seq_kvlen", "FR_E_SEQLEN")
    if actual_seq_qlen is not None and actual_seq_kvlen is not None and nq != nk:
        raise L.FlashrefError(L.STATUS["FR_E_SEQLEN"], "actual_seq_qlen has %d entries, actual_seq_kvlen %d" % (nq, nk))
    p.actual_seq_len = max(nq, nk)
    p.q_start_idx = L.c_int("q_start_idx", q_start_idx, "int64", "FR_E_PSE")
    p.kv_start_idx = L.c_int("kv_start_idx", kv_start_idx, "int64", "FR_E_PSE")
    p.out_dtype = dtype_code(out_dtype)
    if softmax_layout not in _SOFTMAX_LAYOUT:
        raise ValueError("softmax_layout: %r (expected '' or 'same_as_input')" % softmax_layout)
    p.softmax_layout = _SOFTMAX_LAYOUT[softmax_layout]
    return p


def isa_names() -> List[str]:
    """The ISA variants the fast engine knows (isa= of attention and attention_backward), best last; whether this CPU
    runs one, the call says (FlashrefError FR_E_NOT_AVAILABLE when it does not)."""
    return [n for n, _ in L.isa_variants()]


def make_engine(engine: str, numerics: Union[None, str, Numerics], threads: int, isa: Optional[str], keep: Keep):
    if engine not in _ENGINES:
        raise ValueError("engine: %r (expected 'fast', 'golden' or 'emulate')" % (engine,))
    if isa not in _ISAS:
        raise ValueError("isa: %r (expected auto or one of %s)" % (isa, ", ".join(isa_names())))
    e = L.lib.fr_engine_default(_ENGINES[engine])
    e.num_threads, e.isa = L.c_int("threads", threads, "int32"), _ISAS[isa]
    nc = None
    if numerics is not None:
        if engine != "emulate":
            raise ValueError("numerics: only with engine='emulate'")
        nc = preset(numerics) if isinstance(numerics, str) else numerics
        nc.check()
        keep.refs.append(nc)
        e.numerics = C.cast(C.byref(nc._c), C.c_void_p)
    return e, nc


_FWD_OPTIONAL = ("real_shift", "drop_mask", "atten_mask", "d_scale_q", "d_scale_k", "d_scale_v", "query_rope",
                 "key_rope", "sink", "topk_indices")


def _fwd_inputs(keep: Keep, hint: Optional[int], query, key, value, tensors: dict) -> L.FwdInputs:
    fi = L.FwdInputs()
    fi.query, fi.key, fi.value = (view(x, n, keep, hint) for x, n in ((query, "query"), (key, "key"), (value, "value")))
    for n in _FWD_OPTIONAL:
        setattr(fi, n, view(tensors.get(n), n, keep, hint if n in ("query_rope", "key_rope") else None))
    return fi


def _hint(dtype: Any, query: Any) -> Optional[int]:
    return dtype_code(dtype) if dtype is not None else None


def _raw(query: Any, hint: Optional[int]) -> bool:
    name = str(getattr(query, "dtype", ""))  # a list: view() refuses it with the argument's name
    return hint is not None and ("uint" in name or "int16" in name)


# The operator parameters attention() and attention_backward() take under make_params' names.
_PARAM_ARGS = ("input_layout", "head_num", "scale", "keep_prob", "pre_tokens", "next_tokens", "inner_precise",
               "sparse_mode", "pse_type", "prefix", "actual_seq_qlen", "actual_seq_kvlen", "q_start_idx",
               "kv_start_idx", "out_dtype", "softmax_layout")


def _start(args: dict):
    """The start attention() and attention_backward() share, from the caller's arguments (its locals() before anything
    else): the keep-alive list, the dtype hint, whether query holds raw bits, the params and the forward's inputs (the
    argument pse is the operator's real_shift)."""
    keep = Keep()
    query = args["query"]
    hint = _hint(args["dtype"], query)
    raw = _raw(query, hint)
    p = make_params(keep, **{a: args[a] for a in _PARAM_ARGS})
    fi = _fwd_inputs(keep, hint, query, args["key"], args["value"],
                     {n: args["pse" if n == "real_shift" else n] for n in _FWD_OPTIONAL})
    return keep, hint, raw, p, fi


def _out_specs(op: int, p: L.Params, bi: L.BwdInputs, query, out_precision, err: L.Error):
    """The library's specs of op's outputs (op 0: forward, 1: backward; 9 slots, the forward's first), whether they
    are returned as torch tensors (query is one) and the dtype code of out_precision (None: the outputs' own)."""
    specs = (L.Tensor * 9)()
    L.check(L.lib.fr_verify_output_specs(op, C.byref(p), C.byref(bi), specs, C.byref(err)), err)
    return specs, is_torch(query), dtype_code(out_precision) if out_precision is not None else None


def attention(query, key, value, *, input_layout: str, head_num: int, scale: float = 1.0, atten_mask=None,
              sparse_mode: int = 0, pre_tokens: int = 2147483647, next_tokens: int = 2147483647, pse=None,
              pse_type: int = 1, drop_mask=None, keep_prob: float = 1.0, sink=None, topk_indices=None,
              query_rope=None, key_rope=None, actual_seq_qlen=None, actual_seq_kvlen=None, prefix=None,
              q_start_idx: int = 0, kv_start_idx: int = 0, inner_precise: int = 0, d_scale_q=None, d_scale_k=None,
              d_scale_v=None, out_dtype=None, softmax_layout: Optional[str] = None, dtype=None,
              engine: str = "fast", numerics: Union[None, str, Numerics] = None, threads: int = 0,
              isa: Optional[str] = None, out_precision=None, o_lo: bool = False) -> AttentionOutput:
    """FlashAttentionScore forward (the operator's spec; docs/python.md).

    query/key/value and every tensor: numpy arrays (float32, float16, ml_dtypes bfloat16 / float8_e4m3fn /
    float8_e5m2, or raw bit patterns uint16 / uint8 with dtype="bf16"|"fp16"|"e4m3fn"|"e5m2"|"hif8") or CPU torch
    tensors, read in place (no copy) whatever their strides. pse is the operator's real_shift. Returns
    AttentionOutput(out, softmax_max, softmax_sum) of the same kind as query: out in the operator's dtype (the input
    dtype; fp8 inputs: fp16 unless out_dtype), softmax statistics fp32. out_precision="fp32"|"fp64" returns every
    output unrounded in that precision instead (the golden's fp64 results). engine: "fast" (the fused kernels),
    "golden" (fp64 reference), "emulate" (numerics: a preset name or flashref.emulate.Numerics). o_lo (emulate only):
    also return the fp32 residual fp32(out) - round(out) as a fourth value. The GIL is released while computing.
    Errors raise flashref.FlashrefError carrying the status name and the library's message."""
    keep, hint, raw, p, fi = _start(locals())  # first: locals() is then exactly the arguments
    e, nc = make_engine(engine, numerics, threads, isa, keep)
    err = L.Error()
    bi = L.BwdInputs()
    bi.fwd = fi
    specs, torch_out, prec = _out_specs(0, p, bi, query, out_precision, err)
    fo = L.FwdOutputs()
    arrs = []
    for k, n in enumerate(("attention_out", "softmax_max", "softmax_sum")):
        a, t = alloc(specs[k], torch_out, raw, keep, prec)
        setattr(fo, n, t)
        arrs.append(a)
    if o_lo:
        if engine != "emulate":
            raise ValueError("o_lo: only with engine='emulate'")
        lo_arr, lo_t = alloc(specs[0], torch_out, False, keep, L.F32)
        st = L.lib.fr_emulate_fwd_ex(C.byref(p), C.byref(fi), C.byref(fo), C.byref(nc._c) if nc else None,
                                     C.byref(lo_t), int(threads), C.byref(err))
        L.check(st, err)
        return AttentionOutput(*arrs), lo_arr  # type: ignore[return-value]
    L.check(L.lib.fr_fwd(C.byref(p), C.byref(fi), C.byref(fo), C.byref(e), C.byref(err)), err)
    return AttentionOutput(*arrs)


def attention_backward(query, key, value, dy, attention_in, softmax_max, softmax_sum, *, input_layout: str,
                       head_num: int, scale: float = 1.0, atten_mask=None, sparse_mode: int = 0,
                       pre_tokens: int = 2147483647, next_tokens: int = 2147483647, pse=None, pse_type: int = 1,
                       drop_mask=None, keep_prob: float = 1.0, sink=None, topk_indices=None, query_rope=None,
                       key_rope=None, actual_seq_qlen=None, actual_seq_kvlen=None, prefix=None,
                       q_start_idx: int = 0, kv_start_idx: int = 0, inner_precise: int = 0, d_scale_q=None,
                       d_scale_k=None, d_scale_v=None, out_dtype=None, softmax_layout: Optional[str] = None,
                       dtype=None, engine: str = "fast", numerics: Union[None, str, Numerics] = None,
                       threads: int = 0, isa: Optional[str] = None, out_precision=None, o_extra=None) -> Gradients:
    """FlashAttentionScore backward: dy is attention_out's gradient, attention_in the forward output, softmax_max /
    softmax_sum the forward's statistics. Same arguments and conventions as attention(). Returns Gradients(dq, dk,
    dv, dq_rope, dk_rope, dsink) in the input dtype (fp8: the out dtype) unless out_precision. o_extra (emulate): the
    o_lo residual or the unrounded output, for the numerics' dpsum source."""
    keep, hint, raw, p, fi = _start(locals())  # first: locals() is then exactly the arguments
    bi = L.BwdInputs()
    bi.fwd = fi
    out_hint = dtype_code(out_dtype) if (out_dtype is not None and hint is not None) else hint
    bi.dy = view(dy, "dy", keep, out_hint)
    bi.attention_in = view(attention_in, "attention_in", keep, out_hint)
    bi.softmax_max = view(softmax_max, "softmax_max", keep)
    bi.softmax_sum = view(softmax_sum, "softmax_sum", keep)
    e, nc = make_engine(engine, numerics, threads, isa, keep)
    err = L.Error()
    specs, torch_out, prec = _out_specs(1, p, bi, query, out_precision, err)
    bo = L.BwdOutputs()
    arrs = []
    for k, n in enumerate(L.BWD_OUTPUTS):
        if specs[3 + k].dtype == L.DT_NONE:
            arrs.append(None)
            continue
        a, t = alloc(specs[3 + k], torch_out, raw, keep, prec)
        setattr(bo, n, t)
        arrs.append(a)
    if o_extra is not None:
        if engine != "emulate":
            raise ValueError("o_extra: only with engine='emulate'")
        ox = view(o_extra, "o_extra", keep)
        L.check(L.lib.fr_emulate_bwd_ex(C.byref(p), C.byref(bi), C.byref(bo), C.byref(nc._c) if nc else None,
                                        C.byref(ox), int(threads), C.byref(err)), err)
    else:
        L.check(L.lib.fr_bwd(C.byref(p), C.byref(bi), C.byref(bo), C.byref(e), C.byref(err)), err)
    return Gradients(*arrs)
