#!/usr/bin/env python3
"""Quantized models: Saturn's int8 program against its float one and ONNX Runtime.

For each model: export it from Debian's torch/torchvision (random weights,
seed 0, opset 17), quantize it with ONNX Runtime's static quantizer (QDQ,
per-channel s8 weights, u8 activations, calibrated on 8 random inputs), then
in one run, interleaved:
  saturn f32   saturn run --target cpu on the float model
  saturn int8  saturn run --target cpu on the quantized model
  ort f32/int8 ONNX Runtime (2 intra-op threads, all graph optimizations,
               best of spinning on/off)
and check Saturn's int8 output against ONNX Runtime's: within one
quantization step of the output (the scale of the DequantizeLinear that
gives it).

Run with a python that has onnxruntime, onnx and numpy (a venv); torch runs
in --torch-python (Debian's python3-torch):

    /path/to/venv/bin/python bench/bench_quantized.py [--models resnet18 mobilenet_v2]

--write-fixture DIR writes the test suite's small quantized CNN
(qdq_cnn.onnx, its input and ONNX Runtime's output) into DIR and stops.
"""
import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
from onnxruntime.quantization.shape_inference import quant_pre_process

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SATURN = os.path.join(ROOT, "build", "tools", "saturn")

EXPORT = r"""
import sys, torch, torchvision
torch.manual_seed(0)
name, size, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if name == "qdq_cnn":
    class Block(torch.nn.Module):
        def __init__(self, c):
            super().__init__()
            self.a = torch.nn.Conv2d(c, c, 3, padding=1)
            self.b = torch.nn.Conv2d(c, c, 3, padding=1, groups=c)
        def forward(self, x):
            return torch.relu(x + self.b(torch.relu(self.a(x))))
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, stride=2, padding=1), torch.nn.ReLU(), Block(16),
                            torch.nn.MaxPool2d(2), torch.nn.Conv2d(16, 32, 1), torch.nn.ReLU(),
                            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10))
else:
    m = getattr(torchvision.models, name)(weights=None)
m.eval()
torch.onnx.export(m, torch.randn(1, 3, size, size), path, opset_version=17, input_names=["x"], output_names=["y"])
"""


def export(torch_python, name, size, path):
    subprocess.run([torch_python, "-c", EXPORT, name, str(size), path], check=True, stderr=subprocess.DEVNULL)


def quantize(src, dst, dims, optimize=True):
    rng = np.random.default_rng(0)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.n = 0

        def get_next(self):
            if self.n >= 8:
                return None
            self.n += 1
            return {"x": rng.standard_normal(dims).astype(np.float32)}

    pre = src + ".pre.onnx"
    # (optimize=False: without ONNX Runtime's graph optimizations, which
    # would turn MatMul + Add into Gemm first, the products stay the MatMuls
    # exporters write.)
    quant_pre_process(src, pre, skip_symbolic_shape=True, skip_optimization=not optimize)
    quantize_static(pre, dst, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)


def output_step(path):
    """The scale of the DequantizeLinear giving the model's output."""
    m = onnx.load(path)
    init = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    out = m.graph.output[0].name
    for n in m.graph.node:
        if n.op_type == "DequantizeLinear" and n.output[0] == out:
            return float(np.max(init[n.input[1]]))
    raise SystemExit(f"{path}: the output is not dequantized")


def ort_session(path, spinning):
    o = ort.SessionOptions()
    o.intra_op_num_threads = 2
    o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    o.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    return ort.InferenceSession(path, o, providers=["CPUExecutionProvider"])


def ort_ms(sessions, x, runs):
    best = None
    for s in sessions:
        for _ in range(2):
            s.run(None, {"x": x})
        t = []
        for _ in range(runs):
            a = time.perf_counter()
            s.run(None, {"x": x})
            t.append((time.perf_counter() - a) * 1e3)
        m = float(np.median(t))
        best = m if best is None else min(best, m)
    return best


