#!/usr/bin/env python3
"""PyTorch on the same workloads as bench_cpu, in its best CPU setting:
2 threads, TorchScript + optimize_for_inference (bench_cpu.sh runs it under
OMP_WAIT_POLICY=PASSIVE and under the default, and keeps the better). Prints one JSON object per
workload: median and min milliseconds of N runs after warm-up."""
import json
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 and __name__ == "__main__" else 20
THREADS = int(sys.argv[2]) if len(sys.argv) > 2 and __name__ == "__main__" else 2
if __name__ == "__main__":
    torch.set_num_threads(THREADS)
torch.manual_seed(0)


class Bert(nn.Module):
    def __init__(self, d=768, heads=12, ffn=3072):
        super().__init__()
        self.h, self.dh = heads, d // heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.f1, self.f2 = nn.Linear(d, ffn), nn.Linear(ffn, d)
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, x):
        b, s, d = x.shape
        q = self.q(x).reshape(b, s, self.h, self.dh).transpose(1, 2)
        k = self.k(x).reshape(b, s, self.h, self.dh).permute(0, 2, 3, 1)
        v = self.v(x).reshape(b, s, self.h, self.dh).transpose(1, 2)
        p = torch.softmax(torch.matmul(q, k) / (self.dh ** 0.5), dim=-1)
        c = torch.matmul(p, v).transpose(1, 2).reshape(b, s, d)
        h = self.n1(self.o(c) + x)
        return self.n2(self.f2(F.gelu(self.f1(h))) + h)


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.skip = None
        if stride != 1 or cin != cout:
            self.skip = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
        return F.relu(y + (self.skip(x) if self.skip is not None else x))


class ResNet18(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        layers, c = [], 64
        for w in (64, 128, 256, 512):
            for i in range(2):
                layers.append(Block(c, w, 2 if (w != 64 and i == 0) else 1))
                c = w
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, 1000)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.layers(self.stem(x)), 1), 1))


class Chain8(nn.Module):
    def forward(self, x):
        return torch.sqrt(torch.sigmoid((torch.relu(x * 0.5 + 1.0) * 2.0) - 0.3) + 1.0)


class QkvSplit(nn.Module):
    def forward(self, x):
        q, k, v = x[:, :768], x[:, 768:1536], x[:, 1536:]
        return F.gelu(q * k + v)


class KvConcat(nn.Module):
    def forward(self, cache, fresh):
        return torch.cat([cache, fresh], dim=1) * 0.125


class MaskedSoftmax(nn.Module):
    def forward(self, scores, causal, keep):
        pad = (1.0 - keep.to(torch.float32)) * -10000.0
        return torch.softmax(scores.masked_fill(~causal, -1e9) + pad, dim=-1)


class Embedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.words = nn.Embedding(30522, 768)
        self.positions = nn.Parameter(torch.randn(1, 128, 768) * 0.05)
        self.norm = nn.LayerNorm(768)

    def forward(self, ids):
        return self.norm(self.words(ids) + self.positions)


def make_input(spec):
    """A shape (floats from randn), (dtype, shape): a mask of 0/1 values, or
    ("ids", shape): token ids 0 to 999."""
    if spec[0] == "ids":
        return torch.randint(0, 1000, spec[1])
    if isinstance(spec[0], torch.dtype):
        return torch.randint(0, 2, spec[1]).to(spec[0])
    return torch.randn(*spec)


class Conv1dAudio(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv1d(1, 512, 10, stride=5)
        self.b = nn.Conv1d(512, 512, 3, stride=2)

    def forward(self, x):
        return torch.relu(self.b(torch.relu(self.a(x))))


class UnetUp(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(256, 128, 2, stride=2)

    def forward(self, x):
        return torch.relu(self.up(x))


class ReflectPadConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.pad = nn.ReflectionPad2d(1)
        self.conv = nn.Conv2d(64, 64, 3)

    def forward(self, x):
        return self.conv(self.pad(x))


class ArgmaxLogits(nn.Module):
    def forward(self, x):
        return torch.argmax(x, dim=-1)


class FpnNearestAdd(nn.Module):
    def forward(self, top, lateral):
        return nn.functional.interpolate(top, scale_factor=2, mode="nearest") + lateral


class BilinearUp(nn.Module):
    def forward(self, x):
        return nn.functional.interpolate(x, size=(256, 256), mode="bilinear", align_corners=False)


class SeBlock16(nn.Module):
    def __init__(self):
        super().__init__()
        self.dw = nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=16)
        self.fc1 = nn.Conv2d(16, 8, 1)
        self.fc2 = nn.Conv2d(8, 16, 1)
        self.project = nn.Conv2d(16, 16, 1)

    def forward(self, x):
        y = torch.relu(self.dw(x))
        s = nn.functional.hardsigmoid(self.fc2(torch.relu(self.fc1(y.mean((2, 3), keepdim=True)))))
        return self.project(y * s)


def mlp():
    return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))


class MatMul(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(1024, 1024))

    def forward(self, x):
        return torch.matmul(x, self.w)


def main():
    work = [("mlp", mlp(), (64, 784)), ("bert_layer", Bert(), (1, 128, 768)), ("resnet18", ResNet18(), (1, 3, 224, 224)),
            ("chain8_16M", Chain8(), (16 * 1024 * 1024,)), ("matmul_1024", MatMul(), (1024, 1024)),
            ("qkv_split", QkvSplit(), (512, 2304)), ("kv_concat", KvConcat(), [(12, 384, 64), (12, 128, 64)]),
            ("masked_softmax", MaskedSoftmax(), [(12, 384, 384), (torch.bool, (384, 384)), (torch.int64, (1, 384))]),
            ("embedding", Embedding(), [("ids", (1, 128))]), ("conv1d_audio", Conv1dAudio(), (1, 1, 16000)),
            ("unet_up", UnetUp(), (1, 256, 32, 32)), ("reflect_pad_conv", ReflectPadConv(), (1, 64, 112, 112)),
            ("argmax_logits", ArgmaxLogits(), (128, 30522)),
            ("fpn_nearest_add", FpnNearestAdd(), [(1, 256, 64, 64), (1, 256, 128, 128)]),
            ("bilinear_up", BilinearUp(), (1, 64, 128, 128)), ("layer_norm_64", nn.LayerNorm(64), (4096, 64)),
            ("se_block_16", SeBlock16(), (1, 16, 112, 112))]
    only = sys.argv[3] if len(sys.argv) > 3 else None
    for name, model, shape in work:
        if only and name != only:
            continue
        model.eval()
        # One input shape, or a list of them (a model of several inputs).
        xs = tuple(make_input(s) for s in shape) if isinstance(shape, list) else (make_input(shape),)
        with torch.no_grad():
            try:
                m = torch.jit.optimize_for_inference(torch.jit.trace(model, xs))
                setting = "torchscript+optimize_for_inference"
            except Exception:  # noqa: BLE001 - fall back to eager
                m, setting = model, "eager"
            for _ in range(3):
                m(*xs)
            ms = []
            for _ in range(RUNS):
                t0 = time.perf_counter()
                m(*xs)
                ms.append((time.perf_counter() - t0) * 1e3)
        ms.sort()
        print(json.dumps({"workload": name, "median_ms": ms[len(ms) // 2], "min_ms": ms[0], "setting": setting,
                          "threads": THREADS, "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()
