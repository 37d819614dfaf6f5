// ONNX export rules of the image, tensor and activation layers (ops_onnx.h), opset 17
// (onnx.ai Operators.md); register_onnx_import_rules (ops_onnx.cpp) sets them beside the
// import rules.
#include <algorithm>
#include <cmath>

#include "engine/graph/op_helpers.h"
#include "engine/graph/ops_onnx.h"

namespace kiln::graph::detail {

namespace {

using Ints = std::vector<int64_t>;

Ints pair_or(const Attributes& a, const std::string& name, const Ints& fallback) {
  const Ints& v = attr_ints(a, name);
  return v.empty() ? fallback : v;
}
Ints pads_of(const Ints& p) { return {p.at(0), p.at(1), p.at(0), p.at(1)}; }

}  // namespace

void export_linear(OnnxEmitter& e, const OnnxExportNode& n) {
  const Attributes& a = n.attrs;
  const std::string &x = n.values.at(0), &y = n.name;
  const int64_t in = attr_int(a, "in_features"), out = attr_int(a, "out_features");
  std::string w = e.param(n, "weight", {out, in});
  std::string b = attr_bool(a, "bias") ? e.param(n, "bias", {out}) : std::string();
  if (n.inputs.at(0).shape.size() == 2) {
    std::vector<std::string> ins{x, w};
    if (!b.empty()) ins.push_back(b);
    e.node("Gemm", y, ins, {y}, {{"transB", int64_t{1}}});
  } else {
    e.node("Transpose", y + "/weight_T", {w}, {y + "/weight_T"}, {{"perm", Ints{1, 0}}});
    e.node("MatMul", b.empty() ? y : y + "/matmul", {x, y + "/weight_T"}, {b.empty() ? y : y + "/matmul"});
    if (!b.empty()) e.node("Add", y + "/bias", {y + "/matmul", b}, {y});
  }
}

void export_conv(OnnxEmitter& e, const OnnxExportNode& n) {
  const Attributes& a = n.attrs;
  const Ints& k = attr_ints(a, "kernel_size");
  const int64_t groups = attr_int(a, "groups"), in = attr_int(a, "in_channels"), out = attr_int(a, "out_channels");
  const bool transposed = n.op == "ConvTranspose2d";  // weight [in, out/groups, kH, kW]
  const Ints w_shape = transposed ? Ints{in, out / groups, k.at(0), k.at(1)} : Ints{out, in / groups, k.at(0), k.at(1)};
  std::vector<std::string> ins{n.values.at(0), e.param(n, "weight", w_shape)};
  if (attr_bool(a, "bias")) ins.push_back(e.param(n, "bias", {out}));
  OnnxAttrs attrs{{"kernel_shape", k},
                  {"strides", attr_ints(a, "stride")},
                  {"pads", pads_of(attr_ints(a, "padding"))},
                  {"dilations", attr_ints(a, "dilation")},
                  {"group", groups}};
  if (transposed) attrs.emplace_back("output_padding", attr_ints(a, "output_padding"));
  e.node(transposed ? "ConvTranspose" : "Conv", n.name, ins, {n.name}, attrs);
}

void export_pool(OnnxEmitter& e, const OnnxExportNode& n) {
  const Attributes& a = n.attrs;
  const Ints& k = attr_ints(a, "kernel_size");
  const bool max = n.op == "MaxPool2d";
  OnnxAttrs attrs{{"kernel_shape", k},
                  {"strides", pair_or(a, "stride", k)},
                  {"pads", pads_of(attr_ints(a, "padding"))},
                  {"ceil_mode", int64_t{attr_bool(a, "ceil_mode") ? 1 : 0}}};
  if (max) attrs.emplace_back("dilations", attr_ints(a, "dilation"));
  else attrs.emplace_back("count_include_pad", int64_t{attr_bool(a, "count_include_pad") ? 1 : 0});
  e.node(max ? "MaxPool" : "AveragePool", n.name, {n.values.at(0)}, {n.name}, attrs);
}

void export_adaptive_pool(OnnxEmitter& e, const OnnxExportNode& n) {
  const Ints& o = attr_ints(n.attrs, "output_size");
  const SymShape& s = n.inputs.at(0).shape;
  if (o == Ints{1, 1}) {
    e.node("GlobalAveragePool", n.name, {n.values.at(0)}, {n.name});
    return;
  }
  KILN_CHECK(s[2] % o[0] == 0 && s[3] % o[1] == 0, ValueError, "export: node '", n.name,
             "' (AdaptiveAvgPool2d): input ", shape_str(s), " does not divide into output_size ", o[0], "x", o[1],
             "; ONNX has no adaptive pooling");
  Ints k{s[2] / o[0], s[3] / o[1]};
  e.node("AveragePool", n.name, {n.values.at(0)}, {n.name}, {{"kernel_shape", k}, {"strides", k}});
}

void export_batch_norm(OnnxEmitter& e, const OnnxExportNode& n) {
  const Attributes& a = n.attrs;
  KILN_CHECK(attr_bool(a, "track_running_stats"), ValueError, "export: node '", n.name, "' (", n.op,
             "): without running statistics (track_running_stats false) it has no inference form to export");
  const int64_t c = attr_int(a, "num_features");
  const std::string& y = n.name;
  std::string scale = attr_bool(a, "affine") ? e.param(n, "weight", {c}) : e.constant(y + "/ones", Tensor::ones({c}));
  std::string bias = attr_bool(a, "affine") ? e.param(n, "bias", {c}) : e.constant(y + "/zeros", Tensor::zeros({c}));
  std::vector<std::string> ins{n.values.at(0), scale, bias};
  ins.push_back(e.param(n, "running_mean", {c}));
  ins.push_back(e.param(n, "running_var", {c}));
  e.node("BatchNormalization", y, ins, {y},
         {{"epsilon", attr_float(a, "eps")}, {"momentum", 1.0 - attr_float(a, "momentum")}});
}

void export_layer_norm(OnnxEmitter& e, const OnnxExportNode& n) {
  const Attributes& a = n.attrs;
  const Ints& shape = attr_ints(a, "normalized_shape");
  const std::string& x = n.values.at(0);
  std::vector<std::string> ins{x};
  if (attr_bool(a, "elementwise_affine")) {
    std::string w = e.param(n, "weight", shape);
    ins = {x, w, e.param(n, "bias", shape)};
  } else {
    ins.push_back(e.constant(n.name + "/ones", Tensor::ones(Shape(shape.begin(), shape.end()))));
  }
  e.node("LayerNormalization", n.name, ins, {n.name},
         {{"axis", -static_cast<int64_t>(shape.size())}, {"epsilon", attr_float(a, "eps")}});
}

void export_same(OnnxEmitter& e, const OnnxExportNode& n) { e.node(n.op, n.name, {n.values.at(0)}, {n.name}); }

void export_relu6(OnnxEmitter& e, const OnnxExportNode& n) {
  std::string lo = e.scalar(n.name + "/min", 0.0f);
  e.node("Clip", n.name, {n.values.at(0), lo, e.scalar(n.name + "/max", 6.0f)}, {n.name});
}

void export_leaky_relu(OnnxEmitter& e, const OnnxExportNode& n) {
  e.node("LeakyRelu", n.name, {n.values.at(0)}, {n.name}, {{"alpha", attr_float(n.attrs, "negative_slope")}});
}

void export_softmax(OnnxEmitter& e, const OnnxExportNode& n) {
  e.node(n.op, n.name, {n.values.at(0)}, {n.name}, {{"axis", attr_int(n.attrs, "dim")}});
}

void export_gelu(OnnxEmitter& e, const OnnxExportNode& n) {
  const std::string p = n.name + "/", &x = n.values.at(0);
  if (attr_string(n.attrs, "approximate") == "tanh") {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (Hendrycks & Gimpel 2016, eq. in section 2)
    e.node("Mul", p + "x2", {x, x}, {p + "x2"});
    e.node("Mul", p + "x3", {p + "x2", x}, {p + "x3"});
    e.node("Mul", p + "cx3", {p + "x3", e.scalar(p + "c", 0.044715f)}, {p + "cx3"});
    e.node("Add", p + "inner", {x, p + "cx3"}, {p + "inner"});
    e.node("Mul", p + "scaled", {p + "inner", e.scalar(p + "k", static_cast<float>(std::sqrt(2.0 / M_PI)))},
           {p + "scaled"});
    e.node("Tanh", p + "tanh", {p + "scaled"}, {p + "t"});
  } else {
    // 0.5 x (1 + erf(x / sqrt 2))
    e.node("Div", p + "div", {x, e.scalar(p + "sqrt2", static_cast<float>(std::sqrt(2.0)))}, {p + "div"});
    e.node("Erf", p + "erf", {p + "div"}, {p + "t"});
  }
  e.node("Add", p + "one_plus", {p + "t", e.scalar(p + "one", 1.0f)}, {p + "one_plus"});
  e.node("Mul", p + "mul_x", {x, p + "one_plus"}, {p + "mul_x"});
  e.node("Mul", n.name, {p + "mul_x", e.scalar(p + "half", 0.5f)}, {n.name});
}

void export_silu(OnnxEmitter& e, const OnnxExportNode& n) {
  const std::string& y = n.name;
  e.node("Sigmoid", y + "/sigmoid", {n.values.at(0)}, {y + "/sigmoid"});
  e.node("Mul", y, {n.values.at(0), y + "/sigmoid"}, {y});
}

void export_elementwise(OnnxEmitter& e, const OnnxExportNode& n) {
  std::string acc = n.values.at(0);
  for (size_t i = 1; i < n.values.size(); ++i) {
    std::string out = i + 1 == n.values.size() ? n.name : n.name + "/" + std::to_string(i);
    e.node(n.op, out, {acc, n.values[i]}, {out});
    acc = out;
  }
}

void export_concat(OnnxEmitter& e, const OnnxExportNode& n) {
  e.node("Concat", n.name, n.values, {n.name}, {{"axis", attr_int(n.attrs, "dim")}});
}

// Reshape to the node's output type with the batch dimension copied (0) and one other symbolic
// dim ("sequence", "?") inferred (-1); ValueError naming the node when there are more.
void export_reshape(OnnxEmitter& e, const OnnxExportNode& n) {
  const TensorType& out = n.outputs.at(0);
  Ints shape;
  for (size_t i = 0; i < out.shape.size(); ++i) {
    const int64_t d = out.shape[i];
    shape.push_back(i == 0 && d == kBatch ? 0 : (is_symbolic(d) ? -1 : d));
  }
  KILN_CHECK(std::count(shape.begin(), shape.end(), int64_t{-1}) <= 1, ValueError, "export: node '", n.name,
             "' reshapes to ", out.str(), ": ONNX Reshape infers one dimension besides the batch; fix the Input's "
             "symbolic dimensions first");
  e.node("Reshape", n.name, {n.values.at(0), e.ints(n.name + "/shape", shape)}, {n.name});
}

void export_flatten(OnnxEmitter& e, const OnnxExportNode& n) {
  const int64_t end = attr_int(n.attrs, "end_dim");
  if (attr_int(n.attrs, "start_dim") == 1 &&
      (end == -1 || end + 1 == static_cast<int64_t>(n.inputs.at(0).shape.size()))) {
    e.node("Flatten", n.name, {n.values.at(0)}, {n.name}, {{"axis", int64_t{1}}});  // [N, rest]: ONNX's own form
  } else {
    export_reshape(e, n);
  }
}

void export_embedding(OnnxEmitter& e, const OnnxExportNode& n) {
  std::string w = e.param(n, "weight", {attr_int(n.attrs, "num_embeddings"), attr_int(n.attrs, "embedding_dim")});
  e.node("Gather", n.name, {w, n.values.at(0)}, {n.name}, {{"axis", int64_t{0}}});
}

}  // namespace kiln::graph::detail
