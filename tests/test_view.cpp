// Strided views: which reshapes are free, and the order a copy is written
// in when one is not. Each in-place reshape is checked element by element
// against the row-major definition (the address of every element).
#include <catch2/catch.hpp>

#include "lower/view.hpp"

using namespace saturn::lower;
using Dims = std::vector<std::int64_t>;

namespace {

std::int64_t address(const View& v, const Dims& index) {
  std::int64_t a = v.offset;
  for (std::size_t d = 0; d < index.size(); ++d) a += index[d] * v.strides[d];
  return a;
}

Dims unflatten(std::int64_t i, const Dims& dims) {
  Dims index(dims.size());
  for (std::size_t d = dims.size(); d-- > 0;) {
    index[d] = i % dims[d];
    i /= dims[d];
  }
  return index;
}

// The reshape of `v` to `to` reads, at every index, the element that the
// row-major reshape of v's elements puts there.
void check_reshape(const View& v, const View& r) {
  std::int64_t n = 1;
  for (std::int64_t d : v.dims) n *= d;
  for (std::int64_t i = 0; i < n; ++i) {
    INFO("element " << i);
    CHECK(address(r, unflatten(i, r.dims)) == address(v, unflatten(i, v.dims)));
  }
}

// [1 C H W] stored NHWC.
View nhwc(std::int64_t c, std::int64_t h, std::int64_t w) { return View{0, 0, {1, c, h, w}, {h * w * c, 1, w * c, c}}; }

}  // namespace

TEST_CASE("Reshapes that split or merge row-major runs are views - of NHWC channels too") {
  const View rm = View::of(0, {2, 3, 4});
  auto merged = rm.reshaped_in_place({6, 4});
  REQUIRE(merged);
  check_reshape(rm, *merged);

  // ShuffleNet's first step: NHWC channels split into [groups, C/groups].
  const View x = nhwc(6, 2, 3);
  auto split = x.reshaped_in_place({1, 2, 3, 2, 3});
  REQUIRE(split);
  CHECK(Dims(split->strides.begin() + 1, split->strides.end()) == Dims{3, 1, 18, 6});  // (N: size 1)
  check_reshape(x, *split);
  // Size-1 dims added or dropped anywhere.
  auto padded = x.reshaped_in_place({6, 1, 2, 3});
  REQUIRE(padded);
  check_reshape(x, *padded);

  // A slice at an offset keeps its offset.
  View s = View::of(0, {4, 6});
  s.offset = 6;
  s.dims = {3, 6};
  auto flat = s.reshaped_in_place({18});
  REQUIRE(flat);
  CHECK(flat->offset == 6);
  check_reshape(s, *flat);
}

TEST_CASE("Reshapes that merge dims out of order are not views - their copy order makes them one") {
  // The channel shuffle's transpose, then the merge of [C/g g] back into C.
  const View shuffled = nhwc(6, 2, 3).reshaped_in_place({1, 2, 3, 2, 3})->transposed({0, 2, 1, 3, 4});
  const Dims to{1, 6, 2, 3};
  CHECK_FALSE(shuffled.reshaped_in_place(to));
  // Copied with the merging pair innermost and row-major, the spatial dims
  // outside it as in the operand: the result is NHWC again.
  const Dims order = shuffled.reshape_copy_order(to);
  CHECK(order == Dims{0, 3, 4, 1, 2});
  Dims physical;
  for (std::int64_t d : order) physical.push_back(shuffled.dims[static_cast<std::size_t>(d)]);
  Dims inverse(order.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    inverse[static_cast<std::size_t>(order[i])] = static_cast<std::int64_t>(i);
  const View copy = View::of(1, physical).transposed(inverse);
  auto r = copy.reshaped_in_place(to);
  REQUIRE(r);
  CHECK(Dims(r->strides.begin() + 1, r->strides.end()) == Dims{1, 18, 6});  // (N is size 1: any stride)
  check_reshape(copy, *r);

  // A broadcast merged with another dim must be materialized.
  CHECK_FALSE((View{0, 0, {3, 4}, {0, 1}}.reshaped_in_place({12})));
  // ... but a broadcast dim that stays a dim of its own stays a view.
  auto kept = View{0, 0, {3, 4}, {1, 0}}.reshaped_in_place({3, 4, 1});
  REQUIRE(kept);
  CHECK(kept->strides[1] == 0);
  // Shapes that do not hold the same elements are refused.
  CHECK_FALSE(View::of(0, {2, 3}).reshaped_in_place({5}));
}

TEST_CASE("Sliding windows are a view whose window and tap axes step through the same axis") {
  // [1 2 7 7] row-major, 3x3 windows, stride 2: [1 2 3 3 3 3].
  const View w = View::of(0, {1, 2, 7, 7}).windowed(2, {3, 3}, {3, 3}, {2, 2}, {1, 1});
  CHECK(w.dims == Dims{1, 2, 3, 3, 3, 3});
  CHECK(w.strides == Dims{98, 49, 14, 2, 7, 1});
  // Window (1, 2)'s tap (2, 1) is element (1*2 + 2, 2*2 + 1) = (4, 5) of the plane.
  CHECK(w.offset + 1 * w.strides[1] + 1 * w.strides[2] + 2 * w.strides[3] + 2 * w.strides[4] + 1 * w.strides[5] ==
        49 + 4 * 7 + 5);
  // An NHWC value's: the channel stride stays 1; dilation 2 in W.
  const View c = nhwc(16, 9, 9).windowed(2, {4, 3}, {2, 2}, {2, 3}, {1, 2});
  CHECK(c.dims == Dims{1, 16, 4, 3, 2, 2});
  CHECK(c.strides == Dims{9 * 9 * 16, 1, 2 * 9 * 16, 3 * 16, 9 * 16, 2 * 16});
}
