"""Checks of the numpy reference (ref_attention.py) against values computed by hand from the spec, against
finite differences, and against itself across layouts. Exits non-zero on any failure. Usage: test_ref_attention.py [seed]
"""

import math
import sys

import numpy as np

import ref_attention as ra
import ref_runner as rr

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def close(a, b, tol=1e-12):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= tol * np.maximum(1.0, np.abs(b))))


def P(**kw):
    p = {"head_num": 1, "input_layout": "BNSD", "scale_value": 1.0, "keep_prob": 1.0, "pre_tokens": 2147483647,
         "next_tokens": 2147483647, "inner_precise": 0, "sparse_mode": 0, "pse_type": 1, "prefix": None,
         "actual_seq_qlen": None, "actual_seq_kvlen": None, "q_start_idx": 0, "kv_start_idx": 0, "out_dtype": None,
         "softmax_layout": ""}
    p.update(kw)
    return p


def t(*vals, shape):
    return np.array(vals, dtype=np.float64).reshape(shape)


def test_formats():
    hif8 = {0x00: 0.0, 0x01: 2.0 ** -22, 0x07: 2.0 ** -16, 0x08: 1.0, 0x09: 1.125, 0x0F: 1.875, 0x10: 2.0, 0x14: 3.0,
            0x18: 0.5, 0x1F: 0.9375, 0x20: 4.0, 0x28: 8.0, 0x2F: 15.0, 0x30: 0.25, 0x38: 0.125, 0x3F: 0.234375,
            0x40: 16.0, 0x48: 64.0, 0x5C: 2.0 ** -7, 0x5F: 0.013671875, 0x60: 256.0, 0x6E: 32768.0, 0x6F: math.inf,
            0x70: 2.0 ** -8, 0x7E: 2.0 ** -15, 0x7F: 1.5 * 2.0 ** -15, 0x88: -1.0, 0x92: -2.5, 0xEE: -32768.0,
            0xEF: -math.inf, 0xFF: -1.5 * 2.0 ** -15}
    for c, v in hif8.items():
        check(ra.HIF8_TABLE[c] == v, "hif8 0x%02X decodes to %r, spec 9.4 says %r" % (c, ra.HIF8_TABLE[c], v))
    check(math.isnan(ra.HIF8_TABLE[0x80]), "hif8 0x80 is NaN")
    fin = ra.HIF8_TABLE[np.isfinite(ra.HIF8_TABLE)]
    check(len(fin) == 253 and len(set(fin.tolist())) == 253, "hif8: 253 distinct finite values (single zero)")
    check(np.max(fin) == 32768.0 and np.min(np.abs(fin[fin != 0])) == 2.0 ** -22, "hif8 range 2^-22..2^15")
    e4 = {0x00: 0.0, 0x01: 2.0 ** -9, 0x07: 7 * 2.0 ** -9, 0x08: 2.0 ** -6, 0x38: 1.0, 0x7E: 448.0, 0xFE: -448.0,
          0xB8: -1.0}
    for c, v in e4.items():
        check(ra.E4M3FN_TABLE[c] == v, "e4m3fn 0x%02X = %r, want %r" % (c, ra.E4M3FN_TABLE[c], v))
    check(math.isnan(ra.E4M3FN_TABLE[0x7F]) and math.isnan(ra.E4M3FN_TABLE[0xFF]), "e4m3fn NaN")
    check(int(np.sum(np.isinf(ra.E4M3FN_TABLE))) == 0, "e4m3fn has no Inf")
    e5 = {0x01: 2.0 ** -16, 0x04: 2.0 ** -14, 0x3C: 1.0, 0x7B: 57344.0, 0x7C: math.inf, 0xFC: -math.inf, 0xC0: -2.0}
    for c, v in e5.items():
        check(ra.E5M2_TABLE[c] == v, "e5m2 0x%02X = %r, want %r" % (c, ra.E5M2_TABLE[c], v))
    check(int(np.sum(np.isnan(ra.E5M2_TABLE))) == 6, "e5m2: 6 NaN codes")
    bf = ra.decode_bf16(np.array([0x3F80, 0xC000, 0x7F80, 0x0001, 0x4049], dtype=np.uint16))
    check(bf[0] == 1.0 and bf[1] == -2.0 and bf[2] == math.inf and bf[3] == 2.0 ** -133 and bf[4] == 3.140625,
          "bf16 decode %r" % bf)


