"""Broken attention implementations for judging the verifier's diagnosis: one defect switch per run.

Written independently of the verifier's own mutant zoo (src/verify/zoo/mutants*.c): numpy, per batch and vectorised over
heads and query rows, a key-tile loop of online softmax for the forward and the dense spec formulas for the backward.
The problem's semantics (layouts, dtypes, masks, pse, dropout bits) come from the independent numpy reference
(tests/python/ref_attention.py); every defect below is this file's own code.

usage: broken_runner.py --defect NAME CASE_DIR      (an exec: runner, case-format.md)
       broken_runner.py --list                       (the defects, one per line: name, op, expected diagnosis, set)
exit 0: outputs written; 77: case not supported (fp8, rope or sink backward, gqa-mod with pse/rope); 2: usage.
"""

import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import ref_attention as ra  # noqa: E402
import ref_runner as rr  # noqa: E402

SKIP = 77

# name: (op the defect lives in, the diagnosis it must get (or "unknown"), "tuned" / "held-out").
# Held-out defects were written with the others and never used while the diagnosis was tuned.
DEFECTS = {
    "none": ("-", "none", "control"),
    "band-next": ("fwd", "band", "tuned"),
    "causal-top-left": ("fwd", "causal-align", "tuned"),
    "scale-twice": ("fwd", "scale", "tuned"),
    "key-tile-drop-64": ("fwd", "tile-tail", "tuned"),
    "no-rescale-64": ("fwd", "no-rescale", "tuned"),
    "fp16-acc-64": ("fwd", "accumulation", "tuned"),
    "pse-order": ("fwd", "pse-order", "tuned"),
    "gqa-mod": ("both", "gqa-map", "tuned"),
    "dq-no-scale": ("bwd", "grad-scale", "tuned"),
    "dpsum-from-do": ("bwd", "dpsum", "tuned"),
    "band-pre": ("fwd", "band", "held-out"),
    "last-query-row": ("fwd", "tile-tail", "held-out"),
    "no-rescale-128-both": ("fwd", "no-rescale", "held-out"),
    "dropout-no-scale": ("fwd", "dropout", "held-out"),
    "dk-no-scale": ("bwd", "grad-scale", "held-out"),
    "bwd-scale-missing": ("bwd", "scale", "held-out"),
    "dv-no-dropout": ("bwd", "unknown", "held-out"),
    "p-fp16": ("fwd", "p-rounding", "held-out"),
}


class Unsupported(Exception):
    pass


def extra_band_mask(params, dims, b, side):
    """The one diagonal an off-by-one band comparison (>= for >) also masks: side 'next' or 'pre'."""
    s1, s2 = dims.s1[b], dims.s2[b]
    mode = int(params.get("sparse_mode", 0))
    pre = int(params.get("pre_tokens", 2147483647))
    nxt = int(params.get("next_tokens", 2147483647))
    i = np.arange(s1)[:, None]
    j = np.arange(s2)[None, :]
    if mode == 0:
        return (j - i == nxt) if side == "next" else (i - j == pre)
    if mode == 4:
        return (j - i == nxt + (s2 - s1)) if side == "next" else (i - j == pre - (s2 - s1))
    if mode == 3 and side == "next":
        return j - i == s2 - s1
    if mode == 2 and side == "next":
        return j - i == 0
    return np.zeros((s1, s2), dtype=bool)


