// ONNX backend conformance: every case of ../shared/onnx-tests (node, simple,
// pytorch-converted, pytorch-operator) is imported and run through the
// reference interpreter. A case whose import fails is "unsupported" (the
// reason is recorded); a supported case must match its expected outputs
// (rtol 1e-3, atol 1e-7, as ONNX's backend tests), or the suite fails.
// Prints passed / failed / unsupported per folder and per op.
#include <onnx/onnx_pb.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "ir/onnx_import.hpp"
#include "ir/sat_format.hpp"
#include "runtime/interp.hpp"
#include "tests/onnx_cases.hpp"

namespace fs = std::filesystem;
using namespace saturn;
using saturn::test::compare;
using saturn::test::tests_root;

namespace {

struct ModelInfo {
  std::set<std::string> ops;
};

ModelInfo model_info(const fs::path& model) {
  onnx::ModelProto m;
  std::ifstream in(model, std::ios::binary);
  ModelInfo info;
  if (!m.ParseFromIstream(&in)) return info;
  for (const auto& n : m.graph().node()) info.ops.insert(n.op_type());
  return info;
}

// The ops the tensor-IR issue names: node tests made only of these must pass
// unless docs/onnx.md names the feature they need as out of scope.
const std::set<std::string> kListed = {"Abs",
                                       "Add",
                                       "And",
                                       "ArgMax",
                                       "ArgMin",
                                       "AveragePool",
                                       "BatchNormalization",
                                       "Cast",
                                       "Ceil",
                                       "Clip",
                                       "Concat",
                                       "Constant",
                                       "ConstantOfShape",
                                       "Conv",
                                       "ConvTranspose",
                                       "Cos",
                                       "Div",
                                       "Dropout",
                                       "Einsum",
                                       "Elu",
                                       "Equal",
                                       "Erf",
                                       "Exp",
                                       "Expand",
                                       "Flatten",
                                       "Floor",
                                       "Gather",
                                       "Gelu",
                                       "Gemm",
                                       "GlobalAveragePool",
                                       "GlobalMaxPool",
                                       "Greater",
                                       "GreaterOrEqual",
                                       "HardSigmoid",
                                       "HardSwish",
                                       "Identity",
                                       "InstanceNormalization",
                                       "LayerNormalization",
                                       "LeakyRelu",
                                       "Less",
                                       "LessOrEqual",
                                       "Log",
                                       "LogSoftmax",
                                       "LRN",
                                       "MatMul",
                                       "Max",
                                       "MaxPool",
                                       "Mean",
                                       "Min",
                                       "Mod",
                                       "Mul",
                                       "Neg",
                                       "Not",
                                       "Or",
                                       "Pad",
                                       "Pow",
                                       "PRelu",
                                       "Range",
                                       "Reciprocal",
                                       "ReduceL2",
                                       "ReduceLogSumExp",
                                       "ReduceMax",
                                       "ReduceMean",
                                       "ReduceMin",
                                       "ReduceProd",
                                       "ReduceSum",
                                       "ReduceSumSquare",
                                       "Relu",
                                       "Reshape",
                                       "Selu",
                                       "Shape",
                                       "Sigmoid",
                                       "Sign",
                                       "Sin",
                                       "Size",
                                       "Slice",
                                       "Softmax",
                                       "Softplus",
                                       "Split",
                                       "Sqrt",
                                       "Squeeze",
                                       "Sub",
                                       "Sum",
                                       "Tanh",
                                       "Tile",
                                       "Transpose",
                                       "Trilu",
                                       "Unsqueeze",
                                       "Where",
                                       "Xor"};

struct Counts {
  int passed = 0, failed = 0, unsupported = 0;
};

}  // namespace

