#!/usr/bin/env bash
# Training end to end on a bundled example: installs what the build needs,
# builds, writes scikit-learn's digits (shipped with Debian's
# python3-sklearn; nothing is downloaded) as .npy arrays with a 64-64-10 MLP
# (docs/examples/digits/prepare.py), then `saturn train`s it with Adam and
# evaluates it on the held-out fifth (docs/training.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target saturn
out=build/digits
/usr/bin/python3 docs/examples/digits/prepare.py "$out"
./build/tools/saturn train "$out/mlp.sat" --data "$out/train_x.npy" --labels "$out/train_y.npy" \
  --eval-data "$out/test_x.npy" --eval-labels "$out/test_y.npy" \
  --loss cross-entropy --optimizer adam --lr 0.01 --epochs 10 --batch 32 -o "$out/trained.onnx" "$@"
echo "trained model: $out/trained.onnx"
