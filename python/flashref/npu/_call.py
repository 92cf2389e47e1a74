"""One call of a torch_npu fusion-attention function, as flashref sees it: bound to the function's published
signature, checked as op-plugin checks it, and mapped onto flashref's operator (case-format parameter names,
flashref's statistics layout). flashref.npu's functions compute through it; anything that rebuilds a torch_npu call
from its arguments (a dump reader, a runner) uses the same mapping: bind(api, *args, **kwargs).case().

What torch_npu does that is mapped here (op-plugin's FlashAttentionKernelNpuOpApi.cpp and
FlashAttentionV2KernelNpuOpApi.cpp, the Atlas A2 code paths; docs/ascend.md):
- every TORCH_CHECK on the arguments, in op-plugin's order and with its condition (some compare input_layout before
  upper-casing it, as op-plugin does); the message names the argument;
- keep_prob: within 1e-9 of 1 is no dropout, within 1e-9 of 0 an all-zero drop mask, else the mask comes from
  dropout_mask (the forwards that take one) or from the NPU's (seed, offset) generator, which flashref cannot
  reproduce (DropoutUnreproducible);
- softmax_max / softmax_sum of TND are tensors of shape [T, N1, 8] whatever softmax_layout says: with the default
  layout their memory holds [N1, T, 8] (the kernel writes N1-major into the buffer torch_npu shapes [T, N1, 8]);
  softmax_layout="TND" ("same_as_input") is honoured by npu_fusion_attention[_grad] and _v3, and by the _v2 pair
  only with a sink (A2: the v2 kernels without sink take no softmax layout);
- numels, the length torch_npu reports for its drop mask (its formulas, TND included).
"""

from __future__ import annotations

import math
import re
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .. import _lib as L
from .._arrays import is_torch
from ._schema import ARGS, TYPES, Arg

FORWARDS = ("npu_fusion_attention", "npu_fusion_attention_v2", "npu_fusion_attention_v3")
GRADS = ("npu_fusion_attention_grad", "npu_fusion_attention_grad_v2", "npu_fusion_attention_grad_v3")
GRAD_OF = dict(zip(FORWARDS, GRADS))
MAX_SEQUENCE_LENGTH = 1000000
_EPS = 1e-9
_LAYOUTS = ("BSH", "SBH", "BNSD", "BSND", "TND")


class NpuError(L.FlashrefError, RuntimeError):
    """An argument torch_npu (or the operator underneath it) refuses. A RuntimeError, as torch_npu's TORCH_CHECK
    raises, and a flashref.FlashrefError: .status is the library's status name ("FR_E_BAND"; "FR_E_INVALID_ARG"
    for op-plugin's own checks), .message names the argument with torch_npu's spelling (pse, pre_tockens, ...)."""

    def __init__(self, api: str, message: str, status: int = L.E_INVALID_ARG):
        super().__init__(status, "%s: %s" % (api, message))


class DropoutUnreproducible(NpuError):
    """keep_prob < 1 where the NPU would draw the drop mask from its (seed, offset) Philox generator inside the
    operator: flashref cannot reproduce that generator and refuses rather than draw a different mask."""


def fail(api: str, arg: str, message: str) -> None:
    raise NpuError(api, "%s: %s" % (arg, message))


# --------------------------------------------------------------------------------------------------------------------
# Binding: positional and keyword arguments -> {name: value}, with torch's argument-parser type rules


def _is_tensor(x: Any) -> bool:
    return is_torch(x) or isinstance(x, np.ndarray)


def _is_int(x: Any) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    return isinstance(x, (int, np.integer))


def _int_list(x: Any) -> Optional[List[int]]:
    if isinstance(x, np.ndarray) and x.ndim == 1 and np.issubdtype(x.dtype, np.integer):
        return [int(v) for v in x]
    if isinstance(x, (list, tuple)):
        out = []
        for v in x:
            if is_torch(v) and v.dim() == 0 and not v.is_floating_point() and not v.is_complex():
                v = int(v.item())
            if not _is_int(v):
                return None
            out.append(int(v))
        return out
    return None


