#include "lower/host_steps.hpp"

#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace saturn::lower {

namespace {

using ir::DType;

// Runs fn(begin, end) over `rows` rows of `row_bytes` each: split over the
// pool from 256 KiB in all, on the calling thread below (waking the pool
// costs more).
template <class Fn>
void split_rows(const RunContext& ctx, std::size_t rows, std::size_t row_bytes, const Fn& fn) {
  if (rows >= 2 && rows * row_bytes >= (1u << 18) && ctx.pool && ctx.pool->size() >= 2)
    ctx.pool->parallel_for(static_cast<std::int64_t>(rows), [&](std::int64_t b, std::int64_t e) {
      fn(static_cast<std::size_t>(b), static_cast<std::size_t>(e));
    });
  else
    fn(0, rows);
}

// A linear resize's last axis (two taps per result element) in f32: each
// element's source indices and weights as 32-bit values, which vector
// units gather and multiply (ResizeAxis keeps int64 and double, as the
// reference reads them).
struct LastAxisLerp {
  std::vector<std::int32_t> i0, i1;
  std::vector<float> w0, w1;
  std::vector<std::uint8_t> outside;
};

LastAxisLerp last_axis_lerp(const ir::ResizeAxis& r) {
  LastAxisLerp l;
  for (std::int64_t j = 0; j < r.out; ++j) {
    const auto at = static_cast<std::size_t>(2 * j);
    l.i0.push_back(static_cast<std::int32_t>(r.index[at]));
    l.i1.push_back(static_cast<std::int32_t>(r.index[at + 1]));
    l.w0.push_back(static_cast<float>(r.weight[at]));
    l.w1.push_back(static_cast<float>(r.weight[at + 1]));
    l.outside.push_back(static_cast<std::uint8_t>(r.outside[static_cast<std::size_t>(j)]));
  }
  return l;
}

// Elements [j0, j1) of one result row from its source row, the taps summed
// in order as resize_pass_rows sums them. Cloned for AVX-512 and AVX2,
// chosen when the program loads: there the loop vectorizes (its reads of
// the source row are gathers), in baseline x86-64 it stays scalar ([1 64
// 128 256] from [1 64 128 128] on 1 thread: 5.6 ms as resize_pass_rows'
// loop, 2.0 ms here).
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default"))) void lerp_row(
    const std::int32_t* __restrict i0, const std::int32_t* __restrict i1, const float* __restrict w0,
    const float* __restrict w1, const std::uint8_t* __restrict outside, const float* __restrict src,
    float* __restrict dst, float fill, std::size_t j0, std::size_t j1) {
  for (std::size_t j = j0; j < j1; ++j) {
    float acc = 0.0f + w0[j] * src[i0[j]];
    acc += w1[j] * src[i1[j]];
    dst[j] = outside[j] ? fill : acc;
  }
}

Step copy_step(StepKind kind, const std::string& label, std::vector<BufferId> reads, std::vector<BufferId> writes) {
  Step s;
  s.kind = kind;
  s.label = label;
  s.reads = std::move(reads);
  s.writes = std::move(writes);
  return s;
}

}  // namespace

Step host_gather_step(const ir::GatherRows& g, bool i64, BufferId src, BufferId idx, BufferId y,
                      const std::string& label, const std::string& node) {
  Step s = copy_step(StepKind::Copy, label, {src, idx}, {y});
  s.run = [g, src, idx, y, i64, node](const RunContext& ctx) {
    const auto* i64s = ctx.at<const std::int64_t>(idx);
    const auto* i32s = ctx.at<const std::int32_t>(idx);
    auto index = [&](std::size_t j) -> std::int64_t { return i64 ? i64s[j] : i32s[j]; };
    try {  // (rows without elements read nothing, and are not checked, as in the op's kernel)
      for (std::size_t j = 0; j < g.count && g.row_bytes; ++j) ir::gathered_row(index(j), g.rows);
    } catch (const ir::ShapeError& e) {
      throw std::runtime_error(node + ": " + e.message);
    }
    const std::uint8_t* d = ctx.at<const std::uint8_t>(src);
    std::uint8_t* out = ctx.at<std::uint8_t>(y);
    split_rows(ctx, g.result_rows(), g.row_bytes,
               [&](std::size_t b, std::size_t e) { ir::gather_copy(g, d, index, out, b, e); });
  };
  return s;
}

