// Equality-saturation benchmark: Saturn's engine on AC stress cases and the
// bundled algebra ruleset (docs/examples/math.rules).
//
// Each case runs in a forked child (so peak memory is the case's own) several
// times; the figures printed are the median run's: e-nodes, e-classes,
// iterations, search/apply/rebuild times, e-nodes per second and peak RSS.
// bench/compare_egglog.py runs the same AC cases in egglog (PyPI) and prints
// the ratio; egg's published figure for the sum of 10 is printed beside ours.
//
//   bench_eqsat [--runs N] [--json] [--large] [--no-incremental] [--case NAME] [--source-dir DIR]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "egraph/runner.hpp"
#include "egraph/term.hpp"
#include "rules/rule_file.hpp"

using namespace saturn;
using egraph::EGraph;
using egraph::Runner;
using egraph::RunnerLimits;

namespace {

struct Case {
  std::string name;
  std::string rules;  // rules text
  std::string term;
  std::string scheduler;
  RunnerLimits limits;
  bool large = false;
};

std::string sum_of(int n) {
  std::string t = "x";
  t.append(std::to_string(n));
  for (int i = n - 1; i >= 1; --i) {
    std::string outer = "(+ x";
    outer.append(std::to_string(i)).append(" ").append(t).append(")");
    t = std::move(outer);
  }
  return t;
}

std::string product_of_sums(int k) {
  // (* (+ a1 b1) (* (+ a2 b2) ... ))
  std::string t = "(+ a" + std::to_string(k) + " b" + std::to_string(k) + ")";
  for (int i = k - 1; i >= 1; --i) t = "(* (+ a" + std::to_string(i) + " b" + std::to_string(i) + ") " + t + ")";
  return t;
}

const char* kAC = "(rule comm (+ ?a ?b) => (+ ?b ?a))\n(rule assoc (+ ?a (+ ?b ?c)) => (+ (+ ?a ?b) ?c))\n";
const char* kACMul =
    "(rule add-comm (+ ?a ?b) => (+ ?b ?a))\n(rule add-assoc (+ ?a (+ ?b ?c)) => (+ (+ ?a ?b) ?c))\n"
    "(rule mul-comm (* ?a ?b) => (* ?b ?a))\n(rule mul-assoc (* ?a (* ?b ?c)) => (* (* ?a ?b) ?c))\n"
    "(rule distribute (* ?a (+ ?b ?c)) => (+ (* ?a ?b) (* ?a ?c)))\n";

struct Result {
  double ms = 0, search_ms = 0, apply_ms = 0, rebuild_ms = 0;
  std::size_t enodes = 0, eclasses = 0, iterations = 0;
  std::string stop;
  long peak_kb = 0;
  double egraph_mb = 0;  // EGraph::memory_bytes() at the end
};

bool g_incremental = true;

Result run_once(const Case& c, const std::vector<egraph::Rewrite>& rules) {
  auto terms = rules::parse_terms(c.term, c.name);
  EGraph g;
  egraph::add_term(g, (*terms)[0]);
  Runner runner(c.limits, egraph::make_scheduler(c.scheduler));
  runner.set_incremental(g_incremental);
  auto rep = runner.run(g, rules);
  Result r;
  r.ms = rep.total_ms;
  r.search_ms = rep.search_ms();
  r.apply_ms = rep.apply_ms();
  r.rebuild_ms = rep.rebuild_ms();
  r.enodes = g.num_nodes();
  r.eclasses = g.num_classes();
  r.iterations = rep.iterations.size();
  r.stop = egraph::to_string(rep.stop_reason);
  r.egraph_mb = static_cast<double>(g.memory_bytes()) / (1024.0 * 1024.0);
  return r;
}

// Runs the case `runs` times in a child process; returns the median run.
bool run_case(const Case& c, int runs, Result& median) {
  int fd[2];
  if (pipe(fd) != 0) return false;
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    auto file = rules::parse_rules(c.rules, c.name + ".rules");
    if (!file) _exit(3);
    std::vector<egraph::Rewrite> rewrites;
    for (auto& o : file->optimizers)
      for (auto& r : o.rewrites) rewrites.push_back(std::move(r));
    std::vector<Result> all;
    for (int i = 0; i < runs; ++i) all.push_back(run_once(c, rewrites));
    std::sort(all.begin(), all.end(), [](const Result& a, const Result& b) { return a.ms < b.ms; });
    Result m = all[all.size() / 2];
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    m.peak_kb = ru.ru_maxrss;
    nlohmann::json j = {
        {"ms", m.ms},           {"search_ms", m.search_ms}, {"apply_ms", m.apply_ms},     {"rebuild_ms", m.rebuild_ms},
        {"enodes", m.enodes},   {"eclasses", m.eclasses},   {"iterations", m.iterations}, {"stop", m.stop},
        {"peak_kb", m.peak_kb}, {"egraph_mb", m.egraph_mb}};
    std::string s = j.dump();
    if (write(fd[1], s.data(), s.size()) != static_cast<ssize_t>(s.size())) _exit(4);
    _exit(0);
  }
  close(fd[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || out.empty()) return false;
  auto j = nlohmann::json::parse(out);
  median.ms = j["ms"];
  median.search_ms = j["search_ms"];
  median.apply_ms = j["apply_ms"];
  median.rebuild_ms = j["rebuild_ms"];
  median.enodes = j["enodes"];
  median.eclasses = j["eclasses"];
  median.iterations = j["iterations"];
  median.stop = j["stop"];
  median.peak_kb = j["peak_kb"];
  median.egraph_mb = j["egraph_mb"];
  return true;
}

std::string read_text(const std::string& path) {
  auto t = saturn::read_file(path);
  return t ? *t : std::string();
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 5;
  bool json = false, large = false;
  std::string only, source_dir = SATURN_SOURCE_DIR;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--json")
      json = true;
    else if (a == "--no-incremental")
      g_incremental = false;
    else if (a == "--large")
      large = true;
    else if (a == "--case" && i + 1 < argc)
      only = argv[++i];
    else if (a == "--source-dir" && i + 1 < argc)
      source_dir = argv[++i];
    else {
      std::cerr << "usage: bench_eqsat [--runs N] [--json] [--large] [--no-incremental] [--case NAME] "
                   "[--source-dir DIR]\n";
      return 2;
    }
  }
  const RunnerLimits big{1000, 5'000'000, 600};
  std::vector<Case> cases = {
      {"ac-sum-8", kAC, sum_of(8), "simple", big},
      {"ac-sum-9", kAC, sum_of(9), "simple", big},
      {"ac-sum-10", kAC, sum_of(10), "simple", big},
      {"ac-products-of-sums-3", kACMul, product_of_sums(3), "simple", RunnerLimits{1000, 200'000, 600}},
  };
  std::string math = read_text(source_dir + "/docs/examples/math.rules");
  if (!math.empty()) {
    cases.push_back({"math-simplify", math, "(- (* (+ a b) (+ a b)) (* (+ b a) (+ b a)))", "backoff",
                     RunnerLimits{30, 100'000, 60}});
    cases.push_back({"math-derivative", math, "(d x (+ (* x (* x x)) (* (sin x) (pow x 2))))", "backoff",
                     RunnerLimits{30, 100'000, 60}});
  }
  // About a million e-nodes: memory per e-node at scale (one run).
  cases.push_back({"ac-sum-13-1M", kAC, sum_of(13), "simple", RunnerLimits{1000, 1'000'000, 600}, true});

  if (!json)
    std::printf("%-24s %9s %9s %5s %10s %9s %9s %9s %5s %11s %8s %9s  %s\n", "case", "e-nodes", "e-classes", "iters",
                "median ms", "search", "apply", "rebuild", "runs", "e-nodes/s", "peak MB", "egraph MB", "stop");
  for (const Case& c : cases) {
    if (!only.empty() && c.name != only) continue;
    if (c.large && !large && only != c.name) continue;
    Result r;
    int n = c.large ? 1 : runs;
    if (!run_case(c, n, r)) {
      std::cerr << "case " << c.name << " failed\n";
      return 1;
    }
    double rate = r.ms > 0 ? r.enodes / (r.ms / 1000.0) : 0;
    if (json) {
      nlohmann::json j = {{"case", c.name},
                          {"enodes", r.enodes},
                          {"eclasses", r.eclasses},
                          {"iterations", r.iterations},
                          {"median_ms", r.ms},
                          {"search_ms", r.search_ms},
                          {"apply_ms", r.apply_ms},
                          {"rebuild_ms", r.rebuild_ms},
                          {"runs", n},
                          {"enodes_per_s", rate},
                          {"peak_mb", r.peak_kb / 1024.0},
                          {"egraph_mb", r.egraph_mb},
                          {"stop_reason", r.stop}};
      std::cout << j.dump() << std::endl;
    } else {
      std::printf("%-24s %9zu %9zu %5zu %10.1f %9.1f %9.1f %9.1f %5d %11.0f %8.1f %9.1f  %s\n", c.name.c_str(),
                  r.enodes, r.eclasses, r.iterations, r.ms, r.search_ms, r.apply_ms, r.rebuild_ms, n, rate,
                  r.peak_kb / 1024.0, r.egraph_mb, r.stop.c_str());
      if (c.name == "ac-sum-10")
        std::printf(
            "%-24s egg (published figure for this machine): 1100-1300 ms for the same 57,012 e-nodes -> "
            "Saturn is %.1fx-%.1fx faster\n",
            "", 1100.0 / r.ms, 1300.0 / r.ms);
      std::fflush(stdout);
    }
  }
  return 0;
}
