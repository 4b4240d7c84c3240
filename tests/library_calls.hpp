// The graph a target's library substitution rules make of a test graph:
// each product, convolution and pooling whose operands a library takes
// renamed to its library op (blas.matmul, dnnl.conv, cudnn.max_pool, ...),
// as matmul-blas, conv-dnnl and their cuda twins rewrite it (the same
// guards), then a library convolution's only use by an add of a value of
// its result's type, or by a relu (or on the CPU an f32 clip, hard swish or
// SiLU), fused into it (conv-add-dnnl, conv-relu-dnnl, conv-add-relu-dnnl,
// conv-clip-dnnl, conv-hard-swish-dnnl, conv-silu-dnnl; of an add of two
// convolutions, the later one takes it), without saturating. Lowering tests compile both
// forms: the graph as written runs Saturn's loop nests, this one the
// libraries.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.hpp"
#include "ir/op.hpp"

namespace saturn::test {

inline ir::Graph as_library_calls(ir::Graph g, const std::string& target) {
  auto types = ir::infer_types(g);
  if (!types) return g;
  const bool cuda = target == "cuda";
  const std::string blas = cuda ? "cublas." : "blas.", dnn = cuda ? "cudnn." : "dnnl.";
  const std::set<ir::DType> product_types = {ir::DType::F32, ir::DType::F64, ir::DType::F16, ir::DType::BF16};
  const std::set<ir::DType> dnn_types = {ir::DType::F32, ir::DType::F16, ir::DType::BF16};
  for (ir::Node& n : g.nodes) {
    if (n.inputs.empty() || n.inputs[0].empty()) continue;
    const ir::ValueType& x = types->at(n.inputs[0]);
    const std::size_t rank = x.shape.size();
    if ((n.op == "matmul" || n.op == "gemm") && product_types.count(x.dtype)) {
      n.op = blas + n.op;
    } else if ((n.op == "conv" || n.op == "conv_transpose" || n.op == "avg_pool" ||
                (n.op == "max_pool" && n.attrs.i("storage_order", 0) == 0)) &&
               dnn_types.count(x.dtype) && rank >= 3 && rank <= 5) {
      n.op = dnn + n.op;
    }
  }
  std::map<std::string, int> uses;
  for (const ir::Node& n : g.nodes)
    for (const std::string& i : n.inputs) ++uses[i];
  for (const std::string& o : g.outputs) ++uses[o];
  std::map<std::string, std::size_t> producer;
  std::set<std::size_t> dead;  // a SiLU's convolution and sigmoid, now in its conv_silu
  // Node n becomes `op` over the inputs of the convolution computing
  // value v (its only use), plus `skip`.
  auto take = [&](ir::Node& n, const std::string& v, const std::string& op, const std::string& skip,
                  const ir::Attrs& more = {}) {
    auto p = producer.find(v);
    if (p == producer.end() || uses[v] != 1) return false;
    const ir::Node& conv = g.nodes[p->second];
    if (conv.op != dnn + "conv" && !(skip.empty() && conv.op == dnn + "conv_add")) return false;
    ir::Node fused = conv;
    fused.op = conv.op == dnn + "conv_add" ? dnn + "conv_add_relu" : op;
    fused.outputs = n.outputs;
    for (const auto& [k, a] : more.all()) fused.attrs.set(k, a);
    if (!skip.empty()) {
      fused.inputs.resize(3);
      fused.inputs.push_back(skip);
    }
    n = std::move(fused);
    return true;
  };
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& n = g.nodes[i];
    if (n.op == "add" && n.inputs.size() == 2 && n.outputs.size() == 1) {
      const ir::ValueType& r = types->at(n.outputs[0]);
      std::size_t first = 0;
      if (producer.count(n.inputs[0]) && producer.count(n.inputs[1]) &&
          producer.at(n.inputs[1]) > producer.at(n.inputs[0]))
        first = 1;
      for (std::size_t k : {first, 1 - first}) {
        const ir::ValueType& s = types->at(n.inputs[1 - k]);
        if (s.dtype == r.dtype && s.shape == r.shape && n.inputs[0] != n.inputs[1] &&
            take(n, n.inputs[k], dnn + "conv_add", n.inputs[1 - k]))
          break;
      }
    } else if (n.op == "relu" && n.inputs.size() == 1) {
      take(n, n.inputs[0], dnn + "conv_relu", "");
    } else if (!cuda && n.op == "clip" && n.inputs.size() == 1 && types->at(n.inputs[0]).dtype == ir::DType::F32 &&
               producer.count(n.inputs[0]) && g.nodes[producer.at(n.inputs[0])].op == dnn + "conv") {
      take(n, n.inputs[0], dnn + "conv_clip", "", n.attrs);
    } else if (!cuda && n.op == "hard_swish" && types->at(n.inputs[0]).dtype == ir::DType::F32 &&
               producer.count(n.inputs[0]) && g.nodes[producer.at(n.inputs[0])].op == dnn + "conv") {
      take(n, n.inputs[0], dnn + "conv_hard_swish", "");
    } else if (!cuda && n.op == "mul" && n.inputs.size() == 2) {
      // mul(y, sigmoid(y)) or mul(sigmoid(y), y), y a convolution's (its
      // only uses) and the sigmoid's result used once: conv_silu.
      for (std::size_t k : {0, 1}) {
        const std::string &y = n.inputs[k], &s = n.inputs[1 - k];
        if (!producer.count(y) || !producer.count(s) || uses[y] != 2 || uses[s] != 1) continue;
        const ir::Node &conv = g.nodes[producer.at(y)], &sig = g.nodes[producer.at(s)];
        if (conv.op != dnn + "conv" || types->at(y).dtype != ir::DType::F32 || sig.op != "sigmoid" ||
            sig.inputs != std::vector<std::string>{y})
          continue;
        dead.insert(producer.at(y));
        dead.insert(producer.at(s));
        ir::Node fused = conv;
        fused.op = dnn + "conv_silu";
        fused.outputs = n.outputs;
        n = std::move(fused);
        break;
      }
    }
    for (const std::string& o : n.outputs) producer[o] = i;
  }
  std::vector<ir::Node> live;
  for (std::size_t i = 0; i < g.nodes.size(); ++i)
    if (!dead.count(i)) live.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(live);
  return g;
}

}  // namespace saturn::test
