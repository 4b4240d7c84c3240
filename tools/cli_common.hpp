// Shared pieces of the `saturn` verbs: exit codes, terminal detection.
#pragma once

#include <string>

namespace saturn::cli {

// Exit status contract of DESIGN.md.
inline constexpr int kOk = 0;
inline constexpr int kCheckFailed = 1;
inline constexpr int kBadInput = 2;

// True when stderr is a terminal (progress is shown only then).
bool stderr_is_terminal();

// Prints "saturn: error: message" to stderr and returns kBadInput.
int bad_input(const std::string& message);

}  // namespace saturn::cli