def test_hand_forward():
    # One query, two keys: x = [0, 1], m = 1, l = 1 + e^-1, out = (e^-1 * 1 + 1 * 5) / l.
    inp = {"query": t(1.0, shape=(1, 1, 1, 1)), "key": t(0.0, 1.0, shape=(1, 1, 2, 1)),
           "value": t(1.0, 5.0, shape=(1, 1, 2, 1))}
    r = ra.forward(P(), inp, "fp32")
    e = math.exp(-1.0)
    check(close(r["attention_out"], [[[[(e + 5.0) / (1 + e)]]]]), "hand out %r" % r["attention_out"])
    check(close(r["softmax_max"], np.ones((1, 1, 1, 8))), "hand max")
    check(close(r["softmax_sum"], np.full((1, 1, 1, 8), 1 + e)), "hand sum")
    # scale_value is used as fp32: 0.1 -> 0.100000001490116...
    r = ra.forward(P(scale_value=0.1), inp, "fp32")
    xs = float(np.float32(0.1))
    check(close(r["softmax_max"][0, 0, 0, 0], xs, 0), "scale as fp32")
    # pse type 1: x = (s + pse) * scale; type 0: s * scale + pse.
    pse = t(2.0, -1.0, shape=(1, 1, 1, 2))
    inp1 = dict(inp, real_shift=pse)
    r1 = ra.forward(P(scale_value=0.5, pse_type=1), inp1, "fp32")
    r0 = ra.forward(P(scale_value=0.5, pse_type=0), inp1, "fp32")
    x1 = [(0 + 2) * 0.5, (1 - 1) * 0.5]
    x0 = [0 * 0.5 + 2, 1 * 0.5 - 1]
    for r, x, nm in ((r1, x1, "pse1"), (r0, x0, "pse0")):
        m = max(x)
        w = [math.exp(v - m) for v in x]
        check(close(r["attention_out"][0, 0, 0, 0], (w[0] * 1 + w[1] * 5) / sum(w)), nm + " out")
        check(close(r["softmax_max"][0, 0, 0, 0], m), nm + " max")
    # Masked position excluded (mode 1): only key 1 takes part -> out = 5, sum = 1.
    rm = ra.forward(P(sparse_mode=1), dict(inp, atten_mask=np.array([[1, 0]], dtype=np.uint8)), "fp32")
    check(close(rm["attention_out"], [[[[5.0]]]]) and close(rm["softmax_sum"][0, 0, 0, 0], 1.0), "mask mode 1")
    # A very negative finite score is a real score, not a mask (D2).
    inpn = dict(inp, key=t(0.0, -1e30, shape=(1, 1, 2, 1)))
    rn = ra.forward(P(), inpn, "fp32")
    check(close(rn["softmax_sum"][0, 0, 0, 0], 1.0) and close(rn["attention_out"], [[[[1.0]]]]), "D2 -1e30")


