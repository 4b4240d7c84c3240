#include "pipeline/movement_adjoints.hpp"

#include <algorithm>
#include <limits>
#include <optional>

#include "ir/window.hpp"

namespace saturn::pipeline {

// ONNX slice semantics, one axis at a time: a negative step reads the
// axis backwards (dy is reversed, and read forwards from the last index
// read), a step s > 1 reads every s-th element (dy's are spread s apart),
// then zeros pad them to x's dims.
TensorRef unslice(GraphBuilder& b, const ir::Attrs& attrs, TensorRef dy, const TensorRef& x) {
  auto xd = static_dims_of(x);
  auto rank = static_cast<std::int64_t>(xd.size());
  auto starts = attrs.ints("starts"), ends = attrs.ints("ends"), axes = attrs.ints("axes"), steps = attrs.ints("steps");
  if (axes.empty())
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  for (std::size_t i = 0; i < axes.size() && i < starts.size() && i < ends.size(); ++i) {
    const std::size_t a = static_cast<std::size_t>(normalize_axis(axes[i], rank));
    const std::int64_t d = xd[a], step = i < steps.size() ? steps[i] : 1;
    if (step == 0) build_error("slice: a step of 0");
    std::int64_t s = starts[i] < 0 ? starts[i] + d : starts[i], t = ends[i] < 0 ? ends[i] + d : ends[i];
    std::int64_t count;
    if (step > 0) {
      s = std::clamp<std::int64_t>(s, 0, d);
      t = std::clamp<std::int64_t>(t, 0, d);
      count = std::max<std::int64_t>(0, (t - s + step - 1) / step);
    } else {
      s = std::clamp<std::int64_t>(s, 0, d - 1);
      t = std::clamp<std::int64_t>(t, -1, d - 1);
      count = std::max<std::int64_t>(0, (s - t + (-step) - 1) / (-step));
    }
    auto dd = static_dims_of(dy);
    std::int64_t first = s, stride = step;
    if (step < 0 && count > 0) {
      ir::Attrs rev;
      rev.set("starts", std::vector<std::int64_t>{-1});
      rev.set("ends", std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min()});
      rev.set("axes", std::vector<std::int64_t>{static_cast<std::int64_t>(a)});
      rev.set("steps", std::vector<std::int64_t>{-1});
      dy = b.apply1("slice", {dy}, rev);
      first = s + (count - 1) * step;
      stride = -step;
    }
    std::int64_t span = count;  // the extent dy covers in x, from `first`
    if (stride > 1 && count > 0) {
      std::vector<std::int64_t> split = dd, spread = dd;
      split.insert(split.begin() + static_cast<std::ptrdiff_t>(a) + 1, 1);
      spread[a] = count * stride;
      std::vector<std::int64_t> pads(2 * split.size(), 0);
      pads[split.size() + a + 1] = stride - 1;
      ir::Attrs p;
      p.set("pads", pads);
      dy = b.reshape_to(b.apply1("pad", {b.reshape_to(dy, split)}, p), spread);
      span = count * stride;
    }
    std::vector<std::int64_t> pads(2 * xd.size(), 0);
    pads[a] = count > 0 ? first : 0;
    pads[xd.size() + a] = d - (count > 0 ? first : 0) - span;  // negative: the spread's tail cut off
    if (std::any_of(pads.begin(), pads.end(), [](std::int64_t v) { return v != 0; })) {
      ir::Attrs p;
      p.set("pads", pads);
      dy = b.apply1("pad", {dy}, p);
    }
  }
  return dy;
}

