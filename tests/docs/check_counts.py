#!/usr/bin/env python3
"""The case counts the docs state, checked against the flashref command (issue 28 row 17: the docs said 196 / 23
cases in default / quick while the sets held 198 / 24). Each CLAIM below is one sentence of the docs: a regular
expression whose first group is a count, and the command-line fact it must equal. A count that stopped matching its
fact fails the test (update the sentence); a claim whose sentence is gone fails too (update this table), so no
count is typed and forgotten. Counts of a past measurement say so ("when measured") and are not checked.

usage: check_counts.py FLASHREF REPO_ROOT   (system python3, standard library only)
"""
import os
import re
import subprocess
import sys


def set_count(fr, name):
    out = subprocess.run([fr, "suite", "--list", "--set", name], capture_output=True, text=True, check=True).stdout
    m = re.search(r"^(\d+) cases in set %s" % name, out, re.M)
    return int(m.group(1))


def prefix_count(fr, name, prefix):
    out = subprocess.run([fr, "suite", "--list", "--set", name], capture_output=True, text=True, check=True).stdout
    return sum(1 for line in out.splitlines() if line.startswith(prefix))


def gen_set_count(fr, name):
    out = subprocess.run([fr, "golden", "--list"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"^%s \((\d+) cases\)" % name, out, re.M)
    return int(m.group(1))


# (file, regular expression with the count as group 1, what it must equal)
CLAIMS = [
    ("docs/verifier.md", r"\| `quick` \| (\d+) cases", ("set", "quick")),
    ("docs/verifier.md", r"\| `default` \| (\d+) cases", ("set", "default")),
    ("docs/verifier.md", r"(\d+) `ln_\*` cases", ("prefix", "default", "ln_")),
    ("docs/verifier.md", r"casegen's (\d+)-case `xcheck` grid", ("gen", "xcheck")),
    ("docs/verifier.md", r"\| `long` \| (\d+) cases", ("set", "long")),
    ("docs/python.md", r"^(?:PASS|WARN|FAIL): (\d+) cases, ", ("set", "quick")),
    ("tests/python/README.md", r"`flashref golden --set xcheck` \((\d+) cases\)", ("gen", "xcheck")),
]


def fact(fr, spec):
    kind = spec[0]
    if kind == "set":
        return set_count(fr, spec[1])
    if kind == "prefix":
        return prefix_count(fr, spec[1], spec[2])
    return gen_set_count(fr, spec[1])


def main():
    fr, root = sys.argv[1], sys.argv[2]
    bad = 0
    for path, rx, spec in CLAIMS:
        with open(os.path.join(root, path), encoding="utf-8") as f:
            text = f.read()
        m = re.search(rx, text, re.M)
        want = fact(fr, spec)
        if not m:
            print("FAIL %s: no sentence matches %r any more (update tests/docs/check_counts.py)" % (path, rx))
            bad += 1
        elif int(m.group(1)) != want:
            print("FAIL %s: says %s, but %s gives %d: %s" % (path, m.group(1), " ".join(spec), want,
                                                             m.group(0).strip()))
            bad += 1
        else:
            print("ok   %s: %s (%s)" % (path, m.group(0).strip(), " ".join(spec)))
    print("docs_counts: %d claims, %d wrong" % (len(CLAIMS), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
