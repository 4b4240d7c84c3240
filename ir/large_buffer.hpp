// Memory for the large buffers a run streams through: weights, the forms a
// library packs them into, and the arena of intermediate values.
//
// Buffers of at least kLargeBufferBytes lie on 2 MiB pages where the kernel
// offers them (transparent huge pages in madvise mode, Debian's default):
// on 4 KiB pages, a pass over hundreds of MB of weights misses the TLB once
// per page, and one-row products that only stream their weights ran up to
// 1.25x slower (docs/cpu-backend.md, "Huge pages"). Smaller buffers come from
// new[]. Either way the memory is aligned to at least 64 bytes, zero-filled
// unless `zero_fill` is false; nullptr when the system has none to give.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace saturn::ir {

inline constexpr std::size_t kLargeBufferBytes = std::size_t{2} << 20;

std::shared_ptr<std::uint8_t[]> allocate_buffer(std::size_t bytes, bool zero_fill = true);

}  // namespace saturn::ir
