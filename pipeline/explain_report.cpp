#include "pipeline/explain_report.hpp"

#include <map>
#include <span>
#include <sstream>

#include "egraph/rewrite.hpp"

namespace saturn::pipeline {

namespace {

using egraph::EClassId;
using egraph::Justification;

// Steps shown in all (a congruence's operands included): past it, "truncated".
constexpr int kStepBudget = 200;
// Levels of congruence whose operands' chains are shown.
constexpr int kDepth = 4;

class Explainer {
 public:
  Explainer(const rules::TensorEGraph& t, const nlohmann::json& rules) : g_(t.graph), rules_(rules) {
    for (const auto& [id, imp] : t.imported) {
      named_.emplace(g_.find(EClassId(id)).v, imp.value);
      written_.emplace(g_.find(EClassId(id)).v, egraph::NodeId(id));
    }
  }

  // A class as the user reads it: a value of the written model, a literal,
  // or its id.
  std::string show(EClassId c) const {
    c = g_.find(c);
    if (auto it = named_.find(c.v); it != named_.end()) return it->second;
    if (auto lit = g_.literal(c)) return lit->name();
    // A graph input or a weight: (input NAME), (const HANDLE).
    for (const auto& n : g_.nodes(c)) {
      const std::string op = g_.op(n).name();
      if ((op == "input" || op == "const") && g_.children(n).size() == 1)
        if (auto sym = rules::leaf_symbol(g_, g_.children(n)[0])) return sym->name();
    }
    for (const auto& n : g_.nodes(c))
      if (g_.children(n).empty()) return g_.op(n).name();
    return "%" + std::to_string(c.v);
  }

  nlohmann::json steps(const std::vector<egraph::ProofStep>& links, int depth) {
    nlohmann::json out = nlohmann::json::array();
    for (const egraph::ProofStep& s : links) {
      if (budget_-- <= 0) {
        truncated_ = true;
        break;
      }
      const Justification& j = *s.why;
      switch (j.kind) {
        case Justification::Kind::Rule: {
          std::vector<std::string> names;
          for (EClassId b : j.bindings) names.push_back(show(b));
          const std::string lhs = j.rule->lhs()[j.rhs].to_string(names);
          const std::string rhs = j.rule->rhs()[j.rhs].to_string(names);
          const std::string& rule = j.rule->name();
          std::string at;
          if (rules_.contains(rule)) at = rules_[rule].value("at", std::string());
          nlohmann::json step = {{"kind", "rule"},
                                 {"rule", rule},
                                 {"at", at},
                                 {"direction", s.forward ? "forward" : "backward"},
                                 {"from", s.forward ? lhs : rhs},
                                 {"to", s.forward ? rhs : lhs}};
          if (depth > 0) {
            nlohmann::json operands =
                inner_nodes(s.forward ? j.rule->lhs()[j.rhs] : j.rule->rhs()[j.rhs], j.bindings, s.from, depth - 1);
            if (!operands.empty()) step["operands"] = std::move(operands);
          }
          out.push_back(std::move(step));
          break;
        }
        case Justification::Kind::Congruence: {
          nlohmann::json operands = nlohmann::json::array();
          // Oriented as the step goes: from the node at its start.
          const egraph::NodeId from = s.forward ? j.left : j.right, to = s.forward ? j.right : j.left;
          auto a = g_.children(from), b = g_.children(to);
          for (std::size_t k = 0; k < a.size() && k < b.size(); ++k) {
            if (a[k] == b[k]) continue;
            nlohmann::json o = {{"operand", std::to_string(k)}, {"from", show(a[k])}, {"to", show(b[k])}};
            if (depth > 0) o["steps"] = steps(chain(a[k], b[k]), depth - 1);
            operands.push_back(std::move(o));
          }
          out.push_back({{"kind", "congruence"}, {"op", g_.op(from).name()}, {"operands", std::move(operands)}});
          break;
        }
        case Justification::Kind::Analysis:
          out.push_back({{"kind", "analysis"}});
          break;
        case Justification::Kind::Given:
          out.push_back({{"kind", "given"}});
          break;
      }
    }
    return out;
  }

  bool truncated() const { return truncated_; }
  const std::string& replay_error() const { return replay_error_; }

  // The chain between two ids, replayed (the first failure is kept).
  std::vector<egraph::ProofStep> chain(EClassId a, EClassId b) {
    auto c = g_.proofs()->path(a, b);
    if (replay_error_.empty()) replay_error_ = egraph::replay(g_, c, a, b);
    return c;
  }

