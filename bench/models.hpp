// Model builders for benchmarks and end-to-end tests: an MLP, a transformer
// (BERT-style) encoder, and a ResNet-style CNN, as ir::Graphs written the
// way ONNX exporters write them (MatMul + Add, Softmax, LayerNormalization,
// Gelu, Conv + BatchNormalization + Relu). Weights are seeded pseudo-random,
// so every build makes the same models.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.hpp"

namespace saturn::models {

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name, std::uint32_t seed = 1) : rng_(seed) { g_.name = std::move(name); }

  std::string input(const std::string& name, std::vector<std::int64_t> dims, ir::DType dtype = ir::DType::F32) {
    g_.inputs.push_back({name, {dtype, ir::shape_of(dims)}});
    g_.declared_inputs.push_back(name);
    return name;
  }
  // A constant with values uniform in [-scale, scale] (zeros: scale 0).
  std::string weight(std::vector<std::int64_t> dims, double scale, ir::DType dtype = ir::DType::F32) {
    ir::Tensor t(dtype, dims);
    std::uniform_real_distribution<double> u(-scale, scale);
    if (scale > 0)
      for (std::size_t i = 0; i < t.numel(); ++i) t.set(i, u(rng_));
    return add_initializer(std::move(t));
  }
  std::string fill(std::vector<std::int64_t> dims, double value, ir::DType dtype = ir::DType::F32) {
    ir::Tensor t(dtype, dims);
    for (std::size_t i = 0; i < t.numel(); ++i) t.set(i, value);
    return add_initializer(std::move(t));
  }
  std::string op(const std::string& op, std::vector<std::string> inputs, ir::Attrs attrs = {}) {
    std::string out = op;
    out.append("_").append(std::to_string(g_.nodes.size()));
    g_.nodes.push_back(ir::Node{out, op, std::move(inputs), {out}, std::move(attrs), op});
    return out;
  }
  // An op with several results, named after the node: NAME.0, NAME.1, ...
  std::vector<std::string> op_results(const std::string& op, std::vector<std::string> inputs, std::size_t results,
                                      ir::Attrs attrs = {}) {
    std::string name = op;
    name.append("_").append(std::to_string(g_.nodes.size()));
    std::vector<std::string> outs;
    for (std::size_t k = 0; k < results; ++k) outs.push_back(name + "." + std::to_string(k));
    g_.nodes.push_back(ir::Node{name, op, std::move(inputs), outs, std::move(attrs), op});
    return outs;
  }
  ir::Graph finish(std::vector<std::string> outputs) {
    g_.outputs = std::move(outputs);
    return std::move(g_);
  }

  // y = x W + b (as exporters write nn.Linear on rank-3 activations).
  std::string linear(const std::string& x, std::int64_t in, std::int64_t out, bool random_weights = true) {
    double s = random_weights ? 1.0 / std::sqrt(static_cast<double>(in)) : 0.0;
    return op("add", {op("matmul", {x, weight({in, out}, s)}), weight({out}, s)});
  }
  std::string layer_norm(const std::string& x, std::int64_t d) {
    ir::Attrs a;
    a.set("axis", std::int64_t{-1});
    a.set("epsilon", 1e-5);
    return op("layer_norm", {x, fill({d}, 1.0), fill({d}, 0.0)}, a);
  }
  std::string conv_bn(const std::string& x, std::int64_t cin, std::int64_t cout, std::int64_t k, std::int64_t stride,
                      bool random_weights = true) {
    ir::Attrs a;
    a.set("kernel_shape", std::vector<std::int64_t>{k, k});
    a.set("strides", std::vector<std::int64_t>{stride, stride});
    a.set("pads", std::vector<std::int64_t>{k / 2, k / 2, k / 2, k / 2});
    double s = random_weights ? 1.0 / std::sqrt(static_cast<double>(cin * k * k)) : 0.0;
    std::string c = op("conv", {x, weight({cout, cin, k, k}, s)}, a);
    ir::Attrs bn;
    bn.set("epsilon", 1e-5);
    return op("batch_norm", {c, fill({cout}, 1.0), weight({cout}, 0.1), weight({cout}, 0.1), fill({cout}, 0.9)}, bn);
  }

 private:
  std::string add_initializer(ir::Tensor t) {
    std::string name("w");  // appended: GCC 12 warns falsely on "w" + s
    name.append(std::to_string(g_.initializers.size()));
    g_.initializers.emplace(name, std::move(t));
    return name;
  }
  ir::Graph g_;
  std::mt19937 rng_;
};

