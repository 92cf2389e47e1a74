#!/usr/bin/env python3
"""The runners of runners/ against every place that lists them (docs/adding-a-runner.md).

Usage: check_runners.py REPO_ROOT     check the repository (exit 1 and one line per problem, naming the place)
       check_runners.py --selftest    run the checker on a small tree with one planted defect per rule

What a runner is comes from the files themselves, so a new one is seen the moment it exists:
  - a runner is a runners/*.py whose module docstring has a usage line, "usage: NAME.py ..."; the others are helper
    modules (runners/flashref_runner.py, runners/panel_case.py);
  - its variants are the usage line's first argument when that is a choice "a|b|c" (usage: torch_sdpa.py math|flash
    ...): the runner ids are NAME.py:a, NAME.py:b, ...; otherwise the one id is NAME.py;
  - it belongs to the panel when its docstring says "the panel" (docs/verifier.md, "The panel").
Rules:
  1. Every id of a panel runner is in the Makefile's PANEL_RUNNERS (make panel runs it), in docs/verifier.md's panel
     table (a row whose first cell names it: `NAME.py variant`, or `NAME.py a` / `b` for several), and its file has an
     import check in tests/panel/check_panel.py's NEEDS (how the test knows the framework is missing), and its file
     has an entry (one variant or more) in tests/panel/check_repro.py's ALL (its reproducers are checked).
  2. Nothing names a runner that does not exist: PANEL_RUNNERS, the panel table, the keys of check_panel.py's
     EXPECTED, CLASSES, NEEDS (and any other dict or tuple of runner names there), the keys of check_repro.py's
     ALL, and the runners that tests/panel/CMakeLists.txt runs.
  3. A runner outside the panel (e.g. runners/torch_npu.py) is run by some test: a file under tests/ names it.
Standard library only: it runs before the venv exists.
"""
import ast
import os
import re
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "docs"))
from check_links import checker_main, joined, read_text as read, repo_files, selftest_verdict  # noqa: E402

RUNNERS = "runners"
MAKEFILE = "Makefile"
DOC = "docs/verifier.md"
CHECK_PANEL = "tests/panel/check_panel.py"
CHECK_REPRO = "tests/panel/check_repro.py"
CMAKE = "tests/panel/CMakeLists.txt"
USAGE = re.compile(r"^\s*usage:\s*(\w+\.py)\b(.*)$", re.M)
RUNNER_ID = re.compile(r"\b(\w+\.py)(?::(\w+))?")


def runners(root, files):
    """{file: (ids, panel)} for every runner of runners/ (files with a usage line in their docstring)."""
    out = {}
    for f in sorted(files):
        m = re.fullmatch(RUNNERS + r"/(\w+\.py)", f)
        if not m:
            continue
        try:
            doc = ast.get_docstring(ast.parse(read(root, f) or "")) or ""
        except SyntaxError:
            doc = ""
        u = USAGE.search(doc)
        if not u:
            continue
        name, panel = m.group(1), "the panel" in " ".join(doc.split())
        if u.group(1) != name:
            out[name] = ([name], panel, "its usage line names %s" % u.group(1))
            continue
        first = (u.group(2).split() or [""])[0]
        variants = first.split("|") if re.fullmatch(r"\w+(\|\w+)+", first) else []
        out[name] = (["%s:%s" % (name, v) for v in variants] or [name], panel, None)
    return out


def makefile_runners(text):
    """The words of PANEL_RUNNERS (with its backslash continuations), or None when there is no such variable."""
    m = re.search(r"^PANEL_RUNNERS\s*\??=((?:[^\n]*\\\n)*[^\n]*)", text, re.M)
    return None if not m else m.group(1).replace("\\\n", " ").split()


def doc_runners(text):
    """The runner ids of the panel table of docs/verifier.md: rows whose first cell starts with `NAME.py ...`."""
    ids = []
    for line in text.splitlines():
        cell = line.split("|")[1] if line.startswith("| `") else ""
        groups = re.findall(r"`([^`]+)`", cell)
        if not groups or not re.match(r"\w+\.py\b", groups[0]):
            continue
        name, _, var = groups[0].partition(" ")
        ids.append("%s:%s" % (name, var) if var else name)
        ids += ["%s:%s" % (name, g) for g in groups[1:] if re.fullmatch(r"\w+", g)]
    return ids


