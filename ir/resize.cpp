#include "ir/resize.hpp"

#include <algorithm>
#include <cmath>

namespace saturn::ir {

namespace {

// The weights of the taps around source coordinate x_ori, whose fraction
// (in (0, 1]: an integral coordinate counts as 1 past the index below) is
// `ratio`, in the order of the taps' indices.
std::vector<double> coefficients(const ResizeSpec& s, double ratio, double scale) {
  if (s.mode == "nearest") {
    if (ratio == 1.0) return {0, 1};
    if (s.nearest_mode == "round_prefer_floor") return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
    if (s.nearest_mode == "round_prefer_ceil") return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
    if (s.nearest_mode == "floor") return {1, 0};
    return {0, 1};  // ceil
  }
  std::vector<double> c;
  if (s.mode == "linear" && !s.antialias) return {1 - ratio, ratio};
  const double a = s.cubic_a;
  if (s.mode == "cubic" && !s.antialias) {
    const double r1 = ratio + 1, q = 1 - ratio, q1 = q + 1;
    return {((a * r1 - 5 * a) * r1 + 8 * a) * r1 - 4 * a, ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1,
            ((a + 2) * q - (a + 3)) * q * q + 1, ((a * q1 - 5 * a) * q1 + 8 * a) * q1 - 4 * a};
  }
  // Antialiasing: the filter stretched by 1 / scale when downsampling.
  const double sc = std::min(scale, 1.0);
  if (s.mode == "linear") {
    const auto start = static_cast<std::int64_t>(std::floor(-1 / sc) + 1);
    for (std::int64_t i = start; i < 2 - start; ++i) c.push_back(std::clamp(1 - std::abs((i - ratio) * sc), 0.0, 1.0));
  } else {
    const auto start = static_cast<std::int64_t>(std::floor(-2 / sc) + 1);
    for (std::int64_t i = start; i < 2 - start; ++i) {
      const double x = std::abs(sc * (i - ratio)), x2 = x * x, x3 = x2 * x;
      c.push_back(x <= 1 ? (a + 2) * x3 - (a + 3) * x2 + 1 : x < 2 ? a * x3 - 5 * a * x2 + 8 * a * x - 4 * a : 0.0);
    }
  }
  double sum = 0;
  for (double v : c) sum += v;
  for (double& v : c) v /= sum;
  return c;
}

const std::vector<std::string> kModes = {"nearest", "linear", "cubic"};
const std::vector<std::string> kTransforms = {"half_pixel",    "half_pixel_symmetric", "pytorch_half_pixel",
                                              "align_corners", "asymmetric",           "tf_crop_and_resize"};
const std::vector<std::string> kNearestModes = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};

std::string one_of(const Attrs& a, const char* name, const std::string& fallback,
                   const std::vector<std::string>& allowed) {
  std::string v = a.s(name, fallback);
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
    std::string list;
    for (const std::string& x : allowed) list.append(list.empty() ? "" : ", ").append(x);
    shape_error("resize: " + std::string(name) + " '" + v + "' is not one of " + list);
  }
  return v;
}

}  // namespace

ResizeTarget resize_target(const std::vector<std::int64_t>& in, const std::vector<std::int64_t>& axes,
                           const std::vector<double>& scales, const std::vector<std::int64_t>& sizes,
                           const std::string& policy) {
  ResizeTarget t{in, std::vector<double>(in.size(), 1.0)};
  if (scales.empty() == sizes.empty()) shape_error("resize: give scales or sizes, not both or neither");
  const std::size_t count = scales.empty() ? sizes.size() : scales.size();
  if (count != axes.size())
    shape_error("resize: " + std::string(scales.empty() ? "sizes" : "scales") + " has " + std::to_string(count) +
                " values for " + std::to_string(axes.size()) + " axes");
  auto at = [&](std::size_t k) { return static_cast<std::size_t>(axes[k]); };
  if (!scales.empty()) {
    for (std::size_t k = 0; k < axes.size(); ++k) {
      if (!(scales[k] > 0)) shape_error("resize: scales must be positive");
      t.scales[at(k)] = scales[k];
      t.sizes[at(k)] = static_cast<std::int64_t>(std::floor(scales[k] * static_cast<double>(in[at(k)])));
    }
    return t;
  }
  for (std::size_t k = 0; k < axes.size(); ++k) {
    if (sizes[k] < 0) shape_error("resize: a negative size");
    t.sizes[at(k)] = sizes[k];
    t.scales[at(k)] = in[at(k)] ? static_cast<double>(sizes[k]) / static_cast<double>(in[at(k)]) : 1.0;
  }
  if (policy == "stretch" || axes.empty()) return t;
  if (policy != "not_larger" && policy != "not_smaller")
    shape_error("resize: keep_aspect_ratio_policy '" + policy + "' is not stretch, not_larger or not_smaller");
  double scale = t.scales[at(0)];
  for (std::size_t k = 0; k < axes.size(); ++k)
    scale = policy == "not_larger" ? std::min(scale, t.scales[at(k)]) : std::max(scale, t.scales[at(k)]);
  for (std::size_t k = 0; k < axes.size(); ++k) {
    t.scales[at(k)] = scale;
    t.sizes[at(k)] = static_cast<std::int64_t>(scale * static_cast<double>(in[at(k)]) + 0.5);  // round half up
  }
  return t;
}

