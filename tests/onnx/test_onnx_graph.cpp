// ONNX -> graph::Graph: the imported graph analyzes cleanly and, run as a GraphModule with
// the imported state_dict, gives the executor's outputs, for the suite's PyTorch models.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/graph/analysis.h"
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

// Imports the case's model and checks GraphModule against the executor on test_data_set_0.
void check_case(const fs::path& dir) {
  SCOPED_TRACE(dir.string());
  kiln::onnx::Model m = kiln::onnx::load_model((dir / "model.onnx").string());
  kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(m);
  graph::Analysis an = graph::analyze(ig.graph);
  ASSERT_TRUE(an.ok()) << (an.problems.empty() ? "" : an.problems[0].message);
  graph::GraphModule gm(ig.graph);
  gm.load_state_dict(ig.state_dict);
  gm.eval();
  kiln::onnx::Session s(m);
  std::map<std::string, Tensor> feed;
  std::vector<Tensor> inputs;
  std::vector<std::string> names = s.input_names();
  for (size_t i = 0; i < names.size(); ++i) {
    Tensor t = kiln::onnx::load_tensor_file((dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb")).string());
    feed[names[i]] = t;
    inputs.push_back(t);
  }
  std::vector<Tensor> want = s.run(feed), got = gm.forward(inputs);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    double err = 0;
    EXPECT_EQ(kiln::onnx::compare_tensors(want[i], got[i], 1e-6, 1e-7, err), "") << "output " << i;
  }
}

}  // namespace

TEST(OnnxGraph, PytorchConvertedModelsRunAsGraphModules) {
  KILN_SKIP_UNLESS_DEP(fs::exists(kData + "/pytorch-converted"), "libonnx-testdata", "no " + kData + "/pytorch-converted");
  int checked = 0;
  for (const std::string& c : kiln::onnx::find_cases(kData + "/pytorch-converted")) {
    check_case(c);
    ++checked;
  }
  EXPECT_EQ(checked, 82);
}

TEST(OnnxGraph, NodeNamesBecomeIdentifiersAndShapesKeepTheBatch) {
  ::onnx::GraphProto g;
  g.set_name("mlp");
  *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {-1, 3});
  *g.add_output() = value_info("y", ::onnx::TensorProto::FLOAT, {-1, 2});
  add_float_initializer(g, "fc.weight", {2, 3}, {1, 0, 0, 0, 1, 0});
  add_float_initializer(g, "fc.bias", {2}, {0.5f, -0.5f});
  auto* n = add_node(g, "Gemm", {"x", "fc.weight", "fc.bias"}, {"h"}, "/fc/Gemm");
  set_int(n, "transB", 1);
  add_node(g, "Relu", {"h"}, {"y"}, "/act/Relu");
  kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(kiln::onnx::parse_model(model_with(g, 17).SerializeAsString(), ""));
  graph::Analysis an = graph::analyze(ig.graph);
  ASSERT_TRUE(an.ok());
  EXPECT_EQ(an.total_parameters, 8);
  bool found = false;
  for (const graph::Node& node : ig.graph.nodes())
    if (node.name == "fc_Gemm") {
      found = true;
      EXPECT_EQ(node.op, "Linear");  // native (graph_import.h)
      EXPECT_EQ(an.nodes.at(node.id).outputs.at(0).str(), "f32[N, 2]");
    }
  EXPECT_TRUE(found);
  graph::GraphModule gm(ig.graph);
  gm.load_state_dict(ig.state_dict);
  Tensor y = gm.forward(Tensor::from_vector(std::vector<float>{1, -2, 3, 4, 5, 6}, {2, 3}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1.5f, 0.0f, 4.5f, 4.5f}));
}

// The batch shown on every edge follows the model's input: a model that fixes it ([1, 3])
// shows 1 from its Input on (Input's "batch"), one with a symbolic batch shows N, and each
// exports its input as it was.
TEST(OnnxGraph, FixedBatchIsShownFixedFromTheInputOn) {
  for (int64_t batch : {int64_t{1}, int64_t{-1}}) {
    SCOPED_TRACE(batch);
    ::onnx::GraphProto g;
    g.set_name("mlp");
    *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {batch, 3});
    *g.add_output() = value_info("y", ::onnx::TensorProto::FLOAT, {batch, 2});
    add_float_initializer(g, "fc.weight", {2, 3}, {1, 0, 0, 0, 1, 0});
    auto* n = add_node(g, "Gemm", {"x", "fc.weight"}, {"h"}, "/fc/Gemm");
    set_int(n, "transB", 1);
    add_node(g, "Relu", {"h"}, {"y"}, "/act/Relu");
    kiln::onnx::ImportedGraph ig =
        kiln::onnx::import_graph(kiln::onnx::parse_model(model_with(g, 17).SerializeAsString(), ""));
    graph::Analysis an = graph::analyze(ig.graph);
    ASSERT_TRUE(an.ok());
    const std::string first = batch == 1 ? "[1, " : "[N, ";
    int edges = 0;
    for (const graph::Node& node : ig.graph.nodes()) {
      if (node.op == "onnx.Initializer" || node.op == "Output") continue;
      const graph::TensorType& t = an.nodes.at(node.id).outputs.at(0);
      EXPECT_EQ(graph::shape_str(t.shape).substr(0, 4), first) << node.name << ": " << t.str();
      ++edges;
    }
    EXPECT_EQ(edges, 3);  // x, fc_Gemm, act_Relu
    const graph::Node& input = ig.graph.node(ig.graph.input_nodes().at(0));
    EXPECT_EQ(graph::attr_int(input.attrs, "batch"), batch == 1 ? 1 : 0);
    kiln::onnx::Model back = kiln::onnx::parse_model(kiln::onnx::export_model(ig.graph, ig.state_dict), "");
    EXPECT_EQ(back.graph.inputs.at(0).type_str(), batch == 1 ? "FLOAT[1, 3]" : "FLOAT[N, 3]");
    EXPECT_EQ(back.graph.outputs.at(0).type_str(), batch == 1 ? "FLOAT[1, 2]" : "FLOAT[N, 2]");
  }
}

// Input's "batch" is checked like any attribute: a negative size is refused, naming it.
TEST(OnnxGraph, InputBatchMustNotBeNegative) {
  graph::Graph g;
  try {
    g.add_node("Input", "x", {{"batch", int64_t{-2}}});
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("batch"), std::string::npos) << e.what();
  }
}
