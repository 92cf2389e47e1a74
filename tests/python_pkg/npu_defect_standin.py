"""A defective torch_npu for testing runners/torch_npu.py: flashref's CPU stand-in with one known defect injected,
so that `flashref suite` must catch it through the runner and name it.

usage: npu_defect_standin.py --defect band-next|softmax-sum SCRIPT [ARGS...]
  (as `python -m flashref.npu run SCRIPT ARGS`, with the defect in every fusion-attention call)

Defects (each a plausible kernel bug, each with the diagnosis the suite should give):
  band-next    the band of sparse modes 0 and 4 one position too wide after the diagonal (next_tokens + 1): band
  softmax-sum  softmax_sum written 1 % too large, attention_out right: softmax-stats
"""

import os
import runpy
import sys

import flashref.npu as fnpu

DEFECTS = {"band-next": "band", "softmax-sum": "softmax-stats"}


def _band_next(f, nxt):
    def g(*args, **kw):
        if kw.get("atten_mask") is not None and kw.get("sparse_mode", 0) in (0, 4) and kw.get(nxt) is not None:
            kw[nxt] = kw[nxt] + 1
        return f(*args, **kw)
    return g


def _softmax_sum(f):
    def g(*args, **kw):
        out = list(f(*args, **kw))
        out[2] = out[2] * 1.01
        return tuple(out)
    return g


def main(argv):
    if len(argv) < 3 or argv[0] != "--defect" or argv[1] not in DEFECTS:
        sys.stderr.write(__doc__)
        return 2
    defect, rest = argv[1], argv[2:]
    mod = fnpu.install()
    if defect == "band-next":
        mod.npu_fusion_attention = _band_next(mod.npu_fusion_attention, "next_tockens")
        mod.npu_fusion_attention_v2 = _band_next(mod.npu_fusion_attention_v2, "next_tokens")
        mod.npu_fusion_attention_grad = _band_next(mod.npu_fusion_attention_grad, "next_tockens")
        mod.npu_fusion_attention_grad_v2 = _band_next(mod.npu_fusion_attention_grad_v2, "next_tokens")
    else:
        mod.npu_fusion_attention = _softmax_sum(mod.npu_fusion_attention)
        mod.npu_fusion_attention_v2 = _softmax_sum(mod.npu_fusion_attention_v2)
    sys.argv = rest
    sys.path.insert(0, os.path.dirname(os.path.abspath(rest[0])))
    runpy.run_path(rest[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
