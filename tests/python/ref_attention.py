"""Independent numpy reference of FlashAttentionScore forward and backward (flashref spec, decisions 0b and
docs/semantics-decisions.md).

Written from the spec only, never from the C code: dense float64, scores materialised per batch as [N1, S1_b, S2_b].
It is the second oracle that the C golden engine is checked against (tests/python/check_cases.py).

Conventions:
- tensors are numpy arrays; dtypes numpy lacks arrive as bit patterns (bf16 as uint16, e4m3fn/e5m2/hif8 as uint8) and
  are decoded here with decoders written from spec sections 9-10 (decode()).
- params is the case.json "params" dict (docs/case-format.md); dtype is the case's q/k/v dtype name.
- forward() returns attention_out (query layout, last dim Dv), softmax_max, softmax_sum (spec shapes, 8 copies), all
  float64 and without any final rounding, the way the golden engine writes them.
- backward() returns dq, dk, dv (and dq_rope, dk_rope, dsink when rope / sink are present), float64.
"""

import math

import numpy as np

FLT_MAX = float(np.finfo(np.float32).max)
FP8_TYPES = ("e4m3fn", "e5m2", "hif8")


# ---------------------------------------------------------------------------------------------------------------
# Number formats (spec sections 9, 10): exact decoders from bit patterns, built as 256-entry tables for 8-bit types.

def _e4m3fn_value(c):
    s = -1.0 if c & 0x80 else 1.0
    e = (c >> 3) & 0xF
    m = c & 0x7
    if e == 0xF and m == 0x7:
        return math.nan
    if e == 0:
        return s * (m / 8.0) * 2.0 ** -6
    return s * 2.0 ** (e - 7) * (1.0 + m / 8.0)


def _e5m2_value(c):
    s = -1.0 if c & 0x80 else 1.0
    e = (c >> 2) & 0x1F
    m = c & 0x3
    if e == 0x1F:
        return s * math.inf if m == 0 else math.nan
    if e == 0:
        return s * (m / 4.0) * 2.0 ** -14
    return s * 2.0 ** (e - 15) * (1.0 + m / 4.0)


def _hif8_exponent(field, k):
    """Sign-magnitude exponent with implicit leading 1 (spec 9.1): field of width k+1, sign bit on top."""
    if field >= (1 << k):
        return -field
    return field + (1 << k)


def _hif8_value(c):
    if c == 0x00:
        return 0.0
    if c == 0x80:
        return math.nan
    if c == 0x6F:
        return math.inf
    if c == 0xEF:
        return -math.inf
    s = -1.0 if c & 0x80 else 1.0
    b = c & 0x7F
    if (b >> 5) == 0b11:      # 11 s e2 e1 e0 m0
        e, m, mw = _hif8_exponent((b >> 1) & 0xF, 3), b & 0x1, 1
    elif (b >> 5) == 0b10:    # 10 s e1 e0 m1 m0
        e, m, mw = _hif8_exponent((b >> 2) & 0x7, 2), b & 0x3, 2
    elif (b >> 5) == 0b01:    # 01 s e0 m2 m1 m0
        e, m, mw = _hif8_exponent((b >> 3) & 0x3, 1), b & 0x7, 3
    elif (b >> 4) == 0b001:   # 001 s m2 m1 m0
        e, m, mw = _hif8_exponent((b >> 3) & 0x1, 0), b & 0x7, 3
    elif (b >> 3) == 0b0001:  # 0001 m2 m1 m0
        e, m, mw = 0, b & 0x7, 3
    else:                     # 0000 m2 m1 m0: denormal 2^(M-23); M = 0 handled above (0x00 / 0x80)
        return s * 2.0 ** ((b & 0x7) - 23)
    return s * 2.0 ** e * (1.0 + m / float(1 << mw))


E4M3FN_TABLE = np.array([_e4m3fn_value(c) for c in range(256)], dtype=np.float64)
E5M2_TABLE = np.array([_e5m2_value(c) for c in range(256)], dtype=np.float64)
HIF8_TABLE = np.array([_hif8_value(c) for c in range(256)], dtype=np.float64)


