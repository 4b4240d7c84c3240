#!/usr/bin/env python3
"""Does the cost model rank programs as they measure?

For each model, several candidate programs: the model as written, and what
`saturn opt --target T` extracts with only the library and fusion rulesets,
with every ruleset but TASO's, and with every ruleset (tree-greedy and
dag-greedy). Each is modeled (`saturn opt --json`: cost_before / cost_after)
and measured (the program exactly as extracted, distinct programs only;
on cpu each kept up in PROCESSES processes taking turns, bench/turns.py,
or with --fresh-processes `saturn run --no-opt --bench` in interleaved
rounds; on cuda that way too, the
device time of the steps, `device_median_ms`, which is what the model
prices: the host-device copies at the borders are not a program's). Prints per model the Spearman rank correlation of modeled against
measured latency and each candidate's modeled/measured ratio, then the pooled
figures: Spearman over every (model, candidate) and the share of candidates
modeled within 25% of what they measure (docs/cost-model.md).

  python3 bench/validate_cost_model.py /work/models [--target cpu|cuda] [--rounds 3] [--runs 5] [--threads 2]

The cost model prices with this machine's calibration cache when there is
one (`saturn calibrate MODEL...` fills it); --no-calibration in both
commands' place is what the roofline alone predicts (run with
SATURN_CACHE_DIR pointing at an empty folder).

Models are the .onnx files of the folder with their .input.npy beside them
(bench/export_models.py writes both).
"""
import argparse
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import turns  # noqa: E402
RULES = os.path.join(ROOT, "rulesets")
ALL = sorted(f for f in os.listdir(RULES) if f.endswith(".rules"))
# Each target's library rulesets; the other target's are never loaded.
LIBRARY = {"cpu": ["blas.rules", "dnnl.rules"], "cuda": ["cublas.rules", "cudnn.rules"]}


def candidates(target):
    """name -> extra `saturn opt` arguments (None: the model as written)."""
    other = LIBRARY["cuda" if target == "cpu" else "cpu"]
    rules = lambda files: ["--no-default-rules", "--rules"] + [os.path.join(RULES, f) for f in files]
    return {
        "written": None,
        "library+fusion": rules(LIBRARY[target] + ["fusion.rules"]),
        "no-taso": rules([f for f in ALL if f != "taso.rules" and f not in other]),
        "all/tree-greedy": ["--extractor", "tree-greedy"],
        "all/dag-greedy": [],
    }


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = math.sqrt(sum((x - ma) ** 2 for x in ra))
    vb = math.sqrt(sum((y - mb) ** 2 for y in rb))
    return cov / (va * vb) if va and vb else float("nan")


def program_key(path):
    """What identifies a written program: its text with the name of its
    weights file taken out (each candidate writes its own), and the
    weights' bytes."""
    text = open(path).read()
    data = path + ".data"
    if os.path.exists(data):
        text = text.replace(os.path.basename(data), "DATA")
        with open(data, "rb") as f:
            text += hashlib.sha256(f.read()).hexdigest()
    return text


