#!/usr/bin/env python3
"""Latency of real models on a quiet machine and with one core busy.

For each model of the bench suite (bench/export_models.py: torchvision at
random weights), `saturn opt --target cpu` optimizes it once, `saturn run
--target cpu` checks the result against PyTorch's output, and then Saturn
and ONNX Runtime (when a python with onnxruntime is given) are timed in
alternating rounds, each round a fresh process of RUNS runs after a warm-up.

--load busy starts a background process that spins on one core (pinned to
the last CPU) for the whole measurement, as another user's job would;
--load quiet runs without it, --load both runs both, one after the other.

Prints, per model and load, Saturn's median and min latency, median/min (the
stability figure: 1.0 means every run as fast as the best), ONNX Runtime's
median (the better of spinning on and off, 2 intra-op threads, all graph
optimizations) and the ratio ORT median / Saturn median (above 1: Saturn is
faster). Every figure is measured; nothing is modeled.

--baseline SATURN times another build of saturn in the same rounds, on
the same optimized model (before / after a change).

Usage: bench/bench_load.py [--models DIR] [--runs N] [--rounds R]
         [--load quiet|busy|both] [--threads T] [--ort-python PY]
         [--baseline SATURN] [NAME...]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SATURN = os.path.join(ROOT, "build", "tools", "saturn")
sys.path.insert(0, os.path.join(ROOT, "bench"))
from turns import ORT_SESSION  # noqa: E402

ORT_SCRIPT = r"""
import json, sys, time
model, inp, runs, threads, spin = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
""" + ORT_SESSION + r"""
s.run(None, x)
ms = []
for _ in range(runs):
    t0 = time.perf_counter(); s.run(None, x); ms.append((time.perf_counter() - t0) * 1e3)
print(json.dumps({"ms": ms}))
"""


def busy_core():
    """A process spinning on the last CPU until killed."""
    cpu = str(os.cpu_count() - 1)
    return subprocess.Popen(["taskset", "-c", cpu, sys.executable, "-c", "while True: pass"])


def saturn_samples(saturn, model, inp, runs, threads):
    cmd = [saturn, "run", model, "--target", "cpu", "--inputs", inp, "--bench", str(runs), "--json"]
    if threads:
        cmd += ["--threads", str(threads)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["ms"]


def ort_samples(py, model, inp, runs, threads, spin):
    out = subprocess.run([py, "-c", ORT_SCRIPT, model, inp, str(runs), str(threads), spin], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["ms"]


def measure(name, args, opt_model, inp, load):
    hog = busy_core() if load == "busy" else None
    try:
        sat, base, ort = [], [], {"0": [], "1": []}
        for _ in range(args.rounds):
            sat += saturn_samples(args.saturn, opt_model, inp, args.runs, args.threads)
            if args.baseline:
                base += saturn_samples(args.baseline, opt_model, inp, args.runs, args.threads)
            if args.ort_python:
                for spin in ("1", "0"):
                    ort[spin] += ort_samples(args.ort_python, os.path.join(args.models, name + ".onnx"), inp,
                                             args.runs, 2, spin)
    finally:
        if hog:
            hog.kill()
            hog.wait()
    med, lo = statistics.median(sat), min(sat)
    row = {"model": name, "load": load, "saturn_median_ms": med, "saturn_min_ms": lo, "stability": med / lo}
    if args.baseline:
        row.update(baseline_median_ms=statistics.median(base), baseline_min_ms=min(base),
                   baseline_stability=statistics.median(base) / min(base))
    if args.ort_python:
        best = min(("1", "0"), key=lambda s: statistics.median(ort[s]))
        row.update(ort_median_ms=statistics.median(ort[best]), ort_min_ms=min(ort[best]), ort_spinning=best == "1",
                   ort_over_saturn=statistics.median(ort[best]) / med)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*")
    ap.add_argument("--models", default=os.path.join(ROOT, "build", "bench-models"))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--load", choices=["quiet", "busy", "both"], default="both")
    ap.add_argument("--threads", type=int, default=0, help="saturn run --threads (0: Saturn's default)")
    ap.add_argument("--ort-python", default="", help="a python with onnxruntime (a venv's bin/python)")
    ap.add_argument("--saturn", default=SATURN, help="the saturn executable timed")
    ap.add_argument("--baseline", default="", help="another saturn executable (an earlier build), timed in the "
                    "same rounds on the same optimized model")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "bench", "export_models.py"), args.models] + args.names,
                   check=True)
    names = args.names or sorted(n[:-5] for n in os.listdir(args.models) if n.endswith(".onnx"))
    loads = ["quiet", "busy"] if args.load == "both" else [args.load]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            src, inp = os.path.join(args.models, name + ".onnx"), os.path.join(args.models, name + ".input.npy")
            opt = os.path.join(tmp, name + ".opt.onnx")
            subprocess.run([args.saturn, "opt", src, "--target", "cpu", "-o", opt], check=True, capture_output=True)
            # What is timed must compute what PyTorch does.
            check = subprocess.run([args.saturn, "run", opt, "--target", "cpu", "--inputs", inp, "--check",
                                    os.path.join(args.models, name + ".torch.npy"), "--rtol", "1e-3", "--atol",
                                    "1e-4"], capture_output=True, text=True)
            if check.returncode != 0:
                print(f"{name}: saturn's output differs from PyTorch's: {check.stderr.strip()}", file=sys.stderr)
                continue
            for load in loads:
                row = measure(name, args, opt, inp, load)
                rows.append(row)
                if args.json:
                    print(json.dumps(row), flush=True)
                else:
                    ort = (f"  ort {row['ort_median_ms']:8.2f} ms (spinning {'on' if row['ort_spinning'] else 'off'})"
                           f"  ort/saturn {row['ort_over_saturn']:5.2f}x") if args.ort_python else ""
                    base = (f"  baseline {row['baseline_median_ms']:8.2f} / {row['baseline_min_ms']:8.2f} ms "
                            f"({row['baseline_stability']:4.2f})") if args.baseline else ""
                    print(f"{name:20} {load:5}  saturn median {row['saturn_median_ms']:8.2f} ms  min "
                          f"{row['saturn_min_ms']:8.2f} ms  median/min {row['stability']:5.2f}{base}{ort}",
                          flush=True)
    if args.ort_python and rows and not args.json:
        for load in loads:
            r = [x["ort_over_saturn"] for x in rows if x["load"] == load]
            if r:
                print(f"geomean ort/saturn ({load}): {statistics.geometric_mean(r):.2f}x over {len(r)} models")


if __name__ == "__main__":
    main()
