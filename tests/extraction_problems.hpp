// Small extraction problems written by hand, for the extractor tests.
#pragma once

#include <tuple>
#include <vector>

#include "extract/problem.hpp"
#include "helpers.hpp"

namespace saturn::test {

// Classes 0..classes-1; nodes given as (class, cost, children).
inline extract::ExtractionProblem make_problem(
    std::size_t classes, std::vector<std::tuple<std::uint32_t, double, std::vector<std::uint32_t>>> nodes,
    std::vector<std::uint32_t> roots) {
  extract::ExtractionProblem p;
  p.classes.resize(classes);
  for (auto& [c, cost, kids] : nodes) {
    p.classes[c].push_back(static_cast<std::uint32_t>(p.nodes.size()));
    extract::ExtractionProblem::Node n;
    n.cls = c;
    n.cost = cost;
    n.children = kids;
    n.op = numbered("n", static_cast<int>(p.nodes.size()));
    p.nodes.push_back(std::move(n));
  }
  p.roots = std::move(roots);
  return p;
}

}  // namespace saturn::test
