#!/usr/bin/env python3
"""The repository stands on its own: every link and file reference in it resolves inside it.

Usage: check_links.py REPO_ROOT     check the repository (exit 1 and one line per problem)
       check_links.py --selftest    run the checker on a small tree with one planted defect per rule

Rules, for every text file the repository holds (git's list when there is one, else a walk without build folders):
  1. Markdown links and images ([text](target), ![alt](target), [id]: target, src="..." / href="..."): a relative
     target must exist and stay inside the repository; an absolute path is an error; a "#anchor" must name a
     heading of the target Markdown file. Links inside fenced code blocks are code, not links.
     Web addresses (http:, https:, mailto:) are not checked.
  2. A reference that leaves the repository: a parent-relative "shared" folder, a "spec/" folder (the operator spec,
     verification method and case format live in docs/), or an absolute path into a development machine's
     home or work folder.
  3. A file name ending in .md (in code comments, help texts, docs) must name a file: relative to the file that
     mentions it, to the repository root, or in docs/. A file of another repository is written REPOSITORY:PATH.
  4. A path starting with one of the repository's top folders (src/, docs/, tests/, ...) must exist (file or
     folder). Globs ("*", "{"), format strings ("%") and placeholders (a component NAME, DIR, FILE, ...) are
     not paths and are skipped; "x.h/.c" names x.h and x.c.
Standard library only: it runs before the venv exists.
"""
import os
import re
import subprocess
import sys
import tempfile

TEXT_EXT = {".md", ".c", ".h", ".inc", ".py", ".sh", ".txt", ".cmake", ".in", ".dict", ".json", ".toml", ".cfg",
            ".yml", ".yaml", ".html", ".svg", ""}
# Spelled in pieces so that this file does not match its own rules.
LEAVE = [
    (re.compile(r"\.\./+" + "shared"), "points outside the repository (a parent folder's shared/)"),
    (re.compile(r"(?<![\w.-])" + "shared/" + r"spec\b"), "points at a design-notes folder that is not in the repository"),
    (re.compile(r"(?<![\w./-])" + "spec/" + r"[\w-]+\.md"), "points at spec/*.md (now docs/*.md)"),
    (re.compile(r"(?<![\w.-])/" + "(?:wo" + "rk|ho" + r"me)/[\w.-]"), "names an absolute path of a development machine"),
]
PLACEHOLDER = {"NAME", "DIR", "FILE", "PATH", "CASE_DIR", "BUILD", "OUT", "X", "N"}
MD_LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
MD_REF = re.compile(r"^\s*\[[^\]\n]+\]:\s*(\S+)")      # [id]: target
HTML_LINK = re.compile(r"\b(?:src|href)=\"([^\"]+)\"")  # <img src="..."> <a href="...">
MD_NAME = re.compile(r"(?<![\w./:@%-])((?:\.\.?/)*[\w-]+(?:/[\w.-]+)*\.md)(?![\w/-])")


def top_path_rx(root):
    """Paths that start with one of the repository's own top folders (src/, docs/, ...)."""
    top = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)) and not d.startswith(".")
                 and not d.startswith("build"))
    return re.compile(r"(?<![\w./:@%$-])((?:" + "|".join(map(re.escape, top)) + r")/[\w./+-]*)")


def repo_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, check=True).stdout
        files = [f for f in out.decode().split("\0") if f and os.path.isfile(os.path.join(root, f))]
        if files:
            return sorted(files)
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x != ".git" and not x.startswith("build")
                   and not os.path.exists(os.path.join(d, x, "CMakeCache.txt"))]
        files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(files)


def joined(*parts):
    """A path of a selftest's planted tree, joined from parts so that this checker does not read the selftest's
    source as references to files of the repository."""
    return "/".join(parts)


def read_text(root, rel):
    """A repository file's text, or None when it cannot be read as UTF-8."""
    try:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def selftest_verdict(name, got, want, clean=(), more_missing=(), more_checks=0):
    """The end of a checker's selftest (this one's and the registry checkers' that import repo_files from here):
    every problem found on the planted tree is printed; it passes when each planted defect (a prefix in want) was
    reported, nothing else was, the clean tree gave no problem and the extra checks missed nothing."""
    missing = [w for w in want if not any(p.startswith(w) for p in got)] + list(more_missing)
    extra = [p for p in got if not any(p.startswith(w) for w in want)]
    for p in got:
        print("  selftest found: " + p)
    if clean or missing or extra:
        print("%s selftest: FAIL (clean tree: %s; not found: %s; unexpected: %s)" % (name, list(clean), missing, extra))
        return 1
    print("%s selftest: PASS (%d planted defects found, the clean tree passes)" % (name, len(want) + more_checks))
    return 0


def checker_main(argv, doc, check, selftest, summary):
    """main() of a checker of the tree: --selftest, or REPO_ROOT: one line per problem of check(root), then the line
    summary(root, problems); exit 1 on a problem, 2 on a usage error."""
    if len(argv) == 2 and argv[1] == "--selftest":
        return selftest()
    if len(argv) != 2:
        print(doc)
        return 2
    problems = check(argv[1])
    for p in problems:
        print(p)
    print(summary(argv[1], problems))
    return 1 if problems else 0


def slug(heading):
    """GitHub's anchor of a Markdown heading."""
    h = re.sub(r"[`*_]", "", heading.strip().lower())
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    a = set()
    for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, re.M):
        a.add(slug(m.group(1)))
    a.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", text))
    return a


