// engine/onnx export names (export_names.h): an imported model keeps its value and node
// names and gains no Identity node; a Studio graph names its outputs after its Output nodes;
// Identity only where an output is a graph input or a value another output already names.
// And the suite models libonnx 1.12's converter could not take to opset 17 without shapes.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/core/random.h"
#include "engine/graph/graph_module.h"
#include "engine/onnx/export.h"
#include "engine/onnx/graph_import.h"
#include "engine/onnx/suite.h"
#include "engine/onnx/tensor_proto.h"
#include "model_builder.h"
#include "tests/common/test_deps.h"

namespace fs = std::filesystem;
using namespace kiln;
using namespace kiln::onnx::test;

namespace {

const std::string kData = "/usr/share/libonnx-testdata/data";

int count_op(const kiln::onnx::Model& m, const std::string& op) {
  int n = 0;
  for (const kiln::onnx::Node& node : m.graph.nodes) n += node.op_type == op;
  return n;
}

std::vector<std::string> names_of(const std::vector<kiln::onnx::ValueInfo>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) out.push_back(v.name);
  return out;
}

void expect_close(const std::vector<Tensor>& want, const std::vector<Tensor>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    double err = 0;
    EXPECT_EQ(kiln::onnx::compare_tensors(want[i], got[i], 1e-5, 1e-5, err), "") << "output " << i;
  }
}

// The ONNX executor on the exported bytes, inputs in the model's order.
std::vector<Tensor> run_exported(const std::string& bytes, const std::vector<Tensor>& inputs) {
  kiln::onnx::Session s(kiln::onnx::parse_model(bytes, ""));
  std::map<std::string, Tensor> feed;
  for (size_t i = 0; i < inputs.size(); ++i) feed[s.input_names().at(i)] = inputs[i];
  return s.run(feed);
}

}  // namespace

TEST(OnnxExportNames, ImportedModelKeepsItsNamesAndNodes) {
  ::onnx::GraphProto g;
  g.set_name("named");
  *g.add_input() = value_info("input.1", ::onnx::TensorProto::FLOAT, {-1, 3});
  *g.add_output() = value_info("logits", ::onnx::TensorProto::FLOAT, {-1, 2});
  *g.add_output() = value_info("/fc/Gemm_output_0", ::onnx::TensorProto::FLOAT, {-1, 2});
  add_float_initializer(g, "fc.weight", {2, 3}, {1, 0, 0, 0, 1, 0});
  add_float_initializer(g, "fc.bias", {2}, {0.5f, -0.5f});
  set_int(add_node(g, "Gemm", {"input.1", "fc.weight", "fc.bias"}, {"/fc/Gemm_output_0"}, "/fc/Gemm"), "transB", 1);
  add_node(g, "Relu", {"/fc/Gemm_output_0"}, {"logits"}, "/act/Relu");
  kiln::onnx::Model original = kiln::onnx::parse_model(model_with(g, 17).SerializeAsString(), "");
  kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(original);
  std::string bytes = kiln::onnx::export_model(ig.graph, ig.state_dict);
  kiln::onnx::check_model_bytes(bytes);
  kiln::onnx::Model m = kiln::onnx::parse_model(bytes, "");
  // Gemm and Relu import as the native Linear and ReLU: with no onnx.* node left to record
  // the model's value names, inputs and outputs take their graph nodes' names (identifiers).
  EXPECT_EQ(names_of(m.graph.inputs), std::vector<std::string>{"input_1"});
  EXPECT_EQ(names_of(m.graph.outputs), (std::vector<std::string>{"logits", "fc_Gemm_output_0"}));
  // Gemm and Relu import as the native Linear and ReLU, named after the ONNX nodes; their
  // weights export as the state_dict keys.
  EXPECT_TRUE(m.graph.initializers.count("fc_Gemm.weight"));
  EXPECT_TRUE(m.graph.initializers.count("fc_Gemm.bias"));
  ASSERT_EQ(m.graph.nodes.size(), 2u);  // no Identity
  EXPECT_EQ(m.graph.nodes[0].name, "fc_Gemm");
  EXPECT_EQ(m.graph.nodes[1].name, "act_Relu");
  EXPECT_EQ(m.graph.name, "named");
  Tensor x = Tensor::from_vector(std::vector<float>{1, -2, 3, 4, 5, 6}, {2, 3});
  graph::GraphModule gm(ig.graph);
  gm.load_state_dict(ig.state_dict);
  expect_close(gm.forward(std::vector<Tensor>{x}), run_exported(bytes, {x}));
}

