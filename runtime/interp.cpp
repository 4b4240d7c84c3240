#include "runtime/interp.hpp"

#include <map>
#include <memory>
#include <new>

namespace saturn::runtime {

using ir::Tensor;

Expected<std::vector<Tensor>> interpret(const ir::Graph& g, std::span<const Tensor> inputs) {
  auto fail = [&](const std::string& msg) { return Diagnostic{SourceLoc{g.source, 0, 0}, msg}; };
  if (inputs.size() != g.inputs.size())
    return fail("the model takes " + std::to_string(g.inputs.size()) + " inputs, given " +
                std::to_string(inputs.size()));
  std::map<std::string, Tensor> values;
  std::map<std::string, std::int64_t> symbols;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ir::GraphValue& decl = g.inputs[i];
    const Tensor& t = inputs[i];
    std::string what = "input " + std::to_string(i) + " ('" + decl.name + "')";
    if (t.dtype() != decl.type.dtype)
      return fail(what + " is " + ir::dtype_name(t.dtype()) + ", the model expects " + ir::dtype_name(decl.type.dtype));
    if (t.rank() != decl.type.shape.size())
      return fail(what + " has shape " + t.summary() + ", the model expects " + ir::to_string(decl.type.shape));
    for (std::size_t d = 0; d < t.rank(); ++d) {
      const ir::Dim& want = decl.type.shape[d];
      std::int64_t have = t.dims()[d];
      if (want.is_static()) {
        if (want.k != have)
          return fail(what + " has shape " + t.summary() + ", the model expects " + ir::to_string(decl.type.shape));
        continue;
      }
      if (want.c == 0 || (have - want.k) % want.c != 0)
        return fail(what + ": dimension " + std::to_string(d) + " = " + std::to_string(have) + " does not fit " +
                    want.to_string());
      std::int64_t v = (have - want.k) / want.c;
      auto [it, fresh] = symbols.emplace(want.sym, v);
      if (!fresh && it->second != v)
        return fail(what + ": symbol " + want.sym + " is " + std::to_string(it->second) + " elsewhere but " +
                    std::to_string(v) + " here");
    }
    values[decl.name] = t;
  }
  for (const auto& [name, t] : g.initializers) values[name] = t;

  // Only the nodes the outputs depend on run: a dead node's failure (an
  // integer division by zero) does not fail the run, as on the compiled
  // targets, which never emit it.
  const std::vector<bool> live = ir::live_nodes(g);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (!live[i]) continue;
    const ir::Node& n = g.nodes[i];
    const ir::OpDef* def = ir::OpRegistry::get().find(n.op);
    if (!def) return fail(ir::describe(n) + ": unknown op '" + n.op + "'");
    std::vector<Tensor> args;
    auto given = std::make_unique<bool[]>(n.inputs.size() + 1);
    for (std::size_t k = 0; k < n.inputs.size(); ++k) {
      given[k] = !n.inputs[k].empty();
      if (!given[k]) {
        args.emplace_back();
        continue;
      }
      auto it = values.find(n.inputs[k]);
      if (it == values.end()) return fail(ir::describe(n) + ": operand '" + n.inputs[k] + "' has no value");
      args.push_back(it->second);
    }
    try {
      auto res = def->eval(n.attrs, args, std::span<const bool>(given.get(), n.inputs.size()), n.outputs.size());
      for (std::size_t k = 0; k < n.outputs.size() && k < res.size(); ++k)
        if (!n.outputs[k].empty()) values[n.outputs[k]] = std::move(res[k]);
    } catch (const ir::ShapeError& e) {
      return fail(ir::describe(n) + ": " + e.message);
    } catch (const std::bad_alloc&) {
      return fail(ir::describe(n) + ": out of memory for its results");
    } catch (const std::exception& e) {
      return fail(ir::describe(n) + ": " + e.what());
    }
  }
  std::vector<Tensor> outs;
  for (const std::string& o : g.outputs) {
    auto it = values.find(o);
    if (it == values.end()) return fail("graph output '" + o + "' has no value");
    outs.push_back(it->second);
  }
  return outs;
}

}  // namespace saturn::runtime
