"""saturn.from_torch: a PyTorch module in three lines, checked against
PyTorch's own outputs (Debian's python3-torch)."""

import numpy as np
import pytest

import saturn

torch = pytest.importorskip("torch")


class SmallCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(y.mean(dim=(2, 3))), y.sum()


def test_module_matches_pytorch():
    torch.manual_seed(0)
    m = SmallCnn().eval()
    x = torch.randn(2, 3, 16, 16)
    prog = saturn.from_torch(m, x, "cpu", calibration=False)
    got = prog(x)
    with torch.no_grad():
        want = m(x)
    assert isinstance(got, tuple) and len(got) == 2
    for g, w in zip(got, want):
        assert isinstance(g, torch.Tensor)
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-3, atol=1e-4)
    assert m.training is False
    assert prog.report["nodes_after"] <= prog.report["nodes_before"]


def test_single_output_and_training_mode_restored():
    m = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.GELU(), torch.nn.Linear(4, 3))
    m.train()
    x = torch.randn(5, 6)
    prog = saturn.from_torch(m, (x,))
    assert m.training  # exported in eval mode, then restored
    out = prog(x)
    with torch.no_grad():
        np.testing.assert_allclose(out.numpy(), m.eval()(x).numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(TypeError):
        prog(x, x)
