"""torch integration: flashref.torch.attention as a torch.autograd.Function (fast engine by default, so a model can
train on flashref's CPU attention), and sdpa, a verifier-ready wrapper of torch.nn.functional.
scaled_dot_product_attention for flashref.verify."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np
import torch as _torch

from . import _lib as L
from ._ops import attention as _fwd, attention_backward as _bwd

# Differentiable inputs besides query, key, value: the operator's backward returns their gradients (dq_rope, dk_rope,
# dsink). pse travels as one too, only so that a pse needing a gradient fails loudly: the operator has no dpse (spec
# 8.1), and a silently missing gradient would train a learnable bias on nothing.
_EXTRA = ("query_rope", "key_rope", "sink", "pse")


class _Attention(_torch.autograd.Function):
    @staticmethod
    def forward(ctx, kw: Dict[str, Any], query, key, value, query_rope, key_rope, sink, pse):  # type: ignore[override]
        engine = kw.get("engine", "fast")
        golden64 = engine == "golden" and query.dtype == _torch.float64
        extra = dict(zip(_EXTRA, (query_rope, key_rope, sink, pse)))
        if golden64:
            # The golden reads fp32 inputs and writes fp64 outputs: fp64 tensors must hold fp32 values exactly
            # (gradcheck with small dyadic inputs and eps 2^-10 does).
            q, k, v = (_fp32_exact(t, n) for t, n in ((query, "query"), (key, "key"), (value, "value")))
            extra = {n: None if t is None else _fp32_exact(t, n) if t.dtype == _torch.float64 else t.detach()
                     for n, t in extra.items()}
            res = _fwd(q, k, v, out_precision="fp64", **extra, **kw)
        else:
            q, k, v = query.detach(), key.detach(), value.detach()
            extra = {n: None if t is None else t.detach() for n, t in extra.items()}
            res = _fwd(q, k, v, **extra, **kw)
        ctx.kw, ctx.golden64, ctx.extra = kw, golden64, extra
        ctx.save_for_backward(q, k, v, res.out, res.softmax_max, res.softmax_sum)
        ctx.mark_non_differentiable(res.softmax_max, res.softmax_sum)
        return res.out, res.softmax_max, res.softmax_sum

    @staticmethod
    def backward(ctx, dout, dmax, dsum):  # type: ignore[override]
        if ctx.needs_input_grad[7]:
            raise RuntimeError("pse: the operator computes no gradient for pse (FlashAttentionScoreGrad's dpse is "
                               "documented 'not used', operator-spec 8.1); pass pse.detach() or a pse that does not "
                               "require grad")
        q, k, v, out, m, l = ctx.saved_tensors
        if ctx.golden64:
            dy, o_in = _fp32_exact(dout, "grad_output"), out.to(_torch.float32)
            g = _bwd(q, k, v, dy, o_in, m, l, out_precision="fp64", **ctx.extra, **ctx.kw)
        else:
            g = _bwd(q, k, v, dout.contiguous().to(out.dtype), out, m, l, **ctx.extra, **ctx.kw)
        return None, g.dq, g.dk, g.dv, g.dq_rope, g.dk_rope, g.dsink, None


def _fp32_exact(t, name: str):
    f = t.detach().to(_torch.float32)
    if not _torch.equal(f.to(t.dtype), t.detach()):
        raise ValueError("%s: fp64 values that fp32 cannot hold exactly (the golden reads fp32 inputs)" % name)
    return f


def attention(query, key, value, *, input_layout: str, head_num: int, scale: float = 1.0,
              engine: str = "fast", query_rope=None, key_rope=None, sink=None, pse=None,
              **kw: Any) -> Tuple[Any, Any, Any]:
    """Differentiable FlashAttentionScore on CPU torch tensors: returns (out, softmax_max, softmax_sum); gradients
    flow to query, key and value, and to query_rope, key_rope and sink when given, through flashref's backward on
    the same engine ("fast"; "golden" with fp64 tensors holding fp32 values, for torch.autograd.gradcheck). A pse
    that requires grad fails in backward (the operator has no dpse). Other keyword arguments as flashref.attention
    (masks, drop_mask, sparse modes, ...: not differentiated)."""
    kw = dict(kw, input_layout=input_layout, head_num=head_num, scale=scale, engine=engine)
    return _Attention.apply(kw, query, key, value, query_rope, key_rope, sink, pse)


# ---------------------------------------------------------------------------------------------------------------------
# PyTorch's SDPA as an implementation under test


def softmax_stats(q, k, scale: float, masked: Optional[Any], n1: int) -> Tuple[Any, Any]:
    """The operator's softmax_max / softmax_sum ([B,N1,S1,8] fp32) of BNSD q [B,N1,S1,D] and k [B,N2,S2,D]: the
    row max of the scaled scores and the sum of exp(x - max) over the positions that take part, in fp32. Fully
    masked rows get D1's pair (-FLT_MAX, FLT_MAX)."""
    g = n1 // k.shape[1]
    kk = k.float().repeat_interleave(g, dim=1) if g > 1 else k.float()
    x = (q.float() @ kk.transpose(-1, -2)) * scale
    if masked is not None:
        x = x.masked_fill(masked, float("-inf"))
    m = x.amax(dim=-1) if x.shape[-1] else x.new_full(x.shape[:-1], float("-inf"))
    dead = _torch.isneginf(m)
    fm = float(np.finfo(np.float32).max)
    l = _torch.exp(x - _torch.where(dead, _torch.zeros_like(m), m)[..., None]).sum(dim=-1)
    m = _torch.where(dead, _torch.full_like(m, -fm), m)
    l = _torch.where(dead, _torch.full_like(l, fm), l)
    rep = lambda t: t[..., None].expand(*t.shape, 8).contiguous()  # noqa: E731
    return rep(m), rep(l)


def sdpa(case) -> Tuple[Any, Any, Any]:
    """torch.nn.functional.scaled_dot_product_attention on one flashref.Case (verify(..., tensors="torch")):
    forward cases of BNSD/BSND/BSH/SBH, fp32/fp16/bf16, GQA, sparse modes 0-4 with their masks; the softmax
    statistics SDPA does not return are computed in fp32 from the same q and k. Anything else is Unsupported."""
    case.require(op="fwd", allow=("atten_mask",))
    q, k, v = (case.bnsd(n) for n in ("query", "key", "value"))
    if not isinstance(q, _torch.Tensor):
        raise TypeError("sdpa: run flashref.verify(..., tensors='torch')")
    n1, n2, _ = case.heads()
    masked = case.dense_mask()
    masked = None if masked is None else _torch.from_numpy(np.ascontiguousarray(masked))
    out = _torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=None if masked is None else ~masked, scale=case.scale, enable_gqa=n1 != n2)
    m, l = softmax_stats(q, k, case.scale, masked, n1)
    return case.from_bnsd(out), m, l


_ = L
