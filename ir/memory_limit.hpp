// A value larger than the machine's physical memory cannot be computed, so
// it is refused before anything is allocated for it. Allocating it is no
// test: under overcommit an allocation that large may succeed and the
// process be killed only when its pages are written, and AddressSanitizer's
// allocator aborts on it. The importer (constants it folds) and the
// lowering (every value of the program) both ask here, so that both refuse
// with the same words.
#pragma once

#include <optional>
#include <string>

#include "ir/op.hpp"

namespace saturn::ir {

// The machine's physical memory in bytes; 0 when the system does not say.
double physical_memory_bytes();

// "out of memory: 'NAME' (f32[...]) needs N GiB, more than this machine's
// M GiB" when the value of that type cannot fit; nothing when it can, or
// when its size or the memory is unknown.
std::optional<std::string> exceeds_memory(const std::string& name, const ValueType& type);

}  // namespace saturn::ir
