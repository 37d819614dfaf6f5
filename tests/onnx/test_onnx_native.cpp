// Native import (graph_import.h, graph_import_native.h, engine/graph/ops_onnx.cpp): ONNX nodes
// an op schema claims become native graph nodes whose weights are the graph's initial_state,
// with the executor's outputs; impossible mappings stay onnx.<Op> with a warning naming the node.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "engine/graph/graph_module.h"
#include "engine/graph/json.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/export.h"
#include "engine/onnx/graph_import.h"
#include "engine/onnx/npy.h"
#include "model_builder.h"

using namespace kiln;
using namespace kiln::onnx::test;
using V = std::vector<int64_t>;

namespace {

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.f, 0.5f);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

size_t numel(const V& dims) {
  size_t n = 1;
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  return n;
}

void weights(::onnx::GraphProto& g, const std::string& name, const V& dims, unsigned seed) {
  add_float_initializer(g, name, dims, random_floats(numel(dims), seed));
}

// Largest |a - b| over the largest |b|.
double relative_error(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  double err = 0, scale = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    err = std::max(err, static_cast<double>(std::fabs(x[i] - y[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(y[i])));
  }
  return scale > 0 ? err / scale : err;
}

struct Native {
  size_t native = 0, total = 0;  // graph nodes but Input and Output
};
Native count(const graph::Graph& g) {
  Native c;
  for (const graph::Node& n : g.nodes()) {
    if (n.op == "Input" || n.op == "Output") continue;
    ++c.total;
    if (n.op.rfind("onnx.", 0) != 0) ++c.native;
  }
  return c;
}

const graph::Node& node_named(const graph::Graph& g, const std::string& name) {
  const graph::Node* n = g.find_by_name(name);
  if (!n) throw ValueError("no node '" + name + "'");
  return *n;
}

bool warned(const kiln::onnx::ImportedGraph& ig, const std::string& text) {
  for (const std::string& w : ig.warnings)
    if (w.find(text) != std::string::npos) return true;
  return false;
}

// Imports the model, runs it as a GraphModule built from the graph alone (its initial_state:
// no load_state_dict) and as the executor on `inputs`; the outputs agree to 1e-5 relative.
kiln::onnx::ImportedGraph import_and_compare(const ::onnx::ModelProto& proto, const std::vector<Tensor>& inputs) {
  kiln::onnx::Model m = kiln::onnx::parse_model(proto.SerializeAsString(), "");
  kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(m);
  graph::GraphModule gm(ig.graph);
  gm.eval();
  kiln::onnx::Session s(m);
  std::map<std::string, Tensor> feed;
  for (size_t i = 0; i < inputs.size(); ++i) feed[s.input_names().at(i)] = inputs[i];
  std::vector<Tensor> want = s.run(feed), got = gm.forward(inputs);
  EXPECT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) EXPECT_LE(relative_error(got[i], want[i]), 1e-5) << "output " << i;
  return ig;
}

Tensor randn(const Shape& shape, unsigned seed) {
  return Tensor::from_vector(random_floats(static_cast<size_t>(kiln::numel(shape)), seed), shape);
}

}  // namespace

