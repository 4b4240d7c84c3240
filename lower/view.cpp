#include "lower/view.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace saturn::lower {

View View::of(BufferId b, const std::vector<std::int64_t>& dims) { return View{b, 0, dims, row_major_strides(dims)}; }

bool View::contiguous() const {
  std::int64_t want = 1;
  for (std::size_t i = dims.size(); i-- > 0;) {
    if (dims[i] == 1) continue;
    if (strides[i] != want) return false;
    want *= dims[i];
  }
  return true;
}

std::vector<std::int64_t> identity_order(std::size_t rank) {
  std::vector<std::int64_t> o(rank);
  std::iota(o.begin(), o.end(), 0);
  return o;
}

std::vector<std::int64_t> View::order() const {
  std::vector<std::int64_t> o = identity_order(dims.size());
  // Size-1 dimensions never move the address: they sort as if their stride
  // were the one just outside the next real dimension, i.e. they stay put.
  std::vector<std::int64_t> key(dims.size());
  std::int64_t outer = 0;
  for (std::size_t i = dims.size(); i-- > 0;) {
    key[i] = dims[i] == 1 ? outer : strides[i];
    if (dims[i] != 1) outer = std::max(outer, strides[i] * dims[i]);
  }
  std::stable_sort(o.begin(), o.end(), [&](std::int64_t a, std::int64_t b) {
    return key[static_cast<std::size_t>(a)] > key[static_cast<std::size_t>(b)];
  });
  return o;
}

bool View::dense() const {
  std::int64_t want = 1;
  const std::vector<std::int64_t> o = order();
  for (std::size_t k = o.size(); k-- > 0;) {
    const auto i = static_cast<std::size_t>(o[k]);
    if (dims[i] == 1) continue;
    if (strides[i] != want) return false;
    want *= dims[i];
  }
  return true;
}

View View::transposed(const std::vector<std::int64_t>& perm) const {
  View v = *this;
  for (std::size_t i = 0; i < perm.size(); ++i) {
    v.dims[i] = dims.at(static_cast<std::size_t>(perm[i]));
    v.strides[i] = strides.at(static_cast<std::size_t>(perm[i]));
  }
  return v;
}

View View::sliced(const std::vector<std::int64_t>& start, const std::vector<std::int64_t>& step,
                  const std::vector<std::int64_t>& count) const {
  View v = *this;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    v.offset += start.at(i) * strides[i];
    v.strides[i] = strides[i] * step.at(i);
    v.dims[i] = count.at(i);
  }
  return v;
}

View View::broadcast_to(const std::vector<std::int64_t>& to) const {
  if (to.size() < dims.size()) throw std::logic_error("broadcast_to a lower rank");
  View v{buffer, offset, to, std::vector<std::int64_t>(to.size(), 0)};
  const std::size_t lead = to.size() - dims.size();
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == to[lead + i])
      v.strides[lead + i] = strides[i];
    else if (dims[i] != 1)
      throw std::logic_error("broadcast_to: dimensions do not broadcast");
  }
  return v;
}

View View::reshaped(const std::vector<std::int64_t>& to) const {
  return View{buffer, offset, to, row_major_strides(to)};
}

std::optional<View> View::reshaped_in_place(const std::vector<std::int64_t>& to) const {
  if (dims == to) return *this;
  if (ir::numel(dims) != ir::numel(to)) return std::nullopt;
  if (ir::numel(dims) == 0) return contiguous() ? std::optional<View>(reshaped(to)) : std::nullopt;
  std::optional<std::vector<std::int64_t>> s = ir::reshaped_strides(dims, strides, to);
  if (!s) return std::nullopt;
  return View{buffer, offset, to, std::move(*s)};
}

View View::windowed(std::size_t lead, const std::vector<std::int64_t>& out, const std::vector<std::int64_t>& kernel,
                    const std::vector<std::int64_t>& stride, const std::vector<std::int64_t>& dilation) const {
  View w = *this;
  w.dims.resize(lead);
  w.strides.resize(lead);
  for (std::size_t j = 0; j < kernel.size(); ++j) {
    w.dims.push_back(out[j]);
    w.strides.push_back(strides[lead + j] * stride[j]);
  }
  for (std::size_t j = 0; j < kernel.size(); ++j) {
    w.dims.push_back(kernel[j]);
    w.strides.push_back(strides[lead + j] * dilation[j]);
  }
  return w;
}

std::vector<std::int64_t> View::reshape_copy_order(const std::vector<std::int64_t>& to) const {
  const std::vector<std::int64_t> own = order();
  std::vector<ir::ReshapeRun> runs = ir::reshape_runs(dims, to);
  if (runs.empty()) return identity_order(dims.size());
  // A run's place: where its innermost dim stands in this view's order.
  auto place = [&](const ir::ReshapeRun& r) {
    std::size_t p = 0;
    for (std::size_t k = r.from_begin; k < r.from_end; ++k)
      p = std::max(
          p, static_cast<std::size_t>(std::find(own.begin(), own.end(), static_cast<std::int64_t>(k)) - own.begin()));
    return p;
  };
  std::stable_sort(runs.begin(), runs.end(),
                   [&](const ir::ReshapeRun& a, const ir::ReshapeRun& b) { return place(a) < place(b); });
  std::vector<std::int64_t> o;
  for (const ir::ReshapeRun& r : runs)
    for (std::size_t k = r.from_begin; k < r.from_end; ++k) o.push_back(static_cast<std::int64_t>(k));
  return o;
}

}  // namespace saturn::lower
