/* torch_npu's fusion-attention functions, as data, and a dumped call of one of them rebuilt as a flashref case: the
 * C side of the mapping that python/flashref/npu/_call.py (flashref.npu.bind) holds for Python callers.
 *
 * The schemas (fr_npu_schemas: op-plugin's published schema lines, op_plugin/config/op_plugin_functions.yaml at commit
 * 517f2e7d) are the one copy both sides parse: flashref.npu reads them from the library (fr_verify_npu_schemas), and
 * tests/python_pkg/test_msprobe.py rebuilds every call of msprobe-written dumps both ways (this file, through
 * `flashref verify --msprobe DUMP --write DIR`, and flashref.npu.bind / NpuCall.grad_call) and requires the same case:
 * parameters, inputs bit for bit, the NPU's outputs in flashref's layouts.
 *
 * What is mapped (docs/ascend.md "Reference: the functions"): positional and keyword arguments bound to the schema,
 * defaults filled in (scale 1.0, pre/next_tockens 2147483647, ...); v1/v3 spell pre_tockens / next_tockens, v2
 * pre_tokens / next_tokens; scale (forwards) / scale_value (grads); pse -> real_shift, dropout_mask -> drop_mask;
 * input_layout case-insensitive; q_start_idx / kv_start_idx lists -> their first element; v3's sequence lengths are
 * int tensors; keep_prob within 1e-9 of 1 is no dropout, within 1e-9 of 0 an all-zero drop mask, else the mask is the
 * call's dropout_mask or, without one, drawn by the NPU from (seed, offset) and not reproducible (the call is
 * reported, not judged); TND softmax statistics are [T, N1, 8] tensors whose memory is [N1, T, 8] unless
 * softmax_layout="TND" is honoured (npu_fusion_attention[_grad], _v3; _v2 only with a sink); padding_mask is refused.
 * MindSpeed's npu_fusion_attention (prefix MindSpeed) is torch_npu's _v2 (its arguments are a subset, same names). */
#ifndef FR_VERIFY_CASES_NPU_CALL_H
#define FR_VERIFY_CASES_NPU_CALL_H

#include "io/casedir.h"
#include "io/msprobe.h"

#define FR_NPU_NUM_API 6
/* npu_fusion_attention, _grad, _v2, _grad_v2, _v3, _grad_v3 (in this order), NULL-terminated. */
extern const char *const fr_npu_schemas[FR_NPU_NUM_API + 1];

/* The index of a torch_npu function name in fr_npu_schemas (-1: not one of them). */
int fr_npu_api_index(const char *api);
/* True for an msprobe entry of a fusion-attention call: torch_npu's (any prefix) or MindSpeed's
 * npu_fusion_attention. */
bool fr_npu_is_fa(const char *prefix, const char *api);

/* One dumped call rebuilt. */
typedef struct fr_npu_case {
    char api[48];        /* the torch_npu function computed ("npu_fusion_attention_grad" for a forward's backward) */
    fr_case c;           /* the case (owns its tensors) */
    fr_case_outputs npu; /* the NPU's outputs as dumped, in flashref's layouts; outputs the dump lacks are absent */
    unsigned absent;     /* those outputs (1u << fr_case_output): not judged */
    char skip[320];      /* non-empty: the call is not judged, and why (nothing to judge, an unreproducible mask) */
    char note[160];      /* what was rebuilt, for the report */
} fr_npu_case;

/* Rebuilds entry e of dump d. A forward entry of a forward function is that call; a forward entry of a grad function
 * (msprobe lists them only when told to) is that grad call; a backward entry is the grad call torch_npu's autograd
 * made for the forward entry fwd (required then: same name with .forward), from its inputs, its dumped outputs
 * (attention_in, softmax statistics, numels) and the backward's first input (dy). Tensor files are checked against
 * dump.json and the operator's limits before any data is read. FR_OK with out->skip set for a call that cannot be
 * judged; an error status for a dump that cannot be read or a call the operator refuses (message names the
 * argument). */
fr_status fr_npu_rebuild(const fr_mp_dump *d, const fr_mp_entry *e, const fr_mp_entry *fwd, fr_npu_case *out,
                         fr_error *err);
void fr_npu_case_free(fr_npu_case *nc);

#endif
