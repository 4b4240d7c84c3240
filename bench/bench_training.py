#!/usr/bin/python3
"""Training-step time, Saturn (cpu) against PyTorch eager (issue 26's benchmark).

For each model, in one run, interleaved in rounds (each round a fresh
process per contender):

  saturn  `saturn train MODEL.onnx --optimizer adamw --threads T --json`: the
          step graph (`saturn grad`'s) optimized by the shipped rulesets and
          compiled for the CPU; its median step time (`step_ms_median`, the
          step alone: batches are gathered outside the timed region);
  torch   the same module (same seed, same weights) in PyTorch eager mode
          (Debian's python3-torch): zero_grad, forward, cross-entropy,
          backward, AdamW step, timed per step; jemalloc preloaded,
          OMP_WAIT_POLICY=PASSIVE, T threads;
  compile the same step function through torch.compile (inductor, CPU), in
          a Python with torch 2.x from PyPI given by --torch2 (Debian ships
          1.13, which has no torch.compile); its compilation is in the
          warm-up, not timed. Not run without --torch2.

Models: an MLP (784-512-512-10, batch 64), a small CNN (two conv-bn-relu-pool
stages and a linear head on 3x32x32, batch 32) and a small GPT (2 pre-norm
blocks, d_model 256, 4 heads, seq 64, batch 8, vocabulary 512). Prints each
contender's median over rounds, the ratio torch/saturn (above 1: Saturn is
faster), and Saturn's memory plan for the step: the arena against keeping
every buffer (the saving) and against the liveness bound, and the state
(weights, moments) and how much of it is updated in place. Every figure is
measured.

Usage: bench/bench_training.py [--saturn BIN] [--rounds R] [--steps S]
         [--threads T] [--torch2 PYTHON] [--json] [NAME...]

A torch 2.x for --torch2: python3 -m venv V && V/bin/pip install torch==2.5.1
(PyPI's wheel, with its nvidia-*-cu12 dependencies: it does not import
without them, even on a machine without a GPU).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"

MODELS = r'''
import numpy as np, torch
F = torch.nn.functional

class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = torch.nn.Linear(784, 512), torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)
    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))

class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.b1 = torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.BatchNorm2d(32)
        self.c2, self.b2 = torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.BatchNorm2d(64)
        self.fc = torch.nn.Linear(64 * 8 * 8, 10)
    def forward(self, x):
        # relu before the batch norm: an eval-mode export folds a norm that
        # follows its conv into the conv's weights.
        x = F.max_pool2d(self.b1(torch.relu(self.c1(x))), 2)
        x = F.max_pool2d(self.b2(torch.relu(self.c2(x))), 2)
        return self.fc(torch.flatten(x, 1))

class Block(torch.nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.up, self.down = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)
        self.heads, self.d = heads, d
        self.register_buffer("mask", torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1))
    def forward(self, h):
        b, t, d = h.shape
        q, k, v = self.qkv(self.ln1(h)).split(d, dim=-1)
        split = lambda z: z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        att = (q @ k.transpose(-2, -1)) / float(np.sqrt(d // self.heads))
        att = torch.softmax(att.masked_fill(self.mask, float("-inf")), dim=-1)
        h = h + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return h + self.down(F.gelu(self.up(self.ln2(h))))

class Gpt(torch.nn.Module):
    def __init__(self, vocab=512, d=256, heads=4, seq=64, layers=2):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(torch.randn(seq, d) * 0.02)
        self.blocks = torch.nn.ModuleList([Block(d, heads, seq) for _ in range(layers)])
        self.lnf, self.head = torch.nn.LayerNorm(d), torch.nn.Linear(d, vocab)
    def forward(self, ids):
        h = self.tok(ids) + self.pos
        for blk in self.blocks:
            h = blk(h)
        return self.head(self.lnf(h))

def make(name):
    torch.manual_seed(0)
    g = np.random.default_rng(0)
    if name == "mlp":
        return Mlp(), 64, g.standard_normal((64 * 8, 784)).astype(np.float32), g.integers(0, 10, 64 * 8)
    if name == "cnn":
        return Cnn(), 32, g.standard_normal((32 * 8, 3, 32, 32)).astype(np.float32), g.integers(0, 10, 32 * 8)
    return Gpt(), 8, g.integers(0, 512, (8 * 8, 64)), g.integers(0, 512, (8 * 8, 64))

def ce(logits, y):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
'''

TORCH_RUN = MODELS + r'''
import sys, time, json
name, steps, threads, compiled = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "compile"
torch.set_num_threads(threads)
model, batch, x, y = make(name)
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x, y = torch.from_numpy(x), torch.from_numpy(y).long()
n = x.shape[0] // batch

def step(xb, yb):
    opt.zero_grad()
    loss = ce(model(xb), yb)
    loss.backward()
    opt.step()
    return loss

# torch.compile: the whole step (forward, backward, AdamW) as one compiled
# function; its compilation is in the warm-up, not timed.
run = torch.compile(step) if compiled else step
times = []
for s in range(steps + 3):
    i = s % n
    xb, yb = x[i * batch:(i + 1) * batch], y[i * batch:(i + 1) * batch]
    t = time.perf_counter()
    loss = run(xb, yb)
    times.append((time.perf_counter() - t) * 1000)
print(json.dumps({"step_ms_median": sorted(times[3:])[len(times[3:]) // 2], "loss": float(loss)}))
'''

EXPORT = MODELS + r'''
import sys
name, out = sys.argv[1], sys.argv[2]
model, batch, x, y = make(name)
model.eval()
example = torch.from_numpy(x[:batch])
torch.onnx.export(model, example, out + "/" + name + ".onnx", input_names=["x"], output_names=["logits"], opset_version=17)
np.save(out + "/" + name + ".x.npy", x)
np.save(out + "/" + name + ".y.npy", y.astype(np.int64))
print(batch)
'''


def torch_env(threads):
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE", OMP_NUM_THREADS=str(threads))
    if os.path.exists(JEMALLOC):
        env["LD_PRELOAD"] = JEMALLOC
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", default=["mlp", "cnn", "gpt"])
    ap.add_argument("--saturn", default=os.path.join(ROOT, "build", "tools", "saturn"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30, help="timed steps per process (torch); saturn runs epochs of 8 steps")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--torch2", default=None,
                    help="a Python with torch 2.x (PyPI) for the torch.compile contender; not run without it")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.names:
            batch = int(subprocess.run(["/usr/bin/python3", "-c", EXPORT, name, tmp], check=True, capture_output=True,
                                       text=True).stdout.split()[-1])
            model = os.path.join(tmp, name + ".onnx")
            epochs = max(1, args.steps // 8)
            sat, tor, comp, plan = [], [], [], {}
            for _ in range(args.rounds):
                r = subprocess.run([args.saturn, "train", model, "--data", os.path.join(tmp, name + ".x.npy"), "--labels",
                                    os.path.join(tmp, name + ".y.npy"), "--loss", "cross-entropy", "--optimizer", "adamw",
                                    "--lr", "1e-3", "--batch", str(batch), "--epochs", str(epochs), "--threads",
                                    str(args.threads), "--json"], capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit(f"saturn train {name}: {r.stderr}")
                s = json.loads(r.stdout)
                sat.append(s["step_ms_median"])
                plan = {k: s[k] for k in ("arena_bytes", "naive_bytes", "liveness_bound_bytes", "state_bytes",
                                          "state_double_buffered_bytes", "state_updated_in_place", "state_slots")}
                t = subprocess.run(["/usr/bin/python3", "-c", TORCH_RUN, name, str(args.steps), str(args.threads), "eager"],
                                   capture_output=True, text=True, env=torch_env(args.threads))
                if t.returncode != 0:
                    sys.exit(f"torch {name}: {t.stderr}")
                tor.append(json.loads(t.stdout)["step_ms_median"])
                if args.torch2:
                    c = subprocess.run([args.torch2, "-c", TORCH_RUN, name, str(args.steps), str(args.threads), "compile"],
                                       capture_output=True, text=True, env=torch_env(args.threads))
                    if c.returncode != 0:
                        sys.exit(f"torch.compile {name}: {c.stderr[-2000:]}")
                    comp.append(json.loads(c.stdout.strip().splitlines()[-1])["step_ms_median"])
            row = {"model": name, "batch": batch, "saturn_ms": statistics.median(sat), "torch_eager_ms": statistics.median(tor),
                   "torch_compile_ms": statistics.median(comp) if comp else None, **plan}
            row["torch/saturn"] = row["torch_eager_ms"] / row["saturn_ms"]
            row["compile/saturn"] = row["torch_compile_ms"] / row["saturn_ms"] if comp else None
            # Every buffer kept: the step as built (no rematerialization, whose
            # copies are buffers of their own), each temporary allocated apart.
            rep = os.path.join(tmp, name + ".plan.json")
            subprocess.run([args.saturn, "grad", model, "--loss", "cross-entropy", "--optimizer", "adamw", "--batch",
                            str(batch), "--report", rep, "--no-remat"], check=True, capture_output=True)
            with open(rep) as f:
                plan["naive_bytes"] = json.load(f)["naive_bytes"]
            row["naive_bytes"] = plan["naive_bytes"]
            row["arena_saving"] = 1 - plan["arena_bytes"] / plan["naive_bytes"]
            rows.append(row)
            if not args.json:
                peer = (f"torch.compile {row['torch_compile_ms']:8.3f} ms  compile/saturn {row['compile/saturn']:5.2f}x"
                        if comp else f"torch.compile: not run (--torch2; Debian's torch is {torch_version()})")
                print(f"{name:5s} batch {batch:3d}: saturn {row['saturn_ms']:8.3f} ms  torch eager {row['torch_eager_ms']:8.3f} ms"
                      f"  torch/saturn {row['torch/saturn']:5.2f}x  {peer}"
                      f"  arena {plan['arena_bytes'] / 2**20:.2f} MiB, every buffer kept {plan['naive_bytes'] / 2**20:.2f} MiB"
                      f" (saving {100 * row['arena_saving']:.0f}%), liveness bound {plan['liveness_bound_bytes'] / 2**20:.2f} MiB;"
                      f" state {plan['state_bytes'] / 2**20:.2f} MiB, {plan['state_updated_in_place']} of {plan['state_slots']}"
                      f" slots updated in place (+{plan['state_double_buffered_bytes'] / 2**20:.2f} MiB double-buffered)",
                      flush=True)
    geo = float(np.exp(np.mean([np.log(r["torch/saturn"]) for r in rows])))
    geo_c = float(np.exp(np.mean([np.log(r["compile/saturn"]) for r in rows]))) if args.torch2 else None
    if args.json:
        print(json.dumps({"rows": rows, "geomean_torch/saturn": geo, "geomean_compile/saturn": geo_c}))
    else:
        print(f"geomean torch/saturn: {geo:.2f}x" + (f", compile/saturn: {geo_c:.2f}x" if geo_c else "") +
              f" (medians of {args.rounds} interleaved rounds, {args.threads} threads)")


def torch_version():
    r = subprocess.run(["/usr/bin/python3", "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
    return r.stdout.strip()


if __name__ == "__main__":
    main()
