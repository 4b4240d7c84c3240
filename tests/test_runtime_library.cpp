// The CUDA libraries are opened when the cuda target first needs them
// (device/runtime_library.hpp), not linked: a missing library or entry point
// is a CudaError naming it, and the saturn binary starts without them.
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>

#include "device/runtime_library.hpp"
#include "helpers.hpp"

using saturn::device::cuda::CudaError;
using saturn::device::cuda::RuntimeLibrary;

namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const CudaError& e) {
    return e.diag.message;
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("a missing CUDA library or entry point is an error naming it - a library opens once") {
  const std::string missing =
      message_of([] { RuntimeLibrary::open("libsaturn-no-such-library.so.1", "the Test library 1"); });
  CHECK_THAT(missing, Catch::Contains("the cuda target needs the Test library 1 (libsaturn-no-such-library.so.1)"));
  CHECK_THAT(missing, Catch::Contains("cannot be loaded here"));

  const RuntimeLibrary& libc = RuntimeLibrary::open("libc.so.6", "the C library");
  CHECK(&RuntimeLibrary::open("libc.so.6", "the C library") == &libc);
  CHECK(libc.symbol("strlen") != nullptr);
  const std::string lacking = message_of([&] { libc.symbol("saturn_no_such_function"); });
  CHECK_THAT(lacking, Catch::Contains("needs the C library with saturn_no_such_function, which libc.so.6 lacks"));
}

namespace {

// The dynamic section of a file as readelf prints it ("" without readelf).
std::string dynamic_section(const std::string& file) {
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(("readelf -d " + file + " 2>/dev/null").c_str(), "r"), pclose);
  REQUIRE(p);
  std::string dynamic;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), p.get())) dynamic += buf.data();
  return dynamic;
}

}  // namespace

TEST_CASE("saturn starts without cuBLAS, cuDNN and NVRTC: none is a needed library") {
  const std::string exe = saturn::test::saturn_bin();
  const std::string verbs = exe.substr(0, exe.rfind('/') + 1) + "libsaturn_main.so";
  for (const std::string& file : {exe, verbs}) {
    INFO(file);
    if (!std::filesystem::exists(file)) continue;  // the verbs linked in (the sanitizer build)
    const std::string dynamic = dynamic_section(file);
    if (dynamic.find("NEEDED") == std::string::npos) {
      WARN("readelf is not available: not checked");
      return;
    }
    CHECK_THAT(dynamic, Catch::Contains("Shared library: [libc.so.6]"));  // (the check reads the section)
    for (const char* lib : {"libcublas", "libcublasLt", "libcudnn", "libnvrtc"}) {
      INFO(lib);
      CHECK(dynamic.find(std::string("Shared library: [") + lib) == std::string::npos);
    }
  }
}

TEST_CASE("saturn --version answers without LLVM or the verbs - other verbs open them") {
  const std::string exe = saturn::test::saturn_bin();
  const bool split = std::filesystem::exists(exe.substr(0, exe.rfind('/') + 1) + "libsaturn_main.so");
  const std::string dynamic = dynamic_section(exe);
  if (!split) {
    WARN("the verbs are linked into the executable (the sanitizer build): its libraries not checked");
  } else if (dynamic.find("NEEDED") != std::string::npos) {
    CHECK(dynamic.find("libLLVM") == std::string::npos);
    CHECK(dynamic.find("libsaturn_main") == std::string::npos);  // opened by the verbs, not at start
  }
  auto v = saturn::test::run_cli("--version");
  CHECK(v.status == 0);
  CHECK(v.out == "saturn 0.1.0\n");
  auto help = saturn::test::run_cli("--help");
  CHECK(help.status == 0);
  CHECK_THAT(help.out, Catch::Contains("verify"));  // the verbs' own help, from the library
  auto bad = saturn::test::run_cli("no-such-verb");
  CHECK(bad.status == 2);
}
