#include "extract/cost_model.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

#include "extract/problem.hpp"
#include "ir/pool.hpp"
#include "ir/slice.hpp"

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
    // avg pooling runs a scalar host loop: resnet18's 3x3 max_pool, 1.8 M
    // window reads, took 8.8 ms so (0.2 GFLOP/s, 0.004 of 64). max_pool is
    // a loop kernel over its windows now (Lowerer::lower_max_pool), at the
    // loop rate (listed so that a calibration times it): squeezenet1_1's
    // three, NHWC, took 0.075, 0.028 and 0.014 ms against oneDNN's 0.19,
    // 0.068 and 0.035 (its NaN scan included; 2 threads, Xeon VM). The
    // quantized products that no int8 call takes run their reference
    // kernel, slower still (priced as the pooling loop), as do the pixel
    // shuffles (depth_to_space of 100 K floats: 1.1 ms), whose
    // decompositions are a transpose between views, and cumsum. A `windows` is a
    // strided view the lowering reads in place (as of 2026-11-28; before,
    // its reference kernel took squeezenet1_1's three 102, 48 and 22 ms),
    // priced as the other movement ops, a copy: an upper bound, which keeps
    // reduce_max(windows(x)) above the max_pool it decomposes.
    TargetSpec cpu{"cpu",
                   64,
                   3,
                   150,
                   22,
                   1.0,
                   2.0,
                   {"blas.", "dnnl."},
                   {{"dnnl.conv_transpose", 0.65},
                    {"dnnl.qconv", 3.0},
                    {"dnnl.qmatmul", 3.0},
                    {"dnnl.wino_conv", 1.4},
                    {"dnnl.wino_conv_relu", 1.4},
                    {"dnnl.wino_conv_add", 1.4},
                    {"dnnl.wino_conv_add_relu", 1.4}},
                   {{"max_pool", 1.0},
                    {"avg_pool", 0.004},
                    {"quantized_conv", 0.004},
                    {"quantized_matmul", 0.004},
                    {"depth_to_space", 0.004},
                    {"space_to_depth", 0.004},
                    {"cumsum", 0.004},
                    {"cumprod", 0.004},
                    {"top_k", 0.004},
                    {"reduce_sum", 1.0}}};
    // reduce_sum at the loop rate, but listed so that a calibration times
    // it (CostModel::timed): a product decomposed as a broadcast `mul` and a
    // `reduce_sum` (decompose.rules' matmul-def) is priced by the roofline
    // far below what it runs in. mobilenet_v3_small's classifier,
    // 1x1024 by 1024x1000, so written: 28 us modeled, 822 us in the program
    // (a reduction over the middle axis of [1 1024 1000]; alone 226 us,
    // fused with the broadcast product 652), against 99-105 us for the
    // oneDNN product the calibration measured, and the calibrated
    // extraction chose it (Intel Xeon VM, 2026-11-28).
    // oneDNN's Winograd convolutions, in programs (`saturn run --profile`
    // of resnet18, googlenet and densenet121 against the same programs with
    // direct ones, 2026-11-27, two runs): 1.06-2.1x faster than the direct
    // ones from about 170 MFLOP a call (the 3x3 layers of ResNet, the
    // 56x56 and 28x28 ones of GoogLeNet), from 0.54x to 1.36x below it,
    // varying between runs (the reorders into and out of its blocked layout
    // and its input and output transforms). Priced at 1.4x the direct rate
    // plus 120 us a call and its blocked layout's reorders (below), so
    // that the roofline picks it from about 160 MFLOP at 56x56 with 64
    // channels (the reorders 180 us there), from about 95 at 14x14; a
    // calibration measures each call instead. (300 us a call, from before
    // the reorders were priced, put that threshold at 250 MFLOP and kept
    // ResNet's 231-MFLOP layers direct. On a Zen 4, 2026-11-29, in turns:
    // 120 made resnet18 1.12x faster, googlenet, densenet121 1.07x,
    // inception_v3 1.06x, resnet50 1.04x, squeezenet1_0 1.17x; no other
    // program of the suite or of --more changed.)
    cpu.library_call_us = {{"dnnl.wino_", 120.0}};
    // oneDNN 2.6's grouped convolutions (not depthwise; dnnl.conv against
    // dnnl.cl_conv, 2 threads, 2026-11-27, the shapes of RegNet X and Y and
    // ResNeXt-50): its blocked layout's reorders took 8-90 us a call (about
    // 15 us plus 50 GB/s); the channels-last kernel ran at 0.86-0.93 of the
    // blocked one's rate, and at 0.28-0.51 of it where the group count is a
    // multiple of 16 (ResNeXt's 32 groups), where the blocked call won.
    cpu.grouped_conv_reorder_us = 15;
    cpu.reorder_gbytes_per_s = 50;
    cpu.channels_last_efficiency = 0.9;
    cpu.channels_last_g16_efficiency = 0.4;
    // A depthwise convolution's swish post-op took more than the separate
    // sigmoid-mul kernel over its result: efficientnet_b0's 32x112x112,
    // `saturn run --profile`, 2 threads, 0.196 ms against 0.085 + 0.097 on
    // the Intel Xeon VM (2026-11-28; post-op 0.28 ns an element), 0.227
    // against 0.063 + 0.075 on a Zen 4 (2026-11-29; 0.41 ns), where the
    // roofline prices its 11 operations at 0.17. (A 1x1 convolution's
    // post-op cost 0.20-0.26 ns an element on the Intel VM and won there.)
    cpu.depthwise_post_op_factor = 2.0;
    // An add and a ReLU (--no-fuse) over n floats, 2 threads, medians of
    // 30: 150 GB/s while the 5 arrays moved fit in 20 MB (n = 1 M), 45 GB/s
    // at 80 MB, 22 at 320 MB.
    cpu.cache_bytes = 16e6;
    cpu.cache_gbytes_per_s = 150;
    // Copies of a value into another layout: ShuffleNet's channel shuffles
    // (a reshape of a transposed value, copied by a oneDNN reorder;
    // `saturn run --profile` of shufflenet_v2_x1_0's program, 2 threads,
    // 2026-11-28): 12-15 us moving 728 KB, 10-11 at 364 KB, 8 at 182 KB; a
    // transformer's attention heads put back side by side, 6 us at 256 KB.
    // (ShuffleNet's concats' block copies measure alike, 12-17 us at 728 KB,
    // and stay priced at the streaming rate: priced as copies, they made
    // pad and where, priced at that rate, look cheaper than a concat.)
    cpu.copy_call_us = 5;
    cpu.copy_gbytes_per_s = 100;
    // The broadcast product and sum of a decomposed matrix product
    // (decompose.rules' matmul-def, a sum over the middle axis of [M K N]):
    // densenet121's classifier, 1x1024 by 1024x1000, took 0.86 ms in its
    // program (saturn run --profile, 2026-11-28), 2 M operations at 2.4
    // GFLOP/s, where oneDNN's product took 0.24; mobilenet_v3_small's,
    // alike, 0.65-0.82 ms (a sum alone over that axis: 0.23).
    cpu.across_rows_reduce_efficiency = 0.025;
    // Winograd's blocked layout: resnet18's program converts each
    // activation a Winograd call reads and its result (ONEDNN_VERBOSE,
    // 2026-11-28, medians of 20 runs): 65-99 us for 800 KB, 44-54 for
    // 400, 25-43 for 200, 14-37 for 100.
    cpu.blocked_layout_calls = {"dnnl.wino_"};
    cpu.blocked_reorder_us = 10;
    cpu.blocked_reorder_gbytes_per_s = 10;
    // Weights computed at run time: efficientnet_b0's squeeze-and-excitation
    // scales folded into its eleven 1x1 convolutions (taso.rules'
    // fold-channel-scale-into-conv) made each call 11-26 us slower at 2-38
    // KB of weights, 31-57 at 154-301 KB (`saturn run --profile`, 2 threads,
    // Xeon VM, 2026-11-29; their reorders alone, ONEDNN_VERBOSE: 8 us at 2
    // KB, 33 at 154 KB, 49 at 301 KB).
    cpu.run_weights_reorder_us = 12;
    cpu.run_weights_reorder_gbytes_per_s = 6.5;
    // oneDNN's max pooling lets a NaN lose, so each run scans its source
    // (lower/library_calls.cpp, make_pool_step).
    cpu.source_scan_calls = {"dnnl.max_pool"};
    // resnet18's stem pool (3x3, stride 2, padding 1, 64x112x112 NHWC):
    // the pad 0.13-0.15 ms, the loop 0.09, where oneDNN's call took 0.21.
    cpu.max_pool_pad_copy = true;
    // Weights read from memory (Intel Xeon VM, 2 threads, 2026-11-28).
    // oneDNN's 512x512x3x3 convolution at 7x7 over copies of its weights
    // of their own, in turn: 0.74-0.78 ms while the copies took 9-19 MB,
    // 0.81-0.95 at 38 MB, 1.1-1.46 at 75 MB and 1.45-1.6 at 151 MB; its
    // Winograd form alike, over 1.78x the bytes (0.74, 0.85-0.97 at 34-67
    // MB, 1.45-1.61 at 134-268 MB). In resnet18's program (47 MB of
    // weights; ONEDNN_VERBOSE's times, medians of 20 runs) those layers
    // took 1.35-1.39 ms direct and 1.56-1.77 as Winograd, where
    // alone (weights in the cache) the Winograd call was the faster one,
    // 0.63-0.67 ms. Winograd holds F(2x2, 3x3)'s 4x4 transformed kernels
    // (oneDNN's wino_2x3): 16/9 of the weight bytes. At 12 GB/s the
    // roofline prices the 512-channel layers as they ran (direct 1.54 ms,
    // Winograd 1.7) and keeps Winograd where the weights are small.
    cpu.weight_cache_bytes = 32e6;
    cpu.weight_gbytes_per_s = 12;
    cpu.weight_expansion = {{"dnnl.wino_", 16.0 / 9.0}};
    return CostModel(cpu);
  }
  if (name == "cuda") {
    // Measured on an NVIDIA H100 80GB HBM3 (tools/gpu_run.sh roofline and
    // validate, device time): a streaming add over 2 x 64 MiB at 2.5 TB/s
    // (2.7 on an H200). The fixed costs are those of a program replayed as
    // CUDA graphs, which is how `saturn run` runs one (H200, 2026-11-27):
    // 64 back-to-back kernels of 256 elements at 1.0 us each (3.2 step by
    // step, which the former 4 us was read from); the smallest cuBLAS
    // products at 3.6-4.2 us; cuDNN convolutions of under 2 MFLOP at 2.6-12
    // us, median 5.4 (calibration of eight models, 503 ops). With those the
    // roofline and the calibration together price 24 of 26 validation
    // programs within 25% (6 of 26 with 4, 7 and 30 us: every program
    // over-priced 1.2-2.2x, docs/cost-model.md).
    // From `saturn calibrate --target cuda` of eight models (1089 ops, all in
    // plain float32: no TF32), 2026-11-26: cuBLAS at 5.9 TFLOP/s on a
    // 128x1024x256 product (7 us for a small one step by step); Saturn's own
    // loop nests for products and convolutions at 400-640 GFLOP/s on the large
    // ones (450 used); cuDNN, with the algorithm it measures fastest, at
    // 1.6-3.7 TFLOP/s on resnet18's convolutions, and 25-45 us a call on
    // models of small ones step by step (mobilenet_v2, squeezenet1_1,
    // shufflenet_v2_x1_0: whole programs' device time over their calls). A
    // fused product-and-sum (a convolution written as windows, mul and
    // reduce_sum) ran at 0.48 TFLOP/s counting its additions (resnet18: [1 128
    // 128 28 28 3 3] summed in 0.24 ms), where the elementwise rate had priced
    // it 30 times cheaper and the extractor chose it over cuDNN. `saturn
    // calibrate --target cuda` measures the library calls and loop nests at a
    // model's shapes, which replaces these. The quantized products run
    // their reference kernel on the host there.
    TargetSpec cuda{"cuda",
                    30000,
                    450,
                    6000,
                    2500,
                    1.0,
                    4.0,
                    {"cublas.", "cudnn."},
                    {{"cudnn.conv", 0.5},
                     {"cudnn.conv_relu", 0.5},
                     {"cudnn.conv_add", 0.5},
                     {"cudnn.conv_add_relu", 0.5},
                     {"cudnn.conv_transpose", 0.5}},
                    {{"quantized_conv", 1e-5},
                     {"quantized_matmul", 1e-5},
                     {"depth_to_space", 1e-5},
                     {"space_to_depth", 1e-5},
                     {"cumsum", 1e-5},
                     {"cumprod", 1e-5},
                     {"top_k", 1e-5},
                     {"reduce_sum", 0.016}}};
    cuda.library_call_us = {{"cudnn.", 5.0}};
    return CostModel(cuda);
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

// The elements of a max_pool's operand padded as far as its windows reach
// (Lowerer::lower_max_pool's pad), or 0 where they stay inside it.
double padded_pool_elems(const ir::Attrs& attrs, const std::vector<std::int64_t>& dims) {
  ir::PoolWindow p;
  try {
    p = ir::pool_window(attrs, dims, true);
  } catch (const ir::ShapeError&) {
    return 0;
  }
  const auto [begin, end] = ir::reached_pads(p);
  const std::size_t lead = dims.size() - begin.size();
  double n = 1;
  bool padded = false;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    const std::int64_t more = d < lead ? 0 : begin[d - lead] + end[d - lead];
    padded = padded || more > 0;
    n *= static_cast<double>(dims[d] + more);
  }
  return padded ? n : 0;
}

