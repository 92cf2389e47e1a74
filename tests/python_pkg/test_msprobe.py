"""`flashref verify --msprobe` and flashref.verify_msprobe (docs/ascend.md, section 3) on dumps written by msprobe's
own dumper (PyPI mindstudio-probe): msprobe_dump_script.py runs under flashref's CPU stand-in for torch_npu, which
msprobe hooks as it hooks torch_npu, and writes a dump of 21 fusion-attention calls (forward and backward, every
layout, sparse modes 0-4, fp32 / fp16 / bf16, GQA, pse, sink, _v2, _v3, dropout with a given mask).

- the dump is judged PASS (the dropout call's backward SKIPs: the NPU regenerates that mask), every call named by its
  dump name in the summary, the JSON and the HTML report;
- the same dump with three outputs perturbed FAILs exactly those three calls, naming them;
- the C dump reader and flashref.npu.bind (the Python mapping) rebuild every call into the same case: parameters,
  inputs bit for bit, the NPU's outputs in flashref's layouts (the two mappings are tested against each other);
- entries msprobe writes when told to (a direct npu_fusion_attention_grad call, MindSpeed's npu_fusion_attention)
  are rebuilt and judged too;
- hostile dumps (missing tensors, lying shapes or dtypes, paths leaving the dump, symbolic links, a FIFO, a pickle
  that would run code, huge declared sizes, broken JSON) are refused with a specific message and exit status 2,
  nothing outside the dump is touched and nothing is executed."""

import copy
import glob
import importlib.util
import json
import os
import pickle
import shutil
import stat
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

import flashref
import flashref.npu as fnpu
from conftest import HERE, torch_or_skip
from flashref._arrays import to_numpy

torch = torch_or_skip()

SCRIPT = HERE / "msprobe_dump_script.py"
# a small dump msprobe's own dumper wrote (tests/data/msprobe/make_dump.py): these tests run without msprobe
COMMITTED = HERE.parent / "data" / "msprobe" / "dump"
LAYOUTS = {"BSH", "SBH", "BNSD", "BSND", "TND"}


def _msprobe_or_skip():
    if importlib.util.find_spec("msprobe") is None:
        marker = Path(sys.executable).resolve().parent.parent / ".panel-missing"
        why = marker.read_text().strip() if marker.exists() else "mindstudio-probe is not installed"
        print("\nWARNING: msprobe is not available (%s): the msprobe dump tests SKIP" % why, file=sys.stderr)
        pytest.skip("msprobe not available: %s" % why)


def _cli():
    p = os.environ.get("FLASHREF_CLI") or flashref.cli_path()
    assert p and os.path.exists(p), "the flashref command is not found (FLASHREF_CLI)"
    return os.path.abspath(p)


def _env():
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(flashref.__file__)))
    return dict(os.environ, PYTHONPATH=os.pathsep.join([pkg] + [p for p in [os.environ.get("PYTHONPATH")] if p]))


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    """The dump root msprobe wrote (dump/step0/<proc or rank>/dump.json below it) and that dump directory."""
    _msprobe_or_skip()
    root = tmp_path_factory.mktemp("msprobe") / "dump"
    p = subprocess.run([sys.executable, "-m", "flashref.npu", "run", str(SCRIPT), str(root)], capture_output=True,
                       text=True, env=_env(), timeout=600, cwd=str(root.parent))
    found = glob.glob(str(root / "step0" / "*" / "dump.json"))
    assert p.returncode == 0 and len(found) == 1, p.stdout[-3000:] + p.stderr[-3000:]
    return root, Path(found[0]).parent


