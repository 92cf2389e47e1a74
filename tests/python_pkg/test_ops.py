"""flashref.attention / attention_backward on numpy arrays and torch tensors, against an independent numpy
implementation (tests/python/ref_attention.py, written from the spec)."""

import re
import sys
import threading
import time

import ml_dtypes
import numpy as np
import pytest

import flashref
from conftest import HERE, torch_or_skip

sys.path.insert(0, str(HERE.parent / "python"))
import ref_attention  # noqa: E402


def ref_fwd(q, k, v, **params):
    p = dict(head_num=params.pop("head_num"), input_layout=params.pop("input_layout"),
             scale_value=params.pop("scale", 1.0), keep_prob=1.0, pre_tokens=2147483647, next_tokens=2147483647,
             inner_precise=0, sparse_mode=0, pse_type=1, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None,
             q_start_idx=0, kv_start_idx=0, out_dtype=None, softmax_layout="")
    p.update(params)
    dt = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}[q.dtype.name]
    bits = lambda a: a.view(np.uint16) if dt == "bf16" else a  # noqa: E731
    return ref_attention.forward(p, {"query": bits(q), "key": bits(k), "value": bits(v)}, dt)


def test_forward_fp32_matches_independent_reference(rng):
    q = rng.standard_normal((2, 4, 33, 16)).astype(np.float32)
    k = rng.standard_normal((2, 2, 47, 16)).astype(np.float32)
    v = rng.standard_normal((2, 2, 47, 8)).astype(np.float32)
    ref = ref_fwd(q, k, v, head_num=4, input_layout="BNSD", scale=0.25)
    for engine in ("golden", "fast", "emulate"):
        out, m, l = flashref.attention(q, k, v, input_layout="BNSD", head_num=4, scale=0.25, engine=engine)
        assert out.dtype == np.float32 and out.shape == (2, 4, 33, 8)
        assert m.shape == l.shape == (2, 4, 33, 8) and m.dtype == np.float32
        tol = 1e-12 if engine == "golden" else 1e-5
        if engine == "golden":
            g = flashref.attention(q, k, v, input_layout="BNSD", head_num=4, scale=0.25, engine="golden",
                                   out_precision="fp64")
            assert g.out.dtype == np.float64
            assert np.max(np.abs(g.out - ref["attention_out"])) < tol
            assert np.max(np.abs(g.softmax_sum - ref["softmax_sum"]) / ref["softmax_sum"]) < tol
        assert np.max(np.abs(out - ref["attention_out"])) < 1e-5, engine
        assert np.max(np.abs(m - ref["softmax_max"])) < 1e-5, engine


def test_isa_names_are_the_variant_list(rng):
    """isa= takes every variant of the library's one list (src/core/variants.inc, read here from the source tree) and
    nothing else: the bindings ask the library, so a variant the list gains is usable from Python at once, and this
    test names any variant where the two differ. Variants this CPU lacks answer FR_E_NOT_AVAILABLE, not ValueError."""
    inc = HERE.parent.parent / "src" / "core" / "variants.inc"
    rows = [m.group(1) for m in re.finditer(r"^FR_VARIANT\((\w+),", inc.read_text(), re.M)]
    names = flashref.isa_names()
    assert names == rows, "the bindings' variants %s differ from %s's %s" % (names, inc.name, rows)
    q = rng.standard_normal((1, 2, 5, 8)).astype(np.float32)
    ref = flashref.attention(q, q, q, input_layout="BNSD", head_num=2, isa="scalar").out
    for name in names:
        try:
            out = flashref.attention(q, q, q, input_layout="BNSD", head_num=2, isa=name).out
        except flashref.FlashrefError as e:
            assert e.status == "FR_E_NOT_AVAILABLE", (name, e)
            print("isa %s: not on this CPU (%s)" % (name, e.message))
            continue
        assert np.max(np.abs(out - ref)) < 1e-5, name
    with pytest.raises(ValueError, match=", ".join(names)):
        flashref.attention(q, q, q, input_layout="BNSD", head_num=2, isa="no-such-isa")


