// Writes the bundled example models (docs/examples/models/*.onnx): small
// versions of the benchmark models, used by the end-to-end tests and the
// README's demo. Run: build/bench/make_models docs/examples/models
#include <cmath>
#include <iostream>

#include "bench/models.hpp"
#include "ir/onnx_import.hpp"

int main(int argc, char** argv) {
  using namespace saturn;
  std::string dir = argc > 1 ? argv[1] : "docs/examples/models";
  struct Model {
    const char* file;
    ir::Graph graph;
  };
  Model models[] = {
      {"mlp.onnx", models::mlp(4, {64, 128, 64, 10})},
      {"transformer_layer.onnx", models::transformer(1, 1, 16, 64, 4, 256)},
      {"resnet_small.onnx", models::resnet(16, {8, 16}, 1, 10)},
  };
  for (Model& m : models) {
    auto w = ir::export_onnx_file(m.graph, dir + "/" + m.file);
    if (!w) {
      std::cerr << m.file << ": " << w.error().to_string() << "\n";
      return 1;
    }
    std::cout << "wrote " << dir << "/" << m.file << " (" << m.graph.nodes.size() << " nodes)\n";
    // A seeded input for each model (what the demo runs it on).
    const ir::GraphValue& in = m.graph.inputs.at(0);
    ir::Tensor x(in.type.dtype, ir::static_dims(in.type.shape));
    for (std::size_t i = 0; i < x.numel(); ++i) x.set(i, std::sin(0.37 * static_cast<double>(i)));
    std::string stem = m.file;
    stem.resize(stem.size() - 5);
    auto p = ir::write_tensor_pb(x, dir + "/" + stem + ".input.pb", in.name);
    if (!p) {
      std::cerr << p.error().to_string() << "\n";
      return 1;
    }
  }
  return 0;
}
