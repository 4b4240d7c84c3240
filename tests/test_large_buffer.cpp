// ir::allocate_buffer: alignment, zero fill, and large buffers on huge pages.
#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "ir/large_buffer.hpp"

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

TEST_CASE("a small buffer is aligned and zero-filled") {
  for (std::size_t n : {std::size_t{1}, std::size_t{100}, kLargeBufferBytes - 1}) {
    auto b = allocate_buffer(n);
    REQUIRE(b);
    CHECK(reinterpret_cast<std::uintptr_t>(b.get()) % 64 == 0);
    CHECK(all_zero(b.get(), n));
    b[n - 1] = 7;
    CHECK(b[n - 1] == 7);
  }
}

TEST_CASE("a large buffer lies on huge pages, aligned to one, and is unmapped when released") {
  const std::size_t n = 2 * kLargeBufferBytes + 12345;  // (not a multiple of a huge page)
  const std::uint8_t* where = nullptr;
  {
    auto b = allocate_buffer(n, /*zero_fill=*/false);
    REQUIRE(b);
    where = b.get();
    CHECK(reinterpret_cast<std::uintptr_t>(where) % kLargeBufferBytes == 0);
    CHECK(all_zero(b.get(), n));  // (a fresh mapping is)
    for (std::size_t i = 0; i < n; i += 4096) b[i] = static_cast<std::uint8_t>(i / 4096 + 1);
    b[n - 1] = 9;
    CHECK(b[n - 1] == 9);
    CHECK(b[4096] == 2);
    const auto fields = smaps_of(where);
    REQUIRE(fields);
    // One mapping, the buffer rounded up to whole huge pages.
    const auto last = smaps_of(where + 3 * kLargeBufferBytes - 1);
    REQUIRE(last);
    CHECK(*last == *fields);
    CHECK(field(*fields, "Size") == std::to_string(3 * kLargeBufferBytes / 1024) + " kB");
    if (huge_pages_offered()) {
      INFO(*fields);
      CHECK(field(*fields, "THPeligible") == "1");
      CHECK((" " + field(*fields, "VmFlags")).find(" hg ") != std::string::npos);  // (asked for: MADV_HUGEPAGE)
    } else {
      WARN("this kernel offers no transparent huge pages: the buffer keeps 4 KiB pages");
    }
  }
  const auto after = smaps_of(where);
  CHECK_FALSE((after && (" " + field(*after, "VmFlags")).find(" hg ") != std::string::npos));
}
