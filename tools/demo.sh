#!/usr/bin/env bash
# Saturn's main job end to end on a bundled example: installs what the build
# needs, builds, optimizes the bundled transformer layer for the CPU with the
# shipped rulesets (printing what changed and why), then runs the original
# and the optimized model in the reference interpreter on the bundled input
# and checks that they agree.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target saturn
model=docs/examples/models/transformer_layer
out=build/demo
mkdir -p "$out"
./build/tools/saturn opt "$model.onnx" --target cpu -o "$out/transformer_layer.opt.sat" --report "$out/report.json" "$@"
echo "report: $out/report.json; optimized model: $out/transformer_layer.opt.sat"
./build/tools/saturn run "$model.onnx" --inputs "$model.input.pb" -o "$out/reference"
./build/tools/saturn run "$out/transformer_layer.opt.sat" --inputs "$model.input.pb" --check "$out/reference/output_0.pb"
# The optimized model compiled for this CPU (LLVM kernels, OpenBLAS, oneDNN), checked and timed.
./build/tools/saturn run "$out/transformer_layer.opt.sat" --target cpu --inputs "$model.input.pb" \
  --check "$out/reference/output_0.pb" --atol 1e-5 --bench 20
