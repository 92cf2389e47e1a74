"""Case-directory plumbing shared by the panel runners (runners/*.py): read a flashref case directory, hand each
batch to a framework as plain [heads, rows, dim] float32 arrays with a boolean "takes part" mask, and write the
framework's results back in the case's layout and dtypes (docs/verifier.md, "The panel").

The mask rule is the operator's (sparse modes 0-5, band, prefix), written here from the spec so that a framework that
only knows "boolean attn_mask" can be driven; what a runner cannot map exactly raises Unsupported (exit 77 / SKIP).

A runner calls serve(handle) (flashref_runner.serve underneath): with a directory argument it runs that one case
(flashref's exec: protocol); with FLASHREF_PROTOCOL set (persistent:) it reads one case directory per line on stdin
and answers one "flashref-status: N[ message]" line per case, so the framework is imported once.
"""
import json
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", os.environ.get("FR_PANEL_THREADS", "1"))
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flashref_runner  # noqa: E402
from flashref_runner import Unsupported  # noqa: E402,F401  (SKIP, exit 77)

FLT_MAX = float(np.finfo(np.float32).max)


# ---- tensors ------------------------------------------------------------------------------------------------------

def _bf16_bits_to_f32(u):
    return (u.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16_bits(x):
    """Exact for values that are bf16 already (what a bf16 framework returns); RNE otherwise."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():
        r = np.where(nan, np.uint16(0x7FC0), r)
    return r


def load_tensor(path, dtype, as_dtype):
    a = np.load(path)
    if as_dtype and dtype == "bf16" and a.dtype == np.uint16:
        return _bf16_bits_to_f32(a)
    if a.dtype in (np.float16, np.float64):
        return a.astype(np.float32)
    return a


class Case:
    """One case directory: op, dtype, params, inputs (float32 numpy arrays for the float tensors)."""

    DTYPED = ("query", "key", "value", "dy", "attention_in", "query_rope", "key_rope")

    def __init__(self, d):
        self.dir = d
        with open(os.path.join(d, "case.json")) as f:
            cj = json.load(f)
        self.op = cj["op"]
        self.dtype = cj["dtype"]
        self.p = cj["params"]
        if self.dtype not in ("fp32", "fp16", "bf16"):
            raise Unsupported("dtype %s" % self.dtype)
        self.t = {}
        for name, fn in cj["inputs"].items():
            typed = name in self.DTYPED or (name == "real_shift" and self.p.get("pse_type", 1) in (0, 1))
            self.t[name] = load_tensor(os.path.join(d, fn), self.dtype, typed)
        self.layout = self.p["input_layout"]
        self.N1 = int(self.p["head_num"])
        self._shapes()

    def _shapes(self):
        q, k, v = self.t["query"], self.t["key"], self.t["value"]
        L = self.layout
        if L in ("BSH", "SBH"):
            self.Dk = q.shape[2] // self.N1
            self.N2 = k.shape[2] // self.Dk
            self.Dv = v.shape[2] // self.N2
            self.B = q.shape[0] if L == "BSH" else q.shape[1]
        elif L in ("BSND", "BNSD"):
            self.Dk, self.Dv = q.shape[3], v.shape[3]
            self.N2 = k.shape[2] if L == "BSND" else k.shape[1]
            self.B = q.shape[0]
        elif L == "TND":
            self.Dk, self.Dv, self.N2 = q.shape[2], v.shape[2], k.shape[1]
            self.cu_q = [int(x) for x in self.p["actual_seq_qlen"]]
            self.cu_kv = [int(x) for x in self.p["actual_seq_kvlen"]]
            self.B = len(self.cu_q)
        else:
            raise Unsupported("layout %s" % L)
        self.Drope = 0
        if "query_rope" in self.t:
            qr = self.t["query_rope"]
            self.Drope = qr.shape[-1] // self.N1 if L in ("BSH", "SBH") else qr.shape[-1]
        if L != "TND":
            self.S1 = q.shape[1] if L in ("BSH", "BSND") else q.shape[0] if L == "SBH" else q.shape[2]
            self.S2 = k.shape[1] if L in ("BSH", "BSND") else k.shape[0] if L == "SBH" else k.shape[2]

    def rows(self, b, kv):
        """(first row, length) of batch b (TND offsets; 0 otherwise)."""
        if self.layout == "TND":
            cu = self.cu_kv if kv else self.cu_q
            s = cu[b - 1] if b else 0
            return s, cu[b] - s
        return 0, self.S2 if kv else self.S1

    def batches(self):
        """The batches with at least one query row (an empty one has no output rows to write)."""
        return [b for b in range(self.B) if self.rows(b, False)[1] > 0]

    def heads(self, name, b, n, D, kv):
        """Tensor `name` of batch b as [n, S, D] float32."""
        t, L = self.t[name], self.layout
        r0, S = self.rows(b, kv)
        if L == "BNSD":
            x = t[b]
        elif L == "BSND":
            x = t[b].transpose(1, 0, 2)
        elif L == "BSH":
            x = t[b].reshape(S, n, D).transpose(1, 0, 2)
        elif L == "SBH":
            x = t[:, b].reshape(S, n, D).transpose(1, 0, 2)
        else:
            x = t[r0:r0 + S].transpose(1, 0, 2)
        return np.ascontiguousarray(x, dtype=np.float32)

    # ---- semantics a framework must be told explicitly ----

    def check_supported(self):
        p = self.p
        if p.get("keep_prob", 1.0) < 1.0:
            raise Unsupported("dropout (the operator's drop_mask cannot be given to the framework)")
        for name in ("sink", "topk_indices", "d_scale_q", "d_scale_k", "d_scale_v"):
            if name in self.t:
                raise Unsupported(name)
        if p.get("out_dtype"):
            raise Unsupported("out_dtype")
        if "real_shift" in self.t:
            pt = p.get("pse_type", 1)
            rs = self.t["real_shift"]
            if pt not in (0, 1):
                raise Unsupported("ALiBi pse_type %d" % pt)
            if self.layout == "TND" or (rs.shape[2] == 1024 and self.S1 != 1024):
                raise Unsupported("compressed pse")
            if pt == 1:
                m, e = np.frexp(np.float32(p["scale_value"]))
                if m != 0.5:
                    raise Unsupported("pse_type 1 with a scale that is not a power of two (pse * scale inexact)")
        if "atten_mask" in self.t and p.get("sparse_mode", 0) not in (0, 1, 2, 3, 4, 5):
            raise Unsupported("sparse_mode %d" % p["sparse_mode"])

    def keep(self, b):
        """Boolean [1 or N1, S1, S2]: True where (i, j) takes part (spec 4: atten_mask, sparse mode, band, prefix)."""
        _, S1 = self.rows(b, False)
        _, S2 = self.rows(b, True)
        if "atten_mask" not in self.t:
            return np.ones((1, S1, S2), dtype=bool)
        p, mode = self.p, self.p.get("sparse_mode", 0)
        m = self.t["atten_mask"]
        i = np.arange(S1)[:, None]
        j = np.arange(S2)[None, :]
        band, lo, hi, prefix, user = False, None, None, 0, mode in (0, 1, 5)
        if mode == 0:
            band, lo, hi = True, -int(p["pre_tokens"]), int(p["next_tokens"])
        elif mode == 2:
            band, hi = True, 0
        elif mode == 3:
            band, hi = True, S2 - S1
        elif mode == 4:
            band, hi, lo = True, int(p["next_tokens"]) + (S2 - S1), -(int(p["pre_tokens"]) - (S2 - S1))
        elif mode == 5:
            pre = p.get("prefix")
            if pre is not None and b < len(pre) and int(pre[b]) <= S2:
                band, hi, prefix = True, S2 - S1, max(int(pre[b]), 0)
        ok = np.ones((S1, S2), dtype=bool)
        if band:
            d = j - i
            inb = np.ones((S1, S2), dtype=bool)
            if lo is not None:
                inb &= d >= lo
            if hi is not None:
                inb &= d <= hi
            ok = inb | (j < prefix)
        if not user:
            return ok[None]
        if m.ndim == 2:
            um = m[:S1, :S2].astype(bool)[None]
        else:
            um = m[b if m.shape[0] > 1 else 0, :, :S1, :S2].astype(bool)
        return ok[None] & ~um

    def pse(self, b):
        """Additive float bias [N1, S1, S2] (x = qk * scale + bias) or None."""
        if "real_shift" not in self.t:
            return None
        rs = self.t["real_shift"]
        _, S1 = self.rows(b, False)
        x = rs[b if rs.shape[0] > 1 else 0].astype(np.float32)
        x = np.broadcast_to(x, (self.N1, S1, x.shape[-1]))
        if self.p.get("pse_type", 1) == 1:
            x = x * np.float32(self.p["scale_value"])  # exact: scale is a power of two (check_supported)
        return np.ascontiguousarray(x)

    # ---- outputs ----

    def _np_dtype(self):
        return {"fp32": np.float32, "fp16": np.float16, "bf16": np.uint16}[self.dtype]

    def alloc(self, like, D, n):
        t, L = self.t[like], self.layout
        shape = list(t.shape)
        shape[-1] = n * D if L in ("BSH", "SBH") else D
        return np.zeros(shape, dtype=np.float32)

    def alloc_outputs(self):
        """Zeroed float32 arrays for every output of the case, by file name: dq, dk, dv (+ dq_rope, dk_rope) for a
        backward case, attention_out, softmax_max, softmax_sum for a forward one."""
        if self.op == "bwd":
            outs = {"dq": self.alloc("query", self.Dk, self.N1), "dk": self.alloc("key", self.Dk, self.N2),
                    "dv": self.alloc("value", self.Dv, self.N2)}
            if self.Drope:
                outs["dq_rope"] = self.alloc("query_rope", self.Drope, self.N1)
                outs["dk_rope"] = self.alloc("key_rope", self.Drope, self.N2)
            return outs
        return {"attention_out": self.alloc("query", self.Dv, self.N1),
                "softmax_max": np.zeros(self.softmax_shape(), dtype=np.float32),
                "softmax_sum": np.zeros(self.softmax_shape(), dtype=np.float32)}

    def save_outputs(self, outs):
        """Writes alloc_outputs' arrays: gradients and attention_out in the case's dtype, the statistics in fp32."""
        for name, arr in outs.items():
            self.save(name, arr, typed=name not in ("softmax_max", "softmax_sum"))

    def qkv(self, b):
        """Q, K, V of batch b as [N1, S, D] float32 numpy arrays: rope columns appended to Q and K, K and V heads
        repeated G = N1 / N2 times (GQA / MQA)."""
        G = self.N1 // self.N2
        q, k, v = self.heads("query", b, self.N1, self.Dk, False), self.heads("key", b, self.N2, self.Dk, True), \
            self.heads("value", b, self.N2, self.Dv, True)
        if self.Drope:
            q = np.concatenate([q, self.heads("query_rope", b, self.N1, self.Drope, False)], -1)
            k = np.concatenate([k, self.heads("key_rope", b, self.N2, self.Drope, True)], -1)
        return q, np.repeat(k, G, axis=0), np.repeat(v, G, axis=0)

    def put(self, arr, b, x, kv):
        """x: [n, S, D] float32 of batch b into arr (the case layout)."""
        L = self.layout
        r0, S = self.rows(b, kv)
        n, _, D = x.shape
        if L == "BNSD":
            arr[b] = x
        elif L == "BSND":
            arr[b] = x.transpose(1, 0, 2)
        elif L == "BSH":
            arr[b] = x.transpose(1, 0, 2).reshape(S, n * D)
        elif L == "SBH":
            arr[:, b] = x.transpose(1, 0, 2).reshape(S, n * D)
        else:
            arr[r0:r0 + S] = x.transpose(1, 0, 2)

    def save(self, name, arr, typed=True):
        path = os.path.join(self.dir, name + ".npy")
        if not typed or self.dtype == "fp32":
            np.save(path, arr.astype(np.float32))
        elif self.dtype == "fp16":
            np.save(path, arr.astype(np.float16))
        else:
            np.save(path, f32_to_bf16_bits(arr))

    def softmax_shape(self):
        if self.layout == "TND":
            T = self.cu_q[-1] if self.cu_q else 0
            if self.p.get("softmax_layout", "") == "same_as_input":
                return (T, self.N1, 8)
            return (self.N1, T, 8)
        return (self.B, self.N1, self.S1, 8)

    def put_stats(self, arr, b, s):
        """s: [N1, S1] float32 of batch b."""
        r0, S1 = self.rows(b, False)
        v = np.repeat(s[:, :, None], 8, axis=2)
        if self.layout != "TND":
            arr[b] = v
        elif self.p.get("softmax_layout", "") == "same_as_input":
            arr[r0:r0 + S1] = v.transpose(1, 0, 2)
        else:
            arr[:, r0:r0 + S1] = v


def softmax_stats(x):
    """Row max and sum of exp(x - max) of scores x [N, S1, S2] (masked = -inf), fp32; D1 values for empty rows."""
    x = x.astype(np.float32)
    if x.shape[-1] == 0:
        m = np.full(x.shape[:2], -np.inf, dtype=np.float32)
    else:
        m = x.max(axis=-1)
    empty = ~np.isfinite(m) & (m < 0)
    ms = np.where(empty, 0, m).astype(np.float32)
    l = np.exp(x - ms[..., None]).sum(axis=-1, dtype=np.float32) if x.shape[-1] else np.zeros_like(ms)
    return np.where(empty, -FLT_MAX, m).astype(np.float32), np.where(empty, FLT_MAX, l).astype(np.float32)


# ---- protocol (runners/flashref_runner.py: exec: and persistent: from one file) --------------------------------

def serve(handle):
    """handle(Case) computes one case; exec: `runner.py CASE_DIR` or persistent: (FLASHREF_PROTOCOL set)."""
    return flashref_runner.serve(lambda d: handle(Case(d)))
