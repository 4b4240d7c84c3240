// `saturn opt --html`: one self-contained page (no script or style from
// elsewhere) that shows what optimizing a model did: the graph before and
// after side by side with the nodes that changed filled, the e-graph's size
// after each iteration of each rule phase as a plot, which rules fired, and
// each node's modeled cost (said to be modeled; measured latencies appear
// when the report has them, from --measure).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/graph.hpp"

namespace saturn::pipeline {

// Node n of `g` changed when `other` has no node with the same op, operands
// and results (what the optimization replaced, or what it made).
std::vector<bool> changed_nodes(const ir::Graph& g, const ir::Graph& other);

// A drawing of a graph: SVG from Graphviz, or, without Graphviz, its text.
struct GraphPicture {
  std::string svg;  // empty: show `dot` as text
  std::string dot;
};

// The page. `report` is optimize()'s (docs/cli.md, "saturn opt").
std::string html_report(const ir::Graph& before, const ir::Graph& after, const nlohmann::json& report,
                        const GraphPicture& before_picture, const GraphPicture& after_picture);

}  // namespace saturn::pipeline