Step host_gather_elements_step(const ir::GatherElements& g, std::size_t count, bool i64, BufferId src, BufferId idx,
                               BufferId y, const std::string& label, const std::string& node) {
  Step s = copy_step(StepKind::Copy, label, {src, idx}, {y});
  s.run = [g, src, idx, y, i64, count, node](const RunContext& ctx) {
    const auto* i64s = ctx.at<const std::int64_t>(idx);
    const auto* i32s = ctx.at<const std::int32_t>(idx);
    auto index = [&](std::size_t j) -> std::int64_t { return i64 ? i64s[j] : i32s[j]; };
    try {
      for (std::size_t j = 0; j < count; ++j) ir::gathered_element(index(j), g.n);
    } catch (const ir::ShapeError& e) {
      throw std::runtime_error(node + ": " + e.message);
    }
    const std::uint8_t* d = ctx.at<const std::uint8_t>(src);
    std::uint8_t* out = ctx.at<std::uint8_t>(y);
    split_rows(ctx, g.result_rows(), g.row_length() * g.element_bytes,
               [&](std::size_t b, std::size_t e) { ir::gather_elements_copy(g, d, index, out, b, e); });
  };
  return s;
}

Step host_resize_pass_step(const ir::ResizePass& pass, std::size_t esize, std::uint64_t fill, BufferId src,
                           BufferId dst, const std::string& label) {
  Step s = copy_step(pass.taps.taps == 1 ? StepKind::Copy : StepKind::Kernel, label, {src}, {dst});
  if (pass.taps.taps == 2 && pass.inner == 1 && esize == 4 && pass.taps.in <= INT32_MAX) {
    auto lerp = std::make_shared<const LastAxisLerp>(last_axis_lerp(pass.taps));
    const auto in = static_cast<std::size_t>(pass.taps.in), out = static_cast<std::size_t>(pass.taps.out);
    s.run = [in, out, rows = pass.rows(), src, dst, fill, lerp](const RunContext& ctx) {
      float fill_as;
      std::memcpy(&fill_as, &fill, sizeof fill_as);
      const float* x = ctx.at<const float>(src);
      float* y = ctx.at<float>(dst);
      split_rows(ctx, rows, sizeof(float), [&](std::size_t begin, std::size_t end) {
        for (std::size_t row = begin; row < end;) {  // runs of one source row
          const std::size_t o = row / out, j0 = row % out, j1 = std::min(out, j0 + (end - row));
          lerp_row(lerp->i0.data(), lerp->i1.data(), lerp->w0.data(), lerp->w1.data(), lerp->outside.data(), x + o * in,
                   y + o * out, fill_as, j0, j1);
          row += j1 - j0;
        }
      });
    };
    return s;
  }
  s.run = [pass, src, dst, esize, fill](const RunContext& ctx) {
    const std::size_t row_bytes = static_cast<std::size_t>(pass.inner) * esize;
    auto rows = [&](auto element) {
      using T = decltype(element);
      T fill_as;
      std::memcpy(&fill_as, &fill, sizeof(T));
      split_rows(ctx, pass.rows(), row_bytes, [&](std::size_t b, std::size_t e) {
        ir::resize_pass_rows<T, float>(pass, ctx.at<const T>(src), ctx.at<T>(dst), fill_as, b, e);
      });
    };
    if (pass.taps.taps != 1)
      rows(float{});
    else if (esize == 8)  // copies: elements as unsigned integers of their size
      rows(std::uint64_t{});
    else if (esize == 4)
      rows(std::uint32_t{});
    else if (esize == 2)
      rows(std::uint16_t{});
    else
      rows(std::uint8_t{});
  };
  return s;
}

