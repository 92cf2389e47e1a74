"""The Python boundary fuzzed (docs/reliability.md, "Fuzzing"): a seeded generator of arrays of every dtype, stride,
shape and contiguity through flashref.attention and through the outputs a flashref.verify callback returns.

Every call must either raise a clear exception (FlashrefError, ValueError or TypeError, with a message) or answer
exactly what the same values laid out C-contiguous give (bit for bit; the fast engine on one thread is
deterministic), and the C-contiguous fp32 answer must match an independent numpy softmax(QK^T)V. A verify callback
returning the right values in any layout or raw-bits container passes; one returning a wrong dtype or shape fails its
case with a message (never a crash, never a PASS).

FR_PYFUZZ_SEED=S picks another sequence, FR_PYFUZZ_N=N its length (default 300 calls: a few seconds). A failure
prints the seed and the call's number, which replay it.
"""
import os

import numpy as np
import pytest

import flashref

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None

SEED = int(os.environ.get("FR_PYFUZZ_SEED", "20261203"))
N = int(os.environ.get("FR_PYFUZZ_N", "300"))

DTYPES = ["float32", "float16", "float64", "int32", "int64", "uint8", "bool", "uint16", "int16", "int8",
          "complex64", "object"]
if ml_dtypes is not None:
    DTYPES += ["bfloat16", "float8_e4m3fn", "float8_e5m2"]
CLEAR = (flashref.FlashrefError, ValueError, TypeError)


def np_dtype(name):
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def values(rng, shape, dt):
    x = rng.standard_normal(shape)
    if dt.kind == "O":
        return x.astype(object)
    if dt.kind in "iub":
        return (x * 3).astype(dt) if dt.kind != "b" else x > 0
    return x.astype(dt)


def layout(rng, a, how):
    """a's values in another memory layout (same shape and values), or a itself."""
    if how == "c" or a.ndim == 0:
        return a
    if how == "f":
        return np.asfortranarray(a)
    if how == "reversed":  # negative strides: the values reversed in memory along an axis, read back in order
        ax = int(rng.integers(a.ndim))
        return np.flip(np.flip(a, ax).copy(), ax)
    if how == "every_other":  # a strided window of a bigger buffer
        big = np.zeros(tuple(2 * n for n in a.shape), dtype=a.dtype)
        sl = tuple(slice(0, 2 * n, 2) for n in a.shape)
        big[sl] = a
        return big[sl]
    if how == "transposed":  # a permuted physical order
        perm = rng.permutation(a.ndim)
        return np.transpose(np.ascontiguousarray(np.transpose(a, perm)), np.argsort(perm))
    if how == "broadcast":  # a zero stride: one column repeated (other values, so compared with themselves)
        row = a[(slice(None),) * (a.ndim - 1) + (slice(0, 1),)]
        return np.broadcast_to(row, a.shape)
    if how == "misaligned" and a.dtype.kind != "O":  # the data pointer one byte off its alignment
        buf = np.zeros(a.nbytes + 1, dtype=np.uint8)
        m = buf[1:].view(a.dtype).reshape(a.shape)
        m[...] = a
        return m
    return a


LAYOUTS = ["c", "f", "reversed", "every_other", "transposed", "broadcast", "misaligned"]


def outcome(fn):
    """("ok", bytes of the outputs) or ("raise", exception type)."""
    try:
        r = fn()
    except CLEAR as e:
        assert str(e), "an exception without a message: %r" % (e,)
        return "raise", type(e)
    return "ok", [np.ascontiguousarray(x).view(np.uint8).tobytes() for x in r]


def numpy_attention(q, k, v, scale):
    s = np.einsum("bnqd,bnkd->bnqk", q.astype(np.float64), k.astype(np.float64)) * scale
    s -= s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    return np.einsum("bnqk,bnkd->bnqd", p / p.sum(axis=-1, keepdims=True), v.astype(np.float64))


