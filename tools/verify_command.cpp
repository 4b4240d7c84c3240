#include "tools/verify_command.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "rules/tensor_builtins.hpp"
#include "tools/cli_common.hpp"

namespace saturn::cli {

namespace fs = std::filesystem;

void add_verify_command(CLI::App& app, VerifyCommandOptions& o) {
  auto* cmd = app.add_subcommand("verify", "Prove rules with Z3, or show a counterexample.");
  cmd->add_option("rules", o.rules, "Rule files, or folders of .rules files")->required();
  cmd->add_option("--max-dim", o.verify.instances.max_dim,
                  "Largest dimension tried (every dim in 1..N, then 0..N for empty tensors)")
      ->check(non_negative())
      ->capture_default_str()
      ->check(CLI::Range(1, 8));
  cmd->add_option("--max-rank", o.verify.instances.max_rank, "Largest tensor rank tried")
      ->check(non_negative())
      ->capture_default_str()
      ->check(CLI::Range(0, 6));
  cmd->add_option("--max-instances", o.verify.instances.max_instances,
                  "Instances checked per rule at most (evenly spread over all found; reported)")
      ->check(non_negative())
      ->capture_default_str()
      ->check(CLI::Range(2, 1000000));
  cmd->add_option("--solver-timeout", o.verify.solver_timeout_ms, "Z3 time limit per query, in milliseconds")
      ->check(non_negative())
      ->capture_default_str();
  cmd->add_option("--rule-time-limit", o.verify.rule_time_limit_s,
                  "Seconds per rule; the instances checked by then count (reported)")
      ->check(non_negative())
      ->capture_default_str();
  cmd->add_flag("--fp32", o.verify.fp32, "Also report whether each proved rule is exact in float32");
  cmd->add_option("--only", o.only, "Verify only the rules whose name contains this text");
  cmd->add_option("-j,--jobs", o.jobs, "Rules verified in parallel (0: one per core)")->capture_default_str();
  cmd->add_flag("--json", o.json, "Print one JSON object per rule (JSON lines)");
  cmd->add_flag("-q,--quiet", o.quiet, "Print only the rules that are not proved, and the summary");
}

namespace {

struct Job {
  const egraph::Rewrite* rule;
  const rules::RuleInfo* info;
};

}  // namespace

nlohmann::json verdict_json(const rules::RuleVerdict& v) {
  nlohmann::json j{{"rule", v.rule},
                   {"file", v.file},
                   {"line", v.line},
                   {"status", rules::status_name(v.status)},
                   {"reason", v.reason},
                   {"shapes_checked", v.shapes_checked},
                   {"instances", v.instances},
                   {"well_typed_instances", v.found},
                   {"exhaustive", v.exhaustive},
                   {"coverage", v.coverage},
                   {"fp32_exact", v.fp32_exact ? nlohmann::json(*v.fp32_exact) : nlohmann::json(nullptr)},
                   {"time_ms", v.time_ms}};
  if (!v.fp32_note.empty()) j["fp32_note"] = v.fp32_note;
  if (v.counterexample) {
    const rules::Counterexample& c = *v.counterexample;
    nlohmann::json b = nlohmann::json::object(), in = nlohmann::json::object();
    for (const auto& [k, x] : c.bindings) b[k] = x;
    // As the element type reads them: true / false, integers, numbers (null when not finite).
    auto num = [](const std::optional<rules::CounterexampleValue>& x) {
      if (!x || !std::isfinite(x->value)) return nlohmann::json(nullptr);
      if (x->is_bool()) return nlohmann::json(x->value != 0);
      if (x->is_integer()) return nlohmann::json(std::llround(x->value));
      return nlohmann::json(x->value);
    };
    for (const auto& [k, x] : c.inputs) in[k] = num(x);
    j["counterexample"] = {{"what", c.what},
                           {"lhs", c.lhs_term},
                           {"rhs", c.rhs_term},
                           {"bindings", b},
                           {"inputs", in},
                           {"element", c.element},
                           {"lhs_value", num(c.lhs_value)},
                           {"rhs_value", num(c.rhs_value)}};
  } else {
    j["counterexample"] = nullptr;
  }
  return j;
}

namespace {

std::string to_text(const rules::RuleVerdict& v) {
  std::string s = std::string(rules::status_name(v.status));
  s.resize(11, ' ');
  s += v.file + ":" + std::to_string(v.line) + "  " + v.rule;
  char ms[32];
  std::snprintf(ms, sizeof ms, "  (%.0f ms)", v.time_ms);
  s += ms;
  if (v.status == rules::VerifyStatus::Proved) {
    s.append("\n    for ").append(v.coverage);
  } else {
    if (!v.reason.empty()) s.append("\n    ").append(v.reason);  // a refutation's reason is its counterexample
    if (!v.coverage.empty()) s.append("\n    tried: ").append(v.coverage);
  }
  if (v.fp32_exact || !v.fp32_note.empty())
    s.append("\n    float32: ")
        .append(v.fp32_exact ? (*v.fp32_exact ? "exact" : "not exact") : "undecided")
        .append(v.fp32_note.empty() ? "" : " (" + v.fp32_note + ")");
  if (v.counterexample) {
    const rules::Counterexample& c = *v.counterexample;
    s.append("\n    counterexample: ").append(c.what);
    s.append("\n      lhs: ").append(c.lhs_term);
    s.append("\n      rhs: ").append(c.rhs_term);
    for (const auto& [k, x] : c.bindings) s.append("\n      ").append(k).append(" = ").append(x);
    if (!c.inputs.empty()) {
      s += "\n      inputs:";
      std::size_t shown = 0;
      for (const auto& [k, x] : c.inputs) {
        if (shown++ == 12) {
          s += " ...";
          break;
        }
        s.append(" ").append(k).append("=").append(x.text());
      }
    }
    if (c.lhs_value && c.rhs_value)
      s.append("\n      at ")
          .append(c.element)
          .append(": lhs ")
          .append(c.lhs_value->text())
          .append(", rhs ")
          .append(c.rhs_value->text());
  }
  return s + "\n";
}

}  // namespace

Expected<std::vector<rules::RuleVerdict>> verify_rules(const VerifyCommandOptions& o, const VerdictProgress& progress) {
  std::vector<std::string> files;
  for (const std::string& p : o.rules) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> in_dir = rules::rule_files_in(p);
      if (in_dir.empty()) return Diagnostic{SourceLoc{p, 0, 0}, "no .rules files in this folder"};
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (fs::exists(p, ec)) {
      files.push_back(p);
    } else {
      return Diagnostic{SourceLoc{p, 0, 0}, "no such file or folder"};
    }
  }
  rules::BuiltinRegistry& builtins = rules::BuiltinRegistry::global();
  rules::register_tensor_builtins(builtins);
  std::vector<rules::RuleFile> loaded;
  for (const std::string& f : files) {
    auto r = rules::load_rules(f, builtins, rules::check_tensor_op);
    if (!r) return r.error();
    loaded.push_back(std::move(*r));
  }
  std::vector<Job> jobs;
  for (const rules::RuleFile& f : loaded)
    for (const rules::Optimizer& opt : f.optimizers)
      for (std::size_t i = 0; i < opt.rewrites.size(); ++i)
        if (o.only.empty() || opt.info[i].name.find(o.only) != std::string::npos)
          jobs.push_back({&opt.rewrites[i], &opt.info[i]});
  if (jobs.empty())
    return Diagnostic{SourceLoc{}, "no rule to verify" + (o.only.empty() ? std::string() : " named *" + o.only + "*")};

