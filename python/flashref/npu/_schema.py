"""The published torch_npu / MindSpeed schemas of the fusion-attention functions, as data.

SCHEMAS holds each function's schema line as Ascend's op-plugin publishes it (op_plugin/config/
op_plugin_functions.yaml at commit 517f2e7d, Aug 2026; docs/ascend.md lists where the docs differ). The lines live
once, in the library (src/verify/cases/npu_call.c, fr_verify_npu_schemas), which parses them too when it rebuilds the
calls of an msprobe dump (`flashref verify --msprobe`); tests/python_pkg/test_msprobe.py checks that both sides
rebuild every dumped call into the same case. parse() turns one into (name, type, default, keyword_only) rows; the
public functions of flashref.npu spell the same signatures out in Python (help(), type checkers), and
tests/python_pkg/test_npu.py checks that both agree, so neither drifts alone.
"""

from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Tuple


def _library_schemas() -> Dict[str, str]:
    from .. import _lib as L
    return {line.split("(", 1)[0]: line for line in L.name_list(L.lib.fr_verify_npu_schemas())}


SCHEMAS: Dict[str, str] = _library_schemas()

# MindSpeed's npu_fusion_attention (mindspeed/ops/fusion_attention_v2.py at commit 028de58c, Jul 2026): every
# argument it has is an argument of torch_npu's npu_fusion_attention_v2 with the same name, kind and default, so
# flashref.npu.npu_fusion_attention_v2 takes every MindSpeed call as is (test_npu.py checks the inclusion).
MINDSPEED_V2 = (
    "npu_fusion_attention(Tensor query, Tensor key, Tensor value, int head_num, str input_layout, *, "
    "Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, float scale=1., float keep_prob=1., "
    "int pre_tokens=2147483647, int next_tokens=2147483647, int inner_precise=0, int[]? prefix=None, "
    "int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, int sparse_mode=0, bool gen_mask_parallel=True, "
    "bool sync=False, int pse_type=1, int[]? q_start_idx=None, int[]? kv_start_idx=None) "
    "-> (Tensor, Tensor, Tensor, Tensor, int, int, int)")


class Arg(NamedTuple):
    name: str
    type: str          # "Tensor", "Tensor?", "int", "float", "bool", "str", "int[]?", "SymInt[]?"
    default: Any       # Arg.REQUIRED when there is none
    keyword_only: bool

    REQUIRED = object()


def _default(text: str) -> Any:
    if text == "None":
        return None
    if text in ("True", "False"):
        return text == "True"
    if text.startswith('"'):
        return text[1:-1]
    if "." in text:
        return float(text)
    return int(text)


def parse(schema: str) -> Tuple[str, List[Arg], List[str]]:
    """(function name, arguments, return types) of one schema line."""
    name, rest = schema.split("(", 1)
    args_text, ret = rest.rsplit(") -> ", 1)
    args, kw_only = [], False
    for part in args_text.split(", "):
        if part == "*":
            kw_only = True
            continue
        decl, _, dflt = part.partition("=")
        typ, arg = decl.rsplit(" ", 1)
        args.append(Arg(arg, typ, _default(dflt) if dflt else Arg.REQUIRED, kw_only))
    rets = [r.strip() for r in ret.strip("()").split(",")]
    return name, args, rets


ARGS: Dict[str, List[Arg]] = {api: parse(s)[1] for api, s in SCHEMAS.items()}
TYPES: Dict[str, Dict[str, str]] = {api: {a.name: a.type for a in args} for api, args in ARGS.items()}
