#include "rules/tensor_egraph.hpp"

#include <algorithm>
#include <set>

#include "ir/dependency_order.hpp"

namespace saturn::rules {

using egraph::EGraph;
using egraph::Number;
using egraph::OpKind;
using ir::AttrSpec;
using ir::AttrType;
using ir::AttrValue;
using ir::OpDef;
using ir::OpRegistry;
using ir::Tensor;

namespace {

std::string content_key(const Tensor& t) {
  std::string k = t.summary();
  k.push_back('|');
  k.append(reinterpret_cast<const char*>(t.bytes()), t.nbytes());
  return k;
}

// Extra trailing children of ops with several results: index and count.
std::size_t result_children(const OpDef& d) { return d.num_outputs == 1 ? 0 : 2; }

std::size_t static_numel(const ir::Shape& s) {
  return ir::is_static(s) ? static_cast<std::size_t>(ir::numel(ir::static_dims(s))) : static_cast<std::size_t>(-1);
}

}  // namespace

// ---------------------------------------------------------------- constants

Op ConstantPool::intern(Tensor t, const std::string& name) {
  const bool small = t.numel() <= kSmall;
  std::string key = small ? content_key(t) : std::string();
  if (small) {
    if (auto it = by_content_.find(key); it != by_content_.end()) return it->second;
  } else if (!name.empty()) {
    if (auto it = by_name_.find(name);
        it != by_name_.end() && entries_.at(it->second).value->nbytes() == t.nbytes() &&
        std::equal(t.bytes(), t.bytes() + t.nbytes(), entries_.at(it->second).value->bytes()))
      return it->second;
  }
  Op h = Op::symbol("#c" + std::to_string(entries_.size()));
  entries_[h] = Entry{std::make_shared<const Tensor>(std::move(t)), name};
  if (small) by_content_.emplace(std::move(key), h);
  if (!name.empty()) by_name_.emplace(name, h);
  return h;
}

const Tensor* ConstantPool::find(Op handle) const {
  auto it = entries_.find(handle);
  return it == entries_.end() ? nullptr : it->second.value.get();
}

std::string ConstantPool::name_of(Op handle) const {
  auto it = entries_.find(handle);
  return it == entries_.end() ? std::string() : it->second.name;
}

// ---------------------------------------------------------------- language

const TensorOps& TensorOps::get() {
  static const TensorOps ops{Op::symbol("input"), Op::symbol("const"), Op::symbol("none")};
  return ops;
}

std::optional<Op> leaf_symbol(const EGraph& g, EClassId c) {
  for (NodeId n : g.nodes(g.find(c)))
    if (g.children(n).empty() && g.op(n).kind() == OpKind::Symbol) return g.op(n);
  return std::nullopt;
}

std::optional<std::string> check_tensor_op(const std::string& op, std::size_t arity) {
  if (op == "input" || op == "const") {
    if (arity == 1) return std::nullopt;
    return "'" + op + "' takes one child: (" + op + (op == "input" ? " NAME)" : " HANDLE)");
  }
  const OpDef* d = OpRegistry::get().find(op);
  if (!d) {
    if (arity == 0) return std::nullopt;  // a symbol literal: a string attribute, none, ...
    return "unknown op '" + op + "' (not in the op registry; see docs/ops.md)";
  }
  const std::size_t fixed = d->attrs.size() + result_children(*d);
  const std::size_t lo = static_cast<std::size_t>(d->min_inputs) + fixed;
  const std::size_t hi =
      d->max_inputs < 0 ? static_cast<std::size_t>(-1) : static_cast<std::size_t>(d->max_inputs) + fixed;
  if (arity >= lo && arity <= hi) return std::nullopt;
  std::string form = "(" + op;
  for (int i = 0; i < std::max(d->min_inputs, d->max_inputs); ++i) form += " x" + std::to_string(i);
  for (const AttrSpec& a : d->attrs) form += " " + a.name;
  if (fixed > d->attrs.size()) form += " result num_results";
  form += ")";
  return "'" + op + "' has " + std::to_string(arity) + " children; its e-graph form is " + form +
         (d->min_inputs != d->max_inputs ? " (optional operands may be none)" : "");
}

// ---------------------------------------------------------------- analysis

const ir::ValueType* TensorAnalysis::input_type(const std::string& name) const {
  auto it = inputs_.find(name);
  return it == inputs_.end() ? nullptr : &it->second;
}

const ir::OpDef* TensorAnalysis::def_of(Op op) const {
  // Every e-node added is typed through here: look each operator up once.
  auto [it, fresh] = defs_.try_emplace(op.id, nullptr);
  if (fresh) it->second = OpRegistry::get().find(op.name());
  return it->second;
}

std::optional<ir::Attrs> TensorAnalysis::attrs_of(const EGraph& g, const OpDef& def, std::span<const EClassId> classes,
                                                  std::string* why) const {
  auto fail = [&](std::string msg) -> std::optional<ir::Attrs> {
    if (why) *why = std::move(msg);
    return std::nullopt;
  };
  if (classes.size() != def.attrs.size()) return fail("wrong number of attributes");
  ir::Attrs attrs;
  for (std::size_t i = 0; i < def.attrs.size(); ++i) {
    const AttrSpec& spec = def.attrs[i];
    EClassId c = g.find(classes[i]);
    std::optional<Op> lit = g.literal(c);
    std::optional<Op> sym = lit ? std::nullopt : leaf_symbol(g, c);
    auto bad = [&] { return fail("attribute '" + spec.name + "' has a value of the wrong kind"); };
    if (sym && *sym == TensorOps::get().none && spec.type != AttrType::String) continue;
    switch (spec.type) {
      case AttrType::Int:
      case AttrType::Real: {
        if (!lit || lit->kind() == OpKind::List) return bad();
        Number v = *lit->number();
        if (v.is_int())
          attrs.set(spec.name, v.as_int());
        else
          attrs.set(spec.name, v.as_real());
        break;
      }
      case AttrType::Ints:
      case AttrType::Reals: {
        if (!lit || lit->kind() != OpKind::List) return bad();
        auto items = lit->list_value();
        if (items.empty()) break;  // absent
        if (spec.type == AttrType::Ints) {
          std::vector<std::int64_t> v;
          for (const Number& x : items) {
            if (!x.is_int()) return bad();
            v.push_back(x.as_int());
          }
          attrs.set(spec.name, std::move(v));
        } else {
          std::vector<double> v;
          for (const Number& x : items) v.push_back(x.as_real());
          attrs.set(spec.name, std::move(v));
        }
        break;
      }
      case AttrType::String:
        if (!sym) return bad();
        if (*sym != TensorOps::get().none) attrs.set(spec.name, sym->name());
        break;
      case AttrType::Tensor: {
        const Tensor* v = sym ? constants_.find(*sym) : nullptr;
        if (!v) return bad();
        attrs.set(spec.name, *v);
        break;
      }
    }
  }
  return attrs;
}

std::optional<TensorNode> TensorAnalysis::decode(const EGraph& g, NodeId n, std::string* why) const {
  return decode(g, g.op(n), g.children(n), why);
}

std::optional<TensorNode> TensorAnalysis::decode(const EGraph& g, Op op, std::span<const EClassId> kids,
                                                 std::string* why) const {
  auto fail = [&](std::string msg) -> std::optional<TensorNode> {
    if (why) *why = std::move(msg);
    return std::nullopt;
  };
  if (op.is_literal() || op == TensorOps::get().input || op == TensorOps::get().constant) return fail("not an op");
  const OpDef* def = def_of(op);
  if (!def) return fail("unknown op '" + op.name() + "'");
  const std::size_t fixed = def->attrs.size() + result_children(*def);
  if (kids.size() < fixed) return fail(op.name() + ": too few children");
  const std::size_t nops = kids.size() - fixed;
  if (nops < static_cast<std::size_t>(def->min_inputs) ||
      (def->max_inputs >= 0 && nops > static_cast<std::size_t>(def->max_inputs)))
    return fail(op.name() + ": wrong number of operands");
  TensorNode t;
  t.def = def;
  for (std::size_t i = 0; i < nops; ++i) {
    EClassId c = g.find(kids[i]);
    if (data(c).kind == TensorInfo::Kind::Attr) {
      if (leaf_symbol(g, c) != TensorOps::get().none)
        return fail(op.name() + ": operand " + std::to_string(i) + " is not a tensor");
      t.operands.emplace_back(std::nullopt);
    } else {
      t.operands.emplace_back(c);
    }
  }
  std::string bad;
  auto attrs = attrs_of(g, *def, kids.subspan(nops, def->attrs.size()), &bad);
  if (!attrs) return fail(op.name() + ": " + bad);
  t.attrs = std::move(*attrs);
  if (result_children(*def)) {
    auto idx = g.literal(g.find(kids[kids.size() - 2])), cnt = g.literal(g.find(kids.back()));
    if (!idx || !cnt || idx->kind() != OpKind::Int || cnt->kind() != OpKind::Int)
      return fail(op.name() + ": result index");
    auto i = idx->number()->as_int(), k = cnt->number()->as_int();
    if (k < 1 || i < 0 || i >= k) return fail(op.name() + ": result index out of range");
    t.result = static_cast<std::size_t>(i);
    t.num_results = static_cast<std::size_t>(k);
  }
  return t;
}

bool TensorAnalysis::admits(const EGraph& g, Op op, std::span<const EClassId> kids) const {
  if (op.is_literal() || kids.empty()) return true;
  const OpDef* def = def_of(op);
  if (!def || !def->admits) return true;
  auto node = decode(g, op, kids);
  if (!node) return true;  // (adding it says why it is ill-formed)
  std::vector<ir::TypedInput> ins;
  for (const std::optional<EClassId>& c : node->operands) {
    if (!c) {
      ins.push_back(ir::TypedInput{{}, nullptr, false});
      continue;
    }
    const TensorInfo& d = data(g.find(*c));
    if (d.kind != TensorInfo::Kind::Tensor) return true;
    ins.push_back(ir::TypedInput{d.type, d.value.get(), true});
  }
  return def->admits(node->attrs, ins);
}

TensorInfo TensorAnalysis::make_data(const EGraph& g, NodeId n) const {
  TensorInfo info;
  const Op op = g.op(n);
  auto kids = g.children(n);
  if (op.is_literal() || kids.empty()) return info;  // an attribute literal or symbol
  const TensorOps& lang = TensorOps::get();
  if (op == lang.input || op == lang.constant) {
    auto name = kids.size() == 1 ? leaf_symbol(g, kids[0]) : std::nullopt;
    info.kind = TensorInfo::Kind::Invalid;
    if (!name) {
      info.error = op.name() + " needs a symbol child";
      return info;
    }
    if (op == lang.input) {
      const ir::ValueType* t = input_type(name->name());
      if (!t) {
        info.error = "no graph input named '" + name->name() + "'";
        return info;
      }
      info.kind = TensorInfo::Kind::Tensor;
      info.type = *t;
      return info;
    }
    const Tensor* v = constants_.find(*name);
    if (!v) {
      info.error = "no constant " + name->name();
      return info;
    }
    info.kind = TensorInfo::Kind::Tensor;
    info.constant = true;
    info.type = {v->dtype(), ir::shape_of(v->dims())};
    if (v->numel() <= ConstantPool::kSmall) {
      info.value = std::make_shared<const Tensor>(*v);
    } else {
      bool same = true;
      const double first = v->at(0);
      for (std::size_t i = 1; i < v->numel() && same; ++i) same = v->at(i) == first;
      if (same) info.uniform = first;
    }
    return info;
  }
  std::string why;
  auto node = decode(g, n, &why);
  info.kind = TensorInfo::Kind::Invalid;
  if (!node) {
    info.error = why;
    return info;
  }
  std::vector<ir::TypedInput> ins;
  bool constant = true, values = true;
  for (std::size_t i = 0; i < node->operands.size(); ++i) {
    if (!node->operands[i]) {
      ins.push_back(ir::TypedInput{{}, nullptr, false});
      continue;
    }
    const TensorInfo& c = data(*node->operands[i]);
    if (c.kind != TensorInfo::Kind::Tensor) {
      info.error = op.name() + ": operand " + std::to_string(i) + " is ill-typed";
      return info;
    }
    constant &= c.constant;
    values &= c.value != nullptr;
    ins.push_back(ir::TypedInput{c.type, c.value.get(), true});
  }
  try {
    auto outs = node->def->infer(node->attrs, ins, node->num_results);
    if (node->result >= outs.size()) {
      info.error = op.name() + ": no result " + std::to_string(node->result);
      return info;
    }
    info.type = outs[node->result];
    info.kind = TensorInfo::Kind::Tensor;
    info.constant = constant;
    if (constant && values && static_numel(info.type.shape) <= ConstantPool::kSmall) {
      std::vector<Tensor> args;
      auto given = std::make_unique<bool[]>(ins.size() + 1);
      for (std::size_t i = 0; i < ins.size(); ++i) {
        given[i] = ins[i].present;
        args.push_back(ins[i].present ? *ins[i].value : Tensor());
      }
      auto res = node->def->eval(node->attrs, args, std::span<const bool>(given.get(), ins.size()), node->num_results);
      if (node->result < res.size()) info.value = std::make_shared<const Tensor>(std::move(res[node->result]));
    }
  } catch (const ir::ShapeError& e) {
    info.kind = TensorInfo::Kind::Invalid;
    info.error = op.name() + ": " + e.message;
  }
  return info;
}

egraph::DidMerge TensorAnalysis::merge_data(TensorInfo& into, const TensorInfo& from) {
  using K = TensorInfo::Kind;
  auto conflict = [&](const std::string& what) {
    if (!conflict_) conflict_ = context_ + ": " + what;
  };
  if (into.kind != from.kind) {
    if (into.kind == K::Invalid || from.kind == K::Invalid) {
      const TensorInfo& bad = into.kind == K::Invalid ? into : from;
      conflict("made an ill-typed node equal to a well-typed one (" + bad.error + ")");
    } else {
      conflict("merged a tensor with an attribute literal");
    }
    if (into.kind == K::Invalid || (into.kind == K::Attr && from.kind == K::Tensor)) {
      into = from;
      return {true, false};
    }
    return {false, true};
  }
  if (into.kind != K::Tensor) return {false, false};
  if (into.type.dtype != from.type.dtype || into.type.shape != from.type.shape)
    conflict("merged tensors of different types: " + std::string(ir::dtype_name(into.type.dtype)) +
             ir::to_string(into.type.shape) + " and " + ir::dtype_name(from.type.dtype) +
             ir::to_string(from.type.shape));
  egraph::DidMerge d;
  if (from.constant && !into.constant) into.constant = d.into_changed = true;
  if (!from.constant && into.constant) d.from_changed = true;
  if (from.value && !into.value) {
    into.value = from.value;
    d.into_changed = true;
  }
  if (!from.value && into.value) d.from_changed = true;
  if (from.uniform && !into.uniform) {
    into.uniform = from.uniform;
    d.into_changed = true;
  }
  if (!from.uniform && into.uniform) d.from_changed = true;
  return d;
}

// ---------------------------------------------------------------- ir <-> e-graph

namespace {

Op encode_attr(const AttrValue& v, ConstantPool& pool) {
  if (auto* i = std::get_if<std::int64_t>(&v)) return Op::integer(*i);
  if (auto* d = std::get_if<double>(&v)) return Op::real(*d);
  if (auto* s = std::get_if<std::string>(&v)) return Op::symbol(*s);
  if (auto* l = std::get_if<std::vector<std::int64_t>>(&v)) {
    std::vector<Number> n(l->begin(), l->end());
    return Op::list(n);
  }
  if (auto* l = std::get_if<std::vector<double>>(&v)) {
    std::vector<Number> n(l->begin(), l->end());
    return Op::list(n);
  }
  return pool.intern(std::get<Tensor>(v));
}

}  // namespace

Expected<TensorEGraph> to_egraph(const ir::Graph& g, bool explain) {
  auto fail = [&](const std::string& msg) { return Diagnostic{SourceLoc{g.source, 0, 0}, msg}; };
  auto types = ir::infer_types(g);
  if (!types) return types.error();
  TensorEGraph t;
  if (explain) t.graph.enable_explanations();
  t.analysis = &t.graph.add_analysis<TensorAnalysis>();
  // Everything but the nodes and the weights (which the pool holds).
  t.source.name = g.name;
  t.source.source = g.source;
  t.source.inputs = g.inputs;
  t.source.outputs = g.outputs;
  t.source.bound_inputs = g.bound_inputs;
  t.source.declared_inputs = g.declared_inputs;
  EGraph& e = t.graph;
  TensorAnalysis& an = *t.analysis;
  const TensorOps& lang = TensorOps::get();
  std::map<std::string, EClassId> value;
  for (const ir::GraphValue& in : g.inputs) {
    an.declare_input(in.name, in.type);
    value[in.name] = e.add(lang.input, {e.add(Op::symbol(in.name))});
  }
  for (const auto& [name, tensor] : g.initializers) {
    Op h = an.constants().intern(tensor, name);
    value[name] = e.add(lang.constant, {e.add(h)});
  }
  for (const ir::Node& n : g.nodes) {
    const OpDef* def = OpRegistry::get().find(n.op);
    if (!def) return fail(ir::describe(n) + ": unknown op '" + n.op + "'");
    for (const auto& [key, v] : n.attrs.all()) {
      (void)v;
      if (std::none_of(def->attrs.begin(), def->attrs.end(), [&](const AttrSpec& s) { return s.name == key; }))
        return fail(ir::describe(n) + ": attribute '" + key + "' is not part of the e-graph form of '" + n.op + "'");
    }
    std::vector<EClassId> kids;
    // Omitted optional operands (trailing ones too) are none, so every
    // node of an op with a fixed operand count has one form.
    std::vector<std::string> operands = n.inputs;
    if (def->max_inputs >= 0 && operands.size() < static_cast<std::size_t>(def->max_inputs))
      operands.resize(static_cast<std::size_t>(def->max_inputs));
    for (const std::string& in : operands) {
      if (in.empty()) {
        kids.push_back(e.add(lang.none));
        continue;
      }
      auto it = value.find(in);
      if (it == value.end()) return fail(ir::describe(n) + ": operand '" + in + "' is not defined");
      kids.push_back(it->second);
    }
    if (n.op == "const") {  // a Constant node: the same as an initializer
      const Tensor* v = n.attrs.tensor("value");
      if (!v) return fail(ir::describe(n) + ": const without a value");
      value[n.outputs.at(0)] = e.add(lang.constant, {e.add(an.constants().intern(*v, n.outputs.at(0)))});
      continue;
    }
    for (const AttrSpec& spec : def->attrs) {
      auto it = n.attrs.all().find(spec.name);
      if (it != n.attrs.all().end())
        kids.push_back(e.add(encode_attr(it->second, an.constants())));
      else if (spec.fallback)
        kids.push_back(e.add(encode_attr(*spec.fallback, an.constants())));
      else if (spec.type == AttrType::Ints || spec.type == AttrType::Reals)
        kids.push_back(e.add(Op::list({})));
      else
        kids.push_back(e.add(lang.none));
    }
    const std::size_t k = n.outputs.size();
    for (std::size_t r = 0; r < k; ++r) {
      if (n.outputs[r].empty()) continue;
      std::vector<EClassId> all = kids;
      if (result_children(*def)) {
        all.push_back(e.add(Op::integer(static_cast<std::int64_t>(r))));
        all.push_back(e.add(Op::integer(static_cast<std::int64_t>(k))));
      }
      value[n.outputs[r]] = e.add(Op::symbol(n.op), all);
      if (auto id = e.lookup_node(Op::symbol(n.op), all))  // (the first of equal nodes names it)
        t.imported.try_emplace(id->v, ImportedNode{n.name, n.source_op, n.outputs[r]});
    }
  }
  e.rebuild();
  for (const std::string& o : g.outputs) {
    auto it = value.find(o);
    if (it == value.end()) return fail("graph output '" + o + "' is not defined");
    const TensorInfo& info = an.data(e.find(it->second));
    if (info.kind != TensorInfo::Kind::Tensor)
      return fail("graph output '" + o + "' does not type-check in the e-graph: " + info.error);
    t.outputs.push_back(e.find(it->second));
  }
  if (an.conflict()) return fail("internal: " + *an.conflict());
  an.set_context("saturation");
  return t;
}

Expected<ir::Graph> from_egraph(const TensorEGraph& t, const Choice& choice) {
  const EGraph& e = t.graph;
  const TensorAnalysis& an = *t.analysis;
  const TensorOps& lang = TensorOps::get();
  ir::Graph out = t.source;
  std::map<std::uint32_t, std::string> name_of;  // class -> value name
  std::set<std::string> produced;                // values computed by a node here
  // Names given so far, the inputs' and outputs' (kept) and those of the
  // source's nodes' values (kept where their node is chosen): a value the
  // rebuilt graph names itself never takes one of them, though the source
  // may name its values as this function does ("v4": such a clash wired the
  // wrong value to an output).
  std::set<std::string> taken;
  for (const ir::GraphValue& in : out.inputs) taken.insert(in.name);
  for (const std::string& o : t.source.outputs) taken.insert(o);
  for (const auto& [id, origin] : t.imported) taken.insert(origin.value);
  std::set<std::string> given;  // source value names used
  auto fresh = [&](const std::string& base) {
    std::string name = base;
    for (int k = 2; taken.count(name); ++k) name = base + "_" + std::to_string(k);
    taken.insert(name);
    return name;
  };
  auto is_input = [&](const std::string& name) {
    return std::any_of(out.inputs.begin(), out.inputs.end(), [&](const ir::GraphValue& in) { return in.name == name; });
  };
  // Multi-result nodes: one ir node per (op, children but the result index).
  std::map<std::pair<std::uint32_t, std::vector<std::uint32_t>>, std::size_t> groups;
  std::string error;

  // The chosen classes the outputs need, numbered as first reached (each
  // output in turn, then operands in order), with their decoded nodes; then
  // emitted children first in Boost.Graph's depth-first order, which is the
  // order a recursive walk from the outputs would emit them in.
  std::vector<std::uint32_t> classes;                // vertex -> class
  std::map<std::uint32_t, std::uint32_t> vertex_of;  // class -> vertex
  std::vector<std::optional<TensorNode>> decoded;    // per vertex; none for inputs and constants
  std::vector<std::vector<std::uint32_t>> needs;     // per vertex: operand vertices
  auto reach = [&](EClassId c) {
    c = e.find(c);
    auto [it, fresh] = vertex_of.emplace(c.v, static_cast<std::uint32_t>(classes.size()));
    if (fresh) {
      classes.push_back(c.v);
      decoded.emplace_back();
      needs.emplace_back();
    }
    return it->second;
  };
  std::vector<std::uint32_t> starts;
  std::uint32_t next = 0;  // vertices below were decoded
  for (EClassId o : t.outputs) {
    starts.push_back(reach(o));
    for (; next < classes.size() && error.empty(); ++next) {
      const std::uint32_t v = next;
      const EClassId c{classes[v]};
      const NodeId n = choice(c);
      const Op op = e.op(n);
      if (op == lang.input || op == lang.constant) continue;
      std::string why;
      auto node = an.decode(e, n, &why);
      if (!node) {
        error = "e-class " + std::to_string(c.v) + ": " + why;
        break;
      }
      for (const auto& operand : node->operands) {
        if (!operand) continue;
        const std::uint32_t w = reach(*operand);  // may grow `needs`: index it after
        needs[v].push_back(w);
      }
      decoded[v] = std::move(node);
    }
  }
  if (!error.empty()) return Diagnostic{SourceLoc{t.source.source, 0, 0}, error};
  const ir::DependencyOrder order = ir::dependency_order(needs, starts);
  if (order.cycle_at)
    return Diagnostic{SourceLoc{t.source.source, 0, 0},
                      "the chosen nodes form a cycle through e-class " + std::to_string(classes[*order.cycle_at])};

  auto emit = [&](std::uint32_t v) {
    const EClassId c{classes[v]};
    NodeId n = choice(c);
    const Op op = e.op(n);
    std::string name;
    if (op == lang.input) {
      name = leaf_symbol(e, e.children(n)[0])->name();
    } else if (op == lang.constant) {
      Op h = *leaf_symbol(e, e.children(n)[0]);
      name = an.constants().name_of(h);
      // An initializer keeps its name unless a node's value or an input
      // (which a constant never shadows) has it. (An output of that name is
      // this constant: names are unique in the source.)
      if (name.empty() || is_input(name) || produced.count(name) ||
          (out.initializers.count(name) && out.initializers.at(name).nbytes() != an.constants().find(h)->nbytes()))
        name = fresh("c" + std::to_string(c.v));
      else
        taken.insert(name);
      out.initializers.emplace(name, *an.constants().find(h));
    } else {
      const TensorNode& node = *decoded[v];
      std::vector<std::string> ins;
      for (const auto& o : node.operands) ins.push_back(o ? name_of.at(e.find(*o).v) : std::string());
      while (!ins.empty() && ins.back().empty()) ins.pop_back();
      // A node of the source keeps its names and its value's (once).
      auto origin = t.imported.find(n.v);
      if (origin != t.imported.end() && !given.insert(origin->second.value).second) origin = t.imported.end();
      name = origin != t.imported.end() ? origin->second.value : fresh("v" + std::to_string(c.v));
      const std::string node_name =
          origin != t.imported.end() && !origin->second.name.empty() ? origin->second.name : name;
      const std::string source_op = origin != t.imported.end() ? origin->second.source_op : std::string();
      if (node.num_results > 1) {
        std::vector<std::uint32_t> key;
        auto kids = e.children(n);
        for (std::size_t i = 0; i + 2 < kids.size(); ++i) key.push_back(e.find(kids[i]).v);
        auto [it, first] = groups.emplace(std::make_pair(e.op(n).id, key), out.nodes.size());
        if (first) {
          ir::Node nn{node_name,  node.def->name, ins, std::vector<std::string>(node.num_results),
                      node.attrs, source_op};
          out.nodes.push_back(std::move(nn));
        }
        out.nodes[it->second].outputs[node.result] = name;
      } else {
        out.nodes.push_back(ir::Node{node_name, node.def->name, ins, {name}, node.attrs, source_op});
      }
      produced.insert(name);
    }
    name_of[c.v] = name;
  };
  for (std::uint32_t v : order.order) emit(v);

  std::vector<std::string> results;
  for (EClassId o : t.outputs) results.push_back(name_of.at(e.find(o).v));
  // Outputs keep their names: rename the producing node's result, or copy.
  // Values already under an output's name (an input, an initializer, a
  // source node's result) keep it, so they are settled first; an output
  // listed twice needs nothing more.
  std::map<std::string, std::string> rename;
  std::set<std::string> named;
  for (std::size_t i = 0; i < results.size(); ++i)
    if (results[i] == t.source.outputs[i]) {
      rename.emplace(results[i], results[i]);
      named.insert(results[i]);
    }
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::string& want = t.source.outputs[i];
    const std::string& have = results[i];
    if (!named.insert(want).second) continue;
    if (produced.count(have) && !rename.count(have)) {
      rename[have] = want;
    } else {
      out.nodes.push_back(ir::Node{want, "identity", {have}, {want}, {}, {}});
    }
  }
  for (ir::Node& n : out.nodes) {
    for (std::string& s : n.inputs)
      if (auto it = rename.find(s); it != rename.end()) s = it->second;
    for (std::string& s : n.outputs)
      if (auto it = rename.find(s); it != rename.end()) s = it->second;
  }
  // Identity copies made above read the renamed values too.
  auto folded = fold_constant_nodes(std::move(out));
  if (!folded) return folded.error();
  return std::move(*folded);
}

