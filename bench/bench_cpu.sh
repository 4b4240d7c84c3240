#!/usr/bin/env bash
# The CPU backend next to PyTorch on this machine, in one run: MLP
# 784-1024-1024-10 (batch 64), a BERT-base encoder layer (seq 128), ResNet-18
# (224x224), a chain of 8 elementwise ops over 16 M floats, a 1024^3
# matmul (also against OpenBLAS called directly), a GPT-style QKV split
# (slices of a [512 2304] tensor, then q*k+v and gelu) and a key-cache
# concat ([12 384 64] and [12 128 64] along the sequence, then scaled) and
# a masked softmax ([12 384 384] scores, a bool causal mask by where and an
# i64 padding mask cast to f32, as GPT-2 and BERT exports do) and BERT-base's
# embeddings for 128 tokens (a gather from the [30522 768] table), a
# wav2vec-style pair of 1-D convolutions on 1 s of 16 kHz audio, a U-Net
# transposed-convolution upsampling, reflection padding before a 3x3
# convolution, the argmax of [128 30522] logits, an FPN top-down step
# (nearest 2x upsampling plus the lateral map), a bilinear 2x upsampling,
# LayerNorm over [4096 64] and MobileNetV3-Small's first block (a depthwise
# convolution of 16 channels, its squeeze-and-excitation scale and the
# projection). Both sides use 2 threads;
# PyTorch runs TorchScript + optimize_for_inference under both OpenMP wait
# policies (the better median counts). Saturn's models go through `saturn
# opt --target cpu` first. Prints medians, mins and the speedup (PyTorch / Saturn).
# Usage: bench/bench_cpu.sh [RUNS]   (needs python3-torch: apt install python3-torch)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target bench_cpu >/dev/null
out=$(mktemp -d)
# Saturn in its default setting: its kernels and oneDNN share one OpenMP
# team, which is fastest with OpenMP's default (active) waiting. PyTorch
# runs under both wait policies; each workload keeps its better median.
./build/bench/bench_cpu --runs "$runs" --threads 2 --json >"$out/saturn.jsonl"
OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/bench_cpu_torch.py "$runs" 2 >"$out/torch.jsonl"
/usr/bin/python3 bench/bench_cpu_torch.py "$runs" 2 >"$out/torch_active.jsonl"
/usr/bin/python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
s = {j["workload"]: j for j in map(json.loads, open(d + "/saturn.jsonl"))}
t = {j["workload"]: j for j in map(json.loads, open(d + "/torch.jsonl"))}
for j in map(json.loads, open(d + "/torch_active.jsonl")):
    if j["workload"] not in t or j["median_ms"] < t[j["workload"]]["median_ms"]:
        t[j["workload"]] = j
print(f"{'workload':14} {'saturn ms':>10} {'torch ms':>10} {'speedup':>8}  saturn min / torch min   arena / naive MB (saved)")
for name, a in s.items():
    b = t.get(name)
    if not b:
        continue
    saved = 100 * (1 - a['arena_bytes'] / a['naive_bytes']) if a['naive_bytes'] else 0
    print(f"{name:14} {a['median_ms']:10.3f} {b['median_ms']:10.3f} {b['median_ms'] / a['median_ms']:7.2f}x"
          f"  {a['min_ms']:8.3f} / {b['min_ms']:8.3f}      {a['arena_bytes'] / 2**20:6.2f} / {a['naive_bytes'] / 2**20:6.2f} ({saved:.0f}%)")
for name, how in (("matmul_1024", "constant weight, oneDNN packed"), ("matmul_1024_inputs", "two inputs, sgemm")):
    m = s.get(name)
    if m:
        print(f"matmul 1024^3 ({how}) through Saturn: {m['gflops']:.1f} GFLOP/s = "
              f"{100 * m['fraction_of_openblas']:.0f}% of OpenBLAS sgemm direct ({m['openblas_gflops']:.1f})")
print(f"torch {next(iter(t.values()))['torch']}, setting: {next(iter(t.values()))['setting']}")
PY
