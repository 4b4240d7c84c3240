#include "lower/library_calls.hpp"

#include <cblas.h>

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <functional>
#include <limits>
#include <oneapi/dnnl/dnnl.hpp>
#include <sstream>
#include <string_view>

#include "ir/shape.hpp"
#include "ir/symbolic.hpp"
#include "ir/window.hpp"
#include "lower/dnnl_memory.hpp"

namespace saturn::lower {

std::optional<MatrixLayout> matrix_layout(const View& v) {
  const std::size_t r = v.dims.size();
  const std::int64_t rows = v.dims[r - 2], cols = v.dims[r - 1];
  // A stride along a dimension of size 1 is never used: take the value that fits.
  std::int64_t rs = rows == 1 ? std::max<std::int64_t>(cols, 1) : v.strides[r - 2];
  std::int64_t cs = cols == 1 ? 1 : v.strides[r - 1];
  if (cs == 1 && rs >= std::max<std::int64_t>(cols, 1)) return MatrixLayout{false, rs};
  rs = rows == 1 ? 1 : v.strides[r - 2];
  cs = cols == 1 ? std::max<std::int64_t>(rows, 1) : v.strides[r - 1];
  if (rs == 1 && cs >= std::max<std::int64_t>(rows, 1)) return MatrixLayout{true, cs};
  return std::nullopt;
}

namespace {

// Products under this many flops run on the calling thread (make_packed_gemm_step).
constexpr double kSerialProductFlops = 1 << 18;

// A product's batch can fold into M (one [batch*M, K] @ [K, N] product)
// when b is shared by every batch element and a's rows walk evenly.
bool batch_folds(const View& a, const View& b, const std::vector<std::int64_t>& batch, std::int64_t M) {
  const MatrixLayout la = *matrix_layout(a);
  if (la.transposed) return false;
  std::int64_t want = la.ld * M;
  for (std::size_t i = batch.size(); i-- > 0;) {
    if (batch[i] != 1 && (b.strides[i] != 0 || a.strides[i] != want)) return false;
    want *= batch[i];
  }
  return true;
}

}  // namespace

namespace {

// out[1, N] = alpha * a[1, K] @ b[K, N] as sgemv, the pool's threads each
// taking a block of the N outputs (and so of b's rows or columns): OpenBLAS's
// sgemm packs b on every call, which for one row costs 5-10x the product
// (1x1024x256: 62-68 us against 6-12; tools' micro-benchmark in
// docs/cpu-backend.md, "Products of one row").
Step make_gemv_step(const View& a, const View& b, BufferId out, std::int64_t N, std::int64_t K, double alpha) {
  const MatrixLayout la = *matrix_layout(a), lb = *matrix_layout(b);
  Step s;
  s.kind = StepKind::Gemm;
  s.label = "sgemv 1x" + std::to_string(N) + "x" + std::to_string(K);
  s.reads = {a.buffer, b.buffer};
  s.writes = {out};
  const float al = static_cast<float>(alpha);
  // a's K elements are a row, or a column of a transposed layout.
  const auto inc_a = static_cast<blasint>(la.transposed ? la.ld : 1);
  s.run = [=, a_off = a.offset, b_off = b.offset, ab = a.buffer, bb = b.buffer](const RunContext& ctx) {
    const float* A = ctx.at<const float>(ab) + a_off;
    const float* B = ctx.at<const float>(bb) + b_off;
    float* C = ctx.at(out);
    const int threads = ctx.pool ? ctx.pool->size() : 1;
    // Blocks of 64 outputs at least (a cache line of b per row), and one
    // block for a product too small to be worth a second thread.
    const std::int64_t parts =
        2.0 * static_cast<double>(N * K) < 1e5 ? 1 : std::clamp<std::int64_t>(N / 64, 1, threads);
    auto part = [&](std::int64_t p0, std::int64_t p1) {
      for (std::int64_t p = p0; p < p1; ++p) {
        const std::int64_t n0 = N * p / parts / 16 * 16, n1 = p + 1 == parts ? N : N * (p + 1) / parts / 16 * 16;
        if (n1 <= n0) continue;
        if (lb.transposed)  // b is stored N x K: its rows n0..n1 times a
          cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<blasint>(n1 - n0), static_cast<blasint>(K), al,
                      B + n0 * lb.ld, static_cast<blasint>(lb.ld), A, inc_a, 0.0f, C + n0, 1);
        else  // b is K x N: its columns n0..n1, transposed, times a
          cblas_sgemv(CblasRowMajor, CblasTrans, static_cast<blasint>(K), static_cast<blasint>(n1 - n0), al, B + n0,
                      static_cast<blasint>(lb.ld), A, inc_a, 0.0f, C + n0, 1);
      }
    };
    if (parts < 2)
      part(0, 1);
    else
      ctx.pool->parallel_for(parts, part);
  };
  return s;
}

}  // namespace

