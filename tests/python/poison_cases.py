"""Poison the inputs of case directories where they must not matter (verification-method 4: "NaN/Inf placed in masked or
padded K/V: the output must be unaffected", D2: masking is exclusion).

usage: poison_cases.py CASE_DIR...
For each fp32/fp16/bf16 case: key/value rows that no query row of their kv group uses (masked everywhere, or never
listed by top-k) get K = NaN and V = +Inf / -Inf; query rows where nothing takes part get Q = NaN. The inputs are
rewritten in place (outputs of an earlier run are deleted). A case where nothing can be poisoned is removed, so that
what remains is a set of genuinely poisoned cases. Checks that the numpy reference itself is unaffected (the same
outputs as before poisoning) and exits 1 otherwise; prints how many rows it poisoned.
"""

import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_attention as ra  # noqa: E402

OUTPUT_FILES = ("attention_out", "softmax_max", "softmax_sum", "dq", "dk", "dv", "dq_rope", "dk_rope", "dsink")


def encode_like(values, stored):
    """float64 values (bf16/fp16/fp32-representable, or NaN/Inf) back to the stored array's format."""
    if stored.dtype == np.uint16:
        return (values.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    return values.astype(stored.dtype)


def poison(d):
    with open(os.path.join(d, "case.json")) as f:
        case = json.load(f)
    dtype, params, files = case["dtype"], case["params"], case["inputs"]
    if dtype not in ("fp32", "fp16", "bf16"):
        return None
    inp = {k: np.load(os.path.join(d, fn)) for k, fn in files.items()}
    run = ra.forward if case["op"] == "fwd" else ra.backward
    before = run(params, inp, dtype)
    dims = ra._dims(params, inp)
    dec = {k: ra.decode_auto(inp[k], dtype) for k in ("query", "key", "value")}
    nq = nk = 0
    for b in range(dims.B):
        bt = ra._Batch(params, dtype, inp, dims, b)
        part = bt.w > 0  # [N1, S1_b, S2_b]
        q = ra.batch_view(dec["query"], dims, b, dims.N1, False)
        k = ra.batch_view(dec["key"], dims, b, dims.N2, True)
        v = ra.batch_view(dec["value"], dims, b, dims.N2, True)
        for h in range(dims.N1):
            for i in np.nonzero(~part[h].any(axis=1))[0]:
                q[h, i, :] = np.nan
                nq += 1
        used = part.reshape(dims.N2, dims.G, part.shape[1], part.shape[2]).any(axis=(1, 2))  # [N2, S2_b]
        for n in range(dims.N2):
            for j in np.nonzero(~used[n])[0]:
                k[n, j, :] = np.nan
                v[n, j, :] = np.inf if (j + n) % 2 == 0 else -np.inf
                nk += 1
    if nq + nk == 0:
        return 0, 0
    for name in ("query", "key", "value"):
        inp[name] = encode_like(dec[name], inp[name])
        np.save(os.path.join(d, files[name]), inp[name])
    after = run(params, inp, dtype)
    for name, ref in before.items():
        same = np.array_equal(ref, after[name]) or np.allclose(ref, after[name], rtol=1e-12, atol=0)
        if not same:
            raise AssertionError("%s: the numpy reference itself changes with poisoned %s" % (d, name))
    for o in OUTPUT_FILES:
        p = os.path.join(d, o + ".npy")
        if os.path.exists(p) and o + ".npy" not in files.values():
            os.remove(p)
    return nq, nk


def main(argv):
    kept = 0
    for d in argv[1:]:
        d = os.path.normpath(d)
        r = poison(d)
        if not r or r == (0, 0):
            shutil.rmtree(d)
            continue
        kept += 1
        print("poisoned %-34s %3d query rows (NaN), %3d key/value rows (NaN / Inf)" % (os.path.basename(d), r[0], r[1]))
    print("poison_cases: %d case(s) poisoned" % kept)
    return 0 if kept else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
