"""Case-directory plumbing shared by the panel runners (runners/*.py): read a flashref case directory, hand it to a
framework as plain float32 arrays with a boolean "takes part" mask and an additive float bias, and write the
framework's results back in the case's layout and dtypes (docs/verifier.md, "The panel").

The mask and pse rules are the operator's (sparse modes 0-8, band, prefix, top-k without repeated indices, pse types
0-3 and the compressed pse), written here from the spec (docs/semantics-decisions.md D11, D12, D14, D15) so that a
framework that only knows "boolean mask" and "additive bias" can be driven; what a runner cannot map exactly raises
Unsupported (exit 77 / SKIP, with the reason).

A runner's plan(c) returns Calls whose canonical inputs (Case.canon()) are whole batches [B, N, S, D] with the mask
and bias in their broadcast shapes, as a user hands them over; drive() runs them through the runner's prepare /
build / run (the framework call) and writes the outputs, and runners/panel_repro.py turns the same calls into a
standalone script (the repro hook). runner() and runner_main() tie these together: with a directory argument the
runner runs that one case (flashref's exec: protocol); with FLASHREF_PROTOCOL set (persistent:) it reads one case
directory per line on stdin and answers one "flashref-status: N[ message]" line per case (flashref_runner.serve), so
the framework is imported once; `--repro CASE_DIR OUT.py` writes the reproducer.
"""
import json
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", os.environ.get("FR_PANEL_THREADS", "1"))
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flashref_runner  # noqa: E402
import panel_repro  # noqa: E402
from flashref_runner import Unsupported  # noqa: E402,F401  (SKIP, exit 77)

FLT_MAX = float(np.finfo(np.float32).max)
THREADS = int(os.environ.get("FR_PANEL_THREADS", "1"))


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


def round_to(x, dtype):
    """float32 x rounded to fp32 / fp16 / bf16 (nearest even) and returned as float32."""
    x = np.asarray(x, dtype=np.float32)
    if dtype == "fp16":
        return x.astype(np.float16).astype(np.float32)
    if dtype == "bf16":
        return _bf16_bits_to_f32(f32_to_bf16_bits(x))
    return x


def load_tensor(path, dtype, as_dtype):
    a = np.load(path)
    if as_dtype and dtype == "bf16" and a.dtype == np.uint16:
        return _bf16_bits_to_f32(a)
    if a.dtype in (np.float16, np.float64):
        return a.astype(np.float32)
    return a


class Call:
    """One call of the framework: canonical inputs `sem` (Case.canon(): q [B,N1,S1,Dqk], k [B,N2,S2,Dqk],
    v [B,N2,S2,Dv], keep [Bm,Nm,S1,S2] bool, bias [Bp,Np,S1,S2] float64 or None, scale, dy, sink) of the case's
    batches `batches`, and `p` the runner's plain (JSON) parameters of the call, "dtype" among them. The runner's
    prepare(sem, p) turns sem into what the framework is handed."""

    def __init__(self, batches, sem, p):
        self.batches, self.sem, self.p = list(batches), sem, p


