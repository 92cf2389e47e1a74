#!/bin/sh
# `pip install .` of a clean clone into a fresh venv, then the installed package used as a user would: the import,
# the `flashref` console script, the operator, an in-process verify, and the pytest plugin through its entry point.
# usage: scripts/python-wheel-check.sh [BUILD_DIR]   (make python-wheel-check). Tests the committed HEAD.
set -eu
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mkdir -p "$BUILD" && cd "$BUILD" && pwd)/wheel-check
rm -rf "$WORK"
mkdir -p "$WORK"
echo "wheel-check: cloning HEAD of $ROOT"
git clone -q --no-local "$ROOT" "$WORK/src"
python3 -m venv "$WORK/venv"
echo "wheel-check: pip install . (build isolation: scikit-build-core from PyPI, the CMake build)"
"$WORK/venv/bin/pip" install -q "$WORK/src"
"$WORK/venv/bin/pip" install -q pytest
cd "$WORK"   # not the source tree: the installed package must stand alone
"$WORK/venv/bin/flashref" version
"$WORK/venv/bin/python" - <<'PY'
import numpy as np
import flashref
assert "/site-packages/flashref/_native/" in flashref.library_path(), flashref.library_path()
q = np.random.default_rng(1).standard_normal((1, 2, 16, 8)).astype(np.float32)
out, m, l = flashref.attention(q, q, q, input_layout="BNSD", head_num=2, scale=0.35)
g = flashref.attention(q, q, q, input_layout="BNSD", head_num=2, scale=0.35, engine="golden")
assert np.max(np.abs(out - g.out)) < 1e-5
r = flashref.verify(lambda c: c.attention(), set="quick", filter="eq_")
assert r.passed, r.summary()
print("wheel-check: import, attention, verify: ok (%s)" % r.summary().splitlines()[0])
PY
# flashref.npu from the wheel (numpy only here): the subpackage and the stand-in's torch_npu shim are installed.
"$WORK/venv/bin/python" - <<'PY'
import os
import numpy as np
import flashref.npu as fnpu
shim = os.path.join(os.path.dirname(fnpu.__file__), "_shim", "torch_npu", "__init__.py")
assert os.path.isfile(shim), shim
q = np.random.default_rng(2).standard_normal((1, 2, 16, 8)).astype(np.float32)
res = fnpu.npu_fusion_attention(q, q, q, 2, "BNSD", scale=0.35)
assert len(res) == 7 and res[1].shape == (1, 2, 16, 8) and res[6] == 2 * 16 * 16, res[4:]
print("wheel-check: flashref.npu: ok")
PY
cat > "$WORK/test_user.py" <<'PY'
def test_fast(flashref_case):
    flashref_case.check(lambda case: case.attention())
PY
n=$("$WORK/venv/bin/python" -c "import flashref; print(len(flashref.list_cases('quick', 'eq_')))")
"$WORK/venv/bin/python" -m pytest -q -p no:cacheprovider --flashref-set=quick --flashref-filter=eq_ test_user.py \
  | tee "$WORK/pytest.log"
grep -q "$n passed" "$WORK/pytest.log" || { echo "wheel-check: FAIL: expected $n items to pass"; exit 1; }
echo "wheel-check: PASS"
