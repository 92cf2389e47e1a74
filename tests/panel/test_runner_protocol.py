#!/usr/bin/env python3
"""The runner side of the capability declaration (docs/exec-protocol.md, "Runner capabilities (declared)"):
- serve() of runners/flashref_runner.py: with FLASHREF_PROTOCOL=persistent-2 the first stdout line is
  `flashref-capabilities: {JSON}` before any case is read, then the usual status lines; persistent-1 is unchanged
  (no such line); `--capabilities` prints the object; a runner that declares nothing sends `{}`;
- with --declarations, every panel runner whose framework is installed: its --capabilities object uses only the
  documented vocabulary, with valid values (tests/panel/check_panel.py checks each runner's declaration the same way
  before every panel run; this flag checks them all at once, importing every framework).

usage: test_runner_protocol.py --python VENV_PYTHON [--declarations]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNERS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "runners")
sys.path.insert(0, HERE)
from check_panel import NEEDS, validate  # noqa: E402

VARIANTS = {"torch_sdpa.py": "flash", "openvino_sdpa.py": "default", "ort_attention.py": "opset24",
            "ort_contrib.py": "gqa", "torch_mha.py": "weights"}

# A runner that declares {"fwd": {"dtypes": ["fp32"]}} and answers every case with SKIP.
TINY = r'''
import sys
sys.path.insert(0, %r)
from flashref_runner import serve, Unsupported
def handle(d):
    raise Unsupported("tiny: " + d)
serve(handle, capabilities=%s)
'''


def protocol(py):
    """persistent-2 / persistent-1 / --capabilities of serve() in runners/flashref_runner.py."""
    bad = []
    d = tempfile.mkdtemp(prefix="fr-proto-")
    caps = {"format": "flashref-capabilities/1", "ops": {"fwd": {"dtypes": ["fp32"]}}}
    for declared, want in ((repr(caps), caps), ("None", {})):
        src = TINY % (RUNNERS, declared)
        for proto in ("persistent-2", "persistent-1"):
            env = dict(os.environ, FLASHREF_PROTOCOL=proto)
            r = subprocess.run([py, "-c", src], input=d + "\n" + d + "\n", capture_output=True, text=True, env=env,
                               timeout=120)
            lines = r.stdout.splitlines()
            status = [x for x in lines if x.startswith("flashref-status:")]
            if r.returncode or len(status) != 2 or not status[0].startswith("flashref-status: 77 tiny: "):
                bad.append("%s: exit %d, stdout %r" % (proto, r.returncode, r.stdout[-300:]))
                continue
            first = lines[0]
            if proto == "persistent-2":
                if not first.startswith("flashref-capabilities: "):
                    bad.append("persistent-2: first line %r is not the capability line" % first)
                elif json.loads(first[len("flashref-capabilities: "):]) != want:
                    bad.append("persistent-2: capability line %r, expected %r" % (first, want))
            elif any(x.startswith("flashref-capabilities:") for x in lines):
                bad.append("persistent-1: a capability line was sent: %r" % r.stdout[-300:])
        r = subprocess.run([py, "-c", src, "--capabilities"], capture_output=True, text=True, timeout=120)
        if r.returncode or json.loads(r.stdout) != want:
            bad.append("--capabilities: exit %d, %r" % (r.returncode, r.stdout[-300:]))
    # The capability line comes before the runner reads stdin: a caller may wait for it with nothing written.
    env = dict(os.environ, FLASHREF_PROTOCOL="persistent-2")
    p = subprocess.Popen([py, "-c", TINY % (RUNNERS, repr(caps))], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True, env=env)
    first = p.stdout.readline()
    p.stdin.close()
    p.wait(timeout=120)
    if not first.startswith("flashref-capabilities: "):
        bad.append("persistent-2: %r before any case was written" % first)
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--declarations", action="store_true")
    a = ap.parse_args()
    bad = ["protocol: " + b for b in protocol(a.python)]
    checked = 0
    for file in sorted(NEEDS) if a.declarations else []:
        if subprocess.run([a.python, "-c", NEEDS[file]], capture_output=True).returncode:
            print("SKIP (framework not installed): %s" % file)
            continue
        argv = [a.python, os.path.join(RUNNERS, file)] + ([VARIANTS[file]] if file in VARIANTS else [])
        r = subprocess.run(argv + ["--capabilities"], capture_output=True, text=True, timeout=300)
        if r.returncode:
            bad.append("%s --capabilities: exit %d: %s" % (file, r.returncode, r.stderr[-500:]))
            continue
        checked += 1
        bad += ["%s: %s" % (file, b) for b in validate(json.loads(r.stdout))]
    for b in bad:
        print("MISMATCH: " + b)
    print("protocol checked; %d runner declaration(s) validated; %d problem(s)" % (checked, len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