 private:
  // What joins a step's start to the side the rule matched there: the
  // matched root node when it is not the step's start, and each node inside
  // the side whose class holds a value of the written model (why the value
  // equals the node).
  nlohmann::json inner_nodes(const egraph::Pattern& side, std::span<const EClassId> bindings, EClassId start,
                             int depth) {
    nlohmann::json out = nlohmann::json::array();
    std::vector<EClassId> at(side.nodes.size());
    for (std::size_t i = 0; i < side.nodes.size(); ++i) {
      const egraph::PatternNode& n = side.nodes[i];
      if (n.is_var()) {
        at[i] = n.var < bindings.size() ? g_.find(bindings[n.var]) : EClassId();
        continue;
      }
      std::vector<EClassId> kids;
      for (std::uint32_t c : n.children) kids.push_back(at[c]);
      auto node = g_.lookup_node(n.op, kids);
      if (!node) return out;  // (replay reports a side that is not there)
      at[i] = g_.find(EClassId(node->v));
      egraph::NodeId from = egraph::NodeId(start.v);
      if (i + 1 < side.nodes.size()) {
        auto w = written_.find(at[i].v);
        if (w == written_.end()) continue;
        from = w->second;
      }
      if (from == *node) continue;
      out.push_back({{"operand", show(at[i])},
                     {"from", g_.op(from).name()},
                     {"to", g_.op(*node).name()},
                     {"steps", steps(chain(EClassId(from.v), EClassId(node->v)), depth)}});
    }
    return out;
  }

  const egraph::EGraph& g_;
  const nlohmann::json& rules_;
  std::map<std::uint32_t, std::string> named_;       // class -> a value of the written model in it
  std::map<std::uint32_t, egraph::NodeId> written_;  // class -> the import's node for that value
  int budget_ = kStepBudget;
  bool truncated_ = false;
  std::string replay_error_;
};

void text_of(const nlohmann::json& steps, const std::string& indent, std::ostringstream& o) {
  int k = 0;
  for (const auto& s : steps) {
    const std::string kind = s.value("kind", "");
    o << indent << ++k << ". ";
    if (kind == "rule") {
      o << s["rule"].get<std::string>() << (s["direction"] == "backward" ? " (right to left)" : "");
      if (!s["at"].get<std::string>().empty()) o << "  [" << s["at"].get<std::string>() << "]";
      o << "\n"
        << indent << "     " << s["from"].get<std::string>() << "\n"
        << indent << "  => " << s["to"].get<std::string>() << "\n";
      if (s.contains("operands"))
        for (const auto& op : s["operands"]) {
          o << indent << "   where " << op["operand"].get<std::string>() << " (" << op["from"].get<std::string>()
            << ") is the " << op["to"].get<std::string>() << " above:\n";
          text_of(op["steps"], indent + "      ", o);
        }
    } else if (kind == "congruence") {
      o << "congruence of " << s["op"].get<std::string>() << ": its operands are equal\n";
      for (const auto& op : s["operands"]) {
        o << indent << "   operand " << op["operand"].get<std::string>() << ": " << op["from"].get<std::string>()
          << " = " << op["to"].get<std::string>() << "\n";
        if (op.contains("steps")) text_of(op["steps"], indent + "      ", o);
      }
    } else if (kind == "analysis") {
      o << "a constant the analysis folded\n";
    } else {
      o << "given\n";
    }
  }
}

}  // namespace

nlohmann::json explain_value(const rules::TensorEGraph& t, const std::string& value, egraph::NodeId written,
                             egraph::NodeId chosen, const nlohmann::json& rules_report) {
  const egraph::EGraph& g = t.graph;
  Explainer ex(t, rules_report);
  nlohmann::json e = {{"value", value},
                      {"written", g.op(written).name()},
                      {"optimized", g.op(chosen).name()},
                      {"steps", ex.steps(ex.chain(EClassId(written.v), EClassId(chosen.v)), kDepth)}};
  e["truncated"] = ex.truncated();
  // Every chain shown (the operands' too) was replayed.
  e["replayed"] = ex.replay_error().empty();
  if (!ex.replay_error().empty()) e["replay_error"] = ex.replay_error();
  return e;
}

std::string explanation_text(const nlohmann::json& e) {
  std::ostringstream o;
  o << "value '" << e["value"].get<std::string>() << "': " << e["written"].get<std::string>() << " as written, "
    << e["optimized"].get<std::string>() << " in the optimized program";
  if (e["steps"].empty()) {
    o << ": unchanged\n";
    return o.str();
  }
  o << ", by " << e["steps"].size() << (e["steps"].size() == 1 ? " step (" : " steps (")
    << (e["replayed"].get<bool>() ? "replayed" : "NOT replayed: " + e.value("replay_error", std::string())) << "):\n";
  text_of(e["steps"], "  ", o);
  if (e["truncated"].get<bool>()) o << "  ... (truncated)\n";
  return o.str();
}

}  // namespace saturn::pipeline
