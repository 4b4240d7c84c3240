// The e-graph engine from Python, as egglog's Python API offers it:
// saturn.EGraph (terms in, unions, run(rules, limits), extract(cost)),
// saturn.Rules (the rule language, from text or files), and saturn.verify
// (what `saturn verify` proves). The engine is the generic one `saturn
// eqsat` runs: symbols and numbers, no tensors.
//
// Invariant: an EGraph is rebuilt (egg's invariants hold) whenever Python
// can observe it: after add, union and run.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <cmath>

#include "egraph/constant_folding.hpp"
#include "egraph/serialize.hpp"
#include "egraph/term.hpp"
#include "extract/tree_greedy.hpp"
#include "pipeline/saturate.hpp"
#include "rules/rule_file.hpp"
#include "tools/python/bindings.hpp"
#include "tools/verify_command.hpp"

namespace saturn::python {

namespace {

using egraph::EClassId;

// Rules grouped into their phases, ready to run (the runner keeps per-rule
// state in them, so a Rules object is used by one run at a time).
struct Rules {
  std::vector<rules::Phase> phases;
  std::vector<std::string> names;

  static Rules from_files(std::vector<rules::RuleFile> files) {
    Rules r;
    for (const auto& f : files)
      for (const auto& o : f.optimizers)
        for (const auto& i : o.info) r.names.push_back(i.name);
    r.phases = unwrap(rules::group_phases(std::move(files)));
    return r;
  }
};

egraph::Term parse_term(const std::string& text) {
  auto terms = unwrap(rules::parse_terms(text, "<term>"));
  if (terms.size() != 1) throw SaturnError{"<term>: error: expected one term, got " + std::to_string(terms.size())};
  return std::move(terms[0]);
}

class PyEGraph {
 public:
  PyEGraph(bool const_fold, bool explain) {
    if (explain) g_.enable_explanations();
    if (const_fold) folding_ = &g_.add_analysis<egraph::ConstantFolding>();
  }

  // Why two classes are one (egraph/explain.hpp): the chain of steps, each
  // {kind, from, to} with the rule, its direction and bindings for a rule
  // step; and whether it replays.
  py::object explain(std::uint32_t a, std::uint32_t b) const {
    if (!g_.explaining()) throw SaturnError{"explain: make the e-graph with EGraph(explain=True)"};
    check(a);
    check(b);
    if (g_.find(EClassId(a)) != g_.find(EClassId(b)))
      throw SaturnError{"explain: classes " + std::to_string(a) + " and " + std::to_string(b) + " are not equal"};
    auto chain = g_.proofs()->path(EClassId(a), EClassId(b));
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& s : chain) {
      nlohmann::json j = {{"from", s.from.v}, {"to", s.to.v}};
      switch (s.why->kind) {
        case egraph::Justification::Kind::Rule: {
          std::vector<std::uint32_t> bound;
          for (EClassId c : s.why->bindings) bound.push_back(g_.find(c).v);
          j.update({{"kind", "rule"},
                    {"rule", s.why->rule->name()},
                    {"direction", s.forward ? "forward" : "backward"},
                    {"bindings", bound}});
          break;
        }
        case egraph::Justification::Kind::Congruence:
          j["kind"] = "congruence";
          break;
        case egraph::Justification::Kind::Analysis:
          j["kind"] = "analysis";
          break;
        case egraph::Justification::Kind::Given:
          j["kind"] = "given";
          break;
      }
      steps.push_back(std::move(j));
    }
    const std::string why = egraph::replay(g_, chain, EClassId(a), EClassId(b));
    return to_python({{"steps", steps}, {"replayed", why.empty()}, {"replay_error", why}});
  }

  std::uint32_t add(const std::string& term) {
    EClassId c = egraph::add_term(g_, parse_term(term));
    g_.rebuild();
    return g_.find(c).v;
  }
  bool union_(std::uint32_t a, std::uint32_t b) {
    check(a);
    check(b);
    bool changed = g_.merge(EClassId(a), EClassId(b));
    g_.rebuild();
    return changed;
  }
  bool equiv(std::uint32_t a, std::uint32_t b) const {
    check(a);
    check(b);
    return g_.find(EClassId(a)) == g_.find(EClassId(b));
  }
  std::uint32_t find(std::uint32_t a) const {
    check(a);
    return g_.find(EClassId(a)).v;
  }

  py::object run(Rules& rules, std::size_t iter_limit, std::size_t node_limit, double time_limit,
                 std::size_t memory_limit) {
    pipeline::SaturateOptions so;
    so.iter_limit = iter_limit;
    so.node_limit = node_limit;
    so.time_limit_s = time_limit;
    so.memory_limit_mb = memory_limit ? memory_limit : pipeline::default_memory_limit_mb();
    pipeline::SaturateResult r;
    {
      py::gil_scoped_release nogil;
      r = pipeline::saturate(g_, rules.phases, so);
    }
    nlohmann::json j = {
        {"iterations", r.iterations},   {"stop_reason", r.stop}, {"time_ms", r.time_ms}, {"enodes", g_.num_nodes()},
        {"eclasses", g_.num_classes()}, {"phases", r.phases},    {"rules", r.rules}};
    if (folding_ && !folding_->conflicts().empty()) j["conflicts"] = folding_->conflicts();
    return to_python(j);
  }