def test_sparse_modes():
    s1, s2 = 3, 5
    i = np.arange(s1)[:, None]
    j = np.arange(s2)[None, :]
    mask = np.triu(np.ones((2048, 2048), dtype=np.uint8), 1)
    dims = ra.Dims(P(), (1, 1, s1, 4), (1, 1, s2, 4), (1, 1, s2, 4))
    want = {2: j > i, 3: j > i + 2, 4: ((j - i) > 1 + 2) | ((i - j) > 0 - 2)}
    for mode, w in want.items():
        got = ra.sparse_masked(P(sparse_mode=mode, pre_tokens=0, next_tokens=1), mask, dims, 0)[0]
        check(np.array_equal(got, w), "sparse mode %d:\n%s" % (mode, got.astype(int)))
    # Mode 4 by hand: S1 = 3, S2 = 5, pre = 0, next = 1 -> row i keeps j in [i + 2, i + 3].
    got = ra.sparse_masked(P(sparse_mode=4, pre_tokens=0, next_tokens=1), mask, dims, 0)[0]
    hand = np.array([[1, 1, 0, 0, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0]], dtype=bool)
    check(np.array_equal(got, hand), "mode 4 by hand")
    # Mode 0: user mask OR top-left band.
    um = np.zeros((s1, s2), dtype=np.uint8)
    um[0, 0] = 1
    got = ra.sparse_masked(P(sparse_mode=0, pre_tokens=1, next_tokens=0), um, dims, 0)[0]
    hand = np.array([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1], [1, 0, 0, 1, 1]], dtype=bool)
    check(np.array_equal(got, hand), "mode 0 band+mask")
    # Mode 6 (prefix 1): rightDownCausal except j < 1.
    m6 = np.zeros((3072, 2048), dtype=np.uint8)
    got = ra.sparse_masked(P(sparse_mode=6, prefix=[1]), m6, ra.Dims(P(), (1, 1, 3, 4), (1, 1, 3, 4), (1, 1, 3, 4)), 0)[0]
    hand = np.array([[0, 1, 1], [0, 0, 1], [0, 0, 0]], dtype=bool)
    check(np.array_equal(got, hand), "mode 6 prefix 1")
    got = ra.sparse_masked(P(sparse_mode=6, prefix=[2]), m6, ra.Dims(P(), (1, 1, 3, 4), (1, 1, 3, 4), (1, 1, 3, 4)), 0)[0]
    hand = np.array([[0, 0, 1], [0, 0, 1], [0, 0, 0]], dtype=bool)
    check(np.array_equal(got, hand), "mode 6 prefix 2")
    # No atten_mask: sparse_mode is ignored.
    got = ra.sparse_masked(P(sparse_mode=2), None, dims, 0)
    check(not got.any(), "no mask ignores sparse mode")
    # TND mode 7/8: the special batch is the last / first non-empty one.
    pt = P(input_layout="TND", actual_seq_qlen=[2, 2, 4], actual_seq_kvlen=[3, 5, 8], sparse_mode=7, pre_tokens=10,
           next_tokens=-1)
    dt = ra.Dims(pt, (4, 1, 4), (8, 1, 4), (8, 1, 4))
    got = ra.sparse_masked(pt, mask, dt, 0)[0]       # batch 0: mode 3, S1=2, S2=3
    check(np.array_equal(got, np.array([[0, 0, 1], [0, 0, 0]], dtype=bool)), "mode 7 batch 0 (mode 3)")
    got = ra.sparse_masked(pt, mask, dt, 2)[0]       # last batch: mode 4, S1=2, S2=3, next=-1: j - i > 0
    check(np.array_equal(got, np.array([[0, 1, 1], [0, 0, 1]], dtype=bool)), "mode 7 last batch (mode 4)")
    pt8 = dict(pt, sparse_mode=8, actual_seq_qlen=[0, 2, 4], next_tokens=0, pre_tokens=3)
    got = ra.sparse_masked(pt8, mask, ra.Dims(pt8, (4, 1, 4), (8, 1, 4), (8, 1, 4)), 2)[0]  # mode 2
    check(np.array_equal(got, np.array([[0, 1, 1], [0, 0, 1]], dtype=bool)), "mode 8 later batch (mode 2)")
    got = ra.sparse_masked(pt8, mask, ra.Dims(pt8, (4, 1, 4), (8, 1, 4), (8, 1, 4)), 1)[0]  # first non-empty: mode 4
    # batch 1: S1 = 2, S2 = 2, pre = 3, next = 0 -> masked iff j > i
    check(np.array_equal(got, np.array([[0, 1], [0, 0]], dtype=bool)), "mode 8 first non-empty batch (mode 4)")
    got = ra.sparse_masked(dict(pt8, next_tokens=1), mask, ra.Dims(pt8, (4, 1, 4), (8, 1, 4), (8, 1, 4)), 1)[0]
    check(not got.any(), "mode 8 first non-empty batch, next = 1 keeps all")


