#include "rules/rule_file.hpp"
#include "rules/sexpr_number.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "egraph/term.hpp"

namespace saturn::rules {

using egraph::Op;
using egraph::Pattern;
using egraph::VarId;

namespace {

// Variables of one rule: LHS variables first (in order of appearance), then
// :let variables.
struct VarTable {
  std::vector<std::string> names;
  std::optional<VarId> find(const std::string& n) const {
    auto it = std::find(names.begin(), names.end(), n);
    if (it == names.end()) return std::nullopt;
    return static_cast<VarId>(it - names.begin());
  }
  VarId intern(const std::string& n) {
    if (auto v = find(n)) return *v;
    names.push_back(n);
    return static_cast<VarId>(names.size() - 1);
  }
};

Op literal_list(const SExpr& e) {
  std::vector<egraph::Number> items;
  for (const SExpr& item : e.items) {
    auto n = number_of(item);
    if (!n) fail_at(item.loc, "expected a number in a literal list, found '" + item.to_string() + "'");
    items.push_back(*n);
  }
  return Op::list(items);
}

class PatternBuilder {
 public:
  PatternBuilder(VarTable& vars, bool may_bind, const OpChecker& check)
      : vars_(vars), may_bind_(may_bind), check_(check) {}

  Pattern build(const SExpr& e) {
    Pattern p;
    add(p, e);
    return p;
  }

 private:
  std::uint32_t add(Pattern& p, const SExpr& e) {
    switch (e.kind) {
      case SExpr::Kind::String:
        fail_at(e.loc, "expected a pattern, found a string");
      case SExpr::Kind::Bracket:
        return p.push(literal_list(e));
      case SExpr::Kind::Atom: {
        if (e.is_var()) {
          auto v = vars_.find(e.text);
          if (!v) {
            if (!may_bind_)
              fail_at(e.loc,
                      "variable " + e.text + " on the right-hand side is not bound by the left-hand side or a :let");
            v = vars_.intern(e.text);
          }
          return p.push_var(*v);
        }
        if (e.is_keyword()) fail_at(e.loc, "expected a pattern, found the keyword " + e.text);
        if (e.is_atom("=>") || e.is_atom("<=>")) fail_at(e.loc, "expected a pattern, found '" + e.text + "'");
        if (auto n = number_of(e)) return p.push(Op::number(*n));
        check(e.text, 0, e.loc);
        return p.push(Op::symbol(e.text));
      }
      case SExpr::Kind::List: {
        if (e.items.empty()) fail_at(e.loc, "expected an operator application, found '()'");
        const SExpr& head = e.items[0];
        if (!head.is_atom() || head.is_var() || number_of(head) || head.is_keyword())
          fail_at(head.loc, "expected an operator name, found '" + head.to_string() + "'");
        std::vector<std::uint32_t> kids;
        for (std::size_t i = 1; i < e.items.size(); ++i) kids.push_back(add(p, e.items[i]));
        check(head.text, kids.size(), head.loc);
        return p.push(Op::symbol(head.text), std::move(kids));
      }
    }
    return 0;
  }

  void check(const std::string& op, std::size_t arity, const SourceLoc& loc) {
    if (!check_) return;
    if (auto msg = check_(op, arity)) fail_at(loc, *msg);
  }

  VarTable& vars_;
  bool may_bind_;
  const OpChecker& check_;
};

struct Clause {
  enum class Kind { If, Let } kind;
  VarId var = egraph::kNoVar;  // Let
  Expr expr;
};

// Builds the guard/binding hook of a rewrite from its clauses.
egraph::Rewrite::Prepare make_prepare(std::vector<Clause> clauses) {
  if (clauses.empty()) return {};
  return [clauses = std::move(clauses)](egraph::EGraph& g, std::span<EClassId> bindings) -> bool {
    EvalContext ctx{g, bindings};
    for (const Clause& c : clauses) {
      auto v = c.expr.eval(ctx);
      if (!v) return false;
      if (c.kind == Clause::Kind::If) {
        if (v->kind != Value::Kind::Bool || !v->boolean) return false;
        continue;
      }
      switch (v->kind) {
        case Value::Kind::Class:
          bindings[c.var] = g.find(v->cls);
          break;
        case Value::Kind::Number:
          bindings[c.var] = g.add(Op::number(v->number));
          break;
        case Value::Kind::List:
          bindings[c.var] = g.add(Op::list(v->list));
          break;
        case Value::Kind::Symbol:
          bindings[c.var] = g.add(v->symbol);
          break;
        case Value::Kind::Bool:
          return false;  // booleans are not terms
      }
      ctx.bindings = bindings;
    }
    return true;
  };
}

class FileParser {
 public:
  FileParser(std::string path, const BuiltinRegistry& reg, const OpChecker& check)
      : path_(std::move(path)), registry_(reg), check_(check) {}

