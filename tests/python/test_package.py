"""The Python package: graphs, optimize, compile, arrays across the border,
errors. Values are checked against NumPy computations and the reference
interpreter, not only that calls return."""

import json
import os

import numpy as np
import pytest

import saturn
from saturn import _core


def mlp_reference(g, x):
    """The MLP's outputs computed by NumPy from the graph's own weights and
    nodes (matmul, add, relu only): independent of Saturn's kernels."""
    env = {g.inputs[0][0]: x.astype(np.float64)}
    env.update({k: v.astype(np.float64) for k, v in g.weights.items()})
    for n in g.nodes:
        a = [env[i] for i in n["inputs"]]
        if n["op"] == "matmul":
            env[n["outputs"][0]] = a[0] @ a[1]
        elif n["op"] == "add":
            env[n["outputs"][0]] = a[0] + a[1]
        elif n["op"] == "relu":
            env[n["outputs"][0]] = np.maximum(a[0], 0)
        else:
            raise AssertionError("unexpected op " + n["op"])
    return env[g.outputs[0][0]]


def test_load_describes_the_graph(models):
    g = saturn.load(os.path.join(models, "mlp.onnx"))
    assert g.inputs == [("x", "float32", [4, 64])]
    assert g.outputs[0][1:] == ("float32", [4, 10])
    assert g.op_counts() == {"add": 3, "matmul": 3, "relu": 2}
    assert len(g) == 8
    node = g.nodes[0]
    assert set(node) == {"name", "op", "inputs", "outputs", "attrs"}
    w = g.weights
    assert all(isinstance(v, np.ndarray) and v.dtype == np.float32 for v in w.values())
    assert sum(v.size for v in w.values()) > 64 * 10


def test_sat_text_round_trip(models):
    g = saturn.load(os.path.join(models, "mlp.onnx"))
    again = saturn.parse(g.to_sat(), "mlp.sat")
    assert again.op_counts() == g.op_counts()
    x = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
    a = saturn.compile(g, "interp")(x)
    b = saturn.compile(again, "interp")(x)
    np.testing.assert_array_equal(a, b)


def test_onnx_bytes_round_trip(models, tmp_path):
    g = saturn.load(os.path.join(models, "mlp.onnx"))
    h = saturn.load_onnx_bytes(g.to_onnx())
    assert h.op_counts() == g.op_counts()
    g.save(str(tmp_path / "m.sat"))
    assert saturn.load(str(tmp_path / "m.sat")).op_counts() == g.op_counts()


def test_optimize_returns_graph_and_report(models):
    g = saturn.load(os.path.join(models, "mlp.onnx"))
    opt, report = saturn.optimize(g, target="cpu", calibration=False)
    assert isinstance(opt, saturn.Graph)
    assert report["nodes_before"] == 8 and report["nodes_after"] == len(opt)
    assert len(opt) < len(g)  # matmul + add become one library call each
    assert report["target"] == "cpu"
    assert json.dumps(report)  # plain Python values


def test_optimize_limits_are_reported(models):
    g = saturn.load(os.path.join(models, "resnet_small.onnx"))
    _, report = saturn.optimize(g, iter_limit=1, calibration=False)
    phases = report["phases"]
    assert any(p.get("stop_reason") == "iter_limit" for p in phases.values() if isinstance(p, dict))


def test_optimize_rejects_unknown_options(models):
    with pytest.raises(TypeError):
        saturn.optimize(os.path.join(models, "mlp.onnx"), node_limt=5)
    for bad in (dict(node_limit=-1), dict(time_limit=float("nan")), dict(iter_limit=2.5), dict(threads=-3)):
        with pytest.raises(ValueError, match=list(bad)[0]):
            saturn.optimize(os.path.join(models, "mlp.onnx"), **bad)
    with pytest.raises(TypeError, match="iter_limit must be a number"):
        saturn.optimize(os.path.join(models, "mlp.onnx"), iter_limit="many")
    with pytest.raises(ValueError):
        saturn.optimize(os.path.join(models, "mlp.onnx"), target="tpu")


def test_missing_rule_file_is_named(models, tmp_path):
    with pytest.raises(saturn.SaturnError, match="no such file or folder '.*nope.rules'"):
        saturn.optimize(os.path.join(models, "mlp.onnx"), rules=[str(tmp_path / "nope.rules")])


def test_bad_rule_file_names_the_place(models, tmp_path):
    bad = tmp_path / "bad.rules"
    bad.write_text("(rule broken (add ?a) => ?a\n")
    with pytest.raises(saturn.SaturnError) as e:
        saturn.optimize(os.path.join(models, "mlp.onnx"), rules=[str(bad)])
    assert str(bad) + ":1:" in str(e.value)


def test_compiled_cpu_matches_numpy(models):
    g = saturn.load(os.path.join(models, "mlp.onnx"))
    x = np.random.default_rng(1).standard_normal((4, 64)).astype(np.float32)
    want = mlp_reference(g, x)
    for optimize in (True, False):
        prog = saturn.compile(g, "cpu", optimize=optimize, threads=1)
        got = prog(x)
        assert got.shape == (4, 10) and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert prog.report is None
    assert saturn.compile(g, "cpu", calibration=False).report["nodes_before"] == 8
    # A team held at two threads whatever the load computes the same.
    fixed = saturn.compile(g, "cpu", optimize=False, threads=2, fixed_threads=True)
    np.testing.assert_allclose(fixed(x), want, rtol=1e-4, atol=1e-5)