def one_call(rng, i):
    B, Nh, S1, S2, D = 1, int(rng.integers(1, 3)), int(rng.integers(1, 5)), int(rng.integers(1, 6)), 8
    shapes = {"q": [B, Nh, S1, D], "k": [B, Nh, S2, D], "v": [B, Nh, S2, D]}
    dts = {n: np_dtype("float32") for n in shapes}
    layout_name = "BNSD"
    head_num = Nh
    mutation = rng.integers(8)
    if mutation == 1:  # every input of another dtype
        d = np_dtype(DTYPES[rng.integers(len(DTYPES))])
        dts = {n: d for n in shapes}
    elif mutation == 2:  # one input of another dtype
        dts[rng.choice(list(shapes))] = np_dtype(DTYPES[rng.integers(len(DTYPES))])
    elif mutation == 3:  # a shape off: a dimension changed, added, dropped, or zero
        n = rng.choice(list(shapes))
        s = shapes[n]
        how = rng.integers(4)
        if how == 0:
            s[rng.integers(len(s))] += int(rng.integers(1, 3))
        elif how == 1:
            s.append(int(rng.integers(1, 3)))
        elif how == 2 and len(s) > 0:
            s.pop(int(rng.integers(len(s))))
        else:
            s[rng.integers(len(s))] = 0
    elif mutation == 4:
        head_num = int(rng.choice([0, -1, Nh + 1, 2 ** 31]))
    elif mutation == 5:
        layout_name = str(rng.choice(["BSND", "BSH", "SBH", "TND", "bnsd", "", "BNSDX"]))
    arrs = {n: values(rng, tuple(shapes[n]), dts[n]) for n in shapes}
    lays = {n: LAYOUTS[rng.integers(len(LAYOUTS))] for n in shapes}
    laid = {n: layout(rng, arrs[n], lays[n]) for n in shapes}
    scale = float(D) ** -0.5
    what = "call %d (seed %d): shapes %s dtypes %s layouts %s head_num %s layout %s" % (
        i, SEED, shapes, {n: str(d) for n, d in dts.items()}, lays, head_num, layout_name)

    def call(x):
        return lambda: flashref.attention(x["q"], x["k"], x["v"], input_layout=layout_name, head_num=head_num,
                                          scale=scale, engine="fast", threads=1)

    got = outcome(call(laid))
    ref = outcome(call({n: np.array(a, order="C", copy=True) for n, a in laid.items()}))
    assert got == ref, "%s: %s, but C-contiguous gives %s" % (what, got[0] if got[0] == "ok" else got[1],
                                                                  ref[0] if ref[0] == "ok" else ref[1])
    if got[0] == "ok" and all(d == np.float32 for d in dts.values()) and mutation == 0:
        out = flashref.attention(arrs["q"], arrs["k"], arrs["v"], input_layout="BNSD", head_num=Nh, scale=scale,
                                 engine="fast", threads=1)[0]
        want = numpy_attention(arrs["q"], arrs["k"], arrs["v"], scale)
        np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-6, err_msg=what)
    return got[0]


def test_attention_boundary():
    rng = np.random.default_rng(SEED)
    seen = {"ok": 0, "raise": 0}
    for i in range(N):
        seen[one_call(rng, i)] += 1
    # The generator must reach both sides of the validation, or it tests nothing.
    assert seen["ok"] > N // 10 and seen["raise"] > N // 10, seen


def relaid(rng, a):
    """The same values in a random layout or container: what a callback may legitimately return."""
    how = LAYOUTS[rng.integers(len(LAYOUTS))]
    b = layout(rng, np.asarray(a), how)
    if b.dtype.name == "bfloat16" and rng.integers(2):
        b = b.view(np.uint16)  # raw bit patterns in their container
    return b


def broken(rng, a):
    """a with a wrong dtype or shape."""
    a = np.asarray(a)
    how = rng.integers(4)
    if how == 0:
        return a.astype(np.float64 if a.dtype != np.float64 else np.float32)
    if how == 1:
        return a.reshape(-1)
    if how == 2:
        return np.concatenate([a, a], axis=-1)
    return a.astype(object)


def test_verify_callback_boundary():
    rng = np.random.default_rng(SEED + 1)

    def good(case):
        return tuple(None if x is None else relaid(rng, x) for x in case.attention())

    r = flashref.verify(good, set="quick", filter="mha", threads=1)
    assert r.passed and not r.failed, r.summary() if hasattr(r, "summary") else r.verdicts

    def bad(case):
        outs = list(case.attention())
        k = int(rng.choice([j for j, x in enumerate(outs) if x is not None]))
        outs[k] = broken(rng, outs[k])
        return tuple(outs)

    r = flashref.verify(bad, set="quick", filter="mha", threads=1)
    assert r.cases and all(c.verdict in ("FAIL", "SKIP") for c in r.cases), r.verdicts
    for c in r.cases:
        if c.verdict == "FAIL":
            assert c.error and ("dtype" in c.error or "shape" in c.error), (c.name, c.error)
