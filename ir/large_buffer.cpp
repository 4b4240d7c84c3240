#include "ir/large_buffer.hpp"

#include <sys/mman.h>

#include <cstring>
#include <new>

namespace saturn::ir {

namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

// An anonymous mapping aligned to a huge page, so that the kernel can back
// all of it with huge pages (an unaligned one would keep 4 KiB pages at both
// ends): mapped one huge page larger, then trimmed.
std::shared_ptr<std::uint8_t[]> map_huge(std::size_t bytes) {
  const std::size_t size = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* raw = mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  auto* base = static_cast<std::uint8_t*>(raw);
  const std::size_t head = (kHugePage - reinterpret_cast<std::uintptr_t>(base) % kHugePage) % kHugePage;
  if (head > 0) munmap(base, head);
  if (kHugePage - head > 0) munmap(base + head + size, kHugePage - head);
  std::uint8_t* p = base + head;
  // (Advice only: where huge pages are off, or none is free, the mapping
  // keeps 4 KiB pages and works the same.)
  madvise(p, size, MADV_HUGEPAGE);
  return std::shared_ptr<std::uint8_t[]>(p, [size](std::uint8_t* q) { munmap(q, size); });
}

}  // namespace

std::shared_ptr<std::uint8_t[]> allocate_buffer(std::size_t bytes, bool zero_fill) {
  if (bytes >= kLargeBufferBytes) return map_huge(bytes);  // (zero-filled by the kernel)
  auto* p = static_cast<std::uint8_t*>(::operator new[](bytes, std::align_val_t(64), std::nothrow));
  if (!p) return nullptr;
  if (zero_fill) std::memset(p, 0, bytes);
  return std::shared_ptr<std::uint8_t[]>(p, [](std::uint8_t* q) { ::operator delete[](q, std::align_val_t(64)); });
}

}  // namespace saturn::ir