// A CNN with every vision mapping: Conv (bias, pads, strides, groups, dilations),
// BatchNormalization, Relu, Clip(0, 6), MaxPool, AveragePool, x * Sigmoid(x), Add, Concat,
// GlobalAveragePool, Flatten, Dropout, Identity, Gemm (transB 0 and 1), MatMul + Add, Softmax.
TEST(OnnxNative, VisionOpsBecomeNativeWithTheExecutorsOutputs) {
  ::onnx::GraphProto g;
  g.set_name("cnn");
  *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {-1, 3, 8, 8});
  *g.add_output() = value_info("y", ::onnx::TensorProto::FLOAT, {-1, 5});
  weights(g, "c1.w", {8, 3, 3, 3}, 1);
  weights(g, "c1.b", {8}, 2);
  auto* c1 = add_node(g, "Conv", {"x", "c1.w", "c1.b"}, {"h1"}, "/c1/Conv");
  set_ints(c1, "pads", {1, 1, 1, 1});
  for (const char* p : {"bn.scale", "bn.bias", "bn.mean"}) weights(g, p, {8}, 3);
  add_float_initializer(g, "bn.var", {8}, std::vector<float>(8, 0.7f));
  add_node(g, "BatchNormalization", {"h1", "bn.scale", "bn.bias", "bn.mean", "bn.var"}, {"h2"}, "/bn/BN");
  add_float_initializer(g, "lo", {}, {0.f});
  add_float_initializer(g, "hi", {}, {6.f});
  add_node(g, "Clip", {"h2", "lo", "hi"}, {"h3"}, "/act/Clip");
  weights(g, "dw.w", {8, 2, 3, 3}, 4);
  auto* dw = add_node(g, "Conv", {"h3", "dw.w"}, {"h4"}, "/dw/Conv");
  set_int(dw, "group", 4), set_ints(dw, "pads", {2, 2, 2, 2}), set_ints(dw, "dilations", {2, 2});
  set_ints(dw, "strides", {2, 2});
  add_node(g, "Sigmoid", {"h4"}, {"s"}, "/silu/Sigmoid");
  add_node(g, "Mul", {"h4", "s"}, {"h5"}, "/silu/Mul");
  auto* mp = add_node(g, "MaxPool", {"h5"}, {"p1"}, "/mp/MaxPool");
  set_ints(mp, "kernel_shape", {3, 3}), set_ints(mp, "pads", {1, 1, 1, 1});
  auto* ap = add_node(g, "AveragePool", {"h5"}, {"p2"}, "/ap/AveragePool");
  set_ints(ap, "kernel_shape", {3, 3}), set_ints(ap, "pads", {1, 1, 1, 1});
  add_node(g, "Add", {"p1", "p2"}, {"h6"}, "/add/Add");
  add_node(g, "Relu", {"h6"}, {"h7"}, "/relu/Relu");
  set_int(add_node(g, "Concat", {"h7", "p1"}, {"h8"}, "/cat/Concat"), "axis", 1);
  add_node(g, "GlobalAveragePool", {"h8"}, {"h9"}, "/gap/GlobalAveragePool");
  add_node(g, "Flatten", {"h9"}, {"f"}, "/flat/Flatten");
  add_node(g, "Dropout", {"f"}, {"f2"}, "/drop/Dropout");
  add_node(g, "Identity", {"f2"}, {"f3"}, "/id/Identity");
  weights(g, "fc1.w", {16, 12}, 5);  // [in, out]: transB = 0
  weights(g, "fc1.b", {12}, 6);
  add_node(g, "Gemm", {"f3", "fc1.w", "fc1.b"}, {"g1"}, "/fc1/Gemm");
  weights(g, "fc2.w", {12, 7}, 7);
  weights(g, "fc2.b", {7}, 8);
  add_node(g, "MatMul", {"g1", "fc2.w"}, {"g2"}, "/fc2/MatMul");
  add_node(g, "Add", {"g2", "fc2.b"}, {"g3"}, "/fc2/Add");
  weights(g, "fc3.w", {5, 7}, 9);  // [out, in]: transB = 1
  set_int(add_node(g, "Gemm", {"g3", "fc3.w"}, {"g4"}, "/fc3/Gemm"), "transB", 1);
  add_node(g, "Softmax", {"g4"}, {"y"}, "/softmax/Softmax");
  kiln::onnx::ImportedGraph ig = import_and_compare(model_with(g, 17), {randn({2, 3, 8, 8}, 10)});
  EXPECT_EQ(count(ig.graph).native, count(ig.graph).total) << (ig.warnings.empty() ? "" : ig.warnings[0]);
  EXPECT_TRUE(ig.warnings.empty()) << ig.warnings[0];
  const graph::Graph& gr = ig.graph;
  EXPECT_EQ(node_named(gr, "c1_Conv").op, "Conv2d");
  EXPECT_EQ(graph::attr_ints(node_named(gr, "c1_Conv").attrs, "padding"), (V{1, 1}));
  EXPECT_EQ(graph::attr_int(node_named(gr, "dw_Conv").attrs, "groups"), 4);
  EXPECT_EQ(node_named(gr, "bn_BN").op, "BatchNorm2d");
  EXPECT_EQ(node_named(gr, "act_Clip").op, "ReLU6");
  EXPECT_EQ(node_named(gr, "silu_Mul").op, "SiLU");
  EXPECT_EQ(gr.find_by_name("silu_Sigmoid"), nullptr);
  EXPECT_EQ(node_named(gr, "fc2_MatMul").op, "Linear");
  EXPECT_EQ(gr.find_by_name("fc2_Add"), nullptr);
  EXPECT_EQ(gr.find_by_name("id_Identity"), nullptr);  // removed
  EXPECT_EQ(node_named(gr, "fc1_Gemm").op, "Linear");
  EXPECT_EQ(node_named(gr, "gap_GlobalAveragePool").op, "AdaptiveAvgPool2d");
  // The weights are the graph's initial_state, under the state_dict keys; no initializer node.
  EXPECT_TRUE(gr.initial_state.count("c1_Conv.weight"));
  EXPECT_TRUE(gr.initial_state.count("bn_BN.running_var"));
  EXPECT_EQ(gr.initial_state.at("fc1_Gemm.weight").shape(), (Shape{12, 16}));
  for (const graph::Node& n : gr.nodes()) EXPECT_NE(n.op, "onnx.Initializer") << n.name;
  // Graph JSON keeps them: a GraphModule of the reloaded graph gives the same outputs.
  const graph::Graph back = graph::from_json(graph::to_json(gr));
  EXPECT_TRUE(back == gr);
  // Export -> checker -> re-import: the same graph.
  const std::string bytes = kiln::onnx::export_model(gr, ig.state_dict);
  kiln::onnx::check_model_bytes(bytes);
  kiln::onnx::ImportedGraph again = kiln::onnx::import_graph(kiln::onnx::parse_model(bytes, ""));
  EXPECT_EQ(graph::to_json(again.graph), graph::to_json(gr));
}

