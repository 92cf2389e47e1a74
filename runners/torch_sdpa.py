#!/usr/bin/env python3
"""PyTorch scaled_dot_product_attention as an implementation under test (the panel, docs/verifier.md).

usage: torch_sdpa.py math|flash [CASE_DIR | --capabilities]
  flashref suite --impl exec:"python3 runners/torch_sdpa.py flash"        (one process per case)
  flashref suite --impl persistent:"python3 runners/torch_sdpa.py flash"  (torch imported once)

Backend: math (SDPBackend.MATH) or flash (SDPBackend.FLASH_ATTENTION, PyTorch's CPU flash kernel), on the CPU, in
the case's dtype (fp32 / fp16 / bf16). Forward: attention_out from SDPA; softmax_max / softmax_sum are not returned
by SDPA, so the runner computes them from fp32 scores with torch ops. Backward: autograd of the same SDPA call
(dq, dk, dv; with rope, q and q_rope are concatenated along the head dim, so dq_rope / dk_rope come from autograd
too). Mapped: every layout (transposes), TND (one call per sequence), GQA/MQA (repeat_interleave), atten_mask,
sparse modes 0-8, band, prefix and top-k without repeats (a boolean attn_mask, True = takes part), pse types 0-3
and the compressed pse as an additive float mask of the dtype (runners/panel_case.py; a pse the dtype cannot hold
exactly SKIPs). Exit 77 (SKIP) for the rest: dropout, sink, top-k with a repeated index, fp8, or a shape the chosen
backend refuses.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from panel_case import Unsupported, axes, caps, serve, softmax_stats  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

torch.set_num_threads(int(os.environ.get("FR_PANEL_THREADS", "1")))
BACKENDS = {"math": SDPBackend.MATH, "flash": SDPBackend.FLASH_ATTENTION}
DT = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def handle(c, backend):
    c.check_supported()
    dt = DT[c.dtype]
    bwd = c.op == "bwd"
    scale = float(np.float32(c.p["scale_value"]))
    G = c.N1 // c.N2
    outs = c.alloc_outputs()
    for b in c.batches():
        t = lambda name, n, D, kv: torch.from_numpy(c.heads(name, b, n, D, kv)).to(dt)  # noqa: E731
        q, k, v = t("query", c.N1, c.Dk, False), t("key", c.N2, c.Dk, True), t("value", c.N2, c.Dv, True)
        leaves = [q, k, v]
        if c.Drope:
            qr, kr = t("query_rope", c.N1, c.Drope, False), t("key_rope", c.N2, c.Drope, True)
            leaves += [qr, kr]
        if bwd:
            for x in leaves:
                x.requires_grad_(True)
        qq = torch.cat([q, qr], -1) if c.Drope else q
        kk = torch.cat([k, kr], -1) if c.Drope else k
        kk, vv = kk.repeat_interleave(G, 0), v.repeat_interleave(G, 0)
        keep = torch.from_numpy(c.keep(b))
        pse = c.pse_as(b, c.dtype)  # SDPA takes a float mask of the query dtype
        if pse is not None:
            bias = torch.where(keep, torch.from_numpy(pse), torch.tensor(float("-inf")))
            mask = bias.to(dt)[None]
        elif not bool(keep.all()):
            mask = keep[None]
        else:
            mask = None
        try:
            with sdpa_kernel([BACKENDS[backend]]):
                o = F.scaled_dot_product_attention(qq[None], kk[None], vv[None], attn_mask=mask, dropout_p=0.0,
                                                   scale=scale)[0]
                if bwd:
                    dy = torch.from_numpy(c.heads("dy", b, c.N1, c.Dv, False)).to(dt)
                    o.backward(dy)
        except RuntimeError as e:
            if "No available kernel" in str(e) or "not supported" in str(e).lower():
                raise Unsupported("%s backend: %s" % (backend, str(e).splitlines()[0][:200]))
            raise
        if bwd:
            f = lambda x: x.grad.float().numpy()  # noqa: E731
            c.put(outs["dq"], b, f(q), False)
            c.put(outs["dk"], b, f(k), True)
            c.put(outs["dv"], b, f(v), True)
            if c.Drope:
                c.put(outs["dq_rope"], b, f(qr), False)
                c.put(outs["dk_rope"], b, f(kr), True)
        else:
            c.put(outs["attention_out"], b, o.float().numpy(), False)
            # softmax_max / softmax_sum: SDPA does not return them; fp32 scores with torch ops
            x = torch.matmul(qq.float(), kk.float().transpose(-1, -2)) * np.float32(scale)
            if pse is not None:
                x = x + torch.from_numpy(pse)
            x = torch.where(keep, x, torch.tensor(float("-inf")))
            m, l = softmax_stats(x.numpy())
            c.put_stats(outs["softmax_max"], b, m)
            c.put_stats(outs["softmax_sum"], b, l)
    c.save_outputs(outs)


def capabilities(backend):
    op = axes()
    return caps("torch_sdpa.py %s" % backend, "torch", torch.__version__, {"fwd": op, "bwd": dict(op)},
                variant=backend, variants=sorted(BACKENDS),
                notes=["fp16/bf16: a pse the dtype cannot hold exactly SKIPs",
                       "the flash backend refuses some shapes (SKIP)"])


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in BACKENDS:
        print("usage: torch_sdpa.py math|flash [CASE_DIR | --capabilities]", file=sys.stderr)
        sys.exit(2)
    backend = sys.argv.pop(1)
    sys.exit(serve(lambda c: handle(c, backend), capabilities=lambda: capabilities(backend)))