// The kernels of the lowering that read operand 0 of an op
// (lower/lower_reductions.cpp): softmax's max, sum and result, a norm's
// mean, variance and result, log-sum-exp's max and sum. A chain fused
// into the op is computed in each.
int operand_passes(const std::string& op) {
  static const std::map<std::string, int> passes = {
      {"softmax", 3}, {"log_softmax", 3}, {"layer_norm", 3}, {"instance_norm", 3}, {"reduce_log_sum_exp", 2}};
  auto it = passes.find(op);
  return it == passes.end() ? 1 : it->second;
}

// Whether a reduction keeps the innermost axis of its operand (of more
// than one element): each output element then sums elements a row apart.
bool sums_across_rows(const ir::Attrs& attrs, std::span<const ir::ValueType> in) {
  if (in.empty() || in[0].shape.size() < 2) return false;
  const auto rank = static_cast<std::int64_t>(in[0].shape.size());
  const ir::Dim& last = in[0].shape.back();
  if (last.is_static() && last.value() == 1) return false;
  const std::vector<std::int64_t> axes = attrs.ints("axes");
  if (axes.empty()) return false;  // (all of them)
  return std::none_of(axes.begin(), axes.end(), [&](std::int64_t a) { return a == rank - 1 || a == -1; });
}

}  // namespace

