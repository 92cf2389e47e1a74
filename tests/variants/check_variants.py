#!/usr/bin/env python3
"""The one list of ISA variants (src/core/variants.inc) against the source tree.

Usage: check_variants.py REPO_ROOT     check the repository (exit 1 and one line per problem, naming the place)
       check_variants.py --selftest    run the checker on a small tree with one planted defect per rule

Rules, for the files the repository holds (git's list when there is one, else a walk without build folders):
  1. Files: every row has its kernel table file src/kernels/ops_<name>.c, every src/kernels/ops_*.c is a row, and a
     source file named *_<isa>.c anywhere under src/ names a row (only rows' files get ISA flags).
  2. The public enum: the fr_isa members of include/flashref.h after FR_ISA_AUTO are the list's enum column, in order.
  3. cpuid is read in src/core/isa.c only: no cpuid intrinsic, CPU-feature builtin, xgetbv or /proc/cpuinfo
     anywhere else (everything asks the dispatcher).
  4. No hand-written list of variant names: a run of three or more names joined by "|", ",", "/", "or", "and" or
     spaces, or of two joined by "|" (in docs, comments, code) must be the whole list in its order, which makes it
     checked; a line of C or
     CMake naming three or more FR_ISA_ values, a line naming two variants in quotes, or a variant in quotes in the
     Python package (which asks the library at run time) is an error: such code must expand the list instead.
Standard library only: it runs before the venv exists.
"""
import os
import re
import sys
import tempfile

# The repository's file list as the link checker reads it (git's list, else a walk without build folders); no
# bytecode left in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "docs"))
from check_links import checker_main, joined, read_text as read, repo_files, selftest_verdict  # noqa: E402

LIST = "src/core/variants.inc"
KERNELS = "src/kernels"
ROW = re.compile(r"^FR_VARIANT\((\w+),\s*(\w+),", re.M)
TEXT_EXT = {".md", ".c", ".h", ".inc", ".py", ".sh", ".txt", ".cmake", ".toml", ".cfg", ".yml", ".yaml", ""}
# Reading the CPU's features; spelled in pieces so that this file does not match its own rule.
CPUID = re.compile(r"\b(?:" + "|".join(["cpu" + "id\\.h", "__get_" + "cpuid", "__" + "cpuid", "__builtin_" + "cpu_",
                                         "_?x" + "getbv", "/proc/" + "cpuinfo", "ls" + "cpu\\b", "py" + "cpuinfo"])
                    + r")")
ISA_WORD = r"(?:scalar|avx\w*|amx\w*|sse\w*|neon\w*|sve\w*)"
SEP = r"(?:\s*[|,/]\s*(?:(?:or|and)\s+)?|\s+(?:or|and)\s+|[ \t]+)"


def check(root):
    problems = []
    text = read(root, LIST)
    if text is None:
        return ["%s: missing" % LIST]
    rows = ROW.findall(text)
    names = [n for n, _ in rows]
    enums = [e for _, e in rows]
    if not names:
        return ["%s: no FR_VARIANT row" % LIST]
    files = repo_files(root)

    # 1. files
    for n in names:
        if "%s/ops_%s.c" % (KERNELS, n) not in files:
            problems.append("%s: variant %s has no kernel table file %s/ops_%s.c" % (LIST, n, KERNELS, n))
    for f in files:
        m = re.fullmatch(re.escape(KERNELS) + r"/ops_(\w+)\.c", f)
        if m and m.group(1) not in names:
            problems.append("%s: %s is not a variant of %s (add its row, or rename the file)" % (f, m.group(1), LIST))
            continue
        m = re.fullmatch(r"src/.*_(" + ISA_WORD + r")\.c", f)
        if m and m.group(1) not in names:
            problems.append("%s: %s is not a variant of %s: the file would get no ISA flags" % (f, m.group(1), LIST))

    # 2. the public enum
    hdr = read(root, "include/flashref.h") or ""
    m = re.search(r"typedef enum fr_isa \{(.*?)\} fr_isa;", hdr, re.S)
    members = re.findall(r"\b(FR_ISA_\w+)\b", re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)) if m else []
    if members[1:] != enums or members[:1] != ["FR_ISA_AUTO"]:
        problems.append("include/flashref.h: enum fr_isa is %s; %s's rows say FR_ISA_AUTO then %s" %
                        (", ".join(members) or "missing", LIST, ", ".join(enums)))

    # 3. and 4.
    me = os.path.relpath(os.path.abspath(__file__), os.path.abspath(root))
    word = re.compile(r"(?<![\w.-])([`\"']?)(" + ISA_WORD + r")\1(?![\w-])")
    run = re.compile(r"(?<![\w.-])[`\"']?" + ISA_WORD + r"[`\"']?(?:" + SEP + r"[`\"']?" + ISA_WORD + r"[`\"']?)+"
                     r"(?![\w-])")
    quoted = re.compile(r"[\"'](" + "|".join(map(re.escape, names)) + r")[\"']")
    enum_rx = re.compile(r"\bFR_ISA_(?!AUTO\b)\w+")
    for f in files:
        ext = os.path.splitext(f)[1]
        if ext not in TEXT_EXT or f == LIST or f == me:
            continue
        body = read(root, f)
        if body is None:
            continue
        code = ext in (".c", ".h", ".py", ".sh", ".cmake") or os.path.basename(f) == "CMakeLists.txt"
        for no, line in enumerate(body.splitlines(), 1):
            where = "%s:%d" % (f, no)
            if code and f != "src/core/isa.c" and CPUID.search(line):
                problems.append("%s: reads the CPU's features (%s); ask src/core/isa.c (fr_isa_available)" %
                                (where, CPUID.search(line).group(0)))
            for r in run.finditer(line):
                got = []  # in order, each once: a whole list followed by "x and y" about two of it is one run
                for w in word.finditer(r.group(0)):
                    got += [w.group(2)] if w.group(2) not in got else []
                if len(got) >= (2 if "|" in r.group(0) else 3) and got != names:
                    problems.append("%s: a hand-written list of variants (%s): write the whole list %s in its order, "
                                    "or expand %s" % (where, " ".join(got), "|".join(names), LIST))
            if not code or f == "include/flashref.h" or f == "src/core/isa.c":
                continue
            if len(set(enum_rx.findall(line))) >= 3:
                problems.append("%s: names %d FR_ISA_ values: expand %s (or fr_isa_family) instead" %
                                (where, len(set(enum_rx.findall(line))), LIST))
            q = set(quoted.findall(line))
            if len(q) >= 2 or (q and f.startswith("python/")):
                problems.append("%s: spells variant names in quotes (%s): take them from the list (%s; Python: "
                                "flashref.isa_names())" % (where, ", ".join(sorted(q)), LIST))
    return problems


