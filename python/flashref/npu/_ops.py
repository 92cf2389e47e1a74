"""torch_npu's fusion-attention functions on the CPU: the signatures of op-plugin's schemas (_schema.py), computed by
flashref's operator (golden engine unless set_engine("fast")), differentiable through the operator's backward."""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Any, Dict, Iterator, Optional

import numpy as np

from .. import _lib as L
from .._arrays import is_torch
from .._ops import attention as _fr_attention, attention_backward as _fr_backward
from ._call import NpuCall, NpuError, bind_args, rename

ENGINES = ("golden", "fast")
_state = threading.local()


def _default_engine() -> str:
    e = os.environ.get("FLASHREF_NPU_ENGINE", "golden") or "golden"
    if e not in ENGINES:
        raise ValueError("FLASHREF_NPU_ENGINE=%r (expected golden or fast)" % e)
    return e


def get_engine() -> str:
    """The engine flashref.npu computes with: "golden" (the fp64 reference, rounded to the operator's dtypes; the
    default) or "fast" (the fused kernels). set_engine(), the engine() context, FLASHREF_NPU_ENGINE set it."""
    return getattr(_state, "engine", None) or _global["engine"] or _default_engine()


_global: Dict[str, Optional[str]] = {"engine": None}


def set_engine(name: str) -> None:
    """Selects the engine of every later call in the process: "golden" or "fast"."""
    if name not in ENGINES:
        raise ValueError("engine: %r (expected golden or fast)" % (name,))
    _global["engine"] = name


@contextmanager
def engine(name: str) -> Iterator[None]:
    """with flashref.npu.engine("fast"): ... (this thread only)."""
    if name not in ENGINES:
        raise ValueError("engine: %r (expected golden or fast)" % (name,))
    old = getattr(_state, "engine", None)
    _state.engine = name
    try:
        yield
    finally:
        _state.engine = old


# --------------------------------------------------------------------------------------------------------------------


def _library_errors(call: NpuCall):
    """Runs through flashref with the library's errors renamed to torch_npu's argument names."""
    class _Ctx:
        def __enter__(self):
            return self

        def __exit__(self, typ, e, tb):
            if isinstance(e, L.FlashrefError) and not isinstance(e, NpuError):
                raise NpuError(call.api, rename(call.api, e.message), e.code) from e
            return False
    return _Ctx()


def _f64(x: Any) -> bool:
    return x is not None and str(x.dtype) in ("torch.float64", "float64")


def _fp32_exact_np(x: Any, name: str) -> Any:
    if x is None or not _f64(x):
        return x
    f = np.asarray(x, dtype=np.float32)
    if not np.array_equal(f.astype(np.float64), x):
        raise ValueError("%s: fp64 values that fp32 cannot hold exactly (the golden reads fp32 inputs)" % name)
    return f


def _forward(call: NpuCall) -> tuple:
    """(attention_out, softmax_max, softmax_sum) of a forward call, flashref's layouts."""
    call.require_reproducible()
    eng = get_engine()
    kw = call.flashref_kwargs()
    q, k, v = call.inputs["query"], call.inputs["key"], call.inputs["value"]
    with _library_errors(call):
        if is_torch(q):
            from ..torch import _Attention
            extra = [kw.pop(n, None) for n in ("query_rope", "key_rope", "sink", "pse")]
            kw["engine"] = eng
            return _Attention.apply(kw, q, k, v, *extra)
        prec = None
        if _f64(q) and eng == "golden":
            prec = "fp64"
            q, k, v = (_fp32_exact_np(t, n) for t, n in ((q, "query"), (k, "key"), (v, "value")))
            for n in ("query_rope", "key_rope", "sink", "pse"):
                kw[n] = _fp32_exact_np(kw.get(n), n)
        r = _fr_attention(q, k, v, engine=eng, out_precision=prec, **kw)
        return r.out, r.softmax_max, r.softmax_sum


