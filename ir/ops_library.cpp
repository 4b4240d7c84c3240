// Library calls (docs/design.md): ops reached only by substitution rules, each
// lowerable on its own target. Their reference semantics are those of the
// composite they replace, so the interpreter, `saturn verify` and the cost
// models read them from here like any other op.
#include "ir/graph.hpp"
#include "ir/op.hpp"

#include <algorithm>
#include <iterator>

namespace saturn::ir {

namespace {
const char* const kClipAttrs[] = {"min", "max"};
}  // namespace

EpilogueAttrs split_epilogue_attrs(Activation activation, const Attrs& attrs) {
  EpilogueAttrs s;
  for (const auto& [k, v] : attrs.all()) {
    const bool bound = std::find(std::begin(kClipAttrs), std::end(kClipAttrs), k) != std::end(kClipAttrs);
    (activation == Activation::Clip && bound ? s.activation : s.conv).set(k, v);
  }
  return s;
}

std::span<const ActivationStep> activation_steps(Activation activation) {
  static const ActivationStep relu[] = {{"relu"}}, clip[] = {{"clip"}}, hard_swish[] = {{"hard_swish"}};
  static const ActivationStep silu[] = {{"sigmoid"}, {"mul", true}};
  switch (activation) {
    case Activation::None:
      return {};
    case Activation::Relu:
      return relu;
    case Activation::Clip:
      return clip;
    case Activation::Silu:
      return silu;
    case Activation::HardSwish:
      return hard_swish;
  }
  return {};
}

double activation_unit_work(Activation activation) {
  double work = 0;
  for (const ActivationStep& s : activation_steps(activation)) work += OpRegistry::get().find(s.op)->unit_work;
  return work;
}

std::vector<Node> activation_nodes(Activation a, const Attrs& attrs, const std::string& y,
                                   const std::vector<std::string>& outputs, const Node& from) {
  const auto steps = activation_steps(a);
  std::vector<Node> nodes;
  std::string last = y;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    Node n{from.name, steps[i].op, {}, {}, attrs, from.source_op};
    if (steps[i].takes_y) n.inputs.push_back(y);
    n.inputs.push_back(last);
    n.outputs = i + 1 == steps.size() ? outputs : std::vector{outputs.at(0) + "__" + steps[i].op};
    last = n.outputs[0];
    nodes.push_back(std::move(n));
  }
  return nodes;
}

