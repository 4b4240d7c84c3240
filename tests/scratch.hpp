// The test program's scratch directory: one folder per process under the
// system's temporary directory, removed when the process exits. ctest runs
// each test case as its own process, two at a time, so a fixed name would be
// shared by concurrent cases, and a folder left behind by every run fills
// /tmp on the machines that run the suite again and again.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace saturn::test {

class ScratchDir {
 public:
  ScratchDir() : path_(std::filesystem::temp_directory_path() / ("saturn-test-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;  // a test may have left a file unreadable; never throw at exit
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Made on first use; every translation unit of a test program shares it.
inline const std::filesystem::path& scratch_dir() {
  static const ScratchDir dir;
  return dir.path();
}

// `name` under scratch_dir(), with no folder made.
inline std::filesystem::path scratch_file(const std::string& name) { return scratch_dir() / name; }

}  // namespace saturn::test
