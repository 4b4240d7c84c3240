// Export: an ir::Graph as an ONNX model (opset 20), so an optimized graph
// can be run by other tools. Each registry op maps back to ONNX; attributes
// that ONNX takes as operands (shapes, axes, pads, ...) become initializers.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ir/onnx_import.hpp"
#include "ir/onnx_ops.hpp"
#include "ir/onnx_write.hpp"
#include "ir/resize.hpp"

namespace saturn::ir {

namespace {

constexpr int kOpset = 20;

void set_type(onnx::ValueInfoProto* v, const std::string& name, const ValueType& t) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(t.dtype));
  auto* shape = tt->mutable_shape();
  for (const Dim& d : t.shape) {
    auto* dim = shape->add_dim();
    if (d.is_static())
      dim->set_dim_value(d.k);
    else
      dim->set_dim_param(d.to_string());
  }
}

// The model without its initializers, which are written from the graph's
// tensors (onnx_write.hpp).
struct ExportedModel {
  onnx::ModelProto model;
  std::vector<NamedTensor> initializers;
};

class Exporter {
 public:
  Exporter(const Graph& g, const std::map<std::string, ValueType>& types) : g_(g), types_(types) {}

  ExportedModel run() {
    onnx::ModelProto m;
    m.set_ir_version(9);
    m.set_producer_name("saturn");
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(kOpset);
    gp_ = m.mutable_graph();
    gp_->set_name(g_.name.empty() ? "main" : g_.name);
    for (const GraphValue& in : g_.inputs) set_type(gp_->add_input(), in.name, in.type);
    for (const auto& [name, t] : g_.initializers) initializers_.push_back({name, t});
    for (const Node& n : g_.nodes) node(n);
    for (const std::string& out : g_.outputs) set_type(gp_->add_output(), out, types_.at(out));
    return {std::move(m), std::move(initializers_)};
  }

