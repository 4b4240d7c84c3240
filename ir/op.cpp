#include "ir/op.hpp"

#include <algorithm>
#include <stdexcept>

namespace saturn::ir {

void shape_error(std::string message) { throw ShapeError{std::move(message)}; }

std::vector<std::int64_t> broadcast_dims(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b,
                                         const std::string& op) {
  auto s = broadcast(shape_of(a), shape_of(b));
  if (!s)
    shape_error(op + ": shapes " + to_string(shape_of(a)) + " and " + to_string(shape_of(b)) + " do not broadcast");
  return static_dims(*s);
}

namespace {
template <class T>
const T* get_as(const std::map<std::string, AttrValue>& m, const std::string& name) {
  auto it = m.find(name);
  if (it == m.end()) return nullptr;
  const T* v = std::get_if<T>(&it->second);
  if (!v) shape_error("attribute '" + name + "' has the wrong type");
  return v;
}
}  // namespace

std::int64_t Attrs::i(const std::string& name, std::int64_t fallback) const {
  auto it = m_.find(name);
  if (it == m_.end()) return fallback;
  if (auto* v = std::get_if<std::int64_t>(&it->second)) return *v;
  if (auto* d = std::get_if<double>(&it->second)) return static_cast<std::int64_t>(*d);
  shape_error("attribute '" + name + "' must be an integer");
}
double Attrs::f(const std::string& name, double fallback) const {
  auto it = m_.find(name);
  if (it == m_.end()) return fallback;
  if (auto* v = std::get_if<double>(&it->second)) return *v;
  if (auto* n = std::get_if<std::int64_t>(&it->second)) return static_cast<double>(*n);
  shape_error("attribute '" + name + "' must be a number");
}
std::string Attrs::s(const std::string& name, const std::string& fallback) const {
  auto* v = get_as<std::string>(m_, name);
  return v ? *v : fallback;
}
std::vector<std::int64_t> Attrs::ints(const std::string& name, std::vector<std::int64_t> fallback) const {
  auto* v = get_as<std::vector<std::int64_t>>(m_, name);
  return v ? *v : fallback;
}
std::vector<double> Attrs::floats(const std::string& name, std::vector<double> fallback) const {
  auto* v = get_as<std::vector<double>>(m_, name);
  return v ? *v : fallback;
}
const Tensor* Attrs::tensor(const std::string& name) const { return get_as<Tensor>(m_, name); }

const OpRegistry& OpRegistry::get() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_elementwise_ops(r);
    register_reduce_ops(r);
    register_movement_ops(r);
    register_nn_ops(r);
    register_quant_ops(r);
    register_library_ops(r);
    return r;
  }();
  return registry;
}

const OpDef* OpRegistry::find(const std::string& name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> out;
  for (auto& [_, d] : ops_) out.push_back(d.get());
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->name < b->name; });
  return out;
}

void OpRegistry::add(OpDef def) {
  std::string name = def.name;
  // Whatever the attributes ask for, a result never has a negative
  // dimension, and no shape rule sees fewer operands than it requires or
  // more than it takes (an importer calls these rules on whatever a file
  // holds): checked here once for every op.
  if (def.infer)
    def.infer = [infer = std::move(def.infer), name, lo = def.min_inputs, hi = def.max_inputs](
                    const Attrs& a, std::span<const TypedInput> in, std::size_t n) {
      const auto count = static_cast<int>(in.size());
      if (count < lo || (hi >= 0 && count > hi))
        shape_error(name + " takes " + std::to_string(lo) +
                    (hi < 0     ? " or more"
                     : hi == lo ? ""
                                : " to " + std::to_string(hi)) +
                    " operands, given " + std::to_string(count));
      for (int k = 0; k < lo; ++k)
        if (!in[static_cast<std::size_t>(k)].present)
          shape_error(name + ": operand " + std::to_string(k) + " is required, and absent");

      auto out = infer(a, in, n);
      for (const ValueType& t : out)
        for (const Dim& d : t.shape)
          if (d.is_static() && d.value() < 0)
            shape_error(name + ": the result would have a negative dimension " + to_string(t.shape));
      for (const ValueType& t : out)
        if (!checked_static_numel(t.shape))
          shape_error(name + ": the result " + to_string(t.shape) + " would have more than 2^48 elements");
      return out;
    };
  auto& row = ops_[name] = std::make_unique<OpDef>(std::move(def));
  // Types that only store values reach only the ops that move them (read
  // when called: declare_view comes after add).
  if (row->infer)
    row->infer = [infer = std::move(row->infer), self = row.get()](const Attrs& a, std::span<const TypedInput> in,
                                                                   std::size_t n) {
      if (!self->moves_values && !self->view)
        for (const TypedInput& t : in)
          if (t.present && stores_only(t.type.dtype))
            shape_error(self->name + " does not take " + dtype_name(t.type.dtype) +
                        " operands: that type only stores values (cast it to compute)");
      return infer(a, in, n);
    };
}

