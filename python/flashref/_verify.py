"""flashref.verify: the verifier's suites in-process against a Python callable (a callback implementation under
test, include/flashref_verify.h), judged by the same judge as `flashref suite`."""

from __future__ import annotations

import ctypes as C
import json
import os
import traceback
from typing import Any, Callable, Dict, Iterator, List, Optional, Union

import numpy as np

from . import _lib as L
from ._arrays import from_view, numpy_dtype, shape_of, to_numpy, to_torch, dtype_code
from ._ops import attention, attention_backward

FLT_MAX = float(np.finfo(np.float32).max)
_PARAMS = ("head_num", "input_layout", "scale_value", "keep_prob", "pre_tokens", "next_tokens", "inner_precise",
           "sparse_mode", "pse_type", "prefix", "actual_seq_qlen", "actual_seq_kvlen", "q_start_idx", "kv_start_idx",
           "out_dtype", "softmax_layout")
_BWD_ONLY = ("dy", "attention_in", "softmax_max", "softmax_sum")
INPUTS = tuple(L.FWD_INPUTS) + _BWD_ONLY
FWD_OUTPUTS = ("attention_out", "softmax_max", "softmax_sum")


def _i64s(ptr, n: int) -> Optional[List[int]]:
    return [int(ptr[k]) for k in range(n)] if ptr else None