  RuleFile parse(const std::vector<SExpr>& forms) {
    RuleFile file;
    file.path = path_;
    Optimizer anonymous;
    anonymous.name = std::filesystem::path(path_).stem().string();
    anonymous.loc = SourceLoc{path_, 1, 1};
    for (const SExpr& f : forms) {
      if (!f.is_list() || f.items.empty() || !f.items[0].is_atom())
        fail_at(f.loc, "expected (defoptimizer ...), (rule ...) or (multirule ...), found '" + f.to_string() + "'");
      const std::string& head = f.items[0].text;
      if (head == "defoptimizer") {
        file.optimizers.push_back(parse_optimizer(f));
      } else if (head == "rule" || head == "multirule") {
        parse_rule(f, anonymous);
      } else {
        fail_at(f.items[0].loc, "expected defoptimizer, rule or multirule, found '" + head + "'");
      }
    }
    if (!anonymous.rewrites.empty()) file.optimizers.insert(file.optimizers.begin(), std::move(anonymous));
    return file;
  }

 private:
  Optimizer parse_optimizer(const SExpr& f) {
    Optimizer opt;
    opt.loc = f.loc;
    if (f.items.size() < 2 || !f.items[1].is_atom() || f.items[1].is_keyword())
      fail_at(f.items.size() < 2 ? f.loc : f.items[1].loc, "expected the optimizer's name after defoptimizer");
    opt.name = f.items[1].text;
    std::size_t i = 2;
    while (i < f.items.size()) {
      const SExpr& item = f.items[i];
      if (item.kind == SExpr::Kind::String) {
        opt.doc = item.text;
        ++i;
      } else if (item.is_atom(":phase")) {
        if (i + 1 >= f.items.size()) fail_at(item.loc, "expected a phase number after :phase");
        opt.phases.clear();
        for (++i; i < f.items.size() && (opt.phases.empty() || number_of(f.items[i])); ++i) {
          auto n = number_of(f.items[i]);
          if (!n || !n->is_int() || n->as_int() < 0 || n->as_int() > 1000)
            fail_at(f.items[i].loc,
                    "expected a phase number 0..1000 after :phase, found '" + f.items[i].to_string() + "'");
          if (std::find(opt.phases.begin(), opt.phases.end(), n->as_int()) != opt.phases.end())
            fail_at(f.items[i].loc, "phase " + f.items[i].to_string() + " is named twice");
          opt.phases.push_back(static_cast<int>(n->as_int()));
        }
      } else if (item.is_keyword()) {
        fail_at(item.loc, "unknown optimizer option " + item.text + " (expected :phase)");
      } else {
        parse_rule(item, opt);
        ++i;
      }
    }
    return opt;
  }