void OpRegistry::declare_attrs(const std::string& op, std::vector<AttrSpec> attrs) {
  auto it = ops_.find(op);
  if (it == ops_.end()) throw std::logic_error("declare_attrs: unknown op " + op);
  // String attributes with a fixed set of values are checked by the op's
  // shape rule (wrapped here, for the few ops that have one).
  std::vector<AttrSpec> closed;
  for (const AttrSpec& spec : attrs)
    if (!spec.choices.empty()) closed.push_back(spec);
  if (!closed.empty() && it->second->infer)
    it->second->infer = [infer = std::move(it->second->infer), closed, op](
                            const Attrs& a, std::span<const TypedInput> in, std::size_t n) {
      for (const AttrSpec& spec : closed) {
        if (!a.has(spec.name)) continue;
        const std::string v = a.s(spec.name, "");
        if (std::find(spec.choices.begin(), spec.choices.end(), v) != spec.choices.end()) continue;
        std::string known;
        for (const auto& ch : spec.choices) known += (known.empty() ? "" : ", ") + ch;
        shape_error(op + ": " + spec.name + " '" + v + "' is not one of " + known);
      }
      return infer(a, in, n);
    };
  it->second->attrs = std::move(attrs);
}

void OpRegistry::declare_work(const std::string& op, decltype(OpDef::flops) work) {
  auto it = ops_.find(op);
  if (it == ops_.end()) throw std::logic_error("declare_work: unknown op " + op);
  it->second->flops = std::move(work);
}

void OpRegistry::declare_unit_work(const std::string& op, double ops_per_element) {
  auto it = ops_.find(op);
  if (it == ops_.end()) throw std::logic_error("declare_unit_work: unknown op " + op);
  it->second->unit_work = ops_per_element;
}

void OpRegistry::declare_view(const std::string& op) {
  auto it = ops_.find(op);
  if (it == ops_.end()) throw std::logic_error("declare_view: unknown op " + op);
  it->second->view = true;
}

double work_of(const OpDef& def, const Attrs& a, std::span<const ValueType> in, std::span<const ValueType> out) {
  for (const ValueType& t : in)
    if (!is_static(t.shape)) return 0;
  for (const ValueType& t : out)
    if (!is_static(t.shape)) return 0;
  if (def.flops) return def.flops(a, in, out);
  double most = 0;
  for (const ValueType& t : in) most = std::max(most, static_cast<double>(numel(static_dims(t.shape))));
  for (const ValueType& t : out) most = std::max(most, static_cast<double>(numel(static_dims(t.shape))));
  return most;
}

std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank)
    shape_error(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<std::int64_t> static_shape(const TypedInput& in, const char* what) {
  if (!is_static(in.type.shape))
    shape_error(std::string(what) + " needs a static shape, got " + to_string(in.type.shape));
  return static_dims(in.type.shape);
}

std::vector<std::int64_t> unflatten(std::int64_t i, const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> c(dims.size());
  for (std::size_t d = dims.size(); d-- > 0;) {
    c[d] = dims[d] ? i % dims[d] : 0;
    i = dims[d] ? i / dims[d] : 0;
  }
  return c;
}

}  // namespace saturn::ir