Step make_gemm_step(const View& a, const View& b, BufferId out, const std::vector<std::int64_t>& out_dims,
                    double alpha) {
  const std::size_t r = out_dims.size();
  const std::int64_t M = out_dims[r - 2], N = out_dims[r - 1], K = a.dims[r - 1];
  MatrixLayout la = *matrix_layout(a), lb = *matrix_layout(b);
  std::vector<std::int64_t> batch(out_dims.begin(), out_dims.end() - 2);
  const std::int64_t nbatch = ir::numel(batch);
  const bool fold = nbatch > 1 && batch_folds(a, b, batch, M);
  std::int64_t m = fold ? M * nbatch : M;
  std::int64_t calls = fold ? 1 : nbatch;
  if (m == 1 && calls == 1) return make_gemv_step(a, b, out, N, K, alpha);

  Step s;
  s.kind = StepKind::Gemm;
  std::ostringstream label;
  label << "sgemm " << m << "x" << N << "x" << K;
  if (calls > 1) label << " x" << calls;
  s.label = label.str();
  s.reads = {a.buffer, b.buffer};
  s.writes = {out};
  const float al = static_cast<float>(alpha);
  // OpenBLAS runs single-threaded (set_library_threads): the pool shares
  // out the batch, or blocks of rows when there are fewer products than
  // threads. OpenBLAS's own threads would spin after each call on the cores
  // the next step needs.
  s.run = [=, a_off = a.offset, b_off = b.offset, a_str = a.strides, b_str = b.strides, ab = a.buffer,
           bb = b.buffer](const RunContext& ctx) {
    const float* A = ctx.at<const float>(ab);
    const float* B = ctx.at<const float>(bb);
    float* C = ctx.at(out);
    const int threads = ctx.pool ? ctx.pool->size() : 1;
    // Whole products per task when there are enough of them (or little work).
    const std::int64_t row_parts = calls >= threads || 2.0 * static_cast<double>(m * N * K) < 4e6
                                       ? 1
                                       : std::min<std::int64_t>(threads, (m + 15) / 16);
    auto part = [&](std::int64_t c, std::int64_t r0, std::int64_t r1) {
      std::int64_t ao = a_off, bo = b_off, rem = c;
      for (std::size_t i = batch.size(); i-- > 0;) {
        std::int64_t idx = rem % batch[i];
        rem /= batch[i];
        ao += idx * a_str[i];
        bo += idx * b_str[i];
      }
      ao += la.transposed ? r0 : r0 * la.ld;  // row r0 of A
      cblas_sgemm(CblasRowMajor, la.transposed ? CblasTrans : CblasNoTrans, lb.transposed ? CblasTrans : CblasNoTrans,
                  static_cast<blasint>(r1 - r0), static_cast<blasint>(N), static_cast<blasint>(K), al, A + ao,
                  static_cast<blasint>(la.ld), B + bo, static_cast<blasint>(lb.ld), 0.0f, C + c * M * N + r0 * N,
                  static_cast<blasint>(N));
    };
    const std::int64_t tasks = calls * row_parts;
    auto run_tasks = [&](std::int64_t t0, std::int64_t t1) {
      for (std::int64_t t = t0; t < t1; ++t) {
        const std::int64_t c = t / row_parts, k = t % row_parts;
        part(c, m * k / row_parts, m * (k + 1) / row_parts);
      }
    };
    if (tasks < 2 || threads < 2)
      run_tasks(0, tasks);
    else
      ctx.pool->parallel_for(tasks, run_tasks);
  };
  return s;
}

std::string dims_text(const std::vector<std::int64_t>& d) {
  std::string s;
  for (std::size_t i = 0; i < d.size(); ++i) s.append(i ? "x" : "").append(std::to_string(d[i]));
  return s;
}

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

memory::dims to_dims(const std::vector<std::int64_t>& v) { return memory::dims(v.begin(), v.end()); }

// A dense View as oneDNN describes it (the offset goes into the address).
// (A size-1 dimension's stride moves no address, but oneDNN reads the
// layout's format from it: an NHWC value whose N has stride 1 is "cdba",
// which only its reference pooling takes, 10 ms where the NHWC kernel takes
// 0.1. So it gets the stride that keeps it where it stands, as
// View::order() sorts it: just outside the real dimensions after it.)
memory::desc plain_desc(const View& v) {
  std::vector<std::int64_t> strides = v.strides;
  std::int64_t outer = 1;
  for (std::size_t i = v.dims.size(); i-- > 0;) {
    if (v.dims[i] == 1)
      strides[i] = outer;
    else
      outer = std::max(outer, v.strides[i] * v.dims[i]);
  }
  return memory::desc(to_dims(v.dims), dt::f32, to_dims(strides));
}

// The strides of a plain layout (no inner blocks, no padding), or nullopt.
std::optional<std::vector<std::int64_t>> plain_strides(const memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked || d.format_desc.blocking.inner_nblks != 0 || d.offset0 != 0) return std::nullopt;
  std::vector<std::int64_t> s;
  for (int i = 0; i < d.ndims; ++i) {
    if (d.padded_dims[i] != d.dims[i]) return std::nullopt;
    s.push_back(d.format_desc.blocking.strides[i]);
  }
  return s;
}

// Same element addresses (strides along size-1 dimensions never matter).
bool same_layout(const memory::desc& a, const memory::desc& b) {
  if (a == b) return true;
  auto sa = plain_strides(a), sb = plain_strides(b);
  if (!sa || !sb || a.dims() != b.dims()) return false;
  const memory::dims dims = a.dims();
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != 1 && (*sa)[i] != (*sb)[i]) return false;
  return true;
}

// oneDNN's activation post-ops compute in the vector unit's sense: ReLU's
// max(x, 0) and clip's max and min turn a NaN into 0 or a bound, where the
// reference's relu and clip (numpy, cuDNN with CUDNN_PROPAGATE_NAN) keep it.
// A convolution's result can only be NaN where an operand holds a NaN or an
// infinity, or where a sum overflows: the step bounds its operands' magnitudes first (one read of
// the source, and of the residual and run-time weights when there are some)
// and, when a NaN cannot be excluded, runs `unfused` (the same primitive
// and layouts, no activation) and the activation as the reference computes
// it after it.
struct OperandBound {
  double taps = 0;                     // products summed into a result element
  float weight_max = 0, bias_max = 0;  // constants' magnitudes (run-time ones are scanned)
};
struct NanKeepingActivation {
  dnnl::primitive unfused;
  OperandBound bound;
};

// Winograd's transforms add and subtract every input of a tile into every
// product, so one infinity or NaN in a tile makes each result of the tile
// NaN where the direct convolution gives an infinity, and only where its
// window reads it; and its intermediate sums grow a few times past the
// result's. Each run bounds the operands as the activation guard does, with
// room for that growth; when the result cannot be shown finite, the step
// runs the direct convolution instead, made when first needed (with its own
// copy of the weights, in its layout, and its own activation guard).
struct WinogradFallback {
  OperandBound bound;
  std::function<LibraryStep(std::vector<std::shared_ptr<void>>&)> make_direct;
  std::optional<Step> direct;
  std::vector<std::shared_ptr<void>> keep;  // the direct step's oneDNN state
};