def verify(*args, timeout=300):
    p = subprocess.run([_cli(), "verify"] + [str(a) for a in args], capture_output=True, text=True, timeout=timeout)
    assert p.returncode >= 0, "killed by signal %d:\n%s\n%s" % (-p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    return p


def fa_entries(ddir):
    with open(ddir / "dump.json") as f:
        data = json.load(f)["data"]
    return {k: v for k, v in data.items() if ".npu_fusion_attention" in k}


# ------------------------------------------------------------------------------------------------------------------
# judged


def test_a_dump_of_21_calls_is_judged_pass(dump, tmp_path):
    root, ddir = dump
    entries = fa_entries(ddir)
    fwd = [k for k in entries if k.endswith(".forward")]
    layouts = {e["input_args"][4]["value"] if len(e["input_args"]) > 4 else e["input_kwargs"]["input_layout"]["value"]
               for k, e in entries.items() if k.endswith(".forward")}
    modes = {e["input_kwargs"].get("sparse_mode", {"value": 0})["value"] for k, e in entries.items()
             if k.endswith(".forward")}
    assert len(entries) >= 10 and len(entries) - len(fwd) >= 8, sorted(entries)
    assert layouts == LAYOUTS and modes >= {0, 1, 2, 3, 4}, (layouts, modes)

    js, html = tmp_path / "r.json", tmp_path / "r.html"
    p = verify("--msprobe", root, "--json", js, "--report", html, "-v")
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    res = json.loads(js.read_text())
    names = [c["name"] for c in res["cases"]]
    assert sorted(names) == sorted(entries), names          # every call, by its dump name, in dump.json order
    assert names == [k for k in json.loads((ddir / "dump.json").read_text())["data"] if k in entries]
    skipped = {c["name"]: c["why"] for c in res["cases"] if c["verdict"] == "SKIP"}
    assert list(skipped) == ["NPU.npu_fusion_attention.9.backward"], skipped
    assert "(seed, offset)" in skipped["NPU.npu_fusion_attention.9.backward"]
    assert all(c["verdict"] == "PASS" for c in res["cases"] if c["name"] not in skipped)
    assert res["thresholds"]["standard"] == "ascend-L1"
    page = html.read_text()
    for n in names:
        assert n in p.stdout and n in page
    # the sink call's backward judges dsink too
    sink_bwd = next(c for c in res["cases"] if c["name"] == "NPU.npu_fusion_attention.6.backward")
    assert "dsink" in sink_bwd["outputs"], sink_bwd["outputs"].keys()

    # the same from the dump directory itself, under flashref's own judge
    p = verify("--msprobe", ddir, "--standard", "flashref")
    assert p.returncode == 0 and "standard flashref" in p.stdout, p.stdout[-3000:]


def test_python_api(dump):
    root, _ = dump
    r = flashref.verify_msprobe(str(root))
    assert r.passed and r.overall == "PASS", r.summary()
    assert r["NPU.npu_fusion_attention.0.backward"].verdict == "PASS"
    assert r["NPU.npu_fusion_attention.9.backward"].verdict == "SKIP"
    assert r.data["thresholds"]["standard"] == "ascend-L1"
    r2 = flashref.verify_msprobe(root, standard="flashref", filter="_v2")
    assert [c.name for c in r2] == ["NPU.npu_fusion_attention_v2.0.forward", "NPU.npu_fusion_attention_v2.0.backward"]
    assert r2.data["thresholds"]["standard"] == "flashref" and r2.passed
    r3 = flashref.verify_msprobe(root, case="NPU.npu_fusion_attention.1.forward")
    assert [c.name for c in r3] == ["NPU.npu_fusion_attention.1.forward"]
    with pytest.raises(flashref.FlashrefError, match="no dump.json"):
        flashref.verify_msprobe(str(HERE))
    with pytest.raises(flashref.FlashrefError, match="standard"):
        flashref.verify_msprobe(root, standard="ascend-L9")


def _copy(ddir, dst):
    shutil.copytree(ddir, dst)
    return Path(dst)


def _load(ddir, name):
    return torch.load(ddir / "dump_tensor_data" / name, weights_only=True)


def _save(ddir, name, t):
    torch.save(t, ddir / "dump_tensor_data" / name)


def test_a_perturbed_dump_fails_naming_the_calls(dump, tmp_path):
    _, ddir = dump
    d = _copy(ddir, tmp_path / "perturbed")
    e = fa_entries(d)
    # outputs whose corruption reaches no other call: an inference forward's attention_out, a backward's dq, a
    # forward-only call's softmax_sum
    out = e["NPU.npu_fusion_attention.7.forward"]["output"][0]["data_name"]
    t = _load(d, out)
    t[:, 1] *= 1.01                                       # one head 1 % too large
    _save(d, out, t)
    dq = e["NPU.npu_fusion_attention.3.backward"]["output"][0]["data_name"]
    t = _load(d, dq)
    _save(d, dq, t + 0.02 * t.std() * torch.randn(t.shape, generator=torch.Generator().manual_seed(1)))
    ssum = e["NPU.npu_fusion_attention_v3.0.forward"]["output"][2]["data_name"]
    _save(d, ssum, _load(d, ssum) * 1.001)
    js = tmp_path / "p.json"
    p = verify("--msprobe", d, "--json", js)
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-2000:]
    res = json.loads(js.read_text())
    failed = {c["name"]: c for c in res["cases"] if c["verdict"] == "FAIL"}
    want = {"NPU.npu_fusion_attention.7.forward": "attention_out", "NPU.npu_fusion_attention.3.backward": "dq",
            "NPU.npu_fusion_attention_v3.0.forward": "softmax_sum"}
    assert set(failed) == set(want), {n: c["why"] for n, c in failed.items()}
    for n, output in want.items():
        assert output in failed[n]["why"] and n in p.stdout, failed[n]["why"]
    assert all(c["verdict"] in ("PASS", "SKIP") for c in res["cases"] if c["name"] not in want)
    # the clean dump of the same calls passes: it is the perturbation that fails, not the calls
    assert verify("--msprobe", ddir, "--filter", "7.forward").returncode == 0


