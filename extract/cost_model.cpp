#include "extract/cost_model.hpp"

#include <set>

#include "extract/problem.hpp"

namespace saturn::extract {

std::optional<CostModel> CostModel::for_target(const std::string& name) {
  if (name == "cpu") {
    // Measured on this 2-core Zen 4 VM with bench/calibrate_cpu (medians of
    // 7): OpenBLAS sgemm 84-206 GFLOP/s for n = 64..1024 (150 used), a
    // streaming add 22 GB/s, an 8x8x8 sgemm call 0.04 us. Generated loops are
    // assumed at AVX-512 peak of one core for simple ops (64 GFLOP/s); plain
    // loop nests for contractions at 10 GFLOP/s; 1 us to dispatch a kernel
    // to the thread pool, 2 us per library call (threading included).
    // oneDNN's deconvolution reaches 100 GFLOP/s where sgemm reaches 170
    // (bench_cpu's unet_up: 2.7 ms against 1.6 ms for the same product).
    // Plain products and convolutions lowered as Saturn's loop nests
    // (`saturn run --no-opt`) measured 1.4-5 GFLOP/s (resnet18's 3x3
    // convolutions 5, transformer_encoder's matmuls 1.4): 3 used. Plain
    // max/avg pooling runs a scalar host loop: resnet18's 3x3 max_pool,
    // 1.8 M window reads, took 8.8 ms (0.2 GFLOP/s, 0.004 of 64).
    return CostModel(TargetSpec{"cpu",
                                64,
                                3,
                                150,
                                22,
                                1.0,
                                2.0,
                                {"blas.", "dnnl."},
                                {{"dnnl.conv_transpose", 0.65}},
                                {{"max_pool", 0.004}, {"avg_pool", 0.004}}});
  }
  if (name == "cuda") {
    // NVIDIA H200 datasheet figures, not measured (no GPU on the build
    // machine): 67 TFLOP/s FP32 (cuBLAS/cuDNN at 75% of it), HBM3e 4.8 TB/s
    // (4 TB/s achievable), 4 us per kernel launch or library call; plain
    // generated loop nests for contractions at 5 TFLOP/s.
    return CostModel(TargetSpec{"cuda", 30000, 5000, 50000, 4000, 4.0, 4.0, {"cublas.", "cudnn."}, {}, {}});
  }
  return std::nullopt;
}

ir::ValueType CostModel::priced(const ir::ValueType& t) const {
  ir::ValueType s = t;
  for (ir::Dim& d : s.shape)
    if (!d.is_static()) d = ir::Dim::of(std::max<std::int64_t>(1, d.c * static_cast<std::int64_t>(symbol_size) + d.k));
  return s;
}

namespace {

double elems(const ir::ValueType& t) { return static_cast<double>(ir::numel(ir::static_dims(t.shape))); }

}  // namespace

double CostModel::cost(const ir::OpDef& def, const ir::Attrs& attrs, std::span<const ir::ValueType> in,
                       const ir::ValueType& out, bool constant) const {
  std::vector<ir::ValueType> ins;
  double in_elems = 0, bytes = 0;
  for (const ir::ValueType& t : in) {
    ins.push_back(priced(t));
    in_elems += elems(ins.back());
    bytes += elems(ins.back()) * static_cast<double>(ir::dtype_size(t.dtype));
  }
  ir::ValueType o = priced(out);
  const double out_elems = elems(o);
  bytes += out_elems * static_cast<double>(ir::dtype_size(o.dtype));
  if (constant && is_folded(in_elems, out_elems)) return 0;

  const std::string& name = def.name;
  double work = 0;
  try {
    work = ir::work_of(def, attrs, ins, std::span<const ir::ValueType>(&o, 1));
  } catch (const ir::ShapeError&) {
    work = out_elems;
  }
  if (def.kind == ir::OpKind::Library) {
    bool ours = false;
    for (const std::string& p : spec_.libraries) ours |= name.rfind(p, 0) == 0;
    if (!ours) return kInfinity;
    double gflops = spec_.library_gflops;
    if (auto it = spec_.library_efficiency.find(name); it != spec_.library_efficiency.end()) gflops *= it->second;
    return std::max(work / (gflops * 1e3), bytes / (spec_.gbytes_per_s * 1e3)) + spec_.call_overhead_us;
  }
  if (def.view) return 0.01;
  if (name == "const" || name == "fill") return 0.0;
  double gflops = def.contraction ? spec_.naive_contract_gflops : spec_.loop_gflops;
  if (auto it = spec_.loop_efficiency.find(name); it != spec_.loop_efficiency.end()) gflops *= it->second;
  work *= def.unit_work;
  return std::max(work / (gflops * 1e3), bytes / (spec_.gbytes_per_s * 1e3)) + spec_.kernel_overhead_us;
}

Expected<double> graph_cost(const ir::Graph& g, const CostModel& m) {
  auto types = ir::infer_types(g);
  if (!types) return types.error();
  std::set<std::string> constant;
  for (const auto& [name, t] : g.initializers) constant.insert(name);
  double total = 0;
  for (const ir::Node& n : g.nodes) {
    const ir::OpDef* def = ir::OpRegistry::get().find(n.op);
    if (!def) return Diagnostic{SourceLoc{g.source, 0, 0}, ir::describe(n) + ": unknown op '" + n.op + "'"};
    std::vector<ir::ValueType> in;
    bool all_const = true;
    for (const std::string& i : n.inputs) {
      if (i.empty()) continue;
      in.push_back(types->at(i));
      all_const &= constant.count(i) != 0;
    }
    for (const std::string& o : n.outputs) {
      if (o.empty()) continue;
      total += m.cost(*def, n.attrs, in, types->at(o), all_const);
      if (all_const) constant.insert(o);
      break;  // a node is paid once, whatever its number of results
    }
  }
  return total;
}

}  // namespace saturn::extract
