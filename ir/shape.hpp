// Shapes with static and symbolic dimensions.
//
// A dimension is an affine expression c*SYM + k over at most one named
// symbol (a static dimension has no symbol): enough for batch sizes and
// sequence lengths (N, 2*M) while keeping equality decidable by comparing
// the three fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace saturn::ir {

struct Dim {
  std::int64_t k = 0;  // constant term
  std::int64_t c = 0;  // coefficient of the symbol
  std::string sym;     // empty: a static dimension

  static Dim of(std::int64_t v) { return Dim{v, 0, {}}; }
  static Dim symbol(std::string name, std::int64_t coeff = 1, std::int64_t offset = 0) {
    return Dim{offset, coeff, std::move(name)};
  }
  bool is_static() const { return sym.empty(); }
  std::int64_t value() const { return k; }  // static dimensions only
  friend bool operator==(const Dim& a, const Dim& b) { return a.k == b.k && a.c == b.c && a.sym == b.sym; }
  std::string to_string() const;
};

using Shape = std::vector<Dim>;

std::string to_string(const Shape& s);  // "[2 N 2*M+1]"
bool is_static(const Shape& s);
std::vector<std::int64_t> static_dims(const Shape& s);  // precondition: is_static
Shape shape_of(const std::vector<std::int64_t>& dims);
std::int64_t numel(const std::vector<std::int64_t>& dims);  // precondition: checked_numel holds a value
// Tensors hold at most 2^48 elements: no machine stores more, and every
// element and byte count below it fits int64 without overflow.
inline constexpr std::int64_t kMaxElements = std::int64_t{1} << 48;
// The element count of dims; nullopt when a dimension is negative or the
// count exceeds kMaxElements (a product computed without overflowing).
std::optional<std::int64_t> checked_numel(const std::vector<std::int64_t>& dims);
// The static dimensions' element count of a shape, symbols taken as 1.
std::optional<std::int64_t> checked_static_numel(const Shape& s);
// Element strides of a row-major (C order) layout of dims.
std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& dims);
// Element strides of dims [N C spatial...] laid out channels last (NWC,
// NHWC, NDHWC): C varies fastest, then the spatial dims, N slowest.
std::vector<std::int64_t> channels_last_strides(const std::vector<std::int64_t>& dims);

// The runs a reshape from `from` to `to` maps onto each other: dims
// [from_begin, from_end) hold the same elements as [to_begin, to_end).
// Empty when the shapes hold no elements or do not match.
struct ReshapeRun {
  std::size_t from_begin, from_end, to_begin, to_end;
};
std::vector<ReshapeRun> reshape_runs(const std::vector<std::int64_t>& from, const std::vector<std::int64_t>& to);
// The strides of a strided layout (dims, strides) reshaped to `to` without
// a copy, when every run of dims that the reshape merges or splits is
// row-major within itself (numpy's no-copy reshape); nullopt when the
// reshape needs a copy. The lowering makes a view exactly then, and the
// cost model prices a copy otherwise.
std::optional<std::vector<std::int64_t>> reshaped_strides(const std::vector<std::int64_t>& dims,
                                                          const std::vector<std::int64_t>& strides,
                                                          const std::vector<std::int64_t>& to);

// Numpy broadcasting of two shapes; nullopt when they do not broadcast.
std::optional<Shape> broadcast(const Shape& a, const Shape& b);

}  // namespace saturn::ir
