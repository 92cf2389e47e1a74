"""A step of a small "model" that calls torch_npu's fusion attention the ways Ascend code does, dumped by msprobe's own
dumper (PrecisionDebugger, task "tensor", level L1). On an NPU it dumps the NPU's calls; here it runs on the CPU under
flashref's stand-in, which msprobe hooks like torch_npu:

    python -m flashref.npu run tests/python_pkg/msprobe_dump_script.py DUMP_PATH

writes DUMP_PATH/step0/<rank or proc>/dump.json and dump_tensor_data/. tests/python_pkg/test_msprobe.py judges it with
`flashref verify --msprobe`. The calls (forward and, where the inputs require grad, backward): every layout (BSH,
SBH, BNSD, BSND, TND), fp32 / fp16 / bf16, sparse modes 0-4 with compressed or explicit masks, a band, GQA, S1 != S2,
pse (v1 and v2 alibi slopes), a sink, TND with softmax_layout="TND", the v3 form with tensor sequence lengths, and a
forward with a given dropout_mask (its backward regenerates the mask on the NPU: not reproducible, reported)."""

import sys

import numpy as np
import torch
import torch_npu
from msprobe.pytorch import PrecisionDebugger

dump_path = sys.argv[1] if len(sys.argv) > 1 else "./dump"
debugger = PrecisionDebugger(task="tensor", dump_path=dump_path, level="L1")
torch.manual_seed(20260101)
CAUSAL = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)   # the compressed mask of modes 2-4


def t(*shape, dtype=torch.float32, grad=True):
    return torch.randn(*shape).to(dtype).requires_grad_(grad)


def backward(out):
    out.float().pow(2).sum().backward()     # a loss whose gradient (dy) is not constant


# the dropout call's mask: bits LSB first, 1 = keep, [B, N1, S1, S2] order (packed before the dump starts: msprobe
# would record every tensor operation of the packing)
keep = (torch.rand(1 * 2 * 16 * 16) < 0.8).numpy()
bits = torch.from_numpy(np.packbits(keep, bitorder="little"))

debugger.start()

# 1. BSH fp32, GQA (4 query heads, 2 kv heads), no mask; positional arguments as most model code writes them
B, S, N1, N2, D = 2, 40, 4, 2, 16
q, k, v = t(B, S, N1 * D), t(B, S, N2 * D), t(B, S, N2 * D)
backward(torch_npu.npu_fusion_attention(q, k, v, N1, "BSH", scale=D ** -0.5)[0])

# 2. SBH bf16, causal top-left (sparse_mode 2) with the compressed mask
q, k, v = (t(48, 1, 2 * 32, dtype=torch.bfloat16) for _ in range(3))
backward(torch_npu.npu_fusion_attention(q, k, v, 2, "SBH", atten_mask=CAUSAL, scale=32 ** -0.5, sparse_mode=2)[0])

# 3. BNSD fp16, an explicit [B, 1, S1, S2] mask and a band (pre_tockens / next_tockens, sparse_mode 0)
q, k, v = (t(1, 2, 33, 64, dtype=torch.float16) for _ in range(3))
mask = torch.rand(1, 1, 33, 33) < 0.2
backward(torch_npu.npu_fusion_attention(q, k, v, 2, "BNSD", atten_mask=mask, scale=0.125, pre_tockens=8,
                                        next_tockens=2)[0])

# 4. BSND fp32, S1 < S2, causal bottom-right (sparse_mode 3), a pse [B, N1, S1, S2]; keyword-only call
q, k, v = t(1, 24, 2, 16), t(1, 56, 2, 16), t(1, 56, 2, 16)
pse = torch.randn(1, 2, 24, 56) * 0.5
backward(torch_npu.npu_fusion_attention(query=q, key=k, value=v, head_num=2, input_layout="BSND", pse=pse,
                                        atten_mask=CAUSAL, scale=0.25, sparse_mode=3)[0])

# 5. TND bf16, two sequences, GQA, causal bottom-right
q, k, v = t(30, 4, 32, dtype=torch.bfloat16), t(36, 1, 32, dtype=torch.bfloat16), t(36, 1, 32, dtype=torch.bfloat16)
backward(torch_npu.npu_fusion_attention(q, k, v, 4, "TND", atten_mask=CAUSAL, scale=32 ** -0.5, sparse_mode=3,
                                        actual_seq_qlen=[12, 30], actual_seq_kvlen=[16, 36])[0])

# 6. TND fp32 with softmax_layout="TND" (statistics [T, N1, 8] in memory too)
q, k, v = t(20, 2, 16), t(20, 2, 16), t(20, 2, 16)
backward(torch_npu.npu_fusion_attention(q, k, v, 2, "TND", scale=0.25, actual_seq_qlen=[7, 20],
                                        actual_seq_kvlen=[9, 20], softmax_layout="TND")[0])

# 7. BNSD fp32 with a sink (fp32 [N1], learned: its gradient is dumped)
q, k, v = t(1, 2, 32, 16), t(1, 2, 32, 16), t(1, 2, 32, 16)
sink = (torch.randn(2) * 0.3).requires_grad_(True)
backward(torch_npu.npu_fusion_attention(q, k, v, 2, "BNSD", scale=0.25, sink=sink)[0])

with torch.no_grad():
    # 8. inference: BNSD fp32, sparse_mode 4 band (pre 6, next 1) with the compressed mask
    q, k, v = t(2, 2, 40, 32, grad=False), t(2, 2, 40, 32, grad=False), t(2, 2, 40, 32, grad=False)
    torch_npu.npu_fusion_attention(q, k, v, 2, "BNSD", atten_mask=CAUSAL, scale=32 ** -0.5, sparse_mode=4,
                                   pre_tockens=6, next_tockens=1)

    # 9. sparse_mode 1 (all mask: the full [B, N1, S1, S2] mask), BSH fp16
    q, k, v = (t(1, 20, 2 * 16, dtype=torch.float16, grad=False) for _ in range(3))
    mask = torch.rand(1, 2, 20, 20) < 0.3
    torch_npu.npu_fusion_attention(q, k, v, 2, "BSH", atten_mask=mask, scale=0.25, sparse_mode=1)

    # 10. _v3: sequence lengths as int64 CPU tensors
    q, k, v = t(18, 2, 16, grad=False), t(18, 2, 16, grad=False), t(18, 2, 16, grad=False)
    torch_npu.npu_fusion_attention_v3(q, k, v, 2, "TND", scale=0.25, actual_seq_qlen=torch.tensor([5, 18]),
                                      actual_seq_kvlen=torch.tensor([8, 18]))

# 11. _v2 with alibi slopes (pse_type 2, pse [N1]) and q_start_idx / kv_start_idx
q, k, v = t(1, 24, 2, 16), t(1, 24, 2, 16), t(1, 24, 2, 16)
backward(torch_npu.npu_fusion_attention_v2(q, k, v, 2, "BSND", pse=torch.tensor([0.5, 0.25]), pse_type=2,
                                           q_start_idx=[0], kv_start_idx=[0], scale=0.25)[0])

# 12. dropout with the mask given (keep_prob 0.8): the forward is judged; its backward, on the NPU, regenerates the
# mask from (seed, offset), so the dump's backward is reported as not reproducible
q, k, v = t(1, 2, 16, 16), t(1, 2, 16, 16), t(1, 2, 16, 16)
backward(torch_npu.npu_fusion_attention(q, k, v, 2, "BNSD", scale=0.25, keep_prob=0.8, dropout_mask=bits)[0])

debugger.stop()
debugger.step()
