// ONNX models built in code for the import tests: inputs with static or
// symbolic dimensions, nodes, initializers and attributes.
#pragma once

#include <onnx/onnx_pb.h>

#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/onnx_import.hpp"

namespace saturn::test {

struct ModelBuilder {
  onnx::ModelProto m;
  explicit ModelBuilder(int opset) {
    m.set_ir_version(8);
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
  }
  void input(const std::string& name, int elem, std::vector<std::string> dims) {
    auto* v = m.mutable_graph()->add_input();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    for (auto& d : dims) {
      auto* dim = tt->mutable_shape()->add_dim();
      if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0])))
        dim->set_dim_value(std::stoll(d));
      else
        dim->set_dim_param(d);
    }
  }
  void output(const std::string& name) { m.mutable_graph()->add_output()->set_name(name); }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs,
                        const std::string& name = "") {
    auto* n = m.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + outs[0] : name);
    for (auto& i : ins) n->add_input(i);
    for (auto& o : outs) n->add_output(o);
    return n;
  }
  void init_ints(const std::string& name, std::vector<std::int64_t> v) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(7);
    t->add_dims(static_cast<std::int64_t>(v.size()));
    for (auto x : v) t->add_int64_data(x);
  }
  // A scalar initializer: FLOAT (1) or BOOL (9).
  void init_scalar(const std::string& name, int elem, double v) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(elem);
    if (elem == 1)
      t->add_float_data(static_cast<float>(v));
    else
      t->add_int32_data(static_cast<std::int32_t>(v));
  }
  Expected<ir::Graph> import() const { return ir::import_onnx_bytes(m.SerializeAsString(), "built.onnx"); }
};

inline void attr_int(onnx::NodeProto* n, const std::string& name, std::int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

}  // namespace saturn::test
