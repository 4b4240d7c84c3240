#include "pipeline/grad_eval.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <set>

#include "ir/dtype.hpp"
#include "ir/window.hpp"
#include "pipeline/movement_adjoints.hpp"

namespace saturn::pipeline {

std::string show(const GradValue& v) {
  struct {
    std::string operator()(NoneValue) const { return "none"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return std::to_string(d); }
    std::string operator()(const std::string& s) const { return "\"" + s + "\""; }
    std::string operator()(const std::vector<std::int64_t>& l) const {
      std::string s = "[";
      for (std::size_t i = 0; i < l.size(); ++i) s += (i ? " " : "") + std::to_string(l[i]);
      return s + "]";
    }
    std::string operator()(const std::vector<double>& l) const {
      return "a list of " + std::to_string(l.size()) + " reals";
    }
    std::string operator()(const TensorRef& t) const {
      return "the tensor '" + t.name + "' " + ir::dtype_name(t.type.dtype) + ir::to_string(t.type.shape);
    }
    std::string operator()(const std::vector<TensorRef>& l) const {
      return "a list of " + std::to_string(l.size()) + " tensors";
    }
  } visitor;
  return std::visit(visitor, v);
}

namespace {

std::int64_t as_int(const GradValue& v, const char* what) {
  if (auto* i = std::get_if<std::int64_t>(&v)) return *i;
  if (auto* b = std::get_if<bool>(&v)) return *b ? 1 : 0;
  build_error(std::string(what) + ": expected an integer, got " + show(v));
}
double as_real(const GradValue& v, const char* what) {
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  build_error(std::string(what) + ": expected a number, got " + show(v));
}
std::vector<std::int64_t> as_ints(const GradValue& v, const char* what) {
  if (auto* l = std::get_if<std::vector<std::int64_t>>(&v)) return *l;
  if (auto* l = std::get_if<std::vector<double>>(&v); l && l->empty()) return {};
  build_error(std::string(what) + ": expected a list of integers, got " + show(v));
}
const TensorRef& as_tensor(const GradValue& v, const char* what) {
  if (auto* t = std::get_if<TensorRef>(&v)) return *t;
  build_error(std::string(what) + ": expected a tensor, got " + show(v));
}
std::string as_string(const GradValue& v, const char* what) {
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  build_error(std::string(what) + ": expected a string, got " + show(v));
}
bool as_bool(const GradValue& v, const char* what) {
  if (auto* b = std::get_if<bool>(&v)) return *b;
  if (auto* i = std::get_if<std::int64_t>(&v)) return *i != 0;
  build_error(std::string(what) + ": expected true or false, got " + show(v));
}

}  // namespace

struct GradInstance::Impl {
 public:
  Impl(const rules::GradDef& def, const ir::Node& node, GraphBuilder& b) : node_(node), b_(b) {
    for (const auto& [v, e] : def.lets) lets_[v] = &e;
  }
  void bind(const std::string& var, GradValue v) { env_[var] = std::move(v); }

  GradValue eval(const SExpr& e) {
    try {
      return eval_inner(e);
    } catch (const BuildError& err) {
      // The innermost expression that failed is the place to name.
      throw DiagnosticError{Diagnostic{e.loc, err.message}};
    }
  }

 private:
  GradValue eval_inner(const SExpr& e) {
    switch (e.kind) {
      case SExpr::Kind::String:
        return e.text;
      case SExpr::Kind::Bracket: {
        std::vector<std::int64_t> ints;
        std::vector<double> reals;
        bool real = false;
        for (const SExpr& x : e.items) {
          GradValue v = eval(x);
          if (std::holds_alternative<double>(v)) real = true;
          reals.push_back(as_real(v, "list element"));
          if (!real) ints.push_back(as_int(v, "list element"));
        }
        if (real) return reals;
        return ints;
      }
      case SExpr::Kind::Atom:
        return atom(e);
      case SExpr::Kind::List:
        break;
    }
    const std::string& head = e.items[0].text;
    if (rules::is_grad_builtin(head)) return builtin(head, e);
    return apply_op(head, e);
  }

