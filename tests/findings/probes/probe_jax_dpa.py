#!/usr/bin/env python3
"""Boundary probe of jax.nn.dot_product_attention under jax.jit on the CPU, float32 (docs/findings.md, "Hunting
beyond the panel's sets"): GQA, broadcast boolean masks and biases, is_causal and local_window_size with S1 != S2
(top-left, as documented: token c attends [c - left, c + right]), query_seq_lengths / key_value_seq_lengths, against
an fp64 numpy evaluation. Rows with no key left are not compared (the function gives them a mean of V by design).

usage: probe_jax_dpa.py SEED DRAWS
Prints one line per departure and "draws N departures M"; exit 1 when M > 0. Needs numpy and jax only.
"""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from probe_common import Tally, cli  # noqa: E402


def main(seed, draws):
    rng = np.random.default_rng(seed)
    tally = Tally()
    for _ in range(draws):
        B, K, G = int(rng.choice([1, 2, 3])), int(rng.choice([1, 2])), int(rng.choice([1, 2, 3]))
        N, T, S = K * G, int(rng.choice([1, 2, 3, 5, 8, 17])), int(rng.choice([1, 2, 3, 7, 16, 33]))
        H, causal = int(rng.choice([4, 8, 64])), bool(rng.random() < 0.4)
        win = (int(rng.integers(0, 5)), int(rng.integers(0, 5))) if rng.random() < 0.3 else None
        q = rng.standard_normal((B, T, N, H)).astype(np.float32)
        k, v = (rng.standard_normal((B, S, K, H)).astype(np.float32) for _ in range(2))
        kw, keep, bv = {}, np.ones((B, N, T, S), bool), None
        if rng.random() < 0.5:
            m = rng.random(tuple(int(x) for x in (rng.choice([1, B]), rng.choice([1, N]), T, S))) < 0.7
            kw["mask"], keep = m, keep & m
        if rng.random() < 0.3:
            bv = rng.standard_normal(tuple(int(x) for x in (rng.choice([1, B]), rng.choice([1, N]), T, S)))
            kw["bias"] = bv.astype(np.float32)
        i, j = np.arange(T)[:, None], np.arange(S)[None, :]
        if causal:
            keep &= j <= i
        if win is not None:
            keep &= (j >= i - win[0]) & (j <= i + win[1])
        Lq = rng.integers(1, T + 1, size=B) if rng.random() < 0.3 else None
        Lk = rng.integers(1, S + 1, size=B) if rng.random() < 0.3 else None
        if Lq is not None:
            kw["query_seq_lengths"] = jnp.asarray(Lq, jnp.int32)
            keep &= (np.arange(T)[None, :, None] < Lq[:, None, None])[:, None]
        if Lk is not None:
            kw["key_value_seq_lengths"] = jnp.asarray(Lk, jnp.int32)
            keep &= (j[None] < Lk[:, None, None])[:, None]
        cfg = dict(B=B, N=N, K=K, T=T, S=S, H=H, causal=causal, window=win, mask="mask" in kw,
                   bias=None if bv is None else bv.shape, q_len=None if Lq is None else Lq.tolist(),
                   kv_len=None if Lk is None else Lk.tolist())
        try:
            f = jax.jit(lambda q, k, v, **a: jax.nn.dot_product_attention(q, k, v, is_causal=causal,
                                                                          local_window_size=win, **a))
            o = np.asarray(f(q, k, v, **kw), np.float64)
        except Exception as e:  # noqa: BLE001 (any framework error is a departure to print)
            tally.error(cfg, str(e))
            continue
        Q = q.transpose(0, 2, 1, 3).astype(np.float64)
        Kx, Vx = (np.repeat(x.transpose(0, 2, 1, 3), G, 1).astype(np.float64) for x in (k, v))
        s = Q @ Kx.transpose(0, 1, 3, 2) / np.sqrt(H) + (0 if bv is None else bv)
        s = np.where(keep, s, -np.inf)
        m = s.max(-1, keepdims=True)
        p = np.where(keep, np.exp(s - np.where(np.isfinite(m), m, 0)), 0)
        den = p.sum(-1, keepdims=True)
        r = ((p / np.where(den == 0, 1, den)) @ Vx).transpose(0, 2, 1, 3)
        alive = keep.any(-1).transpose(0, 2, 1)
        err = np.abs(o - r)[alive]
        rel = err.max() / np.abs(r[alive]).max() if err.size else 0.0
        tally.check(np.isfinite(o).all() and rel <= 1e-4, cfg, "rel=%.2e" % rel)
    return tally.done(draws)


if __name__ == "__main__":
    cli(main)
