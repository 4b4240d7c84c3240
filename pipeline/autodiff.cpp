#include "pipeline/autodiff.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>
#include <variant>

#include "ir/dtype.hpp"
#include "ir/window.hpp"

namespace saturn::pipeline {

namespace {

using rules::GradDef;

// A value of the gradient language: a tensor of the graph, a list of them
// (variadic operands), or a static value (types, shapes, attributes).
struct TensorRef {
  std::string name;
  ir::ValueType type;
};
struct NoneValue {};
using Value = std::variant<NoneValue, bool, std::int64_t, double, std::string, std::vector<std::int64_t>,
                           std::vector<double>, TensorRef, std::vector<TensorRef>>;

struct GradError {
  std::string message;
};
[[noreturn]] void fail(std::string m) { throw GradError{std::move(m)}; }

std::vector<std::int64_t> dims_of(const TensorRef& t) {
  if (!ir::is_static(t.type.shape)) fail("'" + t.name + "' has the symbolic shape " + ir::to_string(t.type.shape));
  return ir::static_dims(t.type.shape);
}

// Appends nodes to the graph, inferring their types with the ops' own rules.
class GraphBuilder {
 public:
  GraphBuilder(ir::Graph& g, std::map<std::string, ir::ValueType>& types, std::string prefix)
      : g_(g), types_(types), prefix_(std::move(prefix)) {}

  std::vector<TensorRef> apply(const std::string& op, const std::vector<TensorRef>& operands, const ir::Attrs& attrs,
                               std::size_t results) {
    const ir::OpDef* def = ir::OpRegistry::get().find(op);
    if (!def) fail("unknown op '" + op + "'");
    std::vector<ir::TypedInput> typed;
    for (const TensorRef& t : operands) {
      ir::TypedInput in;
      in.type = t.type;
      in.present = !t.name.empty();
      if (auto it = g_.initializers.find(t.name); it != g_.initializers.end()) in.value = &it->second;
      typed.push_back(in);
    }
    std::vector<ir::ValueType> out;
    try {
      out = def->infer(attrs, typed, results);
    } catch (const ir::ShapeError& e) {
      fail(e.message);
    }
    ir::Node n;
    n.op = op;
    n.name = fresh();
    for (const TensorRef& t : operands) n.inputs.push_back(t.name);
    n.attrs = attrs;
    std::vector<TensorRef> refs;
    for (const ir::ValueType& t : out) {
      std::string name = fresh();
      n.outputs.push_back(name);
      types_[name] = t;
      refs.push_back(TensorRef{name, t});
    }
    g_.nodes.push_back(std::move(n));
    ++added_;
    return refs;
  }
  TensorRef apply1(const std::string& op, const std::vector<TensorRef>& operands, const ir::Attrs& attrs = {}) {
    return apply(op, operands, attrs, 1)[0];
  }

  // A scalar constant of type t (one initializer per distinct value).
  TensorRef scalar(double v, ir::DType t) {
    std::ostringstream key;
    key.precision(17);
    key << prefix_ << "const/" << ir::dtype_name(t) << "/" << v;
    if (!g_.initializers.count(key.str())) {
      g_.initializers.emplace(key.str(), ir::Tensor::scalar(t, v));
      types_[key.str()] = ir::ValueType{t, {}};
    }
    return TensorRef{key.str(), ir::ValueType{t, {}}};
  }

  // Sums t down to `like`'s shape: the adjoint of broadcasting.
  TensorRef sum_to(TensorRef t, const TensorRef& like) {
    auto have = dims_of(t), want = dims_of(like);
    if (have == want) return t;
    if (want.size() > have.size()) fail("sum-to: " + t.name + " has fewer axes than " + like.name);
    std::size_t lead = have.size() - want.size();
    std::vector<std::int64_t> axes;
    for (std::size_t i = 0; i < have.size(); ++i)
      if (i < lead || (want[i - lead] == 1 && have[i] != 1)) axes.push_back(static_cast<std::int64_t>(i));
      else if (want[i - lead] != have[i])
        fail("sum-to: " + ir::to_string(t.type.shape) + " does not broadcast from " + ir::to_string(like.type.shape));
    if (!axes.empty()) {
      ir::Attrs a;
      a.set("axes", axes);
      a.set("keepdims", std::int64_t{1});
      t = apply1("reduce_sum", {t}, a);
    }
    if (dims_of(t) != want) {
      ir::Attrs a;
      a.set("shape", want);
      a.set("allowzero", std::int64_t{1});
      t = apply1("reshape", {t}, a);
    }
    return t;
  }

  TensorRef filled(double v, const TensorRef& like) {
    ir::Attrs a;
    a.set("shape", dims_of(like));
    return apply1("expand", {scalar(v, like.type.dtype)}, a);
  }

  TensorRef add(const TensorRef& a, const TensorRef& b) { return apply1("add", {a, b}); }

  std::size_t added() const { return added_; }

 private:
  std::string fresh() { return prefix_ + std::to_string(counter_++); }

