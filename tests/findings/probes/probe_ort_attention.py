#!/usr/bin/env python3
"""Boundary probe of the ONNX Attention operator (opsets 23, 24: ONNX Runtime's CPU kernel; 25: the operator's ONNX
function body on ORT's kernels) (docs/findings.md, "Hunting beyond the panel's sets"): random configurations from the
corners attention kernels break in, against an fp64 numpy evaluation of the operator's specification (onnx 1.23).

usage: probe_ort_attention.py SEED DRAWS
Prints one line per departure (an error, a non-finite value, an error above 5 x the dtype's tolerance, or a fully
masked row that is not the specified zero row; rows masked with the dtype's lowest value are not held to that) and
"draws N departures M"; exit 1 when M > 0. is_causal follows the specification's offset: the past length with
past_key, nonpad_kv_seqlen - S1 per batch with nonpad_kv_seqlen, 0 otherwise (query i attends j <= i + offset).
Needs numpy, onnx and onnxruntime only.
"""
import numpy as np
from onnx import TensorProto, helper
from probe_common import Tally, cli, keep_mask, ort_session

SESSIONS = {}


def expect(q, k, v, keep, off):
    """fp64 attention with GQA by repeating K / V heads; keep broadcast [.., S1, S2]; off: causal offset or None."""
    G = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, G, 1), np.repeat(v, G, 1)
    s = np.einsum("bnqd,bnkd->bnqk", q, k) / np.sqrt(q.shape[-1])
    S1, S2 = s.shape[-2:]
    kp = np.ones(s.shape, bool) if keep is None else np.broadcast_to(keep, s.shape).copy()
    if off is not None:
        kp &= np.arange(S2)[None, :] <= np.arange(S1)[:, None] + off
    s = np.where(kp, s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.where(kp, np.exp(s - np.where(np.isfinite(m), m, 0)), 0)
    den = p.sum(-1, keepdims=True)
    return np.einsum("bnqk,bnkd->bnqd", p / np.where(den == 0, 1, den), v), kp.any(-1)


def session(opset, et, mk, causal, past, nonpad):
    key = (opset, et, mk, causal, past, nonpad)
    if key not in SESSIONS:
        t = TensorProto.FLOAT16 if et == "f16" else TensorProto.FLOAT
        names = ["Q", "K", "V", "M" if mk != "none" else ""] + (["PK", "PV"] if past else [])
        if nonpad:
            names += [""] * (6 - len(names)) + ["L"]
        while names[-1] == "":
            names.pop()
        ins = [helper.make_tensor_value_info(n, TensorProto.BOOL if (n == "M" and mk == "bool") else
                                             TensorProto.INT64 if n == "L" else t, None) for n in names if n]
        outs = ["O", "PKo", "PVo"] if past else ["O"]  # past and present go together
        node = helper.make_node("Attention", names, outs, is_causal=int(causal))
        g = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info(x, t, None) for x in outs])
        SESSIONS[key] = ort_session(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]))
    return SESSIONS[key]


def main(seed, draws):
    rng = np.random.default_rng(seed)
    tally = Tally()
    for _ in range(draws):
        opset, et = int(rng.choice([23, 24, 25])), str(rng.choice(["f32", "f16"]))
        B, Nk, G = int(rng.choice([1, 2, 3, 4])), int(rng.choice([1, 2])), int(rng.choice([1, 2, 4]))
        Nq, S1 = Nk * G, int(rng.choice([1, 2, 3, 4, 5, 7, 8, 17]))
        P = int(rng.choice([0, 0, 1, 5, 16, 31, 64]))  # past length (decode with a cache)
        Snew = S1 if P > 0 else int(rng.choice([S1, S1, 1, 3, 9, 33]))
        D, past, S2 = int(rng.choice([8, 16, 32, 64, 80, 128])), P > 0, P + Snew
        causal = bool(rng.random() < 0.4)
        nonpad = opset >= 24 and not past and rng.random() < 0.2
        mk = str(rng.choice(["none", "bool", "inf", "min"]))
        mshape = str(rng.choice(["SS", "1SS", "11SS", "B1SS", "BNSS"]))
        pattern = str(rng.choice(["random", "leftpad", "rightpad", "one", "dense"]))
        dt = np.float16 if et == "f16" else np.float32
        q = rng.standard_normal((B, Nq, S1, D)).astype(dt)
        knew, vnew = (rng.standard_normal((B, Nk, Snew, D)).astype(dt) for _ in range(2))
        pk, pv = (rng.standard_normal((B, Nk, P, D)).astype(dt) for _ in range(2))
        shp = {"SS": (S1, S2), "1SS": (1, S1, S2), "11SS": (1, 1, S1, S2), "B1SS": (B, 1, S1, S2),
               "BNSS": (B, Nq, S1, S2)}[mshape]
        keep = keep_mask(rng, pattern, shp, S2)
        feed = {"Q": q, "K": knew, "V": vnew}
        if past:
            feed.update(PK=pk, PV=pv)
        if mk == "bool":
            feed["M"] = keep
        elif mk != "none":
            feed["M"] = np.where(keep, 0, -np.inf if mk == "inf" else np.finfo(dt).min).astype(dt)
        L = rng.integers(1, S2 + 1, size=B).astype(np.int64) if nonpad else None
        if nonpad:
            feed["L"] = L
        cfg = dict(opset=opset, et=et, B=B, Nq=Nq, Nk=Nk, S1=S1, P=P, Snew=Snew, D=D, causal=causal,
                   nonpad=None if L is None else L.tolist(), mask=mk, mshape=mshape, pattern=pattern)
        try:
            o = session(opset, et, mk, causal, past, nonpad).run(["O"], feed)[0].astype(np.float64)
        except Exception as e:  # noqa: BLE001 (any framework error is a departure to print)
            tally.error(cfg, str(e).split("Status Message:")[-1])
            continue
        K = np.concatenate([pk, knew], 2).astype(np.float64)
        V = np.concatenate([pv, vnew], 2).astype(np.float64)
        kp = None if mk == "none" else keep.reshape((1,) * (4 - keep.ndim) + keep.shape)
        if L is not None:
            lm = (np.arange(S2)[None, :] < L[:, None])[:, None, None, :]
            kp = lm if kp is None else kp & lm
        rows = []
        for b in range(B):  # the causal offset may differ per batch (nonpad_kv_seqlen)
            off = None if not causal else (P if past else (int(L[b]) - S1 if L is not None else 0))
            kb = None if kp is None else kp[b:b + 1] if kp.shape[0] > 1 else kp
            rows.append(expect(q[b:b + 1].astype(np.float64), K[b:b + 1], V[b:b + 1], kb, off))
        r = np.concatenate([x[0] for x in rows])
        alive = np.concatenate([np.broadcast_to(x[1], (1,) + r.shape[1:3]) for x in rows])
        err = np.abs(o - r)[alive]
        rel = err.max() / max(np.abs(r[alive]).max(), 1e-30) if err.size else 0.0
        tol = 3e-2 if et == "f16" else 2e-5  # fp16: softmax in fp16 without softmax_precision (documented)
        dead_zero = mk == "min" or not (~alive).any() or np.array_equal(o[~alive], np.zeros_like(o[~alive]))
        tally.check(np.isfinite(o[alive]).all() and rel <= 5 * tol and dead_zero, cfg,
                    "rel=%.2e dead_rows_zero=%s" % (rel, dead_zero))
    return tally.done(draws)


if __name__ == "__main__":
    cli(main)