def test_d1_sink_dropout_topk(rng):
    # S1 = 3 > S2 = 1 with mode 3: rows 0, 1 fully masked (D1).
    q = rng.standard_normal((1, 1, 3, 2))
    k = rng.standard_normal((1, 1, 1, 2))
    v = rng.standard_normal((1, 1, 1, 2))
    mask = np.triu(np.ones((2048, 2048), dtype=bool), 1)
    r = ra.forward(P(sparse_mode=3), {"query": q, "key": k, "value": v, "atten_mask": mask}, "fp32")
    check(np.all(r["attention_out"][0, 0, :2] == 0) and close(r["attention_out"][0, 0, 2], v[0, 0, 0]), "D1 out")
    check(np.all(r["softmax_max"][0, 0, :2] == -ra.FLT_MAX) and np.all(r["softmax_sum"][0, 0, :2] == ra.FLT_MAX), "D1 stats")
    # With a sink, a fully masked row: max = sink, sum = 1, out = 0.
    sink = np.array([0.75], dtype=np.float32)
    r = ra.forward(P(sparse_mode=3), {"query": q, "key": k, "value": v, "atten_mask": mask, "sink": sink}, "fp32")
    check(np.all(r["softmax_max"][0, 0, :2] == 0.75) and np.all(r["softmax_sum"][0, 0, :2] == 1.0), "sink D1 stats")
    check(np.all(r["attention_out"][0, 0, :2] == 0), "sink D1 out")
    # Sink by hand: x = [0, 1], sink 3: m = 3, l = e^-3 + e^-2 + 1, out = (e^-3 * 1 + e^-2 * 5) / l.
    inp = {"query": t(1.0, shape=(1, 1, 1, 1)), "key": t(0.0, 1.0, shape=(1, 1, 2, 1)),
           "value": t(1.0, 5.0, shape=(1, 1, 2, 1)), "sink": np.array([3.0], dtype=np.float32)}
    r = ra.forward(P(), inp, "fp32")
    l = math.exp(-3) + math.exp(-2) + 1
    check(close(r["attention_out"][0, 0, 0, 0], (math.exp(-3) + 5 * math.exp(-2)) / l), "sink out")
    check(close(r["softmax_sum"][0, 0, 0, 0], l) and r["softmax_max"][0, 0, 0, 0] == 3.0, "sink stats")
    # Dropout keep 0.7: key 0 dropped, key 1 kept: out = e^0 * 5 * fp32(1/0.7f) / (1 + e^-1); l excludes dropout.
    inp = {"query": t(1.0, shape=(1, 1, 1, 1)), "key": t(0.0, 1.0, shape=(1, 1, 2, 1)),
           "value": t(1.0, 5.0, shape=(1, 1, 2, 1)), "drop_mask": np.array([0b10], dtype=np.uint8)}
    r = ra.forward(P(keep_prob=0.7), inp, "fp32")
    f = float(np.float32(1) / np.float32(0.7))
    check(f != 1 / 0.7, "fp32 reciprocal differs from the fp64 one")
    check(close(r["attention_out"][0, 0, 0, 0], 5 * f / (1 + math.exp(-1))), "dropout out")
    check(close(r["softmax_sum"][0, 0, 0, 0], 1 + math.exp(-1)), "dropout sum excludes dropout")
    # Top-k with a duplicate and sentinels: keys [1, 1, -1, 7] over S2 = 2 -> key 1 counted twice, key 0 absent.
    inp = {"query": t(1.0, shape=(1, 1, 1, 1)), "key": t(0.0, 1.0, shape=(1, 1, 2, 1)),
           "value": t(1.0, 5.0, shape=(1, 1, 2, 1)), "topk_indices": np.array([[[1, 1, -1, 7]]], dtype=np.int32)}
    r = ra.forward(P(), inp, "fp32")
    check(close(r["attention_out"][0, 0, 0, 0], 5.0) and close(r["softmax_sum"][0, 0, 0, 0], 2.0), "topk duplicates")


def test_gqa_alibi(rng):
    # N1 = 4, N2 = 2: heads 0, 1 read kv head 0 (value 10), heads 2, 3 kv head 1 (value 20).
    q = rng.standard_normal((1, 4, 2, 3))
    k = rng.standard_normal((1, 2, 3, 3))
    v = np.concatenate([np.full((1, 1, 3, 1), 10.0), np.full((1, 1, 3, 1), 20.0)], axis=1)
    r = ra.forward(P(head_num=4), {"query": q, "key": k, "value": v}, "fp32")
    check(close(r["attention_out"][0, :2], np.full((2, 2, 1), 10.0)) and
          close(r["attention_out"][0, 2:], np.full((2, 2, 1), 20.0)), "GQA h -> h / G")
    # ALiBi type 2: pse_ij = -slope |j + kv_start - i - q_start|; type 3 with sqrt.
    slopes = np.array([0.5], dtype=np.float32)
    q1 = np.zeros((1, 1, 2, 1))
    k1 = np.zeros((1, 1, 3, 1))
    v1 = t(1.0, 2.0, 4.0, shape=(1, 1, 3, 1))
    for ptype, fn in ((2, lambda d: d), (3, math.sqrt)):
        r = ra.forward(P(pse_type=ptype, q_start_idx=1, kv_start_idx=0), {"query": q1, "key": k1, "value": v1,
                                                                           "real_shift": slopes}, "fp32")
        for i in range(2):
            x = [-0.5 * fn(abs(j - i - 1)) for j in range(3)]
            m = max(x)
            w = [math.exp(a - m) for a in x]
            want = sum(wi * vi for wi, vi in zip(w, [1.0, 2.0, 4.0])) / sum(w)
            check(close(r["attention_out"][0, 0, i, 0], want), "alibi type %d row %d" % (ptype, i))


