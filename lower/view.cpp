#include "lower/view.hpp"

#include <stdexcept>

namespace saturn::lower {

std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> s(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

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

View View::transposed(const std::vector<std::int64_t>& perm) const {
  View v = *this;
  for (std::size_t i = 0; i < perm.size(); ++i) {
    v.dims[i] = dims.at(static_cast<std::size_t>(perm[i]));
    v.strides[i] = strides.at(static_cast<std::size_t>(perm[i]));
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

}  // namespace saturn::lower