// The oneDNN objects one step owns. `src`/`dst` are the primitive's
// memories; when the caller's layout differs, `user_*` wrap the caller's
// buffers and the reorders convert.
struct DnnlState {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::primitive prim;
  memory src, dst, weights, bias;
  memory user_src, user_dst, user_skip, user_weights;
  std::vector<std::shared_ptr<std::uint8_t[]>> storage;  // of the memories the step owns
  std::optional<dnnl::reorder> to_src, from_dst, skip_to_dst, to_weights;
  std::optional<View> run_weights, run_bias;   // operands read at every run
  std::optional<NanKeepingActivation> guard;   // with an activation post-op
  std::shared_ptr<WinogradFallback> winograd;  // a Winograd convolution
  ir::Activation activation = ir::Activation::None;
  float clip_min = 0, clip_max = 0;
  // Bounds published between steps (lower/value_bounds.hpp): what the
  // writers of the source and of the residual published, and this step's
  // result; an unguarded convolution's constants, to bound its result by.
  std::shared_ptr<ValueBound> source_bound, skip_bound, result_bound;
  std::optional<OperandBound> unguarded;
};

// Binds the primitive's source to a dense View: directly when the layouts
// agree, else through a reorder built now.
void bind_source(DnnlState& st, const memory::desc& want, const View& x) {
  const memory::desc have = plain_desc(x);
  if (same_layout(want, have)) {
    st.src = memory(want, st.engine, nullptr);
    return;
  }
  st.user_src = memory(have, st.engine, nullptr);
  st.src = owned_memory(want, st.engine, st.storage);
  st.to_src = dnnl::reorder(st.user_src, st.src);
}

// The result's memory: the primitive's layout when plain, else a blocked
// scratch memory converted after the primitive to channels last (NWC, NHWC,
// NDHWC: the layout oneDNN's direct f32 convolutions read and write here,
// so the next one reads it as it is). Returns the strides the result buffer
// is written with.
std::vector<std::int64_t> bind_result(DnnlState& st, const memory::desc& got,
                                      const std::vector<std::int64_t>& out_dims) {
  if (auto s = plain_strides(got)) {
    st.dst = memory(got, st.engine, nullptr);
    return *s;
  }
  st.dst = owned_memory(got, st.engine, st.storage);
  const std::vector<std::int64_t> strides = ir::channels_last_strides(out_dims);
  st.user_dst = memory(memory::desc(to_dims(out_dims), dt::f32, to_dims(strides)), st.engine, nullptr);
  st.from_dst = dnnl::reorder(st.dst, st.user_dst);
  return strides;
}

// ONNX's dilations as oneDNN's: the gaps between taps (1 is none).
memory::dims gaps(const std::vector<std::int64_t>& dilations) {
  memory::dims g;
  for (auto d : dilations) g.push_back(d - 1);
  return g;
}

float* address(const RunContext& ctx, const View& v) { return ctx.at(v.buffer) + v.offset; }

// The primitive's weights (layout `want`) from `w` laid out as `have`:
// constants reordered now, once; run-time ones through a reorder built now
// and run at every run (or bound in place when the layouts agree). The
// bias likewise, copied now or bound at every run.
void bind_weights(DnnlState& st, const memory::desc& want, const memory::desc& have, const LibraryOperand& w,
                  const std::optional<LibraryOperand>& bias, const memory::desc& bias_md) {
  if (w.constant) {
    memory wsrc(have, st.engine,
                const_cast<std::uint8_t*>(w.constant->bytes()) + static_cast<std::size_t>(w.view.offset) * 4);
    st.weights = owned_memory(want, st.engine, st.storage);
    dnnl::reorder(wsrc, st.weights).execute(st.stream, wsrc, st.weights);
  } else {
    st.run_weights = w.view;
    if (same_layout(want, have)) {
      st.weights = memory(want, st.engine, nullptr);
    } else {
      st.user_weights = memory(have, st.engine, nullptr);
      st.weights = owned_memory(want, st.engine, st.storage);
      st.to_weights = dnnl::reorder(st.user_weights, st.weights);
    }
  }
  if (bias && bias->constant) {
    st.bias = owned_memory(bias_md, st.engine, st.storage);
    std::memcpy(st.bias.get_data_handle(), bias->constant->bytes() + static_cast<std::size_t>(bias->view.offset) * 4,
                static_cast<std::size_t>(bias_md.get_size()));
  } else if (bias) {
    st.run_bias = bias->view;
    st.bias = memory(bias_md, st.engine, nullptr);
  }
  st.stream.wait();
}

void add_run_time_reads(const DnnlState& st, Step& s) {
  if (st.run_weights) s.reads.push_back(st.run_weights->buffer);
  if (st.run_bias) s.reads.push_back(st.run_bias->buffer);
}

// The weights and bias arguments of this run (run-time ones bound and
// reordered first).
std::unordered_map<int, memory> weight_args(DnnlState& p, const RunContext& ctx) {
  if (p.run_weights) {
    (p.to_weights ? p.user_weights : p.weights).set_data_handle(address(ctx, *p.run_weights));
    if (p.to_weights) p.to_weights->execute(p.stream, p.user_weights, p.weights);
  }
  if (p.run_bias) p.bias.set_data_handle(address(ctx, *p.run_bias));
  std::unordered_map<int, memory> args{{DNNL_ARG_WEIGHTS, p.weights}};
  if (p.bias) args.emplace(DNNL_ARG_BIAS, p.bias);
  return args;
}

constexpr std::int32_t kInfBits = 0x7f800000;  // |x| >= inf, as bits: not finite

// The largest magnitude among n floats from `p`, as the bits of |x| read as
// an int32 (NaNs' exceed infinity's), so that one pass finds non-finite
// values and bounds the finite ones; it stops once a value reaches `stop`
// (bits). Read in blocks split over the pool, each a max the compiler
// vectorizes, in AVX2 where the CPU has it (chosen when the program loads):
// ResNet-18's max pool step takes 0.05 ms with the scan and without it, 0.18
// with the scan in plain SSE2 (no 32-bit integer max), 0.29 with a float
// compare per element on one thread.
__attribute__((target_clones("avx2", "default"))) std::int32_t max_magnitude_bits(const float* p, std::int64_t n) {
  std::int32_t m = 0;
  for (std::int64_t i = 0; i < n; ++i) m = std::max(m, std::bit_cast<std::int32_t>(p[i]) & 0x7fffffff);
  return m;
}

