#!/usr/bin/env python3
"""Differential fuzzing of the compiled targets against the interpreter:
random graphs of random element types, with each type's extremes among the
inputs (INT64_MIN, 255, NaN, -0, inf, ...), run by `saturn run --target
interp` and by `--target cpu` (or cuda, --target). Both must fail with the same error (an
integer division by zero, naming the same node) or give the same outputs:
integers and bools exactly, floats to 1e-5 (nn: 1e-4; f16: 1e-3), NaN for
NaN. Not part of the test suite (minutes); tests/random_graphs.hpp runs a
fixed sample of the elementwise family in CI. Each disagreement is printed with the folder that holds its graph and inputs.

  tools/fuzz_targets.py [--family elementwise|movement|nn] [-n N] [--seed S] [--keep DIR] [--opt] [--finite]
                        [--against ort]
                        [--target cpu|cuda]

--against ort runs each graph (written as .onnx by `saturn opt
--no-default-rules -o`) with ONNX Runtime (all graph optimizations, 2
threads) and with `saturn run --target T` as users run it (optimized), and
compares their outputs: a result that differs on a model both accept is a
disagreement; a model ONNX Runtime refuses is skipped, one Saturn refuses is
counted. Its graphs keep to what ONNX defines the same way everywhere
(finite inputs, no integer division, no float cast to an integer type:
NaN and out-of-range values convert as ONNX leaves undefined). Needs onnxruntime (pip).

--opt runs on the target what `saturn opt --target T` made of each graph
(the shipped rules, that target's cost model), against the interpreter on the graph
as written; errors must then agree in kind (the optimized graph may order
its divisions otherwise).

elementwise: chains of arithmetic, division, modulo, power, comparisons
feeding where, and casts to every type. movement: transposes, slices (also
reversed), reductions, concat, expand, products, pad, tile, reshape,
argmax / argmin, softmax and casts. nn: convolutions (groups, strides,
dilations, asymmetric pads), transposed convolutions, pooling (ceil_mode,
count_include_pad), gemm and layer_norm of f32 / f64 / f16 with weights as
initializers, with a relu or a residual add after them at times (the
library calls and their fused epilogues). Needs numpy and onnx (pip).
"""
import argparse
import glob
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SATURN = os.path.join(ROOT, "build", "tools", "saturn")
NP = {"i8": np.int8, "u8": np.uint8, "i32": np.int32, "i64": np.int64, "f16": np.float16, "bf16": None,
      "f32": np.float32, "f64": np.float64, "bool": np.bool_}
INTS = ["i8", "u8", "i32", "i64"]
FLOATS = ["f16", "f32", "f64"]


FINITE = False  # --finite
ORT = False  # --against ort: only what ONNX defines alike everywhere


def cast_targets(t):
    """The types a value of type t may be cast to: with ORT, a float only
    to floats and bool (a float out of an integer type's range, NaN
    included, converts as ONNX leaves undefined: ONNX Runtime gives
    INT_MIN for NaN, Saturn 0)."""
    if ORT and t in FLOATS:
        return FLOATS + ["bool"]
    return INTS + FLOATS + ["bool"]


def values(t, shape, rng):
    n = int(np.prod(shape))
    if t == "bool":
        return rng.integers(0, 2, n).astype(np.bool_).reshape(shape)
    if t in INTS:
        info = np.iinfo(NP[t])
        pool = [0, 1, 2, 3, 7, -1 if t != "u8" else 5] + ([] if FINITE else [info.min, info.max])
        lo, hi = (max(info.min, -9), min(info.max, 9)) if FINITE else (max(info.min, -300), min(info.max, 300))
        v = [rng.choice(pool) if rng.random() < 0.3 else rng.integers(lo, hi) for _ in range(n)]
        return np.array(v, dtype=np.int64).astype(NP[t]).reshape(shape)
    pool = [0.0, -0.0, 1.0, -1.0, -2.5, 3.0] + ([] if FINITE else [np.inf, -np.inf, np.nan, 65504.0])
    v = [rng.choice(pool) if rng.random() < 0.2 else rng.normal() * 10 for _ in range(n)]
    with np.errstate(over="ignore"):
        return np.array(v).astype(NP[t]).reshape(shape)


