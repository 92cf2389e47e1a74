#!/usr/bin/env python3
"""Boundary probe of ONNX Runtime's com.microsoft GroupQueryAttention (CPU execution provider) (docs/findings.md,
"Hunting beyond the panel's sets"): decode steps with a different valid past length per batch (a right-padded KV
cache: seqlens_k = past_b + S1 - 1), prompts, GQA group sizes 1-4, local windows, softcap and a broadcast
attention_bias, against an fp64 numpy evaluation (query row i of batch b sits at position past_b + i and attends
keys j <= that position, and j > it - local_window_size when a window is set).

usage: probe_ort_gqa.py SEED DRAWS
Prints one line per departure (an error, a non-finite value, an error above 5 x the dtype's tolerance) and
"draws N departures M"; exit 1 when M > 0. Prompts with a past take batch 1 (the op's documented input check).
Needs numpy, onnx and onnxruntime only.
"""
import numpy as np
from onnx import TensorProto, helper
from probe_common import Tally, cli, draw_dtype, ort_session

SESSIONS = {}
INTS = ("seqlens_k", "total_sequence_length")


def session(et, Nq, Nk, window, softcap, bias):
    key = (et, Nq, Nk, window, softcap, bias)
    if key not in SESSIONS:
        t = TensorProto.FLOAT16 if et == "f16" else TensorProto.FLOAT
        names = ["query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length"] + \
            (["", "", "", "attention_bias"] if bias else [])
        ins = [helper.make_tensor_value_info(n, TensorProto.INT32 if n in INTS else t, None) for n in names if n]
        node = helper.make_node("GroupQueryAttention", names, ["out", "pk", "pv"], domain="com.microsoft",
                                num_heads=Nq, kv_num_heads=Nk, local_window_size=window, softcap=softcap)
        g = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info(x, t, None)
                                                  for x in ("out", "pk", "pv")])
        SESSIONS[key] = ort_session(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21),
                                                                         helper.make_opsetid("com.microsoft", 1)]))
    return SESSIONS[key]


def expect_batch(q, k, v, pk, pv, Lb, G, softcap, bias, window):
    """fp64 output rows [S1, Nq * D] of one batch: its Lb valid past keys, then its S1 new ones."""
    S1, Nk, D = k.shape[0], pk.shape[0], pk.shape[-1]
    K = np.repeat(np.concatenate([pk[:, :Lb], k.reshape(S1, Nk, D).transpose(1, 0, 2)], 1), G, 0)
    V = np.repeat(np.concatenate([pv[:, :Lb], v.reshape(S1, Nk, D).transpose(1, 0, 2)], 1), G, 0)
    s = q.reshape(S1, Nk * G, D).transpose(1, 0, 2) @ K.transpose(0, 2, 1) / np.sqrt(D)
    if softcap > 0:
        s = softcap * np.tanh(s / softcap)
    if bias is not None:
        s = s + bias[:, :, :Lb + S1]
    i, j = np.arange(S1)[:, None] + Lb, np.arange(Lb + S1)[None, :]
    keep = (j <= i) & ((j > i - window) if window > 0 else True)
    s = np.where(keep, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return ((p / p.sum(-1, keepdims=True)) @ V).transpose(1, 0, 2).reshape(S1, -1)


def main(seed, draws):
    rng = np.random.default_rng(seed)
    tally = Tally()
    for _ in range(draws):
        et, dt = draw_dtype(rng)
        B, Nk, G = int(rng.choice([1, 2, 3, 4])), int(rng.choice([1, 2])), int(rng.choice([1, 2, 4]))
        Nq, D = Nk * G, int(rng.choice([8, 16, 32, 64, 80, 128]))
        decode = rng.random() < 0.6
        S1 = 1 if decode else int(rng.choice([2, 3, 5, 8, 17]))
        L = rng.integers(0, 40, size=B) if decode else np.full(B, int(rng.choice([0, 0, 4, 16])))
        if not decode and L.max() > 0:
            B, L = 1, L[:1]
        Pmax = int(L.max()) + (int(rng.choice([0, 0, 3])) if decode else 0)  # spare cache room when decoding
        window, softcap = int(rng.choice([-1, -1, 1, 4, 16])), float(rng.choice([0.0, 0.0, 5.0]))
        bias, T = rng.random() < 0.3, int(L.max()) + S1
        q = rng.standard_normal((B, S1, Nq * D)).astype(dt)
        k, v = (rng.standard_normal((B, S1, Nk * D)).astype(dt) for _ in range(2))
        pk, pv = (rng.standard_normal((B, Nk, Pmax, D)).astype(dt) for _ in range(2))
        feed = dict(query=q, key=k, value=v, past_key=pk, past_value=pv, seqlens_k=(L + S1 - 1).astype(np.int32),
                    total_sequence_length=np.array(T, np.int32))
        bshape = tuple(int(x) for x in (rng.choice([1, B]), rng.choice([1, Nq]), S1, T))
        bv = (rng.standard_normal(bshape) * 2).astype(dt)
        if bias:
            feed["attention_bias"] = bv
        cfg = dict(et=et, B=B, Nq=Nq, Nk=Nk, D=D, S1=S1, past=L.tolist(), Pmax=Pmax, T=T, window=window,
                   softcap=softcap, bias=bshape if bias else None)
        try:
            o = session(et, Nq, Nk, window, softcap, bias).run(["out"], feed)[0].astype(np.float64)
        except Exception as e:  # noqa: BLE001 (any framework error is a departure to print)
            tally.error(cfg, str(e).split("Status Message:")[-1])
            continue
        f = lambda x: x.astype(np.float64)  # noqa: E731
        errs = []
        for b in range(B):
            r = expect_batch(f(q[b]), f(k[b]), f(v[b]), f(pk[b]), f(pv[b]), int(L[b]), G, softcap,
                             f(bv[min(b, bshape[0] - 1)]) if bias else None, window)
            errs.append(np.abs(o[b] - r).max() / max(np.abs(r).max(), 1e-30))
        tol = 3e-2 if et == "f16" else 2e-5
        tally.check(np.isfinite(o).all() and max(errs) <= 5 * tol, cfg,
                    "rel=%.2e per batch %s" % (max(errs), ["%.1e" % e for e in errs]))
    return tally.done(draws)


if __name__ == "__main__":
    cli(main)