def check_panel_names(text):
    """{place: [runner ids or files]} from check_panel.py's module-level dicts, tuples and subscript assignments whose
    keys or items look like runner names (NAME.py or NAME.py:variant)."""
    out = {}
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        return {"(syntax error %s)" % e: []}

    def names(node):
        vals = []
        if isinstance(node, ast.Dict):
            vals = [k.value for k in node.keys if isinstance(k, ast.Constant)]
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            vals = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        return [v for v in vals if isinstance(v, str) and re.fullmatch(r"\w+\.py(:\w+)?", v)]

    for st in tree.body:
        if not isinstance(st, ast.Assign):
            continue
        for t in st.targets:
            if isinstance(t, ast.Name) and names(st.value):
                out.setdefault(t.id, []).extend(names(st.value))
            elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and \
                    isinstance(t.slice, ast.Constant) and isinstance(t.slice.value, str):
                out.setdefault(t.value.id, []).append(t.slice.value)
    return out


def check(root):
    problems = []
    files = repo_files(root)
    found = runners(root, files)
    if not found:
        return ["%s/: no runner (no file with a usage line)" % RUNNERS]
    for name, (_, _, bad) in found.items():
        if bad:
            problems.append("%s/%s: %s" % (RUNNERS, name, bad))
    panel_ids = [i for ids, panel, _ in found.values() if panel for i in ids]
    panel_files = [n for n, (_, panel, _) in found.items() if panel]
    all_ids = {i for ids, _, _ in found.values() for i in ids} | set(found)

    def known(x):
        return x in all_ids or (x.partition(":")[0] in found and not x.partition(":")[2])

    make = makefile_runners(read(root, MAKEFILE) or "")
    doc = doc_runners(read(root, DOC) or "")
    cp = check_panel_names(read(root, CHECK_PANEL) or "")
    needs = cp.get("NEEDS", [])
    rp = check_panel_names(read(root, CHECK_REPRO) or "")
    repro_files = {x.partition(":")[0] for x in rp.get("ALL", [])}
    if make is None:
        problems.append("%s: no PANEL_RUNNERS variable" % MAKEFILE)
        make = []
    for i in panel_ids:
        if i not in make:
            problems.append("%s: PANEL_RUNNERS lacks %s (a runner of the panel: %s/%s)" %
                            (MAKEFILE, i, RUNNERS, i.partition(":")[0]))
        if i not in doc:
            problems.append("%s: the panel table has no row for %s (first cell `%s`)" %
                            (DOC, i, i.replace(":", " ")))
    for f in panel_files:
        if f not in needs:
            problems.append("%s: NEEDS has no import check for %s (the statement that fails when its framework is "
                            "missing)" % (CHECK_PANEL, f))
        if f not in repro_files:
            problems.append("%s: ALL has no entry for %s (its reproducers, --repro, are not checked)" %
                            (CHECK_REPRO, f))
    for i in make:
        if not known(i):
            problems.append("%s: PANEL_RUNNERS names %s, which is no runner of %s/" % (MAKEFILE, i, RUNNERS))
    for i in doc:
        if not known(i):
            problems.append("%s: the panel table names %s, which is no runner of %s/" % (DOC, i, RUNNERS))
    for place, xs in sorted(cp.items()):
        for x in xs:
            if not known(x):
                problems.append("%s: %s names %s, which is no runner of %s/" % (CHECK_PANEL, place, x, RUNNERS))
    for place, xs in sorted(rp.items()):
        for x in xs:
            if not known(x):
                problems.append("%s: %s names %s, which is no runner of %s/" % (CHECK_REPRO, place, x, RUNNERS))
    here = os.path.dirname(CMAKE)
    for x in sorted(set(m.group(0) for m in RUNNER_ID.finditer(read(root, CMAKE) or ""))):
        if "%s/%s" % (here, x.partition(":")[0]) in files:
            continue  # a script of tests/panel (check_panel.py, ...)
        if not known(x):
            problems.append("%s: runs %s, which is no runner of %s/" % (CMAKE, x, RUNNERS))
    # 3. runners outside the panel are run by some test
    tests_text = [read(root, f) or "" for f in files if f.startswith("tests/") and f != CHECK_PANEL]
    for name, (_, panel, _) in found.items():
        if not panel and not any(name in t for t in tests_text):
            problems.append("%s/%s: a runner outside the panel that no file under tests/ runs (add a test, or say "
                            "\"the panel\" in its docstring and register it there)" % (RUNNERS, name))
    return problems