def test_the_committed_dump_passes_and_its_perturbed_copy_fails(tmp_path):
    """The dump tests/data/msprobe/make_dump.py had msprobe 26.2.0 write (12 entries: 7 forward, 5 backward; BSH, SBH,
    BNSD, BSND, TND; sparse modes 0 and 1, a band, GQA, pse, a sink, _v2): judged PASS by name, and with one output
    of three calls perturbed, exactly those three FAIL naming the output. Needs no msprobe."""
    entries = fa_entries(COMMITTED)
    assert len(entries) == 12 and sum(k.endswith(".backward") for k in entries) == 5, sorted(entries)
    js = tmp_path / "c.json"
    p = verify("--msprobe", COMMITTED, "--json", js, "-v")
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    res = json.loads(js.read_text())
    assert [c["name"] for c in res["cases"]] == list(entries)
    assert all(c["verdict"] == "PASS" for c in res["cases"]), [(c["name"], c["why"]) for c in res["cases"]]
    assert all(n in p.stdout for n in entries)

    d = _copy(COMMITTED, tmp_path / "perturbed")
    out = entries["NPU.npu_fusion_attention.5.forward"]["output"][0]["data_name"]       # SBH with pse, inference
    t = _load(d, out)
    t[:, :, :8] *= 1.01                                    # head 0 of H = 2 x 8, 1 % too large
    _save(d, out, t)
    dv = entries["NPU.npu_fusion_attention.2.backward"]["output"][2]["data_name"]      # TND: dv
    t = _load(d, dv)
    _save(d, dv, t + 0.02 * t.std() * torch.randn(t.shape, generator=torch.Generator().manual_seed(2)))
    smax = entries["NPU.npu_fusion_attention.4.forward"]["output"][1]["data_name"]     # sparse_mode 1: softmax_max
    _save(d, smax, _load(d, smax) + 0.01)
    p = verify("--msprobe", d, "--json", js)
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-2000:]
    failed = {c["name"]: c["why"] for c in json.loads(js.read_text())["cases"] if c["verdict"] == "FAIL"}
    want = {"NPU.npu_fusion_attention.5.forward": "attention_out", "NPU.npu_fusion_attention.2.backward": "dv",
            "NPU.npu_fusion_attention.4.forward": "softmax_max"}
    assert set(failed) == set(want), failed
    for n, output in want.items():
        assert output in failed[n] and n in p.stdout, failed[n]