class Case:
    """One case directory: op, dtype, params, inputs (float32 numpy arrays for the float tensors)."""

    DTYPED = ("query", "key", "value", "dy", "attention_in", "query_rope", "key_rope")

    def __init__(self, d):
        self.dir = d
        with open(os.path.join(d, "case.json")) as f:
            cj = json.load(f)
        self.name = os.path.basename(os.path.normpath(d))
        self.op = cj["op"]
        self.dtype = cj["dtype"]
        self.p = cj["params"]
        # how the case asks the mask to be handed over (docs/case-format.md "hints"; None: the runner's own way)
        self.mask_hint = (cj.get("hints") or {}).get("mask")
        if self.dtype not in ("fp32", "fp16", "bf16"):
            raise Unsupported("dtype %s" % self.dtype)
        self.t = {}
        for name, fn in cj["inputs"].items():
            typed = name in self.DTYPED or (name == "real_shift" and self.p.get("pse_type", 1) in (0, 1))
            self.t[name] = load_tensor(os.path.join(d, fn), self.dtype, typed)
        self.layout = self.p["input_layout"]
        self.N1 = int(self.p["head_num"])
        self.scale = float(np.float32(self.p["scale_value"]))  # D10: the operator's scale is an fp32 value
        self._shapes()

    def _shapes(self):
        q, k, v = self.t["query"], self.t["key"], self.t["value"]
        L = self.layout
        if L in ("BSH", "SBH"):
            self.Dk = q.shape[2] // self.N1
            self.N2 = k.shape[2] // self.Dk if self.Dk else 0
            self.Dv = v.shape[2] // self.N2 if self.N2 else 0
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
        if self.N2 == 0 or self.N1 % self.N2:
            raise Unsupported("N1 = %d is not a multiple of N2 = %d" % (self.N1, self.N2))
        self.G = self.N1 // self.N2
        self.Drope = 0
        if "query_rope" in self.t:
            qr = self.t["query_rope"]
            self.Drope = qr.shape[-1] // self.N1 if L in ("BSH", "SBH") else qr.shape[-1]
        if L != "TND":
            self.S1 = q.shape[1] if L in ("BSH", "BSND") else q.shape[0] if L == "SBH" else q.shape[2]
            self.S2 = k.shape[1] if L in ("BSH", "BSND") else k.shape[0] if L == "SBH" else k.shape[2]
        nonempty = [b for b in range(self.B) if self.rows(b, False)[1] > 0]
        self.first_nonempty = nonempty[0] if nonempty else -1
        self.last_nonempty = nonempty[-1] if nonempty else -1

    def rows(self, b, kv):
        """(first row, length) of batch b (TND offsets; 0 otherwise)."""
        if self.layout == "TND":
            cu = self.cu_kv if kv else self.cu_q
            s = cu[b - 1] if b else 0
            return s, max(cu[b] - s, 0)
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

    def check_supported(self, sink=False, duplicates=False, bwd=None, bf16=None):
        """Raises Unsupported for what no mask / bias can express: dropout, fp8 scales, out_dtype; sink and top-k
        with repeated indices unless the runner says it handles them. bwd / bf16: the runner's reason (the SKIP
        message) why its framework runs no backward / no bf16 case, checked first; None: it runs them."""
        if bwd is not None and self.op == "bwd":
            raise Unsupported(bwd)
        if bf16 is not None and self.dtype == "bf16":
            raise Unsupported(bf16)
        p = self.p
        if p.get("keep_prob", 1.0) < 1.0:
            raise Unsupported("dropout (the operator's drop_mask cannot be given to the framework)")
        for name in ("d_scale_q", "d_scale_k", "d_scale_v"):
            if name in self.t:
                raise Unsupported(name)
        if "sink" in self.t and not sink:
            raise Unsupported("sink (no extra softmax logit in this framework's call)")
        if p.get("out_dtype"):
            raise Unsupported("out_dtype")
        if "topk_indices" in self.t and not duplicates and self._topk_repeats():
            raise Unsupported("top-k with a repeated index (the operator counts it once per occurrence; "
                              "a mask cannot)")
        if "real_shift" in self.t and self.p.get("pse_type", 1) in (0, 1):
            rs = self.t["real_shift"]
            if rs.ndim != 4:
                raise Unsupported("pse of rank %d" % rs.ndim)

    def _topk_repeats(self):
        t = np.sort(self.t["topk_indices"].astype(np.int64), axis=-1)
        return bool(((t[..., 1:] == t[..., :-1]) & (t[..., 1:] >= 0)).any())

    def band(self, b):
        """(lo, hi, prefix, user) of batch b: (i, j) takes part iff lo <= j - i <= hi (None: unbounded) or
        j < prefix, and the user mask (when `user`) does not mask it (D12; top-left coordinates of the batch)."""
        _, S1 = self.rows(b, False)
        _, S2 = self.rows(b, True)
        if "atten_mask" not in self.t:  # no mask: sparse_mode, pre and next are ignored
            return None, None, 0, False
        p, mode = self.p, int(self.p.get("sparse_mode", 0))
        if mode == 7:
            mode = 4 if b == self.last_nonempty else 3
        elif mode == 8:
            mode = 4 if b == self.first_nonempty else 2
        pre, nxt = int(p.get("pre_tokens", 2147483647)), int(p.get("next_tokens", 2147483647))
        lo = hi = None
        prefix, user = 0, mode in (0, 1, 5)
        if mode == 0:
            lo, hi = -pre, nxt
        elif mode == 2:
            hi = 0
        elif mode == 3:
            hi = S2 - S1
        elif mode == 4:
            lo, hi = -(pre - (S2 - S1)), nxt + (S2 - S1)
        elif mode == 5:
            pf = p.get("prefix")
            if pf is not None and b < len(pf) and int(pf[b]) <= S2:
                hi, prefix = S2 - S1, int(pf[b])
        elif mode == 6:
            pf = p.get("prefix")
            hi, prefix = S2 - S1, int(pf[b]) if pf is not None and b < len(pf) else 0
        elif mode != 1:
            raise Unsupported("sparse_mode %d" % mode)
        if lo is not None and lo <= -(S1 - 1):
            lo = None
        if hi is not None and hi >= S2 - 1:
            hi = None
        if lo is None and hi is None:
            prefix = 0
        return lo, hi, prefix, user

    def _user(self, b, S1, S2):
        """The user mask of batch b, True = masked, as [1 or N1, S1, S2] (TND: the top-left corner)."""
        m = self.t["atten_mask"]
        if m.ndim == 2:
            return m[:S1, :S2].astype(bool)[None]
        return m[b if m.shape[0] > 1 else 0, :, :S1, :S2].astype(bool)

    def _topk(self, b, S1, S2):
        """[1 or N1, S1, S2] True where the top-k list of row i holds j (D7)."""
        t = self.t["topk_indices"].astype(np.int64)
        if self.layout == "TND":
            r0, _ = self.rows(b, False)
            t = t[r0:r0 + S1]  # [S1, W] or [S1, N2, W]
            t = t[None] if t.ndim == 2 else t.transpose(1, 0, 2)
        else:
            t = t[b][None] if t.ndim == 3 else t[b]  # [1 or N2, S1, W]
        out = np.zeros((t.shape[0], S1, S2), dtype=bool)
        n, i, w = np.nonzero((t >= 0) & (t < S2))
        out[n, i, t[n, i, w]] = True
        return np.repeat(out, self.G, axis=0) if out.shape[0] > 1 else out

    def keep(self, b):
        """Boolean [1 or N1, S1, S2]: True where (i, j) takes part (D12 and D7)."""
        _, S1 = self.rows(b, False)
        _, S2 = self.rows(b, True)
        ok = np.ones((1, S1, S2), dtype=bool)
        lo, hi, prefix, user = self.band(b)
        if lo is not None or hi is not None:
            ok = (band_keep(lo, hi, S1, S2) | (np.arange(S2)[None, :] < prefix))[None]
        if user:
            ok = ok & ~self._user(b, S1, S2)
        if "topk_indices" in self.t:
            ok = ok & self._topk(b, S1, S2)
        return ok

    def pse(self, b):
        """Additive float bias [N1, S1, S2] float64 (x = qk * scale + bias) of batch b, or None (D11, D14, D15)."""
        if "real_shift" not in self.t:
            return None
        rs, pt = self.t["real_shift"], int(self.p.get("pse_type", 1))
        _, S1 = self.rows(b, False)
        _, S2 = self.rows(b, True)
        if pt in (2, 3):
            slope = (rs[b] if rs.ndim == 2 else rs).astype(np.float64)[:, None, None]  # [N1, 1, 1]
            qs, ks = int(self.p.get("q_start_idx", 0)), int(self.p.get("kv_start_idx", 0))
            if self.layout == "TND" and "atten_mask" in self.t and self.p.get("sparse_mode") == 8 and b != 0:
                qs = ks = 0  # D15
            dist = np.abs(np.arange(S2)[None, :] + ks - np.arange(S1)[:, None] - qs).astype(np.float64)
            if pt == 3:
                dist = np.sqrt(dist.astype(np.float32)).astype(np.float64)  # the operator's fp32 sqrt
            return np.ascontiguousarray(np.broadcast_to(-slope * dist, (self.N1, S1, S2)))
        x = rs[b if rs.shape[0] > 1 else 0].astype(np.float64)  # [N1 or 1, R, S]
        R, S = x.shape[1], x.shape[2]
        if R == 1:
            x = np.broadcast_to(x, (x.shape[0], S1, S))
        elif not (self.layout != "TND" and R == S1):
            # D14: the last R rows of a Toeplitz [S, S]; a batch sits at its bottom-right (virtual row i + S - S1).
            iv = np.arange(S1)[:, None] + (S - S1)
            jv = np.arange(S2)[None, :] + (S - S1)
            row = np.where(iv >= S - R, iv - (S - R), 0)
            col = np.where(iv >= S - R, jv, jv - iv + S - R)
            ok = (col >= 0) & (col < S)
            x = np.where(ok[None], x[:, row, np.clip(col, 0, S - 1)], 0.0)
        x = x[:, :S1, :S2]
        if pt == 1:
            x = x * np.float64(self.scale)  # exact in fp64: a 24-bit times a 24-bit significand
        return np.ascontiguousarray(np.broadcast_to(x, (self.N1, S1, S2)))

    # ---- whole-batch (canonical) view: what a user hands a framework in one call ----

    def _mask_batched(self):
        """Whether the mask differs between batches (a batched user mask, per-batch prefix, top-k)."""
        if "atten_mask" in self.t and self.t["atten_mask"].ndim == 4 and self.t["atten_mask"].shape[0] > 1 \
                and int(self.p.get("sparse_mode", 0)) in (0, 1, 5):
            return True
        return int(self.p.get("sparse_mode", 0)) in (5, 6) and "atten_mask" in self.t or "topk_indices" in self.t

    def canon(self, b=None):
        """Canonical inputs of the whole case (b None; not TND) or of batch b as a batch of one: a dict with q
        [B,N1,S1,Dk+Drope], k [B,N2,S2,Dk+Drope], v [B,N2,S2,Dv] float32 (rope columns appended to q and k),
        keep [Bm,Nm,S1,S2] bool (Bm, Nm 1 where the mask does not vary), bias [Bp,Np,S1,S2] float64 or None,
        scale, dy [B,N1,S1,Dv] (backward), sink [N1] (when present), rope (Drope)."""
        if b is None and self.layout == "TND":
            raise ValueError("canon(): TND needs one call per batch")
        bs = list(range(self.B)) if b is None else [b]

        def stack(name, n, D, kv):
            _, S = self.rows(bs[0] if bs else 0, kv)
            if not bs:
                return np.zeros((0, n, S, D), dtype=np.float32)
            return np.stack([self.heads(name, x, n, D, kv) for x in bs])

        q, k = stack("query", self.N1, self.Dk, False), stack("key", self.N2, self.Dk, True)
        if self.Drope:
            q = np.concatenate([q, stack("query_rope", self.N1, self.Drope, False)], -1)
            k = np.concatenate([k, stack("key_rope", self.N2, self.Drope, True)], -1)
        sem = {"q": q, "k": k, "v": stack("value", self.N2, self.Dv, True), "scale": self.scale, "rope": self.Drope,
               "dtype": self.dtype, "op": self.op}
        one = b is None and not self._mask_batched()
        kb = [bs[0]] if (one and bs) else bs
        keeps = [self.keep(x) for x in kb]
        nm = max([k_.shape[0] for k_ in keeps] or [1])
        _, S1 = self.rows(bs[0] if bs else 0, False)
        _, S2 = self.rows(bs[0] if bs else 0, True)
        sem["keep"] = np.stack([np.broadcast_to(k_, (nm, S1, S2)) for k_ in keeps]) if keeps else \
            np.ones((1, 1, S1, S2), dtype=bool)
        if "real_shift" in self.t:
            rs = self.t["real_shift"]
            # per batch: a [B, ...] tensor with B > 1, [B, N1] slopes, and TND (lengths differ per batch)
            per_b = self.layout == "TND" or rs.ndim == 2 or (rs.ndim == 4 and rs.shape[0] > 1)
            pb = [self.pse(x) for x in (bs if per_b else bs[:1])]
            sem["bias"] = np.stack(pb) if pb else None
        else:
            sem["bias"] = None
        if self.op == "bwd":
            sem["dy"] = stack("dy", self.N1, self.Dv, False)
        if "sink" in self.t:
            sem["sink"] = self.t["sink"].astype(np.float32)
        return sem

    def calls_per_batch(self):
        """Canonical inputs per call: the whole case in one (BSH/SBH/BSND/BNSD) or one per non-empty TND batch;
        none when there is no query row to compute."""
        if self.layout == "TND":
            return [([b], self.canon(b)) for b in self.batches()]
        if self.B == 0 or self.S1 == 0 or self.N1 == 0:
            return []
        return [(list(range(self.B)), self.canon())]

    def canon_padded(self):
        """TND as one padded batch: canon(b) of every batch, zero-padded to the longest query and key sequence, the
        padding masked out in keep (so it takes no part), plus q_len / kv_len [B] int32 (the lengths)."""
        parts = [self.canon(b) for b in range(self.B)]
        L1 = max([p["q"].shape[2] for p in parts] or [0])
        L2 = max([p["k"].shape[2] for p in parts] or [0])

        def pad(x, n1, n2, axis1, axis2, fill=0):
            w = [(0, 0)] * x.ndim
            w[axis1] = (0, n1 - x.shape[axis1])
            if axis2 is not None:
                w[axis2] = (0, n2 - x.shape[axis2])
            return np.pad(x, w, constant_values=fill)

        sem = dict(parts[0]) if parts else {}
        sem["q"] = np.concatenate([pad(p["q"], L1, 0, 2, None) for p in parts])
        sem["k"] = np.concatenate([pad(p["k"], L2, 0, 2, None) for p in parts])
        sem["v"] = np.concatenate([pad(p["v"], L2, 0, 2, None) for p in parts])
        nm = max(p["keep"].shape[1] for p in parts)
        sem["keep"] = np.concatenate([pad(np.broadcast_to(p["keep"], (1, nm) + p["keep"].shape[2:]), L1, L2, 2, 3,
                                          False) for p in parts])
        if parts and parts[0]["bias"] is not None:
            sem["bias"] = np.concatenate([pad(np.broadcast_to(p["bias"], (1, self.N1) + p["bias"].shape[2:]), L1, L2,
                                              2, 3) for p in parts])
        if "dy" in sem:
            sem["dy"] = np.concatenate([pad(p["dy"], L1, 0, 2, None) for p in parts])
        sem["q_len"] = np.array([p["q"].shape[2] for p in parts], dtype=np.int32)
        sem["kv_len"] = np.array([p["k"].shape[2] for p in parts], dtype=np.int32)
        return sem

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
            if "sink" in self.t:
                outs["dsink"] = np.zeros((self.N1,), dtype=np.float32)
            return outs
        return {"attention_out": self.alloc("query", self.Dv, self.N1),
                "softmax_max": np.zeros(self.softmax_shape(), dtype=np.float32),
                "softmax_sum": np.zeros(self.softmax_shape(), dtype=np.float32)}

    def save_outputs(self, outs):
        """Writes alloc_outputs' arrays: gradients and attention_out in the case's dtype, the statistics in fp32."""
        for name, arr in outs.items():
            self.save(name, arr, typed=name not in ("softmax_max", "softmax_sum", "dsink"))

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