ResizeSpec resize_spec(const Attrs& a, const std::vector<std::int64_t>& in) {
  ResizeSpec s;
  const std::size_t rank = in.size();
  s.sizes = a.ints("sizes");
  s.scales = a.floats("scales");
  s.roi = a.floats("roi");
  s.mode = one_of(a, "mode", "nearest", kModes);
  s.transform = one_of(a, "coordinate_transformation_mode", "half_pixel", kTransforms);
  s.nearest_mode = one_of(a, "nearest_mode", "round_prefer_floor", kNearestModes);
  s.cubic_a = a.f("cubic_coeff_a", -0.75);
  s.exclude_outside = a.i("exclude_outside", 0) != 0;
  s.extrapolation = a.f("extrapolation_value", 0.0);
  s.antialias = a.i("antialias", 0) != 0;
  if (s.sizes.size() != rank)
    shape_error("resize: sizes has " + std::to_string(s.sizes.size()) + " dims for an operand of rank " +
                std::to_string(rank));
  for (std::int64_t d : s.sizes)
    if (d < 0) shape_error("resize: a negative result size");
  if (s.scales.empty())
    for (std::size_t i = 0; i < rank; ++i)
      s.scales.push_back(in[i] ? static_cast<double>(s.sizes[i]) / static_cast<double>(in[i]) : 1.0);
  if (s.scales.size() != rank)
    shape_error("resize: scales has " + std::to_string(s.scales.size()) + " values for an operand of rank " +
                std::to_string(rank));
  for (double v : s.scales)
    if (!(v > 0)) shape_error("resize: scales must be positive");
  if (s.roi.empty())
    for (std::size_t i = 0; i < 2 * rank; ++i) s.roi.push_back(i < rank ? 0.0 : 1.0);
  if (s.roi.size() != 2 * rank)
    shape_error("resize: roi has " + std::to_string(s.roi.size()) + " values, not 2 x rank " + std::to_string(rank));
  if (s.antialias && s.mode == "nearest") shape_error("resize: antialias needs mode linear or cubic");
  for (std::size_t i = 0; i < rank; ++i)
    if (in[i] == 0 && s.sizes[i] != 0) shape_error("resize: an empty axis cannot grow");
  return s;
}

bool ResizeAxis::identity() const {
  if (in != out || taps != 1) return false;
  for (std::int64_t o = 0; o < out; ++o)
    if (outside[static_cast<std::size_t>(o)] || index[static_cast<std::size_t>(o)] != o) return false;
  return true;
}

std::vector<ResizePass> resize_passes(const ResizeSpec& s, std::vector<std::int64_t> in) {
  std::vector<ResizePass> passes;
  const std::size_t rank = in.size();
  for (std::size_t axis = rank; axis-- > 0;) {
    // An axis of the same size, scale 1 and the whole roi maps every result
    // index to itself in every mode (up to rounding when it has one element).
    if (s.sizes[axis] == in[axis] && s.scales[axis] == 1.0 && s.roi[axis] == 0.0 && s.roi[rank + axis] == 1.0) continue;
    ResizePass p;
    p.axis = axis;
    p.taps = resize_axis(s, axis, in[axis]);
    if (p.taps.identity()) continue;
    for (std::size_t d = 0; d < axis; ++d) p.outer *= in[d];
    for (std::size_t d = axis + 1; d < in.size(); ++d) p.inner *= in[d];
    in[axis] = p.taps.out;
    p.out_dims = in;
    passes.push_back(std::move(p));
  }
  return passes;
}