def elementwise(r, lines, cur):
    """One random elementwise step over the values in `cur` (name -> (type, shape))."""
    numeric = [v for v in cur if cur[v][0] != "bool"]
    x = r.choice(numeric)
    t, shape = cur[x]
    y = r.choice([v for v in numeric if cur[v][0] == t])
    o = f"v{len(lines)}"
    kind = r.random()
    if kind < 0.45:
        ops = ["add", "sub", "mul", "max", "min"]
        if not (ORT and t in INTS):  # (ONNX Runtime's integer division by zero traps)
            ops += ["div", "mod"]
        op = r.choice(ops + (["pow"] if t in INTS and not ORT else []))
        attr = " :fmod 1" if op == "mod" and (r.random() < 0.5 or (ORT and t in FLOATS)) else ""
        lines.append(f"  (node n{len(lines)} {op} ({o}) ({x} {y}){attr})")
        cur[o] = (t, shape)
    elif kind < 0.6:
        op = r.choice(["neg", "abs", "sign", "relu"] + (["floor", "ceil"] if t in FLOATS else []))
        lines.append(f"  (node n{len(lines)} {op} ({o}) ({x}))")
        cur[o] = (t, shape)
    elif kind < 0.8:
        c = f"c{len(lines)}"
        lines.append(f"  (node n{len(lines)} {r.choice(['less', 'greater', 'equal', 'less_equal'])} ({c}) ({x} {y}))")
        lines.append(f"  (node n{len(lines)} where ({o}) ({c} {x} {y}))")
        cur[o] = (t, shape)
    else:
        to = r.choice(cast_targets(t))
        lines.append(f"  (node n{len(lines)} cast ({o}) ({x}) :to \"{to}\")")
        cur[o] = (to, shape)
    return o


def movement(r, lines, cur):
    """One random movement / reduction / product step."""
    x = r.choice(list(cur))
    t, sh = cur[x]
    rank = len(sh)
    o = f"v{len(lines)}"
    n = f"n{len(lines)}"
    if rank == 0:  # a full reduction's scalar
        lines.append(f"  (node {n} unsqueeze ({o}) ({x}) :axes [0])")
        cur[o] = (t, [1])
        return o
    kind = r.random()
    ax = r.randrange(rank)
    if kind < 0.15:
        perm = list(range(rank))
        r.shuffle(perm)
        lines.append(f"  (node {n} transpose ({o}) ({x}) :perm [{' '.join(map(str, perm))}])")
        cur[o] = (t, [sh[p] for p in perm])
    elif kind < 0.3:
        d = sh[ax]
        if r.random() < 0.3 and d > 1:
            lines.append(f"  (node {n} slice ({o}) ({x}) :starts [-1] :ends [-{d + 1}] :axes [{ax}] :steps [-1])")
            cur[o] = (t, sh[:])
        else:
            st = r.randint(0, d - 1)
            en = r.randint(st + 1, d)
            step = r.choice([1, 1, 2])
            lines.append(f"  (node {n} slice ({o}) ({x}) :starts [{st}] :ends [{en}] :axes [{ax}] :steps [{step}])")
            cur[o] = (t, sh[:ax] + [len(range(st, en, step))] + sh[ax + 1:])
    elif kind < 0.5 and t != "bool":
        op = r.choice(["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"] +
                      (["reduce_mean", "reduce_l2", "reduce_log_sum_exp"] if t in FLOATS else []))
        keep = r.randint(0, 1)
        lines.append(f"  (node {n} {op} ({o}) ({x}) :axes [{ax}] :keepdims {keep})")
        cur[o] = (t, sh[:ax] + ([1] if keep else []) + sh[ax + 1:])
    elif kind < 0.6:
        lines.append(f"  (node {n} concat ({o}) ({x} {x}) :axis {ax})")
        cur[o] = (t, sh[:ax] + [2 * sh[ax]] + sh[ax + 1:])
    elif kind < 0.68:
        lines.append(f"  (node {n} expand ({o}) ({x}) :shape [{' '.join(map(str, [2] + sh))}])")
        cur[o] = (t, [2] + sh)
    elif kind < 0.76 and rank >= 2 and t in ("f32", "f64", "i32", "i64"):
        perm = list(range(rank))
        perm[-1], perm[-2] = perm[-2], perm[-1]
        lines.append(f"  (node {n}t transpose ({o}t) ({x}) :perm [{' '.join(map(str, perm))}])")
        lines.append(f"  (node {n} matmul ({o}) ({x} {o}t))")
        cur[o] = (t, sh[:-1] + [sh[-2]])
    elif kind < 0.82:
        pads = [0] * (2 * rank)
        pads[ax], pads[rank + ax] = r.randint(0, 2), r.randint(-1 if sh[ax] > 1 else 0, 2)
        mode = r.choice(["constant", "reflect", "edge"]) if min(pads) >= 0 and sh[ax] > 2 else "constant"
        lines.append(f"  (node {n} pad ({o}) ({x}) :pads [{' '.join(map(str, pads))}] :mode \"{mode}\")")
        cur[o] = (t, sh[:ax] + [sh[ax] + pads[ax] + pads[rank + ax]] + sh[ax + 1:])
    elif kind < 0.87:
        reps = [r.randint(1, 2) for _ in sh]
        lines.append(f"  (node {n} tile ({o}) ({x}) :repeats [{' '.join(map(str, reps))}])")
        cur[o] = (t, [a * b for a, b in zip(sh, reps)])
    elif kind < 0.91 and t != "bool":
        op = r.choice(["argmax", "argmin"])
        lines.append(f"  (node {n} {op} ({o}) ({x}) :axis {ax} :keepdims 1 :select_last_index {r.randint(0, 1)})")
        cur[o] = ("i64", sh[:ax] + [1] + sh[ax + 1:])
    elif kind < 0.95 and t in FLOATS:
        lines.append(f"  (node {n} {r.choice(['softmax', 'log_softmax'])} ({o}) ({x}) :axis {ax})")
        cur[o] = (t, sh[:])
    else:
        to = r.choice(cast_targets(t))
        lines.append(f"  (node {n} cast ({o}) ({x}) :to \"{to}\")")
        cur[o] = (to, sh[:])
    return o