def band_keep(lo, hi, S1, S2):
    """Boolean [S1, S2]: True where lo <= j - i <= hi (a bound of None: no bound on that side)."""
    d = np.arange(S2)[None, :] - np.arange(S1)[:, None]
    ok = np.ones((S1, S2), dtype=bool)
    if lo is not None:
        ok &= d >= lo
    if hi is not None:
        ok &= d <= hi
    return ok


def softmax_stats(x, sink=None):
    """Row max and sum of exp(x - max) of scores x [N, S1, S2] (masked = -inf), fp32; D1 values for empty rows.
    sink [N] (D6): one more logit per head, included in both."""
    x = x.astype(np.float32)
    if sink is not None:
        x = np.concatenate([x, np.broadcast_to(sink.astype(np.float32)[:, None, None], x.shape[:2] + (1,))], -1)
    if x.shape[-1] == 0:
        m = np.full(x.shape[:2], -np.inf, dtype=np.float32)
    else:
        m = x.max(axis=-1)
    empty = ~np.isfinite(m) & (m < 0)
    ms = np.where(empty, 0, m).astype(np.float32)
    l = np.exp(x - ms[..., None]).sum(axis=-1, dtype=np.float32) if x.shape[-1] else np.zeros_like(ms)
    return np.where(empty, -FLT_MAX, m).astype(np.float32), np.where(empty, FLT_MAX, l).astype(np.float32)


