"""Writes tests/data/msprobe/dump/: a small dump written by msprobe's own dumper (PyPI mindstudio-probe, 26.2.0 when
committed: PrecisionDebugger, task "tensor", level L1, list
["npu_fusion_attention"]) of 11 fusion-attention entries, run on the CPU under flashref's
stand-in for torch_npu, which msprobe hooks as it hooks torch_npu. It lets the dump reader be tested where msprobe
cannot be installed (tests/python_pkg/test_msprobe.py) and with allocation failures (tests/faults/test_alloc_fail.c,
scenario verify_msprobe). Run from the repository root:

    python -m flashref.npu run tests/data/msprobe/make_dump.py tests/data/msprobe/dump

What is kept is what msprobe wrote (dump.json and dump_tensor_data/, byte for byte) from the folder that holds
dump.json (step0/proc<pid>/); stack.json and construct.json are left out (call stacks with this machine's paths,
not read by flashref). Small shapes and explicit masks only: the compressed mask of sparse modes 2-4 is a
2048 x 2048 tensor (4 MB); test_msprobe.py dumps those calls with msprobe itself."""

import glob
import json
import os
import shutil
import sys
import tempfile

import torch
import torch_npu
from msprobe.pytorch import PrecisionDebugger

out = os.path.abspath(sys.argv[1])
work = tempfile.mkdtemp(prefix="fr_msprobe_")
os.chdir(work)                       # msprobe writes dump_data_dir relative to the current folder
# msprobe's config narrowed to these APIs ("list"), as docs/ascend.md advises for a large step: no Tensor.pow / sum
with open("config.json", "w") as f:
    json.dump({"task": "tensor", "dump_path": "dump", "level": "L1", "rank": [], "step": [],
               "tensor": {"scope": [], "list": ["npu_fusion_attention"], "data_mode": ["all"]}}, f)
debugger = PrecisionDebugger(config_path="config.json")
torch.manual_seed(20261203)


def t(*shape, dtype=torch.float32, grad=True):
    return torch.randn(*shape).to(dtype).requires_grad_(grad)


def backward(out_):
    out_.float().pow(2).sum().backward()


debugger.start()
# 0. BSH fp32, GQA (4 query heads, 2 kv heads), no mask, positional arguments
q, k, v = t(2, 16, 4 * 8), t(2, 16, 2 * 8), t(2, 16, 2 * 8)
backward(torch_npu.npu_fusion_attention(q, k, v, 4, "BSH", scale=8 ** -0.5)[0])

# 1. BNSD fp16, an explicit [1, 1, S1, S2] mask and a band (sparse_mode 0)
q, k, v = (t(1, 2, 12, 16, dtype=torch.float16) for _ in range(3))
mask = torch.rand(1, 1, 12, 12) < 0.2
backward(torch_npu.npu_fusion_attention(q, k, v, 2, "BNSD", atten_mask=mask, scale=0.25, pre_tockens=5,
                                        next_tockens=1)[0])

# 2. TND fp32, two sequences, softmax_layout "TND"
q, k, v = t(14, 2, 8), t(16, 2, 8), t(16, 2, 8)
backward(torch_npu.npu_fusion_attention(q, k, v, 2, "TND", scale=8 ** -0.5, actual_seq_qlen=[6, 14],
                                        actual_seq_kvlen=[9, 16], softmax_layout="TND")[0])

# 3. BNSD fp32 with a learned sink: its gradient is dumped
q, k, v = (t(1, 2, 10, 8) for _ in range(3))
sink = (torch.randn(2) * 0.3).requires_grad_(True)
backward(torch_npu.npu_fusion_attention(q, k, v, 2, "BNSD", scale=8 ** -0.5, sink=sink)[0])

with torch.no_grad():
    # 4. BSND bf16, sparse_mode 1 (the full [B, N1, S1, S2] mask)
    q, k, v = (t(1, 10, 2, 16, dtype=torch.bfloat16, grad=False) for _ in range(3))
    mask = torch.rand(1, 2, 10, 10) < 0.3
    torch_npu.npu_fusion_attention(q, k, v, 2, "BSND", atten_mask=mask, scale=0.25, sparse_mode=1)

    # 5. SBH fp32, S1 < S2, a pse [B, N1, S1, S2]
    q, k, v = t(6, 1, 2 * 8, grad=False), t(11, 1, 2 * 8, grad=False), t(11, 1, 2 * 8, grad=False)
    pse = torch.randn(1, 2, 6, 11) * 0.5
    torch_npu.npu_fusion_attention(q, k, v, 2, "SBH", pse=pse, scale=8 ** -0.5)

# 6. _v2: alibi slopes (pse_type 2, pse [N1]) with q_start_idx / kv_start_idx
q, k, v = (t(1, 12, 2, 8) for _ in range(3))
backward(torch_npu.npu_fusion_attention_v2(q, k, v, 2, "BSND", pse=torch.tensor([0.5, 0.25]), pse_type=2,
                                           q_start_idx=[0], kv_start_idx=[0], scale=0.25)[0])
debugger.stop()
debugger.step()

found = glob.glob(os.path.join(work, "dump", "step0", "*", "dump.json"))
assert len(found) == 1, found
src = os.path.dirname(found[0])
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
shutil.copy2(found[0], out)
shutil.copytree(os.path.join(src, "dump_tensor_data"), os.path.join(out, "dump_tensor_data"))
shutil.rmtree(work)
print("wrote", out)
