#include "tools/cli_common.hpp"

#include <unistd.h>

#include <iostream>

namespace saturn::cli {

bool stderr_is_terminal() { return isatty(STDERR_FILENO) != 0; }

int bad_input(const std::string& message) {
  std::cerr << "saturn: " << (message.find("error:") == std::string::npos ? "error: " : "") << message << "\n";
  return kBadInput;
}

}  // namespace saturn::cli
