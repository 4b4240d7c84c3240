"""Contenders timed in alternating turns, for a machine whose load changes.

Each contender is a process that stays up for the whole comparison: it
loads and warms its model once, then times a few runs whenever it is given
a turn. The turns alternate between the contenders (each round starting
with another one), so a slow spell of the machine, which lasts seconds,
falls on every contender alike instead of on whichever process ran then.
Every contender is timed the same way, in Python, around one call.

Between turns, the next contender waits until the previous one's process
has gone idle (no CPU tick for 30 ms, at most 1 s): its threads may go on
after its turn (libgomp's and ONNX Runtime's spinning; a TorchScript
process ran one thread for about 110 ms after each turn of
efficientnet_b0, with OMP_WAIT_POLICY=PASSIVE), and the contender after
it would time its runs against that load. (Without the wait, the suite
benchmark's library+fusion programs, whose turns always followed
PyTorch's, measured efficientnet_b0 at 9.0-13.4 ms against 7.3-7.9 for
the same kind of program in the next turn; with their team held, 8.0
against 8.0.)

`warm_ms` runs each turn's contender untimed for that long first (one run
at least). On a VM whose vCPU runs slowly for a while after it sat idle
(an Intel Xeon VM on 2026-11-28: one thread's run of 8 ms took 20 ms after
50 ms idle and 120-186 ms after 1 s, for Saturn and ONNX Runtime alike),
each process sits idle between its turns, and without it the first runs
of every turn time that ramp instead of the program.
"""
import json
import os
import subprocess
import time

# A contender's process: SETUP (the contender's own code) defines f(), one
# run; per line "n w" it reads, the loop runs f() untimed for w ms (once at
# least, when w > 0), then times n runs, and writes a JSON list of ms.
WORKER = r"""
import json, sys, time
{setup}
for _ in range(3):
    f()
print("ready", flush=True)
for line in sys.stdin:
    n, w = (line.split() + ["0"])[:2]
    if float(w) > 0:
        until = time.perf_counter() + float(w) / 1e3
        f()
        while time.perf_counter() < until:
            f()
    ms = []
    for _ in range(int(n)):
        t0 = time.perf_counter(); f(); ms.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps(ms), flush=True)
"""

SATURN_SETUP = r"""
import numpy as np, saturn
program, inp, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
fixed = sys.argv[4:5] == ["fixed"]  # every run on `threads`, whatever the load
prog = saturn.compile(saturn.load(program), "cpu", optimize=False, threads=threads, fixed_threads=fixed, cache=False)
x = np.load(inp)
f = lambda: prog(x)
"""

# ONNX Runtime at its best (issue 25's terms): all graph optimizations,
# `threads` intra-op threads, spinning on ("1") or off ("0"); the session
# `s` of `model` and its input `x` from `inp`.
ORT_SESSION = r"""
import numpy as np, onnxruntime as ort
o = ort.SessionOptions()
o.intra_op_num_threads = threads
o.inter_op_num_threads = 1
o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
o.add_session_config_entry("session.intra_op.allow_spinning", spin)
s = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
x = {s.get_inputs()[0].name: np.load(inp)}
"""

ORT_SETUP = r"""
model, inp, threads, spin = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
""" + ORT_SESSION + r"""
f = lambda: s.run(None, x)
"""


def cpu_ticks(pid):
    """CPU ticks (user and system, every thread) process `pid` took so far; None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def thread_ticks(pid):
    """{thread id: CPU ticks (user and system)} of process `pid`'s threads; {} once it is gone."""
    ticks = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return ticks
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks[tid] = int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return ticks


def second_thread_share(before, after):
    """Of the CPU ticks the threads took between two thread_ticks() readings:
    the second-busiest thread's over the busiest's (0: one thread did the
    work; about 1: two shared it); None when no thread took a tick."""
    deltas = sorted((after[t] - before.get(t, 0) for t in after), reverse=True)
    if not deltas or deltas[0] <= 0:
        return None
    return (deltas[1] if len(deltas) > 1 else 0) / deltas[0]


def settle(pids, quiet_s=0.03, poll_s=0.01, most_s=1.0):
    """Waits until the processes `pids` took no CPU tick for `quiet_s`
    (at most `most_s`); the seconds waited."""
    t0 = time.perf_counter()
    last, since = None, t0
    while True:
        now = time.perf_counter()
        ticks = [cpu_ticks(p) for p in pids]
        if ticks != last:
            last, since = ticks, now
        elif now - since >= quiet_s or now - t0 >= most_s:
            return now - t0
        time.sleep(poll_s)


class Contender:
    """One contender's process (Python `python`, its setup code, argv)."""

    def __init__(self, python, setup, argv, env=None):
        self.proc = subprocess.Popen([python, "-c", WORKER.format(setup=setup)] + [str(a) for a in argv],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
        if self.proc.stdout.readline().strip() != "ready":
            self.close()
            raise RuntimeError(f"{python} {' '.join(map(str, argv))}: {self.proc.stderr.read().strip()[-600:]}")

    def turn(self, runs, warm_ms=0):
        self.proc.stdin.write(f"{runs} {warm_ms}\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.kill()
        self.proc.wait()


def saturn_env(root):
    """The environment a Saturn program runs in (runtime/thread_env.hpp), with the build's Python package."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(root, "build", "python") + os.pathsep + env.get("PYTHONPATH", "")
    if "OMP_WAIT_POLICY" not in env:
        env.setdefault("GOMP_SPINCOUNT", "20000")
    if "OMP_NUM_THREADS" not in env:
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return env


def alternate(contenders, rounds, runs, pause_s=0.01, warm_ms=0, shares=None):
    """{name: [ms...]}: `rounds` turns of `runs` runs (or runs[name]) for
    each name of `contenders` ({name: [Contender...]}), the order of the
    names rotating every round, and each name's processes taking its turns
    in rotation. With `shares` (a dict), shares[name] lists each turn's
    second_thread_share(): whether a program that picks its thread team
    per run (Saturn's) ran that turn on one thread or on two.

    Several processes per contender: where a process's memory lands makes
    it a few percent faster or slower for its whole life (two processes of
    one program differed by 1-4%, the same one faster in every round), so
    one process per contender would compare placements, not programs."""
    names = list(contenders)
    ms = {k: [] for k in names}
    for r in range(rounds):
        for k in range(len(names)):
            name = names[(k + r) % len(names)]
            procs = contenders[name]
            proc = procs[r % len(procs)]
            before = thread_ticks(proc.proc.pid) if shares is not None else {}
            ms[name] += proc.turn(runs[name] if isinstance(runs, dict) else runs, warm_ms)
            if shares is not None:
                shares.setdefault(name, []).append(second_thread_share(before, thread_ticks(proc.proc.pid)))
            time.sleep(pause_s)
            settle([proc.proc.pid])
    return ms