// The forms PyTorch 2's dynamo exporter writes at opset 18: a global average pool as
// ReduceMean over H and W (axes an input) with keepdims, a flatten as Reshape [-1, C] with
// allowzero = 1; Clip's bounds shared by several nodes (attributes: no copy, no warning).
TEST(OnnxNative, DynamoFormsBecomeNative) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {-1, 4, 3, 3});
  *g.add_output() = value_info("y", ::onnx::TensorProto::FLOAT, {-1, 4});
  add_float_initializer(g, "lo", {}, {0.f});
  add_float_initializer(g, "hi", {}, {6.f});
  add_node(g, "Clip", {"x", "lo", "hi"}, {"c1"}, "/clip1");
  add_node(g, "Clip", {"c1", "lo", "hi"}, {"c2"}, "/clip2");
  add_int64_initializer(g, "axes", {-1, -2});
  add_node(g, "ReduceMean", {"c2", "axes"}, {"m"}, "/mean");
  add_int64_initializer(g, "shape", {-1, 4});
  set_int(add_node(g, "Reshape", {"m", "shape"}, {"y"}, "/flatten"), "allowzero", 1);
  kiln::onnx::ImportedGraph ig = import_and_compare(model_with(g, 18), {randn({2, 4, 3, 3}, 1)});
  EXPECT_EQ(node_named(ig.graph, "mean").op, "AdaptiveAvgPool2d");
  EXPECT_EQ(node_named(ig.graph, "flatten").op, "Reshape");
  EXPECT_EQ(node_named(ig.graph, "clip2").op, "ReLU6");
  EXPECT_TRUE(ig.warnings.empty()) << ig.warnings[0];
  EXPECT_EQ(count(ig.graph).native, count(ig.graph).total);
}

