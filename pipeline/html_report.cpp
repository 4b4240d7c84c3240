#include "pipeline/html_report.hpp"

#include "pipeline/explain_report.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <tuple>

namespace saturn::pipeline {

namespace {

std::string escape(const std::string& s) {
  std::string r;
  r.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '<':
        r += "&lt;";
        break;
      case '>':
        r += "&gt;";
        break;
      case '&':
        r += "&amp;";
        break;
      case '"':
        r += "&quot;";
        break;
      default:
        r += c;
    }
  }
  return r;
}

std::string number(double v, int digits = 1) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(digits);
  o << v;
  return o.str();
}

// A JSON number or "-" (null: not finite, absent).
std::string number_of(const nlohmann::json& j, const char* key, int digits = 1) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return "-";
  return number(j[key].get<double>(), digits);
}

// Graphviz's SVG without its XML prolog and doctype, so it can sit in HTML.
std::string inline_svg(const std::string& svg) {
  auto at = svg.find("<svg");
  return at == std::string::npos ? svg : svg.substr(at);
}

using NodeKey = std::tuple<std::string, std::vector<std::string>, std::vector<std::string>>;

NodeKey key_of(const ir::Node& n) { return {n.op, n.inputs, n.outputs}; }

// The e-graph's size after each iteration, phase after phase, as an SVG
// line chart (e-nodes and e-classes; a dashed line where a phase starts).
std::string growth_plot(const nlohmann::json& phases) {
  struct Point {
    double enodes, eclasses;
  };
  std::vector<Point> pts;
  std::vector<std::pair<std::size_t, std::string>> starts;
  if (phases.is_array())
    for (const auto& p : phases) {
      if (!p.contains("enodes") || !p["enodes"].is_array()) continue;
      starts.emplace_back(pts.size(), "phase " + std::to_string(p.value("phase", 0)));
      for (std::size_t i = 0; i < p["enodes"].size(); ++i)
        pts.push_back({p["enodes"][i].get<double>(), p["eclasses"][i].get<double>()});
    }
  if (pts.empty()) return "<p>No iteration ran.</p>";
  const double w = 720, h = 260, left = 70, right = 20, top = 20, bottom = 40;
  double ymax = 1;
  for (const Point& p : pts) ymax = std::max(ymax, p.enodes);
  const double xs = pts.size() > 1 ? (w - left - right) / static_cast<double>(pts.size() - 1) : 0;
  auto x = [&](std::size_t i) { return left + xs * static_cast<double>(i); };
  auto y = [&](double v) { return top + (h - top - bottom) * (1 - v / ymax); };
  std::ostringstream o;
  o << "<svg class=\"plot\" id=\"growth\" width=\"" << w << "\" height=\"" << h << "\" viewBox=\"0 0 " << w << " " << h
    << "\" xmlns=\"http://www.w3.org/2000/svg\">\n";
  o << "<line x1=\"" << left << "\" y1=\"" << y(0) << "\" x2=\"" << w - right << "\" y2=\"" << y(0)
    << "\" stroke=\"#555\"/>\n<line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\"" << y(0)
    << "\" stroke=\"#555\"/>\n";
  for (int t = 0; t <= 4; ++t) {
    const double v = ymax * t / 4;
    o << "<text x=\"" << left - 6 << "\" y=\"" << y(v) + 4 << "\" text-anchor=\"end\" class=\"tick\">"
      << static_cast<long long>(std::llround(v)) << "</text>\n";
  }
  for (const auto& [at, label] : starts) {
    o << "<line x1=\"" << x(at) << "\" y1=\"" << top << "\" x2=\"" << x(at) << "\" y2=\"" << y(0)
      << "\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>\n<text x=\"" << x(at) + 3 << "\" y=\"" << top + 10
      << "\" class=\"tick\">" << escape(label) << "</text>\n";
  }
  auto line = [&](auto value, const char* cls, const char* color) {
    o << "<polyline class=\"" << cls << "\" fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\"";
    for (std::size_t i = 0; i < pts.size(); ++i)
      o << (i ? " " : "") << number(x(i), 1) << "," << number(y(value(pts[i])), 1);
    o << "\"/>\n";
  };
  line([](const Point& p) { return p.enodes; }, "enodes", "#1f77b4");
  line([](const Point& p) { return p.eclasses; }, "eclasses", "#ff7f0e");
  o << "<text x=\"" << (left + w - right) / 2 << "\" y=\"" << h - 8
    << "\" text-anchor=\"middle\" class=\"tick\">iteration (all phases, in order)</text>\n";
  o << "</svg>\n<p class=\"legend\"><span style=\"color:#1f77b4\">&#9632; e-nodes</span> "
       "<span style=\"color:#ff7f0e\">&#9632; e-classes</span> after each iteration</p>\n";
  return o.str();
}

