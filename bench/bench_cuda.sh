#!/usr/bin/env bash
# The CUDA backend next to PyTorch eager on the same GPU: MLP 784-1024-1024-10
# (batch 64), a BERT-base encoder layer (seq 128), ResNet-18 (224x224), a
# masked softmax (bool and i64 masks) and BERT-base embeddings (a gather).
# Two comparisons, each of medians, TF32 off on both sides: host inputs to
# a host result (the copies included), and on the device (Saturn: its steps
# between two events; PyTorch: an eager pass on inputs already on the
# device, timed with synchronize). Speedup = PyTorch / Saturn. Needs a GPU
# and a CUDA build of torch.
# Usage: bench/bench_cuda.sh [RUNS]; SATURN_NO_BUILD=1 uses the bench_cuda
# already in build/ (a machine with a GPU but without the build's packages).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-50}
if [ -z "${SATURN_NO_BUILD:-}" ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j "$(nproc)" --target bench_cuda >/dev/null
fi
out=$(mktemp -d)
./build/bench/bench_cuda --runs "$runs" --json >"$out/saturn.jsonl"
(cd bench && python3 bench_cuda_torch.py "$runs") >"$out/torch.jsonl"
python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
s = {j["workload"]: j for j in map(json.loads, open(d + "/saturn.jsonl"))}
t = {j["workload"]: j for j in map(json.loads, open(d + "/torch.jsonl"))}
print(f"{'workload':14} {'host to host: saturn ms':>23} {'torch ms':>9} {'speedup':>8}   "
      f"{'on the device: saturn ms':>24} {'torch ms':>9} {'speedup':>8}")
for name, a in s.items():
    b = t.get(name)
    if b:
        print(f"{name:14} {a['median_ms']:23.3f} {b['host_median_ms']:9.3f} {b['host_median_ms'] / a['median_ms']:7.2f}x"
              f"   {a['device_median_ms']:24.3f} {b['median_ms']:9.3f} {b['median_ms'] / a['device_median_ms']:7.2f}x")
first = next(iter(t.values()))
print(f"{first['device']}, torch {first['torch']} ({first['setting']})")
PY
