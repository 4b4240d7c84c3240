#!/usr/bin/env python3
"""Extractors on the public extraction-gym e-graphs.

Runs `saturn extract --json` with each extractor (tree-greedy, dag-greedy,
ilp by default) on every .json file of the data sets and prints, per file
and per set: the DAG cost each extractor reaches, the gap of the heuristics
to the ILP's cost when the ILP proved it optimal (else to its bound, a gap
that may be an overestimate, marked ">="), the ILP's status, and times
(the extractor's own time_ms, median of --runs runs; file reading excluded).

  python3 bench/bench_extraction_gym.py ../shared/extraction-gym \\
      [--sets tensat,rover,...] [--time-limit 10] [--runs 1] [--json OUT]

A file `saturn extract` refuses is listed with its error (exit status 2 is
a refusal: the message says what it cannot take).
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def saturn_binary():
    for cand in ("build/tools/saturn", "build/saturn"):
        path = os.path.join(ROOT, cand)
        if os.path.exists(path):
            return path
    sys.exit("build saturn first (cmake -S . -B build && cmake --build build)")


def extract(saturn, path, extractor, time_limit):
    p = subprocess.run([saturn, "extract", "--json", "--extractor", extractor, "--time-limit", str(time_limit), path],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": (p.stderr or p.stdout).strip().splitlines()[-1] if (p.stderr or p.stdout) else f"exit {p.returncode}"}
    return json.loads(p.stdout)


def gap(cost, reference):
    if cost is None or reference is None:
        return None
    return (cost - reference) / max(abs(reference), 1e-12)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gym", help="folder with one sub-folder of .json e-graphs per data set")
    ap.add_argument("--sets", default="", help="comma-separated data sets (default: every sub-folder)")
    ap.add_argument("--extractors", default="tree-greedy,dag-greedy,ilp")
    ap.add_argument("--time-limit", type=float, default=10.0, help="per extraction, seconds (ilp: its whole solve)")
    ap.add_argument("--runs", type=int, default=1, help="runs per heuristic extraction (median time); ilp runs once")
    ap.add_argument("--json", help="write every result here")
    a = ap.parse_args()
    saturn = saturn_binary()
    extractors = a.extractors.split(",")
    sets = a.sets.split(",") if a.sets else sorted(
        d for d in os.listdir(a.gym) if os.path.isdir(os.path.join(a.gym, d)))
    results = []
    for s in sets:
        folder = os.path.join(a.gym, s)
        for f in sorted(os.listdir(folder)):
            if not f.endswith(".json"):
                continue
            row = {"set": s, "file": f}
            for x in extractors:
                runs = 1 if x == "ilp" else max(1, a.runs)
                outs = [extract(saturn, os.path.join(folder, f), x, a.time_limit) for _ in range(runs)]
                if "error" in outs[0]:
                    row[x] = outs[0]
                    continue
                best = dict(outs[0])
                best["time_ms"] = statistics.median(o["time_ms"] for o in outs)
                row[x] = best
            results.append(row)
            print_row(row, extractors)
            sys.stdout.flush()
    print_summary(results, extractors)
    if a.json:
        with open(a.json, "w") as out:
            json.dump(results, out, indent=1)


def reference(row):
    """The ILP's optimum (exact) or bound (a lower bound: gaps are at most it)."""
    ilp = row.get("ilp")
    if not ilp or "error" in ilp:
        return None, False
    if ilp.get("status") == "optimal":
        return ilp["dag_cost"], True
    return ilp.get("bound"), False


def print_row(row, extractors):
    if any("error" in row.get(x, {}) for x in extractors):
        err = next(row[x]["error"] for x in extractors if "error" in row.get(x, {}))
        print(f"{row['set']:10} {row['file'][:40]:40} refused: {err}")
        return
    ref, exact = reference(row)
    parts = []
    for x in extractors:
        r = row[x]
        g = gap(r["dag_cost"], ref) if x != "ilp" else None
        gs = "" if g is None else f" gap {'' if exact else '>='}{100 * g:.2f}%"
        st = f" {r.get('status')}" if x == "ilp" else ""
        parts.append(f"{x} {r['dag_cost']:.6g}{st}{gs} {r['time_ms']:.1f}ms")
    print(f"{row['set']:10} {row['file'][:40]:40} " + " | ".join(parts))


def print_summary(results, extractors):
    print("\nper set (gaps over files where the ILP proved optimality; times: mean ms)")
    heur = [x for x in extractors if x != "ilp"]
    header = f"{'set':10} {'files':>5} {'refused':>7}"
    if "ilp" in extractors:
        header += f" {'ilp optimal':>11}"
    for x in heur:
        header += f" {x + ' mean/max gap':>28}"
    for x in extractors:
        header += f" {x + ' ms':>16}"
    print(header)
    groups = {}
    for r in results:
        groups.setdefault(r["set"], []).append(r)
    groups["all"] = results
    for s, rows in groups.items():
        ok = [r for r in rows if not any("error" in r.get(x, {}) for x in extractors)]
        line = f"{s:10} {len(rows):5d} {len(rows) - len(ok):7d}"
        exact = [r for r in ok if reference(r)[1]]
        if "ilp" in extractors:
            line += f" {len(exact):5d} ({100 * len(exact) / max(len(ok), 1):3.0f}%)"
        for x in heur:
            gaps = [gap(r[x]["dag_cost"], reference(r)[0]) for r in exact]
            gaps = [g for g in gaps if g is not None]
            line += f" {100 * statistics.mean(gaps) if gaps else math.nan:13.3f}% {100 * max(gaps) if gaps else math.nan:12.3f}%"
        for x in extractors:
            ts = [r[x]["time_ms"] for r in ok]
            line += f" {statistics.mean(ts) if ts else math.nan:16.1f}"
        print(line)


if __name__ == "__main__":
    main()