std::string picture(const GraphPicture& p, const std::string& which) {
  if (!p.svg.empty()) return "<div class=\"graph\" id=\"graph-" + which + "\">" + inline_svg(p.svg) + "</div>\n";
  return "<div class=\"graph\" id=\"graph-" + which +
         "\"><p>Graphviz's <code>dot</code> did not draw it (it is not installed, Debian: apt install graphviz; "
         "or its layout did not finish within 30 s); the graph as Graphviz text:</p><pre>" +
         escape(p.dot) + "</pre></div>\n";
}

std::string summary(const ir::Graph& before, const ir::Graph& after, const nlohmann::json& r) {
  std::ostringstream o;
  o << "<table class=\"summary\">\n";
  auto row = [&](const std::string& k, const std::string& v) {
    o << "<tr><th>" << escape(k) << "</th><td>" << v << "</td></tr>\n";
  };
  row("nodes", std::to_string(before.nodes.size()) + " &rarr; " + std::to_string(after.nodes.size()));
  row("cost (modeled)", number_of(r, "cost_before") + " us &rarr; " + number_of(r, "cost_after") + " us (" +
                            number_of(r, "speedup", 2) + "x modeled: nothing was run)");
  if (r.contains("measured") && r["measured"].is_object()) {
    const auto& m = r["measured"];
    row("latency (measured)", number_of(m, "written_ms", 3) + " ms as written &rarr; " +
                                  number_of(m, "optimized_ms", 3) + " ms optimized (" + number_of(m, "speedup", 2) +
                                  "x measured, " + escape(m.value("kept", std::string())) + " kept)");
  }
  if (r.contains("egraph"))
    row("e-graph", number_of(r["egraph"], "enodes_start", 0) + " &rarr; " + number_of(r["egraph"], "enodes", 0) +
                       " e-nodes, " + number_of(r["egraph"], "eclasses", 0) + " e-classes, " +
                       number_of(r["egraph"], "iterations", 0) + " iterations");
  if (r.contains("phases") && r["phases"].is_object()) {
    std::string t;
    for (const auto& [name, p] : r["phases"].items())
      t += escape(name) + " " + number_of(p, "time_ms") + " ms (" + escape(p.value("stop_reason", std::string())) +
           ") &nbsp; ";
    row("phases", t);
  }
  if (r.contains("extraction")) row("extractor", escape(r["extraction"].value("extractor", std::string())));
  if (r.contains("cache")) row("compile cache", escape(r["cache"].get<std::string>()));
  o << "</table>\n";
  return o.str();
}