std::string op_family(const ir::OpDef& def, const ir::Attrs& attrs, std::span<const ir::ValueType> in,
                      const ir::ValueType& out, const OperandFacts& facts) {
  if (def.kind != ir::OpKind::Library) return "";
  const std::size_t dot = def.name.find('.');
  if (dot == std::string::npos) return "";
  std::string cls;
  const std::string& what = def.semantics();
  if ((what == "conv" || what == "conv_transpose") && in.size() >= 2 && in[0].shape.size() >= 3 &&
      in[1].shape.size() >= 3 && ir::is_static(in[0].shape) && ir::is_static(in[1].shape)) {
    // Weights computed at run time (a scale folded into them) are reordered
    // at every call, which the roofline prices apart: such a call keeps its
    // price. (Scaled as the 76 such calls of efficientnet_b0 and the
    // MobileNets measured, 0.33, regnet_y_400mf's squeeze-excitation
    // scales went into five 1x1 convolutions' weights, 8 us slower each in
    // the program, and it ran 1.03x slower.)
    if (facts.weight.size() > 1 && !facts.weight[1]) return "";
    const std::int64_t groups = attrs.i("group", 1);
    const std::vector<std::int64_t> w = ir::static_dims(in[1].shape);
    cls = groups > 1 && groups == ir::static_dims(in[0].shape)[1]                      ? " depthwise"
          : groups > 1                                                                 ? " grouped"
          : std::all_of(w.begin() + 2, w.end(), [](std::int64_t k) { return k == 1; }) ? " pointwise"
                                                                                       : " spatial";
  } else if ((what == "matmul" || what == "gemm") && ir::is_static(out.shape) && !out.shape.empty()) {
    const std::vector<std::int64_t> o = ir::static_dims(out.shape);
    cls = ir::numel(o) == o.back() ? " one row" : " rows";
  }
  // Weights read from memory, not the cache, are a family apart: the
  // roofline prices that reading at a rate of its own. (OpenBLAS's one-row
  // products took 0.21 of the roofline's price so on a Zen 5, 1.18 with
  // their weights in the cache.)
  return def.name.substr(0, dot + 1) + cls + (facts.weights_from_memory ? " weights from memory" : "");
}

