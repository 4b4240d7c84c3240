// `saturn dot`: a model or an e-graph as a picture (docs/cli.md). A model
// (.onnx, .sat) is drawn with its values' types; an egraph-serialize JSON
// file (`saturn eqsat --egraph-json`, extraction-gym's data) with its
// classes as clusters and a program extracted from it marked. Graphviz
// text goes to -o FILE.dot (or stdout); -o FILE.svg, .png or .pdf runs
// Graphviz's `dot` on it.
#pragma once

#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace saturn::cli {

struct DotOptions {
  std::string input;
  std::string out;
  std::string extractor = "dag-greedy";
};

void add_dot_command(CLI::App& app, DotOptions& opts);
int run_dot(const DotOptions& opts);

// Whether `path` names a picture `write_graphviz` can write (.dot, .gv,
// .svg, .png, .pdf); false: bad_input says which endings.
bool graphviz_name_ok(const std::string& path);
// Writes Graphviz text to `path`: as it is (.dot, .gv), or drawn by
// Graphviz's dot (.svg, .png, .pdf). kOk, or bad_input saying what failed.
int write_graphviz(const std::string& text, const std::string& path);
// Graphviz text drawn as SVG by Graphviz's dot; nullopt when dot is not
// installed, fails, or takes more than `seconds` (the caller shows the
// text instead).
std::optional<std::string> render_svg(const std::string& text, double seconds);

}  // namespace saturn::cli