// BatchNormalization of [N, C] -> BatchNorm1d; LayerNormalization (no bias) -> LayerNorm.
TEST(OnnxNative, FeatureNormalizationsBecomeNative) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {-1, 6});
  *g.add_output() = value_info("y", ::onnx::TensorProto::FLOAT, {-1, 6});
  for (const char* p : {"bn.scale", "bn.bias", "bn.mean"}) weights(g, p, {6}, 3);
  add_float_initializer(g, "bn.var", {6}, std::vector<float>(6, 1.3f));
  add_node(g, "BatchNormalization", {"x", "bn.scale", "bn.bias", "bn.mean", "bn.var"}, {"h"}, "/bn");
  weights(g, "ln.scale", {6}, 4);
  set_float(add_node(g, "LayerNormalization", {"h", "ln.scale"}, {"y"}, "/ln"), "epsilon", 1e-3f);
  kiln::onnx::ImportedGraph ig = import_and_compare(model_with(g, 17), {randn({3, 6}, 5)});
  EXPECT_EQ(node_named(ig.graph, "bn").op, "BatchNorm1d");
  EXPECT_EQ(node_named(ig.graph, "ln").op, "LayerNorm");
  EXPECT_TRUE(ig.warnings.empty()) << ig.warnings[0];
}

// Embedding (Gather on an initializer) and LeakyRelu / Tanh on tokens.
TEST(OnnxNative, GatherOnAnInitializerIsAnEmbedding) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("ids", ::onnx::TensorProto::INT64, {-1, 4});
  *g.add_output() = value_info("y", ::onnx::TensorProto::FLOAT, {-1, 4, 6});
  weights(g, "emb", {10, 6}, 1);
  add_node(g, "Gather", {"emb", "ids"}, {"e"}, "/emb/Gather");
  set_float(add_node(g, "LeakyRelu", {"e"}, {"l"}, "/act/LeakyRelu"), "alpha", 0.2f);
  add_node(g, "Tanh", {"l"}, {"y"}, "/act/Tanh");
  kiln::onnx::ImportedGraph ig =
      import_and_compare(model_with(g, 17), {Tensor::from_vector<int64_t>({0, 3, 9, 2, 1, 1, 5, 7}, {2, 4})});
  EXPECT_EQ(node_named(ig.graph, "emb_Gather").op, "Embedding");
  EXPECT_EQ(count(ig.graph).native, 3u);
}

// HardSigmoid as torch.nn.Hardsigmoid exports it (alpha = 1/6) is a native Hardsigmoid;
// with the ONNX default alpha 0.2 it computes something else and stays onnx.HardSigmoid
// with a warning naming it. Export writes alpha and beta back.
TEST(OnnxNative, HardSigmoidOnlyInTorchsForm) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {-1, 8});
  *g.add_output() = value_info("y", ::onnx::TensorProto::FLOAT, {-1, 8});
  set_float(add_node(g, "HardSigmoid", {"x"}, {"h"}, "/torch/HardSigmoid"), "alpha", 1.0f / 6.0f);
  add_node(g, "HardSigmoid", {"h"}, {"y"}, "/onnx_default/HardSigmoid");
  Tensor x = Tensor::from_vector<float>({-4, -3, -1.5f, 0, 0.5f, 2.9f, 3, 7}, {1, 8});
  kiln::onnx::ImportedGraph ig = import_and_compare(model_with(g, 17), {x});
  EXPECT_EQ(node_named(ig.graph, "torch_HardSigmoid").op, "Hardsigmoid");
  EXPECT_EQ(node_named(ig.graph, "onnx_default_HardSigmoid").op, "onnx.HardSigmoid");
  EXPECT_TRUE(warned(ig, "node '/onnx_default/HardSigmoid' (HardSigmoid) stays onnx.HardSigmoid: alpha is 0.200000, not 0.166667"))
      << (ig.warnings.empty() ? "" : ig.warnings[0]);
  ::onnx::ModelProto out;
  ASSERT_TRUE(out.ParseFromString(kiln::onnx::export_model(ig.graph, ig.state_dict)));
  bool alpha_written = false;
  for (const auto& n : out.graph().node())
    if (n.op_type() == "HardSigmoid")
      for (const auto& a : n.attribute()) alpha_written |= a.name() == "alpha" && std::fabs(a.f() - 1.0f / 6.0f) < 1e-7f;
  EXPECT_TRUE(alpha_written);
}

