// engine/onnx codegen: the generated C++ names its statements after the ONNX nodes with shapes
// in comments, the weights file holds the initializers, the example outputs are the executor's,
// and what it cannot translate is reported before anything is written. (Building and running the
// generated project against the installed engine is the ctest onnx.codegen.cnn.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "engine/graph/graph_module.h"
#include "engine/graph/json.h"
#include "engine/io/safetensors.h"
#include "engine/onnx/codegen.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/export.h"
#include "engine/onnx/suite.h"

namespace fs = std::filesystem;
using namespace kiln;

namespace {

kiln::onnx::Model cnn_model() {
  std::ifstream f(fs::path(KILN_SOURCE_DIR) / "projects" / "templates" / "fashion_mnist_cnn.json");
  std::stringstream ss;
  ss << f.rdbuf();
  graph::Graph g = graph::from_json(ss.str());
  graph::GraphModule gm(g);
  return kiln::onnx::parse_model(kiln::onnx::export_model(g, gm.state_dict()), "");
}

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("kiln_codegen_" + std::to_string(::getpid()));
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST(OnnxCodegen, WritesNamedStatementsWeightsAndExamples) {
  TempDir tmp;
  kiln::onnx::Model m = cnn_model();
  kiln::onnx::CodegenOptions o;
  o.class_name = "SmallCnn";
  std::vector<std::string> files = kiln::onnx::generate_cpp(m, tmp.path.string(), o);
  EXPECT_EQ(files.size(), 7u);
  std::string h = read(tmp.path / "small_cnn.h"), cpp = read(tmp.path / "small_cnn.cpp");
  EXPECT_NE(h.find("class SmallCnn {"), std::string::npos);
  EXPECT_NE(h.find("std::vector<kiln::Tensor> forward(const kiln::Tensor& image) const;"), std::string::npos) << h;
  EXPECT_NE(h.find("kiln::Tensor conv1_weight;  // f32[32, 1, 3, 3]  (initializer \"conv1.weight\")"), std::string::npos) << h;
  EXPECT_NE(cpp.find("// conv1: Conv -> f32[N, 32, 28, 28]\n  kiln::Tensor conv1 = kiln::conv2d(image, conv1_weight, conv1_bias"),
            std::string::npos) << cpp;
  EXPECT_NE(cpp.find("kiln::Tensor flatten = pool2.reshape({-1, 3136});"), std::string::npos) << cpp;
  EXPECT_NE(read(tmp.path / "CMakeLists.txt").find("find_package(Kiln REQUIRED)"), std::string::npos);
  // Weights under the member names, equal to the initializers.
  auto w = io::load_safetensors((tmp.path / "small_cnn_weights.safetensors").string()).tensors;
  std::map<std::string, Tensor> weights(w.begin(), w.end());
  ASSERT_TRUE(weights.count("fc1_weight"));
  EXPECT_EQ(weights["fc1_weight"].to_vector<float>(), m.graph.initializers.at("fc1.weight").to_vector<float>());
  // Example outputs are the executor's on the example inputs (batch 2).
  auto in = io::load_safetensors((tmp.path / "example_inputs.safetensors").string()).tensors;
  auto want = io::load_safetensors((tmp.path / "example_outputs.safetensors").string()).tensors;
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].second.shape(), (Shape{2, 1, 28, 28}));
  kiln::onnx::Session s(m);
  std::vector<Tensor> got = s.run({{in[0].first, in[0].second}});
  double err = 0;
  ASSERT_EQ(want.size(), 1u);
  EXPECT_EQ(kiln::onnx::compare_tensors(want[0].second, got[0], 0, 0, err), "");
}

TEST(OnnxCodegen, ListsEveryUntranslatedOpBeforeWriting) {
  TempDir tmp;
  kiln::onnx::Model m = cnn_model();
  m.graph.nodes[1].op_type = "CumSum";
  m.graph.nodes[2].op_type = "Hardmax";
  try {
    kiln::onnx::generate_cpp(m, tmp.path.string());
    FAIL() << "no error";
  } catch (const ValueError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("CumSum (node 'relu1')"), std::string::npos) << what;
    EXPECT_NE(what.find("Hardmax (node 'pool1')"), std::string::npos) << what;
  }
  EXPECT_FALSE(fs::exists(tmp.path));
}

TEST(OnnxCodegen, AsymmetricPadsNameTheNode) {
  TempDir tmp;
  kiln::onnx::Model m = cnn_model();
  m.graph.nodes[0].attributes["pads"].ints = {2, 2, 0, 0};
  try {
    kiln::onnx::generate_cpp(m, tmp.path.string());
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'conv1' (Conv): pads {2, 2, 0, 0} are not symmetric"), std::string::npos)
        << e.what();
  }
}
