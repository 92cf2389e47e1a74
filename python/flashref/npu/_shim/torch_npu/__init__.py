"""flashref's CPU stand-in for torch_npu (docs/ascend.md). `python -m flashref.npu run` puts the folder above this
one first on PYTHONPATH, so that `import torch_npu` loads this module in the script and in every process it starts
(the engine comes from FLASHREF_NPU_ENGINE, .npu() from FLASHREF_NPU_TO_CPU)."""
import os as _os
import sys as _sys

from flashref.npu import _standin as _s

_s.populate(_sys.modules[__name__], npu_to_cpu=_os.environ.get("FLASHREF_NPU_TO_CPU") == "1")
