#include "pipeline/graph_builder.hpp"

namespace saturn::pipeline {

void build_error(std::string message) { throw BuildError{std::move(message)}; }

std::vector<std::int64_t> static_dims_of(const TensorRef& t) {
  if (!ir::is_static(t.type.shape))
    build_error("'" + t.name + "' has the symbolic shape " + ir::to_string(t.type.shape));
  return ir::static_dims(t.type.shape);
}

std::int64_t normalize_axis(std::int64_t a, std::int64_t rank) {
  std::int64_t n = a < 0 ? a + rank : a;
  if (n < 0 || n >= std::max<std::int64_t>(rank, 1))
    build_error("axis " + std::to_string(a) + " out of range for rank " + std::to_string(rank));
  return n;
}

}  // namespace saturn::pipeline
