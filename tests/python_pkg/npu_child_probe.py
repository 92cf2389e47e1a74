"""Run by test_npu.py as `python -m flashref.npu run -m npu_child_probe`: a child process started by the script
imports torch_npu too, and gets the stand-in with the engine of the run."""
import subprocess
import sys

code = "import torch_npu, flashref.npu; print(torch_npu.__version__, flashref.npu.get_engine())"
print(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip())