def saturn_ms(model, x_path, runs):
    r = subprocess.run([SATURN, "run", model, "--target", "cpu", "--threads", "2", "--inputs", x_path, "--bench",
                        str(runs), "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"saturn run {model}: {r.stderr.strip()}")
    return json.loads(r.stdout)["median_ms"]


def saturn_output(model, x_path, folder):
    subprocess.run([SATURN, "run", model, "--target", "cpu", "--inputs", x_path, "-o", folder], check=True,
                   capture_output=True)
    t = onnx.TensorProto()
    with open(os.path.join(folder, "output_0.pb"), "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def write_tensor(path, a, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(a, name).SerializeToString())


def write_fixture(folder, torch_python):
    os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        f32 = os.path.join(tmp, "f32.onnx")
        export(torch_python, "qdq_cnn", 32, f32)
        q = os.path.join(folder, "qdq_cnn.onnx")
        quantize(f32, q, [1, 3, 32, 32])
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)
    y = ort_session(q, False).run(None, {"x": x})[0]
    write_tensor(os.path.join(folder, "qdq_cnn.input.pb"), x, "x")
    write_tensor(os.path.join(folder, "qdq_cnn.ort.pb"), y, "y")
    print(f"wrote {q} ({os.path.getsize(q)} bytes), its input and ONNX Runtime's output")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="*",
                    default=["resnet18", "mobilenet_v2", "resnet50",
                             os.path.join(ROOT, "docs/examples/models/transformer_layer.onnx")])
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--runs", type=int, default=20, help="timed runs per round")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (the median of their medians)")
    ap.add_argument("--torch-python", default="/usr/bin/python3")
    ap.add_argument("--dir", help="keep the models here")
    ap.add_argument("--write-fixture", metavar="DIR")
    args = ap.parse_args()
    if args.write_fixture:
        write_fixture(args.write_fixture, args.torch_python)
        return
    folder = args.dir or tempfile.mkdtemp(prefix="saturn-quant-")
    os.makedirs(folder, exist_ok=True)
    rows = []
    for model in args.models:
        # A torchvision name, or an .onnx file of one input named x (the
        # bundled docs/examples/models/transformer_layer.onnx).
        name = os.path.splitext(os.path.basename(model))[0]
        f32 = os.path.join(folder, name + ".onnx")
        q = os.path.join(folder, name + "_int8.onnx")
        if model.endswith(".onnx"):
            shutil.copy(model, f32)
            dims = [d.dim_value for d in onnx.load(model).graph.input[0].type.tensor_type.shape.dim]
        else:
            dims = [1, 3, args.size, args.size]
            if not os.path.exists(f32):
                export(args.torch_python, model, args.size, f32)
        if not os.path.exists(q):
            quantize(f32, q, dims, optimize=not model.endswith(".onnx"))
        x = np.random.default_rng(1).standard_normal(dims).astype(np.float32)
        x_path = os.path.join(folder, name + ".x.npy")
        np.save(x_path, x)
        want = ort_session(q, False).run(None, {"x": x})[0]
        got = saturn_output(q, x_path, os.path.join(folder, name + "_out"))
        step = output_step(q)
        worst = float(np.max(np.abs(got - want)))
        sessions = {m: [ort_session(m, s) for s in (False, True)] for m in (f32, q)}
        times = {k: [] for k in ("saturn f32", "saturn int8", "ort f32", "ort int8")}
        for _ in range(args.rounds):
            times["saturn f32"].append(saturn_ms(f32, x_path, args.runs))
            times["saturn int8"].append(saturn_ms(q, x_path, args.runs))
            times["ort f32"].append(ort_ms(sessions[f32], x, args.runs))
            times["ort int8"].append(ort_ms(sessions[q], x, args.runs))
        med = {k: float(np.median(v)) for k, v in times.items()}
        rows.append((name, med, worst, step))
    print(f"{'model':14} {'saturn f32':>11} {'saturn int8':>11} {'ort f32':>9} {'ort int8':>9} "
          f"{'int8/f32':>9} {'vs ort int8':>11} {'max |diff| / step':>18}")
    for name, m, worst, step in rows:
        print(f"{name:14} {m['saturn f32']:9.2f}ms {m['saturn int8']:9.2f}ms {m['ort f32']:7.2f}ms "
              f"{m['ort int8']:7.2f}ms {m['saturn f32'] / m['saturn int8']:8.2f}x "
              f"{m['ort int8'] / m['saturn int8']:10.2f}x {worst / step:17.2f}")
    speedups = [m["saturn f32"] / m["saturn int8"] for _, m, _, _ in rows]
    print(f"geomean int8 over f32: {float(np.exp(np.mean(np.log(speedups)))):.2f}x (medians of {args.rounds} "
          f"interleaved rounds of {args.runs} runs, 2 threads)")
    # (ONNX Runtime requantizes in fixed point: through a LayerNorm or a
    # Softmax its values drift from ONNX's reference by more than a step.)


if __name__ == "__main__":
    main()
