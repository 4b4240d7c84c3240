// Memory a oneDNN step owns (weights packed once, a scratch for a reordered
// source or result) on huge pages, where oneDNN's own allocation would take
// 4 KiB pages (ir/huge_pages.hpp). The storage lives as long as `owner`,
// the step's state, does.
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "ir/huge_pages.hpp"

namespace saturn::lower {

inline dnnl::memory owned_memory(const dnnl::memory::desc& d, const dnnl::engine& engine,
                                 std::vector<std::shared_ptr<std::uint8_t[]>>& owner) {
  auto storage = ir::allocate_on_huge_pages(d.get_size());
  if (!storage) throw std::bad_alloc();
  owner.push_back(storage);
  return dnnl::memory(d, engine, storage.get());
}

}  // namespace saturn::lower
