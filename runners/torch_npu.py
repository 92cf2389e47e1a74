#!/usr/bin/env python3
"""torch_npu's fusion attention on an Ascend NPU as an implementation under test (docs/ascend.md).

usage: torch_npu.py [--device npu|cpu] [CASE_DIR]        one case (exec:) or, with FLASHREF_PROTOCOL set, many
       torch_npu.py repro CASE_DIR                       print a standalone torch_npu script of one case
  flashref suite --impl persistent:"python3 runners/torch_npu.py"                  (an NPU host with torch_npu)
  flashref suite --impl persistent:"python3 -m flashref.npu run runners/torch_npu.py --device cpu"
                                                        (no NPU: flashref's CPU stand-in for torch_npu)

Each case directory becomes one torch_npu call with the case's tensors on the device: forward cases
npu_fusion_attention (npu_fusion_attention_v2 for pse_type 0/2/3, q_start_idx / kv_start_idx or rope), backward
cases npu_fusion_attention_grad (_v2 likewise) with the case's dy, attention_in, softmax_max and softmax_sum. The
outputs are written in the case's dtypes and flashref's layouts (softmax_max / softmax_sum of TND: torch_npu returns
them as [T, N1, 8] tensors whose memory is [N1, T, 8] unless the TND layout was asked for and honoured). The
mapping follows op-plugin's Atlas A2 code paths: npu_fusion_attention_v2 honours softmax_layout only with a sink,
rope runs only on TND with D = 128 and Drope = 64 (operator-spec 2.3).

Exit 77 (SKIP) with the reason for what torch_npu cannot be given: fp8 / hif8 inputs (another API, Ascend 950),
top-k indices (a flashref extension), dropout in a backward case (npu_fusion_attention_grad regenerates the mask
from (seed, offset) and takes none), rope outside TND / D 128 / Drope 64, and what torch_npu's own argument checks
refuse (head_num 0).

This file is named after the module it drives: its own folder is taken off sys.path so that `import torch_npu`
finds torch_npu (or flashref's stand-in), never this file.
"""
import importlib.util
import json
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
_spec = importlib.util.spec_from_file_location("flashref_runner", os.path.join(_HERE, "flashref_runner.py"))
flashref_runner = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(flashref_runner)
Unsupported = flashref_runner.Unsupported

import numpy as np  # noqa: E402

TYPED = ("query", "key", "value", "dy", "attention_in", "query_rope", "key_rope")


class Input:
    """A case input used as an argument (materialised as a device tensor, or written as np.load in a repro)."""

    def __init__(self, name, fn):
        self.name, self.fn = name, fn


def load_case(d):
    with open(os.path.join(d, "case.json")) as f:
        cj = json.load(f)
    return cj, {n: np.load(os.path.join(d, fn), allow_pickle=False) for n, fn in cj["inputs"].items()}


def _typed(name, p):
    return name in TYPED or (name == "real_shift" and p.get("pse_type", 1) in (0, 1))


# Alike python/flashref/npu/_call.py:NpuCall.stats_to_npu: kept apart because this runner must run on an NPU host
# without flashref; it maps a case to a torch_npu call, flashref.npu maps a torch_npu call to a case.
def _stats_mem(x, tnd_in, tnd_out, t, n):
    """softmax statistics of TND between [T, N1, 8] and [N1, T, 8] memory; the result has torch_npu's shape."""
    a = np.ascontiguousarray(x).reshape(-1)
    a = a.reshape(t, n, 8) if tnd_in else a.reshape(n, t, 8)
    if tnd_in != tnd_out:
        a = np.ascontiguousarray(a.transpose(1, 0, 2))
    return a.reshape(t, n, 8)


