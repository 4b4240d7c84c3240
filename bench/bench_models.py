#!/usr/bin/env python3
"""What the e-graph's rewrites are worth on real models, and Saturn against
its peers (issue 25's benchmark).

For each model of the bench suite (bench/export_models.py: torchvision and
transformer models at random weights, batch 1), in one run, the contenders
below take turns (bench/turns.py): each is PROCESSES processes that load
and warm the model once and stay up, and ROUNDS times, the order rotating,
each contender times RUNS runs in its next process, timed in Python around
one call like the others (Saturn through its Python package from this
tree's build/python; --saturn is the binary that optimizes and checks).
This machine's slow spells last seconds and so fall on every contender
alike. --fresh-processes is the earlier method: ROUNDS rounds, each a fresh
process per contender with a warm-up and RUNS timed runs, in which a slow
spell lands on one contender's whole round.

  lib+fusion  `saturn opt --target cpu` with only the library and fusion
              rulesets (blas, dnnl, fusion), then the program run as
              extracted (`saturn run --no-opt`);
  all         `saturn opt --target cpu` with every shipped ruleset (the
              default), run the same way;
  ort         ONNX Runtime from a venv (2 intra-op threads, all graph
              optimizations, the better of spinning on and off);
  torch       PyTorch (Debian's python3-torch): the same module with the
              same seed, TorchScript (trace + freeze) + optimize_for_inference,
              jemalloc preloaded, OMP_WAIT_POLICY=PASSIVE, 2 threads.

Before timing, both Saturn programs are checked against PyTorch's output
(rtol 1e-3, atol 1e-4). Prints each contender's median, the ratios
lib+fusion/all (what the rewrites are worth), ort/all and torch/all (above 1: Saturn is
faster), the optimization time of `saturn opt` (import to export, wall
clock, all rulesets) and the geomeans; then, per model, the quartiles of
lib+fusion/all over the rounds of turns (each round's lib+fusion median
over its all median), and the models whose upper quartile is below 0.98:
slower with every ruleset by more than 2% in three rounds of four, not
by one slow spell (`rewrites_speedup_quartiles` with --json); and the
same for ort/all (ONNX Runtime's turns at the spinning setting it is
timed with), naming the models whose upper quartile is below 1.0:
slower than ONNX Runtime in three rounds of four (`ort_over_all_quartiles`).

By default both optimizations price with the roofline alone (an empty
calibration cache: what `saturn opt` gives before `saturn calibrate` was
run). --calibrate first measures, for each model, the ops its e-graphs
offer (`saturn opt --calibrate`, with each rule set, into one cache file:
--calibration-file, or a fresh one in a temporary folder), then optimizes
both programs with the cache; `opt s` is then the second, calibrated
optimization, which measures nothing, and `cal s` the measuring.
--calibration-file F alone prices with F as it is (the file `saturn
calibrate` wrote, without a model: its probe's families price every
model's library calls), measuring nothing. Every figure is measured. Under a
model's row, a line counts the turns in which a Saturn program ran on one
thread (its team follows the load it reads; the second-busiest thread of
its process took under a quarter of the busiest's CPU ticks): its median
then mixes two teams.

Usage: bench/bench_models.py [--models DIR] [--runs N] [--rounds R]
         [--processes P] [--fresh-processes] [--warm-ms W] [--threads T] [--ort-python PY]
         [--no-torch] [--calibrate] [--calibration-file F] [--json] [NAME...]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from bench_load import ort_samples  # noqa: E402  (ONNX Runtime timed as bench_load.py does)
import turns  # noqa: E402
SATURN = os.path.join(ROOT, "build", "tools", "saturn")
RULES = os.path.join(ROOT, "rulesets")
LIBRARY = ["blas.rules", "dnnl.rules", "fusion.rules"]
JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"

# The module export_models.py exported, rebuilt with the same seed.
TORCH_SCRIPT = r"""
import json, sys, time
import numpy as np, torch
sys.path.insert(0, sys.argv[1])
import export_models
name, inp, runs, threads = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
torch.set_num_threads(threads)
m = export_models.build(name)
x = torch.from_numpy(np.load(inp))
with torch.no_grad():
    f = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(m, (x,))))
    for _ in range(3):
        f(x)
    ms = []
    for _ in range(runs):
        t0 = time.perf_counter(); f(x); ms.append((time.perf_counter() - t0) * 1e3)
