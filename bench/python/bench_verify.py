"""PyTorch's SDPA verified two ways over a suite set: in-process (flashref.verify(flashref.torch.sdpa)) and through
the command line's exec protocol with a runner doing the same thing (tests/python_pkg/exec_fast_runner.py sdpa: a
Python process per case). Prints both wall times, their ratio, and whether every verdict agrees (it must).

usage: python bench/python/bench_verify.py [--set default] [--build build] [--repeat 1]"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default="default")
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    build = Path(a.build).resolve()
    sys.path.insert(0, str(build / "python"))
    import flashref
    import flashref.torch as frt
    cli = str(build / "flashref")
    load = os.getloadavg()
    print("bench-python: set %s, load average %.2f %.2f %.2f, %d cores" % (a.set, *load, os.cpu_count()))
    runner = "%s %s sdpa" % (sys.executable, ROOT / "tests" / "python_pkg" / "exec_fast_runner.py")
    env = dict(os.environ, PYTHONPATH=str(build / "python"))
    t_in, t_ex, agree = [], [], True
    for rep in range(a.repeat):
        t0 = time.perf_counter()
        r = flashref.verify(frt.sdpa, set=a.set, tensors="torch")
        t_in.append(time.perf_counter() - t0)
        with tempfile.TemporaryDirectory() as td:
            js = os.path.join(td, "exec.json")
            t0 = time.perf_counter()
            p = subprocess.run([cli, "suite", "--impl", "exec:" + runner, "--set", a.set, "--json", js, "--quiet"],
                               env=env, capture_output=True, text=True)
            t_ex.append(time.perf_counter() - t0)
            if p.returncode not in (0, 1):
                print(p.stderr)
                return 2
            ex = {c["name"]: c["verdict"] for c in json.load(open(js))["cases"]}
        diff = {n: (v, ex.get(n)) for n, v in r.verdicts.items() if ex.get(n) != v}
        diff.update({n: (None, v) for n, v in ex.items() if n not in r.verdicts})
        agree &= not diff
        counts = {v: list(r.verdicts.values()).count(v) for v in ("PASS", "WARN", "FAIL", "SKIP")}
        print("run %d: in-process %.1f s, exec %.1f s, ratio %.1fx; %d cases %s; verdicts %s" % (
            rep + 1, t_in[-1], t_ex[-1], t_ex[-1] / t_in[-1], len(r), counts,
            "identical" if not diff else "DIFFER: %s" % diff))
    t_in.sort()
    t_ex.sort()
    mi, me = t_in[len(t_in) // 2], t_ex[len(t_ex) // 2]
    print("median: in-process %.1f s, exec %.1f s: in-process is %.1fx faster; verdicts %s" % (
        mi, me, me / mi, "identical" if agree else "DIFFER"))
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