std::int32_t max_magnitude(const RunContext& ctx, const float* p, std::int64_t n, std::int32_t stop) {
  constexpr std::int64_t kBlock = 4096;
  std::atomic<std::int32_t> top{0};
  auto scan = [&](std::int64_t first, std::int64_t last) {  // blocks
    for (std::int64_t b = first; b < last && top.load(std::memory_order_relaxed) < stop; ++b) {
      const std::int32_t m = max_magnitude_bits(p + b * kBlock, std::min(n, (b + 1) * kBlock) - b * kBlock);
      for (std::int32_t seen = top.load(); m > seen && !top.compare_exchange_weak(seen, m);) {
      }
    }
  };
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  if (blocks >= 16 && ctx.pool && ctx.pool->size() >= 2)
    ctx.pool->parallel_for(blocks, scan);
  else
    scan(0, blocks);
  return top;
}

// The largest magnitude in a memory's whole buffer (a blocked layout's
// padding holds zeros); at least infinity's bits when one is not finite.
std::int32_t max_magnitude(const RunContext& ctx, const memory& m) {
  return max_magnitude(ctx, static_cast<const float*>(m.get_data_handle()),
                       static_cast<std::int64_t>(m.get_desc().get_size() / sizeof(float)), kInfBits);
}

float as_magnitude(std::int32_t bits) { return std::bit_cast<float>(bits); }

// Whether the convolution's result (bound in `p`, the residual already in
// dst) is certainly free of NaN: every operand finite, and the largest
// result a sum of `taps` products can reach (with the bias and the residual)
// below `limit`. (Half of FLT_MAX for a direct sum: rounding grows a sum of
// thousands of terms by well under a percent.)
constexpr double kDirectLimit = std::numeric_limits<float>::max() / 2;
constexpr double kWinogradLimit = kDirectLimit / 1024;  // the transforms' growth, with room
constexpr double kUnknown = std::numeric_limits<double>::infinity();
double known(const std::shared_ptr<ValueBound>& b) { return b ? double{b->known()} : kUnknown; }

std::optional<double> result_bound(const DnnlState& p, const OperandBound& g, const RunContext& ctx, bool sum,
                                   double limit) {
  const std::int32_t w = p.run_weights ? max_magnitude(ctx, p.weights) : std::bit_cast<std::int32_t>(g.weight_max);
  const std::int32_t b = p.run_bias ? max_magnitude(ctx, p.bias) : std::bit_cast<std::int32_t>(g.bias_max);
  if (std::max(w, b) >= kInfBits) return std::nullopt;
  auto total = [&](double x, double s) { return g.taps * x * double{as_magnitude(w)} + double{as_magnitude(b)} + s; };
  // The writers' bounds when they prove it (no read); else the operands read.
  const double x_known = known(p.source_bound), s_known = sum ? known(p.skip_bound) : 0;
  if (total(x_known, s_known) < limit) return total(x_known, s_known);
  const std::int32_t x = max_magnitude(ctx, p.src);
  const std::int32_t s = sum ? max_magnitude(ctx, p.dst) : 0;
  if (std::max(x, s) >= kInfBits) return std::nullopt;
  const double bound = total(as_magnitude(x), as_magnitude(s));
  return bound < limit ? std::optional(bound) : std::nullopt;
}

// An unguarded convolution's result bound, from its writers' bounds only.
double bound_from_writers(const DnnlState& p, const OperandBound& g, bool sum) {
  if (p.run_weights || p.run_bias) return kUnknown;
  return g.taps * known(p.source_bound) * double{g.weight_max} + double{g.bias_max} + (sum ? known(p.skip_bound) : 0);
}

// Publishes `bound` (of the convolution's result before its activation;
// infinite: nothing known) as the result's: clip's bounds cap a finite
// one; ReLU, SiLU and hard swish only shrink a magnitude.
void publish(const DnnlState& p, double bound) {
  if (!p.result_bound) return;
  if (bound < kUnknown && p.activation == ir::Activation::Clip)
    bound = std::min(bound, double{std::max(std::abs(p.clip_min), std::abs(p.clip_max))});
  p.result_bound->publish(bound);
}

// The activation as the reference computes it, over a result that may hold
// NaN: relu's max(x, 0) and clip's bounds keep it (and -0).
void reference_activation(const DnnlState& p, const memory& m) {
  float* y = static_cast<float*>(m.get_data_handle());
  const std::size_t n = m.get_desc().get_size() / sizeof(float);
  switch (p.activation) {
    case ir::Activation::None:
      return;
    case ir::Activation::Relu:
      for (std::size_t i = 0; i < n; ++i) y[i] = y[i] < 0 ? 0.0f : y[i];
      return;
    case ir::Activation::Clip:
      for (std::size_t i = 0; i < n; ++i) y[i] = y[i] < p.clip_min ? p.clip_min : y[i] > p.clip_max ? p.clip_max : y[i];
      return;
    case ir::Activation::Silu:  // (no guard: post_op_drops_nan)
    case ir::Activation::HardSwish:
      return;
  }
}