  GradValue atom(const SExpr& e) {
    if (e.is_var()) {
      if (auto it = env_.find(e.text); it != env_.end()) return it->second;
      if (auto it = lets_.find(e.text); it != lets_.end()) {
        GradValue v = eval(*it->second);
        env_[e.text] = v;
        return v;
      }
      build_error("unbound variable '" + e.text + "'");
    }
    if (e.text == "true") return true;
    if (e.text == "false") return false;
    if (e.text == "none") return NoneValue{};
    if (e.text == "inf" || e.text == "-inf") return e.text[0] == '-' ? -INFINITY : INFINITY;
    if (auto n = e.number()) {
      if (auto* i = std::get_if<std::int64_t>(&*n)) return *i;
      return std::get<double>(*n);
    }
    return e.text;  // a bare symbol reads as a string ("SAME_UPPER", "add")
  }

  GradValue attr(const std::string& name) {
    const ir::OpDef* def = ir::OpRegistry::get().find(node_.op);
    const ir::AttrSpec* spec = nullptr;
    for (const ir::AttrSpec& s : def->attrs)
      if (s.name == name) spec = &s;
    if (!spec) build_error("op '" + node_.op + "' has no attribute '" + name + "'");
    auto from = [](const ir::AttrValue& a) -> GradValue {
      if (auto* i = std::get_if<std::int64_t>(&a)) return *i;
      if (auto* d = std::get_if<double>(&a)) return *d;
      if (auto* s = std::get_if<std::string>(&a)) return *s;
      if (auto* l = std::get_if<std::vector<std::int64_t>>(&a)) return *l;
      if (auto* l = std::get_if<std::vector<double>>(&a)) return *l;
      build_error("a tensor attribute cannot be read by a gradient");
    };
    if (auto it = node_.attrs.all().find(name); it != node_.attrs.all().end()) return from(it->second);
    if (spec->fallback) return from(*spec->fallback);
    if (spec->type == ir::AttrType::Ints) return std::vector<std::int64_t>{};
    if (spec->type == ir::AttrType::Reals) return std::vector<double>{};
    return NoneValue{};
  }

  GradValue arg(const SExpr& e, std::size_t i) {
    if (i >= e.items.size()) build_error("(" + e.items[0].text + ") takes more arguments");
    return eval(e.items[i]);
  }
  void arity(const SExpr& e, std::size_t n) {
    if (e.items.size() != n + 1)
      build_error("(" + e.items[0].text + ") takes " + std::to_string(n) + " argument" + (n == 1 ? "" : "s"));
  }