@pytest.mark.parametrize("engine,isa", [("golden", None), ("fast", None), ("emulate", None)]
                         + [("fast", name) for name in flashref.isa_names()])
def test_nan_in_query_gives_a_nan_row(rng, engine, isa):
    """Regression (issue 28 row 4): one NaN in the query came back from the fast and emulate engines as a fully masked
    row (0, -FLT_MAX, FLT_MAX); the golden gives NaN (docs/golden.md 4), and every engine must."""
    q = rng.standard_normal((1, 2, 4, 8)).astype(np.float32)
    k = rng.standard_normal((1, 2, 5, 8)).astype(np.float32)
    v = rng.standard_normal((1, 2, 5, 8)).astype(np.float32)
    q[0, 0, 1, 3] = np.nan
    kw = dict(input_layout="BNSD", head_num=2, scale=0.35, engine=engine)
    if isa:
        kw["isa"] = isa
    try:
        out, m, l = flashref.attention(q, k, v, **kw)
    except flashref.FlashrefError as e:
        if e.status != "FR_E_NOT_AVAILABLE":
            raise
        pytest.skip("this CPU lacks %s (tests/kernels/test_nan_rows.c covers every variant it has)" % isa)
    assert np.isnan(out[0, 0, 1]).all() and np.isnan(m[0, 0, 1]).all() and np.isnan(l[0, 0, 1]).all()
    rest = np.ones(out.shape[:3], bool)
    rest[0, 0, 1] = False
    assert np.isfinite(out[rest]).all() and np.isfinite(m[rest]).all() and np.isfinite(l[rest]).all()


@pytest.mark.parametrize("kw,status,text", [
    (dict(sparse_mode=2 ** 32 + 2), "FR_E_SPARSE_MODE", "sparse_mode: 4294967298 is outside"),
    (dict(head_num=2 ** 64 + 2), "FR_E_HEADS", "head_num: 18446744073709551618 is outside"),
    (dict(head_num=2 ** 63), "FR_E_HEADS", "head_num: 9223372036854775808 is outside"),
    (dict(pre_tokens=-2 ** 63 - 1), "FR_E_BAND", "pre_tokens"),
    (dict(head_num=2.5), "FR_E_HEADS", "head_num: 2.5 is not an integer"),
    (dict(input_layout="TND", actual_seq_qlen=[2 ** 64 + 10], actual_seq_kvlen=[4]), "FR_E_SEQLEN",
     "actual_seq_qlen[0]: 18446744073709551626 is outside"),
    (dict(threads=2 ** 40), "FR_E_INVALID_ARG", "threads"),
])
def test_integers_beyond_c_are_refused_not_wrapped(rng, kw, status, text):
    """Regression (issue 28 row 10): ctypes wrapped sparse_mode=2**32+2 to mode 2 and head_num=2**64+2 to 2 heads
    silently, and head_num=2**63 came back as '... is negative'."""
    q = rng.standard_normal((1, 2, 4, 8)).astype(np.float32)
    a = dict(input_layout="BNSD", head_num=2, scale=0.3)
    a.update(kw)
    if a["input_layout"] == "TND":
        q = q.reshape(4, 2, 8)
    with pytest.raises(flashref.FlashrefError) as e:
        flashref.attention(q, q, q, **a)
    assert e.value.status == status and text in e.value.message, e.value


def test_lists_as_tensors_are_a_clear_type_error(rng):
    """Regression (issue 28 row 17): a Python list as a tensor raised AttributeError ('list' has no 'dtype')."""
    q = rng.standard_normal((1, 2, 4, 8)).astype(np.float32)
    for args in ((q.tolist(), q, q), (q, q, q.tolist())):
        with pytest.raises(TypeError, match="a list; pass a numpy array"):
            flashref.attention(*args, input_layout="BNSD", head_num=2)
    with pytest.raises(TypeError, match="atten_mask: a list"):
        flashref.attention(q, q, q, input_layout="BNSD", head_num=2, atten_mask=[[0] * 4] * 4)