def selftest():
    """A clean tree must pass; the same tree with one planted defect per rule must report each, and nothing else."""
    P, R = joined, RUNNERS
    good = {
        P(R, "helper.py"): '"""Plumbing for the panel runners (no usage line)."""\n',
        P(R, "fw_a.py"): '"""Framework A (the panel, docs).\n\nusage: fw_a.py x|y [CASE_DIR]\n"""\n',
        P(R, "fw_b.py"): '"""Framework B, the panel.\n\nusage: fw_b.py [CASE_DIR]\n"""\n',
        P(R, "device.py"): '"""A device runner.\n\nusage: device.py [CASE_DIR]\n"""\n',
        P("tests", "dev", "test_device.py"): "RUNNER = 'device.py'\n",
        MAKEFILE: "PANEL_RUNNERS ?= fw_a.py:x fw_a.py:y \\\n  fw_b.py\npanel:\n",
        DOC: "| runner | what |\n|---|---|\n| `fw_a.py x` / `y` | A |\n| `fw_b.py` | B |\n",
        CHECK_PANEL: 'EXPECTED = {"fw_a.py:x": {}}\nNEEDS = {"fw_a.py": "import a", "fw_b.py": "import b"}\n',
        CHECK_REPRO: 'ALL = {"fw_a.py:x": ({"a"}, False), "fw_b.py": ({"b"}, True)}\n',
        CMAKE: "fr_panel_test(panel_a fw_a.py:y quick 300)\nadd_test(NAME t COMMAND check_panel.py)\n",
    }
    with tempfile.TemporaryDirectory() as d:
        def write(tree):
            for rel, body in tree.items():
                os.makedirs(os.path.join(d, os.path.dirname(rel)), exist_ok=True)
                with open(os.path.join(d, rel), "w") as f:
                    f.write(body)
        write(good)
        clean = check(d)
        bad = dict(good)
        bad[P(R, "fw_c.py")] = '"""Framework C (the panel).\n\nusage: fw_c.py [CASE_DIR]\n"""\n'  # 1: nowhere else
        bad[P(R, "orphan.py")] = '"""An orphan.\n\nusage: orphan.py [CASE_DIR]\n"""\n'         # 3: no test runs it
        bad[MAKEFILE] = "PANEL_RUNNERS ?= fw_a.py:x fw_a.py:y fw_b.py gone.py\n"               # 2: a stale name
        bad[DOC] = good[DOC] + "| `fw_a.py z` | stale |\n"                                     # 2: a stale row
        bad[CHECK_PANEL] = good[CHECK_PANEL] + 'EXPECTED["old.py:v"] = {}\n'                  # 2: a stale key
        bad[CMAKE] = good[CMAKE] + "fr_panel_test(panel_x fw_x.py quick 300)\n"               # 2: a stale ctest
        bad[CHECK_REPRO] = 'ALL = {"fw_a.py:y": ({"a"}, False), "fw_b.py": 0, "fw_d.py": 0}\n'  # 2: a stale key
        write(bad)
        got = check(d)
    want = [MAKEFILE + ": PANEL_RUNNERS lacks fw_c.py", DOC + ": the panel table has no row for fw_c.py",
            CHECK_PANEL + ": NEEDS has no import check for fw_c.py", P(R, "orphan.py:"),
            MAKEFILE + ": PANEL_RUNNERS names gone.py", DOC + ": the panel table names fw_a.py:z",
            CHECK_PANEL + ": EXPECTED names old.py:v", CMAKE + ": runs fw_x.py",
            CHECK_REPRO + ": ALL has no entry for fw_c.py", CHECK_REPRO + ": ALL names fw_d.py"]
    return selftest_verdict("check_runners", got, want, clean)


def summary(root, problems):
    found = runners(root, repo_files(root))
    return "check_runners: %s (%d runners: %s)" % (
        "FAIL" if problems else "PASS", len(found),
        " ".join("%s%s" % (" ".join(ids), "" if panel else " (not panel)") for ids, panel, _ in found.values()))


if __name__ == "__main__":
    sys.exit(checker_main(sys.argv, __doc__, check, selftest, summary))
