#!/usr/bin/env python3
"""oneDNN's share of a program's runs, timed in the program.

`saturn run --profile` times each step by running it again, its operands
and weights then in the cache. In a program a oneDNN call often finds its
weights evicted by the rest of the run (resnet18's 512-channel layers:
0.63-0.67 ms as `--profile` and the calibration timed them, 1.56-1.77 ms
in the program; docs/cost-model.md, "Weights read from memory"). This
runs `saturn run PROGRAM --target cpu --no-opt --bench N` with
ONEDNN_VERBOSE=1, which prints every primitive a run executes with its
time, and prints each primitive's median over the runs and their sum,
then the run's median latency from the same command without
ONEDNN_VERBOSE, whose printing slows a run (the rest is Saturn's own
kernels and the gaps between steps).

  python3 bench/onednn_in_program.py PROGRAM.sat --inputs X.npy [--runs 30] [--threads 2]

PROGRAM is what `saturn opt` wrote (run as it is, --no-opt).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SATURN = os.path.join(ROOT, "build", "tools", "saturn")


def period(keys):
    """The number of primitives a run executes: the smallest p with which
    the last runs repeat (the first run also packs the weights)."""
    n = len(keys)
    for p in range(1, n // 3 + 1):
        if keys[n - 2 * p:n - p] == keys[n - p:] and keys[n - 3 * p:n - 2 * p] == keys[n - p:]:
            return p
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("program")
    ap.add_argument("--inputs", nargs="+", default=[])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--saturn", default=SATURN)
    args = ap.parse_args()
    cmd = [args.saturn, "run", args.program, "--target", "cpu", "--no-opt", "--bench", str(args.runs), "--json",
           "--threads", str(args.threads), "--fixed-threads"]
    if args.inputs:
        cmd += ["--inputs"] + args.inputs
    out = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, ONEDNN_VERBOSE="1"))
    plain = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0 or plain.returncode != 0:
        sys.exit((out.stderr + plain.stderr).strip()[-600:])
    lines = out.stdout.splitlines()
    summary = json.loads(next(l for l in reversed(plain.stdout.splitlines()) if l.startswith("{")))
    execs = [l.split(",") for l in lines if l.startswith("onednn_verbose,exec,")]
    keys = [",".join(e[3:-1]) for e in execs]
    p = period(keys)
    if not p:
        sys.exit(f"{len(execs)} oneDNN executions do not repeat by run")
    runs = len(execs) // p
    take = min(runs - 1, args.runs)  # (the last runs: the first packs the weights)
    total = 0.0
    for i in range(p):
        ms = statistics.median(float(execs[len(execs) - (r + 1) * p + i][-1]) for r in range(take))
        total += ms
        e = execs[len(execs) - p + i]
        print(f"{ms:8.3f} ms  {e[3]:12} {e[4][:26]:26} {e[-2][:70]}")
    run_ms = summary.get("median_ms", float("nan"))
    print(f"oneDNN: {p} executions a run, {total:.3f} ms (medians of {take} runs); "
          f"the run: {run_ms:.3f} ms median, so {run_ms - total:.3f} ms in Saturn's own steps and between steps")


if __name__ == "__main__":
    main()
