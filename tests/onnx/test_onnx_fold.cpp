// fold_shape_subgraphs: the shape-only parts of a PyTorch-style Reshape chain that do not
// depend on the symbolic batch N become initializers; the rest stays; outputs are unchanged.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "engine/core/random.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/fold.h"
#include "model_builder.h"

using namespace kiln;
using namespace kiln::onnx::test;

namespace {

// x [N, 3, 4] -> y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), Unsqueeze(Gather(s, 1) * Gather(s, 2))))
// as torch.onnx writes x.view(x.size(0), x.size(1) * x.size(2)); then z = y + Cast(Size(x)) * 0.
// n: x's first dim, -1 symbolic.
::onnx::ModelProto reshape_chain(int64_t n = -1) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {n, 3, 4});
  add_int64_initializer(g, "i0", {})->clear_dims();
  add_int64_initializer(g, "i1", {})->clear_dims();
  add_int64_initializer(g, "i2", {})->clear_dims();
  g.mutable_initializer(0)->add_int64_data(0);
  g.mutable_initializer(1)->add_int64_data(1);
  g.mutable_initializer(2)->add_int64_data(2);
  add_int64_initializer(g, "axes0", {0});
  add_node(g, "Shape", {"x"}, {"s"}, "shape");
  add_node(g, "Gather", {"s", "i0"}, {"n"}, "gather_n");
  add_node(g, "Gather", {"s", "i1"}, {"c"}, "gather_c");
  add_node(g, "Gather", {"s", "i2"}, {"w"}, "gather_w");
  add_node(g, "Mul", {"c", "w"}, {"cw"}, "mul");
  add_node(g, "Unsqueeze", {"n", "axes0"}, {"n1"}, "unsqueeze_n");
  add_node(g, "Unsqueeze", {"cw", "axes0"}, {"cw1"}, "unsqueeze_cw");
  set_int(add_node(g, "Concat", {"n1", "cw1"}, {"target"}, "concat"), "axis", 0);
  add_node(g, "Reshape", {"x", "target"}, {"y"}, "reshape");
  *g.add_output() = value_info("y", ::onnx::TensorProto::FLOAT, {n, 12});
  return model_with(g, 17);
}

}  // namespace

TEST(OnnxFold, ReshapeChainFoldsWhatDoesNotDependOnN) {
  kiln::onnx::Model m = kiln::onnx::parse_model(reshape_chain().SerializeAsString(), "");
  kiln::onnx::Model folded = m;
  kiln::onnx::FoldReport r = kiln::onnx::fold_shape_subgraphs(folded);
  // gather_c, gather_w, mul, unsqueeze_cw fold; shape, gather_n, unsqueeze_n, concat, reshape stay
  EXPECT_EQ(r.folded_values, 4u);
  EXPECT_EQ(r.removed_nodes, 4u);
  ASSERT_EQ(folded.graph.nodes.size(), 5u);
  std::vector<std::string> kept;
  for (const auto& n : folded.graph.nodes) kept.push_back(n.name);
  EXPECT_EQ(kept, (std::vector<std::string>{"shape", "gather_n", "unsqueeze_n", "concat", "reshape"}));
  EXPECT_EQ(folded.graph.initializers.at("cw1").to_vector<int64_t>(), (std::vector<int64_t>{12}));
  kiln::onnx::Session a(m), b(folded);
  for (int64_t n : {1, 4, 7}) {
    std::vector<float> v(static_cast<size_t>(n * 12));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f - 3;
    Tensor x = Tensor::from_vector(v, {n, 3, 4});
    Tensor ya = a.run({{"x", x}})[0], yb = b.run({{"x", x}})[0];
    EXPECT_EQ(yb.shape(), (Shape{n, 12}));
    EXPECT_EQ(ya.to_vector<float>(), yb.to_vector<float>());
  }
}