def run_json(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(" ".join(cmd) + ": " + out.stderr.strip()[-400:])
    return json.loads(out.stdout)


def taking_turns(args, progs, model, inputs):
    """Per program, its samples (ms), the programs kept up in PROCESSES
    processes each and timed in alternating turns (bench/turns.py): ROUNDS
    turns of RUNS runs, WRITTEN_RUNS for the model as written."""
    contenders, runs = {}, {}
    try:
        for j, (path, _, _) in enumerate(progs):
            contenders[j] = [turns.Contender("/usr/bin/python3", turns.SATURN_SETUP,
                                             [path, inputs, args.threads, "fixed"],
                                             turns.saturn_env(ROOT)) for _ in range(args.processes)]
            runs[j] = args.written_runs if path == model else args.runs
        ms = turns.alternate(contenders, args.rounds, runs, warm_ms=args.warm_ms)
    finally:
        for c in (c for cs in contenders.values() for c in cs):
            c.close()
    return [ms[j] for j in range(len(progs))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models")
    ap.add_argument("--saturn", default=os.path.join(ROOT, "build", "tools", "saturn"))
    ap.add_argument("--rounds", type=int, default=3,
                    help="interleaved rounds (cpu: turns per program, the median of every sample; "
                         "fresh processes and cuda: the median of the rounds' medians)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per round")
    ap.add_argument("--written-runs", type=int, default=1, help="timed runs per round of the (slow) model as written")
    ap.add_argument("--threads", type=int, default=2, help="cpu target: threads")
    ap.add_argument("--target", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--only", nargs="*", help="model names")
    ap.add_argument("--processes", type=int, default=3,
                    help="cpu: processes per program taking turns (bench/turns.py)")
    ap.add_argument("--warm-ms", type=float, default=0,
                    help="cpu: untimed runs for this long at the start of each turn (bench/turns.py)")
    ap.add_argument("--fresh-processes", action="store_true",
                    help="cpu: the earlier method, a fresh `saturn run` per program and round (always on cuda)")
    args = ap.parse_args()
    names = sorted(f[:-5] for f in os.listdir(args.models) if f.endswith(".onnx"))
    if args.only:
        names = [n for n in names if n in args.only]
    pooled_mod, pooled_meas, within, total, per_model = [], [], 0, 0, []
    # (The programs written here, some with their weights: removed however it ends.)
    with tempfile.TemporaryDirectory(prefix="saturn-validate-") as tmp:
        print(f"{'model':<22}{'candidates':<40}{'modeled ms':>12}{'measured ms':>13}{'mod/meas':>10}")
        for name in names:
            model = os.path.join(args.models, name + ".onnx")
            inputs = os.path.join(args.models, name + ".input.npy")
            # Distinct programs only: candidates that extract the same program
            # are one point (measuring it twice would only rank noise).
            programs = {}  # text -> [path, modeled ms, candidate names]
            for i, (cand, extra) in enumerate(candidates(args.target).items()):
                if extra is None:
                    report = run_json([args.saturn, "opt", model, "--target", args.target, "--json"])
                    programs["written"] = [model, report["cost_before"] / 1e3, [cand]]
                    continue
                path = os.path.join(tmp, f"{name}.{i}.sat")
                report = run_json([args.saturn, "opt", model, "--target", args.target, "--json", "-o", path] + extra)
                text = program_key(path)
                if text in programs:
                    programs[text][2].append(cand)
                else:
                    programs[text] = [path, report["cost_after"] / 1e3, [cand]]
            progs = list(programs.values())
            medians = [[] for _ in progs]
            if args.target == "cpu" and not args.fresh_processes:
                medians = taking_turns(args, progs, model, inputs)
            for r in range(args.rounds if args.target == "cuda" or args.fresh_processes else 0):
                for k in range(len(progs)):
                    j = (k + r) % len(progs)  # each round starts elsewhere
                    path = progs[j][0]
                    written = path == model
                    threads = ["--threads", str(args.threads), "--fixed-threads"] if args.target == "cpu" else []
                    out = run_json([args.saturn, "run", path, "--target", args.target, "--no-opt"] + threads +
                                   ["--inputs", inputs, "--bench", str(args.written_runs if written else args.runs),
                                    "--json"])
                    medians[j].append(out["device_median_ms"] if args.target == "cuda" else out["median_ms"])
            mod, meas = [], []
            for (path, modeled, cands), ms in zip(progs, medians):
                measured = statistics.median(ms)
                mod.append(modeled)
                meas.append(measured)
                ratio = modeled / measured
                within += abs(ratio - 1) <= 0.25
                total += 1
                print(f"{name:<22}{'+'.join(cands):<40}{modeled:>12.3f}{measured:>13.3f}{ratio:>10.2f}", flush=True)
            rho = spearman(mod, meas) if len(mod) > 2 else float("nan")
            per_model.append(rho)
            print(f"{name:<22}{'Spearman (' + str(len(mod)) + ' programs)':<40}{rho:>12.2f}", flush=True)
            pooled_mod += mod
            pooled_meas += meas
        print()
        print(f"pooled Spearman over {total} programs: {spearman(pooled_mod, pooled_meas):.3f}")
        finite = [r for r in per_model if not math.isnan(r)]
        if finite:
            print(f"per-model Spearman (models with 3+ distinct programs): mean {sum(finite) / len(finite):.3f}, "
                  f"min {min(finite):.3f}")
        print(f"modeled within 25% of measured: {within}/{total}")


if __name__ == "__main__":
    sys.exit(main())
