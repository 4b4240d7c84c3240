#!/usr/bin/python3
"""The digits training example's data and model (docs/training.md).

Writes into OUT: scikit-learn's 8x8 digits (1797 images, shipped with
Debian's python3-sklearn, no download) scaled to [0, 1] and split 80/20 with
a fixed seed (train_x.npy f32 [1437 64], train_y.npy i64, test_x.npy,
test_y.npy), and mlp.sat: a 64-64-10 MLP (matmul, add, relu) with PyTorch's
default initialisation (uniform in +-1/sqrt(fan_in)), seed 0.
"""
import os
import sys

import numpy as np
from sklearn.datasets import load_digits


def sat_floats(a):
    return " ".join(repr(float(v)) for v in np.asarray(a, np.float32).ravel())


def mlp_sat(rng, sizes):
    lines = ["(graph digits_mlp", f"  (input x f32 [N {sizes[0]}])"]
    for i, (fan_in, fan_out) in enumerate(zip(sizes, sizes[1:]), 1):
        bound = 1 / np.sqrt(fan_in)
        w = rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32)
        b = rng.uniform(-bound, bound, fan_out).astype(np.float32)
        lines.append(f"  (init fc{i}.weight f32 [{fan_in} {fan_out}] [{sat_floats(w)}])")
        lines.append(f"  (init fc{i}.bias f32 [{fan_out}] [{sat_floats(b)}])")
    value = "x"
    for i in range(1, len(sizes)):
        lines.append(f"  (node fc{i} matmul (h{i}) ({value} fc{i}.weight))")
        last = i == len(sizes) - 1
        out = "logits" if last else f"z{i}"
        lines.append(f"  (node fc{i}_bias add ({out}) (h{i} fc{i}.bias))")
        if not last:
            lines.append(f"  (node relu{i} relu (a{i}) ({out}))")
            value = f"a{i}"
    lines.append("  (output logits))")
    return "\n".join(lines) + "\n"


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "build/digits"
    os.makedirs(out, exist_ok=True)
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    cut = int(0.8 * len(x))
    for name, ids in (("train", order[:cut]), ("test", order[cut:])):
        np.save(os.path.join(out, f"{name}_x.npy"), x[ids])
        np.save(os.path.join(out, f"{name}_y.npy"), y[ids])
    with open(os.path.join(out, "mlp.sat"), "w") as f:
        f.write(mlp_sat(np.random.default_rng(0), [64, 64, 10]))
    print(f"digits: {cut} training and {len(x) - cut} test images, and mlp.sat, in {out}")


if __name__ == "__main__":
    main()