 private:
  onnx::NodeProto* emit(const std::string& op, const Node& n, std::vector<std::string> ins,
                        std::vector<std::string> outs) {
    auto* p = gp_->add_node();
    p->set_op_type(op);
    // ONNX wants node names unique (ONNX Runtime refuses a model without):
    // a node written as several (a fused epilogue, a quantized product)
    // numbers the later ones.
    std::string name = n.name.empty() ? op : n.name;
    while (!node_names_.insert(name).second) name = (n.name.empty() ? op : n.name) + "_" + std::to_string(counter_++);
    p->set_name(name);
    for (auto& i : ins) p->add_input(i);
    for (auto& o : outs) p->add_output(o);
    return p;
  }
  std::string constant(const Tensor& t, const std::string& hint) {
    std::string name = hint + "__c" + std::to_string(counter_++);
    initializers_.push_back({name, t});
    return name;
  }
  // Clip of x (element type t) to the bounds given as attributes, written
  // as ONNX's optional operands.
  void clip(const Node& n, const std::string& x, DType t, const Attrs& bounds, const std::vector<std::string>& outs) {
    const std::string& y = outs[0];
    std::string lo = bounds.has("min") ? constant(Tensor::scalar(t, bounds.f("min", 0)), y) : std::string();
    std::string hi = bounds.has("max") ? constant(Tensor::scalar(t, bounds.f("max", 0)), y) : std::string();
    emit("Clip", n, {x, lo, hi}, outs);
  }
  std::string ints(const std::vector<std::int64_t>& v, const std::string& hint) {
    return constant(Tensor::of_ints(DType::I64, {static_cast<std::int64_t>(v.size())}, v), hint);
  }
  static void attr(onnx::NodeProto* p, const std::string& name, const AttrValue& v) {
    auto* a = p->add_attribute();
    a->set_name(name);
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::int64_t>) {
            a->set_type(onnx::AttributeProto::INT);
            a->set_i(x);
          } else if constexpr (std::is_same_v<T, double>) {
            a->set_type(onnx::AttributeProto::FLOAT);
            a->set_f(static_cast<float>(x));
          } else if constexpr (std::is_same_v<T, std::string>) {
            a->set_type(onnx::AttributeProto::STRING);
            a->set_s(x);
          } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
            a->set_type(onnx::AttributeProto::INTS);
            for (auto i : x) a->add_ints(i);
          } else if constexpr (std::is_same_v<T, std::vector<double>>) {
            a->set_type(onnx::AttributeProto::FLOATS);
            for (auto f : x) a->add_floats(static_cast<float>(f));
          } else {
            a->set_type(onnx::AttributeProto::TENSOR);
            *a->mutable_t() = tensor_proto(x, "");
          }
        },
        v);
  }
  // Copies the attributes that keep their name and form in ONNX.
  static void copy(onnx::NodeProto* p, const Node& n, std::initializer_list<const char*> names) {
    for (const char* k : names)
      if (n.attrs.has(k)) attr(p, k, n.attrs.all().at(k));
  }
  DType dtype_of(const std::string& v) const {
    auto own = intermediate_types_.find(v);
    return own != intermediate_types_.end() ? own->second : types_.at(v).dtype;
  }

  void node(const Node& n);
  void resize(const Node& n);
  void quantization(const Node& n, bool quantize, const ValueType& x_type);
  std::string cast(const Node& n, const std::string& v, DType t) {
    if (dtype_of(v) == t) return v;
    const std::string y = v + "__as_" + dtype_name(t) + std::to_string(counter_++);
    attr(emit("Cast", n, {v}, {y}), "to", std::int64_t{dtype_to_onnx(t)});
    return y;
  }
  static Tensor floats(const std::vector<double>& v) {
    Tensor t(DType::F32, {static_cast<std::int64_t>(v.size())});
    for (std::size_t i = 0; i < v.size(); ++i) t.set(i, v[i]);
    return t;
  }

  const Graph& g_;
  const std::map<std::string, ValueType>& types_;
  std::map<std::string, DType> intermediate_types_;  // values the export itself names (a fused call's steps)
  onnx::GraphProto* gp_ = nullptr;
  std::vector<NamedTensor> initializers_;
  int counter_ = 0;
  std::unordered_set<std::string> node_names_;
};

