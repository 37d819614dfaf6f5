#include "engine/quant/onnx/export_qdq.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <set>

#include "engine/core/error.h"
#include "engine/onnx/tensor_proto.h"
#include "engine/quant/scheme.h"

namespace kiln::quant {

namespace {

using ::onnx::GraphProto;
using ::onnx::NodeProto;
using onnx::tensor_to_proto;

// The float state_dict of the int8 model: the float-run nodes' parameters as they are, each int8
// layer's weight and bias dequantized (the values its QDQ form computes), its other buffers left out.
nn::StateDict float_state(const quant::Int8Model& m) {
  std::set<std::string> int8;
  for (const auto& l : m.layers()) int8.insert(l->name());
  nn::StateDict state;
  for (const auto& [key, t] : m.state_dict()) {
    const auto dot = key.rfind('.');
    if (dot == std::string::npos || !int8.count(key.substr(0, dot))) state.emplace_back(key, t);
  }
  for (const auto& l : m.layers()) {
    const QuantizedParams q = l->kernel_params();
    state.emplace_back(l->name() + ".weight", quant::dequantize_weight({l->int8_weight(), q.weight_scales}));
    if (!l->int32_bias().defined()) continue;
    std::vector<float> scale(q.weight_scales.size());
    for (size_t c = 0; c < scale.size(); ++c) scale[c] = q.in_scale * q.weight_scales[c];
    const auto cout = static_cast<int64_t>(scale.size());
    state.emplace_back(l->name() + ".bias", l->int32_bias().to(DType::f32) * Tensor::from_vector<float>(scale, {cout}));
  }
  return state;
}

class QdqWriter {
 public:
  explicit QdqWriter(GraphProto& g) : g_(g) {}

  void add_initializer(const std::string& name, const Tensor& value) {
    ::onnx::TensorProto* p = g_.add_initializer();
    tensor_to_proto(value.contiguous(), *p);
    p->set_name(name);
  }
  void remove_initializer(const std::string& name) {
    for (int i = 0; i < g_.initializer_size(); ++i)
      if (g_.initializer(i).name() == name) {
        g_.mutable_initializer()->DeleteSubrange(i, 1);
        return;
      }
  }
  bool has_initializer(const std::string& name) const {
    for (const auto& t : g_.initializer())
      if (t.name() == name) return true;
    return false;
  }
  // Indices of the nodes that read `value`.
  std::vector<int> readers(const std::string& value) const {
    std::vector<int> out;
    for (int i = 0; i < g_.node_size(); ++i)
      for (const std::string& in : g_.node(i).input())
        if (in == value) {
          out.push_back(i);
          break;
        }
    return out;
  }
  // A QuantizeLinear or DequantizeLinear node (axis when >= 0) to place before node `at` (-1: first of all)
  // or after it (after = true).
  void add_qdq_node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs,
                    const std::string& output, int64_t axis, int at, bool after) {
    NodeProto n;
    n.set_op_type(op);
    n.set_name(name);
    for (const std::string& i : inputs) n.add_input(i);
    n.add_output(output);
    if (axis >= 0) {
      ::onnx::AttributeProto* a = n.add_attribute();
      a->set_name("axis");
      a->set_type(::onnx::AttributeProto::INT);
      a->set_i(axis);
    }
    (after ? post_ : pre_)[at].push_back(std::move(n));
  }
  // Q -> DQ of `value` with per-tensor u8 parameters, named after `prefix`; returns the DQ output.
  std::string add_qdq_pair(const std::string& prefix, const std::string& value, const quant::ActivationQParams& p,
                           int at, bool after) {
    add_initializer(prefix + "_scale", Tensor::scalar(p.scale, DType::f32));
    add_initializer(prefix + "_zero_point", Tensor::scalar(p.zero_point, DType::u8));
    add_qdq_node("QuantizeLinear", prefix + "_QuantizeLinear", {value, prefix + "_scale", prefix + "_zero_point"},
                 prefix + "_quantized", -1, at, after);
    add_qdq_node("DequantizeLinear", prefix + "_DequantizeLinear",
                 {prefix + "_quantized", prefix + "_scale", prefix + "_zero_point"}, prefix + "_dequantized", -1, at, after);
    return prefix + "_dequantized";
  }
  // The nodes in their final order: weight and bias DequantizeLinear first, then each node with
  // the pairs placed before and after it.
  void finish() {
    google::protobuf::RepeatedPtrField<NodeProto> nodes;
    for (NodeProto& n : pre_[-1]) *nodes.Add() = std::move(n);
    for (int i = 0; i < g_.node_size(); ++i) {
      for (NodeProto& n : pre_[i]) *nodes.Add() = std::move(n);
      *nodes.Add() = g_.node(i);
      for (NodeProto& n : post_[i]) *nodes.Add() = std::move(n);
    }
    g_.mutable_node()->Swap(&nodes);
  }
  GraphProto& graph() { return g_; }
  const GraphProto& graph() const { return g_; }