// With every input dimension known (a model exported for batch 1) the whole chain folds, in one
// run; a Session with optimize does it at load and says so in its rewrite log.
TEST(OnnxFold, StaticShapesFoldTheWholeChainWhenTheSessionOptimizes) {
  kiln::onnx::Model m = kiln::onnx::parse_model(reshape_chain(2).SerializeAsString(), "");
  kiln::onnx::Model folded = m;
  kiln::onnx::FoldReport r = kiln::onnx::fold_shape_subgraphs(folded);
  EXPECT_EQ(r.folded_values, 8u);
  EXPECT_EQ(r.removed_nodes, 8u);
  ASSERT_EQ(folded.graph.nodes.size(), 1u);
  EXPECT_EQ(folded.graph.nodes[0].name, "reshape");
  EXPECT_EQ(folded.graph.initializers.at("target").to_vector<int64_t>(), (std::vector<int64_t>{2, 12}));
  kiln::onnx::SessionOptions optimize;
  optimize.optimize = true;
  kiln::onnx::Session plain(m), optimized(m, Device(), optimize);
  ASSERT_FALSE(optimized.rewrite_log().empty());
  EXPECT_EQ(optimized.rewrite_log()[0], "FoldShapeSubgraphs: 8 shape-only nodes folded into 8 constants");
  EXPECT_TRUE(plain.rewrite_log().empty());
  // with a symbolic N the session folds nothing: floor-like arithmetic on N could agree for the
  // two trial values and not for others (fold.h)
  kiln::onnx::Session symbolic(kiln::onnx::parse_model(reshape_chain().SerializeAsString(), ""), Device(), optimize);
  for (const std::string& line : symbolic.rewrite_log()) EXPECT_EQ(line.find("FoldShapeSubgraphs"), std::string::npos);
  std::vector<float> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f - 3;
  Tensor x = Tensor::from_vector(v, {2, 3, 4});
  Tensor ya = plain.run({{"x", x}})[0], yb = optimized.run({{"x", x}})[0];
  EXPECT_EQ(yb.shape(), (Shape{2, 12}));
  EXPECT_EQ(ya.to_vector<float>(), yb.to_vector<float>());
}

TEST(OnnxFold, NothingToFoldWithoutShapeOps) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {-1, 2});
  add_node(g, "Relu", {"x"}, {"y"}, "relu");
  g.add_output()->set_name("y");
  kiln::onnx::Model m = kiln::onnx::parse_model(model_with(g, 17).SerializeAsString(), "");
  kiln::onnx::FoldReport r = kiln::onnx::fold_shape_subgraphs(m);
  EXPECT_EQ(r.folded_values, 0u);
  EXPECT_EQ(m.graph.nodes.size(), 1u);
}

// The PyTorch transformer encoder of make_torch_models.py (when KILN_TORCH_MODELS names a
// folder it wrote): fewer nodes, the same outputs for batches of 2 and 5.
TEST(OnnxFold, TorchTransformerKeepsOutputs) {
  const char* dir = std::getenv("KILN_TORCH_MODELS");
  std::filesystem::path p = dir ? std::filesystem::path(dir) / "transformer" / "model.onnx" : "";
  if (!dir || !std::filesystem::exists(p)) GTEST_SKIP() << "KILN_TORCH_MODELS not set or no transformer in it";
  kiln::onnx::Model m = kiln::onnx::load_model(p.string()), folded = m;
  kiln::onnx::FoldReport r = kiln::onnx::fold_shape_subgraphs(folded);
  EXPECT_GT(r.removed_nodes, 0u);
  EXPECT_LT(folded.graph.nodes.size(), m.graph.nodes.size());
  kiln::onnx::Session a(m), b(folded);
  for (int64_t n : {2, 5}) {
    Tensor x = kiln::normal({n, 10, 32}, 0, 1);
    std::vector<float> ya = a.run({{"input", x}})[0].to_vector<float>(), yb = b.run({{"input", x}})[0].to_vector<float>();
    EXPECT_EQ(ya, yb) << "batch " << n;
  }
}
