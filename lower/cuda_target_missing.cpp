// The CUDA target where CMake found no CUDA toolkit: asking for it is an
// error the user sees (saturn run --target cuda), not a crash.
#include "lower/target.hpp"

namespace saturn::lower {

std::unique_ptr<Target> make_cuda_target(Program&, const LoweringOptions&) {
  throw DiagnosticError{Diagnostic{{}, "the cuda target is not built here: CMake found no CUDA toolkit"}};
}

}  // namespace saturn::lower
