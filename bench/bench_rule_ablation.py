#!/usr/bin/env python3
"""What named rules are worth: the same optimization with and without them.

For each model, `saturn opt --target cpu` twice: with the shipped rulesets
(`with`), and with a copy of them from which the named rules are removed
(`without`). Both programs are then run exactly as extracted
(`saturn run --no-opt --bench RUNS`), alternating in ROUNDS rounds of
fresh processes, and checked against each other first (`--check` of one's
outputs against the other's, rtol 1e-3, atol 1e-4). Prints each side's
median latency per round, the medians over rounds, the ratio
without/with (above 1: the rules pay) and the geomean; a model whose two
programs are the same (node for node, with the same operands) is marked
"same program".

  python3 bench/bench_rule_ablation.py --models DIR --without conv-winograd-dnnl \\
      [--without RULE ...] [--rounds 3] [--runs 20] [--threads 2] [NAME ...]

The models are DIR's .onnx files with their .input.npy beside them
(bench/export_models.py writes both); NAME restricts them.
"""
import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SATURN = os.path.join(ROOT, "build", "tools", "saturn")
RULES = os.path.join(ROOT, "rulesets")


def form_end(text, start):
    """Index just past the s-expression opening at text[start] ('(')."""
    depth, i, in_string = 0, start, False
    while i < len(text):
        ch = text[i]
        if in_string:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == ";":
            i = text.index("\n", i) if "\n" in text[i:] else len(text)
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    sys.exit("unbalanced parentheses in a rule file")


def strip_rules(text, names):
    """text without the (rule NAME ...) / (multirule NAME ...) forms named."""
    removed = set()
    for name in names:
        m = re.search(r"\((?:rule|multirule)\s+" + re.escape(name) + r"[\s)]", text)
        if not m:
            continue
        text = text[:m.start()] + text[form_end(text, m.start()):]
        removed.add(name)
    return text, removed


def ablated_rulesets(names, folder):
    removed = set()
    for entry in os.listdir(RULES):
        src = os.path.join(RULES, entry)
        dst = os.path.join(folder, entry)
        if os.path.isdir(src):
            shutil.copytree(src, dst)
        elif entry.endswith(".rules"):
            with open(src) as f:
                text, gone = strip_rules(f.read(), names)
            removed |= gone
            with open(dst, "w") as f:
                f.write(text)
    missing = set(names) - removed
    if missing:
        sys.exit("no shipped rule named " + ", ".join(sorted(missing)))


def optimize(model, out, rules=None):
    cmd = [SATURN, "opt", model, "--target", "cpu", "-o", out]
    if rules:
        cmd += ["--no-default-rules", "--rules", rules]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"saturn opt {model}: {p.stderr.strip()}")


NODE = re.compile(r"^\s*\(node \S+ (\S+) \(([^)]*)\) \(([^)]*)\)(.*)\)\s*$")


def program_shape(path):
    """The program's nodes as (op, operand references, attributes), values
    named by the node that computes them: two extractions of one program
    compare equal whatever names the optimizer gave their values."""
    produced, shape = {}, []
    with open(path) as f:
        for line in f:
            m = NODE.match(line)
            if not m:
                continue
            op, outs, ins, attrs = m.groups()
            refs = [produced.get(v, "const" if v not in ("", "none") else v) for v in ins.split()]
            shape.append((op, tuple(refs), attrs.strip()))
            for k, v in enumerate(outs.split()):
                produced[v] = f"n{len(shape) - 1}.{k}"
    return shape


def run(program, inputs, runs, threads, check=None):
    cmd = [SATURN, "run", program, "--no-opt", "--target", "cpu", "--threads", str(threads), "--inputs", inputs]
    if check:
        cmd += ["--check", *check, "--rtol", "1e-3", "--atol", "1e-4"]
    else:
        cmd += ["--bench", str(runs), "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"saturn run {program}: {(p.stderr or p.stdout).strip()}")
    return None if check else json.loads(p.stdout)["median_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", required=True)
    ap.add_argument("--without", action="append", required=True, metavar="RULE")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    if not os.path.exists(SATURN):
        sys.exit("build saturn first (cmake -S . -B build && cmake --build build)")
    models = sorted(f[:-5] for f in os.listdir(a.models) if f.endswith(".onnx"))
    if a.names:
        models = [m for m in models if m in a.names]
    with tempfile.TemporaryDirectory() as tmp:
        rules = os.path.join(tmp, "rulesets")
        os.mkdir(rules)
        ablated_rulesets(a.without, rules)
        print(f"without: {', '.join(a.without)}; {a.rounds} rounds of {a.runs} runs, {a.threads} threads (medians, ms)")
        print(f"{'model':22s} {'without':>9s} {'with':>9s} {'ratio':>7s}")
        ratios = []
        for m in models:
            model = os.path.join(a.models, m + ".onnx")
            inputs = os.path.join(a.models, m + ".input.npy")
            progs = {side: os.path.join(tmp, f"{m}.{side}.sat") for side in ("without", "with")}
            optimize(model, progs["with"])
            optimize(model, progs["without"], rules)
            outputs = os.path.join(tmp, m + ".out")
            subprocess.run([SATURN, "run", progs["without"], "--no-opt", "--target", "cpu", "--inputs", inputs,
                            "-o", outputs], capture_output=True, check=True)
            expected = sorted((f for f in os.listdir(outputs) if f.startswith("output_")),
                              key=lambda f: int(f[len("output_"):-len(".pb")]))
            run(progs["with"], inputs, a.runs, a.threads, check=[os.path.join(outputs, f) for f in expected])
            times = {"without": [], "with": []}
            for _ in range(a.rounds):
                for side in ("without", "with"):
                    times[side].append(run(progs[side], inputs, a.runs, a.threads))
            w, v = statistics.median(times["without"]), statistics.median(times["with"])
            ratios.append(w / v)
            same = "  (same program)" if program_shape(progs["with"]) == program_shape(progs["without"]) else ""
            print(f"{m:22s} {w:9.3f} {v:9.3f} {w / v:6.3f}x{same}   rounds: "
                  + " ".join(f"{x:.2f}/{y:.2f}" for x, y in zip(times["without"], times["with"])))
        if ratios:
            print(f"geomean over {len(ratios)} models: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}x"
                  " (above 1: the rules pay)")


if __name__ == "__main__":
    main()
