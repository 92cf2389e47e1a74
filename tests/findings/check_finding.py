#!/usr/bin/env python3
"""Runs one reproducer of docs/findings.md and checks that the departure it shows is still there.

usage: check_finding.py --python VENV_PYTHON --repro tests/findings/repro_<framework>_<slug>.py [--timeout S]
       check_finding.py --selftest     the checker on planted reproducers (one per outcome; standard library only)

A reproducer is a standalone script in its framework's own API: its header names what it needs
(`# needs: mod, mod`, the framework's import names; numpy is always allowed), the failure it shows
(`# signature: REGEX`, searched in its stdout + stderr) and the releases it was found on (`# found-on: dist==version,
...`, named again when the departure is gone). It exits nonzero while the departure is present and 0 once
the framework behaves as its documentation says (it then prints "fixed: ...").

Exit status (ctest):
  0   the departure is still present: the reproducer exits nonzero and its output matches the signature;
  77  SKIP (printed loudly): no VENV_PYTHON, or the reproducer stops on importing a module it declares (the
      framework is not installed there);
  1   anything else, with the reason: "FIXED UPSTREAM" when the reproducer exits 0 (the framework no longer shows the
      departure: update docs/findings.md and retire or invert the reproducer), "REPRODUCER BROKEN" when it fails
      without the signature (another error: an API change, a missing dependency), or an import outside what it
      declares (a reproducer may use only its framework, numpy and the standard library). FIXED UPSTREAM and
      REPRODUCER BROKEN on other releases than its found-on ones are a loud SKIP (77) instead: the framework moved.
"""
import argparse
import ast
import os
import re
import subprocess
import sys
import tempfile


def header(path):
    needs, sig, found = None, None, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("#"):
                break
            m = re.match(r"#\s*needs:\s*(.*)", line)
            if m:
                needs = [x.strip() for x in m.group(1).split(",") if x.strip()]
            m = re.match(r"#\s*signature:\s*(.*\S)", line)
            if m:
                sig = m.group(1)
            m = re.match(r"#\s*found-on:\s*(.*)", line)
            if m:
                found = [x.strip() for x in m.group(1).split(",") if x.strip()]
    return needs, sig, found


def installed(python, found):
    """'dist==version' of the installed releases of the distributions named in found-on (for the banners)."""
    code = ("import importlib.metadata as m, sys\nfor d in sys.argv[1:]:\n"
            "    try: print(d + '==' + m.version(d))\n    except Exception: print(d + ' (not installed)')")
    dists = [x.split("==")[0] for x in found]
    r = subprocess.run([python, "-c", code] + dists, capture_output=True, text=True, timeout=60)
    return ", ".join(r.stdout.split()) if r.returncode == 0 else "?"


def imports(path):
    """Top-level module names the script imports."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    mods = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            mods.add(node.module.split(".")[0])
    return mods


def banner(name, word, msg):
    print("=" * 78)
    print("%s (finding %s): %s" % (word, name, msg))
    print("=" * 78)


def check(python, path, timeout):
    """The exit status for one reproducer (see the module's docstring), with its banner printed."""
    name = os.path.basename(path)
    needs, sig, found = header(path)
    if not needs or not sig:
        banner(name, "BAD REPRODUCER", "its header lacks '# needs:' or '# signature:'")
        return 1
    stray = imports(path) - set(needs) - {"numpy"} - set(sys.stdlib_module_names)
    if stray:
        banner(name, "BAD REPRODUCER", "imports %s beyond its framework (%s), numpy and the standard library"
               % (sorted(stray), ", ".join(needs)))
        return 1
    if not os.path.exists(python):
        banner(name, "SKIP", "no venv python at %s (make venv)" % python)
        return 77
    env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1")
    try:
        repro = os.path.abspath(path)
        r = subprocess.run([python, repro], capture_output=True, text=True, timeout=timeout, env=env,
                           cwd=os.path.dirname(repro))
    except subprocess.TimeoutExpired:
        banner(name, "REPRODUCER BROKEN", "ran past %g s" % timeout)
        return 1
    out = r.stdout + r.stderr
    missing = re.search(r"ModuleNotFoundError: No module named '([\w.]+)'", out)
    declared = set(needs) | {"numpy"}
    if r.returncode != 0 and missing and missing.group(1).split(".")[0] in declared:
        banner(name, "SKIP", "%s cannot be imported here (%s)" % (", ".join(needs), missing.group(0)))
        return 77
    tail = "\n".join(out.strip().splitlines()[-6:])
    if r.returncode == 0 or not re.search(sig, out):
        inst = installed(python, found)
        # On the releases it was found on, a reproducer that no longer shows its departure is ours to fix (FAIL). On
        # other releases (make test installs the newest) the framework moved: said loudly, and a SKIP, so that an
        # upstream fix or API change does not fail an unrelated build.
        moved = bool(found) and inst != ", ".join(found)
        if r.returncode == 0:
            word, msg = "FIXED UPSTREAM?", ("the reproducer exits 0: the departure found on %s is gone with %s. Update "
                                            "docs/findings.md (fixed in which release) and retire the reproducer. "
                                            "Its output:\n%s" % (", ".join(found) or "?", inst, tail))
        else:
            word, msg = "REPRODUCER BROKEN", ("exit status %d without the departure's signature /%s/ (found on %s, "
                                              "installed %s); its output:\n%s" % (r.returncode, sig,
                                                                                 ", ".join(found) or "?", inst, tail))
        banner(name, word + (" (SKIP: another release than the one it was found on)" if moved else ""), msg)
        return 77 if moved else 1
    print("still present (exit status %d, signature /%s/ seen):\n%s" % (r.returncode, sig, tail))
    return 0


PLANTED = {  # reproducer text -> the exit status check() must give it
    "ok": ("# needs: json\n# signature: departure 42\nimport json\nraise SystemExit('departure 42')\n", 0),
    "fixed": ("# needs: json\n# signature: departure 42\nimport json\nprint('fixed: no departure')\n", 1),
    "fixed_newer": ("# needs: json\n# signature: departure 42\n# found-on: pip==0.1\nimport json\n"
                    "print('fixed: no departure')\n", 77),
    "broken": ("# needs: json\n# signature: departure 42\nimport json\nraise RuntimeError('API moved')\n", 1),
    "stray": ("# needs: json\n# signature: departure 42\nimport json, flashref\nraise SystemExit('departure 42')\n",
              1),
    "missing": ("# needs: no_such_framework_x\n# signature: departure 42\nimport no_such_framework_x\n", 77),
    "noheader": ("import json\nraise SystemExit('departure 42')\n", 1),
}


def selftest():
    """Each planted reproducer gets its outcome; exit 1 on the first that does not."""
    with tempfile.TemporaryDirectory() as d:
        for name, (text, want) in PLANTED.items():
            path = os.path.join(d, "repro_selftest_%s.py" % name)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            got = check(sys.executable, path, 60)
            if got != want:
                print("SELFTEST FAILED: %s gave %d, expected %d" % (name, got, want))
                return 1
    print("selftest: %d planted reproducers, each judged as expected" % len(PLANTED))
    return 0


def main():
    if sys.argv[1:] == ["--selftest"]:
        return selftest()
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--repro", required=True)
    ap.add_argument("--timeout", type=float, default=120)
    a = ap.parse_args()
    return check(a.python, a.repro, a.timeout)


if __name__ == "__main__":
    sys.exit(main())
