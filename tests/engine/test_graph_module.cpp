// GraphModule: templates as trainable modules, equal to the reference models in size,
// trained a few steps with the loss going down; residual forward/backward; errors.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/core/registry.h"
#include "engine/graph/graph_module.h"
#include "engine/graph/json.h"
#include "engine/nn/functional.h"
#include "engine/optim/adam.h"
#include "engine/train/reference_models.h"

namespace kiln::graph {
namespace {

Graph load_template(const std::string& name) {
  return load_graph(std::string(KILN_FIXTURES_DIR) + "/../../projects/templates/" + name);
}

std::vector<std::string> keys(const nn::StateDict& sd) {
  std::vector<std::string> k;
  for (const auto& [name, t] : sd) k.push_back(name);
  return k;
}

std::vector<Shape> shapes(const nn::StateDict& sd) {
  std::vector<Shape> s;
  for (const auto& [name, t] : sd) s.push_back(t.shape());
  return s;
}

TEST(GraphModule, TemplatesMatchReferenceModels) {
  for (auto [file, ref] : {std::pair{"fashion_mnist_cnn.json", "cnn"}, std::pair{"fashion_mnist_mlp.json", "mlp"}}) {
    manual_seed(0);
    auto reference = train::make_model(ref);
    GraphModule m(load_template(file));
    EXPECT_EQ(m.num_parameters(), reference->num_parameters()) << file;
    EXPECT_EQ(m.analysis().total_parameters, reference->num_parameters()) << file;
    EXPECT_EQ(shapes(m.state_dict()), shapes(reference->state_dict())) << file;
    Tensor y = m.forward(normal({3, 1, 28, 28}, 0, 1));
    EXPECT_EQ(y.shape(), (Shape{3, 10}));
  }
  GraphModule cnn(load_template("fashion_mnist_cnn.json"));
  EXPECT_EQ(keys(cnn.state_dict()), (std::vector<std::string>{"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                                                              "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(cnn.type_name(), "GraphModule");
  EXPECT_NE(cnn.repr().find("(conv1): Conv2d(1, 32"), std::string::npos) << cnn.repr();
}

// The same weights give the same logits as the reference cnn: the graph computes the
// same function, not just one of the same size.
TEST(GraphModule, CnnComputesReferenceFunction) {
  manual_seed(1);
  auto reference = train::make_model("cnn");
  GraphModule m(load_template("fashion_mnist_cnn.json"));
  nn::StateDict renamed;
  auto mine = keys(m.state_dict());
  auto theirs = reference->state_dict();
  for (size_t i = 0; i < mine.size(); ++i) renamed.emplace_back(mine[i], theirs[i].second);
  m.load_state_dict(renamed);
  Tensor x = normal({2, 1, 28, 28}, 0, 1);
  std::vector<float> a = m.forward(x).to_vector<float>(), b = reference->forward(x).to_vector<float>();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5);
}

TEST(GraphModule, CnnTrainsOnRandomData) {
  manual_seed(7);
  auto m = std::make_shared<GraphModule>(load_template("fashion_mnist_cnn.json"));
  Tensor x = normal({8, 1, 28, 28}, 0, 1);
  Tensor target = Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7}, {8});
  optim::Adam opt(m->parameters(), {.lr = 1e-3});
  double first = 0, last = 0;
  for (int step = 0; step < 6; ++step) {
    opt.zero_grad();
    Tensor loss = nn::F::cross_entropy(m->forward(x), target);
    loss.backward();
    opt.step();
    last = loss.item<float>();
    if (step == 0) first = last;
  }
  EXPECT_LT(last, first * 0.7) << "first " << first << " last " << last;
}

TEST(GraphModule, ResidualForwardBackward) {
  manual_seed(2);
  GraphModule m(load_template("residual_cnn.json"));
  EXPECT_EQ(m.analysis().total_parameters, m.num_parameters());
  Tensor x = normal({4, 1, 28, 28}, 0, 1);
  Tensor y = m.forward(x);
  EXPECT_EQ(y.shape(), (Shape{4, 10}));
  Tensor loss = nn::F::cross_entropy(y, Tensor::from_vector<int64_t>({1, 2, 3, 4}, {4}));
  loss.backward();
  for (const auto& [name, p] : m.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_GT(p.grad().abs().sum().item<float>(), 0.f) << name;
  }
  bool has_bn_buffer = false;
  for (const auto& [name, t] : m.named_buffers()) has_bn_buffer |= name == "stem_bn.running_mean";
  EXPECT_TRUE(has_bn_buffer);
  // eval() reaches the children: BatchNorm then uses running stats, so one sample's
  // output does not depend on the rest of the batch.
  m.eval();
  Tensor one = m.forward(x.slice(0, 0, 1));
  std::vector<float> a = one.to_vector<float>(), b = m.forward(x).slice(0, 0, 1).contiguous().to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4);
}

// Module::to moves a GraphModule to every detected device (the CPU everywhere; GPUs
// where a backend loads); its outputs and gradients there match the CPU's.
TEST(GraphModule, RunsOnEveryDevice) {
  manual_seed(4);
  GraphModule cpu(load_template("residual_cnn.json"));
  cpu.eval();
  Tensor x = normal({2, 1, 28, 28}, 0, 1);
  std::vector<float> want = cpu.forward(x).to_vector<float>();
  for (const DeviceInfo& d : list_devices()) {
    SCOPED_TRACE(d.device.str());
    GraphModule m(load_template("residual_cnn.json"));
    m.load_state_dict(cpu.state_dict());
    m.to(d.device);
    m.eval();
    for (const auto& [name, p] : m.named_parameters()) EXPECT_EQ(p.device(), d.device) << name;
    Tensor y = m.forward(x.to(d.device));
    EXPECT_EQ(y.device(), d.device);
    std::vector<float> got = y.to(Device()).to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-3 + 1e-3 * std::abs(want[i]));
    m.train();
    nn::F::cross_entropy(m.forward(x.to(d.device)), Tensor::from_vector<int64_t>({3, 7}, {2}).to(d.device)).backward();
    for (const auto& [name, p] : m.named_parameters()) EXPECT_TRUE(p.grad().defined()) << name;
  }
}