Step host_pad_step(const ir::PadRows& p, const std::vector<std::uint8_t>& fill, BufferId src, BufferId y,
                   const std::string& label) {
  Step s = copy_step(StepKind::Copy, label, {src}, {y});
  s.run = [p, src, y, fill](const RunContext& ctx) {
    const std::uint8_t* in = ctx.at<const std::uint8_t>(src);
    std::uint8_t* o = ctx.at<std::uint8_t>(y);
    const std::size_t row_bytes = static_cast<std::size_t>(p.out_dims.back()) * p.element_bytes;
    split_rows(ctx, p.rows(), row_bytes,
               [&](std::size_t b, std::size_t e) { ir::pad_copy(p, in, fill.data(), o, b, e); });
  };
  return s;
}

Step host_trilu_step(const ir::TriluRows& t, BufferId src, BufferId y, const std::string& label) {
  Step s = copy_step(StepKind::Copy, label, {src}, {y});
  s.run = [t, src, y](const RunContext& ctx) {
    const std::uint8_t* in = ctx.at<const std::uint8_t>(src);
    std::uint8_t* o = ctx.at<std::uint8_t>(y);
    split_rows(ctx, t.result_rows(), static_cast<std::size_t>(t.cols) * t.element_bytes,
               [&](std::size_t b, std::size_t e) { ir::trilu_copy(t, in, o, b, e); });
  };
  return s;
}

Step host_arg_reduce_step(const ir::ArgReduce& g, DType t, BufferId src, BufferId y, const std::string& label) {
  Step s = copy_step(StepKind::ArgReduce, label, {src}, {y});
  s.run = [g, src, y, t](const RunContext& ctx) {
    std::int64_t* out = ctx.at<std::int64_t>(y);
    const std::size_t block_bytes = g.count * g.inner * ir::dtype_size(t);
    auto rows = [&](const auto* v) {
      split_rows(ctx, g.outer, block_bytes, [&](std::size_t b, std::size_t e) {
        ir::arg_reduce(
            g, [v](std::size_t i) { return v[i]; }, out, b, e);
      });
    };
    if (t == DType::F32)
      rows(ctx.at<const float>(src));
    else if (t == DType::I64)
      rows(ctx.at<const std::int64_t>(src));
    else
      rows(ctx.at<const std::int32_t>(src));
  };
  return s;
}

Step host_pool_step(const ir::PoolWindow& p, DType t, BufferId src, BufferId y, std::optional<BufferId> idx,
                    const std::string& label) {
  Step s = copy_step(StepKind::Pool, label, {src}, idx ? std::vector<BufferId>{*idx, y} : std::vector<BufferId>{y});
  std::int64_t taps = 1;
  for (auto k : p.w.kernel) taps *= k;
  const std::size_t plane_bytes = static_cast<std::size_t>(p.out_plane() * taps) * ir::dtype_size(t);
  s.run = [p, src, y, idx, t, plane_bytes](const RunContext& ctx) {
    std::int64_t* at = idx ? ctx.at<std::int64_t>(*idx) : nullptr;
    auto planes = [&](auto element) {
      using T = decltype(element);
      split_rows(ctx, static_cast<std::size_t>(p.planes()), plane_bytes, [&](std::size_t b, std::size_t e) {
        ir::pool_planes<T>(p, ctx.at<const T>(src), ctx.at<T>(y), at, b, e);
      });
    };
    switch (t) {
      case DType::F32:
        return planes(float{});
      case DType::F64:
        return planes(double{});
      case DType::I64:
        return planes(std::int64_t{});
      case DType::I32:
        return planes(std::int32_t{});
      case DType::I8:
        return planes(std::int8_t{});
      default:
        return planes(std::uint8_t{});
    }
  };
  return s;
}

}  // namespace saturn::lower
