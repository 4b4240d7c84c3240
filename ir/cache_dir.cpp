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

}  // namespace saturn::ir
