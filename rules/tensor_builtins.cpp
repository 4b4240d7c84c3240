#include "rules/tensor_builtins.hpp"

#include <algorithm>

#include "rules/builtin_args.hpp"
#include "rules/decompose_builtins.hpp"
#include "rules/tensor_egraph.hpp"

namespace saturn::rules {

namespace {

using Args = std::span<const Value>;
using Result = std::optional<Value>;

// A tensor's shape, or a static shape given as a list.
std::optional<ir::Shape> shape_arg(EvalContext& ctx, const Value& v) {
  if (const TensorInfo* t = tensor_of(ctx, v)) return t->type.shape;
  if (v.kind == Value::Kind::Class && ctx.graph.analysis<TensorAnalysis>() &&
      !ctx.graph.literal(v.cls))  // an attribute class that is not a list
    return std::nullopt;
  auto l = ints_of(ctx, v);
  if (!l) return std::nullopt;
  return ir::shape_of(*l);
}

// A permutation of 0..n-1 (n = its length).
bool is_perm(const std::vector<std::int64_t>& p) {
  std::vector<bool> seen(p.size(), false);
  for (std::int64_t x : p) {
    if (x < 0 || x >= static_cast<std::int64_t>(p.size()) || seen[static_cast<std::size_t>(x)]) return false;
    seen[static_cast<std::size_t>(x)] = true;
  }
  return true;
}

// A test on every element of a known small constant.
Result all_elements(EvalContext& ctx, const Value& v, double want) {
  const TensorInfo* t = tensor_of(ctx, v);
  if (t && t->uniform) return Value::of_bool(*t->uniform == want);
  if (!t || !t->value) return Value::of_bool(false);
  for (std::size_t i = 0; i < t->value->numel(); ++i)
    if (t->value->at(i) != want) return Value::of_bool(false);
  return Value::of_bool(true);
}

// The i-th child value of a (result-shape op children...) call, as an attribute.
std::optional<ir::AttrValue> attr_value(EvalContext& ctx, const Value& v, const ir::AttrSpec& spec) {
  auto r = ctx.resolve(v);
  if (!r) return std::nullopt;
  switch (spec.type) {
    case ir::AttrType::Int:
    case ir::AttrType::Real:
      if (r->kind != Value::Kind::Number) return std::nullopt;
      if (r->number.is_int()) return ir::AttrValue(r->number.as_int());
      return ir::AttrValue(r->number.as_real());
    case ir::AttrType::Ints: {
      auto l = ints_of(ctx, *r);
      if (!l) return std::nullopt;
      return ir::AttrValue(*l);
    }
    case ir::AttrType::Reals: {
      if (r->kind != Value::Kind::List) return std::nullopt;
      std::vector<double> d;
      for (const Number& n : r->list) d.push_back(n.as_real());
      return ir::AttrValue(d);
    }
    case ir::AttrType::String:
      if (r->kind != Value::Kind::Symbol) return std::nullopt;
      return ir::AttrValue(r->symbol.name());
    case ir::AttrType::Tensor:
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

void register_tensor_builtins(BuiltinRegistry& r) {
  r.add(Builtin{"shape", 1, 1, "static shape of a tensor, as a list", [](EvalContext& ctx, Args a) -> Result {
                  const TensorInfo* t = tensor_of(ctx, a[0]);
                  if (!t || !ir::is_static(t->type.shape)) return std::nullopt;
                  return list_of(ir::static_dims(t->type.shape));
                }});
  r.add(Builtin{"rank", 1, 1, "number of axes of a tensor", [](EvalContext& ctx, Args a) -> Result {
                  const TensorInfo* t = tensor_of(ctx, a[0]);
                  if (!t) return std::nullopt;
                  return Value::of_number(Number(static_cast<std::int64_t>(t->type.shape.size())));
                }});
  r.add(Builtin{"dtype", 1, 1, "element type of a tensor, as a symbol (f32, i64, ...)",
                [](EvalContext& ctx, Args a) -> Result {
                  const TensorInfo* t = tensor_of(ctx, a[0]);
                  if (!t) return std::nullopt;
                  return Value::of_symbol(egraph::Op::symbol(ir::dtype_name(t->type.dtype)));
                }});
  r.add(Builtin{"floating?", 1, 1, "the tensor's element type is a floating type (f16, bf16, f32, f64)",
                [](EvalContext& ctx, Args a) -> Result {
                  const TensorInfo* t = tensor_of(ctx, a[0]);
                  if (!t) return std::nullopt;
                  return Value::of_bool(ir::is_float(t->type.dtype));
                }});
  r.add(Builtin{"dim", 2, 2, "static size of axis i (negative counts from the end)",
                [](EvalContext& ctx, Args a) -> Result {
                  const TensorInfo* t = tensor_of(ctx, a[0]);
                  auto i = ctx.as_number(a[1]);
                  if (!t || !i || !i->is_int()) return std::nullopt;
                  auto rank = static_cast<std::int64_t>(t->type.shape.size());
                  std::int64_t k = i->as_int() < 0 ? i->as_int() + rank : i->as_int();
                  if (k < 0 || k >= rank || !t->type.shape[static_cast<std::size_t>(k)].is_static())
                    return std::nullopt;
                  return Value::of_number(Number(t->type.shape[static_cast<std::size_t>(k)].value()));
                }});
  r.add(Builtin{"numel", 1, 1, "number of elements (static shapes)", [](EvalContext& ctx, Args a) -> Result {
                  const TensorInfo* t = tensor_of(ctx, a[0]);
                  if (!t || !ir::is_static(t->type.shape)) return std::nullopt;
                  return Value::of_number(Number(ir::numel(ir::static_dims(t->type.shape))));
                }});
  r.add(Builtin{"same-shape", 2, 2, "two tensors have equal shapes (symbolic dims compared exactly)",
                [](EvalContext& ctx, Args a) -> Result {
                  const TensorInfo *x = tensor_of(ctx, a[0]), *y = tensor_of(ctx, a[1]);
                  if (!x || !y) return std::nullopt;
                  return Value::of_bool(x->type.shape == y->type.shape);
                }});
  r.add(Builtin{"broadcasts-to", 2, 2,
                "the first tensor broadcasts to the second's shape (a tensor or a list; numpy rules)",
                [](EvalContext& ctx, Args a) -> Result {
                  const TensorInfo* x = tensor_of(ctx, a[0]);
                  auto y = shape_arg(ctx, a[1]);
                  if (!x || !y) return std::nullopt;
                  auto b = ir::broadcast(x->type.shape, *y);
                  return Value::of_bool(b && *b == *y);
                }});
  r.add(Builtin{"is-const", 1, 1, "the tensor is computable from constants alone (computed once, at load time)",
                [](EvalContext& ctx, Args a) -> Result {
                  const TensorInfo* t = tensor_of(ctx, a[0]);
                  return Value::of_bool(t && t->constant);
                }});
  r.add(Builtin{"is-zero", 1, 1, "a known constant whose every element is 0",
                [](EvalContext& ctx, Args a) -> Result { return all_elements(ctx, a[0], 0.0); }});
  r.add(Builtin{"is-one", 1, 1, "a known constant whose every element is 1",
                [](EvalContext& ctx, Args a) -> Result { return all_elements(ctx, a[0], 1.0); }});
  r.add(Builtin{"splat", 1, 1, "the one value of a known constant whose elements are all equal",
                [](EvalContext& ctx, Args a) -> Result {
                  const TensorInfo* t = tensor_of(ctx, a[0]);
                  if (t && t->uniform) return Value::of_number(Number(*t->uniform));
                  if (!t || !t->value || t->value->numel() == 0) return std::nullopt;
                  double v = t->value->at(0);
                  for (std::size_t i = 1; i < t->value->numel(); ++i)
                    if (t->value->at(i) != v) return std::nullopt;
                  return Value::of_number(Number(v));
                }});
  r.add(Builtin{"scalar", 2, 2,
                "a new rank-0 constant holding the number, of the first argument's dtype (a tensor's, or a dtype "
                "named: i64, f32, ...); gives the handle for (const ?h)",
                [](EvalContext& ctx, Args a) -> Result {
                  const TensorInfo* t = tensor_of(ctx, a[0]);
                  std::optional<ir::DType> dtype;
                  if (t) {
                    dtype = t->type.dtype;
                  } else if (auto r = ctx.resolve(a[0]); r && r->kind == Value::Kind::Symbol) {
                    dtype = ir::dtype_from_name(r->symbol.name());
                  }
                  auto v = ctx.as_number(a[1]);
                  auto* an = ctx.graph.analysis<TensorAnalysis>();
                  if (!dtype || !v || !an) return std::nullopt;
                  ir::Tensor c = v->is_int() && !ir::is_float(*dtype)
                                     ? ir::Tensor::of_ints(*dtype, {}, {v->as_int()})  // exact, INT64_MAX too
                                     : ir::Tensor::scalar(*dtype, v->as_real());
                  return Value::of_symbol(an->constants().intern(std::move(c)));
                }});
  r.add(Builtin{"perm-compose", 2, 2, "p then q: transpose(transpose(x, p), q) = transpose(x, (perm-compose p q))",
                [](EvalContext& ctx, Args a) -> Result {
                  auto p = ints_of(ctx, a[0]), q = ints_of(ctx, a[1]);
                  if (!p || !q || p->size() != q->size() || !is_perm(*p) || !is_perm(*q)) return std::nullopt;
                  std::vector<std::int64_t> out;
                  for (std::int64_t i : *q) out.push_back((*p)[static_cast<std::size_t>(i)]);
                  return list_of(out);
                }});
  r.add(Builtin{"perm-inverse", 1, 1, "the inverse permutation", [](EvalContext& ctx, Args a) -> Result {
                  auto p = ints_of(ctx, a[0]);
                  if (!p || !is_perm(*p)) return std::nullopt;
                  std::vector<std::int64_t> out(p->size());
                  for (std::size_t i = 0; i < p->size(); ++i)
                    out[static_cast<std::size_t>((*p)[i])] = static_cast<std::int64_t>(i);
                  return list_of(out);
                }});
  r.add(Builtin{"perm-identity?", 1, 1, "the permutation leaves every axis in place",
                [](EvalContext& ctx, Args a) -> Result {
                  auto p = ints_of(ctx, a[0]);
                  if (!p || p->empty() || !is_perm(*p)) return Value::of_bool(false);
                  for (std::size_t i = 0; i < p->size(); ++i)
                    if ((*p)[i] != static_cast<std::int64_t>(i)) return Value::of_bool(false);
                  return Value::of_bool(true);
                }});
  r.add(Builtin{"perm-of", 2, 2, "transpose's perm attribute made explicit for a tensor of rank n ([] reverses)",
                [](EvalContext& ctx, Args a) -> Result {
                  auto p = ints_of(ctx, a[0]);
                  auto n = ctx.as_number(a[1]);
                  if (!p || !n || !n->is_int() || n->as_int() < 0 || n->as_int() > kMaxListLength) return std::nullopt;
                  if (p->empty()) {
                    for (std::int64_t i = n->as_int(); i-- > 0;) p->push_back(i);
                  }
                  if (static_cast<std::int64_t>(p->size()) != n->as_int() || !is_perm(*p)) return std::nullopt;
                  return list_of(*p);
                }});
  r.add(Builtin{"swap-last", 1, 1, "the permutation of rank n swapping the last two axes",
                [](EvalContext& ctx, Args a) -> Result {
                  auto n = ctx.as_number(a[0]);
                  if (!n || !n->is_int() || n->as_int() < 2 || n->as_int() > 64) return std::nullopt;
                  std::vector<std::int64_t> out;
                  for (std::int64_t i = 0; i < n->as_int(); ++i) out.push_back(i);
                  std::swap(out[out.size() - 1], out[out.size() - 2]);
                  return list_of(out);
                }});
  r.add(Builtin{"weight?", 1, 1, "the class holds a constant of the model itself, (const #c)",
                [](EvalContext& ctx, Args a) -> Result {
                  if (a[0].kind != Value::Kind::Class) return Value::of_bool(false);
                  const egraph::Op k = TensorOps::get().constant;
                  for (egraph::NodeId n : ctx.graph.nodes(ctx.graph.find(a[0].cls)))
                    if (ctx.graph.op(n) == k) return Value::of_bool(true);
                  return Value::of_bool(false);
                }});
  r.add(Builtin{
      "slice-compose", 10, 10,
      "(slice-compose starts|ends|axes ?x starts1 ends1 axes1 steps1 starts2 ends2 axes2 steps2): that attribute of "
      "the one slice of ?x equal to the second slice applied to the first (unit steps, static shape); fails otherwise",
      [](EvalContext& ctx, Args args) -> Result {
        auto part = ctx.resolve(args[0]);
        if (!part || part->kind != Value::Kind::Symbol) return std::nullopt;
        const std::string which = part->symbol.name();
        Args a = args.subspan(1);
        const TensorInfo* t = tensor_of(ctx, a[0]);
        if (!t || !ir::is_static(t->type.shape)) return std::nullopt;
        auto dims = ir::static_dims(t->type.shape);
        const auto rank = static_cast<std::int64_t>(dims.size());
        std::vector<std::int64_t> lo(dims.size(), 0), hi = dims;  // the window so far, per axis
        for (int k = 0; k < 2; ++k) {
          auto starts = ints_of(ctx, a[1 + 4 * k]), ends = ints_of(ctx, a[2 + 4 * k]);
          auto axes = ints_of(ctx, a[3 + 4 * k]), steps = ints_of(ctx, a[4 + 4 * k]);
          if (!starts || !ends || !axes || !steps || starts->size() != ends->size()) return std::nullopt;
          if (axes->empty())
            for (std::int64_t i = 0; i < static_cast<std::int64_t>(starts->size()); ++i) axes->push_back(i);
          if (axes->size() != starts->size()) return std::nullopt;
          for (std::int64_t st : *steps)
            if (st != 1) return std::nullopt;
          for (std::size_t i = 0; i < axes->size(); ++i) {
            std::int64_t ax = (*axes)[i] < 0 ? (*axes)[i] + rank : (*axes)[i];
            if (ax < 0 || ax >= rank) return std::nullopt;
            const auto u = static_cast<std::size_t>(ax);
            const std::int64_t d = hi[u] - lo[u];  // extent the slice sees
            auto clampd = [d](std::int64_t v) { return std::clamp<std::int64_t>(v < 0 ? v + d : v, 0, d); };
            const std::int64_t b = clampd((*starts)[i]), e = std::max(b, clampd((*ends)[i]));
            hi[u] = lo[u] + e;
            lo[u] += b;
          }
        }
        std::vector<Number> s, e, ax;
        for (std::size_t u = 0; u < dims.size(); ++u)
          if (lo[u] != 0 || hi[u] != dims[u]) {
            s.emplace_back(lo[u]);
            e.emplace_back(hi[u]);
            ax.emplace_back(static_cast<std::int64_t>(u));
          }
        if (s.empty()) return std::nullopt;  // the identity: nothing to slice
        if (which == "starts") return Value::of_list(std::move(s));
        if (which == "ends") return Value::of_list(std::move(e));
        if (which == "axes") return Value::of_list(std::move(ax));
        return std::nullopt;
      }});
  r.add(Builtin{"tensor?", 1, 1, "the class is a tensor (not an omitted operand or an attribute)",
                [](EvalContext& ctx, Args a) -> Result { return Value::of_bool(tensor_of(ctx, a[0]) != nullptr); }});
  r.add(Builtin{"contains", 2, 2, "the list holds the number", [](EvalContext& ctx, Args a) -> Result {
                  auto l = ctx.as_list(a[0]);
                  auto n = ctx.as_number(a[1]);
                  if (!l || !n) return std::nullopt;
                  return Value::of_bool(std::find(l->begin(), l->end(), *n) != l->end());
                }});
  r.add(Builtin{"axes-from", 2, 2, "[a a+1 ... n-1], a normalized against rank n (layer_norm's axes)",
                [](EvalContext& ctx, Args a) -> Result {
                  auto from = ctx.as_number(a[0]), n = ctx.as_number(a[1]);
                  if (!from || !n || !from->is_int() || !n->is_int()) return std::nullopt;
                  std::int64_t f = from->as_int() < 0 ? from->as_int() + n->as_int() : from->as_int();
                  if (f < 0 || f > n->as_int() || n->as_int() > 64) return std::nullopt;
                  std::vector<std::int64_t> out;
                  for (std::int64_t i = f; i < n->as_int(); ++i) out.push_back(i);
                  return list_of(out);
                }});
  r.add(Builtin{"reduced-count", 2, 2, "elements each result of reducing the tensor over the axes sums ([]: all)",
                [](EvalContext& ctx, Args a) -> Result {
                  const TensorInfo* t = tensor_of(ctx, a[0]);
                  auto axes = ints_of(ctx, a[1]);
                  if (!t || !axes || !ir::is_static(t->type.shape)) return std::nullopt;
                  auto dims = ir::static_dims(t->type.shape);
                  std::int64_t count = 1;
                  if (axes->empty()) return Value::of_number(Number(ir::numel(dims)));
                  for (std::int64_t ax : *axes) {
                    std::int64_t k = ax < 0 ? ax + static_cast<std::int64_t>(dims.size()) : ax;
                    if (k < 0 || k >= static_cast<std::int64_t>(dims.size())) return std::nullopt;
                    count *= dims[static_cast<std::size_t>(k)];
                  }
                  return Value::of_number(Number(count));
                }});
  r.add(Builtin{"channel-shape", 1, 1,
                "[C 1 ... 1] for a tensor [N C d1 ... dk]: per-channel parameters reshaped to broadcast",
                [](EvalContext& ctx, Args a) -> Result {
                  const TensorInfo* t = tensor_of(ctx, a[0]);
                  if (!t || t->type.shape.size() < 2 || !t->type.shape[1].is_static()) return std::nullopt;
                  std::vector<std::int64_t> out(t->type.shape.size() - 1, 1);
                  out[0] = t->type.shape[1].value();
                  return list_of(out);
                }});
  r.add(Builtin{"leading-shape", 1, 1,
                "[d0 1 ... 1] of the tensor's rank: a per-output-channel factor for weights [M C k...]",
                [](EvalContext& ctx, Args a) -> Result {
                  const TensorInfo* t = tensor_of(ctx, a[0]);
                  if (!t || t->type.shape.empty() || !t->type.shape[0].is_static()) return std::nullopt;
                  std::vector<std::int64_t> out(t->type.shape.size(), 1);
                  out[0] = t->type.shape[0].value();
                  return list_of(out);
                }});
  r.add(Builtin{"channel-bias?", 2, 2,
                "the first tensor is a per-channel bias of the second [N C ...] (a tensor or a shape list): all its "
                "dims are 1 but the channel's",
                [](EvalContext& ctx, Args a) -> Result {
                  const TensorInfo* b = tensor_of(ctx, a[0]);
                  auto ys = shape_arg(ctx, a[1]);
                  if (!b || !ys || ys->size() < 2 || !ir::is_static(b->type.shape)) return Value::of_bool(false);
                  const ir::Shape& yshape = *ys;
                  auto bd = ir::static_dims(b->type.shape);
                  const std::size_t r = yshape.size();
                  if (bd.size() > r || bd.size() < r - 1) return Value::of_bool(false);
                  const std::size_t off = r - bd.size();  // b aligns with y's last axes
                  for (std::size_t i = 0; i < bd.size(); ++i) {
                    const bool channel = i + off == 1;
                    if (channel ? !(yshape[1].is_static() && bd[i] == yshape[1].value()) : bd[i] != 1)
                      return Value::of_bool(false);
                  }
                  return Value::of_bool(true);
                }});
  r.add(
      Builtin{"result-shape", 1, -1,
              "(result-shape OP child...): the static shape the op registry gives OP applied to these e-graph children",
              [](EvalContext& ctx, Args a) -> Result {
                auto op = ctx.resolve(a[0]);
                if (!op || op->kind != Value::Kind::Symbol) return std::nullopt;
                const ir::OpDef* def = ir::OpRegistry::get().find(op->symbol.name());
                if (!def || def->num_outputs != 1 || a.size() < 1 + def->attrs.size()) return std::nullopt;
                const std::size_t nops = a.size() - 1 - def->attrs.size();
                std::vector<ir::TypedInput> ins;
                for (std::size_t i = 0; i < nops; ++i) {
                  const TensorInfo* t = tensor_of(ctx, a[1 + i]);
                  auto sym = t ? std::nullopt : ctx.resolve(a[1 + i]);
                  if (!t && sym && sym->kind == Value::Kind::Symbol && sym->symbol.name() == "none") {
                    ins.push_back(ir::TypedInput{{}, nullptr, false});  // an omitted optional operand
                    continue;
                  }
                  if (!t) return std::nullopt;
                  ins.push_back(ir::TypedInput{t->type, t->value.get(), true});
                }
                ir::Attrs attrs;
                for (std::size_t i = 0; i < def->attrs.size(); ++i) {
                  auto v = ctx.resolve(a[1 + nops + i]);
                  if (v && v->kind == Value::Kind::Symbol && v->symbol.name() == "none") continue;
                  if (v && v->kind == Value::Kind::List && v->list.empty()) continue;
                  auto av = attr_value(ctx, a[1 + nops + i], def->attrs[i]);
                  if (!av) return std::nullopt;
                  attrs.set(def->attrs[i].name, *av);
                }
                try {
                  auto outs = def->infer(attrs, ins, 1);
                  if (outs.empty() || !ir::is_static(outs[0].shape)) return std::nullopt;
                  return list_of(ir::static_dims(outs[0].shape));
                } catch (const ir::ShapeError&) {
                  return std::nullopt;
                }
              }});
  register_decompose_builtins(r);
}

}  // namespace saturn::rules
