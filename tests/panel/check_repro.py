#!/usr/bin/env python3
"""The reproducers of the panel runners (`RUNNER --repro CASE_DIR OUT.py`, runners/panel_repro.py): for each runner
whose framework is installed, the script written for a case the framework gets right must run and pass, the one for
a case with a listed departure (NaN in masked-out K/V: every runner here lets it reach the output, see
check_panel.py) must run and fail with a DEPARTURE line, and a backward case (for runners with a backward) must pass.
Each script may import only the standard library, numpy and the framework (checked on its syntax tree), which is what
lets it run in a fresh venv holding just those.

usage: check_repro.py --flashref BIN --python VENV_PYTHON [--runners FILE[:ARG],...]
Exit 77 (ctest SKIP, loudly) when no listed runner's framework is installed.
"""
import argparse
import ast
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNERS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "runners")
sys.path.insert(0, HERE)
from check_panel import NEEDS  # noqa: E402

PASS_CASE = "eq_fp32_pse1_bnss"  # quick set: fp32, pse type 1 [1, N1, S1, S2]
FAIL_CASE = "bd_nan_in_masked_kv"  # quick set: NaN / Inf in masked-out K and V rows
BWD_CASE = "bwd_bnsd_fp32_gqa_causal"  # default set: a small GQA causal backward
# runner -> (the modules a reproducer may import besides the standard library and numpy, has a backward)
ALL = {"torch_sdpa.py:math": ({"torch"}, True), "torch_sdpa.py:flash": ({"torch"}, True),
       # numpy's own bf16 type comes from ml_dtypes (imported by the script for bf16 calls only)
       "numpy_attention.py": ({"ml_dtypes"}, True), "onnx_attention.py": ({"onnxruntime", "onnx"}, False),
       "openvino_sdpa.py:default": ({"openvino"}, False), "ort_attention.py:opset24": ({"onnxruntime", "onnx"}, False),
       "ort_attention.py:opset25": ({"onnxruntime", "onnx"}, False), "ort_contrib.py:gqa": ({"onnxruntime", "onnx"},
                                                                                          False),
       "ort_contrib.py:mha": ({"onnxruntime", "onnx"}, False), "jax_dpa.py": ({"jax"}, True),
       "torch_flex.py": ({"torch"}, False), "torch_mha.py:weights": ({"torch"}, True),
       "torch_mha.py:noweights": ({"torch"}, True), "msprobe_fa.py": ({"torch", "msprobe"}, True)}
STDLIB = {"base64", "io", "sys"}


def imports(path):
    """Top-level module names a script imports."""
    with open(path) as f:
        tree = ast.parse(f.read())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add((node.module or "").split(".")[0])
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flashref", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--runners", default=",".join(ALL))
    a = ap.parse_args()
    a.python = os.path.abspath(a.python)  # the reproducers run in a temporary folder
    if not os.access(a.python, os.X_OK):
        print("=" * 78 + "\nSKIP (repro): no Python venv at %s (make venv torch panel-deps)\n" % a.python + "=" * 78)
        return 77
    tmp = tempfile.mkdtemp(prefix="fr-repro-")
    cases = os.path.join(tmp, "cases")
    os.mkdir(cases)
    for s, name in (("quick", PASS_CASE), ("quick", FAIL_CASE), ("default", BWD_CASE)):
        # --write refuses a non-empty folder (it never merges): each case into a folder of its own, then moved
        w = os.path.join(tmp, "w_" + name)
        r = subprocess.run([a.flashref, "suite", "--set", s, "--only", name, "--write", w], capture_output=True,
                           text=True)
        if r.returncode:
            print("cannot write %s: %s" % (name, r.stderr[-1000:]))
            return 1
        os.rename(os.path.join(w, name), os.path.join(cases, name))
    bad, ran, skipped = [], 0, []
    for runner in a.runners.split(","):
        file, _, arg = runner.partition(":")
        allowed, bwd = ALL[runner]
        if subprocess.run([a.python, "-c", NEEDS[file]], capture_output=True).returncode:
            skipped.append(runner)
            continue
        ran += 1
        for case, want in ((PASS_CASE, 0), (FAIL_CASE, 1)) + (((BWD_CASE, 0),) if bwd else ()):
            out = os.path.join(tmp, "%s_%s_%s.py" % (file[:-3], arg or "x", case))
            r = subprocess.run([a.python, os.path.join(RUNNERS, file)] + ([arg] if arg else []) +
                               ["--repro", os.path.join(cases, case), out], capture_output=True, text=True)
            if r.returncode:
                bad.append("%s --repro %s: exit %d: %s" % (runner, case, r.returncode, r.stderr[-800:]))
                continue
            extra = imports(out) - STDLIB - {"numpy"} - allowed
            if extra:
                bad.append("%s: the reproducer of %s imports %s (only numpy and %s allowed)"
                           % (runner, case, sorted(extra), sorted(allowed)))
            s = subprocess.run([a.python, out], capture_output=True, text=True, cwd=tmp)
            tail = (s.stdout.strip() or s.stderr.strip()).splitlines()[-3:]
            if s.returncode != want or (want == 1 and "DEPARTURE" not in s.stdout):
                bad.append("%s: reproducer of %s exited %d, expected %d: %s" % (runner, case, s.returncode, want,
                                                                               " | ".join(tail)))
            else:
                print("ok   %-26s %-26s exit %d (%s)" % (runner, case, s.returncode, tail[-1][:90] if tail else ""))
    for r in skipped:
        print("SKIP (framework not installed): %s" % r)
    for b in bad:
        print("REPRO MISMATCH: " + b)
    if not ran:
        print("=" * 78 + "\nSKIP (repro): no listed runner's framework is installed\n" + "=" * 78)
        return 77
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
