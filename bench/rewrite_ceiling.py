#!/usr/bin/env python3
"""How much the rewrites beyond the library and fusion rulesets could be
worth on each model of the bench suite, at most: the ceiling of issue 25's
lib/all ratio (bench/bench_models.py).

For each model it optimizes the two programs bench_models.py times
(`saturn opt --target cpu` with only blas, dnnl and fusion rules, and with
every shipped ruleset; both priced with the roofline alone) and profiles
each (`saturn run --no-opt --profile`: every step's median of 7 runs),
PROFILES times in turns, the median of each step's figures taken. It splits each
program's steps in two:

  library  the oneDNN and OpenBLAS calls that compute (convolutions,
           products, pooling): what the library rulesets chose;
  rest     every other step: generated kernels (activations, norms,
           softmax, residual adds, reductions), copies, concatenations,
           layout reorders.

A rewrite outside the library rulesets removes or shrinks steps of the
rest, or changes which library calls run. If it removed the whole rest of
the library-rules program and left its library calls as they are, that
program would run in its library time: `ceiling` = its total / its
library time is the most such rewrites could gain, and the geomean of the
ceilings bounds the suite's lib/all. `all` shows what the shipped rules
take out of the rest and their library time against the library-rules
program's (`lib x`: below 1, the shipped rules made the library calls
faster, as densenet121's do: a rewrite may also change which calls run).
`ceiling*` credits that too: the library-rules program's total over the
smaller of the two programs' library times. Every figure is measured;
nothing is modeled.

Usage: bench/rewrite_ceiling.py [--models DIR] [--profiles N] [--json] [NAME...]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

from bench_models import LIBRARY, ROOT, RULES, SATURN, optimize  # the two programs bench_models.py times

STEP = re.compile(r"^\s+([0-9.]+) ms  (.*)$")


def is_library_call(label):
    """A step that runs a library's compute (a oneDNN reorder is labelled "copy (oneDNN reorder)")."""
    return label.startswith(("oneDNN", "sgemm", "sgemv"))


def profile_once(saturn, program, inp):
    """Each step's label and milliseconds (its median of 7 runs)."""
    out = subprocess.run([saturn, "run", program, "--target", "cpu", "--no-opt", "--inputs", inp, "--profile"],
                         capture_output=True, text=True, check=True)
    return [(m.group(2), float(m.group(1))) for m in map(STEP.match, (out.stdout + out.stderr).splitlines()) if m]


def step_medians(runs):
    """Each step's median over the profiles of one program."""
    return [(label, statistics.median(r[i][1] for r in runs)) for i, (label, _) in enumerate(runs[0])]


def split(steps):
    library = sum(ms for label, ms in steps if is_library_call(label))
    return library, sum(ms for _, ms in steps) - library


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*")
    ap.add_argument("--models", default=os.path.join(ROOT, "build", "bench-models"))
    ap.add_argument("--profiles", type=int, default=5, help="profiles per program, in turns (default 5)")
    ap.add_argument("--saturn", default=SATURN)
    ap.add_argument("--json", action="store_true", help="one JSON object per model")
    args = ap.parse_args()
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "bench", "export_models.py"), args.models] + args.names,
                   check=True)
    names = args.names or sorted(n[:-5] for n in os.listdir(args.models) if n.endswith(".onnx"))
    lib_rules = ["--no-default-rules", "--rules"] + [os.path.join(RULES, f) for f in LIBRARY]
    if not args.json:
        print(f"{'model':20} {'lib-rules program (ms)':>30}   {'all-rules program (ms)':>30}  {'ceiling':>7} "
              f"{'ceiling*':>8}")
        print(f"{'':20} {'total':>8} {'library':>8} {'rest':>6} {'rest%':>5}   {'total':>8} {'library':>8} "
              f"{'rest':>6} {'lib x':>5}")
    ceilings, any_library = [], []
    with tempfile.TemporaryDirectory() as tmp:
        cache = ["--calibration-file", os.path.join(tmp, "calibration.json")]  # never the user's cache
        for name in names:
            src = os.path.join(args.models, name + ".onnx")
            inp = os.path.join(args.models, name + ".input.npy")
            row = {"model": name}
            programs = {}
            for kind, extra in (("lib", lib_rules), ("all", [])):
                programs[kind] = os.path.join(tmp, f"{name}.{kind}.sat")
                optimize(args.saturn, src, programs[kind], extra + cache)
            # The two programs take turns, so that a slow spell of the
            # machine falls on both.
            runs = {kind: [] for kind in programs}
            for _ in range(args.profiles):
                for kind, program in programs.items():
                    runs[kind].append(profile_once(args.saturn, program, inp))
            for kind in programs:
                library, rest = split(step_medians(runs[kind]))
                row[kind] = {"library_ms": library, "rest_ms": rest}
            lib, all_ = row["lib"], row["all"]
            total = lib["library_ms"] + lib["rest_ms"]
            row["ceiling"] = total / lib["library_ms"]
            row["ceiling_any_library"] = total / min(lib["library_ms"], all_["library_ms"])
            ceilings.append(row["ceiling"])
            any_library.append(row["ceiling_any_library"])
            if args.json:
                print(json.dumps(row))
            else:
                print(f"{name:20} {total:8.3f} {lib['library_ms']:8.3f} {lib['rest_ms']:6.3f} "
                      f"{100 * lib['rest_ms'] / total:5.1f}   {all_['library_ms'] + all_['rest_ms']:8.3f} "
                      f"{all_['library_ms']:8.3f} {all_['rest_ms']:6.3f} {all_['library_ms'] / lib['library_ms']:5.2f}"
                      f"  {row['ceiling']:7.3f} {row['ceiling_any_library']:8.3f}")
            sys.stdout.flush()
    if not args.json and ceilings:
        print(f"geomean of the ceilings: {statistics.geometric_mean(ceilings):.3f} (lib/all if rewrites removed every "
              f"step but the library calls of the library-rules program), "
              f"{statistics.geometric_mean(any_library):.3f} (ceiling*: and the library calls took the less of the "
              f"two programs' times)")


if __name__ == "__main__":
    main()