 private:
  GraphProto& g_;
  std::map<int, std::vector<NodeProto>> pre_, post_;
};

// Where one int8 layer sits in the float export.
struct LayerNodes {
  int op = -1;            // the Conv / Gemm / MatMul
  int output_node = -1;   // the node whose output(0) is the layer's output (its fused Relu, a MatMul's bias Add)
};

LayerNodes locate(const QdqWriter& w, const quant::QuantizedLayer& l) {
  const GraphProto& g = w.graph();
  const std::string weight = l.name() + ".weight";
  std::vector<int> r = w.readers(weight);
  KILN_CHECK(r.size() == 1, ValueError, "QDQ export: layer '", l.name(), "': its weight '", weight, "' is read by ",
             r.size(), " nodes of the float export, not one");
  LayerNodes out;
  out.op = r[0];
  if (g.node(out.op).op_type() == "Transpose") {  // Linear on [N, *, in]: MatMul(x, Transpose(weight))
    r = w.readers(g.node(out.op).output(0));
    KILN_CHECK(r.size() == 1, ValueError, "QDQ export: layer '", l.name(), "': its transposed weight has ", r.size(),
               " readers");
    out.op = r[0];
  }
  const std::string& op_type = g.node(out.op).op_type();
  KILN_CHECK(op_type == "Conv" || op_type == "Gemm" || op_type == "MatMul", ValueError, "QDQ export: layer '",
             l.name(), "' became ONNX ", op_type, ", not Conv, Gemm or MatMul");
  out.output_node = out.op;
  auto sole_reader = [&](const char* type) {
    const std::vector<int> rr = w.readers(g.node(out.output_node).output(0));
    return rr.size() == 1 && g.node(rr[0]).op_type() == type ? rr[0] : -1;
  };
  if (op_type == "MatMul" && l.int32_bias().defined()) {
    const int add = sole_reader("Add");
    KILN_CHECK(add >= 0, ValueError, "QDQ export: layer '", l.name(), "': its MatMul is not followed by the bias Add");
    out.output_node = add;
  }
  if (l.relu()) {
    const int relu = sole_reader("Relu");
    KILN_CHECK(relu >= 0, ValueError, "QDQ export: layer '", l.name(), "' applies a ReLU, but its output is not read by one Relu");
    out.output_node = relu;
  }
  return out;
}

}  // namespace

std::string export_qdq(const Int8Model& model, const onnx::ExportOptions& options) {
  KILN_CHECK(options.opset >= 13, ValueError, "QDQ export: per-channel DequantizeLinear needs opset 13 or later, not ",
             options.opset);
  const std::string bytes = onnx::export_model(model.graph(), float_state(model), options);
  ::onnx::ModelProto proto;
  KILN_CHECK(proto.ParseFromString(bytes), ValueError, "QDQ export: the float export does not parse");
  QdqWriter w(*proto.mutable_graph());
  std::map<std::string, LayerNodes> where;
  for (const auto& l : model.layers()) where[l->name()] = locate(w, *l);

  // Weights and biases: the int8 / int32 initializers and their DequantizeLinear, named as the
  // float initializers they replace.
  for (const auto& l : model.layers()) {
    const QuantizedParams q = l->kernel_params();
    const auto cout = static_cast<int64_t>(q.weight_scales.size());
    const std::string weight = l->name() + ".weight", bias = l->name() + ".bias";
    w.remove_initializer(weight);
    w.add_initializer(weight + "_quantized", l->int8_weight());
    w.add_initializer(weight + "_scale", Tensor::from_vector<float>(q.weight_scales, {cout}));
    w.add_initializer(weight + "_zero_point", Tensor::zeros({cout}, DType::i8));
    w.add_qdq_node("DequantizeLinear", weight + "_DequantizeLinear",
                   {weight + "_quantized", weight + "_scale", weight + "_zero_point"}, weight, 0, -1, false);
    if (!l->int32_bias().defined()) continue;
    KILN_CHECK(w.has_initializer(bias), ValueError, "QDQ export: layer '", l->name(), "': no bias initializer '", bias,
               "' in the float export");
    std::vector<float> scale(q.weight_scales.size());
    for (size_t c = 0; c < scale.size(); ++c) scale[c] = q.in_scale * q.weight_scales[c];
    w.remove_initializer(bias);
    w.add_initializer(bias + "_quantized", l->int32_bias());
    w.add_initializer(bias + "_scale", Tensor::from_vector<float>(scale, {cout}));
    w.add_qdq_node("DequantizeLinear", bias + "_DequantizeLinear", {bias + "_quantized", bias + "_scale"}, bias, 0, -1,
                   false);
  }
  // Outputs that stay u8 for the next int8 layer (Note [u8 chain]): Q -> DQ with its input parameters.
  std::set<std::string> quantized_values;
  for (const auto& l : model.layers()) {
    const quant::QuantizedLayer* next = model.u8_next(l->name());
    if (!next) continue;
    const int k = where.at(l->name()).output_node;
    const std::string v = w.graph().node(k).output(0);
    const std::vector<int> readers = w.readers(v);
    const std::string dq = w.add_qdq_pair(l->name() + ".output", v, next->input_qparams(), k, true);
    for (int r : readers)
      for (std::string& in : *w.graph().mutable_node(r)->mutable_input())
        if (in == v) in = dq;
    quantized_values.insert(dq);
  }
  // Inputs: Q -> DQ with the layer's calibrated parameters, unless the value is already the
  // previous layer's requantized output.
  for (const auto& l : model.layers()) {
    const int op = where.at(l->name()).op;
    std::string& x = *w.graph().mutable_node(op)->mutable_input(0);
    if (quantized_values.count(x)) continue;
    x = w.add_qdq_pair(l->name() + ".input", std::string(x), l->input_qparams(), op, false);
  }
  w.finish();
  std::string out;
  KILN_CHECK(proto.SerializeToString(&out), ValueError, "QDQ export: the model does not serialize (over 2 GB?)");
  return out;
}

}  // namespace kiln::quant