def test_gradients_the_dump_lacks_are_not_judged(dump, tmp_path):
    """An input that did not require grad has a null gradient in the dump: the others are judged; without dq (the
    judge's primary output) the call is reported, not judged."""
    _, ddir = dump
    d = _copy(ddir, tmp_path / "partial")
    js = json.loads((d / "dump.json").read_text())
    js["data"]["NPU.npu_fusion_attention.3.backward"]["output"][1] = None      # dk
    js["data"]["NPU.npu_fusion_attention.1.backward"]["output"][0] = None      # dq
    (d / "dump.json").write_text(json.dumps(js))
    r = flashref.verify_msprobe(d, filter="backward")
    c3, c1 = r["NPU.npu_fusion_attention.3.backward"], r["NPU.npu_fusion_attention.1.backward"]
    assert c3.verdict == "PASS" and set(c3.outputs) == {"dq", "dv"} and "not judged: dk" in c3.extra, c3.raw
    assert c1.verdict == "SKIP" and "no dq" in c1.why, c1.raw


# ------------------------------------------------------------------------------------------------------------------
# the C reader and flashref.npu.bind rebuild the same case


def _value(v, ddir):
    if v is None:
        return None
    if isinstance(v, list):
        return [_value(x, ddir) for x in v]
    if v.get("type") == "torch.Tensor":
        return _load(ddir, v["data_name"]) if "data_name" in v else torch.empty(v["shape"], dtype=getattr(
            torch, v["dtype"].replace("torch.", "")))
    return v["value"]


def _api(name):
    prefix, api = name.split(".")[0], name.split(".")[1]
    return "npu_fusion_attention_v2" if prefix == "MindSpeed" else api


def _python_call(entries, name, ddir):
    """flashref.npu's NpuCall for a dump entry, and the NPU's outputs as flashref's layouts."""
    e = entries[name]
    if name.endswith(".backward"):
        f = entries[name[: -len("backward")] + "forward"]
        call = fnpu.bind(_api(name), *_value(f["input_args"], ddir), **{k: _value(v, ddir) for k, v in
                                                                        f["input_kwargs"].items()})
        o = _value(f["output"], ddir)
        o = [x if x is not None or i not in (4, 5) else 0 for i, x in enumerate(o)]
        call = call.grad_call(_value(e["input"][0], ddir), o)
        g = _value(e["output"], ddir)
        outs = {"dq": g[0], "dk": g[1], "dv": g[2]}
        if "sink" in call.inputs:
            sink = tuple(call.inputs["sink"].shape)
            outs["dsink"] = next(x for x in g[3:] if x is not None and tuple(x.shape) == sink)
        return call, outs
    call = fnpu.bind(_api(name), *_value(e["input_args"], ddir), **{k: _value(v, ddir) for k, v in
                                                                   e["input_kwargs"].items()})
    outs = call.outputs_from_npu(_value(e["output"], ddir))
    return call, {k: v for k, v in outs.items() if v is not None}


def _same_array(a, b):
    a, b = to_numpy(a), to_numpy(b)
    return a.shape == b.shape and a.dtype.itemsize == b.dtype.itemsize and a.tobytes() == b.tobytes()


def _check_same_case(entries, name, ddir, written):
    call, outs = _python_call(entries, name, ddir)
    py = call.case(name)
    c = flashref.Case.from_dir(str(written / name))
    assert (c.op, c.dtype) == (py.op, py.dtype), name
    for k, v in py.params.items():
        w = c.params.get(k)
        assert w == v or (v is None and w in (None, "")) or (isinstance(v, list) and list(w or []) == v), \
            "%s: params.%s: C %r, Python %r" % (name, k, w, v)
    assert set(c.inputs) == set(py.inputs), (name, sorted(c.inputs), sorted(py.inputs))
    for k in py.inputs:
        assert _same_array(c.inputs[k], py.inputs[k]), "%s: inputs.%s differ" % (name, k)
    for k, v in outs.items():
        f = written / name / ("%s.npy" % k)
        assert f.exists(), "%s: %s not written" % (name, k)
        assert _same_array(np.load(f), v), "%s: output %s differs" % (name, k)


