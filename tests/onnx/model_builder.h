// Small ONNX models built in memory with libonnx's protobuf classes, for the tests.
#pragma once
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::onnx::test {

inline ::onnx::ValueInfoProto value_info(const std::string& name, int32_t elem_type, const std::vector<int64_t>& dims) {
  ::onnx::ValueInfoProto v;
  v.set_name(name);
  auto* t = v.mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  auto* s = t->mutable_shape();
  for (int64_t d : dims) {
    if (d < 0) s->add_dim()->set_dim_param("N");
    else s->add_dim()->set_dim_value(d);
  }
  return v;
}

inline ::onnx::NodeProto* add_node(::onnx::GraphProto& g, const std::string& op, const std::vector<std::string>& in,
                                   const std::vector<std::string>& out, const std::string& name = "") {
  auto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& s : in) n->add_input(s);
  for (const auto& s : out) n->add_output(s);
  return n;
}

inline void set_ints(::onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void set_int(::onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void set_float(::onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

inline ::onnx::TensorProto* add_int64_initializer(::onnx::GraphProto& g, const std::string& name,
                                                  const std::vector<int64_t>& v) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(v.size()));
  for (int64_t x : v) t->add_int64_data(x);
  return t;
}

inline ::onnx::TensorProto* add_float_initializer(::onnx::GraphProto& g, const std::string& name,
                                                  const std::vector<int64_t>& dims, const std::vector<float>& v) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  for (float x : v) t->add_float_data(x);
  return t;
}

inline ::onnx::ModelProto model_with(const ::onnx::GraphProto& g, int64_t opset) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("kiln-tests");
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  *m.mutable_graph() = g;
  return m;
}

}  // namespace kiln::onnx::test