def plan(cj, x):
    """(api, positional args, keyword args, how to read the outputs) of one case; Unsupported for what torch_npu
    cannot be given."""
    op, dtype, p = cj["op"], cj["dtype"], cj["params"]
    if dtype not in ("fp32", "fp16", "bf16"):
        raise Unsupported("%s inputs: npu_fusion_attention takes fp16 / bf16 / fp32 (FP8 is "
                          "npu_quant_fusion_attention, another API, Ascend 950)" % dtype)
    if "topk_indices" in x:
        raise Unsupported("topk_indices: a flashref extension (D7), no torch_npu argument")
    layout = p["input_layout"]
    if int(p["head_num"]) <= 0:
        raise Unsupported("head_num %d: torch_npu checks head_num > 0 (empty heads are valid for the operator, D8)"
                          % int(p["head_num"]))
    rope = "query_rope" in x
    if rope and (layout != "TND" or x["query"].shape[-1] != 128 or x["query_rope"].shape[-1] != 64):
        raise Unsupported("query_rope / key_rope: the NPU (Atlas A2) runs rope only with TND, D = 128, Drope = 64 "
                          "(operator-spec 2.3)")
    if op == "bwd" and p["keep_prob"] < 1:
        raise Unsupported("dropout in a backward case: npu_fusion_attention_grad regenerates the drop mask from "
                          "(seed, offset) and takes no mask, so the case's mask cannot be given")
    v2 = rope or p.get("pse_type", 1) != 1 or p.get("q_start_idx", 0) != 0 or p.get("kv_start_idx", 0) != 0
    sink = "sink" in x
    tnd_asked = layout == "TND" and p.get("softmax_layout", "") == "same_as_input"
    tnd_honoured = tnd_asked and (not v2 or sink)  # A2: the v2 kernels without sink take no softmax layout
    a = lambda n: Input(n, cj["inputs"][n]) if n in x else None  # noqa: E731
    kw = dict(pse=a("real_shift"), atten_mask=a("atten_mask"), keep_prob=float(p["keep_prob"]),
              inner_precise=int(p["inner_precise"]), prefix=p.get("prefix"), actual_seq_qlen=p.get("actual_seq_qlen"),
              actual_seq_kvlen=p.get("actual_seq_kvlen"), sparse_mode=int(p["sparse_mode"]),
              softmax_layout="TND" if tnd_asked else "", sink=a("sink"))
    pre, nxt = ("pre_tokens", "next_tokens") if v2 else ("pre_tockens", "next_tockens")
    kw[pre], kw[nxt] = int(p["pre_tokens"]), int(p["next_tokens"])
    if v2:
        kw.update(pse_type=int(p.get("pse_type", 1)), q_start_idx=[int(p.get("q_start_idx", 0))],
                  kv_start_idx=[int(p.get("kv_start_idx", 0))], query_rope=a("query_rope"), key_rope=a("key_rope"))
    args = [a("query"), a("key"), a("value")]
    tn = (x["query"].shape[0], x["query"].shape[1]) if layout == "TND" else None
    if op == "fwd":
        api = "npu_fusion_attention_v2" if v2 else "npu_fusion_attention"
        kw.update(scale=float(p["scale_value"]), dropout_mask=a("drop_mask"))
    else:
        api = "npu_fusion_attention_grad_v2" if v2 else "npu_fusion_attention_grad"
        args.append(a("dy"))
        kw.update(scale_value=float(p["scale_value"]), attention_in=a("attention_in"))
        for n in ("softmax_max", "softmax_sum"):
            kw[n] = Input(n, cj["inputs"][n])
            if tn:   # the case's layout -> the memory the grad kernel reads, in torch_npu's [T, N1, 8] shape
                kw[n].convert = lambda v, tn=tn: _stats_mem(v, tnd_asked, tnd_honoured, tn[0], tn[1])
    args += [int(p["head_num"]), layout]
    kw = {k: v for k, v in kw.items() if v is not None}
    return api, args, kw, dict(tn=tn, tnd_asked=tnd_asked, tnd_honoured=tnd_honoured, rope=rope, sink=sink)


def _tensor(torch, arr, name, p, device):
    if arr.dtype == np.uint16 and _typed(name, p):
        t = torch.from_numpy(arr.view(np.int16).copy()).view(torch.bfloat16)
    else:
        t = torch.from_numpy(np.ascontiguousarray(arr).copy())
    return t.to(device)


def _save(d, name, t, dtype, typed):
    import torch
    t = t.detach().cpu()
    if typed and dtype == "bf16":
        a = t.view(torch.int16).numpy().view(np.uint16)
    elif typed and dtype == "fp16":
        a = t.to(torch.float16).numpy()
    else:
        a = t.to(torch.float32).numpy()
    np.save(os.path.join(d, name + ".npy"), a)


