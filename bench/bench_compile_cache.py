#!/usr/bin/env python3
"""First and second compile of the same model: `saturn run` with an empty
cache folder (optimizes, generates every kernel) against the same command
again (reads the optimized graph and the kernels from the cache). Prints,
per model, the median over rounds of the optimization, the compilation and
the whole command's wall time, and the ratio first/second.

    bench/bench_compile_cache.py MODEL.onnx... [--rounds 3] [--saturn build/tools/saturn]

Inputs: MODEL.input.npy beside the model when there is one, else seeded
random values (--bench 1).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time


def run(saturn, model, cache):
    args = [saturn, "run", model, "--target", "cpu", "--json"]
    inp = model[:-5] + ".input.npy"
    args += ["--inputs", inp] if os.path.exists(inp) else ["--bench", "1"]
    env = dict(os.environ, SATURN_CACHE_DIR=cache)
    t0 = time.perf_counter()
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=True).stdout
    wall = (time.perf_counter() - t0) * 1e3
    d = json.loads(out.splitlines()[-1])
    return d["opt_ms"], d["compile_ms"], wall, d.get("opt_cache")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--saturn", default=os.path.join(os.path.dirname(__file__), "..", "build", "tools", "saturn"))
    a = ap.parse_args()
    print("%-22s %10s %10s %10s   %10s %10s %10s   %6s" % ("model", "opt ms", "compile", "wall", "opt ms",
                                                          "compile", "wall", "wall x"))
    print("%-22s %32s   %32s" % ("", "first (empty cache)", "second (cached)"))
    for m in a.models:
        first, second = [], []
        for _ in range(a.rounds):
            cache = tempfile.mkdtemp(prefix="saturn-cache-")
            try:
                first.append(run(a.saturn, m, cache))
                second.append(run(a.saturn, m, cache))
                assert second[-1][3] == "hit", second[-1]
            finally:
                shutil.rmtree(cache)
        med = lambda rows, k: statistics.median(r[k] for r in rows)  # noqa: E731
        print("%-22s %10.0f %10.0f %10.0f   %10.1f %10.1f %10.0f   %6.1f" % (
            os.path.basename(m)[:-5], med(first, 0), med(first, 1), med(first, 2), med(second, 0), med(second, 1),
            med(second, 2), med(first, 2) / med(second, 2)))


if __name__ == "__main__":
    main()