// GELU's Erf form as torch.onnx writes F.gelu (x / sqrt 2, Erf, + 1, * x, * 0.5), with the
// operands in the other orders (x * (1 / sqrt 2); (x * 0.5) * (erf + 1)), becomes one native
// GELU named after the chain's last node; a chain whose intermediate has a second reader stays
// node by node. Export writes GELU in that form again, and re-import gives the same graph.
TEST(OnnxNative, GeluErfChainsBecomeGelu) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {-1, 6});
  *g.add_output() = value_info("y", ::onnx::TensorProto::FLOAT, {-1, 6});
  *g.add_output() = value_info("side", ::onnx::TensorProto::FLOAT, {-1, 6});
  add_float_initializer(g, "sqrt2", {}, {1.4142135f});
  add_float_initializer(g, "inv_sqrt2", {}, {0.70710677f});
  add_float_initializer(g, "one", {}, {1.f});
  add_float_initializer(g, "half", {}, {0.5f});
  weights(g, "fc.w", {6, 6}, 11);
  add_node(g, "MatMul", {"x", "fc.w"}, {"h"}, "/fc/MatMul");
  // torch's order: ((x * (erf(x / sqrt 2) + 1)) * 0.5
  add_node(g, "Div", {"h", "sqrt2"}, {"a1"}, "/act1/Div");
  add_node(g, "Erf", {"a1"}, {"a2"}, "/act1/Erf");
  add_node(g, "Add", {"a2", "one"}, {"a3"}, "/act1/Add");
  add_node(g, "Mul", {"h", "a3"}, {"a4"}, "/act1/Mul");
  add_node(g, "Mul", {"a4", "half"}, {"g1"}, "/act1/Mul_1");
  // the other orders: (x * 0.5) * (1 + erf(x * (1 / sqrt 2)))
  add_node(g, "Mul", {"inv_sqrt2", "g1"}, {"b1"}, "/act2/Mul");
  add_node(g, "Erf", {"b1"}, {"b2"}, "/act2/Erf");
  add_node(g, "Add", {"one", "b2"}, {"b3"}, "/act2/Add");
  add_node(g, "Mul", {"g1", "half"}, {"b4"}, "/act2/Mul_1");
  add_node(g, "Mul", {"b4", "b3"}, {"g2"}, "/act2/Mul_2");
  // a chain whose Erf output is also read elsewhere: not a GELU
  add_node(g, "Div", {"g2", "sqrt2"}, {"c1"}, "/act3/Div");
  add_node(g, "Erf", {"c1"}, {"c2"}, "/act3/Erf");
  add_node(g, "Add", {"c2", "one"}, {"c3"}, "/act3/Add");
  add_node(g, "Mul", {"g2", "c3"}, {"c4"}, "/act3/Mul");
  add_node(g, "Mul", {"c4", "half"}, {"y"}, "/act3/Mul_1");
  add_node(g, "Neg", {"c2"}, {"side"}, "/side/Neg");
  Tensor x = randn({3, 6}, 12);
  kiln::onnx::ImportedGraph ig = import_and_compare(model_with(g, 17), {x});
  const graph::Graph& gr = ig.graph;
  EXPECT_EQ(node_named(gr, "act1_Mul_1").op, "GELU");
  EXPECT_EQ(graph::attr_string(node_named(gr, "act1_Mul_1").attrs, "approximate"), "none");
  EXPECT_EQ(node_named(gr, "act2_Mul_2").op, "GELU");
  for (const char* gone : {"act1_Div", "act1_Erf", "act1_Add", "act1_Mul", "act2_Mul", "act2_Erf", "act2_Mul_1"})
    EXPECT_EQ(gr.find_by_name(gone), nullptr) << gone;
  EXPECT_EQ(node_named(gr, "act3_Erf").op, "onnx.Erf");  // read twice: kept as it is
  EXPECT_NE(node_named(gr, "act3_Mul_1").op, "GELU");
  // GELU exports as the Erf chain, which imports as GELU again (the second activation's
  // operand orders become the first's).
  ::onnx::GraphProto g2;
  g2.set_name("mlp");
  *g2.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {-1, 6});
  *g2.add_output() = value_info("y", ::onnx::TensorProto::FLOAT, {-1, 6});
  weights(g2, "fc.w", {6, 6}, 11);
  add_node(g2, "MatMul", {"x", "fc.w"}, {"h"}, "/fc/MatMul");
  add_node(g2, "Div", {"h", "sqrt2"}, {"a1"}, "/act/Div");
  add_float_initializer(g2, "sqrt2", {}, {1.4142135f});
  add_float_initializer(g2, "one", {}, {1.f});
  add_float_initializer(g2, "half", {}, {0.5f});
  add_node(g2, "Erf", {"a1"}, {"a2"}, "/act/Erf");
  add_node(g2, "Add", {"a2", "one"}, {"a3"}, "/act/Add");
  add_node(g2, "Mul", {"h", "a3"}, {"a4"}, "/act/Mul");
  add_node(g2, "Mul", {"a4", "half"}, {"y"}, "/act/Mul_1");
  kiln::onnx::ImportedGraph native = import_and_compare(model_with(g2, 17), {x});
  EXPECT_EQ(count(native.graph).native, count(native.graph).total) << (native.warnings.empty() ? "" : native.warnings[0]);
  const std::string bytes = kiln::onnx::export_model(native.graph, native.state_dict);
  kiln::onnx::check_model_bytes(bytes);
  kiln::onnx::ImportedGraph again = kiln::onnx::import_graph(kiln::onnx::parse_model(bytes, ""));
  EXPECT_EQ(graph::to_json(again.graph), graph::to_json(native.graph));
}

