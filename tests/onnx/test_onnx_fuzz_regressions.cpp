// Inputs found by the importer's fuzzer (tests/fuzz), made into tests: each gives a clear
// error naming the node, not a crash.
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/fold.h"
#include "engine/onnx/graph_import.h"
#include "model_builder.h"

using namespace kiln;
using namespace kiln::onnx::test;

// crash-98b38d08: Tile of a [1, 2, 3, 4] input with repeats [1, 2, 3, 2^44 + 4] asks for
// 3.5e18 bytes. The CPU allocator's failure is a DeviceError naming the node; graph import
// (which runs the model) and fold_shape_subgraphs (which keeps the model as it is) cope.
TEST(OnnxFuzzRegressions, TileToAnImpossibleSizeIsAnErrorNamingTheNode) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {1, 2, 3, 4});
  add_int64_initializer(g, "repeats", {1, 2, 3, (int64_t(1) << 44) + 4});
  add_node(g, "Tile", {"x", "repeats"}, {"y"}, "tile");
  g.add_output()->set_name("y");
  kiln::onnx::Model m = kiln::onnx::parse_model(model_with(g, 13).SerializeAsString(), "");
  kiln::onnx::Model folded = m;
  EXPECT_EQ(kiln::onnx::fold_shape_subgraphs(folded).removed_nodes, 0u);
  kiln::onnx::Session s(m);
  try {
    s.run({{"x", Tensor::zeros({1, 2, 3, 4})}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'tile' (Tile)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(kiln::onnx::import_graph(m), Error);
}

// timeout-9d5cf7cc: Constant repeats tile a [1, 2] input to [1, 33554432, 3, 8] (3.2 GB).
// fold_shape_subgraphs ran such models twice although no Shape or Size node was there to fold;
// now a model without them does not run (here: its Constant stays, with repeats kept small).
TEST(OnnxFuzzRegressions, FoldDoesNotRunModelsWithoutShapeOps) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {1, 2});
  auto* c = add_node(g, "Constant", {}, {"repeats"}, "repeats");
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(::onnx::TensorProto::INT64);
  a->mutable_t()->add_dims(2);
  a->mutable_t()->add_int64_data(2);
  a->mutable_t()->add_int64_data(3);
  add_node(g, "Tile", {"x", "repeats"}, {"y"}, "tile");
  g.add_output()->set_name("y");
  kiln::onnx::Model m = kiln::onnx::parse_model(model_with(g, 13).SerializeAsString(), "");
  kiln::onnx::FoldReport r = kiln::onnx::fold_shape_subgraphs(m);
  EXPECT_EQ(r.folded_values, 0u);
  EXPECT_EQ(m.graph.nodes.size(), 2u);
}

// crash-ce24ed12: BatchNormalization (and InstanceNormalization) of a rank-1 input wrote the
// channel count past the end of a one-element shape; now a ShapeError naming the node.
TEST(OnnxFuzzRegressions, NormalizationOfARank1InputIsAShapeError) {
  for (const char* op : {"BatchNormalization", "InstanceNormalization"}) {
    SCOPED_TRACE(op);
    ::onnx::GraphProto g;
    *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {3});
    std::vector<std::string> in{"x", "scale", "bias"};
    add_float_initializer(g, "scale", {3}, {1, 1, 1});
    add_float_initializer(g, "bias", {3}, {0, 0, 0});
    if (std::string(op) == "BatchNormalization") {
      add_float_initializer(g, "mean", {3}, {0, 0, 0});
      add_float_initializer(g, "var", {3}, {1, 1, 1});
      in.push_back("mean");
      in.push_back("var");
    }
    add_node(g, op, in, {"y"}, "norm");
    g.add_output()->set_name("y");
    kiln::onnx::Session s(kiln::onnx::parse_model(model_with(g, 15).SerializeAsString(), ""));
    try {
      s.run({{"x", Tensor::zeros({3})}});
      FAIL() << "expected a ShapeError";
    } catch (const ShapeError& e) {
      EXPECT_NE(std::string(e.what()).find("node 'norm'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
    }
  }
}

// crash-42ae05f7: NegativeLogLikelihoodLoss with a target class outside [0, C) read past the
// class weights (the engine's index_select trusts its indices); now a ValueError naming the node.
TEST(OnnxFuzzRegressions, NllTargetOutsideTheClassesIsAnError) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("lp", ::onnx::TensorProto::FLOAT, {2, 3});
  *g.add_input() = value_info("t", ::onnx::TensorProto::INT64, {2});
  add_float_initializer(g, "w", {3}, {1, 1, 1});
  add_node(g, "NegativeLogLikelihoodLoss", {"lp", "t", "w"}, {"loss"}, "nll");
  g.add_output()->set_name("loss");
  kiln::onnx::Session s(kiln::onnx::parse_model(model_with(g, 13).SerializeAsString(), ""));
  Tensor lp = Tensor::zeros({2, 3});
  try {
    s.run({{"lp", lp}, {"t", Tensor::from_vector(std::vector<int64_t>{1, 1000000}, {2})}});
    FAIL() << "expected a ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'nll' (NegativeLogLikelihoodLoss): target class 1000000 is outside [0, 3)"),
              std::string::npos) << e.what();
  }
  // valid targets still work: mean of -lp at the targets, weights 1
  EXPECT_EQ(s.run({{"lp", lp}, {"t", Tensor::from_vector(std::vector<int64_t>{0, 2}, {2})}})[0].item<float>(), 0.0f);
}