double CostModel::cost(const ir::OpDef& def, const ir::Attrs& attrs, std::span<const ir::ValueType> in,
                       const ir::ValueType& out, bool constant) const {
  return price(def, attrs, in, out, constant).cost;
}

bool CostModel::runs_library(const std::string& op) const {
  return std::any_of(spec_.libraries.begin(), spec_.libraries.end(),
                     [&](const std::string& prefix) { return op.rfind(prefix, 0) == 0; });
}

bool CostModel::timed(const ir::OpDef& def) const {
  if (def.kind == ir::OpKind::Library) return runs_library(def.name);
  return def.contraction || spec_.loop_efficiency.count(def.name) != 0;
}

std::optional<double> CostModel::family_scale(const ir::OpDef& def, const ir::Attrs& attrs,
                                              std::span<const ir::ValueType> in, const ir::ValueType& out,
                                              const OperandFacts& facts) const {
  if (!calibration || calibration->family.empty()) return std::nullopt;  // (no family string to build)
  const std::string family = op_family(def, attrs, in, out, facts);
  const double* ratio = calibration->family_ratio(family);
  // A family read from memory that has no ratio takes the one of its calls
  // with their weights in the cache (vit_b_32's products, their weights
  // streaming, by the products of the transformers a calibration of eight
  // models measured, whose weights stay in the cache: modeled 2.5x what
  // they measured without it, 0.88x with it). Not the other way: one-row
  // products measured 0.21 of their price reading from memory, 1.18 with
  // their weights in the cache.
  constexpr std::string_view kFromMemory = " weights from memory";
  if (!ratio && family.ends_with(kFromMemory))
    ratio = calibration->family_ratio(family.substr(0, family.size() - kFromMemory.size()));
  // A family measured slower than priced keeps the roofline's price:
  // raised, its calls lost to loop nests the roofline under-prices more
  // (with OpenBLAS's one-row products at 1.78, densenet121's classifier
  // became a broadcast product and a sum, which run in 0.86 ms where the
  // product takes 0.05).
  if (!ratio || *ratio >= 1) return std::nullopt;
  return *ratio;
}

