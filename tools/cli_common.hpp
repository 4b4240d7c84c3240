// Shared pieces of the `saturn` verbs: exit codes, terminal detection.
#pragma once

#include <string>

#include "tools/saturate.hpp"

namespace CLI {
class App;
}

namespace saturn::cli {

// Exit status contract of DESIGN.md.
inline constexpr int kOk = 0;
inline constexpr int kCheckFailed = 1;
inline constexpr int kBadInput = 2;

// True when stderr is a terminal (progress is shown only then).
bool stderr_is_terminal();

// Prints "saturn: error: message" to stderr and returns kBadInput.
int bad_input(const std::string& message);

// The saturation limit flags every saturating verb takes (--iter-limit,
// --node-limit, --time-limit, --memory-limit, --scheduler), bound to `o`.
void add_saturation_flags(CLI::App& cmd, SaturateOptions& o, const std::string& iter_help,
                          const std::string& time_help);

}  // namespace saturn::cli
