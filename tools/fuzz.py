#!/usr/bin/env python3
"""Mutation fuzzing of Saturn's inputs through the CLI: bad input must end
in exit status 2 (or 0, when the mutation left a valid model), never in a
signal, a hang or another status. Not part of the test suite (it takes
minutes); run it after changing the importer, a shape rule or the rule
parser. Each failing input is kept and printed with the end of its stderr.

  tools/fuzz.py onnx MODEL.onnx INPUTS.pb [--verb run|interp|opt] [-n N] [--seed S]
      byte mutations of an ONNX file (bytes set, bits flipped, bytes deleted
      near the start, where the graph's structure is), run through
      `saturn run --target cpu` (run), `saturn run` (interp) or `saturn opt`
  tools/fuzz.py graph MODEL.onnx INPUTS [-n N] [--seed S]
      structural mutations of an ONNX model, one or two a case, as a broken
      exporter could make them (an attribute's value, an input dimension,
      an initializer's shape or element type, an operand's wiring, a node
      dropped, an op type swapped; needs numpy and onnx, the benchmarks'
      venv), run through `saturn run` on the cpu target or the interpreter,
      optimized or `--no-opt`. Exit 0, or 2 with an error message; exit 1
      fails too: a shipped rule refused to optimize a model the importer
      accepted (a typing hole, as mixed-type normalizations were). INPUTS
      is a .pb or .npy
  tools/fuzz.py rules MODEL.onnx [-n N] [--seed S]
      token mutations of a shipped ruleset (tokens dropped, replaced or
      inserted), loaded alone by `saturn opt --no-default-rules`; exit 1 with
      "unsound rewrite" is accepted: a mutation can make a rule unsound, and
      that is how Saturn reports one
  tools/fuzz.py classes [-n N] [--seed S]
      random instances of the bad-input classes a fuzzing campaign found
      (deep nesting, wrapped element counts, INT64_MIN / -1, long fused
      chains, long chains of softmax (each read in several kernels),
      wrong-kind attributes, single assignment, out-of-range integers, bad
      dimensions, bad numeric flags, devices and directories as files, huge
      .npy shapes, unknown auto_pad / Gelu strings, negative pads): each
      must end in its documented status
      with its message, never a signal, a hang or an internal error

--saturn BIN runs another build (build-asan/tools/saturn: memory errors
show as the sanitizers' reports, which fail the case).
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SATURN = os.path.join(ROOT, "build", "tools", "saturn")
JUNK = ["(", ")", "?x", "?a", ":if", ":phase", "rule", "defoptimizer", "=>", "add", "mul", "0", "-1", "1e999", '"',
        ";", "f32", "(is-const", "(dtype", "(=", "nan", "[1 2]", "(matmul", "@", "\\\\", "\u00e9"]


def mutate_bytes(data, rng):
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        k = rng.randrange(len(b))
        op = rng.randrange(4)
        if op == 0:
            b[k] = rng.randrange(256)
        elif op == 1:
            b[k] ^= 1 << rng.randrange(8)
        elif op == 2 and k < 2000:
            del b[k]
        else:
            b[k] = rng.choice([0, 1, 0x7F, 0x80, 0xFF])
    return bytes(b)


def mutate_rules(text, rng):
    toks = re.split(r"(\s+|[()])", text)
    for _ in range(rng.randint(1, 4)):
        k = rng.randrange(len(toks))
        op = rng.randrange(3)
        if op == 0:
            toks[k] = ""
        elif op == 1:
            toks[k] = rng.choice(JUNK)
        else:
            toks.insert(k, " " + rng.choice(JUNK) + " ")
    return "".join(toks).encode()


GRAPH_OPS = ["Relu", "Add", "MatMul", "Conv", "Softmax", "Transpose", "Reshape", "Gemm", "Concat", "Slice", "Gather",
             "ReduceMean"]


def mutate_graph(data, rng):
    """One or two structural mutations of a serialized ONNX model."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    m = onnx.load_from_string(data)
    g = m.graph
    for _ in range(rng.randint(1, 2)):
        what = rng.choice(["attribute"] * 3 + ["input dim", "initializer shape", "initializer type", "wiring", "drop",
                                               "op"])
        if what == "attribute":
            cands = [a for n in g.node for a in n.attribute]
            if not cands:
                continue
            a = rng.choice(cands)
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
        elif what == "input dim" and len(g.input):
            dims = g.input[0].type.tensor_type.shape.dim
            if len(dims):
                dims[rng.randrange(len(dims))].dim_value = rng.choice([0, 1, 2, 7, 1 << 31])
        elif what.startswith("initializer") and len(g.initializer):
            t = rng.choice(list(g.initializer))
            v = numpy_helper.to_array(t)
            if what == "initializer type":
                v = v.astype(rng.choice([np.int64, np.float16, np.int8, np.bool_, np.float64]))
            elif v.size > 1:
                v = v.reshape(-1)[: max(1, v.size // 2)] if rng.random() < 0.5 else (
                    v.reshape(-1, 1) if v.ndim == 1 else v.reshape(v.shape[::-1]))
            elif v.size:
                v = np.repeat(v.reshape(-1), 3)
            t.CopyFrom(numpy_helper.from_array(v, t.name))
        elif what == "wiring" and len(g.node):
            n = rng.choice(list(g.node))
            if len(n.input):
                names = [x.name for x in g.initializer] + [o for x in g.node for o in x.output] + [x.name for x in g.input]
                n.input[rng.randrange(len(n.input))] = rng.choice(names + [""])
        elif what == "drop" and len(g.node):
            del g.node[rng.randrange(len(g.node))]
        elif what == "op" and len(g.node):
            rng.choice(list(g.node)).op_type = rng.choice(GRAPH_OPS)
    return m.SerializeToString()


def deep(n, open_="(", close=")", atom="x"):
    return open_ * n + atom + close * n


def sat(body, inputs="(input x f32 [4])"):
    return f"(graph g\n  {inputs}\n{body}\n)\n"


def npy_header(shape):
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }"
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode()


