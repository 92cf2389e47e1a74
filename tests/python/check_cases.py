"""Check the outputs written into case directories (docs/case-format.md) against the independent numpy reference.

usage: check_cases.py [--tol 1e-10] [--quiet] PATH...
  PATH is a case directory (holding case.json) or a directory searched recursively for them.

For every case: loads case.json and the inputs, computes the reference (ref_attention.forward / backward) and compares
every output the case must have (forward: attention_out, softmax_max, softmax_sum; backward: dq, dk, dv, plus dq_rope /
dk_rope with rope and dsink with a sink). Per output:
  - shapes must match; NaN/Inf and the D1 sentinels +-FLT_MAX must sit at the same positions with the same values;
  - every other element: |a - r| <= tol * (|r| + 1e-3 * max|r|)   (tol default 1e-10 for fp64 files; outputs stored in
    a narrower dtype get that dtype's rounding as tolerance instead, e.g. 2^-8 relative for bf16).
Prints one table row per output and exits 1 on any mismatch or missing output, 2 on usage errors / no cases found.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_attention as ra  # noqa: E402

FWD_OUTPUTS = ("attention_out", "softmax_max", "softmax_sum")
BWD_OUTPUTS = ("dq", "dk", "dv")


def find_cases(paths):
    found = []
    for p in paths:
        if os.path.isfile(os.path.join(p, "case.json")):
            found.append(p)
            continue
        for root, dirs, files in os.walk(p):
            dirs.sort()
            if "case.json" in files:
                found.append(root)
    return found


def load_case(d):
    with open(os.path.join(d, "case.json")) as f:
        case = json.load(f)
    if case.get("format") != "flashref-case/1":
        raise ValueError("%s: format %r" % (d, case.get("format")))
    inputs = {name: np.load(os.path.join(d, fn), allow_pickle=False) for name, fn in case["inputs"].items()}
    return case, inputs


def output_tolerance(arr, case, name, tol):
    """tol for fp64 files; otherwise the rounding of the stored format (relative, with a small-value floor)."""
    if arr.dtype == np.float64:
        return tol
    if arr.dtype == np.float32:
        return 2.0 ** -20
    if arr.dtype == np.float16:
        return 2.0 ** -9
    return 2.0 ** -6  # bf16 (<u2) and 8-bit patterns: loose, informative only


def decode_output(arr, case, name):
    if arr.dtype == np.uint16:
        return ra.decode_bf16(arr)
    if arr.dtype == np.uint8:
        return ra.decode(arr, case["dtype"])
    return arr.astype(np.float64)


def compare(a, r, tol):
    """Returns (ok, max_abs, normwise, why)."""
    if a.shape != r.shape:
        return False, float("nan"), float("nan"), "shape %s, reference %s" % (a.shape, r.shape)
    special_r = ~np.isfinite(r) | (np.abs(r) == ra.FLT_MAX)
    special_a = ~np.isfinite(a) | (np.abs(a) == ra.FLT_MAX)
    same = (a == r) | (np.isnan(a) & np.isnan(r))
    bad_special = (special_r | special_a) & ~same
    if bad_special.any():
        idx = tuple(int(x) for x in np.argwhere(bad_special)[0])
        return False, float("inf"), float("inf"), "special value mismatch at %s: %r vs reference %r" % (
            idx, a[idx], r[idx])
    reg = ~special_r
    if not reg.any():
        return True, 0.0, 0.0, ""
    av, rv = a[reg], r[reg]
    diff = np.abs(av - rv)
    rmax = float(np.max(np.abs(rv)))
    bound = tol * (np.abs(rv) + 1e-3 * rmax)
    max_abs = float(np.max(diff))
    normwise = max_abs / rmax if rmax > 0 else max_abs
    over = diff > bound
    if over.any():
        k = int(np.argmax(diff - bound))
        return False, max_abs, normwise, "element %d: %r vs reference %r" % (k, float(av[k]), float(rv[k]))
    return True, max_abs, normwise, ""


def check_case(d, tol, quiet):
    rows = []
    try:
        case, inputs = load_case(d)
        params, dtype, op = case["params"], case["dtype"], case["op"]
        if op == "fwd":
            ref = ra.forward(params, inputs, dtype)
            names = list(FWD_OUTPUTS)
        else:
            ref = ra.backward(params, inputs, dtype)
            names = list(BWD_OUTPUTS) + [n for n in ("dq_rope", "dk_rope", "dsink") if n in ref]
    except Exception as e:  # a case the reference cannot read is a failure, never a skip
        return [(os.path.basename(d), "?", "?", "-", False, float("nan"), float("nan"), "reference: %r" % e)]
    for n in names:
        path = os.path.join(d, n + ".npy")
        if not os.path.exists(path):
            rows.append((os.path.basename(d), op, dtype, n, False, float("nan"), float("nan"), "missing " + n + ".npy"))
            continue
        raw = np.load(path, allow_pickle=False)
        a = decode_output(raw, case, n)
        ok, mx, nw, why = compare(a, ref[n], output_tolerance(raw, case, n, tol))
        rows.append((os.path.basename(d), op, dtype, n, ok, mx, nw, why))
    return rows


def main(argv):
    tol = 1e-10
    quiet = False
    paths = []
    it = iter(argv[1:])
    for a in it:
        if a == "--tol":
            tol = float(next(it))
        elif a == "--quiet":
            quiet = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            paths.append(a)
    cases = find_cases(paths)
    if not cases:
        print("check_cases: no case directories under %s" % " ".join(paths), file=sys.stderr)
        return 2
    print("%-34s %-3s %-6s %-13s %-10s %-10s %s" % ("case", "op", "dtype", "output", "max_abs", "rel(norm)", "verdict"))
    bad = 0
    total = 0
    for d in cases:
        for (name, op, dt, out, ok, mx, nw, why) in check_case(d, tol, quiet):
            total += 1
            bad += 0 if ok else 1
            if ok and quiet:
                continue
            print("%-34s %-3s %-6s %-13s %-10.3g %-10.3g %s" % (name, op, dt, out, mx, nw,
                                                               "ok" if ok else "MISMATCH " + why))
    print("check_cases: %d case(s), %d output(s) compared, %d mismatch(es), tol %g" % (len(cases), total, bad, tol))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