TEST_CASE("ONNX backend conformance through the reference interpreter") {
  const fs::path root = tests_root();
  if (!fs::exists(root)) {
    // CI always has ../shared beside the clone: missing data there is a failure.
    if (std::getenv("CI")) FAIL("ONNX test data not found at " << root.string());
    WARN("ONNX test data not found at " << root.string() << " (set SATURN_ONNX_TESTS): conformance not run");
    return;
  }
  std::map<std::string, Counts> by_folder, by_op;
  std::map<std::string, int> reasons;
  std::vector<std::string> failures, listed_unsupported;
  const auto start = std::chrono::steady_clock::now();
  int index = 0;
  for (const char* folder : {"node", "simple", "pytorch-converted", "pytorch-operator"}) {
    for (const fs::path& c : test::cases_in(root / folder)) {
      if (++index % test::kCaseStride != 0) continue;
      ModelInfo info = model_info(c / "model.onnx");
      auto record = [&](int Counts::*field) {
        ++(by_folder[folder].*field);
        for (const auto& op : info.ops) ++(by_op[op].*field);
      };
      std::string problem, unsupported;
      auto reason = [](const Diagnostic& d) {
        auto colon = d.message.find("): ");
        return colon == std::string::npos ? d.message : d.message.substr(colon + 3);
      };
      const bool listed =
          std::all_of(info.ops.begin(), info.ops.end(), [](const std::string& op) { return kListed.count(op) != 0; });
      auto note_unsupported = [&](const std::string& why) {
        record(&Counts::unsupported);
        ++reasons[why];
        if (listed && std::string(folder) == "node") listed_unsupported.push_back(c.filename().string() + ": " + why);
      };
      // Unsupported for a reason that binding inputs cannot cure: no data needed.
      if (auto g0 = ir::import_onnx_file((c / "model.onnx").string());
          !g0 && ir::input_needed_as_constant(g0.error()).empty()) {
        note_unsupported(reason(g0.error()));
        continue;
      }
      for (const auto& ds : fs::directory_iterator(c)) {
        if (!ds.is_directory() || ds.path().filename().string().rfind("test_data_set", 0) != 0) continue;
        std::vector<ir::Tensor> inputs, expected;
        for (std::size_t i = 0;; ++i) {
          auto p = ds.path() / ("input_" + std::to_string(i) + ".pb");
          if (!fs::exists(p)) break;
          auto t = ir::read_tensor_pb(p.string());
          if (!t) {
            (t.error().message.find("not supported") != std::string::npos ? unsupported : problem) = t.error().message;
            break;
          }
          inputs.push_back(*t);
        }
        for (std::size_t i = 0;; ++i) {
          auto p = ds.path() / ("output_" + std::to_string(i) + ".pb");
          if (!fs::exists(p)) break;
          auto t = ir::read_tensor_pb(p.string());
          if (!t) {
            (t.error().message.find("not supported") != std::string::npos ? unsupported : problem) = t.error().message;
            break;
          }
          expected.push_back(*t);
        }
        if (!problem.empty() || !unsupported.empty()) break;
        auto g = ir::import_onnx_for_inputs((c / "model.onnx").string(), inputs);
        if (!g) {
          unsupported = reason(g.error());
          break;
        }
        // Every imported graph round-trips through the .sat text exactly.
        std::string text = ir::write_sat(*g);
        auto reread = ir::read_sat(text, "roundtrip.sat");
        if (!reread) {
          problem = ".sat round trip: " + reread.error().to_string();
          break;
        }
        if (ir::write_sat(*reread) != text) {
          problem = ".sat round trip changed the text";
          break;
        }
        // And through ONNX export: the re-imported model must give the same outputs.
        auto exported = ir::export_onnx_bytes(*g);
        if (!exported) {
          problem = "export: " + exported.error().to_string();
          break;
        }
        auto back = ir::import_onnx_bytes(*exported, "exported.onnx");
        if (!back) {
          problem = "re-import of the export: " + back.error().to_string();
          break;
        }
        auto got_back = runtime::interpret(*back, ir::runtime_inputs(*g, inputs));
        if (!got_back) {
          problem = "export: " + got_back.error().message;
          break;
        }
        for (std::size_t k = 0; k < expected.size() && k < got_back->size() && problem.empty(); ++k) {
          std::string diff = compare((*got_back)[k], expected[k]);
          if (!diff.empty()) problem = "exported model, output " + std::to_string(k) + ": " + diff;
        }
        if (!problem.empty()) break;
        auto got = runtime::interpret(*g, ir::runtime_inputs(*g, inputs));
        if (!got) {
          problem = got.error().message;
          break;
        }
        if (got->size() != expected.size()) {
          problem = std::to_string(got->size()) + " outputs, expected " + std::to_string(expected.size());
          break;
        }
        for (std::size_t k = 0; k < expected.size() && problem.empty(); ++k) {
          std::string diff = compare((*got)[k], expected[k]);
          if (!diff.empty()) problem = "output " + std::to_string(k) + ": " + diff;
        }
        if (!problem.empty()) break;
      }
      if (!unsupported.empty()) {
        note_unsupported(unsupported);
      } else if (problem.empty()) {
        record(&Counts::passed);
      } else {
        record(&Counts::failed);
        failures.push_back(std::string(folder) + "/" + c.filename().string() + ": " + problem);
      }
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "\nONNX conformance (" << secs << " s): passed / failed / unsupported\n";
  for (const auto& [f, n] : by_folder)
    std::cout << "  " << f << ": " << n.passed << " / " << n.failed << " / " << n.unsupported << "\n";
  if (std::getenv("SATURN_CONFORMANCE_VERBOSE")) {
    std::cout << "per op:\n";
    for (const auto& [op, n] : by_op)
      std::cout << "  " << op << ": " << n.passed << " / " << n.failed << " / " << n.unsupported << "\n";
    std::cout << "node tests of listed ops that are unsupported:\n";
    for (const auto& u : listed_unsupported) std::cout << "  " << u << "\n";
    std::cout << "unsupported because:\n";
    for (const auto& [r, n] : reasons) std::cout << "  " << n << "  " << r << "\n";
  }
  for (const auto& f : failures) std::cout << "  FAILED " << f << "\n";
  CHECK(failures.empty());
}