class Case:
    """One case of a suite: its parameters as attributes (name, category, op "fwd"/"bwd", dtype "bf16", and the
    operator's params: head_num, input_layout, scale_value (also .scale), keep_prob, pre_tokens, next_tokens,
    inner_precise, sparse_mode, pse_type, prefix, actual_seq_qlen, actual_seq_kvlen, q_start_idx, kv_start_idx,
    out_dtype, softmax_layout) and its tensors in .inputs (names of case-format.md: query, key, value, real_shift,
    atten_mask, drop_mask, d_scale_q/k/v, query_rope, key_rope, sink, topk_indices; backward also dy, attention_in,
    softmax_max, softmax_sum), also as attributes (None when absent). Tensors are numpy arrays (bf16/fp8 as
    ml_dtypes, hif8 as uint8 bit patterns; read-only views valid during the call only) or torch tensors (copies)."""

    def __init__(self, name: str, category: str, op: str, dtype: str, params: Dict[str, Any],
                 inputs: Dict[str, Any]):
        self.name, self.category, self.op, self.dtype = name, category, op, dtype
        self.params = params
        self.inputs = inputs
        for k, v in params.items():
            setattr(self, k, v)
        self.scale = params["scale_value"]

    def __getattr__(self, key: str) -> Any:
        # Only reached when normal lookup fails: the inputs live in self.inputs (case.query was always None).
        if key in INPUTS:
            return self.__dict__.get("inputs", {}).get(key)
        raise AttributeError(key)

    def __repr__(self) -> str:
        shapes = ", ".join("%s%s" % (k, tuple(v.shape)) for k, v in self.inputs.items())
        return "Case(%r, %s %s %s, %s)" % (self.name, self.op, self.dtype, self.input_layout, shapes)

    # -- construction -------------------------------------------------------------------------------------------

    @classmethod
    def _from_c(cls, vc: L.VerifyCase, tensors: str) -> "Case":
        p = vc.params.contents
        nseq = int(p.actual_seq_len)
        params = dict(
            head_num=int(p.head_num), input_layout=L.LAYOUTS[p.input_layout], scale_value=float(p.scale_value),
            keep_prob=float(p.keep_prob), pre_tokens=int(p.pre_tokens), next_tokens=int(p.next_tokens),
            inner_precise=int(p.inner_precise), sparse_mode=int(p.sparse_mode), pse_type=int(p.pse_type),
            prefix=_i64s(p.prefix, int(p.prefix_len)), actual_seq_qlen=_i64s(p.actual_seq_qlen, nseq),
            actual_seq_kvlen=_i64s(p.actual_seq_kvlen, nseq), q_start_idx=int(p.q_start_idx),
            kv_start_idx=int(p.kv_start_idx),
            out_dtype=None if p.out_dtype == L.DT_NONE else L.DTYPE_NAMES[p.out_dtype],
            softmax_layout="same_as_input" if p.softmax_layout == 1 else "")
        bi = vc.inputs.contents
        inputs: Dict[str, Any] = {}
        for n in L.FWD_INPUTS:
            a = from_view(getattr(bi.fwd, n))
            if a is not None:
                inputs[n] = a
        if vc.op == 1:
            for n in _BWD_ONLY:
                a = from_view(getattr(bi, n))
                if a is not None:
                    inputs[n] = a
        if tensors == "torch":
            inputs = {k: to_torch(v) for k, v in inputs.items()}
        return cls((vc.name or b"").decode(), (vc.category or b"").decode(), "bwd" if vc.op == 1 else "fwd",
                   L.DTYPE_NAMES[vc.dtype], params, inputs)

    @classmethod
    def from_dir(cls, path: str, tensors: str = "numpy") -> "Case":
        """A case directory (case-format.md): case.json and its .npy inputs (bit-pattern files resolved from the
        case's dtype), as the exec protocol hands it to a runner."""
        with open(os.path.join(path, "case.json")) as f:
            cj = json.load(f)
        dtype = cj["dtype"]
        p = dict(cj["params"])
        p["input_layout"] = str(p["input_layout"]).upper()
        p.setdefault("softmax_layout", "")
        inputs = {}
        narrow = dtype_code(dtype)
        out_code = dtype_code(p.get("out_dtype")) if p.get("out_dtype") else None
        for n, fn in cj["inputs"].items():
            a = np.load(os.path.join(path, fn), allow_pickle=False)
            if a.dtype in (np.uint16, np.uint8) and n in ("query", "key", "value", "query_rope", "key_rope"):
                a = a.view(numpy_dtype(narrow))
            elif a.dtype in (np.uint16, np.uint8) and n in ("dy", "attention_in"):
                a = a.view(numpy_dtype(out_code or narrow))
            elif a.dtype == np.uint16 and n == "real_shift":
                a = a.view(numpy_dtype(L.BF16))
            inputs[n] = to_torch(a) if tensors == "torch" else a
        return cls(os.path.basename(os.path.normpath(path)), "", cj["op"], dtype,
                   {k: p.get(k) for k in _PARAMS}, inputs)

    # -- computing it ---------------------------------------------------------------------------------------------

    def kwargs(self) -> Dict[str, Any]:
        """The keyword arguments of flashref.attention / attention_backward for this case (tensors included, q/k/v
        excluded)."""
        kw = {k: v for k, v in self.params.items() if k != "scale_value"}
        kw["scale"] = self.params["scale_value"]
        kw["softmax_layout"] = self.params.get("softmax_layout") or None
        for n in L.FWD_INPUTS[3:]:
            if n in self.inputs:
                kw["pse" if n == "real_shift" else n] = self.inputs[n]
        if self.dtype == "hif8":
            kw["dtype"] = "hif8"
        return kw

    def attention(self, **overrides: Any):
        """Runs this case through flashref (engine="fast" unless overridden): forward -> AttentionOutput, backward
        -> Gradients."""
        kw = self.kwargs()
        kw.update(overrides)
        q, k, v = self.inputs["query"], self.inputs["key"], self.inputs["value"]
        if self.op == "fwd":
            return attention(q, k, v, **kw)
        return attention_backward(q, k, v, self.inputs["dy"], self.inputs["attention_in"], self.inputs["softmax_max"],
                                  self.inputs["softmax_sum"], **kw)

    # -- helpers for dense implementations (SDPA and the like) ----------------------------------------------------

    def require(self, *, op: Optional[str] = None, dtypes=("fp32", "fp16", "bf16"),
                layouts=("BNSD", "BSND", "BSH", "SBH"), allow=()) -> None:
        """Raises Unsupported unless the case is of op / dtypes / layouts and uses no input beyond query/key/value
        and those named in allow (e.g. allow=("atten_mask",)); dropout and out_dtype changes count as inputs."""
        if op is not None and self.op != op:
            raise L.Unsupported("op %s" % self.op)
        if self.dtype not in dtypes:
            raise L.Unsupported("dtype %s" % self.dtype)
        if self.input_layout not in layouts:
            raise L.Unsupported("layout %s" % self.input_layout)
        extra = [n for n in L.FWD_INPUTS[3:] if n in self.inputs and n not in allow]
        if extra:
            raise L.Unsupported("input %s" % extra[0])
        if self.keep_prob != 1.0:
            raise L.Unsupported("dropout")
        if self.out_dtype not in (None, self.dtype):
            raise L.Unsupported("out_dtype %s" % self.out_dtype)

    def heads(self) -> tuple:
        """(N1, N2, D) of a BNSD/BSND/BSH/SBH case."""
        q, k = self.inputs["query"], self.inputs["key"]
        n1 = self.head_num
        if self.input_layout in ("BSH", "SBH"):
            d = q.shape[2] // n1
            return n1, k.shape[2] // d, d
        return n1, (k.shape[1] if self.input_layout == "BNSD" else k.shape[2]), q.shape[-1]

    def bnsd(self, name: str):
        """Input `name` (query/key/value/dy/attention_in) as [B, N, S, D] (a view: transposes and reshapes only)."""
        x = self.inputs[name]
        n1, n2, _ = self.heads()
        n = n2 if name in ("key", "value") else n1
        lay = self.input_layout
        if lay == "BNSD":
            return x
        if lay == "BSND":
            return x.permute(0, 2, 1, 3) if hasattr(x, "permute") else x.transpose(0, 2, 1, 3)
        a, b, h = x.shape
        y = x.reshape(a, b, n, h // n)
        if lay == "BSH":
            return y.permute(0, 2, 1, 3) if hasattr(y, "permute") else y.transpose(0, 2, 1, 3)
        return y.permute(1, 2, 0, 3) if hasattr(y, "permute") else y.transpose(1, 2, 0, 3)  # SBH

    def from_bnsd(self, x):
        """[B, N, S, D] -> the case's layout (contiguous)."""
        b, n, s, d = x.shape
        lay = self.input_layout
        perm = {"BNSD": None, "BSND": (0, 2, 1, 3), "BSH": (0, 2, 1, 3), "SBH": (2, 0, 1, 3)}[lay]
        if perm is not None:
            x = x.permute(*perm) if hasattr(x, "permute") else x.transpose(*perm)
        if lay == "BSH":
            x = x.reshape(b, s, n * d)
        elif lay == "SBH":
            x = x.reshape(s, b, n * d)
        return x.contiguous() if hasattr(x, "contiguous") else np.ascontiguousarray(x)

    # Alike tests/python/ref_attention.py:sparse_masked: kept apart because that one is the tests' independent
    # reference, written from the spec, that this package is checked against.
    # Alike examples/python_runner/run_case.py:Problem.mask: kept apart because the example is self-contained (numpy
    # only, no flashref package) so that a user can copy it.
    def dense_mask(self) -> Optional[np.ndarray]:
        """The positions that do not take part, True = masked, as a bool array [B|1, N1|1, S1, S2] (numpy), for
        sparse modes 0-4 (spec 4): None when nothing is masked. Other modes raise Unsupported."""
        q, k = self.bnsd("query"), self.bnsd("key")
        s1, s2 = q.shape[2], k.shape[2]
        mask = self.inputs.get("atten_mask")
        if mask is None:
            return None
        mask = to_numpy(mask).astype(bool)
        mode, pre, nxt = self.sparse_mode, self.pre_tokens, self.next_tokens
        i, j = np.arange(s1)[:, None], np.arange(s2)[None, :]
        if mode in (0, 1):
            m = mask[None, None] if mask.ndim == 2 else mask
            m = m[:, :, :s1, :s2]
            if mode == 0:
                m = m | (((j - i) > nxt) | ((i - j) > pre))[None, None]
            return m
        if mode == 2:
            f = j > i
        elif mode == 3:
            f = j > i + (s2 - s1)
        elif mode == 4:
            f = ((j - i) > nxt + (s2 - s1)) | ((i - j) > pre - (s2 - s1))
        else:
            raise L.Unsupported("sparse_mode %d" % mode)
        return f[None, None]


# ---------------------------------------------------------------------------------------------------------------------
# Results


class CaseResult:
    """One case's verdict: name, category, verdict ("PASS"/"WARN"/"FAIL"/"SKIP"), diagnosis ("none", "stale-max",
    ...), why (the numbers that decided it), op, dtype, S1, S2, seconds, and outputs: {output name: {"iut": metrics,
    "ideal": metrics, "bound_rel_l2", "bound_abs", "ratio"}} with metrics dicts (rel_l2, max_abs, gain_rms,
    noise_floor, ...). error: the traceback when the callable raised."""

    def __init__(self, d: Dict[str, Any], error: Optional[str] = None):
        self.raw = d
        self.name, self.category = d["name"], d["category"]
        self.verdict, self.diagnosis, self.why = d["verdict"], d["diagnosis"], d["why"]
        self.op, self.dtype = d["op"], d["dtype"]
        self.S1, self.S2, self.seconds = d["S1"], d["S2"], d["seconds"]
        self.outputs: Dict[str, Any] = d.get("outputs", {})
        self.extra: str = d.get("extra", "")
        self.error = error

    def metric(self, output: str, name: str = "rel_l2", of: str = "iut") -> float:
        """A number of one output: metric(“attention_out”, "rel_l2") (of="ideal": the ideal pipeline's)."""
        v = self.outputs[output][of][name]
        return float(v) if not isinstance(v, str) else float(v.replace("inf", "Inf").lower())

    def __repr__(self) -> str:
        return "CaseResult(%r, %s, %s: %s)" % (self.name, self.verdict, self.diagnosis, self.why)


class VerifyResult:
    """The result of flashref.verify: .overall ("PASS"/"WARN"/"FAIL"/"SKIP"), .passed (no FAIL and at least one
    case judged), .cases (CaseResult list), .verdicts ({name: verdict}), .diagnosis (the likeliest cause shared by
    the failing cases), .counts ({category: {verdict: n}}), .seconds; .to_json() is `flashref suite --json`'s text,
    .report("out.html") its HTML report."""

    def __init__(self, handle: C.c_void_p, errors: Dict[str, str]):
        self._h = handle
        self._json = self._fetch_json()
        d = json.loads(self._json)
        self.data = d
        self.overall: str = d["overall"]
        self.diagnosis: str = d["primary_diagnosis"]
        self.seconds: float = float(d["seconds"])
        self.counts: Dict[str, Dict[str, int]] = d["summary"]
        self.cases = [CaseResult(c, errors.get(c["name"])) for c in d["cases"]]
        self.verdicts = {c.name: c.verdict for c in self.cases}
        self.passed = self.overall in ("PASS", "WARN")

    def _fetch_json(self) -> str:
        out, err = C.c_void_p(), L.Error()
        L.check(L.lib.fr_verify_result_json(self._h, C.byref(out), C.byref(err)), err)
        return L.take_string(out)

    def to_json(self) -> str:
        return self._json

    def report(self, path: str) -> str:
        """Writes the HTML report (summary, failing cases, heat maps, histograms); returns the path."""
        err = L.Error()
        L.check(L.lib.fr_verify_result_html(self._h, os.fsencode(path), C.byref(err)), err)
        return path

    @property
    def failed(self) -> List[CaseResult]:
        return [c for c in self.cases if c.verdict == "FAIL"]

    def __getitem__(self, name: str) -> CaseResult:
        for c in self.cases:
            if c.name == name:
                return c
        raise KeyError(name)

    def __iter__(self) -> Iterator[CaseResult]:
        return iter(self.cases)

    def __len__(self) -> int:
        return len(self.cases)

    def summary(self) -> str:
        tot = {v: sum(c.get(v, 0) for c in self.counts.values()) for v in ("PASS", "WARN", "FAIL", "SKIP")}
        lines = ["%s: %d cases, %d pass, %d warn, %d fail, %d skip (%.1f s)%s" % (
            self.overall, len(self.cases), tot["PASS"], tot["WARN"], tot["FAIL"], tot["SKIP"], self.seconds,
            "; likeliest cause: " + self.diagnosis if self.overall in ("FAIL", "WARN") else "")]
        for c in self.cases:
            if c.verdict in ("FAIL", "WARN"):
                lines.append("  %-4s %s [%s] %s: %s" % (c.verdict, c.name, c.category, c.diagnosis, c.why))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return "VerifyResult(%s, %d cases)" % (self.overall, len(self.cases))

    def __del__(self) -> None:
        h = getattr(self, "_h", None)
        if h and L is not None and L.lib is not None:
            L.lib.fr_verify_result_free(h)
            self._h = None


# ---------------------------------------------------------------------------------------------------------------------
# The callback


def _copy_out(t: L.Tensor, value: Any, name: str) -> None:
    dst = from_view(t, writable=True)
    src = to_numpy(value)
    if tuple(src.shape) != dst.shape:
        raise ValueError("%s: shape %s, the operator's is %s" % (name, tuple(src.shape), dst.shape))
    if src.dtype != dst.dtype:
        raw_ok = src.dtype.itemsize == dst.dtype.itemsize and src.dtype.kind in "ui" and dst.dtype.kind not in "ui"
        if not raw_ok:
            raise TypeError("%s: dtype %s, the operator's is %s (%s)" % (name, src.dtype, dst.dtype,
                                                                      L.DTYPE_NAMES[t.dtype]))
        src = src.view(dst.dtype)
    np.copyto(dst, src, casting="no")


def _outputs(ret: Any, names: tuple, present: Dict[str, bool]) -> Dict[str, Any]:
    if isinstance(ret, dict):
        d = dict(ret)
        if "out" in d and "attention_out" not in d:
            d["attention_out"] = d.pop("out")
    elif isinstance(ret, (tuple, list)):
        d = {n: v for n, v in zip(names, ret) if v is not None}
    else:
        raise TypeError("the implementation returned %s; expected a tuple or dict of outputs (%s)" % (
            type(ret).__name__, ", ".join(n for n in names if present.get(n))))
    for n in names:
        if present.get(n) and d.get(n) is None:
            raise ValueError("%s: not returned (required for this case)" % n)
    return d


class _Runner:
    def __init__(self, fn: Callable, tensors: str):
        self.fn, self.tensors = fn, tensors
        self.errors: Dict[str, str] = {}
        self.interrupt: Optional[BaseException] = None
        self.calls = 0
        self.on_interrupt: Optional[Callable[[], None]] = None
        self.cb = L.CALLBACK(self._call)

    def _call(self, ud, vcp, fop, bop, errp) -> int:
        err = errp.contents

        def fail(status: int, msg: str) -> int:
            b = msg.encode("utf-8", "replace")[: L.MSG_LEN - 1]
            err.msg = b
            err.status = status
            return status

        if self.interrupt is not None:
            return fail(L.E_UNSUPPORTED, "interrupted")
        vc = vcp.contents
        name = (vc.name or b"").decode()
        try:
            self.calls += 1
            case = Case._from_c(vc, self.tensors)
            ret = self.fn(case)
            if vc.op == 0:
                fo = fop.contents
                slots = {n: getattr(fo, n) for n in FWD_OUTPUTS}
                names = FWD_OUTPUTS
            else:
                bo = bop.contents
                slots = {n: getattr(bo, n) for n in L.BWD_OUTPUTS}
                names = tuple(L.BWD_OUTPUTS)
            present = {n: t.dtype != L.DT_NONE for n, t in slots.items()}
            outs = _outputs(ret, names, present)
            for n, v in outs.items():
                if n not in slots:
                    raise ValueError("%s: not an output of a %s case (%s)" % (n, case.op, ", ".join(names)))
                if not present[n]:
                    raise ValueError("%s: returned, but this case has no such output" % n)
                _copy_out(slots[n], v, n)
            return L.OK
        except L.Unsupported as e:
            return fail(L.E_UNSUPPORTED, "not supported: %s" % (e,))
        except L.FlashrefError as e:
            self.errors.setdefault(name, traceback.format_exc())
            return fail(e.code if e.code != L.E_UNSUPPORTED else L.E_INVALID_ARG, str(e))
        except Exception as e:  # the implementation's failure is that case's verdict, not the run's end
            self.errors.setdefault(name, traceback.format_exc())
            return fail(L.STATUS["FR_E_INTERNAL"], "%s: %s" % (type(e).__name__, e))
        except BaseException as e:  # KeyboardInterrupt, SystemExit: skip the rest quickly, re-raised after the run
            self.interrupt = e
            if self.on_interrupt is not None:  # a hunt stops at once
                self.on_interrupt()
            return fail(L.E_UNSUPPORTED, "interrupted")


def _opts(set: str, filter: Optional[str], case: Optional[str], seed: Optional[int], threads: int,
          thresholds: Dict[str, float], external: Optional[bool], name: Optional[str], keep: list,
          standard: Optional[str] = None) -> L.VerifyOpts:
    o = L.lib.fr_verify_opts_default()

    def s(x):
        b = x.encode() if x is not None else None
        keep.append(b)
        return b

    o.set, o.filter, o.exact, o.impl_name, o.standard = s(set), s(filter), s(case), s(name), s(standard)
    if seed is not None:
        o.seed = L.c_int("seed", seed, "uint64")
    o.threads = L.c_int("threads", threads, "int32")
    for k, v in thresholds.items():
        if k not in ("k_out", "k_max", "k_grad", "k_stats", "gain_warn", "growth_warn"):
            raise TypeError("verify: unknown threshold %r" % k)
        setattr(o, k, float(v))
    o.external = -1 if external is None else int(bool(external))
    return o


def _caps_text(capabilities: Union[None, str, Dict[str, Any]]) -> Optional[bytes]:
    if capabilities is None:
        return None
    if isinstance(capabilities, dict):
        capabilities = json.dumps(capabilities)
    if not isinstance(capabilities, str):
        raise TypeError("capabilities: a dict or a JSON string (docs/exec-protocol.md)")
    return capabilities.encode()


def verify(impl: Union[Callable[[Case], Any], str], set: str = "default", *, filter: Optional[str] = None,
           case: Optional[str] = None, seed: Optional[int] = None, tensors: str = "numpy", threads: int = 0,
           external: Optional[bool] = None, name: Optional[str] = None, standard: Optional[str] = None,
           capabilities: Union[None, str, Dict[str, Any]] = None, **thresholds: float) -> VerifyResult:
    """Runs a suite set ("quick", "default", "long", "all") against impl and judges every case as `flashref suite`
    does. impl: a callable taking a flashref.Case and returning its outputs (forward: (attention_out, softmax_max,
    softmax_sum) or a dict of them; backward: (dq, dk, dv[, dq_rope, dk_rope, dsink]) or a dict), in the operator's
    dtypes and shapes, or raising flashref.Unsupported to SKIP the case; any other exception is that case's FAIL
    (diagnosis error-status; the traceback in CaseResult.error). Or an --impl spec string ("fast", "golden",
    "emulate:PRESET", "exec:CMD", "plugin:PATH.so", "mutant:NAME"). filter: cases whose name contains it; case: only
    the case of exactly this name. tensors: "numpy" or "torch" (what the callable receives). thresholds: k_out,
    k_max, k_grad, k_stats, gain_warn, growth_warn. standard: `--standard` ("flashref" default, "ascend-L0",
    "ascend-L1", "ascend-L2", "fa"). capabilities: what the callable supports, a dict (or JSON text) in the vocabulary
    of docs/exec-protocol.md, "Runner capabilities": cases outside it SKIP without a call. The GIL is released while
    the verifier computes."""
    if tensors not in ("numpy", "torch"):
        raise ValueError("tensors: %r (expected 'numpy' or 'torch')" % tensors)
    keep: list = []
    h, err = C.c_void_p(), L.Error()
    if isinstance(impl, str):
        o = _opts(set, filter, case, seed, threads, thresholds, external, name, keep, standard)
        L.check(L.lib.fr_verify_run_impl(C.byref(o), impl.encode(), C.byref(h), C.byref(err)), err)
        return VerifyResult(h, {})
    if not callable(impl):
        raise TypeError("verify: impl must be a callable or an --impl spec string")
    label = name or getattr(impl, "__qualname__", None) or getattr(impl, "__name__", None) or "callback"
    o = _opts(set, filter, case, seed, threads, thresholds, external, label, keep, standard)
    r = _Runner(impl, tensors)
    st = L.lib.fr_verify_run_callback_caps(C.byref(o), _caps_text(capabilities), r.cb, None, C.byref(h),
                                           C.byref(err))
    if r.interrupt is not None:
        if st == L.OK:
            L.lib.fr_verify_result_free(h)
        raise r.interrupt
    L.check(st, err)
    return VerifyResult(h, r.errors)


def verify_msprobe(path: Union[str, "os.PathLike[str]"], *, standard: Optional[str] = None,
                   filter: Optional[str] = None, case: Optional[str] = None, write: Optional[str] = None,
                   name: Optional[str] = None, **thresholds: float) -> VerifyResult:
    """Judges an msprobe dump (Ascend's accuracy tool; docs/ascend.md), as `flashref verify --msprobe` does: every
    npu_fusion_attention[_grad][_v2|_v3] call of the dump at or below path (a directory holding dump.json and
    dump_tensor_data/, or one above it: step*/rank*) rebuilt with torch_npu's argument names and defaults, a backward
    entry as the grad call of its forward, and the NPU's dumped outputs judged against the golden. Each CaseResult is
    named by its dump name ("NPU.npu_fusion_attention.0.forward"). standard: "ascend-L1" (default: msprobe's level for
    these APIs), "ascend-L0", "ascend-L2", "flashref" (flashref's own judge) or "fa". filter / case: calls whose
    name contains / equals it. write: also write every rebuilt call as a case directory write/NAME with the NPU's
    outputs beside it. A call that cannot be read FAILs with a why starting "cannot load"; a call with a drop mask
    only the NPU knows SKIPs saying so. FlashrefError when path holds no dump."""
    keep: list = []
    o = _opts("default", filter, case, None, 0, thresholds, True, name, keep)
    h, err = C.c_void_p(), L.Error()
    L.check(L.lib.fr_verify_msprobe(C.byref(o), os.fsencode(path), standard.encode() if standard else None,
                                    os.fsencode(write) if write else None, C.byref(h), C.byref(err)), err)
    return VerifyResult(h, {})


def list_cases(set: str = "default", filter: Optional[str] = None) -> List[Dict[str, str]]:
    """The cases of a set: [{"name", "category", "what"}] in run order."""
    out: List[Dict[str, str]] = []

    def add(ud, name, cat, what):
        out.append({"name": name.decode(), "category": cat.decode(), "what": what.decode()})

    fn = L.LIST_FN(add)
    n = L.lib.fr_verify_list(set.encode(), filter.encode() if filter else None, fn, None)
    if n < 0:
        raise L.FlashrefError(L.E_INVALID_ARG, "set: '%s': expected %s" % (set, ", ".join(set_names())))
    return out


def set_names() -> List[str]:
    return L.name_list(L.lib.fr_verify_set_names())


_ = (shape_of,)


def hunt(impl: Union[Callable[[Case], Any], str], budget: float = 600.0, *, max_draws: Optional[int] = None,
         seed: int = 20260101, out: Optional[str] = None, capabilities: Union[None, str, Dict[str, Any]] = None,
         max_shrink: int = 8, tensors: str = "numpy", threads: int = 0, name: Optional[str] = None,
         corners: bool = True) -> Dict[str, Any]:
    """`flashref hunt` in-process (docs/verifier.md, "The hunt"): draws random cases inside what impl supports
    (capabilities, as for verify(), plus what it SKIPs), weighted towards the corners where kernels break, for
    `budget` seconds (or at most max_draws draws; budget=0 with max_draws: exactly that many, reproducible); clusters
    the failures, shrinks one per cluster and returns the findings (the "flashref-hunt/1" dict: draws, judged,
    judged_share, clusters [{kind, verdict, diagnosis, configuration, first, smallest, ...}]). out: a directory for
    findings.markdown / findings.json / cluster_K/case. impl: a callable as for verify(), or an --impl spec string.
    Ctrl-C stops the hunt after the current case (nothing written) and is re-raised."""
    if tensors not in ("numpy", "torch"):
        raise ValueError("tensors: %r (expected 'numpy' or 'torch')" % tensors)
    opts: Dict[str, Any] = {"seed": int(seed), "budget_s": float(budget), "max_shrink": int(max_shrink),
                            "threads": int(threads), "no_corners": not corners}
    if max_draws is not None:
        opts["max_draws"] = int(max_draws)
    if out is not None:
        opts["out"] = os.fspath(out)
    caps = _caps_text(capabilities)
    if caps is not None:
        opts["capabilities"] = caps.decode()
    h, err = C.c_void_p(), L.Error()
    if isinstance(impl, str):
        L.check(L.lib.fr_verify_hunt(json.dumps(opts).encode(), impl.encode(), L.CALLBACK(), None, C.byref(h),
                                     C.byref(err)), err)
    else:
        if not callable(impl):
            raise TypeError("hunt: impl must be a callable or an --impl spec string")
        opts["name"] = name or getattr(impl, "__qualname__", None) or getattr(impl, "__name__", None) or "callback"
        r = _Runner(impl, tensors)
        r.on_interrupt = L.lib.fr_verify_hunt_stop
        st = L.lib.fr_verify_hunt(json.dumps(opts).encode(), None, r.cb, None, C.byref(h), C.byref(err))
        if r.interrupt is not None:
            if st == L.OK:
                L.lib.fr_verify_free(h)
            raise r.interrupt
        L.check(st, err)
    try:
        return json.loads(C.cast(h, C.c_char_p).value.decode())
    finally:
        L.lib.fr_verify_free(h)
