#!/usr/bin/env python3
"""runners/panel_case.py's scores_stats (the softmax_max / softmax_sum a runner computes itself when its framework
does not return them) must not add a score error of its own: each score is the fp32 rounding of the exact
q k^T * scale + bias. The scores below cancel (2^24 + 1 + 1 - 2^24 = 2): an fp32 matmul rounds a partial sum
2^24 + 1 and gives 0 or 1, by its summation order (1 with the venv's numpy); with large scores such an error made
the hunt report a softmax-stats FAIL of PyTorch SDPA that was the runner's own.

usage: test_scores_stats.py   (run with the venv's python; exit 77 when numpy is missing)
"""
import os
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP (panel): numpy is not installed")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "runners"))
from panel_case import scores_stats  # noqa: E402


def main():
    big = np.float32(2 ** 24)
    q = np.array([big, 1, 1, -big], dtype=np.float32).reshape(1, 1, 1, 4)  # [B, N1, S1, D]
    k = np.stack([np.ones(4, np.float32), np.zeros(4, np.float32)]).reshape(1, 1, 2, 4)  # scores 2 and 0
    bad = []
    for bias in (None, np.array([0.5, 0.0]).reshape(1, 1, 1, 2)):
        sem = {"q": q, "k": k, "scale": 1.0, "keep": np.ones((1, 1, 1, 2), dtype=bool), "bias": bias}
        ms, ls = scores_stats(sem)
        x = np.array([2.0, 0.0]) + (0 if bias is None else bias.reshape(2))
        want_m = np.float32(x.max())
        want_l = np.float32(np.exp(np.float32(x[1]) - want_m) + 1)
        if ms[0][0, 0] != want_m or abs(ls[0][0, 0] - want_l) > 1e-6:
            bad.append("bias %s: softmax_max %r, softmax_sum %r; expected %r, %r (exact scores %s)"
                       % (bias is not None, float(ms[0][0, 0]), float(ls[0][0, 0]), float(want_m), float(want_l),
                          x.tolist()))
    # GQA (two query heads on one K head), a masked position and a per-batch bias: shapes and values
    q2 = np.array([[[[1, 2]], [[3, 4]]], [[[0, 1]], [[1, 0]]]], dtype=np.float32)  # [2, 2, 1, 2]
    k2 = np.array([[[[1, 0], [0, 1]]], [[[2, 0], [0, 2]]]], dtype=np.float32)  # [2, 1, 2, 2]
    keep = np.array([True, False]).reshape(1, 1, 1, 2)
    bias = np.array([[0.0, 0.0], [1.0, 1.0]]).reshape(2, 1, 1, 2)
    ms, ls = scores_stats({"q": q2, "k": k2, "scale": 0.5, "keep": keep, "bias": bias})
    got = [[float(ms[b][n, 0]) for n in range(2)] for b in range(2)]
    want = [[0.5, 1.5], [1.0, 2.0]]  # the first key only: q[..., 0] * k[0, 0] * 0.5 + bias
    if got != want or any(float(ls[b][n, 0]) != 1.0 for b in range(2) for n in range(2)):
        bad.append("GQA / mask / per-batch bias: softmax_max %s (expected %s), softmax_sum %s (expected 1)"
                   % (got, want, [ls[b][:, 0].tolist() for b in range(2)]))
    for b in bad:
        print("FAIL: " + b)
    if not bad:
        print("ok: scores_stats gives the fp32 rounding of the exact scores")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
