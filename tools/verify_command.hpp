// `saturn verify RULES... [--max-dim N] [--json]`: prove every rule of the
// given files (or folders of .rules files) with Z3, or show a counterexample
// (rules/verify.hpp, docs/verify.md).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rules/verify.hpp"

namespace CLI {
class App;
}

namespace saturn::cli {

struct VerifyCommandOptions {
  std::vector<std::string> rules;  // files or folders
  rules::VerifyOptions verify;
  std::string only;   // verify only the rules whose name contains this
  unsigned jobs = 0;  // 0: one per core
  bool json = false;
  bool quiet = false;
};

void add_verify_command(CLI::App& app, VerifyCommandOptions& opts);

// Called under a lock each time a rule's verdict is ready: the verdicts in
// file order (done[i] says which are ready) and how many are.
using VerdictProgress =
    std::function<void(const std::vector<rules::RuleVerdict>&, const std::vector<bool>& done, std::size_t finished)>;
// Verifies every rule of the files and folders (o.rules), o.jobs at a time;
// an error for a missing file, a malformed rule file, or no rule to verify.
Expected<std::vector<rules::RuleVerdict>> verify_rules(const VerifyCommandOptions& o,
                                                       const VerdictProgress& progress = {});
// One verdict as `saturn verify --json` prints it (docs/verify.md).
nlohmann::json verdict_json(const rules::RuleVerdict& v);

int run_verify(const VerifyCommandOptions& opts);

}  // namespace saturn::cli
