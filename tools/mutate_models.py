#!/usr/bin/env python3
"""Bad-input search: mutated ONNX models must be refused clearly, never crash.

Each run loads one of the given models, changes one or two things a broken
exporter or a damaged file could (an attribute's value, an input dimension,
an initializer's shape or element type, an operand's wiring, a node dropped,
an op type swapped), and runs `saturn run MODEL --inputs MODEL.input.pb` on
it (the cpu target or the interpreter, optimized or `--no-opt`). A run must
exit 0 (it computed), or 2 with an error message (bad input). Anything else
is reported and its model kept: a signal or sanitizer report (a crash), a
timeout, exit 1 (a shipped rule refused on a model the importer accepted:
a typing hole, such as the mixed-type normalizations found on 2026-12-07),
or exit 2 without "error". Use a sanitizer build's saturn to see memory
errors too.

Usage: tools/mutate_models.py MODEL.onnx... [--saturn BIN] [--runs N]
       [--seed S] [--keep DIR]
Needs numpy and onnx (PyPI: the benchmarks' venv has them). Each MODEL needs
its inputs next to it as MODEL.input.pb (the bundled examples in
docs/examples/models have them) or MODEL.input.npy (bench/export_models.py). Exit status 1 when a run was bad.
"""
import argparse
import collections
import os
import random
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPS = ["Relu", "Add", "MatMul", "Conv", "Softmax", "Transpose", "Reshape", "Gemm", "Concat", "Slice", "Gather",
       "ReduceMean"]


def mutate_attribute(rng, g):
    cands = [(n, a) for n in g.node for a in n.attribute]
    if not cands:
        return "no attribute"
    n, a = rng.choice(cands)
    if a.type == onnx.AttributeProto.INT:
        a.i = rng.choice([-3, -1, 0, 1, 2, 5, 1 << 40, a.i + 1, a.i - 1])
    elif a.type == onnx.AttributeProto.INTS and len(a.ints):
        a.ints[rng.randrange(len(a.ints))] = rng.choice([-2, -1, 0, 1, 3, 100, 1 << 33])
        if rng.random() < 0.3:
            a.ints.append(1)
        if rng.random() < 0.2:
            del a.ints[:]
    elif a.type == onnx.AttributeProto.FLOAT:
        a.f = rng.choice([float("nan"), float("inf"), -1.0, 0.0, 1e30])
    elif a.type == onnx.AttributeProto.STRING:
        a.s = rng.choice([b"", b"FOO", b"SAME_UPPER", b"VALID"])
    return f"attribute {a.name} of {n.op_type} '{n.name}'"


def mutate_input_dim(rng, g):
    dims = g.input[0].type.tensor_type.shape.dim
    if len(dims):
        dims[rng.randrange(len(dims))].dim_value = rng.choice([0, 1, 2, 7, 1 << 31])
    return "an input dimension"


def mutate_initializer_shape(rng, g):
    if not len(g.initializer):
        return "no initializer"
    t = rng.choice(list(g.initializer))
    a = numpy_helper.to_array(t)
    if a.size > 1:
        a = a.reshape(-1)[: max(1, a.size // 2)] if rng.random() < 0.5 else (
            a.reshape(-1, 1) if a.ndim == 1 else a.reshape(a.shape[::-1]))
    elif a.size:
        a = np.repeat(a.reshape(-1), 3)
    t.CopyFrom(numpy_helper.from_array(a, t.name))
    return f"initializer {t.name}'s shape"


def mutate_initializer_type(rng, g):
    if not len(g.initializer):
        return "no initializer"
    t = rng.choice(list(g.initializer))
    a = numpy_helper.to_array(t).astype(rng.choice([np.int64, np.float16, np.int8, np.bool_, np.float64]))
    t.CopyFrom(numpy_helper.from_array(a, t.name))
    return f"initializer {t.name}'s type"


def mutate_wiring(rng, g):
    n = rng.choice(list(g.node))
    if len(n.input):
        names = [x.name for x in g.initializer] + [o for x in g.node for o in x.output] + [x.name for x in g.input]
        n.input[rng.randrange(len(n.input))] = rng.choice(names + [""])
    return f"an operand of {n.op_type} '{n.name}'"


def mutate_drop(rng, g):
    del g.node[rng.randrange(len(g.node))]
    return "a node dropped"


def mutate_op(rng, g):
    n = rng.choice(list(g.node))
    n.op_type = rng.choice(OPS)
    return f"'{n.name}' made {n.op_type}"


MUTATIONS = [mutate_attribute, mutate_attribute, mutate_attribute, mutate_input_dim, mutate_initializer_shape,
             mutate_wiring, mutate_initializer_type, mutate_drop, mutate_op]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--saturn", default=os.path.join(ROOT, "build", "tools", "saturn"))
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", default="mutated-models", help="where bad runs' models are kept")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per run")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    os.makedirs(args.keep, exist_ok=True)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    statuses = collections.Counter()
    bad = 0
    for i in range(args.runs):
        source = rng.choice(args.models)
        m = onnx.load(source)
        what = [rng.choice(MUTATIONS)(rng, m.graph) for _ in range(rng.randint(1, 2))]
        path = os.path.join(args.keep, f"m{args.seed}-{i}.onnx")
        onnx.save(m, path)
        inputs = source[: -len(".onnx")] + ".input.pb"
        if not os.path.exists(inputs):  # (bench/export_models.py writes .npy)
            inputs = source[: -len(".onnx")] + ".input.npy"
        cmd = [args.saturn, "run", path, "--target", rng.choice(["cpu", "cpu", "interp"]), "--inputs", inputs,
               "--threads", "1"]
        if rng.random() < 0.3:
            cmd.append("--no-opt")
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=args.timeout, env=env)
            status, err = r.returncode, r.stderr
        except subprocess.TimeoutExpired:
            status, err = "timeout", ""
        statuses[status] += 1
        ok = status in (0, 2) and "Sanitizer" not in err and "runtime error" not in err
        if status == 2 and "error" not in err:
            ok = False
        if ok:
            os.remove(path)
            continue
        bad += 1
        print(f"bad: exit {status} after {'; '.join(what)} of {source}: {' '.join(cmd[1:])}\n{err[-2000:]}",
              flush=True)
    print(f"{args.runs} runs, {bad} bad; exit statuses {dict(statuses)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