NodePrice CostModel::price(const ir::OpDef& def, const ir::Attrs& attrs, std::span<const ir::ValueType> in,
                           const ir::ValueType& out, bool constant, const OperandFacts* facts) const {
  std::vector<ir::ValueType> ins;
  std::vector<double> read_bytes;
  double in_elems = 0, bytes = 0;
  for (const ir::ValueType& t : in) {
    ins.push_back(priced(t));
    in_elems += elems(ins.back());
    read_bytes.push_back(elems(ins.back()) * static_cast<double>(ir::dtype_size(t.dtype)));
    bytes += read_bytes.back();
  }
  ir::ValueType o = priced(out);
  const double out_elems = elems(o);
  const double write_bytes = out_elems * static_cast<double>(ir::dtype_size(o.dtype));
  bytes += write_bytes;
  const double per_us = bytes_per_us(bytes);
  std::vector<double> read_us;
  for (double b : read_bytes) read_us.push_back(b / per_us);
  if (constant && is_folded(in_elems, out_elems)) return {0, {}};
  double weights = facts ? weight_bytes(ins, *facts) : 0;
  const bool weights_from_memory = weights > 0 && (facts->weights_from_memory || weights_stream());
  // A library call the calibration lacks: scaled as its family measured.
  std::optional<double> family_ratio;
  if (calibration && facts && timed(def)) {
    OperandFacts timed_facts = *facts;
    timed_facts.weights_from_memory = weights_from_memory;
    std::string sig = op_signature(def, attrs, in, timed_facts, out);
    if (const double* us = calibration->find(sig)) return {*us, {}};
    family_ratio = family_scale(def, attrs, in, out, timed_facts);
    if (unmeasured && !sig.empty() && !unmeasured->count(sig))
      unmeasured->emplace(std::move(sig), TimedOp{&def, attrs, {in.begin(), in.end()}, timed_facts, out});
  }

  const bool from_memory = weights_from_memory && spec_.weight_gbytes_per_s > 0;
  const std::string& name = def.name;
  double work = 0;
  try {
    work = ir::work_of(def, attrs, ins, std::span<const ir::ValueType>(&o, 1));
  } catch (const ir::ShapeError&) {
    work = out_elems;
  }
  if (def.kind == ir::OpKind::Library) {
    if (!runs_library(name)) return {kInfinity, {}};
    double gflops = spec_.library_gflops;
    if (auto it = spec_.library_efficiency.find(name); it != spec_.library_efficiency.end()) gflops *= it->second;
    double call_us = spec_.call_overhead_us;
    for (const auto& [prefix, us] : spec_.library_call_us)
      if (name.rfind(prefix, 0) == 0) call_us = us;
    bool depthwise = false;
    if (def.library_of == "conv" && !ins.empty() && ins[0].shape.size() >= 3) {
      const std::int64_t groups = attrs.i("group", 1);
      const std::int64_t channels = ir::static_dims(ins[0].shape)[1];
      depthwise = groups > 1 && groups == channels;
      if (groups > 1 && groups < channels) {
        if (def.channels_last)
          gflops *= groups % 16 == 0 ? spec_.channels_last_g16_efficiency : spec_.channels_last_efficiency;
        else if (spec_.reorder_gbytes_per_s > 0)
          call_us +=
              spec_.grouped_conv_reorder_us + 2 * (read_bytes[0] + write_bytes) / (spec_.reorder_gbytes_per_s * 1e3);
      }
    }
    if (spec_.blocked_reorder_gbytes_per_s > 0 &&
        std::any_of(spec_.blocked_layout_calls.begin(), spec_.blocked_layout_calls.end(),
                    [&](const std::string& prefix) { return name.starts_with(prefix); })) {
      double moved = write_bytes;
      int values = 1;
      for (std::size_t k = 0; k < read_bytes.size(); ++k)
        if (facts ? k < facts->weight.size() && !facts->weight[k] : k == 0) {
          moved += read_bytes[k];
          ++values;
        }
      call_us += values * spec_.blocked_reorder_us + moved / (spec_.blocked_reorder_gbytes_per_s * 1e3);
    }
    if (spec_.run_weights_reorder_gbytes_per_s > 0 && def.library_of == "conv" && facts && facts->weight.size() > 1 &&
        !facts->weight[1] && read_bytes.size() > 1)
      call_us += spec_.run_weights_reorder_us + read_bytes[1] / (spec_.run_weights_reorder_gbytes_per_s * 1e3);
    if (!read_bytes.empty() && std::any_of(spec_.source_scan_calls.begin(), spec_.source_scan_calls.end(),
                                           [&](const std::string& prefix) { return name.starts_with(prefix); }))
      call_us += read_bytes[0] / per_us;
    double weight_us = 0;
    if (from_memory) {
      for (const auto& [prefix, factor] : spec_.weight_expansion)
        if (name.starts_with(prefix)) weights *= factor;
      weight_us = weights / (spec_.weight_gbytes_per_s * 1e3);
    }
    // An activation post-op computes on the result in registers, as it is
    // written, after the call's own work: its arithmetic at the loop rate,
    // no memory pass. (oneDNN 2.6's swish post-op added 0.20-0.26 ns per
    // element to EfficientNet's convolutions, 11 operations each at 64
    // GFLOP/s 0.17; hardswish's 0.05-0.10 for 4 operations, 0.06; channels
    // last, 2 threads, Intel Xeon VM, 2026-11-28.)
    double post_op_us = out_elems * ir::activation_unit_work(def.activation) / (spec_.loop_gflops * 1e3);
    if (depthwise) post_op_us *= spec_.depthwise_post_op_factor;
    call_us += post_op_us;
    return {(std::max({work / (gflops * 1e3), bytes / per_us, weight_us}) + call_us) * family_ratio.value_or(1.0), {}};
  }
  if (def.view) return {0.01, {}};
  if (name == "const" || name == "fill") return {0.0, {}};
  double gflops = def.contraction ? spec_.naive_contract_gflops : spec_.loop_gflops;
  if (auto it = spec_.loop_efficiency.find(name); it != spec_.loop_efficiency.end()) gflops *= it->second;
  // (reduce_max and reduce_min run the same loop: swin_t's q, k and v
  // picked from [3 ...] by gather-def's one-hot where and a max over axis
  // 0 took 1 ms each, priced 0.03, where the gather copies in 0.08.)
  if ((name == "reduce_sum" || name == "reduce_max" || name == "reduce_min") &&
      spec_.across_rows_reduce_efficiency > 0 && sums_across_rows(attrs, ins))
    gflops *= spec_.across_rows_reduce_efficiency;
  work *= def.unit_work;
  double memory_us = bytes / per_us;
  if (from_memory)  // (a loop reads its weights from memory too: a product decomposed as mul and reduce_sum)
    for (std::size_t k = 0; k < facts->weight.size() && k < read_us.size(); ++k)
      if (facts->weight[k]) {
        const double us = read_bytes[k] / (spec_.weight_gbytes_per_s * 1e3);
        memory_us += us - read_us[k];
        read_us[k] = us;
      }
  const int passes = operand_passes(name);
  if (passes > 1 && !read_us.empty()) {
    memory_us += (passes - 1) * read_us[0];
    read_us[0] *= passes;
  }
  const double overhead = spec_.kernel_overhead_us * passes;
  NodePrice p{std::max(work / (gflops * 1e3), memory_us) + overhead, {}};
  if (name == "max_pool" && spec_.max_pool_pad_copy && !ins.empty() && ir::is_static(ins[0].shape) &&
      ins[0].shape.size() >= 3)
    if (const double padded = padded_pool_elems(attrs, ir::static_dims(ins[0].shape)); padded > 0)
      p.cost += copy_us((elems(ins[0]) + padded) * static_cast<double>(ir::dtype_size(ins[0].dtype)));
  if (def.elementwise || name.rfind("reduce_", 0) == 0 || passes > 1) {
    p.fused.role = def.elementwise ? FuseRole::Elementwise : FuseRole::Reduction;
    p.fused.compute_us = work / (gflops * 1e3);
    p.fused.write_us = write_bytes / per_us;
    p.fused.overhead_us = overhead;
    p.fused.out_elems = out_elems;
    p.fused.read_us = std::move(read_us);
    p.fused.operand_passes = passes;
    p.fused.boundary = name == "materialize";
  }
  return p;
}

