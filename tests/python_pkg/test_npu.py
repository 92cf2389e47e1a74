"""flashref.npu: torch_npu's fusion-attention functions on the CPU.

In the style of torch_npu's own tests (op-plugin test/test_custom_ops/test_npu_flash_attention*.py): a plain torch
reference (matmul, masked softmax, dropout by the unpacked bits) next to the call, masks built the way those tests
build them, every layout, sparse modes 0-8, pse, prefix, TND with actual_seq_qlen / _kvlen, GQA, softmax_layout
and sink. Each call is also checked against flashref.attention's golden called with flashref's own parameter names
(the mapping), gradients through autograd and torch.autograd.gradcheck (fp64 inputs), every check op-plugin makes
on the arguments, the signatures against the published schemas, and the CPU stand-in (install, python -m
flashref.npu run with an unchanged training script)."""

import inspect
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import flashref
from conftest import HERE, torch_or_skip

torch = torch_or_skip()
import flashref.npu as fnpu  # noqa: E402
import flashref.torch as frt  # noqa: E402
from flashref.npu import _schema  # noqa: E402

FLT_MAX = float(np.finfo(np.float32).max)


@pytest.fixture(autouse=True)
def _golden():
    fnpu.set_engine("golden")
    yield
    fnpu.set_engine("golden")


# ---------------------------------------------------------------------------------------------------------------------
# The signatures


@pytest.mark.parametrize("api", sorted(_schema.SCHEMAS))
def test_signature_is_the_published_schema(api):
    sig = inspect.signature(getattr(fnpu, api))
    got = [(p.name, p.default if p.default is not p.empty else "required", p.kind == p.KEYWORD_ONLY)
           for p in sig.parameters.values()]
    want = [(a.name, a.default if a.default is not _schema.Arg.REQUIRED else "required", a.keyword_only)
            for a in _schema.ARGS[api]]
    assert got == want
    assert all(type(g[1]) is type(w[1]) for g, w in zip(got, want))   # 1. stays a float, "" a str
    n_out = len(_schema.parse(_schema.SCHEMAS[api])[2])
    assert n_out == {"npu_fusion_attention": 7, "npu_fusion_attention_v2": 7, "npu_fusion_attention_v3": 6,
                     "npu_fusion_attention_grad": 5, "npu_fusion_attention_grad_v2": 7,
                     "npu_fusion_attention_grad_v3": 5}[api]


def test_mindspeed_v2_is_a_subset_of_v2():
    # every argument of MindSpeed's npu_fusion_attention is one of torch_npu's v2 with the same kind and default
    _, ms, _ = _schema.parse(_schema.MINDSPEED_V2)
    v2 = {a.name: a for a in _schema.ARGS["npu_fusion_attention_v2"]}
    for a in ms:
        assert a.name in v2 and (v2[a.name].type, v2[a.name].default, v2[a.name].keyword_only) == \
            (a.type, a.default, a.keyword_only), a


# ---------------------------------------------------------------------------------------------------------------------
# A plain reference, as torch_npu's tests write it (fp64 here)


# Alike examples/python_runner/run_case.py:to_bnsd and tests/python/ref_attention.py:from_bnsd: kept apart because
# these take torch tensors of every dtype (bf16 has no numpy type) for the torch_npu-style reference; those are numpy.
def to_bnsd(x, layout, n):
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.permute(0, 2, 1, 3)
    if layout == "BSH":
        b, s, h = x.shape
        return x.reshape(b, s, n, h // n).permute(0, 2, 1, 3)
    s, b, h = x.shape  # SBH
    return x.reshape(s, b, n, h // n).permute(1, 2, 0, 3)


def from_bnsd(x, layout):
    b, n, s, d = x.shape
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.permute(0, 2, 1, 3)
    if layout == "BSH":
        return x.permute(0, 2, 1, 3).reshape(b, s, n * d)
    return x.permute(2, 0, 1, 3).reshape(s, b, n * d)


def tforward(q, k, v, scale, masked=None, pse=None, sink=None, drop=None, keep_prob=1.0):
    """q [B,N1,S1,D], k/v [B,N2,S2,D] (GQA broadcast as broadcastKV_sigle does), masked True = does not take part.
    Returns out, softmax max, softmax sum [B,N1,S1] (fully masked rows: out 0, D1's pair)."""
    q, k, v = (t.double() for t in (q, k, v))
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    qk = q @ k.transpose(-1, -2)
    x = (qk + pse.double()) * scale if pse is not None else qk * scale
    if masked is not None:
        x = x.masked_fill(masked, float("-inf"))
    m = x.amax(-1)
    if sink is not None:
        m = torch.maximum(m, sink.double()[None, :, None])
    dead = torch.isneginf(m)
    ms = torch.where(dead, torch.zeros_like(m), m)
    e = torch.exp(x - ms[..., None])
    l = e.sum(-1) + (torch.exp(sink.double()[None, :, None] - ms) if sink is not None else 0)
    p = e / torch.where(dead, torch.ones_like(l), l)[..., None]
    if drop is not None:
        p = p * drop.double() / keep_prob
    out = p @ v
    return out, torch.where(dead, torch.full_like(m, -FLT_MAX), m), torch.where(dead, torch.full_like(l, FLT_MAX), l)


def band_mask(s1, s2, pre, nxt):
    """torch_npu's tests: triu(k = next + 1) | tril(k = -pre - 1)."""
    ones = torch.ones(s1, s2, dtype=torch.bool)
    return torch.triu(ones, diagonal=nxt + 1) | torch.tril(ones, diagonal=-pre - 1)


COMPRESSED = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)


def prefix_compressed():
    m = torch.zeros(3072, 2048, dtype=torch.bool)
    m[:2048] = COMPRESSED
    m[2048:, 1024:] = True
    return m


def rel(a, b):
    a, b = a.detach().double(), b.detach().double()
    n = b.norm()
    return float((a - b).norm() / n) if n > 0 else float((a - b).norm())


def rnd(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g) * 2 - 1).to(dtype)


TOL = {torch.float32: 2e-6, torch.float16: 2e-3, torch.bfloat16: 1.5e-2}