namespace {

struct Windows {
  ir::WindowGeometry geometry;
  std::vector<std::int64_t> extra_end;  // past the pads, so that ceil_mode's last window fits
  std::size_t lead = 0;
};
Windows windows_of(const ir::Attrs& attrs, const TensorRef& x, const std::vector<std::int64_t>& kernel) {
  auto xd = static_dims_of(x);
  if (kernel.empty() || kernel.size() > xd.size())
    build_error("windows: a kernel of rank " + std::to_string(kernel.size()));
  Windows w;
  w.lead = xd.size() - kernel.size();
  std::vector<std::int64_t> spatial(xd.begin() + static_cast<std::ptrdiff_t>(w.lead), xd.end());
  try {
    w.geometry = ir::window_geometry(attrs, spatial, kernel, attrs.i("ceil_mode", 0) != 0);
  } catch (const ir::ShapeError& err) {
    build_error(err.message);
  }
  const ir::WindowGeometry& g = w.geometry;
  for (std::size_t d = 0; d < kernel.size(); ++d) {
    std::int64_t padded = spatial[d] + g.pads_begin[d] + g.pads_end[d];
    std::int64_t need = (g.out[d] - 1) * g.strides[d] + (kernel[d] - 1) * g.dilations[d] + 1;
    w.extra_end.push_back(std::max<std::int64_t>(0, need - padded));
  }
  return w;
}

// Windows that tile the input (strides = kernel, no padding or
// dilation): viewing and summing back are a reshape and a transpose.
bool tiling(const Windows& w) {
  const ir::WindowGeometry& g = w.geometry;
  for (std::size_t d = 0; d < g.kernel.size(); ++d)
    if (g.strides[d] != g.kernel[d] || g.dilations[d] != 1 || g.pads_begin[d] != 0 || g.pads_end[d] != 0 ||
        w.extra_end[d] != 0)
      return false;
  return true;
}
std::vector<std::int64_t> inverse(const std::vector<std::int64_t>& p) {
  std::vector<std::int64_t> inv(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) inv[static_cast<std::size_t>(p[i])] = static_cast<std::int64_t>(i);
  return inv;
}
// [lead... o0 k0 o1 k1 ...] <-> [lead... o... k...]
std::vector<std::int64_t> tile_perm(std::size_t lead, std::size_t k, bool to_windows) {
  std::vector<std::int64_t> p;
  for (std::size_t i = 0; i < lead; ++i) p.push_back(static_cast<std::int64_t>(i));
  for (std::size_t d = 0; d < k; ++d) p.push_back(static_cast<std::int64_t>(lead + 2 * d));
  for (std::size_t d = 0; d < k; ++d) p.push_back(static_cast<std::int64_t>(lead + 2 * d + 1));
  return to_windows ? p : inverse(p);
}

}  // namespace

TensorRef window_view(GraphBuilder& b, const ir::Attrs& attrs, const TensorRef& x, double pad_value,
                      const std::vector<std::int64_t>& kernel) {
  Windows w = windows_of(attrs, x, kernel);
  const ir::WindowGeometry& g = w.geometry;
  if (tiling(w)) {
    auto xd = static_dims_of(x);
    std::vector<std::int64_t> split(xd.begin(), xd.begin() + static_cast<std::ptrdiff_t>(w.lead)), ends;
    std::vector<std::int64_t> starts(kernel.size(), 0), axes;
    bool crop = false;
    for (std::size_t d = 0; d < kernel.size(); ++d) {
      split.insert(split.end(), {g.out[d], kernel[d]});
      ends.push_back(g.out[d] * kernel[d]);
      axes.push_back(static_cast<std::int64_t>(w.lead + d));
      crop = crop || ends.back() != xd[w.lead + d];
    }
    TensorRef t = x;
    if (crop) {  // floor mode leaves a remainder no window reads
      ir::Attrs sl;
      sl.set("starts", starts);
      sl.set("ends", ends);
      sl.set("axes", axes);
      t = b.apply1("slice", {x}, sl);
    }
    return b.transpose_by(b.reshape_to(t, split), tile_perm(w.lead, kernel.size(), true));
  }
  std::size_t r = static_dims_of(x).size();
  std::vector<std::int64_t> pads(2 * r, 0);
  bool any = false;
  for (std::size_t d = 0; d < kernel.size(); ++d) {
    pads[w.lead + d] = g.pads_begin[d];
    pads[r + w.lead + d] = g.pads_end[d] + w.extra_end[d];
    any = any || pads[w.lead + d] != 0 || pads[r + w.lead + d] != 0;
  }
  TensorRef padded = x;
  if (any) {
    ir::Attrs p;
    p.set("pads", pads);
    p.set("value", pad_value);
    padded = b.apply1("pad", {x}, p);
  }
  ir::Attrs a;
  a.set("kernel_shape", kernel);
  a.set("strides", g.strides);
  a.set("dilations", g.dilations);
  return b.apply1("windows", {padded}, a);
}

