#!/usr/bin/env python3
"""Boundary probe of ONNX Runtime's com.microsoft MultiHeadAttention (CPU execution provider) (docs/findings.md,
"Hunting beyond the panel's sets"): key_padding_mask in its documented shapes ([B] lengths, [B, total], [B, S1,
total]), a broadcast attention_bias, past_key / past_value decode steps, unidirectional where the query block is the
newest keys (S1 = new keys), cross attention lengths, fp32 / fp16, against an fp64 numpy evaluation.
(unidirectional with fewer queries than keys and no past is finding 1 and left out here.)

usage: probe_ort_mha.py SEED DRAWS
Prints one line per departure (an error, a non-finite value, an error above 5 x the dtype's tolerance) and
"draws N departures M"; exit 1 when M > 0. Every row keeps at least one key.
Needs numpy, onnx and onnxruntime only.
"""
import numpy as np
from onnx import TensorProto, helper
from probe_common import Tally, cli, draw_dtype, ort_session

SESSIONS = {}


def session(et, N, mk, uni, bias, past):
    key = (et, N, mk, uni, bias, past)
    if key not in SESSIONS:
        t = TensorProto.FLOAT16 if et == "f16" else TensorProto.FLOAT
        names = ["query", "key", "value", "", "kpm" if mk != "none" else "", "attention_bias" if bias else "",
                 "past_key" if past else "", "past_value" if past else ""]
        while names[-1] == "":
            names.pop()
        ins = [helper.make_tensor_value_info(n, TensorProto.INT32 if n == "kpm" else t, None) for n in names if n]
        outs = ["out", "pk", "pv"] if past else ["out"]
        node = helper.make_node("MultiHeadAttention", names, outs, domain="com.microsoft", num_heads=N,
                                unidirectional=int(uni))
        g = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info(x, t, None) for x in outs])
        SESSIONS[key] = ort_session(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21),
                                                                         helper.make_opsetid("com.microsoft", 1)]))
    return SESSIONS[key]


def main(seed, draws):
    rng = np.random.default_rng(seed)
    tally = Tally()
    for _ in range(draws):
        et, dt = draw_dtype(rng)
        B, N, D = int(rng.choice([1, 2, 3])), int(rng.choice([1, 2, 4])), int(rng.choice([8, 16, 64]))
        P = int(rng.choice([0, 0, 0, 3, 17]))
        past, S1 = P > 0, int(rng.choice([1, 1, 2, 3, 5, 8]))
        Snew = S1 if past else int(rng.choice([S1, 1, 4, 9, 33]))
        S2 = P + Snew
        uni = bool(rng.random() < 0.3) and Snew == S1
        mk, bias = str(rng.choice(["none", "len", "2d", "3d"])), bool(rng.random() < 0.3)
        q = rng.standard_normal((B, S1, N * D)).astype(dt)
        k, v = (rng.standard_normal((B, Snew, N * D)).astype(dt) for _ in range(2))
        pk, pv = (rng.standard_normal((B, N, P, D)).astype(dt) for _ in range(2))
        keep = np.ones((B, 1, S1, S2), bool)
        feed = dict(query=q, key=k, value=v)
        if past:
            feed.update(past_key=pk, past_value=pv)
        if mk == "len":  # [B]: valid lengths (right padding)
            L = rng.integers(1, S2 + 1, size=B)
            feed["kpm"] = L.astype(np.int32)
            keep &= (np.arange(S2)[None, :] < L[:, None])[:, None, None, :]
        elif mk in ("2d", "3d"):  # 1 = takes part; key 0 kept, so that no row is left without a key
            m = rng.random((B, S2) if mk == "2d" else (B, S1, S2)) < 0.7
            m[..., 0] = True
            feed["kpm"] = m.astype(np.int32)
            keep &= m[:, None, None, :] if mk == "2d" else m[:, None]
        bshape = tuple(int(x) for x in (rng.choice([1, B]), rng.choice([1, N]), S1, S2))
        bv = rng.standard_normal(bshape).astype(dt)
        if bias:
            feed["attention_bias"] = bv
        cfg = dict(et=et, B=B, N=N, D=D, past=P, S1=S1, Snew=Snew, uni=uni, mask=mk, bias=bshape if bias else None)
        try:
            o = session(et, N, mk, uni, bias, past).run(["out"], feed)[0].astype(np.float64)
        except Exception as e:  # noqa: BLE001 (any framework error is a departure to print)
            tally.error(cfg, str(e).split("Status Message:")[-1])
            continue
        K = np.concatenate([pk, k.reshape(B, Snew, N, D).transpose(0, 2, 1, 3)], 2).astype(np.float64)
        V = np.concatenate([pv, v.reshape(B, Snew, N, D).transpose(0, 2, 1, 3)], 2).astype(np.float64)
        s = q.reshape(B, S1, N, D).transpose(0, 2, 1, 3).astype(np.float64) @ K.transpose(0, 1, 3, 2) / np.sqrt(D)
        if bias:
            s = s + bv.astype(np.float64)
        kp = np.broadcast_to(keep, s.shape).copy()
        if uni:  # the query block is the newest S1 keys
            kp &= np.arange(S2)[None, :] <= np.arange(S1)[:, None] + P
        s = np.where(kp, s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        r = ((p / p.sum(-1, keepdims=True)) @ V).transpose(0, 2, 1, 3).reshape(B, S1, N * D)
        rel = np.abs(o - r).max() / np.abs(r).max()
        tally.check(np.isfinite(o).all() and rel <= 5 * (3e-2 if et == "f16" else 2e-5), cfg, "rel=%.2e" % rel)
    return tally.done(draws)


if __name__ == "__main__":
    cli(main)