# Each class: (files to write {name: bytes}, saturn arguments with {name}
# replaced by the file's path, accepted exit statuses, text stderr must hold).
def bad_input_case(rng):
    rule = "(rule comm (+ ?a ?b) => (+ ?b ?a))\n"
    x4 = npy_header("(4,)") + b"\0" * 16
    big = rng.choice([1 << 62, 1 << 49, (1 << 47) + 1, 9223372036854775807])
    flag = rng.choice(["--iter-limit", "--node-limit", "--time-limit", "--memory-limit"])
    value = rng.choice(["-1", "-0.5", "nan", "inf", "-inf", "-9999999999999999999"])
    n = rng.randint(1001, 60000)
    chain = "\n".join(f"  (node n{i} sin (v{i}) ({'x' if i == 0 else f'v{i - 1}'}))"
                       for i in range(rng.randint(15000, 25000)))
    last = chain.rsplit("(v", 1)[1].split(")")[0]
    deep_nodes = rng.randint(2000, 4000)  # nodes a kernel reads in several passes: softmax, layer_norm
    unfused = "\n".join(f"  (node n{i} {rng.choice(['softmax', 'log_softmax'])} (u{i}) ({'x' if i == 0 else f'u{i - 1}'}))"
                         for i in range(deep_nodes))
    cases = [
        ({"deep.rules": deep(n).encode()}, ["verify", "{deep.rules}"], {2}, "nested deeper than 1000"),
        ({"r.rules": rule.encode(), "deep.terms": (deep(n, "(neg ", ")") + "\n").encode()},
         ["eqsat", "--rules", "{r.rules}", "{deep.terms}"], {2}, "nested deeper than 1000"),
        ({"deep.sat": sat("  (init w f32 [1] " + deep(n, "[", "]", "1") + ")\n  (output w)").encode()},
         ["run", "{deep.sat}"], {2}, "nested deeper than 1000"),
        ({"r.rules": rule.encode(), "fpe.terms": b"(/ -9223372036854775808 -1)\n"},
         ["eqsat", "--rules", "{r.rules}", "--const-fold", "{fpe.terms}"], {0}, "(/ -9223372036854775808 -1)"),
        ({"big.sat": sat(f"  (init w f32 [{big} {rng.choice([4, 1 << 30])}] [])\n  (output w)").encode()},
         ["run", "{big.sat}"], {2}, "more than 2^48 elements"),
        ({"tile.sat": sat(f"  (node t tile (y) (x) :repeats [{big}])\n  (output y)").encode(), "x.npy": x4},
         ["run", "{tile.sat}", "--target", rng.choice(["cpu", "interp"]), "--inputs", "{x.npy}"], {2},
         "more than 2^48 elements"),
        ({"chain.sat": sat(chain + f"\n  (output v{last})").encode(), "x.npy": x4},
         ["run", "{chain.sat}", "--target", "cpu", "--no-opt", "--inputs", "{x.npy}"], {0}, ""),
        ({"unfused.sat": sat(unfused + f"\n  (output u{deep_nodes - 1})").encode(), "x.npy": x4},
         ["run", "{unfused.sat}", "--target", "cpu", "--no-opt", "--inputs", "{x.npy}"], {0}, ""),
        ({"twice.sat": sat("  (node a relu (y) (x))\n  (node b neg (y) (x))\n  (output y)").encode()},
         ["run", "{twice.sat}"], {2}, "is already defined"),
        ({"i8.sat": sat(f"  (init w i8 [1] [{rng.choice([128, 300, -129, 1 << 40])}])\n  (output w)").encode()},
         ["run", "{i8.sat}"], {2}, "out of range for i8"),
        ({"dim.sat": sat("  (output x)", f"(input x f32 [{rng.choice(['N*2', '2*N+99999999999999999999', 'x*N'])}])"
                         ).encode()}, ["run", "{dim.sat}"], {2}, "expected a dimension"),
        ({"r.rules": rule.encode(), "t.terms": b"(+ a b)\n"}, ["eqsat", "--rules", "{r.rules}", "{t.terms}", flag, value],
         {2}, flag + ": expected a finite number >= 0"),
        ({}, ["run", "/dev/zero"], {2}, "is not a regular file"),
        ({"pad.sat": sat("  (init w f32 [1 1 1 1] [1])\n  (node c conv (y) (x w) " +
                         rng.choice([':auto_pad "SAME_MIDDLE"', ':auto_pad ""', ":pads [-1 0 0 0]"]) + ")\n  (output y)",
                         "(input x f32 [1 1 4 4])").encode()}, ["run", "{pad.sat}"], {2}, "node 'c' (conv)"),
        ({"gelu.sat": sat('  (node c gelu (y) (x) :approximate "' + rng.choice(["fast", "TANH", ""]) + '")\n  (output y)'
                          ).encode()}, ["run", "{gelu.sat}"], {2}, "is not one of none, tanh"),
        ({"huge.npy": npy_header(f"({10 ** rng.randint(20, 40)},)") + b"\0" * 8, "x.sat": sat("  (output x)").encode()},
         ["run", "{x.sat}", "--inputs", "{huge.npy}"], {2}, "array too large"),
        ({"x.sat": sat("  (node r relu (y) (x))\n  (output y)").encode(), "x.npy": x4},
         ["run", "{x.sat}", "--target", rng.choice(["cpu", "interp"]), "--inputs"] + ["{x.npy}"] * rng.randint(2, 4),
         {2}, "the model takes 1 inputs, given"),
        ({"f8.sat": sat(f"  (node a {rng.choice(['add', 'mul', 'max', 'matmul'])} (y) (x x))\n  (output y)",
                        f"(input x {rng.choice(['f8e4m3fn', 'f8e5m2fnuz', 'f4e2m1', 'i4', 'u2'])} [4 4])").encode()},
         ["run", "{f8.sat}"], {2}, "that type only stores values"),
        ({"a.sat": sat("  (node r %s (y) (x) :%s 0.5)\n  (output y)" % rng.choice(
            [("leaky_relu", "alpah"), ("relu", "alpha"), ("elu", "beta"), ("softmax", "axes")])).encode()},
         ["run", "{a.sat}"], {2}, "has no attribute"),
        ({"n.sat": sat("  (init w %s [1] [%d])\n  (output w)" % rng.choice(
            [("i4", 8), ("i4", -9), ("u4", 16), ("u4", -1), ("i2", 2), ("u2", 4), ("u16", 65536), ("i16", -32769),
             ("u32", 1 << 32)]), "").encode()},
         ["run", "{n.sat}"], {2}, "is out of range for"),
    ]
    return rng.choice(cases)