  GradValue builtin(const std::string& f, const SExpr& e) {
    if (f == "attr") return attr(e.items[1].text);
    if (f == "has-attr") return node_.attrs.has(e.items[1].text);
    if (f == "if") {
      arity(e, 3);
      return as_bool(arg(e, 1), "if") ? arg(e, 2) : arg(e, 3);
    }
    if (f == "list") {
      std::vector<std::int64_t> l;
      for (std::size_t i = 1; i < e.items.size(); ++i) l.push_back(as_int(arg(e, i), "list"));
      return l;
    }
    if (f == "=") {
      arity(e, 2);
      GradValue a = arg(e, 1), b = arg(e, 2);
      if (std::holds_alternative<NoneValue>(a) || std::holds_alternative<NoneValue>(b))
        return std::holds_alternative<NoneValue>(a) && std::holds_alternative<NoneValue>(b);
      if (std::holds_alternative<TensorRef>(a) || std::holds_alternative<TensorRef>(b))
        build_error("=: compares numbers, lists and strings, not tensors");
      if (std::holds_alternative<double>(a) || std::holds_alternative<double>(b))
        return as_real(a, "=") == as_real(b, "=");
      if (std::holds_alternative<std::int64_t>(a) || std::holds_alternative<bool>(a))
        return as_int(a, "=") == as_int(b, "=");
      if (auto* s = std::get_if<std::string>(&a))
        return std::holds_alternative<std::string>(b) && std::get<std::string>(b) == *s;
      if (std::holds_alternative<NoneValue>(a)) return std::holds_alternative<NoneValue>(b);
      return as_ints(a, "=") == as_ints(b, "=");
    }
    if (f == "<") {
      arity(e, 2);
      return as_real(arg(e, 1), "<") < as_real(arg(e, 2), "<");
    }
    if (f == "error") {
      arity(e, 1);
      build_error(as_string(arg(e, 1), "error"));
    }
    if (f == "/") {
      // Integers that divide exactly stay integers (shapes); else a real.
      arity(e, 2);
      GradValue a = arg(e, 1), b = arg(e, 2);
      double d = as_real(b, "/");
      if (d == 0) build_error("/: division by zero");
      if (std::holds_alternative<std::int64_t>(a) && std::holds_alternative<std::int64_t>(b) &&
          std::get<std::int64_t>(a) % std::get<std::int64_t>(b) == 0)
        return std::get<std::int64_t>(a) / std::get<std::int64_t>(b);
      return as_real(a, "/") / d;
    }
    if (f == "numel") {
      arity(e, 1);
      auto d = static_dims_of(as_tensor(arg(e, 1), "numel"));
      return std::accumulate(d.begin(), d.end(), std::int64_t{1}, std::multiplies<>());
    }
    if (f == "axes-except") {
      // (axes-except AXES RANK): the axes of a tensor of rank RANK not in AXES.
      arity(e, 2);
      auto keep = as_ints(arg(e, 1), "axes-except");
      std::int64_t rank = as_int(arg(e, 2), "axes-except");
      std::set<std::int64_t> k;
      for (std::int64_t a : keep) k.insert(normalize_axis(a, rank));
      std::vector<std::int64_t> out;
      for (std::int64_t a = 0; a < rank; ++a)
        if (!k.count(a)) out.push_back(a);
      return out;
    }
    if (f == "interleave") {
      arity(e, 2);
      auto a = as_ints(arg(e, 1), "interleave"), b = as_ints(arg(e, 2), "interleave");
      if (a.size() != b.size())
        build_error("interleave: lists of " + std::to_string(a.size()) + " and " + std::to_string(b.size()));
      std::vector<std::int64_t> out;
      for (std::size_t i = 0; i < a.size(); ++i) out.insert(out.end(), {a[i], b[i]});
      return out;
    }
    if (f == "unslice") {
      // (unslice ?dy ?x): the node's slice of x, undone: dy's elements put
      // back where they were read (any steps), zeros elsewhere.
      arity(e, 2);
      return unslice(b_, node_.attrs, as_tensor(arg(e, 1), "unslice"), as_tensor(arg(e, 2), "unslice"));
    }
    if (f == "window-pads") {
      // (window-pads ?x KERNEL): the explicit pads [begins... ends...] of
      // the node's window over x's trailing dims (auto_pad resolved).
      arity(e, 2);
      auto xd = static_dims_of(as_tensor(arg(e, 1), "window-pads"));
      auto kernel = as_ints(arg(e, 2), "window-pads");
      if (kernel.size() > xd.size()) build_error("window-pads: kernel of rank " + std::to_string(kernel.size()));
      std::vector<std::int64_t> spatial(xd.end() - static_cast<std::ptrdiff_t>(kernel.size()), xd.end());
      try {
        bool ceil_mode = node_.attrs.i("ceil_mode", 0) != 0;
        ir::WindowGeometry w = ir::window_geometry(node_.attrs, spatial, kernel, ceil_mode);
        std::vector<std::int64_t> pads = w.pads_begin;
        pads.insert(pads.end(), w.pads_end.begin(), w.pads_end.end());
        return pads;
      } catch (const ir::ShapeError& err) {
        build_error(err.message);
      }
    }
    if (f == "window-view" || f == "window-sum") {
      // (window-view ?x PAD-VALUE KERNEL): x padded (pad value, and enough
      // at the end for ceil_mode's last window) and cut into the node's
      // windows, [lead... out... kernel...]. (window-sum T ?x KERNEL): its
      // adjoint, every window's taps summed back onto x's elements.
      arity(e, 3);
      if (f == "window-view")
        return window_view(b_, node_.attrs, as_tensor(arg(e, 1), "window-view"), as_real(arg(e, 2), "window-view"),
                           as_ints(arg(e, 3), "window-view"));
      return window_sum(b_, node_.attrs, as_tensor(arg(e, 1), "window-sum"), as_tensor(arg(e, 2), "window-sum"),
                        as_ints(arg(e, 3), "window-sum"));
    }
    if (f == "span") {
      arity(e, 2);
      std::int64_t a = as_int(arg(e, 1), "span"), b = as_int(arg(e, 2), "span");
      std::vector<std::int64_t> l;
      for (std::int64_t i = a; i < b; ++i) l.push_back(i);
      return l;
    }
    if (f == "all" || f == "any") {
      bool is_all = f == "all";
      for (std::size_t i = 1; i < e.items.size(); ++i)
        if (as_bool(arg(e, i), f.c_str()) != is_all) return !is_all;
      return is_all;
    }
    if (f == "+" || f == "-" || f == "*") {
      // Numbers, or lists elementwise (a number applies to every element).
      arity(e, 2);
      return arith(f[0], arg(e, 1), arg(e, 2));
    }
    if (f == "ones") {
      arity(e, 1);
      return std::vector<std::int64_t>(static_cast<std::size_t>(std::max<std::int64_t>(0, as_int(arg(e, 1), "ones"))),
                                       1);
    }
    if (f == "product") {
      arity(e, 1);
      auto l = as_ints(arg(e, 1), "product");
      return std::accumulate(l.begin(), l.end(), std::int64_t{1}, std::multiplies<>());
    }
    if (f == "first-half" || f == "second-half") {
      arity(e, 1);
      auto l = as_ints(arg(e, 1), f.c_str());
      if (l.size() % 2) build_error(f + ": a list of odd length " + std::to_string(l.size()));
      auto mid = l.begin() + static_cast<std::ptrdiff_t>(l.size() / 2);
      return f == "first-half" ? std::vector<std::int64_t>(l.begin(), mid) : std::vector<std::int64_t>(mid, l.end());
    }
    if (f == "nonnegative") {
      arity(e, 1);
      auto l = as_ints(arg(e, 1), "nonnegative");
      return std::all_of(l.begin(), l.end(), [](std::int64_t v) { return v >= 0; });
    }
    if (f == "shape") {
      arity(e, 1);
      return static_dims_of(as_tensor(arg(e, 1), "shape"));
    }
    if (f == "rank") {
      arity(e, 1);
      return static_cast<std::int64_t>(as_tensor(arg(e, 1), "rank").type.shape.size());
    }
    if (f == "dtype") {
      arity(e, 1);
      return std::string(ir::dtype_name(as_tensor(arg(e, 1), "dtype").type.dtype));
    }
    if (f == "dim") {
      arity(e, 2);
      auto d = static_dims_of(as_tensor(arg(e, 1), "dim"));
      return d[normalize_axis(as_int(arg(e, 2), "dim"), static_cast<std::int64_t>(d.size()))];
    }
    if (f == "dims") {
      arity(e, 2);
      GradValue ts = arg(e, 1);
      auto* list = std::get_if<std::vector<TensorRef>>(&ts);
      if (!list) build_error("dims: expected a list of tensors, got " + show(ts));
      std::int64_t axis = as_int(arg(e, 2), "dims");
      std::vector<std::int64_t> out;
      for (const TensorRef& t : *list) {
        auto d = static_dims_of(t);
        out.push_back(d[normalize_axis(axis, static_cast<std::int64_t>(d.size()))]);
      }
      return out;
    }
    if (f == "len") {
      arity(e, 1);
      GradValue v = arg(e, 1);
      if (auto* l = std::get_if<std::vector<TensorRef>>(&v)) return static_cast<std::int64_t>(l->size());
      return static_cast<std::int64_t>(as_ints(v, "len").size());
    }
    if (f == "empty?") {
      arity(e, 1);
      GradValue v = arg(e, 1);
      if (std::holds_alternative<NoneValue>(v)) return true;
      if (auto* l = std::get_if<std::vector<double>>(&v)) return l->empty();
      return as_ints(v, "empty?").empty();
    }
    if (f == "nth") {
      arity(e, 2);
      GradValue v = arg(e, 1);
      std::int64_t i = as_int(arg(e, 2), "nth");
      if (auto* l = std::get_if<std::vector<TensorRef>>(&v)) {
        if (i < 0 || i >= static_cast<std::int64_t>(l->size())) build_error("nth: index out of range");
        return (*l)[i];
      }
      auto l = as_ints(v, "nth");
      if (i < 0 || i >= static_cast<std::int64_t>(l.size())) build_error("nth: index out of range");
      return l[i];
    }
    if (f == "iota") {
      arity(e, 1);
      std::vector<std::int64_t> l(static_cast<std::size_t>(std::max<std::int64_t>(0, as_int(arg(e, 1), "iota"))));
      std::iota(l.begin(), l.end(), 0);
      return l;
    }
    if (f == "reverse") {
      arity(e, 1);
      auto l = as_ints(arg(e, 1), "reverse");
      std::reverse(l.begin(), l.end());
      return l;
    }
    if (f == "concat-lists") {
      std::vector<std::int64_t> l;
      for (std::size_t i = 1; i < e.items.size(); ++i) {
        auto more = as_ints(arg(e, i), "concat-lists");
        l.insert(l.end(), more.begin(), more.end());
      }
      return l;
    }
    if (f == "inverse-perm") {
      arity(e, 1);
      auto p = as_ints(arg(e, 1), "inverse-perm");
      std::vector<std::int64_t> inv(p.size(), -1);
      for (std::size_t i = 0; i < p.size(); ++i) {
        if (p[i] < 0 || p[i] >= static_cast<std::int64_t>(p.size()) || inv[p[i]] != -1)
          build_error("inverse-perm: not a permutation");
        inv[p[i]] = static_cast<std::int64_t>(i);
      }
      return inv;
    }
    if (f == "swap-last") {
      arity(e, 1);
      std::int64_t r = as_int(arg(e, 1), "swap-last");
      if (r < 2) build_error("swap-last: rank " + std::to_string(r) + " has no two last axes");
      std::vector<std::int64_t> p(static_cast<std::size_t>(r));
      std::iota(p.begin(), p.end(), 0);
      std::swap(p[r - 1], p[r - 2]);
      return p;
    }
    if (f == "axes" || f == "keepdims") {
      // (axes AXES RANK): sorted, non-negative, all when empty; (keepdims T
      // AXES): T's dims with those axes set to 1.
      arity(e, 2);
      GradValue first = arg(e, 1);
      std::vector<std::int64_t> dims;
      std::int64_t rank;
      if (f == "keepdims") {
        dims = static_dims_of(as_tensor(first, "keepdims"));
        rank = static_cast<std::int64_t>(dims.size());
      } else {
        rank = 0;
      }
      std::vector<std::int64_t> axes = f == "axes" ? as_ints(first, "axes") : as_ints(arg(e, 2), "keepdims");
      if (f == "axes") rank = as_int(arg(e, 2), "axes");
      std::set<std::int64_t> norm;
      for (std::int64_t a : axes) norm.insert(normalize_axis(a, rank));
      if (axes.empty())
        for (std::int64_t a = 0; a < rank; ++a) norm.insert(a);
      if (f == "axes") return std::vector<std::int64_t>(norm.begin(), norm.end());
      for (std::int64_t a : norm) dims[a] = 1;
      return dims;
    }
    if (f == "sum-to") {
      arity(e, 2);
      return b_.sum_to(as_tensor(arg(e, 1), "sum-to"), as_tensor(arg(e, 2), "sum-to"));
    }
    if (f == "scalar") {
      arity(e, 2);
      return b_.scalar(as_real(arg(e, 1), "scalar"), as_tensor(arg(e, 2), "scalar").type.dtype);
    }
    if (f == "zeros-like" || f == "ones-like") {
      arity(e, 1);
      return b_.filled(f == "zeros-like" ? 0.0 : 1.0, as_tensor(arg(e, 1), f.c_str()));
    }
    if (f == "cast-like") {
      arity(e, 2);
      TensorRef t = as_tensor(arg(e, 1), "cast-like");
      TensorRef like = as_tensor(arg(e, 2), "cast-like");
      if (t.type.dtype == like.type.dtype) return t;
      ir::Attrs a;
      a.set("to", std::string(ir::dtype_name(like.type.dtype)));
      return b_.apply1("cast", {t}, a);
    }
    build_error("built-in '" + f + "' is not implemented");
  }