// Runs `prim` with src/dst (plus `extra` arguments) bound to this run's
// buffers, converting layouts where the step needs to.
void run_primitive(DnnlState& p, const RunContext& ctx, const View& x, BufferId out, const View* skip,
                   std::unordered_map<int, memory> args) {
  (p.to_src ? p.user_src : p.src).set_data_handle(address(ctx, x));
  float* y = ctx.at(out);
  (p.from_dst ? p.user_dst : p.dst).set_data_handle(y);
  if (p.to_src) p.to_src->execute(p.stream, p.user_src, p.src);
  if (skip) {
    float* s = address(ctx, *skip);
    // The sum post-op adds what the result holds: skip, unless it is there already.
    if (s != y || p.from_dst) {
      p.user_skip.set_data_handle(s);
      p.skip_to_dst->execute(p.stream, p.user_skip, p.dst);
    }
  }
  args.emplace(DNNL_ARG_SRC, p.src);
  args.emplace(DNNL_ARG_DST, p.dst);
  if (p.guard || p.winograd) p.stream.wait();  // (the reorders' results are scanned)
  double bound = kUnknown;
  if (p.winograd) {
    const std::optional<double> b = result_bound(p, p.winograd->bound, ctx, skip != nullptr, kWinogradLimit);
    if (!b) {
      WinogradFallback& f = *p.winograd;
      if (!f.direct) f.direct = f.make_direct(f.keep).step;
      f.direct->run(ctx);  // (from the caller's buffers, as this step would have)
      publish(p, kUnknown);
      return;
    }
    bound = *b;
  }
  const std::optional<double> guarded =
      p.guard ? result_bound(p, p.guard->bound, ctx, skip != nullptr, kDirectLimit) : std::nullopt;
  if (p.guard && !guarded) {
    p.guard->unfused.execute(p.stream, args);
    p.stream.wait();
    reference_activation(p, p.dst);
  } else {
    p.prim.execute(p.stream, args);
    if (guarded) bound = *guarded;
    if (p.unguarded) bound = bound_from_writers(p, *p.unguarded, skip != nullptr);
  }
  if (p.from_dst) p.from_dst->execute(p.stream, p.dst, p.user_dst);
  p.stream.wait();
  publish(p, bound);
}

}  // namespace

std::optional<Step> make_packed_gemm_step(const View& a, const View& w, const Buffer& w_buffer, BufferId out,
                                          const std::vector<std::int64_t>& out_dims, double alpha,
                                          std::vector<std::shared_ptr<void>>& keep) {
  const std::size_t r = out_dims.size();
  const std::int64_t M = out_dims[r - 2], N = out_dims[r - 1], K = a.dims[r - 1];
  const std::vector<std::int64_t> batch(out_dims.begin(), out_dims.end() - 2);
  if (!batch_folds(a, w, batch, M) && ir::numel(batch) != 1) return std::nullopt;
  const std::int64_t m = M * ir::numel(batch);
  // A small product runs on the calling thread, as small loop kernels do:
  // oneDNN makes a primitive for the threads OpenMP offers when it is made,
  // and one made for one thread runs without a parallel region (an LSTM
  // step's 4x256x64 product took 2 us on two threads, 1 on one).
  const int team = omp_get_max_threads();
  const bool serial = 2.0 * static_cast<double>(m * N * K) < kSerialProductFlops;
  if (serial) omp_set_num_threads(1);
  struct RestoreTeam {
    int team;
    bool serial;
    ~RestoreTeam() {
      if (serial) omp_set_num_threads(team);
    }
  } restore{team, serial};
  const MatrixLayout la = *matrix_layout(a), lw = *matrix_layout(w);
  auto matrix = [](std::int64_t rows, std::int64_t cols, MatrixLayout l) {
    return memory::desc({rows, cols}, dt::f32, l.transposed ? memory::dims{1, l.ld} : memory::dims{l.ld, 1});
  };
  auto st = std::make_shared<DnnlState>();
  const memory::desc a_md = matrix(m, K, la), y_md({m, N}, dt::f32, tag::ab);
  dnnl::primitive_attr attr;
  if (alpha != 1.0) attr.set_output_scales(0, {static_cast<float>(alpha)});
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, memory::desc({K, N}, dt::f32, tag::any), y_md), attr,
                                  st->engine);
  st->prim = dnnl::matmul(pd);
  memory wsrc(matrix(K, N, lw), st->engine,
              const_cast<std::uint8_t*>(w_buffer.weight->bytes()) + static_cast<std::size_t>(w.offset) * 4);
  st->weights = owned_memory(pd.weights_desc(), st->engine, st->storage);
  dnnl::reorder(wsrc, st->weights).execute(st->stream, wsrc, st->weights);
  st->stream.wait();
  st->src = memory(a_md, st->engine, nullptr);
  st->dst = memory(y_md, st->engine, nullptr);
  keep.push_back(st);
  Step s;
  s.kind = StepKind::Gemm;
  s.label = "oneDNN matmul " + std::to_string(m) + "x" + std::to_string(N) + "x" + std::to_string(K) +
            (serial ? " (packed, one thread)" : " (packed)");
  s.reads = {a.buffer};  // the weights were packed above
  s.writes = {out};
  DnnlState* p = st.get();
  s.run = [p, ab = a.buffer, a_off = a.offset, out](const RunContext& ctx) {
    p->src.set_data_handle(ctx.at(ab) + a_off);
    p->dst.set_data_handle(ctx.at(out));
    p->prim.execute(p->stream, {{DNNL_ARG_SRC, p->src}, {DNNL_ARG_WEIGHTS, p->weights}, {DNNL_ARG_DST, p->dst}});
    p->stream.wait();
  };
  return s;
}

namespace {

// Whether oneDNN's post-op for `a` loses a NaN of the convolution's result
// (its max and min drop one: ReLU and clip), so the fused call needs a guard.
// The swish and hardswish post-ops end multiplying by the result, so a NaN or
// infinity comes out as the reference's mul makes it (NaN for -inf and NaN,
// inf for inf; test_cpu_codegen).
bool post_op_drops_nan(ir::Activation a) { return a == ir::Activation::Relu || a == ir::Activation::Clip; }

// The post-ops a convolution (direct or transposed) takes: the residual sum,
// then the activation.
dnnl::primitive_attr epilogue_attr(const ConvSpec& spec) {
  dnnl::primitive_attr attr;
  dnnl::post_ops po;
  if (spec.sum) po.append_sum(1.0f);
  switch (spec.activation) {
    case ir::Activation::None:
      break;
    case ir::Activation::Relu:
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      break;
    case ir::Activation::Clip:  // oneDNN's bounds are floats, as the result's elements
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, static_cast<float>(spec.clip_min),
                        static_cast<float>(spec.clip_max));
      break;
    case ir::Activation::Silu:  // x sigmoid(alpha x), alpha 1
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, 1.0f, 0.0f);
      break;
    case ir::Activation::HardSwish:
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_hardswish, 0.0f, 0.0f);
      break;
  }
  attr.set_post_ops(po);
  return attr;
}

const char* activation_label(ir::Activation a) {
  switch (a) {
    case ir::Activation::Relu:
      return " +relu";
    case ir::Activation::Clip:
      return " +clip";
    case ir::Activation::Silu:
      return " +silu";
    case ir::Activation::HardSwish:
      return " +hard_swish";
    case ir::Activation::None:
      break;
  }
  return "";
}

