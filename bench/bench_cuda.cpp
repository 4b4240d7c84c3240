// CUDA backend benchmark: latency of the compiled programs on the GPU
// (median and min of N runs after a warm-up, each run from host inputs to
// host outputs, and the steps alone between events) for the issue's
// workloads: MLP 784-1024-1024-10 (batch 64), a BERT-base encoder layer
// (seq 128), ResNet-18 (224x224), and bench_cpu's masked softmax and BERT
// embeddings (bool and i64 masks, a gather), and an f16 feed-forward
// product (tensor cores), each through `saturn opt
// --target cuda` first. With --json, one JSON object per workload (bench/bench_cuda.sh
// puts PyTorch eager beside it).
// Usage: bench_cuda [--runs N] [--json] [--only NAME] [--profile]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "bench/models.hpp"
#include "runtime/cuda_executor.hpp"
#include "pipeline/optimize.hpp"

using namespace saturn;

int main(int argc, char** argv) {
  int runs = 50;
  bool json = false, profile = false;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
    if (a == "--json") json = true;
    if (a == "--profile") profile = true;
    if (a == "--only" && i + 1 < argc) only = argv[++i];
  }
  auto driver = device::cuda::CudaDriver::get();
  if (!driver) {
    std::cerr << "bench_cuda: " << driver.error().message << "\n";
    return 2;
  }
  struct Work {
    std::string name;
    ir::Graph graph;
  };
  std::vector<Work> work;
  work.push_back({"mlp", models::mlp(64, {784, 1024, 1024, 10})});
  work.push_back({"bert_layer", models::transformer(1, 1, 128, 768, 12, 3072)});
  work.push_back({"resnet18", models::resnet18(224)});
  work.push_back({"masked_softmax", models::masked_softmax()});
  work.push_back({"embedding", models::embedding()});
  work.push_back({"ffn_f16", models::ffn_f16()});
  if (!json)
    std::cout << "workload        median ms    min ms  device ms  steps  library  host ops  (" << runs << " runs)\n";
  for (Work& w : work) {
    if (!only.empty() && w.name != only) continue;
    pipeline::OptimizeOptions o;
    o.target = "cuda";
    o.rule_files = pipeline::rule_files_for(pipeline::shipped_rulesets_dir(), "cuda");
    auto opt = pipeline::optimize(w.graph, o);
    if (!opt) {
      std::cerr << w.name << ": " << opt.error().to_string() << "\n";
      return 2;
    }
    auto exec = runtime::CudaExecutor::create(opt->graph);
    if (!exec) {
      std::cerr << w.name << ": " << exec.error().to_string() << "\n";
      return 2;
    }
    std::vector<ir::Tensor> inputs = models::bench_inputs(opt->graph), outputs;
    std::vector<double> ms, device_ms;
    for (int i = 0; i <= runs + 5; ++i) {  // the first runs load modules and pick algorithms
      auto t0 = std::chrono::steady_clock::now();
      auto r = (*exec)->run_into(inputs, outputs);
      if (!r) {
        std::cerr << w.name << ": " << r.error().to_string() << "\n";
        return 2;
      }
      if (i <= 5) continue;
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      device_ms.push_back((*exec)->device_ms());
    }
    std::sort(ms.begin(), ms.end());
    std::sort(device_ms.begin(), device_ms.end());
    const lower::Program& p = (*exec)->program();
    if (profile) {
      (*exec)->set_profile(true);
      if (!(*exec)->run_into(inputs, outputs)) return 2;
      (*exec)->set_profile(false);
      for (std::size_t s = 0; s < p.steps.size(); ++s)
        std::fprintf(stderr, "  %8.3f ms  %s\n", (*exec)->step_ms()[s], p.steps[s].label.c_str());
    }
    nlohmann::json j = {{"workload", w.name},
                        {"median_ms", ms[ms.size() / 2]},
                        {"min_ms", ms.front()},
                        {"device_median_ms", device_ms[device_ms.size() / 2]},
                        {"runs", runs},
                        {"device", (*exec)->device().name},
                        {"steps", p.steps.size()},
                        {"kernels", p.fused_kernels},
                        {"library_calls", p.library_calls},
                        {"host_ops", p.reference_ops.size()},
                        {"arena_bytes", p.arena_bytes},
                        {"naive_bytes", p.naive_bytes},
                        {"compile_ms", p.compile_ms}};
    if (json) {
      std::cout << j.dump() << "\n";
      continue;
    }
    std::printf("%-14s %10.3f %9.3f %10.3f %6zu %8d %9zu\n", w.name.c_str(), ms[ms.size() / 2], ms.front(),
                device_ms[device_ms.size() / 2], p.steps.size(), p.library_calls, p.reference_ops.size());
  }
  return 0;
}
