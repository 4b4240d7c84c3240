#!/usr/bin/env python3
"""PyTorch eager on the GPU, on the workloads of bench_cuda: the same models
as bench_cpu_torch.py (MLP, BERT-base layer, ResNet-18, masked softmax, BERT
embeddings), float32, no
TF32, under no_grad, timed with cuda.synchronize around each run. Prints one
JSON object per workload: median and min milliseconds of N runs after a
warm-up with inputs and result on the device, and the median from host
inputs to a host result (the copies included, as bench_cuda times Saturn)."""
import json
import sys
import time

import torch

from bench_cpu_torch import Bert, Embedding, MaskedSoftmax, ResNet18, make_input, mlp

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 50
torch.backends.cuda.matmul.allow_tf32 = False  # the same float32 products Saturn computes
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False  # f16 products sum in f32, as Saturn's
torch.manual_seed(0)
dev = torch.device("cuda")


class FfnF16(torch.nn.Module):
    """bench/models.hpp's ffn_f16: gelu(x W), f16 throughout."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter((torch.rand(4096, 4096) * 0.04 - 0.02).half())

    def forward(self, x):
        return torch.nn.functional.gelu(x @ self.w)


def make(spec):
    """make_input's specs, or (None, shape): f16 values from randn."""
    return make_input(spec[1]).half() if spec[0] is None else make_input(spec)


work = [("mlp", mlp(), (64, 784)), ("bert_layer", Bert(), (1, 128, 768)), ("resnet18", ResNet18(), (1, 3, 224, 224)),
        ("masked_softmax", MaskedSoftmax(), [(12, 384, 384), (torch.bool, (384, 384)), (torch.int64, (1, 384))]),
        ("embedding", Embedding(), [("ids", (1, 128))]), ("ffn_f16", FfnF16(), [(None, (512, 4096))])]


def timed(run):
    for _ in range(10):
        run()
    torch.cuda.synchronize()
    ms = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        run()
        torch.cuda.synchronize()
        ms.append((time.perf_counter() - t0) * 1e3)
    return sorted(ms)


for name, model, shape in work:
    model = model.eval().to(dev)
    # One input shape, or a list of input specs (bench_cpu_torch.make_input).
    host = tuple(make(s) for s in shape) if isinstance(shape, list) else (make_input(shape),)
    xs = tuple(x.to(dev) for x in host)
    with torch.no_grad():
        ms = timed(lambda: model(*xs))  # inputs and result on the device
        # From host inputs to a host result, as Saturn's run is timed.
        h2h = timed(lambda: model(*(x.to(dev) for x in host)).cpu())
    print(json.dumps({"workload": name, "median_ms": ms[len(ms) // 2], "min_ms": ms[0],
                      "host_median_ms": h2h[len(h2h) // 2], "setting": "eager",
                      "device": torch.cuda.get_device_name(0), "torch": torch.__version__}), flush=True)