// The step of a convolution primitive already made in `st` (`pd` its
// primitive descriptor): operands bound, the residual (when spec.sum)
// brought into the result's layout before it runs.
template <typename PrimitiveDesc>
LibraryStep convolution_step(std::shared_ptr<DnnlState> st, const PrimitiveDesc& pd, const std::string& what,
                             const ConvSpec& spec, const View& x, const LibraryOperand& w,
                             const std::optional<LibraryOperand>& bias, const memory::desc& user_w,
                             const memory::desc& bias_md, const View* skip, BufferId out,
                             std::vector<std::shared_ptr<void>>& keep) {
  bind_weights(*st, pd.weights_desc(), user_w, w, bias, bias_md);
  bind_source(*st, pd.src_desc(), x);
  LibraryStep r;
  r.out_strides = bind_result(*st, pd.dst_desc(), spec.out_dims);
  std::optional<View> skip_view;
  if (spec.sum) {
    skip_view = *skip;
    st->user_skip = memory(plain_desc(*skip), st->engine, nullptr);
    st->skip_to_dst = dnnl::reorder(st->user_skip, st->dst);
  }
  keep.push_back(st);
  Step& s = r.step;
  s.kind = StepKind::Conv;
  s.label = "oneDNN " + what + " " + dims_text(spec.x_dims) + " * " + dims_text(spec.w_dims) +
            (spec.sum ? " +sum" : "") + activation_label(spec.activation) + (st->to_src ? " (src reordered)" : "") +
            (st->from_dst ? " (dst reordered)" : "") + (st->run_weights ? " (weights at run time)" : "");
  s.reads = {x.buffer};
  if (skip_view) s.reads.push_back(skip_view->buffer);
  add_run_time_reads(*st, s);
  s.writes = {out};
  DnnlState* p = st.get();
  s.run = [p, x, out, skip_view](const RunContext& ctx) {
    run_primitive(*p, ctx, x, out, skip_view ? &*skip_view : nullptr, weight_args(*p, ctx));
  };
  return r;
}

}  // namespace

LibraryStep make_conv_step(const ConvSpec& spec, const View& x, const LibraryOperand& w,
                           const std::optional<LibraryOperand>& bias, const View* skip, BufferId out,
                           std::vector<std::shared_ptr<void>>& keep, ValueBounds* bounds) {
  auto st = std::make_shared<DnnlState>();
  // The weights as they are laid out, [O, I, k...]; with groups [G, O/G, I, k...].
  memory::desc user_w = plain_desc(w.view);
  if (spec.group > 1) {
    std::vector<std::int64_t> d = w.view.dims, s = w.view.strides;
    d.insert(d.begin(), spec.group);
    d[1] /= spec.group;
    s.insert(s.begin(), s[0] * d[1]);
    user_w = memory::desc(to_dims(d), dt::f32, to_dims(s));
  }
  // The source and result in the layout oneDNN prefers, or channels last.
  auto layout = [&](const std::vector<std::int64_t>& dims) {
    return spec.channels_last ? memory::desc(to_dims(dims), dt::f32, to_dims(ir::channels_last_strides(dims)))
                              : memory::desc(to_dims(dims), dt::f32, tag::any);
  };
  memory::desc x_md = layout(spec.x_dims), y_md = layout(spec.out_dims);
  memory::desc any_w(user_w.dims(), dt::f32, tag::any);
  memory::desc bias_md = bias ? memory::desc({spec.out_dims[1]}, dt::f32, tag::x) : memory::desc();
  const memory::dims dil = gaps(spec.dilations);
  const dnnl::algorithm algo =
      spec.winograd ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, algo, x_md, any_w, bias_md, y_md,
                                       to_dims(spec.strides), dil, to_dims(spec.pads_begin), to_dims(spec.pads_end));
  // The rules choose Winograd only where oneDNN 2.6 implements it
  // (rulesets/dnnl.rules); a oneDNN without it throws here, and the target
  // makes the direct convolution instead (cpu_target.cpp).
  dnnl::convolution_forward::primitive_desc pd(desc, epilogue_attr(spec), st->engine);
  // oneDNN answers a layout it has no kernel for with its reference loops
  // (a thousand times slower): then there is no channels-last call.
  if (spec.channels_last && std::string_view(pd.impl_info_str()).starts_with("ref"))
    throw dnnl::error(dnnl_unimplemented, "no channels-last kernel for this convolution");
  if (spec.winograd) {
    // The direct convolution it falls back to (below) must write the result
    // in the same layout: channels last, as both do where oneDNN has
    // Winograd kernels; otherwise this is no Winograd step at all.
    auto written = [&](const memory::desc& dst) {
      return plain_strides(dst).value_or(ir::channels_last_strides(spec.out_dims));
    };
    dnnl::convolution_forward::desc direct(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                           x_md, any_w, bias_md, y_md, to_dims(spec.strides), dil,
                                           to_dims(spec.pads_begin), to_dims(spec.pads_end));
    if (written(dnnl::convolution_forward::primitive_desc(direct, epilogue_attr(spec), st->engine).dst_desc()) !=
        written(pd.dst_desc()))
      throw dnnl::error(dnnl_unimplemented, "Winograd and direct convolutions write different layouts");
  }
  st->prim = dnnl::convolution_forward(pd);
  LibraryStep r = convolution_step(st, pd,
                                   spec.winograd        ? "Winograd conv"
                                   : spec.channels_last ? "channels-last conv"
                                                        : "conv",
                                   spec, x, w, bias, user_w, bias_md, skip, out, keep);
  // What the guards below bound a result by: the constants' magnitudes, read now.
  auto constants_bound = [&] {
    const RunContext now;
    OperandBound b;
    b.taps = static_cast<double>(ir::numel(spec.w_dims) / spec.w_dims[0]);
    if (!st->run_weights) b.weight_max = as_magnitude(max_magnitude(now, st->weights));
    if (bias && !st->run_bias) b.bias_max = as_magnitude(max_magnitude(now, st->bias));
    return b;
  };
  st->activation = spec.activation;
  st->clip_min = static_cast<float>(spec.clip_min);
  st->clip_max = static_cast<float>(spec.clip_max);
  if (bounds) {
    // A guarded call reads its operands' bounds (its writers publish them
    // for it); an unguarded one passes them on where they are published.
    const bool guarded = spec.winograd || post_op_drops_nan(spec.activation);
    auto bound_of = [&](BufferId b) { return guarded ? bounds->read(b) : bounds->find(b); };
    st->source_bound = bound_of(x.buffer);
    if (skip) st->skip_bound = bound_of(skip->buffer);
    st->result_bound = bounds->written(out);
  }
  if (spec.winograd) {
    auto fallback = std::make_shared<WinogradFallback>();
    fallback->bound = constants_bound();
    ConvSpec direct = spec;
    direct.winograd = false;
    const std::optional<View> skip_view = skip ? std::optional<View>(*skip) : std::nullopt;
    fallback->make_direct = [direct, x, w, bias, skip_view, out](std::vector<std::shared_ptr<void>>& k) {
      return make_conv_step(direct, x, w, bias, skip_view ? &*skip_view : nullptr, out, k);
    };
    st->winograd = std::move(fallback);
    return r;
  }
  if (post_op_drops_nan(spec.activation)) {
    // The same convolution in the layouts chosen above, without the activation.
    ConvSpec no_relu = spec;
    no_relu.activation = ir::Activation::None;
    dnnl::convolution_forward::desc same(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                         pd.src_desc(), pd.weights_desc(), bias_md, pd.dst_desc(),
                                         to_dims(spec.strides), dil, to_dims(spec.pads_begin), to_dims(spec.pads_end));
    NanKeepingActivation g;
    g.unfused = dnnl::convolution_forward({same, epilogue_attr(no_relu), st->engine});
    g.bound = constants_bound();
    st->guard = std::move(g);
  } else if (st->source_bound && st->result_bound) {
    st->unguarded = constants_bound();
  }
  return r;
}

