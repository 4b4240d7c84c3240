// Where Saturn keeps what it measured or compiled for the next run (the
// calibration, compiled kernels): $SATURN_CACHE_DIR, else
// $XDG_CACHE_HOME/saturn, else $HOME/.cache/saturn, else the temporary
// folder's saturn/. Nothing here creates it; writers do, and a cache that
// cannot be written is only slower.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>

namespace saturn::ir {

std::filesystem::path cache_dir();

// FNV-1a of `s`: the same in every build and process, so that what a cache
// file is for can be its name.
std::uint64_t stable_hash(std::string_view s);

}  // namespace saturn::ir
