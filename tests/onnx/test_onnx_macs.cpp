// Multiply-adds per sample of imported ONNX models (graph::analyze over the "onnx.*" schemas):
// a small CNN with a symbolic batch, counted by hand.
#include <gtest/gtest.h>

#include "engine/graph/analysis.h"
#include "engine/onnx/graph_import.h"
#include "model_builder.h"

using namespace kiln;
using namespace kiln::onnx::test;

namespace {
std::vector<float> filled(size_t n) { return std::vector<float>(n, 0.01f); }
}  // namespace

TEST(OnnxMacs, SmallCnnConvGemmMatMul) {
  // x [N, 3, 8, 8] -> Conv 4x3x3x3 pad 1 -> [N, 4, 8, 8] -> Relu -> Flatten [N, 256]
  //   -> Gemm (B [10, 256], transB) -> [N, 10] -> MatMul [10, 5] -> [N, 5]
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {-1, 3, 8, 8});
  add_float_initializer(g, "w", {4, 3, 3, 3}, filled(108));
  add_float_initializer(g, "b", {4}, filled(4));
  add_float_initializer(g, "fc", {10, 256}, filled(2560));
  add_float_initializer(g, "proj", {10, 5}, filled(50));
  set_ints(add_node(g, "Conv", {"x", "w", "b"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  add_node(g, "Relu", {"c"}, {"r"}, "relu");
  add_node(g, "Flatten", {"r"}, {"f"}, "flatten");
  set_int(add_node(g, "Gemm", {"f", "fc"}, {"h"}, "fc"), "transB", 1);
  add_node(g, "MatMul", {"h", "proj"}, {"y"}, "proj");
  *g.add_output() = value_info("y", ::onnx::TensorProto::FLOAT, {-1, 5});
  kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(kiln::onnx::parse_model(model_with(g, 17).SerializeAsString(), ""));
  graph::Analysis an = graph::analyze(ig.graph);
  ASSERT_TRUE(an.ok()) << an.problems.at(0).message;
  int64_t conv = 4 * 8 * 8 * (3 * 3 * 3), gemm = 10 * 256, matmul = 5 * 10;
  EXPECT_EQ(an.total_macs, conv + gemm + matmul);
}

TEST(OnnxMacs, ConvTransposeAndGroups) {
  // grouped Conv: x [N, 4, 6, 6], W [8, 2, 3, 3], group 2 -> [N, 8, 4, 4]: 128 outputs x 18;
  // ConvTranspose: W [8, 3, 2, 2] stride 2 -> [N, 3, 8, 8]: 128 inputs x 12
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {-1, 4, 6, 6});
  add_float_initializer(g, "w", {8, 2, 3, 3}, filled(144));
  add_float_initializer(g, "wt", {8, 3, 2, 2}, filled(96));
  set_int(add_node(g, "Conv", {"x", "w"}, {"c"}, "conv"), "group", 2);
  set_ints(add_node(g, "ConvTranspose", {"c", "wt"}, {"y"}, "up"), "strides", {2, 2});
  *g.add_output() = value_info("y", ::onnx::TensorProto::FLOAT, {-1, 3, 8, 8});
  kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(kiln::onnx::parse_model(model_with(g, 17).SerializeAsString(), ""));
  graph::Analysis an = graph::analyze(ig.graph);
  ASSERT_TRUE(an.ok()) << an.problems.at(0).message;
  EXPECT_EQ(an.total_macs, 8 * 4 * 4 * 18 + 8 * 4 * 4 * 12);
}