def _backward(call: NpuCall):
    """flashref.Gradients of a grad call."""
    call.require_reproducible()
    eng = get_engine()
    kw = call.flashref_kwargs()
    i = call.inputs
    args = [i.get(n) for n in ("query", "key", "value", "dy", "attention_in", "softmax_max", "softmax_sum")]
    prec = None
    if _f64(args[0]) and eng == "golden":
        prec = "fp64"
        if is_torch(args[0]):
            from ..torch import _fp32_exact
            conv = lambda t, n: t if t is None or not _f64(t) else _fp32_exact(t, n)  # noqa: E731
        else:
            conv = _fp32_exact_np
        names = ("query", "key", "value", "dy", "attention_in")
        args[:5] = [conv(t, n) for t, n in zip(args[:5], names)]
        for n in ("query_rope", "key_rope", "sink", "pse"):
            kw[n] = conv(kw.get(n), n)
    elif is_torch(args[0]):
        args = [None if t is None else t.detach() for t in args]
    with _library_errors(call):
        return _fr_backward(*args, engine=eng, out_precision=prec, **kw)


def _empty(like: Any, shape, dtype_name: str) -> Any:
    if is_torch(like):
        import torch
        return torch.empty(shape, dtype=getattr(torch, dtype_name))
    return np.empty(shape, dtype={"float32": np.float32}.get(dtype_name, like.dtype))


def _reserved_softmax_out(q: Any) -> Any:
    """torch_npu's softmax_out: a reserved output, an empty tensor of the query's dtype."""
    if is_torch(q):
        import torch
        return torch.empty(0, dtype=q.dtype)
    return np.empty(0, dtype=q.dtype)


def _unwritten_dpse(pse: Any) -> Any:
    """dpse: the operator never writes it (documented "not used"); torch_npu returns the allocation, pse's shape
    and dtype, uninitialised. Here NaN, as PyTorch fills memory nobody wrote (fill_uninitialized_memory), so that
    using it shows."""
    if pse is None:
        return None
    if is_torch(pse):
        import torch
        return torch.full(pse.shape, float("nan"), dtype=pse.dtype)
    return np.full(pse.shape, np.nan, dtype=pse.dtype)


def _run_forward(api: str, args: tuple, kwargs: Dict[str, Any]) -> tuple:
    call = NpuCall(api, bind_args(api, args, kwargs))
    out, m, l = _forward(call)
    q = call.inputs["query"]
    res = (out, call.stats_to_npu(m), call.stats_to_npu(l), _reserved_softmax_out(q))
    if call.v3:
        # op-plugin allocates both on the CPU (int64 [1]); without dropout they are never written: 0 here.
        if is_torch(q):
            import torch
            return res + (torch.zeros(1, dtype=torch.int64), torch.zeros(1, dtype=torch.int64))
        return res + (np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64))
    return res + (int(call.seed), int(call.offset), int(call.numels))


def _run_grad(api: str, args: tuple, kwargs: Dict[str, Any]) -> tuple:
    call = NpuCall(api, bind_args(api, args, kwargs))
    g = _backward(call)
    a = call.args
    dpse = _unwritten_dpse(a["pse"])
    dsink = g.dsink if a["sink"] is not None else _empty(a["key"], (0,), "float32")
    if call.v2:
        return (g.dq, g.dk, g.dv, dpse, g.dq_rope if a["query_rope"] is not None else None,
                g.dk_rope if a["key_rope"] is not None else None, dsink)
    return g.dq, g.dk, g.dv, dpse, dsink


# --------------------------------------------------------------------------------------------------------------------
# The functions, with the published signatures (_schema.SCHEMAS; test_npu.py checks they agree). Each body hands its
# arguments on as locals(): at that point they are exactly the parameters, by name.


def npu_fusion_attention(query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None,
                         scale=1., keep_prob=1., pre_tockens=2147483647, next_tockens=2147483647, inner_precise=0,
                         prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
                         gen_mask_parallel=True, sync=False, softmax_layout="", sink=None, dropout_mask=None, seed=0,
                         offset=0):
    """torch_npu.npu_fusion_attention on the CPU: (attention_out, softmax_max, softmax_sum, softmax_out, seed,
    offset, numels). Differentiable (query, key, value, sink) through the operator's backward. keep_prob < 1 needs
    dropout_mask (the packed uint8 mask); see docs/ascend.md for every difference to the NPU."""
    return _run_forward("npu_fusion_attention", (), dict(locals()))


