"""flashref.torch: the autograd Function (gradcheck through the fp64 golden, training step on the fast engine),
agreement with torch.nn.functional.scaled_dot_product_attention, and SDPA verified in-process."""

import numpy as np
import pytest

import flashref
from conftest import torch_or_skip

torch = torch_or_skip()
import flashref.torch as frt  # noqa: E402

F = torch.nn.functional


def dyadic(shape, gen):
    """Values that fp32 holds exactly, so that gradcheck's fp64 perturbations by 2^-10 stay exact too."""
    return torch.randint(-64, 65, shape, generator=gen, dtype=torch.int64).to(torch.float64) / 64


@pytest.mark.parametrize("layout, shape_q, shape_kv, n1", [
    ("BNSD", (1, 2, 5, 4), (1, 2, 7, 4), 2),
    ("BSND", (1, 6, 4, 4), (1, 5, 2, 4), 4),          # GQA: 4 query heads on 2 kv heads
])
def test_gradcheck_through_the_golden(layout, shape_q, shape_kv, n1):
    g = torch.Generator().manual_seed(7)
    q, k, v = dyadic(shape_q, g), dyadic(shape_kv, g), dyadic(shape_kv, g)
    for t in (q, k, v):
        t.requires_grad_(True)

    def f(q, k, v):
        return frt.attention(q, k, v, input_layout=layout, head_num=n1, scale=0.5, engine="golden")[0]

    assert torch.autograd.gradcheck(f, (q, k, v), eps=2.0 ** -10, atol=1e-4, rtol=1e-3)


def test_gradcheck_would_catch_a_wrong_gradient():
    g = torch.Generator().manual_seed(3)
    q, k, v = (dyadic((1, 1, 4, 4), g).requires_grad_(True) for _ in range(3))

    class Wrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v):
            return frt.attention(q, k, v, input_layout="BNSD", head_num=1, scale=0.5, engine="golden")[0]

        @staticmethod
        def backward(ctx, dout):
            return dout * 0, None, None

    with pytest.raises(Exception):
        torch.autograd.gradcheck(Wrong.apply, (q, k, v), eps=2.0 ** -10, atol=1e-4, rtol=1e-3)


def test_gradcheck_sink_and_rope():
    # dsink, dq_rope and dk_rope reach sink, query_rope and key_rope (they were dropped before: sink.grad was None)
    g = torch.Generator().manual_seed(5)
    q, k, v = dyadic((1, 2, 3, 4), g), dyadic((1, 1, 5, 4), g), dyadic((1, 1, 5, 4), g)
    qr, kr = dyadic((1, 2, 3, 2), g), dyadic((1, 1, 5, 2), g)
    sink = dyadic((2,), g)
    leaves = [t.requires_grad_(True) for t in (q, k, v, qr, kr, sink)]

    def f(q, k, v, qr, kr, sink):
        return frt.attention(q, k, v, input_layout="BNSD", head_num=2, scale=0.5, engine="golden", query_rope=qr,
                             key_rope=kr, sink=sink)[0]

    assert torch.autograd.gradcheck(f, leaves, eps=2.0 ** -10, atol=1e-4, rtol=1e-3)


def test_pse_needing_a_gradient_fails_loudly():
    # the operator has no dpse: a learnable pse must not silently get no gradient
    q = torch.randn(1, 1, 4, 8, requires_grad=True)
    pse = torch.zeros(1, 1, 4, 4, requires_grad=True)
    out, _, _ = frt.attention(q, q.detach(), q.detach(), input_layout="BNSD", head_num=1, pse=pse)
    with pytest.raises(RuntimeError, match="pse: the operator computes no gradient"):
        out.sum().backward()
    out, _, _ = frt.attention(q, q.detach(), q.detach(), input_layout="BNSD", head_num=1, pse=pse.detach())
    out.sum().backward()
    assert q.grad is not None


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 2e-6), (torch.bfloat16, 2e-2)])
def test_matches_sdpa_forward_and_backward(dtype, tol):
    g = torch.Generator().manual_seed(11)
    q = torch.randn(2, 4, 37, 32, generator=g).to(dtype)
    k = torch.randn(2, 2, 53, 32, generator=g).to(dtype)
    v = torch.randn(2, 2, 53, 32, generator=g).to(dtype)
    mask = torch.ones(37, 53, dtype=torch.bool).triu(1 + 53 - 37)     # bottom-right causal, True = masked
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    out, m, l = frt.attention(*leaves, input_layout="BNSD", head_num=4, scale=32 ** -0.5, atten_mask=mask)
    ref_leaves = [t.clone().float().requires_grad_(True) for t in (q, k, v)]
    ref = F.scaled_dot_product_attention(*ref_leaves, attn_mask=~mask, scale=32 ** -0.5, enable_gqa=True)
    assert out.dtype == dtype
    rel = lambda a, b: float((a.detach().float() - b.detach().float()).norm() / b.detach().float().norm())  # noqa: E731
    assert rel(out, ref) < tol
    dy = torch.randn(out.shape, generator=g).to(dtype)
    out.backward(dy)
    ref.backward(dy.float())
    for a, b in zip(leaves, ref_leaves):
        assert a.grad.dtype == dtype and rel(a.grad, b.grad) < 3 * tol


def test_a_model_trains_on_it():
    torch.manual_seed(0)
    proj = torch.nn.Linear(16, 3 * 16)
    opt = torch.optim.SGD(proj.parameters(), lr=0.5)
    x = torch.randn(4, 10, 16)
    target = torch.randn(4, 10, 16)
    losses = []
    for _ in range(15):
        q, k, v = proj(x).chunk(3, dim=-1)          # BSH with 2 heads of 8
        out, _, _ = frt.attention(q.contiguous(), k.contiguous(), v.contiguous(), input_layout="BSH", head_num=2,
                                  scale=8 ** -0.5)
        loss = F.mse_loss(out, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.9 * losses[0], losses


def test_sdpa_verified_in_process():
    r = flashref.verify(frt.sdpa, set="quick", tensors="torch")
    assert len(r) == len(flashref.list_cases("quick"))
    judged = [c for c in r if c.verdict != "SKIP"]
    assert judged, r.summary()
    # SDPA computes a correct softmax attention: the plain equivalence cases are within bounds
    eq = [c for c in judged if c.category == "equivalence"]
    assert eq and all(c.verdict != "FAIL" for c in eq), r.summary()
