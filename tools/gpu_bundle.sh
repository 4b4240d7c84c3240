#!/usr/bin/env bash
# Packs what the CUDA device tests and benchmark need on a GPU machine that
# has a CUDA 13 driver and toolkit (NVRTC, cuBLAS) and cuDNN 9, but not the
# build's Debian packages: test_cuda_device, bench_cuda and saturn from
# build/, every shared library they load that is neither glibc's, the C++
# runtime's nor CUDA's (LLVM, oneDNN, OpenBLAS, Z3, protobuf, ...), and the
# ONNX test data. Writes .gpu-bundle/ (ignored, about 61 MB: a device
# machine takes 64 MiB with the checkout, hence xz's x86 filter and its
# strongest preset, about 3 minutes); copy the checkout with it to the GPU
# machine and run tools/gpu_run.sh there. bench_cuda comes only with
# --bench (the bench and profile stages need it): 1.2 MB more. --models DIR
# packs DIR's .onnx and .input.npy for the validate and check stages (export
# them with bench/export_models.py --levels 2: five small models take 1.4
# MB), with each model's outputs on this machine's cpu target as
# M.expected.pb (what the check stage compares the cuda target's with).
# --no-conf leaves the ONNX test data out (7 MB; the conf stage needs it):
# the eight models of docs/cost-model.md's validation take 5 MB, and the
# bundle with them fits the device's 64 MiB only without it.
# Usage: tools/gpu_bundle.sh [--bench] [--models DIR] [--no-conf] (after a
# build with the CUDA target)
set -euo pipefail
cd "$(dirname "$0")/.."
# (libsaturn_main.so: the verbs, which the saturn executable opens beside itself.)
bins=(build/tests/test_cuda_device build/tools/saturn build/tools/libsaturn_main.so)
models=
conf=1
while [ $# -gt 0 ]; do
  case $1 in
    --bench) bins+=(build/bench/bench_cuda) ;;
    --models) models=$2; shift ;;
    --no-conf) conf= ;;
    *) echo "gpu_bundle: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
for b in "${bins[@]}"; do
  [ -e "$b" ] || { echo "gpu_bundle: $b is missing: build with the CUDA toolkit first" >&2; exit 2; }
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
tar -C "$stage" -cf - bin lib | xz -T1 --x86 --lzma2=preset=9e,dict=128MiB >.gpu-bundle/saturn.tar.xz
if [ -z "$conf" ]; then
  :
elif [ -d "$onnx" ]; then
  tar -C "$(dirname "$onnx")" -cf - "$(basename "$onnx")" | xz -T0 -6 >.gpu-bundle/onnx-tests.tar.xz
else
  echo "gpu_bundle: no ONNX test data at $onnx: the device conformance test will not run" >&2
fi
if [ -n "$models" ]; then
  expected=$(mktemp -d)
  for m in "$models"/*.onnx; do
    n=$(basename "$m" .onnx)
    build/tools/saturn run "$m" --target cpu --inputs "$models/$n.input.npy" -o "$expected/$n" >/dev/null ||
      { echo "gpu_bundle: $m does not run on the cpu target" >&2; exit 2; }
    cp "$expected/$n/output_0.pb" "$expected/$n.expected.pb"
  done
  tar -cf - -C "$models" $(cd "$models" && echo *.onnx *.input.npy) -C "$expected" $(cd "$expected" && echo *.expected.pb) |
    xz -T0 -9e >.gpu-bundle/models.tar.xz
  rm -rf "$expected"
fi
du -sh .gpu-bundle