def literal(arr):
    return "[" + " ".join(repr(float(v)) for v in arr.reshape(-1)) + "]"


def nn(r, rng, lines, cur, inits):
    """One random convolution, transposed convolution, pooling, gemm or norm
    (weights as initializers), with a relu or a residual add after it at times."""
    x = r.choice([v for v in cur if len(cur[v][1]) in (3, 4)] or list(cur))
    t, sh = cur[x]
    o = f"v{len(lines)}"
    n = f"n{len(lines)}"
    kind = r.random()
    spatial = sh[2:]
    ks = [r.randint(1, min(3, d + 2)) for d in spatial]
    dil = [r.choice([1, 1, 2]) for _ in spatial]
    st = [r.choice([1, 1, 2]) for _ in spatial]
    pads = [r.randint(0, k - 1) for k in ks] + [r.randint(0, k - 1) for k in ks]
    ints = lambda v: "[" + " ".join(map(str, v)) + "]"
    def out_dim(i, extra=0):
        return (spatial[i] + pads[i] + pads[len(ks) + i] - ((ks[i] - 1) * dil[i] + 1) + extra) // st[i] + 1
    if kind < 0.35 and len(sh) >= 3:
        c = sh[1]
        g = r.choice([d for d in (1, 2, c) if c % d == 0])
        m = g * r.randint(1, 2)
        if any((spatial[i] + pads[i] + pads[len(ks) + i] - ((ks[i] - 1) * dil[i] + 1)) < 0 for i in range(len(ks))):
            dil = [1] * len(ks)
            pads = [k - 1 for k in ks] * 2
        w = f"w{len(lines)}"
        inits[w] = (t, [m, c // g] + ks, rng.normal(size=[m, c // g] + ks) * 0.5)
        bias = f"b{len(lines)}"
        inits[bias] = (t, [m], rng.normal(size=[m]))
        lines.append(f"  (node {n} conv ({o}) ({x} {w} {bias}) :kernel_shape {ints(ks)} :strides {ints(st)} "
                     f":pads {ints(pads)} :dilations {ints(dil)} :group {g})")
        cur[o] = (t, [sh[0], m] + [out_dim(i) for i in range(len(ks))])
    elif kind < 0.5 and len(sh) >= 3:
        c = sh[1]
        m = r.randint(1, 3)
        pads = [r.randint(0, k - 1) for k in ks] * 2
        w = f"w{len(lines)}"
        inits[w] = (t, [c, m] + ks, rng.normal(size=[c, m] + ks) * 0.5)
        lines.append(f"  (node {n} conv_transpose ({o}) ({x} {w}) :kernel_shape {ints(ks)} :strides {ints(st)} "
                     f":pads {ints(pads)})")
        cur[o] = (t, [sh[0], m] + [(spatial[i] - 1) * st[i] + ks[i] - pads[i] - pads[len(ks) + i]
                                   for i in range(len(ks))])
        if min(cur[o][1]) < 1:
            del cur[o]
            lines.pop()
            return nn(r, rng, lines, cur, inits)
    elif kind < 0.7 and len(sh) >= 3:
        op = r.choice(["max_pool", "avg_pool"])
        ceil = r.randint(0, 1)
        pads = [r.randint(0, k // 2) for k in ks] * 2
        if op == "avg_pool":
            dil = [1] * len(ks)
        if any(out_dim(i) < 1 for i in range(len(ks))):
            ks, dil, pads, st = [1] * len(ks), [1] * len(ks), [0] * (2 * len(ks)), [1] * len(ks)
        extra = f" :count_include_pad {r.randint(0, 1)}" if op == "avg_pool" else ""
        lines.append(f"  (node {n} {op} ({o}) ({x}) :kernel_shape {ints(ks)} :strides {ints(st)} :pads {ints(pads)} "
                     f":dilations {ints(dil)} :ceil_mode {ceil}{extra})")
        dims = []
        for i in range(len(ks)):
            span = spatial[i] + pads[i] + pads[len(ks) + i] - ((ks[i] - 1) * dil[i] + 1)
            d = (span + (st[i] - 1 if ceil else 0)) // st[i] + 1
            if ceil and (d - 1) * st[i] >= spatial[i] + pads[i]:
                d -= 1
            dims.append(d)
        cur[o] = (t, sh[:2] + dims)
    elif kind < 0.85:
        flat = f"f{len(lines)}"
        lines.append(f"  (node {n}f reshape ({flat}) ({x}) :shape [{sh[0]} -1])")
        k = int(np.prod(sh[1:]))
        m = r.randint(1, 5)
        ta, tb = 0, r.randint(0, 1)
        w = f"w{len(lines)}"
        inits[w] = (t, [m, k] if tb else [k, m], rng.normal(size=[m, k] if tb else [k, m]) * 0.3)
        c = f"b{len(lines)}"
        inits[c] = (t, [m], rng.normal(size=[m]))
        lines.append(f"  (node {n} gemm ({o}) ({flat} {w} {c}) :alpha {r.choice([1.0, 0.5])} :beta {r.choice([1.0, 2.0])} "
                     f":transA {ta} :transB {tb})")
        cur[o] = (t, [sh[0], m])
    else:
        axis = r.randrange(1, len(sh)) if len(sh) > 1 else 0
        norm = [int(np.prod(sh[axis:]))]
        sc, bi = f"s{len(lines)}", f"b{len(lines)}"
        inits[sc] = (t, sh[axis:], rng.normal(size=sh[axis:]))
        inits[bi] = (t, sh[axis:], rng.normal(size=sh[axis:]))
        lines.append(f"  (node {n} layer_norm ({o}) ({x} {sc} {bi}) :axis {axis})")
        cur[o] = (t, sh[:])
    if r.random() < 0.4:
        o2 = f"v{len(lines)}"
        if r.random() < 0.5 or cur[o][1] != sh:
            lines.append(f"  (node n{len(lines)} relu ({o2}) ({o}))")
        else:
            lines.append(f"  (node n{len(lines)} add ({o2}) ({o} {x}))")
        cur[o2] = cur[o]
        o = o2
    return o


def make_case(seed, family, folder):
    r = random.Random(seed)
    rng = np.random.default_rng(seed)
    inits = {}
    if family == "nn":
        t = r.choice(["f32", "f32", "f64", "f16"])
        shape = [r.randint(1, 2), r.randint(1, 4)] + [r.randint(1, 7) for _ in range(r.randint(1, 2))]
    else:
        t = r.choice(INTS + FLOATS + (["bool"] if family == "movement" else []))
        shape = [2, 5] if family == "elementwise" else [r.randint(1, 4) for _ in range(r.randint(1, 4))]
    names = ["a", "b", "c"] if family == "elementwise" else ["a"]
    lines = [f"(graph fuzz{seed}"] + [f"  (input {v} {t} [{' '.join(map(str, shape))}])" for v in names]
    cur = {v: (t, shape) for v in names}
    if family == "nn":
        outs = [nn(r, rng, lines, cur, inits) for _ in range(r.randint(1, 3))]
    else:
        step = elementwise if family == "elementwise" else movement
        outs = [step(r, lines, cur) for _ in range(r.randint(3, 8))]
    for i, (name, (it, dims, v)) in enumerate(inits.items()):
        lines.insert(1 + len(names) + i, f"  (init {name} {it} [{' '.join(map(str, dims))}] {literal(np.asarray(v))})")
    lines.append(f"  (output {' '.join(outs[-3:])}))")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "g.sat"), "w") as f:
        f.write("\n".join(lines) + "\n")
    inputs = []
    for v in names:
        inputs.append(os.path.join(folder, v + ".npy"))
        np.save(inputs[-1], values(t, shape, rng))
    return inputs


def run(folder, inputs, target, model="g.sat"):
    out = os.path.join(folder, "out_" + target)
    # (--no-opt: the compiled target runs the graph exactly as given, written
    # or as `saturn opt` made it; the interpreter ignores it.)
    no_opt = ["--no-opt"] if target != "interp" else []
    p = subprocess.run([SATURN, "run", os.path.join(folder, model), "--target", target, "--threads", "1", *no_opt,
                        "--inputs", *inputs, "-o", out], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stderr.strip(), out


def disagreement(folder, inputs, tol, optimize, target="cpu"):
    ri, ei, oi = run(folder, inputs, "interp")
    model = "g.sat"
    if optimize:  # the target runs what `saturn opt` made of the graph
        model = "opt.sat"
        p = subprocess.run([SATURN, "opt", os.path.join(folder, "g.sat"), "--target", target, "-q", "-o",
                            os.path.join(folder, model)], capture_output=True, text=True, timeout=300)
        if p.returncode:
            return f"saturn opt exit {p.returncode}: {p.stderr.strip()[-300:]}"
    rc, ec, oc = run(folder, inputs, target, model)
    if ri not in (0, 2) or rc not in (0, 2):
        return f"exit {ri} (interp) / {rc} ({target}): {ec[-300:]}"
    if ri != rc:
        return f"interp exit {ri}, {target} exit {rc}: {(ei if ri else ec)[-300:]}"
    if ri:  # the same error (an integer division by zero, in the same node)
        # (The cpu target reports its compile first. An optimized graph may
        # order its nodes otherwise: another division by zero may come first.)
        last_i, last_c = ei.splitlines()[-1:], ec.splitlines()[-1:]
        if optimize:
            return None if "integer" in ec else f"interp: {last_i} / {target}: {last_c}"
        return None if last_i == last_c else f"interp: {last_i} / {target}: {last_c}"
    for f in sorted(glob.glob(os.path.join(oi, "*.pb"))):
        a = numpy_helper.to_array(onnx.load_tensor(f))
        b = numpy_helper.to_array(onnx.load_tensor(os.path.join(oc, os.path.basename(f))))
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{os.path.basename(f)}: {a.dtype}{a.shape} (interp) / {b.dtype}{b.shape} ({target})"
        if not same_values(a, b, tol):
            return f"{os.path.basename(f)} differs"
    return None


def same_values(a, b, tol):
    """Whether b (computed) matches a (the reference): integers and bools
    exactly, floats to tol (f16: 1e-3 at least), NaN for NaN."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind != "f":
        return np.array_equal(a, b)
    rtol = max(tol, 1e-3) if a.dtype == np.float16 else tol
    return np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=tol, equal_nan=True)


def against_ort(folder, inputs, tol, target):
    """(kind, why): kind is "agree", "differ", "ort refuses" or "saturn
    refuses"; the graph as .onnx run by ONNX Runtime and by `saturn run`."""
    import onnxruntime as ort
    model = os.path.join(folder, "g.onnx")
    p = subprocess.run([SATURN, "opt", os.path.join(folder, "g.sat"), "--no-default-rules", "-q", "-o", model],
                       capture_output=True, text=True, timeout=300)
    if p.returncode:
        return "differ", f"writing the graph as .onnx: exit {p.returncode}: {p.stderr.strip()[-300:]}"
    feeds = {os.path.splitext(os.path.basename(f))[0]: np.load(f) for f in inputs}
    try:
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.intra_op_num_threads = 2
        sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        want = sess.run(None, {i.name: feeds[i.name] for i in sess.get_inputs()})
    except Exception as e:  # (a type or attribute ONNX Runtime has no kernel for)
        return "ort refuses", str(e).splitlines()[0][:200]
    out = os.path.join(folder, "out_ort_" + target)
    p = subprocess.run([SATURN, "run", model, "--target", target, "--inputs", *inputs, "-o", out],
                       capture_output=True, text=True, timeout=300)
    if p.returncode == 2:
        return "saturn refuses", p.stderr.strip().splitlines()[-1][:300] if p.stderr.strip() else ""
    if p.returncode:
        return "differ", f"saturn exit {p.returncode}: {p.stderr.strip()[-300:]}"
    for k, a in enumerate(want):
        b = numpy_helper.to_array(onnx.load_tensor(os.path.join(out, f"output_{k}.pb")))
        if not same_values(np.asarray(a), b, tol):
            return "differ", f"output {k}: {np.asarray(a).dtype}{np.asarray(a).shape} (ort) / {b.dtype}{b.shape} (saturn)"
    return "agree", ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", choices=["elementwise", "movement", "nn"], default="elementwise")
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", help="folder for the cases (default: a temporary one, kept when one disagrees)")
    ap.add_argument("--opt", action="store_true", help="run the graph optimized by `saturn opt` on the target")
    ap.add_argument("--target", choices=["cpu", "cuda"], default="cpu", help="the compiled target (cuda: needs a GPU)")
    ap.add_argument("--finite", action="store_true",
                    help="no infinities, NaN or integer extremes among the inputs (rules exact only over the reals, "
                         "such as x*0 => 0, differ on those)")
    ap.add_argument("--against", choices=["ort"], help="compare with ONNX Runtime instead of the interpreter")
    args = ap.parse_args()
    global FINITE, ORT
    ORT = args.against == "ort"
    FINITE = args.finite or ORT
    root = args.keep or tempfile.mkdtemp(prefix="saturn-fuzz-targets-")
    bad = 0
    if ORT:
        counts = {}
        for seed in range(args.seed, args.seed + args.n):
            folder = os.path.join(root, f"{args.family}-{seed}")
            kind, why = against_ort(folder, make_case(seed, args.family, folder), 1e-3, args.target)
            counts[kind] = counts.get(kind, 0) + 1
            if kind != "agree":
                print(f"{folder}: {kind}: {why}")
        bad = counts.get("differ", 0)
        print(f"{args.n} {args.family} graphs on {args.target} against ONNX Runtime: " +
              ", ".join(f"{counts.get(k, 0)} {k}" for k in ["agree", "differ", "ort refuses", "saturn refuses"]) +
              f" ({root})")
        return 1 if bad else 0
    for seed in range(args.seed, args.seed + args.n):
        folder = os.path.join(root, f"{args.family}-{seed}")
        # (Library calls sum in another order than the interpreter.)
        why = disagreement(folder, make_case(seed, args.family, folder),
                           1e-4 if args.family == "nn" or args.opt else 1e-5, args.opt, args.target)
        if why:
            bad += 1
            print(f"{folder}: {why}")
    print(f"{args.n} {args.family} graphs on {args.target}{' (optimized)' if args.opt else ''}, {bad} disagreements "
          f"({root})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