def inside(root, path):
    r = os.path.realpath(root)
    p = os.path.realpath(path)
    return p == r or p.startswith(r + os.sep)


def check_file(root, rel, problems, top_path):
    path = os.path.join(root, rel)
    ext = os.path.splitext(rel)[1].lower()
    if ext not in TEXT_EXT:
        return
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (UnicodeDecodeError, OSError):
        return
    here = os.path.dirname(path)

    def bad(lineno, msg):
        problems.append("%s:%d: %s" % (rel, lineno, msg))

    in_fence = False
    for n, line in enumerate(text.split("\n"), 1):
        rest = line  # what rules 3 and 4 read: without what rules 1 and 2 already judged
        for rx, why in LEAVE:
            for m in rx.finditer(line):
                bad(n, "'%s' %s" % (m.group(0), why))
            rest = rx.sub(" ", rest)
        if ext == ".md":
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
            if not in_fence:
                targets = []
                for rx in (MD_LINK, MD_REF, HTML_LINK):
                    targets += [m.group(1) for m in rx.finditer(line)]
                    rest = rx.sub(" ", rest)
                for t in targets:
                    if re.match(r"(?:https?|mailto):", t):
                        continue
                    target, _, frag = t.partition("#")
                    if target.startswith("/"):
                        bad(n, "link to an absolute path '%s'" % t)
                        continue
                    dest = os.path.normpath(os.path.join(here, target)) if target else path
                    if not inside(root, dest):
                        bad(n, "link '%s' leaves the repository" % t)
                    elif not os.path.exists(dest):
                        bad(n, "link '%s': no such file" % t)
                    elif frag and dest.endswith(".md") and frag not in anchors(dest):
                        bad(n, "link '%s': no heading with anchor '#%s'" % (t, frag))
        for m in MD_NAME.finditer(rest):
            name = m.group(1)
            cands = [os.path.join(here, name), os.path.join(root, name), os.path.join(root, "docs", name)]
            if not any(inside(root, c) and os.path.isfile(c) for c in cands):
                bad(n, "'%s' names no file of the repository" % name)
        for m in top_path.finditer(rest):
            p = m.group(1)
            nxt = rest[m.end():m.end() + 1]
            if nxt in ("*", "{", "<", "%", "$") or "..." in p or PLACEHOLDER & {c.split(".")[0] for c in p.split("/")}:
                continue
            p = p.rstrip(".,:;")
            base, dot, other = p.partition("/.")  # "x.h/.c": x.h and x.c
            for q in ([base, base.rsplit(".", 1)[0] + "." + other] if dot else [p]):
                if not os.path.exists(os.path.join(root, q)):
                    bad(n, "'%s' names no file or folder of the repository" % q)


def check(root):
    problems = []
    files = repo_files(root)
    top_path = top_path_rx(root)
    for rel in files:
        check_file(root, rel, problems, top_path)
    return files, problems


def selftest():
    # The planted tree is written with "|" for "/" and "~" for ".", so that this file itself stays clean.
    def dec(x):
        return x.replace("|", "/").replace("~", ".")

    planted = {
        "a~md": ("[ok](docs|b~md) [ok](docs|b~md#a-heading) [web](https:||example~org|x)\n"
                 "[missing](docs|none~md)\n"),
        "docs|b~md": ("# A heading\n[up](~~|a~md) [bad anchor](#no-such)\n[out](~~|~~|elsewhere~md)\n[abs](|etc|x)\n"
                      "src|x~c comes a line before a link:\n[late](missing~md)\n[ref]: gone~md\n"
                      "<img src=\"img|none~svg\">\n"),
        "src|x~c": ("|* see docs|b~md and b~md (in docs|); src|x~c exists; src|y~c does not *|\n"
                    "|* spec in ~~|shared|spec|z~md *|\n|* old: spec|case~md *|\n"
                    "|* path |work|x|y *|\n|* glob src|*~c, fmt tests|%s, placeholder src|NAME~c are skipped *|\n"
                    "|* src|x~h|~c: two files *|\n"),
    }
    expect = ["a~md:2: link 'docs|none~md'", "docs|b~md:2: link '#no-such'", "docs|b~md:3: link '~~|~~|elsewhere~md'",
              "docs|b~md:4: link to an absolute path", "src|x~c:1: 'src|y~c'", "src|x~c:2: '~~|shared'",
              "src|x~c:2: 'shared|spec'", "src|x~c:3: 'spec|case~md'", "src|x~c:4: '|work|x'", "src|x~c:6: 'src|x~h'",
              "docs|b~md:6: link 'missing~md'", "docs|b~md:7: link 'gone~md'", "docs|b~md:8: link 'img|none~svg'"]
    expect = [dec(e) for e in expect]
    with tempfile.TemporaryDirectory() as d:
        root = os.path.join(d, "repo")
        for rel, text in planted.items():
            path = os.path.join(root, dec(rel))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(dec(text))
        _, problems = check(root)
    fails = 0
    for e in expect:
        if not any(p.startswith(e) for p in problems):
            print("selftest FAIL: no problem reported for %s" % e)
            fails += 1
    for p in problems:
        if not any(p.startswith(e) for e in expect):
            print("selftest FAIL: unexpected problem %s" % p)
            fails += 1
    print("check_links selftest: %d planted defects, %d problems reported, %s"
          % (len(expect), len(problems), "ok" if not fails else "FAILED"))
    return 1 if fails else 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--selftest":
        return selftest()
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    files, problems = check(argv[1])
    for p in problems:
        print(p)
    print("check_links: %d files, %d problems" % (len(files), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