double CostModel::bytes_per_us(double bytes) const {
  return (bytes <= spec_.cache_bytes ? spec_.cache_gbytes_per_s : spec_.gbytes_per_s) * 1e3;
}

double CostModel::copy_us(double moved) const {
  if (spec_.copy_gbytes_per_s > 0) return spec_.copy_call_us + moved / (spec_.copy_gbytes_per_s * 1e3);
  return spec_.kernel_overhead_us + moved / bytes_per_us(moved);
}

namespace {

double bytes_of(const ir::ValueType& t) { return elems(t) * static_cast<double>(ir::dtype_size(t.dtype)); }

}  // namespace

bool CostModel::priced_after_producer(const ir::OpDef& def) {
  return def.view || def.name == "concat" || def.name == "reduce_max";
}

std::optional<double> CostModel::price_after(const ir::OpDef& def, const ir::Attrs& attrs,
                                             std::span<const ir::ValueType> in, const ir::ValueType& out,
                                             const ir::OpDef& producer, const ir::Attrs& producer_attrs,
                                             std::span<const ir::ValueType> producer_in) const {
  if (!priced_after_producer(def) || in.empty() || producer_in.empty() || !ir::is_static(out.shape) ||
      !ir::is_static(in[0].shape) || !ir::is_static(producer_in[0].shape))
    return std::nullopt;
  if (def.view && producer.name == "transpose") {
    const std::vector<std::int64_t> from = ir::static_dims(producer_in[0].shape);
    std::vector<std::int64_t> perm;
    try {
      perm = ir::transpose_perm(producer_attrs, from.size());
    } catch (const ir::ShapeError&) {
      return std::nullopt;  // (not a transpose the graph can hold)
    }
    const std::vector<std::int64_t> row_major = ir::row_major_strides(from);
    std::vector<std::int64_t> dims, strides;
    for (std::int64_t a : perm) {
      dims.push_back(from[static_cast<std::size_t>(a)]);
      strides.push_back(row_major[static_cast<std::size_t>(a)]);
    }
    if (ir::reshaped_strides(dims, strides, ir::static_dims(out.shape))) return std::nullopt;
    return copy_us(bytes_of(in[0]) + bytes_of(out));
  }
  if (def.name == "reduce_max" && producer.name == "windows") {
    // The max over each window is max pooling, lowered as the same loop
    // over the windows as a max_pool of the windows' operand: priced as
    // that max_pool, a timed op, so that a calibration measures it. As a
    // plain reduction it was never measured: with oneDNN's pooling
    // measured (0.19 ms), resnet18's stem pooling, decomposed, kept the
    // roofline's 55 us, was chosen, and ran 0.84 ms (plus its pad and a
    // reorder; the calibrated program 1.09x slower; Zen 4, 2026-12-03).
    // Measured as the max_pool of the padded value: 0.44 ms.
    const std::vector<std::int64_t> kernel = producer_attrs.ints("kernel_shape");
    const std::size_t rank = in[0].shape.size(), k = kernel.size();
    std::vector<std::int64_t> axes = attrs.ints("axes");
    for (std::int64_t& a : axes)
      if (a < 0) a += static_cast<std::int64_t>(rank);
    std::sort(axes.begin(), axes.end());
    std::vector<std::int64_t> window_axes;
    for (std::size_t a = rank - std::min(k, rank); a < rank; ++a) window_axes.push_back(static_cast<std::int64_t>(a));
    if (k == 0 || rank != producer_in[0].shape.size() + k || axes != window_axes || attrs.i("keepdims", 1) != 0)
      return std::nullopt;
    ir::Attrs pool;
    pool.set("kernel_shape", kernel);
    pool.set("strides", producer_attrs.ints("strides", std::vector<std::int64_t>(k, 1)));
    if (producer_attrs.has("dilations")) pool.set("dilations", producer_attrs.ints("dilations"));
    const ir::OpDef& max_pool = *ir::OpRegistry::get().find("max_pool");
    const OperandFacts facts{{true}, {false}};
    return price(max_pool, pool, producer_in.first(1), out, false, &facts).cost;
  }
  if (def.name == "concat" && producer.name == "concat" && in.size() > 1 && in[0].shape.size() == out.shape.size()) {
    const auto rank = static_cast<std::int64_t>(out.shape.size());
    const auto axis_of = [rank](const ir::Attrs& a) {
      const std::int64_t x = a.i("axis", 0);
      return x < 0 ? x + rank : x;
    };
    const std::int64_t axis = axis_of(attrs);
    if (axis != axis_of(producer_attrs) || axis < 0 || axis >= rank || in[0].dtype != out.dtype) return std::nullopt;
    // price()'s price of a concat of the other operands alone.
    const std::vector<ir::ValueType> rest(in.begin() + 1, in.end());
    ir::ValueType rest_out = out;
    ir::Dim& d = rest_out.shape[static_cast<std::size_t>(axis)];
    d = ir::Dim::of(d.value() - in[0].shape[static_cast<std::size_t>(axis)].value());
    return price(def, attrs, rest, rest_out, false).cost;
  }
  return std::nullopt;
}

