// A model graph as Graphviz text (`saturn dot MODEL`): what a user looks at
// to see the program before and after `saturn opt`.
//
// One box per node (its op, its name when it has one, and the weights it
// reads with their types), an ellipse per graph input and output, and an
// edge per value from its producer to each consumer, labelled with the
// value's type. Nodes the outputs do not depend on are drawn dashed and
// grey (neither the interpreter nor the lowerings run them).
#pragma once

#include <map>
#include <string>

#include "ir/graph.hpp"

namespace saturn::ir {

// `types`: every value's type (infer_types); a value missing there is
// drawn without one. Node n is filled when highlighted[n] (what `saturn opt
// --html` marks as changed), and carries the id "node-n" (an SVG element id).
std::string graph_to_dot(const Graph& g, const std::map<std::string, ValueType>& types,
                         const std::vector<bool>& highlighted = {});

// A string as a Graphviz quoted string ("..." with ", \ and newlines
// escaped the way dot reads them).
std::string dot_quoted(const std::string& text);

}  // namespace saturn::ir
