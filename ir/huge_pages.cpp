#include "ir/huge_pages.hpp"

#include <sys/mman.h>

#include <mutex>

namespace saturn::ir {

namespace {

constexpr std::size_t kAlignment = 64;

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// An anonymous mapping aligned to a huge page, so that the kernel can back
// all of it with huge pages (an unaligned one keeps 4 KiB pages at its
// ends): mapped one huge page larger, then trimmed.
std::shared_ptr<std::uint8_t[]> map_huge(std::size_t bytes) {
  const std::size_t size = round_up(bytes, kHugePageBytes);
  void* raw = mmap(nullptr, size + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  auto* base = static_cast<std::uint8_t*>(raw);
  const std::size_t head = (kHugePageBytes - reinterpret_cast<std::uintptr_t>(base) % kHugePageBytes) % kHugePageBytes;
  if (head > 0) munmap(base, head);
  munmap(base + head + size, kHugePageBytes - head);
  std::uint8_t* p = base + head;
  madvise(p, size, MADV_HUGEPAGE);  // (advice: refused, the mapping keeps 4 KiB pages)
  return std::shared_ptr<std::uint8_t[]>(p, [size](std::uint8_t* q) { munmap(q, size); });
}

// The chunk small buffers are carved from now, and how much of it is taken.
struct SharedChunk {
  std::mutex mutex;
  std::shared_ptr<std::uint8_t[]> chunk;
  std::size_t used = 0;
};

SharedChunk& shared_chunk() {
  static SharedChunk c;
  return c;
}

}  // namespace

std::shared_ptr<std::uint8_t[]> allocate_on_huge_pages(std::size_t bytes) {
  if (bytes >= kHugePageBytes) return map_huge(bytes);
  const std::size_t size = round_up(bytes == 0 ? 1 : bytes, kAlignment);
  SharedChunk& c = shared_chunk();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (!c.chunk || c.used + size > kHugePageBytes) {
    c.chunk = map_huge(kHugePageBytes);
    c.used = 0;
    if (!c.chunk) return nullptr;
  }
  // (Shares the chunk's ownership: the chunk lives while any of its buffers does.)
  std::shared_ptr<std::uint8_t[]> buffer(c.chunk, c.chunk.get() + c.used);
  c.used += size;
  return buffer;
}

}  // namespace saturn::ir