def handle(d, device):
    import torch
    import torch_npu
    cj, x = load_case(d)
    api, args, kw, how = plan(cj, x)
    p = cj["params"]

    def mat(v):
        if not isinstance(v, Input):
            return v
        arr = x[v.name]
        if hasattr(v, "convert"):
            arr = v.convert(arr)
        return _tensor(torch, arr, v.name, p, device)
    outs = getattr(torch_npu, api)(*[mat(v) for v in args], **{k: mat(v) for k, v in kw.items()})
    dt = cj["dtype"]
    if cj["op"] == "fwd":
        _save(d, "attention_out", outs[0], dt, True)
        for n, t in (("softmax_max", outs[1]), ("softmax_sum", outs[2])):
            t = t.detach().cpu().float().numpy()
            if how["tn"]:   # torch_npu's memory -> the case's layout
                t = _stats_mem(t, how["tnd_honoured"], how["tnd_asked"], *how["tn"])
                if not how["tnd_asked"]:
                    t = t.reshape(how["tn"][1], how["tn"][0], 8)
            np.save(os.path.join(d, n + ".npy"), np.ascontiguousarray(t, dtype=np.float32))
        return
    for k, n in enumerate(("dq", "dk", "dv")):
        _save(d, n, outs[k], dt, True)
    v2 = api.endswith("_v2")
    if how["rope"]:
        _save(d, "dq_rope", outs[4], dt, True)
        _save(d, "dk_rope", outs[5], dt, True)
    if how["sink"]:
        _save(d, "dsink", outs[6] if v2 else outs[4], dt, False)


def repro(d):
    """A standalone script: the case's inputs loaded from D, the same torch_npu call, the outputs printed."""
    import inspect
    cj, x = load_case(d)
    api, args, kw, how = plan(cj, x)

    def lit(v):
        if not isinstance(v, Input):
            return repr(v)
        s = "t(%r, %r)" % (v.name, v.fn)
        if hasattr(v, "convert"):
            s = "t(%r, %r, stats=True)" % (v.name, v.fn)
        return s
    body = ",\n    ".join([lit(v) for v in args] + ["%s=%s" % (k, lit(v)) for k, v in kw.items()])
    return '''"""Reproducer of flashref case %(name)s on an Ascend NPU (written by runners/torch_npu.py repro)."""
import numpy as np
import torch
import torch_npu

D = %(dir)r      # the case directory (flashref suite --write DIR, or FLASHREF_KEEP_TMP=1)
TYPED = %(typed)r
TN, TND_ASKED, TND_HONOURED = %(tn)r, %(asked)r, %(honoured)r


%(stats_mem)s

def t(name, fn, stats=False):
    a = np.load(D + "/" + fn)
    if stats and TN:
        a = _stats_mem(a, TND_ASKED, TND_HONOURED, TN[0], TN[1])
    if a.dtype == np.uint16 and name in TYPED:
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16).npu()
    return torch.from_numpy(np.ascontiguousarray(a)).npu()


out = torch_npu.%(api)s(
    %(body)s)
for k, o in enumerate(out):
    print(k, o if not isinstance(o, torch.Tensor) else (tuple(o.shape), o.dtype, o.float().abs().sum().item()))
''' % dict(name=os.path.basename(os.path.normpath(d)), dir=os.path.abspath(d), api=api, body=body,
           typed=tuple(n for n in x if _typed(n, cj["params"])), tn=how["tn"], asked=how["tnd_asked"],
           honoured=how["tnd_honoured"], stats_mem=inspect.getsource(_stats_mem))


def main(argv):
    device = "npu"
    if argv[:1] == ["repro"]:
        if len(argv) != 2:
            sys.stderr.write("usage: torch_npu.py repro CASE_DIR\n")
            return 2
        sys.stdout.write(repro(argv[1]))
        return 0
    if argv[:1] == ["--device"] and len(argv) >= 2:
        device, argv = argv[1], argv[2:]
    if device not in ("npu", "cpu"):
        sys.stderr.write("--device %s: expected npu or cpu\n" % device)
        return 2
    if device == "cpu":
        import torch_npu
        if not getattr(torch_npu, "__flashref_standin__", False):
            sys.stderr.write("--device cpu needs flashref's CPU stand-in (python -m flashref.npu run ...): the real "
                             "torch_npu computes on the NPU only\n")
            return 2
    return flashref_runner.serve(lambda d: handle(d, device), argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