def test_cnn_cpu_matches_interpreter(models):
    g = saturn.load(os.path.join(models, "resnet_small.onnx"))
    (name, dtype, shape), = g.inputs
    x = np.random.default_rng(2).standard_normal(shape).astype(dtype)
    cpu = saturn.compile(g, "cpu", calibration=False)
    ref = saturn.compile(g, "interp")
    assert len(cpu.graph) < len(g)
    np.testing.assert_allclose(cpu(x), ref(x), rtol=1e-3, atol=1e-4)
    s = cpu.summary
    assert s["target"] == "cpu" and s["steps"] > 0 and s["arena_bytes"] <= s["naive_bytes"]


def test_inputs_by_position_name_and_dict(models):
    prog = saturn.compile(os.path.join(models, "mlp.onnx"), "cpu", threads=1)
    x = np.ones((4, 64), np.float32)
    a = prog(x)
    b = prog(x=x)
    c = prog.run({"x": x})
    assert list(c) == prog.output_names
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c[prog.output_names[0]])
    np.testing.assert_array_equal(prog(x.tolist()), a)  # a list is read as the declared dtype


def test_wrong_inputs_are_type_errors(models):
    prog = saturn.compile(os.path.join(models, "mlp.onnx"), "interp")
    x = np.ones((4, 64), np.float32)
    with pytest.raises(TypeError, match="float32, got float64"):
        prog(x.astype(np.float64))
    with pytest.raises(TypeError, match="missing input 'x'"):
        prog()
    with pytest.raises(TypeError, match="no input named 'y'"):
        prog(y=x)
    with pytest.raises(TypeError, match="given twice"):
        prog(x, x=x)
    with pytest.raises(saturn.SaturnError, match="shape"):
        prog(np.ones((5, 64), np.float32))


def test_arrays_cross_without_copies():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    back, borrowed = _core._roundtrip(a)
    assert borrowed  # read in place
    np.testing.assert_array_equal(back, a)
    assert not np.shares_memory(back, a)  # the array handed back is its own
    t, borrowed = _core._roundtrip(a.T)  # not C-contiguous: copied once, then borrowed
    np.testing.assert_array_equal(t, a.T)
    for dtype in (np.float64, np.float16, np.int64, np.int32, np.int8, np.uint8, np.bool_):
        v = (np.arange(6) % 3).astype(dtype).reshape(2, 3)
        r, _ = _core._roundtrip(v)
        assert r.dtype == v.dtype
        np.testing.assert_array_equal(r, v)
    with pytest.raises(TypeError, match="complex"):
        _core._roundtrip(np.zeros(2, np.complex64))


def test_outputs_own_their_memory_and_inputs_are_untouched(models):
    prog = saturn.compile(os.path.join(models, "mlp.onnx"), "cpu", threads=1)
    x = np.random.default_rng(3).standard_normal((4, 64)).astype(np.float32)
    keep = x.copy()
    y1 = prog(x)
    assert y1.base is not None and not y1.flags["OWNDATA"]  # the tensor's storage, not a copy
    y1[:] = 0  # writable, and writing it changes nothing the program keeps
    y2 = prog(x)
    np.testing.assert_array_equal(x, keep)
    assert np.abs(y2).sum() > 0


def test_cuda_without_a_device_is_a_clear_error(models):
    try:
        prog = saturn.compile(os.path.join(models, "mlp.onnx"), "cuda", calibration=False)
    except saturn.SaturnError as e:
        assert "cpu" in str(e)  # says what to use instead
        return
    x = np.ones((4, 64), np.float32)  # a device is here: it must compute the same
    np.testing.assert_allclose(prog(x), saturn.compile(os.path.join(models, "mlp.onnx"), "interp")(x),
                               rtol=1e-3, atol=1e-5)


def test_errors_name_the_file(tmp_path):
    with pytest.raises(saturn.SaturnError, match="nope.onnx"):
        saturn.load(str(tmp_path / "nope.onnx"))
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    with pytest.raises(saturn.SaturnError, match="bad.onnx"):
        saturn.load(str(bad))
    with pytest.raises(saturn.SaturnError, match="<string>:1:"):
        saturn.parse("graph (")
    with pytest.raises(TypeError):
        saturn.compile(3.5)


def test_second_compile_reads_the_cache(models, tmp_path, monkeypatch):
    monkeypatch.setenv("SATURN_CACHE_DIR", str(tmp_path / "cache"))
    g = saturn.load(os.path.join(models, "resnet_small.onnx"))
    (_, dtype, shape), = g.inputs
    x = np.random.default_rng(4).standard_normal(shape).astype(dtype)
    first = saturn.compile(g, "cpu", calibration=False)
    second = saturn.compile(g, "cpu", calibration=False)
    off = saturn.compile(g, "cpu", calibration=False, cache=False)
    assert first.report["cache"] == "miss" and first.summary["kernel_modules_cached"] == 0
    assert second.report["cache"] == "hit" and second.summary["kernel_modules_cached"] > 0
    assert off.report["cache"] == "off" and off.summary["kernel_modules_cached"] == 0
    assert second.graph.op_counts() == first.graph.op_counts() == off.graph.op_counts()
    np.testing.assert_array_equal(second(x), first(x))
    np.testing.assert_allclose(off(x), first(x), rtol=1e-5, atol=1e-6)
    # Other options are another entry.
    assert saturn.compile(g, "cpu", calibration=False, iter_limit=2).report["cache"] == "miss"


def test_optimize_explains_values(models):
    g = saturn.load(os.path.join(models, "resnet_small.onnx"))
    opt, report = saturn.optimize(g, calibration=False, explain=["relu_2"])
    e = report["explanations"]["relu_2"]
    assert e["written"] == "relu" and e["optimized"] in opt.op_counts()
    assert e["replayed"] is True
    rules = [s["rule"] for s in e["steps"] if s["kind"] == "rule"]
    assert rules and all(r in report["rules"] for r in rules)
    with pytest.raises(saturn.SaturnError, match="no value 'nope'"):
        saturn.optimize(g, explain=["nope"])
