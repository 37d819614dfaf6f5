#include "engine/onnx/export_nodes.h"

#include <onnx/onnx_pb.h>
#include <nlohmann/json.hpp>


#include "engine/core/error.h"
#include "engine/graph/op_schema.h"
#include "engine/onnx/tensor_proto.h"

namespace kiln::onnx::detail {

using graph::attr_ints;
using graph::attr_string;
using json = nlohmann::json;
using Ints = std::vector<int64_t>;

std::string value_name(const graph::Node& n, int port) {
  if (n.op == "onnx.Initializer") return n.name + ".value";  // the initializer itself
  return port == 0 ? n.name : n.name + ":" + std::to_string(port);
}

::onnx::NodeProto* add_node(ExportContext& ctx, const std::string& op, const std::string& name,
                            const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  ::onnx::NodeProto* node = ctx.graph->add_node();
  node->set_op_type(op);
  node->set_name(name);
  for (const std::string& i : inputs) node->add_input(i);
  for (const std::string& o : outputs) node->add_output(o);
  return node;
}

namespace {

// OnnxEmitter (engine/graph/onnx_export.h) over the model being written.
class Emitter final : public graph::OnnxEmitter {
 public:
  explicit Emitter(ExportContext& ctx) : ctx_(ctx) {}
  int64_t opset() const override { return ctx_.opset; }
  const std::string& padding_mask_ids() const override { return ctx_.padding_mask_ids; }
  void node(const std::string& op_type, const std::string& name, const std::vector<std::string>& inputs,
            const std::vector<std::string>& outputs, const graph::OnnxAttrs& attrs) override {
    ::onnx::NodeProto* node = add_node(ctx_, op_type, name, inputs, outputs);
    using A = ::onnx::AttributeProto;
    for (const auto& [key, value] : attrs) {
      A* a = node->add_attribute();
      a->set_name(key);
      if (const auto* i = std::get_if<int64_t>(&value)) a->set_type(A::INT), a->set_i(*i);
      else if (const auto* f = std::get_if<double>(&value)) a->set_type(A::FLOAT), a->set_f(static_cast<float>(*f));
      else if (const auto* s = std::get_if<std::string>(&value)) a->set_type(A::STRING), a->set_s(*s);
      else if (const auto* v = std::get_if<Ints>(&value)) {
        a->set_type(A::INTS);
        for (int64_t x : *v) a->add_ints(x);
      } else {
        a->set_type(A::STRINGS);
        for (const std::string& x : std::get<std::vector<std::string>>(value)) a->add_strings(x);
      }
    }
  }
  std::string param(const graph::OnnxExportNode& n, const std::string& key, const graph::SymShape& shape) override {
    const std::string name = n.name + "." + key;
    add_initializer(ctx_, n.name, n.op, name, graph::TensorType{DType::f32, shape});
    return name;
  }
  Tensor state(const graph::OnnxExportNode& n, const std::string& key) const override {
    auto it = ctx_.params.find(n.name + "." + key);
    KILN_CHECK(it != ctx_.params.end(), ValueError, "export: node '", n.name, "' (", n.op, "): parameter '", n.name,
               ".", key, "' is not in the state_dict");
    return it->second;
  }
  std::string constant(const std::string& name, const Tensor& value) override {
    ::onnx::TensorProto* p = ctx_.graph->add_initializer();
    tensor_to_proto(value, *p);
    p->set_name(name);
    return name;
  }

 private:
  ExportContext& ctx_;
};

}  // namespace

void add_initializer(ExportContext& ctx, const std::string& node, const std::string& op, const std::string& key,
                     const graph::TensorType& type, const std::string& onnx_name) {
  if (ctx.used.count(key)) return;
  auto it = ctx.params.find(key);
  KILN_CHECK(it != ctx.params.end(), ValueError, "export: node '", node, "' (", op, "): parameter '", key,
             "' is not in the state_dict");
  const Tensor& t = it->second;
  KILN_CHECK(t.shape() == Shape(type.shape.begin(), type.shape.end()), ValueError, "export: node '", node,
             "': parameter '", key, "' has shape ", shape_str(t.shape()), ", the node needs ", graph::shape_str(type.shape));
  ::onnx::TensorProto* p = ctx.graph->add_initializer();
  tensor_to_proto(t, *p);
  p->set_name(onnx_name.empty() ? key : onnx_name);
  ctx.used[key] = 1;
}

void export_imported(ExportContext& ctx, const graph::Node& n, const std::vector<std::string>& inputs,
                     const std::vector<std::string>& outputs, const std::string& node_name) {
  const std::string op = n.op.substr(5);
  const Ints& slots = attr_ints(n.attrs, "onnx_input_slots");
  std::vector<std::string> in;
  for (size_t p = 0; p < inputs.size() && p < slots.size(); ++p) {
    size_t slot = static_cast<size_t>(slots[p]);
    if (in.size() <= slot) in.resize(slot + 1);
    in[slot] = inputs[p];
  }
  std::vector<std::string> out = outputs;
  while (!out.empty() && out.back().empty()) out.pop_back();  // trailing omitted optional outputs
  ::onnx::NodeProto* node = add_node(ctx, op, node_name, in, out);
  json attrs = json::parse(attr_string(n.attrs, "onnx_attributes"));
  for (const auto& [name, v] : attrs.items()) {
    auto* a = node->add_attribute();
    a->set_name(name);
    using A = ::onnx::AttributeProto;
    if (v.contains("int")) a->set_type(A::INT), a->set_i(v["int"].get<int64_t>());
    else if (v.contains("float")) a->set_type(A::FLOAT), a->set_f(v["float"].get<float>());
    else if (v.contains("string")) a->set_type(A::STRING), a->set_s(v["string"].get<std::string>());
    else if (v.contains("ints")) {
      a->set_type(A::INTS);
      for (int64_t x : v["ints"].get<Ints>()) a->add_ints(x);
    } else if (v.contains("floats")) {
      a->set_type(A::FLOATS);
      for (double x : v["floats"].get<std::vector<double>>()) a->add_floats(static_cast<float>(x));
    } else if (v.contains("strings")) {
      a->set_type(A::STRINGS);
      for (const auto& s : v["strings"].get<std::vector<std::string>>()) a->add_strings(s);
    } else if (v.contains("tensor")) {
      a->set_type(A::TENSOR);
      const json& t = v["tensor"];
      Tensor value = Tensor::from_vector<double>(t.at("data").get<std::vector<double>>(), t.at("shape").get<Shape>())
                         .to(dtype_from_name(t.at("dtype").get<std::string>()));
      tensor_to_proto(value, *a->mutable_t());
    } else {
      throw ValueError("export: node '" + n.name + "': onnx_attributes entry '" + name + "' has no value");
    }
  }
}

void export_native(ExportContext& ctx, const graph::Node& n, const graph::NodeInfo& info,
                   const std::vector<std::string>& inputs) {
  const graph::OpSchema& schema = graph::OpRegistry::global().get(n.op);
  KILN_CHECK(schema.onnx_export, ValueError, "export: node '", n.name, "': op '", n.op, "' has no ONNX mapping yet");
  const graph::Attributes attrs = schema.with_defaults(n.attrs);
  Emitter emitter(ctx);
  schema.onnx_export(emitter, graph::OnnxExportNode{n.name, n.op, attrs, info.inputs, info.outputs, inputs});
}

}  // namespace kiln::onnx::detail