print(json.dumps({"ms": ms}))
"""


# The same, as a contender process for alternating turns (turns.py).
TORCH_SETUP = r"""
import numpy as np, torch
sys.path.insert(0, sys.argv[1])
import export_models
name, inp, threads = sys.argv[2], sys.argv[3], int(sys.argv[4])
torch.set_num_threads(threads)
torch.set_grad_enabled(False)
m = export_models.build(name)
x = torch.from_numpy(np.load(inp))
fm = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(m, (x,))))
f = lambda: fm(x)
"""


def torch_env():
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    if os.path.exists(JEMALLOC):
        env["LD_PRELOAD"] = JEMALLOC
    return env


def last_json(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(" ".join(cmd[:4]) + "...: " + out.stderr.strip()[-600:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def saturn_ms(saturn, program, inp, runs, threads):
    cmd = [saturn, "run", program, "--target", "cpu", "--no-opt", "--inputs", inp, "--bench", str(runs), "--json"]
    if threads:
        cmd += ["--threads", str(threads)]
    return last_json(cmd)["ms"]


def torch_ms(name, inp, runs):
    return last_json(["/usr/bin/python3", "-c", TORCH_SCRIPT, os.path.join(ROOT, "bench"), name, inp, str(runs), "2"],
                     torch_env())["ms"]


# A turn whose second-busiest thread took under this share of the busiest's
# CPU ticks ran on one thread (turns.second_thread_share).
ONE_THREAD_SHARE = 0.25


def alternating_ms(args, name, src, inp, programs, shares=None):
    """Every contender's samples from processes that stay up, timed in alternating turns
    (`shares`: each Saturn turn's turns.second_thread_share, by contender)."""
    contenders = {}
    procs = lambda *a: [turns.Contender(*a) for _ in range(args.processes)]
    try:
        for kind, path in programs.items():
            contenders[kind] = procs("/usr/bin/python3", turns.SATURN_SETUP, [path, inp, args.threads],
                                     turns.saturn_env(ROOT))
        if args.ort_python:
            for spin in ("1", "0"):
                contenders["ort" + spin] = procs(args.ort_python, turns.ORT_SETUP, [src, inp, 2, spin])
        if not args.no_torch:
            contenders["torch"] = procs("/usr/bin/python3", TORCH_SETUP, [os.path.join(ROOT, "bench"), name, inp, 2],
                                        torch_env())
        return turns.alternate(contenders, args.rounds, args.runs, warm_ms=args.warm_ms, shares=shares)
    finally:
        for c in (c for cs in contenders.values() for c in cs):
            c.close()


def optimize(saturn, model, out, extra):
    t0 = time.perf_counter()
    subprocess.run([saturn, "opt", model, "--target", "cpu", "-o", out] + extra, check=True, capture_output=True)
    return time.perf_counter() - t0


def paired_quartiles(a, b, runs):
    """The quartiles [q1, q3] of a/b over the rounds of turns (each round's
    median of a's runs over b's: two contenders' turns of one round are
    seconds apart, so a slow spell of the machine falls on both), or None
    under two rounds."""
    n = min(len(a), len(b)) // runs
    ratios = [statistics.median(a[i * runs:(i + 1) * runs]) / statistics.median(b[i * runs:(i + 1) * runs])
              for i in range(n)]
    if len(ratios) < 2:
        return None
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    return [q1, q3]


def print_quartiles(rows, key, what, below, verdict):
    """One line of `key`'s quartiles per model, and one naming the models
    whose upper quartile is under `below`."""
    rows = [r for r in rows if key in r]
    if not rows:
        return
    print(f"{what} per round of turns, quartiles: " +
          ", ".join(f"{r['model']} {r[key][0]:.2f}-{r[key][1]:.2f}" for r in rows))
    print(f"{verdict} in three rounds of four (upper quartile below {below}): " +
          (", ".join(r["model"] for r in rows if r[key][1] < below) or "none"))


def geomean(xs):
    return statistics.geometric_mean(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*")
    ap.add_argument("--models", default=os.path.join(ROOT, "build", "bench-models"))
    ap.add_argument("--runs", type=int, help="runs per turn (default 3; 10 with --fresh-processes)")
    ap.add_argument("--rounds", type=int, help="turns per contender (default 15; 3 with --fresh-processes)")
    ap.add_argument("--threads", type=int, default=0, help="saturn run --threads (0: Saturn's default)")
    ap.add_argument("--ort-python", default="", help="a python with onnxruntime (a venv's bin/python)")
    ap.add_argument("--no-torch", action="store_true", help="leave PyTorch out")
    ap.add_argument("--saturn", default=SATURN)
    ap.add_argument("--json", action="store_true", help="one JSON object per model")
    ap.add_argument("--fresh-processes", action="store_true",
                    help="the earlier method: ROUNDS rounds of a fresh process per contender timing RUNS runs")
    ap.add_argument("--processes", type=int, default=3,
                    help="processes per contender taking turns (default 3; not with --fresh-processes)")
    ap.add_argument("--calibrate", action="store_true",
                    help="optimize with measured prices: calibrate each model's ops first (saturn opt --calibrate)")
    ap.add_argument("--calibration-file", default="",
                    help="the cache to price with (`saturn calibrate`'s, say); with --calibrate, to fill first "
                         "(default: a fresh one per run)")
    ap.add_argument("--warm-ms", type=float, default=0,
                    help="untimed runs for this long at the start of each turn (bench/turns.py: for a VM that "
                         "runs slowly for a while after it sat idle)")
    args = ap.parse_args()
    args.runs = args.runs or (10 if args.fresh_processes else 3)
    args.rounds = args.rounds or (3 if args.fresh_processes else 15)
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "bench", "export_models.py"), args.models] + args.names,
                   check=True)
    names = args.names or sorted(n[:-5] for n in os.listdir(args.models) if n.endswith(".onnx"))
    lib_rules = ["--no-default-rules", "--rules"] + [os.path.join(RULES, f) for f in LIBRARY]
    rows = []
    if not args.json:
        print(f"{'model':20} {'lib+fusion':>10} {'all':>8} {'ort':>8} {'torch':>8}   {'lib/all':>7} {'ort/all':>7} "
              f"{'torch/all':>9}  {'opt s':>5}" + ("  cal s" if args.calibrate else "") + "   (medians, ms)")
        if args.calibrate:
            prices = "measured prices: --calibrate)"
        elif args.calibration_file:
            prices = "the calibration in " + args.calibration_file + ", measuring nothing)"
        else:
            prices = "the roofline alone: no calibration)"
        print("(Saturn's programs priced with " + prices)
    with tempfile.TemporaryDirectory() as tmp:
        # Without --calibrate, a cache file that does not exist: never the
        # user's own cache, which would make the figures depend on it.
        cache = args.calibration_file or os.path.join(tmp, "calibration.json")
        priced = ["--calibration-file", cache]
        for name in names:
            src = os.path.join(args.models, name + ".onnx")
            inp = os.path.join(args.models, name + ".input.npy")
            ref = os.path.join(args.models, name + ".torch.npy")
            programs = {"lib": os.path.join(tmp, name + ".lib.sat"), "all": os.path.join(tmp, name + ".all.sat")}
            cal_s = 0.0
            if args.calibrate:
                cal_s = optimize(args.saturn, src, programs["lib"], lib_rules + priced + ["--calibrate"])
                cal_s += optimize(args.saturn, src, programs["all"], priced + ["--calibrate"])
            optimize(args.saturn, src, programs["lib"], lib_rules + priced)
            opt_s = optimize(args.saturn, src, programs["all"], priced)
            bad = False
            for kind, path in programs.items():
                check = subprocess.run([args.saturn, "run", path, "--target", "cpu", "--no-opt", "--inputs", inp,
                                        "--check", ref, "--rtol", "1e-3", "--atol", "1e-4"], capture_output=True,
                                       text=True)
                if check.returncode != 0:
                    print(f"{name} ({kind}): saturn's output differs from PyTorch's: {check.stderr.strip()[-300:]}",
                          file=sys.stderr)
                    bad = True
            if bad:
                continue
            ms = {"lib": [], "all": [], "ort1": [], "ort0": [], "torch": []}
            shares = {}
            if not args.fresh_processes:
                ms.update(alternating_ms(args, name, src, inp, programs, shares))
            for r in range(args.rounds if args.fresh_processes else 0):
                jobs = [("lib", lambda: saturn_ms(args.saturn, programs["lib"], inp, args.runs, args.threads)),
                        ("all", lambda: saturn_ms(args.saturn, programs["all"], inp, args.runs, args.threads))]
                if args.ort_python:
                    jobs += [("ort1", lambda: ort_samples(args.ort_python, src, inp, args.runs, 2, "1")),
                             ("ort0", lambda: ort_samples(args.ort_python, src, inp, args.runs, 2, "0"))]
                if not args.no_torch:
                    jobs.append(("torch", lambda: torch_ms(name, inp, args.runs)))
                for k in range(len(jobs)):  # each round starts with another contender
                    key, job = jobs[(k + r) % len(jobs)]
                    ms[key] += job()
            med = {k: statistics.median(v) for k, v in ms.items() if v}
            row = {"model": name, "lib_fusion_ms": med["lib"], "all_ms": med["all"], "opt_s": opt_s,
                   "rewrites_speedup": med["lib"] / med["all"], "calibrated": args.calibrate}
            # How much lib/all moves from round to round: the machine's noise
            # on these two programs (not with --fresh-processes, whose rounds
            # are minutes apart).
            quartiles = None if args.fresh_processes else paired_quartiles(ms["lib"], ms["all"], args.runs)
            if quartiles:
                row["rewrites_speedup_quartiles"] = quartiles
            if args.calibrate:
                row["calibrate_s"] = cal_s
            if args.ort_python:
                spin = min(("ort1", "ort0"), key=lambda s: med[s])
                row.update(ort_ms=med[spin], ort_spinning=spin == "ort1", ort_over_all=med[spin] / med["all"])
                quartiles = None if args.fresh_processes else paired_quartiles(ms[spin], ms["all"], args.runs)
                if quartiles:
                    row["ort_over_all_quartiles"] = quartiles
            if "torch" in med:
                row.update(torch_ms=med["torch"], torch_over_all=med["torch"] / med["all"])
            # Turns a Saturn program ran on one thread (its team follows the
            # load it reads; the second-busiest thread under a quarter of
            # the busiest's ticks): the median then times two programs.
            one_thread = {k: sum(1 for x in shares.get(k, []) if x is not None and x < ONE_THREAD_SHARE)
                          for k in ("lib", "all")}
            row.update(lib_one_thread_turns=one_thread["lib"], all_one_thread_turns=one_thread["all"],
                       turns=len(shares.get("all", [])))
            rows.append(row)
            if args.json:
                print(json.dumps(row), flush=True)
            else:
                f = lambda k, w=8: f"{row[k]:{w}.2f}" if k in row else " " * (w - 1) + "-"
                print(f"{name:20} {f('lib_fusion_ms', 10)} {f('all_ms')} {f('ort_ms')} {f('torch_ms')}   "
                      f"{f('rewrites_speedup', 6)}x {f('ort_over_all', 6)}x {f('torch_over_all', 8)}x  {opt_s:5.2f}"
                      + (f"  {cal_s:5.1f}" if args.calibrate else ""), flush=True)
                if any(one_thread.values()):
                    print(f"{'':20} (turns on one thread: lib+fusion {one_thread['lib']}, all {one_thread['all']} "
                          f"of {row['turns']})", flush=True)
    if rows and not args.json:
        print(f"geomean over {len(rows)} models: rewrites (lib+fusion/all) {geomean([r['rewrites_speedup'] for r in rows]):.3f}x"
              + (f", ort/all {geomean([r['ort_over_all'] for r in rows]):.3f}x" if args.ort_python else "")
              + (f", torch/all {geomean([r['torch_over_all'] for r in rows]):.3f}x" if not args.no_torch else "")
              + f"; slowest optimization {max(r['opt_s'] for r in rows):.2f} s")
        print_quartiles(rows, "rewrites_speedup_quartiles", "lib+fusion/all", 0.98,
                        "slower with all rulesets by more than 2%")
        print_quartiles(rows, "ort_over_all_quartiles", "ort/all", 1.0, "slower than ONNX Runtime")
        print("(a ratio X/all above 1: Saturn with all rulesets is faster than X)")


if __name__ == "__main__":
    main()
