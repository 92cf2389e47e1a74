"""An exec runner (case-format.md) doing what test_verify's callback does: read the case directory with
flashref.Case.from_dir, compute it with `impl` (default: flashref's fast engine; "sdpa": flashref.torch.sdpa), write
the outputs beside the inputs. Exit 77 = SKIP.

usage: exec_fast_runner.py [fast|sdpa] CASE_DIR"""

import os
import sys

import numpy as np

import flashref

FWD = ("attention_out", "softmax_max", "softmax_sum")
BWD = ("dq", "dk", "dv", "dq_rope", "dk_rope", "dsink")


def main(argv):
    impl, d = (argv[1], argv[2]) if len(argv) == 3 else ("fast", argv[1])
    case = flashref.Case.from_dir(d, tensors="torch" if impl == "sdpa" else "numpy")
    try:
        if impl == "sdpa":
            from flashref.torch import sdpa
            outs = sdpa(case)
        else:
            outs = case.attention()
    except flashref.Unsupported as e:
        print("not supported: %s" % e, file=sys.stderr)
        return 77
    names = FWD if case.op == "fwd" else BWD
    for name, t in zip(names, outs):
        if t is None:
            continue
        a = flashref._arrays.to_numpy(t)
        if a.dtype.name in ("bfloat16",):
            a = a.view(np.uint16)
        elif a.dtype.name.startswith("float8"):
            a = a.view(np.uint8)
        np.save(os.path.join(d, name + ".npy"), np.ascontiguousarray(a))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
