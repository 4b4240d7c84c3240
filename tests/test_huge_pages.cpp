// ir::allocate_on_huge_pages: alignment, zero fill, mappings on huge pages,
// and small buffers sharing one.
#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "ir/huge_pages.hpp"

using namespace saturn::ir;

namespace {

// The /proc/self/smaps fields of the mapping holding `p` ("THPeligible" ->
// "1", ...), or nullopt when no mapping holds it.
std::optional<std::string> smaps_of(const void* p) {
  std::ifstream in("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  std::string line, fields;
  bool inside = false;
  while (std::getline(in, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
      if (inside) return fields;
      inside = lo <= at && at < hi;
      continue;
    }
    if (inside) fields += line + "\n";
  }
  if (inside) return fields;
  return std::nullopt;
}

// The value of one smaps field ("1" for "THPeligible:    1").
std::string field(const std::string& fields, const std::string& name) {
  std::istringstream in(fields);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + ":", 0) == 0) {
      const auto from = line.find_first_not_of(' ', name.size() + 1);
      return from == std::string::npos ? "" : line.substr(from);
    }
  return "";
}

// Whether the kernel offers transparent huge pages to a mapping that asks.
bool huge_pages_offered() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(in, mode);
  return mode.find("[always]") != std::string::npos || mode.find("[madvise]") != std::string::npos;
}

bool all_zero(const std::uint8_t* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != 0) return false;
  return true;
}

}  // namespace

// Whether the mapping holding `p` asked for huge pages (MADV_HUGEPAGE).
bool asked_for_huge_pages(const void* p) {
  const auto fields = smaps_of(p);
  return fields && (" " + field(*fields, "VmFlags")).find(" hg ") != std::string::npos;
}

TEST_CASE("small buffers are aligned, zero-filled, and carved one after another from a chunk on huge pages") {
  auto a = allocate_on_huge_pages(100);
  auto b = allocate_on_huge_pages(1);
  auto c = allocate_on_huge_pages(0);
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(c);
  for (const auto* p : {a.get(), b.get(), c.get()}) CHECK(reinterpret_cast<std::uintptr_t>(p) % 64 == 0);
  CHECK(all_zero(a.get(), 100));
  CHECK(b[0] == 0);
  CHECK(b.get() == a.get() + 128);  // (100 bytes rounded up to 64's)
  CHECK(c.get() == b.get() + 64);
  a[99] = 7;
  CHECK(a[99] == 7);
  CHECK(b[0] == 0);
  const auto fields = smaps_of(a.get());
  REQUIRE(fields);
  CHECK(field(*fields, "Size") == std::to_string(kHugePageBytes / 1024) + " kB");
  if (huge_pages_offered()) CHECK(asked_for_huge_pages(a.get()));
  // A buffer that does not fit in what is left of the chunk starts a new one.
  auto rest = allocate_on_huge_pages(kHugePageBytes - 1);
  REQUIRE(rest);
  CHECK(reinterpret_cast<std::uintptr_t>(rest.get()) % kHugePageBytes == 0);
  CHECK(rest.get() != a.get() + 192);
  // The chunk stays mapped while any buffer carved from it lives.
  const std::uint8_t* first = a.get();
  a.reset();
  b.reset();
  REQUIRE(smaps_of(first));
  CHECK(c[0] == 0);
}

TEST_CASE("a large buffer has a mapping of its own on huge pages, unmapped when released") {
  const std::size_t n = 2 * kHugePageBytes + 12345;  // (not a multiple of a huge page)
  const std::uint8_t* where = nullptr;
  {
    auto b = allocate_on_huge_pages(n);
    REQUIRE(b);
    where = b.get();
    CHECK(reinterpret_cast<std::uintptr_t>(where) % kHugePageBytes == 0);
    CHECK(all_zero(b.get(), n));
    for (std::size_t i = 0; i < n; i += 4096) b[i] = static_cast<std::uint8_t>(i / 4096 + 1);
    b[n - 1] = 9;
    CHECK(b[n - 1] == 9);
    CHECK(b[4096] == 2);
    const auto fields = smaps_of(where);
    REQUIRE(fields);
    // One mapping, the buffer rounded up to whole huge pages.
    const auto last = smaps_of(where + 3 * kHugePageBytes - 1);
    REQUIRE(last);
    CHECK(*last == *fields);
    CHECK(field(*fields, "Size") == std::to_string(3 * kHugePageBytes / 1024) + " kB");
    if (huge_pages_offered()) {
      INFO(*fields);
      CHECK(field(*fields, "THPeligible") == "1");
      CHECK(asked_for_huge_pages(where));
    } else {
      WARN("this kernel offers no transparent huge pages: the buffers keep 4 KiB pages");
    }
  }
  CHECK_FALSE(asked_for_huge_pages(where));
}
