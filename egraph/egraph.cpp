#include "egraph/egraph.hpp"

#include <algorithm>
#include <sstream>
#include <unordered_map>

namespace saturn::egraph {

EClassId EGraph::add(Op op, std::span<const EClassId> children) {
  scratch_.resize(children.size());
  for (std::size_t i = 0; i < children.size(); ++i) scratch_[i] = uf_.find_mut(children[i]);
  std::uint64_t h = hash_node(op, scratch_);
  if (auto n = hashcons_.find(store_, op, scratch_, h)) return uf_.find_mut(EClassId(n->v));

  NodeId n = store_.push(op, scratch_);
  EClassId id = uf_.make_set();
  if (proofs_) proofs_->add_id();
  dead_.push_back(0);
  stamp_.push_back(epoch_);
  classes_.emplace_back();
  classes_.back().nodes.push_back(ClassNode{n, 0});
  for (EClassId k : scratch_) {
    auto& ps = classes_[k.v].parents;
    if (ps.empty() || ps.back() != n) ps.push_back(n);
  }
  hashcons_.insert(store_, n, op, scratch_, h);
  ++num_classes_;
  needs_class_rebuild_ = true;
  for (auto& a : analyses_) a->make(*this, id, n);
  for (std::size_t i = 0; i < analyses_.size(); ++i) analyses_[i]->modify(*this, id);
  return analyses_.empty() ? id : uf_.find_mut(id);
}

std::optional<EClassId> EGraph::lookup(Op op, std::span<const EClassId> children) const {
  auto n = lookup_node(op, children);
  if (!n) return std::nullopt;
  return uf_.find(EClassId(n->v));
}

std::optional<NodeId> EGraph::lookup_node(Op op, std::span<const EClassId> children) const {
  EClassId small[4];
  std::vector<EClassId> large;
  std::span<EClassId> kids;
  if (children.size() <= 4) {
    kids = {small, children.size()};
  } else {
    large.resize(children.size());
    kids = large;
  }
  for (std::size_t i = 0; i < children.size(); ++i) kids[i] = uf_.find(children[i]);
  return hashcons_.find(store_, op, kids, hash_node(op, kids));
}

void EGraph::prefetch(Op op, std::span<const EClassId> children) const {
  EClassId kids[4];
  if (children.size() > 4) return;
  for (std::size_t i = 0; i < children.size(); ++i) kids[i] = uf_.find(children[i]);
  hashcons_.prefetch(hash_node(op, {kids, children.size()}));
}

bool EGraph::merge(EClassId a, EClassId b, Justification why) {
  if (proofs_ && uf_.find_mut(a) != uf_.find_mut(b)) proofs_->link(a, b, std::move(why));
  return merge_classes(a, b);
}

bool EGraph::merge_classes(EClassId a, EClassId b) {
  a = uf_.find_mut(a);
  b = uf_.find_mut(b);
  if (a == b) return false;
  // The class with more parents survives: only the other side's parents need
  // re-canonicalizing.
  if (classes_[a.v].parents.size() < classes_[b.v].parents.size()) std::swap(a, b);
  uf_.union_into(a, b);
  --num_classes_;
  needs_class_rebuild_ = true;

  EClass from = std::move(classes_[b.v]);
  classes_[b.v] = EClass{};
  // The absorbed class's nodes now sit in another class: matches through
  // them may be new.
  for (ClassNode& cn : from.nodes) cn.moved = epoch_;
  pending_.insert(pending_.end(), from.parents.begin(), from.parents.end());
  for (auto& an : analyses_) {
    DidMerge d = an->merge(a, b);
    if (d.into_changed) {
      auto& ps = classes_[a.v].parents;
      analysis_pending_.insert(analysis_pending_.end(), ps.begin(), ps.end());
    }
    if (d.from_changed) analysis_pending_.insert(analysis_pending_.end(), from.parents.begin(), from.parents.end());
  }
  EClass& into = classes_[a.v];
  into.nodes.insert(into.nodes.end(), from.nodes.begin(), from.nodes.end());
  into.parents.insert(into.parents.end(), from.parents.begin(), from.parents.end());
  if (!into.dirty) {
    into.dirty = true;
    dirty_.push_back(a);
  }
  // modify() may add nodes (reallocating classes_): nothing above is used after.
  for (std::size_t i = 0; i < analyses_.size(); ++i) analyses_[i]->modify(*this, uf_.find_mut(a));
  return true;
}

void EGraph::repair_node(NodeId n) {
  auto kids = store_.children_mut(n);
  bool canonical = true;
  for (EClassId k : kids)
    if (!uf_.is_root(k)) canonical = false;
  if (canonical) return;  // already repaired through another path
  hashcons_.erase(store_, n, store_.hash(n));
  for (EClassId& k : kids) k = uf_.find_mut(k);
  stamp_[n.v] = epoch_;
  std::uint64_t h = store_.hash(n);
  EClassId cls = uf_.find_mut(EClassId(n.v));
  if (auto m = hashcons_.find(store_, store_.op(n), store_.children(n), h)) {
    // n is congruent to a live node m: retire n and merge their classes.
    dead_[n.v] = 1;
    if (proofs_)
      merge(EClassId(m->v), EClassId(n.v), Justification::of_congruence(*m, n));
    else
      merge_classes(EClassId(m->v), cls);
    cls = uf_.find_mut(cls);
  } else {
    hashcons_.insert(store_, n, store_.op(n), store_.children(n), h);
  }
  EClass& c = classes_[cls.v];
  if (!c.dirty) {
    c.dirty = true;
    dirty_.push_back(cls);
  }
}

std::size_t EGraph::rebuild() {
  std::size_t before = num_classes_;
  while (!pending_.empty() || !analysis_pending_.empty()) {
    while (!pending_.empty()) {
      NodeId n = pending_.back();
      pending_.pop_back();
      if (!dead_[n.v]) repair_node(n);
    }
    while (!analysis_pending_.empty()) {
      NodeId n = analysis_pending_.back();
      analysis_pending_.pop_back();
      if (dead_[n.v]) continue;
      for (std::size_t i = 0; i < analyses_.size(); ++i) {
        EClassId c = uf_.find_mut(EClassId(n.v));
        if (analyses_[i]->join_node(*this, c, n)) {
          auto& ps = classes_[c.v].parents;
          analysis_pending_.insert(analysis_pending_.end(), ps.begin(), ps.end());
          analyses_[i]->modify(*this, c);
        }
      }
    }
  }
  if (needs_class_rebuild_) rebuild_classes();
  return before - num_classes_;
}

void EGraph::rebuild_classes() {
  auto by_node = [this](const ClassNode& a, const ClassNode& b) { return store_.less(a.id, b.id); };
  for (EClassId id : dirty_) {
    if (!uf_.is_root(id)) continue;
    EClass& c = classes_[id.v];
    if (!c.dirty) continue;
    c.dirty = false;
    std::erase_if(c.nodes, [this](const ClassNode& cn) { return dead_[cn.id.v] != 0; });
    std::sort(c.nodes.begin(), c.nodes.end(), by_node);
    std::erase_if(c.parents, [this](NodeId n) { return dead_[n.v] != 0; });
    std::sort(c.parents.begin(), c.parents.end());
    c.parents.erase(std::unique(c.parents.begin(), c.parents.end()), c.parents.end());
  }
  dirty_.clear();
  roots_.clear();
  roots_.reserve(num_classes_);
  for (std::uint32_t i = 0; i < uf_.size(); ++i)
    if (uf_.is_root(EClassId(i))) roots_.push_back(EClassId(i));
  by_op_valid_ = false;
  needs_class_rebuild_ = false;
}

std::span<const ClassNode> EGraph::nodes_with_op(EClassId id, Op op) const {
  std::span<const ClassNode> ns = classes_[id.v].nodes;
  if (ns.size() <= 8) {
    std::size_t i = 0;
    while (i < ns.size() && store_.op(ns[i]) < op) ++i;
    std::size_t j = i;
    while (j < ns.size() && store_.op(ns[j]) == op) ++j;
    return ns.subspan(i, j - i);
  }
  auto lo = std::partition_point(ns.begin(), ns.end(), [&](const ClassNode& n) { return store_.op(n.id) < op; });
  auto hi = std::partition_point(lo, ns.end(), [&](const ClassNode& n) { return store_.op(n.id) == op; });
  return {lo, hi};
}

std::span<const EClassId> EGraph::classes_with_op(Op op) const {
  if (!by_op_valid_) {
    for (std::uint32_t o : by_op_used_) by_op_[o].clear();
    by_op_used_.clear();
    for (EClassId c : roots_) {
      Op last{0xFFFFFFFFu};
      for (const ClassNode& n : classes_[c.v].nodes) {
        Op o = store_.op(n.id);
        if (o == last) continue;
        last = o;
        if (by_op_.size() <= o.id) by_op_.resize(o.id + 1);
        if (by_op_[o.id].empty()) by_op_used_.push_back(o.id);
        by_op_[o.id].push_back(c);
      }
    }
    by_op_valid_ = true;
  }
  if (op.id >= by_op_.size()) return {};
  return by_op_[op.id];
}

std::optional<Op> EGraph::literal(EClassId id) const {
  for (NodeId n : classes_[uf_.find(id).v].nodes)
    if (store_.children(n).empty() && store_.op(n).is_literal()) return store_.op(n);
  return std::nullopt;
}

std::size_t EGraph::memory_bytes() const {
  std::size_t bytes = store_.memory_bytes() + hashcons_.memory_bytes() + uf_.size() * 4 + dead_.capacity() +
                      stamp_.capacity() * 4 + classes_.capacity() * sizeof(EClass) +
                      (pending_.capacity() + analysis_pending_.capacity()) * 4 + roots_.capacity() * 4;
  for (const EClass& c : classes_)
    bytes += c.nodes.capacity() * sizeof(ClassNode) + c.parents.capacity() * sizeof(NodeId);
  return bytes;
}

std::string EGraph::check_invariants() const {
  std::ostringstream err;
  if (!clean()) return "e-graph is not rebuilt";
  std::size_t live = 0;
  std::unordered_map<std::uint64_t, std::vector<NodeId>> seen;
  for (EClassId c : roots_) {
    const EClass& cls = classes_[c.v];
    for (std::size_t i = 0; i < cls.nodes.size(); ++i) {
      NodeId n = cls.nodes[i].id;
      if (dead_[n.v]) err << "class " << c.v << " lists retired node " << n.v << "; ";
      if (uf_.find(EClassId(n.v)) != c)
        err << "node " << n.v << " is listed in class " << c.v << " but belongs elsewhere; ";
      if (i && store_.less(n, cls.nodes[i - 1].id)) err << "class " << c.v << " nodes unsorted; ";
      for (EClassId k : store_.children(n))
        if (!uf_.is_root(k)) err << "node " << n.v << " has non-canonical child " << k.v << "; ";
      auto hit = hashcons_.find(store_, store_.op(n), store_.children(n), store_.hash(n));
      if (!hit || *hit != n) err << "node " << n.v << " missing from hash-cons; ";
      for (NodeId other : seen[store_.hash(n)])
        if (store_.equals(other, store_.op(n), store_.children(n)))
          err << "nodes " << other.v << " and " << n.v << " are congruent but both live; ";
      seen[store_.hash(n)].push_back(n);
      ++live;
    }
  }
  if (live != hashcons_.size())
    err << "hash-cons holds " << hashcons_.size() << " nodes, classes list " << live << "; ";
  if (roots_.size() != num_classes_) err << "class count mismatch; ";
  return err.str();
}

}  // namespace saturn::egraph
