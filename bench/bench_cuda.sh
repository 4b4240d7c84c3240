#!/usr/bin/env bash
# The CUDA backend next to PyTorch eager on the same GPU: MLP 784-1024-1024-10
# (batch 64), a BERT-base encoder layer (seq 128), ResNet-18 (224x224), a
# masked softmax (bool and i64 masks) and BERT-base embeddings (a gather).
# Saturn's times are host inputs to host outputs (the copies included);
# PyTorch's are eager forward passes on inputs already on the device, with
# TF32 off on both sides. Prints medians, mins and the speedup
# (PyTorch / Saturn). Needs a GPU and a CUDA build of torch.
# Usage: bench/bench_cuda.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-50}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target bench_cuda >/dev/null
out=$(mktemp -d)
./build/bench/bench_cuda --runs "$runs" --json >"$out/saturn.jsonl"
(cd bench && python3 bench_cuda_torch.py "$runs") >"$out/torch.jsonl"
python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
s = {j["workload"]: j for j in map(json.loads, open(d + "/saturn.jsonl"))}
t = {j["workload"]: j for j in map(json.loads, open(d + "/torch.jsonl"))}
print(f"{'workload':14} {'saturn ms':>10} {'(device)':>9} {'torch ms':>9} {'speedup':>8}  saturn min / torch min")
for name, a in s.items():
    b = t.get(name)
    if b:
        print(f"{name:14} {a['median_ms']:10.3f} {a['device_median_ms']:9.3f} {b['median_ms']:9.3f} "
              f"{b['median_ms'] / a['median_ms']:7.2f}x  {a['min_ms']:8.3f} / {b['min_ms']:8.3f}")
first = next(iter(t.values()))
print(f"{first['device']}, torch {first['torch']} ({first['setting']})")
PY
