#include "engine/onnx/export_convert.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/version_converter/convert.h>

#include <algorithm>
#include <map>
#include <set>

#include "engine/onnx/graph_import.h"
#include "engine/onnx/tensor_proto.h"

namespace kiln::onnx::detail {

namespace {

// value_info for every output of the imported nodes, from the types recorded at import
// (onnx_types; symbolic dims keep their names, "N", "sequence", as set_value_info writes them).
void add_recorded_value_info(const graph::Graph& g, const ExportNames& names, ::onnx::GraphProto* gp) {
  std::set<std::string> outputs;
  for (const auto& [id, name] : names.outputs) outputs.insert(name);
  for (const graph::Node& n : g.nodes()) {
    if (n.op.rfind("onnx.", 0) != 0 || n.op == "onnx.Initializer") continue;
    const std::string& types = graph::attr_string(n.attrs, "onnx_types");
    size_t arrow = types.find(" -> ");
    if (arrow == std::string::npos) continue;
    std::vector<graph::TensorType> out = parse_recorded_types(types.substr(arrow + 4));
    for (size_t i = 0; i < out.size(); ++i) {
      auto it = names.values.find({n.id, static_cast<int>(i)});
      if (it == names.values.end() || it->second.empty() || outputs.count(it->second)) continue;
      set_value_info(gp->add_value_info(), it->second, out[i]);
    }
  }
}

// "<consumer node>/<input name>" for value `v` (its first consumer's input, named as in the
// consumer's schema at `opset`), or "" when there is none.
std::string consumer_name(const ::onnx::GraphProto& gp, const std::string& v, int opset) {
  for (const ::onnx::NodeProto& c : gp.node()) {
    auto it = std::find(c.input().begin(), c.input().end(), v);
    if (it == c.input().end()) continue;
    const ::onnx::OpSchema* schema = ::onnx::OpSchemaRegistry::Schema(c.op_type(), opset, c.domain());
    if (!schema || schema->inputs().empty() || c.name().empty()) return "";
    auto i = std::min(static_cast<size_t>(it - c.input().begin()), schema->inputs().size() - 1);
    return c.name() + "/" + schema->inputs()[i].GetName();
  }
  return "";
}

void tidy(const ::onnx::ModelProto& before, ::onnx::ModelProto& model, int opset) {
  ::onnx::GraphProto* gp = model.mutable_graph();
  std::set<std::string> old_values, old_nodes, node_names, names, outputs;
  std::map<std::string, std::string> old_producer;  // first output -> node name, before
  for (const auto& n : before.graph().node()) {
    old_values.insert(n.output().begin(), n.output().end());
    old_nodes.insert(n.name());
    if (n.output_size() > 0) old_producer[n.output(0)] = n.name();
  }
  for (const auto& t : before.graph().initializer()) old_values.insert(t.name());
  for (const auto& v : gp->input()) names.insert(v.name());
  for (const auto& v : gp->output()) outputs.insert(v.name());
  for (const auto& t : gp->initializer()) names.insert(t.name());
  for (const auto& n : gp->node()) {
    names.insert(n.output().begin(), n.output().end());
    node_names.insert(n.name());
  }
  google::protobuf::RepeatedPtrField<::onnx::NodeProto> kept;
  for (const ::onnx::NodeProto& n : gp->node()) {
    bool constant = n.op_type() == "Constant" && n.domain().empty() && n.attribute_size() == 1 &&
                    n.attribute(0).name() == "value" && n.output_size() == 1 && !old_values.count(n.output(0));
    if (!constant) {
      *kept.Add() = n;
      continue;
    }
    ::onnx::TensorProto* t = gp->add_initializer();
    *t = n.attribute(0).t();
    t->set_name(n.output(0));
  }
  gp->mutable_node()->Swap(&kept);
  for (::onnx::NodeProto& n : *gp->mutable_node()) {
    if (old_nodes.count(n.name()) || n.output_size() == 0) continue;
    auto it = old_producer.find(n.output(0));
    if (it != old_producer.end() && !node_names.count(it->second)) {
      node_names.insert(it->second);
      n.set_name(it->second);
    }
  }
  std::map<std::string, std::string> renamed;
  for (::onnx::TensorProto& t : *gp->mutable_initializer()) {
    if (old_values.count(t.name()) || outputs.count(t.name())) continue;
    std::string want = consumer_name(*gp, t.name(), opset);
    if (want.empty() || names.count(want)) continue;
    names.insert(want);
    renamed[t.name()] = want;
    t.set_name(want);
  }
  for (::onnx::NodeProto& n : *gp->mutable_node())
    for (std::string& v : *n.mutable_input())
      if (auto it = renamed.find(v); it != renamed.end()) v = it->second;
}

}  // namespace

void set_value_info(::onnx::ValueInfoProto* v, const std::string& name, const graph::TensorType& t) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx_type_of(t.dtype));
  auto* shape = tt->mutable_shape();
  for (int64_t d : t.shape) {
    auto* dim = shape->add_dim();
    if (d >= 0) dim->set_dim_value(d);
    else if (d != graph::kUnknownDim) dim->set_dim_param(graph::dim_str(d));  // "N", "sequence"
    // "?": neither field, ONNX's unknown dim
  }
}

void convert_opset(::onnx::ModelProto& model, const graph::Graph& g, const ExportNames& names, int64_t opset) {
  try {
    ::onnx::ModelProto typed = model;
    add_recorded_value_info(g, names, typed.mutable_graph());
    ::onnx::ModelProto converted = ::onnx::version_conversion::ConvertVersion(typed, static_cast<int>(opset));
    converted.mutable_graph()->clear_value_info();
    tidy(model, converted, static_cast<int>(opset));
    ::onnx::checker::check_model(converted);
    model = std::move(converted);
  } catch (const std::exception&) {
  }
}

}  // namespace kiln::onnx::detail