// Resize with the operand that reproduces the node's sizes and scales
// exactly on import (ir/resize.hpp's resize_target): sizes when every scale
// is size / in, else scales when f32 holds them, else sizes under a
// keep_aspect_ratio_policy that resolves to them.
void Exporter::resize(const Node& n) {
  const std::string& x = n.inputs[0];
  const std::string& y = n.outputs[0];
  if (!is_static(types_.at(x).shape))
    throw DiagnosticError{
        Diagnostic{SourceLoc{g_.source, 0, 0}, describe(n) + ": resize exports with its operand's static shape only"}};
  const std::vector<std::int64_t> in = static_dims(types_.at(x).shape);
  const ResizeSpec s = resize_spec(n.attrs, in);
  const ResizeTarget want{s.sizes, s.scales};
  // The axes that change (all of them when none does), with their sizes,
  // scales and roi.
  std::vector<std::int64_t> axes, sizes;
  std::vector<double> f32_scales;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (s.sizes[i] != in[i] || s.scales[i] != 1.0 || s.roi[i] != 0.0 || s.roi[in.size() + i] != 1.0)
      axes.push_back(static_cast<std::int64_t>(i));
  if (axes.empty())
    for (std::size_t i = 0; i < in.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  std::vector<double> roi_start, roi_end;
  for (std::int64_t ax : axes) {
    sizes.push_back(s.sizes[static_cast<std::size_t>(ax)]);
    f32_scales.push_back(static_cast<float>(s.scales[static_cast<std::size_t>(ax)]));
    roi_start.push_back(s.roi[static_cast<std::size_t>(ax)]);
    roi_end.push_back(s.roi[in.size() + static_cast<std::size_t>(ax)]);
  }
  roi_start.insert(roi_start.end(), roi_end.begin(), roi_end.end());
  auto gives = [&](const std::vector<double>& scales, const std::vector<std::int64_t>& sz, const char* policy) {
    try {
      return resize_target(in, axes, scales, sz, policy) == want;
    } catch (const ShapeError&) {
      return false;
    }
  };
  const std::string roi_in = s.transform == "tf_crop_and_resize" ? constant(floats(roi_start), y) : std::string();
  onnx::NodeProto* p = nullptr;
  if (gives({}, sizes, "stretch")) {
    p = emit("Resize", n, {x, roi_in, std::string(), ints(sizes, y)}, {y});
  } else if (gives(f32_scales, {}, "stretch")) {
    p = emit("Resize", n, {x, roi_in, constant(floats(f32_scales), y)}, {y});
  } else {
    for (const char* policy : {"not_larger", "not_smaller"})
      if (!p && gives({}, sizes, policy)) {
        p = emit("Resize", n, {x, roi_in, std::string(), ints(sizes, y)}, {y});
        attr(p, "keep_aspect_ratio_policy", std::string(policy));
      }
    if (!p)
      throw DiagnosticError{Diagnostic{SourceLoc{g_.source, 0, 0},
                                       describe(n) + ": no ONNX Resize operand reproduces its sizes and scales"}};
  }
  if (axes.size() != in.size()) attr(p, "axes", axes);
  copy(p, n,
       {"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
        "extrapolation_value", "antialias"});
}

// QuantizeLinear / DequantizeLinear take a scale and zero point per tensor
// or per axis (opset 20 has no blocks): the registry's broadcast operands
// are reshaped back to that form where they have it, else the op is written
// as the arithmetic it does (Cast, Sub, Mul / Div, Round, Add, Clip, Cast).
void Exporter::quantization(const Node& n, bool quantize, const ValueType& x_type) {
  const std::string &x = n.inputs[0], &y = n.outputs[0];
  const std::vector<std::int64_t> xd = static_dims(x_type.shape);
  // The axis along which `v` varies (-1: one value), or nullopt.
  auto axis_of = [&](const std::string& v) -> std::optional<std::int64_t> {
    const std::vector<std::int64_t> d = static_dims(types_.at(v).shape);
    if (numel(d) == 1) return -1;
    std::optional<std::int64_t> k;
    for (std::size_t i = 0; i < d.size(); ++i)
      if (d[i] != 1) {
        if (k || d.size() != xd.size() || d[i] != xd[i]) return std::nullopt;
        k = static_cast<std::int64_t>(i);
      }
    return k;
  };
  const std::optional<std::int64_t> sa = axis_of(n.inputs[1]), za = axis_of(n.inputs[2]);
  if (sa && za && (*za == -1 || *za == *sa)) {
    const std::vector<std::int64_t> shape =
        *sa < 0 ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{xd[static_cast<std::size_t>(*sa)]};
    auto as_param = [&](const std::string& v, std::int64_t axis) {
      const std::string r = v + "__param" + std::to_string(counter_++);
      if (axis == *sa)
        emit("Reshape", n, {v, ints(shape, y)}, {r});
      else  // one zero point for a scale per axis
        emit("Expand", n, {v, ints(shape, y)}, {r});
      return r;
    };
    auto* p = emit(quantize ? "QuantizeLinear" : "DequantizeLinear", n,
                   {x, as_param(n.inputs[1], *sa), as_param(n.inputs[2], *za)}, {y});
    if (*sa >= 0) attr(p, "axis", *sa);
    if (quantize && is_minifloat(dtype_of(n.inputs[2]))) copy(p, n, {"saturate"});
    return;
  }
  const DType scale_t = dtype_of(n.inputs[1]), q = dtype_of(n.inputs[2]);
  if (!quantize) {
    const std::string d = y + "__diff", f = y + "__f32";
    emit("Sub", n, {x_type.dtype == DType::F32 ? x : cast(n, x, DType::F32), cast(n, n.inputs[2], DType::F32)}, {d});
    emit("Mul", n, {d, cast(n, n.inputs[1], DType::F32)}, {scale_t == DType::F32 ? y : f});
    if (scale_t != DType::F32) attr(emit("Cast", n, {f}, {y}), "to", std::int64_t{dtype_to_onnx(scale_t)});
    return;
  }
  if (is_minifloat(q))
    throw DiagnosticError{Diagnostic{SourceLoc{g_.source, 0, 0}, describe(n) + ": a blocked quantization to " +
                                                                     dtype_name(q) + " has no ONNX form at opset " +
                                                                     std::to_string(kOpset)}};
  const DType t = x_type.dtype;
  const std::string quotient = y + "__quotient", rounded = y + "__rounded", shifted = y + "__shifted",
                    clipped = y + "__clipped";
  emit("Div", n, {x, cast(n, n.inputs[1], t)}, {quotient});
  emit("Round", n, {quotient}, {rounded});
  emit("Add", n, {rounded, cast(n, n.inputs[2], t)}, {shifted});
  const int bits = integer_bits(q);
  const double lo = is_unsigned(q) ? 0 : -std::ldexp(1.0, bits - 1),
               hi = is_unsigned(q) ? std::ldexp(1.0, bits) - 1 : std::ldexp(1.0, bits - 1) - 1;
  emit("Clip", n, {shifted, constant(Tensor::scalar(t, lo), y), constant(Tensor::scalar(t, hi), y)}, {clipped});
  attr(emit("Cast", n, {clipped}, {y}), "to", std::int64_t{dtype_to_onnx(q)});
}

void Exporter::node(const Node& n) {
  // Library calls export as the op whose semantics they have (a Winograd
  // or channels-last call as its `conv`).
  const OpDef* def = OpRegistry::get().find(n.op);
  const std::string op = def && def->kind == OpKind::Library ? def->semantics() : n.op;
  static const std::unordered_map<std::string, const OnnxOpName*> by_op = [] {
    std::unordered_map<std::string, const OnnxOpName*> m;
    for (const OnnxOpName& row : onnx_op_names()) m[row.op] = &row;
    return m;
  }();
  if (def && (def->sum_epilogue || def->activation != Activation::None)) {
    // A fused epilogue (conv_add_relu): the convolution, then Add, then the
    // activation, each written as the composite op it is.
    const EpilogueAttrs attrs = split_epilogue_attrs(def->activation, n.attrs);
    Node conv = n;
    conv.op = def->library_of;
    conv.inputs.resize(std::min<std::size_t>(n.inputs.size(), 3));
    conv.attrs = attrs.conv;
    conv.outputs = {n.outputs[0] + "__conv"};
    node(conv);
    std::string y = conv.outputs[0];
    const bool act = def->activation != Activation::None;
    if (def->sum_epilogue) {
      const std::string sum = act ? n.outputs[0] + "__add" : n.outputs[0];
      emit("Add", n, {y, n.inputs.at(3)}, {sum});
      y = sum;
    }
    // (each intermediate has the result's type)
    intermediate_types_.emplace(y, dtype_of(n.outputs[0]));
    for (const Node& step : activation_nodes(def->activation, attrs.activation, y, n.outputs, n)) {
      intermediate_types_.emplace(step.outputs[0], dtype_of(n.outputs[0]));
      node(step);
    }
    return;
  }
  if (def && def->semantics().rfind("quantized_", 0) == 0) {
    // quantized_conv / quantized_matmul (and their int8 calls): what they
    // are defined as, DequantizeLinear of both operands, the product,
    // QuantizeLinear.
    const std::string& y = n.outputs[0];
    Node dx{n.name, "dequantize_linear", {n.inputs[0], n.inputs[1], n.inputs[2]}, {y + "__x"}, {}, ""};
    Node dw{n.name, "dequantize_linear", {n.inputs[3], n.inputs[4], n.inputs[5]}, {y + "__w"}, {}, ""};
    Node product{n.name,
                 def->semantics().substr(std::string("quantized_").size()),
                 {dx.outputs[0], dw.outputs[0]},
                 {y + "__product"},
                 n.attrs,
                 ""};
    if (n.inputs.size() > 8 && !n.inputs[8].empty()) product.inputs.push_back(n.inputs[8]);
    Node q{n.name, "quantize_linear", {product.outputs[0], n.inputs[6], n.inputs[7]}, {y}, {}, ""};
    quantization(dx, false, types_.at(n.inputs[0]));
    quantization(dw, false, types_.at(n.inputs[3]));
    node(product);
    quantization(q, true, ValueType{dtype_of(n.inputs[1]), types_.at(y).shape});
    return;
  }
  if (op == "quantize_linear" || op == "dequantize_linear") {
    quantization(n, op == "quantize_linear", types_.at(n.inputs[0]));
    return;
  }
  if (auto it = by_op.find(op); it != by_op.end()) {
    auto* p = emit(it->second->onnx, n, n.inputs, n.outputs);
    for (const char* k : it->second->attrs)
      if (n.attrs.has(k)) attr(p, k, n.attrs.all().at(k));
    return;
  }
  const std::string& x = n.inputs.empty() ? std::string() : n.inputs[0];
  const std::string& y = n.outputs[0];
  if (op == "exp2" || op == "log2") {
    Tensor two = Tensor::scalar(dtype_of(x), op == "exp2" ? 2.0 : std::log(2.0));
    std::string c = constant(two, y);
    if (op == "exp2") {
      emit("Pow", n, {c, x}, {y});
    } else {
      std::string l = y + "__ln";
      emit("Log", n, {x}, {l});
      emit("Div", n, {l, c}, {y});
    }
  } else if (op == "cast" || op == "cast_unsaturated") {
    auto* p = emit("Cast", n, {x}, {y});
    attr(p, "to", std::int64_t{dtype_to_onnx(*dtype_from_name(n.attrs.s("to", "f32")))});
    if (op == "cast_unsaturated") attr(p, "saturate", std::int64_t{0});
  } else if (op == "clip") {
    clip(n, x, dtype_of(x), n.attrs, {y});
  } else if (op.rfind("reduce_", 0) == 0) {
    static const std::unordered_map<std::string, std::string> names = {{"reduce_sum", "ReduceSum"},
                                                                       {"reduce_max", "ReduceMax"},
                                                                       {"reduce_mean", "ReduceMean"},
                                                                       {"reduce_min", "ReduceMin"},
                                                                       {"reduce_prod", "ReduceProd"},
                                                                       {"reduce_l1", "ReduceL1"},
                                                                       {"reduce_l2", "ReduceL2"},
                                                                       {"reduce_log_sum", "ReduceLogSum"},
                                                                       {"reduce_log_sum_exp", "ReduceLogSumExp"},
                                                                       {"reduce_sum_square", "ReduceSumSquare"}};
    auto axes = n.attrs.ints("axes");
    auto* p = emit(names.at(op), n, {x, axes.empty() ? std::string() : ints(axes, y)}, {y});
    copy(p, n, {"keepdims"});
  } else if (op == "reshape") {
    auto* p = emit("Reshape", n, {x, ints(n.attrs.ints("shape"), y)}, {y});
    copy(p, n, {"allowzero"});
  } else if (op == "squeeze" || op == "unsqueeze") {
    auto axes = n.attrs.ints("axes");
    emit(op == "squeeze" ? "Squeeze" : "Unsqueeze", n, {x, axes.empty() ? std::string() : ints(axes, y)}, {y});
  } else if (op == "slice") {
    std::vector<std::string> ins{x, ints(n.attrs.ints("starts"), y), ints(n.attrs.ints("ends"), y)};
    if (n.attrs.has("axes") || n.attrs.has("steps")) {
      auto axes = n.attrs.ints("axes");
      if (axes.empty())
        for (std::size_t i = 0; i < n.attrs.ints("starts").size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
      ins.push_back(ints(axes, y));
      if (n.attrs.has("steps")) ins.push_back(ints(n.attrs.ints("steps"), y));
    }
    emit("Slice", n, ins, {y});
  } else if (op == "expand") {
    emit("Expand", n, {x, ints(n.attrs.ints("shape"), y)}, {y});
  } else if (op == "tile") {
    emit("Tile", n, {x, ints(n.attrs.ints("repeats"), y)}, {y});
  } else if (op == "split") {
    auto* p = emit("Split", n, {x, n.attrs.has("split") ? ints(n.attrs.ints("split"), y) : std::string()}, n.outputs);
    copy(p, n, {"axis"});
  } else if (op == "pad") {
    std::string value =
        n.attrs.has("value") ? constant(Tensor::scalar(dtype_of(x), n.attrs.f("value", 0)), y) : std::string();
    auto* p = emit("Pad", n, {x, ints(n.attrs.ints("pads"), y), value}, {y});
    copy(p, n, {"mode"});
  } else if (op == "cumsum" || op == "cumprod") {
    auto* p = emit(op == "cumsum" ? "CumSum" : "CumProd", n,
                   {x, constant(Tensor::of_ints(DType::I64, {}, {n.attrs.i("axis", 0)}), y)}, {y});
    copy(p, n, {"exclusive", "reverse"});
  } else if (op == "top_k") {
    auto* p = emit("TopK", n, {x, constant(Tensor::of_ints(DType::I64, {1}, {n.attrs.i("k", 1)}), y)}, n.outputs);
    copy(p, n, {"axis", "largest", "sorted"});
  } else if (op == "trilu") {
    auto* p = emit("Trilu", n, {x, constant(Tensor::of_ints(DType::I64, {}, {n.attrs.i("k", 0)}), y)}, {y});
    copy(p, n, {"upper"});
  } else if (op == "resize") {
    resize(n);
  } else if (op == "const") {
    auto* p = emit("Constant", n, {}, {y});
    attr(p, "value", *n.attrs.tensor("value"));
  } else if (op == "fill") {
    auto* p = emit("ConstantOfShape", n, {ints(n.attrs.ints("shape"), y)}, {y});
    if (const Tensor* v = n.attrs.tensor("value")) attr(p, "value", *v);
  } else {
    throw DiagnosticError{Diagnostic{SourceLoc{g_.source, 0, 0}, describe(n) + ": op " + op + " has no ONNX form"}};
  }
}

}  // namespace

Expected<bool> write_tensor_pb(const Tensor& t, const std::string& path, const std::string& name) {
  std::ofstream out(path, std::ios::binary);
  if (!out || !tensor_proto(t, name).SerializeToOstream(&out))
    return Diagnostic{SourceLoc{path, 0, 0}, "cannot write file"};
  return true;
}

namespace {

Expected<ExportedModel> export_model(const Graph& g) {
  auto types = infer_types(g);
  if (!types) return types.error();
  try {
    return Exporter(g, *types).run();
  } catch (const DiagnosticError& e) {
    return e.diag;
  } catch (const std::exception& e) {
    return stray_exception(SourceLoc{g.source, 0, 0}, e, "the exported graph");
  }
}

}  // namespace

Expected<std::string> export_onnx_bytes(const Graph& g) {
  auto model = export_model(g);
  if (!model) return model.error();
  std::ostringstream out;
  write_onnx_model(out, model->model, model->initializers);
  return std::move(out).str();
}

Expected<bool> export_onnx_file(const Graph& g, const std::string& path) {
  auto model = export_model(g);
  if (!model) return model.error();
  // Streamed: a model's bytes are not held twice (vit_b_32 writes 350 MB).
  std::ofstream out(path, std::ios::binary);
  if (!out || !write_onnx_model(out, model->model, model->initializers) || !out.flush())
    return Diagnostic{SourceLoc{path, 0, 0}, "cannot write file"};
  return true;
}

}  // namespace saturn::ir