// ConvTranspose (strides, pads, output_padding, group, bias) becomes ConvTranspose2d with the
// executor's outputs and round-trips; one whose output_shape sets the size stays
// onnx.ConvTranspose with a warning naming it.
TEST(OnnxNative, ConvTransposeBecomesConvTranspose2d) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {-1, 4, 5, 5});
  *g.add_output() = value_info("y", ::onnx::TensorProto::FLOAT, {-1, 2, 19, 20});
  weights(g, "up.w", {4, 3, 3, 3}, 1);
  weights(g, "up.b", {6}, 2);
  auto* up = add_node(g, "ConvTranspose", {"x", "up.w", "up.b"}, {"h"}, "/up/ConvTranspose");
  set_ints(up, "strides", {2, 2}), set_ints(up, "pads", {1, 1, 1, 1}), set_ints(up, "output_padding", {1, 1});
  set_int(up, "group", 2);
  weights(g, "sized.w", {6, 2, 2, 2}, 3);
  auto* sized = add_node(g, "ConvTranspose", {"h", "sized.w"}, {"y"}, "/sized/ConvTranspose");
  set_ints(sized, "strides", {2, 2}), set_ints(sized, "output_shape", {19, 20});
  kiln::onnx::ImportedGraph ig = import_and_compare(model_with(g, 17), {randn({2, 4, 5, 5}, 4)});
  const graph::Node& n = node_named(ig.graph, "up_ConvTranspose");
  EXPECT_EQ(n.op, "ConvTranspose2d");
  EXPECT_EQ(graph::attr_int(n.attrs, "out_channels"), 6);
  EXPECT_EQ(graph::attr_ints(n.attrs, "output_padding"), (V{1, 1}));
  EXPECT_EQ(ig.graph.initial_state.at("up_ConvTranspose.weight").shape(), (Shape{4, 3, 3, 3}));
  EXPECT_EQ(node_named(ig.graph, "sized_ConvTranspose").op, "onnx.ConvTranspose");
  EXPECT_TRUE(warned(ig, "node '/sized/ConvTranspose' (ConvTranspose) stays onnx.ConvTranspose: its output_shape "
                         "attribute sets the size"));
  const std::string bytes = kiln::onnx::export_model(ig.graph, ig.state_dict);
  kiln::onnx::check_model_bytes(bytes);
  const kiln::onnx::ImportedGraph again = kiln::onnx::import_graph(kiln::onnx::parse_model(bytes, ""));
  EXPECT_EQ(node_named(again.graph, "up_ConvTranspose").op, "ConvTranspose2d");
  EXPECT_TRUE(node_named(again.graph, "up_ConvTranspose").attrs == n.attrs);
}

