// GCC 12 warns falsely (maybe-uninitialized, in std::function inside
// std::regex's automaton) when this file's regexes are compiled with the
// sanitizers and optimization; the file's own code is not involved.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "rules/rule_instances.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <regex>
#include <set>

namespace saturn::rules {

using egraph::Number;
using egraph::Pattern;
using egraph::VarId;
using ir::AttrSpec;
using ir::AttrType;
using ir::OpDef;

namespace {

using Dims = std::vector<std::int64_t>;

// Every shape of rank 0..max_rank with dims in min_dim..max_dim, smallest
// first.
std::vector<Dims> all_shapes(int max_rank, int min_dim, int max_dim) {
  std::vector<Dims> out{{}};
  std::vector<Dims> level{{}};
  for (int r = 1; r <= max_rank; ++r) {
    std::vector<Dims> next;
    for (const Dims& s : level)
      for (int d = min_dim; d <= max_dim; ++d) {
        Dims t = s;
        t.push_back(d);
        next.push_back(std::move(t));
      }
    out.insert(out.end(), next.begin(), next.end());
    level = std::move(next);
  }
  return out;
}

// Every shape of rank 0..max_rank whose dims multiply to `total`, each dim
// at most max_dim but the last (so [total] is one); for 0, those of
// all_shapes with an empty dim. (Every factorization would cost time
// quadratic in `total` past --max-dim 8 --max-rank 6.)
std::vector<Dims> shapes_with_numel(std::int64_t total, int max_rank, int max_dim) {
  std::vector<Dims> out;
  if (total == 0) {
    for (Dims& s : all_shapes(max_rank, 0, max_dim))
      if (std::find(s.begin(), s.end(), 0) != s.end()) out.push_back(std::move(s));
    return out;
  }
  Dims cur;
  auto go = [&](auto& self, std::int64_t left) -> void {
    if (left == 1) out.push_back(cur);
    if (static_cast<int>(cur.size()) == max_rank) return;
    for (std::int64_t d = 1; d <= std::min<std::int64_t>(left, max_dim); ++d)
      if (left % d == 0) {
        cur.push_back(d);
        self(self, left / d);
        cur.pop_back();
      }
    if (left > max_dim) {
      cur.push_back(left);
      out.push_back(cur);
      cur.pop_back();
    }
  };
  if (total > 0) go(go, total);
  return out;
}

Op list_op(const std::vector<std::int64_t>& v) {
  std::vector<Number> n(v.begin(), v.end());
  return Op::list(n);
}

std::vector<std::vector<std::int64_t>> subsets(std::int64_t n) {
  std::vector<std::vector<std::int64_t>> out;
  for (std::int64_t mask = 1; mask < (std::int64_t{1} << n); ++mask) {
    std::vector<std::int64_t> s;
    for (std::int64_t i = 0; i < n; ++i)
      if (mask & (std::int64_t{1} << i)) s.push_back(i);
    out.push_back(std::move(s));
  }
  return out;
}

// Lists of length n over `values`.
std::vector<std::vector<std::int64_t>> tuples(std::size_t n, const std::vector<std::int64_t>& values) {
  std::vector<std::vector<std::int64_t>> out{{}};
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::vector<std::int64_t>> next;
    for (const auto& t : out)
      for (auto v : values) {
        auto u = t;
        u.push_back(v);
        next.push_back(std::move(u));
      }
    out = std::move(next);
  }
  return out;
}

// The values an attribute ranges over, given the op's operands. Domains are
// what makes the op well-typed and a few more (negative axes, the default,
// values the shape rules reject), so guards and shape rules are exercised.
// Reals are dyadic (exact in float32), so that a constant made from them by
// (scalar ...) is the same number on both sides.
std::vector<Op> attribute_domain(const OpDef& def, const AttrSpec& spec, const std::vector<const TensorInfo*>& operands,
                                 const InstanceOptions& opt) {
  const TensorOps& lang = TensorOps::get();
  const ir::Shape* shape = !operands.empty() && operands[0] ? &operands[0]->type.shape : nullptr;
  const auto rank = shape ? static_cast<std::int64_t>(shape->size()) : 0;
  Dims dims = shape && ir::is_static(*shape) ? ir::static_dims(*shape) : Dims{};
  const std::string& n = spec.name;
  std::vector<Op> out;
  auto ints = [&](const std::vector<std::vector<std::int64_t>>& ls) {
    for (const auto& l : ls) out.push_back(list_op(l));
  };
  switch (spec.type) {
    case AttrType::Int:
      if (n == "axis") {
        for (std::int64_t a = -1; a <= rank; ++a) out.push_back(Op::integer(a));
      } else if (n == "group") {
        for (std::int64_t g : {1, 2, 3}) out.push_back(Op::integer(g));
      } else if (n == "blocksize") {  // pixel shuffles: 1 moves nothing
        for (std::int64_t b : {1, 2, 0}) out.push_back(Op::integer(b));
      } else {  // flags: keepdims, allowzero, transA, ceil_mode, ...
        out.push_back(Op::integer(0));
        out.push_back(Op::integer(1));
      }
      return out;
    case AttrType::Real:
      // A pad's value: zero too, the padding convolutions and pools add
      // themselves (views.rules' pad-into-conv).
      if (def.name == "pad" && n == "value") out.push_back(Op::real(0.0));
      for (double v : {0.5, 0.25, 1.5}) out.push_back(Op::real(v));
      return out;
    case AttrType::String:
      if (n == "auto_pad") {
        for (const char* s : {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"}) out.push_back(Op::symbol(s));
      } else if (n == "equation") {  // einsum: the common forms; the shape rule keeps those that fit
        for (const char* e :
             {"ij->ji", "ij->i", "ij->", "ijk->kj", "ij,jk->ik", "ij,jk", "bij,bjk->bik", "bid,bjd->bij", "i,j->ij",
              "i,i->", "ij,ij->ij", "ij,j->i", "...ij,...jk->...ik", "ij,jk,kl->il", "i,i,i->i", "ii->i"})
          out.push_back(Op::symbol(e));
      } else if (n == "approximate") {
        out.push_back(Op::symbol("none"));
        out.push_back(Op::symbol("tanh"));
      } else if (spec.fallback) {
        out.push_back(Op::symbol(std::get<std::string>(*spec.fallback)));
      } else {
        out.push_back(lang.none);
      }
      return out;
    case AttrType::Reals:
      out.push_back(Op::list({}));
      out.push_back(Op::list(std::vector<Number>{Number(0.5)}));
      return out;
    case AttrType::Tensor:
      return out;
    case AttrType::Ints:
      break;
  }
  const std::string key = def.name + "." + n;
  const auto spatial = static_cast<std::size_t>(std::max<std::int64_t>(rank - 2, 0));
  out.push_back(Op::list({}));  // absent: the op's default
  if (n == "perm") {
    Dims p(static_cast<std::size_t>(rank));
    std::iota(p.begin(), p.end(), 0);
    do out.push_back(list_op(p));
    while (std::next_permutation(p.begin(), p.end()));
  } else if (key == "squeeze.axes") {
    std::vector<std::int64_t> ones;
    for (std::size_t d = 0; d < dims.size(); ++d)
      if (dims[d] == 1) ones.push_back(static_cast<std::int64_t>(d));
    for (const auto& s : subsets(static_cast<std::int64_t>(ones.size()))) {
      Dims a;
      for (auto i : s) a.push_back(ones[static_cast<std::size_t>(i)]);
      out.push_back(list_op(a));
    }
    out.push_back(list_op({-1}));
  } else if (key == "unsqueeze.axes") {
    for (std::int64_t k = 1; rank + k <= opt.max_rank; ++k)
      for (const auto& s : subsets(rank + k))
        if (static_cast<std::int64_t>(s.size()) == k) out.push_back(list_op(s));
    out.push_back(list_op({-1}));
  } else if (n == "axes" && (def.name == "slice")) {
    for (std::int64_t a = -1; a < rank; ++a) out.push_back(list_op({a}));
    if (rank >= 2) out.push_back(list_op({0, 1}));
  } else if (n == "axes") {
    ints(subsets(rank));
    out.push_back(list_op({-1}));
  } else if (n == "starts") {
    for (std::int64_t s : {0, 1, -2}) out.push_back(list_op({s}));
    out.push_back(list_op({0, 1}));
  } else if (n == "ends") {
    for (std::int64_t e : {1, 2, -1, 100}) out.push_back(list_op({e}));
    out.push_back(list_op({2, 3}));
  } else if (n == "steps") {
    for (std::int64_t s : {1, 2, -1}) out.push_back(list_op({s}));
    out.push_back(list_op({1, 1}));
  } else if (key == "reshape.shape") {
    const std::int64_t total = ir::numel(dims);
    for (const Dims& s : shapes_with_numel(total, opt.max_rank, opt.max_dim)) {
      out.push_back(list_op(s));
      if (s.empty()) continue;
      Dims m = s;  // -1: inferred
      m[0] = -1;
      out.push_back(list_op(m));
      if (!dims.empty() && s[0] == dims[0]) {  // 0: copied from the operand
        Dims z = s;
        z[0] = 0;
        out.push_back(list_op(z));
      }
    }
    // One axis split in two, which may pass max_rank by one: a view that
    // exposes groups ([N 2C H W] as [N 2 C H W], ShuffleNet's shuffle) has
    // one axis more than its operand.
    if (static_cast<int>(dims.size()) == opt.max_rank)
      for (std::size_t d = 0; d < dims.size(); ++d)
        for (std::int64_t p = 2; p < dims[d]; ++p)
          if (dims[d] % p == 0) {
            Dims s = dims;
            s[d] = dims[d] / p;
            s.insert(s.begin() + static_cast<std::ptrdiff_t>(d), p);
            out.push_back(list_op(s));
          }
  } else if (n == "shape") {
    for (const Dims& s : all_shapes(opt.max_rank, opt.min_dim, opt.max_dim)) out.push_back(list_op(s));
  } else if (n == "kernel_shape" && operands.size() >= 2 && operands[1]) {  // conv: the weights' spatial dims
    const ir::Shape& w = operands[1]->type.shape;
    if (w.size() > 2 && ir::is_static(w)) {
      Dims ws = ir::static_dims(w);
      out.push_back(list_op(Dims(ws.begin() + 2, ws.end())));
    }
  } else if (n == "kernel_shape") {
    ints(tuples(spatial, {1, 2}));
  } else if (n == "strides" || n == "dilations") {
    ints(tuples(spatial, {1, 2}));
  } else if (key == "pad.pads") {  // begin and end pads of every dim: none, the spatial ones, one-sided, all
    const auto r = static_cast<std::size_t>(rank);
    Dims spatial_pads(2 * r, 0), one_sided(2 * r, 0);
    for (std::size_t d = 2; d < r; ++d) spatial_pads[d] = spatial_pads[r + d] = 1;
    if (r > 2) one_sided[r - 1] = one_sided[r + 2] = 1;
    for (const Dims& p : {Dims(2 * r, 0), spatial_pads, one_sided, Dims(2 * r, 1)}) out.push_back(list_op(p));
  } else if (n == "pads") {
    out.push_back(list_op(Dims(2 * spatial, 0)));
    out.push_back(list_op(Dims(2 * spatial, 1)));
    Dims mixed(2 * spatial, 0);
    if (!mixed.empty()) mixed[0] = mixed.back() = 1;
    out.push_back(list_op(mixed));
  } else {
    ints({{0}, {1}, {-1}, {0, 1}});
  }
  return out;
}

struct Slot {
  enum class Kind { Tensor, Attribute, ResultIndex, Unsupported } kind = Kind::Tensor;
  bool optional = false;
  std::set<std::string> values;  // the value guards that read it: try constants they accept
  const OpDef* parent = nullptr;
  const AttrSpec* spec = nullptr;
  ir::DType dtype = ir::DType::F32;  // of a tensor: f32 unless the parent op takes only others
  bool needs_value = false;          // a constant: the parent's shape depends on the value
  std::string why;
};

// What a tensor variable is instantiated as: an f32 input, unless the op it
// is an operand of (at `pos`, of `nops`) rejects f32 there whatever its other
// operands hold: then i64 or bool, the first the op accepts (logic ops take
// bools, gather's indices integers); and a constant when the op's shape
// depends on its operands' values (range). Probed with small all-ones
// operands and default attributes; an op these do not satisfy keeps f32.
struct OperandKind {
  ir::DType dtype = ir::DType::F32;
  bool needs_value = false;
};
OperandKind operand_kind(const OpDef& def, std::size_t pos, std::size_t nops) {
  const ir::DType kinds[] = {ir::DType::F32, ir::DType::I64, ir::DType::Bool};
  for (bool valued : {false, true})
    for (ir::DType mine : kinds)
      for (ir::DType others : kinds) {
        std::vector<ir::Tensor> values;
        std::vector<ir::TypedInput> in;
        for (std::size_t i = 0; i < nops; ++i) values.emplace_back(i == pos ? mine : others, Dims{1, 1, 1, 1});
        for (std::size_t i = 0; i < nops; ++i) {
          for (std::size_t e = 0; e < values[i].numel(); ++e) values[i].set(e, 1.0);
          in.push_back(
              ir::TypedInput{{values[i].dtype(), ir::shape_of(values[i].dims())}, valued ? &values[i] : nullptr, true});
        }
        try {
          if (!def.infer(ir::Attrs{}, in, 1).empty()) return {mine, valued};
        } catch (const ir::ShapeError&) {
        }
      }
  return {};
}

// Flattened LHS patterns: step s is node `node` of pattern `pattern`.
struct Step {
  std::size_t pattern, node;
  std::size_t first = 0;  // index of the pattern's first step
};

class Enumerator {
 public:
  Enumerator(const egraph::Rewrite& rule, const std::string& source, const InstanceOptions& opt, RuleInstances& out)
      : rule_(rule), opt_(opt), out_(out), rng_(opt.seed) {
    out_.analysis = &out_.graph.add_analysis<TensorAnalysis>();
    shapes_ = all_shapes(opt.max_rank, opt.min_dim, opt.max_dim);
    // Which constants each variable a value guard reads ranges over (and,
    // for a guard on the element type, which types).
    static const std::regex kValueGuard(
        R"(\((is-const|is-zero|is-one|splat|weight\?|floating\?)\s+\?([A-Za-z0-9_\-\.]+))");
    for (std::sregex_iterator it(source.begin(), source.end(), kValueGuard), end; it != end; ++it)
      valued_["?" + (*it)[2].str()].insert((*it)[1].str());
    // A guard that fixes a rank, (= (rank ?x) 2), narrows that variable's shapes.
    static const std::regex kRankGuard(R"(\(=\s+\(rank\s+\?([A-Za-z0-9_\-\.]+)\)\s+(\d{1,9})\))");
    for (std::sregex_iterator it(source.begin(), source.end(), kRankGuard), end; it != end; ++it)
      rank_pin_["?" + (*it)[1].str()] = std::stoi((*it)[2].str());
    // One that fixes a dim, (= (dim ?w 2) 3) (a 3x3 kernel), narrows them
    // too; the first such guard of an axis (of an `or`, the first it names).
    static const std::regex kDimGuard(R"(\(=\s+\(dim\s+\?([A-Za-z0-9_\-\.]+)\s+(\d{1,9})\)\s+(\d{1,9})\))");
    for (std::sregex_iterator it(source.begin(), source.end(), kDimGuard), end; it != end; ++it)
      dim_pins_["?" + (*it)[1].str()].try_emplace(std::stoll((*it)[2].str()), std::stoll((*it)[3].str()));
    // A guard that wants one value, (= (splat ?e) 2), gets constants of it.
    static const std::regex kSplatGuard(R"(\(=\s+\(splat\s+\?([A-Za-z0-9_\-\.]+)\)\s+(-?[0-9.]+)\))");
    for (std::sregex_iterator it(source.begin(), source.end(), kSplatGuard), end; it != end; ++it)
      splat_values_["?" + (*it)[1].str()].push_back(std::stod((*it)[2].str()));
    // A guard on a tensor's element type, (= (dtype ?x) u8) (the first type
    // an `or` names), instantiates it as that type; (= (dtype ?z) (dtype
    // ?x)) gives ?z the type ?x gets.
    static const std::regex kDtypeGuard(R"(\(=\s+\(dtype\s+\?([A-Za-z0-9_\-\.]+)\)\s+([a-z0-9]+)\))");
    for (std::sregex_iterator it(source.begin(), source.end(), kDtypeGuard), end; it != end; ++it)
      if (auto t = ir::dtype_from_name((*it)[2].str())) dtype_pin_.try_emplace("?" + (*it)[1].str(), *t);
    static const std::regex kSameDtype(
        R"(\(=\s+\(dtype\s+\?([A-Za-z0-9_\-\.]+)\)\s+\(dtype\s+\?([A-Za-z0-9_\-\.]+)\)\))");
    for (std::sregex_iterator it(source.begin(), source.end(), kSameDtype), end; it != end; ++it)
      if (auto pin = dtype_pin_.find("?" + (*it)[2].str()); pin != dtype_pin_.end())
        dtype_pin_.try_emplace("?" + (*it)[1].str(), pin->second);
    auto lhs = rule.lhs();
    slots_.resize(rule.num_lhs_vars());
    std::vector<bool> seen(rule.num_lhs_vars(), false);
    for (std::size_t p = 0; p < lhs.size(); ++p) {
      const std::size_t first = steps_.size();
      for (std::size_t k = 0; k < lhs[p].nodes.size(); ++k) steps_.push_back({p, k, first});
      for (std::size_t k = 0; k < lhs[p].nodes.size(); ++k) {
        const auto& pn = lhs[p].nodes[k];
        if (!pn.is_var() || seen[pn.var]) continue;
        seen[pn.var] = true;
        slots_[pn.var] = classify(lhs[p], k);
        if (auto it = valued_.find(rule.var_names()[pn.var]); it != valued_.end()) slots_[pn.var].values = it->second;
        if (auto it = dtype_pin_.find(rule.var_names()[pn.var]);
            it != dtype_pin_.end() && slots_[pn.var].kind == Slot::Kind::Tensor)
          slots_[pn.var].dtype = it->second;
        (slots_[pn.var].kind == Slot::Kind::Tensor ? out_.tensor_vars : out_.attr_vars)
            .push_back(rule.var_names()[pn.var]);
        if (slots_[pn.var].kind == Slot::Kind::Unsupported && out_.unsupported.empty())
          out_.unsupported = rule.var_names()[pn.var] + ": " + slots_[pn.var].why;
      }
    }
    parent_.assign(steps_.size(), kNoParent);
    for (std::size_t k = 0; k < steps_.size(); ++k) {
      const Pattern& p = lhs[steps_[k].pattern];
      for (std::size_t j = steps_[k].node + 1; j < p.nodes.size() && parent_[k] == kNoParent; ++j)
        if (std::ranges::find(p.nodes[j].children, static_cast<std::uint32_t>(steps_[k].node)) !=
            p.nodes[j].children.end())
          parent_[k] = steps_[k].first + j;
    }
    ids_.resize(steps_.size());
    binding_.assign(rule.num_lhs_vars(), EClassId{});
    bound_.assign(rule.num_lhs_vars(), false);
  }

  void run() {
    if (!out_.unsupported.empty()) return;
    std::vector<std::vector<EClassId>> found;
    steps_taken_ = 0;
    out_.over_budget = beyond_budget();
    bool complete = !out_.over_budget && descend(0, found, /*sample=*/false);
    if (!complete) {
      out_.exhaustive = false;
      found.clear();
      std::set<std::vector<EClassId>> unique;
      const std::size_t attempts = 200 * opt_.max_instances;
      out_.timed_out = false;  // sampling gets its own share of the time
      start_ = std::chrono::steady_clock::now();
      for (std::size_t a = 0; a < attempts && unique.size() < opt_.max_instances && !out_of_time(); ++a) {
        std::vector<std::vector<EClassId>> one;
        std::fill(bound_.begin(), bound_.end(), false);
        descend(0, one, /*sample=*/true);
        for (auto& i : one)
          if (unique.insert(i).second) found.push_back(std::move(i));
      }
    }
    out_.found = found.size();
    if (found.size() <= opt_.max_instances) {
      out_.instances = std::move(found);
    } else {
      // Evenly spread, first and last included.
      const std::size_t n = opt_.max_instances;
      for (std::size_t i = 0; i < n; ++i) out_.instances.push_back(found[i * (found.size() - 1) / (n - 1)]);
    }
    out_.graph.rebuild();
  }

 private:
  // Whether exhaustive enumeration cannot end within the step budget, known
  // before it starts: nothing is type-checked before the first op node of
  // the left-hand side, so every combination of the candidates of the
  // tensor variables bound before it is a step of its own (concat4-def's
  // four operands: 120^4). Enumerating up to the budget would only find
  // instances to throw away, at the cost of one failed type check (a thrown
  // shape error) per step: 1-2 s of each such rule's verification.
  bool beyond_budget() {
    double combinations = 1;
    std::vector<bool> seen(bound_.size(), false);
    for (const Step& st : steps_) {
      const auto& pn = rule_.lhs()[st.pattern].nodes[st.node];
      if (!pn.is_var()) {
        if (!pn.children.empty()) break;
        continue;
      }
      if (seen[pn.var] || slots_[pn.var].kind != Slot::Kind::Tensor) continue;
      seen[pn.var] = true;
      const std::size_t n = tensor_candidates(pn.var).size();
      if (n == 0) return false;  // (no instance at all: enumeration says so at once)
      combinations *= static_cast<double>(n);
      if (combinations > static_cast<double>(opt_.step_budget)) return true;
    }
    return estimated_steps() > kEstimateMargin * static_cast<double>(opt_.step_budget);
  }

  // Knuth's estimate of the exhaustive enumeration's size: a path drawn at
  // random, each choice uniform among a step's candidates, stands for the
  // product of the branching factors met on the way down at each depth, and
  // the mean over paths estimates the steps `descend` would take. A conv
  // rule's attributes multiply past any budget after its operands
  // type-check, which the count above (it stops at the first op) cannot
  // see; such rules used to spend the whole budget before sampling and
  // throw what it found away (the shipped rules' verification under
  // AddressSanitizer: 252 CPU seconds, 145 with the estimate, every verdict
  // and instance the same). On the shipped rules the estimate came within
  // 3% of the steps taken for 183 of the 200 enumerations that finish, all
  // within 7%; the margin spares a rule near the budget a wrong guess.
  static constexpr std::size_t kEstimatePaths = 256;
  static constexpr double kEstimateMargin = 1.5;
  double estimated_steps() {
    std::mt19937_64 rng(opt_.seed ^ 0x9e3779b97f4a7c15ULL);  // the sampling's own draws stay as they were
    double total = 0;
    for (std::size_t k = 0; k < kEstimatePaths; ++k) {
      std::fill(bound_.begin(), bound_.end(), false);
      total += path_steps(0, 1, rng);
    }
    std::fill(bound_.begin(), bound_.end(), false);
    return total / kEstimatePaths;
  }

  // The steps a path from step s stands for, `weight` nodes at each depth.
  double path_steps(std::size_t s, double weight, std::mt19937_64& rng) {
    if (s == steps_.size()) return weight;
    const Step& st = steps_[s];
    const auto& pn = rule_.lhs()[st.pattern].nodes[st.node];
    if (pn.is_var()) {
      if (bound_[pn.var]) {
        ids_[s] = binding_[pn.var];
        return weight + path_steps(s + 1, weight, rng);
      }
      const std::vector<EClassId>& cands = candidates(pn.var, s, /*tensors=*/true);
      if (cands.empty()) return weight;
      ids_[s] = binding_[pn.var] = cands[std::uniform_int_distribution<std::size_t>(0, cands.size() - 1)(rng)];
      bound_[pn.var] = true;
      const double below = path_steps(s + 1, weight * static_cast<double>(cands.size()), rng);
      bound_[pn.var] = false;
      return weight + below;
    }
    if (!build_op(s)) return weight;
    return weight + path_steps(s + 1, weight, rng);
  }

  Slot classify(const Pattern& p, std::size_t k) const {
    Slot s;
    for (std::size_t j = k + 1; j < p.nodes.size(); ++j) {
      const auto& kids = p.nodes[j].children;
      auto it = std::find(kids.begin(), kids.end(), static_cast<std::uint32_t>(k));
      if (it == kids.end()) continue;
      const auto pos = static_cast<std::size_t>(it - kids.begin());
      const Op op = p.nodes[j].op;
      const OpDef* def = op.is_literal() ? nullptr : ir::OpRegistry::get().find(op.name());
      if (!def) {
        s.kind = Slot::Kind::Unsupported;
        s.why = "bound under '" + op.name() +
                "', which is not a tensor op (only ops' operands and attributes are "
                "instantiated)";
        return s;
      }
      const std::size_t fixed = def->attrs.size() + (def->num_outputs == 1 ? 0 : 2);
      const std::size_t nops = kids.size() - fixed;
      s.parent = def;
      if (pos < nops) {
        s.kind = Slot::Kind::Tensor;
        s.optional = pos >= static_cast<std::size_t>(def->min_inputs);
        const OperandKind k = operand_kind(*def, pos, nops);
        s.dtype = k.dtype;
        s.needs_value = k.needs_value;
      } else if (pos < nops + def->attrs.size()) {
        s.kind = Slot::Kind::Attribute;
        s.spec = &def->attrs[pos - nops];
      } else {
        s.kind = Slot::Kind::ResultIndex;
      }
      return s;
    }
    return s;  // a root variable: any tensor
  }

  // The shapes variable v ranges over.
  const std::vector<Dims>& shapes_of(VarId v) {
    auto it = var_shapes_.find(v);
    if (it != var_shapes_.end()) return it->second;
    std::vector<Dims> own;
    for (const Dims& s : shapes_)
      if (fits_pins(rule_.var_names()[v], s)) own.push_back(s);
    return var_shapes_[v] = std::move(own);
  }

  // Whether v may have shape s: within the bounds, and the rank and dims
  // its guards pin.
  bool fits(VarId v, const Dims& s) const {
    return static_cast<int>(s.size()) <= opt_.max_rank && fits_pins(rule_.var_names()[v], s) &&
           std::none_of(s.begin(), s.end(), [&](std::int64_t x) { return x > opt_.max_dim; });
  }

  // Whether shape s has the rank and dims the guards pin for variable `var`.
  bool fits_pins(const std::string& var, const Dims& s) const {
    if (auto pin = rank_pin_.find(var); pin != rank_pin_.end() && static_cast<int>(s.size()) != pin->second)
      return false;
    if (auto pins = dim_pins_.find(var); pins != dim_pins_.end())
      for (const auto& [axis, size] : pins->second)
        if (axis >= static_cast<std::int64_t>(s.size()) || s[static_cast<std::size_t>(axis)] != size) return false;
    return true;
  }

  // The classes v may be bound to with shape s: an input, and the constants
  // its value guards can accept. Made once per variable and shape (sampling
  // asks again and again).
  const std::vector<EClassId>& tensor_classes(VarId v, const Dims& s) {
    shape_key_.assign(1, static_cast<std::int64_t>(v));
    shape_key_.insert(shape_key_.end(), s.begin(), s.end());
    if (auto it = shape_classes_.find(shape_key_); it != shape_classes_.end()) return it->second;
    return shape_classes_.emplace(shape_key_, make_tensor_classes(v, s)).first->second;
  }

  std::vector<EClassId> make_tensor_classes(VarId v, const Dims& s) {
    egraph::EGraph& g = out_.graph;
    const TensorOps& lang = TensorOps::get();
    std::vector<EClassId> c;
    std::string name = rule_.var_names()[v].substr(1) + ir::to_string(ir::shape_of(s));
    const ir::DType dtype = slots_[v].dtype;
    const auto& guards = slots_[v].values;
    static const double kMix[] = {0.5, -1.5, 2.0, -0.25, 3.0, 1.25, -2.0};
    if (slots_[v].needs_value) {  // small scalars only: the value sets the shape
      if (!s.empty()) return c;
      ir::Tensor t(dtype, s);
      t.set(0, kMix[(3 * v) % std::size(kMix)]);
      c.push_back(g.add(lang.constant, {g.add(out_.analysis->constants().intern(t, name + "#c"))}));
      return c;
    }
    out_.analysis->declare_input(name, ir::ValueType{dtype, ir::shape_of(s)});
    c.push_back(g.add(lang.input, {g.add(Op::symbol(name))}));
    if (guards.count("floating?") && dtype == ir::DType::F32) {  // a guard on the type: integers too
      out_.analysis->declare_input(name + "i64", ir::ValueType{ir::DType::I64, ir::shape_of(s)});
      c.push_back(g.add(lang.input, {g.add(Op::symbol(name + "i64"))}));
    }
    if (std::all_of(guards.begin(), guards.end(), [](const std::string& k) { return k == "floating?"; }) ||
        dtype == ir::DType::I64 || dtype == ir::DType::Bool)
      return c;
    // All zeros (is-zero), all ones (is-one), one repeated value (splat),
    // and a mix of nonzero values that differs from variable to variable.
    std::vector<ir::Tensor> consts;
    auto filled = [&](auto value) {
      ir::Tensor t(dtype, s);
      for (std::size_t i = 0; i < t.numel(); ++i) t.set(i, value(i));
      consts.push_back(std::move(t));
    };
    if (guards.count("is-zero")) filled([](std::size_t) { return 0.0; });
    if (guards.count("is-one")) filled([](std::size_t) { return 1.0; });
    if (guards.count("splat")) filled([](std::size_t) { return 2.5; });
    if (auto it = splat_values_.find(rule_.var_names()[v]); it != splat_values_.end())
      for (double value : it->second) filled([value](std::size_t) { return value; });
    filled([v](std::size_t i) { return kMix[(i + 3 * v) % std::size(kMix)]; });
    for (const ir::Tensor& t : consts)
      c.push_back(g.add(lang.constant, {g.add(out_.analysis->constants().intern(t, name + "#c"))}));
    return c;
  }

  const std::vector<EClassId>& tensor_candidates(VarId v) {
    auto it = tensor_classes_.find(v);
    if (it != tensor_classes_.end()) return it->second;
    std::vector<EClassId> c;
    if (slots_[v].optional) c.push_back(out_.graph.add(TensorOps::get().none));
    for (const Dims& s : shapes_of(v))
      for (EClassId k : tensor_classes(v, s)) c.push_back(k);
    return tensor_classes_[v] = std::move(c);
  }

  // The shapes a sampled operand is drawn from for being related to a class
  // bound before it (sample_tensor), made once per class.
  struct RelatedShapes {
    std::vector<Dims> related, broadcasting;
  };
  const RelatedShapes& related_shapes(EClassId c, const TensorInfo& d) {
    auto [it, added] = related_shapes_.try_emplace(c);
    if (!added) return it->second;
    RelatedShapes& r = it->second;
    const Dims s = ir::static_dims(d.type.shape);
    r.related.push_back(s);
    for (auto x : s) r.related.push_back({x});
    for (std::size_t i = 1; i < s.size(); ++i)
      r.related.emplace_back(s.begin() + static_cast<std::ptrdiff_t>(i), s.end());
    if (s.size() >= 2) r.related.push_back({s[s.size() - 1], s[s.size() - 2]});
    // What broadcasts to it: one value, or one per element of an axis
    // (quantization's scales and zero points, per-channel parameters).
    r.broadcasting.push_back({});
    for (std::size_t i = 0; i < s.size(); ++i) {
      Dims axis(s.size(), 1);
      axis[i] = s[i];
      r.broadcasting.push_back(std::move(axis));
    }
    return r;
  }

  // The ranks of the shapes variable v ranges over, smallest first.
  const std::vector<std::size_t>& ranks_of(VarId v) {
    auto [it, added] = var_ranks_.try_emplace(v);
    if (added) {
      for (const Dims& s : shapes_of(v)) it->second.push_back(s.size());
      std::sort(it->second.begin(), it->second.end());
      it->second.erase(std::unique(it->second.begin(), it->second.end()), it->second.end());
    }
    return it->second;
  }

  static constexpr double kSiblingShare = 0.35;
  // One random binding for v: often a shape related to what the instance
  // already holds (same shape, [d] for a dim d met, a suffix), so that
  // operands that must agree (batchnorm's [C] parameters) meet by chance.
  EClassId sample_tensor(VarId v, std::size_t step) {
    std::uniform_real_distribution<double> u(0, 1);
    if (slots_[v].optional && u(rng_) < 0.25) return out_.graph.add(TensorOps::get().none);
    std::vector<const Dims*>& related = related_scratch_;
    std::vector<const Dims*>& broadcasting = broadcasting_scratch_;
    related.clear();
    broadcasting.clear();
    for (std::size_t k = 0; k < step; ++k) {
      const EClassId c = out_.graph.find(ids_[k]);
      const TensorInfo& d = out_.analysis->data(c);
      if (d.kind != TensorInfo::Kind::Tensor || !ir::is_static(d.type.shape)) continue;
      const RelatedShapes& r = related_shapes(c, d);
      for (const Dims& s : r.related)
        if (fits(v, s)) related.push_back(&s);
      for (const Dims& s : r.broadcasting)
        if (fits(v, s)) broadcasting.push_back(&s);
    }
    Dims shape;
    // Operands of one op often want one shape (a normalization's four
    // parameters, an add's two sides): a share of the time, that of an
    // operand of the same op drawn before.
    std::vector<const Dims*>& siblings = sibling_scratch_;
    siblings.clear();
    for (const auto& [u_var, u_step] : drawn_)
      if (parent_[u_step] == parent_[step] && parent_[step] != kNoParent)
        if (const Dims* theirs = shape_of_class(binding_[u_var]); theirs && fits(v, *theirs))
          siblings.push_back(theirs);
    // (No draw when there is nothing to draw from: the samples stay those of
    // the same seed.)
    const double draw = related.empty() && !(opt_.broad && !broadcasting.empty()) ? 1.0 : u(rng_);
    if (!siblings.empty() && u(rng_) < kSiblingShare) {
      shape = *siblings[std::uniform_int_distribution<std::size_t>(0, siblings.size() - 1)(rng_)];
    } else if (!related.empty() && draw < 0.6) {
      shape = *related[std::uniform_int_distribution<std::size_t>(0, related.size() - 1)(rng_)];
    } else if (opt_.broad && !broadcasting.empty() && draw < 0.75) {
      shape = *broadcasting[std::uniform_int_distribution<std::size_t>(0, broadcasting.size() - 1)(rng_)];
    } else {
      // A rank first, uniformly, then its dims: small ranks are not drowned out.
      const std::vector<std::size_t>& ranks = ranks_of(v);
      if (ranks.empty()) return out_.graph.add(TensorOps::get().none);
      const std::size_t r = ranks[std::uniform_int_distribution<std::size_t>(0, ranks.size() - 1)(rng_)];
      std::uniform_int_distribution<std::int64_t> dim(opt_.min_dim, opt_.max_dim);
      for (std::size_t i = 0; i < r; ++i) shape.push_back(dim(rng_));
    }
    const std::vector<EClassId>& cands = tensor_classes(v, shape);
    // A variable a guard wants constant (is-const, is-zero, ...) is mostly
    // one of the constants (cands[0] is the input): a rule guarding several
    // would otherwise seldom see them all constant at once.
    const auto& guards = slots_[v].values;
    const bool constant = guards.count("is-const") || guards.count("is-zero") || guards.count("is-one") ||
                          guards.count("weight?") || guards.count("splat");
    if ((opt_.broad || opt_.where_rule_fires) && constant && cands.size() > 1 && u(rng_) < 0.75)
      return cands[std::uniform_int_distribution<std::size_t>(1, cands.size() - 1)(rng_)];
    return cands[std::uniform_int_distribution<std::size_t>(0, cands.size() - 1)(rng_)];
  }

  // The domain depends only on the classes the parent's earlier operands
  // are bound to, so it is made once per variable and operands.
  const std::vector<EClassId>& attribute_candidates(VarId v, std::size_t step) {
    // The operands of the parent: the steps before this one that are its
    // children (post-order puts them first).
    const Step& st = steps_[step];
    const Pattern& p = rule_.lhs()[st.pattern];
    std::vector<std::uint32_t>& key = attribute_key_;
    key.assign(1, v);
    if (parent_[step] != kNoParent)
      for (auto kid : p.nodes[parent_[step] - st.first].children) {
        if (kid >= st.node) break;
        key.push_back(out_.graph.find(ids_[st.first + kid]).v);
      }
    if (auto it = attribute_classes_.find(key); it != attribute_classes_.end()) return it->second;
    std::vector<const TensorInfo*> operands;
    for (std::size_t i = 1; i < key.size(); ++i) {
      const TensorInfo& d = out_.analysis->data(EClassId(key[i]));
      operands.push_back(d.kind == TensorInfo::Kind::Tensor ? &d : nullptr);
    }
    std::vector<EClassId> c;
    for (Op op : attribute_domain(*slots_[v].parent, *slots_[v].spec, operands, opt_)) c.push_back(out_.graph.add(op));
    if (slots_[v].spec->type == ir::AttrType::Tensor)  // fill's value: one number, as a scalar and as [1]
      for (const auto& dims : {Dims{}, Dims{1}}) {
        ir::Tensor t(ir::DType::F32, dims);
        t.set(0, 2.5);
        c.push_back(out_.graph.add(out_.analysis->constants().intern(std::move(t))));
      }
    return attribute_classes_.emplace(key, std::move(c)).first->second;
  }

  // Builds steps [s, end); false when the step budget ran out.
  // (Every 16th call: one step may build thousands of attribute values,
  // a reshape's target shapes past --max-dim 8.)
  bool out_of_time() {
    if ((++clock_checks_ & 15) != 0) return out_.timed_out;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() > opt_.time_limit_s)
      out_.timed_out = true;
    return out_.timed_out;
  }

  bool descend(std::size_t s, std::vector<std::vector<EClassId>>& found, bool sample) {
    if (!sample && (++steps_taken_ > opt_.step_budget || out_of_time())) return false;
    if (s == steps_.size()) {
      if (sample && opt_.where_rule_fires && !fires() && !mend()) return true;
      std::vector<EClassId> inst;
      append_roots(inst);
      inst.insert(inst.end(), binding_.begin(), binding_.end());
      found.push_back(std::move(inst));
      return true;
    }
    const Step& st = steps_[s];
    const auto& pn = rule_.lhs()[st.pattern].nodes[st.node];
    if (pn.is_var()) {
      if (bound_[pn.var]) {
        ids_[s] = binding_[pn.var];
        return descend(s + 1, found, sample);
      }
      const Slot::Kind kind = slots_[pn.var].kind;
      const std::vector<EClassId>& cands = candidates(pn.var, s, /*tensors=*/!sample);
      if (cands.empty() && !(sample && kind == Slot::Kind::Tensor)) return true;
      bound_[pn.var] = true;
      bool ok = true;
      if (sample) {
        ids_[s] = binding_[pn.var] = kind == Slot::Kind::Tensor
                                         ? sample_tensor(pn.var, s)
                                         : cands[std::uniform_int_distribution<std::size_t>(0, cands.size() - 1)(rng_)];
        if (kind == Slot::Kind::Tensor) drawn_.emplace_back(pn.var, s);
        descend(s + 1, found, sample);
        if (kind == Slot::Kind::Tensor) drawn_.pop_back();
      } else {
        for (EClassId c : cands) {
          ids_[s] = binding_[pn.var] = c;
          if (!descend(s + 1, found, sample)) {
            ok = false;
            break;
          }
        }
      }
      bound_[pn.var] = false;
      return ok;
    }
    if (!build_op(s)) return true;  // does not type-check: no instance below
    return descend(s + 1, found, sample);
  }

  // The class each left-hand side's root is built as, appended to `out`.
  void append_roots(std::vector<EClassId>& out) const {
    auto lhs = rule_.lhs();
    for (std::size_t p = 0, first = 0; p < lhs.size(); first += lhs[p].nodes.size(), ++p)
      out.push_back(ids_[first + lhs[p].nodes.size() - 1]);
  }

  // Whether the rule fires on the instance built (its guards hold): its
  // right-hand side is then added to the e-graph, as verification would.
  bool fires() {
    std::vector<EClassId>& roots = roots_scratch_;
    roots.clear();
    append_roots(roots);
    matches_.data.clear();
    rule_.search_at(out_.graph, roots, matches_);
    for (std::size_t k = 0; k < matches_.size(); ++k)
      if (rule_.instantiate(out_.graph, matches_.bindings(k))) return true;
    return false;
  }

  // A sampled instance the rule does not fire on is mended, when it can
  // be, by binding one tensor variable (the one drawn last first) to
  // another shape, among the shapes the instance holds (each class's, its
  // dims, its suffixes: sample_tensor's related shapes), until the rule
  // fires. A guard that ties an operand to a value built after it
  // (add-conv-dnnl's residual, drawn before the convolution whose result's
  // shape it must have) is almost never met by drawing: that rule's
  // instances went from 2 in 12,800 draws to 64. Each try builds the steps
  // after the variable again; at most kMendTries per enumeration. (Mending
  // a type check the same way, at the op that fails, cost more time than
  // it found instances: most failing convolutions need two operands
  // changed.)
  static constexpr std::size_t kMendTries = 20000;
  bool mend() {
    for (std::size_t d = drawn_.size(); d-- > 0;) {
      const auto [v, at] = drawn_[d];
      const EClassId kept = binding_[v];
      const std::vector<EClassId>& cands = shapes_met(v);
      if (cands.empty()) continue;
      // From a random one on, so that the instances mended spread.
      const std::size_t first = std::uniform_int_distribution<std::size_t>(0, cands.size() - 1)(rng_);
      for (std::size_t j = 0; j < cands.size(); ++j) {
        if (++mend_tries_ > kMendTries) return false;
        const EClassId c = cands[(first + j) % cands.size()];
        if (c == kept) continue;
        ids_[at] = binding_[v] = c;
        if (rebuild_after(at) && fires()) return true;
      }
      ids_[at] = binding_[v] = kept;
      rebuild_after(at);  // (the next variable's shapes are those of the instance drawn)
    }
    return false;
  }

  // The static shape of a class bound to a tensor variable; null for none.
  const Dims* shape_of_class(EClassId c) {
    c = out_.graph.find(c);
    const TensorInfo& d = out_.analysis->data(c);
    if (d.kind != TensorInfo::Kind::Tensor || !ir::is_static(d.type.shape)) return nullptr;
    return &related_shapes(c, d).related[0];
  }

  // v's classes at the shapes the instance's classes relate to.
  const std::vector<EClassId>& shapes_met(VarId v) {
    std::vector<EClassId>& out = mend_scratch_;
    out.clear();
    for (std::size_t k = 0; k < steps_.size(); ++k) {
      const EClassId c = out_.graph.find(ids_[k]);
      const TensorInfo& d = out_.analysis->data(c);
      if (d.kind != TensorInfo::Kind::Tensor || !ir::is_static(d.type.shape)) continue;
      for (const Dims& s : related_shapes(c, d).related)
        if (fits(v, s))
          for (EClassId k2 : tensor_classes(v, s)) out.push_back(k2);
    }
    return out;
  }

  // Builds the steps after `at` again over the bindings as they are:
  // whether they build.
  bool rebuild_after(std::size_t at) {
    for (std::size_t k = at + 1; k < steps_.size(); ++k) {
      const auto& pn = rule_.lhs()[steps_[k].pattern].nodes[steps_[k].node];
      if (pn.is_var())
        ids_[k] = binding_[pn.var];
      else if (!build_op(k))
        return false;
    }
    return true;
  }

  // The classes variable v may be bound to at step s; a tensor variable's
  // only when `tensors` (sampling draws those itself).
  const std::vector<EClassId>& candidates(VarId v, std::size_t s, bool tensors) {
    switch (slots_[v].kind) {
      case Slot::Kind::Attribute:
        return attribute_candidates(v, s);
      case Slot::Kind::ResultIndex:
        if (result_indices_.empty())
          for (std::int64_t i = 0; i <= 3; ++i) result_indices_.push_back(out_.graph.add(Op::integer(i)));
        return result_indices_;
      default:
        return tensors ? tensor_candidates(v) : no_classes_;
    }
  }

  // Adds step s's op over the classes its children are bound to; false when
  // that does not type-check.
  bool build_op(std::size_t s) {
    egraph::EGraph& g = out_.graph;
    const Step& st = steps_[s];
    const auto& pn = rule_.lhs()[st.pattern].nodes[st.node];
    std::vector<EClassId>& kids = kids_scratch_;
    kids.clear();
    for (auto k : pn.children) kids.push_back(ids_[st.first + k]);
    // Most candidates do not type-check: those their op's `admits` turns
    // down are not even added (no e-node, no thrown shape error).
    if (!out_.analysis->admits(g, pn.op, kids)) return false;
    EClassId c = g.add(pn.op, kids);
    if (!pn.children.empty() && out_.analysis->data(g.find(c)).kind != TensorInfo::Kind::Tensor) return false;
    ids_[s] = c;
    return true;
  }

  const egraph::Rewrite& rule_;
  const InstanceOptions& opt_;
  RuleInstances& out_;
  std::mt19937_64 rng_;
  std::vector<Dims> shapes_;
  std::vector<Slot> slots_;
  std::vector<Step> steps_;
  std::vector<EClassId> ids_, binding_;
  std::vector<bool> bound_;
  std::map<VarId, std::vector<EClassId>> tensor_classes_;
  // Caches of what the enumeration asks for again and again (sampling
  // draws a path per attempt): each map's values are never changed once
  // added, so references to them stay valid while the enumeration recurses.
  std::map<std::vector<std::int64_t>, std::vector<EClassId>> shape_classes_;       // {var, dims...}
  std::map<std::vector<std::uint32_t>, std::vector<EClassId>> attribute_classes_;  // {var, operand classes...}
  std::map<EClassId, RelatedShapes> related_shapes_;
  std::map<VarId, std::vector<std::size_t>> var_ranks_;
  std::vector<EClassId> result_indices_;
  const std::vector<EClassId> no_classes_;
  // Scratch space reused by calls that do not recurse.
  std::vector<std::int64_t> shape_key_;
  std::vector<std::uint32_t> attribute_key_;
  std::vector<const Dims*> related_scratch_, broadcasting_scratch_;
  std::vector<EClassId> kids_scratch_, roots_scratch_;
  egraph::Matches matches_;
  // The tensor variables a sampled path drew, with their steps, in order.
  std::vector<std::pair<VarId, std::size_t>> drawn_;
  std::size_t mend_tries_ = 0;
  // The step of each step's parent op (kNoParent for a root).
  static constexpr std::size_t kNoParent = static_cast<std::size_t>(-1);
  std::vector<std::size_t> parent_;
  std::vector<const Dims*> sibling_scratch_;
  std::vector<EClassId> mend_scratch_;
  std::map<std::string, std::set<std::string>> valued_;
  std::map<std::string, int> rank_pin_;
  std::map<std::string, std::map<std::int64_t, std::int64_t>> dim_pins_;  // axis -> size
  std::map<std::string, ir::DType> dtype_pin_;
  std::map<std::string, std::vector<double>> splat_values_;
  std::map<VarId, std::vector<Dims>> var_shapes_;
  std::size_t steps_taken_ = 0;
  std::size_t clock_checks_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

std::string format_values(const ir::Tensor& t) {
  std::string s = "[";
  for (std::size_t i = 0; i < t.numel() && i < 8; ++i) {
    if (i) s += ' ';
    s += egraph::format_number(Number(t.at(i)));
  }
  if (t.numel() > 8) s += " ...";
  return s + "]";
}

}  // namespace

RuleInstances enumerate_instances(const egraph::Rewrite& rule, const std::string& source, const InstanceOptions& opt) {
  RuleInstances out;
  Enumerator e(rule, source, opt, out);
  e.run();
  return out;
}

std::string describe_class(const RuleInstances& inst, EClassId c) {
  const egraph::EGraph& g = inst.graph;
  c = g.find(c);
  const egraph::NodeId n = g.nodes(c)[0];
  const TensorOps& lang = TensorOps::get();
  const TensorInfo& d = inst.analysis->data(c);
  if (g.op(n) == lang.input) return std::string("input ") + ir::dtype_name(d.type.dtype) + ir::to_string(d.type.shape);
  if (g.op(n) == lang.constant) {
    auto h = leaf_symbol(g, g.children(n)[0]);
    const ir::Tensor* t = h ? inst.analysis->constants().find(*h) : nullptr;
    return t ? "const " + t->summary() + " = " + format_values(*t) : "const";
  }
  return term_of(inst, c);
}

std::string term_of(const RuleInstances& inst, EClassId c) {
  const egraph::EGraph& g = inst.graph;
  c = g.find(c);
  const egraph::NodeId n = g.nodes(c)[0];
  const TensorOps& lang = TensorOps::get();
  if (g.op(n) == lang.input || g.op(n) == lang.constant) {
    const TensorInfo& d = inst.analysis->data(c);
    std::string s = g.op(n) == lang.input ? "x" : "c";
    if (auto sym = leaf_symbol(g, g.children(n)[0]); sym && g.op(n) == lang.input) {
      s = sym->name();
      s = s.substr(0, s.find('['));
    }
    return s + ":" + ir::dtype_name(d.type.dtype) + ir::to_string(d.type.shape);
  }
  auto kids = g.children(n);
  if (kids.empty()) return g.op(n).name();
  std::string s = "(" + g.op(n).name();
  for (EClassId k : kids) s += " " + term_of(inst, k);
  return s + ")";
}

}  // namespace saturn::rules
