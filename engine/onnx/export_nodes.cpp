#include "engine/onnx/export_nodes.h"

#include <onnx/onnx_pb.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include "engine/core/error.h"
#include "engine/graph/op_schema.h"
#include "engine/onnx/tensor_proto.h"

namespace kiln::onnx::detail {

using graph::attr_bool;
using graph::attr_float;
using graph::attr_int;
using graph::attr_ints;
using graph::attr_string;
using graph::kBatch;
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

void set_int(::onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name), a->set_type(::onnx::AttributeProto::INT), a->set_i(v);
}
void set_float(::onnx::NodeProto* n, const std::string& name, double v) {
  auto* a = n->add_attribute();
  a->set_name(name), a->set_type(::onnx::AttributeProto::FLOAT), a->set_f(static_cast<float>(v));
}
void set_ints(::onnx::NodeProto* n, const std::string& name, const Ints& v) {
  auto* a = n->add_attribute();
  a->set_name(name), a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

// A constant the mapping needs (shapes, scalars), as an initializer "<node>/<what>".
std::string add_constant(ExportContext& ctx, const std::string& name, const Tensor& t) {
  ::onnx::TensorProto* p = ctx.graph->add_initializer();
  tensor_to_proto(t, *p);
  p->set_name(name);
  return name;
}
std::string scalar(ExportContext& ctx, const std::string& name, float v) {
  return add_constant(ctx, name, Tensor::from_vector<float>({v}, {}));
}
std::string ints_constant(ExportContext& ctx, const std::string& name, const Ints& v) {
  return add_constant(ctx, name, Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}));
}

// The state_dict tensor "<node>.<param>" as an initializer of that name.
std::string param(ExportContext& ctx, const graph::Node& n, const std::string& p, const Ints& shape) {
  graph::TensorType t{DType::f32, graph::SymShape(shape.begin(), shape.end())};
  add_initializer(ctx, n, n.name + "." + p, t);
  return n.name + "." + p;
}

Ints pair_or(const graph::Attributes& a, const std::string& name, const Ints& fallback) {
  const Ints& v = attr_ints(a, name);
  return v.empty() ? fallback : v;
}
Ints pads_of(const Ints& p) { return {p.at(0), p.at(1), p.at(0), p.at(1)}; }

// Reshape to the node's output type with the batch dimension copied (0) and one other symbolic
// dim ("sequence", "?") inferred (-1); ValueError naming the node when there are more.
void reshape_to(ExportContext& ctx, const graph::Node& n, const std::string& in, const graph::TensorType& out) {
  Ints shape;
  for (size_t i = 0; i < out.shape.size(); ++i) {
    const int64_t d = out.shape[i];
    shape.push_back(i == 0 && d == kBatch ? 0 : (graph::is_symbolic(d) ? -1 : d));
  }
  KILN_CHECK(std::count(shape.begin(), shape.end(), int64_t{-1}) <= 1, ValueError, "export: node '", n.name,
             "' reshapes to ", out.str(), ": ONNX Reshape infers one dimension besides the batch; fix the Input's "
             "symbolic dimensions first");
  add_node(ctx, "Reshape", n.name, {in, ints_constant(ctx, n.name + "/shape", shape)}, {n.name});
}

