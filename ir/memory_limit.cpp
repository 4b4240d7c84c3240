#include "ir/memory_limit.hpp"

#include <unistd.h>

namespace saturn::ir {

double physical_memory_bytes() {
  // (Read once: the lowering asks for every value of a program.)
  static const double bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
  }();
  return bytes;
}

std::optional<std::string> exceeds_memory(const std::string& name, const ValueType& type) {
  const auto elements = checked_static_numel(type.shape);
  const double memory = physical_memory_bytes();
  const double bytes = elements ? static_cast<double>(*elements) * static_cast<double>(dtype_size(type.dtype)) : 0.0;
  if (elements && (memory <= 0 || bytes <= memory)) return std::nullopt;
  const std::string what = "out of memory: '" + name + "' (" + dtype_name(type.dtype) + to_string(type.shape) + ")";
  if (!elements) return what + " has over 2^48 elements, more than any machine holds";
  const auto gib = [](double b) { return std::to_string(static_cast<long long>(b / (1 << 30))); };
  return what + " needs " + gib(bytes) + " GiB, more than this machine's " + gib(memory) + " GiB";
}

}  // namespace saturn::ir
