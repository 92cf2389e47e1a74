# needs: onnxruntime, onnx
# signature: Reshape node.*requested shape:\{1,2,1,16\}
# found-on: onnxruntime==1.32.0, onnx==1.23.2
# ONNX Runtime runs the ONNX function body of Attention-25 (no kernel for opset 25): with an empty key sequence
# (kv_sequence_length = 0) a Reshape in the body gets a computed shape containing 0, which Reshape (allowzero = 0)
# reads as "copy the input dimension", and the model fails. Softmax over no keys times 0 x Dv values is a zero row.
import numpy as np, onnxruntime as ort
from onnx import TensorProto, helper
B, N, S1, S2, D = 1, 2, 1, 0, 16
rng = np.random.default_rng(0)
q = rng.standard_normal((B, N, S1, D)).astype(np.float32)
k = np.zeros((B, N, S2, D), np.float32)
v = np.zeros((B, N, S2, D), np.float32)
vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
graph = helper.make_graph([helper.make_node("Attention", ["Q", "K", "V"], ["O"])], "g",
                          [vi("Q"), vi("K"), vi("V")], [vi("O")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
model.ir_version = 10
sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
print("onnxruntime", ort.__version__)
o = sess.run(None, {"Q": q, "K": k, "V": v})[0]  # fails here on 1.32
expect = np.zeros((B, N, S1, D))  # softmax over no keys, times a 0 x D value matrix
assert o.shape == expect.shape and np.array_equal(o, expect), (o.shape, o)
print("fixed: zero rows for 0 keys")