void export_gelu(ExportContext& ctx, const graph::Node& n, const std::string& x) {
  const std::string p = n.name + "/";
  if (attr_string(n.attrs, "approximate") == "tanh") {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (Hendrycks & Gimpel 2016, eq. in section 2)
    add_node(ctx, "Mul", p + "x2", {x, x}, {p + "x2"});
    add_node(ctx, "Mul", p + "x3", {p + "x2", x}, {p + "x3"});
    add_node(ctx, "Mul", p + "cx3", {p + "x3", scalar(ctx, p + "c", 0.044715f)}, {p + "cx3"});
    add_node(ctx, "Add", p + "inner", {x, p + "cx3"}, {p + "inner"});
    add_node(ctx, "Mul", p + "scaled", {p + "inner", scalar(ctx, p + "k", static_cast<float>(std::sqrt(2.0 / M_PI)))},
             {p + "scaled"});
    add_node(ctx, "Tanh", p + "tanh", {p + "scaled"}, {p + "t"});
  } else {
    // 0.5 x (1 + erf(x / sqrt 2))
    add_node(ctx, "Div", p + "div", {x, scalar(ctx, p + "sqrt2", static_cast<float>(std::sqrt(2.0)))}, {p + "div"});
    add_node(ctx, "Erf", p + "erf", {p + "div"}, {p + "t"});
  }
  add_node(ctx, "Add", p + "one_plus", {p + "t", scalar(ctx, p + "one", 1.0f)}, {p + "one_plus"});
  add_node(ctx, "Mul", p + "mul_x", {x, p + "one_plus"}, {p + "mul_x"});
  add_node(ctx, "Mul", n.name, {p + "mul_x", scalar(ctx, p + "half", 0.5f)}, {n.name});
}

// SequencePool (engine/graph/sequence_pool.h) as ONNX ops: with token ids, the mask
// m = Cast(Not(Equal(ids, 0))) and the formulas of sequence_pool; without, every step is valid.
void export_sequence_pool(ExportContext& ctx, const graph::Node& n, const std::string& x) {
  const std::string y = n.name, mode = attr_string(n.attrs, "mode");
  auto axes = [&](const std::string& what, const Ints& v) { return ints_constant(ctx, y + "/" + what, v); };
  // ReduceSum takes axes as input from opset 13, ReduceMax from 18.
  auto reduce = [&](const std::string& op, const std::string& out, const std::string& in, bool keep) {
    ::onnx::NodeProto* r;
    if (op == "ReduceSum" ? ctx.opset >= 13 : ctx.opset >= 18) {
      r = add_node(ctx, op, out, {in, ints_constant(ctx, out + "/axes", {1})}, {out});
    } else {
      r = add_node(ctx, op, out, {in}, {out});
      set_ints(r, "axes", {1});
    }
    set_int(r, "keepdims", keep ? 1 : 0);
    return out;
  };
  if (ctx.padding_mask_ids.empty()) {  // features [N, T, C]: every step counts
    if (mode == "mean" || mode == "max") {
      reduce(mode == "mean" ? "ReduceSum" : "ReduceMax", mode == "mean" ? y + "/sum" : y, x, false);
      if (mode == "mean") {
        add_node(ctx, "Shape", y + "/shape", {x}, {y + "/shape"});
        add_node(ctx, "Gather", y + "/t", {y + "/shape", add_constant(ctx, y + "/one_i", Tensor::scalar(1, DType::i64))},
                 {y + "/t"});
        ::onnx::NodeProto* c = add_node(ctx, "Cast", y + "/tf", {y + "/t"}, {y + "/tf"});
        set_int(c, "to", ::onnx::TensorProto::FLOAT);
        add_node(ctx, "Div", y, {y + "/sum", y + "/tf"}, {y});
      }
    } else {
      const int64_t step = mode == "last" ? -1 : 0;
      set_int(add_node(ctx, "Gather", y, {x, add_constant(ctx, y + "/step", Tensor::scalar(static_cast<double>(step), DType::i64))}, {y}),
              "axis", 1);
    }
    return;
  }
  const std::string ids = ctx.padding_mask_ids;
  add_node(ctx, "Equal", y + "/is_pad", {ids, add_constant(ctx, y + "/pad_id", Tensor::scalar(0, DType::i64))},
           {y + "/is_pad"});
  add_node(ctx, "Not", y + "/valid", {y + "/is_pad"}, {y + "/valid"});
  set_int(add_node(ctx, "Cast", y + "/mask", {y + "/valid"}, {y + "/mask"}), "to", ::onnx::TensorProto::FLOAT);
  const std::string m = y + "/mask", m3 = y + "/mask3";
  add_node(ctx, "Unsqueeze", m3, {m, axes("axis2", {2})}, {m3});
  const std::string count = reduce("ReduceSum", y + "/count", m, true);  // [N, 1]
  if (mode == "mean") {
    add_node(ctx, "Mul", y + "/masked", {x, m3}, {y + "/masked"});
    reduce("ReduceSum", y + "/sum", y + "/masked", false);
    add_node(ctx, "Max", y + "/den", {count, scalar(ctx, y + "/one", 1.0f)}, {y + "/den"});
    add_node(ctx, "Div", y, {y + "/sum", y + "/den"}, {y});
  } else if (mode == "max") {
    add_node(ctx, "Unsqueeze", y + "/valid3", {y + "/valid", axes("axis2v", {2})}, {y + "/valid3"});
    add_node(ctx, "Where", y + "/filled", {y + "/valid3", x, scalar(ctx, y + "/lowest", -FLT_MAX)}, {y + "/filled"});
    reduce("ReduceMax", y + "/max", y + "/filled", false);
    add_node(ctx, "Min", y + "/any", {count, scalar(ctx, y + "/one", 1.0f)}, {y + "/any"});
    add_node(ctx, "Mul", y, {y + "/max", y + "/any"}, {y});
  } else if (mode == "last") {  // one-hot at the last valid step: m[t] - m[t + 1]
    add_node(ctx, "Slice", y + "/after", {m, ints_constant(ctx, y + "/start1", {1}),
                                          ints_constant(ctx, y + "/end", {std::numeric_limits<int64_t>::max()}),
                                          axes("axis1s", {1})},
             {y + "/after"});
    add_node(ctx, "Pad", y + "/next", {y + "/after", ints_constant(ctx, y + "/pads", {0, 0, 0, 1})}, {y + "/next"});
    add_node(ctx, "Sub", y + "/w", {m, y + "/next"}, {y + "/w"});
    add_node(ctx, "Unsqueeze", y + "/w3", {y + "/w", axes("axis2w", {2})}, {y + "/w3"});
    add_node(ctx, "Mul", y + "/picked", {x, y + "/w3"}, {y + "/picked"});
    reduce("ReduceSum", y, y + "/picked", false);
  } else {  // first
    set_int(add_node(ctx, "Gather", y + "/first", {x, add_constant(ctx, y + "/zero_i", Tensor::scalar(0, DType::i64))},
                     {y + "/first"}),
            "axis", 1);
    add_node(ctx, "Slice", y + "/m0", {m, ints_constant(ctx, y + "/start0", {0}), ints_constant(ctx, y + "/end1", {1}),
                                       axes("axis1f", {1})},
             {y + "/m0"});
    add_node(ctx, "Mul", y, {y + "/first", y + "/m0"}, {y});
  }
}

}  // namespace