def bias_as(bias, dtype, what="pse"):
    """The fp64 bias as the float32 values of a framework bias of `dtype`: fp32 rounds to nearest (half an ulp of a
    score, below the rounding of the fp32 score it is added to); fp16 / bf16 must be exact, else Unsupported (a
    rounded pse would be our mapping error)."""
    b32 = bias.astype(np.float32)
    if dtype == "fp32":
        return b32
    r = round_to(b32, dtype)
    fin = np.isfinite(bias)
    if not np.array_equal(r[fin].astype(np.float64), bias[fin]):
        raise Unsupported("the %s as a %s tensor would round (the framework takes it in the input dtype)"
                          % (what, dtype))
    return r


def scores_stats(sem):
    """softmax_max / softmax_sum [B, N1, S1] of the canonical inputs (the frameworks do not return them) from the fp32
    scores x = q k^T * scale + bias, masked = -inf, each computed in fp64 and rounded once: these are the runner's own
    outputs, and an fp32 matmul's score error can exceed the verifier's bound on large scores (a softmax-stats FAIL
    that would be ours, not the framework's)."""
    q, k, keep, bias = sem["q"], sem["k"], sem["keep"], sem.get("bias")
    G = q.shape[1] // max(k.shape[1], 1)
    ms, ls = [], []
    for bb in range(q.shape[0]):  # one batch at a time: [N1, S1, S2] in fp64
        kk = np.repeat(k[bb], G, axis=0).astype(np.float64)
        x = np.matmul(q[bb].astype(np.float64), kk.transpose(0, 2, 1)) * np.float64(sem["scale"])
        if bias is not None:
            x = x + bias[bb if bias.shape[0] > 1 else 0].astype(np.float64)
        x = np.where(keep[bb if keep.shape[0] > 1 else 0], x.astype(np.float32), np.float32(-np.inf))
        m, l = softmax_stats(x, sem.get("sink"))
        ms.append(m)
        ls.append(l)
    return ms, ls


