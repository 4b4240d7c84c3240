// The ONNX backend test data (../shared/onnx-tests) as the conformance
// suites read it: where it is, and how outputs are compared.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ir/tensor.hpp"

namespace saturn::test {

namespace fs = std::filesystem;

// $SATURN_ONNX_TESTS, else shared/ beside the checkout (as CI has it), else
// a shared/ inside it.
inline fs::path tests_root() {
  if (const char* env = std::getenv("SATURN_ONNX_TESTS")) return env;
  const char* src = std::getenv("SATURN_SOURCE_DIR");
  fs::path root = src ? src : SATURN_SOURCE_DIR_DEFAULT;
  if (fs::exists(root / ".." / "shared" / "onnx-tests")) return root / ".." / "shared" / "onnx-tests";
  return root / "shared" / "onnx-tests";
}

// Empty when equal within tolerance, else a description of the worst element.
inline std::string compare(const ir::Tensor& got, const ir::Tensor& want, double rtol = 1e-3, double atol = 1e-7) {
  if (got.dtype() != want.dtype())
    return std::string("dtype ") + ir::dtype_name(got.dtype()) + " != " + ir::dtype_name(want.dtype());
  if (got.dims() != want.dims()) return "shape " + got.summary() + " != " + want.summary();
  for (std::size_t i = 0; i < got.numel(); ++i) {
    if (ir::is_float(want.dtype())) {
      double a = got.at(i), b = want.at(i);
      if (std::isnan(a) && std::isnan(b)) continue;
      if (std::isinf(a) || std::isinf(b)) {
        if (a == b) continue;
      } else if (std::fabs(a - b) <= atol + rtol * std::fabs(b)) {
        continue;
      }
      return "element " + std::to_string(i) + ": " + std::to_string(a) + " != " + std::to_string(b);
    }
    if (got.at_int(i) != want.at_int(i))
      return "element " + std::to_string(i) + ": " + std::to_string(got.at_int(i)) +
             " != " + std::to_string(want.at_int(i));
  }
  return {};
}

// The case folders (those with a model.onnx) of one suite ("node", ...),
// sorted; none when the suite is missing.
inline std::vector<fs::path> cases_in(const fs::path& suite) {
  std::vector<fs::path> cases;
  if (!fs::exists(suite)) return cases;
  for (const auto& e : fs::directory_iterator(suite))
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  return cases;
}

}  // namespace saturn::test
