// Memory a oneDNN step owns (weights packed once, a scratch for a reordered
// source or result), taken from ir::allocate_buffer: a large one lies on
// huge pages, where oneDNN's own allocation would take 4 KiB pages that a
// run streaming through the weights misses the TLB on (ir/large_buffer.hpp).
// The storage lives as long as `owner`, the step's state, does.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "ir/large_buffer.hpp"

namespace saturn::lower {

inline dnnl::memory owned_memory(const dnnl::memory::desc& d, const dnnl::engine& engine,
                                 std::vector<std::shared_ptr<std::uint8_t[]>>& owner) {
  auto storage = ir::allocate_buffer(std::max<std::size_t>(d.get_size(), 1), /*zero_fill=*/false);
  if (!storage) throw std::bad_alloc();
  owner.push_back(storage);
  return dnnl::memory(d, engine, storage.get());
}

}  // namespace saturn::lower
