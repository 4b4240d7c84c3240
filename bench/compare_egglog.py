#!/usr/bin/env python3
"""Saturn vs egglog on the same equality-saturation work, side by side.

Runs the AC stress cases (the sum of n distinct variables under associativity
and commutativity of +) to saturation in both engines, several times each,
and prints the median times and the ratio. Both reach the same saturated
e-graph (egglog counts the Add and Var tables: 3^n - 2^(n+1) + 1 + n e-nodes
in all), which the script checks before comparing times.

egglog comes from PyPI (pip install egglog); Saturn's figures come from
build/bench/bench_eqsat --json.

  python3 bench/compare_egglog.py [--runs 5] [--bench build/bench/bench_eqsat]
"""
import argparse
import json
import statistics
import subprocess
import sys
import time


def egglog_sum(n, runs):
    import egglog.bindings as eb

    term = '(Var "x%d")' % n
    for i in range(n - 1, 0, -1):
        term = '(Add (Var "x%d") %s)' % (i, term)
    setup = (
        "(datatype Math (Var String) (Add Math Math))\n"
        "(rewrite (Add a b) (Add b a))\n"
        "(rewrite (Add a (Add b c)) (Add (Add a b) c))\n"
        "(let $e %s)\n" % term
    )
    times, size = [], None
    for _ in range(runs):
        eg = eb.EGraph()
        eg.run_program(*eg.parse_program(setup))
        t0 = time.perf_counter()
        eg.run_program(*eg.parse_program("(run 1000)"))
        times.append((time.perf_counter() - t0) * 1000)
        adds = eg.run_program(*eg.parse_program("(print-size Add)"))[0].size
        vars_ = eg.run_program(*eg.parse_program("(print-size Var)"))[0].size
        size = adds + vars_
    return statistics.median(times), size


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--bench", default="build/bench/bench_eqsat")
    args = ap.parse_args()
    try:
        import egglog  # noqa: F401
    except ImportError:
        print("egglog is not installed (pip install egglog); nothing to compare", file=sys.stderr)
        return 2
    print("%-12s %10s %12s %12s %8s" % ("case", "e-nodes", "saturn ms", "egglog ms", "ratio"))
    for n in (8, 9, 10):
        name = "ac-sum-%d" % n
        out = subprocess.run([args.bench, "--json", "--runs", str(args.runs), "--case", name],
                             check=True, capture_output=True, text=True).stdout
        sat = json.loads(out.strip().splitlines()[-1])
        egg_ms, egg_size = egglog_sum(n, args.runs)
        expected = 3**n - 2 ** (n + 1) + 1 + n
        if sat["enodes"] != expected or egg_size != expected:
            print("%s: sizes differ (saturn %d, egglog %d, expected %d)" % (name, sat["enodes"], egg_size, expected))
            return 1
        print("%-12s %10d %12.1f %12.1f %7.2fx" % (name, expected, sat["median_ms"], egg_ms, egg_ms / sat["median_ms"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