def _type_ok(typ: str, v: Any) -> bool:
    if typ.endswith("?") and v is None:
        return True
    base = typ.rstrip("?")
    if base == "Tensor":
        return _is_tensor(v)
    if base == "int":
        return _is_int(v)
    if base == "float":
        return _is_int(v) or isinstance(v, (float, np.floating))
    if base == "bool":
        return isinstance(v, (bool, np.bool_))
    if base == "str":
        return isinstance(v, str)
    if base in ("int[]", "SymInt[]"):
        return _int_list(v) is not None
    raise AssertionError(typ)


def _type_name(v: Any) -> str:
    if is_torch(v):
        return "Tensor"
    return type(v).__name__


def bind_args(api: str, args: tuple, kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """{argument: value} of one call, defaults filled in; TypeError as torch's argument parser raises it (missing,
    unknown or repeated arguments, too many positional ones, a value of the wrong type)."""
    spec: List[Arg] = ARGS[api]
    positional = [a for a in spec if not a.keyword_only]
    if len(args) > len(positional):
        raise TypeError("%s() takes %d positional arguments but %d were given" % (api, len(positional), len(args)))
    out: Dict[str, Any] = {}
    for a, v in zip(positional, args):
        out[a.name] = v
    names = {a.name for a in spec}
    for k, v in kwargs.items():
        if k not in names:
            raise TypeError("%s() got an unexpected keyword argument '%s'" % (api, k))
        if k in out:
            raise TypeError("%s() got multiple values for argument '%s'" % (api, k))
        out[k] = v
    for pos, a in enumerate(spec, 1):
        if a.name not in out:
            if a.default is Arg.REQUIRED:
                raise TypeError("%s() missing required argument '%s' (pos %d)" % (api, a.name, pos))
            out[a.name] = a.default
        v = out[a.name]
        if not _type_ok(a.type, v):
            raise TypeError("%s(): argument '%s' (position %d) must be %s, not %s"
                            % (api, a.name, pos, a.type.replace("?", ""), _type_name(v)))
        if a.type.rstrip("?") in ("int[]", "SymInt[]") and v is not None:
            out[a.name] = _int_list(v)
    return out


# --------------------------------------------------------------------------------------------------------------------
# op-plugin's checks (each TORCH_CHECK of the function, in its order)


def _dim(x: Any) -> int:
    return x.dim() if is_torch(x) else np.ndim(x)


def _check_rank(api: str, a: Dict[str, Any], name: str) -> None:
    d = _dim(a[name])
    if d not in (3, 4):
        fail(api, name, "The shapes of the input %s should be 3 or 4 dimensional, but got %d-dimensional" % (name, d))


def _check_keep_prob(api: str, kp: float) -> None:
    if not (kp > 0 and kp <= 1):
        fail(api, "keep_prob", "The keep_prob value must be in range of (0, 1], but got %s" % _fmt(kp))


def _check_sparse(api: str, layout_as_given: str, sparse_mode: int) -> None:
    # op-plugin compares the layout as given (before upper-casing it): "tnd" takes the non-TND branch there too.
    if layout_as_given == "TND":
        if not (0 <= sparse_mode < 5 or 5 < sparse_mode <= 8):
            fail(api, "sparse_mode", "The sparse_mode value must be in range of [0,5) or (5,8], but got %d"
                 % sparse_mode)
    elif not 0 <= sparse_mode <= 6:
        fail(api, "sparse_mode", "The sparse_mode value must be in range of [0,6], but got %d" % sparse_mode)


def _check_seqlens_given(api: str, qlen: List[int], kvlen: List[int]) -> None:
    if not (qlen and kvlen and len(qlen) == len(kvlen)):
        fail(api, "actual_seq_qlen", "the size of actual_seq_qlen and actual_seq_kvlen must be the same and cannot be "
             "empty (got %d and %d entries)" % (len(qlen), len(kvlen)))


def _check_layout_name(api: str, layout: str) -> str:
    up = layout.upper()
    if up not in _LAYOUTS:
        fail(api, "input_layout", "The input_layout should be BSH/SBH/BNSD/BSND/TND(case-insensitive), but got %s"
             % layout)
    return up


def _check_softmax_layout(api: str, softmax_layout: str, layout: str) -> None:
    if softmax_layout not in ("TND", ""):
        fail(api, "softmax_layout", "only supported softmax_layout=TND (got %r)" % softmax_layout)
    if softmax_layout == "TND" and layout != "TND":
        fail(api, "softmax_layout", "softmax_layout=TND only supported when input_layout_str=TND (input_layout %r)"
             % layout)


def _seq_tensor(api: str, name: str, x: Any) -> List[int]:
    """npu_fusion_attention[_grad]_v3's actual_seq_qlen / _kvlen: a 1-D CPU integer tensor (op-plugin's
    ToIntArrayRef); None or an empty tensor is an empty list."""
    if x is None:
        return []
    if is_torch(x):
        import torch
        if x.device.type != "cpu":
            fail(api, name, "tensor must be on CPU (got a %s tensor)" % x.device.type)
        if x.dim() != 1:
            fail(api, name, "tensor must be 1-dimensional (got %d dimensions)" % x.dim())
        if x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
            fail(api, name, "an integer tensor is needed (got %s)" % x.dtype)
        return [int(v) for v in x.tolist()]
    a = np.asarray(x)
    if a.ndim != 1:
        fail(api, name, "tensor must be 1-dimensional (got %d dimensions)" % a.ndim)
    if not np.issubdtype(a.dtype, np.integer):
        fail(api, name, "an integer tensor is needed (got %s)" % a.dtype)
    return [int(v) for v in a]


def _scalar_tensor(api: str, name: str, x: Any) -> Optional[int]:
    """npu_fusion_attention_grad_v3's seed / offset: one integer element on the CPU (op-plugin's extract_value)."""
    if x is None:
        return None
    if is_torch(x):
        if x.numel() != 1:
            fail(api, name, "Tensor must contain exactly one element (got %d)" % x.numel())
        if x.device.type != "cpu":
            fail(api, name, "Tensor must be on CPU to call .item()")
        if str(x.dtype) not in ("torch.int64", "torch.int32"):
            fail(api, name, "Expected integer dtype, got %s" % x.dtype)
        return int(x.item())
    a = np.asarray(x)
    if a.size != 1 or a.dtype not in (np.int64, np.int32):
        fail(api, name, "Tensor must contain exactly one int32/int64 element (got %s %s)" % (a.shape, a.dtype))
    return int(a.reshape(-1)[0])


def _fmt(x: float) -> str:
    return ("%g" % x) if math.isfinite(x) else str(x)


# --------------------------------------------------------------------------------------------------------------------
# The call


def _numels(query: Any, key: Any, head_num: int, layout: str, qlen: List[int], kvlen: List[int]) -> int:
    """The drop-mask length torch_npu computes and returns (numels), by its formulas."""
    q, k = tuple(query.shape), tuple(key.shape)
    if layout == "TND":
        if not qlen or not kvlen:
            return 0
        acc = qlen[0] * kvlen[0]
        for i in range(1, min(len(qlen), len(kvlen))):
            acc += (qlen[i] - qlen[i - 1]) * (kvlen[i] - kvlen[i - 1])
        return q[1] * acc
    if layout == "BSH":
        return q[0] * head_num * q[1] * k[1]
    if layout == "SBH":
        return q[1] * head_num * q[0] * k[0]
    if layout == "BNSD":
        return q[0] * q[1] * q[2] * k[2]
    return q[0] * q[2] * q[1] * k[1]  # BSND


class NpuCall:
    """A torch_npu fusion-attention call mapped onto flashref's operator.

    api: the torch_npu function ("npu_fusion_attention", "npu_fusion_attention_grad_v2", ...); op: "fwd" / "bwd";
    args: every argument by its torch_npu name, defaults filled in; params: the operator's parameters under the
    case-format names (head_num, input_layout, scale_value, keep_prob, pre_tokens, next_tokens, inner_precise,
    sparse_mode, pse_type, prefix, actual_seq_qlen, actual_seq_kvlen, q_start_idx, kv_start_idx, out_dtype,
    softmax_layout); inputs: the tensors under the case-format names (query, key, value, real_shift, atten_mask,
    drop_mask, sink, query_rope, key_rope; backward also dy, attention_in, and softmax_max / softmax_sum already in
    flashref's layout); seed, offset, numels: what torch_npu reports for the drop mask; unreproducible: None, or why
    the call cannot be computed off the NPU (a drop mask only the NPU's generator knows)."""

    def __init__(self, api: str, args: Dict[str, Any]):
        self.api, self.args = api, args
        self.op = "bwd" if api in GRADS else "fwd"
        self.v2 = api.endswith("_v2")
        self.v3 = api.endswith("_v3")
        self.unreproducible: Optional[str] = None
        self._check()
        self._map()

    # -- op-plugin's checks -------------------------------------------------------------------------------------

    def _check(self) -> None:
        api, a = self.api, self.args
        for name, typ in TYPES[api].items():
            x = a[name]
            if typ.startswith("Tensor") and is_torch(x) and x.device.type != "cpu":
                # op-plugin refuses a tensor off the NPU; off the NPU there is only the CPU
                fail(api, name, "Expected all tensors to be on the same device: a %s tensor, and flashref.npu "
                     "computes on the CPU (no device tensors)" % x.device.type)
        if self.v3:
            self.qlen = _seq_tensor(api, "actual_seq_qlen", a["actual_seq_qlen"])
            self.kvlen = _seq_tensor(api, "actual_seq_kvlen", a["actual_seq_kvlen"])
        else:
            self.qlen, self.kvlen = a["actual_seq_qlen"] or [], a["actual_seq_kvlen"] or []
        layout, sl = a["input_layout"], a["softmax_layout"]
        if self.op == "fwd":
            if a["head_num"] <= 0:
                fail(api, "head_num", "head_num must > 0, but got %d" % a["head_num"])
            names = ["query", "query_rope", "key", "key_rope", "value"] if self.v2 else ["query", "key", "value"]
        else:
            names = ["query", "query_rope", "key", "key_rope", "value", "dy"] if self.v2 else \
                ["query", "key", "value", "dy"]
        for n in names:
            if a.get(n) is not None:
                _check_rank(api, a, n)
            if n == "key_rope" and self.op == "fwd" and a.get(n) is not None and not (self.qlen and self.kvlen):
                # Atlas A2: rope runs only on the varlen (TND) kernel.
                fail(api, "key_rope", "the size of actual_seq_qlen and actual_seq_kvlen cannot be empty (query_rope / "
                     "key_rope need the TND path)")
        _check_keep_prob(api, float(a["keep_prob"]))
        if not layout:
            fail(api, "input_layout", "The input_layout is empty" if self.v2 else "input_layout is empty")
        if self.op == "fwd" and not self.v2:
            _check_softmax_layout(api, sl, layout)
        _check_sparse(api, layout, a["sparse_mode"])
        if self.op == "fwd" and layout == "TND":
            _check_seqlens_given(api, self.qlen, self.kvlen)
        self.layout = _check_layout_name(api, layout)
        if self.op == "fwd" and self.v2:
            _check_softmax_layout(api, sl, self.layout)
            for i in range(len(self.qlen)):
                kv = self.kvlen[i] if i < len(self.kvlen) else 0
                if self.qlen[i] > MAX_SEQUENCE_LENGTH or kv > MAX_SEQUENCE_LENGTH:
                    fail(api, "actual_seq_qlen", "The sequence length should not greater than 1M, but got q%d kv%d"
                         % (self.qlen[i], kv))
        if a.get("padding_mask") is not None:
            # Documented "not supported"; the operator never reads it. Refused rather than silently ignored.
            fail(api, "padding_mask", "not supported (torch_npu documents padding_mask as unsupported; the operator "
                 "does not read it)")
        self.tnd = bool(self.qlen and self.kvlen)
        if self.op == "bwd":
            # The backward checks softmax_layout only on the varlen path, and only without a sink there.
            if self.tnd and sl not in ("", "TND"):
                fail(api, "softmax_layout", "The param softmax_layout is not supported (got %r)" % sl)
            if self.v3:
                self.seed_in = _scalar_tensor(api, "seed", a["seed"])
                self.offset_in = _scalar_tensor(api, "offset", a["offset"])

    # -- the mapping --------------------------------------------------------------------------------------------

    # Alike src/verify/cases/npu_call.c:build (with _check, stats_from_npu, outputs_from_npu, grad_call): kept apart
    # because the command line reads msprobe dumps without Python; the schemas are one copy (the library's), and
    # tests/python_pkg/test_msprobe.py requires both to give the same case for every call of msprobe-written dumps.
    def _map(self) -> None:
        a = self.args
        fwd = self.op == "fwd"
        pre = a["pre_tokens"] if self.v2 else a["pre_tockens"]
        nxt = a["next_tokens"] if self.v2 else a["next_tockens"]
        # Which kernels honour softmax_layout="TND" on Atlas A2 (see the module docstring).
        same = self.tnd and a["softmax_layout"] == "TND" and (not self.v2 or a["sink"] is not None)
        self.stats_layout = "same_as_input" if same else ""
        qs, kvs = a.get("q_start_idx"), a.get("kv_start_idx")
        self.params: Dict[str, Any] = dict(
            head_num=a["head_num"], input_layout=self.layout, scale_value=float(a["scale"] if fwd else
                                                                                a["scale_value"]),
            keep_prob=float(a["keep_prob"]), pre_tokens=int(pre), next_tokens=int(nxt),
            inner_precise=a["inner_precise"], sparse_mode=a["sparse_mode"], pse_type=a.get("pse_type", 1),
            prefix=a["prefix"] or None, actual_seq_qlen=self.qlen or None, actual_seq_kvlen=self.kvlen or None,
            q_start_idx=qs[0] if qs else 0, kv_start_idx=kvs[0] if kvs else 0, out_dtype=None,
            softmax_layout=self.stats_layout)
        q, k = a["query"], a["key"]
        if fwd:
            self.numels = _numels(q, k, a["head_num"], self.layout, self.qlen, self.kvlen)
            self.seed, self.offset = (0, 0) if self.v3 else (a["seed"], a["offset"])
        else:
            self.numels = 0 if self.v3 else a["numels"]
            self.seed, self.offset = (self.seed_in, self.offset_in) if self.v3 else (a["seed"], a["offset"])
        inputs = {"query": q, "key": k, "value": a["value"], "real_shift": a["pse"], "atten_mask": a["atten_mask"],
                  "sink": a["sink"], "query_rope": a.get("query_rope"), "key_rope": a.get("key_rope")}
        kp = float(a["keep_prob"])
        mask = a.get("dropout_mask")
        if abs(kp - 1.0) < _EPS:
            self.dropout = "none"
            self.params["keep_prob"] = 1.0
        elif mask is not None:
            self.dropout = "mask"
            inputs["drop_mask"] = mask
        elif abs(kp) < _EPS:
            # torch_npu passes an all-zero mask (of the given numels in the grads: at least as long as needed here)
            self.dropout = "all"
            n = max(_numels(q, k, a["head_num"], self.layout, self.qlen, self.kvlen), self.numels)
            inputs["drop_mask"] = _zeros_u8(q, (n + 127) // 128 * 128 // 8 + 32)
        else:
            self.dropout = "generated"
            self.unreproducible = (
                "keep_prob = %s < 1 without a drop mask: the NPU draws it inside the operator from (seed, offset) "
                "with its Philox generator, which flashref cannot reproduce; %s" % (
                    _fmt(kp), "pass the mask as dropout_mask= (e.g. from torch_npu._npu_dropout_gen_mask on the "
                    "NPU)" if fwd and not self.v3 else "this function takes no drop mask: compute the gradient "
                    "through autograd of the forward called with dropout_mask="))
        if not fwd:
            inputs.update(dy=a["dy"], attention_in=a["attention_in"],
                          softmax_max=self.stats_from_npu(a["softmax_max"]),
                          softmax_sum=self.stats_from_npu(a["softmax_sum"]))
        self.inputs = {n: t for n, t in inputs.items() if t is not None}

    # -- layouts ------------------------------------------------------------------------------------------------

    def _tn(self) -> Tuple[int, int]:
        q = self.args["query"]
        return int(q.shape[0]), int(q.shape[1])

    def stats_to_npu(self, x: Any) -> Any:
        """flashref's softmax_max / softmax_sum -> the tensor torch_npu returns: TND with the default layout holds
        [N1, T, 8] in memory but has the shape [T, N1, 8]."""
        if x is None or self.layout != "TND" or self.stats_layout:
            return x
        t, n = self._tn()
        return x.reshape(t, n, 8)

    def stats_from_npu(self, x: Any) -> Any:
        """A softmax_max / softmax_sum as torch_npu holds it -> flashref's layout (the inverse of stats_to_npu; any
        tensor with the right number of elements is read as the NPU reads its memory)."""
        if x is None or self.layout != "TND" or self.stats_layout:
            return x
        t, n = self._tn()
        if int(np.prod(x.shape)) != t * n * 8:
            return x                  # flashref's validation names the shape
        c = x.contiguous() if is_torch(x) else np.ascontiguousarray(x)
        return c.reshape(n, t, 8)

    def outputs_from_npu(self, outputs: Any) -> Dict[str, Any]:
        """torch_npu's output tuple of this call -> {case-format output name: tensor} in flashref's layouts
        (forward: attention_out, softmax_max, softmax_sum; backward: dq, dk, dv, and dq_rope / dk_rope / dsink when
        the call has rope / sink)."""
        o = list(outputs)
        if self.op == "fwd":
            return {"attention_out": o[0], "softmax_max": self.stats_from_npu(o[1]),
                    "softmax_sum": self.stats_from_npu(o[2])}
        res = {"dq": o[0], "dk": o[1], "dv": o[2]}
        if self.v2:
            if "query_rope" in self.inputs:
                res.update(dq_rope=o[4], dk_rope=o[5])
            if "sink" in self.inputs:
                res["dsink"] = o[6]
        elif "sink" in self.inputs:
            res["dsink"] = o[4]
        return res

    def grad_call(self, dy: Any, outputs: Any) -> "NpuCall":
        """The grad call torch_npu's autograd makes for this forward call (op-plugin's derivatives.yaml): dy is the
        gradient of attention_out, outputs the forward's output tuple (attention_in, softmax statistics, seed,
        offset, numels come from it). A reader of a dump that holds a forward and its output gradient rebuilds the
        backward with it. Like the NPU's, that call regenerates the drop mask: keep_prob < 1 is unreproducible."""
        if self.op != "fwd":
            raise ValueError("grad_call: %s is not a forward" % self.api)
        o = list(outputs)
        grad = GRAD_OF[self.api]
        kw = {n: self.args[n] for n in TYPES[grad] if n in self.args and n not in ("seed", "offset", "scale")}
        kw.update(dy=dy, softmax_max=o[1], softmax_sum=o[2], softmax_in=o[3], attention_in=o[0],
                  scale_value=self.args["scale"], seed=o[4], offset=o[5])
        if not self.v3:
            kw["numels"] = o[6]
        return bind(grad, **kw)

    # -- flashref -----------------------------------------------------------------------------------------------

    def require_reproducible(self) -> None:
        if self.unreproducible:
            raise DropoutUnreproducible(self.api, self.unreproducible, L.STATUS["FR_E_DROPOUT"])

    def flashref_kwargs(self) -> Dict[str, Any]:
        """Keyword arguments of flashref.attention / attention_backward for this call (query, key, value and the
        backward's dy, attention_in, softmax_max, softmax_sum excluded)."""
        p = self.params
        kw = dict(input_layout=p["input_layout"], head_num=p["head_num"], scale=p["scale_value"],
                  keep_prob=p["keep_prob"], pre_tokens=p["pre_tokens"], next_tokens=p["next_tokens"],
                  inner_precise=p["inner_precise"], sparse_mode=p["sparse_mode"], pse_type=p["pse_type"],
                  prefix=p["prefix"], actual_seq_qlen=p["actual_seq_qlen"], actual_seq_kvlen=p["actual_seq_kvlen"],
                  q_start_idx=p["q_start_idx"], kv_start_idx=p["kv_start_idx"],
                  softmax_layout=p["softmax_layout"] or None)
        names = {"real_shift": "pse"}
        for n in ("real_shift", "atten_mask", "drop_mask", "sink", "query_rope", "key_rope"):
            if n in self.inputs:
                kw[names.get(n, n)] = self.inputs[n]
        return kw

    def case(self, name: str = "npu_call"):
        """This call as a flashref.Case (case-format parameters and input names, flashref's statistics layout):
        flashref.verify / Case.attention() judge and compute it like any suite case. dtype: the query's."""
        from .._verify import Case
        self.require_reproducible()
        dt = str(self.args["query"].dtype).replace("torch.", "")
        dtype = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(dt, dt)
        return Case(name, "npu", self.op, dtype, dict(self.params), dict(self.inputs))


def _zeros_u8(like: Any, n: int) -> Any:
    if is_torch(like):
        import torch
        return torch.zeros(n, dtype=torch.uint8)
    return np.zeros(n, dtype=np.uint8)


def bind(api: str, *args: Any, **kwargs: Any) -> NpuCall:
    """One call of torch_npu's `api` (npu_fusion_attention, npu_fusion_attention_grad, npu_fusion_attention_v2,
    npu_fusion_attention_grad_v2, npu_fusion_attention_v3, npu_fusion_attention_grad_v3) with torch_npu's
    positional and keyword arguments: bound, checked as op-plugin checks it (TypeError / NpuError), and mapped onto
    flashref (NpuCall). Tensors: CPU torch tensors or numpy arrays."""
    if api not in ARGS:
        raise ValueError("api: %r (expected one of %s)" % (api, ", ".join(ARGS)))
    return NpuCall(api, bind_args(api, args, kwargs))


# flashref's parameter names -> torch_npu's, for the library's messages (which start with the parameter's name).
_RENAME_V1 = {"real_shift": "pse", "drop_mask": "dropout_mask", "pre_tokens": "pre_tockens",
              "next_tokens": "next_tockens", "prefix_len": "prefix", "actual_seq_len": "actual_seq_qlen"}


def rename(call_api: str, message: str) -> str:
    """A flashref message with torch_npu's argument names (pse, pre_tockens, scale, ...)."""
    table = dict(_RENAME_V1)
    if call_api.endswith("_v2"):
        table.update(pre_tokens="pre_tokens", next_tokens="next_tokens")
    table["scale_value"] = "scale_value" if call_api in GRADS else "scale"
    return re.sub(r"\b(%s)\b" % "|".join(table), lambda m: table[m.group(1)], message)
