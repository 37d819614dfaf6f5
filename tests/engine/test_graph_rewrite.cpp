// Graph rewrite passes (engine/graph/rewrite.h, passes.h): batch-norm folding computes the
// same function as the unfolded graph in eval mode; a batch norm whose input has another
// reader is kept; Conv2d/Linear + ReLU fusion markers; the runner's checks.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/core/error.h"
#include "engine/core/random.h"
#include "engine/graph/graph_module.h"
#include "engine/graph/op_schema.h"
#include "engine/graph/passes.h"

namespace kiln::graph {
namespace {

void chain(Graph& g, const std::vector<NodeId>& ids) {
  for (size_t i = 0; i + 1 < ids.size(); ++i) g.connect({ids[i], 0}, {ids[i + 1], 0});
}

void random_bn(Graph& g, const std::string& bn, int64_t c) {
  g.initial_state[bn + ".weight"] = uniform({c}, 0.5, 2.0);
  g.initial_state[bn + ".bias"] = normal({c}, 0, 0.5);
  g.initial_state[bn + ".running_mean"] = normal({c}, 0, 0.5);
  g.initial_state[bn + ".running_var"] = uniform({c}, 0.2, 3.0);
}

// image [3, 8, 8] -> conv1 (no bias) -> bn1 -> relu1 -> flatten -> fc1 -> bn2 -> relu2 -> fc2 -> out
Graph conv_bn_graph() {
  Graph g;
  const NodeId in = g.add_node("Input", "image", {{"shape", std::vector<int64_t>{3, 8, 8}}});
  const NodeId conv = g.add_node("Conv2d", "conv1",
                                 {{"in_channels", int64_t{3}}, {"out_channels", int64_t{4}},
                                  {"padding", std::vector<int64_t>{1, 1}}, {"bias", false}});
  const NodeId bn1 = g.add_node("BatchNorm2d", "bn1", {{"num_features", int64_t{4}}});
  const NodeId relu1 = g.add_node("ReLU", "relu1");
  const NodeId flat = g.add_node("Flatten", "flatten");
  const NodeId fc1 = g.add_node("Linear", "fc1", {{"in_features", int64_t{256}}, {"out_features", int64_t{6}}});
  const NodeId bn2 = g.add_node("BatchNorm1d", "bn2", {{"num_features", int64_t{6}}});
  const NodeId relu2 = g.add_node("ReLU", "relu2");
  const NodeId fc2 = g.add_node("Linear", "fc2", {{"in_features", int64_t{6}}, {"out_features", int64_t{3}}});
  const NodeId out = g.add_node("Output", "out");
  chain(g, {in, conv, bn1, relu1, flat, fc1, bn2, relu2, fc2, out});
  g.initial_state["conv1.weight"] = normal({4, 3, 3, 3}, 0, 0.3);
  g.initial_state["fc1.weight"] = normal({6, 256}, 0, 0.1);
  g.initial_state["fc1.bias"] = normal({6}, 0, 0.1);
  g.initial_state["fc2.weight"] = normal({3, 6}, 0, 0.3);
  g.initial_state["fc2.bias"] = normal({3}, 0, 0.1);
  random_bn(g, "bn1", 4);
  random_bn(g, "bn2", 6);
  return g;
}

std::vector<float> run_eval(const Graph& g, const Tensor& x) {
  GraphModule m(g);
  m.eval();
  return m.forward(x).to_vector<float>();
}

bool has_op(const Graph& g, const std::string& op) {
  return std::any_of(g.nodes().begin(), g.nodes().end(), [&](const Node& n) { return n.op == op; });
}

TEST(GraphRewrite, FoldedGraphComputesTheSameOutputs) {
  manual_seed(3);
  const Graph g = conv_bn_graph();
  RewriteContext ctx = inference_passes().run(g);
  EXPECT_FALSE(has_op(ctx.graph, "BatchNorm2d"));
  EXPECT_FALSE(has_op(ctx.graph, "BatchNorm1d"));
  EXPECT_TRUE(attr_bool(ctx.graph.find_by_name("conv1")->attrs, "bias"));
  EXPECT_EQ(ctx.graph.initial_state.count("bn1.running_var"), 0u);
  EXPECT_EQ(ctx.graph.nodes().size(), g.nodes().size() - 2);
  const Tensor x = normal({5, 3, 8, 8}, 0, 1);
  const auto a = run_eval(g, x), b = run_eval(ctx.graph, x);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << i;
  // conv1 + relu1 and fc1 + relu2 fuse once bn1 and bn2 are gone; fc2 feeds the Output.
  ASSERT_EQ(ctx.fusions.size(), 2u);
  const NodeId conv = ctx.graph.find_by_name("conv1")->id, fc1 = ctx.graph.find_by_name("fc1")->id;
  ASSERT_NE(ctx.fusion_of_producer(conv), nullptr);
  EXPECT_EQ(ctx.fusion_of_producer(conv)->activation, ctx.graph.find_by_name("relu1")->id);
  ASSERT_NE(ctx.fusion_of_producer(fc1), nullptr);
  EXPECT_EQ(ctx.fusion_of_producer(fc1)->activation, ctx.graph.find_by_name("relu2")->id);
  EXPECT_EQ(ctx.fusion_of_producer(ctx.graph.find_by_name("fc2")->id), nullptr);
}

// conv1's output feeds bn1 and an Add: folding bn1 would change what the Add reads.
TEST(GraphRewrite, BatchNormWhoseInputHasTwoReadersIsKept) {
  manual_seed(4);
  Graph g;
  const NodeId in = g.add_node("Input", "image", {{"shape", std::vector<int64_t>{2, 5, 5}}});
  const NodeId conv = g.add_node("Conv2d", "conv1",
                                 {{"in_channels", int64_t{2}}, {"out_channels", int64_t{2}},
                                  {"padding", std::vector<int64_t>{1, 1}}});
  const NodeId bn = g.add_node("BatchNorm2d", "bn1", {{"num_features", int64_t{2}}});
  const NodeId add = g.add_node("Add", "add");
  const NodeId relu = g.add_node("ReLU", "relu");
  const NodeId out = g.add_node("Output", "out");
  chain(g, {in, conv, bn});
  g.connect({bn, 0}, {add, 0});
  g.connect({conv, 0}, {add, 1});
  chain(g, {add, relu, out});
  g.initial_state["conv1.weight"] = normal({2, 2, 3, 3}, 0, 0.3);
  g.initial_state["conv1.bias"] = normal({2}, 0, 0.3);
  random_bn(g, "bn1", 2);
  RewriteContext ctx = inference_passes().run(g);
  EXPECT_EQ(ctx.graph, g);
  EXPECT_TRUE(ctx.fusions.empty());
  ASSERT_FALSE(ctx.log.empty());
  EXPECT_NE(ctx.log[0].find("kept bn1: the output of conv1 has other readers"), std::string::npos) << ctx.log[0];
}

TEST(GraphRewrite, WithoutTrainedWeightsNothingIsFolded) {
  Graph g = conv_bn_graph();
  g.initial_state.erase("conv1.weight");
  RewriteContext ctx = inference_passes().run(g);
  EXPECT_TRUE(has_op(ctx.graph, "BatchNorm2d"));
  EXPECT_FALSE(has_op(ctx.graph, "BatchNorm1d"));
  EXPECT_NE(ctx.log.at(0).find("conv1.weight is not in the graph's state"), std::string::npos) << ctx.log.at(0);
}

TEST(GraphRewrite, BadStateAndBadGraphsAreClearErrors) {
  Graph g = conv_bn_graph();
  g.initial_state["bn1.running_var"] = uniform({3}, 1, 2);
  try {
    inference_passes().run(g);
    FAIL() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("bn1.running_var has 3 elements, expected 4"), std::string::npos) << e.what();
  }
  Graph open = conv_bn_graph();
  open.disconnect({open.find_by_name("fc2")->id, 0});
  EXPECT_THROW(inference_passes().run(open), ValueError);
}

TEST(GraphRewrite, StoreStateCopiesModuleState) {
  manual_seed(5);
  Graph g = conv_bn_graph();
  g.initial_state.clear();
  GraphModule m(g);
  store_state(g, m.state_dict());
  EXPECT_EQ(g.initial_state.size(), m.state_dict().size());
  EXPECT_TRUE(same_tensor(g.initial_state.at("conv1.weight"), m.state_dict().at(0).second));
  EXPECT_EQ(inference_passes().names(), (std::vector<std::string>{"FoldBatchNorm", "FuseActivation"}));
}

}  // namespace
}  // namespace kiln::graph
