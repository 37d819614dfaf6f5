// Transfer learning on graphs (engine/graph/transfer.h) and Node::trainable: the head found and
// replaced, freezing by topological order, the flag in graph JSON (old files open as trainable),
// and GraphModule training only the trainable nodes, with frozen batch norms in eval mode.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "engine/core/error.h"
#include "engine/core/random.h"
#include "engine/graph/graph_module.h"
#include "engine/graph/json.h"
#include "engine/graph/transfer.h"
#include "engine/nn/functional.h"
#include "engine/optim/factory.h"

namespace kiln::graph {
namespace {

// Input [1, 4, 4] -> Conv2d conv (1 -> 2, 3x3, pad 1) -> BatchNorm2d bn -> Flatten -> Linear fc1 (32 -> 8)
// -> ReLU -> Linear head (8 -> 3) -> Softmax -> Output.
Graph small_cnn() {
  Graph g;
  const NodeId x = g.add_node("Input", "x", {{"shape", std::vector<int64_t>{1, 4, 4}}});
  const NodeId conv = g.add_node("Conv2d", "conv", {{"in_channels", int64_t{1}}, {"out_channels", int64_t{2}},
                                                    {"padding", std::vector<int64_t>{1, 1}}});
  const NodeId bn = g.add_node("BatchNorm2d", "bn", {{"num_features", int64_t{2}}});
  const NodeId flat = g.add_node("Flatten", "flat");
  const NodeId fc1 = g.add_node("Linear", "fc1", {{"in_features", int64_t{32}}, {"out_features", int64_t{8}}});
  const NodeId relu = g.add_node("ReLU", "relu");
  const NodeId head = g.add_node("Linear", "head", {{"in_features", int64_t{8}}, {"out_features", int64_t{3}}});
  const NodeId soft = g.add_node("Softmax", "soft");
  const NodeId y = g.add_node("Output", "y");
  const std::vector<NodeId> chain{x, conv, bn, flat, fc1, relu, head, soft, y};
  for (size_t i = 0; i + 1 < chain.size(); ++i) g.connect({chain[i], 0}, {chain[i + 1], 0});
  return g;
}

std::vector<float> values(const Tensor& t) { return t.contiguous().to_vector<float>(); }

TEST(GraphTransfer, FindsTheLastLinearThroughParameterFreeOps) {
  Graph g = small_cnn();
  EXPECT_EQ(g.node(find_head(g)).name, "head");
}

TEST(GraphTransfer, ReplaceHeadSetsOutputsAndDropsItsInitialState) {
  Graph g = small_cnn();
  GraphModule trained(g);
  for (const auto& [k, t] : trained.state_dict()) g.initial_state[k] = t.clone();
  const NodeId head = replace_head(g, 5);
  EXPECT_EQ(std::get<int64_t>(g.node(head).attrs.at("out_features")), 5);
  EXPECT_FALSE(g.initial_state.contains("head.weight"));
  EXPECT_FALSE(g.initial_state.contains("head.bias"));
  EXPECT_TRUE(g.initial_state.contains("fc1.weight"));
  GraphModule m(g);
  // the other layers start from the imported weights
  for (const auto& [k, t] : m.state_dict()) {
    if (k.rfind("head.", 0) != 0) {
      EXPECT_EQ(values(t.to(DType::f32)), values(g.initial_state.at(k).to(DType::f32))) << k;
    }
  }
  EXPECT_EQ(m.forward(Tensor::zeros({2, 1, 4, 4})).shape(), (Shape{2, 5}));
}

TEST(GraphTransfer, NoLinearAtTheEndNamesTheNode) {
  Graph g;
  const NodeId x = g.add_node("Input", "x", {{"shape", std::vector<int64_t>{1, 4, 4}}});
  const NodeId conv = g.add_node("Conv2d", "last_conv", {{"in_channels", int64_t{1}}, {"out_channels", int64_t{2}}});
  const NodeId flat = g.add_node("Flatten", "flat");
  const NodeId y = g.add_node("Output", "y");
  g.connect({x, 0}, {conv, 0});
  g.connect({conv, 0}, {flat, 0});
  g.connect({flat, 0}, {y, 0});
  try {
    replace_head(g, 5);
    FAIL() << "replace_head accepted a graph without a Linear head";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("no Linear layer at its end"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'last_conv' (Conv2d)"), std::string::npos) << e.what();
  }
  Graph direct;  // Input straight into Output
  direct.connect({direct.add_node("Input", "x"), 0}, {direct.add_node("Output", "y"), 0});
  EXPECT_THROW(find_head(direct), ValueError);
  Graph ok = small_cnn();
  EXPECT_THROW(replace_head(ok, 0), ValueError);
}

TEST(GraphTransfer, FreezeUntilFollowsTopologicalOrder) {
  Graph g = small_cnn();
  freeze_until(g, "fc1");
  for (const Node& n : g.nodes()) {
    const bool frozen = n.name == "x" || n.name == "conv" || n.name == "bn" || n.name == "flat" || n.name == "fc1";
    EXPECT_EQ(n.trainable, !frozen) << n.name;
  }
  try {
    freeze_until(g, "fc9");
    FAIL() << "freeze_until accepted an unknown node";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("'fc9'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fc1"), std::string::npos) << e.what();  // lists the nodes
  }
  freeze_all_but(g, find_head(g));
  for (const Node& n : g.nodes()) EXPECT_EQ(n.trainable, n.name == "head") << n.name;
}

TEST(GraphTransfer, TrainableRoundTripsThroughJsonAndOldFilesAreTrainable) {
  Graph g = small_cnn();
  freeze_until(g, "bn");
  const std::string text = to_json(g);
  EXPECT_NE(text.find("\"trainable\": false"), std::string::npos);
  EXPECT_EQ(from_json(text), g);
  // a file written before the flag existed (tests/fixtures) opens with every node trainable
  std::ifstream in(std::string(KILN_FIXTURES_DIR) + "/graph_v1_residual_cnn.json");
  std::ostringstream s;
  s << in.rdbuf();
  const Graph old = from_json(s.str());
  ASSERT_FALSE(old.nodes().empty());
  for (const Node& n : old.nodes()) EXPECT_TRUE(n.trainable) << n.name;
  EXPECT_EQ(to_json(old).find("trainable"), std::string::npos);
  std::string bad = text;
  bad.replace(bad.find("\"trainable\": false"), 18, "\"trainable\": 0");
  EXPECT_THROW(from_json(bad), ValueError);
}

TEST(GraphTransfer, GraphModuleTrainsOnlyTrainableNodesAndFreezesBatchNorm) {
  manual_seed(3);
  Graph g = small_cnn();
  freeze_all_but(g, replace_head(g, 4));
  GraphModule m(g);
  m.train();
  EXPECT_TRUE(m.is_training());
  std::map<std::string, std::vector<float>> before;
  for (const auto& [k, t] : m.state_dict()) before[k] = values(t.to(DType::f32));
  const std::vector<Tensor> params = m.trainable_parameters();
  ASSERT_EQ(params.size(), 2u);  // head.weight, head.bias
  for (const auto& [k, p] : m.named_parameters()) EXPECT_EQ(p.requires_grad(), k.rfind("head.", 0) == 0) << k;
  auto opt = optim::make_optimizer({.name = "sgd", .lr = 0.5}, params);
  const Tensor x = normal({8, 1, 4, 4}, 3.0, 2.0);  // far from the running mean 0 / var 1
  const Tensor target = Tensor::from_vector<int64_t>({0, 1, 2, 3, 0, 1, 2, 3}, {8});
  for (int step = 0; step < 3; ++step) {
    opt->zero_grad();
    Tensor loss = nn::F::cross_entropy(m.forward(x), target);
    loss.backward();
    opt->step();
  }
  for (const auto& [k, t] : m.state_dict()) {
    const bool same = values(t.to(DType::f32)) == before.at(k);
    if (k.rfind("head.", 0) == 0)
      EXPECT_FALSE(same) << k << " (the head) did not train";
    else
      EXPECT_TRUE(same) << k << " (frozen) changed";  // bn.running_mean too: eval mode
  }
  // the same module with bn trainable updates its running statistics in training
  Graph open = small_cnn();
  GraphModule free_bn(open);
  free_bn.train();
  free_bn.forward(x);
  bool found = false;
  for (const auto& [k, t] : free_bn.state_dict())
    if (k == "bn.running_mean") {
      found = true;
      EXPECT_NE(values(t), std::vector<float>(2, 0.0f));
    }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace kiln::graph