  static GradValue arith(char op, const GradValue& a, const GradValue& b) {
    auto is_list = [](const GradValue& v) { return std::holds_alternative<std::vector<std::int64_t>>(v); };
    if (is_list(a) || is_list(b)) {
      std::vector<std::int64_t> x, y;
      if (is_list(a)) x = std::get<std::vector<std::int64_t>>(a);
      if (is_list(b)) y = std::get<std::vector<std::int64_t>>(b);
      if (!is_list(a)) x.assign(y.size(), as_int(a, "list arithmetic"));
      if (!is_list(b)) y.assign(x.size(), as_int(b, "list arithmetic"));
      if (x.size() != y.size())
        build_error(std::string("list arithmetic on lists of ") + std::to_string(x.size()) + " and " +
                    std::to_string(y.size()));
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = op == '+' ? x[i] + y[i] : op == '-' ? x[i] - y[i] : x[i] * y[i];
      return x;
    }
    if (std::holds_alternative<double>(a) || std::holds_alternative<double>(b)) {
      double x = as_real(a, "arithmetic"), y = as_real(b, "arithmetic");
      return op == '+' ? x + y : op == '-' ? x - y : x * y;
    }
    std::int64_t x = as_int(a, "arithmetic"), y = as_int(b, "arithmetic");
    return op == '+' ? x + y : op == '-' ? x - y : x * y;
  }