  // The cheapest term of a class (tree cost: each operator's cost, 1 unless
  // `costs` names it) and its cost.
  py::tuple extract(std::uint32_t c, const std::map<std::string, double>& costs) const {
    check(c);
    extract::OpCostTable table;
    for (const auto& [op, cost] : costs) {
      if (!(cost >= 0)) throw py::value_error("cost of '" + op + "' must be a number >= 0");
      table.set(egraph::Op::symbol(op), cost);
    }
    extract::TreeGreedyExtractor ex(g_, std::cref(table));
    auto best = ex.extract(EClassId(c));
    if (!best) throw SaturnError{"class " + std::to_string(c) + " has no finite-cost term"};
    return py::make_tuple(best->to_string(), ex.cost(EClassId(c)));
  }

  std::string to_json(const std::vector<std::uint32_t>& roots) const {
    std::vector<EClassId> r;
    for (auto c : roots) {
      check(c);
      r.push_back(g_.find(EClassId(c)));
    }
    return egraph::to_serialized_json(g_, r);
  }
  std::string to_dot() const { return egraph::to_dot(g_); }
  std::size_t num_nodes() const { return g_.num_nodes(); }
  std::size_t num_classes() const { return g_.num_classes(); }

 private:
  void check(std::uint32_t c) const {
    if (c >= g_.num_ids()) throw py::index_error("no e-class " + std::to_string(c));
  }
  egraph::EGraph g_;
  egraph::ConstantFolding* folding_ = nullptr;  // owned by g_
};

}  // namespace

void bind_engine(py::module_& m) {
  py::class_<Rules>(m, "Rules", "Rules in Saturn's rule language (docs/rule-language.md), grouped into phases.")
      .def_static(
          "parse",
          [](const std::string& text, const std::string& name) {
            std::vector<rules::RuleFile> files;
            files.push_back(unwrap(rules::parse_rules(text, name)));
            return Rules::from_files(std::move(files));
          },
          py::arg("text"), py::arg("name") = "<rules>", "Rules from text; errors name <name>:line:col")
      .def_static(
          "load",
          [](const std::vector<std::string>& paths) {
            std::vector<rules::RuleFile> files;
            for (const auto& p : paths) files.push_back(unwrap(rules::load_rules(p)));
            return Rules::from_files(std::move(files));
          },
          py::arg("paths"), "Rules from .rules files")
      .def_readonly("names", &Rules::names, "Every rule's name, in file order")
      .def("__len__", [](const Rules& r) { return r.names.size(); })
      .def("__repr__", [](const Rules& r) {
        return "<saturn.Rules: " + std::to_string(r.names.size()) + " rules, " + std::to_string(r.phases.size()) +
               " phases>";
      });

  py::class_<PyEGraph>(m, "EGraph", "An e-graph over symbolic terms: add, union, run rules, extract.")
      .def(py::init<bool, bool>(), py::arg("const_fold") = false, py::arg("explain") = false,
           "const_fold: fold + - * / pow min max abs neg of number literals; explain: keep a proof forest")
      .def("explain", &PyEGraph::explain, py::arg("a"), py::arg("b"),
           "Why two classes are equal: {steps: [{kind, from, to, rule, direction, bindings}], replayed}")
      .def("add", &PyEGraph::add, py::arg("term"), "Adds an s-expression term; returns its e-class id")
      .def("union", &PyEGraph::union_, py::arg("a"), py::arg("b"), "Merges two classes; True when they were apart")
      .def("equiv", &PyEGraph::equiv, py::arg("a"), py::arg("b"))
      .def("find", &PyEGraph::find, py::arg("a"), "The canonical id of a class")
      // (keep_alive: an explanation points at the rules that ran, which live as long as the e-graph.)
      .def("run", &PyEGraph::run, py::keep_alive<1, 2>(), py::arg("rules"), py::arg("iter_limit") = 30,
           py::arg("node_limit") = 10000, py::arg("time_limit") = 5.0, py::arg("memory_limit") = 0,
           "Saturates with the rules within the limits; returns the report (stop_reason says which limit)")
      .def("extract", &PyEGraph::extract, py::arg("eclass"), py::arg("costs") = std::map<std::string, double>{},
           "(term, cost): the cheapest term, each operator costing 1 unless costs names it")
      .def("to_json", &PyEGraph::to_json, py::arg("roots") = std::vector<std::uint32_t>{},
           "egraph-serialize JSON (extraction-gym's format)")
      .def("to_dot", &PyEGraph::to_dot, "Graphviz, one cluster per class")
      .def_property_readonly("num_nodes", &PyEGraph::num_nodes)
      .def_property_readonly("num_classes", &PyEGraph::num_classes);

  m.def(
      "_verify",
      [](const std::vector<std::string>& paths, unsigned max_dim, unsigned max_rank, unsigned max_instances, bool fp32,
         const std::string& only, unsigned jobs, double rule_time_limit) {
        cli::VerifyCommandOptions o;
        o.rules = paths;
        o.verify.instances.max_dim = max_dim;
        o.verify.instances.max_rank = max_rank;
        o.verify.instances.max_instances = max_instances;
        o.verify.fp32 = fp32;
        o.verify.rule_time_limit_s = rule_time_limit;
        o.only = only;
        o.jobs = jobs;
        Expected<std::vector<rules::RuleVerdict>> verdicts = Diagnostic{};
        {
          py::gil_scoped_release nogil;
          verdicts = cli::verify_rules(o);
        }
        nlohmann::json all = nlohmann::json::array();
        for (const auto& v : unwrap(std::move(verdicts))) all.push_back(cli::verdict_json(v));
        return to_python(all);
      },
      py::arg("paths"), py::arg("max_dim"), py::arg("max_rank"), py::arg("max_instances"), py::arg("fp32"),
      py::arg("only"), py::arg("jobs"), py::arg("rule_time_limit"));
}

}  // namespace saturn::python