TensorRef window_sum(GraphBuilder& b, const ir::Attrs& attrs, const TensorRef& t, const TensorRef& x,
                     const std::vector<std::int64_t>& kernel) {
  Windows w = windows_of(attrs, x, kernel);
  const ir::WindowGeometry& g = w.geometry;
  auto xd = static_dims_of(x), td = static_dims_of(t);
  std::size_t k = kernel.size(), lead = w.lead, r = xd.size();
  if (td.size() != r + k) build_error("window-sum: " + t.name + " is not [lead... out... kernel...]");
  if (tiling(w)) {
    std::vector<std::int64_t> merged(xd.begin(), xd.begin() + static_cast<std::ptrdiff_t>(lead));
    std::vector<std::int64_t> pads(2 * r, 0);
    bool pad = false;
    for (std::size_t d = 0; d < k; ++d) {
      merged.push_back(g.out[d] * kernel[d]);
      pads[r + lead + d] = xd[lead + d] - merged.back();
      pad = pad || pads[r + lead + d] != 0;
    }
    TensorRef v = b.reshape_to(b.transpose_by(t, tile_perm(lead, k, false)), merged);
    if (!pad) return v;
    ir::Attrs p;
    p.set("pads", pads);
    return b.apply1("pad", {v}, p);
  }
  std::vector<std::int64_t> out(td.begin() + static_cast<std::ptrdiff_t>(lead),
                                td.begin() + static_cast<std::ptrdiff_t>(lead + k));
  std::int64_t taps = 1;
  for (auto kk : kernel) taps *= kk;
  std::optional<TensorRef> sum;
  for (std::int64_t tap = 0; tap < taps; ++tap) {
    std::vector<std::int64_t> at(k);
    for (std::int64_t rest = tap, d = static_cast<std::int64_t>(k) - 1; d >= 0; --d) {
      at[d] = rest % kernel[d];
      rest /= kernel[d];
    }
    // This tap of every window, [lead... out...].
    ir::Attrs sl;
    std::vector<std::int64_t> starts, ends, axes;
    for (std::size_t d = 0; d < k; ++d) {
      starts.push_back(at[d]);
      ends.push_back(at[d] + 1);
      axes.push_back(static_cast<std::int64_t>(lead + k + d));
    }
    sl.set("starts", starts);
    sl.set("ends", ends);
    sl.set("axes", axes);
    std::vector<std::int64_t> flat(td.begin(), td.begin() + static_cast<std::ptrdiff_t>(lead + k));
    TensorRef v = b.reshape_to(b.apply1("slice", {t}, sl), flat);
    // Window o's tap lands at o stride + tap dilation - pad begin: spread
    // the windows `stride` apart (zeros between), then shift and crop.
    bool strided = std::any_of(g.strides.begin(), g.strides.end(), [](std::int64_t s) { return s != 1; });
    if (strided) {
      std::vector<std::int64_t> split(td.begin(), td.begin() + static_cast<std::ptrdiff_t>(lead)), spread = split;
      std::vector<std::int64_t> pads(2 * (lead + 2 * k), 0);
      for (std::size_t d = 0; d < k; ++d) {
        split.insert(split.end(), {out[d], 1});
        spread.push_back(out[d] * g.strides[d]);
        pads[lead + 2 * d + 1 + lead + 2 * k] = g.strides[d] - 1;
      }
      ir::Attrs p;
      p.set("pads", pads);
      v = b.reshape_to(b.apply1("pad", {b.reshape_to(v, split)}, p), spread);
    }
    std::vector<std::int64_t> pads(2 * r, 0);
    for (std::size_t d = 0; d < k; ++d) {
      std::int64_t begin = at[d] * g.dilations[d] - g.pads_begin[d];
      pads[lead + d] = begin;
      pads[r + lead + d] = xd[lead + d] - (out[d] * g.strides[d] + begin);
    }
    ir::Attrs p;
    p.set("pads", pads);
    v = b.apply1("pad", {v}, p);
    sum = sum ? b.add(*sum, v) : v;
  }
  return *sum;
}

}  // namespace saturn::pipeline
