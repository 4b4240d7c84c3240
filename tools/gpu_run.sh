#!/usr/bin/env bash
# Runs the CUDA target's device tests, conformance, fuzzing and benchmark
# on a GPU machine from the bundle tools/gpu_bundle.sh made (.gpu-bundle/),
# without building there. Logs go to $OUT (default /tmp/saturn-gpu).
# Stages, in the order given:
#   tests     each test case of test_cuda_device but the conformance one, one
#             process each (a crash loses one case)
#   conf      the ONNX backend conformance cases on the CUDA target
#   bench     bench/bench_cuda.sh (needs a CUDA build of torch, and a
#             bundle made with --bench)
#   profile   bench_cuda --profile (PROFILE_ONLY=NAME for one workload;
#             a bundle made with --bench)
#   fuzz      tools/fuzz_targets.py --target cuda, each family and nn --opt,
#             in parallel (FUZZ_N graphs each; needs numpy and onnx)
#   sanitize  test_cuda_device under compute-sanitizer's memcheck
#   roofline  the memory rate and per-kernel time the cuda cost model assumes
#   validate  saturn calibrate --target cuda, then bench/validate_cost_model.py
#             --target cuda, on the .onnx models in $MODELS (default: those
#             tools/gpu_bundle.sh --models packed; ONLY="NAME..." for some
#             of them, CALIBRATION_BUDGET seconds of calibration, default 120;
#             the cache comes back in $OUT/calibration-cache, and one put in
#             .gpu-bundle/calibration/ is carried into the next run)
#   graphs    each packed model's device median with CUDA graphs and step by
#             step (SATURN_CUDA_GRAPHS=0), interleaved, ROUNDS rounds (default
#             2) of RUNS runs (default 20)
#   variance  one packed model (VARIANCE_MODEL, default resnet18) in
#             PROCESSES processes (default 4), cuDNN's algorithms measured,
#             and 2 with its heuristic: device medians and the algorithms
#             each process took (SATURN_CUDNN_LOG=1)
#   check     each packed model on the cuda target, optimized and as written
#             (--no-opt), against its outputs on the build machine's cpu
#             target (M.expected.pb): max |cuda - cpu| / max |cpu| <= 1e-3
#             (float32 throughout: no TF32 in cuBLAS or cuDNN)
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
# $models: the folder of models the stages read ($MODELS, else those
# tools/gpu_bundle.sh --models packed, unpacked here).
unpack_models() {
  models=${MODELS:-$root/models}
  if [ -z "${MODELS:-}" ]; then
    mkdir -p "$models"
    tar -C "$models" -xJf .gpu-bundle/models.tar.xz
  fi
}
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
export SATURN_SOURCE_DIR=$PWD SATURN_RULESETS=$PWD/rulesets SATURN_ONNX_TESTS=$root/onnx-tests \
  SATURN_BIN=$PWD/build/tools/saturn
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
      # CONF_SHARDS processes side by side (default 8): most of the time is
      # NVRTC compiling each case's kernels on the CPU.
      n=${CONF_SHARDS:-8}
      for k in $(seq 0 $((n - 1))); do
        SATURN_TEST_SHARD=$k/$n timeout "$(left 300)" build/tests/test_cuda_device \
          "ONNX backend conformance on the CUDA target" >"$root/conf.$k.log" 2>&1 &
      done
      wait
      cat "$root"/conf.*.log >"$out/conf.log"
      grep -E "CUDA conformance|FAILED|test cases" "$out/conf.log" | head -40 ;;
    validate)
      # The cuda cost model against the device (bench/validate_cost_model.py
      # --target cuda), after saturn calibrate --target cuda fills the cache
      # for the models.
      export SATURN_CACHE_DIR=$root/cache
      # An earlier device run's measurements, put in .gpu-bundle/calibration/
      # by hand, are kept: the calibration goes on with what they lack.
      if compgen -G ".gpu-bundle/calibration/calibration-*.json" >/dev/null; then
        mkdir -p "$SATURN_CACHE_DIR"
        cp .gpu-bundle/calibration/calibration-*.json "$SATURN_CACHE_DIR/"
      fi
      unpack_models
      # ONLY="NAME..." validates those models alone; CALIBRATION_BUDGET
      # (seconds, default 120) bounds the calibration.
      files=("$models"/*.onnx) only=()
      if [ -n "${ONLY:-}" ]; then
        files=() only=(--only $ONLY)
        for n in $ONLY; do files+=("$models/$n.onnx"); done
      fi
      timeout "$(left 400)" build/tools/saturn calibrate --target cuda --budget "${CALIBRATION_BUDGET:-120}" "${files[@]}" \
        >"$out/calibrate.log" 2>&1
      echo "calibrate exit $?"
      tail -20 "$out/calibrate.log"
      # (The measurements come back with the logs: refitting the roofline's
      # fixed costs reads them on the build machine. Not the compiled
      # kernels beside them: some 1,500 files, more than $OUT returns.)
      mkdir -p "$out/calibration-cache"
      cp "$SATURN_CACHE_DIR"/calibration-*.json "$out/calibration-cache/"
      PYTHONUNBUFFERED=1 timeout "$(left 400)" python3 bench/validate_cost_model.py "$models" --target cuda "${only[@]}" \
        --rounds "${ROUNDS:-3}" --runs "${RUNS:-10}" >"$out/validate.log" 2>&1
      echo "validate exit $?"
      cat "$out/validate.log" ;;
    check)
      unpack_models
      rm -rf "$root/check"
      for m in "$models"/*.onnx; do
        n=$(basename "$m" .onnx)
        for mode in opt no-opt; do
          flag=
          [ $mode = no-opt ] && flag=--no-opt
          timeout "$(left 120)" build/tools/saturn run "$m" --target cuda $flag --inputs "$models/$n.input.npy" \
            -o "$root/check/$n.$mode" >/dev/null 2>"$root/check.err" || { echo "$n $mode: exit $?"; tail -5 "$root/check.err"; }
        done
      done >"$out/check.log" 2>&1
      python3 - "$models" "$root/check" >>"$out/check.log" 2>&1 <<'PY'
import glob, os, sys
import numpy as np
from onnx import TensorProto, numpy_helper
models, got = sys.argv[1:]
def read(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t).astype(np.float64)
bad = 0
for exp in sorted(glob.glob(os.path.join(models, "*.expected.pb"))):
    n = os.path.basename(exp)[: -len(".expected.pb")]
    ref = read(exp)
    for mode in ("opt", "no-opt"):
        out = os.path.join(got, f"{n}.{mode}", "output_0.pb")
        if not os.path.exists(out):
            print(f"{n} {mode}: no output"); bad += 1; continue
        y = read(out)
        if y.shape != ref.shape:
            print(f"{n} {mode}: shape {y.shape}, expected {ref.shape}"); bad += 1; continue
        err = float(np.max(np.abs(y - ref)) / max(np.max(np.abs(ref)), 1e-30))
        ok = np.isfinite(err) and err <= 1e-3
        bad += not ok
        print(f"{n} {mode}: max |cuda - cpu| / max |cpu| = {err:.2e} {'ok' if ok else 'DIFFERS'}")
print(f"check: {bad} differing")
PY
      cat "$out/check.log" ;;
    graphs)
      unpack_models
      for r in $(seq "${ROUNDS:-2}"); do
        for m in "$models"/*.onnx; do
          n=$(basename "$m" .onnx)
          for g in 1 0; do
            SATURN_CUDA_GRAPHS=$g timeout "$(left 60)" build/tools/saturn run "$m" --target cuda \
              --inputs "$models/$n.input.npy" --bench "${RUNS:-20}" --json 2>/dev/null |
              python3 -c "import json, sys; j = json.load(sys.stdin); print('$n', 'graphs' if $g else 'steps', j['cuda_graph_steps'], 'of', j['steps'], 'steps in graphs; device median', round(j['device_median_ms'], 3), 'ms, host', round(j['median_ms'], 3))"
          done
        done
      done | tee "$out/graphs.log" ;;
    variance)
      # One packed model (VARIANCE_MODEL, default resnet18) in PROCESSES
      # separate processes (default 4) with cuDNN's measured algorithm choice
      # and 2 with its heuristic: each process's device median and the
      # convolutions' algorithms (SATURN_CUDNN_LOG=1); the logs come back.
      unpack_models
      n=${VARIANCE_MODEL:-resnet18}
      mkdir -p "$out/variance"
      for i in $(seq "${PROCESSES:-4}") h1 h2; do
        algo=measured
        [[ $i == h* ]] && algo=heuristic
        SATURN_CUDNN_LOG=1 SATURN_CUDNN_ALGO=$algo timeout "$(left 60)" build/tools/saturn run "$models/$n.onnx" \
          --target cuda --inputs "$models/$n.input.npy" --bench "${RUNS:-20}" --profile --json 2>"$out/variance/$n.$i.log" |
          python3 -c "import json, sys; j = json.load(sys.stdin); c = [s['ms'] for s in j['profile'] if s['step'].startswith('cudnn conv')]; print('$n process $i ($algo): device median', round(j['device_median_ms'], 3), 'ms; step by step, its', len(c), 'cudnn convolutions', round(sum(c), 3), 'ms:', ' '.join(str(round(x, 3)) for x in c))"
        grep -o -- '-> [0-9]*' "$out/variance/$n.$i.log" | tr -d '\n>-' | md5sum | cut -c1-8 | sed 's/^/  algorithms /'
      done | tee "$out/variance.log" ;;
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
    roofline)
      # What the cuda cost model's roofline assumes (extract/cost_model.cpp):
      # a streaming add over 2 x 64 MiB (memory GB/s) and 64 unfused ReLUs of
      # 256 elements back to back (microseconds per kernel), device time.
      {
        echo "(graph stream (input a f32 [16777216]) (input b f32 [16777216]) (node n add (y) (a b)) (output y))"
      } >"$root/stream.sat"
      {
        echo "(graph launches (input x0 f32 [256])"
        for i in $(seq 0 63); do echo "(node n$i relu (x$((i + 1))) (x$i))"; done
        echo "(output x64))"
      } >"$root/launches.sat"
      python3 -c "import numpy as np; np.save('$root/big.npy', np.ones(1 << 24, np.float32)); np.save('$root/small.npy', np.ones(256, np.float32))"
      for g in stream launches; do
        inputs="$root/big.npy $root/big.npy" extra=
        [ $g = launches ] && inputs="$root/small.npy" extra=--no-fuse
        timeout "$(left 60)" build/tools/saturn run "$root/$g.sat" --target cuda --no-opt $extra --inputs $inputs \
          --bench 50 --json >"$root/$g.json" 2>"$out/$g.err"
        python3 -c "import json; j = json.load(open('$root/$g.json')); print('$g: device median', j['device_median_ms'], 'ms, host', j['median_ms'], 'ms')"
      done | tee "$out/roofline.log" ;;
    *) echo "gpu_run: no stage '$stage'" >&2 ;;
  esac
done
echo "== done at $(elapsed) s; logs in $out"
