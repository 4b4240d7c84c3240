// `saturn verify RULES... [--max-dim N] [--json]`: prove every rule of the
// given files (or folders of .rules files) with Z3, or show a counterexample
// (rules/verify.hpp, docs/verify.md).
#pragma once

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
int run_verify(const VerifyCommandOptions& opts);

}  // namespace saturn::cli
