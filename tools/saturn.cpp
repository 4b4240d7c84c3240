// The `saturn` executable: answers `--version` itself and opens the
// command line (libsaturn_main.so, beside it) for everything else, so that
// asking for the version neither relocates LLVM nor loads the CUDA
// libraries (issue 28: under 20 ms and 20 MB; docs/cli.md).
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace {

constexpr const char* kVersion = "saturn 0.1.0";

#ifndef SATURN_LINKED_VERBS
// The folder of this executable (/proc/self/exe, so a symlink to it or a
// call through PATH still finds the library beside the real file).
std::string own_folder() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<std::size_t>(n));
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}
#endif

}  // namespace

#ifdef SATURN_LINKED_VERBS
extern "C" int saturn_main(int argc, char** argv);  // linked in (the sanitizer build: tools/CMakeLists.txt)
#endif

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("%s\n", kVersion);
    return 0;
  }
#ifdef SATURN_LINKED_VERBS
  return saturn_main(argc, argv);
#else
  const std::string lib = own_folder() + "/libsaturn_main.so";
  void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::fprintf(stderr, "saturn: internal error: cannot load %s: %s\n", lib.c_str(), dlerror());
    return 3;
  }
  using Main = int (*)(int, char**);
  auto run = reinterpret_cast<Main>(dlsym(handle, "saturn_main"));
  if (!run) {
    std::fprintf(stderr, "saturn: internal error: %s has no saturn_main\n", lib.c_str());
    return 3;
  }
  return run(argc, argv);
#endif
}