def test_c_and_python_rebuild_the_same_cases(dump, tmp_path):
    _, ddir = dump
    written = tmp_path / "cases"
    p = verify("--msprobe", ddir, "--write", written)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    entries = fa_entries(ddir)
    checked = 0
    for name in entries:
        if name == "NPU.npu_fusion_attention.9.backward":
            # not judged: Python refuses the same call (the grad regenerates the drop mask)
            with pytest.raises(fnpu.DropoutUnreproducible):
                _python_call(entries, name, ddir)[0].case()
            assert not (written / name).exists()
            continue
        _check_same_case(entries, name, ddir, written)
        checked += 1
    assert checked == 20
    # a written call is a case directory with the NPU's outputs beside it: `flashref verify DIR` judges it again
    p = subprocess.run([_cli(), "verify", str(written / "NPU.npu_fusion_attention.4.backward")], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:]


def test_grad_and_mindspeed_entries(dump, tmp_path):
    """msprobe lists npu_fusion_attention_grad itself and MindSpeed's npu_fusion_attention when told to (a custom API
    list; MindSpeed installed): entries written to its format from the dumped tensors."""
    _, ddir = dump
    d = _copy(ddir, tmp_path / "more")
    js = json.loads((d / "dump.json").read_text())
    data = js["data"]
    f, b = data["NPU.npu_fusion_attention.4.forward"], data["NPU.npu_fusion_attention.4.backward"]  # TND bf16 GQA
    args = f["input_args"][:3] + [b["input"][0]] + f["input_args"][3:5]
    kw = dict(f["input_kwargs"])
    kw["scale_value"] = kw.pop("scale")
    kw.update(softmax_max=f["output"][1], softmax_sum=f["output"][2], attention_in=f["output"][0],
              numels=f["output"][6])
    data["NPU.npu_fusion_attention_grad.0.forward"] = {"input_args": args, "input_kwargs": kw,
                                                       "output": b["output"] + [None, None]}
    ms = copy.deepcopy(data["NPU.npu_fusion_attention_v2.0.forward"])
    data["MindSpeed.npu_fusion_attention.0.forward"] = ms
    (d / "dump.json").write_text(json.dumps(js))
    out = tmp_path / "j.json"
    written = tmp_path / "cases"
    p = verify("--msprobe", d, "--filter", "npu_fusion_attention", "--json", out, "--write", written)
    res = {c["name"]: c for c in json.loads(out.read_text())["cases"]}
    for n in ("NPU.npu_fusion_attention_grad.0.forward", "MindSpeed.npu_fusion_attention.0.forward"):
        assert res[n]["verdict"] == "PASS", res[n]["why"]
        _check_same_case(fa_entries(d), n, d, written)
    assert "npu_fusion_attention_grad" in res["NPU.npu_fusion_attention_grad.0.forward"]["extra"]
    assert p.returncode == 0


# ------------------------------------------------------------------------------------------------------------------
# hostile dumps


def _mini(ddir, dst, name="NPU.npu_fusion_attention.0.forward"):
    """A dump of one call (its dump.json entry and tensor files), for the hostile variants."""
    dst.mkdir(parents=True)
    js = json.loads((ddir / "dump.json").read_text())
    e = js["data"][name]
    js["data"] = {name: e}
    (dst / "dump_tensor_data").mkdir()
    for v in e["input_args"] + list(e["input_kwargs"].values()) + e["output"]:
        if isinstance(v, dict) and "data_name" in v:
            shutil.copy(ddir / "dump_tensor_data" / v["data_name"], dst / "dump_tensor_data" / v["data_name"])
    (dst / "dump.json").write_text(json.dumps(js, indent=1))
    return dst, js


def _rewrite(dst, js):
    (dst / "dump.json").write_text(json.dumps(js, indent=1))


def _q(js):
    return js["data"]["NPU.npu_fusion_attention.0.forward"]["input_args"][0]


def _zip_pt(path, pkl, records=None, arch="archive"):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr(arch + "/data.pkl", pkl)
        z.writestr(arch + "/byteorder", "little")
        for n, b in (records or {}).items():
            z.writestr(arch + "/" + n, b)


def _int_op(x):
    return b"J" + x.to_bytes(4, "little", signed=True) if -2 ** 31 <= x < 2 ** 31 else \
        b"\x8a\x08" + x.to_bytes(8, "little", signed=True)