inline ir::Attrs ints_attr(const char* name, std::vector<std::int64_t> v) {
  ir::Attrs a;
  a.set(name, std::move(v));
  return a;
}

// MLP sizes[0] -> ... -> sizes.back(), ReLU between layers.
inline ir::Graph mlp(std::int64_t batch, const std::vector<std::int64_t>& sizes) {
  GraphBuilder b("mlp");
  std::string x = b.input("x", {batch, sizes[0]});
  for (std::size_t i = 1; i < sizes.size(); ++i) {
    x = b.linear(x, sizes[i - 1], sizes[i]);
    if (i + 1 < sizes.size()) x = b.op("relu", {x});
  }
  return b.finish({x});
}

// One BERT encoder layer (post-norm) on x [batch, seq, d].
inline std::string encoder_layer(GraphBuilder& b, const std::string& x, std::int64_t batch, std::int64_t seq,
                                 std::int64_t d, std::int64_t heads, std::int64_t ffn, bool random_weights) {
  const std::int64_t dh = d / heads;
  auto split_heads = [&](const std::string& t, std::vector<std::int64_t> perm) {
    std::string r = b.op("reshape", {t}, ints_attr("shape", {batch, seq, heads, dh}));
    return b.op("transpose", {r}, ints_attr("perm", std::move(perm)));
  };
  std::string q = split_heads(b.linear(x, d, d, random_weights), {0, 2, 1, 3});
  std::string k = split_heads(b.linear(x, d, d, random_weights), {0, 2, 3, 1});
  std::string v = split_heads(b.linear(x, d, d, random_weights), {0, 2, 1, 3});
  std::string scores = b.op("div", {b.op("matmul", {q, k}), b.fill({}, std::sqrt(static_cast<double>(dh)))});
  ir::Attrs sm;
  sm.set("axis", std::int64_t{-1});
  std::string p = b.op("softmax", {scores}, sm);
  std::string ctx = b.op("transpose", {b.op("matmul", {p, v})}, ints_attr("perm", {0, 2, 1, 3}));
  ctx = b.op("reshape", {ctx}, ints_attr("shape", {batch, seq, d}));
  std::string h = b.layer_norm(b.op("add", {b.linear(ctx, d, d, random_weights), x}), d);
  std::string f = b.op("gelu", {b.linear(h, d, ffn, random_weights)});
  return b.layer_norm(b.op("add", {b.linear(f, ffn, d, random_weights), h}), d);
}

inline ir::Graph transformer(std::int64_t layers, std::int64_t batch, std::int64_t seq, std::int64_t d,
                             std::int64_t heads, std::int64_t ffn, bool random_weights = true) {
  GraphBuilder b(layers == 1 ? "transformer_layer" : "transformer");
  std::string x = b.input("x", {batch, seq, d});
  for (std::int64_t l = 0; l < layers; ++l) x = encoder_layer(b, x, batch, seq, d, heads, ffn, random_weights);
  return b.finish({x});
}

// ResNet-style CNN: a stem, `blocks` basic residual blocks per stage with
// the given widths (stride 2 between stages), global pooling, a classifier.
inline ir::Graph resnet(std::int64_t image, const std::vector<std::int64_t>& widths, std::int64_t blocks,
                        std::int64_t classes, bool random_weights = true) {
  GraphBuilder b("resnet");
  std::string x = b.input("x", {1, 3, image, image});
  x = b.op("relu", {b.conv_bn(x, 3, widths[0], 3, 1, random_weights)});
  std::int64_t c = widths[0];
  for (std::size_t s = 0; s < widths.size(); ++s) {
    for (std::int64_t i = 0; i < blocks; ++i) {
      const std::int64_t stride = (s > 0 && i == 0) ? 2 : 1;
      std::string y = b.op("relu", {b.conv_bn(x, c, widths[s], 3, stride, random_weights)});
      y = b.conv_bn(y, widths[s], widths[s], 3, 1, random_weights);
      std::string skip = x;
      if (stride != 1 || c != widths[s]) skip = b.conv_bn(x, c, widths[s], 1, stride, random_weights);
      x = b.op("relu", {b.op("add", {y, skip})});
      c = widths[s];
    }
  }
  x = b.op("global_avg_pool", {x});
  x = b.op("flatten", {x});
  ir::Attrs g;
  g.set("transB", std::int64_t{1});
  double s = random_weights ? 1.0 / std::sqrt(static_cast<double>(c)) : 0.0;
  x = b.op("gemm", {x, b.weight({classes, c}, s), b.weight({classes}, s)}, g);
  return b.finish({x});
}