def decode_bf16(bits):
    bits = np.asarray(bits, dtype=np.uint16)
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)


def decode(a, dtype):
    """Exactly widen an array holding values (fp64/fp32/fp16/ints/bool) or bit patterns (bf16, fp8, hif8) to float64."""
    a = np.asarray(a)
    if dtype == "bf16":
        return decode_bf16(a)
    if dtype == "e4m3fn":
        return E4M3FN_TABLE[a.astype(np.uint8)]
    if dtype == "e5m2":
        return E5M2_TABLE[a.astype(np.uint8)]
    if dtype == "hif8":
        return HIF8_TABLE[a.astype(np.uint8)]
    return a.astype(np.float64)


def decode_auto(a, dtype):
    """Decode a floating tensor of a case: uint16 files hold bf16 bit patterns, uint8 files the case's fp8 dtype
    (docs/case-format.md); fp64/fp32/fp16 files hold values."""
    a = np.asarray(a)
    if a.dtype == np.uint16:
        return decode_bf16(a)
    if a.dtype == np.uint8 and dtype in FP8_TYPES:
        return decode(a, dtype)
    return a.astype(np.float64)


def f32(x):
    """The fp32 value of a Python number, as float64 (D10: operator constants are fp32)."""
    return float(np.float32(x))


# ---------------------------------------------------------------------------------------------------------------
# Layouts (spec 2.1): per-batch views [N, S_b, D] and back.

class Dims:
    def __init__(self, params, q_shape, k_shape, v_shape):
        lay = params["input_layout"].upper()
        self.layout = lay
        n1 = int(params["head_num"])
        self.N1 = n1
        if lay in ("BSH", "SBH"):
            self.B = q_shape[0] if lay == "BSH" else q_shape[1]
            self.S1 = q_shape[1] if lay == "BSH" else q_shape[0]
            self.S2 = k_shape[1] if lay == "BSH" else k_shape[0]
            self.Dk = q_shape[2] // n1 if n1 else 0
            self.N2 = k_shape[2] // self.Dk if self.Dk else 0
            self.Dv = v_shape[2] // self.N2 if self.N2 else 0
        elif lay in ("BSND", "BNSD"):
            self.B = q_shape[0]
            self.S1 = q_shape[1] if lay == "BSND" else q_shape[2]
            self.S2 = k_shape[1] if lay == "BSND" else k_shape[2]
            self.N2 = k_shape[2] if lay == "BSND" else k_shape[1]
            self.Dk = q_shape[3]
            self.Dv = v_shape[3]
        elif lay == "TND":
            self.N2 = k_shape[1]
            self.Dk = q_shape[2]
            self.Dv = v_shape[2]
        else:
            raise ValueError("input_layout: unknown %r" % lay)
        if lay == "TND":
            cq = [int(x) for x in params["actual_seq_qlen"]]
            ck = [int(x) for x in params["actual_seq_kvlen"]]
            self.B = len(cq)
            self.q0 = [0] + cq[:-1]
            self.k0 = [0] + ck[:-1]
            self.s1 = [cq[b] - self.q0[b] for b in range(self.B)]
            self.s2 = [ck[b] - self.k0[b] for b in range(self.B)]
            self.T1 = q_shape[0]
            self.S1 = max(self.s1) if self.B else 0
            self.S2 = max(self.s2) if self.B else 0
        else:
            self.q0 = [0] * self.B
            self.k0 = [0] * self.B
            self.s1 = [self.S1] * self.B
            self.s2 = [self.S2] * self.B
        self.G = n1 // self.N2 if self.N2 else 1


