// Where Saturn keeps what it measured or compiled for the next run (the
// calibration, compiled kernels): $SATURN_CACHE_DIR, else
// $XDG_CACHE_HOME/saturn, else $HOME/.cache/saturn, else the temporary
// folder's saturn/. Nothing here creates it; writers do, and a cache that
// cannot be written is only slower.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace saturn::ir {

std::filesystem::path cache_dir();

// FNV-1a of `s`: the same in every build and process, so that what a cache
// file is for can be its name.
std::uint64_t stable_hash(std::string_view s);
// A hash of large contents (a cache entry, a model's weights), also the
// same everywhere: 8 bytes at a time in four independent lanes, several
// times faster than stable_hash's byte-wise FNV (about 1 GB/s).
std::uint64_t content_hash(std::string_view s);

// A folder of entries, one file each, found by their key: compiled kernels
// keyed by what they were compiled from. The file's name holds two hashes
// of the key, and the file holds the key itself (compared in full) and a
// hash of the value, so a collision or a damaged file is a miss, never a
// wrong entry. An entry is
// written whole under a temporary name and then renamed: a reader never
// sees half of one, and processes may share the folder. A folder that
// cannot be written only makes the next run slower.
class DiskCache {
 public:
  // Files `dir`/`prefix`HASHES`ext`; an empty `dir` keeps nothing.
  DiskCache(std::filesystem::path dir, std::string prefix, std::string ext)
      : dir_(std::move(dir)), prefix_(std::move(prefix)), ext_(std::move(ext)) {}
  bool enabled() const { return !dir_.empty(); }
  std::optional<std::string> get(std::string_view key) const;
  void put(std::string_view key, std::string_view value) const;

 private:
  std::filesystem::path file(std::string_view key) const;
  std::filesystem::path dir_;
  std::string prefix_, ext_;
};

}  // namespace saturn::ir
