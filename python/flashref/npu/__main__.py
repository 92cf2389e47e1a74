"""python -m flashref.npu run [--engine golden|fast] [--npu-to-cpu] SCRIPT [ARGS...]
python -m flashref.npu run [--engine golden|fast] [--npu-to-cpu] -m MODULE [ARGS...]

Runs a Python script (or module, e.g. -m pytest) unchanged with `import torch_npu` resolving to flashref's CPU
stand-in, in this process and in every Python process it starts (the stand-in's folder goes first on PYTHONPATH).
--engine: flashref's engine for every call (golden, the default, or fast). --npu-to-cpu: Tensor.npu() and
Module.npu() keep the CPU instead of raising. docs/ascend.md has the limits."""

import os
import runpy
import sys

from . import _standin

SHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_shim")


def _usage(msg: str = "") -> int:
    if msg:
        sys.stderr.write("python -m flashref.npu: %s\n" % msg)
    sys.stderr.write(__doc__)
    return 2


def main(argv) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        _usage()
        return 0 if argv else 2
    if argv[0] != "run":
        return _usage("unknown command %r (expected run)" % argv[0])
    rest, eng, to_cpu = argv[1:], None, False
    while rest and rest[0].startswith("--"):
        opt = rest.pop(0)
        if opt == "--engine" and rest:
            eng = rest.pop(0)
        elif opt.startswith("--engine="):
            eng = opt.split("=", 1)[1]
        elif opt == "--npu-to-cpu":
            to_cpu = True
        else:
            return _usage("unknown option %r" % opt)
    if eng not in (None, "golden", "fast"):
        return _usage("--engine %r (expected golden or fast)" % eng)
    if not rest or (rest[0] == "-m" and len(rest) < 2):
        return _usage("nothing to run")
    if eng:
        os.environ["FLASHREF_NPU_ENGINE"] = eng
    if to_cpu:
        os.environ["FLASHREF_NPU_TO_CPU"] = "1"
    os.environ["PYTHONPATH"] = SHIM + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
    _standin.install(npu_to_cpu=to_cpu)
    if rest[0] == "-m":
        sys.argv = rest[1:]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(rest[1], run_name="__main__", alter_sys=True)
    else:
        script = rest[0]
        if not os.path.isfile(script):
            return _usage("%s: no such file" % script)
        sys.argv = rest
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
        runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