def to_bnsd(x, layout, n, b_count):
    """[layout] -> [B, N, S, D] for the fixed-length layouts."""
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(0, 2, 1, 3)
    if layout == "BSH":
        bb, s, h = x.shape
        d = h // n if n else 0
        return x.reshape(bb, s, n, d).transpose(0, 2, 1, 3)
    if layout == "SBH":
        s, bb, h = x.shape
        d = h // n if n else 0
        return x.reshape(s, bb, n, d).transpose(1, 2, 0, 3)
    raise ValueError(layout)


# Alike examples/python_runner/run_case.py:from_bnsd: kept apart because this is the tests' independent reference
# (written from the spec) and that one an example that must run standalone. Alike tests/python_pkg/test_npu.py:to_bnsd
# too: that one takes torch tensors of every dtype.
def from_bnsd(x, layout):
    """[B, N, S, D] -> [layout]."""
    bb, n, s, d = x.shape
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(0, 2, 1, 3)
    if layout == "BSH":
        return x.transpose(0, 2, 1, 3).reshape(bb, s, n * d)
    if layout == "SBH":
        return x.transpose(2, 0, 1, 3).reshape(s, bb, n * d)
    raise ValueError(layout)


def batch_view(x, dims, b, n, kv):
    """Per-batch [N, S_b, D] of a q-like (kv=False) or k/v-like (kv=True) tensor already decoded to float64."""
    if dims.layout == "TND":
        r0 = dims.k0[b] if kv else dims.q0[b]
        ln = dims.s2[b] if kv else dims.s1[b]
        return x[r0:r0 + ln].transpose(1, 0, 2)
    return to_bnsd(x, dims.layout, n, dims.B)[b]


def assemble(parts, dims, like_shape_t, n, d, kv):
    """Inverse of batch_view for a list of per-batch [N, S_b, d] arrays."""
    if dims.layout == "TND":
        total = like_shape_t
        out = np.zeros((total, n, d))
        for b, p in enumerate(parts):
            r0 = dims.k0[b] if kv else dims.q0[b]
            out[r0:r0 + p.shape[1]] = p.transpose(1, 0, 2)
        return out
    s = dims.S2 if kv else dims.S1
    full = np.zeros((dims.B, n, s, d))
    for b, p in enumerate(parts):
        full[b] = p
    return from_bnsd(full, dims.layout)


# ---------------------------------------------------------------------------------------------------------------
# What takes part: masks and sparse modes (spec 4, D12), per batch [N1, S1_b, S2_b] booleans (True = masked).

def user_mask(mask, dims, b, s1, s2):
    m = np.asarray(mask).astype(bool)
    if m.ndim == 2:
        return np.broadcast_to(m[:s1, :s2], (dims.N1, s1, s2))
    if m.ndim == 4:
        mb = m[b] if m.shape[0] > 1 else m[0]
        return np.broadcast_to(mb[:, :s1, :s2], (dims.N1, s1, s2))
    raise ValueError("atten_mask: rank %d" % m.ndim)


def band_mask(s1, s2, pre, nxt):
    """Top-left band: masked iff j - i > next or i - j > pre."""
    i = np.arange(s1)[:, None]
    j = np.arange(s2)[None, :]
    return ((j - i) > nxt) | ((i - j) > pre)


