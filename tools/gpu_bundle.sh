#!/usr/bin/env bash
# Packs what the CUDA device tests and benchmark need on a GPU machine that
# has a CUDA 13 driver and toolkit (NVRTC, cuBLAS) and cuDNN 9, but not the
# build's Debian packages: test_cuda_device, bench_cuda and saturn from
# build/, every shared library they load that is neither glibc's, the C++
# runtime's nor CUDA's (LLVM, oneDNN, OpenBLAS, Z3, protobuf, ...), and the
# ONNX test data. Writes .gpu-bundle/ (ignored, about 60 MB); copy the
# checkout with it to the GPU machine and run tools/gpu_run.sh there.
# Usage: tools/gpu_bundle.sh (after a build with the CUDA target)
set -euo pipefail
cd "$(dirname "$0")/.."
bins=(build/tests/test_cuda_device build/bench/bench_cuda build/tools/saturn)
for b in "${bins[@]}"; do
  [ -x "$b" ] || { echo "gpu_bundle: $b is missing: build with the CUDA toolkit first" >&2; exit 2; }
done
onnx=${SATURN_ONNX_TESTS:-../shared/onnx-tests}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
cp "${bins[@]}" "$stage/bin/"
# (glibc, the C++ runtime and the CUDA libraries come from the GPU machine.)
skip='^((linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s)[.-]|libcu|libnvrtc)'
ldd "${bins[@]}" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u | while read -r name path; do
  [[ $name =~ $skip ]] || cp -L "$path" "$stage/lib/$name"
done
rm -rf .gpu-bundle
mkdir -p .gpu-bundle
tar -C "$stage" -cf - bin lib | xz -T0 -6 >.gpu-bundle/saturn.tar.xz
if [ -d "$onnx" ]; then
  tar -C "$(dirname "$onnx")" -cf - "$(basename "$onnx")" | xz -T0 -6 >.gpu-bundle/onnx-tests.tar.xz
else
  echo "gpu_bundle: no ONNX test data at $onnx: the device conformance test will not run" >&2
fi
du -sh .gpu-bundle
