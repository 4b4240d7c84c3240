#include "ir/cache_dir.hpp"

#include <cstdlib>

namespace saturn::ir {

std::filesystem::path cache_dir() {
  namespace fs = std::filesystem;
  if (const char* d = std::getenv("SATURN_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "saturn";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "saturn";
  return fs::temp_directory_path() / "saturn";
}

std::uint64_t stable_hash(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace saturn::ir