std::string rules_table(const nlohmann::json& rules) {
  struct Row {
    std::string name, at;
    std::size_t matches, applications, changed, rejected, banned;
  };
  std::vector<Row> fired, quiet;
  if (rules.is_object())
    for (const auto& [name, c] : rules.items()) {
      Row row{name,
              c.value("at", std::string()),
              c.value("matches", std::size_t{0}),
              c.value("applications", std::size_t{0}),
              c.value("changed", std::size_t{0}),
              c.value("rejected", std::size_t{0}),
              c.value("times_banned", std::size_t{0})};
      (row.matches ? fired : quiet).push_back(std::move(row));
    }
  std::sort(fired.begin(), fired.end(), [](const Row& a, const Row& b) {
    return std::tie(b.changed, b.applications, a.name) < std::tie(a.changed, a.applications, b.name);
  });
  std::ostringstream o;
  o << "<table class=\"rules\" id=\"rules\">\n<tr><th>rule</th><th>where</th><th>matches</th><th>applied</th>"
       "<th>changed the e-graph</th><th>turned down by its guard</th><th>banned</th></tr>\n";
  for (const Row& r : fired)
    o << "<tr class=\"fired\"><td>" << escape(r.name) << "</td><td>" << escape(r.at) << "</td><td>" << r.matches
      << "</td><td>" << r.applications << "</td><td>" << r.changed << "</td><td>" << r.rejected << "</td><td>"
      << r.banned << "</td></tr>\n";
  o << "</table>\n";
  if (!quiet.empty()) {
    o << "<details><summary>" << quiet.size() << " rules that never matched</summary><p>";
    for (std::size_t i = 0; i < quiet.size(); ++i) o << (i ? ", " : "") << escape(quiet[i].name);
    o << "</p></details>\n";
  }
  return o.str();
}

// Each node of the written model with the explanation of its value
// (pipeline/explain_report.hpp), opened by a click on the node.
std::string explanations(const ir::Graph& before, const nlohmann::json& all) {
  if (!all.is_object() || all.empty()) return "<p>No explanations were recorded.</p>\n";
  std::ostringstream o;
  for (std::size_t n = 0; n < before.nodes.size(); ++n) {
    for (const std::string& v : before.nodes[n].outputs) {
      if (!all.contains(v)) continue;
      const auto& e = all[v];
      std::string head = escape(v);
      if (e.contains("error")) {
        head += ": " + escape(e["error"].get<std::string>());
      } else {
        head += ": " + escape(e.value("written", "")) + " &rarr; " + escape(e.value("optimized", "")) + " (" +
                std::to_string(e["steps"].size()) + (e["steps"].size() == 1 ? " step" : " steps") +
                (e.value("replayed", false) ? ", replayed" : ", NOT replayed") + ")";
      }
      o << "<details class=\"explain\" id=\"explain-" << n << "\"><summary>" << head << "</summary><pre>"
        << (e.contains("error") ? std::string() : escape(explanation_text(e))) << "</pre></details>\n";
      break;
    }
  }
  return o.str();
}

std::string nodes_table(const ir::Graph& after, const std::vector<bool>& changed, const nlohmann::json& costs) {
  std::ostringstream o;
  o << "<table class=\"nodes\" id=\"nodes\">\n<tr><th>#</th><th>op</th><th>results</th><th>operands</th>"
       "<th>cost alone (us, modeled)</th></tr>\n";
  for (std::size_t n = 0; n < after.nodes.size(); ++n) {
    const ir::Node& node = after.nodes[n];
    std::string outs, ins;
    for (const auto& v : node.outputs) outs += (outs.empty() ? "" : ", ") + escape(v);
    for (const auto& v : node.inputs) ins += (ins.empty() ? "" : ", ") + escape(v.empty() ? "-" : v);
    const std::string cost =
        costs.is_array() && n < costs.size() && costs[n].is_number() ? number(costs[n].get<double>(), 2) : "-";
    o << "<tr id=\"row-" << n << "\"" << (changed[n] ? " class=\"changed\"" : "") << "><td>" << n << "</td><td>"
      << escape(node.op) << "</td><td>" << outs << "</td><td>" << ins << "</td><td>" << cost << "</td></tr>\n";
  }
  o << "</table>\n";
  return o.str();
}

