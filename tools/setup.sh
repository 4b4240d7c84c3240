#!/usr/bin/env bash
# Installs every Debian package Saturn's build and tests need.
# Idempotent and non-interactive: packages already present are not touched,
# and apt is only consulted when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  catch2               # Catch2 2.13 (tests)
  nlohmann-json3-dev   # JSON for reports and egraph-serialize files
  libcli11-dev         # command-line parsing for `saturn`
  libonnx-dev libprotobuf-dev protobuf-compiler  # ONNX import/export
  libz3-dev            # saturn verify: proving rules
  llvm-16-dev          # the CPU backend: code generation and the JIT
  libopenblas-dev      # the CPU backend: sgemm
  libdnnl-dev          # the CPU backend: oneDNN convolution and pooling
  ocl-icd-opencl-dev   # dnnl-config.cmake looks for OpenCL (only a Recommends)
  coinor-libcbc-dev    # saturn extract/opt --extractor ilp: CBC
  libboost-graph-dev   # graph algorithms (components, orders) for extraction and import
  graphviz             # saturn dot -o X.svg/.png/.pdf (the text needs nothing)
  python3-dev pybind11-dev python3-numpy  # the Python package (tools/python, docs/python.md)
  python3-pytest python3-pip python3-setuptools python3-wheel  # its tests, and `pip install .`
  chromium             # the test that renders `saturn opt --html` in a real browser (headless)
  python3-sklearn      # the training example: scikit-learn's digits (shipped in the package, no download)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "setup: all packages present" >&2