  ir::Graph& g_;
  std::map<std::string, ir::ValueType>& types_;
  std::string prefix_;
  std::size_t counter_ = 0, added_ = 0;
};

std::string show(const Value& v);

std::int64_t as_int(const Value& v, const char* what) {
  if (auto* i = std::get_if<std::int64_t>(&v)) return *i;
  if (auto* b = std::get_if<bool>(&v)) return *b ? 1 : 0;
  fail(std::string(what) + ": expected an integer, got " + show(v));
}
double as_real(const Value& v, const char* what) {
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  fail(std::string(what) + ": expected a number, got " + show(v));
}
std::vector<std::int64_t> as_ints(const Value& v, const char* what) {
  if (auto* l = std::get_if<std::vector<std::int64_t>>(&v)) return *l;
  if (auto* l = std::get_if<std::vector<double>>(&v); l && l->empty()) return {};
  fail(std::string(what) + ": expected a list of integers, got " + show(v));
}
const TensorRef& as_tensor(const Value& v, const char* what) {
  if (auto* t = std::get_if<TensorRef>(&v)) return *t;
  fail(std::string(what) + ": expected a tensor, got " + show(v));
}
std::string as_string(const Value& v, const char* what) {
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  fail(std::string(what) + ": expected a string, got " + show(v));
}
bool as_bool(const Value& v, const char* what) {
  if (auto* b = std::get_if<bool>(&v)) return *b;
  if (auto* i = std::get_if<std::int64_t>(&v)) return *i != 0;
  fail(std::string(what) + ": expected true or false, got " + show(v));
}

std::string show(const Value& v) {
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
    std::string operator()(const std::vector<double>& l) const { return "a list of " + std::to_string(l.size()) + " reals"; }
    std::string operator()(const TensorRef& t) const {
      return "the tensor '" + t.name + "' " + ir::dtype_name(t.type.dtype) + ir::to_string(t.type.shape);
    }
    std::string operator()(const std::vector<TensorRef>& l) const {
      return "a list of " + std::to_string(l.size()) + " tensors";
    }
  } visitor;
  return std::visit(visitor, v);
}

std::int64_t normalize_axis(std::int64_t a, std::int64_t rank) {
  std::int64_t n = a < 0 ? a + rank : a;
  if (n < 0 || n >= std::max<std::int64_t>(rank, 1)) fail("axis " + std::to_string(a) + " out of range for rank " + std::to_string(rank));
  return n;
}

// One definition applied to one forward node.
class Instantiation {
 public:
  Instantiation(const GradDef& def, const ir::Node& node, GraphBuilder& b) : def_(def), node_(node), b_(b) {
    for (const auto& [v, e] : def.lets) lets_[v] = &e;
  }
  void bind(const std::string& var, Value v) { env_[var] = std::move(v); }

  Value eval(const SExpr& e) {
    try {
      return eval_inner(e);
    } catch (const GradError& err) {
      // The innermost expression that failed is the place to name.
      throw DiagnosticError{Diagnostic{e.loc, err.message}};
    }
  }