ResizeAxis resize_axis(const ResizeSpec& s, std::size_t axis, std::int64_t in) {
  ResizeAxis r;
  r.in = in;
  r.out = s.sizes[axis];
  const double scale = s.scales[axis];
  const double width = scale * static_cast<double>(in);  // ONNX's (fractional) result width
  const double last = static_cast<double>(in - 1);
  const std::size_t rank = s.sizes.size();
  for (std::int64_t o = 0; o < r.out; ++o) {
    const auto x = static_cast<double>(o);
    double src = 0;
    bool outside = false;
    if (s.transform == "align_corners") {
      src = width == 1 ? 0.0 : x * last / (width - 1);
    } else if (s.transform == "asymmetric") {
      src = x / scale;
    } else if (s.transform == "tf_crop_and_resize") {
      const double lo = s.roi[axis], hi = s.roi[rank + axis];
      src = (width == 1 ? (hi - lo) * last / 2 : x * (hi - lo) * last / (width - 1)) + lo * last;
      outside = src < 0 || src > last;
    } else if (s.transform == "pytorch_half_pixel") {
      src = width == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    } else if (s.transform == "half_pixel_symmetric") {
      const double offset = static_cast<double>(in) / 2 * (1 - static_cast<double>(r.out) / width);
      src = offset + (x + 0.5) / scale - 0.5;
    } else {  // half_pixel
      src = (x + 0.5) / scale - 0.5;
    }
    r.outside.push_back(outside ? 1 : 0);
    // The taps: the n indices nearest src (preferring lower ones), within
    // the input padded by ceil(n / 2) on each side, clamped into it.
    const double below = std::floor(src);
    const bool integral = below == src;
    const double ratio = integral ? 1.0 : src - below;
    // (Outside the input the taps are computed all the same, never read.)
    std::vector<double> c = coefficients(s, ratio, scale);
    const auto n = static_cast<std::int64_t>(c.size());
    const std::int64_t pad = (n + 1) / 2;
    std::int64_t start = static_cast<std::int64_t>(integral ? src - 1 : below) - n / 2 + 1;
    start = std::clamp(start, -pad, in + pad - n);
    if (s.exclude_outside) {
      double sum = 0;
      for (std::int64_t t = 0; t < n; ++t) {
        const std::int64_t i = start + t;
        if (i < 0 || i >= in) c[static_cast<std::size_t>(t)] = 0;
        sum += c[static_cast<std::size_t>(t)];
      }
      for (double& v : c) v /= sum;
    }
    if (s.mode == "nearest") {  // the one tap of weight 1
      const std::int64_t t = c[0] == 1.0 ? 0 : 1;
      r.index.push_back(std::clamp<std::int64_t>(start + t, 0, in - 1));
      r.weight.push_back(1.0);
      continue;
    }
    for (std::int64_t t = 0; t < n; ++t) {
      r.index.push_back(std::clamp<std::int64_t>(start + t, 0, in - 1));
      r.weight.push_back(c[static_cast<std::size_t>(t)]);
    }
  }
  r.taps = r.out ? static_cast<int>(r.index.size() / static_cast<std::size_t>(r.out)) : 1;
  // Rows that each read one element with weight 1 (an axis interpolated at
  // its own sample points) are copies: single taps.
  const auto taps = static_cast<std::size_t>(r.taps);
  bool single = r.taps > 1;
  for (std::size_t o = 0; single && o < static_cast<std::size_t>(r.out); ++o) {
    int ones = 0;
    for (std::size_t t = 0; t < taps; ++t) {
      const double w = r.weight[o * taps + t];
      ones += w == 1.0;
      single &= w == 0.0 || w == 1.0;
    }
    single &= ones == 1;
  }
  if (single) {
    std::vector<std::int64_t> index;
    for (std::size_t o = 0; o < static_cast<std::size_t>(r.out); ++o)
      for (std::size_t t = 0; t < taps; ++t)
        if (r.weight[o * taps + t] == 1.0) index.push_back(r.index[o * taps + t]);
    r.index = std::move(index);
    r.weight.assign(r.index.size(), 1.0);
    r.taps = 1;
  }
  return r;
}

}  // namespace saturn::ir
