#!/usr/bin/env python3
"""PyTorch eager on the GPU, on the workloads of bench_cuda: the same models
as bench_cpu_torch.py (MLP, BERT-base layer, ResNet-18, masked softmax, BERT
embeddings), float32, no
TF32, under no_grad, timed with cuda.synchronize around each run. Prints one
JSON object per workload: median and min milliseconds of N runs after a
warm-up."""
import json
import sys
import time

import torch

from bench_cpu_torch import Bert, Embedding, MaskedSoftmax, ResNet18, make_input, mlp

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 50
torch.backends.cuda.matmul.allow_tf32 = False  # the same float32 products Saturn computes
torch.backends.cudnn.allow_tf32 = False
torch.manual_seed(0)
dev = torch.device("cuda")
work = [("mlp", mlp(), (64, 784)), ("bert_layer", Bert(), (1, 128, 768)), ("resnet18", ResNet18(), (1, 3, 224, 224)),
        ("masked_softmax", MaskedSoftmax(), [(12, 384, 384), (torch.bool, (384, 384)), (torch.int64, (1, 384))]),
        ("embedding", Embedding(), [("ids", (1, 128))])]
for name, model, shape in work:
    model = model.eval().to(dev)
    # One input shape, or a list of input specs (bench_cpu_torch.make_input).
    xs = tuple(make_input(s).to(dev) for s in shape) if isinstance(shape, list) else (make_input(shape).to(dev),)
    with torch.no_grad():
        for _ in range(10):
            model(*xs)
        torch.cuda.synchronize()
        ms = []
        for _ in range(RUNS):
            t0 = time.perf_counter()
            model(*xs)
            torch.cuda.synchronize()
            ms.append((time.perf_counter() - t0) * 1e3)
    ms.sort()
    print(json.dumps({"workload": name, "median_ms": ms[len(ms) // 2], "min_ms": ms[0], "setting": "eager",
                      "device": torch.cuda.get_device_name(0), "torch": torch.__version__}), flush=True)