def run(cmd, timeout):
    """(exit status or "timeout", stdout, stderr) of one saturn run."""
    try:
        r = subprocess.run(cmd, capture_output=True, timeout=timeout)
        return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        return "timeout", "", ""


def run_classes(a, rng, work):
    bad = 0
    for i in range(a.n):
        files, args, statuses, needle = bad_input_case(rng)
        paths = {}
        for name, data in files.items():
            paths[name] = os.path.join(work, f"case{i}-{name}")
            with open(paths[name], "wb") as f:
                f.write(data)
        cmd = [a.saturn] + [paths.get(x[1:-1], x) if x.startswith("{") else x for x in args]
        rc, out, err = run(cmd, 120)
        if rc in statuses and needle in err + out and "internal" not in err:
            for p in paths.values():
                os.remove(p)
            continue
        bad += 1
        print(f"status {rc} (want {sorted(statuses)}, {needle!r}): {' '.join(cmd)[:300]}\n  {err[-300:]}", flush=True)
    print(f"{a.n} bad-input cases, {bad} failing" + (f" (kept in {work})" if bad else ""))
    return 1 if bad else 0


def main():
    work = tempfile.mkdtemp(prefix="saturn-fuzz-")
    status = 1
    try:
        status = fuzz(work)
    finally:  # the failing inputs are kept, and nothing else
        if status == 0 or not os.listdir(work):
            shutil.rmtree(work, ignore_errors=True)
    return status


