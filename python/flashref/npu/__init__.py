"""flashref.npu: torch_npu's fusion-attention functions on the CPU, with torch_npu's (and MindSpeed's) signatures,
defaults, checks and return tuples, computed by flashref's operator, and a CPU stand-in for torch_npu itself
(docs/ascend.md).

    import flashref.npu as fnpu
    out, smax, ssum, _, seed, offset, numels = fnpu.npu_fusion_attention(q, k, v, 8, "BNSD", scale=0.125)
    fnpu.install()                     # from here on, `import torch_npu` is the CPU stand-in
    call = fnpu.bind("npu_fusion_attention", q, k, v, 8, "BNSD")   # a torch_npu call mapped onto flashref
    case = call.case()                 # ... as a flashref.Case

Tensors: CPU torch tensors (differentiable: autograd through the operator's backward) or numpy arrays. Engine:
"golden" (the fp64 reference, rounded to the operator's dtypes) unless set_engine("fast") / FLASHREF_NPU_ENGINE.
float64 inputs (golden only; not an NPU dtype) holding fp32 values give fp64 outputs, for torch.autograd.gradcheck.
"""

from ._call import DropoutUnreproducible, NpuCall, NpuError, bind
from ._ops import (engine, get_engine, npu_fusion_attention, npu_fusion_attention_grad, npu_fusion_attention_grad_v2,
                   npu_fusion_attention_grad_v3, npu_fusion_attention_v2, npu_fusion_attention_v3, set_engine)
from ._schema import SCHEMAS
from ._standin import install, installed, uninstall

__all__ = ["npu_fusion_attention", "npu_fusion_attention_grad", "npu_fusion_attention_v2",
           "npu_fusion_attention_grad_v2", "npu_fusion_attention_v3", "npu_fusion_attention_grad_v3", "bind",
           "NpuCall", "NpuError", "DropoutUnreproducible", "install", "uninstall", "installed", "set_engine",
           "get_engine", "engine", "SCHEMAS"]