  GradValue apply_op(const std::string& op, const SExpr& e) {
    const ir::OpDef* def = ir::OpRegistry::get().find(op);
    std::vector<TensorRef> operands;
    ir::Attrs attrs;
    std::int64_t results = def->num_outputs < 0 ? -1 : def->num_outputs;
    for (std::size_t i = 1; i < e.items.size(); ++i) {
      const SExpr& x = e.items[i];
      if (x.is_keyword()) {
        std::string name = x.text.substr(1);
        GradValue v = eval(e.items[++i]);
        if (name == "results") {
          results = as_int(v, ":results");
          continue;
        }
        bool declared =
            std::any_of(def->attrs.begin(), def->attrs.end(), [&](const ir::AttrSpec& s) { return s.name == name; });
        if (!declared) build_error("op '" + op + "' has no attribute '" + name + "'");
        struct {
          ir::Attrs& a;
          const std::string& n;
          void operator()(NoneValue) const {}
          void operator()(bool b) const { a.set(n, std::int64_t{b ? 1 : 0}); }
          void operator()(std::int64_t v) const { a.set(n, v); }
          void operator()(double v) const { a.set(n, v); }
          void operator()(const std::string& v) const { a.set(n, v); }
          void operator()(const std::vector<std::int64_t>& v) const { a.set(n, v); }
          void operator()(const std::vector<double>& v) const { a.set(n, v); }
          void operator()(const TensorRef&) const { build_error("attribute '" + n + "' cannot be a tensor"); }
          void operator()(const std::vector<TensorRef>&) const {
            build_error("attribute '" + n + "' cannot be a tensor");
          }
        } set{attrs, name};
        std::visit(set, v);
        continue;
      }
      GradValue v = eval(x);
      if (auto* l = std::get_if<std::vector<TensorRef>>(&v))
        operands.insert(operands.end(), l->begin(), l->end());
      else if (std::holds_alternative<NoneValue>(v))
        operands.push_back(TensorRef{"", {}});
      else
        operands.push_back(as_tensor(v, ("operand of " + op).c_str()));
    }
    if (results < 0) build_error("op '" + op + "' gives as many results as asked: say :results N");
    auto out = b_.apply(op, operands, attrs, static_cast<std::size_t>(results));
    if (out.size() == 1 && def->num_outputs >= 0) return out[0];
    return out;
  }

  const ir::Node& node_;
  GraphBuilder& b_;
  std::map<std::string, GradValue> env_;
  std::map<std::string, const SExpr*> lets_;
};

GradInstance::GradInstance(const rules::GradDef& def, const ir::Node& node, GraphBuilder& b)
    : impl_(std::make_unique<Impl>(def, node, b)) {}
GradInstance::~GradInstance() = default;
void GradInstance::bind(const std::string& var, GradValue v) { impl_->bind(var, std::move(v)); }
GradValue GradInstance::eval(const SExpr& e) { return impl_->eval(e); }

}  // namespace saturn::pipeline
