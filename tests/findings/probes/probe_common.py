"""What the boundary probes of docs/findings.md share: the key masks they draw, ONNX Runtime sessions, the tally of
departures and the command line (SEED DRAWS). Standard library and numpy; onnxruntime only when a session is made."""
import sys

import numpy as np


def keep_mask(rng, pattern, shp, S2):
    """A boolean "takes part" mask of shape shp over S2 keys: random, dense, left / right padding (one length for the
    whole mask), or a single key left per row."""
    if pattern == "random":
        return rng.random(shp) < 0.7
    if pattern == "dense":
        return np.ones(shp, bool)
    if pattern in ("leftpad", "rightpad"):
        L, idx = int(rng.integers(1, S2 + 1)), np.arange(S2)
        return np.broadcast_to((idx >= S2 - L) if pattern == "leftpad" else (idx < L), shp).copy()
    keep = np.zeros(shp, bool)
    keep[..., int(rng.integers(0, S2))] = True
    return keep


def draw_dtype(rng):
    """("f32", np.float32) or ("f16", np.float16), evenly."""
    et = str(rng.choice(["f32", "f16"]))
    return et, np.float16 if et == "f16" else np.float32


def ort_session(model):
    """An ONNX Runtime CPU session of an onnx ModelProto: one thread (the machine is shared), no log noise."""
    import onnxruntime as ort
    model.ir_version = 10
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.log_severity_level = 1, 4
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


class Tally:
    """Counts and prints departures; done() prints the summary line and gives the exit status."""

    def __init__(self):
        self.bad = 0

    def error(self, cfg, msg):
        self.bad += 1
        print("ERROR", cfg, msg[:200])

    def check(self, ok, cfg, what):
        if not ok:
            self.bad += 1
            print("DEPARTURE", what, cfg)

    def done(self, draws):
        print("draws %d departures %d" % (draws, self.bad))
        return 1 if self.bad else 0


def cli(main):
    """usage: PROBE SEED DRAWS; exits with main(seed, draws)."""
    if len(sys.argv) != 3 or not all(a.isdigit() for a in sys.argv[1:]):
        sys.exit("usage: %s SEED DRAWS" % sys.argv[0])
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2])))