class Batch:
    """One batch: the reference's operands, then this defect's changes to them."""

    def __init__(self, params, dtype, inp, dims, b, defect):
        self.bt = bt = ra._Batch(params, dtype, inp, dims, b)
        self.x, self.w, self.z = bt.x, bt.w, bt.z
        self.vh, self.kh, self.q = bt.vh, bt.kh, bt.q
        self.scale = bt.scale
        n1, n2 = dims.N1, dims.N2
        has_pse = inp.get("real_shift") is not None
        ptype = int(params.get("pse_type", 1))
        if defect in ("band-next", "band-pre"):
            extra = extra_band_mask(params, dims, b, "next" if defect == "band-next" else "pre")
            self.w = np.where(extra[None], 0.0, self.w)
        if defect == "causal-top-left" and int(params.get("sparse_mode", 0)) == 3 and inp.get("atten_mask") is not None:
            s1, s2 = dims.s1[b], dims.s2[b]
            keep = np.arange(s2)[None, :] <= np.arange(s1)[:, None]  # j <= i: top-left
            self.w = np.where(keep[None], 1.0, 0.0) * np.ones_like(self.w)
        if defect in ("scale-twice", "bwd-scale-missing", "pse-order", "gqa-mod"):
            if has_pse or inp.get("query_rope") is not None:
                if defect == "pse-order" and has_pse and ptype == 1:
                    # (s + pse) * scale recomputed as s * scale + pse
                    s = self.x / self.scale if self.scale else self.x
                    k = ra.batch_view(ra.decode_auto(inp["key"], dtype), dims, b, n2, True)
                    raw = np.einsum("hid,hjd->hij", self.q, k[np.arange(n1) // dims.G])
                    pse = s - raw
                    self.x = raw * self.scale + pse
                elif defect != "pse-order":
                    raise Unsupported("%s: pse / rope cases not supported" % defect)
            else:
                s = np.einsum("hid,hjd->hij", self.q, self.kh)
                if defect == "gqa-mod":
                    k = ra.batch_view(ra.decode_auto(inp["key"], dtype), dims, b, n2, True)
                    v = ra.batch_view(ra.decode_auto(inp["value"], dtype), dims, b, n2, True)
                    self.kh = k[np.arange(n1) % n2]
                    self.vh = v[np.arange(n1) % n2]
                    s = np.einsum("hid,hjd->hij", self.q, self.kh)
                    self.x = s * self.scale
                elif defect == "scale-twice":
                    self.x = s * self.scale * self.scale
        if defect == "dropout-no-scale" and self.z is not None:
            self.z = (self.z > 0).astype(np.float64)


def forward_batch(bat, sink, defect, tile):
    """Online softmax over key tiles of `tile`; returns out [N1, S1, Dv], max and sum [N1, S1]."""
    x, w, z, vh = bat.x, bat.w, bat.z, bat.vh
    n1, s1, s2 = x.shape
    dv = vh.shape[2]
    part = w > 0
    m = np.full((n1, s1), -np.inf)
    l = np.zeros((n1, s1))
    if sink is not None:
        m = np.repeat(sink[:, None], s1, axis=1).astype(np.float64)
        l = np.ones((n1, s1))
    acc = np.zeros((n1, s1, dv))
    for j0 in range(0, s2, tile):
        j1 = min(j0 + tile, s2)
        if defect == "key-tile-drop-64" and j1 - j0 < tile:
            break  # the loop bound forgets the partial last tile
        pt = part[:, :, j0:j1]
        xs = np.where(pt, x[:, :, j0:j1], -np.inf)
        mt = xs.max(axis=2) if j1 > j0 else np.full((n1, s1), -np.inf)
        mn = np.maximum(m, mt)
        ms = np.where(np.isfinite(mn), mn, 0.0)
        alpha = np.where(np.isfinite(m), np.exp(np.where(np.isfinite(m), m, 0.0) - ms), 0.0)
        p = np.where(pt, np.exp(np.where(pt, xs, 0.0) - ms[:, :, None]), 0.0) * w[:, :, j0:j1]
        if defect == "no-rescale-128-both":
            l = l + p.sum(axis=2)
        else:
            l = l * alpha + p.sum(axis=2)
        pz = p if z is None else p * z[:, :, j0:j1]
        if defect == "p-fp16":  # P rounded to fp16 before P.V (the sum l keeps the unrounded P)
            pz = pz.astype(np.float16).astype(np.float64)
        pv = ra._excl_matmul(pz, vh[:, j0:j1], pt)
        if defect in ("no-rescale-64", "no-rescale-128-both"):
            acc = acc + pv
        else:
            acc = acc * alpha[:, :, None] + pv
        if defect == "fp16-acc-64":
            with np.errstate(over="ignore"):
                acc = acc.astype(np.float16).astype(np.float64)
        m = mn
    alive = np.isfinite(m) & (l > 0)
    out = np.where(alive[:, :, None], acc / np.where(l > 0, l, 1.0)[:, :, None], 0.0)
    out[~np.any(part, axis=2)] = 0.0
    if defect == "last-query-row" and s1 > 0:
        out[:, s1 - 1] = 0.0
    m = np.where(alive, m, -ra.FLT_MAX)
    l = np.where(alive, l, ra.FLT_MAX)
    return out, m, l


def forward(params, inp, dtype, defect):
    dims = ra._dims(params, inp)
    tile = 128 if defect == "no-rescale-128-both" else 64
    outs, ms, ls = [], [], []
    sink = ra.decode(inp["sink"], "fp32").astype(np.float64) if inp.get("sink") is not None else None
    for b in range(dims.B):
        bat = Batch(params, dtype, inp, dims, b, defect)
        o, m, l = forward_batch(bat, sink, defect, tile)
        outs.append(o)
        ms.append(m)
        ls.append(l)
    return {
        "attention_out": ra.assemble(outs, dims, np.shape(inp["query"])[0], dims.N1, dims.Dv, False),
        "softmax_max": ra._softmax_pack(ms, dims, params),
        "softmax_sum": ra._softmax_pack(ls, dims, params),
    }


def backward(params, inp, dtype, defect):
    if inp.get("query_rope") is not None or inp.get("sink") is not None:
        raise Unsupported("backward with rope or sink")
    dims = ra._dims(params, inp)
    n1, n2, g = dims.N1, dims.N2, dims.G
    dqs, dks, dvs = [], [], []
    for b in range(dims.B):
        bat = Batch(params, dtype, inp, dims, b, defect)
        x = bat.x
        if defect == "bwd-scale-missing":
            x = x / bat.scale
        m = ra._softmax_unpack(inp["softmax_max"], dims, params, b)
        l = ra._softmax_unpack(inp["softmax_sum"], dims, params, b)
        dy = ra.batch_view(ra.decode_auto(inp["dy"], dtype), dims, b, n1, False)
        o = ra.batch_view(ra.decode_auto(inp["attention_in"], dtype), dims, b, n1, False)
        part = bat.w > 0
        p = np.where(part, np.exp(np.where(part, x, 0.0) - m[:, :, None]), 0.0) * bat.w / l[:, :, None]
        z = np.ones_like(p) if bat.z is None else bat.z
        pz = p if defect == "dv-no-dropout" else p * z
        dvh = ra._excl_matmul(pz.transpose(0, 2, 1), dy, part.transpose(0, 2, 1))
        with np.errstate(invalid="ignore", over="ignore"):
            dp = np.where(part, np.einsum("hid,hjd->hij", dy, bat.vh), 0.0) * z
        if defect == "dpsum-from-do":
            dd = dy.sum(axis=2)
        else:
            dd = np.einsum("hid,hid->hi", dy, o)
        ds = np.where(part, p * (dp - dd[:, :, None]), 0.0)
        sq = 1.0 if defect == "dq-no-scale" else bat.scale
        sk = 1.0 if defect == "dk-no-scale" else bat.scale
        dq = sq * ra._excl_matmul(ds, bat.kh, part)
        dkh = sk * ra._excl_matmul(ds.transpose(0, 2, 1), bat.q, part.transpose(0, 2, 1))
        s2 = dims.s2[b]
        heads = (np.arange(n1) % n2) if defect == "gqa-mod" else (np.arange(n1) // g)
        dk = np.zeros((n2, s2, dims.Dk))
        dv = np.zeros((n2, s2, dims.Dv))
        for h in range(n1):
            dk[heads[h]] += dkh[h]
            dv[heads[h]] += dvh[h]
        dqs.append(dq)
        dks.append(dk)
        dvs.append(dv)
    tq, tk = np.shape(inp["query"])[0], np.shape(inp["key"])[0]
    return {
        "dq": ra.assemble(dqs, dims, tq, n1, dims.Dk, False),
        "dk": ra.assemble(dks, dims, tk, n2, dims.Dk, True),
        "dv": ra.assemble(dvs, dims, tk, n2, dims.Dv, True),
    }


def main(argv):
    if "--list" in argv:
        for k, (op, want, kind) in DEFECTS.items():
            print(k, op, want, kind)
        return 0
    if len(argv) != 4 or argv[1] != "--defect" or argv[2] not in DEFECTS:
        print(__doc__, file=sys.stderr)
        print("defects: " + " ".join(DEFECTS), file=sys.stderr)
        return 2
    defect, d = argv[2], argv[3]
    with open(os.path.join(d, "case.json")) as f:
        case = json.load(f)
    dtype, params = case["dtype"], case["params"]
    if dtype in ra.FP8_TYPES:
        print("broken_runner: fp8 not supported", file=sys.stderr)
        return SKIP
    inputs = {k: np.load(os.path.join(d, fn), allow_pickle=False) for k, fn in case["inputs"].items()}
    try:
        if case["op"] == "fwd":
            res = forward(params, inputs, dtype, defect)
            kinds = {"attention_out": params.get("out_dtype") or dtype, "softmax_max": "fp32", "softmax_sum": "fp32"}
        else:
            res = backward(params, inputs, dtype, defect)
            kinds = {k: dtype for k in res}
    except Unsupported as e:
        print("broken_runner: %s" % e, file=sys.stderr)
        return SKIP
    for name, values in res.items():
        np.save(os.path.join(d, name + ".npy"), rr.encode_output(values, kinds[name]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