LibraryStep make_conv_transpose_step(const ConvSpec& spec, const View& x, const LibraryOperand& w,
                                     const std::optional<LibraryOperand>& bias, BufferId out,
                                     std::vector<std::shared_ptr<void>>& keep) {
  auto st = std::make_shared<DnnlState>();
  // ONNX's weights are [C, M/G, k...] (input channels first); oneDNN's are
  // [M, C, k...], or [G, M/G, C/G, k...]: the same memory, strides permuted.
  const std::int64_t G = spec.group, C = spec.w_dims[0], mpg = spec.w_dims[1], M = mpg * G;
  const std::vector<std::int64_t>& vs = w.view.strides;
  std::vector<std::int64_t> wd{M, C}, ws{vs[1], vs[0]};
  if (G > 1) {
    wd = {G, mpg, C / G};
    ws = {vs[0] * (C / G), vs[1], vs[0]};
  }
  wd.insert(wd.end(), spec.w_dims.begin() + 2, spec.w_dims.end());
  ws.insert(ws.end(), vs.begin() + 2, vs.end());
  const memory::desc user_w(to_dims(wd), dt::f32, to_dims(ws));
  memory::desc any_x(to_dims(spec.x_dims), dt::f32, tag::any), any_y(to_dims(spec.out_dims), dt::f32, tag::any);
  memory::desc any_w(to_dims(wd), dt::f32, tag::any);
  memory::desc bias_md = bias ? memory::desc({M}, dt::f32, tag::x) : memory::desc();
  const memory::dims dil = gaps(spec.dilations);
  dnnl::deconvolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                         any_x, any_w, bias_md, any_y, to_dims(spec.strides), dil,
                                         to_dims(spec.pads_begin), to_dims(spec.pads_end));
  dnnl::deconvolution_forward::primitive_desc pd(desc, epilogue_attr(spec), st->engine);
  st->prim = dnnl::deconvolution_forward(pd);
  return convolution_step(st, pd, "conv_transpose", spec, x, w, bias, user_w, bias_md, nullptr, out, keep);
}

namespace {

// The window geometry of a pool step, and its output's spatial dims.
ir::WindowGeometry pool_geometry(const PoolSpec& spec) {
  return {spec.kernel,     spec.strides,  spec.dilations,
          spec.pads_begin, spec.pads_end, std::vector<std::int64_t>(spec.out_dims.begin() + 2, spec.out_dims.end())};
}

// Calls f(result offset, the offsets of the taps inside the input, the
// offset of the (n, c) plane to add to them) for every result element of a
// pool step (`out_strides` the result's strides, x's its own), through
// ir::for_window, the reference kernels' walk.
template <class F>
void for_each_window(const PoolSpec& spec, const View& x, const std::vector<std::int64_t>& out_strides, F&& f) {
  const ir::WindowGeometry w = pool_geometry(spec);
  const std::vector<std::int64_t> spatial(spec.x_dims.begin() + 2, spec.x_dims.end());
  std::vector<std::int64_t> taps;
  for (std::int64_t op = 0; op < ir::numel(w.out); ++op) {
    const std::vector<std::int64_t> o = ir::unflatten(op, w.out);
    std::int64_t y_at = 0, x_at = x.offset;
    for (std::size_t d = 0; d < o.size(); ++d) y_at += o[d] * out_strides[2 + d];
    taps.clear();
    ir::for_window(w, o, spatial, [&](const std::vector<std::int64_t>& pos, const std::vector<std::int64_t>&, bool in) {
      std::int64_t at = x_at;
      for (std::size_t d = 0; d < pos.size(); ++d) at += pos[d] * x.strides[2 + d];
      if (in) taps.push_back(at);
    });
    for (std::int64_t n = 0; n < spec.out_dims[0]; ++n)
      for (std::int64_t c = 0; c < spec.out_dims[1]; ++c)
        f(y_at + n * out_strides[0] + c * out_strides[1], taps, n * x.strides[0] + c * x.strides[1]);
  }
}

// oneDNN's max pooling lets a NaN lose to a number, and gives -FLT_MAX
// (its start) for a window of -inf; ONNX's reference (and cuDNN with
// CUDNN_PROPAGATE_NAN, and Saturn's own pooling) gives NaN and -inf.
// Computes every window as the reference does (scalar::max: NaN when one
// tap is, -inf for none).
void exact_max_windows(const PoolSpec& spec, const float* base, const View& x, float* y,
                       const std::vector<std::int64_t>& out_strides) {
  for_each_window(spec, x, out_strides,
                  [&](std::int64_t y_at, const std::vector<std::int64_t>& taps, std::int64_t plane) {
                    double m = -std::numeric_limits<double>::infinity();
                    for (std::int64_t t : taps) m = ir::scalar::max(m, base[plane + t]);
                    y[y_at] = static_cast<float>(m);
                  });
}

// The result's offsets of the windows that hold no input element (padding
// only: dilated windows, ceil_mode). oneDNN's max pooling gives them
// -FLT_MAX; the reference gives -inf (max) and 0 (avg).
std::vector<std::int64_t> empty_windows(const PoolSpec& spec, const View& x,
                                        const std::vector<std::int64_t>& out_strides) {
  std::vector<std::int64_t> offsets;
  // A window is empty where its taps miss the input along some dimension:
  // the walk over every window (8 ms of ResNet-18's compile) only then.
  bool any = false;
  for (std::size_t j = 0; j < spec.kernel.size(); ++j)
    for (std::int64_t o = 0; o < spec.out_dims[2 + j]; ++o) {
      bool inside = false;
      for (std::int64_t t = 0; t < spec.kernel[j]; ++t) {
        const std::int64_t at = o * spec.strides[j] - spec.pads_begin[j] + t * spec.dilations[j];
        inside = inside || (at >= 0 && at < spec.x_dims[2 + j]);
      }
      any = any || !inside;
    }
  if (!any) return offsets;
  for_each_window(spec, x, out_strides, [&](std::int64_t y_at, const std::vector<std::int64_t>& taps, std::int64_t) {
    if (taps.empty()) offsets.push_back(y_at);
  });
  return offsets;
}

}  // namespace

