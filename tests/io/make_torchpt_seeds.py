"""Writes the torch.save files of fuzz/corpus/torchpt/ (the fuzzer's seeds, and the files tests/io/test_io_torchpt.c
reads back): every dtype an msprobe dump holds, 0-d and empty tensors, a view with a storage offset, a view torch
saves non-contiguous (refused), a pre-1.6 file (refused), and an NPU-style file (location "npu:0", the metadata dict
torch_npu adds). Each name says what the reader must find: DTYPE_SHAPE.pt, or refuse_WHY.pt.

    python tests/io/make_torchpt_seeds.py fuzz/corpus/torchpt
"""

import io
import pickle
import sys
import zipfile
from pathlib import Path

import torch

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
g = torch.Generator().manual_seed(20260101)


def save(name, t, **kw):
    torch.save(t, out / name, **kw)


save("fp32_2x3.pt", torch.randn(2, 3, generator=g))
save("bf16_4.pt", torch.randn(4, generator=g).to(torch.bfloat16))
save("fp16_0x5.pt", torch.empty(0, 5, dtype=torch.float16))
save("fp64_2.pt", torch.randn(2, generator=g, dtype=torch.float64))
save("bool_3x3.pt", torch.rand(3, 3, generator=g) < 0.5)
save("uint8_7.pt", torch.arange(7, dtype=torch.uint8))
save("int32_2x2.pt", torch.arange(4, dtype=torch.int32).reshape(2, 2))
save("int64_scalar.pt", torch.tensor(12345678901, dtype=torch.int64))
save("e4m3fn_3.pt", torch.tensor([0.5, -2.0, 448.0]).to(torch.float8_e4m3fn))
save("fp32_view4.pt", torch.arange(10, dtype=torch.float32)[3:7])            # offset 3 into a storage of 10
save("refuse_noncontiguous.pt", torch.arange(6, dtype=torch.float32).reshape(2, 3).t())
save("refuse_legacy.pt", torch.ones(2), _use_new_zipfile_serialization=False)

# An NPU tensor as torch_npu saves it: the storage's location is the device, and _rebuild_tensor_v2 gets the 7th
# (metadata) argument torch_npu fills with {name: bool} flags, all false for a tensor in ND format.
buf = io.BytesIO()
torch.save(torch.arange(6, dtype=torch.float32).reshape(2, 3), buf)
with zipfile.ZipFile(buf) as z:
    arch = z.namelist()[0].split("/")[0]
    pkl = z.read(arch + "/data.pkl")
    records = {n: z.read(n) for n in z.namelist() if not n.endswith("/data.pkl")}
pkl = pkl.replace(b"X\x03\x00\x00\x00cpu", b"X\x05\x00\x00\x00npu:0")
i = pkl.rindex(b")R")                               # OrderedDict() -> then the metadata dict before the closing tuple
pkl = pkl[: i + 2] + b"}(X\x0e\x00\x00\x00npu_format_nz\x00\x89u" + pkl[i + 2:]
pkl = pkl.replace(b"npu_format_nz\x00", b"npu_format_nz_")
with zipfile.ZipFile(out / "fp32_2x3_npu.pt", "w", zipfile.ZIP_STORED) as z:
    z.writestr(arch + "/data.pkl", pkl)
    for n, b in records.items():
        z.writestr(n, b)
t = torch.load(out / "fp32_2x3_npu.pt", map_location="cpu", weights_only=False)   # torch reads it as it is
assert t.tolist() == [[0, 1, 2], [3, 4, 5]], t

# The same tensor in a zip64 archive (every size and offset through the zip64 extra field and end records), as
# torch's writer makes archives past 4 GiB.


def zip64(records):
    import struct
    import zlib
    body, cd = b"", b""
    for name, data in records:
        n = name.encode()
        crc = zlib.crc32(data)
        off = len(body)
        body += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, 0, 0, 0, crc, len(data), len(data), len(n), 0) + n + data
        extra = struct.pack("<HHQQQ", 1, 24, len(data), len(data), off)
        cd += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, 0, 0, 0, crc, 0xFFFFFFFF, 0xFFFFFFFF, len(n),
                          len(extra), 0, 0, 0, 0, 0xFFFFFFFF) + n + extra
    z64 = len(body) + len(cd)
    end = struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, len(records), len(records), len(cd), len(body))
    end += struct.pack("<IIQI", 0x07064B50, 0, z64, 1)
    end += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return body + cd + end


with zipfile.ZipFile(out / "fp32_2x3.pt") as z:
    recs = [(n, z.read(n)) for n in z.namelist()]
(out / "fp32_2x3_zip64.pt").write_bytes(zip64(recs))
assert torch.equal(torch.load(out / "fp32_2x3_zip64.pt"), torch.load(out / "fp32_2x3.pt"))
