"""Training against PyTorch autograd (Debian's python3-torch): `saturn grad`'s
step graph, compiled for the CPU, run for several steps of SGD, momentum,
Adam and AdamW on an MLP, a small CNN with batch norm in training mode and a
small causal transformer; losses, weights and running statistics must match
PyTorch's within float tolerance."""

import os
import subprocess

import numpy as np
import pytest

import saturn

torch = pytest.importorskip("torch")
F = torch.nn.functional

SATURN = os.environ.get("SATURN_BIN", "saturn")


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(12, 16)
        self.fc2 = torch.nn.Linear(16, 5)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


class Cnn(torch.nn.Module):
    """conv -> relu -> batch norm (kept apart from the conv, which an
    eval-mode export would fold it into) -> max pool -> linear."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 6, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(6)
        self.pool = torch.nn.MaxPool2d(3, stride=2, padding=1)
        self.fc = torch.nn.Linear(6 * 4 * 4, 4)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.bn(torch.relu(self.conv(x)))), 1))


class TinyGpt(torch.nn.Module):
    """One pre-norm block: token and position embeddings, causal attention
    (2 heads), a GELU MLP, a final layer norm and the vocabulary head."""

    def __init__(self, vocab=11, d=16, heads=2, seq=6):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(torch.randn(seq, d) * 0.1)
        self.ln1 = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.up = torch.nn.Linear(d, 4 * d)
        self.down = torch.nn.Linear(4 * d, d)
        self.lnf = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab)
        self.heads, self.d, self.seq = heads, d, seq
        self.register_buffer("mask", torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1))

    def forward(self, ids):
        b, t = ids.shape
        h = self.tok(ids) + self.pos
        q, k, v = self.qkv(self.ln1(h)).split(self.d, dim=-1)
        split = lambda z: z.reshape(b, t, self.heads, self.d // self.heads).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        att = (q @ k.transpose(-2, -1)) / float(np.sqrt(self.d // self.heads))
        att = torch.softmax(att.masked_fill(self.mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, self.d)
        h = h + self.proj(y)
        h = h + self.down(F.gelu(self.up(self.ln2(h))))
        return self.head(self.lnf(h))


def export(model, example, path, input_name):
    model.eval()
    torch.onnx.export(model, example, path, input_names=[input_name], output_names=["out"], opset_version=17)
    model.train()


def build_step(tmp_path, onnx_path, batch, loss, optimizer, flags=()):
    step = str(tmp_path / "step.sat")
    cmd = [SATURN, "grad", onnx_path, "--loss", loss, "--optimizer", optimizer, "--batch", str(batch), "-o", step]
    r = subprocess.run(cmd + list(flags), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return saturn.load(step)


def torch_optimizer(name, params, lr):
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr)
    if name == "momentum":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr)
    return torch.optim.AdamW(params, lr=lr, weight_decay=0.01)


def match_weights(model, graph_inputs, initial):
    """Maps each weight input of the step to a PyTorch tensor (by name, or
    by value where the export renamed or transposed it) and how to read it."""
    named = dict(model.named_parameters())
    named.update(dict(model.named_buffers()))
    out = {}
    for name in graph_inputs:
        if name in named:
            out[name] = (named[name], False)
            continue
        for pname, p in named.items():
            v = p.detach().numpy()
            if v.ndim == 2 and v.T.shape == initial[name].shape and np.array_equal(v.T, initial[name]):
                out[name] = (p, True)
                break
    return out


def run_steps(model, onnx_path, tmp_path, make_batch, loss_fn, loss, optimizer, steps, lr, batch, noise=None):
    """`noise`: {weight: index} of elements whose gradient is zero in exact
    arithmetic, so rounding noise decides Adam's update (up to lr a step)."""
    initial = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    step = build_step(tmp_path, onnx_path, batch, loss, optimizer, ["--lr", str(lr)])
    prog = saturn.compile(step, "cpu", calibration=False)
    names = [i[0] for i in step.inputs]
    data, labels = names[0], names[1]
    state_names = names[2:]
    # The state's initial values: the model's initializers (read from the
    # ONNX file), zeros for moments, 0 for the step count.
    onnx_graph = saturn.load(onnx_path)
    init = {k: np.asarray(v) for k, v in onnx_graph.weights.items()}
    state = {}
    for n in state_names:
        if n in init:
            state[n] = init[n]
        elif n == "train.step":
            state[n] = np.zeros((), np.float32)
        else:
            base = n.rsplit(".", 1)[0]
            state[n] = np.zeros_like(init[base])
    mapping = match_weights(model, [n for n in state_names if n in init], init)
    opt = torch_optimizer(optimizer, model.parameters(), lr)
    torch_losses, saturn_losses = [], []
    for k in range(steps):
        x, y = make_batch(k)
        out = prog.run({data: x.numpy(), labels: y.numpy(), **state})
        saturn_losses.append(float(out["loss"]))
        state = {n: out[n + ".next"] for n in state_names}
        opt.zero_grad()
        l = loss_fn(model(x), y)
        l.backward()
        opt.step()
        torch_losses.append(float(l))
    np.testing.assert_allclose(saturn_losses, torch_losses, rtol=2e-4, atol=1e-5)
    assert mapping, "no weight of the step was matched to the model's"
    for name, (p, transposed) in mapping.items():
        want = p.detach().numpy()
        got = state[name].T if transposed else state[name]
        if noise and name in noise:
            assert np.all(np.abs(got[noise[name]] - want[noise[name]]) <= 2 * lr * steps)
            got, want = np.delete(got, noise[name]), np.delete(want, noise[name])
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-5, err_msg=name)
    return mapping