 private:
  Value eval_inner(const SExpr& e) {
    switch (e.kind) {
      case SExpr::Kind::String:
        return e.text;
      case SExpr::Kind::Bracket: {
        std::vector<std::int64_t> ints;
        std::vector<double> reals;
        bool real = false;
        for (const SExpr& x : e.items) {
          Value v = eval(x);
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

  Value atom(const SExpr& e) {
    if (e.is_var()) {
      if (auto it = env_.find(e.text); it != env_.end()) return it->second;
      if (auto it = lets_.find(e.text); it != lets_.end()) {
        Value v = eval(*it->second);
        env_[e.text] = v;
        return v;
      }
      fail("unbound variable '" + e.text + "'");
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

  Value attr(const std::string& name) {
    const ir::OpDef* def = ir::OpRegistry::get().find(node_.op);
    const ir::AttrSpec* spec = nullptr;
    for (const ir::AttrSpec& s : def->attrs)
      if (s.name == name) spec = &s;
    if (!spec) fail("op '" + node_.op + "' has no attribute '" + name + "'");
    auto from = [](const ir::AttrValue& a) -> Value {
      if (auto* i = std::get_if<std::int64_t>(&a)) return *i;
      if (auto* d = std::get_if<double>(&a)) return *d;
      if (auto* s = std::get_if<std::string>(&a)) return *s;
      if (auto* l = std::get_if<std::vector<std::int64_t>>(&a)) return *l;
      if (auto* l = std::get_if<std::vector<double>>(&a)) return *l;
      fail("a tensor attribute cannot be read by a gradient");
    };
    if (auto it = node_.attrs.all().find(name); it != node_.attrs.all().end()) return from(it->second);
    if (spec->fallback) return from(*spec->fallback);
    if (spec->type == ir::AttrType::Ints) return std::vector<std::int64_t>{};
    if (spec->type == ir::AttrType::Reals) return std::vector<double>{};
    return NoneValue{};
  }

  Value arg(const SExpr& e, std::size_t i) {
    if (i >= e.items.size()) fail("(" + e.items[0].text + ") takes more arguments");
    return eval(e.items[i]);
  }
  void arity(const SExpr& e, std::size_t n) {
    if (e.items.size() != n + 1)
      fail("(" + e.items[0].text + ") takes " + std::to_string(n) + " argument" + (n == 1 ? "" : "s"));
  }

  Value builtin(const std::string& f, const SExpr& e) {
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
      Value a = arg(e, 1), b = arg(e, 2);
      if (std::holds_alternative<NoneValue>(a) || std::holds_alternative<NoneValue>(b))
        return std::holds_alternative<NoneValue>(a) && std::holds_alternative<NoneValue>(b);
      if (std::holds_alternative<TensorRef>(a) || std::holds_alternative<TensorRef>(b))
        fail("=: compares numbers, lists and strings, not tensors");
      if (std::holds_alternative<double>(a) || std::holds_alternative<double>(b))
        return as_real(a, "=") == as_real(b, "=");
      if (std::holds_alternative<std::int64_t>(a) || std::holds_alternative<bool>(a)) return as_int(a, "=") == as_int(b, "=");
      if (auto* s = std::get_if<std::string>(&a)) return std::holds_alternative<std::string>(b) && std::get<std::string>(b) == *s;
      if (std::holds_alternative<NoneValue>(a)) return std::holds_alternative<NoneValue>(b);
      return as_ints(a, "=") == as_ints(b, "=");
    }
    if (f == "<") {
      arity(e, 2);
      return as_real(arg(e, 1), "<") < as_real(arg(e, 2), "<");
    }
    if (f == "error") {
      arity(e, 1);
      fail(as_string(arg(e, 1), "error"));
    }
    if (f == "/") {
      // Integers that divide exactly stay integers (shapes); else a real.
      arity(e, 2);
      Value a = arg(e, 1), b = arg(e, 2);
      double d = as_real(b, "/");
      if (d == 0) fail("/: division by zero");
      if (std::holds_alternative<std::int64_t>(a) && std::holds_alternative<std::int64_t>(b) &&
          std::get<std::int64_t>(a) % std::get<std::int64_t>(b) == 0)
        return std::get<std::int64_t>(a) / std::get<std::int64_t>(b);
      return as_real(a, "/") / d;
    }
    if (f == "numel") {
      arity(e, 1);
      auto d = dims_of(as_tensor(arg(e, 1), "numel"));
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
      if (a.size() != b.size()) fail("interleave: lists of " + std::to_string(a.size()) + " and " + std::to_string(b.size()));
      std::vector<std::int64_t> out;
      for (std::size_t i = 0; i < a.size(); ++i) out.insert(out.end(), {a[i], b[i]});
      return out;
    }
    if (f == "unslice") {
      // (unslice ?dy ?x): the node's slice of x, undone: dy's elements put
      // back where they were read (any steps), zeros elsewhere.
      arity(e, 2);
      return unslice(as_tensor(arg(e, 1), "unslice"), as_tensor(arg(e, 2), "unslice"));
    }
    if (f == "window-pads") {
      // (window-pads ?x KERNEL): the explicit pads [begins... ends...] of
      // the node's window over x's trailing dims (auto_pad resolved).
      arity(e, 2);
      auto xd = dims_of(as_tensor(arg(e, 1), "window-pads"));
      auto kernel = as_ints(arg(e, 2), "window-pads");
      if (kernel.size() > xd.size()) fail("window-pads: kernel of rank " + std::to_string(kernel.size()));
      std::vector<std::int64_t> spatial(xd.end() - static_cast<std::ptrdiff_t>(kernel.size()), xd.end());
      try {
        bool ceil_mode = node_.attrs.i("ceil_mode", 0) != 0;
        ir::WindowGeometry w = ir::window_geometry(node_.attrs, spatial, kernel, ceil_mode);
        std::vector<std::int64_t> pads = w.pads_begin;
        pads.insert(pads.end(), w.pads_end.begin(), w.pads_end.end());
        return pads;
      } catch (const ir::ShapeError& err) {
        fail(err.message);
      }
    }
    if (f == "window-view" || f == "window-sum") {
      // (window-view ?x PAD-VALUE KERNEL): x padded (pad value, and enough
      // at the end for ceil_mode's last window) and cut into the node's
      // windows, [lead... out... kernel...]. (window-sum T ?x KERNEL): its
      // adjoint, every window's taps summed back onto x's elements.
      arity(e, 3);
      if (f == "window-view")
        return window_view(as_tensor(arg(e, 1), "window-view"), as_real(arg(e, 2), "window-view"),
                           as_ints(arg(e, 3), "window-view"));
      return window_sum(as_tensor(arg(e, 1), "window-sum"), as_tensor(arg(e, 2), "window-sum"),
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
      return std::vector<std::int64_t>(static_cast<std::size_t>(std::max<std::int64_t>(0, as_int(arg(e, 1), "ones"))), 1);
    }
    if (f == "product") {
      arity(e, 1);
      auto l = as_ints(arg(e, 1), "product");
      return std::accumulate(l.begin(), l.end(), std::int64_t{1}, std::multiplies<>());
    }
    if (f == "first-half" || f == "second-half") {
      arity(e, 1);
      auto l = as_ints(arg(e, 1), f.c_str());
      if (l.size() % 2) fail(f + ": a list of odd length " + std::to_string(l.size()));
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
      return dims_of(as_tensor(arg(e, 1), "shape"));
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
      auto d = dims_of(as_tensor(arg(e, 1), "dim"));
      return d[normalize_axis(as_int(arg(e, 2), "dim"), static_cast<std::int64_t>(d.size()))];
    }
    if (f == "dims") {
      arity(e, 2);
      Value ts = arg(e, 1);
      auto* list = std::get_if<std::vector<TensorRef>>(&ts);
      if (!list) fail("dims: expected a list of tensors, got " + show(ts));
      std::int64_t axis = as_int(arg(e, 2), "dims");
      std::vector<std::int64_t> out;
      for (const TensorRef& t : *list) {
        auto d = dims_of(t);
        out.push_back(d[normalize_axis(axis, static_cast<std::int64_t>(d.size()))]);
      }
      return out;
    }
    if (f == "len") {
      arity(e, 1);
      Value v = arg(e, 1);
      if (auto* l = std::get_if<std::vector<TensorRef>>(&v)) return static_cast<std::int64_t>(l->size());
      return static_cast<std::int64_t>(as_ints(v, "len").size());
    }
    if (f == "empty?") {
      arity(e, 1);
      Value v = arg(e, 1);
      if (std::holds_alternative<NoneValue>(v)) return true;
      if (auto* l = std::get_if<std::vector<double>>(&v)) return l->empty();
      return as_ints(v, "empty?").empty();
    }
    if (f == "nth") {
      arity(e, 2);
      Value v = arg(e, 1);
      std::int64_t i = as_int(arg(e, 2), "nth");
      if (auto* l = std::get_if<std::vector<TensorRef>>(&v)) {
        if (i < 0 || i >= static_cast<std::int64_t>(l->size())) fail("nth: index out of range");
        return (*l)[i];
      }
      auto l = as_ints(v, "nth");
      if (i < 0 || i >= static_cast<std::int64_t>(l.size())) fail("nth: index out of range");
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
        if (p[i] < 0 || p[i] >= static_cast<std::int64_t>(p.size()) || inv[p[i]] != -1) fail("inverse-perm: not a permutation");
        inv[p[i]] = static_cast<std::int64_t>(i);
      }
      return inv;
    }
    if (f == "swap-last") {
      arity(e, 1);
      std::int64_t r = as_int(arg(e, 1), "swap-last");
      if (r < 2) fail("swap-last: rank " + std::to_string(r) + " has no two last axes");
      std::vector<std::int64_t> p(static_cast<std::size_t>(r));
      std::iota(p.begin(), p.end(), 0);
      std::swap(p[r - 1], p[r - 2]);
      return p;
    }
    if (f == "axes" || f == "keepdims") {
      // (axes AXES RANK): sorted, non-negative, all when empty; (keepdims T
      // AXES): T's dims with those axes set to 1.
      arity(e, 2);
      Value first = arg(e, 1);
      std::vector<std::int64_t> dims;
      std::int64_t rank;
      if (f == "keepdims") {
        dims = dims_of(as_tensor(first, "keepdims"));
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
    fail("built-in '" + f + "' is not implemented");
  }

  static Value arith(char op, const Value& a, const Value& b) {
    auto is_list = [](const Value& v) { return std::holds_alternative<std::vector<std::int64_t>>(v); };
    if (is_list(a) || is_list(b)) {
      std::vector<std::int64_t> x, y;
      if (is_list(a)) x = std::get<std::vector<std::int64_t>>(a);
      if (is_list(b)) y = std::get<std::vector<std::int64_t>>(b);
      if (!is_list(a)) x.assign(y.size(), as_int(a, "list arithmetic"));
      if (!is_list(b)) y.assign(x.size(), as_int(b, "list arithmetic"));
      if (x.size() != y.size())
        fail(std::string("list arithmetic on lists of ") + std::to_string(x.size()) + " and " + std::to_string(y.size()));
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

  // ONNX slice semantics, one axis at a time: a negative step reads the
  // axis backwards (dy is reversed, and read forwards from the last index
  // read), a step s > 1 reads every s-th element (dy's are spread s apart),
  // then zeros pad them to x's dims.
  TensorRef unslice(TensorRef dy, const TensorRef& x) {
    auto xd = dims_of(x);
    auto rank = static_cast<std::int64_t>(xd.size());
    auto starts = node_.attrs.ints("starts"), ends = node_.attrs.ints("ends"), axes = node_.attrs.ints("axes"),
         steps = node_.attrs.ints("steps");
    if (axes.empty())
      for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
    for (std::size_t i = 0; i < axes.size() && i < starts.size() && i < ends.size(); ++i) {
      const std::size_t a = static_cast<std::size_t>(normalize_axis(axes[i], rank));
      const std::int64_t d = xd[a], step = i < steps.size() ? steps[i] : 1;
      if (step == 0) fail("slice: a step of 0");
      std::int64_t s = starts[i] < 0 ? starts[i] + d : starts[i], t = ends[i] < 0 ? ends[i] + d : ends[i];
      std::int64_t count;
      if (step > 0) {
        s = std::clamp<std::int64_t>(s, 0, d);
        t = std::clamp<std::int64_t>(t, 0, d);
        count = std::max<std::int64_t>(0, (t - s + step - 1) / step);
      } else {
        s = std::clamp<std::int64_t>(s, 0, d - 1);
        t = std::clamp<std::int64_t>(t, -1, d - 1);
        count = std::max<std::int64_t>(0, (s - t + (-step) - 1) / (-step));
      }
      auto dd = dims_of(dy);
      std::int64_t first = s, stride = step;
      if (step < 0 && count > 0) {
        ir::Attrs rev;
        rev.set("starts", std::vector<std::int64_t>{-1});
        rev.set("ends", std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min()});
        rev.set("axes", std::vector<std::int64_t>{static_cast<std::int64_t>(a)});
        rev.set("steps", std::vector<std::int64_t>{-1});
        dy = b_.apply1("slice", {dy}, rev);
        first = s + (count - 1) * step;
        stride = -step;
      }
      std::int64_t span = count;  // the extent dy covers in x, from `first`
      if (stride > 1 && count > 0) {
        std::vector<std::int64_t> split = dd, spread = dd;
        split.insert(split.begin() + static_cast<std::ptrdiff_t>(a) + 1, 1);
        spread[a] = count * stride;
        std::vector<std::int64_t> pads(2 * split.size(), 0);
        pads[split.size() + a + 1] = stride - 1;
        ir::Attrs p;
        p.set("pads", pads);
        dy = reshape_to(b_.apply1("pad", {reshape_to(dy, split)}, p), spread);
        span = count * stride;
      }
      std::vector<std::int64_t> pads(2 * xd.size(), 0);
      pads[a] = count > 0 ? first : 0;
      pads[xd.size() + a] = d - (count > 0 ? first : 0) - span;  // negative: the spread's tail cut off
      if (std::any_of(pads.begin(), pads.end(), [](std::int64_t v) { return v != 0; })) {
        ir::Attrs p;
        p.set("pads", pads);
        dy = b_.apply1("pad", {dy}, p);
      }
    }
    return dy;
  }

  struct Windows {
    ir::WindowGeometry geometry;
    std::vector<std::int64_t> extra_end;  // past the pads, so that ceil_mode's last window fits
    std::size_t lead = 0;
  };
  Windows windows_of(const TensorRef& x, const std::vector<std::int64_t>& kernel) {
    auto xd = dims_of(x);
    if (kernel.empty() || kernel.size() > xd.size()) fail("windows: a kernel of rank " + std::to_string(kernel.size()));
    Windows w;
    w.lead = xd.size() - kernel.size();
    std::vector<std::int64_t> spatial(xd.begin() + static_cast<std::ptrdiff_t>(w.lead), xd.end());
    try {
      w.geometry = ir::window_geometry(node_.attrs, spatial, kernel, node_.attrs.i("ceil_mode", 0) != 0);
    } catch (const ir::ShapeError& err) {
      fail(err.message);
    }
    const ir::WindowGeometry& g = w.geometry;
    for (std::size_t d = 0; d < kernel.size(); ++d) {
      std::int64_t padded = spatial[d] + g.pads_begin[d] + g.pads_end[d];
      std::int64_t need = (g.out[d] - 1) * g.strides[d] + (kernel[d] - 1) * g.dilations[d] + 1;
      w.extra_end.push_back(std::max<std::int64_t>(0, need - padded));
    }
    return w;
  }

  // Windows that tile the input (strides = kernel, no padding or
  // dilation): viewing and summing back are a reshape and a transpose.
  static bool tiling(const Windows& w) {
    const ir::WindowGeometry& g = w.geometry;
    for (std::size_t d = 0; d < g.kernel.size(); ++d)
      if (g.strides[d] != g.kernel[d] || g.dilations[d] != 1 || g.pads_begin[d] != 0 || g.pads_end[d] != 0 ||
          w.extra_end[d] != 0)
        return false;
    return true;
  }
  // [lead... o0 k0 o1 k1 ...] <-> [lead... o... k...]
  static std::vector<std::int64_t> tile_perm(std::size_t lead, std::size_t k, bool to_windows) {
    std::vector<std::int64_t> p;
    for (std::size_t i = 0; i < lead; ++i) p.push_back(static_cast<std::int64_t>(i));
    for (std::size_t d = 0; d < k; ++d) p.push_back(static_cast<std::int64_t>(lead + 2 * d));
    for (std::size_t d = 0; d < k; ++d) p.push_back(static_cast<std::int64_t>(lead + 2 * d + 1));
    return to_windows ? p : inverse(p);
  }
  static std::vector<std::int64_t> inverse(const std::vector<std::int64_t>& p) {
    std::vector<std::int64_t> inv(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) inv[static_cast<std::size_t>(p[i])] = static_cast<std::int64_t>(i);
    return inv;
  }
  TensorRef reshape_to(const TensorRef& t, const std::vector<std::int64_t>& dims) {
    ir::Attrs a;
    a.set("shape", dims);
    a.set("allowzero", std::int64_t{1});
    return b_.apply1("reshape", {t}, a);
  }
  TensorRef transpose_by(const TensorRef& t, const std::vector<std::int64_t>& perm) {
    ir::Attrs a;
    a.set("perm", perm);
    return b_.apply1("transpose", {t}, a);
  }

  TensorRef window_view(const TensorRef& x, double pad_value, const std::vector<std::int64_t>& kernel) {
    Windows w = windows_of(x, kernel);
    const ir::WindowGeometry& g = w.geometry;
    if (tiling(w)) {
      auto xd = dims_of(x);
      std::vector<std::int64_t> split(xd.begin(), xd.begin() + static_cast<std::ptrdiff_t>(w.lead)), ends;
      std::vector<std::int64_t> starts(kernel.size(), 0), axes;
      bool crop = false;
      for (std::size_t d = 0; d < kernel.size(); ++d) {
        split.insert(split.end(), {g.out[d], kernel[d]});
        ends.push_back(g.out[d] * kernel[d]);
        axes.push_back(static_cast<std::int64_t>(w.lead + d));
        crop = crop || ends.back() != xd[w.lead + d];
      }
      TensorRef t = x;
      if (crop) {  // floor mode leaves a remainder no window reads
        ir::Attrs sl;
        sl.set("starts", starts);
        sl.set("ends", ends);
        sl.set("axes", axes);
        t = b_.apply1("slice", {x}, sl);
      }
      return transpose_by(reshape_to(t, split), tile_perm(w.lead, kernel.size(), true));
    }
    std::size_t r = dims_of(x).size();
    std::vector<std::int64_t> pads(2 * r, 0);
    bool any = false;
    for (std::size_t d = 0; d < kernel.size(); ++d) {
      pads[w.lead + d] = g.pads_begin[d];
      pads[r + w.lead + d] = g.pads_end[d] + w.extra_end[d];
      any = any || pads[w.lead + d] != 0 || pads[r + w.lead + d] != 0;
    }
    TensorRef padded = x;
    if (any) {
      ir::Attrs p;
      p.set("pads", pads);
      p.set("value", pad_value);
      padded = b_.apply1("pad", {x}, p);
    }
    ir::Attrs a;
    a.set("kernel_shape", kernel);
    a.set("strides", g.strides);
    a.set("dilations", g.dilations);
    return b_.apply1("windows", {padded}, a);
  }

  TensorRef window_sum(const TensorRef& t, const TensorRef& x, const std::vector<std::int64_t>& kernel) {
    Windows w = windows_of(x, kernel);
    const ir::WindowGeometry& g = w.geometry;
    auto xd = dims_of(x), td = dims_of(t);
    std::size_t k = kernel.size(), lead = w.lead, r = xd.size();
    if (td.size() != r + k) fail("window-sum: " + t.name + " is not [lead... out... kernel...]");
    if (tiling(w)) {
      std::vector<std::int64_t> merged(xd.begin(), xd.begin() + static_cast<std::ptrdiff_t>(lead));
      std::vector<std::int64_t> pads(2 * r, 0);
      bool pad = false;
      for (std::size_t d = 0; d < k; ++d) {
        merged.push_back(g.out[d] * kernel[d]);
        pads[r + lead + d] = xd[lead + d] - merged.back();
        pad = pad || pads[r + lead + d] != 0;
      }
      TensorRef v = reshape_to(transpose_by(t, tile_perm(lead, k, false)), merged);
      if (!pad) return v;
      ir::Attrs p;
      p.set("pads", pads);
      return b_.apply1("pad", {v}, p);
    }
    std::vector<std::int64_t> out(td.begin() + static_cast<std::ptrdiff_t>(lead), td.begin() + static_cast<std::ptrdiff_t>(lead + k));
    std::int64_t taps = 1;
    for (auto kk : kernel) taps *= kk;
    std::optional<TensorRef> sum;
    for (std::int64_t tap = 0; tap < taps; ++tap) {
      std::vector<std::int64_t> at(k);
      for (std::int64_t rest = tap, d = static_cast<std::int64_t>(k) - 1; d >= 0; --d) {
        at[d] = rest % kernel[d];
        rest /= kernel[d];
      }
      // This tap of every window, [lead... out...].
      ir::Attrs sl;
      std::vector<std::int64_t> starts, ends, axes;
      for (std::size_t d = 0; d < k; ++d) {
        starts.push_back(at[d]);
        ends.push_back(at[d] + 1);
        axes.push_back(static_cast<std::int64_t>(lead + k + d));
      }
      sl.set("starts", starts);
      sl.set("ends", ends);
      sl.set("axes", axes);
      std::vector<std::int64_t> flat(td.begin(), td.begin() + static_cast<std::ptrdiff_t>(lead + k));
      ir::Attrs rs;
      rs.set("shape", flat);
      rs.set("allowzero", std::int64_t{1});
      TensorRef v = b_.apply1("reshape", {b_.apply1("slice", {t}, sl)}, rs);
      // Window o's tap lands at o stride + tap dilation - pad begin: spread
      // the windows `stride` apart (zeros between), then shift and crop.
      bool strided = std::any_of(g.strides.begin(), g.strides.end(), [](std::int64_t s) { return s != 1; });
      if (strided) {
        std::vector<std::int64_t> split(td.begin(), td.begin() + static_cast<std::ptrdiff_t>(lead)), spread = split;
        std::vector<std::int64_t> pads(2 * (lead + 2 * k), 0);
        for (std::size_t d = 0; d < k; ++d) {
          split.insert(split.end(), {out[d], 1});
          spread.push_back(out[d] * g.strides[d]);
          pads[lead + 2 * d + 1 + lead + 2 * k] = g.strides[d] - 1;
        }
        ir::Attrs r1, p, r2;
        r1.set("shape", split);
        r1.set("allowzero", std::int64_t{1});
        p.set("pads", pads);
        r2.set("shape", spread);
        r2.set("allowzero", std::int64_t{1});
        v = b_.apply1("reshape", {b_.apply1("pad", {b_.apply1("reshape", {v}, r1)}, p)}, r2);
      }
      std::vector<std::int64_t> pads(2 * r, 0);
      for (std::size_t d = 0; d < k; ++d) {
        std::int64_t begin = at[d] * g.dilations[d] - g.pads_begin[d];
        pads[lead + d] = begin;
        pads[r + lead + d] = xd[lead + d] - (out[d] * g.strides[d] + begin);
      }
      ir::Attrs p;
      p.set("pads", pads);
      v = b_.apply1("pad", {v}, p);
      sum = sum ? b_.add(*sum, v) : v;
    }
    return *sum;
  }

  Value apply_op(const std::string& op, const SExpr& e) {
    const ir::OpDef* def = ir::OpRegistry::get().find(op);
    std::vector<TensorRef> operands;
    ir::Attrs attrs;
    std::int64_t results = def->num_outputs < 0 ? -1 : def->num_outputs;
    for (std::size_t i = 1; i < e.items.size(); ++i) {
      const SExpr& x = e.items[i];
      if (x.is_keyword()) {
        std::string name = x.text.substr(1);
        Value v = eval(e.items[++i]);
        if (name == "results") {
          results = as_int(v, ":results");
          continue;
        }
        bool declared = std::any_of(def->attrs.begin(), def->attrs.end(), [&](const ir::AttrSpec& s) { return s.name == name; });
        if (!declared) fail("op '" + op + "' has no attribute '" + name + "'");
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
          void operator()(const TensorRef&) const { fail("attribute '" + n + "' cannot be a tensor"); }
          void operator()(const std::vector<TensorRef>&) const { fail("attribute '" + n + "' cannot be a tensor"); }
        } set{attrs, name};
        std::visit(set, v);
        continue;
      }
      Value v = eval(x);
      if (auto* l = std::get_if<std::vector<TensorRef>>(&v)) operands.insert(operands.end(), l->begin(), l->end());
      else if (std::holds_alternative<NoneValue>(v)) operands.push_back(TensorRef{"", {}});
      else operands.push_back(as_tensor(v, ("operand of " + op).c_str()));
    }
    if (results < 0) fail("op '" + op + "' gives as many results as asked: say :results N");
    auto out = b_.apply(op, operands, attrs, static_cast<std::size_t>(results));
    if (out.size() == 1 && def->num_outputs >= 0) return out[0];
    return out;
  }

  const GradDef& def_;
  const ir::Node& node_;
  GraphBuilder& b_;
  std::map<std::string, Value> env_;
  std::map<std::string, const SExpr*> lets_;
};

}  // namespace

// Replaces g.nodes[index] by `form` (its operands as inputs, its results as
// outputs): the form's other values and constants are renamed under
// `prefix`, so they cannot meet the graph's.
void inline_form(ir::Graph& g, std::size_t index, const ir::Graph& form, const std::string& prefix) {
  const ir::Node n = g.nodes[index];
  std::map<std::string, std::string> rename;
  for (const ir::GraphValue& in : form.inputs) rename[in.name] = in.name;
  for (const auto& [name, t] : form.initializers) {
    const bool operand = std::find(n.inputs.begin(), n.inputs.end(), name) != n.inputs.end();
    rename[name] = operand ? name : prefix + name;
    if (!operand) g.initializers.emplace(rename[name], t);
  }
  std::map<std::string, std::size_t> result_of;  // form output -> position among n's results
  for (std::size_t k = 0; k < form.outputs.size(); ++k) result_of.try_emplace(form.outputs[k], k);
  std::vector<bool> written(n.outputs.size(), false);
  std::vector<ir::Node> nodes;
  for (const ir::Node& f : form.nodes) {
    ir::Node c = f;
    c.name = prefix + (f.name.empty() ? f.outputs.at(0) : f.name);
    c.source_op = n.source_op.empty() ? n.op : n.source_op;
    for (std::string& x : c.inputs)
      if (!x.empty()) x = rename.count(x) ? rename.at(x) : prefix + x;
    for (std::string& o : c.outputs) {
      auto r = result_of.find(o);
      std::string to = r != result_of.end() && !written[r->second] ? n.outputs[r->second] : prefix + o;
      if (r != result_of.end()) written[r->second] = true;
      rename[o] = to;
      o = to;
    }
    nodes.push_back(std::move(c));
  }
  for (std::size_t k = 0; k < n.outputs.size(); ++k)
    if (!written[k] && k < form.outputs.size()) {
      const std::string& from = form.outputs[k];
      nodes.push_back(ir::Node{prefix + n.outputs[k], "identity", {rename.count(from) ? rename.at(from) : from},
                               {n.outputs[k]}, {}, n.op});
    }
  g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(index));
  g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(index), nodes.begin(), nodes.end());
}

// Replaces each node between wrt and the loss whose op has no gradient rule
// by its primitive form; what it replaced goes to `decomposed`.
Expected<bool> decompose_composites(ir::Graph& g, const rules::GradRules& rules, const Decomposer& d,
                                    const std::string& loss, const std::vector<std::string>& wrt, const std::string& prefix,
                                    std::vector<std::string>& decomposed) {
  std::set<std::string> depends(wrt.begin(), wrt.end());
  for (const ir::Node& n : g.nodes) {
    if (rules.find_zerograd(n.op)) continue;
    if (std::any_of(n.inputs.begin(), n.inputs.end(), [&](const std::string& v) { return depends.count(v); }))
      depends.insert(n.outputs.begin(), n.outputs.end());
  }
  std::set<std::string> needed = {loss};
  std::vector<std::size_t> targets;
  for (std::size_t i = g.nodes.size(); i-- > 0;) {
    const ir::Node& n = g.nodes[i];
    if (std::none_of(n.outputs.begin(), n.outputs.end(), [&](const std::string& v) { return needed.count(v); })) continue;
    needed.insert(n.inputs.begin(), n.inputs.end());
    bool on_path = std::any_of(n.inputs.begin(), n.inputs.end(), [&](const std::string& v) { return depends.count(v); });
    if (on_path && !rules.find(n.op) && !rules.find_zerograd(n.op) && !rules.find_nograd(n.op)) targets.push_back(i);
  }
  for (std::size_t i : targets) {  // (descending: earlier indices stay valid)
    auto form = d.decompose(g, i);
    if (!form) return form.error();
    if (!*form) continue;  // the backward pass names it
    decomposed.push_back(ir::describe(g.nodes[i]));
    inline_form(g, i, **form, prefix + "decomposed/" + std::to_string(i) + "/");
  }
  return true;
}

Expected<Gradients> append_gradients(ir::Graph& g, const rules::GradRules& rules, const std::string& loss,
                                     const std::vector<std::string>& wrt, const GradientOptions& options) {
  const std::string& prefix = options.prefix;
  std::vector<std::string> decomposed;
  if (options.decomposer) {
    auto done = decompose_composites(g, rules, *options.decomposer, loss, wrt, prefix, decomposed);
    if (!done) return done.error();
  }
  auto typed = ir::infer_types(g);
  if (!typed) return typed.error();
  std::map<std::string, ir::ValueType> types = std::move(*typed);
  if (!types.count(loss)) return Diagnostic{SourceLoc{g.source}, "the loss '" + loss + "' is not a value of the graph"};
  auto loss_elems = ir::checked_static_numel(types[loss].shape);
  if (!loss_elems || *loss_elems != 1)
    return Diagnostic{SourceLoc{g.source}, "the loss '" + loss + "' must hold one element; it is " +
                                               ir::dtype_name(types[loss].dtype) + ir::to_string(types[loss].shape)};
  for (const std::string& w : wrt)
    if (!types.count(w)) return Diagnostic{SourceLoc{g.source}, "'" + w + "' is not a value of the graph"};

  // Which values depend on wrt (forward), and which the loss depends on.
  std::set<std::string> depends(wrt.begin(), wrt.end());
  std::size_t forward_nodes = g.nodes.size();
  for (std::size_t i = 0; i < forward_nodes; ++i) {
    const ir::Node& n = g.nodes[i];
    if (rules.find_zerograd(n.op)) continue;
    if (std::none_of(n.inputs.begin(), n.inputs.end(), [&](const std::string& v) { return depends.count(v); })) continue;
    for (const std::string& o : n.outputs)
      if (!o.empty() && ir::is_float(types[o].dtype)) depends.insert(o);
  }
  std::set<std::string> needed = {loss};
  for (std::size_t i = forward_nodes; i-- > 0;) {
    const ir::Node& n = g.nodes[i];
    if (std::none_of(n.outputs.begin(), n.outputs.end(), [&](const std::string& v) { return needed.count(v); })) continue;
    for (const std::string& v : n.inputs) needed.insert(v);
  }

  GraphBuilder b(g, types, prefix);
  std::map<std::string, std::vector<TensorRef>> contributions;
  auto total = [&](const std::string& v) -> std::optional<TensorRef> {
    auto it = contributions.find(v);
    if (it == contributions.end() || it->second.empty()) return std::nullopt;
    TensorRef sum = it->second[0];
    for (std::size_t k = 1; k < it->second.size(); ++k) sum = b.add(sum, it->second[k]);
    it->second = {sum};
    return sum;
  };

  try {
    TensorRef loss_ref{loss, types[loss]};
    contributions[loss].push_back(b.filled(1.0, loss_ref));
    for (std::size_t i = forward_nodes; i-- > 0;) {
      // Copied: appending nodes may move the vector.
      const ir::Node n = g.nodes[i];
      bool any_out = false;
      for (const std::string& o : n.outputs)
        if (contributions.count(o) && depends.count(o)) any_out = true;
      if (!any_out) continue;
      std::vector<std::size_t> want;
      for (std::size_t k = 0; k < n.inputs.size(); ++k)
        if (!n.inputs[k].empty() && depends.count(n.inputs[k])) want.push_back(k);
      if (want.empty()) continue;
      const GradDef* def = rules.find(n.op);
      if (!def) {
        const rules::NoGrad* no = rules.find_nograd(n.op);
        return Diagnostic{SourceLoc{g.source},
                          ir::describe(n) + ": op '" + n.op + "' has no gradient" +
                              (no ? " (" + no->reason + ", " + no->loc.to_string() + ")"
                                  : std::string(options.decomposer ? ", and no decomposition into primitives" : "") +
                                        "; add a (defgrad (" + n.op + " ...) ...) to rulesets/grad/") +
                              ", and it lies between a differentiated value and the loss"};
      }
      try {
        Instantiation inst(*def, n, b);
        std::vector<TensorRef> operands;
        for (const std::string& v : n.inputs) operands.push_back(TensorRef{v, v.empty() ? ir::ValueType{} : types[v]});
        // Bind the pattern: positional operands, the rest as a list.
        std::size_t fixed = def->operands.size() - (def->variadic_operands ? 1 : 0);
        for (std::size_t k = 0; k < fixed; ++k)
          inst.bind(def->operands[k], k < operands.size() && !operands[k].name.empty() ? Value(operands[k]) : Value(NoneValue{}));
        if (def->variadic_operands)
          inst.bind(def->operands.back(),
                    std::vector<TensorRef>(operands.begin() + static_cast<std::ptrdiff_t>(std::min(fixed, operands.size())), operands.end()));
        std::vector<TensorRef> results, incoming;
        for (const std::string& o : n.outputs) {
          results.push_back(TensorRef{o, types[o]});
          std::optional<TensorRef> d = depends.count(o) ? total(o) : std::nullopt;
          incoming.push_back(d ? *d : b.filled(0.0, results.back()));
        }
        std::size_t rfixed = def->results.size() - (def->variadic_results ? 1 : 0);
        for (std::size_t k = 0; k < rfixed; ++k) {
          inst.bind(def->results[k], k < results.size() ? Value(results[k]) : Value(NoneValue{}));
          inst.bind(def->incoming[k], k < incoming.size() ? Value(incoming[k]) : Value(NoneValue{}));
        }
        if (def->variadic_results) {
          auto from = static_cast<std::ptrdiff_t>(std::min(rfixed, results.size()));
          inst.bind(def->results.back(), std::vector<TensorRef>(results.begin() + from, results.end()));
          inst.bind(def->incoming.back(), std::vector<TensorRef>(incoming.begin() + from, incoming.end()));
        }
        for (const auto& [var, expr] : def->grads) {
          auto pos = std::find(def->operands.begin(), def->operands.end(), var) - def->operands.begin();
          bool variadic = def->variadic_operands && static_cast<std::size_t>(pos) == def->operands.size() - 1;
          std::vector<std::size_t> targets;
          for (std::size_t k : want)
            if (variadic ? k >= fixed : k == static_cast<std::size_t>(pos)) targets.push_back(k);
          if (targets.empty()) continue;
          Value v = inst.eval(expr);
          std::vector<TensorRef> grads;
          if (variadic) {
            auto* l = std::get_if<std::vector<TensorRef>>(&v);
            if (!l || l->size() != operands.size() - fixed)
              throw DiagnosticError{Diagnostic{expr.loc, "the gradient of '" + var + "...' must be a list of " +
                                                             std::to_string(operands.size() - fixed) + " tensors, got " + show(v)}};
            for (std::size_t k : targets) grads.push_back((*l)[k - fixed]);
          } else {
            grads.push_back(as_tensor(v, ("gradient of " + var).c_str()));
          }
          for (std::size_t j = 0; j < targets.size(); ++j) {
            const TensorRef& op = operands[targets[j]];
            const TensorRef& d = grads[j];
            if (d.type.dtype != op.type.dtype || d.type.shape != op.type.shape)
              throw DiagnosticError{Diagnostic{expr.loc, "the gradient of '" + var + "' is " + ir::dtype_name(d.type.dtype) +
                                                             ir::to_string(d.type.shape) + "; operand '" + op.name + "' is " +
                                                             ir::dtype_name(op.type.dtype) + ir::to_string(op.type.shape)}};
            contributions[op.name].push_back(d);
          }
        }
        for (std::size_t k : want) {
          bool given = std::any_of(def->grads.begin(), def->grads.end(), [&](const auto& gr) {
            auto pos = std::find(def->operands.begin(), def->operands.end(), gr.first) - def->operands.begin();
            bool variadic = def->variadic_operands && static_cast<std::size_t>(pos) == def->operands.size() - 1;
            return variadic ? k >= fixed : k == static_cast<std::size_t>(pos);
          });
          if (!given)
            throw DiagnosticError{Diagnostic{def->loc, "(defgrad " + n.op + ") gives no gradient for operand " + std::to_string(k) +
                                                           " ('" + n.inputs[k] + "'), which is differentiated"}};
        }
      } catch (const DiagnosticError& e) {
        Diagnostic d = e.diag;
        d.message += " (differentiating " + ir::describe(n) + ")";
        return d;
      }
    }
  } catch (const GradError& e) {
    return Diagnostic{SourceLoc{g.source}, e.message};
  }

  Gradients out;
  out.decomposed = std::move(decomposed);
  for (const std::string& w : wrt) {
    std::optional<TensorRef> d = needed.count(w) ? total(w) : std::nullopt;
    if (!d) {
      out.unreached.push_back(w);
      try {
        d = b.filled(0.0, TensorRef{w, types[w]});
      } catch (const GradError& e) {
        return Diagnostic{SourceLoc{g.source}, e.message};
      }
    }
    out.of[w] = d->name;
  }
  out.nodes_added = b.added();
  return out;
}

}  // namespace saturn::pipeline
