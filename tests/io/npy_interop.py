"""numpy side of the .npy interop test (tests/io/npy_numpy_interop.c).

usage: npy_interop.py check DIR   verify the files flashref wrote into DIR
       npy_interop.py write DIR   write files for flashref to read (patterns documented in the C test)
"""
import os
import sys

import numpy as np


def pattern(kind, n):
    i = np.arange(n, dtype=np.int64)
    if kind in ("f8", "f4", "f2"):
        return ((i % 17) - 8 + 0.5).astype("<" + kind)
    if kind == "i4":
        return (i * 7 - 3).astype("<i4")
    if kind == "i8":
        return (i * 1000003 - 5).astype("<i8")
    if kind == "u1":
        return ((i * 13) % 256).astype("|u1")
    if kind == "b1":
        return (i % 3 == 0)
    if kind == "u2":  # bf16 bit patterns of the float pattern
        return (((i % 17) - 8 + 0.5).astype("<f4").view("<u4") >> 16).astype("<u2")
    raise ValueError(kind)


KINDS = ["f8", "f4", "f2", "i4", "i8", "u1", "b1", "u2"]
SHAPE = (2, 3, 5)


def check(d):
    bad = 0
    for v in (1, 2):
        for k in KINDS:
            p = os.path.join(d, "c_%s_v%d.npy" % (k, v))
            with open(p, "rb") as f:
                ver = np.lib.format.read_magic(f)
            a = np.load(p)
            want = pattern(k, 30).reshape(SHAPE)
            if ver != (v, 0) or a.dtype != want.dtype or a.shape != SHAPE or not np.array_equal(a, want):
                print("MISMATCH", p, ver, a.dtype, a.shape)
                bad += 1
    t = np.load(os.path.join(d, "c_transposed.npy"))
    if not np.array_equal(t, np.arange(12, dtype="<f4").reshape(3, 4).T):
        print("MISMATCH transposed", t)
        bad += 1
    s = np.load(os.path.join(d, "c_scalar.npy"))
    if s.shape != () or s != 2.5:
        print("MISMATCH scalar", s)
        bad += 1
    return bad


def write(d):
    for k in KINDS:
        a = pattern(k, 30).reshape(SHAPE)
        np.save(os.path.join(d, "np_%s_v1.npy" % k), a)
        with open(os.path.join(d, "np_%s_v2.npy" % k), "wb") as f:
            np.lib.format.write_array(f, a, version=(2, 0))
    np.save(os.path.join(d, "np_fortran.npy"), np.asfortranarray(pattern("f4", 6).reshape(2, 3)))
    np.save(os.path.join(d, "np_bigendian.npy"), pattern("f4", 6).astype(">f4"))
    np.save(os.path.join(d, "np_scalar.npy"), np.float64(2.5))
    np.save(os.path.join(d, "np_empty.npy"), np.zeros((0, 3), dtype="<f4"))
    np.save(os.path.join(d, "np_int8.npy"), np.arange(-3, 3, dtype="|i1"))
    return 0


if __name__ == "__main__":
    sys.exit(check(sys.argv[2]) if sys.argv[1] == "check" else write(sys.argv[2]))