LibraryStep make_pool_step(const PoolSpec& spec, const View& x, BufferId out, std::vector<std::shared_ptr<void>>& keep,
                           ValueBounds* bounds) {
  auto st = std::make_shared<DnnlState>();
  memory::desc src_md = plain_desc(x), any_y(to_dims(spec.out_dims), dt::f32, tag::any);
  auto alg = spec.max                 ? dnnl::algorithm::pooling_max
             : spec.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                      : dnnl::algorithm::pooling_avg_exclude_padding;
  const memory::dims dil = gaps(spec.dilations);
  dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, alg, src_md, any_y, to_dims(spec.strides),
                                      to_dims(spec.kernel), dil, to_dims(spec.pads_begin), to_dims(spec.pads_end));
  dnnl::pooling_v2_forward::primitive_desc pd(desc, st->engine);
  st->prim = dnnl::pooling_v2_forward(pd);
  bind_source(*st, pd.src_desc(), x);
  LibraryStep r;
  r.out_strides = bind_result(*st, pd.dst_desc(), spec.out_dims);
  if (bounds) {
    st->source_bound = spec.max ? bounds->read(x.buffer) : bounds->find(x.buffer);  // (max: its NaN scan)
    st->result_bound = bounds->written(out);
  }
  keep.push_back(st);
  Step& s = r.step;
  s.kind = StepKind::Pool;
  s.label = std::string("oneDNN ") + (spec.max ? "max" : "avg") + " pool " + dims_text(spec.x_dims);
  s.reads = {x.buffer};
  s.writes = {out};
  DnnlState* p = st.get();
  s.run = [p, x, out, spec, out_strides = r.out_strides,
           empty = empty_windows(spec, x, r.out_strides)](const RunContext& ctx) {
    run_primitive(*p, ctx, x, out, nullptr, {});
    float* y = ctx.at<float>(out);
    for (std::int64_t off : empty) y[off] = spec.max ? -std::numeric_limits<float>::infinity() : 0.0f;
    // (A pass over the input, unless its writer's bound shows it finite; the
    // windows rewritten only where it holds a NaN or an infinity.)
    double bound = known(p->source_bound);
    if (spec.max && bound == kUnknown) {
      const std::int32_t m = max_magnitude(ctx, address(ctx, x), ir::numel(x.dims), kInfBits);
      if (m >= kInfBits)
        exact_max_windows(spec, ctx.at<const float>(x.buffer), x, y, out_strides);
      else
        bound = as_magnitude(m);
    }
    // (A maximum or an average is no larger than its taps; an empty
    // window's -inf is.)
    if (p->result_bound) p->result_bound->publish(empty.empty() || !spec.max ? bound : kUnknown);
  };
  return r;
}

std::optional<Step> make_reorder_step(BufferId src, std::int64_t offset, const std::vector<std::int64_t>& dims,
                                      const std::vector<std::int64_t>& src_strides, BufferId out,
                                      const std::string& label, std::vector<std::shared_ptr<void>>& keep) {
  auto st = std::make_shared<DnnlState>();
  try {
    st->src = memory(memory::desc(to_dims(dims), dt::f32, to_dims(src_strides)), st->engine, nullptr);
    st->dst = memory(memory::desc(to_dims(dims), dt::f32, to_dims(row_major_strides(dims))), st->engine, nullptr);
    st->prim = dnnl::reorder(st->src, st->dst);
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
  keep.push_back(st);
  Step s;
  s.kind = StepKind::Copy;
  s.label = label + " (oneDNN reorder)";
  s.reads = {src};
  s.writes = {out};
  DnnlState* p = st.get();
  s.run = [p, src, offset, out](const RunContext& ctx) {
    p->src.set_data_handle(ctx.at(src) + offset);
    p->dst.set_data_handle(ctx.at(out));
    p->prim.execute(p->stream, {{DNNL_ARG_FROM, p->src}, {DNNL_ARG_TO, p->dst}});
    p->stream.wait();
  };
  return s;
}

void set_library_threads(int n) {
  openblas_set_num_threads(1);  // the pool shares out sgemm calls (make_gemm_step)
  omp_set_num_threads(n);       // oneDNN's threads
}

}  // namespace saturn::lower