def test_layouts(rng):
    b, n1, n2, s1, s2, d, dv = 2, 4, 2, 3, 5, 4, 3
    q = rng.standard_normal((b, n1, s1, d))
    k = rng.standard_normal((b, n2, s2, d))
    v = rng.standard_normal((b, n2, s2, dv))
    dy = rng.standard_normal((b, n1, s1, dv))
    mask = np.triu(np.ones((2048, 2048), dtype=np.uint8), 1)
    base = P(head_num=n1, scale_value=0.3, sparse_mode=3)
    ref = ra.forward(base, {"query": q, "key": k, "value": v, "atten_mask": mask}, "fp32")
    bin_ = {"query": q, "key": k, "value": v, "atten_mask": mask, "dy": dy, "attention_in": ref["attention_out"],
            "softmax_max": ref["softmax_max"], "softmax_sum": ref["softmax_sum"]}
    gref = ra.backward(base, bin_, "fp32")
    for lay in ("BSH", "SBH", "BSND"):
        cv = lambda x: ra.from_bnsd(x, lay)
        p = dict(base, input_layout=lay)
        r = ra.forward(p, {"query": cv(q), "key": cv(k), "value": cv(v), "atten_mask": mask}, "fp32")
        check(close(r["attention_out"], cv(ref["attention_out"])) and close(r["softmax_sum"], ref["softmax_sum"]),
              "layout %s forward" % lay)
        g = ra.backward(p, {"query": cv(q), "key": cv(k), "value": cv(v), "atten_mask": mask, "dy": cv(dy),
                            "attention_in": cv(ref["attention_out"]), "softmax_max": ref["softmax_max"],
                            "softmax_sum": ref["softmax_sum"]}, "fp32")
        check(all(close(g[n], cv(gref[n])) for n in ("dq", "dk", "dv")), "layout %s backward" % lay)
    # TND with equal lengths equals BSND batch by batch; add an empty sequence in the middle.
    tq = np.concatenate([q[0].transpose(1, 0, 2), q[1].transpose(1, 0, 2)])
    tk = np.concatenate([k[0].transpose(1, 0, 2), k[1].transpose(1, 0, 2)])
    tv = np.concatenate([v[0].transpose(1, 0, 2), v[1].transpose(1, 0, 2)])
    p = dict(base, input_layout="TND", actual_seq_qlen=[s1, s1, 2 * s1], actual_seq_kvlen=[s2, s2, 2 * s2])
    r = ra.forward(p, {"query": tq, "key": tk, "value": tv, "atten_mask": mask}, "fp32")
    want = np.concatenate([ref["attention_out"][0].transpose(1, 0, 2), ref["attention_out"][1].transpose(1, 0, 2)])
    check(close(r["attention_out"], want), "TND forward with an empty sequence")
    check(close(r["softmax_max"][:, s1:, 0], ref["softmax_max"][1, :, :, 0]), "TND softmax [N1,T,8]")
    r2 = ra.forward(dict(p, softmax_layout="same_as_input"), {"query": tq, "key": tk, "value": tv,
                                                              "atten_mask": mask}, "fp32")
    check(close(r2["softmax_max"], r["softmax_max"].transpose(1, 0, 2)), "TND softmax [T,N1,8]")


def test_compressed_pse(rng):
    s, n, d = 1030, 1, 2
    q = rng.standard_normal((1, n, s, d))
    k = rng.standard_normal((1, n, s, d))
    v = rng.standard_normal((1, n, s, d))
    diag = rng.standard_normal(2 * s)
    i = np.arange(s)[:, None]
    j = np.arange(s)[None, :]
    full = diag[j - i + s][None, None]  # Toeplitz: depends on j - i only
    mask = np.triu(np.ones((2048, 2048), dtype=np.uint8), 1)
    p = P(sparse_mode=2, pse_type=1)
    a = ra.forward(p, {"query": q, "key": k, "value": v, "atten_mask": mask, "real_shift": full}, "fp32")
    c = ra.forward(p, {"query": q, "key": k, "value": v, "atten_mask": mask, "real_shift": full[:, :, -1024:]}, "fp32")
    check(close(a["attention_out"], c["attention_out"]), "compressed pse equals full Toeplitz pse")