def drive(c, calls, prepare, build, run, cache=None):
    """Runs the calls: run(build(p), prepare(sem, p), p) returns canonical outputs, "out" [B,N1,S1,Dv] (and the
    framework's own "softmax_max" / "softmax_sum" [B,N1,S1] if it has them; else they come from fp32 scores) or "dq"
    [B,N1,S1,Dqk], "dk" [B,N2,S2,Dqk], "dv" [B,N2,S2,Dv] (+ "dsink" [N1]); writes the case's outputs. cache: a
    dict keeping build()'s results between calls and cases (keyed by p)."""
    outs = c.alloc_outputs()
    for call in calls:
        key = json.dumps(call.p, sort_keys=True)
        if cache is None:
            m = build(call.p)
        else:
            if key not in cache:
                cache[key] = build(call.p)
            m = cache[key]
        res = run(m, prepare(call.sem, call.p), call.p)
        if c.op == "bwd":
            for i, b in enumerate(call.batches):
                s1, s2 = c.rows(b, False)[1], c.rows(b, True)[1]  # a padded call (TND) gives more rows
                dq, dk = np.asarray(res["dq"][i], np.float32)[:, :s1], np.asarray(res["dk"][i], np.float32)[:, :s2]
                c.put(outs["dq"], b, dq[..., :c.Dk], False)
                c.put(outs["dk"], b, dk[..., :c.Dk], True)
                c.put(outs["dv"], b, np.asarray(res["dv"][i], np.float32)[:, :s2], True)
                if c.Drope:
                    c.put(outs["dq_rope"], b, dq[..., c.Dk:], False)
                    c.put(outs["dk_rope"], b, dk[..., c.Dk:], True)
            if "dsink" in outs:
                outs["dsink"] += np.asarray(res["dsink"], np.float32)
        else:
            if "softmax_max" in res:  # the framework's own statistics [B, N1, S1]
                ms, ls = np.asarray(res["softmax_max"], np.float32), np.asarray(res["softmax_sum"], np.float32)
            else:
                ms, ls = scores_stats(call.sem)
            for i, b in enumerate(call.batches):
                s1 = c.rows(b, False)[1]
                c.put(outs["attention_out"], b, np.asarray(res["out"][i], np.float32)[:, :s1], False)
                c.put_stats(outs["softmax_max"], b, ms[i][:, :s1])
                c.put_stats(outs["softmax_sum"], b, ls[i][:, :s1])
    c.save_outputs(outs)