Expected<double> graph_cost(const ir::Graph& g, const CostModel& m, std::vector<double>* node_costs) {
  if (node_costs) node_costs->assign(g.nodes.size(), 0.0);
  auto types = ir::infer_types(g);
  if (!types) return types.error();
  // The graph as an extraction problem with one node per class: a class per
  // node (all its results), and a free leaf per input and initializer.
  ExtractionProblem p;
  std::map<std::string, std::uint32_t> class_of;
  std::set<std::string> constant;
  std::map<std::string, const ir::Node*> producer_of;  // by result name
  const auto leaf = [&](const std::string& name) {
    class_of[name] = static_cast<std::uint32_t>(p.classes.size());
    p.classes.push_back({static_cast<std::uint32_t>(p.nodes.size())});
    ExtractionProblem::Node n;
    n.cls = class_of[name];
    n.cost = 0;
    p.nodes.push_back(std::move(n));
  };
  for (const auto& [name, t] : g.initializers) {
    constant.insert(name);
    leaf(name);
  }
  for (const ir::GraphValue& in : g.inputs)
    if (!class_of.count(in.name)) leaf(in.name);
  for (const ir::Node& n : g.nodes) {
    const ir::OpDef* def = ir::OpRegistry::get().find(n.op);
    if (!def) return Diagnostic{SourceLoc{g.source, 0, 0}, ir::describe(n) + ": unknown op '" + n.op + "'"};
    std::vector<ir::ValueType> in;
    ExtractionProblem::Node node;
    node.cls = static_cast<std::uint32_t>(p.classes.size());
    node.op = n.op;
    bool all_const = true;
    OperandFacts facts;
    for (const std::string& i : n.inputs) {
      facts.given.push_back(!i.empty());
      if (i.empty()) continue;
      in.push_back(types->at(i));
      facts.weight.push_back(constant.count(i) != 0);
      all_const &= facts.weight.back();
      node.children.push_back(class_of.at(i));
    }
    auto first = std::find_if(n.outputs.begin(), n.outputs.end(), [](const std::string& o) { return !o.empty(); });
    if (first == n.outputs.end()) continue;
    NodePrice price = m.price(*def, n.attrs, in, types->at(*first), all_const, &facts);
    if (!all_const && !n.inputs.empty() && CostModel::priced_after_producer(*def))
      if (auto it = producer_of.find(n.inputs[0]); it != producer_of.end()) {
        std::vector<ir::ValueType> producer_in;
        for (const std::string& i : it->second->inputs)
          if (!i.empty()) producer_in.push_back(types->at(i));
        const ir::OpDef* pdef = ir::OpRegistry::get().find(it->second->op);
        if (auto after = m.price_after(*def, n.attrs, in, types->at(*first), *pdef, it->second->attrs, producer_in))
          price = {*after, {}};
      }
    node.cost = price.cost;  // paid once, whatever the node's number of results
    if (node_costs) (*node_costs)[static_cast<std::size_t>(&n - g.nodes.data())] = price.cost;
    node.fused = std::move(price.fused);
    p.fusion |= node.fused.role != FuseRole::None;
    for (const std::string& o : n.outputs) {
      if (o.empty()) continue;
      producer_of[o] = &n;
      class_of[o] = node.cls;
      if (all_const) constant.insert(o);
    }
    p.classes.push_back({static_cast<std::uint32_t>(p.nodes.size())});
    p.nodes.push_back(std::move(node));
  }
  for (const std::string& o : g.outputs)
    if (class_of.count(o)) p.roots.push_back(class_of.at(o));
  std::vector<std::int32_t> choice(p.classes.size());
  for (std::size_t c = 0; c < choice.size(); ++c) choice[c] = static_cast<std::int32_t>(c);
  return dag_cost(p, choice);  // from the outputs: dead nodes are not run (ir::live_nodes)
}

}  // namespace saturn::extract
