"""PyTorch modules as Saturn programs: torch.onnx exports the module with
the example inputs, Saturn imports the ONNX bytes (no file), optimizes and
compiles them. Tensors cross without copies where the layout allows
(torch.Tensor.numpy and torch.from_numpy share memory)."""

import io

from . import _core


class TorchProgram:
    """Calls a compiled Saturn program with torch tensors, returns torch
    tensors (one, or a tuple as the module does)."""

    def __init__(self, program, input_names):
        self.program = program
        self._input_names = input_names

    @property
    def graph(self):
        return self.program.graph

    @property
    def report(self):
        return self.program.report

    def __call__(self, *args):
        import torch
        if len(args) != len(self._input_names):
            raise TypeError("expected %d inputs, got %d" % (len(self._input_names), len(args)))
        feeds = {}
        wanted = set(self.program.input_names)
        for name, a in zip(self._input_names, args):
            if name in wanted:  # the exporter drops inputs the outputs do not use
                feeds[name] = a.detach().cpu().contiguous().numpy() if isinstance(a, torch.Tensor) else a
        outs = self.program(**feeds)
        if isinstance(outs, tuple):
            return tuple(torch.from_numpy(o) for o in outs)
        return torch.from_numpy(outs)

    def __repr__(self):
        return "<saturn.TorchProgram %s>" % self.program.target


def from_torch(module, example_inputs, target="cpu", *, opset=17, **compile_options):
    import torch
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    names = ["input_%d" % k for k in range(len(example_inputs))]
    buf = io.BytesIO()
    was_training = module.training
    module.eval()
    try:
        torch.onnx.export(module, example_inputs, buf, input_names=names, opset_version=opset,
                          do_constant_folding=True)
    finally:
        module.train(was_training)
    graph = _core.load_onnx_bytes(buf.getvalue(), type(module).__name__)
    from . import compile as _compile
    return TorchProgram(_compile(graph, target, **compile_options), names)
