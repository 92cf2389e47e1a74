#!/usr/bin/env python3
"""An implementation under test, by command (docs/case-format.md): reads CASE_DIR/case.json and the .npy inputs, writes
the outputs beside them and exits 0; exits 77 ("not supported by me", reported as SKIP) for what it does not handle.

usage:  run_case.py CASE_DIR                    (or case directories on stdin: the persistent protocol)
judge:  build/flashref suite --impl exec:"build/venv/bin/python examples/python_runner/run_case.py"
        build/flashref suite --impl persistent:"build/venv/bin/python examples/python_runner/run_case.py"

Handles forward and backward for layouts BNSD/BSND/BSH/SBH, dtypes fp32/fp16/bf16 (bf16 travels as <u2 bit
patterns), GQA/MQA, sparse modes 0-4 with their masks, pse types 0/1 with [B,N1,S1,S2], [B,N1,1,S2] or [1,N1,S1,S2]
real_shift, fully masked rows as spec D1. Not handled (exit 77): TND, dropout, fp8/hif8, pse types 2/3 or compressed
pse, sparse modes 5-8, rope, sink, top-k. The math is dense float64 per batch (spec sections 3, 4, 5, 8.2); outputs
are rounded as the operator rounds them: attention_out and gradients to the input dtype (fp16/bf16 half away from
zero, saturating: spec D3), softmax_max/softmax_sum fp32 [B,N1,S1,8]. To drive real hardware, replace forward() /
backward() by calls into it and keep the I/O.

Self-contained on purpose (numpy only, no import from the repository), so that it can be copied out as a starting
point: its layout helpers and case reading look like tests/python/ref_attention.py and ref_runner.py, which are the
project's independent reference and are not meant to be copied.
"""

import json
import os
import sys

import numpy as np

# runners/flashref_runner.py speaks both protocols of docs/exec-protocol.md.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "runners"))
from flashref_runner import Unsupported, serve  # noqa: E402

FLT_MAX = float(np.finfo(np.float32).max)


# ---- number formats ---------------------------------------------------------------------------------------------