def _tensor_pickle(storage, numel, size, stride, offset=0, key="0"):
    """data.pkl as torch.save writes it for one tensor, with any declared sizes (protocol 2)."""
    def s(x):
        b = x.encode()
        return b"X" + len(b).to_bytes(4, "little") + b

    def tup(xs):
        return b"(" + b"".join(_int_op(x) for x in xs) + b"t"
    pid = b"(" + s("storage") + b"ctorch\n" + storage.encode() + b"\n" + s(key) + s("cpu") + _int_op(numel) + b"t"
    return (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(" + pid + b"Q" + _int_op(offset) + tup(size) + tup(stride) +
            b"\x89ccollections\nOrderedDict\n)Rtq\x00R.")


class _RunsCode:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch %s" % self.marker,))


def _variant(kind, dst, js, outside):
    """Makes dst (a one-call dump) hostile; returns the message the refusal must contain."""
    q = _q(js)
    data = dst / "dump_tensor_data"
    if kind == "missing":
        (data / q["data_name"]).unlink()
        return "missing"
    if kind == "lying-shape":
        q["shape"] = [q["shape"][0], q["shape"][1] + 1, q["shape"][2]]
        _rewrite(dst, js)
        return "dump.json says"
    if kind == "lying-dtype":
        q["dtype"] = "torch.float16"
        _rewrite(dst, js)
        return "dump.json says torch.float16"
    if kind == "dotdot":
        q["data_name"] = "../../outside.pt"
        _rewrite(dst, js)
        return "not a plain file name"
    if kind == "absolute":
        q["data_name"] = str(outside / "outside.pt")
        _rewrite(dst, js)
        return "not a plain file name"
    if kind == "symlink-out":
        (data / q["data_name"]).unlink()
        (data / q["data_name"]).symlink_to(outside / "outside.pt")
        return "symbolic link: not followed"
    if kind == "data-dir-symlink":
        shutil.copytree(data, outside / "data_copy")
        shutil.rmtree(data)
        data.symlink_to(outside / "data_copy")
        return "dump_tensor_data is a symbolic link: not followed"
    if kind == "dump-json-symlink":
        shutil.copy(dst / "dump.json", outside / "dump.json")
        (dst / "dump.json").unlink()
        (dst / "dump.json").symlink_to(outside / "dump.json")
        return "dump.json is a symbolic link"
    if kind == "fifo":
        (data / q["data_name"]).unlink()
        os.mkfifo(data / q["data_name"])
        return "not a regular file"
    if kind == "pickle-runs-code":
        _zip_pt(data / q["data_name"], pickle.dumps(_RunsCode(outside / "pwned"), protocol=2))
        return "is not part of a saved tensor"
    if kind == "not-zip":
        (data / q["data_name"]).write_bytes(b"\x80\x02}q\x00." * 10)
        return "not a torch.save file"
    if kind == "crc":
        p = data / q["data_name"]
        b = bytearray(p.read_bytes())
        i = b.find(b"data/0") + 64 + 40                        # inside the storage record
        b[i] ^= 0x40
        p.write_bytes(bytes(b))
        return "CRC-32 mismatch"
    if kind == "huge-storage":
        # the pickle declares 2^40 float elements (storage and view); the record holds 4 bytes
        _zip_pt(data / q["data_name"], _tensor_pickle("FloatStorage", 1 << 40, [1 << 40], [1]), {"data/0": b"\0" * 4})
        q["shape"], q["dtype"] = [1 << 40], "torch.float32"
        _rewrite(dst, js)
        return "storage record 'data/0' holds 4 bytes"
    if kind == "huge-problem":
        # a 2M-token query in a sparse 64 MB file (its data never read): the operator's limit refuses it first
        n = 2_000_000
        _sparse_pt(data / "big.pt", "big", _tensor_pickle("FloatStorage", 8 * n, [1, n, 8], [8 * n, 8, 1]), 4 * 8 * n)
        e = js["data"]["NPU.npu_fusion_attention.0.forward"]
        for i in range(3):
            e["input_args"][i].update(data_name="big.pt", shape=[1, n, 8], dtype="torch.float32")
        e["input_args"][3]["value"] = 1
        _rewrite(dst, js)
        return "FR_E_RANGE"
    if kind == "truncated":
        p = data / q["data_name"]
        p.write_bytes(p.read_bytes()[:-100])
        return "no zip end-of-central-directory record"
    if kind == "empty-file":
        (data / q["data_name"]).write_bytes(b"")
        return "0 bytes: not a torch.save (zip) file"
    if kind == "lying-zip-size":
        # the central directory gives an unread record (.format_version) 2 GB; torch.load would refuse the file too
        p = data / q["data_name"]
        b = bytearray(p.read_bytes())
        with zipfile.ZipFile(p) as z:
            k = [i.filename.endswith("/.format_version") for i in z.infolist()].index(True)
        i = -1
        for _ in range(k + 1):
            i = b.find(b"PK\x01\x02", i + 1)
        b[i + 20:i + 28] = (0x7FFFFFF0).to_bytes(4, "little") * 2
        p.write_bytes(bytes(b))
        return "does not fit before the central directory"
    if kind == "data-name-directory":
        (data / q["data_name"]).unlink()
        (data / q["data_name"]).mkdir()
        return "not a regular file"
    if kind == "rank-symlink":
        # msprobe's layout step0/proc*/ with one rank a link to a dump outside: refused by name, the other judged
        shutil.copytree(dst, outside / "proc1")
        proc0 = dst / "step0" / "proc0"
        proc0.mkdir(parents=True)
        for n in ("dump.json", "dump_tensor_data"):
            shutil.move(str(dst / n), str(proc0 / n))
        (dst / "step0" / "proc1").symlink_to(outside / "proc1")
        return "step0/proc1 is a symbolic link: not followed"
    if kind == "bad-json":
        (dst / "dump.json").write_text('{"task": "tensor", "data": {"NPU.npu_fusion_attention.0.forward": {')
        return "not valid JSON"
    if kind == "statistics":
        js["task"] = "statistics"
        for v in js["data"]["NPU.npu_fusion_attention.0.forward"]["input_args"]:
            if isinstance(v, dict):
                v.pop("data_name", None)
        _rewrite(dst, js)
        shutil.rmtree(data)
        return "holds no tensors"
    if kind == "wrong-type":
        js["data"]["NPU.npu_fusion_attention.0.forward"]["input_args"][3] = {"type": "str", "value": "8"}
        _rewrite(dst, js)
        return "argument 'head_num' (position 4) must be int, not str"
    raise AssertionError(kind)


def _sparse_pt(path, arch, pkl, nbytes):
    """A torch.save-shaped zip whose storage record is nbytes of zeros, written as a hole (no disk used)."""
    def local(name, size, crc):
        n = name.encode()
        return (b"PK\x03\x04" + (20).to_bytes(2, "little") + b"\0\0" * 4 + crc.to_bytes(4, "little") +
                size.to_bytes(4, "little") * 2 + len(n).to_bytes(2, "little") + b"\0\0" + n)

    def central(name, size, crc, off):
        n = name.encode()
        return (b"PK\x01\x02" + (20).to_bytes(2, "little") * 2 + b"\0\0" * 4 + crc.to_bytes(4, "little") +
                size.to_bytes(4, "little") * 2 + len(n).to_bytes(2, "little") + b"\0\0" * 4 + b"\0\0\0\0" +
                off.to_bytes(4, "little") + n)

    crc = 0
    zeros = bytes(1 << 20)
    for _ in range(nbytes // len(zeros)):
        crc = zlib.crc32(zeros, crc)
    crc = zlib.crc32(bytes(nbytes % len(zeros)), crc)
    with open(path, "wb") as f:
        cds = []
        for name, blob, size, c in ((arch + "/data.pkl", pkl, len(pkl), zlib.crc32(pkl)),
                                    (arch + "/data/0", None, nbytes, crc)):
            off = f.tell()
            f.write(local(name, size, c))
            if blob is None:
                f.seek(size, 1)
            else:
                f.write(blob)
            cds.append(central(name, size, c, off))
        cd_off = f.tell()
        for c in cds:
            f.write(c)
        cd_size = f.tell() - cd_off
        f.write(b"PK\x05\x06" + b"\0\0" * 2 + len(cds).to_bytes(2, "little") * 2 + cd_size.to_bytes(4, "little") +
                cd_off.to_bytes(4, "little") + b"\0\0")


HOSTILE = ["missing", "lying-shape", "lying-dtype", "dotdot", "absolute", "symlink-out", "data-dir-symlink",
           "dump-json-symlink", "fifo", "pickle-runs-code", "not-zip", "crc", "huge-storage", "huge-problem",
           "bad-json", "statistics", "wrong-type", "truncated", "empty-file", "lying-zip-size", "data-name-directory",
           "rank-symlink"]


@pytest.mark.parametrize("kind", HOSTILE)
def test_hostile_dumps_are_refused_and_contained(tmp_path, kind):
    ddir = COMMITTED                                      # its call 0: BSH fp32, positional arguments
    outside = tmp_path / "outside"
    outside.mkdir()
    torch.save(torch.zeros(1, 2, 16), outside / "outside.pt")
    (outside / "sentinel").write_text("untouched")
    before = {p: p.stat().st_mtime_ns for p in outside.rglob("*")}
    dst, js = _mini(ddir, tmp_path / "dump")
    want = _variant(kind, dst, js, outside)
    before = {p: p.stat().st_mtime_ns for p in outside.rglob("*")} if kind in (
        "data-dir-symlink", "dump-json-symlink", "rank-symlink") else before
    written = tmp_path / "written"
    p = verify("--msprobe", dst, "--write", written, "-v", timeout=60)
    text = p.stdout + p.stderr
    assert p.returncode == 2, "%s: exit %d\n%s" % (kind, p.returncode, text[-3000:])
    assert want in text, "%s: %r not in\n%s" % (kind, want, text[-3000:])
    assert "cannot load" in text or "--msprobe" in text
    assert not (outside / "pwned").exists()                     # nothing the file said was run
    assert {p: p.stat().st_mtime_ns for p in outside.rglob("*")} == before    # nothing outside touched
    if kind == "rank-symlink":                                   # the real rank beside the link is judged
        assert "PASS  step0/proc0/NPU.npu_fusion_attention.0.forward" in p.stdout, p.stdout[-3000:]
        written = written / "step0" / "proc1"
    assert not written.exists() or not any(written.iterdir())   # no case written for a refused call


def test_a_dump_written_by_hand_to_msprobes_format(tmp_path):
    """No msprobe needed: a one-call dump written to its documented format (torch.save files, a lower-case layout as
    torch_npu accepts it, dump_data_dir pointing elsewhere, which is never used) is read and judged."""
    d = tmp_path / "dump"
    (d / "dump_tensor_data").mkdir(parents=True)
    q = torch.randn(1, 8, 2, 16)
    for n, x in (("q", q), ("k", q.clone()), ("v", q.flip(1).contiguous())):
        torch.save(x, d / "dump_tensor_data" / (n + ".pt"))
    out = flashref.npu.npu_fusion_attention(q, q.clone(), q.flip(1).contiguous(), 2, "BSND", scale=0.25)
    for i in range(3):
        torch.save(out[i], d / "dump_tensor_data" / ("o%d.pt" % i))

    def t(n, x):
        return {"type": "torch.Tensor", "dtype": str(x.dtype), "shape": list(x.shape), "data_name": n + ".pt"}
    js = {"task": "tensor", "level": "L1", "framework": "pytorch", "dump_data_dir": "/somewhere/else", "data": {
        "NPU.npu_fusion_attention.0.forward": {
            "input_args": [t("q", q), t("k", q), t("v", q), {"type": "int", "value": 2},
                           {"type": "str", "value": "bsnd"}],
            "input_kwargs": {"scale": {"type": "float", "value": 0.25}},
            "output": [t("o0", out[0]), t("o1", out[1]), t("o2", out[2]), None, None, None,
                       {"type": "int", "value": 1}]}}}
    (d / "dump.json").write_text(json.dumps(js))
    p = verify("--msprobe", d, "-v")
    assert p.returncode == 0 and "PASS  NPU.npu_fusion_attention.0.forward" in p.stdout, p.stdout[-2000:]
