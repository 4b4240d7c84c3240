// saturn.Graph, saturn.load / parse, saturn.optimize and saturn.compile:
// the same pipeline `saturn opt` and `saturn run` call (tools/), so a
// Python user gets the command line's rules, limits, calibration and
// kernel cache.
//
// Invariant: a Program owns the graph it was compiled from and its
// executor; a call converts its arguments while holding the GIL, runs
// without it, and converts the outputs after taking it back.
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <variant>

#include "ir/onnx_import.hpp"
#include "ir/sat_format.hpp"
#include "runtime/cpu_executor.hpp"
#include "runtime/interp.hpp"
#ifdef SATURN_HAVE_CUDA
#include "runtime/cuda_executor.hpp"
#endif
#include "tools/calibrate.hpp"
#include "tools/cli_common.hpp"
#include "tools/measure.hpp"
#include "tools/python/bindings.hpp"
#include "tools/run_command.hpp"

namespace saturn::python {

namespace {

using GraphPtr = std::shared_ptr<ir::Graph>;

py::object dim_value(const ir::Dim& d) {
  if (d.is_static()) return py::int_(d.value());
  return py::str(d.to_string());
}

py::list shape_value(const ir::Shape& s) {
  py::list l;
  for (const ir::Dim& d : s) l.append(dim_value(d));
  return l;
}

// One value of the graph as (name, dtype, shape), shape dims ints or
// symbol names ("N").
py::tuple value_info(const std::string& name, const ir::ValueType& t) {
  return py::make_tuple(name, numpy_dtype_name(t.dtype), shape_value(t.shape));
}

py::object attr_value(const ir::AttrValue& v) {
  return std::visit(
      [](const auto& x) -> py::object {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, ir::Tensor>)
          return array_from_tensor(x);
        else
          return py::cast(x);
      },
      v);
}

GraphPtr load(const std::string& path) { return std::make_shared<ir::Graph>(unwrap(cli::read_model(path))); }

// A limit or count given to optimize() or compile(): a finite number >= 0
// (as every numeric flag of the command line), else a ValueError naming it.
double non_negative(const std::string& name, py::handle value) {
  double v = 0;
  try {
    v = value.cast<double>();
  } catch (const py::cast_error&) {
    throw py::type_error(name + " must be a number, got " + py::str(py::type::of(value)).cast<std::string>());
  }
  if (!std::isfinite(v) || v < 0)
    throw py::value_error(name + " must be a finite number >= 0, got " + py::str(value).cast<std::string>());
  return v;
}

std::size_t count(const std::string& name, py::handle value) {
  const double v = non_negative(name, value);
  if (v != std::floor(v))
    throw py::value_error(name + " must be a whole number, got " + py::str(value).cast<std::string>());
  return static_cast<std::size_t>(v);
}

void check_target(const std::string& target, bool interp_ok) {
  if (target == "cpu" || target == "cuda" || (interp_ok && target == "interp")) return;
  throw py::value_error("target must be " + std::string(interp_ok ? "'interp', " : "") + "'cpu' or 'cuda', got '" +
                        target + "'");
}

// The optimization both saturn.optimize and saturn.compile run.
struct Optimized {
  ir::Graph graph;
  nlohmann::json report;
};

// `cached`: through the optimized-graph cache (saturn.compile, as `saturn run`).
Optimized optimize_graph(const ir::Graph& g, const std::string& target, const py::kwargs& kw, bool cached = false) {
  check_target(target, false);
  pipeline::OptimizeOptions oo;
  oo.target = target;
  std::optional<std::vector<std::string>> rules;
  bool default_rules = true;
  cli::CalibrationFlags cal;
  int threads = 0;
  for (auto [key, value] : kw) {
    const std::string k = py::str(key);
    if (k == "rules")
      rules = value.is_none() ? std::nullopt : std::optional(value.cast<std::vector<std::string>>());
    else if (k == "default_rules")
      default_rules = value.cast<bool>();
    else if (k == "extractor")
      oo.extractor = value.cast<std::string>();
    else if (k == "iter_limit")
      oo.saturation.iter_limit = count(k, value);
    else if (k == "node_limit")
      oo.saturation.node_limit = count(k, value);
    else if (k == "time_limit")
      oo.saturation.time_limit_s = non_negative(k, value);
    else if (k == "memory_limit")
      oo.saturation.memory_limit_mb = count(k, value);
    else if (k == "extract_time_limit")
      oo.extract_time_limit_s = non_negative(k, value);
    else if (k == "calibration")
      cal.no_calibration = !value.cast<bool>();
    else if (k == "calibrate")
      cal.calibrate = value.cast<bool>();
    else if (k == "calibration_file")
      cal.file = value.cast<std::string>();
    else if (k == "threads")
      threads = static_cast<int>(count(k, value));
    else if (k == "explain")
      oo.explain = value.cast<std::vector<std::string>>();
    else
      throw py::type_error("optimize() got an unexpected keyword argument '" + k + "'");
  }
  if (oo.saturation.memory_limit_mb == 0) oo.saturation.memory_limit_mb = pipeline::default_memory_limit_mb();
  oo.rule_files =
      unwrap(pipeline::collect_rule_files(target, default_rules, rules.value_or(std::vector<std::string>{})));
  pipeline::OptimizeResult res;
  {
    py::gil_scoped_release nogil;
    const pipeline::OptimizeCache cache = cli::optimize_cache(!cached);
    res = unwrap(cli::optimize_calibrated(g, oo, cal, threads, &cache));
  }
  if (res.unsound) {
    py::object err = py::module_::import("saturn._core").attr("UnsoundRuleError");
    PyErr_SetString(err.ptr(), res.report.value("error", std::string("an unsound rule")).c_str());
    throw py::error_already_set();
  }
  return {std::move(res.graph), std::move(res.report)};
}

// A compiled graph: an executor for its target, called with arrays.
class Program {
 public:
  Program(ir::Graph g, std::string target, py::object report, bool cache, const py::kwargs& kw)
      : target_(std::move(target)) {
    graph_ = std::make_shared<ir::Graph>(std::move(g));
    report_ = std::move(report);
    int threads = 0;
    bool fuse = true, fixed_threads = false;
    for (auto [key, value] : kw) {
      const std::string k = py::str(key);
      if (k == "threads")
        threads = static_cast<int>(count(k, value));
      else if (k == "fixed_threads")
        fixed_threads = value.cast<bool>();
      else if (k == "fuse")
        fuse = value.cast<bool>();
      else
        throw py::type_error("compile() got an unexpected keyword argument '" + k + "'");
    }
    lower::LoweringOptions lo = cli::lowering_options(!cache);
    lo.fuse = fuse;
    summary_ = {{"target", target_}};
    py::gil_scoped_release nogil;
    if (target_ == "cpu") {
      runtime::CpuExecutorOptions co;
      co.threads = threads;
      co.adapt_team = !fixed_threads;
      co.lowering = lo;
      cpu_ = unwrap(runtime::CpuExecutor::create(*graph_, co));
      describe(cpu_->program());
      summary_["threads"] = cpu_->threads();
    } else if (target_ == "cuda") {  // (_compile checked that the cuda target can run here)
#ifdef SATURN_HAVE_CUDA
      runtime::CudaExecutorOptions co;
      co.lowering = lo;
      gpu_ = unwrap(runtime::CudaExecutor::create(*graph_, co));
      describe(gpu_->program());
      summary_["device"] = gpu_->device().name;
#endif
    }
  }

