#include "lower/block_copy.hpp"

#include <cstring>

#include "ir/concat.hpp"

namespace saturn::lower {

BlockCopy concat_block_copy(const std::vector<BlockSource>& srcs, const std::vector<std::vector<std::int64_t>>& dims,
                            std::size_t axis, std::size_t element_bytes, BufferId dst) {
  const ir::ConcatBlocks g = ir::concat_blocks(dims, axis, element_bytes);
  BlockCopy c;
  c.dst = dst;
  c.outer = g.outer;
  c.dst_block = g.out_block;
  for (std::size_t k = 0; k < srcs.size(); ++k)
    if (g.block[k])
      c.parts.push_back(
          {srcs[k].buffer, g.block[k], g.at[k], srcs[k].at, srcs[k].stride ? srcs[k].stride : g.block[k]});
  return c;
}

namespace {

// Operands whose blocks are single elements (a stack along a new innermost
// axis: ShuffleNet's channel shuffle as a concat) interleave, and one
// memcpy call per element would cost more than the copy: each part is
// copied by a loop of fixed-size copies instead (N bytes, which the
// compiler makes plain moves of any type's bytes), element o of the part
// to element o * parts + k of the result.
template <std::size_t N>
void interleave(const BlockCopy& c, const RunContext& ctx, std::int64_t begin, std::int64_t end) {
  std::uint8_t* out = ctx.at<std::uint8_t>(c.dst);
  const std::size_t parts = c.parts.size();
  auto source = [&](const BlockCopy::Part& p) { return ctx.at<std::uint8_t>(p.src) + p.src_at; };
  // Two operands stored back to back (the shuffle's halves): one loop
  // writing both, which the compiler turns into vector unpacks.
  auto contiguous = [](const BlockCopy::Part& p) { return p.src_stride == N; };
  if (parts == 2 && contiguous(c.parts[0]) && contiguous(c.parts[1])) {
    const std::uint8_t* __restrict a = source(c.parts[0]);  // (parts in the result's order)
    const std::uint8_t* __restrict b = source(c.parts[1]);
    std::uint8_t* __restrict o = out;
    for (auto i = static_cast<std::size_t>(begin); i < static_cast<std::size_t>(end); ++i) {
      std::memcpy(o + 2 * i * N, a + i * N, N);
      std::memcpy(o + (2 * i + 1) * N, b + i * N, N);
    }
    return;
  }
  for (const BlockCopy::Part& p : c.parts) {
    const std::uint8_t* src = source(p);
    for (auto i = static_cast<std::size_t>(begin); i < static_cast<std::size_t>(end); ++i)
      std::memcpy(out + i * c.dst_block + p.at, src + i * p.src_stride, N);
  }
}

// The element size `interleave` copies `c` with: every part one element of
// that size and the result block the parts side by side. 0 otherwise.
std::size_t interleaved_element(const BlockCopy& c) {
  if (c.parts.size() < 2) return 0;
  const std::size_t b = c.parts[0].block;
  if (b != 1 && b != 2 && b != 4 && b != 8) return 0;
  if (c.dst_block != b * c.parts.size()) return 0;
  for (const BlockCopy::Part& p : c.parts)
    if (p.block != b) return 0;
  return b;
}

}  // namespace

Step make_host_block_copy_step(const BlockCopy& c, const std::string& label) {
  Step s;
  s.kind = StepKind::Copy;
  s.label = label;
  for (const BlockCopy::Part& p : c.parts) s.reads.push_back(p.src);
  s.writes = {c.dst};
  // Split over the pool from 256 KiB of result (not tuned: the order of
  // the loop kernels' threshold, below which waking the pool costs more).
  const bool split = c.outer * c.dst_block >= (1u << 18);
  if (const std::size_t element = interleaved_element(c)) {
    s.label += " (interleaved)";
    s.run = [c, element, split](const RunContext& ctx) {
      auto run = [&](std::int64_t begin, std::int64_t end) {
        switch (element) {
          case 1:
            interleave<1>(c, ctx, begin, end);
            break;
          case 2:
            interleave<2>(c, ctx, begin, end);
            break;
          case 4:
            interleave<4>(c, ctx, begin, end);
            break;
          default:
            interleave<8>(c, ctx, begin, end);
            break;
        }
      };
      const auto n = static_cast<std::int64_t>(c.outer);
      if (split && ctx.pool && ctx.pool->size() >= 2)
        ctx.pool->parallel_for(n, run);
      else
        run(0, n);
    };
    return s;
  }
  s.run = [c, split](const RunContext& ctx) {
    std::uint8_t* out = ctx.at<std::uint8_t>(c.dst);
    // Copy t is operand t % parts, block t / parts.
    const auto copies = static_cast<std::int64_t>(c.outer * c.parts.size());
    auto run = [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t t = begin; t < end; ++t) {
        const BlockCopy::Part& p = c.parts[static_cast<std::size_t>(t) % c.parts.size()];
        const std::size_t o = static_cast<std::size_t>(t) / c.parts.size();
        std::memcpy(out + o * c.dst_block + p.at, ctx.at<std::uint8_t>(p.src) + p.src_at + o * p.src_stride, p.block);
      }
    };
    if (copies >= 2 && split && ctx.pool && ctx.pool->size() >= 2)
      ctx.pool->parallel_for(copies, run);
    else
      run(0, copies);
  };
  return s;
}

}  // namespace saturn::lower
