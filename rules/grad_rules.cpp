#include "rules/grad_rules.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <set>

#include "ir/op.hpp"
#include "rules/rule_file.hpp"

namespace saturn::rules {

namespace fs = std::filesystem;

namespace {

// Built-ins of the gradient language (docs/training.md): static ones read
// types and attributes; sum-to, scalar, zeros-like, ones-like and cast-like
// add nodes.
constexpr std::array<std::string_view, 46> kBuiltins = {"window-view",
                                                        "window-sum",
                                                        "span",
                                                        "attr",
                                                        "has-attr",
                                                        "shape",
                                                        "rank",
                                                        "dim",
                                                        "dims",
                                                        "numel",
                                                        "inverse-perm",
                                                        "iota",
                                                        "reverse",
                                                        "axes",
                                                        "axes-except",
                                                        "keepdims",
                                                        "empty?",
                                                        "if",
                                                        "all",
                                                        "any",
                                                        "=",
                                                        "<",
                                                        "+",
                                                        "-",
                                                        "*",
                                                        "/",
                                                        "list",
                                                        "nth",
                                                        "len",
                                                        "ones",
                                                        "product",
                                                        "first-half",
                                                        "second-half",
                                                        "nonnegative",
                                                        "dtype",
                                                        "concat-lists",
                                                        "interleave",
                                                        "swap-last",
                                                        "error",
                                                        "unslice",
                                                        "window-pads",
                                                        "sum-to",
                                                        "scalar",
                                                        "zeros-like",
                                                        "ones-like",
                                                        "cast-like"};

bool is_variadic_var(const SExpr& e) {
  return e.is_atom() && e.text.size() > 4 && e.text[0] == '?' && e.text.ends_with("...");
}
std::string var_name(const SExpr& e) { return is_variadic_var(e) ? e.text.substr(0, e.text.size() - 3) : e.text; }

// Reads a variable list: ?a ?b [?rest...]; returns whether it ends variadic.
bool read_vars(const SExpr& list, std::vector<std::string>& out, const char* what) {
  bool variadic = false;
  for (std::size_t i = 0; i < list.items.size(); ++i) {
    const SExpr& v = list.items[i];
    if (!v.is_var())
      fail_at(v.loc, std::string("expected a ?variable in the ") + what + ", got '" + v.to_string() + "'");
    if (is_variadic_var(v)) {
      if (i + 1 != list.items.size()) fail_at(v.loc, "only the last variable may be variadic ('?xs...')");
      variadic = true;
    }
    out.push_back(var_name(v));
  }
  return variadic;
}

// Every ?variable read is bound; every call is an op or a built-in.
void check_expr(const SExpr& e, const std::set<std::string>& bound) {
  if (e.is_atom()) {
    if (e.is_var() && !bound.count(var_name(e))) fail_at(e.loc, "unbound variable '" + e.text + "'");
    return;
  }
  if (e.kind == SExpr::Kind::Bracket) return;
  if (e.kind != SExpr::Kind::List) return;
  if (e.items.empty() || !e.items[0].is_atom()) fail_at(e.loc, "expected (OP ARG...) or (BUILTIN ARG...)");
  const std::string& head = e.items[0].text;
  if (!is_grad_builtin(head) && !ir::OpRegistry::get().find(head))
    fail_at(e.items[0].loc, "unknown op or built-in '" + head + "'");
  if (head == "attr" || head == "has-attr") {
    if (e.items.size() != 2 || !e.items[1].is_atom()) fail_at(e.loc, "expected (" + head + " NAME)");
    return;
  }
  for (std::size_t i = 1; i < e.items.size(); ++i) {
    if (e.items[i].is_keyword()) {
      if (i + 1 >= e.items.size()) fail_at(e.items[i].loc, "keyword '" + e.items[i].text + "' without a value");
      continue;
    }
    check_expr(e.items[i], bound);
  }
}

GradDef read_defgrad(const SExpr& f, const std::string& path) {
  GradDef d;
  d.loc = f.loc;
  if (f.items.size() < 4) fail_at(f.loc, "expected (defgrad (OP ?x...) (?y...) (?dy...) (d ?x EXPR)...)");
  const SExpr& pat = f.items[1];
  if (!pat.is_list() || pat.items.empty() || !pat.items[0].is_atom())
    fail_at(pat.loc, "expected the pattern (OP ?x...)");
  d.op = pat.items[0].text;
  const ir::OpDef* def = ir::OpRegistry::get().find(d.op);
  if (!def) fail_at(pat.items[0].loc, "unknown op '" + d.op + "'");
  SExpr operands = pat;
  operands.items.erase(operands.items.begin());
  d.variadic_operands = read_vars(operands, d.operands, "pattern");
  int n = static_cast<int>(d.operands.size());
  if (!d.variadic_operands && (n < def->min_inputs || (def->max_inputs >= 0 && n > def->max_inputs)))
    fail_at(pat.loc, "op '" + d.op + "' takes " + std::to_string(def->min_inputs) +
                         (def->max_inputs == def->min_inputs ? "" : " to " + std::to_string(def->max_inputs)) +
                         " operands; the pattern has " + std::to_string(n));
  if (d.variadic_operands && def->max_inputs >= 0)
    fail_at(pat.loc, "op '" + d.op + "' takes a fixed number of operands; '?xs...' is for variadic ones");
  if (!f.items[2].is_list()) fail_at(f.items[2].loc, "expected the results (?y...)");
  d.variadic_results = read_vars(f.items[2], d.results, "results");
  if (!f.items[3].is_list()) fail_at(f.items[3].loc, "expected the incoming gradients (?dy...)");
  bool variadic_incoming = read_vars(f.items[3], d.incoming, "incoming gradients");
  if (d.incoming.size() != d.results.size() || variadic_incoming != d.variadic_results)
    fail_at(f.items[3].loc, "one incoming gradient per result (" + std::to_string(d.results.size()) + ")");
  std::set<std::string> bound(d.operands.begin(), d.operands.end());
  for (const auto& names : {d.results, d.incoming})
    for (const std::string& v : names)
      if (!bound.insert(v).second) fail_at(f.loc, "variable '" + v + "' bound twice");
  std::set<std::string> differentiated;
  for (std::size_t i = 4; i < f.items.size(); ++i) {
    const SExpr& c = f.items[i];
    if (c.kind == SExpr::Kind::String && i == 4) {
      d.doc = c.text;
      continue;
    }
    if (!c.is_list() || c.items.size() != 3 || !c.items[0].is_atom() || !c.items[1].is_var())
      fail_at(c.loc, "expected (d ?operand EXPR) or (let ?v EXPR)");
    const std::string& kind = c.items[0].text;
    std::string v = c.items[1].text;
    check_expr(c.items[2], bound);
    if (kind == "let") {
      if (!bound.insert(v).second) fail_at(c.items[1].loc, "variable '" + v + "' bound twice");
      d.lets.emplace_back(v, c.items[2]);
    } else if (kind == "d") {
      v = var_name(c.items[1]);
      if (std::find(d.operands.begin(), d.operands.end(), v) == d.operands.end())
        fail_at(c.items[1].loc, "'" + v + "' is not an operand of the pattern");
      if (!differentiated.insert(v).second) fail_at(c.items[1].loc, "a second gradient for '" + v + "'");
      d.grads.emplace_back(v, c.items[2]);
    } else {
      fail_at(c.items[0].loc, "expected d or let, got '" + kind + "'");
    }
  }
  (void)path;
  return d;
}

}  // namespace

bool is_grad_builtin(std::string_view name) {
  return std::find(kBuiltins.begin(), kBuiltins.end(), name) != kBuiltins.end();
}

const GradDef* GradRules::find(const std::string& op) const {
  if (auto it = defs.find(op); it != defs.end()) return &it->second;
  const ir::OpDef* def = ir::OpRegistry::get().find(op);
  if (def && def->semantics() != op)
    if (auto it = defs.find(def->semantics()); it != defs.end()) return &it->second;
  return nullptr;
}

namespace {
const NoGrad* find_in(const std::map<std::string, NoGrad>& m, const std::string& op) {
  if (auto it = m.find(op); it != m.end()) return &it->second;
  const ir::OpDef* def = ir::OpRegistry::get().find(op);
  if (def && def->semantics() != op)
    if (auto it = m.find(def->semantics()); it != m.end()) return &it->second;
  return nullptr;
}
}  // namespace

const NoGrad* GradRules::find_nograd(const std::string& op) const { return find_in(nograd, op); }
const NoGrad* GradRules::find_zerograd(const std::string& op) const { return find_in(zerograd, op); }

Expected<GradRules> parse_grad_rules(std::string_view text, const std::string& path, GradRules into) {
  auto forms = parse_sexprs(text, path);
  if (!forms) return forms.error();
  GradRules staged = into;
  try {
    for (const SExpr& f : *forms) {
      if (!f.is_list() || f.items.empty() || !f.items[0].is_atom())
        fail_at(f.loc, "expected (defgrad ...), (nograd ...) or (zerograd ...)");
      const std::string& head = f.items[0].text;
      if (head == "defgrad") {
        GradDef d = read_defgrad(f, path);
        if (auto it = staged.defs.find(d.op); it != staged.defs.end())
          fail_at(f.loc, "a second gradient for '" + d.op + "' (the first is at " + it->second.loc.to_string() + ")");
        if (staged.nograd.count(d.op) || staged.zerograd.count(d.op))
          fail_at(f.loc, "'" + d.op + "' is also declared without a gradient");
        staged.defs.emplace(d.op, std::move(d));
      } else if (head == "nograd" || head == "zerograd") {
        if (f.items.size() != 3 || !f.items[1].is_list() || f.items[2].kind != SExpr::Kind::String)
          fail_at(f.loc, "expected (" + head + " (OP...) \"reason\")");
        auto& into_map = head == "nograd" ? staged.nograd : staged.zerograd;
        for (const SExpr& op : f.items[1].items) {
          if (!op.is_atom() || !ir::OpRegistry::get().find(op.text))
            fail_at(op.loc, "unknown op '" + op.to_string() + "'");
          if (staged.defs.count(op.text) || staged.nograd.count(op.text) || staged.zerograd.count(op.text))
            fail_at(op.loc, "'" + op.text + "' is declared twice");
          into_map.emplace(op.text, NoGrad{op.text, f.items[2].text, op.loc});
        }
      } else {
        fail_at(f.items[0].loc, "expected defgrad, nograd or zerograd, got '" + head + "'");
      }
    }
  } catch (const DiagnosticError& e) {
    return e.diag;
  }
  staged.files.push_back(path);
  return staged;
}

Expected<GradRules> load_grad_rules(const std::vector<std::string>& files_or_dirs) {
  std::vector<std::string> files;
  for (const std::string& p : files_or_dirs) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> in = rule_files_in(p);
      files.insert(files.end(), in.begin(), in.end());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      return Diagnostic{SourceLoc{}, "gradient rules: no such file or folder '" + p + "'"};
    }
  }
  GradRules rules;
  for (const std::string& f : files) {
    auto text = read_file(f);
    if (!text) return text.error();
    auto more = parse_grad_rules(*text, f, std::move(rules));
    if (!more) return more.error();
    rules = std::move(*more);
  }
  return rules;
}

std::string shipped_grad_dir(const std::string& rulesets_dir) { return (fs::path(rulesets_dir) / "grad").string(); }

}  // namespace saturn::rules