@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "adam", "adamw"])
def test_mlp_steps_match_pytorch(tmp_path, optimizer):
    torch.manual_seed(0)
    model = Mlp()
    path = str(tmp_path / "mlp.onnx")
    export(model, torch.randn(8, 12), path, "x")
    g = torch.Generator().manual_seed(1)
    batches = [(torch.randn(8, 12, generator=g), torch.randint(0, 5, (8,), generator=g)) for _ in range(4)]
    mapping = run_steps(model, path, tmp_path, lambda k: batches[k], F.cross_entropy, "cross-entropy", optimizer,
                        4, 0.05, 8)
    assert set(mapping) == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}


def test_mlp_mse_gradients_match_autograd(tmp_path):
    torch.manual_seed(2)
    model = Mlp()
    path = str(tmp_path / "mlp.onnx")
    export(model, torch.randn(4, 12), path, "x")
    step = build_step(tmp_path, path, 4, "mse", "none")
    prog = saturn.compile(step, "cpu", calibration=False)
    x, t = torch.randn(4, 12), torch.randn(4, 5)
    init = {k: np.asarray(v) for k, v in saturn.load(path).weights.items()}
    inputs = [i[0] for i in step.inputs]
    outputs = [o[0] for o in step.outputs]
    out = prog.run({"x": x.numpy(), "labels": t.numpy(), **{n: init[n] for n in inputs[2:]}})
    loss = F.mse_loss(model(x), t)
    loss.backward()
    np.testing.assert_allclose(float(out["loss"]), float(loss), rtol=1e-5)
    assert len(outputs) == 2 + 4
    want = {n: p.grad.numpy() for n, p in model.named_parameters()}
    for n, g in zip(inputs[2:], outputs[2:]):
        np.testing.assert_allclose(out[g], want[n], rtol=1e-4, atol=1e-6, err_msg=n)


def test_cnn_with_batch_norm_in_training_mode(tmp_path):
    torch.manual_seed(3)
    model = Cnn()
    path = str(tmp_path / "cnn.onnx")
    export(model, torch.randn(4, 3, 8, 8), path, "x")
    g = torch.Generator().manual_seed(4)
    batches = [(torch.randn(4, 3, 8, 8, generator=g), torch.randint(0, 4, (4,), generator=g)) for _ in range(3)]
    mapping = run_steps(model, path, tmp_path, lambda k: batches[k], F.cross_entropy, "cross-entropy", "momentum",
                        3, 0.05, 4)
    # The running statistics are state too, updated as torch's (momentum 0.1, unbiased variance).
    assert "bn.running_mean" in mapping and "bn.running_var" in mapping


@pytest.mark.parametrize("optimizer", ["momentum", "adam"])
def test_causal_transformer_steps(tmp_path, optimizer):
    torch.manual_seed(5)
    model = TinyGpt()
    path = str(tmp_path / "gpt.onnx")
    export(model, torch.randint(0, 11, (3, 6)), path, "ids")
    g = torch.Generator().manual_seed(6)
    batches = [(torch.randint(0, 11, (3, 6), generator=g), torch.randint(0, 11, (3, 6), generator=g)) for _ in range(3)]
    ce = lambda logits, y: F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    # The key projection's bias cannot change the scores (a constant per
    # query row, which softmax removes): its gradient is zero but for rounding.
    keys = {"qkv.bias": np.arange(16, 32)}
    mapping = run_steps(model, path, tmp_path, lambda k: batches[k], ce, "cross-entropy", optimizer, 3, 0.01, 3,
                        noise=keys)
    assert "tok.weight" in mapping and "pos" in mapping


def test_train_digits_to_95_percent(tmp_path, root):
    """The bundled example: saturn train on scikit-learn's digits, held out."""
    pytest.importorskip("sklearn")
    subprocess.run(["/usr/bin/python3", os.path.join(root, "docs/examples/digits/prepare.py"), str(tmp_path)], check=True)
    r = subprocess.run([SATURN, "train", str(tmp_path / "mlp.sat"), "--data", str(tmp_path / "train_x.npy"),
                        "--labels", str(tmp_path / "train_y.npy"), "--eval-data", str(tmp_path / "test_x.npy"),
                        "--eval-labels", str(tmp_path / "test_y.npy"), "--loss", "cross-entropy", "--optimizer",
                        "adam", "--lr", "0.01", "--epochs", "10", "--batch", "32", "-o", str(tmp_path / "t.onnx"),
                        "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    import json
    s = json.loads(r.stdout)
    assert s["eval_accuracy"] >= 0.95
    assert s["final_loss"] < s["epoch_losses"][0]
    assert s["arena_bytes"] < s["naive_bytes"]
    # The trained weights are written back: the model scores the same on the held-out set.
    trained = saturn.compile(saturn.load(str(tmp_path / "t.onnx")), "interp")
    x, y = np.load(tmp_path / "test_x.npy"), np.load(tmp_path / "test_y.npy")
    logits = trained(x)
    acc = float((np.argmax(logits, axis=1) == y).mean())
    assert abs(acc - s["eval_accuracy"]) < 1e-9