# Alike python/flashref/_verify.py:dense_mask: kept apart because this is the independent reference the package is
# checked against (written from the spec only); sharing would make the check circular.
def sparse_masked(params, mask, dims, b):
    s1, s2 = dims.s1[b], dims.s2[b]
    shape = (dims.N1, s1, s2)
    if mask is None:
        return np.zeros(shape, dtype=bool)
    mode = int(params.get("sparse_mode", 0))
    pre = int(params.get("pre_tokens", 2147483647))
    nxt = int(params.get("next_tokens", 2147483647))
    i = np.arange(s1)[:, None]
    j = np.arange(s2)[None, :]
    if mode in (7, 8):
        nonempty = [bb for bb in range(dims.B) if dims.s1[bb] != 0]
        special = (nonempty[-1] if mode == 7 else nonempty[0]) if nonempty else -1
        if b == special:
            mode = 4
        else:
            mode = 3 if mode == 7 else 2
    if mode == 0:
        return user_mask(mask, dims, b, s1, s2) | band_mask(s1, s2, pre, nxt)[None]
    if mode == 1:
        return user_mask(mask, dims, b, s1, s2).copy()
    if mode == 2:
        f = j > i
    elif mode == 3:
        f = j > i + (s2 - s1)
    elif mode == 4:
        f = ((j - i) > nxt + (s2 - s1)) | ((i - j) > pre - (s2 - s1))
    elif mode == 5:
        prefix = params.get("prefix")
        f = np.zeros((s1, s2), dtype=bool)
        if prefix is not None and int(prefix[b]) <= s2:
            f = (j > i + (s2 - s1)) & (j >= int(prefix[b]))
        return user_mask(mask, dims, b, s1, s2) | f[None]
    elif mode == 6:
        f = (j > i + (s2 - s1)) & (j >= int(params["prefix"][b]))
    else:
        raise ValueError("sparse_mode: %d" % mode)
    return np.broadcast_to(f[None], shape).copy()


# ---------------------------------------------------------------------------------------------------------------
# pse (spec 5): the additive term per batch [N1, S1_b, S2_b] in float64.

def pse_term(params, pse, dims, b, dtype):
    s1, s2 = dims.s1[b], dims.s2[b]
    ptype = int(params.get("pse_type", 1))
    if ptype in (2, 3):
        sl = decode(pse, "fp32")
        slopes = sl[b] if sl.ndim == 2 else sl  # [B,N1] or [N1]
        qs = int(params.get("q_start_idx", 0) or 0)
        ks = int(params.get("kv_start_idx", 0) or 0)
        if dims.layout == "TND" and int(params.get("sparse_mode", 0)) == 8 and b != 0:
            qs = ks = 0
        i = np.arange(s1)[:, None]
        j = np.arange(s2)[None, :]
        dist = np.abs((j + ks) - (i + qs)).astype(np.float64)
        if ptype == 3:
            dist = np.sqrt(dist)
        return -slopes[:, None, None] * dist[None]
    p = decode_auto(pse, dtype)
    pb = p[b] if p.shape[0] > 1 else p[0]  # [N1, rows, cols]
    rows = pb.shape[1]
    if dims.layout != "TND" and rows == s1:
        return pb[:, :, :s2]
    if rows == 1 and dims.layout != "TND":
        return np.broadcast_to(pb[:, :1, :s2], (dims.N1, s1, s2))
    # Compressed Toeplitz form [.., N1, 1024, S]: the last 1024 rows of a full [S, S] pse whose value depends only on
    # the diagonal j - i (spec 5.2); S is the tensor's column count. A batch (S1_b == S2_b, TND) reads the same
    # diagonal: f(j - i) = C[r][(j - i) + (S - 1024) + r] for any valid row r.
    c = pb
    rc, scol = c.shape[1], c.shape[2]
    out = np.zeros((dims.N1, s1, s2))
    jj = np.arange(s2)
    for ii in range(s1):
        iv = ii + scol - s1  # the batch sits at the bottom-right of the full matrix (same diagonals)
        jv = jj + scol - s1
        if iv >= scol - rc:
            r, col = iv - (scol - rc), jv
        else:
            r, col = 0, jv - iv + scol - rc
        ok = (col >= 0) & (col < scol)
        out[:, ii, ok] = c[:, r, col[ok]]
    return out


# ---------------------------------------------------------------------------------------------------------------
# Core per batch.

def _drop_factor(params, drop_mask, dims, b):
    """Z [N1, S1_b, S2_b]: fp32(1/fp32(keep_prob)) where kept, 0 where dropped; None when keep_prob == 1."""
    kp = float(params.get("keep_prob", 1.0))
    if kp == 1.0:
        return None
    s1, s2 = dims.s1[b], dims.s2[b]
    if dims.layout == "TND":
        start = dims.N1 * sum(dims.s1[x] * dims.s2[x] for x in range(b))
    else:
        start = b * dims.N1 * s1 * s2
    n = dims.N1 * s1 * s2
    bits = np.unpackbits(np.asarray(drop_mask, dtype=np.uint8), bitorder="little")[start:start + n]
    if bits.size != n:
        raise ValueError("drop_mask: too short")
    factor = float(np.float32(1.0) / np.float32(kp))
    return bits.reshape(dims.N1, s1, s2).astype(np.float64) * factor