def _loss_fwd(p, inp, dy, dtype):
    r = ra.forward(p, inp, dtype)
    return float(np.sum(r["attention_out"] * dy)), r


def test_gradients_fd(rng):
    """Analytic backward against central finite differences of sum(dy * out) in fp64."""
    b, n1, n2, s1, s2, d, dv, dr = 1, 2, 1, 3, 4, 3, 2, 2
    p = P(head_num=n1, input_layout="TND", scale_value=0.7, pse_type=0, keep_prob=0.8,
          actual_seq_qlen=[s1], actual_seq_kvlen=[s2], sparse_mode=0, pre_tokens=1, next_tokens=1)
    inp = {"query": rng.standard_normal((s1, n1, d)), "key": rng.standard_normal((s2, n2, d)),
           "value": rng.standard_normal((s2, n2, dv)), "query_rope": rng.standard_normal((s1, n1, dr)),
           "key_rope": rng.standard_normal((s2, n2, dr)), "sink": np.array([0.3, -0.2], dtype=np.float32),
           "atten_mask": np.zeros((s1, s2), dtype=np.uint8),
           "real_shift": rng.standard_normal((1, n1, 1024, s2)),
           "drop_mask": np.array([0b10111011, 0b11011110, 0b1111], dtype=np.uint8)}
    inp["atten_mask"][2, 0] = 1
    dy = rng.standard_normal((s1, n1, dv))
    _, r = _loss_fwd(p, inp, dy, "fp64")
    g = ra.backward(p, dict(inp, dy=dy, attention_in=r["attention_out"], softmax_max=r["softmax_max"],
                            softmax_sum=r["softmax_sum"]), "fp64")
    h = 1e-6
    for name, gname in (("query", "dq"), ("key", "dk"), ("value", "dv"), ("query_rope", "dq_rope"),
                        ("key_rope", "dk_rope"), ("sink", "dsink")):
        x = np.asarray(inp[name], dtype=np.float64)
        num = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            xp = x.copy()
            xp[idx] += h
            xm = x.copy()
            xm[idx] -= h
            fp, _ = _loss_fwd(p, dict(inp, **{name: xp}), dy, "fp64")
            fm, _ = _loss_fwd(p, dict(inp, **{name: xm}), dy, "fp64")
            num[idx] = (fp - fm) / (2 * h)
        err = np.max(np.abs(num - g[gname])) / max(1e-3, np.max(np.abs(num)))
        print("fd %-8s rel err %.2e" % (gname, err))
        check(err < 1e-6, "finite differences %s: %.3e" % (gname, err))


def test_runner_rounding():
    """ref_runner's output encoders: fp32 -> bf16 / fp16 rounding half away from zero, saturating (spec D3)."""
    x = np.array([1 + 2.0 ** -8, -(1 + 2.0 ** -8), 1 + 2.0 ** -9, 1 + 3 * 2.0 ** -8, 3.4e38, np.inf, -np.inf, np.nan, 0.0])
    want = [0x3F81, 0xBF81, 0x3F80, 0x3F82, 0x7F7F, 0x7F7F, 0xFF7F, 0x7FC0, 0x0000]
    got = rr.bf16_half_away(x).tolist()
    check(got == want, "bf16 half away: %s, want %s" % ([hex(v) for v in got], [hex(v) for v in want]))
    x = np.array([1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 1 + 2.0 ** -12, 65520.0, -70000.0, 2.0 ** -25, -(2.0 ** -25),
                  2.0 ** -26, np.inf])
    want = [1 + 2.0 ** -10, 1 + 2.0 ** -9, 1.0, 65504.0, -65504.0, 2.0 ** -24, -(2.0 ** -24), 0.0, 65504.0]
    got = rr.f16_half_away(x).astype(np.float64).tolist()
    check(got == want, "fp16 half away: %r, want %r" % (got, want))
    check(bool(np.isnan(rr.f16_half_away(np.array([np.nan]))[0])), "fp16 NaN")


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 20261129
    print("test_ref_attention: seed", seed)
    rng = np.random.default_rng(seed)
    test_formats()
    test_hand_forward()
    test_sparse_modes()
    test_d1_sink_dropout_topk(rng)
    test_gqa_alibi(rng)
    test_layouts(rng)
    test_compressed_pse(rng)
    test_gradients_fd(rng)
    test_runner_rounding()
    print("FAIL (%d)" % len(FAILS) if FAILS else "PASS")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
