#include "engine/onnx/graph_import.h"

#include <nlohmann/json.hpp>

#include <exception>
#include <map>
#include <set>

#include "engine/core/error.h"
#include "engine/onnx/fold.h"
#include "engine/onnx/graph_import_native.h"
#include "engine/onnx/graph_import_symbols.h"
#include "engine/onnx/graph_import_values.h"
#include "engine/onnx/op_context.h"

namespace kiln::onnx {

using graph::AttrSpec;
using graph::AttrType;
using graph::Attributes;
using graph::kBatch;
using graph::OpSchema;
using graph::SymShape;
using graph::TensorType;
using json = nlohmann::json;

namespace {

// ---- ONNX attributes <-> JSON ----
json tensor_json(const Tensor& t) {
  return json{{"dtype", dtype_name(t.dtype())}, {"shape", t.shape()}, {"data", t.to_vector<double>()}};
}
Tensor tensor_of_json(const json& j) {
  return from_doubles(j.at("data").get<std::vector<double>>(), j.at("shape").get<Shape>(),
                      dtype_from_name(j.at("dtype").get<std::string>()), Device());
}

json attributes_json(const Node& n) {
  json j = json::object();
  for (const auto& [name, a] : n.attributes) {
    switch (a.type) {
      case Attribute::Type::Int: j[name] = {{"int", a.i}}; break;
      case Attribute::Type::Float: j[name] = {{"float", a.f}}; break;
      case Attribute::Type::String: j[name] = {{"string", a.s}}; break;
      case Attribute::Type::Ints: j[name] = {{"ints", a.ints}}; break;
      case Attribute::Type::Floats: j[name] = {{"floats", a.floats}}; break;
      case Attribute::Type::Strings: j[name] = {{"strings", a.strings}}; break;
      case Attribute::Type::Tensor: j[name] = {{"tensor", tensor_json(a.t)}}; break;
      default:
        throw ValueError("node '" + n.name + "' (" + n.op_type + "): attribute '" + name + "' of type " +
                         attribute_type_name(a.type) + " does not map to the graph IR yet");
    }
  }
  return j;
}

std::map<std::string, Attribute> attributes_of_json(const std::string& text) {
  std::map<std::string, Attribute> out;
  json j = json::parse(text);
  for (const auto& [name, v] : j.items()) {
    Attribute a;
    a.name = name;
    if (v.contains("int")) a.type = Attribute::Type::Int, a.i = v["int"].get<int64_t>();
    else if (v.contains("float")) a.type = Attribute::Type::Float, a.f = v["float"].get<double>();
    else if (v.contains("string")) a.type = Attribute::Type::String, a.s = v["string"].get<std::string>();
    else if (v.contains("ints")) a.type = Attribute::Type::Ints, a.ints = v["ints"].get<std::vector<int64_t>>();
    else if (v.contains("floats")) a.type = Attribute::Type::Floats, a.floats = v["floats"].get<std::vector<double>>();
    else if (v.contains("strings")) a.type = Attribute::Type::Strings, a.strings = v["strings"].get<std::vector<std::string>>();
    else if (v.contains("tensor")) a.type = Attribute::Type::Tensor, a.t = tensor_of_json(v["tensor"]);
    else throw ValueError("onnx_attributes: attribute '" + name + "' has no value");
    out[name] = std::move(a);
  }
  return out;
}

AttrSpec spec(std::string name, AttrType type, graph::AttrValue def, std::string desc) {
  AttrSpec a;
  a.name = std::move(name);
  a.type = type;
  a.default_value = std::move(def);
  a.description = std::move(desc);
  return a;
}

// The module of an onnx.Initializer node: the tensor as parameter (or buffer) "value".
class InitializerModule : public nn::Module {
 public:
  InitializerModule(const Shape& shape, DType dtype, bool trainable) {
    Tensor t = Tensor::zeros(shape, dtype);
    value_ = trainable && is_floating(dtype) ? register_parameter("value", t) : register_buffer("value", t);
  }
  Tensor forward(const Tensor&) override { return value_; }
  std::string type_name() const override { return "Initializer"; }
  Tensor value_;
};

OpSchema initializer_schema() {
  OpSchema s;
  s.name = "onnx.Initializer";
  s.category = "ONNX";
  s.description = "A constant tensor of an imported ONNX model (an initializer or a Constant node).";
  s.outputs = {{"out", "the tensor"}};
  s.attributes = {spec("shape", AttrType::Ints, std::vector<int64_t>{}, "Shape of the tensor (no batch dimension)."),
                  spec("dtype", AttrType::String, std::string("f32"), "Element type (f32, f16, i64, ...)."),
                  spec("trainable", AttrType::Bool, true, "Whether training updates it (floating tensors only)."),
                  spec("onnx_name", AttrType::String, std::string(""),
                       "Its value name in the imported model (export keeps it; \"\": the node's name + \".value\").")};
  s.infer = [](const std::vector<TensorType>&, const Attributes& a) {
    return std::vector<TensorType>{{dtype_from_name(graph::attr_string(a, "dtype")), graph::attr_ints(a, "shape")}};
  };
  s.parameters = [](const std::vector<TensorType>&, const Attributes& a) {
    std::vector<graph::ParamSpec> p;
    if (graph::attr_bool(a, "trainable") && is_floating(dtype_from_name(graph::attr_string(a, "dtype"))))
      p.push_back({"value", graph::attr_ints(a, "shape")});
    return p;
  };
  s.build = [](const std::vector<TensorType>&, const Attributes& a) -> std::shared_ptr<nn::Module> {
    return std::make_shared<InitializerModule>(graph::attr_ints(a, "shape"),
                                               dtype_from_name(graph::attr_string(a, "dtype")),
                                               graph::attr_bool(a, "trainable"));
  };
  s.forward = [](nn::Module* m, const std::vector<Tensor>&, const Attributes&) {
    return std::vector<Tensor>{static_cast<InitializerModule*>(m)->value_};
  };
  return s;
}

// Output ports of an op's schema: the most outputs an ONNX node of that type may have
// (Split: up to 16 parts); unused ports stay unconnected.
size_t output_ports(const std::string& op) {
  static const std::map<std::string, size_t> multi{{"TopK", 2}, {"Dropout", 2}, {"BatchNormalization", 3},
                                                   {"LayerNormalization", 3}, {"SoftmaxCrossEntropyLoss", 2},
                                                   {"MaxPool", 2}, {"Split", 16}, {"LSTM", 3}, {"GRU", 2},
                                                   {"RNN", 2}};
  auto it = multi.find(op);
  return it == multi.end() ? 1 : it->second;
}

// Elements of one sample (the batch dimension N counted as 1), saturating.
int64_t sample_elems(const graph::SymShape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    int64_t v = graph::is_symbolic(d) ? 1 : d;
    n = v != 0 && n > INT64_MAX / v ? INT64_MAX : n * v;
  }
  return n;
}
int64_t sat_mul(int64_t a, int64_t b) { return a != 0 && b > INT64_MAX / a ? INT64_MAX : a * b; }

// Multiply-adds per sample of the ops that do the arithmetic of a model (the rest count 0):
// Conv / ConvInteger / QLinearConv: outputs x (C_in / group x kernel) = outputs x numel(W) / M;
// ConvTranspose: inputs x numel(W) / C_in; Gemm, MatMul (and the integer and QLinear forms):
// outputs x K, K the shared dimension of A. `in` are the connected ports, `slots` their ONNX
// input indexes.
int64_t onnx_macs(const std::string& op, const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                  const Attributes& a) {
  const std::vector<int64_t>& slots = graph::attr_ints(a, "onnx_input_slots");
  auto slot = [&](int64_t k) -> const TensorType* {
    for (size_t p = 0; p < in.size() && p < slots.size(); ++p)
      if (slots[p] == k) return &in[p];
    return nullptr;
  };
  if (out.empty()) return 0;
  bool qlinear = op == "QLinearConv" || op == "QLinearMatMul";
  const TensorType* x = slot(0);
  const TensorType* w = slot(qlinear ? 3 : 1);
  if (!x || !w || w->shape.empty() || x->shape.empty()) return 0;
  if (op == "Conv" || op == "ConvInteger" || op == "QLinearConv") {
    int64_t m = w->shape[0] > 0 ? w->shape[0] : 1;
    return sat_mul(sample_elems(out[0].shape), sample_elems(w->shape) / m);
  }
  if (op == "ConvTranspose") {
    int64_t c = w->shape[0] > 0 ? w->shape[0] : 1;
    return sat_mul(sample_elems(x->shape), sample_elems(w->shape) / c);
  }
  if (op == "Gemm" || op == "MatMul" || op == "MatMulInteger" || op == "QLinearMatMul") {
    int64_t k = x->shape.back();
    if (op == "Gemm") {
      std::map<std::string, Attribute> attrs = attributes_of_json(graph::attr_string(a, "onnx_attributes"));
      auto t = attrs.find("transA");
      if (t != attrs.end() && t->second.i != 0 && x->shape.size() == 2) k = x->shape[0];
    }
    return sat_mul(sample_elems(out[0].shape), graph::is_symbolic(k) ? 1 : k);
  }
  return 0;
}

OpSchema onnx_schema(const std::string& op_type, const OpFn& fn) {
  OpSchema s;
  size_t ports = output_ports(op_type);
  s.name = "onnx." + op_type;
  s.category = "ONNX";
  s.description = "ONNX " + op_type + " (onnx.ai Operators.md), run by Kiln's ONNX executor.";
  s.inputs = {{"in", "ONNX input"}};
  for (size_t i = 0; i < ports; ++i) s.outputs.push_back({ports == 1 ? "out" : "out" + std::to_string(i), "ONNX output"});
  s.count_attribute = "num_inputs";
  s.attributes = {spec("num_inputs", AttrType::Int, int64_t{1}, "Number of connected inputs."),
                  spec("onnx_input_slots", AttrType::Ints, std::vector<int64_t>{0}, "ONNX input index of each port."),
                  spec("onnx_outputs", AttrType::Int, int64_t{1}, "Number of ONNX outputs."),
                  spec("onnx_attributes", AttrType::String, std::string("{}"), "The node's ONNX attributes (JSON)."),
                  spec("opset", AttrType::Int, int64_t{17}, "The ai.onnx opset of the model."),
                  spec("onnx_types", AttrType::String, std::string(""), "Input and output types seen at import."),
                  spec("onnx_names", AttrType::String, std::string(""),
                       "The node's name and its input and output value names in the imported model (JSON; export keeps them).")};
  s.attributes[0].min = 0;
  s.attributes[2].min = 1;
  s.infer = [op_type](const std::vector<TensorType>& in, const Attributes& a) {
    std::vector<TensorType> want, out;
    detail::split_types(graph::attr_string(a, "onnx_types"), want, out);
    KILN_CHECK(want.size() == in.size(), ShapeError, "onnx.", op_type, ": ", in.size(), " inputs, imported with ",
               want.size());
    for (size_t i = 0; i < in.size(); ++i)
      KILN_CHECK(detail::fits(want[i], in[i]), ShapeError, "onnx.", op_type, ": input ", i, " is ", in[i].str(),
                 " but the model was imported with ", want[i].str(), " (re-import it for other shapes)");
    out = detail::substitute(want, in, std::move(out));
    out.resize(output_ports(op_type), TensorType{DType::f32, {}});
    return out;
  };
  s.macs = [op_type](const std::vector<TensorType>& in, const std::vector<TensorType>& out, const Attributes& a) {
    return onnx_macs(op_type, in, out, a);
  };
  s.forward = [op_type, fn](nn::Module*, const std::vector<Tensor>& in, const Attributes& a) {
    Node node;
    node.op_type = op_type;
    node.name = "onnx." + op_type;
    node.attributes = attributes_of_json(graph::attr_string(a, "onnx_attributes"));
    const std::vector<int64_t>& slots = graph::attr_ints(a, "onnx_input_slots");
    std::vector<Tensor> inputs;
    for (size_t p = 0; p < in.size() && p < slots.size(); ++p) {
      if (inputs.size() <= static_cast<size_t>(slots[p])) inputs.resize(static_cast<size_t>(slots[p]) + 1);
      inputs[static_cast<size_t>(slots[p])] = in[p];
    }
    for (size_t i = 0; i < inputs.size(); ++i) node.inputs.push_back(inputs[i].defined() ? "x" : "");
    for (int64_t i = 0; i < graph::attr_int(a, "onnx_outputs"); ++i) node.outputs.push_back("y" + std::to_string(i));
    Device device = in.empty() ? Device() : in[0].device();
    OpContext ctx(node, graph::attr_int(a, "opset"), std::move(inputs), device,
                  [](const Graph&, const std::vector<Value>&) -> std::vector<Value> {
                    throw ValueError("subgraphs do not run inside the graph IR yet");
                  });
    std::vector<Tensor> out = fn(ctx);
    out.resize(output_ports(op_type));
    return out;
  };
  return s;
}

std::string identifier(const std::string& raw, std::set<std::string>& taken) {
  std::string s;
  for (char c : raw) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    s += ok ? c : '_';
  }
  size_t first = s.find_first_not_of('_');
  s = first == std::string::npos ? "node" : s.substr(first);
  if (s[0] >= '0' && s[0] <= '9') s = "n" + s;
  std::string name = s;
  for (int i = 1; taken.count(name); ++i) name = s + "_" + std::to_string(i);
  taken.insert(name);
  return name;
}

}  // namespace