void register_library_ops(OpRegistry& r) {
  struct Call {
    const char* name;
    const char* like;
    const char* doc;
  };
  static const Call calls[] = {
      {"blas.gemm", "gemm", "OpenBLAS sgemm/dgemm: alpha op(A) op(B) + beta C (CPU)"},
      {"blas.matmul", "matmul", "OpenBLAS (batched) sgemm for matmul (CPU)"},
      {"dnnl.conv", "conv", "oneDNN convolution, NCHW semantics (CPU)"},
      {"dnnl.conv_transpose", "conv_transpose", "oneDNN deconvolution (CPU)"},
      {"dnnl.max_pool", "max_pool", "oneDNN max pooling (CPU)"},
      {"dnnl.avg_pool", "avg_pool", "oneDNN average pooling (CPU)"},
      {"dnnl.qconv", "quantized_conv",
       "oneDNN int8 convolution (CPU): u8 or s8 x with a zero point, s8 weights, output scales and zero point"},
      {"dnnl.qmatmul", "quantized_matmul",
       "oneDNN int8 matrix product (CPU): u8 or s8 a with a zero point, constant s8 b [K N], output scales and zero "
       "point"},
      {"cublas.gemm", "gemm", "cuBLAS(Lt) gemm (CUDA)"},
      {"cublas.matmul", "matmul", "cuBLAS strided-batched gemm for matmul (CUDA)"},
      {"cudnn.conv", "conv", "cuDNN convolution forward (CUDA)"},
      {"cudnn.conv_transpose", "conv_transpose", "cuDNN convolution backward-data plus the bias (CUDA)"},
      {"cudnn.max_pool", "max_pool", "cuDNN max pooling (CUDA)"},
      {"cudnn.avg_pool", "avg_pool", "cuDNN average pooling (CUDA)"},
  };
  for (const Call& c : calls) {
    const OpDef* base = r.find(c.like);
    if (!base) continue;
    OpDef d = *base;
    d.name = c.name;
    d.kind = OpKind::Library;
    d.library_of = c.like;
    d.doc = std::string(c.doc) + "; semantics of `" + c.like + "`";
    r.add(std::move(d));
  }
  // Convolutions with their epilogue fused, the forms TASO's conv+relu and
  // conv+add fusions produce: relu(conv(x, w, b)) (oneDNN's ReLU post-op,
  // cuDNN's fused conv-bias-activation), conv(x, w, b) + skip (the residual
  // add as oneDNN's sum post-op or cuDNN's z operand) and relu of that, and
  // clip (ReLU6 of mobile networks), SiLU (x sigmoid(x), oneDNN's swish)
  // and hard swish as oneDNN post-ops. The skip operand comes fourth and has
  // the convolution's result type. Whether a SiLU post-op pays depends on
  // the machine: on a Zen 4 (2026-11) it ran slower than the convolution
  // followed by Saturn's sigmoid-mul kernel (efficientnet_b0's 17 1x1 and
  // 16 depthwise convolutions: 3.07 ms against 2.85, 1.40 against 1.20), on
  // the Intel Xeon VM faster (docs/cpu-backend.md); the cost model chooses.
  struct Fused {
    const char* name;
    bool sum;
    Activation activation;
    const char* doc;
    bool winograd = false;
    bool channels_last = false;
  };
  static const Fused fused[] = {
      {"dnnl.conv_relu", false, Activation::Relu,
       "oneDNN convolution with a ReLU post-op (CPU); semantics of `relu(conv(...))`"},
      {"cudnn.conv_relu", false, Activation::Relu,
       "cuDNN convolution with fused bias and ReLU (CUDA); semantics of `relu(conv(...))`"},
      {"dnnl.conv_add", true, Activation::None,
       "oneDNN convolution with a sum post-op (CPU); semantics of `add(conv(x, w, b), skip)`"},
      {"dnnl.conv_add_relu", true, Activation::Relu,
       "oneDNN convolution with sum and ReLU post-ops (CPU); semantics of `relu(add(conv(x, w, b), skip))`"},
      {"dnnl.conv_clip", false, Activation::Clip,
       "oneDNN convolution with a clip post-op (CPU); semantics of `clip(conv(...))` with its min and max"},
      {"dnnl.conv_silu", false, Activation::Silu,
       "oneDNN convolution with a swish post-op (CPU); semantics of `mul(conv(...), sigmoid(conv(...)))`"},
      {"dnnl.conv_hard_swish", false, Activation::HardSwish,
       "oneDNN convolution with a hard swish post-op (CPU); semantics of `hard_swish(conv(...))`"},
      {"cudnn.conv_add", true, Activation::None,
       "cuDNN convolution adding z (CUDA); semantics of `add(conv(x, w, b), skip)`"},
      {"cudnn.conv_add_relu", true, Activation::Relu,
       "cuDNN convolution adding z, with ReLU (CUDA); semantics of `relu(add(conv(x, w, b), skip))`"},
      // oneDNN's Winograd convolutions (3x3 kernels, stride 1, no groups or
      // dilation, padding at most 1; ReLU and sum post-ops, not clip). On
      // this Zen 4 they ran 1.06-2.1x faster than the direct ones on the
      // large 3x3 layers of ResNet, GoogLeNet and DenseNet, slower on small
      // ones (docs/cpu-backend.md).
      {"dnnl.wino_conv", false, Activation::None,
       "oneDNN Winograd convolution (CPU, 3x3 stride 1); semantics of `conv`", true},
      {"dnnl.wino_conv_relu", false, Activation::Relu,
       "oneDNN Winograd convolution with a ReLU post-op (CPU); semantics of `relu(conv(...))`", true},
      {"dnnl.wino_conv_add", true, Activation::None,
       "oneDNN Winograd convolution with a sum post-op (CPU); semantics of `add(conv(x, w, b), skip)`", true},
      {"dnnl.wino_conv_add_relu", true, Activation::Relu,
       "oneDNN Winograd convolution with sum and ReLU post-ops (CPU); semantics of `relu(add(conv(x, w, b), skip))`",
       true},
      // oneDNN's convolutions on the program's channels-last layout as it is
      // (grouped ones: without them oneDNN 2.6 picks its blocked layout and
      // the call reorders its source and result). On this Zen 4, with the
      // reorders counted, 0.56-0.9x the time of the blocked call at
      // RegNet's shapes, 1.5-3x at ResNeXt's (docs/cpu-backend.md).
      {"dnnl.cl_conv", false, Activation::None,
       "oneDNN convolution on the channels-last layout (CPU); semantics of `conv`", false, true},
      {"dnnl.cl_conv_relu", false, Activation::Relu,
       "oneDNN channels-last convolution with a ReLU post-op (CPU); semantics of `relu(conv(...))`", false, true},
      {"dnnl.cl_conv_add", true, Activation::None,
       "oneDNN channels-last convolution with a sum post-op (CPU); semantics of `add(conv(x, w, b), skip)`", false,
       true},
      {"dnnl.cl_conv_add_relu", true, Activation::Relu,
       "oneDNN channels-last convolution with sum and ReLU post-ops (CPU); semantics of `relu(add(conv(x, w, b), "
       "skip))`",
       false, true},
      {"dnnl.cl_conv_clip", false, Activation::Clip,
       "oneDNN channels-last convolution with a clip post-op (CPU); semantics of `clip(conv(...))` with its min and "
       "max",
       false, true},
      {"dnnl.cl_conv_silu", false, Activation::Silu,
       "oneDNN channels-last convolution with a swish post-op (CPU); semantics of `mul(conv(...), "
       "sigmoid(conv(...)))`",
       false, true},
      {"dnnl.cl_conv_hard_swish", false, Activation::HardSwish,
       "oneDNN channels-last convolution with a hard swish post-op (CPU); semantics of `hard_swish(conv(...))`", false,
       true},
  };
  const OpDef* conv = r.find("conv");
  if (!conv) return;
  for (const Fused& f : fused) {
    OpDef d = *conv;
    d.name = f.name;
    d.kind = OpKind::Library;
    d.library_of = "conv";
    d.activation = f.activation;
    d.sum_epilogue = f.sum;
    d.winograd = f.winograd;
    d.channels_last = f.channels_last;
    d.doc = f.doc;
    if (f.activation == Activation::Clip)
      for (const char* bound : kClipAttrs) d.attrs.push_back(attr_real(bound));
    auto conv_infer = conv->infer;
    auto conv_work = conv->flops;
    if (f.sum) {
      d.max_inputs = 4;  // (operand 2, the bias, may be absent)
      d.infer = [conv_infer](const Attrs& a, std::span<const TypedInput> in, std::size_t n) {
        if (in.size() != 4 || !in[3].present) shape_error("conv_add: operand 3, the added value, is required");
        auto out = conv_infer(a, in.first(3), n);
        if (in[3].type.dtype != out[0].dtype || in[3].type.shape != out[0].shape)
          shape_error("conv_add: the added operand must have the convolution's result type " + to_string(out[0].shape) +
                      ", got " + to_string(in[3].type.shape));
        return out;
      };
      d.flops = [conv_work](const Attrs& a, std::span<const ValueType> in, std::span<const ValueType> out) {
        return conv_work(a, in.first(3), out) + static_cast<double>(numel(static_dims(out[0].shape)));
      };
    }
    // The epilogue is the composite ops' own kernels (add, activation_steps), so
    // that the call computes exactly what it replaces.
    const bool sum = f.sum;
    const Activation act = f.activation;
    auto epilogue = [sum, act](const Attrs& a, auto out, auto x, auto kernel) {
      if (sum) out = kernel("add", Attrs{}, std::vector{out[0], x[3]});
      const auto y = out[0];
      const Attrs attrs = split_epilogue_attrs(act, a).activation;
      for (const ActivationStep& s : activation_steps(act))
        out = kernel(s.op, attrs, s.takes_y ? std::vector{y, out[0]} : std::vector{out[0]});
      return out;
    };
    auto conv_eval = conv->eval;
    auto conv_symbolic = conv->symbolic;
    d.eval = [conv_eval, epilogue](const Attrs& a, std::span<const Tensor> x, std::span<const bool> given,
                                   std::size_t n) {
      auto kernel = [](const char* op, const Attrs& attrs, const std::vector<Tensor>& args) {
        const bool all[2] = {true, true};
        return OpRegistry::get().find(op)->eval(attrs, args, std::span<const bool>(all, args.size()), 1);
      };
      return epilogue(a, conv_eval(a, x.first(3), given.first(3), n), x, kernel);
    };
    d.symbolic = [conv_symbolic, epilogue](const Attrs& a, std::span<const SymTensor> x, std::span<const bool> given,
                                           std::size_t n) {
      auto kernel = [](const char* op, const Attrs& attrs, const std::vector<SymTensor>& args) {
        const bool all[2] = {true, true};
        return OpRegistry::get().find(op)->symbolic(attrs, args, std::span<const bool>(all, args.size()), 1);
      };
      return epilogue(a, conv_symbolic(a, x.first(3), given.first(3), n), x, kernel);
    };
    r.add(std::move(d));
  }
}

}  // namespace saturn::ir