def _topk_count(params, topk, dims, b):
    """C [N1, S1_b, S2_b]: how many times key j is listed for row i (D7), or None without top-k."""
    if topk is None:
        return None
    s1, s2 = dims.s1[b], dims.s2[b]
    t = np.asarray(topk).astype(np.int64)
    if dims.layout == "TND":
        rows = t[dims.q0[b]:dims.q0[b] + s1]  # [S1_b, W] or [S1_b, N2, W]
        per_kv = rows.ndim == 3
        if per_kv:
            rows = rows.transpose(1, 0, 2)
    else:
        rows = t[b]  # [S1, W] or [N2, S1, W]
        per_kv = rows.ndim == 3
    cnt = np.zeros((dims.N1, s1, s2))
    for h in range(dims.N1):
        r = rows[h // dims.G] if per_kv else rows
        for ii in range(s1):
            for idx in r[ii]:
                if 0 <= idx < s2:
                    cnt[h, ii, idx] += 1.0
    return cnt


def _dequant(x, scale, dims, b, n, blk, kv):
    """x [N, S_b, D] times the per-block fp32 dequant scale [B, N, ceil(S/blk), 1] (D5)."""
    if scale is None:
        return x
    sc = decode(scale, "fp32")[b, :, :, 0]  # [N, blocks]
    rows = np.arange(x.shape[1]) // blk
    return x * sc[:, rows][:, :, None]


class _Batch:
    """Everything of one batch the forward and backward share: x, the participation weight and the operands."""

    def __init__(self, params, dtype, inp, dims, b):
        self.b = b
        n1, n2, g = dims.N1, dims.N2, dims.G
        s1, s2 = dims.s1[b], dims.s2[b]
        fp8 = dtype in FP8_TYPES
        q = batch_view(decode_auto(inp["query"], dtype), dims, b, n1, False)
        k = batch_view(decode_auto(inp["key"], dtype), dims, b, n2, True)
        v = batch_view(decode_auto(inp["value"], dtype), dims, b, n2, True)
        if fp8:
            q = _dequant(q, inp.get("d_scale_q"), dims, b, n1, 128, False)
            k = _dequant(k, inp.get("d_scale_k"), dims, b, n2, 256, True)
            v = _dequant(v, inp.get("d_scale_v"), dims, b, n2, 256, True)
        kh = k[np.arange(n1) // g]  # [N1, S2, Dk]: query head h reads kv head h / G (spec 2.2)
        vh = v[np.arange(n1) // g]
        s = np.einsum("hid,hjd->hij", q, kh)
        self.q, self.kh, self.vh = q, kh, vh
        self.qr = self.krh = None
        if inp.get("query_rope") is not None:
            qr = batch_view(decode_auto(inp["query_rope"], dtype), dims, b, n1, False)
            kr = batch_view(decode_auto(inp["key_rope"], dtype), dims, b, n2, True)
            self.qr, self.krh = qr, kr[np.arange(n1) // g]
            s = s + np.einsum("hid,hjd->hij", qr, self.krh)
        self.scale = f32(params.get("scale_value", 1.0))
        ptype = int(params.get("pse_type", 1))
        if inp.get("real_shift") is not None:
            pse = pse_term(params, inp["real_shift"], dims, b, dtype)
            x = (s + pse) * self.scale if ptype == 1 else s * self.scale + pse
        else:
            x = s * self.scale
        masked = sparse_masked(params, inp.get("atten_mask"), dims, b)
        cnt = _topk_count(params, inp.get("topk_indices"), dims, b)
        w = np.where(masked, 0.0, 1.0) if cnt is None else np.where(masked, 0.0, cnt)
        self.x, self.w = x, w  # w: how many times (i, j) takes part (0 = masked / not gathered)
        self.z = _drop_factor(params, inp.get("drop_mask"), dims, b)
        self.sink = decode(inp["sink"], "fp32") if inp.get("sink") is not None else None

    def stats(self):
        """Row max and sum [N1, S1_b] (D1, D6), and whether the row has any real logit."""
        part = self.w > 0
        xm = np.where(part, self.x, -np.inf)
        m = xm.max(axis=2) if xm.shape[2] else np.full(xm.shape[:2], -np.inf)
        if self.sink is not None:
            m = np.maximum(m, self.sink[:, None])
        alive = np.isfinite(m) | (m == np.inf)
        msafe = np.where(alive, m, 0.0)
        e = np.where(part, np.exp(np.where(part, self.x, 0.0) - msafe[:, :, None]), 0.0) * self.w
        l = e.sum(axis=2)
        if self.sink is not None:
            l = l + np.exp(self.sink[:, None] - msafe)
        m = np.where(alive, m, -FLT_MAX)
        l = np.where(alive, l, FLT_MAX)
        return m, l, e, alive


def _excl_matmul(a, b, valid):
    """out[h,i,d] = sum over valid (h,i,j) of a[h,i,j] * b[h,j,d]. Excluded positions never touch b, so NaN/Inf in a
    masked or never-gathered K/V row cannot leak into the result (D2: masking is exclusion)."""
    fin = np.isfinite(b)
    out = np.einsum("hij,hjd->hid", np.where(valid, a, 0.0), np.where(fin, b, 0.0))
    if not fin.all():
        for h, j in zip(*np.nonzero(~fin.all(axis=2))):
            rows = valid[h, :, j]
            bad = np.where(fin[h, j], 0.0, b[h, j])  # only the non-finite entries; IEEE rules for those
            out[h, rows] += a[h, rows, j][:, None] * bad[None, :]
    return out


def _softmax_pack(parts, dims, params):
    """Per-batch [N1, S1_b] values -> the spec's softmax_max/sum shape with 8 copies."""
    if dims.layout == "TND":
        t = dims.T1
        out = np.zeros((dims.N1, t))
        for b, p in enumerate(parts):
            out[:, dims.q0[b]:dims.q0[b] + p.shape[1]] = p
        if params.get("softmax_layout", "") == "same_as_input":
            out = out.T
        return np.repeat(out[..., None], 8, axis=-1)
    out = np.zeros((dims.B, dims.N1, dims.S1))
    for b, p in enumerate(parts):
        out[b] = p
    return np.repeat(out[..., None], 8, axis=-1)


def _softmax_unpack(a, dims, params, b):
    """Column 0 of the stored softmax_max/sum for batch b as [N1, S1_b]."""
    a = np.asarray(a, dtype=np.float64)[..., 0]
    if dims.layout == "TND":
        if params.get("softmax_layout", "") == "same_as_input":
            a = a.T
        return a[:, dims.q0[b]:dims.q0[b] + dims.s1[b]]
    return a[b]


def _dims(params, inp):
    return Dims(params, np.shape(inp["query"]), np.shape(inp["key"]), np.shape(inp["value"]))


def forward(params, inputs, dtype):
    """Returns dict attention_out, softmax_max, softmax_sum (float64)."""
    dims = _dims(params, inputs)
    outs, ms, ls = [], [], []
    for b in range(dims.B):
        bt = _Batch(params, dtype, inputs, dims, b)
        m, l, e, alive = bt.stats()
        pe = e if bt.z is None else e * bt.z
        o = _excl_matmul(pe, bt.vh, bt.w > 0) / l[:, :, None]
        o = np.where(alive[:, :, None], o, 0.0)
        o[~np.any(bt.w > 0, axis=2)] = 0.0  # no key takes part (a sink alone carries no value): exactly 0
        outs.append(o)
        ms.append(m)
        ls.append(l)
    t1 = np.shape(inputs["query"])[0]
    return {
        "attention_out": assemble(outs, dims, t1, dims.N1, dims.Dv, False),
        "softmax_max": _softmax_pack(ms, dims, params),
        "softmax_sum": _softmax_pack(ls, dims, params),
    }


def backward(params, inputs, dtype):
    """Spec 8.2 with P from the given softmax_max/sum and D from the given attention_in. Returns float64 gradients."""
    dims = _dims(params, inputs)
    n1, n2, g = dims.N1, dims.N2, dims.G
    dqs, dks, dvs, dqrs, dkrs = [], [], [], [], []
    dsink = np.zeros(n1)
    has_rope = inputs.get("query_rope") is not None
    for b in range(dims.B):
        bt = _Batch(params, dtype, inputs, dims, b)
        m = _softmax_unpack(inputs["softmax_max"], dims, params, b)
        l = _softmax_unpack(inputs["softmax_sum"], dims, params, b)
        dy = batch_view(decode_auto(inputs["dy"], dtype), dims, b, n1, False)
        o = batch_view(decode_auto(inputs["attention_in"], dtype), dims, b, n1, False)
        part = bt.w > 0
        p = np.where(part, np.exp(np.where(part, bt.x, 0.0) - m[:, :, None]), 0.0) * bt.w / l[:, :, None]
        z = np.ones_like(p) if bt.z is None else bt.z
        part_t = part.transpose(0, 2, 1)
        dvh = _excl_matmul((p * z).transpose(0, 2, 1), dy, part_t)  # per query head [N1, S2, Dv]
        with np.errstate(invalid="ignore", over="ignore"):  # NaN/Inf in excluded V rows is selected away
            dp = np.where(part, np.einsum("hid,hjd->hij", dy, bt.vh), 0.0) * z
        dd = np.einsum("hid,hid->hi", dy, o)                  # D_i
        ds = np.where(part, p * (dp - dd[:, :, None]), 0.0)
        dq = bt.scale * _excl_matmul(ds, bt.kh, part)
        dkh = bt.scale * _excl_matmul(ds.transpose(0, 2, 1), bt.q, part_t)
        s2 = dims.s2[b]
        dk = dkh.reshape(n2, g, s2, dims.Dk).sum(axis=1)      # a kv head sums its G query heads
        dv = dvh.reshape(n2, g, s2, dims.Dv).sum(axis=1)
        dqs.append(dq)
        dks.append(dk)
        dvs.append(dv)
        if has_rope:
            dqrs.append(bt.scale * _excl_matmul(ds, bt.krh, part))
            dkr = bt.scale * _excl_matmul(ds.transpose(0, 2, 1), bt.qr, part_t)
            dkrs.append(dkr.reshape(n2, g, s2, dkr.shape[2]).sum(axis=1))
        if bt.sink is not None:
            alive = l != FLT_MAX
            psink = np.where(alive, np.exp(bt.sink[:, None] - np.where(alive, m, 0.0)) / l, 0.0)
            dsink -= (psink * dd).sum(axis=1)
    tq = np.shape(inputs["query"])[0]
    tk = np.shape(inputs["key"])[0]
    res = {
        "dq": assemble(dqs, dims, tq, n1, dims.Dk, False),
        "dk": assemble(dks, dims, tk, n2, dims.Dk, True),
        "dv": assemble(dvs, dims, tk, n2, dims.Dv, True),
    }
    if has_rope:
        dr = np.shape(inputs["query_rope"])[-1] if dims.layout in ("TND", "BSND", "BNSD") else \
            np.shape(inputs["query_rope"])[-1] // n1
        res["dq_rope"] = assemble(dqrs, dims, tq, n1, dr, False)
        res["dk_rope"] = assemble(dkrs, dims, tk, n2, dr, True)
    if inputs.get("sink") is not None:
        res["dsink"] = dsink
    return res