void register_onnx_schemas(graph::OpRegistry& r) {
  if (!r.find("onnx.Initializer")) r.add(initializer_schema());
  for (const auto& [op, fn] : onnx_ops())
    if (!r.find("onnx." + op)) r.add(onnx_schema(op, fn));
}

std::vector<TensorType> parse_recorded_types(const std::string& types) { return detail::parse_types(types); }

ImportedGraph import_graph(const Model& model) {
  register_onnx_schemas();
  Model folded = model;
  fold_shape_subgraphs(folded);  // shape-only subgraphs become initializers (fold.h)
  Session session(std::move(folded));  // UnsupportedError lists every op Kiln cannot run
  const Graph& g = session.model().graph;
  for (const Node& n : g.nodes)
    KILN_CHECK(onnx_ops().count(op_key(n)), ValueError, "node '", n.name, "' (", n.op_type, "): ",
               detail::unmapped_reason(n));
  for (const ValueInfo& v : g.inputs)
    KILN_CHECK(!v.is_sequence, ValueError, "graph input '", v.name, "' is a sequence; the graph IR takes tensors");
  // Run twice, recording every value's type (Note [Symbols at import]).
  for (const ValueInfo& v : g.inputs)
    KILN_CHECK(v.has_shape, ValueError, "graph input '", v.name, "' has no shape; Kiln needs its rank to import");
  const detail::InputSymbols symbols(g.inputs);
  std::map<std::string, TensorType> types;
  std::map<std::string, Tensor> constants;  // Constant nodes' values
  auto run_twice = [&](bool shared) {
    types.clear();
    constants.clear();
    for (int run : {0, 1}) {
      std::map<std::string, Tensor> feed;
      for (const ValueInfo& v : g.inputs) {
        Shape s;
        for (int64_t d : symbols.shape_of(v)) s.push_back(d >= 0 ? d : symbols.size_in_run(d, run, shared));
        feed[v.name] = Tensor::ones(s, dtype_of_onnx(v.elem_type, "graph input '" + v.name + "'"));
      }
      auto record = [&](const std::string& name, const Tensor& t) {
        TensorType tt{t.dtype(), SymShape(t.shape().begin(), t.shape().end())};
        if (run == 0) {
          types[name] = tt;
          return;
        }
        TensorType& first = types[name];
        for (size_t i = 0; i < tt.shape.size() && i < first.shape.size(); ++i)
          first.shape[i] = symbols.classify(first.shape[i], tt.shape[i], shared);
      };
      for (const auto& [name, t] : feed) record(name, t);
      for (const auto& [name, t] : g.initializers) record(name, t);
      session.run(feed, [&](const Node& n, const std::vector<Tensor>&, const std::vector<Tensor>& out) {
        for (size_t i = 0; i < n.outputs.size() && i < out.size(); ++i)
          if (!n.outputs[i].empty() && out[i].defined()) record(n.outputs[i], out[i]);
        if (n.op_type == "Constant" && run == 0) constants[n.outputs[0]] = out[0];
      });
    }
  };
  const detail::InputValues values(g);  // Note [Values at import]
  bool shared_symbols = false;  // the model needs differently named dims equal
  try {
    try {
      run_twice(false);
    } catch (const Error&) {
      if (!symbols.has_named()) throw;
      const std::exception_ptr first = std::current_exception();
      try {
        run_twice(true);  // named symbols the model needs equal
        shared_symbols = true;
      } catch (const Error&) {
        std::rethrow_exception(first);  // the model's own error, not the retry's
      }
    }
  } catch (const Error& e) {
    const std::string why = values.explain_failure(g, e.what());
    if (why.empty()) throw;
    throw ValueError(why);
  }
  values.forget_dims(types, g.outputs);
  ImportedGraph result;
  graph::Graph& out = result.graph;
  out.name = g.name;
  std::set<std::string> taken;
  std::map<std::string, graph::PortRef> producer;
  for (const ValueInfo& v : g.inputs) {
    const TensorType& t = types.at(v.name);
    KILN_CHECK(t.dtype == DType::f32 || t.dtype == DType::i64, ValueError, "graph input '", v.name, "' is ",
               onnx_type_name(v.elem_type), "; the graph IR's Input takes FLOAT or INT64");
    KILN_CHECK(!t.shape.empty(), ValueError, "graph input '", v.name, "' is a scalar; the graph IR's Input needs a batch dimension");
    // A batch dimension the model fixes stays fixed (Input's "batch"), so shapes downstream
    // agree; other symbolic dims are -1 in "shape", named in "dim_params".
    const SymShape dims = symbols.shape_of(v);
    std::vector<int64_t> shape;
    for (size_t i = 1; i < dims.size(); ++i) shape.push_back(graph::is_symbolic(dims[i]) ? -1 : dims[i]);
    std::string params;
    for (const std::string& name : symbols.dim_params_of(v)) params += (params.empty() ? "" : ",") + name;
    Attributes a{{"shape", shape},
                 {"dtype", std::string(dtype_name(t.dtype))},
                 {"batch", dims[0] == kBatch ? int64_t{0} : dims[0]},
                 {"dim_params", params}};
    producer[v.name] = {out.add_node("Input", identifier(v.name, taken), a), 0};
  }
  std::map<std::string, Tensor> all_constants = constants;  // initializers and Constant nodes' values
  std::set<std::string> trainable;
  for (const auto& [name, t] : g.initializers) all_constants[name] = t, trainable.insert(name);
  auto add_onnx_node = [&](const Node& n) {
    KILN_CHECK(n.outputs.size() <= output_ports(n.op_type), ValueError, "node '", n.name, "' (", n.op_type, ") has ",
               n.outputs.size(), " outputs; the graph IR maps at most ", output_ports(n.op_type));
    std::vector<int64_t> slots;
    std::vector<TensorType> in_types, out_types;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (!n.inputs[i].empty()) {
        slots.push_back(static_cast<int64_t>(i));
        in_types.push_back(types.at(n.inputs[i]));
      }
    for (const std::string& o : n.outputs) {
      KILN_CHECK(o.empty() || types.count(o), ValueError, "node '", n.name, "': output '", o, "' was not computed");
      out_types.push_back(o.empty() ? TensorType{} : types.at(o));
    }
    Attributes a{{"num_inputs", static_cast<int64_t>(slots.size())},
                 {"onnx_input_slots", slots},
                 {"onnx_outputs", static_cast<int64_t>(n.outputs.size())},
                 {"onnx_attributes", attributes_json(n).dump()},
                 {"opset", model.opset()},
                 {"onnx_types", detail::types_str(in_types) + " -> " + detail::types_str(out_types)},
                 {"onnx_names", json{{"node", n.name}, {"inputs", n.inputs}, {"outputs", n.outputs}}.dump()}};
    graph::NodeId id = out.add_node("onnx." + op_key(n), identifier(n.name, taken), a);
    for (size_t p = 0; p < slots.size(); ++p)
      out.connect(producer.at(n.inputs[static_cast<size_t>(slots[p])]), {id, static_cast<int>(p)});
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (!n.outputs[i].empty()) producer[n.outputs[i]] = {id, static_cast<int>(i)};
  };
  // Native nodes from opset 13 on (Note [Native import]); below 17 only when every node maps,
  // as export writes native nodes in opset 17 forms next to imported ones of the same opset.
  const graph::Graph inputs_only = out;
  const std::map<std::string, graph::PortRef> input_ports = producer;
  const std::set<std::string> input_names = taken;
  detail::NativeImportContext ctx{g, model.opset(), types, all_constants, trainable, out, producer, taken,
                                  result.warnings, [&](const std::string& raw) { return identifier(raw, taken); },
                                  add_onnx_node};
  const bool native = model.opset() >= 13 && !shared_symbols;
  if (shared_symbols)
    result.warnings.push_back("the model needs differently named dims equal (graph_import_symbols.h): every node is kept "
                              "as onnx.*, whose types record that, where native ops would see the names differ");
  detail::add_graph_nodes(ctx, native);
  if (native && model.opset() < 17) {
    const graph::Node* left = nullptr;
    for (const graph::Node& n : out.nodes())
      if (n.op.rfind("onnx.", 0) == 0 && n.op != "onnx.Initializer") left = left ? left : &n;
    if (left) {
      result.warnings.push_back("node '" + left->name + "' stays " + left->op + " and the model's opset " +
                                std::to_string(model.opset()) + " is below 17: every node is kept as onnx.* (export "
                                "writes native nodes at opset 17)");
      out = inputs_only;
      producer = input_ports;
      taken = input_names;
      detail::add_graph_nodes(ctx, false);
    }
  }
  for (const auto& [key, t] : out.initial_state) result.state_dict.emplace_back(key, t);
  return result;
}

}  // namespace kiln::onnx