def check_forward(res, q, k, v, ref_out, ref_m, ref_l, dtype, fr_kwargs, layout="BNSD"):
    # layout: the one of q, k, v and attention_out (the reference is BNSD)
    """torch_npu's outputs: shapes / dtypes as op-plugin allocates them; values against the plain reference and
    exactly equal to flashref.attention's golden called with flashref's names."""
    out, smax, ssum, sout, seed, offset, numels = res
    assert out.dtype == q.dtype and sout.shape == (0,) and sout.dtype == q.dtype
    assert smax.dtype == torch.float32 and ssum.dtype == torch.float32
    assert isinstance(seed, int) and isinstance(offset, int) and isinstance(numels, int)
    golden = flashref.attention(q, k, v, engine="golden", **fr_kwargs)
    assert torch.equal(out, golden.out)
    assert rel(to_bnsd(out, layout, ref_m.shape[1]), ref_out) < TOL[dtype]
    b, n, s1 = ref_m.shape
    if layout != "TND":
        assert smax.shape == (b, n, s1, 8)
        assert torch.equal(smax, golden.softmax_max) and torch.equal(ssum, golden.softmax_sum)
        live = ref_m > -FLT_MAX
        assert rel(smax[..., 0][live], ref_m[live]) < 1e-5 and rel(ssum[..., 0][live], ref_l[live]) < 1e-5


# ---------------------------------------------------------------------------------------------------------------------
# Forward, torch_npu-test style