// Bad input: a Conv weight computed at run time, asymmetric pads: onnx.Conv with a warning
// naming the node; the model still imports and runs.
TEST(OnnxNative, ImpossibleMappingsFallBackNamingTheNode) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {-1, 2, 6, 6});
  *g.add_output() = value_info("y", ::onnx::TensorProto::FLOAT, {-1, 3, 5, 5});
  weights(g, "w0", {3, 2, 3, 3}, 1);
  weights(g, "scale", {3, 1, 1, 1}, 2);
  add_node(g, "Mul", {"w0", "scale"}, {"w"}, "/w/Mul");  // weight depends on no input: folded? no Shape, so kept
  auto* c = add_node(g, "Conv", {"x", "w"}, {"h"}, "/runtime_weight/Conv");
  set_ints(c, "pads", {1, 1, 1, 1});
  weights(g, "w2", {3, 3, 3, 3}, 3);
  set_ints(add_node(g, "Conv", {"h", "w2"}, {"y"}, "/asym/Conv"), "pads", {0, 0, 1, 1});
  kiln::onnx::ImportedGraph ig = import_and_compare(model_with(g, 17), {randn({1, 2, 6, 6}, 4)});
  EXPECT_EQ(node_named(ig.graph, "runtime_weight_Conv").op, "onnx.Conv");
  EXPECT_TRUE(warned(ig, "node '/runtime_weight/Conv' (Conv) stays onnx.Conv: its weight (input 1) is computed at run time"));
  EXPECT_EQ(node_named(ig.graph, "asym_Conv").op, "onnx.Conv");
  EXPECT_TRUE(warned(ig, "node '/asym/Conv' (Conv) stays onnx.Conv: pads [0, 0, 1, 1] are asymmetric"));
  // The fallback's initializers are onnx.Initializer nodes, with their values in initial_state.
  EXPECT_TRUE(ig.graph.initial_state.count("w2.value"));
}

// Bad input: one initializer read by two Convs (one through an Identity): each native node
// gets its own copy, and a warning names both nodes.
TEST(OnnxNative, SharedInitializersAreCopiedWithAWarning) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {-1, 2, 5, 5});
  *g.add_output() = value_info("y", ::onnx::TensorProto::FLOAT, {-1, 2, 5, 5});
  weights(g, "w", {2, 2, 3, 3}, 1);
  set_ints(add_node(g, "Conv", {"x", "w"}, {"h"}, "/a/Conv"), "pads", {1, 1, 1, 1});
  add_node(g, "Identity", {"w"}, {"w_tied"}, "/tie");  // PyTorch's form of a tied weight
  set_ints(add_node(g, "Conv", {"h", "w_tied"}, {"y"}, "/b/Conv"), "pads", {1, 1, 1, 1});
  kiln::onnx::ImportedGraph ig = import_and_compare(model_with(g, 17), {randn({2, 2, 5, 5}, 2)});
  EXPECT_EQ(node_named(ig.graph, "a_Conv").op, "Conv2d");
  EXPECT_EQ(node_named(ig.graph, "b_Conv").op, "Conv2d");
  EXPECT_TRUE(warned(ig, "initializer 'w' is shared by node '/a/Conv' and '/b/Conv'"));
  const Tensor& a = ig.graph.initial_state.at("a_Conv.weight");
  const Tensor& b = ig.graph.initial_state.at("b_Conv.weight");
  EXPECT_TRUE(graph::same_tensor(a, b));
  EXPECT_NE(a.impl()->storage, b.impl()->storage);  // copies
  EXPECT_EQ(count(ig.graph).total, 2u);  // no Identity, no initializer node
}

