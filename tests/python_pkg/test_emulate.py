"""The emulator's knobs, the metrics and the studies from Python."""

import numpy as np
import pytest

import flashref
from flashref import emulate


def test_presets_and_knobs_round_trip():
    names = emulate.preset_names()
    assert "fa4-sm100-fwd-inference" in names and "exact" in names
    nc = emulate.preset("fa4-sm100-fwd-inference")
    assert nc.name == "fa4-sm100-fwd-inference" and nc.exp_base == "2" and nc.order == "reverse"
    assert nc.rescale_threshold == 8.0 and nc.kv_tile == 128
    c = nc.copy()
    c.rescale_threshold, c.rowsum, c.p_dtype, c.order, c.perm = 0.0, "rounded", "fp16", "perm", [1, 0]
    assert (c.rescale_threshold, c.rowsum, c.p_dtype, c.order, c.perm) == (0.0, "rounded", "fp16", "perm", [1, 0])
    assert nc.rescale_threshold == 8.0                  # a copy
    assert set(nc.as_dict()) == set(emulate.KNOBS)
    with pytest.raises(AttributeError):
        nc.no_such_knob = 1
    with pytest.raises(ValueError):
        nc.order = "sideways"
    bad = emulate.ideal("bf16")
    bad.kv_tile = 0
    with pytest.raises(flashref.FlashrefError) as e:
        bad.check()
    assert e.value.status == "FR_E_INVALID_ARG" and "kv_tile" in e.value.message
    with pytest.raises(flashref.FlashrefError):
        emulate.preset("no-such-preset")


def test_the_knobs_change_the_numbers(rng):
    """exact = the golden to ~1e-15; a lazy rescale with bf16 P moves the output (peaked rows, late max)."""
    import ml_dtypes
    s = 512
    k = rng.standard_normal((1, 1, s, 64)).astype(np.float32)
    q = 0.3 * rng.standard_normal((1, 1, s, 64)).astype(np.float32) + 0.5 * k[:, :, ::-1, :]  # peaked, max late
    q, k = q.astype(ml_dtypes.bfloat16), k.astype(ml_dtypes.bfloat16)
    v = rng.standard_normal((1, 1, s, 64)).astype(ml_dtypes.bfloat16)
    kw = dict(input_layout="BNSD", head_num=1, scale=0.125)
    gold = flashref.attention(q, k, v, engine="golden", out_precision="fp64", **kw).out
    ex = flashref.attention(q, k, v, engine="emulate", numerics="exact", out_precision="fp64", **kw).out
    assert np.max(np.abs(ex - gold)) < 1e-12
    lazy = emulate.preset("fa4-sm100-fwd-inference")
    exact_max = lazy.copy()
    exact_max.rescale_threshold = 0
    a = flashref.attention(q, k, v, engine="emulate", numerics=lazy, **kw).out
    b = flashref.attention(q, k, v, engine="emulate", numerics=exact_max, **kw).out
    assert not np.array_equal(a.view(np.uint16), b.view(np.uint16))
    o, lo = flashref.attention(q, k, v, engine="emulate", numerics=lazy, o_lo=True, **kw)
    assert lo.dtype == np.float32 and lo.shape == o.out.shape and np.any(lo != 0)


def test_metrics(rng):
    r = rng.standard_normal((64, 32))
    m = flashref.metrics(r * (1 + 1e-3), r)
    assert abs(m["rel_l2"] - 1e-3) < 1e-9 and abs(m["gain_rms"] - 1e-3) < 1e-9 and abs(m["gain_mean"] - 1e-3) < 1e-9
    noise = r + 1e-3 * np.abs(r) * rng.standard_normal(r.shape)
    mn = flashref.metrics(noise, r, ulp_dtype="bf16")
    assert mn["gain_over_floor"] < 3 and mn["max_ulp"] > 0      # incoherent error: gain near its noise floor
    assert flashref.ulp("bf16", 1.0) == 2.0 ** -7 and flashref.ulp("fp32", 1.0) == 2.0 ** -23
    with pytest.raises(ValueError):
        flashref.metrics(r, r[:3])


def test_studies_return_arrays():
    s = flashref.study.seqlen(lens=[256, 512], rows=4, d=16)
    assert s["rel_l2"].shape == (len(s["pipelines"]), 2) and np.all(s["rel_l2"][np.isfinite(s["rel_l2"])] >= 0)
    assert list(s["lens"]) == [256, 512]
    oi = flashref.study.order_invariance(T=64, W=32, H=2, dl=32, dr=8, bwd=False)
    assert len(oi["configs"]) == 3 and oi["configs"][0]["out_rel_l2"].shape == (2,)
    assert oi["bf16_floor_rel_l2"] > 0
    with pytest.raises(flashref.FlashrefError):
        flashref.study.seqlen(lens=[], rows=4, d=16)
    for bad in ([0], [256, -5]):  # a length < 1 ran (0) or was taken for out of memory (-5)
        with pytest.raises(flashref.FlashrefError, match="expected >= 1"):
            flashref.study.seqlen(lens=bad, rows=4, d=16)