def test_torch_negative_bit_views_are_read_as_their_values():
    """Regression (issue 28 row 9): z.conj().imag (a view with the negative bit set) was read as its stored buffer,
    the output off by up to 1.7."""
    torch = torch_or_skip()
    g = torch.Generator().manual_seed(5)
    z = torch.randn(1, 2, 6, 8, dtype=torch.complex64, generator=g)
    q = z.conj().imag
    assert q.is_neg()
    k, v = torch.randn(1, 2, 7, 8, generator=g), torch.randn(1, 2, 7, 8, generator=g)
    kw = dict(input_layout="BNSD", head_num=2, scale=0.3)
    a = flashref.attention(q, k, v, **kw)
    b = flashref.attention(q.resolve_neg().contiguous(), k, v, **kw)
    assert torch.equal(a.out, b.out) and torch.equal(a.softmax_max, b.softmax_max)
    g2 = flashref.attention_backward(q, k, v, a.out, a.out, a.softmax_max, a.softmax_sum, **kw)
    g3 = flashref.attention_backward(q.resolve_neg().contiguous(), k, v, a.out, a.out, a.softmax_max,
                                     a.softmax_sum, **kw)
    assert torch.equal(g2.dq, g3.dq) and torch.equal(g2.dk, g3.dk)


def test_bf16_ml_dtypes_and_raw_bits_agree(rng):
    q = rng.standard_normal((1, 24, 64)).astype(ml_dtypes.bfloat16)   # BSH, 4 heads of 16
    k = rng.standard_normal((1, 40, 64)).astype(ml_dtypes.bfloat16)
    v = rng.standard_normal((1, 40, 64)).astype(ml_dtypes.bfloat16)
    kw = dict(input_layout="BSH", head_num=4, scale=0.25)
    a = flashref.attention(q, k, v, **kw)
    b = flashref.attention(q.view(np.uint16), k.view(np.uint16), v.view(np.uint16), dtype="bf16", **kw)
    assert a.out.dtype == ml_dtypes.bfloat16 and b.out.dtype == np.uint16       # same kind as the inputs
    assert np.array_equal(a.out.view(np.uint16), b.out)
    ref = ref_fwd(q, k, v, **kw)
    err = np.linalg.norm(a.out.astype(np.float64) - ref["attention_out"]) / np.linalg.norm(ref["attention_out"])
    assert err < 2 ** -8, err


def test_fp8_inputs_give_fp16_out(rng):
    x = lambda *s: (rng.standard_normal(s) * 0.5).astype(ml_dtypes.float8_e4m3fn)  # noqa: E731
    q, k, v = x(1, 1, 16, 32), x(1, 1, 16, 32), x(1, 1, 16, 32)
    one = np.ones((1, 1, 1, 1), dtype=np.float32)
    r = flashref.attention(q, k, v, input_layout="BNSD", head_num=1, scale=0.2, d_scale_q=one, d_scale_k=one,
                           d_scale_v=one)
    assert r.out.dtype == np.float16


def test_strided_inputs_are_read_in_place(rng):
    base = rng.standard_normal((2, 33, 4, 16)).astype(np.float32)   # BSND memory read as BNSD (a transposed view)
    q = base.transpose(0, 2, 1, 3)
    assert not q.flags.c_contiguous
    a = flashref.attention(q, q, q, input_layout="BNSD", head_num=4, scale=0.3, engine="golden")
    b = flashref.attention(np.ascontiguousarray(q), np.ascontiguousarray(q), np.ascontiguousarray(q),
                           input_layout="BNSD", head_num=4, scale=0.3, engine="golden")
    assert np.array_equal(a.out, b.out)


@pytest.mark.parametrize("kw, status", [
    (dict(head_num=3), "FR_E_HEADS"),
    (dict(head_num=4, sparse_mode=9), "FR_E_SPARSE_MODE"),
    (dict(head_num=4, keep_prob=0.0), "FR_E_KEEP_PROB"),
])
def test_errors_carry_status_and_message(rng, kw, status):
    q = rng.standard_normal((1, 4, 8, 8)).astype(np.float32)
    k = rng.standard_normal((1, 2, 8, 8)).astype(np.float32)
    with pytest.raises(flashref.FlashrefError) as e:
        flashref.attention(q, k, k, input_layout="BNSD", **kw)
    assert e.value.status == status and e.value.message, str(e.value)
    assert status in str(e.value)


