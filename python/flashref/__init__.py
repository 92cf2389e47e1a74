"""flashref: FlashAttention (the Ascend FlashAttentionScore operator) on the CPU, to the letter of its spec, and a
verifier for attention implementations, from Python (docs/python.md).

    import flashref
    out, m, l = flashref.attention(q, k, v, input_layout="BNSD", head_num=8, scale=0.125)
    res = flashref.verify(my_attention, set="quick")      # my_attention(case) -> outputs, or raise Unsupported
    assert res.passed, res.summary()
"""

from ._lib import FlashrefError, Unsupported, version, library_path, cli_path
from ._ops import AttentionOutput, Gradients, attention, attention_backward, isa_names
from . import emulate
from .emulate import Numerics
from ._verify import Case, CaseResult, VerifyResult, hunt, list_cases, set_names, verify, verify_msprobe
from .metrics import metrics, ulp
from . import study

__version__ = version()

__all__ = ["attention", "attention_backward", "isa_names", "AttentionOutput", "Gradients", "FlashrefError",
           "Unsupported", "verify", "verify_msprobe", "hunt", "VerifyResult", "CaseResult", "Case", "list_cases",
           "set_names", "Numerics", "emulate", "metrics", "ulp", "study", "version", "library_path", "cli_path"]


def __getattr__(name: str):
    """flashref.torch and flashref.testing load on first use (torch is an optional dependency)."""
    if name in ("torch", "testing"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module 'flashref' has no attribute %r" % name)