  void parse_rule(const SExpr& f, Optimizer& opt) {
    if (!f.is_list() || f.items.empty() || !(f.items[0].is_atom("rule") || f.items[0].is_atom("multirule")))
      fail_at(f.loc,
              "expected (rule ...) or (multirule ...) in defoptimizer " + opt.name + ", found '" + f.to_string() + "'");
    const bool multi = f.items[0].is_atom("multirule");
    if (f.items.size() < 2 || !f.items[1].is_atom() || f.items[1].is_var() || f.items[1].is_keyword())
      fail_at(f.items.size() < 2 ? f.loc : f.items[1].loc, "expected a rule name");
    const std::string name = f.items[1].text;
    if (!names_.insert(name).second) fail_at(f.items[1].loc, "duplicate rule name '" + name + "'");
    if (f.items.size() < 5)
      fail_at(f.loc, multi ? "expected (multirule NAME (LHS...) => (RHS...))" : "expected (rule NAME LHS => RHS)");
    const SExpr& arrow = f.items[3];
    bool both_ways = arrow.is_atom("<=>");
    if (!arrow.is_atom("=>") && !both_ways) fail_at(arrow.loc, "expected '=>' or '<=>' after the left-hand side");
    if (multi && both_ways) fail_at(arrow.loc, "a multirule rewrites one way: use '=>'");

    std::vector<const SExpr*> lhs_src, rhs_src;
    if (multi) {
      for (int side = 0; side < 2; ++side) {
        const SExpr& group = f.items[side == 0 ? 2 : 4];
        if (!group.is_list() || group.items.empty())
          fail_at(group.loc, std::string("expected a list of ") + (side == 0 ? "left" : "right") + "-hand patterns");
        for (const SExpr& p : group.items) (side == 0 ? lhs_src : rhs_src).push_back(&p);
      }
      if (lhs_src.size() != rhs_src.size())
        fail_at(f.items[4].loc, "a multirule needs as many right-hand patterns as left-hand ones (" +
                                    std::to_string(lhs_src.size()) + "), given " + std::to_string(rhs_src.size()));
    } else {
      lhs_src.push_back(&f.items[2]);
      rhs_src.push_back(&f.items[4]);
    }

    // Clauses.
    std::vector<std::pair<const SExpr*, const SExpr*>> clauses;  // (keyword, argument)
    std::optional<std::string> unverified;
    for (std::size_t i = 5; i < f.items.size(); i += 2) {
      const SExpr& kw = f.items[i];
      if (!kw.is_keyword())
        fail_at(kw.loc, "expected a clause (:if, :let or :unverified) after the right-hand side, found '" +
                            kw.to_string() + "'");
      if (kw.text != ":if" && kw.text != ":let" && kw.text != ":unverified")
        fail_at(kw.loc, "unknown clause " + kw.text + " (expected :if, :let or :unverified)");
      if (i + 1 >= f.items.size()) fail_at(kw.loc, "expected an argument after " + kw.text);
      const SExpr& arg = f.items[i + 1];
      if (kw.text == ":unverified") {
        if (arg.kind != SExpr::Kind::String) fail_at(arg.loc, "expected a \"reason\" string after :unverified");
        unverified = arg.text;
      } else {
        if (kw.text == ":let" && both_ways)
          fail_at(kw.loc, "a <=> rule cannot have :let (the reverse would not bind it)");
        clauses.emplace_back(&kw, &arg);
      }
    }

    emit(opt, name, f, lhs_src, rhs_src, clauses, unverified, false);
    if (both_ways) {
      if (names_.contains(name + "-rev")) fail_at(f.items[1].loc, "duplicate rule name '" + name + "-rev'");
      names_.insert(name + "-rev");
      emit(opt, name + "-rev", f, rhs_src, lhs_src, clauses, unverified, true);
    }
  }

  void emit(Optimizer& opt, const std::string& name, const SExpr& form, const std::vector<const SExpr*>& lhs_src,
            const std::vector<const SExpr*>& rhs_src, const std::vector<std::pair<const SExpr*, const SExpr*>>& clauses,
            const std::optional<std::string>& unverified, bool reversed) {
    VarTable vars;
    std::vector<Pattern> lhs, rhs;
    for (const SExpr* s : lhs_src) lhs.push_back(PatternBuilder(vars, true, check_).build(*s));
    const auto num_lhs_vars = static_cast<VarId>(vars.names.size());
    if (lhs.size() == 1 && lhs[0].root_node().is_var()) {
      fail_at(lhs_src[0]->loc, reversed ? "the right-hand side of a <=> rule is a bare variable, so its reverse would "
                                          "match every e-class: write the rule with '=>'"
                                        : "the left-hand side is a bare variable, which matches every e-class: give it "
                                          "an operator");
    }

    std::vector<Clause> compiled;
    auto lookup = [&](const std::string& n) { return vars.find(n); };
    for (auto [kw, arg] : clauses) {
      if (kw->text == ":if") {
        compiled.push_back(Clause{Clause::Kind::If, egraph::kNoVar, Expr::compile(*arg, lookup, registry_)});
      } else {
        if (!arg->is_list() || arg->items.size() != 2 || !arg->items[0].is_var())
          fail_at(arg->loc, "expected (?var EXPR) after :let");
        Expr e = Expr::compile(arg->items[1], lookup, registry_);
        const std::string& v = arg->items[0].text;
        if (vars.find(v)) fail_at(arg->items[0].loc, "variable " + v + " is already bound; :let needs a new name");
        compiled.push_back(Clause{Clause::Kind::Let, vars.intern(v), std::move(e)});
      }
    }
    for (const SExpr* s : rhs_src) {
      if (reversed) {
        // The reverse of <=> must not introduce variables the other side lacks.
        VarTable probe = vars;
        Pattern p = PatternBuilder(probe, true, check_).build(*s);
        if (probe.names.size() != vars.names.size())
          fail_at(s->loc, "in a <=> rule both sides must use the same variables; " + probe.names.back() +
                              " appears only on the left-hand side");
      }
      rhs.push_back(PatternBuilder(vars, false, check_).build(*s));
    }
    egraph::Rewrite rw;
    std::string err = egraph::Rewrite::make(rw, name, std::move(lhs), std::move(rhs), vars.names, num_lhs_vars,
                                            make_prepare(std::move(compiled)));
    if (!err.empty()) fail_at(form.loc, "rule " + name + ": " + err);
    opt.rewrites.push_back(std::move(rw));
    opt.info.push_back(RuleInfo{name, form.loc, form.to_string(), unverified});
  }

