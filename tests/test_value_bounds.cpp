// Bounds published between library steps (lower/value_bounds.hpp): a cell
// is trusted only where one step writes its buffer.
#include <catch2/catch.hpp>

#include <cmath>

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
