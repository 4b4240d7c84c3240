#include "tools/cli_common.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>

namespace saturn::cli {

bool stderr_is_terminal() { return isatty(STDERR_FILENO) != 0; }

int bad_input(const std::string& message) {
  std::cerr << "saturn: " << (message.find("error:") == std::string::npos ? "error: " : "") << message << "\n";
  return kBadInput;
}

void add_saturation_flags(CLI::App& cmd, SaturateOptions& o, const std::string& iter_help,
                          const std::string& time_help) {
  cmd.add_option("--iter-limit", o.iter_limit, iter_help)->capture_default_str();
  cmd.add_option("--node-limit", o.node_limit, "Stop once the e-graph holds more than N e-nodes")
      ->capture_default_str();
  cmd.add_option("--time-limit", o.time_limit_s, time_help)->capture_default_str();
  cmd.add_option("--memory-limit", o.memory_limit_mb,
                 "Stop once the process holds more than MB MiB of memory (default: half of physical memory)");
  cmd.add_option("--scheduler", o.scheduler, "Rule scheduler")
      ->check(CLI::IsMember({"simple", "backoff"}))
      ->capture_default_str();
}

}  // namespace saturn::cli