  std::string path_;
  const BuiltinRegistry& registry_;
  const OpChecker& check_;
  std::set<std::string> names_;
};

}  // namespace

Expected<RuleFile> parse_rules(std::string_view text, const std::string& path, const BuiltinRegistry& registry,
                               const OpChecker& check_op) {
  auto forms = parse_sexprs(text, path);
  if (!forms) return forms.error();
  try {
    return FileParser(path, registry, check_op).parse(*forms);
  } catch (const DiagnosticError& e) {
    return e.diag;
  }
}

std::vector<std::string> rule_files_in(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".rules") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

Expected<RuleFile> load_rules(const std::string& path, const BuiltinRegistry& registry, const OpChecker& check_op) {
  auto text = read_file(path);
  if (!text) return text.error();
  return parse_rules(*text, path, registry, check_op);
}

Expected<std::vector<Phase>> group_phases(std::vector<RuleFile> files) {
  std::map<int, Phase> by_phase;
  std::map<std::string, SourceLoc> seen;
  for (RuleFile& f : files) {
    for (Optimizer& o : f.optimizers) {
      for (std::size_t i = 0; i < o.rewrites.size(); ++i) {
        auto [it, fresh] = seen.emplace(o.info[i].name, o.info[i].loc);
        if (!fresh)
          return Diagnostic{o.info[i].loc, "duplicate rule name '" + o.info[i].name + "' (first defined at " +
                                               it->second.to_string() + ")"};
      }
      for (int phase : o.phases) {
        Phase& p = by_phase[phase];
        p.phase = phase;
        p.optimizers.push_back(o.name);
        p.rewrites.insert(p.rewrites.end(), o.rewrites.begin(), o.rewrites.end());
        p.info.insert(p.info.end(), o.info.begin(), o.info.end());
      }
    }
  }
  std::vector<Phase> out;
  for (auto& [_, p] : by_phase) out.push_back(std::move(p));
  return out;
}

namespace {
std::uint32_t build_term(egraph::Term& t, const SExpr& e) {
  switch (e.kind) {
    case SExpr::Kind::String:
      fail_at(e.loc, "expected a term, found a string");
    case SExpr::Kind::Bracket:
      return t.push(literal_list(e));
    case SExpr::Kind::Atom:
      if (e.is_var()) fail_at(e.loc, "terms cannot contain pattern variables such as " + e.text);
      if (auto n = number_of(e)) return t.push(Op::number(*n));
      return t.push(Op::symbol(e.text));
    case SExpr::Kind::List: {
      if (e.items.empty()) fail_at(e.loc, "expected an operator application, found '()'");
      const SExpr& head = e.items[0];
      if (!head.is_atom() || head.is_var() || number_of(head))
        fail_at(head.loc, "expected an operator name, found '" + head.to_string() + "'");
      std::vector<std::uint32_t> kids;
      for (std::size_t i = 1; i < e.items.size(); ++i) kids.push_back(build_term(t, e.items[i]));
      return t.push(Op::symbol(head.text), std::move(kids));
    }
  }
  return 0;
}
}  // namespace

Expected<std::vector<egraph::Term>> parse_terms(std::string_view text, const std::string& path) {
  auto forms = parse_sexprs(text, path);
  if (!forms) return forms.error();
  std::vector<egraph::Term> out;
  try {
    for (const SExpr& f : *forms) {
      egraph::Term t;
      build_term(t, f);
      out.push_back(std::move(t));
    }
  } catch (const DiagnosticError& e) {
    return e.diag;
  }
  return out;
}

Expected<std::vector<egraph::Term>> load_terms(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  return parse_terms(*text, path);
}

}  // namespace saturn::rules
