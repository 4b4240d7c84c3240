// Optimization benchmark: modeled cost before -> after and the time of
// ONNX import + saturate + extract, for an MLP, a BERT-base encoder layer,
// a 12-layer BERT-base and ResNet-18, on both targets, with the shipped
// rulesets. Prints medians of --runs runs (default 5).
//   build/bench/bench_opt [--runs N] [--case NAME] [--target cpu|cuda]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/models.hpp"
#include "ir/onnx_import.hpp"
#include "pipeline/optimize.hpp"

using namespace saturn;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 5;
  std::string only, only_target;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--runs") && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--case") && i + 1 < argc)
      only = argv[++i];
    else if (!std::strcmp(argv[i], "--target") && i + 1 < argc)
      only_target = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_opt [--runs N] [--case NAME] [--target cpu|cuda]\n");
      return 2;
    }
  }
  struct Case {
    const char* name;
    ir::Graph (*make)();
  };
  const Case cases[] = {
      {"mlp",
       [] {
         return models::mlp(64, {784, 1024, 1024, 10});
       }},
      {"bert_layer", [] { return models::transformer(1, 1, 128, 768, 12, 3072, false); }},
      {"bert12", [] { return models::transformer(12, 1, 128, 768, 12, 3072, false); }},
      {"resnet18", [] { return models::resnet18(224, false); }},
  };
  std::printf("%-11s %-5s %9s %11s %11s %7s %8s %9s %9s %9s %9s %9s\n", "case", "tgt", "nodes", "cost us", "-> us",
              "ratio", "e-nodes", "onnx ms", "egraph ms", "sat ms", "extr ms", "total ms");
  for (const Case& c : cases) {
    if (!only.empty() && only != c.name) continue;
    ir::Graph g = c.make();
    auto bytes = ir::export_onnx_bytes(g);
    if (!bytes) {
      std::fprintf(stderr, "%s: %s\n", c.name, bytes.error().to_string().c_str());
      return 1;
    }
    for (const char* target : {"cpu", "cuda"}) {
      if (!only_target.empty() && only_target != target) continue;
      pipeline::OptimizeOptions o;
      o.target = target;
      o.rule_files = pipeline::rule_files_for(SATURN_SOURCE_DIR "/rulesets", target);
      std::vector<double> onnx_ms, import_ms, sat_ms, extract_ms, total_ms;
      nlohmann::json report;
      std::size_t nodes_after = 0;
      for (int r = 0; r < runs; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        auto imported = ir::import_onnx_bytes(*bytes, c.name);
        auto t1 = std::chrono::steady_clock::now();
        if (!imported) {
          std::fprintf(stderr, "%s: %s\n", c.name, imported.error().to_string().c_str());
          return 1;
        }
        auto res = pipeline::optimize(*imported, o);
        auto t2 = std::chrono::steady_clock::now();
        if (!res || res->unsound) {
          std::fprintf(stderr, "%s: %s\n", c.name, res ? "unsound rule" : res.error().to_string().c_str());
          return 1;
        }
        report = res->report;
        nodes_after = res->graph.nodes.size();
        onnx_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        import_ms.push_back(report["phases"]["import"]["time_ms"].get<double>());
        sat_ms.push_back(report["phases"]["saturate"]["time_ms"].get<double>());
        extract_ms.push_back(report["phases"]["extract"]["time_ms"].get<double>());
        total_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t0).count());
      }
      const double before = report["cost_before"].get<double>(), after = report["cost_after"].get<double>();
      std::string nodes = std::to_string(g.nodes.size()) + "->" + std::to_string(nodes_after);
      std::printf("%-11s %-5s %9s %11.1f %11.1f %6.2fx %8zu %9.1f %9.1f %9.1f %9.1f %9.1f\n", c.name, target,
                  nodes.c_str(), before, after, before / after, report["egraph"]["enodes"].get<std::size_t>(),
                  median(onnx_ms), median(import_ms), median(sat_ms), median(extract_ms), median(total_ms));
      // What changed: ops whose counts moved, and the rules that changed the e-graph most.
      std::string ops = "    ops:";
      std::map<std::string, std::pair<long, long>> m;
      for (const auto& [op, n] : report["ops_before"].items()) m[op].first = n.get<long>();
      for (const auto& [op, n] : report["ops_after"].items()) m[op].second = n.get<long>();
      for (const auto& [op, n] : m)
        if (n.first != n.second) ops += " " + op + " " + std::to_string(n.first) + "->" + std::to_string(n.second);
      std::printf("%s\n", ops.c_str());
      std::vector<std::pair<std::size_t, std::string>> fired;
      for (const auto& [name, x] : report["rules"].items())
        if (x["changed"].get<std::size_t>() > 0) fired.emplace_back(x["changed"].get<std::size_t>(), name);
      std::sort(fired.rbegin(), fired.rend());
      std::string rules = "    rules (e-graph changes):";
      for (std::size_t i = 0; i < fired.size() && i < 8; ++i)
        rules += " " + fired[i].second + " " + std::to_string(fired[i].first);
      const auto& ex = report["phases"]["extract"];
      std::printf(
          "%s\n    saturation: %s; extraction: pricing %.1f ms, choosing %.1f ms (%zu passes), rebuilding %.1f ms\n",
          rules.c_str(), report["phases"]["saturate"]["stop_reason"].get<std::string>().c_str(),
          ex["pricing_ms"].get<double>(), ex["choosing_ms"].get<double>(), ex["passes"].get<std::size_t>(),
          ex["time_ms"].get<double>() - ex["pricing_ms"].get<double>() - ex["choosing_ms"].get<double>());
    }
  }
  std::printf("(medians of %d runs; costs are modeled microseconds; TENSAT needed 0.2-11 s per model)\n", runs);
  return 0;
}
