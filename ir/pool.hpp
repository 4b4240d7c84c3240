// max_pool / avg_pool geometry and meaning for any window: strides,
// dilations, one-sided pads, ceil_mode, count_include_pad and MaxPool's
// Indices. The op's reference kernel (ir/ops_nn.cpp) is the definition;
// pool_planes computes the same on plain arrays for the lowering's steps
// (lower/host_steps.cpp), and the CUDA kernel (cuda_pool_source) walks the
// same taps in the same order, so the first maximum is the same element.
//
// Meaning: result position o along spatial axis d takes input positions
// p = o stride - pads_begin + k dilation, k in [0, kernel), in row-major
// order of k. max: the NaN-propagating maximum of the taps inside the input
// (-inf, or the type's lowest value, when none is), and its flat index in
// the whole input (row-major, or column-major for storage_order 1), the
// first tap that is strictly greater than all before it. avg: the sum of
// the taps inside, over their count, or with count_include_pad over the
// taps inside the declared padding [-pads_begin, size + pads_end) (which
// ceil_mode's last window may pass), summed in double.
//
// Invariant: pool_planes writes only the results of planes [begin, end).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "ir/window.hpp"

namespace saturn::ir {

struct PoolWindow {
  std::vector<std::int64_t> x_dims;  // [N C spatial...]
  WindowGeometry w;
  bool max = true, include_pad = false, column_major = false;

  std::size_t rank() const { return w.kernel.size(); }
  std::int64_t planes() const { return x_dims[0] * x_dims[1]; }
  std::int64_t plane() const {
    std::int64_t n = 1;
    for (std::size_t d = 2; d < x_dims.size(); ++d) n *= x_dims[d];
    return n;
  }
  std::int64_t out_plane() const {
    std::int64_t n = 1;
    for (auto o : w.out) n *= o;
    return n;
  }
  std::vector<std::int64_t> out_dims() const {
    std::vector<std::int64_t> d{x_dims[0], x_dims[1]};
    d.insert(d.end(), w.out.begin(), w.out.end());
    return d;
  }
  // The multiplier of input axis `d` (0 = N, 1 = C, then spatial) in an
  // index of the Indices output.
  std::int64_t index_stride(std::size_t d) const {
    std::int64_t s = 1;
    if (column_major)
      for (std::size_t k = 0; k < d; ++k) s *= x_dims[k];
    else
      for (std::size_t k = d + 1; k < x_dims.size(); ++k) s *= x_dims[k];
    return s;
  }
};

// The op's attributes over an input of `x_dims` (rank >= 3). Throws
// ShapeError as window_geometry does.
inline PoolWindow pool_window(const Attrs& a, const std::vector<std::int64_t>& x_dims, bool max) {
  PoolWindow p;
  p.x_dims = x_dims;
  p.w = window_geometry(a, std::vector<std::int64_t>(x_dims.begin() + 2, x_dims.end()), a.ints("kernel_shape"),
                        a.i("ceil_mode", 0) != 0);
  p.max = max;
  p.include_pad = a.i("count_include_pad", 0) != 0;
  p.column_major = a.i("storage_order", 0) != 0;
  return p;
}

// The padding the windows read past each end of the spatial axes: the
// begin padding, and at the end as far as the last window reaches (explicit
// padding, or ceil_mode's last window; 0 where the windows end inside x).
// A pooling over x padded so (with its identity) reads only in-bounds taps.
inline std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> reached_pads(const PoolWindow& p) {
  std::vector<std::int64_t> end;
  for (std::size_t j = 0; j < p.rank(); ++j) {
    const std::int64_t reach = (p.w.out[j] - 1) * p.w.strides[j] + (p.w.kernel[j] - 1) * p.w.dilations[j] + 1;
    end.push_back(std::max<std::int64_t>(0, reach - p.w.pads_begin[j] - p.x_dims[2 + j]));
  }
  return {p.w.pads_begin, end};
}

// Results of planes [begin, end) of x (row-major [N C spatial...]) into out
// and, when not null, indices (max only). T: a float type for avg; any
// arithmetic type for max.
template <class T>
void pool_planes(const PoolWindow& p, const T* x, T* out, std::int64_t* indices, std::size_t begin, std::size_t end) {
  const std::size_t r = p.rank();
  const std::int64_t plane = p.plane(), out_plane = p.out_plane();
  std::int64_t taps = 1;
  for (auto k : p.w.kernel) taps *= k;
  std::vector<std::int64_t> o(r), k(r), pos(r);
  const T lowest =
      std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  for (std::size_t nc = begin; nc < end; ++nc) {
    const T* xp = x + static_cast<std::int64_t>(nc) * plane;
    const std::int64_t index_base = static_cast<std::int64_t>(nc) / p.x_dims[1] * p.index_stride(0) +
                                    static_cast<std::int64_t>(nc) % p.x_dims[1] * p.index_stride(1);
    std::fill(o.begin(), o.end(), 0);
    for (std::int64_t op = 0; op < out_plane; ++op) {
      T best = lowest;
      double sum = 0;
      std::int64_t count = 0, arg = -1;
      bool any = false;
      std::fill(k.begin(), k.end(), 0);
      for (std::int64_t t = 0; t < taps; ++t) {
        bool inside = true, padded = true;
        std::int64_t at = 0, flat = index_base;
        for (std::size_t d = 0; d < r; ++d) {
          pos[d] = o[d] * p.w.strides[d] - p.w.pads_begin[d] + k[d] * p.w.dilations[d];
          const std::int64_t size = p.x_dims[2 + d];
          inside &= pos[d] >= 0 && pos[d] < size;
          padded &= pos[d] >= -p.w.pads_begin[d] && pos[d] < size + p.w.pads_end[d];
          at = at * size + pos[d];
          flat += pos[d] * p.index_stride(2 + d);
        }
        if (inside) {
          const T v = xp[at];
          if (p.max) {
            if (arg < 0 || v > best) arg = flat;
            if constexpr (std::is_floating_point_v<T>)
              best = !any                                  ? v
                     : (std::isnan(best) || std::isnan(v)) ? std::numeric_limits<T>::quiet_NaN()
                                                           : (best < v ? v : best);
            else
              best = !any || best < v ? v : best;
          } else {
            sum += static_cast<double>(v);
          }
          any = true;
          ++count;
        } else if (p.include_pad && padded) {
          ++count;
        }
        for (std::size_t d = r; d-- > 0;) {  // the next tap, row-major
          if (++k[d] < p.w.kernel[d]) break;
          k[d] = 0;
        }
      }
      const std::int64_t y = static_cast<std::int64_t>(nc) * out_plane + op;
      if (p.max) {
        out[y] = best;
        if (indices) indices[y] = arg;
      } else {
        out[y] = static_cast<T>(count ? sum / static_cast<double>(count) : 0.0);
      }
      for (std::size_t d = r; d-- > 0;) {  // the next result position, row-major
        if (++o[d] < p.w.out[d]) break;
        o[d] = 0;
      }
    }
  }
}

}  // namespace saturn::ir
