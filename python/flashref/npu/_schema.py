"""The published torch_npu / MindSpeed schemas of the fusion-attention functions, as data.

SCHEMAS holds each function's schema line as Ascend's op-plugin publishes it (op_plugin/config/
op_plugin_functions.yaml at commit 517f2e7d, Aug 2026; docs/ascend.md lists where the docs differ). parse() turns
one into (name, type, default, keyword_only) rows; the public functions of flashref.npu spell the same signatures
out in Python (help(), type checkers), and tests/python_pkg/test_npu.py checks that both agree, so neither drifts
alone.
"""

from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Tuple

SCHEMAS: Dict[str, str] = {
    "npu_fusion_attention": (
        "npu_fusion_attention(Tensor query, Tensor key, Tensor value, int head_num, str input_layout, "
        "Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, float scale=1., float keep_prob=1., "
        "int pre_tockens=2147483647, int next_tockens=2147483647, int inner_precise=0, int[]? prefix=None, "
        "int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, int sparse_mode=0, bool gen_mask_parallel=True, "
        "bool sync=False, str softmax_layout=\"\", Tensor? sink=None, Tensor? dropout_mask=None, int seed=0, "
        "int offset=0) -> (Tensor, Tensor, Tensor, Tensor, int, int, int)"),
    "npu_fusion_attention_grad": (
        "npu_fusion_attention_grad(Tensor query, Tensor key, Tensor value, Tensor dy, int head_num, "
        "str input_layout, *, Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, "
        "Tensor? softmax_max=None, Tensor? softmax_sum=None, Tensor? softmax_in=None, Tensor? attention_in=None, "
        "float scale_value=1., float keep_prob=1., int pre_tockens=2147483647, int next_tockens=2147483647, "
        "int inner_precise=0, int seed=0, int offset=0, int numels=0, int[]? prefix=None, "
        "int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, int sparse_mode=0, bool gen_mask_parallel=True, "
        "bool sync=False, str softmax_layout=\"\", Tensor? sink=None) -> (Tensor, Tensor, Tensor, Tensor, Tensor)"),
    "npu_fusion_attention_v2": (
        "npu_fusion_attention_v2(Tensor query, Tensor key, Tensor value, int head_num, str input_layout, *, "
        "Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, Tensor? query_rope=None, "
        "Tensor? key_rope=None, float scale=1., float keep_prob=1., int pre_tokens=2147483647, "
        "int next_tokens=2147483647, int inner_precise=0, int[]? prefix=None, int[]? actual_seq_qlen=None, "
        "int[]? actual_seq_kvlen=None, int sparse_mode=0, bool gen_mask_parallel=True, bool sync=False, "
        "int pse_type=1, int[]? q_start_idx=None, int[]? kv_start_idx=None, str softmax_layout=\"\", "
        "Tensor? sink=None, Tensor? dropout_mask=None, int seed=0, int offset=0) "
        "-> (Tensor, Tensor, Tensor, Tensor, int, int, int)"),
    "npu_fusion_attention_grad_v2": (
        "npu_fusion_attention_grad_v2(Tensor query, Tensor key, Tensor value, Tensor dy, int head_num, "
        "str input_layout, *, Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, "
        "Tensor? softmax_max=None, Tensor? softmax_sum=None, Tensor? softmax_in=None, Tensor? attention_in=None, "
        "Tensor? query_rope=None, Tensor? key_rope=None, float scale_value=1., float keep_prob=1., "
        "int pre_tokens=2147483647, int next_tokens=2147483647, int inner_precise=0, int seed=0, int offset=0, "
        "int numels=0, int[]? prefix=None, int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, "
        "int sparse_mode=0, bool gen_mask_parallel=True, bool sync=False, int pse_type=1, "
        "int[]? q_start_idx=None, int[]? kv_start_idx=None, str softmax_layout=\"\", Tensor? sink=None) "
        "-> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)"),
    "npu_fusion_attention_v3": (
        "npu_fusion_attention_v3(Tensor query, Tensor key, Tensor value, int head_num, str input_layout, "
        "Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, float scale=1., float keep_prob=1., "
        "int pre_tockens=2147483647, int next_tockens=2147483647, int inner_precise=0, SymInt[]? prefix=None, "
        "Tensor? actual_seq_qlen=None, Tensor? actual_seq_kvlen=None, int sparse_mode=0, "
        "bool gen_mask_parallel=True, bool sync=False, str softmax_layout=\"\", Tensor? sink=None) "
        "-> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)"),
    "npu_fusion_attention_grad_v3": (
        "npu_fusion_attention_grad_v3(Tensor query, Tensor key, Tensor value, Tensor dy, int head_num, "
        "str input_layout, *, Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, "
        "Tensor? softmax_max=None, Tensor? softmax_sum=None, Tensor? softmax_in=None, Tensor? attention_in=None, "
        "float scale_value=1., float keep_prob=1., int pre_tockens=2147483647, int next_tockens=2147483647, "
        "int inner_precise=0, Tensor? seed=None, Tensor? offset=None, SymInt[]? prefix=None, "
        "Tensor? actual_seq_qlen=None, Tensor? actual_seq_kvlen=None, int sparse_mode=0, "
        "bool gen_mask_parallel=True, bool sync=False, str softmax_layout=\"\", Tensor? sink=None) "
        "-> (Tensor, Tensor, Tensor, Tensor, Tensor)"),
}

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
