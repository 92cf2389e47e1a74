#!/usr/bin/env python3
"""Boundary probe of OpenVINO's ScaledDotProductAttention-13 on the CPU plugin (docs/findings.md, "Hunting beyond
the panel's sets"): random configurations from the corners attention kernels break in, against an fp64 numpy
evaluation.

usage: probe_openvino_sdpa.py SEED DRAWS
Prints one line per departure (a non-finite value where the expectation is finite, or an error above 10 x the
precision's tolerance on a row with a key left) and "draws N departures M"; exit 1 when M > 0. Rows with no key left
are not compared (NaN there is documented: the specification applies Softmax to a row of -inf). With causal=True the
specification ignores attention_mask, so the expectation does too.
Needs numpy and openvino only.
"""
import numpy as np
import openvino as ov
import openvino.opset13 as ops
from probe_common import Tally, cli, keep_mask

CORE = ov.Core()
MODELS = {}


def expect(q, k, v, keep, causal):
    """fp64 softmax(q k^T / sqrt(D)) v over the kept positions; also which rows keep a key."""
    s = np.einsum("bnqd,bnkd->bnqk", q, k) / np.sqrt(q.shape[-1])
    S1, S2 = s.shape[-2:]
    kp = np.broadcast_to(keep, s.shape) if keep is not None else np.ones(s.shape, bool)
    if causal:  # top-left, as the specification's pseudo-code (tril of ones(L, S))
        kp = kp & (np.arange(S2)[None, :] <= np.arange(S1)[:, None])
    s = np.where(kp, s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.where(kp, np.exp(s - np.where(np.isfinite(m), m, 0)), 0)
    den = p.sum(-1, keepdims=True)
    return np.einsum("bnqk,bnkd->bnqd", p / np.where(den == 0, 1, den), v), kp.any(-1)


def model(et, mkind, causal, hint):
    """One compiled model per kind, with dynamic rank-4 shapes: reused across shapes as a serving loop does."""
    key = (et, mkind, causal, hint)
    if key not in MODELS:
        t = {"f32": ov.Type.f32, "f16": ov.Type.f16}[et]
        ps = [ops.parameter([-1] * 4, t, name=n) for n in "qkv"]
        mask = None
        if mkind != "none":
            mask = ops.parameter([-1] * 4, ov.Type.boolean if mkind == "bool" else t, name="m")
            ps.append(mask)
        node = ops.scaled_dot_product_attention(ps[0], ps[1], ps[2], mask, causal=causal)
        cfg = {"INFERENCE_NUM_THREADS": 1}
        if hint:
            cfg["INFERENCE_PRECISION_HINT"] = hint
        MODELS[key] = CORE.compile_model(ov.Model([ops.convert(node, ov.Type.f32)], ps), "CPU", cfg)
    return MODELS[key]


def main(seed, draws):
    rng = np.random.default_rng(seed)
    tally = Tally()
    for _ in range(draws):
        et, hint = str(rng.choice(["f32", "f16"])), rng.choice([None, "f32", "f16", "bf16"])
        B, N = int(rng.choice([1, 2, 3, 5])), int(rng.choice([1, 2, 3]))
        S1 = int(rng.choice([1, 2, 3, 4, 5, 7, 8, 16, 33]))
        S2 = int(rng.choice([1, 2, 3, 7, 13, 17, 31, 33, 63, 65, 127, 129, 257, 511, 1023]))
        D = int(rng.choice([1, 3, 8, 16, 64, 80, 96, 128, 256]))
        mkind, causal = str(rng.choice(["none", "bool", "inf", "min"])), bool(rng.random() < 0.3)
        mshape, pattern = str(rng.choice(["11SS", "B1SS", "BNSS", "B11S", "1NSS"])), \
            str(rng.choice(["random", "leftpad", "rightpad", "one_left", "dense"]))
        dt = np.float16 if et == "f16" else np.float32
        q = rng.standard_normal((B, N, S1, D)).astype(dt)
        k, v = (rng.standard_normal((B, N, S2, D)).astype(dt) for _ in range(2))
        shp = {"11SS": (1, 1, S1, S2), "B1SS": (B, 1, S1, S2), "BNSS": (B, N, S1, S2), "B11S": (B, 1, 1, S2),
               "1NSS": (1, N, S1, S2)}[mshape]
        keep = keep_mask(rng, pattern, shp, S2)
        feed = {"q": q, "k": k, "v": v}
        if mkind == "bool":
            feed["m"] = keep
        elif mkind != "none":  # additive: -inf, or the dtype's lowest value as Hugging Face builds it
            feed["m"] = np.where(keep, 0, -np.inf if mkind == "inf" else np.finfo(dt).min).astype(dt)
        cfg = dict(et=et, hint=hint, B=B, N=N, S1=S1, S2=S2, D=D, mask=mkind, mshape=mshape, pattern=pattern,
                   causal=causal)
        try:
            o = model(et, mkind, causal, hint)(feed)[0].astype(np.float64)
        except Exception as e:  # noqa: BLE001 (any framework error is a departure to print)
            tally.error(cfg, str(e))
            continue
        r, alive = expect(*(x.astype(np.float64) for x in (q, k, v)),
                          keep if (mkind != "none" and not causal) else None, causal)
        alive = np.broadcast_to(alive, r.shape[:-1])
        err = np.abs(o - r)[alive]
        rel = err.max() / max(np.abs(r[alive]).max(), 1e-30) if err.size else 0.0
        tol = {"bf16": 2e-2, "f16": 2e-3}.get(hint, 2e-3 if et == "f16" else 2e-5)
        tally.check(np.isfinite(o[alive]).all() and rel <= 10 * tol, cfg, "rel=%.2e" % rel)
    return tally.done(draws)


if __name__ == "__main__":
    cli(main)
