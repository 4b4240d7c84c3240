// Einsum equations: each operand's letters (ellipsis expanded to reserved
// letters '0'..'9', right-aligned), the output's letters (explicit, or the
// letters met once in sorted order), and each letter's size (1 broadcasts).
// One parser for the op's shape rule and kernel and for the rule built-in
// that decomposes einsum into transposes, a product and a sum.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace saturn::ir {

struct EinsumPlan {
  std::vector<std::string> terms;  // letters per operand
  std::string out;
  std::map<char, std::int64_t> size;
};

// Throws ShapeError naming what does not fit.
EinsumPlan einsum_plan(const std::string& equation, const std::vector<std::vector<std::int64_t>>& shapes);

}  // namespace saturn::ir
