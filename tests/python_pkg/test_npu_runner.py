"""runners/torch_npu.py end to end without an NPU: `flashref suite --impl persistent:` drives it under flashref's
CPU stand-in for torch_npu (python -m flashref.npu run ... --device cpu). On the default set every case it maps is
judged and none is flagged; every SKIP is one of the listed, justified departures. Under a stand-in with a known
defect injected (npu_defect_standin.py) the suite catches it and names it. The repro command writes a standalone
torch_npu script that runs (here under the stand-in, .npu() kept on the CPU)."""

import json
import os
import subprocess
import sys

import pytest

import flashref
from conftest import HERE, torch_or_skip

torch = torch_or_skip()

RUNNER = os.path.join(os.path.dirname(os.path.dirname(HERE)), "runners", "torch_npu.py")

# What torch_npu cannot be given, each with why (docs/ascend.md): a SKIP with any other reason is a failure.
DEPARTURES = {
    "inputs: npu_fusion_attention takes fp16 / bf16 / fp32": "fp8 / hif8 is npu_quant_fusion_attention (Ascend 950)",
    "topk_indices: a flashref extension": "D7 has no torch_npu argument",
    "dropout in a backward case": "npu_fusion_attention_grad regenerates the mask from (seed, offset), takes none",
    "query_rope / key_rope: the NPU (Atlas A2) runs rope only with TND": "op-plugin's A2 path, operator-spec 2.3",
}


def _env():
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(flashref.__file__)))
    return dict(os.environ, PYTHONPATH=os.pathsep.join([pkg] + [p for p in [os.environ.get("PYTHONPATH")] if p]))


def suite(cli, tmp_path, impl, *opts):
    out = str(tmp_path / "suite.json")
    p = subprocess.run([cli, "suite", "--set", "default", "--impl", "persistent:" + impl, "--json", out] + list(opts),
                       capture_output=True, text=True, env=_env(), timeout=900)
    assert os.path.exists(out), p.stdout[-3000:] + p.stderr[-3000:]
    with open(out) as f:
        return p, json.load(f)


def test_default_set_through_the_standin(cli, tmp_path):
    impl = "%s -m flashref.npu run %s --device cpu" % (sys.executable, RUNNER)
    p, res = suite(cli, tmp_path, impl)
    bad, judged = [], 0
    for c in res["cases"]:
        if c["verdict"] == "SKIP":
            if not any(reason in c["why"] for reason in DEPARTURES):
                bad.append("%s: SKIP not listed as a departure: %s" % (c["name"], c["why"]))
        elif c["verdict"] != "PASS":
            bad.append("%s: %s %s: %s" % (c["name"], c["verdict"], c["diagnosis"], c["why"]))
        else:
            judged += 1
    assert not bad, "\n".join(bad)
    assert judged >= 170, p.stdout[-3000:]          # 176 of 198 when written; the rest are the departures
    assert p.returncode == 0


# band-next widens the band by one: the mode-4 band cases show it. The mode-0 cases cannot, and must not: their masks
# hold the band (inside the operator's contract), so a band wider than asked changes nothing there, as the spec's
# "the mask alone" reading of mode 0 says (docs/semantics-decisions.md D12).
@pytest.mark.parametrize("defect, filt, diagnosis", [("band-next", "m4_band", "band"),
                                                      ("softmax-sum", "fwd_bnsd", "softmax-stats")])
def test_a_defective_npu_is_caught_and_named(cli, tmp_path, defect, filt, diagnosis):
    impl = "%s %s --defect %s %s --device cpu" % (sys.executable, os.path.join(HERE, "npu_defect_standin.py"), defect,
                                                  RUNNER)
    p, res = suite(cli, tmp_path, impl, "--filter", filt)
    judged = [c for c in res["cases"] if c["verdict"] != "SKIP"]
    assert len(judged) >= 3 and all(c["verdict"] == "FAIL" for c in judged), p.stdout[-3000:]
    assert all(c["diagnosis"] == diagnosis for c in judged), [(c["name"], c["diagnosis"]) for c in judged]
    assert res["primary_diagnosis"] == diagnosis and p.returncode == 1


def test_repro_is_a_standalone_torch_npu_script(cli, tmp_path):
    # a TND backward case, pse_type 0 (so the _v2 grad, which on Atlas A2 reads the statistics N1-major whatever
    # softmax_layout says), statistics asked for in the TND layout, compressed pse: the subtle mapping
    cases = tmp_path / "cases"
    p = subprocess.run([cli, "suite", "--set", "default", "--only", "bwd_tnd_softmax_tnd_comp_pse", "--write",
                        str(cases)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    case = cases / "bwd_tnd_softmax_tnd_comp_pse"
    src = subprocess.run([sys.executable, RUNNER, "repro", str(case)], capture_output=True, text=True, env=_env(),
                         timeout=120)
    assert src.returncode == 0, src.stderr
    assert "torch_npu.npu_fusion_attention_grad_v2(" in src.stdout and "softmax_layout='TND'" in src.stdout
    script = tmp_path / "repro_case.py"
    script.write_text(src.stdout)
    r = subprocess.run([sys.executable, "-m", "flashref.npu", "run", "--npu-to-cpu", str(script)],
                       capture_output=True, text=True, env=_env(), timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 7 and lines[0].startswith("0 ("), r.stdout   # dq, dk, dv, dpse, dq_rope, dk_rope, dsink