const char* kStyle = R"(
body { font-family: Helvetica, Arial, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
table.summary th { background: #f3f3f3; }
tr.changed td { background: #fff2c2; }
tr.selected td { outline: 2px solid #c00; }
details.explain pre { font-size: 12px; background: #f7f7f7; padding: 6px; overflow-x: auto; }
.side { display: flex; gap: 16px; align-items: flex-start; }
.side > div { flex: 1; min-width: 0; }
.graph { border: 1px solid #ccc; overflow: auto; max-height: 640px; background: #fff; }
.graph svg { max-width: 100%; height: auto; }
.tick { font-size: 11px; fill: #444; }
.legend { font-size: 12px; }
.note { color: #555; font-size: 13px; }
)";

// Clicking a node of the optimized graph selects its row in the table; a
// node of the graph as written opens its value's explanation.
const char* kScript = R"(
document.querySelectorAll('#graph-before g.node').forEach(function (g) {
  g.style.cursor = 'pointer';
  g.addEventListener('click', function () {
    var d = document.getElementById('explain-' + (g.id || '').replace('node-', ''));
    if (!d) return;
    d.open = true;
    d.scrollIntoView({block: 'center'});
  });
});
document.querySelectorAll('#graph-after g.node').forEach(function (g) {
  g.style.cursor = 'pointer';
  g.addEventListener('click', function () {
    var row = document.getElementById('row-' + (g.id || '').replace('node-', ''));
    if (!row) return;
    document.querySelectorAll('tr.selected').forEach(function (r) { r.classList.remove('selected'); });
    row.classList.add('selected');
    row.scrollIntoView({block: 'center'});
  });
});
)";

}  // namespace

std::vector<bool> changed_nodes(const ir::Graph& g, const ir::Graph& other) {
  std::set<NodeKey> there;
  for (const ir::Node& n : other.nodes) there.insert(key_of(n));
  std::vector<bool> changed(g.nodes.size());
  for (std::size_t i = 0; i < g.nodes.size(); ++i) changed[i] = !there.count(key_of(g.nodes[i]));
  return changed;
}

std::string html_report(const ir::Graph& before, const ir::Graph& after, const nlohmann::json& report,
                        const GraphPicture& before_picture, const GraphPicture& after_picture) {
  const std::vector<bool> changed = changed_nodes(after, before);
  const std::string title = "Saturn: " + (before.source.empty() ? before.name : before.source) + " for " +
                            report.value("target", std::string("?"));
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" << escape(title)
    << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n<h1>" << escape(title) << "</h1>\n";
  o << summary(before, after, report);
  o << "<h2>The graph before and after</h2>\n<p class=\"note\">Filled: nodes the optimization replaced (left) "
       "and the nodes that replace them (right). Click a node on the left for why it became what it is, on the "
       "right to find it in the table below.</p>\n"
       "<div class=\"side\"><div><h3>as written</h3>"
    << picture(before_picture, "before") << "</div><div><h3>optimized</h3>" << picture(after_picture, "after")
    << "</div></div>\n";
  o << "<h2>E-graph growth</h2>\n" << growth_plot(report.contains("rule_phases") ? report["rule_phases"] : nullptr);
  o << "<h2>Rules that fired</h2>\n"
    << rules_table(report.contains("rules") ? report["rules"] : nlohmann::json::object());
  o << "<h2>Why each value became what it is</h2>\n<p class=\"note\">Click a node of the graph as written "
       "to open its value's explanation: the rule applications (and congruences) that prove it equal to what "
       "the optimized program computes, each replayed against the saturated e-graph.</p>\n"
    << explanations(before, report.contains("explanations") ? report["explanations"] : nullptr);
  o << "<h2>The optimized program</h2>\n<p class=\"note\">Each node's cost as the "
    << escape(report.value("target", std::string()))
    << " cost model prices it alone (modeled, not measured: a fused chain costs less than the sum).</p>\n"
    << nodes_table(after, changed, report.contains("node_costs_after") ? report["node_costs_after"] : nullptr);
  o << "<script>" << kScript << "</script>\n</body>\n</html>\n";
  return o.str();
}

}  // namespace saturn::pipeline
