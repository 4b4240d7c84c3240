// The static memory planner: lifetimes never share bytes, in-place reuse
// only where the operand dies, and the arena is between the liveness lower
// bound and the naive sum.
#include <catch2/catch.hpp>

#include "lower/memory_plan.hpp"

using namespace saturn::lower;

namespace {

BufferId temp(Program& p, std::size_t bytes, BufferKind kind = BufferKind::Temp) {
  Buffer b;
  b.kind = kind;
  b.bytes = bytes;
  b.dims = {static_cast<std::int64_t>(bytes / 4)};
  b.name = std::string("b").append(std::to_string(p.buffers.size()));
  p.buffers.push_back(b);
  return static_cast<BufferId>(p.buffers.size() - 1);
}
void step(Program& p, std::vector<BufferId> reads, std::vector<BufferId> writes, std::vector<BufferId> in_place = {}) {
  Step s;
  s.reads = std::move(reads);
  s.writes = std::move(writes);
  s.in_place_ok = std::move(in_place);
  p.steps.push_back(std::move(s));
}

}  // namespace

TEST_CASE("A chain reuses dead buffers: two live at a time") {
  Program p;
  BufferId in = temp(p, 4096, BufferKind::Input);
  std::vector<BufferId> t;
  for (int i = 0; i < 6; ++i) t.push_back(temp(p, 4096));
  step(p, {in}, {t[0]});
  for (int i = 1; i < 6; ++i) step(p, {t[static_cast<std::size_t>(i - 1)]}, {t[static_cast<std::size_t>(i)]});
  p.outputs = {t[5]};
  plan_memory(p);
  check_memory_plan(p);
  CHECK(p.naive_bytes == 6 * 4096);
  CHECK(p.lower_bound_bytes == 2 * 4096);
  CHECK(p.arena_bytes == 2 * 4096);
  CHECK(p.in_place.empty());
}

TEST_CASE("In-place elementwise results take their dying operand's storage") {
  Program p;
  BufferId in = temp(p, 1024, BufferKind::Input);
  BufferId a = temp(p, 1024), b = temp(p, 1024), c = temp(p, 1024);
  step(p, {in}, {a});
  step(p, {a}, {b}, {a});  // a dies here: b may overwrite it
  step(p, {b}, {c}, {b});
  p.outputs = {c};
  plan_memory(p);
  check_memory_plan(p);
  CHECK(p.in_place.size() == 2);
  CHECK(p.arena_bytes == 1024);
  CHECK(p.offsets[static_cast<std::size_t>(a)] == p.offsets[static_cast<std::size_t>(c)]);
}

TEST_CASE("No in-place reuse of an operand read later or of an input") {
  Program p;
  BufferId in = temp(p, 1024, BufferKind::Input);
  BufferId a = temp(p, 1024), b = temp(p, 1024), c = temp(p, 1024);
  step(p, {in}, {a});
  step(p, {a}, {b}, {a});  // a is read again below: b must not overwrite it
  step(p, {a, b}, {c});
  BufferId d = temp(p, 1024);
  step(p, {in}, {d}, {in});  // inputs are never written
  p.outputs = {c, d};
  plan_memory(p);
  check_memory_plan(p);
  CHECK(p.in_place.empty());
  CHECK(p.offsets[static_cast<std::size_t>(a)] != p.offsets[static_cast<std::size_t>(b)]);
}

TEST_CASE("Greedy by size places a big buffer beside small live ones and reuses the gap") {
  Program p;
  BufferId in = temp(p, 64, BufferKind::Input);
  BufferId small1 = temp(p, 100), big = temp(p, 10000), small2 = temp(p, 100), out = temp(p, 100);
  step(p, {in}, {small1});
  step(p, {small1}, {big});
  step(p, {big}, {small2});
  step(p, {small2, small1}, {out});
  p.outputs = {out};
  plan_memory(p);
  check_memory_plan(p);
  // At step 2, big, small1 and small2 are live: the bound, and this plan meets it.
  CHECK(p.lower_bound_bytes == 10048 + 128 + 128);
  CHECK(p.arena_bytes == p.lower_bound_bytes);
  CHECK(p.arena_bytes < p.naive_bytes);
  // out starts after big died: it reuses big's bytes.
  CHECK(p.offsets[static_cast<std::size_t>(out)] == p.offsets[static_cast<std::size_t>(big)]);
}
