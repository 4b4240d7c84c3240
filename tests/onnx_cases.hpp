// The ONNX backend test data (../shared/onnx-tests) as the conformance
// suites read it: where it is, and how outputs are compared.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <optional>

#include "ir/onnx_import.hpp"
#include "ir/tensor.hpp"

namespace saturn::test {

namespace fs = std::filesystem;

// The conformance tests take every case in the release run, and every
// second one under AddressSanitizer: that run looks for memory errors, which
// a sample finds as well, and the suite has 20 minutes in all.
#ifdef __SANITIZE_ADDRESS__
inline constexpr int kCaseStride = 2;
#else
inline constexpr int kCaseStride = 1;
#endif

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

// A data set's tensors (input_N.pb, output_N.pb); nullopt when one of them
// does not read.
struct DataSet {
  std::vector<ir::Tensor> inputs, expected;
};
inline std::optional<DataSet> read_data_set(const fs::path& dir) {
  DataSet d;
  for (const char* kind : {"input_", "output_"})
    for (std::size_t i = 0;; ++i) {
      auto p = dir / (kind + std::to_string(i) + ".pb");
      if (!fs::exists(p)) break;
      auto t = ir::read_tensor_pb(p.string());
      if (!t) return std::nullopt;
      (kind[0] == 'i' ? d.inputs : d.expected).push_back(std::move(*t));
    }
  return d;
}

// Empty when every output matches (compare), else what differs first.
inline std::string outputs_mismatch(const std::vector<ir::Tensor>& got, const std::vector<ir::Tensor>& want) {
  if (got.size() != want.size())
    return std::to_string(got.size()) + " outputs, expected " + std::to_string(want.size());
  for (std::size_t k = 0; k < want.size(); ++k)
    if (std::string diff = compare(got[k], want[k]); !diff.empty()) return "output " + std::to_string(k) + ": " + diff;
  return {};
}

}  // namespace saturn::test