// Below opset 13 nothing maps (older semantics); between 13 and 16 only a model that maps
// entirely (export writes native nodes at opset 17).
TEST(OnnxNative, OldOpsetsStayOnnx) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {-1, 3});
  *g.add_output() = value_info("y", ::onnx::TensorProto::FLOAT, {-1, 3});
  add_node(g, "Relu", {"x"}, {"r"}, "/Relu");
  add_node(g, "Neg", {"r"}, {"y"}, "/Neg");
  for (int64_t opset : {11, 14}) {
    kiln::onnx::ImportedGraph ig = import_and_compare(model_with(g, opset), {randn({2, 3}, 1)});
    EXPECT_EQ(node_named(ig.graph, "Relu").op, "onnx.Relu") << opset;
    EXPECT_EQ(opset == 14, warned(ig, "below 17: every node is kept as onnx.*")) << opset;
  }
  kiln::onnx::ImportedGraph ig = import_and_compare(model_with(g, 17), {randn({2, 3}, 1)});
  EXPECT_EQ(node_named(ig.graph, "Relu").op, "ReLU");
}

// torchvision's resnet18 and mobilenet_v2, and a small U-Net (ConvTranspose2d), as Debian's PyTorch
// exports them (make_torch_models.py, run by the onnx.torch.native ctest into KILN_TORCH_MODELS):
// >= 95% native nodes, the
// executor's outputs to 1e-5 relative (PyTorch's to 1e-4), export -> checker -> re-import the
// same graph.
TEST(OnnxNative, TorchModelsImportNative) {
  const char* dir = std::getenv("KILN_TORCH_MODELS");
  if (!dir) GTEST_SKIP() << "KILN_TORCH_MODELS not set";
  int checked = 0;
  for (const char* name : {"resnet18", "mobilenet_v2", "unet"}) {
    const std::filesystem::path d = std::filesystem::path(dir) / name;
    if (!std::filesystem::exists(d / "model.onnx")) continue;
    SCOPED_TRACE(name);
    kiln::onnx::Model m = kiln::onnx::load_model((d / "model.onnx").string());
    kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(m);
    const Native c = count(ig.graph);
    std::printf("%s: native nodes: %zu of %zu\n", name, c.native, c.total);
    EXPECT_GE(static_cast<double>(c.native), 0.95 * static_cast<double>(c.total));
    graph::GraphModule gm(ig.graph);
    gm.eval();
    const Tensor x = kiln::onnx::load_npy((d / "input.npy").string());
    const Tensor y = gm.forward(x);
    kiln::onnx::Session s(m);
    const Tensor want = s.run({{s.input_names().at(0), x}}).at(0);
    const double vs_executor = relative_error(y, want);
    const double vs_torch = relative_error(y, kiln::onnx::load_npy((d / "expected_output.npy").string()));
    std::printf("%s: largest difference / largest output: %.3g against the executor, %.3g against PyTorch\n", name,
                vs_executor, vs_torch);
    EXPECT_LE(vs_executor, 1e-5);
    EXPECT_LE(vs_torch, 1e-4);
    const std::string bytes = kiln::onnx::export_model(ig.graph, ig.state_dict);
    kiln::onnx::check_model_bytes(bytes);
    kiln::onnx::ImportedGraph again = kiln::onnx::import_graph(kiln::onnx::parse_model(bytes, ""));
    EXPECT_TRUE(again.graph == ig.graph);
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no resnet18 / mobilenet_v2 / unet in " << dir;
}