  std::vector<std::string> input_names() const {
    std::vector<std::string> r;
    for (const auto& in : graph_->inputs) r.push_back(in.name);
    return r;
  }
  const std::vector<std::string>& output_names() const { return graph_->outputs; }

  // Arguments positional in input order, or by name, as tensors in order.
  std::vector<ir::Tensor> bind_inputs(const py::args& args, const py::kwargs& kw) const {
    const auto& ins = graph_->inputs;
    if (args.size() > ins.size())
      throw py::type_error("the program takes " + std::to_string(ins.size()) + " inputs, " +
                           std::to_string(args.size()) + " were given");
    std::vector<std::optional<ir::Tensor>> bound(ins.size());
    for (std::size_t k = 0; k < args.size(); ++k)
      bound[k] = tensor_from_array(args[k], "input '" + ins[k].name + "'", ins[k].type.dtype);
    for (auto [key, value] : kw) {
      const std::string name = py::str(key);
      auto it = std::find_if(ins.begin(), ins.end(), [&](const ir::GraphValue& v) { return v.name == name; });
      if (it == ins.end()) throw py::type_error("the program has no input named '" + name + "'");
      const std::size_t k = static_cast<std::size_t>(it - ins.begin());
      if (bound[k]) throw py::type_error("input '" + name + "' given twice");
      bound[k] = tensor_from_array(value, "input '" + name + "'", ins[k].type.dtype);
    }
    std::vector<ir::Tensor> inputs;
    for (std::size_t k = 0; k < ins.size(); ++k) {
      if (!bound[k]) throw py::type_error("missing input '" + ins[k].name + "'");
      inputs.push_back(std::move(*bound[k]));
    }
    return inputs;
  }

