#!/usr/bin/env python3
"""The panel (docs/verifier.md): implementations nobody here wrote, judged by flashref through the persistent
protocol. On every case of the set that the implementation supports: no FAIL and no WARN, except the departures
listed below, each with the verdict and diagnosis it must get and an honest reason (a defect contradicting the
framework's own documentation, documented behaviour, or a semantics difference between the framework and the
operator). Two kinds of entries:
- EXPECTED: one case -> (verdict, diagnosis, why);
- CLASSES: a group of cases (by dtype / op / a pattern of the failure message) that may be flagged with one of the
  listed verdicts and diagnoses (a precision mode the framework runs in; an error the framework raises for a whole
  dtype), and on the default set must be flagged at least once.
The test fails both ways: an unexpected FAIL/WARN, a listed departure that is not observed (or gets another
diagnosis), or too few cases judged. docs/verifier.md ("The panel") carries the same lists in words.

usage: check_panel.py --flashref BIN --python VENV_PYTHON --runner FILE[:ARG] --set quick|default [--json OUT]
Exit 77 (ctest SKIP) with a loud reason when the framework is not installed (build/venv/.torch-missing or
.panel-missing, or the import fails), or when the runner declares itself unavailable on this machine (its
--capabilities has "unavailable": e.g. an OpenVINO precision hint the CPU plugin does not honour here).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNERS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "runners")

# Alike check_panel.py (the expectations below, one constant each): kept apart because each is one finding's
# expected verdict, diagnosis and reason (data, not logic); only the tuple shape repeats.
NAN_LEAK = ("FAIL", "nan-leak", "NaN/Inf in masked-out K/V reaches the output: P is 0 there, but 0 x NaN in P.V is "
            "NaN (the framework multiplies masked positions instead of skipping them)")
STALE_GAIN = ("WARN", "stale-max", "P normalised in fp32, then rounded to fp16/bf16 for P.V: the rounded weights of a "
              "row no longer sum to one, a coherent row gain the size a stale running max gives (the ideal "
              "pipeline and FA-style kernels avoid it); precision behaviour, not a spec departure")
D1_NAN = ("FAIL", "nan-fully-masked", "fully masked rows give NaN: Softmax over a row of -inf is 0/0 (the graph has "
          "no guard); D1 wants a finite value")

# The wider panel. Each reason says which kind of departure it is: "defect" (contradicts the framework's
# own documentation, or fails on a valid input), "documented behaviour", "semantics difference" (the framework
# means something else than the operator) or "unspecified". docs/findings.md pins each defect down (reproducer,
# tracker).
OV_D1 = ("FAIL", "nan-fully-masked", "documented behaviour: ScaledDotProductAttention-13's specification turns the "
         "boolean mask into a -inf bias and applies Softmax, so a row with no position taking part is 0/0 = NaN (the "
         "f32 and f16 models; the bf16 model returns finite values on this CPU); D1 wants a finite value")
ORT_FP16 = ("documented behaviour: without softmax_precision the ONNX Attention spec computes the softmax in the input "
            "precision; ONNX Runtime's CPU kernel (opset 24) computes fp16 cases in fp16, errors 1.6-3.8 x the plain "
            "fp32-softmax reference")
ORT_EMPTY24 = ("FAIL", "error-status", "semantics difference: ONNX Runtime's Attention kernel refuses 0 keys with a "
               "parameter check ('KV sequence length must be greater than 0'); the ONNX spec is silent, the operator "
               "gives D1 rows")
ORT_EMPTY25 = ("FAIL", "error-status", "defect (docs/findings.md, 2): the ONNX function body of Attention-25, as ONNX "
               "Runtime 1.32 runs it, fails in a Reshape for 0 keys (input {1,2,1,0,16}, requested {1,2,1,16}) instead "
               "of giving the spec's zero rows for fully masked queries")
GQA_D1 = ("FAIL", "nan-fully-masked", "semantics difference: GroupQueryAttention takes the mask as an additive "
          "attention_bias; a row whose bias is -inf everywhere is 0/0 = NaN (the op's docs say nothing about such "
          "rows; D1 wants a finite value)")
MHA_UNI = ("FAIL", "unknown", "defect (docs/findings.md, 1): MultiHeadAttention's unidirectional=1 with S1 < S2 and no "
           "past matches neither causal alignment: the first rows attend keys j <= i, the last ones every key (3 "
           "queries x 6 keys: {0}, {0,1}, {0..5}); the docs say every token attends only to previous tokens")
JAX_FP16 = ("defect (docs/findings.md, 3): under jax.jit on the CPU, fp16 dot_product_attention raises \"The precision "
            "'F16_F16_F32' is not supported by dot_general on CPU\": the function's fallback to the default precision "
            "catches the error only in eager mode")
JAX_BF16_1 = ("FAIL", "error-status", "defect (docs/findings.md, 4): jax.jit(dot_product_attention) on bf16 with "
              "batch 1, one head, one query and one key fails to compile on the CPU: \"Algorithm not supported by "
              "the ElementalIrEmitter: ALG_DOT_BF16_BF16_F32\"")
JAX_D1_BWD = ("FAIL", "unknown", "semantics difference: the function masks with a large finite negative value "
              "(-0.7 x the fp32 maximum), so a fully masked row is a uniform average of V (finite, accepted forward) "
              "whose gradient reaches dk / dv; the operator's D1 rows contribute nothing")
FLEX_EMPTY = ("FAIL", "error-status", "unspecified (docs/findings.md, 6; the docs are silent on 0 keys): eager "
              "flex_attention raises IndexError ('max(): Expected reduction dim 3 to have non-zero size') for 0 keys, "
              "where SDPA gives the fully masked rows' zeros")
MHA_D1 = ("FAIL", "nan-fully-masked", "semantics difference: with need_weights=True the module computes softmax over "
          "the masked scores itself, a row of -inf is 0/0 = NaN (need_weights=False goes through SDPA, which "
          "returns 0 there); D1 wants a finite value")
MHA_16 = ("documented behaviour: with need_weights=True the module computes the attention weights in the module's "
          "dtype (fp16 / bf16 softmax), errors up to 3.3 x the plain fp32-softmax reference")
MSP_EMPTY = ("FAIL", "error-status", "unspecified (the tool's docs are silent on 0 keys): the tool crashes on 0 keys "
             "(torch.max over an empty dimension) where the operator gives D1 rows")
MSP_MODE4 = ("FAIL", "unknown", "defect (docs/findings.md, 7): the tool rebuilds sparse mode 4 as a top-left band "
             "(triu(next + 1), tril(-pre - 1)) where the operator's mode 4 is anchored bottom-right "
             "(next + S2 - S1, pre - (S2 - S1)); wrong whenever S1 != S2")
MSP_MODE6 = ("FAIL", "error-status", "defect (docs/findings.md, 9): the tool does not rebuild the compressed 3072 x "
             "2048 mask of sparse mode 6 and fails with a shape error (it handles modes 2-4 only)")
MSP_DV = ("FAIL", "error-status", "defect (docs/findings.md, 8): npu_fusion_attention_grad sums the GQA group of dv "
          "with the head size of q / k (reshape(b, n2, g, s2, d)): with Dv != Dk it raises a shape error")
MSP_D1_BWD = ("FAIL", "unknown", "semantics difference: the tool masks by adding -40000, so a fully masked row is a "
              "softmax over its unmasked scores, whose gradient reaches dk / dv; D1 rows contribute nothing")


def nan_leaks(*names):
    return {n: NAN_LEAK for n in names}


# Known behaviour of each implementation: case -> (verdict, diagnosis, why). Cases absent from the run are ignored.
EXPECTED = {
    "torch_sdpa.py:math": {"bd_nan_in_masked_kv": NAN_LEAK, "bd_nan_in_masked_kv_bf16": NAN_LEAK},
    "torch_sdpa.py:flash": {"bd_nan_in_masked_kv": NAN_LEAK, "bd_nan_in_masked_kv_bf16": NAN_LEAK},
    "numpy_attention.py": {"bd_nan_in_masked_kv": NAN_LEAK, "bd_nan_in_masked_kv_bf16": NAN_LEAK,
                           "pr_dominant_late_bf16": STALE_GAIN, "pr_dominant_late_fp16": STALE_GAIN,
                           "eq_bf16_d576_dv512": STALE_GAIN, "gw_fp16_s256": STALE_GAIN, "rope_tnd_bf16": STALE_GAIN},
    "onnx_attention.py": {"bd_nan_in_masked_kv": NAN_LEAK, "eq_fp16_tnd_700": STALE_GAIN,
                          "pr_explicit_p_fp16": STALE_GAIN, "pr_dominant_late_fp16": STALE_GAIN,
                          "bd_d1_rows_band": D1_NAN, "m0_b1ss_negnext": D1_NAN, "m4_band_s1_gt": D1_NAN},
    "openvino_sdpa.py:default": dict(nan_leaks("bd_nan_in_masked_kv", "bd_nan_in_masked_kv_bf16"),
                                     bd_d1_rows_band=OV_D1, m0_b1ss_negnext=OV_D1, m4_band_s1_gt=OV_D1),
    "ort_attention.py:opset24": dict(nan_leaks("bd_nan_in_masked_kv"), bd_empty_s2=ORT_EMPTY24),
    "ort_attention.py:opset25": dict(nan_leaks("bd_nan_in_masked_kv"), bd_empty_s2=ORT_EMPTY25),
    "ort_contrib.py:gqa": dict(nan_leaks("bd_nan_in_masked_kv"), m0_b1ss_negnext=GQA_D1),
    "ort_contrib.py:mha": dict(nan_leaks("bd_nan_in_masked_kv"), m2_causal=MHA_UNI),
    "jax_dpa.py": dict(nan_leaks("bd_nan_in_masked_kv", "bd_nan_in_masked_kv_bf16"), bd_one_token=JAX_BF16_1,
                       gr_fp32_d1_rows=JAX_D1_BWD, pr_dominant_late_bf16=STALE_GAIN),
    "torch_flex.py": dict(nan_leaks("bd_nan_in_masked_kv", "bd_nan_in_masked_kv_bf16"), bd_empty_s2=FLEX_EMPTY,
                          **{n: STALE_GAIN for n in ("eq_bf16_d576_dv512", "pr_dominant_late_bf16",
                                                     "pr_dominant_late_fp16", "gw_fp16_s256", "rope_tnd_bf16")}),
    "torch_mha.py:weights": dict(nan_leaks("bd_nan_in_masked_kv", "bd_nan_in_masked_kv_bf16"),
                                 gr_fp32_d1_rows=("FAIL", "nan-fully-masked", MHA_D1[2]),
                                 **{n: MHA_D1 for n in ("ln_m0_11ss_negnext_2049", "ln_m4_negnext_1281",
                                                        "bd_d1_rows_m3", "bd_d1_rows_band", "bd_first_tile_masked",
                                                        "m0_b1ss_negnext", "m3_s1_gt_s2_d1rows", "m4_band_s1_gt")}),
    "torch_mha.py:noweights": nan_leaks("bd_nan_in_masked_kv", "bd_nan_in_masked_kv_bf16"),
    "msprobe_fa.py": dict(nan_leaks("bd_nan_in_masked_kv", "bd_nan_in_masked_kv_bf16"), bd_empty_s2=MSP_EMPTY,
                          bwd_bsh_bf16=MSP_DV, gr_fp32_d1_rows=MSP_D1_BWD,
                          **{n: MSP_MODE4 for n in ("m4_band", "m4_band_s1_gt", "m4_negnext", "bwd_m4_fp16")},
                          **{n: MSP_MODE6 for n in ("m6_prefix", "m6_prefix_s1_gt", "ln_m6_prefix_2047",
                                                    "bwd_m6_prefix_fp32")}),
}
EXPECTED["openvino_sdpa.py:f32"] = EXPECTED["openvino_sdpa.py:default"]  # f32 is what the plugin picks on AVX2
# A 16-bit pipeline of the framework's own: since the diagnosis names a textbook attention in the input dtype
# (native-dtype), those cases say so instead of "unknown".
PRECISION = [("WARN", "precision"), ("WARN", "stale-max"), ("FAIL", "unknown"), ("WARN", "native-dtype"),
             ("FAIL", "native-dtype")]
# Groups of cases flagged for one reason: select (case fields; "name" / "why" are regular expressions), the verdicts
# and diagnoses allowed (None: any diagnosis), the minimum number flagged per set.
CLASSES = {
    "ort_attention.py:opset24": [{"name": "fp16 precision", "select": {"dtype": "fp16", "op": "fwd"},
                                  "allow": PRECISION, "why": ORT_FP16, "min_flagged": {"default": 1}}],
    "jax_dpa.py": [{"name": "fp16 under jit", "select": {"dtype": "fp16", "why": "F16_F16_F32"},
                    "allow": [("FAIL", "error-status")], "why": JAX_FP16,
                    "min_flagged": {"quick": 1, "default": 1}}],
    "torch_mha.py:weights": [{"name": "16-bit weights", "select": {"dtype": ["fp16", "bf16"]},
                              "allow": PRECISION, "why": MHA_16, "min_flagged": {"default": 1}}],
}

NEEDS = {"torch_sdpa.py": "import torch", "numpy_attention.py": "import numpy, ml_dtypes",
         "onnx_attention.py": "import numpy, onnx, onnxruntime", "openvino_sdpa.py": "import numpy, openvino",
         "ort_attention.py": "import numpy, onnx, onnxruntime", "ort_contrib.py": "import numpy, onnx, onnxruntime",
         "torch_flex.py": "import torch", "torch_mha.py": "import torch", "jax_dpa.py": "import jax",
         "msprobe_fa.py": "import torch, msprobe.pytorch.bench_functions.npu_fusion_attention"}
MIN_JUDGED = {"quick": 5, "default": 30}
# Runners whose frameworks come from `make panel-deps` (build/venv/.panel-missing names those that failed).
PANEL_DEPS = ("openvino_sdpa.py", "jax_dpa.py", "msprobe_fa.py")
# Runners that declare their capabilities (--capabilities; "unavailable" there SKIPs the whole runner).
DECLARES = ("openvino_sdpa.py", "ort_attention.py", "ort_contrib.py", "jax_dpa.py", "torch_flex.py", "torch_mha.py",
            "msprobe_fa.py", "torch_sdpa.py", "numpy_attention.py", "onnx_attention.py")


# The declaration vocabulary (docs/exec-protocol.md, "Runner capabilities (declared)").
CAPS_TOP = {"format", "runner", "framework", "variant", "variants", "unavailable", "ops", "notes", "repro"}
CAPS_AXES = {"dtypes": {"fp32", "fp16", "bf16", "e4m3fn", "e5m2", "hif8"},
             "layouts": {"BSH", "SBH", "BSND", "BNSD", "TND"}, "sparse_modes": set(range(9)),
             "mask_shapes": {"SS", "11SS", "B1SS", "BNSS"}, "pse_types": {0, 1, 2, 3},
             "pse_shapes": {"BNSS", "BN1S", "1NSS", "compressed"}, "topk": {"none", "unique", "any"},
             "scale": {"any", "2^k/sqrt(D)", "dtype"}, "mask_handover": {"bool", "additive_inf", "additive_min"}}
CAPS_BOOLS = {"band", "prefix", "dropout", "sink", "rope", "gqa", "dv_ne_dk", "empty", "s1_le_s2"}


def validate(caps):
    """The problems of one capability declaration, as text (an empty list when it follows the vocabulary)."""
    bad = []
    if caps.get("format") != "flashref-capabilities/1":
        bad.append("format %r" % caps.get("format"))
    bad += ["unknown key %r" % k for k in caps if k not in CAPS_TOP]
    if "repro" in caps and not isinstance(caps["repro"], bool):
        bad.append("repro: %r is not a bool" % caps["repro"])
    for op, axes in caps.get("ops", {}).items():
        if op not in ("fwd", "bwd"):
            bad.append("op %r" % op)
        for k, v in axes.items():
            if k in CAPS_AXES:
                bad += ["%s.%s: %r" % (op, k, x) for x in (v if isinstance(v, list) else [v])
                        if x not in CAPS_AXES[k]]
            elif k in CAPS_BOOLS:
                if not isinstance(v, bool):
                    bad.append("%s.%s: %r is not a bool" % (op, k, v))
            elif k == "head_dim":
                if not (isinstance(v, list) and len(v) == 2 and 1 <= v[0] <= v[1]):
                    bad.append("%s.head_dim: %r" % (op, v))
            elif k == "head_dim_multiple":
                if not (isinstance(v, int) and v >= 1):
                    bad.append("%s.head_dim_multiple: %r" % (op, v))
            else:
                bad.append("%s: unknown axis %r" % (op, k))
    return bad


def skip(msg):
    print("=" * 78)
    print("SKIP (panel): " + msg)
    print("=" * 78)
    sys.exit(77)


def matches(case, sel):
    """Whether a case (its JSON record) is in a class: every key of sel equals the record's value (or is one of a
    list of values), except "name" and "why", which are regular expressions searched in the case's name / failure
    message."""
    for k, v in sel.items():
        if k in ("name", "why"):
            if not re.search(v, case.get(k, "")):
                return False
        elif case.get(k) not in (v if isinstance(v, list) else [v]):
            return False
    return True


def check(res, runner, set_name):
    """The mismatches between a run's JSON and the runner's expectations, and the departures seen."""
    exp = EXPECTED.get(runner, {})
    classes = CLASSES.get(runner, [])
    bad, seen = [], []
    flagged_in = [0] * len(classes)
    count = {"PASS": 0, "WARN": 0, "FAIL": 0, "SKIP": 0}
    for c in res["cases"]:
        v, d, n = c["verdict"], c["diagnosis"], c["name"]
        count[v] = count.get(v, 0) + 1
        if n in exp:
            ev, ed, why = exp[n]
            if v == "SKIP":
                continue
            seen.append("%s: %s %s (%s)" % (n, v, d, why))
            if (v, d) != (ev, ed):
                bad.append("%s: %s %s, expected the known departure %s %s (%s)" % (n, v, d, ev, ed, why))
            continue
        if v not in ("FAIL", "WARN"):
            continue
        for i, cl in enumerate(classes):
            if matches(c, cl["select"]) and any(v == av and (ad is None or d == ad) for av, ad in cl["allow"]):
                flagged_in[i] += 1
                break
        else:
            bad.append("%s: %s %s: %s" % (n, v, d, c["why"]))
    for cl, k in zip(classes, flagged_in):
        if k:
            seen.append("%d case(s) of class %s (%s)" % (k, cl["name"], cl["why"]))
        elif cl.get("min_flagged", {}).get(set_name, 0) > k:
            bad.append("class %s: no case flagged on %s, expected the known departure (%s)"
                       % (cl["name"], set_name, cl["why"]))
    judged = count["PASS"] + count["WARN"] + count["FAIL"]
    if judged < MIN_JUDGED.get(set_name, 1):
        bad.append("only %d case(s) judged (at least %d expected): the runner skips too much" %
                   (judged, MIN_JUDGED.get(set_name, 1)))
    return bad, seen, count


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flashref", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--runner", required=True)
    ap.add_argument("--set", required=True)
    ap.add_argument("--json")
    a = ap.parse_args()
    file, _, arg = a.runner.partition(":")
    venv = os.path.dirname(os.path.dirname(a.python))
    for marker in (".torch-missing", ".panel-missing"):
        if os.path.exists(os.path.join(venv, marker)) and (marker == ".torch-missing" or file in PANEL_DEPS):
            with open(os.path.join(venv, marker)) as f:
                note = f.read().strip()
            r = subprocess.run([a.python, "-c", NEEDS[file]], capture_output=True, text=True) \
                if os.access(a.python, os.X_OK) else None
            if r is None or r.returncode:
                skip("%s: %s" % (os.path.join(venv, marker), note))
    if not os.access(a.python, os.X_OK):
        skip("no Python venv at %s (make venv torch panel-deps)" % a.python)
    r = subprocess.run([a.python, "-c", NEEDS[file]], capture_output=True, text=True)
    if r.returncode:
        skip("%s cannot '%s': %s" % (a.python, NEEDS[file], (r.stderr.strip().splitlines() or ["?"])[-1]))
    argv = [a.python, os.path.join(RUNNERS, file)] + ([arg] if arg else [])
    if file in DECLARES:
        r = subprocess.run(argv + ["--capabilities"], capture_output=True, text=True)
        if r.returncode:
            print("runner --capabilities failed (%d): %s" % (r.returncode, r.stderr[-2000:]))
            return 1
        # the declaration is the JSON line; a framework may print its own lines on import (mindstudio-probe warns
        # on stdout when torch_npu is the CPU stand-in), which the protocol ignores too
        lines = [ln for ln in r.stdout.splitlines() if ln.lstrip().startswith("{")]
        if not lines:
            print("runner --capabilities printed no JSON line: %s" % r.stdout[-2000:])
            return 1
        caps = json.loads(lines[-1])
        problems = validate(caps)
        if problems:
            print("runner declaration does not follow the vocabulary: " + "; ".join(problems))
            return 1
        if caps.get("unavailable"):
            skip("%s: %s" % (a.runner, caps["unavailable"]))
    cmd = " ".join(argv)
    out = a.json or os.path.join(tempfile.mkdtemp(prefix="fr-panel-"), "panel.json")
    t0 = time.time()
    p = subprocess.run([a.flashref, "suite", "--set", a.set, "--impl", "persistent:" + cmd, "--json", out],
                       capture_output=True, text=True)
    wall = time.time() - t0
    sys.stdout.write(p.stdout[-6000:])
    if p.returncode not in (0, 1):
        print("flashref suite exited %d: %s" % (p.returncode, p.stderr[-2000:]))
        return 1
    with open(out) as f:
        res = json.load(f)
    bad, seen, count = check(res, a.runner, a.set)
    print("panel %s on %s: %d passed, %d flagged (WARN %d, FAIL %d), %d skipped; %.1f s" %
          (a.runner, a.set, count["PASS"], count["WARN"] + count["FAIL"], count["WARN"], count["FAIL"],
           count["SKIP"], wall))
    for s_ in seen:
        print("  known departure " + s_)
    for b in bad:
        print("PANEL MISMATCH: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
