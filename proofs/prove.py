#!/usr/bin/env python3
"""Runs every proof of proofs/ and prints one table: property, tool, goals proved / total, time.
Exit status 1 when any goal is unproved, any negative control passes, or a part is missing.

Usage: prove.py BUILD_DIR   (called by proofs/Makefile; WHY3CONFIG is set there)
Env: FR_PROVE_JOBS (WP/prover parallelism), FR_WP_TIMEOUT (seconds per goal), FR_CONVERT_ARGS (extra arguments of
exhaustive_convert, e.g. "--stride 64" for a quick development run; the default checks all 2^32 inputs)."""
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "build")
OUT = os.path.join(BUILD, "proofs")
JOBS = os.environ.get("FR_PROVE_JOBS", str(os.cpu_count() or 2))
TIMEOUT = os.environ.get("FR_WP_TIMEOUT", "20")
os.makedirs(OUT, exist_ok=True)

rows = []  # (property, tool, proved, total, seconds, ok, note)


def run(name, cmd, timeout=600):
    """Runs cmd, saves its output in OUT/name.log, returns (rc, text, seconds)."""
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
        rc, text = p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        rc, text = 124, (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        text += "\n[prove.py] TIMEOUT after %d s\n" % timeout
    except FileNotFoundError as e:
        rc, text = 127, str(e)
    dt = time.time() - t0
    with open(os.path.join(OUT, name + ".log"), "w") as f:
        f.write(" ".join(cmd) + "\n\n" + text)
    return rc, text, dt


def wp(name, src, groups):
    """One WP run over src (-wp-model Typed+real, smoke tests, report-classify), then one table row per group:
    (property, [goal-name prefixes])."""
    cmd = ["frama-c", "-wp", "-wp-model", "Typed+real", "-wp-prover", "z3,cvc4", "-wp-timeout", TIMEOUT,
           "-wp-par", JOBS, "-wp-cache", "none", "-wp-smoke-tests", "-wp-smoke-timeout", "1", "-wp-status-all", src,
           "-then", "-report-classify", "-report-unclassified-unknown", "ERROR"]
    rc, text, dt = run(name, cmd)
    goals = {}
    for line in text.splitlines():
        m = re.match(r"\[wp\] \[([^\]]+)\] (?:Goal|Smoke-test) (typed_real_\S+)(.*)", line)
        if not m:
            continue
        status, goal, rest = m.group(1), m.group(2), m.group(3)
        ok = status == "Passed" or (status not in ("Failed", "Unknown") and "Valid" in rest)
        goals[goal] = ok
    m = re.search(r"Proved goals:\s+(\d+)\s*/\s*(\d+)", text)
    wp_total = int(m.group(2)) if m else -1
    classify_ok = rc == 0 and "Classified errors found" not in text and "User Error" not in text
    seen = set()
    first = True
    for prop, prefixes in groups:
        mine = [g for g in goals if any(g.startswith("typed_real_" + p) for p in prefixes) and g not in seen]
        seen.update(mine)
        proved = sum(goals[g] for g in mine)
        rows.append((prop, "Frama-C WP (z3, cvc4)", proved, len(mine), dt if first else None,
                     proved == len(mine) and len(mine) > 0 and classify_ok, ""))
        first = False
    rest = [g for g in goals if g not in seen]
    if rest:  # every goal of the file lands in some row
        proved = sum(goals[g] for g in rest)
        rows.append(("  other goals of " + os.path.basename(src), "Frama-C WP (z3, cvc4)", proved, len(rest), None,
                     proved == len(rest) and classify_ok, ""))
    if len(goals) != wp_total or not classify_ok:
        rows.append(("  " + os.path.basename(src) + ": WP summary / report-classify", "Frama-C report",
                     len([g for g in goals if goals[g]]), wp_total, None, False,
                     "parsed %d goals, WP says %d, report-classify %s" % (len(goals), wp_total,
                                                                          "ok" if classify_ok else "ERROR")))


EVA_COMMON = ["-eva", "-warn-special-float", "nan", "-eva-slevel", "100000", "-eva-domains", "equality",
              "-eva-no-show-progress"]


def eva_cmd(sfx, include_first=None):
    inline = ",".join("fr_osm_%s_%s" % (sfx, f) for f in ("init", "update", "add_sum", "merge_coef", "finalize",
                                                             "bwd_row")) + ",run_tiles,finish,any_score"
    inc = ["-I" + include_first] if include_first else []
    cpp = " ".join(inc + ["-I" + os.path.join(ROOT, "src"), "-I" + os.path.join(ROOT, "include"),
                          "-DFR_H_" + sfx.upper()])
    return ["frama-c", "-inline-calls", inline] + EVA_COMMON + ["-cpp-extra-args=" + cpp,
                                                               os.path.join(HERE, "eva_osm", "harness.c")]


def eva_counts(text):
    alarms = re.search(r"(\d+) alarms? generated", text)
    alarms = int(alarms.group(1)) if alarms else -1
    a = re.search(r"Assertions\s+(\d+) valid\s+(\d+) unknown\s+(\d+) invalid\s+(\d+) total", text)
    valid, total = (int(a.group(1)), int(a.group(4))) if a else (0, -1)
    cov = re.search(r"(\d+) statements reached \(out of (\d+)\)", text)
    full = bool(cov) and cov.group(1) == cov.group(2)
    return alarms, valid, total, full


def eva(sfx):
    rc, text, dt = run("eva_" + sfx, eva_cmd(sfx))
    alarms, valid, total, full = eva_counts(text)
    ok = rc == 0 and alarms == 0 and total > 0 and valid == total and full
    note = "%d alarms, %s" % (alarms, "all statements reached" if full else "NOT all statements reached")
    rows.append(("%s osm.h: no NaN/overflow/div-by-0, D1 on masked rows" % sfx, "Frama-C EVA", valid, total, dt, ok,
                 note))


def negative_control(sfx):
    """osm.h with its -inf guard removed must make EVA raise a NaN alarm."""
    neg = os.path.join(OUT, "neg_" + sfx, "core")
    os.makedirs(neg, exist_ok=True)
    with open(os.path.join(ROOT, "src", "core", "osm.h")) as f:
        src = f.read()
    guard = "*m_use = s->m < -(T)TMAX ? (T)0 : s->m;"
    mutated = src.replace(guard, "*m_use = s->m; /* negative control: -inf guard removed */")
    with open(os.path.join(neg, "osm.h"), "w") as f:
        f.write(mutated)
    rc, text, dt = run("eva_negative_" + sfx, eva_cmd(sfx, os.path.dirname(neg)))
    alarms, valid, total, full = eva_counts(text)
    nan_alarm = re.search(r"NaN (float|double) value", text) is not None
    caught = mutated != src and nan_alarm
    rows.append(("negative control %s: -inf guard removed => NaN alarm expected" % sfx, "Frama-C EVA",
                 1 if caught else 0, 1, dt, caught,
                 ("alarm raised (%d alarms): expected failure" % alarms) if caught else
                 ("guard line not found in osm.h" if mutated == src else "NO ALARM: negative control passed")))


def conversions():
    exe = os.path.join(BUILD, "tests", "exhaustive", "exhaustive_convert")
    if not os.path.exists(exe):
        rows.append(("exhaustive format conversions", "exhaustive_convert", 0, 0, 0.0, False,
                     "missing: %s not built" % exe))
        return
    args = os.environ.get("FR_CONVERT_ARGS", "").split()
    if not any(a == "--threads" for a in args):
        args += ["--threads", JOBS]
    rc, text, dt = run("exhaustive_convert", [exe] + args, timeout=3600)
    lines = [l for l in text.splitlines() if re.match(r"(encode|decode) ", l)]
    good = [l for l in lines if re.search(r"mismatches 0\b", l)]
    summary = [l for l in text.splitlines() if l.startswith("exhaustive_convert: ") and "mismatch" in l]
    stride = re.search(r"stride (\d+)", text)
    note = summary[-1] if summary else "no summary line (rc %d)" % rc
    if stride and stride.group(1) != "1":
        note += " [SAMPLED: stride %s]" % stride.group(1)
    rows.append(("exhaustive format conversions (one goal per variant)", "exhaustive_convert", len(good), len(lines),
                 dt, rc == 0 and len(lines) > 0 and len(good) == len(lines) and bool(summary), note))


def main():
    t0 = time.time()
    wp("wp_ew", os.path.join(HERE, "wp_ew", "ew_lemmas.c"),
       [("ew(x,t)=exp(x-t) axioms follow from textbook exp", ["lemma_"])])
    wp("wp_merge", os.path.join(HERE, "wp_merge", "merge_algebra.c"),
       [("(c) merge commutative (all states a, b)", ["merge_comm_"]),
        ("(c) merge associative (all states a, b, c)", ["merge_assoc_", "rescale_sum_"]),
        ("  merge contract (exp args <= 0)", ["merge_", "exp_"])])
    wp("wp_ind", os.path.join(HERE, "wp_ind", "ind.c"),
       [("  inductive facts on max / sums (lemma functions)", ["ind_", "lemma_", "merge_", "exp_", "tile_"])])
    wp("wp_osm", os.path.join(HERE, "wp_osm", "osm_real.c"),
       [("(a)(b)(d) online softmax: invariant, o/l = softmax.v, exp args <= 0",
         ["tile_", "merge_", "online_", "exp_", "lemma_", "ind_"])])
    wp("wp_lazy", os.path.join(HERE, "wp_lazy", "lazy.c"),
       [("(e) lazy rescale: stale-max invariant, exp args <= t", ["merge_to_", "online_lazy_", "exp_", "lemma_",
                                                                   "merge_", "ind_", "tile_"])])
    wp("wp_bwd", os.path.join(HERE, "wp_bwd", "bwd.c"),
       [("backward P = exp(s-m)/l is the softmax, exp args <= t", ["bwd_p_", "exp_", "lemma_", "ind_", "merge_",
                                                                    "tile_"])])
    eva("f32")
    eva("f64")
    negative_control("f32")
    negative_control("f64")
    conversions()

    w = max(len(r[0]) for r in rows)
    print()
    print("%-*s  %-22s  %9s  %8s  %s" % (w, "property", "tool", "proved", "time", "result"))
    print("-" * (w + 60))
    bad = 0
    for prop, tool, proved, total, dt, ok, note in rows:
        t = "%7.1fs" % dt if dt is not None else "       ''"
        print("%-*s  %-22s  %4d/%-4d  %8s  %s%s" % (w, prop, tool, proved, total, t, "ok" if ok else "FAIL",
                                                    ("  " + note) if note else ""))
        bad += not ok
    print("-" * (w + 60))
    print("make prove: %s in %.1f s (logs in %s)" % ("all proved" if not bad else "%d row(s) FAILED" % bad,
                                                    time.time() - t0, OUT))
    print("Note: WP uses -wp-model Typed+real: it proves the algorithm over the reals, not rounding (see README).")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
