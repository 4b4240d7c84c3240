// A compiled program's borders, the same for every executor: the output
// tensors it writes, and whether the caller's inputs are what it was
// compiled for.
#pragma once

#include <algorithm>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/shape.hpp"
#include "ir/tensor.hpp"
#include "lower/program.hpp"

namespace saturn::runtime {

// Sizes `outs` to the program's outputs, reallocating only those whose
// number, type or shape differ (timed runs allocate nothing).
// The error of a run that cannot allocate `bytes` for `what`.
inline std::string out_of_memory(const std::string& what, std::size_t bytes) {
  return "out of memory: the program needs " + std::to_string(bytes >> 20) + " MiB for " + what;
}

// Gives `outs` the program's output types; the error when their memory
// cannot be had. Outputs `skip` marks (written elsewhere) are left as they are.
inline std::optional<std::string> prepare_outputs(const lower::Program& p, std::vector<ir::Tensor>& outs,
                                                  const std::vector<bool>* skip = nullptr) {
  outs.resize(p.outputs.size());
  for (std::size_t k = 0; k < p.outputs.size(); ++k) {
    if (skip && k < skip->size() && (*skip)[k]) continue;
    const lower::Buffer& buf = p.buffers[static_cast<std::size_t>(p.outputs[k])];
    if (outs[k].dtype() != buf.dtype || outs[k].dims() != p.output_dims[k] || outs[k].nbytes() != buf.bytes) {
      try {
        outs[k] = ir::Tensor(buf.dtype, p.output_dims[k]);
      } catch (const std::bad_alloc&) {
        return out_of_memory("output " + std::to_string(k) + " ('" + buf.name + "')", buf.bytes);
      }
    }
  }
  return std::nullopt;
}

// Why `p` cannot take `inputs` as a whole: another count than the graph's
// inputs (an extra one would be ignored); nullopt when the count fits.
inline std::optional<std::string> input_count_mismatch(const lower::Program& p, std::span<const ir::Tensor> inputs) {
  const auto count = static_cast<std::size_t>(std::count_if(
      p.buffers.begin(), p.buffers.end(), [](const lower::Buffer& b) { return b.kind == lower::BufferKind::Input; }));
  if (inputs.size() == count) return std::nullopt;
  return "the model takes " + std::to_string(count) + " inputs, given " + std::to_string(inputs.size());
}

// Why input buffer `buf` cannot take the caller's inputs (missing, or another
// type or shape than compiled for); nullopt when it can.
inline std::optional<std::string> input_mismatch(const lower::Buffer& buf, std::span<const ir::Tensor> inputs) {
  const auto i = static_cast<std::size_t>(buf.input_index);
  if (i >= inputs.size())
    return "the model takes " + std::to_string(i + 1) + " or more inputs, given " + std::to_string(inputs.size());
  const ir::Tensor& t = inputs[i];
  if (t.dtype() != buf.dtype || t.dims() != buf.dims)
    return "input " + std::to_string(i) + " ('" + buf.name + "') is " + t.summary() +
           ", the program was compiled for " + ir::dtype_name(buf.dtype) + ir::to_string(ir::shape_of(buf.dims));
  return std::nullopt;
}

}  // namespace saturn::runtime
