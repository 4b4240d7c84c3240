#include "ir/cache_dir.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <thread>

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

std::uint64_t content_hash(std::string_view s) {
  constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ull;
  std::uint64_t lane[4] = {1, 2, 3, 4};
  const char* p = s.data();
  const std::size_t n = s.size();
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k) {
      std::uint64_t w;
      std::memcpy(&w, p + i + 8 * k, 8);
      lane[k] = (lane[k] ^ w) * kMul;
      lane[k] ^= lane[k] >> 29;
    }
  std::uint64_t h = stable_hash(s.substr(i));
  for (std::uint64_t l : lane) h = (h ^ l) * kMul;
  return h ^ n;
}

std::filesystem::path DiskCache::file(std::string_view key) const {
  std::ostringstream name;
  name << prefix_ << std::hex << stable_hash(key) << "-" << std::hash<std::string_view>{}(key) << ext_;
  return dir_ / name.str();
}

std::optional<std::string> DiskCache::get(std::string_view key) const {
  if (!enabled()) return std::nullopt;
  std::ifstream f(file(key), std::ios::binary);
  if (!f) return std::nullopt;
  std::uint64_t size = 0;
  if (!f.read(reinterpret_cast<char*>(&size), sizeof size) || size != key.size()) return std::nullopt;
  std::string stored(key.size(), '\0');
  if (!f.read(stored.data(), static_cast<std::streamsize>(stored.size())) || stored != key) return std::nullopt;
  std::uint64_t hash = 0;
  if (!f.read(reinterpret_cast<char*>(&hash), sizeof hash)) return std::nullopt;
  const auto start = f.tellg();
  f.seekg(0, std::ios::end);
  const auto end = f.tellg();
  if (start < 0 || end < start) return std::nullopt;
  std::string value(static_cast<std::size_t>(end - start), '\0');
  f.seekg(start);
  if (!f.read(value.data(), static_cast<std::streamsize>(value.size())) || content_hash(value) != hash)
    return std::nullopt;  // damaged
  return value;
}

void DiskCache::put(std::string_view key, std::string_view value) const {
  if (!enabled()) return;
  const std::filesystem::path to = file(key);
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  std::ostringstream tmp_name;
  tmp_name << to.string() << ".tmp" << ::getpid() << "-" << std::this_thread::get_id();
  const std::filesystem::path tmp = tmp_name.str();
  bool written = false;
  {
    std::ofstream f(tmp, std::ios::binary);
    const std::uint64_t size = key.size();
    f.write(reinterpret_cast<const char*>(&size), sizeof size);
    f.write(key.data(), static_cast<std::streamsize>(key.size()));
    const std::uint64_t hash = content_hash(value);
    f.write(reinterpret_cast<const char*>(&hash), sizeof hash);
    f.write(value.data(), static_cast<std::streamsize>(value.size()));
    f.close();
    written = !f.fail();
  }
  if (written) std::filesystem::rename(tmp, to, ec);
  std::filesystem::remove(tmp, ec);
}

}  // namespace saturn::ir