TEST(GraphModule, Errors) {
  Graph g;
  NodeId x = g.add_node("Input", "x", {{"shape", std::vector<int64_t>{4}}});
  NodeId fc = g.add_node("Linear", "fc", {{"in_features", int64_t{5}}});
  NodeId y = g.add_node("Output", "y");
  g.connect({x, 0}, {fc, 0});
  g.connect({fc, 0}, {y, 0});
  try {
    GraphModule m(g);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()), "the graph cannot run:\n  'fc': Linear expects input features 5, got [N, 4]");
  }
  g.set_attr(fc, "in_features", int64_t{4});
  GraphModule m(g);
  try {
    m.forward(normal({2, 5}, 0, 1));
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_EQ(std::string(e.what()), "GraphModule: input 'x' expects [N, 4], got [2, 5]");
  }
  EXPECT_THROW(m.forward(std::vector<Tensor>{}), ValueError);

  // Two inputs, two outputs: forward(x) refuses, forward({a, b}) works.
  Graph two;
  NodeId a = two.add_node("Input", "a", {{"shape", std::vector<int64_t>{3}}});
  NodeId b = two.add_node("Input", "b", {{"shape", std::vector<int64_t>{3}}});
  NodeId cat = two.add_node("Concat", "cat");
  NodeId mul = two.add_node("Mul", "mul");
  NodeId o1 = two.add_node("Output", "o1"), o2 = two.add_node("Output", "o2");
  two.connect({a, 0}, {cat, 0});
  two.connect({b, 0}, {cat, 1});
  two.connect({a, 0}, {mul, 0});
  two.connect({b, 0}, {mul, 1});
  two.connect({cat, 0}, {o1, 0});
  two.connect({mul, 0}, {o2, 0});
  GraphModule tm(two);
  EXPECT_THROW(tm.forward(normal({2, 3}, 0, 1)), ValueError);
  Tensor ta = Tensor::from_vector<float>({1, 2, 3}, {1, 3}), tb = Tensor::from_vector<float>({4, 5, 6}, {1, 3});
  auto out = tm.forward({ta, tb});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{4, 10, 18}));
}

}  // namespace
}  // namespace kiln::graph