Expected<ir::Graph> fold_constant_nodes(ir::Graph g) {
  std::vector<ir::Node> kept;
  for (ir::Node& n : g.nodes) {
    const OpDef* def = OpRegistry::get().find(n.op);
    bool all = def != nullptr;
    std::size_t in_elems = 0;
    for (const std::string& i : n.inputs) {
      if (i.empty()) continue;
      auto it = g.initializers.find(i);
      if (it == g.initializers.end()) {
        all = false;
        break;
      }
      in_elems += it->second.numel();
    }
    if (!all) {
      kept.push_back(std::move(n));
      continue;
    }
    std::vector<Tensor> args;
    auto given = std::make_unique<bool[]>(n.inputs.size() + 1);
    for (std::size_t k = 0; k < n.inputs.size(); ++k) {
      given[k] = !n.inputs[k].empty();
      args.push_back(given[k] ? g.initializers.at(n.inputs[k]) : Tensor());
    }
    try {
      auto res = def->eval(n.attrs, args, std::span<const bool>(given.get(), n.inputs.size()), n.outputs.size());
      std::size_t out_elems = 0;
      for (const Tensor& r : res) out_elems += r.numel();
      // Materializing a broadcast of a small constant would cost memory,
      // not time: leave such nodes to run (see CostModel::is_folded).
      if (out_elems > 2 * in_elems + 4096) {
        kept.push_back(std::move(n));
        continue;
      }
      for (std::size_t k = 0; k < n.outputs.size() && k < res.size(); ++k)
        if (!n.outputs[k].empty()) g.initializers[n.outputs[k]] = std::move(res[k]);
    } catch (const ir::ShapeError& e) {
      return Diagnostic{SourceLoc{g.source, 0, 0}, ir::describe(n) + ": " + e.message};
    }
  }
  g.nodes = std::move(kept);
  // Initializers nothing reads any more are dropped.
  std::set<std::string> used(g.outputs.begin(), g.outputs.end());
  for (const ir::Node& n : g.nodes) used.insert(n.inputs.begin(), n.inputs.end());
  for (auto it = g.initializers.begin(); it != g.initializers.end();)
    it = used.count(it->first) ? std::next(it) : g.initializers.erase(it);
  return g;
}

}  // namespace saturn::rules