@pytest.mark.parametrize("layout", ["BSH", "SBH", "BSND", "BNSD"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_layouts_dense(layout, dtype):
    B, N, S1, S2, D = 2, 4, 24, 40, 16
    q, k, v = rnd((B, N, S1, D), dtype, 1), rnd((B, N, S2, D), dtype, 2), rnd((B, N, S2, D), dtype, 3)
    qq, kk, vv = (from_bnsd(t, layout).contiguous() for t in (q, k, v))
    res = fnpu.npu_fusion_attention(qq, kk, vv, head_num=N, input_layout=layout, scale=0.25)
    ro, rm, rl = tforward(q, k, v, 0.25)
    assert res[0].shape == qq.shape
    check_forward(res, qq, kk, vv, ro, rm, rl, dtype, dict(input_layout=layout, head_num=N, scale=0.25), layout)
    assert res[6] == B * N * S1 * S2   # numels, torch_npu's formula


@pytest.mark.parametrize("layout", ["BSH", "BNSD"])
def test_gqa_and_mqa(layout):
    for n2 in (2, 1):
        q, k, v = rnd((1, 8, 16, 8), seed=4), rnd((1, n2, 20, 8), seed=5), rnd((1, n2, 20, 8), seed=6)
        qq, kk, vv = (from_bnsd(t, layout).contiguous() for t in (q, k, v))
        res = fnpu.npu_fusion_attention(qq, kk, vv, 8, layout, scale=0.3)
        ro, rm, rl = tforward(q, k, v, 0.3)
        assert rel(to_bnsd(res[0], layout, 8), ro) < 2e-6


# sparse_params = [sparse_mode, pre_tockens, next_tockens], as test_npu_flash_attention.py lists them
@pytest.mark.parametrize("sparse_mode, pre, nxt", [(0, 128, 128), (0, 6, 3), (0, 9, -3), (0, -3, 7), (1, 65536, 65536),
                                                   (2, 65536, 0), (3, 65536, 0), (4, 5, 2), (4, 128, 128)])
@pytest.mark.parametrize("s1, s2", [(32, 32), (20, 33), (33, 20)])
def test_sparse_modes_0_to_4(sparse_mode, pre, nxt, s1, s2):
    B, N, D = 1, 2, 16
    q, k, v = rnd((B, N, s1, D), torch.float16, 7), rnd((B, N, s2, D), torch.float16, 8), \
        rnd((B, N, s2, D), torch.float16, 9)
    i, j = torch.arange(s1)[:, None], torch.arange(s2)[None, :]
    if sparse_mode == 0:
        mask = band_mask(s1, s2, pre, nxt)[None, None].expand(B, 1, s1, s2).contiguous()
        masked = mask
    elif sparse_mode == 1:
        mask = torch.rand(B, N, s1, s2, generator=torch.Generator().manual_seed(1)) < 0.3
        masked = mask
    else:
        mask = COMPRESSED
        if sparse_mode == 2:
            masked = j > i
        elif sparse_mode == 3:
            masked = j > i + s2 - s1
        else:   # band from the bottom-right corner
            masked = ((j - i) > nxt + (s2 - s1)) | ((i - j) > pre - (s2 - s1))
        masked = masked[None, None]
    if sparse_mode in (0, 4) and (pre < 0 or nxt < 0) and not (abs(min(pre, nxt)) < min(s1, s2)):
        pytest.skip("band out of range for these lengths")
    try:
        res = fnpu.npu_fusion_attention(q, k, v, N, "BNSD", atten_mask=mask, scale=0.125, sparse_mode=sparse_mode,
                                        pre_tockens=pre, next_tockens=nxt)
    except fnpu.NpuError as e:
        assert e.status == "FR_E_BAND", e      # a band the operator refuses for these lengths, by its own rule
        return
    ro, rm, rl = tforward(q, k, v, 0.125, masked=masked)
    check_forward(res, q, k, v, ro, rm, rl, torch.float16,
                  dict(input_layout="BNSD", head_num=N, scale=0.125, atten_mask=mask, sparse_mode=sparse_mode,
                       pre_tokens=pre, next_tokens=nxt))


@pytest.mark.parametrize("sparse_mode", [5, 6])
def test_prefix_modes(sparse_mode):
    # the prefix example of op-plugin:docs/zh/custom_APIs/torch_npu/torch_npu-npu_fusion_attention.md:
    # the mask is ~(causal | prefix) per batch
    b, n, s, d = 2, 4, 32, 16
    prefix = [4, 8]
    q, k, v = (rnd((b, n, s, d), torch.float16, 10 + t) for t in range(3))
    row, col = torch.arange(s).view(s, 1), torch.arange(s).view(1, s)
    masked = torch.ones(b, n, s, s, dtype=torch.bool)
    for bi, p in enumerate(prefix):
        masked[bi] = ~((col <= row) | (col < p))
    mask = masked if sparse_mode == 5 else prefix_compressed()
    res = fnpu.npu_fusion_attention(q, k, v, head_num=n, input_layout="BNSD", atten_mask=mask, scale=d ** -0.5,
                                    prefix=prefix, sparse_mode=sparse_mode)
    ro, rm, rl = tforward(q, k, v, d ** -0.5, masked=masked)
    check_forward(res, q, k, v, ro, rm, rl, torch.float16,
                  dict(input_layout="BNSD", head_num=n, scale=d ** -0.5, atten_mask=mask, prefix=prefix,
                       sparse_mode=sparse_mode))


@pytest.mark.parametrize("shape", ["BNSS", "BN1S", "1NSS"])
def test_pse(shape):
    # the pse example of the doc: softmax(scale * (QK^T + pse)) (pse_type 1)
    B, N, S, D = 2, 4, 16, 32
    q, k, v = (rnd((B, N, S, D), torch.float16, 20 + t) for t in range(3))
    pshape = {"BNSS": (B, N, S, S), "BN1S": (B, N, 1, S), "1NSS": (1, N, S, S)}[shape]
    pse = rnd(pshape, torch.float16, 23)
    res = fnpu.npu_fusion_attention(q, k, v, head_num=N, input_layout="BNSD", pse=pse, scale=D ** -0.5)
    ro, rm, rl = tforward(q, k, v, D ** -0.5, pse=pse)
    check_forward(res, q, k, v, ro, rm, rl, torch.float16,
                  dict(input_layout="BNSD", head_num=N, scale=D ** -0.5, pse=pse))


def test_sink():
    # the sink example of the doc: softmax over [scores, sink_h], the sink column dropped
    B, N, S, D = 1, 4, 16, 64
    q, k, v = (rnd((B, N, S, D), torch.float16, 30 + t) for t in range(3))
    sink = torch.linspace(-0.2, 0.2, steps=N, dtype=torch.float32)
    res = fnpu.npu_fusion_attention(q, k, v, head_num=N, input_layout="BNSD", sink=sink, scale=D ** -0.5)
    ro, rm, rl = tforward(q, k, v, D ** -0.5, sink=sink)
    scores = q.double() @ k.double().transpose(2, 3) * D ** -0.5
    doc = torch.softmax(torch.cat([scores, sink.double().view(1, N, 1, 1).expand(B, N, S, 1)], -1), -1)[..., :-1]
    assert rel(doc @ v.double(), ro) < 1e-12
    check_forward(res, q, k, v, ro, rm, rl, torch.float16,
                  dict(input_layout="BNSD", head_num=N, scale=D ** -0.5, sink=sink))


def tnd_reference(q, k, v, cu_q, cu_k, scale, masked_fn=None, sink=None):
    """Per sequence, as supported_op_exec_with_softmax_out_tnd does: out [T,N1,D], max / sum [T,N1]."""
    out = torch.zeros(q.shape[0], q.shape[1], v.shape[2], dtype=torch.float64)
    m = torch.full((q.shape[0], q.shape[1]), -FLT_MAX, dtype=torch.float64)
    l = torch.full((q.shape[0], q.shape[1]), FLT_MAX, dtype=torch.float64)
    pq = pk = 0
    for b, (eq, ek) in enumerate(zip(cu_q, cu_k)):
        if eq > pq:
            qi, ki, vi = (t.permute(1, 0, 2)[None] for t in (q[pq:eq], k[pk:ek], v[pk:ek]))
            masked = masked_fn(b, eq - pq, ek - pk) if masked_fn else None
            o, mi, li = tforward(qi, ki, vi, scale, masked=masked, sink=sink)
            out[pq:eq], m[pq:eq], l[pq:eq] = o[0].permute(1, 0, 2), mi[0].T, li[0].T
        pq, pk = eq, ek
    return out, m, l


@pytest.mark.parametrize("softmax_layout", ["", "TND"])
@pytest.mark.parametrize("with_sink", [False, True])
def test_tnd_varlen(softmax_layout, with_sink):
    # test_npu_flash_attention_tnd: seqlens q [1, 2, 3], kv [3, 4, 5], N1 8 on N2 2 (GQA), plus an empty sequence
    N1, N2, D = 8, 2, 32
    lq, lk = [1, 2, 0, 3], [3, 4, 2, 5]
    cu_q, cu_k = list(np.cumsum(lq)), list(np.cumsum(lk))
    q, k, v = rnd((sum(lq), N1, D), torch.bfloat16, 40), rnd((sum(lk), N2, D), torch.bfloat16, 41), \
        rnd((sum(lk), N2, D), torch.bfloat16, 42)
    sink = torch.linspace(-1, 1, N1) if with_sink else None
    scale = D ** -0.5
    res = fnpu.npu_fusion_attention(q, k, v, N1, "TND", scale=scale, actual_seq_qlen=tuple(int(c) for c in cu_q),
                                    actual_seq_kvlen=tuple(int(c) for c in cu_k), softmax_layout=softmax_layout,
                                    sink=sink)
    ro, rm, rl = tnd_reference(q, k, v, cu_q, cu_k, scale, sink=sink)
    T = sum(lq)
    out, smax, ssum = res[0], res[1], res[2]
    assert out.shape == (T, N1, D) and smax.shape == (T, N1, 8)      # [T, N1, 8] whatever the layout
    assert rel(out, ro) < 1.5e-2
    g = flashref.attention(q, k, v, input_layout="TND", head_num=N1, scale=scale, actual_seq_qlen=cu_q,
                           actual_seq_kvlen=cu_k, sink=sink, engine="golden",
                           softmax_layout="same_as_input" if softmax_layout else None)
    assert torch.equal(out, g.out)
    if softmax_layout == "TND":
        mem_tnd = smax                                           # TND layout: [T, N1, 8] in memory
        assert torch.equal(smax, g.softmax_max)
    else:
        assert torch.equal(smax.reshape(N1, T, 8), g.softmax_max)   # default: [N1, T, 8] memory in that tensor
        mem_tnd = smax.reshape(N1, T, 8).transpose(0, 1)
    assert rel(mem_tnd[..., 0], rm) < 1e-5
    assert res[6] == N1 * (1 * 3 + 2 * 4 + 0 * 2 + 3 * 5)      # numels: torch_npu's TND formula


@pytest.mark.parametrize("sparse_mode", [2, 3, 4, 7, 8])
def test_tnd_sparse_modes(sparse_mode):
    N, D = 2, 16
    lq, lk = [4, 6, 5], [6, 6, 9]
    cu_q, cu_k = [int(c) for c in np.cumsum(lq)], [int(c) for c in np.cumsum(lk)]
    q, k, v = rnd((sum(lq), N, D), seed=50), rnd((sum(lk), N, D), seed=51), rnd((sum(lk), N, D), seed=52)
    pre, nxt = {2: (0, 0), 3: (0, 0), 4: (3, 1), 7: (9, -4), 8: (6, 2)}[sparse_mode]

    def masked(b, s1, s2):
        i, j = torch.arange(s1)[:, None], torch.arange(s2)[None, :]
        band = ((j - i) > nxt + (s2 - s1)) | ((i - j) > pre - (s2 - s1))
        if sparse_mode == 2 or (sparse_mode == 8 and b > 0):
            return (j > i)[None, None]
        if sparse_mode == 3 or (sparse_mode == 7 and b < 2):
            return (j > i + s2 - s1)[None, None]
        return band[None, None]
    res = fnpu.npu_fusion_attention(q, k, v, N, "TND", atten_mask=COMPRESSED, scale=0.25, sparse_mode=sparse_mode,
                                    pre_tockens=pre, next_tockens=nxt, actual_seq_qlen=cu_q, actual_seq_kvlen=cu_k)
    ro, _, _ = tnd_reference(q, k, v, cu_q, cu_k, 0.25, masked_fn=masked)
    assert rel(res[0], ro) < 2e-6
    g = flashref.attention(q, k, v, input_layout="TND", head_num=N, scale=0.25, atten_mask=COMPRESSED,
                           sparse_mode=sparse_mode, pre_tokens=pre, next_tokens=nxt, actual_seq_qlen=cu_q,
                           actual_seq_kvlen=cu_k, engine="golden")
    assert torch.equal(res[0], g.out)


def test_v2_pse_types_and_start_indices():
    # MindSpeed's v2 call: pse_type 2 / 3 with fp32 slopes, q_start_idx / kv_start_idx (lists of one)
    B, N, S, D = 1, 4, 12, 16
    q, k, v = (rnd((B, S, N, D), seed=60 + t) for t in range(3))
    slopes = torch.tensor([2.0 ** (-8 * (h + 1) / N) for h in range(N)])
    i, j = torch.arange(S)[:, None].double(), torch.arange(S)[None, :].double()
    for pse_type in (2, 3):
        for qs, ks in ((0, 0), (2, 5)):
            res = fnpu.npu_fusion_attention_v2(q, k, v, N, "BSND", pse=slopes, scale=0.25, pse_type=pse_type,
                                               q_start_idx=[qs], kv_start_idx=[ks])
            dist = (j + ks - i - qs).abs()
            alibi = -slopes.double()[:, None, None] * (dist if pse_type == 2 else dist.sqrt())
            x = (q.double().permute(0, 2, 1, 3) @ k.double().permute(0, 2, 3, 1)) * 0.25 + alibi
            ref = torch.softmax(x, -1) @ v.double().permute(0, 2, 1, 3)
            assert rel(res[0].permute(0, 2, 1, 3), ref) < 2e-6
    # pse_type 0: scale * QK^T + pse
    pse = rnd((B, N, S, S), seed=64)
    res = fnpu.npu_fusion_attention_v2(q, k, v, N, "BSND", pse=pse, scale=0.25, pse_type=0)
    x = (q.double().permute(0, 2, 1, 3) @ k.double().permute(0, 2, 3, 1)) * 0.25 + pse.double()
    assert rel(res[0].permute(0, 2, 1, 3), torch.softmax(x, -1) @ v.double().permute(0, 2, 1, 3)) < 2e-6


def test_v2_rope_and_v2_softmax_layout_on_a2():
    # rope (MLA): scores over [q, q_rope].[k, k_rope]; TND only on Atlas A2
    N1, N2, D, R = 2, 1, 128, 64
    cu_q, cu_k = [3, 7], [5, 9]
    q, k, v = rnd((7, N1, D), torch.bfloat16, 70), rnd((9, N2, D), torch.bfloat16, 71), rnd((9, N2, D), torch.bfloat16,
                                                                                            72)
    qr, kr = rnd((7, N1, R), torch.bfloat16, 73), rnd((9, N2, R), torch.bfloat16, 74)
    res = fnpu.npu_fusion_attention_v2(q, k, v, N1, "TND", query_rope=qr, key_rope=kr, scale=0.1,
                                       actual_seq_qlen=cu_q, actual_seq_kvlen=cu_k, softmax_layout="TND")
    ro, rm, _ = tnd_reference(torch.cat([q, qr], -1), torch.cat([k, kr], -1), v, cu_q, cu_k, 0.1)
    assert rel(res[0], ro) < 1.5e-2
    # without a sink the A2 v2 kernels take no softmax layout: the statistics stay [N1, T, 8] in memory
    assert rel(res[1].reshape(N1, 7, 8).transpose(0, 1)[..., 0], rm) < 1e-5
    with pytest.raises(fnpu.NpuError, match="key_rope: the size of actual_seq_qlen"):
        fnpu.npu_fusion_attention_v2(q[None], k[None], v[None], N1, "BSND", query_rope=qr[None], key_rope=kr[None])


def test_v3_tensor_seqlens_and_outputs():
    N, D = 2, 16
    q, k, v = rnd((9, N, D), seed=80), rnd((11, N, D), seed=81), rnd((11, N, D), seed=82)
    cu_q, cu_k = torch.tensor([4, 9]), torch.tensor([5, 11])
    res = fnpu.npu_fusion_attention_v3(q, k, v, N, "TND", actual_seq_qlen=cu_q, actual_seq_kvlen=cu_k, scale=0.5)
    assert len(res) == 6 and res[4].dtype == torch.int64 and res[4].shape == (1,) and res[5].shape == (1,)
    ref = fnpu.npu_fusion_attention(q, k, v, N, "TND", actual_seq_qlen=[4, 9], actual_seq_kvlen=[5, 11], scale=0.5)
    for a, b in zip(res[:4], ref[:4]):
        assert torch.equal(a, b)
    g = fnpu.npu_fusion_attention_grad_v3(q, k, v, ref[0], N, "TND", softmax_max=res[1], softmax_sum=res[2],
                                          attention_in=res[0], scale_value=0.5, actual_seq_qlen=cu_q,
                                          actual_seq_kvlen=cu_k, seed=torch.tensor([0]), offset=torch.tensor([0]))
    g1 = fnpu.npu_fusion_attention_grad(q, k, v, ref[0], N, "TND", softmax_max=ref[1], softmax_sum=ref[2],
                                        attention_in=ref[0], scale_value=0.5, actual_seq_qlen=[4, 9],
                                        actual_seq_kvlen=[5, 11])
    for a, b in zip(g[:3], g1[:3]):
        assert torch.equal(a, b)
    with pytest.raises(fnpu.NpuError, match="actual_seq_qlen: tensor must be 1-dimensional"):
        fnpu.npu_fusion_attention_v3(q, k, v, N, "TND", actual_seq_qlen=cu_q[None], actual_seq_kvlen=cu_k)


# ---------------------------------------------------------------------------------------------------------------------
# Backward


@pytest.mark.parametrize("layout", ["BSH", "SBH", "BSND", "BNSD", "TND"])
def test_grad_function_and_autograd(layout):
    # npu_fusion_attention_grad with the forward's outputs, as test_npu_flash_attention_grad.py calls it, equals
    # autograd through npu_fusion_attention and flashref.attention_backward's golden
    N1, N2, D = 4, 2, 16
    if layout == "TND":
        q, k, v = rnd((9, N1, D), torch.float16, 90), rnd((12, N2, D), torch.float16, 91), \
            rnd((12, N2, D), torch.float16, 92)
        seq = dict(actual_seq_qlen=[4, 9], actual_seq_kvlen=[5, 12])
    else:
        qb, kb, vb = rnd((2, N1, 10, D), torch.float16, 90), rnd((2, N2, 14, D), torch.float16, 91), \
            rnd((2, N2, 14, D), torch.float16, 92)
        q, k, v = (from_bnsd(t, layout).contiguous() for t in (qb, kb, vb))
        seq = {}
    dy = rnd(q.shape[:-1] + (q.shape[-1] if layout != "TND" else D,), torch.float16, 93) if layout != "TND" else \
        rnd((9, N1, D), torch.float16, 93)
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    sink = torch.tensor([0.5, -0.25, 0.0, 1.0], requires_grad=True)
    res = fnpu.npu_fusion_attention(*leaves, N1, layout, scale=0.25, sink=sink, **seq)
    res[0].backward(dy)
    g = fnpu.npu_fusion_attention_grad(q, k, v, dy, N1, layout, softmax_max=res[1], softmax_sum=res[2],
                                       attention_in=res[0].detach(), scale_value=0.25, sink=sink.detach(), **seq)
    assert len(g) == 5 and g[3] is None                      # no pse: dpse undefined
    for a, b in zip(leaves, g[:3]):
        assert torch.equal(a.grad, b)
    assert torch.equal(sink.grad, g[4]) and g[4].dtype == torch.float32
    fr = flashref.attention_backward(q, k, v, dy, res[0].detach(), *(res[1:3] if layout != "TND" else
                                     (res[1].reshape(N1, 9, 8), res[2].reshape(N1, 9, 8))),
                                     input_layout=layout, head_num=N1, scale=0.25, sink=sink.detach(),
                                     engine="golden", **seq)
    for a, b in zip(g[:3], fr[:3]):
        assert torch.equal(a, b)
    assert torch.equal(g[4], fr.dsink)


def test_grad_outputs_without_sink_and_with_pse():
    B, N, S, D = 1, 2, 6, 8
    q, k, v, dy = (rnd((B, N, S, D), seed=100 + t) for t in range(4))
    pse = rnd((B, N, S, S), seed=104)
    res = fnpu.npu_fusion_attention(q, k, v, N, "BNSD", pse=pse)
    g = fnpu.npu_fusion_attention_grad(q, k, v, dy, N, "BNSD", pse=pse, softmax_max=res[1], softmax_sum=res[2],
                                       attention_in=res[0])
    assert g[3].shape == pse.shape and torch.isnan(g[3]).all()       # dpse: never written by the operator
    assert g[4].shape == (0,) and g[4].dtype == torch.float32        # dsink: empty without a sink
    g2 = fnpu.npu_fusion_attention_grad_v2(q, k, v, dy, N, "BNSD", softmax_max=res[1], softmax_sum=res[2],
                                           attention_in=res[0], pse=pse)
    assert len(g2) == 7 and g2[4] is None and g2[5] is None
    for a, b in zip(g[:3], g2[:3]):
        assert torch.equal(a, b)
    # a learnable pse: the backward refuses (no dpse) instead of leaving it without a gradient
    pl = pse.clone().requires_grad_(True)
    out = fnpu.npu_fusion_attention(q.requires_grad_(True), k, v, N, "BNSD", pse=pl)[0]
    with pytest.raises(RuntimeError, match="pse: the operator computes no gradient"):
        out.sum().backward()


def dyadic(shape, g):
    return torch.randint(-64, 65, shape, generator=g, dtype=torch.int64).to(torch.float64) / 64


def test_gradcheck_bnsd_band_gqa_sink():
    g = torch.Generator().manual_seed(110)
    q, k, v = dyadic((1, 2, 5, 4), g), dyadic((1, 1, 6, 4), g), dyadic((1, 1, 6, 4), g)
    sink = dyadic((2,), g)
    mask = band_mask(5, 6, 2, 1)

    def f(q, k, v, sink):
        return fnpu.npu_fusion_attention(q, k, v, 2, "BNSD", atten_mask=mask, scale=0.5, pre_tockens=2,
                                         next_tockens=1, sink=sink)[0]
    assert torch.autograd.gradcheck(f, [t.requires_grad_(True) for t in (q, k, v, sink)], eps=2.0 ** -10,
                                    atol=1e-4, rtol=1e-3)


def test_gradcheck_tnd_causal():
    g = torch.Generator().manual_seed(111)
    q, k, v = dyadic((5, 2, 4), g), dyadic((7, 1, 4), g), dyadic((7, 1, 4), g)

    def f(q, k, v):
        return fnpu.npu_fusion_attention(q, k, v, 2, "TND", atten_mask=COMPRESSED, sparse_mode=3, scale=0.5,
                                         actual_seq_qlen=[2, 5], actual_seq_kvlen=[3, 7])[0]
    assert torch.autograd.gradcheck(f, [t.requires_grad_(True) for t in (q, k, v)], eps=2.0 ** -10, atol=1e-4,
                                    rtol=1e-3)


def test_gradcheck_v2_rope_alibi():
    g = torch.Generator().manual_seed(112)
    q, k, v = dyadic((3, 2, 4), g), dyadic((3, 2, 4), g), dyadic((3, 2, 4), g)
    qr, kr = dyadic((3, 2, 2), g), dyadic((3, 2, 2), g)
    slopes = torch.tensor([0.5, 0.25])

    def f(q, k, v, qr, kr):
        return fnpu.npu_fusion_attention_v2(q, k, v, 2, "TND", query_rope=qr, key_rope=kr, pse=slopes, pse_type=2,
                                            scale=0.5, actual_seq_qlen=[1, 3], actual_seq_kvlen=[1, 3])[0]
    assert torch.autograd.gradcheck(f, [t.requires_grad_(True) for t in (q, k, v, qr, kr)], eps=2.0 ** -10,
                                    atol=1e-4, rtol=1e-3)


# ---------------------------------------------------------------------------------------------------------------------
# Dropout


def packed_mask(n, keep_prob, seed):
    bits = (np.random.default_rng(seed).random(n) < keep_prob).astype(np.uint8)
    length = (n + 127) // 128 * 128 // 8          # what _npu_dropout_gen_mask allocates
    packed = np.zeros(length, dtype=np.uint8)
    packed[:(n + 7) // 8] = np.packbits(bits, bitorder="little")
    return torch.from_numpy(packed), torch.from_numpy(bits)


def test_dropout_mask_forward_and_backward():
    # test_npu_flash_attention_with_external_dropout_mask: the packed uint8 mask, seed / offset passed back
    B, N, S, D, kp = 1, 2, 16, 8, 0.8
    q, k, v = (rnd((B, S, N * D), seed=120 + t).requires_grad_(True) for t in range(3))
    mask, bits = packed_mask(B * N * S * S, kp, 3)
    res = fnpu.npu_fusion_attention(q, k, v, N, "BSH", scale=0.125, keep_prob=kp, dropout_mask=mask, seed=123,
                                    offset=16)
    assert res[4:] == (123, 16, B * N * S * S)
    drop = bits.reshape(B, N, S, S)
    ro, _, _ = tforward(to_bnsd(q, "BSH", N), to_bnsd(k, "BSH", N), to_bnsd(v, "BSH", N), 0.125, drop=drop,
                        keep_prob=kp)
    assert rel(to_bnsd(res[0], "BSH", N), ro) < 2e-6
    dy = rnd(res[0].shape, seed=125)
    res[0].backward(dy)
    fr = flashref.attention_backward(q.detach(), k.detach(), v.detach(), dy, res[0].detach(), res[1], res[2],
                                     input_layout="BSH", head_num=N, scale=0.125, keep_prob=kp, drop_mask=mask,
                                     engine="golden")
    assert torch.equal(q.grad, fr.dq) and torch.equal(v.grad, fr.dv)


def test_dropout_without_a_mask_is_refused():
    q = rnd((1, 4, 16))
    for f, kw in ((fnpu.npu_fusion_attention, {}), (fnpu.npu_fusion_attention_v2, {}),
                  (fnpu.npu_fusion_attention_v3, {})):
        with pytest.raises(fnpu.DropoutUnreproducible, match="cannot reproduce"):
            f(q, q, q, 2, "BSH", keep_prob=0.9, **kw)
    res = fnpu.npu_fusion_attention(q, q, q, 2, "BSH")
    with pytest.raises(fnpu.DropoutUnreproducible, match="takes no drop mask"):
        fnpu.npu_fusion_attention_grad(q, q, q, q, 2, "BSH", softmax_max=res[1], softmax_sum=res[2],
                                       attention_in=res[0], keep_prob=0.9, seed=1, offset=2, numels=64)
    # within 1e-9 of 1: no dropout, as torch_npu decides; within 1e-9 of 0: its all-zero mask
    assert torch.equal(fnpu.npu_fusion_attention(q, q, q, 2, "BSH", keep_prob=1 - 1e-10)[0], res[0])
    assert not fnpu.npu_fusion_attention(q, q, q, 2, "BSH", keep_prob=1e-10)[0].any()


# ---------------------------------------------------------------------------------------------------------------------
# op-plugin's checks


Q4 = torch.zeros(1, 2, 4, 8)

BAD = [
    # (function, overrides of the valid BNSD call, the argument the message names, a phrase of op-plugin's message)
    ("npu_fusion_attention", dict(head_num=0), "head_num", "head_num must > 0"),
    ("npu_fusion_attention", dict(query=torch.zeros(2, 4)), "query", "should be 3 or 4 dimensional"),
    ("npu_fusion_attention", dict(key=torch.zeros(1, 1, 1, 2, 4)), "key", "should be 3 or 4 dimensional"),
    ("npu_fusion_attention", dict(value=torch.zeros(8)), "value", "should be 3 or 4 dimensional"),
    ("npu_fusion_attention", dict(keep_prob=0.0), "keep_prob", "must be in range of (0, 1]"),
    ("npu_fusion_attention", dict(keep_prob=1.5), "keep_prob", "must be in range of (0, 1]"),
    ("npu_fusion_attention", dict(input_layout=""), "input_layout", "input_layout is empty"),
    ("npu_fusion_attention", dict(softmax_layout="NTD"), "softmax_layout", "only supported softmax_layout=TND"),
    ("npu_fusion_attention", dict(softmax_layout="TND"), "softmax_layout", "only supported when input_layout"),
    ("npu_fusion_attention", dict(sparse_mode=7), "sparse_mode", "range of [0,6]"),
    ("npu_fusion_attention", dict(sparse_mode=-1), "sparse_mode", "range of [0,6]"),
    ("npu_fusion_attention", dict(input_layout="TND", query=Q4[0], key=Q4[0], value=Q4[0], sparse_mode=5),
     "sparse_mode", "range of [0,5) or (5,8]"),
    ("npu_fusion_attention", dict(input_layout="TND", query=Q4[0], key=Q4[0], value=Q4[0], actual_seq_qlen=[4]),
     "actual_seq_qlen", "must be the same and cannot be empty"),
    ("npu_fusion_attention", dict(input_layout="BNDS"), "input_layout", "should be BSH/SBH/BNSD/BSND/TND"),
    ("npu_fusion_attention", dict(padding_mask=torch.zeros(1)), "padding_mask", "not supported"),
    ("npu_fusion_attention_grad", dict(dy=torch.zeros(4)), "dy", "should be 3 or 4 dimensional"),
    ("npu_fusion_attention_grad", dict(keep_prob=2.0), "keep_prob", "must be in range of (0, 1]"),
    ("npu_fusion_attention_grad", dict(sparse_mode=8), "sparse_mode", "range of [0,6]"),
    ("npu_fusion_attention_v2", dict(query_rope=torch.zeros(8)), "query_rope", "should be 3 or 4 dimensional"),
    ("npu_fusion_attention_v2", dict(input_layout=""), "input_layout", "The input_layout is empty"),
    ("npu_fusion_attention_v2", dict(input_layout="TND", query=Q4[0], key=Q4[0], value=Q4[0],
                                     actual_seq_qlen=[2000000], actual_seq_kvlen=[4]),
     "actual_seq_qlen", "should not greater than 1M"),
    ("npu_fusion_attention_v3", dict(input_layout="TND", query=Q4[0], key=Q4[0], value=Q4[0],
                                     actual_seq_qlen=torch.tensor([4.0]), actual_seq_kvlen=torch.tensor([4])),
     "actual_seq_qlen", "integer tensor"),
    ("npu_fusion_attention_grad_v3", dict(seed=torch.tensor([1, 2])), "seed", "exactly one element"),
    # the operator's own checks (flashref's validation), named with torch_npu's argument names
    ("npu_fusion_attention", dict(head_num=3), "head_num", "differs from query N"),
    ("npu_fusion_attention", dict(atten_mask=torch.zeros(4, 4, dtype=torch.bool), pre_tockens=-1, next_tockens=-1),
     "pre_tockens", "both negative"),
    ("npu_fusion_attention", dict(pse=torch.zeros(1, 2, 4, 5)), "pse", "none of"),
    ("npu_fusion_attention", dict(keep_prob=0.5, dropout_mask=torch.zeros(1, dtype=torch.uint8)), "dropout_mask",
     ""),
    ("npu_fusion_attention", dict(sink=torch.zeros(3)), "sink", ""),
]


@pytest.mark.parametrize("api, over, arg, phrase", BAD, ids=["%s-%s" % (b[0][21:] or "v1", b[2]) for b in BAD])
def test_op_plugin_checks(api, over, arg, phrase):
    base = dict(query=Q4, key=Q4, value=Q4, head_num=2, input_layout="BNSD")
    if "grad" in api:
        base.update(dy=Q4, softmax_max=torch.zeros(1, 2, 4, 8), softmax_sum=torch.ones(1, 2, 4, 8), attention_in=Q4)
    base.update(over)
    with pytest.raises(fnpu.NpuError) as e:
        getattr(fnpu, api)(**base)
    assert isinstance(e.value, RuntimeError) and isinstance(e.value, flashref.FlashrefError)
    msg = e.value.message
    assert msg.startswith(api + ": " + arg), msg
    assert phrase in msg, msg
    for flashref_name in ("real_shift", "drop_mask") + (("pre_tokens", "next_tokens") if "v2" not in api else ()):
        assert flashref_name not in msg, msg


def test_lowercase_tnd_takes_op_plugins_non_tnd_branch():
    # op-plugin compares input_layout with "TND" before upper-casing it: "tnd" gets the [0,6] range check
    q = torch.zeros(4, 2, 8)
    with pytest.raises(fnpu.NpuError, match=r"sparse_mode: The sparse_mode value must be in range of \[0,6\]"):
        fnpu.npu_fusion_attention(q, q, q, 2, "tnd", sparse_mode=7, actual_seq_qlen=[4], actual_seq_kvlen=[4])
    out = fnpu.npu_fusion_attention(q, q, q, 2, "tnd", actual_seq_qlen=[4], actual_seq_kvlen=[4])[0]
    assert torch.equal(out, fnpu.npu_fusion_attention(q, q, q, 2, "TND", actual_seq_qlen=[4],
                                                      actual_seq_kvlen=[4])[0])


def test_argument_types_as_torch_parses_them():
    q = torch.zeros(1, 4, 16)
    with pytest.raises(TypeError, match=r"argument 'head_num' \(position 4\) must be int, not float"):
        fnpu.npu_fusion_attention(q, q, q, 2.0, "BSH")
    with pytest.raises(TypeError, match="must be int, not bool"):
        fnpu.npu_fusion_attention(q, q, q, True, "BSH")
    with pytest.raises(TypeError, match="'prefix' .* must be int"):
        fnpu.npu_fusion_attention(q, q, q, 2, "BSH", prefix=[1.5])
    with pytest.raises(TypeError, match="'query' .* must be Tensor, not list"):
        fnpu.npu_fusion_attention([1.0], q, q, 2, "BSH")
    with pytest.raises(TypeError, match="unexpected keyword argument 'pre_tokens'"):
        fnpu.bind("npu_fusion_attention", q, q, q, 2, "BSH", pre_tokens=5)     # v1 spells it pre_tockens
    with pytest.raises(TypeError, match="takes 5 positional"):
        fnpu.bind("npu_fusion_attention_v2", q, q, q, 2, "BSH", None)          # v2: keyword-only after input_layout
    assert fnpu.npu_fusion_attention(q, q, q, np.int64(2), "BSH", scale=1)[0].shape == q.shape


def test_numpy_inputs():
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((2, 6, 4, 8)).astype(np.float32) for _ in range(3))
    res = fnpu.npu_fusion_attention(q, k, v, 4, "BSND", scale=0.3)
    assert isinstance(res[0], np.ndarray) and res[0].dtype == np.float32 and res[3].shape == (0,)
    g = flashref.attention(q, k, v, input_layout="BSND", head_num=4, scale=0.3, engine="golden")
    assert np.array_equal(res[0], g.out)
    gr = fnpu.npu_fusion_attention_grad(q, k, v, q, 4, "BSND", softmax_max=res[1], softmax_sum=res[2],
                                        attention_in=res[0], scale_value=0.3)
    assert isinstance(gr[0], np.ndarray) and gr[4].shape == (0,)


def test_fast_engine_on_request():
    q, k, v = rnd((1, 32, 64), seed=130), rnd((1, 48, 64), seed=131), rnd((1, 48, 64), seed=132)
    gold = fnpu.npu_fusion_attention(q, k, v, 4, "BSH", scale=0.25)[0]
    with fnpu.engine("fast"):
        assert fnpu.get_engine() == "fast"
        fast = fnpu.npu_fusion_attention(q, k, v, 4, "BSH", scale=0.25)[0]
    assert fnpu.get_engine() == "golden"
    assert torch.equal(fast, flashref.attention(q, k, v, input_layout="BSH", head_num=4, scale=0.25).out)
    assert rel(fast, gold) < 1e-6
    with pytest.raises(ValueError):
        fnpu.set_engine("emulate")


def test_bind_rebuilds_a_call_as_a_case():
    # what a dump reader does: torch_npu's positional / keyword arguments -> a flashref.Case, outputs mapped back
    q, k, v = rnd((9, 4, 16), seed=140), rnd((12, 2, 16), seed=141), rnd((12, 2, 16), seed=142)
    args = (q, k, v, 4, "TND")
    kw = dict(atten_mask=COMPRESSED, sparse_mode=3, scale=0.25, actual_seq_qlen=[4, 9], actual_seq_kvlen=[5, 12],
              pre_tockens=65536, next_tockens=0)
    call = fnpu.bind("npu_fusion_attention", *args, **kw)
    case = call.case("layer0.attn")
    assert case.op == "fwd" and case.dtype == "fp32" and case.input_layout == "TND"
    assert case.params["pre_tokens"] == 65536 and case.params["next_tokens"] == 0 and case.params["sparse_mode"] == 3
    npu_out = fnpu.npu_fusion_attention(*args, **kw)
    outs = call.outputs_from_npu(npu_out)
    ref = case.attention(engine="golden")
    assert torch.equal(outs["attention_out"], ref.out) and torch.equal(outs["softmax_max"], ref.softmax_max)
    gcall = fnpu.bind("npu_fusion_attention_grad", q, k, v, npu_out[0], 4, "TND", atten_mask=COMPRESSED,
                      sparse_mode=3, softmax_max=npu_out[1], softmax_sum=npu_out[2], attention_in=npu_out[0],
                      scale_value=0.25, actual_seq_qlen=[4, 9], actual_seq_kvlen=[5, 12])
    gcase = gcall.case()
    assert gcase.op == "bwd" and gcase.inputs["softmax_max"].shape == (4, 9, 8)   # flashref's [N1, T, 8]
    with pytest.raises(fnpu.DropoutUnreproducible):
        fnpu.bind("npu_fusion_attention", q, k, v, 4, "TND", keep_prob=0.5, actual_seq_qlen=[4, 9],
                  actual_seq_kvlen=[5, 12]).case()


@pytest.mark.parametrize("api", ["npu_fusion_attention", "npu_fusion_attention_v2", "npu_fusion_attention_v3"])
def test_grad_call_is_what_autograd_calls(api):
    # a forward, its outputs and the gradient of attention_out -> the grad call of derivatives.yaml; its result is
    # the gradient autograd gives
    q, k, v = rnd((9, 4, 16), seed=150), rnd((12, 2, 16), seed=151), rnd((12, 2, 16), seed=152)
    sink = torch.tensor([0.5, 0.0, -0.5, 1.0])
    seq = (dict(actual_seq_qlen=torch.tensor([4, 9]), actual_seq_kvlen=torch.tensor([5, 12])) if api.endswith("v3")
           else dict(actual_seq_qlen=[4, 9], actual_seq_kvlen=[5, 12]))
    kw = dict(atten_mask=COMPRESSED, sparse_mode=3, scale=0.25, softmax_layout="TND", sink=sink, **seq)
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    outs = getattr(fnpu, api)(*leaves, 4, "TND", **kw)
    dy = rnd(outs[0].shape, seed=153)
    outs[0].backward(dy)
    gcall = fnpu.bind(api, q, k, v, 4, "TND", **kw).grad_call(dy, [o.detach() if isinstance(o, torch.Tensor)
                                                                   else o for o in outs])
    assert gcall.api == api.replace("attention", "attention_grad") and gcall.op == "bwd"
    g = gcall.case().attention(engine="golden")
    for a, b in zip(leaves, g[:3]):
        assert torch.equal(a.grad, b)
    res = getattr(fnpu, gcall.api)(*[gcall.args[n] for n in ("query", "key", "value", "dy", "head_num",
                                                             "input_layout")],
                                   **{n: x for n, x in gcall.args.items() if n not in ("query", "key", "value", "dy",
                                                                                      "head_num", "input_layout")})
    assert torch.equal(res[0], g.dq) and torch.equal(gcall.outputs_from_npu(res)["dsink"], g.dsink)


def test_tensors_off_the_cpu_are_refused():
    q = torch.zeros(1, 4, 16, device="meta")
    with pytest.raises(fnpu.NpuError, match="query: Expected all tensors to be on the same device: a meta tensor"):
        fnpu.npu_fusion_attention(q, q, q, 2, "BSH")


# ---------------------------------------------------------------------------------------------------------------------
# The CPU stand-in


def test_install_and_uninstall():
    assert not fnpu.installed()
    mod = fnpu.install()
    try:
        import torch_npu
        assert torch_npu is mod and fnpu.installed()
        assert torch_npu.npu_fusion_attention is fnpu.npu_fusion_attention
        assert torch.npu.is_available() is False and torch.npu.device_count() == 0
        import torch_npu.npu as tnn
        assert tnn is torch.npu
        with pytest.raises(RuntimeError, match="no NPU device"):
            torch.zeros(2).npu()
        with pytest.raises(AttributeError, match="not part of flashref's CPU stand-in"):
            torch_npu.npu_rotary_mul
        with pytest.raises(ModuleNotFoundError, match="not part of flashref's CPU stand-in"):
            import torch_npu.contrib  # noqa: F401
        fnpu.install(npu_to_cpu=True)
        t = torch.zeros(2)
        assert torch.zeros(2).npu().device.type == "cpu" and t.npu() is t
    finally:
        fnpu.uninstall()
    assert not fnpu.installed() and "torch_npu" not in sys.modules and not hasattr(torch, "npu")
    assert not hasattr(torch.Tensor, "npu")


def _env():
    """This flashref first on PYTHONPATH, as an absolute path (a child may run in another directory)."""
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(flashref.__file__)))
    return dict(os.environ, PYTHONPATH=os.pathsep.join([pkg] + [p for p in [os.environ.get("PYTHONPATH")] if p]))


