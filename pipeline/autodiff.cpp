#include "pipeline/autodiff.hpp"

#include <algorithm>
#include <set>

#include "pipeline/grad_eval.hpp"

namespace saturn::pipeline {

namespace {

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
      nodes.push_back(ir::Node{
          prefix + n.outputs[k], "identity", {rename.count(from) ? rename.at(from) : from}, {n.outputs[k]}, {}, n.op});
    }
  g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(index));
  g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(index), nodes.begin(), nodes.end());
}

// The values that depend on wrt through ops that pass a gradient (the
// floating-point ones), and the values the loss depends on: a node is
// differentiated when it reads the first and writes the second.
struct GradientPath {
  std::set<std::string> depends, needed;
  bool through(const ir::Node& n) const {
    return std::any_of(n.inputs.begin(), n.inputs.end(), [&](const std::string& v) { return depends.count(v); }) &&
           std::any_of(n.outputs.begin(), n.outputs.end(), [&](const std::string& v) { return needed.count(v); });
  }
};
GradientPath gradient_path(const ir::Graph& g, const std::map<std::string, ir::ValueType>& types,
                           const rules::GradRules& rules, const std::string& loss,
                           const std::vector<std::string>& wrt) {
  GradientPath p;
  p.depends.insert(wrt.begin(), wrt.end());
  for (const ir::Node& n : g.nodes) {
    if (rules.find_zerograd(n.op)) continue;
    if (std::none_of(n.inputs.begin(), n.inputs.end(), [&](const std::string& v) { return p.depends.count(v); }))
      continue;
    for (const std::string& o : n.outputs)
      if (!o.empty() && ir::is_float(types.at(o).dtype)) p.depends.insert(o);
  }
  p.needed.insert(loss);
  for (std::size_t i = g.nodes.size(); i-- > 0;) {
    const ir::Node& n = g.nodes[i];
    if (std::any_of(n.outputs.begin(), n.outputs.end(), [&](const std::string& v) { return p.needed.count(v); }))
      p.needed.insert(n.inputs.begin(), n.inputs.end());
  }
  return p;
}

// Replaces each node between wrt and the loss whose op has no gradient rule
// by its primitive form; what it replaced goes to `decomposed`.
Expected<bool> decompose_composites(ir::Graph& g, const rules::GradRules& rules, const Decomposer& d,
                                    const std::string& loss, const std::vector<std::string>& wrt,
                                    const std::string& prefix, std::vector<std::string>& decomposed) {
  auto types = ir::infer_types(g);
  if (!types) return types.error();
  const GradientPath path = gradient_path(g, *types, rules, loss, wrt);
  std::vector<std::size_t> targets;
  for (std::size_t i = g.nodes.size(); i-- > 0;) {
    const ir::Node& n = g.nodes[i];
    if (path.through(n) && !rules.find(n.op) && !rules.find_zerograd(n.op) && !rules.find_nograd(n.op))
      targets.push_back(i);
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

}  // namespace

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

  const std::size_t forward_nodes = g.nodes.size();
  const GradientPath path = gradient_path(g, types, rules, loss, wrt);
  const std::set<std::string>& depends = path.depends;
  const std::set<std::string>& needed = path.needed;

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
      const rules::GradDef* def = rules.find(n.op);
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
        GradInstance inst(*def, n, b);
        std::vector<TensorRef> operands;
        for (const std::string& v : n.inputs) operands.push_back(TensorRef{v, v.empty() ? ir::ValueType{} : types[v]});
        // Bind the pattern: positional operands, the rest as a list.
        std::size_t fixed = def->operands.size() - (def->variadic_operands ? 1 : 0);
        for (std::size_t k = 0; k < fixed; ++k)
          inst.bind(def->operands[k],
                    k < operands.size() && !operands[k].name.empty() ? GradValue(operands[k]) : GradValue(NoneValue{}));
        if (def->variadic_operands)
          inst.bind(
              def->operands.back(),
              std::vector<TensorRef>(operands.begin() + static_cast<std::ptrdiff_t>(std::min(fixed, operands.size())),
                                     operands.end()));
        std::vector<TensorRef> results, incoming;
        for (const std::string& o : n.outputs) {
          results.push_back(TensorRef{o, types[o]});
          std::optional<TensorRef> d = depends.count(o) ? total(o) : std::nullopt;
          incoming.push_back(d ? *d : b.filled(0.0, results.back()));
        }
        std::size_t rfixed = def->results.size() - (def->variadic_results ? 1 : 0);
        for (std::size_t k = 0; k < rfixed; ++k) {
          inst.bind(def->results[k], k < results.size() ? GradValue(results[k]) : GradValue(NoneValue{}));
          inst.bind(def->incoming[k], k < incoming.size() ? GradValue(incoming[k]) : GradValue(NoneValue{}));
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
          GradValue v = inst.eval(expr);
          std::vector<TensorRef> grads;
          if (variadic) {
            auto* l = std::get_if<std::vector<TensorRef>>(&v);
            if (!l || l->size() != operands.size() - fixed)
              throw DiagnosticError{Diagnostic{expr.loc, "the gradient of '" + var + "...' must be a list of " +
                                                             std::to_string(operands.size() - fixed) +
                                                             " tensors, got " + show(v)}};
            for (std::size_t k : targets) grads.push_back((*l)[k - fixed]);
          } else {
            auto* t = std::get_if<TensorRef>(&v);
            if (!t)
              throw DiagnosticError{
                  Diagnostic{expr.loc, "the gradient of '" + var + "' must be a tensor, got " + show(v)}};
            grads.push_back(*t);
          }
          for (std::size_t j = 0; j < targets.size(); ++j) {
            const TensorRef& op = operands[targets[j]];
            const TensorRef& d = grads[j];
            if (d.type.dtype != op.type.dtype || d.type.shape != op.type.shape)
              throw DiagnosticError{
                  Diagnostic{expr.loc, "the gradient of '" + var + "' is " + ir::dtype_name(d.type.dtype) +
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
            throw DiagnosticError{Diagnostic{def->loc, "(defgrad " + n.op + ") gives no gradient for operand " +
                                                           std::to_string(k) + " ('" + n.inputs[k] +
                                                           "'), which is differentiated"}};
        }
      } catch (const DiagnosticError& e) {
        Diagnostic d = e.diag;
        d.message += " (differentiating " + ir::describe(n) + ")";
        return d;
      }
    }
  } catch (const BuildError& e) {
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
      } catch (const BuildError& e) {
        return Diagnostic{SourceLoc{g.source}, e.message};
      }
    }
    out.of[w] = d->name;
  }
  out.nodes_added = b.added();
  return out;
}

}  // namespace saturn::pipeline
