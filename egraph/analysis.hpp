// E-class analyses: facts kept per e-class and joined when classes merge.
//
// An analysis is a plug-in owned by the e-graph. It stores its own data per
// class id and keeps egg's contract: make() gives the fact for a new class
// from its founding node, merge() joins two classes' facts and says which
// side changed (so the e-graph re-derives the parents of a changed side),
// join_node() re-derives a class's fact from one of its nodes during rebuild,
// and modify() may change the e-graph in response (add a literal, union).
// Facts must form a semilattice under merge, or rebuild may not terminate.
#pragma once

#include <vector>

#include "egraph/ids.hpp"

namespace saturn::egraph {

class EGraph;

struct DidMerge {
  bool into_changed = false;
  bool from_changed = false;
};

class Analysis {
 public:
  virtual ~Analysis() = default;
  virtual void make(const EGraph& g, EClassId id, NodeId node) = 0;
  virtual DidMerge merge(EClassId into, EClassId from) = 0;
  virtual bool join_node(const EGraph& g, EClassId into, NodeId node) = 0;
  virtual void modify(EGraph&, EClassId) {}
};

// Stores one Data per class id. Derived supplies
//   Data make_data(const EGraph&, NodeId) const;
//   DidMerge merge_data(Data& into, const Data& from);
template <class Data, class Derived>
class TypedAnalysis : public Analysis {
 public:
  // `id` must be canonical (EGraph::find).
  const Data& data(EClassId id) const { return data_[id.v]; }

  void make(const EGraph& g, EClassId id, NodeId node) override {
    if (data_.size() <= id.v) data_.resize(id.v + 1);
    data_[id.v] = self().make_data(g, node);
  }
  DidMerge merge(EClassId into, EClassId from) override {
    DidMerge d = self().merge_data(data_[into.v], data_[from.v]);
    data_[from.v] = Data{};
    return d;
  }
  bool join_node(const EGraph& g, EClassId into, NodeId node) override {
    Data fresh = self().make_data(g, node);
    return self().merge_data(data_[into.v], fresh).into_changed;
  }

 protected:
  std::vector<Data> data_;

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

}  // namespace saturn::egraph
