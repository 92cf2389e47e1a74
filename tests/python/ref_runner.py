"""The numpy reference as an implementation under test, by command (docs/case-format.md "Implementation under test, by
command"): reads CASE_DIR, writes its outputs there, exit 0; exit 77 for a case it does not support.

usage: ref_runner.py [--fp64] CASE_DIR
  default: the operator's dtypes (attention_out in the output dtype, rounded as spec D3: the fp64 value is rounded to
           fp32, then fp16/bf16 half away from zero, saturating; softmax max/sum fp32; gradients in the input dtype,
           rounded the same way; dsink fp32).
  --fp64:  every output float64, without rounding (the way the golden engine writes them).
e.g. flashref suite --impl exec:"$FLASHREF_PYTHON tests/python/ref_runner.py"
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_attention as ra  # noqa: E402

SKIP = 77


def bf16_half_away(x):
    """float64 -> fp32 (nearest even) -> bf16 bit patterns, ties away from zero, saturating (NaN stays NaN)."""
    f = np.asarray(x, dtype=np.float64).astype(np.float32)
    bits = f.view(np.uint32)
    sign = bits & np.uint32(0x80000000)
    mag = bits & np.uint32(0x7FFFFFFF)
    rounded = ((mag + np.uint32(0x8000)) >> np.uint32(16)).astype(np.uint32)  # adding half an ulp: ties go away
    rounded = np.where(rounded >= 0x7F80, 0x7F7F, rounded)                    # finite overflow and Inf -> max
    rounded = np.where(mag > 0x7F800000, 0x7FC0, rounded)                     # NaN
    return ((sign >> np.uint32(16)) | rounded).astype(np.uint16)


# Alike examples/python_runner/run_case.py:encode: kept apart because this belongs to the tests' independent reference
# runner and that one to an example that must run standalone.
def f16_half_away(x):
    """float64 -> fp32 (nearest even) -> fp16, ties away from zero, saturating to +-65504 (NaN stays NaN)."""
    f = np.asarray(x, dtype=np.float64).astype(np.float32).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        y = f.astype(np.float16)                          # nearest even
        away = np.nextafter(y, np.copysign(np.float16(np.inf), y).astype(np.float16))
        yd, ad = y.astype(np.float64), away.astype(np.float64)
        tie = np.isfinite(ad) & (np.abs(f - yd) == np.abs(ad - f)) & (np.abs(yd) < np.abs(f))
        out = np.where(tie, away, y)
        big = np.isinf(out.astype(np.float64)) & ~np.isnan(f)
        out = np.where(big, np.copysign(np.float16(65504.0), f).astype(np.float16), out)
    return out.astype(np.float16)


def encode_output(values, dtype):
    if dtype == "fp64":
        return np.asarray(values, dtype=np.float64)
    if dtype == "fp32":
        return np.asarray(values, dtype=np.float64).astype(np.float32)
    if dtype == "fp16":
        return f16_half_away(values)
    if dtype == "bf16":
        return bf16_half_away(values)
    raise ValueError(dtype)


def main(argv):
    fp64 = "--fp64" in argv[1:]
    dirs = [a for a in argv[1:] if a != "--fp64"]
    if len(dirs) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    d = dirs[0]
    with open(os.path.join(d, "case.json")) as f:
        case = json.load(f)
    inputs = {k: np.load(os.path.join(d, fn), allow_pickle=False) for k, fn in case["inputs"].items()}
    dtype, params = case["dtype"], case["params"]
    fp8 = dtype in ra.FP8_TYPES
    out_dtype = params.get("out_dtype") or ("fp16" if fp8 else dtype)
    if case["op"] == "fwd":
        res = ra.forward(params, inputs, dtype)
        kinds = {"attention_out": out_dtype, "softmax_max": "fp32", "softmax_sum": "fp32"}
    else:
        if fp8:
            print("ref_runner: fp8 backward is not supported", file=sys.stderr)
            return SKIP
        res = ra.backward(params, inputs, dtype)
        kinds = {k: ("fp32" if k == "dsink" else dtype) for k in res}
    for name, values in res.items():
        np.save(os.path.join(d, name + ".npy"), encode_output(values, "fp64" if fp64 else kinds[name]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