def fuzz(work):
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["onnx", "graph", "rules", "classes"])
    ap.add_argument("model", nargs="?")
    ap.add_argument("inputs", nargs="*", help="the model's inputs, in order (.npy or .pb)")
    ap.add_argument("--verb", choices=["run", "interp", "opt"], default="run")
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--saturn", default=SATURN)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    if a.kind == "classes":
        return run_classes(a, rng, work)
    if not a.model:
        ap.error("onnx, graph and rules fuzzing need a MODEL")
    # The rulesets `saturn opt` loads (rulesets/grad holds the gradient rules `saturn train` reads).
    rulesets = sorted(os.path.join(ROOT, "rulesets", f) for f in os.listdir(os.path.join(ROOT, "rulesets"))
                      if f.endswith(".rules"))
    model = open(a.model, "rb").read()
    bad = 0
    for i in range(a.n):
        if a.kind == "onnx":
            path = os.path.join(work, f"case{i}.onnx")
            data = mutate_bytes(model, rng)
            if a.verb == "opt":
                cmd = [a.saturn, "opt", path, "-q", "-o", os.path.join(work, "out.onnx")]
            else:
                cmd = [a.saturn, "run", path, "--inputs", *a.inputs] + (["--target", "cpu"] if a.verb == "run" else [])
        elif a.kind == "graph":
            path = os.path.join(work, f"case{i}.onnx")
            data = mutate_graph(model, rng)
            cmd = [a.saturn, "run", path, "--inputs", *a.inputs, "--threads", "1", "--target",
                   rng.choice(["cpu", "cpu", "interp"])] + (["--no-opt"] if rng.random() < 0.3 else [])
        else:
            path = os.path.join(work, f"case{i}.rules")
            data = mutate_rules(open(rng.choice(rulesets)).read(), rng)
            cmd = [a.saturn, "opt", a.model, "--no-default-rules", "--rules", path, "-q", "--time-limit", "3",
                   "--extract-time-limit", "3"]
        with open(path, "wb") as f:
            f.write(data)
        rc, _, err = run(cmd, 60)
        if rc == 1 and a.kind == "rules" and "unsound rewrite" in err:
            rc = 0
        # (A graph case's exit 2 must say why; exit 1 is a typing hole, above.)
        if "Sanitizer" in err or "runtime error:" in err:  # (UBSan may report and go on)
            rc = f"{rc} with a sanitizer report"
        if rc in (0, 2) and not (a.kind == "graph" and rc == 2 and "error" not in err):
            os.remove(path)
            continue
        bad += 1
        print(f"status {rc}: {path}\n  {err[-300:]}", flush=True)
    print(f"{a.n} mutations, {bad} failing" + (f" (kept in {work})" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