  std::vector<rules::RuleVerdict> verdicts(jobs.size());
  std::vector<bool> done(jobs.size(), false);
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  std::size_t finished = 0;
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < jobs.size();) {
      rules::RuleVerdict v = rules::verify_rule(*jobs[i].rule, *jobs[i].info, o.verify);
      std::lock_guard<std::mutex> lock(mu);
      verdicts[i] = std::move(v);
      done[i] = true;
      ++finished;
      if (progress) progress(verdicts, done, finished);
    }
  };
  unsigned n = o.jobs ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
  n = std::min<unsigned>(n, static_cast<unsigned>(jobs.size()));
  std::vector<std::thread> pool;
  for (unsigned k = 1; k < n; ++k) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  return verdicts;
}

int run_verify(const VerifyCommandOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t printed = 0;
  // A progress line on a terminal: proofs of the shipped rules take minutes.
  const bool terminal = stderr_is_terminal();
  auto print_ready = [&](const std::vector<rules::RuleVerdict>& verdicts, const std::vector<bool>& done,
                         std::size_t finished) {  // in file order, as soon as the prefix is done
    if (terminal) std::cerr << "\r\033[K" << std::flush;
    while (printed < verdicts.size() && done[printed]) {
      const rules::RuleVerdict& v = verdicts[printed++];
      if (o.json)
        std::cout << verdict_json(v).dump() << "\n";
      else if (!o.quiet || v.status != rules::VerifyStatus::Proved)
        std::cout << to_text(v);
      std::cout.flush();
    }
    if (terminal && finished < verdicts.size()) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::cerr << "[verify] " << finished << " of " << verdicts.size() << " rules, " << std::fixed
                << std::setprecision(1) << secs << " s" << std::flush;
    }
  };
  auto result = verify_rules(o, print_ready);
  if (!result) return bad_input(result.error().to_string());
  const std::vector<rules::RuleVerdict>& verdicts = *result;

  std::size_t count[4] = {0, 0, 0, 0};
  for (const auto& v : verdicts) ++count[static_cast<int>(v.status)];
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  char line[256];
  std::snprintf(line, sizeof line, "%zu rules: %zu proved, %zu refuted, %zu unknown, %zu unverified (%.1f s)\n",
                verdicts.size(), count[0], count[1], count[2], count[3], secs);
  (o.json ? std::cerr : std::cout) << line;
  return count[1] || count[2] ? kCheckFailed : kOk;
}

}  // namespace saturn::cli