def run_standin(args, **kw):
    return subprocess.run([sys.executable, "-m", "flashref.npu", "run"] + args, capture_output=True, text=True,
                          env=_env(), timeout=300, **kw)


def test_run_trains_an_unchanged_script_like_flashref_torch():
    # npu_train_script.py imports torch_npu and calls npu_fusion_attention, as Ascend model code does; under the
    # stand-in it trains on the CPU, its losses equal those of the same model on flashref.torch.attention
    p = run_standin([str(HERE / "npu_train_script.py"), "--steps", "6"])
    assert p.returncode == 0, p.stderr
    losses = [float(x) for x in re.findall(r"loss ([-0-9.e]+)", p.stdout)]
    assert len(losses) == 6 and losses[-1] < 0.9 * losses[0], p.stdout
    assert "device cpu" in p.stdout

    sys.path.insert(0, str(HERE))
    fnpu.install()
    try:
        import npu_train_script as s
    finally:
        fnpu.uninstall()
        sys.path.pop(0)

    def attention(q, k, v, heads, mask):
        return frt.attention(q, k, v, input_layout="BSH", head_num=heads, scale=(q.shape[-1] // heads) ** -0.5,
                             atten_mask=mask, sparse_mode=2, engine="golden")[0]
    ref = s.train(6, "cpu", attention)
    assert ref == losses, (ref, losses)


def test_run_reaches_child_processes_and_reports_errors():
    p = run_standin(["--engine", "fast", "-m", "npu_child_probe"], cwd=str(HERE))
    assert p.returncode == 0 and p.stdout.split() == ["flashref-standin", "fast"], (p.stdout, p.stderr)
    from flashref.npu.__main__ import main
    assert main(["run", "--engine", "slow", "x.py"]) == 2
    assert main(["run", "no_such_script.py"]) == 2
    assert main(["walk"]) == 2 and main([]) == 2
