// Memory on 2 MiB pages for what a compiled program reads at every run:
// its arena of intermediate values and the weights its library steps pack.
//
// Debian's kernels give transparent huge pages only to mappings that ask
// (madvise mode), so new[]'s memory, and oneDNN's, lies on 4 KiB pages:
// a run that reads tens or hundreds of MB of weights then misses the TLB at
// every 4 KiB. A buffer of kHugePageBytes or more gets a mapping of its
// own; smaller ones are carved one after another out of shared 2 MiB
// chunks, so that the packed weights of a model's convolutions (mostly
// under 2 MiB each) lie together on huge pages too. A chunk is unmapped
// when the last buffer carved from it is released; its space is never
// reused before (the buffers are a program's, created and released
// together). Every buffer starts zero-filled and is aligned to 64 bytes;
// nullptr when the system has no memory to give. Where the kernel offers
// no huge pages the mappings keep 4 KiB pages and work the same.
// (Measured: docs/cpu-backend.md, "Huge pages".)
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace saturn::ir {

inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

std::shared_ptr<std::uint8_t[]> allocate_on_huge_pages(std::size_t bytes);

}  // namespace saturn::ir