# ---- runner declarations and command line -------------------------------------------------------------------------

def axes(**limits):
    """The declared axes of an op (docs/exec-protocol.md) as far as this plumbing maps the operator (every layout,
    sparse mode, mask shape, pse type and shape; top-k without repeats; no dropout, sink or fp8), with a runner's own
    limits as keyword overrides, e.g. axes(dtypes=["fp32", "fp16"], dv_ne_dk=False)."""
    d = {"dtypes": ["fp32", "fp16", "bf16"], "layouts": ["BSH", "SBH", "BSND", "BNSD", "TND"],
         "sparse_modes": list(range(9)), "mask_shapes": ["SS", "11SS", "B1SS", "BNSS"], "band": True, "prefix": True,
         "pse_types": [0, 1, 2, 3], "pse_shapes": ["BNSS", "BN1S", "1NSS", "compressed"], "dropout": False,
         "sink": False, "topk": "unique", "rope": True, "gqa": True, "dv_ne_dk": True, "head_dim": [1, 768],
         "empty": True}
    d.update(limits)
    return d


def caps(runner, framework, version, ops, variant=None, variants=None, unavailable=None, notes=()):
    """A runner's capability declaration (docs/exec-protocol.md, "Runner capabilities (declared)")."""
    d = {"format": flashref_runner.CAPS_FORMAT, "runner": runner, "framework": {"name": framework,
                                                                                "version": version}, "ops": ops}
    if variant is not None:
        d["variant"] = variant
    if variants:
        d["variants"] = list(variants)
    if unavailable:
        d["unavailable"] = unavailable
    if notes:
        d["notes"] = list(notes)
    return d


