#!/usr/bin/env python3
"""The panel (docs/verifier.md): implementations nobody here wrote, judged by flashref through the persistent
protocol. On every case of the set that the implementation supports: no FAIL and no WARN, except the departures
listed below (each with the verdict and diagnosis it must get). The test fails both ways: an unexpected FAIL/WARN,
a listed departure that is not observed (or gets another diagnosis), or too few cases judged. docs/verifier.md
("The panel") carries the same list in words.

usage: check_panel.py --flashref BIN --python VENV_PYTHON --runner FILE[:ARG] --set quick|default [--json OUT]
Exit 77 (ctest SKIP) with a loud reason when the framework is not installed (build/venv/.torch-missing, or the
import fails).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNERS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "runners")

NAN_LEAK = ("FAIL", "nan-leak", "NaN/Inf in masked-out K/V reaches the output: P is 0 there, but 0 x NaN in P.V is "
            "NaN (the framework multiplies masked positions instead of skipping them)")
STALE_GAIN = ("WARN", "stale-max", "P normalised in fp32, then rounded to fp16/bf16 for P.V: the rounded weights of a "
              "row no longer sum to one, a coherent row gain the size a stale running max gives (the ideal "
              "pipeline and FA-style kernels avoid it); precision behaviour, not a spec departure")
D1_NAN = ("FAIL", "nan-fully-masked", "fully masked rows give NaN: Softmax over a row of -inf is 0/0 (the graph has "
          "no guard); D1 wants a finite value")

# Known behaviour of each implementation: case -> (verdict, diagnosis, why). Cases absent from the run are ignored.
EXPECTED = {
    "torch_sdpa.py:math": {"bd_nan_in_masked_kv": NAN_LEAK, "bd_nan_in_masked_kv_bf16": NAN_LEAK},
    "torch_sdpa.py:flash": {"bd_nan_in_masked_kv": NAN_LEAK, "bd_nan_in_masked_kv_bf16": NAN_LEAK},
    "numpy_attention.py": {"bd_nan_in_masked_kv": NAN_LEAK, "bd_nan_in_masked_kv_bf16": NAN_LEAK,
                           "pr_dominant_late_bf16": STALE_GAIN, "pr_dominant_late_fp16": STALE_GAIN,
                           "eq_bf16_d576_dv512": STALE_GAIN, "gw_fp16_s256": STALE_GAIN, "rope_tnd_bf16": STALE_GAIN},
    "onnx_attention.py": {"bd_nan_in_masked_kv": NAN_LEAK, "eq_fp16_tnd_700": STALE_GAIN,
                          "pr_explicit_p_fp16": STALE_GAIN, "pr_dominant_late_fp16": STALE_GAIN,
                          "bd_d1_rows_band": D1_NAN, "m0_b1ss_negnext": D1_NAN, "m4_band_s1_gt": D1_NAN},
}
NEEDS = {"torch_sdpa.py": "import torch", "numpy_attention.py": "import numpy, ml_dtypes",
         "onnx_attention.py": "import numpy, onnx, onnxruntime"}
MIN_JUDGED = {"quick": 5, "default": 30}


def skip(msg):
    print("=" * 78)
    print("SKIP (panel): " + msg)
    print("=" * 78)
    sys.exit(77)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flashref", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--runner", required=True)
    ap.add_argument("--set", required=True)
    ap.add_argument("--json")
    a = ap.parse_args()
    file, _, arg = a.runner.partition(":")
    venv = os.path.dirname(os.path.dirname(a.python))
    if os.path.exists(os.path.join(venv, ".torch-missing")):
        with open(os.path.join(venv, ".torch-missing")) as f:
            skip("%s: %s" % (os.path.join(venv, ".torch-missing"), f.read().strip()))
    if not os.access(a.python, os.X_OK):
        skip("no Python venv at %s (make venv torch)" % a.python)
    r = subprocess.run([a.python, "-c", NEEDS[file]], capture_output=True, text=True)
    if r.returncode:
        skip("%s cannot '%s': %s" % (a.python, NEEDS[file], (r.stderr.strip().splitlines() or ["?"])[-1]))
    cmd = "%s %s%s" % (a.python, os.path.join(RUNNERS, file), " " + arg if arg else "")
    out = a.json or os.path.join(tempfile.mkdtemp(prefix="fr-panel-"), "panel.json")
    t0 = time.time()
    p = subprocess.run([a.flashref, "suite", "--set", a.set, "--impl", "persistent:" + cmd, "--json", out],
                       capture_output=True, text=True)
    wall = time.time() - t0
    sys.stdout.write(p.stdout[-6000:])
    if p.returncode not in (0, 1):
        print("flashref suite exited %d: %s" % (p.returncode, p.stderr[-2000:]))
        return 1
    with open(out) as f:
        res = json.load(f)
    exp = EXPECTED.get(a.runner, {})
    bad, seen = [], set()
    count = {"PASS": 0, "WARN": 0, "FAIL": 0, "SKIP": 0}
    for c in res["cases"]:
        v, d, n = c["verdict"], c["diagnosis"], c["name"]
        count[v] = count.get(v, 0) + 1
        if n in exp:
            seen.add(n)
            ev, ed, why = exp[n]
            if v == "SKIP":
                continue
            if (v, d) != (ev, ed):
                bad.append("%s: %s %s, expected the known departure %s %s (%s)" % (n, v, d, ev, ed, why))
        elif v in ("FAIL", "WARN"):
            bad.append("%s: %s %s: %s" % (n, v, d, c["why"]))
    judged = count["PASS"] + count["WARN"] + count["FAIL"]
    if judged < MIN_JUDGED.get(a.set, 1):
        bad.append("only %d case(s) judged (at least %d expected): the runner skips too much" %
                   (judged, MIN_JUDGED.get(a.set, 1)))
    print("panel %s on %s: %d passed, %d flagged (WARN %d, FAIL %d), %d skipped; %.1f s" %
          (a.runner, a.set, count["PASS"], count["WARN"] + count["FAIL"], count["WARN"], count["FAIL"],
           count["SKIP"], wall))
    for n in sorted(seen):
        c = next(x for x in res["cases"] if x["name"] == n)
        print("  known departure %s: %s %s (%s)" % (n, c["verdict"], c["diagnosis"], exp[n][2]))
    for b in bad:
        print("PANEL MISMATCH: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
