// Where Saturn keeps what it measured or compiled for the next run (the
// calibration, compiled kernels): $SATURN_CACHE_DIR, else
// $XDG_CACHE_HOME/saturn, else $HOME/.cache/saturn, else the temporary
// folder's saturn/. Nothing here creates it; writers do, and a cache that
// cannot be written is only slower.
#pragma once

#include <filesystem>

namespace saturn::ir {

std::filesystem::path cache_dir();

}  // namespace saturn::ir
