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
  tools/fuzz.py rules MODEL.onnx [-n N] [--seed S]
      token mutations of a shipped ruleset (tokens dropped, replaced or
      inserted), loaded alone by `saturn opt --no-default-rules`; exit 1 with
      "unsound rewrite" is accepted: a mutation can make a rule unsound, and
      that is how Saturn reports one
"""
import argparse
import os
import random
import re
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["onnx", "rules"])
    ap.add_argument("model")
    ap.add_argument("inputs", nargs="?")
    ap.add_argument("--verb", choices=["run", "interp", "opt"], default="run")
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="saturn-fuzz-")
    rulesets = sorted(os.path.join(ROOT, "rulesets", f) for f in os.listdir(os.path.join(ROOT, "rulesets")))
    model = open(a.model, "rb").read()
    bad = 0
    for i in range(a.n):
        if a.kind == "onnx":
            path = os.path.join(work, f"case{i}.onnx")
            data = mutate_bytes(model, rng)
            if a.verb == "opt":
                cmd = [SATURN, "opt", path, "-q", "-o", os.path.join(work, "out.onnx")]
            else:
                cmd = [SATURN, "run", path, "--inputs", a.inputs] + (["--target", "cpu"] if a.verb == "run" else [])
        else:
            path = os.path.join(work, f"case{i}.rules")
            data = mutate_rules(open(rng.choice(rulesets)).read(), rng)
            cmd = [SATURN, "opt", a.model, "--no-default-rules", "--rules", path, "-q", "--time-limit", "3",
                   "--extract-time-limit", "3"]
        with open(path, "wb") as f:
            f.write(data)
        try:
            r = subprocess.run(cmd, capture_output=True, timeout=60)
            rc, err = r.returncode, r.stderr
        except subprocess.TimeoutExpired:
            rc, err = "timeout", b""
        if rc == 1 and a.kind == "rules" and b"unsound rewrite" in err:
            rc = 0
        if rc in (0, 2):
            os.remove(path)
            continue
        bad += 1
        print(f"status {rc}: {path}\n  {err[-300:].decode(errors='replace')}", flush=True)
    print(f"{a.n} mutations, {bad} failing (kept in {work})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