def decode(a, dtype):
    """A tensor file's contents as float64: bf16 arrives as uint16 bit patterns."""
    a = np.asarray(a)
    if dtype == "bf16" or a.dtype == np.uint16:
        return (a.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


# Alike tests/python/ref_runner.py:f16_half_away: kept apart because this example must run standalone (a runner users
# copy) and that one belongs to the tests' independent reference runner.
def encode(x, dtype):
    """float64 -> the dtype's file representation: fp32 nearest even; fp16/bf16 through fp32, then half away from
    zero with saturation (NaN stays NaN)."""
    f = np.asarray(x, dtype=np.float64).astype(np.float32)
    if dtype == "fp32":
        return f
    if dtype == "bf16":
        bits = f.view(np.uint32)
        sign, mag = bits & np.uint32(0x80000000), bits & np.uint32(0x7FFFFFFF)
        r = (mag + np.uint32(0x8000)) >> np.uint32(16)           # adding half an ulp: ties go away from zero
        r = np.where(r >= 0x7F80, 0x7F7F, r)                     # overflow and Inf saturate
        r = np.where(mag > 0x7F800000, 0x7FC0, r)                # NaN
        return ((sign >> np.uint32(16)) | r).astype(np.uint16)
    if dtype == "fp16":
        d = f.astype(np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            y = d.astype(np.float16)                             # nearest even
            away = np.nextafter(y, np.copysign(np.float16(np.inf), y).astype(np.float16))
            yd, ad = y.astype(np.float64), away.astype(np.float64)
            tie = np.isfinite(ad) & (np.abs(d - yd) == np.abs(ad - d)) & (np.abs(yd) < np.abs(d))
            y = np.where(tie, away, y)
            big = np.isinf(y) & ~np.isnan(d)
            y = np.where(big, np.copysign(np.float16(65504.0), d).astype(np.float16), y)
        return y.astype(np.float16)
    raise Unsupported("output dtype %s" % dtype)


# ---- layouts: everything is computed as [B, N, S, D] --------------------------------------------------------------

# Alike tests/python/ref_attention.py:from_bnsd and tests/python_pkg/test_npu.py:to_bnsd / from_bnsd (torch), for both
# functions below: kept apart because this example must run standalone (a runner users copy) and those are the tests'
# independent references.
def to_bnsd(x, layout, n):
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(0, 2, 1, 3)
    if layout == "BSH":
        b, s, h = x.shape
        return x.reshape(b, s, n, h // n).transpose(0, 2, 1, 3)
    s, b, h = x.shape                                            # SBH
    return x.reshape(s, b, n, h // n).transpose(1, 2, 0, 3)


def from_bnsd(x, layout):
    b, n, s, d = x.shape
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(0, 2, 1, 3)
    if layout == "BSH":
        return x.transpose(0, 2, 1, 3).reshape(b, s, n * d)
    return x.transpose(2, 0, 1, 3).reshape(s, b, n * d)         # SBH


# ---- the problem ------------------------------------------------------------------------------------------------

class Problem:
    """Decoded inputs in [B, N, S, D] and what every (b, h, i, j) means."""

    def __init__(self, case, inputs):
        p = case["params"]
        self.dtype = case["dtype"]
        self.layout = str(p["input_layout"]).upper()
        if self.dtype not in ("fp32", "fp16", "bf16"):
            raise Unsupported("dtype %s" % self.dtype)
        if self.layout not in ("BNSD", "BSND", "BSH", "SBH"):
            raise Unsupported("layout %s" % self.layout)
        if p.get("out_dtype") not in (None, self.dtype):
            raise Unsupported("out_dtype %s" % p.get("out_dtype"))
        if float(p.get("keep_prob", 1.0)) != 1.0 or "drop_mask" in inputs:
            raise Unsupported("dropout")
        for name in ("query_rope", "key_rope", "sink", "topk_indices", "d_scale_q", "d_scale_k", "d_scale_v"):
            if name in inputs:
                raise Unsupported(name)
        n1 = int(p["head_num"])
        q, k, v = (decode(inputs[t], self.dtype) for t in ("query", "key", "value"))
        if self.layout in ("BSH", "SBH"):
            d = q.shape[2] // n1
            n2 = k.shape[2] // d
        else:
            n2 = k.shape[1] if self.layout == "BNSD" else k.shape[2]
        self.n1, self.n2, self.g = n1, n2, n1 // n2
        self.q, self.k, self.v = to_bnsd(q, self.layout, n1), to_bnsd(k, self.layout, n2), to_bnsd(v, self.layout, n2)
        self.B, _, self.S1, _ = self.q.shape
        self.S2 = self.k.shape[2]
        self.scale = float(np.float32(p.get("scale_value", 1.0)))   # the operator's constants are fp32
        self.pse_type = int(p.get("pse_type", 1))
        self.pse = None
        if "real_shift" in inputs:
            if self.pse_type not in (0, 1):
                raise Unsupported("pse_type %d" % self.pse_type)
            ps = decode(inputs["real_shift"], self.dtype)
            if ps.ndim != 4 or ps.shape[0] not in (1, self.B) or ps.shape[2] not in (1, self.S1) \
                    or ps.shape[3] != self.S2:
                raise Unsupported("real_shift of shape %s (compressed pse)" % (ps.shape,))
            self.pse = ps
        self.masked = self.mask(p, inputs.get("atten_mask"))       # [B|1, N1|1, S1, S2], True = does not take part

    # Alike python/flashref/_verify.py:Case.dense_mask: kept apart because this example is self-contained (numpy only,
    # no flashref package) so that a user can copy it as the start of a runner.
    def mask(self, p, mask):
        s1, s2 = self.S1, self.S2
        if mask is None:                                        # no atten_mask: mode and band are ignored (spec 4.2)
            return np.zeros((1, 1, s1, s2), dtype=bool)
        mode = int(p.get("sparse_mode", 0))
        pre, nxt = int(p.get("pre_tokens", 2147483647)), int(p.get("next_tokens", 2147483647))
        i, j = np.arange(s1)[:, None], np.arange(s2)[None, :]
        if mode in (0, 1):
            m = np.asarray(mask).astype(bool)
            m = m[None, None] if m.ndim == 2 else m
            m = m[:, :, :s1, :s2]
            if mode == 0:                                       # the user mask OR outside the top-left band
                m = m | (((j - i) > nxt) | ((i - j) > pre))[None, None]
            return m
        if mode == 2:
            f = j > i
        elif mode == 3:
            f = j > i + (s2 - s1)
        elif mode == 4:                                         # band with a bottom-right origin
            f = ((j - i) > nxt + (s2 - s1)) | ((i - j) > pre - (s2 - s1))
        else:
            raise Unsupported("sparse_mode %d" % mode)
        return f[None, None]

    def kv(self, t):
        """[B, N2, S2, d] -> [B, N1, S2, d]: query head h reads kv head h // G."""
        return np.repeat(t, self.g, axis=1)

    def logits(self):
        """x = scale * QK^T (+ pse per pse_type), masked positions -FLT_MAX: [B, N1, S1, S2]."""
        s = np.einsum("bhid,bhjd->bhij", self.q, self.kv(self.k))
        if self.pse is None:
            x = s * self.scale
        elif self.pse_type == 1:
            x = (s + self.pse) * self.scale
        else:
            x = s * self.scale + self.pse
        masked = np.broadcast_to(self.masked, x.shape)
        return np.where(masked, -FLT_MAX, x), masked


def mm(a, masked, b):
    """sum_j a[..., i, j] * b[..., j, d] over the positions j that take part (masked[..., i, j] False) only: a masked
    position contributes exactly 0 even when b holds NaN or Inf there (spec 3, step 3)."""
    a = np.where(masked, 0.0, a)
    if np.isfinite(b).all():
        return a @ b
    out = np.empty(a.shape[:-1] + b.shape[-1:])
    m = np.broadcast_to(masked, a.shape)
    for idx in np.ndindex(*a.shape[:-2]):
        terms = a[idx][:, :, None] * b[idx][None, :, :]          # [rows, j, d]
        out[idx] = np.where(m[idx][:, :, None], 0.0, terms).sum(axis=1)
    return out


def forward(pb):
    x, masked = pb.logits()
    dead = masked.all(axis=-1)                                  # fully masked rows (also S2 = 0): spec D1
    m = np.where(masked, -np.inf, x).max(axis=-1, initial=-np.inf)
    m = np.where(dead, -FLT_MAX, m)
    e = np.where(masked, 0.0, np.exp(x - m[..., None]))
    l = e.sum(axis=-1)
    out = mm(e, masked, pb.kv(pb.v)) / np.where(dead, 1.0, l)[..., None]
    out = np.where(dead[..., None], 0.0, out)
    l = np.where(dead, FLT_MAX, l)
    stat = lambda a: np.repeat(a[..., None], 8, axis=-1).astype(np.float32)  # noqa: E731 [B,N1,S1,8] fp32
    return {"attention_out": encode(from_bnsd(out, pb.layout), pb.dtype),
            "softmax_max": stat(m), "softmax_sum": stat(l)}


def backward(pb, inputs):
    x, masked = pb.logits()
    dy = to_bnsd(decode(inputs["dy"], pb.dtype), pb.layout, pb.n1)
    o = to_bnsd(decode(inputs["attention_in"], pb.dtype), pb.layout, pb.n1)
    m = np.asarray(inputs["softmax_max"], dtype=np.float64)[..., :1]   # column 0 of the 8 copies
    l = np.asarray(inputs["softmax_sum"], dtype=np.float64)[..., :1]
    p = np.where(masked, 0.0, np.exp(x - m) / l)                # spec 8.2: the stored max and sum
    k, v = pb.kv(pb.k), pb.kv(pb.v)
    mt = np.swapaxes(masked, -1, -2)
    dp = dy @ np.swapaxes(v, -1, -2)                            # NaN from a masked V is dropped by the select below
    dvec = (dy * o).sum(axis=-1, keepdims=True)
    ds = np.where(masked, 0.0, p * (dp - dvec))
    dq = pb.scale * mm(ds, masked, k)
    group = lambda t: t.reshape(pb.B, pb.n2, pb.g, *t.shape[2:]).sum(axis=2)  # noqa: E731 sum over the G heads
    dk = group(pb.scale * mm(np.swapaxes(ds, -1, -2), mt, pb.q))
    dv = group(mm(np.swapaxes(p, -1, -2), mt, dy))
    return {name: encode(from_bnsd(t, pb.layout), pb.dtype) for name, t in (("dq", dq), ("dk", dk), ("dv", dv))}


def handle(d):
    """Computes the case in directory d and writes its outputs there (Unsupported: SKIP)."""
    with open(os.path.join(d, "case.json")) as f:
        case = json.load(f)
    inputs = {name: np.load(os.path.join(d, fn), allow_pickle=False) for name, fn in case["inputs"].items()}
    pb = Problem(case, inputs)
    outs = forward(pb) if case["op"] == "fwd" else backward(pb, inputs)
    for name, t in outs.items():
        np.save(os.path.join(d, name + ".npy"), t)


if __name__ == "__main__":
    serve(handle)
