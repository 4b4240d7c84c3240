#include "ir/shape.hpp"

namespace saturn::ir {

std::string Dim::to_string() const {
  if (is_static()) return std::to_string(k);
  std::string s = c == 1 ? sym : (c == -1 ? "-" + sym : std::to_string(c) + "*" + sym);
  if (k > 0) s += "+" + std::to_string(k);
  if (k < 0) s += std::to_string(k);
  return s;
}

std::string to_string(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) out += ' ';
    out += s[i].to_string();
  }
  return out + "]";
}

bool is_static(const Shape& s) {
  for (const Dim& d : s)
    if (!d.is_static()) return false;
  return true;
}

std::vector<std::int64_t> static_dims(const Shape& s) {
  std::vector<std::int64_t> out;
  out.reserve(s.size());
  for (const Dim& d : s) out.push_back(d.k);
  return out;
}

Shape shape_of(const std::vector<std::int64_t>& dims) {
  Shape s;
  s.reserve(dims.size());
  for (auto d : dims) s.push_back(Dim::of(d));
  return s;
}

std::int64_t numel(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

namespace {
// The product of the values `count(d)` gives for the elements d of `dims`
// that it does not skip (nullopt), without overflowing and at most
// kMaxElements; nullopt when a value is negative or the product too large.
// Without a vector: shape rules ask it for every result.
template <class Range, class Count>
std::optional<std::int64_t> bounded_product(const Range& dims, Count count) {
  std::int64_t n = 1;
  bool empty = false;
  for (const auto& d : dims)
    if (auto v = count(d)) {
      if (*v < 0) return std::nullopt;
      empty |= *v == 0;
    }
  if (empty) return 0;
  for (const auto& d : dims)
    if (auto v = count(d))
      if (__builtin_mul_overflow(n, *v, &n) || n > kMaxElements) return std::nullopt;
  return n;
}
}  // namespace

std::optional<std::int64_t> checked_numel(const std::vector<std::int64_t>& dims) {
  return bounded_product(dims, [](std::int64_t d) { return std::optional<std::int64_t>(d); });
}

std::optional<std::int64_t> checked_static_numel(const Shape& s) {
  return bounded_product(
      s, [](const Dim& d) { return d.is_static() ? std::optional<std::int64_t>(d.value()) : std::nullopt; });
}

std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> s(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

std::vector<std::int64_t> channels_last_strides(const std::vector<std::int64_t>& dims) {
  if (dims.size() < 3) return row_major_strides(dims);
  std::vector<std::int64_t> s(dims.size(), 1);
  std::int64_t step = dims[1];
  for (std::size_t i = dims.size(); i-- > 2;) {
    s[i] = step;
    step *= dims[i];
  }
  s[0] = step;
  return s;
}

std::vector<ReshapeRun> reshape_runs(const std::vector<std::int64_t>& from, const std::vector<std::int64_t>& to) {
  std::vector<ReshapeRun> runs;
  if (numel(from) != numel(to) || numel(from) == 0) return runs;
  std::size_t i = 0, j = 0;
  while (i < from.size() || j < to.size()) {
    ReshapeRun r{i, i, j, j};
    std::int64_t pf = i < from.size() ? from[i++] : 1, pt = j < to.size() ? to[j++] : 1;
    while (pf != pt) {
      if (pf < pt && i < from.size())
        pf *= from[i++];
      else if (pt < pf && j < to.size())
        pt *= to[j++];
      else
        return {};
    }
    r.from_end = i;
    r.to_end = j;
    runs.push_back(r);
  }
  return runs;
}

std::optional<std::vector<std::int64_t>> reshaped_strides(const std::vector<std::int64_t>& dims,
                                                          const std::vector<std::int64_t>& strides,
                                                          const std::vector<std::int64_t>& to) {
  if (dims == to) return strides;
  const std::vector<ReshapeRun> runs = reshape_runs(dims, to);
  if (runs.empty()) return std::nullopt;
  std::vector<std::int64_t> out(to.size());
  for (const ReshapeRun& r : runs) {
    // The stride of the run's innermost dim, when its dims (size 1 aside)
    // are row-major among themselves.
    std::optional<std::int64_t> inner;
    std::int64_t want = 0;
    for (std::size_t k = r.from_end; k-- > r.from_begin;) {
      if (dims[k] == 1) continue;
      if (!inner)
        inner = strides[k];
      else if (strides[k] != want)
        return std::nullopt;
      want = strides[k] * dims[k];
    }
    std::int64_t s = inner.value_or(1);
    for (std::size_t k = r.to_end; k-- > r.to_begin;) {
      out[k] = s;
      s *= to[k];
    }
  }
  return out;
}

std::optional<Shape> broadcast(const Shape& a, const Shape& b) {
  std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Dim* x = i < n - a.size() ? nullptr : &a[i - (n - a.size())];
    const Dim* y = i < n - b.size() ? nullptr : &b[i - (n - b.size())];
    if (!x)
      out[i] = *y;
    else if (!y)
      out[i] = *x;
    else if (*x == *y)
      out[i] = *x;
    else if (x->is_static() && x->k == 1)
      out[i] = *y;
    else if (y->is_static() && y->k == 1)
      out[i] = *x;
    else
      return std::nullopt;
  }
  return out;
}

}  // namespace saturn::ir
