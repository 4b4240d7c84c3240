#include "tools/calibration_probe.hpp"

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "tools/measure.hpp"

namespace saturn::cli {

ir::Graph calibration_probe(bool weights_from_memory) {
  ir::Graph g;
  g.name = weights_from_memory ? "probe, weights from memory" : "probe";
  std::uint32_t seed = 1;
  auto value = [](const std::vector<std::int64_t>& dims) { return ir::ValueType{ir::DType::F32, ir::shape_of(dims)}; };
  auto layer = [&](const std::string& op, const ir::ValueType& x, const ir::ValueType& w, const ir::Attrs& attrs,
                   bool relu) {
    const std::string id = std::to_string(g.nodes.size());
    g.inputs.push_back(ir::GraphValue{"x" + id, x});
    g.initializers.emplace("w" + id, random_tensor(w, ++seed));
    ir::Node n;
    n.name = op + id;
    n.op = op;
    n.inputs = {"x" + id, "w" + id};
    n.outputs = {"y" + id};
    n.attrs = attrs;
    g.nodes.push_back(n);
    if (relu) {
      ir::Node r;
      r.name = "relu" + id;
      r.op = "relu";
      r.inputs = n.outputs;
      r.outputs = {"r" + id};
      g.nodes.push_back(r);
    }
    g.outputs.push_back(relu ? "r" + id : "y" + id);
  };
  // Convolutions: channels and size of each stage (56x56 to 7x7; 384
  // channels at 7x7, where ResNets have 512, to keep the weights in the
  // cache).
  const std::vector<std::pair<std::int64_t, std::int64_t>> stages{{64, 56}, {128, 28}, {256, 14}, {384, 7}};
  auto conv = [&](std::int64_t c, std::int64_t hw, std::int64_t k, std::int64_t groups) {
    ir::Attrs a;
    a.set("kernel_shape", std::vector<std::int64_t>{k, k});
    a.set("pads", std::vector<std::int64_t>(4, k / 2));
    if (groups > 1) a.set("group", groups);
    layer("conv", value({1, c, hw, hw}), value({c, c / groups, k, k}), a, true);
  };
  for (const auto& [c, hw] : stages) {
    conv(c, hw, 3, 1);      // spatial
    conv(c, hw, 1, 1);      // pointwise
    conv(c, hw, 3, c);      // depthwise
    conv(c, hw, 3, c / 8);  // grouped (RegNet's groups of 8 channels)
  }
  // Products of rows (a transformer's projections and MLP) and of one row
  // (a classifier).
  std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> products{
      {128, 256, 1024}, {197, 768, 768}, {64, 512, 2048}, {1, 1024, 1000}, {1, 512, 1000}, {1, 768, 1000}};
  if (weights_from_memory) products.emplace_back(1, 4096, 2048);
  for (const auto& [m, k, n] : products) layer("matmul", value({m, k}), value({k, n}), {}, false);
  return g;
}

}  // namespace saturn::cli
