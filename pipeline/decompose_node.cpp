#include "pipeline/decompose_node.hpp"

#include "extract/extractors.hpp"
#include "pipeline/saturate.hpp"
#include "rules/tensor_builtins.hpp"
#include "rules/tensor_egraph.hpp"

namespace saturn::pipeline {

Expected<Decomposer> Decomposer::load(const std::string& rulesets_dir) {
  rules::register_tensor_builtins(rules::BuiltinRegistry::global());
  std::vector<rules::RuleFile> files;
  for (const char* f : {"decompose.rules", "constfold.rules"}) {
    auto r = rules::load_rules(rulesets_dir + "/" + f, rules::BuiltinRegistry::global(), rules::check_tensor_op);
    if (!r) return r.error();
    files.push_back(std::move(*r));
  }
  auto phases = rules::group_phases(std::move(files));
  if (!phases) return phases.error();
  Decomposer d;
  d.phases_ = std::move(*phases);
  return d;
}

Expected<std::optional<ir::Graph>> Decomposer::decompose(const ir::Graph& g, std::size_t index) const {
  const ir::Node& n = g.nodes.at(index);
  auto types = ir::infer_types(g);
  if (!types) return types.error();
  // The node alone: its operands as inputs (constant ones as initializers,
  // so shapes and indices fold), its results as outputs.
  ir::Graph one;
  one.name = n.name;
  one.source = g.source;
  for (const std::string& x : n.inputs) {
    if (x.empty() || one.initializers.count(x)) continue;
    if (std::any_of(one.inputs.begin(), one.inputs.end(), [&](const ir::GraphValue& v) { return v.name == x; }))
      continue;
    if (auto it = g.initializers.find(x); it != g.initializers.end())
      one.initializers.emplace(x, it->second);
    else
      one.inputs.push_back({x, types->at(x)});
  }
  one.nodes = {n};
  one.outputs = n.outputs;
  auto t = rules::to_egraph(one);
  if (!t) return t.error();
  SaturateOptions so;
  so.iter_limit = 8;
  so.progress = false;
  std::vector<rules::Phase> phases = phases_;
  saturate(t->graph, phases, so);
  auto cost = [](const egraph::EGraph& eg, egraph::NodeId id) -> double {
    if (eg.children(id).empty() || eg.op(id).is_literal()) return 0;
    const ir::OpDef* d = ir::OpRegistry::get().find(eg.op(id).name());
    if (d && d->name == "erf") return 1.0;
    return d && d->kind != ir::OpKind::Primitive ? extract::kInfinity : 1.0;
  };
  auto p = extract::problem_from_egraph(t->graph, t->outputs, cost);
  auto x = extract::extract_tree_greedy(p);
  if (!(x.dag_cost < extract::kInfinity)) return std::optional<ir::Graph>{};
  auto prim = rules::from_egraph(*t, [&](egraph::EClassId k) {
    return p.node_ids[static_cast<std::size_t>(x.choice[p.class_index(t->graph.find(k))])];
  });
  if (!prim) return prim.error();
  return std::optional<ir::Graph>(std::move(*prim));
}

}  // namespace saturn::pipeline