// An output that is a graph input, and a second output of one value, need an Identity each.
TEST(OnnxExportNames, IdentityOnlyForGraphInputsAndAliasedOutputs) {
  graph::Graph g;
  g.name = "studio";
  graph::NodeId x = g.add_node("Input", "features", {{"shape", std::vector<int64_t>{4}}});
  graph::NodeId fc = g.add_node("Linear", "fc", {{"in_features", int64_t{4}}, {"out_features", int64_t{3}}});
  graph::NodeId act = g.add_node("ReLU", "act");
  g.connect({x, 0}, {fc, 0});
  g.connect({fc, 0}, {act, 0});
  for (auto [name, src] : std::vector<std::pair<std::string, graph::NodeId>>{
           {"scores", act}, {"hidden", fc}, {"echo", x}, {"scores_again", act}}) {
    graph::NodeId o = g.add_node("Output", name);
    g.connect({src, 0}, {o, 0});
  }
  graph::GraphModule gm(g);
  std::string bytes = kiln::onnx::export_model(g, gm.state_dict());
  kiln::onnx::check_model_bytes(bytes);
  kiln::onnx::Model m = kiln::onnx::parse_model(bytes, "");
  EXPECT_EQ(names_of(m.graph.inputs), std::vector<std::string>{"features"});
  EXPECT_EQ(names_of(m.graph.outputs), (std::vector<std::string>{"scores", "hidden", "echo", "scores_again"}));
  EXPECT_EQ(count_op(m, "Identity"), 2);  // echo (a graph input) and scores_again (scores' value)
  EXPECT_EQ(m.graph.nodes.size(), 4u);    // Gemm, Relu and the two
  EXPECT_TRUE(m.graph.initializers.count("fc.weight"));
  Tensor in = normal({2, 4}, 0, 1);
  expect_close(gm.forward(std::vector<Tensor>{in}), run_exported(bytes, {in}));
}

// Softmin (Softmax 6 -> 13) and the broadcasting Add / Gemm of opset 6 (-> 7) need their
// inputs' shapes in libonnx's converter: exported at opset 17 with the executor's outputs.
TEST(OnnxExportNames, OldOpsetModelsNeedingShapesConvertToOpset17) {
  KILN_SKIP_UNLESS_DEP(fs::exists(kData + "/pytorch-converted"), "libonnx-testdata", "no " + kData + "/pytorch-converted");
  for (const char* c : {"pytorch-converted/test_Softmin", "pytorch-converted/test_Softsign",
                        "pytorch-operator/test_operator_addmm"}) {
    SCOPED_TRACE(c);
    const std::string dir = kData + "/" + c;
    kiln::onnx::Model original = kiln::onnx::load_model(dir + "/model.onnx");
    ASSERT_EQ(original.opset(), 6);
    kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(original);
    std::string bytes = kiln::onnx::export_model(ig.graph, ig.state_dict);
    kiln::onnx::check_model_bytes(bytes);
    kiln::onnx::Model m = kiln::onnx::parse_model(bytes, "");
    EXPECT_EQ(m.opset(), 17);
    EXPECT_EQ(names_of(m.graph.outputs), names_of(original.graph.outputs));
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < original.graph.inputs.size(); ++i)
      inputs.push_back(kiln::onnx::load_tensor_file(dir + "/test_data_set_0/input_" + std::to_string(i) + ".pb"));
    std::map<std::string, Tensor> feed;
    kiln::onnx::Session s(original);
    for (size_t i = 0; i < inputs.size(); ++i) feed[s.input_names().at(i)] = inputs[i];
    expect_close(s.run(feed), run_exported(bytes, inputs));
  }
}

// A graph imported before names were recorded (no onnx_names / onnx_name) still exports
// cleanly: values named after the graph nodes, outputs after the Output nodes, no Identity.
TEST(OnnxExportNames, GraphWithoutRecordedNamesUsesNodeNames) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("input.1", ::onnx::TensorProto::FLOAT, {-1, 3});
  *g.add_output() = value_info("out.2", ::onnx::TensorProto::FLOAT, {-1, 3});
  add_float_initializer(g, "scale", {3}, {1, 2, 3});
  add_node(g, "Mul", {"input.1", "scale"}, {"m"}, "/mul");
  add_node(g, "Relu", {"m"}, {"out.2"}, "/relu");
  kiln::onnx::ImportedGraph ig =
      kiln::onnx::import_graph(kiln::onnx::parse_model(model_with(g, 17).SerializeAsString(), ""));
  for (const graph::Node& n : ig.graph.nodes()) {
    if (n.attrs.count("onnx_names")) ig.graph.set_attr(n.id, "onnx_names", std::string());
    if (n.attrs.count("onnx_name")) ig.graph.set_attr(n.id, "onnx_name", std::string());
  }
  std::string bytes = kiln::onnx::export_model(ig.graph, ig.state_dict);
  kiln::onnx::check_model_bytes(bytes);
  kiln::onnx::Model m = kiln::onnx::parse_model(bytes, "");
  EXPECT_EQ(names_of(m.graph.inputs), std::vector<std::string>{"input_1"});
  EXPECT_EQ(names_of(m.graph.outputs), std::vector<std::string>{"out_2"});
  EXPECT_TRUE(m.graph.initializers.count("scale.value"));
  EXPECT_EQ(count_op(m, "Identity"), 0);
  EXPECT_EQ(m.graph.nodes.size(), 2u);
  Tensor x = Tensor::from_vector(std::vector<float>{1, -2, 3, -4, 5, 6}, {2, 3});
  graph::GraphModule gm(ig.graph);
  gm.load_state_dict(ig.state_dict);
  expect_close(gm.forward(std::vector<Tensor>{x}), run_exported(bytes, {x}));
}
