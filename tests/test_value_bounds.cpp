// Bounds published between library steps (lower/value_bounds.hpp): a cell
// is trusted only where one step writes its buffer.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "lower/value_bounds.hpp"

using namespace saturn::lower;

namespace {
Step writing(BufferId b) {
  Step s;
  s.writes = {b};
  return s;
}
}  // namespace

TEST_CASE("A buffer's bound is known once its one writer publishes it") {
  ValueBounds bounds;
  // A reader may come first: the cell is unknown until a writer publishes.
  auto reader = bounds.read(3);
  CHECK(std::isinf(reader->known()));
  auto writer = bounds.written(3);
  CHECK(writer == reader);
  writer->magnitude = 6.06f;
  bounds.keep_single_writers({writing(1), writing(3)});
  CHECK(reader->known() == 6.06f);
}

TEST_CASE("A bound is not trusted where several steps write the buffer - or a second publisher does") {
  ValueBounds bounds;
  auto chain = bounds.written(5);  // a concat chain's buffer: its other part copied by another step
  chain->magnitude = 1;
  bounds.keep_single_writers({writing(5), writing(5)});
  CHECK(std::isinf(chain->known()));
  ValueBounds twice;
  auto first = twice.written(2);
  first->magnitude = 1;
  twice.written(2);
  twice.keep_single_writers({writing(2)});
  CHECK(std::isinf(first->known()));
  // A buffer no step writes (a graph input) has no bound either.
  ValueBounds inputs;
  auto input = inputs.read(0);
  input->magnitude = 1;
  inputs.keep_single_writers({writing(1)});
  CHECK(std::isinf(input->known()));
}

namespace {
// A loop kernel over leaves l0, l1 computing `f` of them.
template <class F>
LoopKernel kernel_of(F f, ReduceKind reduce = ReduceKind::None) {
  LoopKernel k;
  k.ctx = std::make_shared<saturn::ir::SymContext>();
  const saturn::ir::Sym a = k.ctx->var("l0"), b = k.ctx->var("l1");
  k.leaf_vars = {a.id(), b.id()};
  k.leaves = {Leaf{0, 0, {1}}, Leaf{1, 0, {1}}};
  k.dims = {8};
  k.body = f(a, b).id();
  k.reduce = reduce;
  if (reduce != ReduceKind::None) {
    k.red_dims = {4};
    const saturn::ir::Sym acc = k.ctx->var("acc");
    k.acc_var = acc.id();
    k.post = (acc * 0.25).id();  // a mean of 4
  }
  return k;
}
}  // namespace

TEST_CASE("A loop kernel's result bound is its expression over its leaves' bounds - none where it may divide or log") {
  using saturn::ir::Sym;
  namespace scalar = saturn::ir::scalar;
  const double leaves[] = {2, 3};
  // relu(l0 * -1.5 + l1): |l0| 1.5 + |l1| = 6.
  auto affine = KernelBound::of(kernel_of([](Sym a, Sym b) { return scalar::max(a * -1.5 + b, 0.0); }));
  REQUIRE(affine);
  CHECK((*affine)(leaves) == 6);
  // A constant divisor; comparisons and tanh are at most 1; exp of a bound.
  auto divided =
      KernelBound::of(kernel_of([](Sym a, Sym b) { return a / a.lift(4.0) + b.with(saturn::ir::SymOp::Tanh); }));
  REQUIRE(divided);
  CHECK((*divided)(leaves) == 1.5);
  // A select is bounded by its two values, whatever its condition.
  auto chosen = KernelBound::of(
      kernel_of([](Sym a, Sym b) { return scalar::select(a.with(saturn::ir::SymOp::Less, b), a * 10.0, b); }));
  REQUIRE(chosen);
  CHECK((*chosen)(leaves) == 20);
  auto exp = KernelBound::of(kernel_of([](Sym a, Sym) { return a.with(saturn::ir::SymOp::Exp); }));
  REQUIRE(exp);
  CHECK((*exp)(leaves) == Approx(std::exp(2.0)));
  // An unknown leaf, or an infinite product, is no bound (never NaN).
  const double unknown[] = {std::numeric_limits<double>::infinity(), 0};
  CHECK(std::isinf((*affine)(unknown)));
  auto product = KernelBound::of(kernel_of([](Sym a, Sym b) { return a * b; }));
  CHECK(std::isinf((*product)(unknown)));
  // A product that may overflow float is no bound, even times 0 after it.
  const double huge[] = {1e30, 1e30};
  auto zeroed = KernelBound::of(kernel_of([](Sym a, Sym b) { return a * b * 0.0; }));
  REQUIRE(zeroed);
  CHECK(std::isinf((*zeroed)(huge)));
  // A mean of 4 terms of l0 + l1: 4 (2 + 3) / 4.
  auto mean = KernelBound::of(kernel_of([](Sym a, Sym b) { return a + b; }, ReduceKind::Sum));
  REQUIRE(mean);
  CHECK((*mean)(leaves) == 5);
  // Finite operands can make a NaN or an infinity of these: no bound.
  CHECK_FALSE(KernelBound::of(kernel_of([](Sym a, Sym b) { return a / b; })));
  CHECK_FALSE(KernelBound::of(kernel_of([](Sym a, Sym) { return a.with(saturn::ir::SymOp::Log); })));
  CHECK_FALSE(KernelBound::of(kernel_of([](Sym a, Sym) { return a.with(saturn::ir::SymOp::Sqrt); })));
  CHECK_FALSE(KernelBound::of(kernel_of([](Sym a, Sym b) { return a * b; }, ReduceKind::Prod)));
}
