// ONNX backend conformance on the CPU target: every case the importer takes
// is compiled by lower::compile_cpu and run by the CPU executor, and must
// match the case's expected outputs with the tolerance the interpreter's
// conformance test uses (rtol 1e-3, atol 1e-7). Cases whose program runs
// only reference kernels are counted apart: they test the fallback path.
// (Copies count as native: concat's and gather's block copies.)
// Cases with products, convolutions or pooling run a second time with the
// library calls the CPU rules substitute (tests/library_calls.hpp).
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <iostream>
#include <map>

#include "ir/onnx_import.hpp"
#include "runtime/cpu_executor.hpp"
#include "tests/library_calls.hpp"
#include "tests/onnx_cases.hpp"

namespace fs = std::filesystem;
using namespace saturn;

TEST_CASE("ONNX backend conformance on the CPU target") {
  const fs::path root = test::tests_root();
  if (!fs::exists(root)) {
    if (std::getenv("CI")) FAIL("ONNX test data not found at " << root.string());
    WARN("ONNX test data not found at " << root.string() << ": CPU conformance not run");
    return;
  }
  int native = 0, reference_only = 0, skipped = 0, with_library = 0;
  std::map<std::string, int> reference_ops;  // what still runs the interpreter's kernels, by op
  std::vector<std::string> failures;
  const auto start = std::chrono::steady_clock::now();
  int index = 0;
  for (const char* folder : {"node", "simple", "pytorch-converted", "pytorch-operator"}) {
    for (const fs::path& c : test::cases_in(root / folder)) {
      if (++index % test::kCaseStride != 0) continue;
      const fs::path ds = c / "test_data_set_0";
      if (!fs::exists(ds)) continue;
      auto data = test::read_data_set(ds);
      auto g = data ? ir::import_onnx_for_inputs((c / "model.onnx").string(), data->inputs)
                    : Expected<ir::Graph>(Diagnostic{});
      if (!data || !g) {
        ++skipped;  // the interpreter's conformance test accounts for these
        continue;
      }
      const std::string name = std::string(folder) + "/" + c.filename().string();
      // As written (Saturn's loop nests), and with the library calls the CPU
      // rules substitute where there are any (what saturn run executes).
      const ir::Graph library = test::as_library_calls(*g, "cpu");
      bool renamed = false;
      for (std::size_t i = 0; i < g->nodes.size(); ++i) renamed |= library.nodes[i].op != g->nodes[i].op;
      const ir::Graph* as_written = &*g;
      for (const ir::Graph* form : {as_written, renamed ? &library : nullptr}) {
        if (!form) continue;
        const std::string what = name + (form == &library ? " (library calls)" : "");
        runtime::CpuExecutorOptions o;
        o.threads = 2;
        o.adapt_team = false;  // (two threads whatever the load: their parallel paths are under test)
        auto exec = runtime::CpuExecutor::create(*form, o);
        if (!exec) {
          failures.push_back(what + ": compile: " + exec.error().message);
          continue;
        }
        const lower::Program& p = (*exec)->program();
        if (form == as_written) {
          const bool any_native = std::any_of(p.steps.begin(), p.steps.end(), [](const lower::Step& s) {
            return s.kind != lower::StepKind::Reference;
          });
          (any_native ? native : reference_only) += 1;
          for (const std::string& op : p.reference_ops) ++reference_ops[op];
        } else {
          ++with_library;
        }
        auto got = (*exec)->run(ir::runtime_inputs(*form, data->inputs));
        if (!got) {
          failures.push_back(what + ": run: " + got.error().message);
          continue;
        }
        if (std::string diff = test::outputs_mismatch(*got, data->expected); !diff.empty())
          failures.push_back(what + ": " + diff);
      }
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "\nCPU conformance (" << secs << " s): " << native
            << " cases with generated kernels, library calls or copies, " << reference_only
            << " on reference kernels only (" << with_library << " run again with library calls), " << skipped
            << " not imported, " << failures.size() << " failed\n";
  std::vector<std::pair<int, std::string>> by_count;
  for (const auto& [op, k] : reference_ops) by_count.emplace_back(-k, op);
  std::sort(by_count.begin(), by_count.end());
  std::cout << "  reference kernels, most frequent:";
  for (std::size_t i = 0; i < by_count.size() && i < 12; ++i)
    std::cout << " " << by_count[i].second << " " << -by_count[i].first;
  std::cout << "\n";
  for (const auto& f : failures) std::cout << "  FAILED " << f << "\n";
  CHECK(native > 600 / test::kCaseStride);
  CHECK(with_library > 100 / test::kCaseStride);
  CHECK(failures.empty());
}
