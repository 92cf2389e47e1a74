"""The CPU stand-in for torch_npu: a module named torch_npu whose fusion-attention functions are flashref.npu's, for
model code and test suites that import torch_npu and must run where there is no NPU (docs/ascend.md).

install() puts it in sys.modules (this process); `python -m flashref.npu run` also puts _shim/ first on PYTHONPATH,
so processes the script starts import it too. What it provides is deliberately small: the six functions,
torch_npu.npu / torch.npu with is_available() False and device_count() 0, and Tensor.npu() / Module.npu() (refused
by default; npu_to_cpu=True makes them keep the CPU). Anything else of torch_npu raises an error that says so."""

from __future__ import annotations

import importlib.abc
import sys
import types
from typing import Any, Dict, Optional

from ._ops import FUNCTIONS

_FLAG = "__flashref_standin__"
_PROVIDES = ("npu_fusion_attention, npu_fusion_attention_grad, npu_fusion_attention_v2, npu_fusion_attention_grad_v2, "
             "npu_fusion_attention_v3, npu_fusion_attention_grad_v3, npu.is_available(), npu.device_count()")
_saved: Dict[str, Any] = {}


def _missing(what: str) -> str:
    return ("%s is not part of flashref's CPU stand-in for torch_npu (it provides %s; docs/ascend.md)"
            % (what, _PROVIDES))


def _npu_namespace() -> types.ModuleType:
    m = types.ModuleType("torch_npu.npu", "torch.npu of flashref's CPU stand-in: there is no NPU.")
    m.is_available = lambda: False
    m.device_count = lambda: 0

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(_missing("torch.npu.%s" % name))
    m.__getattr__ = __getattr__  # type: ignore[attr-defined]
    setattr(m, _FLAG, True)
    return m


class _SubmoduleRefusal(importlib.abc.MetaPathFinder):
    """torch_npu.<anything but npu> under the stand-in: an ImportError naming the stand-in, not a confusing one."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        top = sys.modules.get("torch_npu")
        if fullname.startswith("torch_npu.") and top is not None and getattr(top, _FLAG, False) \
                and fullname not in sys.modules:
            raise ModuleNotFoundError(_missing("module %s" % fullname), name=fullname)
        return None


def _npu_refused(self: Any, *args: Any, **kwargs: Any) -> Any:
    raise RuntimeError(".npu(): flashref's CPU stand-in for torch_npu has no NPU device; run with "
                       "`python -m flashref.npu run --npu-to-cpu` (or install(npu_to_cpu=True)) to keep such tensors "
                       "and modules on the CPU, or write the device as a variable")


def _npu_to_cpu(self: Any, *args: Any, **kwargs: Any) -> Any:
    return self.cpu() if hasattr(self, "cpu") else self


def populate(mod: types.ModuleType, npu_to_cpu: bool = False) -> types.ModuleType:
    """Makes `mod` the stand-in: the functions, the npu namespace, and torch patched as torch_npu patches it
    (torch.npu, Tensor.npu, Module.npu); a later install() or uninstall() restores what was there."""
    import torch
    for name, f in FUNCTIONS.items():
        setattr(mod, name, f)
    npu = _npu_namespace()
    mod.npu = npu
    mod.__version__ = "flashref-standin"
    setattr(mod, _FLAG, True)

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(_missing("torch_npu.%s" % name))
    mod.__getattr__ = __getattr__  # type: ignore[attr-defined]
    sys.modules["torch_npu.npu"] = npu
    if not any(isinstance(f, _SubmoduleRefusal) for f in sys.meta_path):
        sys.meta_path.insert(0, _SubmoduleRefusal())
    if not _saved:
        _saved.update(torch_npu=sys.modules.get("torch_npu"), torch_attr=getattr(torch, "npu", None),
                      tensor_npu=getattr(torch.Tensor, "npu", None),
                      module_npu=getattr(torch.nn.Module, "npu", None))
    torch.npu = npu
    method = _npu_to_cpu if npu_to_cpu else _npu_refused
    torch.Tensor.npu = method
    torch.nn.Module.npu = method
    return mod


def install(*, npu_to_cpu: bool = False, engine: Optional[str] = None) -> types.ModuleType:
    """Makes `import torch_npu` (in this process) load flashref's CPU stand-in and returns it. engine: "golden"
    (default) or "fast" for every later call. npu_to_cpu: Tensor.npu() / Module.npu() keep the CPU instead of
    raising."""
    if engine is not None:
        from ._ops import set_engine
        set_engine(engine)
    mod = types.ModuleType("torch_npu", "flashref's CPU stand-in for torch_npu (docs/ascend.md).")
    mod.__path__ = []  # a package, so that `import torch_npu.npu` resolves
    populate(mod, npu_to_cpu)
    sys.modules["torch_npu"] = mod
    return mod


def installed() -> bool:
    """True when `import torch_npu` gives the stand-in."""
    return bool(getattr(sys.modules.get("torch_npu"), _FLAG, False))


def uninstall() -> None:
    """Undoes install(): sys.modules, torch.npu, Tensor.npu, Module.npu as they were."""
    if not _saved:
        return
    import torch
    for name in ("torch_npu", "torch_npu.npu"):
        sys.modules.pop(name, None)
    if _saved["torch_npu"] is not None:
        sys.modules["torch_npu"] = _saved["torch_npu"]
    for obj, attr, key in ((torch, "npu", "torch_attr"), (torch.Tensor, "npu", "tensor_npu"),
                           (torch.nn.Module, "npu", "module_npu")):
        if _saved[key] is None:
            if attr in vars(obj):
                delattr(obj, attr)
        else:
            setattr(obj, attr, _saved[key])
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _SubmoduleRefusal)]
    _saved.clear()
