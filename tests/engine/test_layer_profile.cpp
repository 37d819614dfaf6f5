// engine/graph/layer_profile.h and autograd::BackwardHookGuard: every node present with its
// figures, backward attributed to the nodes that recorded it, the sums, the JSON, errors, cancel.
// No timed assertion: how close the per-layer sum comes to the step is measured by hand
// (`kiln bench --graph ... --profile`), as it depends on the machine.
#include <gtest/gtest.h>

#include <map>
#include <numeric>

#include <nlohmann/json.hpp>

#include "engine/autograd/backward.h"
#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/registry.h"
#include "engine/graph/analysis.h"
#include "engine/graph/json.h"
#include "engine/graph/layer_profile.h"

namespace kiln::graph {
namespace {

const std::string kCnn = std::string(KILN_FIXTURES_DIR) + "/../../projects/templates/fashion_mnist_cnn.json";

ProfileOptions quick(int64_t batch = 4) {
  ProfileOptions o;
  o.batch = batch;
  o.steps = 3;
  o.warmup = 1;
  return o;
}

// Input [4] -> Linear(4 -> 3, frozen) -> ReLU -> Linear(3 -> 2) -> Output
Graph frozen_head(bool mismatch = false) {
  using I = std::vector<int64_t>;
  Graph g;
  NodeId x = g.add_node("Input", "x", {{"shape", I{4}}});
  NodeId a = g.add_node("Linear", "frozen", {{"in_features", int64_t{4}}, {"out_features", int64_t{3}}});
  NodeId r = g.add_node("ReLU", "relu");
  NodeId b = g.add_node("Linear", "head", {{"in_features", int64_t{mismatch ? 5 : 3}}, {"out_features", int64_t{2}}});
  NodeId y = g.add_node("Output", "y");
  g.set_trainable(a, false);
  g.connect({x, 0}, {a, 0});
  g.connect({a, 0}, {r, 0});
  g.connect({r, 0}, {b, 0});
  g.connect({b, 0}, {y, 0});
  return g;
}

TEST(LayerProfile, CnnTemplateOnCpuHasEveryNode) {
  const Graph g = load_graph(kCnn);
  const int64_t batch = 4;
  const LayerProfile p = profile_layers(g, "cpu", quick(batch));
  EXPECT_EQ(p.device, "cpu");
  EXPECT_EQ(p.steps, 3);
  EXPECT_FALSE(p.cancelled);
  EXPECT_EQ(p.batch, batch);

  const Analysis a = analyze(g);
  std::vector<std::string> want;
  for (NodeId id : g.topological_order())
    if (g.node(id).op != "Input" && g.node(id).op != "Output") want.push_back(g.node(id).name);
  std::vector<std::string> got;
  for (const LayerTime& l : p.layers) got.push_back(l.name);
  ASSERT_EQ(got, want);

  double sum = 0, shares = 0;
  for (const LayerTime& l : p.layers) {
    SCOPED_TRACE(l.name);
    EXPECT_EQ(l.op, g.node(l.node).op);
    EXPECT_GE(l.forward_ms, 0);
    EXPECT_GE(l.backward_ms, 0);
    // Every layer of the CNN is differentiable and lies downstream of a trainable parameter.
    EXPECT_TRUE(l.has_backward);
    EXPECT_EQ(l.has_parameters, l.op == "Conv2d" || l.op == "Linear");
    uint64_t bytes = 0;
    for (const TensorType& t : a.nodes.at(l.node).outputs) {
      uint64_t n = dtype_size(t.dtype);
      for (int64_t d : t.shape) n *= static_cast<uint64_t>(is_symbolic(d) ? batch : d);
      bytes += n;
    }
    EXPECT_EQ(l.output_bytes, bytes);
    EXPECT_EQ(l.forward_alloc_bytes.has_value(), backend_for(Device())->memory_stats().tracked);
    sum += l.forward_ms + l.backward_ms;
    shares += p.share_percent(l);
  }
  EXPECT_DOUBLE_EQ(p.layer_sum_ms(), sum);
  EXPECT_NEAR(shares, 100.0, 1e-9);
  EXPECT_GT(p.step_ms, 0);
  EXPECT_GT(p.profiled_step_ms, 0);
  EXPECT_GE(p.loss_forward_ms, 0);
  EXPECT_GE(p.loss_backward_ms, 0);
  EXPECT_GE(p.outside_ms, 0);
  // Means over the same kept steps add up: the rows, the loss and the untimed rest are the step.
  EXPECT_NEAR(p.layer_sum_ms() + p.loss_forward_ms + p.loss_backward_ms + p.outside_ms, p.profiled_step_ms,
              1e-9 * p.profiled_step_ms);
}

TEST(LayerProfile, BackwardGoesToTheNodesThatRecordedIt) {
  const LayerProfile p = profile_layers(frozen_head(), "cpu", quick());
  ASSERT_EQ(p.layers.size(), 3u);
  // The frozen layer's output needs no gradient, nor does the ReLU of it: no backward work.
  EXPECT_EQ(p.layers[0].name, "frozen");
  EXPECT_FALSE(p.layers[0].has_parameters);
  EXPECT_FALSE(p.layers[0].has_backward);
  EXPECT_EQ(p.layers[0].backward_ms, 0);
  EXPECT_FALSE(p.layers[1].has_backward);
  EXPECT_EQ(p.layers[1].backward_ms, 0);
  EXPECT_TRUE(p.layers[2].has_parameters);
  EXPECT_TRUE(p.layers[2].has_backward);
  EXPECT_EQ(p.layers[2].output_bytes, 4u * 2u * 4u);
}

TEST(LayerProfile, Json) {
  const LayerProfile p = profile_layers(frozen_head(), "cpu", quick());
  const nlohmann::json j = nlohmann::json::parse(profile_json(p));
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["batch_size"], 4);
  EXPECT_EQ(j["steps"], 3);
  EXPECT_EQ(j["interrupted"], false);
  EXPECT_DOUBLE_EQ(j["layer_sum_ms"].get<double>(), p.layer_sum_ms());
  EXPECT_DOUBLE_EQ(j["step_ms"].get<double>(), p.step_ms);
  EXPECT_DOUBLE_EQ(j["outside_ms"].get<double>(), p.outside_ms);
  ASSERT_EQ(j["layers"].size(), 3u);
  EXPECT_EQ(j["layers"][2]["name"], "head");
  EXPECT_EQ(j["layers"][2]["op"], "Linear");
  EXPECT_EQ(j["layers"][2]["has_backward"], true);
  EXPECT_EQ(j["layers"][0]["has_backward"], false);
  EXPECT_DOUBLE_EQ(j["layers"][2]["total_ms"].get<double>(), p.layers[2].total_ms());
  EXPECT_DOUBLE_EQ(j["layers"][2]["share_percent"].get<double>(), p.share_percent(p.layers[2]));
}

// A stored profile (projects/ ProfileRecord) reads back as it was written.
TEST(LayerProfile, JsonReadsBack) {
  const LayerProfile p = profile_layers(frozen_head(), "cpu", quick());
  const std::string text = profile_json(p);
  const LayerProfile q = profile_from_json(text);
  EXPECT_EQ(profile_json(q), text);
  EXPECT_EQ(q.device, "cpu");
  EXPECT_EQ(q.batch, 4);
  EXPECT_EQ(q.steps, 3);
  ASSERT_EQ(q.layers.size(), 3u);
  EXPECT_EQ(q.layers[2].name, "head");
  EXPECT_EQ(q.layers[2].node, p.layers[2].node);
  EXPECT_DOUBLE_EQ(q.outside_ms, p.outside_ms);
  EXPECT_DOUBLE_EQ(q.layer_sum_ms(), p.layer_sum_ms());
}

TEST(LayerProfile, JsonErrorsNameTheKey) {
  auto message = [](const std::string& text) {
    try {
      profile_from_json(text);
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string ok = R"("device": "cpu", "precision": "f32", "batch_size": 4, "steps": 3)";
  EXPECT_EQ(profile_from_json("{" + ok + R"(, "layers": []})").layers.size(), 0u);
  EXPECT_NE(message("{not json").find("not a JSON object"), std::string::npos);
  EXPECT_NE(message("[1]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(message("{" + ok + "}").find("has no \"layers\""), std::string::npos);
  EXPECT_NE(message(R"({"device": 3, "precision": "f32", "batch_size": 4, "steps": 3, "layers": []})")
                .find("\"device\" is not a string"),
            std::string::npos);
  EXPECT_NE(message("{" + ok + R"(, "layers": [{"name": "a", "op": "ReLU", "forward_ms": 1}]})")
                .find("layer 0: has no \"backward_ms\""),
            std::string::npos);
}

TEST(LayerProfile, Errors) {
  const Graph g = frozen_head();
  EXPECT_THROW(profile_layers(g, "nosuch:0", quick()), Error);
  EXPECT_THROW(profile_layers(g, "cpu:5", quick()), DeviceError);
  EXPECT_THROW(profile_layers(frozen_head(true), "cpu", quick()), ValueError);  // cannot run
  ProfileOptions o = quick();
  o.batch = 0;
  EXPECT_THROW(profile_layers(g, "cpu", o), ValueError);
  o = quick();
  o.steps = 0;
  EXPECT_THROW(profile_layers(g, "cpu", o), ValueError);
  o = quick();
  o.warmup = -1;
  EXPECT_THROW(profile_layers(g, "cpu", o), ValueError);
  o = quick();
  o.precision = "f64";
  EXPECT_THROW(profile_layers(g, "cpu", o), ValueError);
}

TEST(LayerProfile, CancelledBeforeAnyStep) {
  const LayerProfile p = profile_layers(frozen_head(), "cpu", quick(), [] { return true; });
  EXPECT_TRUE(p.cancelled);
  EXPECT_EQ(p.steps, 0);
  EXPECT_EQ(p.layers.size(), 3u);
  EXPECT_EQ(p.layer_sum_ms(), 0);
  EXPECT_EQ(p.step_ms, 0);
}

// autograd::BackwardHookGuard: a (before, after) pair per autograd node, nesting restores.
TEST(LayerProfile, BackwardHookPairs) {
  Tensor w = Tensor::ones({3}, DType::f32);
  w.requires_grad_(true);
  Tensor loss = sum(w.exp() * w);  // exp, mul, sum: three autograd nodes
  std::vector<std::pair<OpKind, bool>> calls;
  int inner_calls = 0;
  {
    autograd::BackwardHookGuard guard([&](const kiln::Node& n, bool done) { calls.emplace_back(n.kind, done); });
    {
      autograd::BackwardHookGuard inner([&](const kiln::Node&, bool) { ++inner_calls; });
      Tensor again = sum(w);
      again.backward();
    }
    loss.backward();
  }
  EXPECT_EQ(inner_calls, 2);  // one node (sum), before and after
  ASSERT_EQ(calls.size(), 6u);
  for (size_t i = 0; i < calls.size(); i += 2) {
    EXPECT_EQ(calls[i].first, calls[i + 1].first);
    EXPECT_FALSE(calls[i].second);
    EXPECT_TRUE(calls[i + 1].second);
  }
  EXPECT_EQ(calls[0].first, OpKind::sum);
  // After the guards: no hook.
  Tensor third = sum(w);
  third.backward();
  EXPECT_EQ(calls.size(), 6u);
}

}  // namespace
}  // namespace kiln::graph