def npu_fusion_attention_grad(query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None,
                              atten_mask=None, softmax_max=None, softmax_sum=None, softmax_in=None,
                              attention_in=None, scale_value=1., keep_prob=1., pre_tockens=2147483647,
                              next_tockens=2147483647, inner_precise=0, seed=0, offset=0, numels=0, prefix=None,
                              actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True,
                              sync=False, softmax_layout="", sink=None):
    """torch_npu.npu_fusion_attention_grad on the CPU: (dq, dk, dv, dpse, dsink). dpse is never written by the
    operator (NaN here, pse's shape; None without pse); dsink is empty without a sink. keep_prob < 1 fails: the
    NPU regenerates the mask from (seed, offset)."""
    return _run_grad("npu_fusion_attention_grad", (), dict(locals()))


def npu_fusion_attention_v2(query, key, value, head_num, input_layout, *, pse=None, padding_mask=None,
                            atten_mask=None, query_rope=None, key_rope=None, scale=1., keep_prob=1.,
                            pre_tokens=2147483647, next_tokens=2147483647, inner_precise=0, prefix=None,
                            actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True,
                            sync=False, pse_type=1, q_start_idx=None, kv_start_idx=None, softmax_layout="",
                            sink=None, dropout_mask=None, seed=0, offset=0):
    """torch_npu.npu_fusion_attention_v2 (and MindSpeed's npu_fusion_attention, whose arguments are a subset) on
    the CPU: pse_type 0-3, q_start_idx / kv_start_idx, query_rope / key_rope (TND). Returns the 7-tuple of
    npu_fusion_attention; differentiable (query, key, value, query_rope, key_rope, sink)."""
    return _run_forward("npu_fusion_attention_v2", (), dict(locals()))


def npu_fusion_attention_grad_v2(query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None,
                                 atten_mask=None, softmax_max=None, softmax_sum=None, softmax_in=None,
                                 attention_in=None, query_rope=None, key_rope=None, scale_value=1., keep_prob=1.,
                                 pre_tokens=2147483647, next_tokens=2147483647, inner_precise=0, seed=0, offset=0,
                                 numels=0, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
                                 gen_mask_parallel=True, sync=False, pse_type=1, q_start_idx=None,
                                 kv_start_idx=None, softmax_layout="", sink=None):
    """torch_npu.npu_fusion_attention_grad_v2 on the CPU: (dq, dk, dv, dpse, dq_rope, dk_rope, dsink); dq_rope /
    dk_rope are None without rope, dpse as in npu_fusion_attention_grad."""
    return _run_grad("npu_fusion_attention_grad_v2", (), dict(locals()))


def npu_fusion_attention_v3(query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None,
                            scale=1., keep_prob=1., pre_tockens=2147483647, next_tockens=2147483647,
                            inner_precise=0, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None,
                            sparse_mode=0, gen_mask_parallel=True, sync=False, softmax_layout="", sink=None):
    """torch_npu.npu_fusion_attention_v3 on the CPU: actual_seq_qlen / _kvlen as 1-D CPU int tensors; returns
    (attention_out, softmax_max, softmax_sum, softmax_out, seed, offset) with seed / offset int64 [1] CPU tensors.
    No dropout_mask: keep_prob < 1 fails."""
    return _run_forward("npu_fusion_attention_v3", (), dict(locals()))


def npu_fusion_attention_grad_v3(query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None,
                                 atten_mask=None, softmax_max=None, softmax_sum=None, softmax_in=None,
                                 attention_in=None, scale_value=1., keep_prob=1., pre_tockens=2147483647,
                                 next_tockens=2147483647, inner_precise=0, seed=None, offset=None, prefix=None,
                                 actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
                                 gen_mask_parallel=True, sync=False, softmax_layout="", sink=None):
    """torch_npu.npu_fusion_attention_grad_v3 on the CPU: (dq, dk, dv, dpse, dsink); seed / offset as one-element
    CPU int tensors, actual_seq_qlen / _kvlen as tensors."""
    return _run_grad("npu_fusion_attention_grad_v3", (), dict(locals()))


FUNCTIONS = {f.__name__: f for f in (npu_fusion_attention, npu_fusion_attention_grad, npu_fusion_attention_v2,
                                     npu_fusion_attention_grad_v2, npu_fusion_attention_v3,
                                     npu_fusion_attention_grad_v3)}
