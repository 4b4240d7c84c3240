#include "pipeline/optimize.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "extract/cost_model.hpp"
#include "extract/extractors.hpp"
#include "extract/problem_dot.hpp"
#include "pipeline/explain_report.hpp"
#include "pipeline/saturate.hpp"
#include "rules/rule_file.hpp"
#include "rules/tensor_builtins.hpp"
#include "rules/tensor_egraph.hpp"

#ifndef SATURN_RULESETS_DIR
#define SATURN_RULESETS_DIR "rulesets"
#endif

namespace saturn::pipeline {

namespace fs = std::filesystem;

std::string shipped_rulesets_dir() {
  if (const char* env = std::getenv("SATURN_RULESETS")) return env;
  return SATURN_RULESETS_DIR;
}

std::vector<std::string> rule_files_for(const std::string& dir, const std::string& target) {
  std::vector<std::string> out;
  for (const std::string& f : rules::rule_files_in(dir)) {
    std::string stem = fs::path(f).stem().string();
    bool cpu_only = stem == "blas" || stem == "dnnl", cuda_only = stem == "cublas" || stem == "cudnn";
    if ((cpu_only && target != "cpu") || (cuda_only && target != "cuda")) continue;
    out.push_back(f);
  }
  return out;
}

Expected<std::vector<std::string>> collect_rule_files(const std::string& target, bool shipped,
                                                      const std::vector<std::string>& extra) {
  std::vector<std::string> files;
  if (shipped) {
    files = rule_files_for(shipped_rulesets_dir(), target);
    if (files.empty())
      return Diagnostic{SourceLoc{}, "no shipped rules in '" + shipped_rulesets_dir() + "' (set SATURN_RULESETS)"};
  }
  for (const std::string& r : extra) {
    std::error_code ec;
    if (fs::is_directory(r, ec)) {
      auto more = rule_files_for(r, target);
      files.insert(files.end(), more.begin(), more.end());
    } else if (fs::is_regular_file(r, ec)) {
      files.push_back(r);
    } else {
      return Diagnostic{SourceLoc{}, "rules: no such file or folder '" + r + "'"};
    }
  }
  return files;
}

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

nlohmann::json ops_of(const ir::Graph& g) {
  std::map<std::string, std::size_t> by;
  for (const ir::Node& n : g.nodes) ++by[n.op];
  return by;
}

nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace

Expected<OptimizeResult> optimize(const ir::Graph& graph, const OptimizeOptions& o) {
  auto fail = [](std::string msg) { return Diagnostic{SourceLoc{}, std::move(msg)}; };
  auto model = extract::CostModel::for_target(o.target);
  if (!model) return fail("unknown target '" + o.target + "' (cpu or cuda)");
  nlohmann::json phases = nlohmann::json::object();

  // Rules, checked against the op registry and the tensor built-ins.
  auto t = Clock::now();
  rules::BuiltinRegistry& builtins = rules::BuiltinRegistry::global();
  rules::register_tensor_builtins(builtins);
  std::vector<rules::RuleFile> files;
  for (const std::string& p : o.rule_files) {
    auto f = rules::load_rules(p, builtins, rules::check_tensor_op);
    if (!f) return f.error();
    files.push_back(std::move(*f));
  }
  auto rule_phases = rules::group_phases(std::move(files));
  if (!rule_phases) return rule_phases.error();
  std::map<std::string, rules::RuleInfo> info;
  for (const rules::Phase& p : *rule_phases)
    for (const rules::RuleInfo& i : p.info) info[i.name] = i;

  // Import.
  model->calibration = o.calibration;
  {
    std::set<std::string> read;  // (an initializer no node reads is never loaded by a run)
    for (const ir::Node& n : graph.nodes) read.insert(n.inputs.begin(), n.inputs.end());
    for (const auto& [name, w] : graph.initializers)
      if (read.count(name)) model->program_weight_bytes += static_cast<double>(w.nbytes());
  }
  std::map<std::string, extract::TimedOp> unmeasured;
  const std::size_t known_before = o.calibration ? o.calibration->us.size() : 0;
  if (o.calibration) model->unmeasured = &unmeasured;
  auto cost_before = extract::graph_cost(graph, *model);
  if (!cost_before) return cost_before.error();
  auto teg = rules::to_egraph(graph, /*explain=*/!o.explain.empty() || o.explain_all);
  if (!teg) return teg.error();
  // The e-node the import made for each value to explain.
  std::map<std::string, egraph::NodeId> explain_nodes;
  for (const auto& [id, imp] : teg->imported) {
    const bool asked = std::find(o.explain.begin(), o.explain.end(), imp.value) != o.explain.end();
    if (!imp.value.empty() && (o.explain_all || asked)) explain_nodes.emplace(imp.value, egraph::NodeId(id));
  }
  for (const std::string& v : o.explain)
    if (!explain_nodes.count(v))
      return fail("--explain: the model has no value '" + v + "' computed by a node (inputs and weights are not)");
  phases["import"] = {{"time_ms", ms_since(t)}, {"stop_reason", "done"}};
  const std::size_t enodes_start = teg->graph.num_nodes();

  // Saturate.
  t = Clock::now();
  rules::TensorAnalysis& an = *teg->analysis;
  SaturateResult sat = saturate(teg->graph, *rule_phases, o.saturation, [&](egraph::Runner& runner) {
    runner.set_applying([&](const egraph::Rewrite* r) {
      if (!r) {
        an.set_context("congruence closure after the rules of one iteration");
        return;
      }
      auto it = info.find(r->name());
      an.set_context("rule '" + r->name() + "'" + (it != info.end() ? " (" + it->second.loc.to_string() + ")" : ""));
    });
    runner.add_hook([&](const egraph::EGraph&, const egraph::RunReport&) -> std::optional<std::string> {
      if (an.conflict()) return "unsound rewrite: " + *an.conflict();
      return std::nullopt;
    });
  });
  phases["saturate"] = {{"time_ms", ms_since(t)}, {"stop_reason", sat.stop}, {"iterations", sat.iterations}};
  for (const auto& p : sat.phases)
    phases["saturate." + std::to_string(p["phase"].get<int>())] = {
        {"time_ms", p["time_ms"]},       {"stop_reason", p["stop_reason"]}, {"iterations", p["iterations"]},
        {"optimizers", p["optimizers"]}, {"node_limit", p["node_limit"]},   {"time_limit_s", p["time_limit_s"]}};
  OptimizeResult res;
  nlohmann::json rules_json = nlohmann::json::object();
  for (const auto& [name, r] : sat.rules.items()) {
    rules_json[name] = r;
    if (auto it = info.find(name); it != info.end()) rules_json[name]["at"] = it->second.loc.to_string();
  }
  res.report = {{"target", o.target},
                {"cost_unit", "modeled microseconds"},
                {"cost_before", finite_or_null(*cost_before)},
                {"nodes_before", graph.nodes.size()},
                {"ops_before", ops_of(graph)},
                {"rule_files", o.rule_files},
                {"rules", rules_json},
                {"phases", phases},
                {"rule_phases", sat.phases},
                {"weights", {{"bytes", model->program_weight_bytes}, {"from_memory", model->weights_stream()}}}};
  if (an.conflict()) {
    res.unsound = true;
    res.report["error"] = *an.conflict();
    res.graph = graph;
    return res;
  }

  // Extract.
  t = Clock::now();
  const egraph::EGraph& eg = teg->graph;
  auto node_price = [&](const egraph::EGraph& g, egraph::NodeId n) -> extract::NodePrice {
    const extract::NodePrice never{extract::kInfinity, {}};
    if (g.children(n).empty() || g.op(n).is_literal()) return {};
    if (g.op(n) == rules::TensorOps::get().input || g.op(n) == rules::TensorOps::get().constant) return {};
    const rules::TensorInfo& self = an.data(g.find(egraph::EClassId(n.v)));
    if (self.kind != rules::TensorInfo::Kind::Tensor) return never;
    auto node = an.decode(g, n);
    if (!node) return never;
    std::vector<ir::ValueType> in;
    std::vector<egraph::EClassId> given;
    extract::OperandFacts facts;
    bool constant = true;
    for (const auto& c : node->operands) {
      facts.given.push_back(c.has_value());
      if (!c) continue;
      const rules::TensorInfo& ci = an.data(g.find(*c));
      if (ci.kind != rules::TensorInfo::Kind::Tensor) return never;
      in.push_back(ci.type);
      given.push_back(g.find(*c));
      facts.weight.push_back(ci.constant);
      constant &= ci.constant;
    }
    extract::NodePrice price = model->price(*node->def, node->attrs, in, self.type, constant, &facts);
    if (!constant && !facts.given.empty() && facts.given[0] && extract::CostModel::priced_after_producer(*node->def))
      for (egraph::NodeId m : g.nodes(given[0])) {
        auto producer = an.decode(g, m);
        if (!producer) continue;
        std::vector<ir::ValueType> producer_in;
        for (const auto& c : producer->operands)
          if (c) producer_in.push_back(an.data(g.find(*c)).type);
        if (auto after = model->price_after(*node->def, node->attrs, in, self.type, *producer->def, producer->attrs,
                                            producer_in)) {
          price.layout.after.push_back(m);
          price.layout.cost = *after;
        }
      }
    if (price.fused.role != extract::FuseRole::None) {
      // Reads by operand -> by child slot (attribute children read nothing).
      std::vector<double> by_slot;
      std::vector<char> taken(given.size(), 0);
      for (egraph::EClassId k : g.children(n)) {
        double r = 0;
        for (std::size_t i = 0; i < given.size(); ++i)
          if (!taken[i] && given[i] == g.find(k)) {
            taken[i] = 1;
            r = price.fused.read_us[i];
            break;
          }
        by_slot.push_back(r);
      }
      price.fused.read_us = std::move(by_slot);
    }
    return price;
  };
  // Pricing lists the timed ops (library calls, plain contractions) the
  // calibration lacks, in the model as written (at import) and in the
  // e-graph. With a measure, they are measured and everything priced again.
  auto problem = extract::problem_from_egraph(eg, teg->outputs, node_price);
  nlohmann::json calibration = nullptr;
  if (o.calibration) {
    calibration = {{"measured", 0}, {"timed_ops_missing", unmeasured.size()}, {"entries_before", known_before}};
    if (o.measure && !unmeasured.empty()) {
      calibration.update(o.measure(unmeasured, *o.calibration));
      unmeasured.clear();
      cost_before = extract::graph_cost(graph, *model);
      if (!cost_before) return cost_before.error();
      problem = extract::problem_from_egraph(eg, teg->outputs, node_price);
    }
    calibration["modeled_ops"] = unmeasured.size();  // timed ops still priced by the roofline
    // ... of which this many by the roofline times their family's ratio.
    calibration["scaled_ops"] = std::count_if(unmeasured.begin(), unmeasured.end(), [&](const auto& entry) {
      const extract::TimedOp& op = entry.second;
      return model->family_scale(*op.def, op.attrs, op.in, op.out, op.facts).has_value();
    });
    calibration["entries"] = o.calibration->us.size();
  }
  model->unmeasured = nullptr;
  const double problem_ms = ms_since(t);
  auto ex = extract::extract_by_name(o.extractor, problem, o.extract_time_limit_s);
  const double choose_ms = ms_since(t) - problem_ms;
  if (!ex) return fail("unknown extractor '" + o.extractor + "' (one of " + extract::kExtractorNames + ")");
  if (!std::isfinite(ex->dag_cost)) {
    // Name the first class without a finite program, and what it holds.
    auto tree = extract::extract_tree_greedy(problem);
    std::string what;
    for (std::uint32_t c = 0; c < problem.classes.size() && what.empty(); ++c) {
      if (tree.choice[c] >= 0) continue;
      bool has_kids_ok = false;
      for (std::uint32_t n : problem.classes[c]) has_kids_ok |= problem.nodes[n].cost < extract::kInfinity;
      if (!has_kids_ok) {
        what = "e-class " + std::to_string(problem.class_ids[c].v) + " holds only";
        for (std::uint32_t n : problem.classes[c]) what += " " + problem.nodes[n].op;
      }
    }
    return fail("target " + o.target + " cannot run this model: an output has no program the target can lower" +
                (what.empty() ? std::string() : " (" + what + ")"));
  }
  auto optimized = rules::from_egraph(*teg, [&](egraph::EClassId c) {
    return problem.node_ids[static_cast<std::size_t>(ex->choice[problem.class_index(eg.find(c))])];
  });
  if (!optimized) return optimized.error();
  std::vector<double> node_costs;
  auto cost_after = extract::graph_cost(*optimized, *model, &node_costs);
  if (!cost_after) return fail("internal: the extracted graph does not type-check: " + cost_after.error().to_string());
  phases["extract"] = {{"time_ms", ms_since(t)},
                       {"stop_reason", ex->budget_hit ? "time_limit" : "done"},
                       {"pricing_ms", problem_ms},
                       {"choosing_ms", choose_ms},
                       {"extractor", o.extractor},
                       {"passes", ex->passes},
                       {"programs_priced", ex->programs_priced}};
  res.graph = std::move(*optimized);
  if (o.egraph_dot) res.egraph_dot = extract::problem_to_dot(problem, ex->choice);
  res.report["cost_before"] = finite_or_null(*cost_before);
  res.report["cost_after"] = finite_or_null(*cost_after);
  if (o.calibration) res.report["calibration"] = calibration;
  res.report["speedup"] = finite_or_null(*cost_before / std::max(*cost_after, 1e-9));
  res.report["nodes_after"] = res.graph.nodes.size();
  nlohmann::json per_node = nlohmann::json::array();
  for (double c : node_costs) per_node.push_back(finite_or_null(c));
  res.report["node_costs_after"] = std::move(per_node);
  res.report["ops_after"] = ops_of(res.graph);
  res.report["egraph"] = {{"enodes_start", enodes_start},
                          {"enodes", eg.num_nodes()},
                          {"eclasses", eg.num_classes()},
                          {"iterations", sat.iterations}};
  res.report["extraction"] = {{"extractor", o.extractor},
                              {"tree_cost", finite_or_null(ex->tree_cost)},
                              {"dag_cost", finite_or_null(ex->dag_cost)}};
  if (ex->exact) res.report["extraction"].update(exact_json(*ex->exact));
  res.report["phases"] = phases;
  if (!explain_nodes.empty()) {
    nlohmann::json all = nlohmann::json::object();
    for (const auto& [value, node] : explain_nodes) {
      const auto pick = ex->choice[problem.class_index(eg.find(egraph::EClassId(node.v)))];
      if (pick < 0) {
        all[value] = {{"value", value}, {"error", "the optimized program does not compute it"}};
        continue;
      }
      all[value] =
          explain_value(*teg, value, node, problem.node_ids[static_cast<std::size_t>(pick)], res.report["rules"]);
    }
    res.report["explanations"] = std::move(all);
  }
  return res;
}

nlohmann::json exact_json(const extract::ExactSolve& s) {
  return {{"status", s.status},
          {"bound", finite_or_null(s.bound)},
          {"objective", finite_or_null(s.objective)},
          {"incumbent", finite_or_null(s.incumbent)},
          {"kept_incumbent", s.kept_incumbent},
          {"ilp_columns", s.columns},
          {"ilp_rows", s.rows},
          {"pruned_nodes", s.pruned_nodes},
          {"pruned_classes", s.pruned_classes},
          {"cyclic_classes", s.cyclic_classes},
          {"cycle_cuts", s.cycle_cuts},
          {"ilp_solves", s.solves}};
}

std::string exact_summary(const extract::ExactSolve& s) {
  std::ostringstream o;
  o << "ilp: " << s.status << ", objective " << s.objective << ", bound " << s.bound << ", dag-greedy incumbent "
    << s.incumbent << (s.kept_incumbent ? " (kept)" : "") << "; " << s.columns << " columns, " << s.rows
    << " rows after pruning " << s.pruned_nodes << " nodes and " << s.pruned_classes << " classes; " << s.cycle_cuts
    << " cycles forbidden over " << s.solves << " solve" << (s.solves == 1 ? "" : "s");
  return o.str();
}

std::string summarize(const nlohmann::json& r) {
  std::ostringstream s;
  auto num = [](const nlohmann::json& v) { return v.is_number() ? v.get<double>() : std::nan(""); };
  s << std::fixed << std::setprecision(1);
  s << "  modeled cost: " << num(r["cost_before"]) << " us -> " << num(r.value("cost_after", nlohmann::json()))
    << " us";
  if (r.contains("speedup") && r["speedup"].is_number())
    s << std::setprecision(2) << " (" << num(r["speedup"]) << "x modeled)";
  // Where the prices came from: the roofline's rates are those of the CPUs
  // it was fitted on (2-3x another CPU's times, docs/cost-model.md), so its
  // figures are this machine's only once measured.
  const nlohmann::json* cal = r.contains("calibration") ? &r["calibration"] : nullptr;
  if (!cal || !cal->is_object()) {
    s << "\n  prices: the roofline alone (no calibration)";
  } else if (const auto modeled = cal->value("modeled_ops", std::size_t{0}); modeled == 0) {
    s << "\n  prices: this machine's measurements for every library call and loop nest (" << (*cal)["entries"]
      << " in its calibration), the roofline for fused kernels";
  } else {
    // (The calls of a family the calibration measured enough are scaled by
    // its ratio to the roofline: Calibration::family_ratio.)
    const auto scaled = std::min(modeled, cal->value("scaled_ops", std::size_t{0}));
    s << "\n  prices: the roofline for " << modeled << " library calls and loop nests not measured on this machine";
    if (scaled > 0) s << ", " << scaled << " of them scaled by what calls like them measured here";
    s << " (saturn calibrate, or --calibrate, measures them";
    // (Where the calibration gives no ratio, a hint at the probe.)
    if (scaled == 0)
      s << "; saturn calibrate without a model, a probe of typical layers whose ratios price every model's library "
           "calls";
    s << ")";
  }
  if (r.contains("measured")) {
    const nlohmann::json& m = r["measured"];
    s << std::defaultfloat << std::setprecision(3) << "\n  measured (" << m["target"].get<std::string>() << ", "
      << m["threads"] << " threads, median of " << m["runs"] << " interleaved runs): " << num(m["written_ms"])
      << " ms as written -> " << num(m["optimized_ms"]) << " ms optimized (" << std::fixed << std::setprecision(2)
      << num(m["speedup"]) << "x measured)";
    if (!m["outputs_agree"].get<bool>())
      s << "\n  kept the model as written: the optimized program's outputs differ from it ("
        << m["outputs_mismatch"].get<std::string>() << ")";
    else if (m["kept"] == "written")
      s << "\n  kept the model as written: the optimized program measured slower";
  }
  if (r.contains("weights") && r["weights"].value("from_memory", false))
    s << std::setprecision(1) << "\n  weights: " << num(r["weights"]["bytes"]) / 1e6
      << " MB, more than the cache keeps between runs: priced as read from memory at every run";
  s << std::setprecision(1) << "\n  nodes: " << r["nodes_before"] << " -> " << r.value("nodes_after", nlohmann::json())
    << "\n  ops changed:";
  std::map<std::string, std::pair<std::size_t, std::size_t>> ops;
  for (const auto& [op, c] : r["ops_before"].items()) ops[op].first = c.get<std::size_t>();
  if (r.contains("ops_after"))
    for (const auto& [op, c] : r["ops_after"].items()) ops[op].second = c.get<std::size_t>();
  for (const auto& [op, c] : ops)
    if (c.first != c.second) s << " " << op << " " << c.first << "->" << c.second;
  s << "\n";
  if (r.contains("egraph"))
    s << "  e-graph: " << r["egraph"]["enodes_start"] << " -> " << r["egraph"]["enodes"] << " e-nodes in "
      << r["egraph"]["iterations"] << " iterations, " << r["phases"]["saturate"]["stop_reason"].get<std::string>()
      << "\n";
  s << "  time:";
  for (const char* name : {"read", "import", "saturate", "extract", "export"})
    if (r["phases"].contains(name)) s << " " << name << " " << r["phases"][name]["time_ms"].get<double>() << " ms";
  s << "\n";
  std::vector<std::pair<std::size_t, std::string>> fired;
  for (const auto& [name, x] : r["rules"].items())
    if (x["applications"].get<std::size_t>() > 0) fired.emplace_back(x["applications"].get<std::size_t>(), name);
  std::sort(fired.rbegin(), fired.rend());
  s << "  rules applied:";
  if (fired.empty()) s << " none";
  for (std::size_t i = 0; i < fired.size() && i < 12; ++i) s << " " << fired[i].second << " x" << fired[i].first;
  if (fired.size() > 12) s << " (+" << fired.size() - 12 << " more)";
  s << "\n";
  return s.str();
}

}  // namespace saturn::pipeline