void add_initializer(ExportContext& ctx, const graph::Node& n, const std::string& key, const graph::TensorType& type,
                     const std::string& onnx_name) {
  if (ctx.used.count(key)) return;
  auto it = ctx.params.find(key);
  KILN_CHECK(it != ctx.params.end(), ValueError, "export: node '", n.name, "' (", n.op, "): parameter '", key,
             "' is not in the state_dict");
  const Tensor& t = it->second;
  KILN_CHECK(t.shape() == Shape(type.shape.begin(), type.shape.end()), ValueError, "export: node '", n.name,
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

void export_studio(ExportContext& ctx, const graph::Node& n, const graph::NodeInfo& info,
                   const std::vector<std::string>& inputs) {
  const graph::Attributes& a = n.attrs;
  const std::string& op = n.op;
  const std::string x = inputs.empty() ? std::string() : inputs[0];
  const std::string& y = n.name;
  if (op == "Linear") {
    const int64_t in = attr_int(a, "in_features"), out = attr_int(a, "out_features");
    std::string w = param(ctx, n, "weight", {out, in});
    std::string b = attr_bool(a, "bias") ? param(ctx, n, "bias", {out}) : std::string();
    if (info.inputs.at(0).shape.size() == 2) {
      std::vector<std::string> ins{x, w};
      if (!b.empty()) ins.push_back(b);
      set_int(add_node(ctx, "Gemm", y, ins, {y}), "transB", 1);
    } else {
      set_ints(add_node(ctx, "Transpose", y + "/weight_T", {w}, {y + "/weight_T"}), "perm", {1, 0});
      add_node(ctx, "MatMul", b.empty() ? y : y + "/matmul", {x, y + "/weight_T"}, {b.empty() ? y : y + "/matmul"});
      if (!b.empty()) add_node(ctx, "Add", y + "/bias", {y + "/matmul", b}, {y});
    }
  } else if (op == "Conv2d") {
    const Ints& k = attr_ints(a, "kernel_size");
    const int64_t groups = attr_int(a, "groups");
    std::vector<std::string> ins{x, param(ctx, n, "weight", {attr_int(a, "out_channels"), attr_int(a, "in_channels") / groups,
                                                           k.at(0), k.at(1)})};
    if (attr_bool(a, "bias")) ins.push_back(param(ctx, n, "bias", {attr_int(a, "out_channels")}));
    ::onnx::NodeProto* c = add_node(ctx, "Conv", y, ins, {y});
    set_ints(c, "kernel_shape", k);
    set_ints(c, "strides", attr_ints(a, "stride"));
    set_ints(c, "pads", pads_of(attr_ints(a, "padding")));
    set_ints(c, "dilations", attr_ints(a, "dilation"));
    set_int(c, "group", groups);
  } else if (op == "MaxPool2d" || op == "AvgPool2d") {
    const Ints& k = attr_ints(a, "kernel_size");
    ::onnx::NodeProto* p = add_node(ctx, op == "MaxPool2d" ? "MaxPool" : "AveragePool", y, {x}, {y});
    set_ints(p, "kernel_shape", k);
    set_ints(p, "strides", pair_or(a, "stride", k));
    set_ints(p, "pads", pads_of(attr_ints(a, "padding")));
    set_int(p, "ceil_mode", attr_bool(a, "ceil_mode") ? 1 : 0);
    if (op == "MaxPool2d") set_ints(p, "dilations", attr_ints(a, "dilation"));
    else set_int(p, "count_include_pad", attr_bool(a, "count_include_pad") ? 1 : 0);
  } else if (op == "AdaptiveAvgPool2d") {
    const Ints& o = attr_ints(a, "output_size");
    const graph::SymShape& s = info.inputs.at(0).shape;
    if (o == Ints{1, 1}) {
      add_node(ctx, "GlobalAveragePool", y, {x}, {y});
    } else {
      KILN_CHECK(s[2] % o[0] == 0 && s[3] % o[1] == 0, ValueError, "export: node '", n.name,
                 "' (AdaptiveAvgPool2d): input ", graph::shape_str(s), " does not divide into output_size ",
                 o[0], "x", o[1], "; ONNX has no adaptive pooling");
      Ints k{s[2] / o[0], s[3] / o[1]};
      ::onnx::NodeProto* p = add_node(ctx, "AveragePool", y, {x}, {y});
      set_ints(p, "kernel_shape", k);
      set_ints(p, "strides", k);
    }
  } else if (op == "BatchNorm1d" || op == "BatchNorm2d") {
    KILN_CHECK(attr_bool(a, "track_running_stats"), ValueError, "export: node '", n.name, "' (", op,
               "): without running statistics (track_running_stats false) it has no inference form to export");
    const int64_t c = attr_int(a, "num_features");
    std::string scale = attr_bool(a, "affine") ? param(ctx, n, "weight", {c})
                                                : add_constant(ctx, y + "/ones", Tensor::ones({c}));
    std::string bias = attr_bool(a, "affine") ? param(ctx, n, "bias", {c})
                                               : add_constant(ctx, y + "/zeros", Tensor::zeros({c}));
    ::onnx::NodeProto* b = add_node(ctx, "BatchNormalization", y,
                                    {x, scale, bias, param(ctx, n, "running_mean", {c}), param(ctx, n, "running_var", {c})}, {y});
    set_float(b, "epsilon", attr_float(a, "eps"));
    set_float(b, "momentum", 1.0 - attr_float(a, "momentum"));
  } else if (op == "LayerNorm") {
    const Ints& shape = attr_ints(a, "normalized_shape");
    std::vector<std::string> ins{x};
    if (attr_bool(a, "elementwise_affine")) ins = {x, param(ctx, n, "weight", shape), param(ctx, n, "bias", shape)};
    else ins.push_back(add_constant(ctx, y + "/ones", Tensor::ones(Shape(shape.begin(), shape.end()))));
    ::onnx::NodeProto* l = add_node(ctx, "LayerNormalization", y, ins, {y});
    set_int(l, "axis", -static_cast<int64_t>(shape.size()));
    set_float(l, "epsilon", attr_float(a, "eps"));
  } else if (const graph::OpSchema* s = graph::OpRegistry::global().find(op); s && s->unary_layer) {
    ::onnx::NodeProto* u = add_node(ctx, s->unary_layer->onnx_op_type, y, {x}, {y});
    for (const auto& f : s->unary_layer->onnx_floats) set_float(u, f.name, f.value);
  } else if (op == "Identity") {
    add_node(ctx, op, y, {x}, {y});
  } else if (op == "ReLU6") {
    add_node(ctx, "Clip", y, {x, scalar(ctx, y + "/min", 0.0f), scalar(ctx, y + "/max", 6.0f)}, {y});
  } else if (op == "Dropout") {
    add_node(ctx, "Dropout", y, {x}, {y});
  } else if (op == "LeakyReLU") {
    set_float(add_node(ctx, "LeakyRelu", y, {x}, {y}), "alpha", attr_float(a, "negative_slope"));
  } else if (op == "Softmax" || op == "LogSoftmax") {
    set_int(add_node(ctx, op, y, {x}, {y}), "axis", attr_int(a, "dim"));
  } else if (op == "GELU") {
    export_gelu(ctx, n, x);
  } else if (op == "SiLU") {
    add_node(ctx, "Sigmoid", y + "/sigmoid", {x}, {y + "/sigmoid"});
    add_node(ctx, "Mul", y, {x, y + "/sigmoid"}, {y});
  } else if (op == "Add" || op == "Mul") {
    std::string acc = inputs.at(0);
    for (size_t i = 1; i < inputs.size(); ++i) {
      std::string out = i + 1 == inputs.size() ? y : y + "/" + std::to_string(i);
      add_node(ctx, op, out, {acc, inputs[i]}, {out});
      acc = out;
    }
  } else if (op == "Concat") {
    set_int(add_node(ctx, "Concat", y, inputs, {y}), "axis", attr_int(a, "dim"));
  } else if (op == "Flatten" && attr_int(a, "start_dim") == 1 &&
             (attr_int(a, "end_dim") == -1 || attr_int(a, "end_dim") + 1 == static_cast<int64_t>(info.inputs.at(0).shape.size()))) {
    set_int(add_node(ctx, "Flatten", y, {x}, {y}), "axis", 1);  // [N, rest]: ONNX Flatten's own form
  } else if (op == "Reshape" || op == "Flatten") {
    reshape_to(ctx, n, x, info.outputs.at(0));
  } else if (op == "SequencePool") {
    export_sequence_pool(ctx, n, x);
  } else if (op == "Embedding") {
    std::string w = param(ctx, n, "weight", {attr_int(a, "num_embeddings"), attr_int(a, "embedding_dim")});
    set_int(add_node(ctx, "Gather", y, {w, x}, {y}), "axis", 0);
  } else {
    throw ValueError("export: node '" + n.name + "': op '" + op + "' has no ONNX mapping yet");
  }
}

}  // namespace kiln::onnx::detail