  // One run, without the GIL (the caller holds none).
  Expected<std::vector<ir::Tensor>> execute(const std::vector<ir::Tensor>& inputs) {
    if (cpu_) return cpu_->run(inputs);
#ifdef SATURN_HAVE_CUDA
    if (gpu_) return gpu_->run(inputs);
#endif
    return runtime::interpret(*graph_, inputs);
  }

  std::vector<ir::Tensor> run(const py::args& args, const py::kwargs& kw) {
    std::vector<ir::Tensor> inputs = bind_inputs(args, kw);
    Expected<std::vector<ir::Tensor>> outs = Diagnostic{};
    {
      py::gil_scoped_release nogil;
      outs = execute(inputs);
    }
    return unwrap(std::move(outs));
  }

  // `runs` timed runs after a warm-up, timed in C++ (no Python per run):
  // what `saturn run --bench` prints.
  py::object bench(int runs, const py::args& args, const py::kwargs& kw) {
    if (runs < 1) throw py::value_error("runs must be at least 1");
    std::vector<ir::Tensor> inputs = bind_inputs(args, kw);
    Expected<cli::Latency> lat = Diagnostic{};
    {
      py::gil_scoped_release nogil;
      lat = cli::time_runs(
          [&]() -> Expected<bool> {
            auto r = execute(inputs);
            if (!r) return r.error();
            return true;
          },
          runs);
    }
    const cli::Latency l = unwrap(std::move(lat));
    return to_python({{"ms", l.ms}, {"median_ms", l.median_ms()}, {"min_ms", l.min_ms()}, {"runs", runs}});
  }

  py::object call(const py::args& args, const py::kwargs& kw) {
    std::vector<ir::Tensor> outs = run(args, kw);
    if (outs.size() == 1) return array_from_tensor(std::move(outs[0]));
    py::tuple t(outs.size());
    for (std::size_t k = 0; k < outs.size(); ++k) t[k] = array_from_tensor(std::move(outs[k]));
    return t;
  }

  py::dict run_named(const py::dict& feeds) {
    std::vector<ir::Tensor> outs = run(py::args(), py::kwargs(feeds));
    py::dict r;
    for (std::size_t k = 0; k < outs.size(); ++k)
      r[py::str(graph_->outputs[k])] = array_from_tensor(std::move(outs[k]));
    return r;
  }

  const std::string& target() const { return target_; }
  GraphPtr graph() const { return graph_; }
  py::object report() const { return report_; }
  py::object summary() const { return to_python(summary_); }

 private:
  void describe(const lower::Program& p) { cli::summarize_program(p, summary_); }

  GraphPtr graph_;
  std::string target_;
  py::object report_;
  nlohmann::json summary_;
  std::unique_ptr<runtime::CpuExecutor> cpu_;
#ifdef SATURN_HAVE_CUDA
  std::unique_ptr<runtime::CudaExecutor> gpu_;
#endif
};

}  // namespace

