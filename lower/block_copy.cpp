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

Step make_host_block_copy_step(const BlockCopy& c, const std::string& label) {
  Step s;
  s.kind = StepKind::Copy;
  s.label = label;
  for (const BlockCopy::Part& p : c.parts) s.reads.push_back(p.src);
  s.writes = {c.dst};
  s.run = [c](const RunContext& ctx) {
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
    // Split over the pool from 256 KiB of result (not tuned: the order of
    // the loop kernels' threshold, below which waking the pool costs more).
    if (copies >= 2 && c.outer * c.dst_block >= (1u << 18) && ctx.pool && ctx.pool->size() >= 2)
      ctx.pool->parallel_for(copies, run);
    else
      run(0, copies);
  };
  return s;
}

}  // namespace saturn::lower
