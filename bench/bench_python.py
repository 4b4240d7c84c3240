#!/usr/bin/env python3
"""What calling a compiled program from Python costs: each model's program
called as prog(x) and timed in Python, against the same program on the same
inputs timed inside C++ (prog.bench, no Python per run), interleaved round
by round. Prints the medians, the difference (the binding's overhead per
call: argument checks, the GIL, output arrays) and the ratio.

    PYTHONPATH=build/python python3 bench/bench_python.py MODEL.onnx... [--rounds 200]

Inputs: MODEL.input.npy beside the model when there is one, else seeded
random values of the declared types.
"""

import argparse
import os
import statistics
import time

import numpy as np

import saturn


def inputs_for(model, g):
    npy = model[:-5] + ".input.npy"
    if os.path.exists(npy):
        return [np.load(npy)]
    rng = np.random.default_rng(1)
    return [rng.uniform(-1, 1, shape).astype(dtype) if dtype.startswith("float")
            else rng.integers(0, 4, shape).astype(dtype) for _, dtype, shape in g.inputs]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--rounds", type=int, default=200)
    a = ap.parse_args()
    print("%-24s %12s %12s %12s %8s" % ("model", "python ms", "c++ ms", "overhead us", "ratio"))
    for m in a.models:
        g = saturn.load(m)
        prog = saturn.compile(g, "cpu")
        xs = inputs_for(m, g)
        prog(*xs)
        py, cc = [], []
        for _ in range(a.rounds):
            t0 = time.perf_counter()
            prog(*xs)
            py.append((time.perf_counter() - t0) * 1e3)
            cc.append(prog.bench(1, *xs)["ms"][0])
        p, c = statistics.median(py), statistics.median(cc)
        print("%-24s %12.4f %12.4f %12.1f %8.3f" % (os.path.basename(m)[:-5], p, c, (p - c) * 1e3, p / c))


if __name__ == "__main__":
    main()
