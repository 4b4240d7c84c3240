#!/usr/bin/env bash
# Runs the CUDA target's device tests, conformance, fuzzing and benchmark
# on a GPU machine from the bundle tools/gpu_bundle.sh made (.gpu-bundle/),
# without building there. Logs go to $OUT (default /tmp/saturn-gpu).
# Stages, in the order given:
#   tests     each test case of test_cuda_device but the conformance one, one
#             process each (a crash loses one case)
#   conf      the ONNX backend conformance cases on the CUDA target
#   bench     bench/bench_cuda.sh (needs a CUDA build of torch)
#   profile   bench_cuda --profile (PROFILE_ONLY=NAME for one workload)
#   fuzz      tools/fuzz_targets.py --target cuda, each family and nn --opt,
#             in parallel (FUZZ_N graphs each; needs numpy and onnx)
#   sanitize  test_cuda_device under compute-sanitizer's memcheck
# BUDGET (seconds, default 540) bounds the whole run: each stage gets what
# is left. Usage: tools/gpu_run.sh STAGE...
set -u
cd "$(dirname "$0")/.."
[ -f .gpu-bundle/saturn.tar.xz ] || { echo "gpu_run: no .gpu-bundle/ here: run tools/gpu_bundle.sh first" >&2; exit 2; }
if [ -f build/tests/test_cuda_device ] && ! grep -q gpu-bundle build/tests/test_cuda_device; then
  echo "gpu_run: build/ holds a real build here: run its tests (ctest) instead" >&2
  exit 2
fi
start=$(date +%s)
out=${OUT:-/tmp/saturn-gpu}
mkdir -p "$out"
elapsed() { echo $(($(date +%s) - start)); }
left() { # seconds a stage may take: at most $1, within the budget
  local l=$((${BUDGET:-540} - $(elapsed)))
  [ "$l" -gt "$1" ] && l=$1
  [ "$l" -lt 5 ] && l=5
  echo "$l"
}
root=/tmp/saturn-gpu-bundle
mkdir -p "$root"
tar -C "$root" -xJf .gpu-bundle/saturn.tar.xz
if [ -f .gpu-bundle/onnx-tests.tar.xz ] && [ ! -d "$root/onnx-tests" ]; then
  tar -C "$root" -xJf .gpu-bundle/onnx-tests.tar.xz
fi
# The CUDA libraries wherever this machine has them (a Python wheel's
# cuDNN, say). Not libcuda: the driver's own must be the one loaded.
libs="$root/lib"
for name in libcudnn.so.9 libcublas.so.13 libnvrtc.so.13; do
  found=$(find /usr/local /opt /usr/lib /usr/lib64 -name "$name" 2>/dev/null | grep -v compat | head -1)
  echo "$name: ${found:-not found}"
  [ -n "$found" ] && libs="$libs:$(dirname "$found")"
done
export SATURN_SOURCE_DIR=$PWD SATURN_RULESETS=$PWD/rulesets SATURN_ONNX_TESTS=$root/onnx-tests
# Stand-ins at the build's paths, for bench_cuda.sh and fuzz_targets.py.
mkdir -p build/tests build/bench build/tools
for b in tests/test_cuda_device bench/bench_cuda tools/saturn; do
  printf '#!/bin/bash\n# gpu-bundle stand-in (tools/gpu_run.sh)\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$libs" \
    "$root/bin/$(basename $b)" >"build/$b"
  chmod +x "build/$b"
done
nvidia-smi -L 2>/dev/null
for stage in "$@"; do
  echo "== $stage at $(elapsed) s"
  case $stage in
    tests)
      build/tests/test_cuda_device --list-test-names-only | grep -v '^$' |
        grep -v -e "ONNX backend conformance" -e "^CUDA device" -e "^SKIPPED" >"$root/cases"
      while read -r c; do
        echo "---- $c (at $(elapsed) s)"
        timeout "$(left 200)" build/tests/test_cuda_device "$c" 2>&1 | tail -c 6000
        echo "exit ${PIPESTATUS[0]}"
      done <"$root/cases" >"$out/tests.log" 2>&1
      grep -E "^----|^exit |test cases" "$out/tests.log" ;;
    conf)
      timeout "$(left 300)" build/tests/test_cuda_device "ONNX backend conformance on the CUDA target" >"$out/conf.log" 2>&1
      echo "exit $?"
      grep -E "CUDA conformance|FAILED|test cases" "$out/conf.log" | head -40 ;;
    bench)
      SATURN_NO_BUILD=1 timeout "$(left 300)" bash bench/bench_cuda.sh "${RUNS:-30}" >"$out/bench.log" 2>&1
      echo "exit $?"
      cat "$out/bench.log" ;;
    profile)
      timeout "$(left 200)" build/bench/bench_cuda --runs 10 --profile ${PROFILE_ONLY:+--only $PROFILE_ONLY} \
        >"$out/profile.log" 2>&1
      echo "exit $?"
      head -c 4000 "$out/profile.log" ;;
    fuzz)
      rm -rf "$root/fuzz"
      mkdir -p "$root/fuzz"
      for f in elementwise movement nn nn-opt; do
        extra=()
        [ $f = nn-opt ] && extra=(--opt --seed 5000)
        PYTHONUNBUFFERED=1 timeout "$(left 500)" python3 tools/fuzz_targets.py --target cuda --family "${f%-opt}" \
          -n "${FUZZ_N:-150}" "${extra[@]}" --keep "$root/fuzz/$f" >"$root/fuzz/$f.log" 2>&1 &
      done
      wait
      cat "$root"/fuzz/*.log >"$out/fuzz.log"
      grep -E "graphs on|differs|exit|interp" "$out/fuzz.log" | head -40 ;;
    sanitize)
      sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
      timeout "$(left 400)" "$sanitizer" --tool memcheck --error-exitcode 9 --print-limit 30 \
        build/tests/test_cuda_device '~"ONNX backend conformance on the CUDA target"' >"$out/memcheck.log" 2>&1
      echo "exit $?"
      grep -E "ERROR SUMMARY|test cases" "$out/memcheck.log" ;;
    *) echo "gpu_run: no stage '$stage'" >&2 ;;
  esac
done
echo "== done at $(elapsed) s; logs in $out"
