# needs: onnxruntime, onnx
# signature: matches neither causal alignment
# found-on: onnxruntime==1.32.0, onnx==1.23.2
# ONNX Runtime com.microsoft MultiHeadAttention, unidirectional=1, 3 queries x 6 keys (no past): which keys each
# query row attends depends on the row in a way that is neither causal alignment. Needs: onnxruntime, onnx, numpy.
import numpy as np, onnxruntime as ort
from onnx import TensorProto, helper
B, N, S1, S2, D = 1, 1, 3, 6, 4
rng = np.random.default_rng(0)
q, k, v = (rng.standard_normal((B, s, N * D)).astype(np.float32) for s in (S1, S2, S2))
node = helper.make_node("MultiHeadAttention", ["q", "k", "v"], ["o"], domain="com.microsoft", num_heads=N,
                        unidirectional=1)
vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
model = helper.make_model(helper.make_graph([node], "g", [vi("q"), vi("k"), vi("v")], [vi("o")]),
                          opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])
model.ir_version = 10
sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
o = sess.run(None, {"q": q, "k": k, "v": v})[0].astype(np.float64)
s = q[0].astype(np.float64) @ k[0].astype(np.float64).T / np.sqrt(D)
i, j = np.arange(S1)[:, None], np.arange(S2)[None, :]
def attend(keep):
    p = np.exp(np.where(keep, s, -np.inf) - np.where(keep, s, -np.inf).max(1, keepdims=True))
    return (p / p.sum(1, keepdims=True)) @ v[0].astype(np.float64)
for name, keep in (("top-left j <= i", j <= i), ("bottom-right j <= i + S2 - S1", j <= i + S2 - S1)):
    err = np.abs(o[0] - attend(keep)).max(1)
    print("%-30s max error per query row: %s" % (name, np.array2string(err, precision=3)))
rows = [[jj for jj in range(S2) if np.abs(o[0, ii] - attend(j[0] <= jj)[ii]).max() < 1e-5] for ii in range(S1)]
print("onnxruntime", ort.__version__, "output row i matches attending keys 0..m for m in", rows)
ok = any(np.abs(o[0] - attend(keep)).max() < 1e-5 for keep in (j <= i, j <= i + S2 - S1))
assert ok, "unidirectional=1 with S1 < S2 matches neither causal alignment"