def test_bad_arguments_are_python_errors(rng):
    q = rng.standard_normal((1, 1, 4, 8)).astype(np.float32)
    with pytest.raises(flashref.FlashrefError) as e:
        flashref.attention(q, q, q, input_layout="XYZ", head_num=1)
    assert e.value.status == "FR_E_LAYOUT"
    with pytest.raises(TypeError):
        flashref.attention(q.astype(np.uint16), q, q, input_layout="BNSD", head_num=1)   # raw bits without dtype=
    with pytest.raises(ValueError):
        flashref.attention(q, q, q, input_layout="BNSD", head_num=1, engine="nope")
    with pytest.raises(flashref.FlashrefError) as e:
        flashref.attention(q, q.astype(np.float16), q, input_layout="BNSD", head_num=1)
    assert e.value.status == "FR_E_DTYPE"


def test_backward_fast_matches_golden(rng):
    kw = dict(input_layout="BSND", head_num=2, scale=0.3)
    q = rng.standard_normal((1, 20, 2, 16)).astype(np.float32)
    k = rng.standard_normal((1, 28, 1, 16)).astype(np.float32)
    v = rng.standard_normal((1, 28, 1, 16)).astype(np.float32)
    out, m, l = flashref.attention(q, k, v, **kw)
    dy = rng.standard_normal(out.shape).astype(np.float32)
    gf = flashref.attention_backward(q, k, v, dy, out, m, l, **kw)
    gg = flashref.attention_backward(q, k, v, dy, out, m, l, engine="golden", out_precision="fp64", **kw)
    assert gf.dsink is None and gf.dq.shape == q.shape and gf.dk.shape == k.shape
    for a, b in zip(gf[:3], gg[:3]):
        assert np.linalg.norm(a - b) / np.linalg.norm(b) < 1e-5
    # finite differences of <dy, out> in q through the golden (fp64 outputs)
    i = (0, 3, 1, 5)
    e = 2.0 ** -10
    f = lambda qq: float(np.sum(dy.astype(np.float64) * flashref.attention(  # noqa: E731
        qq, k, v, engine="golden", out_precision="fp64", **kw).out))
    qp, qm = q.copy(), q.copy()
    qp[i] += e
    qm[i] -= e
    fd = (f(qp) - f(qm)) / (2 * e)
    assert abs(fd - gg.dq[i]) < 1e-3 * max(1.0, abs(fd)), (fd, gg.dq[i])


def test_gil_is_released_while_computing(rng):
    q = rng.standard_normal((1, 8, 512, 64)).astype(np.float32)
    ticks = [0]
    done = threading.Event()

    def spin():
        while not done.is_set():
            ticks[0] += 1
            time.sleep(0)

    t = threading.Thread(target=spin)
    t.start()
    time.sleep(0.01)
    before = ticks[0]
    flashref.attention(q, q, q, input_layout="BNSD", head_num=8, scale=0.125, engine="golden")
    during = ticks[0] - before
    done.set()
    t.join()
    assert during > 10, "a Python thread made %d steps during the C call: the GIL was held" % during


def test_torch_tensors_in_torch_tensors_out(rng):
    torch = torch_or_skip()
    q = torch.from_numpy(rng.standard_normal((2, 16, 4, 8)).astype(np.float32)).to(torch.bfloat16)
    r = flashref.attention(q, q, q, input_layout="BSND", head_num=4, scale=0.3)
    assert isinstance(r.out, torch.Tensor) and r.out.dtype == torch.bfloat16 and r.out.shape == q.shape
    n = flashref.attention(q.view(torch.int16).numpy().view(ml_dtypes.bfloat16), *(
        [q.view(torch.int16).numpy().view(ml_dtypes.bfloat16)] * 2), input_layout="BSND", head_num=4, scale=0.3)
    assert np.array_equal(r.out.view(torch.int16).numpy(), n.out.view(np.int16))
    with pytest.raises(ValueError):
        flashref.attention(q.to("meta"), q, q, input_layout="BSND", head_num=4)