// ResNet-18 (batch 1): 7x7/2 stem and 3x3/2 max pool, four stages of two
// basic blocks (64, 128, 256, 512 channels), global pooling, 1000 classes.
inline ir::Graph resnet18(std::int64_t image = 224, bool random_weights = true) {
  GraphBuilder b("resnet18");
  std::string x = b.input("x", {1, 3, image, image});
  x = b.op("relu", {b.conv_bn(x, 3, 64, 7, 2, random_weights)});
  ir::Attrs pool;
  pool.set("kernel_shape", std::vector<std::int64_t>{3, 3});
  pool.set("strides", std::vector<std::int64_t>{2, 2});
  pool.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
  x = b.op("max_pool", {x}, pool);
  std::int64_t c = 64;
  for (std::int64_t w : {64, 128, 256, 512}) {
    for (int i = 0; i < 2; ++i) {
      const std::int64_t stride = (w != 64 && i == 0) ? 2 : 1;
      std::string y = b.op("relu", {b.conv_bn(x, c, w, 3, stride, random_weights)});
      y = b.conv_bn(y, w, w, 3, 1, random_weights);
      std::string skip = (stride != 1 || c != w) ? b.conv_bn(x, c, w, 1, stride, random_weights) : x;
      x = b.op("relu", {b.op("add", {y, skip})});
      c = w;
    }
  }
  x = b.op("flatten", {b.op("global_avg_pool", {x})});
  ir::Attrs g;
  g.set("transB", std::int64_t{1});
  double s = random_weights ? 1.0 / std::sqrt(512.0) : 0.0;
  x = b.op("gemm", {x, b.weight({1000, 512}, s), b.weight({1000}, s)}, g);
  return b.finish({x});
}

// Attention scores [12 384 384] masked two ways before the softmax, as
// exported models do: a bool causal mask chosen with where (GPT-2) and an
// int64 key-padding mask cast to f32, (1 - m) * -10000, added (BERT).
inline ir::Graph masked_softmax() {
  models::GraphBuilder b("masked_softmax");
  std::string scores = b.input("scores", {12, 384, 384});
  std::string causal = b.input("causal", {384, 384}, ir::DType::Bool);
  std::string keep = b.input("keep", {1, 384}, ir::DType::I64);
  ir::Attrs to;
  to.set("to", std::string("f32"));
  std::string pad = b.op("mul", {b.op("sub", {b.fill({}, 1.0), b.op("cast", {keep}, to)}), b.fill({}, -10000.0)});
  std::string masked = b.op("add", {b.op("where", {causal, scores, b.fill({}, -1e9)}), pad});
  ir::Attrs sm;
  sm.set("axis", std::int64_t{-1});
  return b.finish({b.op("softmax", {masked}, sm)});
}

// A half-precision feed-forward layer, gelu(x W) for 512 tokens of width
// 4096 (f16 throughout): a product for the tensor cores.
inline ir::Graph ffn_f16() {
  models::GraphBuilder b("ffn_f16");
  std::string x = b.input("x", {512, 4096}, ir::DType::F16);
  return b.finish({b.op("gelu", {b.op("matmul", {x, b.weight({4096, 4096}, 0.02, ir::DType::F16)})})});
}

// BERT-base's embeddings for 128 tokens: rows of the [30522 768] word table
// picked by i64 ids (a gather), plus position embeddings, then layer_norm.
inline ir::Graph embedding() {
  models::GraphBuilder b("embedding");
  std::string ids = b.input("ids", {1, 128}, ir::DType::I64);
  std::string words = b.op("gather", {b.weight({30522, 768}, 0.05), ids});
  return b.finish({b.layer_norm(b.op("add", {words, b.weight({1, 128, 768}, 0.05)}), 768)});
}

// Inputs for a benchmark run: floats uniform in [-1, 1]; token ids (an input
// named "ids") 0 to 999; other bools and integers (masks) 0 or 1, about half
// each.
inline std::vector<ir::Tensor> bench_inputs(const ir::Graph& g, std::uint32_t seed = 7) {
  std::vector<ir::Tensor> inputs;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const ir::GraphValue& in : g.inputs) {
    ir::Tensor t(in.type.dtype, ir::static_dims(in.type.shape));
    for (std::size_t i = 0; i < t.numel(); ++i) {
      const float x = u(rng);
      t.set(i, ir::is_float(in.type.dtype) ? x
               : in.name == "ids"          ? std::floor(500.0f * (x + 1.0f))
                                           : static_cast<float>(x > 0));
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

}  // namespace saturn::models