def runner(plan, prepare, build, run, imports, describe, variants=None, cache=None):
    """handle(variant, Case) and repro(case_dir, out_path, variant=None) of a runner made of plan(Case, variant) ->
    [Call], prepare / build / run (the framework call, copied into reproducers), the import lines those need, and
    describe(variant) -> the reproducer's pip / title / versions / runner texts (panel_repro.write). cache: a dict
    keeping build()'s results across calls and cases (None: build every call)."""
    def handle(variant, c):
        drive(c, plan(c, variant), prepare, build, run, cache)

    def repro(case_dir, out_path, variant=None, **kw):
        """Writes the standalone reproducer of case_dir to out_path (Unsupported when the runner SKIPs it)."""
        if variant is None and variants:
            variant = variants[0]
        c = Case(case_dir)
        return panel_repro.write(c, plan(c, variant), out_path, [prepare, build, run], imports,
                                 **dict(describe(variant), **kw))
    return handle, repro


def runner_main(handle, capabilities, repro, variants=None):
    """The command line of a panel runner: `runner.py [VARIANT] CASE_DIR` (exec:), the persistent loop when
    FLASHREF_PROTOCOL is set, `--capabilities`, or `--repro CASE_DIR OUT.py` (exit 77 with the reason when the
    case is not supported). handle(variant, Case), capabilities(variant), repro(case_dir, out, variant=...)."""
    prog = os.path.basename(sys.argv[0])
    args = sys.argv[1:]
    variant = None
    if variants:
        if not args or args[0] not in variants:
            sys.stderr.write("usage: %s %s [CASE_DIR | --capabilities | --repro CASE_DIR OUT.py]\n"
                             % (prog, "|".join(variants)))
            sys.exit(2)
        variant = args.pop(0)
    if args[:1] == ["--repro"]:
        if len(args) != 3:
            sys.stderr.write("usage: %s %s--repro CASE_DIR OUT.py\n" % (prog, variant + " " if variant else ""))
            sys.exit(2)
        try:
            repro(args[1], args[2], variant=variant)
        except Unsupported as e:
            sys.stderr.write("SKIP: %s\n" % e)
            sys.exit(77)
        print(args[2])
        sys.exit(0)
    # "repro": true tells a hunt that `RUNNER [VARIANT] --repro CASE_DIR OUT.py` writes a reproducer (above).
    flashref_runner.serve(lambda d: handle(variant, Case(d)), argv=args,
                          capabilities=lambda: dict(capabilities(variant), repro=True))