void bind_graphs(py::module_& m) {
  py::class_<ir::Graph, GraphPtr>(m, "Graph", "A tensor graph: inputs, weights, nodes in order, outputs.")
      .def_readonly("name", &ir::Graph::name)
      .def_readonly("source", &ir::Graph::source, "The file it came from")
      .def_property_readonly(
          "inputs",
          [](const ir::Graph& g) {
            py::list l;
            for (const auto& v : g.inputs) l.append(value_info(v.name, v.type));
            return l;
          },
          "[(name, dtype, shape)] of the inputs a run takes")
      .def_property_readonly(
          "outputs",
          [](const ir::Graph& g) {
            auto types = unwrap(ir::infer_types(g));
            py::list l;
            for (const auto& o : g.outputs) l.append(value_info(o, types.at(o)));
            return l;
          },
          "[(name, dtype, shape)] of the outputs")
      .def_property_readonly(
          "nodes",
          [](const ir::Graph& g) {
            py::list l;
            for (const ir::Node& n : g.nodes) {
              py::dict attrs;
              for (const auto& [k, v] : n.attrs.all()) attrs[py::str(k)] = attr_value(v);
              py::dict d;
              d["name"] = n.name;
              d["op"] = n.op;
              d["inputs"] = n.inputs;
              d["outputs"] = n.outputs;
              d["attrs"] = attrs;
              l.append(d);
            }
            return l;
          },
          "One dict per node: name, op, inputs, outputs, attrs")
      .def_property_readonly(
          "weights",
          [](const ir::Graph& g) {
            py::dict d;
            for (const auto& [k, t] : g.initializers) d[py::str(k)] = array_from_tensor(t);
            return d;
          },
          "The initializers, name -> array (copies)")
      .def("op_counts",
           [](const ir::Graph& g) {
             std::map<std::string, int> c;
             for (const ir::Node& n : g.nodes) ++c[n.op];
             return c;
           })
      .def(
          "to_sat", [](const ir::Graph& g) { return ir::write_sat(g); }, "The graph in Saturn's text format")
      .def(
          "to_onnx", [](const ir::Graph& g) { return py::bytes(unwrap(ir::export_onnx_bytes(g))); },
          "The graph as an ONNX model (bytes)")
      .def(
          "save",
          [](const ir::Graph& g, const std::string& path) {
            const bool sat = path.size() > 4 && path.compare(path.size() - 4, 4, ".sat") == 0;
            unwrap(sat ? ir::write_sat_file(g, path) : ir::export_onnx_file(g, path));
          },
          py::arg("path"), "Writes .onnx, or .sat text")
      .def("__len__", [](const ir::Graph& g) { return g.nodes.size(); })
      .def("__repr__", [](const ir::Graph& g) {
        std::string s = "<saturn.Graph '" + g.name + "': " + std::to_string(g.nodes.size()) + " nodes, inputs";
        for (const auto& v : g.inputs)
          s += " " + v.name + ":" + ir::dtype_name(v.type.dtype) + ir::to_string(v.type.shape);
        return s + ">";
      });

  m.def("load", &load, py::arg("path"), "Reads a model: .onnx, or .sat text");
  m.def(
      "load_onnx_bytes",
      [](py::bytes data, const std::string& name) {
        return std::make_shared<ir::Graph>(unwrap(ir::import_onnx_bytes(std::string(data), name)));
      },
      py::arg("data"), py::arg("name") = "<bytes>", "Reads an ONNX model from bytes");
  m.def(
      "parse",
      [](const std::string& text, const std::string& name) {
        return std::make_shared<ir::Graph>(unwrap(ir::read_sat(text, name)));
      },
      py::arg("text"), py::arg("name") = "<string>", "Reads a graph in Saturn's text format (docs/sat-format.md)");

  m.def(
      "_optimize",
      [](const ir::Graph& g, const std::string& target, const py::kwargs& kw) {
        Optimized o = optimize_graph(g, target, kw);
        return py::make_tuple(std::make_shared<ir::Graph>(std::move(o.graph)), to_python(o.report));
      },
      py::arg("graph"), py::arg("target") = "cpu");

  py::class_<Program>(m, "Program", "A graph compiled for a target; call it with arrays.")
      .def("__call__", &Program::call, "Inputs positional (in order) or by name; one array, or a tuple of them")
      .def("run", &Program::run_named, py::arg("feeds"), "{input name: array} -> {output name: array}")
      .def("bench", &Program::bench, py::arg("runs") = 20,
           "Times `runs` runs on these inputs after a warm-up, in C++: {ms, median_ms, min_ms, runs}")
      .def_property_readonly("input_names", &Program::input_names)
      .def_property_readonly("output_names", &Program::output_names)
      .def_property_readonly("target", &Program::target)
      .def_property_readonly("graph", &Program::graph, "The graph that runs (optimized, unless optimize=False)")
      .def_property_readonly("report", &Program::report, "The optimization report, or None")
      .def_property_readonly("summary", &Program::summary, "What was compiled: steps, kernels, arena bytes, ...")
      .def("__repr__", [](const Program& p) {
        return "<saturn.Program " + p.target() + ": " + std::to_string(p.graph()->nodes.size()) + " nodes>";
      });

  m.def(
      "_compile",
      [](const ir::Graph& g, const std::string& target, bool optimize, py::dict opt_kw, bool cache,
         const py::kwargs& kw) {
        check_target(target, true);
        if (target == "cuda")
          if (auto why = cli::cuda_unavailable()) throw SaturnError{*why + " (use target='cpu' or 'interp')"};
        if (!optimize || target == "interp") return std::make_unique<Program>(g, target, py::none(), cache, kw);
        Optimized o = optimize_graph(g, target, py::kwargs(opt_kw), cache);
        return std::make_unique<Program>(std::move(o.graph), target, to_python(o.report), cache, kw);
      },
      py::arg("graph"), py::arg("target") = "cpu", py::arg("optimize") = true, py::arg("optimize_options") = py::dict(),
      py::arg("cache") = true);
}

}  // namespace saturn::python
