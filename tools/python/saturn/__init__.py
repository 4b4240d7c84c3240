"""Saturn from Python: load a model, optimize it with equality saturation,
compile it for a target and call it on NumPy arrays; run the e-graph engine
and prove rules.

    import saturn
    g = saturn.load("model.onnx")
    opt, report = saturn.optimize(g, target="cpu")
    prog = saturn.compile(g, target="cpu")
    y = prog(x=np.ones((1, 3, 224, 224), np.float32))

See docs/python.md.
"""

import os as _os

# Saturn's thread team waits briefly and then sleeps, so a busy machine keeps
# its cores (runtime/thread_env.hpp). libgomp reads this once, when it is
# loaded: it takes effect when saturn is imported before anything that loads
# libgomp (torch does). A value the user set is kept.
_os.environ.setdefault("GOMP_SPINCOUNT", "20000")
_os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# An installed package carries the shipped rulesets beside this file.
_here = _os.path.dirname(_os.path.abspath(__file__))
if _os.path.isdir(_os.path.join(_here, "rulesets")):
    _os.environ.setdefault("SATURN_RULESETS", _os.path.join(_here, "rulesets"))

from ._core import (  # noqa: E402
    EGraph,
    Graph,
    Program,
    Rules,
    SaturnError,
    UnsoundRuleError,
    __version__,
    load,
    load_onnx_bytes,
    parse,
)
from . import _core  # noqa: E402

__all__ = [
    "EGraph", "Graph", "Program", "Rules", "SaturnError", "UnsoundRuleError",
    "load", "load_onnx_bytes", "parse", "optimize", "compile", "verify",
    "from_torch", "__version__",
]


def _graph(model):
    """A Graph from a Graph, a path, or ONNX bytes."""
    if isinstance(model, Graph):
        return model
    if isinstance(model, (bytes, bytearray)):
        return load_onnx_bytes(bytes(model))
    if isinstance(model, (str, _os.PathLike)):
        return load(_os.fspath(model))
    raise TypeError("expected a saturn.Graph, a model path or ONNX bytes, got %s" % type(model).__name__)


def _optimize_options(rules=None, *, default_rules=True, extractor="dag-greedy", iter_limit=30,
                      node_limit=200000, time_limit=10.0, memory_limit=0, extract_time_limit=10.0,
                      calibration=True, calibrate=False, calibration_file=None, threads=0, explain=()):
    """The options of `saturn opt`, checked by Python's own argument rules."""
    kw = dict(rules=None if rules is None else [_os.fspath(r) for r in rules], default_rules=default_rules,
              extractor=extractor, iter_limit=iter_limit, node_limit=node_limit, time_limit=time_limit,
              memory_limit=memory_limit, extract_time_limit=extract_time_limit, calibration=calibration,
              calibrate=calibrate, threads=threads, explain=[str(v) for v in explain])
    if calibration_file is not None:
        kw["calibration_file"] = _os.fspath(calibration_file)
    return kw


def optimize(model, target="cpu", rules=None, **options):
    """Optimizes a model (a Graph, a path or ONNX bytes) for "cpu" or
    "cuda", as `saturn opt` does. Returns (optimized Graph, report dict).

    rules: .rules files or folders added to the shipped rulesets
    (default_rules=False: only these). Limits, as `saturn opt`'s flags:
    iter_limit=30, node_limit=200000, time_limit=10.0 (s), memory_limit=0
    (MiB; 0: half of memory), extract_time_limit=10.0; hitting one is
    reported in report["stop_reason"]. extractor="dag-greedy" (or "ilp",
    "tree-greedy", ...). Prices come from the machine's calibration cache
    when it has one; calibration=False prices with the roofline alone,
    calibrate=True measures what the cache lacks, calibration_file=PATH
    names the cache. explain=[value, ...]: report["explanations"][value] is
    the chain of rule applications that turned each value of the model as
    written into what the optimized program computes (replayed).

    Raises SaturnError on bad input (the command line's exit status 2) and
    UnsoundRuleError when a rule merged values of different types.
    """
    return _core._optimize(_graph(model), target, **_optimize_options(rules, **options))


def compile(model, target="cpu", *, optimize=True, threads=0, fixed_threads=False, fuse=True, cache=True,
            **optimize_options):
    """Compiles a model for "cpu", "cuda" or "interp" (the reference
    interpreter) and returns a Program: prog(x) or prog(x=...) returns an
    array (a tuple for several outputs); prog.run({name: array}) a dict.

    optimize=True optimizes first, as `saturn run` does, with the options
    of saturn.optimize (optimize_options); optimize=False compiles the graph
    as written. threads: the most cpu worker threads (0: every CPU no other
    process keeps busy); each call takes fewer while other processes keep
    CPUs busy, unless fixed_threads=True. fuse=False: one kernel per
    elementwise op. By default the optimized graph and the compiled kernels are kept in Saturn's cache
    folder, and compiling the same model again reads them (report["cache"]
    says "hit"); cache=False optimizes and compiles everything again.
    """
    opt_kw = _optimize_options(threads=threads, **optimize_options)
    return _core._compile(_graph(model), target, optimize, opt_kw, cache, threads=threads,
                          fixed_threads=fixed_threads, fuse=fuse)


def verify(rules, *, max_dim=3, max_rank=4, max_instances=256, fp32=False, only="", jobs=0, rule_time_limit=10.0):
    """Proves rules with Z3, as `saturn verify` does: `rules` is a .rules
    file or folder, or a list of them. Returns one dict per rule (the
    fields of `saturn verify --json`: rule, file, line, status "proved" /
    "refuted" / "unknown" / "unverified", reason, coverage, counterexample).
    """
    if isinstance(rules, (str, _os.PathLike)):
        rules = [rules]
    return _core._verify([_os.fspath(r) for r in rules], max_dim, max_rank, max_instances, fp32, only, jobs,
                         rule_time_limit)


def from_torch(module, example_inputs, target="cpu", *, opset=17, **compile_options):
    """A PyTorch nn.Module as a Saturn program: exported through
    torch.onnx with the example inputs (a tensor or a tuple of them),
    compiled for the target. The result takes and returns torch tensors.
    """
    from .torch_bridge import from_torch as _from_torch
    return _from_torch(module, example_inputs, target, opset=opset, **compile_options)