def selftest():
    """A tree with one planted defect per rule (and a clean twin of each): each must be reported, nothing else.
    Paths are joined from parts (check_links.joined)."""
    P, K = joined, KERNELS
    good = {
        LIST: "FR_VARIANT(scalar, FR_ISA_SCALAR, FR_ISA_SCALAR, 0)\nFR_VARIANT(avx2, FR_ISA_AVX2, FR_ISA_AVX2, 0)\n"
              "FR_VARIANT(avx512, FR_ISA_AVX512, FR_ISA_AVX2, 0)\n",
        P("include", "flashref.h"): "typedef enum fr_isa {\n    FR_ISA_AUTO = 0, /* best */\n    FR_ISA_SCALAR,\n"
                              "    FR_ISA_AVX2,\n    FR_ISA_AVX512\n} fr_isa;\n",
        P(K, "ops_scalar.c"): "", P(K, "ops_avx2.c"): "", P(K, "ops_avx512.c"): "",
        P("src", "golden", "gemm_avx2.c"): "",
        P("src", "core", "isa.c"): "#include <cpu" "id.h>\nswitch: FR_ISA_SCALAR FR_ISA_AVX2 FR_ISA_AVX512\n",
        P("docs", "ok.txt"): "FLASHREF_ISA=scalar|avx2|avx512 and `avx2` and `avx512` run; x `scalar`, `avx2` or `avx512`\n",
        P("python", "flashref", "ok.py"): "names = isa_names()\n",
        P("tests", "ok.c"): "fr_isa_choose(\"scalar\", &x); /* the cpu" "id is read in isa.c */ FR_ISA_AVX2 FR_ISA_AVX512\n",
    }
    bad = {
        P(K, "ops_avx10.c"): "",                                 # 1: a table file without a row
        P("src", "core", "convert_sse4.c"): "",                                 # 1: an ISA file without a row
        P("docs", "bad.txt"): "FLASHREF_ISA=scalar|avx2\nrun `scalar`, `avx512` or `avx2`\n",   # 4: partial, out of order
        P("tests", "bad.c"): "if (__builtin_" "cpu_supports(\"avx2\")) {}\nint a[] = {FR_ISA_SCALAR, FR_ISA_AVX2, "
                       "FR_ISA_AVX512};\nstruct v k[] = {{\"avx2\", 1}, {\"avx512\", 2}};\n",  # 3 and 4 (three lines)
        P("python", "flashref", "bad.py"): "_ISAS = {\"avx2\": 2}\n",              # 4: a name in quotes in the package
    }
    with tempfile.TemporaryDirectory() as d:
        for rel, body in {**good, **bad}.items():
            os.makedirs(os.path.join(d, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w") as f:
                f.write(body)
        got = check(d)
        want = [P(K, "ops_avx10.c:"), P("src", "core", "convert_sse4.c:"), P("docs", "bad.txt:1:"),
                P("docs", "bad.txt:2:"), P("tests", "bad.c:1:"), P("tests", "bad.c:2:"), P("tests", "bad.c:3:"),
                P("python", "flashref", "bad.py:1:")]
        with open(os.path.join(d, "include", "flashref.h"), "w") as f:
            f.write("typedef enum fr_isa {\n    FR_ISA_AUTO = 0,\n    FR_ISA_SCALAR,\n    FR_ISA_AVX512\n} fr_isa;\n")
        os.remove(os.path.join(d, K, "ops_avx2.c"))
        got2 = check(d)
        second = (P("include", "flashref.h: enum fr_isa"), LIST + ": variant avx2 has no kernel table")
        more = [w for w in second if not any(p.startswith(w) for p in got2)]
    return selftest_verdict("check_variants", got, want, more_missing=more, more_checks=len(second))


def summary(root, problems):
    text = read(root, LIST) or ""
    return "check_variants: %s (%d variants: %s)" % ("FAIL" if problems else "PASS", len(ROW.findall(text)),
                                                     " ".join(n for n, _ in ROW.findall(text)))


if __name__ == "__main__":
    sys.exit(checker_main(sys.argv, __doc__, check, selftest, summary))
