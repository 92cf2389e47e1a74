"""The diagnosis against independently written broken implementations (broken_runner.py): each defect runs through
`flashref suite --impl exec:...` on a few cases of the default set that exercise it; the confusion table (defect ->
diagnosis named) is printed as Markdown. Fails when a defect is not caught (no FAIL/WARN), when the suite names a
cause other than the defect's own (a wrong name is worse than none: "unknown" is allowed), or when the correct
control is flagged.

usage: run_defects.py FLASHREF [--only NAME] [--markdown FILE]
"""

import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import broken_runner as br  # noqa: E402

# defect -> the cases it runs on (a --filter substring of the default set): a few that exercise it.
FILTERS = {
    "none": ["m4_band", "gr_fp16_dropout"],
    "band-next": ["band"],
    "causal-top-left": ["m3_s1"],
    "scale-twice": ["fwd_bsnd"],
    "key-tile-drop-64": ["bd_tail_1"],
    "no-rescale-64": ["eq_fp32_bnsd", "pr_dominant_late_bf16"],
    "fp16-acc-64": ["eq_fp32_bnsd"],
    "pse-order": ["pse1_bn1s"],
    "gqa-mod": ["fwd_bnsd_fp32_gqa", "gr_bf16_gqa"],
    "dq-no-scale": ["bwd_bsh", "gr_fp16_dropout"],
    "dpsum-from-do": ["bwd_bsh", "gr_fp16_dropout"],
    "band-pre": ["band"],
    "last-query-row": ["fwd_bsnd"],
    "no-rescale-128-both": ["eq_fp32_bnsd", "pr_dominant_late_bf16"],
    "dropout-no-scale": ["drop_bnsd"],
    "dk-no-scale": ["bwd_bsh", "gr_fp32_tail"],
    "bwd-scale-missing": ["bwd_bsh", "gr_fp32_tail"],
    "dv-no-dropout": ["bwd_tnd_fp16_drop", "gr_fp16_dropout"],
    "p-fp16": ["gw_fp32_s256"],
}


def run_one(flashref, py, defect, filters, tmp):
    """Every case of the default set matching one of `filters`, judged with this defect: (cases, primary, seconds)."""
    cases, flagged_diags, t0 = [], {}, time.time()
    for k, filt in enumerate(filters):
        out = os.path.join(tmp, "%s.%d.json" % (defect, k))
        cmd = [flashref, "suite", "--set", "default", "--filter", filt, "--json", out,
               "--impl", "exec:%s %s --defect %s" % (py, os.path.join(HERE, "broken_runner.py"), defect)]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if not os.path.exists(out):
            print(p.stdout[-3000:])
            raise SystemExit("FAIL: %s: the suite wrote no JSON (exit %d)" % (defect, p.returncode))
        with open(out) as f:
            res = json.load(f)
        cases += res["cases"]
        if res["primary_diagnosis"] not in ("none", None):
            flagged_diags[res["primary_diagnosis"]] = flagged_diags.get(res["primary_diagnosis"], 0) + 1
    return cases, flagged_diags, time.time() - t0


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    flashref = argv[1]
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    md = argv[argv.index("--markdown") + 1] if "--markdown" in argv else None
    py = sys.executable
    rows, bad = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for defect, (op, want, kind) in br.DEFECTS.items():
            if only and only not in defect:
                continue
            cases, primaries, secs = run_one(flashref, py, defect, FILTERS[defect], tmp)
            flagged = [c for c in cases if c["verdict"] in ("FAIL", "WARN")]
            judged = [c for c in cases if c["verdict"] != "SKIP"]
            # The name: the likeliest cause of every run (one per filter); a run naming a cause, wrong or right, wins
            # over one that says unknown; two different causes are reported as the wrong one.
            causes = sorted(d for d in primaries if d != "unknown")
            wrong = [d for d in causes if d != want]
            named = wrong[0] if wrong else causes[0] if causes else ("unknown" if flagged else "none")
            right = sum(c["diagnosis"] == want for c in flagged)
            unknown = 0 if want == "unknown" else sum(c["diagnosis"] == "unknown" for c in flagged)
            if want == "none":
                verdict = "ok" if not flagged and judged else "FLAGGED"
            elif not flagged:
                verdict = "MISSED"
            elif named == want:
                verdict = "right"
            elif named == "unknown":
                verdict = "unknown"
            else:
                verdict = "WRONG"
            if verdict in ("FLAGGED", "MISSED", "WRONG"):
                bad += 1
            others = sorted({c["diagnosis"] for c in flagged} - {want, "unknown"})
            rows.append((defect, op, kind, " ".join(FILTERS[defect]), len(judged), len(flagged), want, named, verdict,
                         "%d/%d/%d" % (right, unknown, len(flagged) - right - unknown), ", ".join(others), secs))
            print("%-20s %-4s %-8s %2d/%2d flagged  want %-13s named %-13s %-8s cases right/unknown/other %s %s"
                  " (%.1f s)" % (defect, op, kind, len(flagged), len(judged), want, named, verdict, rows[-1][9],
                                 others, secs), flush=True)
            if verdict in ("FLAGGED", "MISSED", "WRONG"):
                for c in cases:
                    print("    %s %s %s: %s" % (c["name"], c["verdict"], c["diagnosis"], c["why"]))
    lines = ["| defect | op | set | cases (--filter) | judged | caught | expected | named | result | "
             "per case right/unknown/other |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| %s | %s | %s | `%s` | %d | %d | %s | %s | %s | %s%s |" % (
            r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], (" (" + r[10] + ")") if r[10] else ""))
    table = "\n".join(lines)
    print("\n" + table)
    if md:
        with open(md, "w") as f:
            f.write(table + "\n")
    named = [r for r in rows if r[6] != "none"]
    ok = sum(r[8] == "right" for r in named)
    print("\n%d defects: %d named right, %d unknown, %d wrong or missed; control %s" % (
        len(named), ok, sum(r[8] == "unknown" for r in named), sum(r[8] in ("WRONG", "MISSED") for r in named),
        "ok" if all(r[8] == "ok" for r in rows if r[6] == "none") else "FLAGGED"))
    print("PASS" if bad == 0 else "FAIL: %d row(s) wrong" % bad)
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
