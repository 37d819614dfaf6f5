// The network analyzer's engine part: the training memory estimate against bytes counted by
// hand (Note [Training memory estimate], engine/graph/footprint.h), each warning firing and
// not firing, and the step-time measurement (engine/graph/step_time.h) with its bad input.
#include <gtest/gtest.h>

#include <atomic>

#include "engine/core/error.h"
#include "engine/graph/footprint.h"
#include "engine/graph/op_schema.h"
#include "engine/graph/step_time.h"

namespace kiln::graph {
namespace {

using I = std::vector<int64_t>;

// x [3, 4, 4] -> conv (3 -> 2, 3x3, padding 1) -> relu -> flatten -> fc (32 -> 5) -> y
struct SmallCnn {
  Graph g;
  NodeId x, conv, relu, flat, fc, y;
  SmallCnn() {
    x = g.add_node("Input", "x", {{"shape", I{3, 4, 4}}});
    conv = g.add_node("Conv2d", "conv", {{"in_channels", int64_t{3}}, {"out_channels", int64_t{2}},
                                         {"kernel_size", I{3, 3}}, {"padding", I{1, 1}}});
    relu = g.add_node("ReLU", "relu");
    flat = g.add_node("Flatten", "flat");
    fc = g.add_node("Linear", "fc", {{"in_features", int64_t{32}}, {"out_features", int64_t{5}}});
    y = g.add_node("Output", "y");
    g.connect({x, 0}, {conv, 0});
    g.connect({conv, 0}, {relu, 0});
    g.connect({relu, 0}, {flat, 0});
    g.connect({flat, 0}, {fc, 0});
    g.connect({fc, 0}, {y, 0});
  }
};

// Input [in] -> (Flatten ->) Linear(in_features -> out) -> Linear(out -> 10) -> Output
Graph linear_graph(I input, bool flatten, int64_t in_features, int64_t out) {
  Graph g;
  NodeId x = g.add_node("Input", "x", {{"shape", input}});
  PortRef last{x, 0};
  if (flatten) {
    NodeId f = g.add_node("Flatten", "flat");
    g.connect(last, {f, 0});
    last = {f, 0};
  }
  NodeId big = g.add_node("Linear", "big", {{"in_features", in_features}, {"out_features", out}});
  NodeId head = g.add_node("Linear", "head", {{"in_features", out}, {"out_features", int64_t{10}}});
  NodeId y = g.add_node("Output", "y");
  g.connect(last, {big, 0});
  g.connect({big, 0}, {head, 0});
  g.connect({head, 0}, {y, 0});
  return g;
}

std::vector<std::string> kinds(const std::vector<Warning>& w) {
  std::vector<std::string> v;
  for (const Warning& x : w) v.push_back(x.kind);
  return v;
}

TEST(GraphFootprint, MemoryOfASmallCnnByHand) {
  SmallCnn s;
  const Analysis a = analyze(s.g);
  ASSERT_TRUE(a.ok());
  MemoryOptions o;
  o.batch = 2;
  const MemoryEstimate m = estimate_memory(s.g, a, o);
  // Outputs at batch 2, 4 bytes each: x 2*3*4*4 = 96 elements, conv/relu/flat 2*2*4*4 = 64, fc 2*5 = 10.
  EXPECT_EQ(m.activation_bytes.at(s.x), 384);
  EXPECT_EQ(m.activation_bytes.at(s.conv), 256);
  EXPECT_EQ(m.activation_bytes.at(s.relu), 256);
  EXPECT_EQ(m.activation_bytes.at(s.flat), 256);
  EXPECT_EQ(m.activation_bytes.at(s.fc), 40);
  EXPECT_EQ(m.activation_bytes.at(s.y), 0);
  EXPECT_TRUE(m.unknown.empty());
  EXPECT_EQ(m.activations, 1192);
  // Parameters: conv 2*3*3*3 + 2 = 56, fc 32*5 + 5 = 165: 221 elements.
  EXPECT_EQ(m.parameters, 884);
  EXPECT_EQ(m.gradients, 884);
  EXPECT_EQ(m.optimizer_state, 1768);  // Adam: exp_avg and exp_avg_sq
  EXPECT_EQ(m.training, 1192 + 884 + 884 + 1768);

  o.dtype = DType::bf16;
  o.optimizer = "sgd";
  o.momentum = 0;
  const MemoryEstimate h = estimate_memory(s.g, a, o);
  EXPECT_EQ(h.activations, 596);
  EXPECT_EQ(h.parameters, 442);
  EXPECT_EQ(h.optimizer_state, 0);
  EXPECT_EQ(h.training, 596 + 442 + 442);

  // A frozen conv keeps its parameters but has no gradients and no optimizer state.
  s.g.set_trainable(s.conv, false);
  o = MemoryOptions{};
  o.batch = 2;
  const MemoryEstimate f = estimate_memory(s.g, analyze(s.g), o);
  EXPECT_EQ(f.parameters, 884);
  EXPECT_EQ(f.gradients, 660);
  EXPECT_EQ(f.optimizer_state, 1320);
}

TEST(GraphFootprint, IntegerInputsKeepTheirSizeAndBadOptionsThrow) {
  Graph g;
  NodeId ids = g.add_node("Input", "ids", {{"dtype", std::string("i64")}, {"shape", I{7}}});
  NodeId emb = g.add_node("Embedding", "emb", {{"num_embeddings", int64_t{50}}, {"embedding_dim", int64_t{3}}});
  NodeId y = g.add_node("Output", "y");
  g.connect({ids, 0}, {emb, 0});
  g.connect({emb, 0}, {y, 0});
  const Analysis a = analyze(g);
  ASSERT_TRUE(a.ok());
  MemoryOptions o;
  o.batch = 4;
  o.dtype = DType::f16;
  const MemoryEstimate m = estimate_memory(g, a, o);
  EXPECT_EQ(m.activation_bytes.at(ids), 4 * 7 * 8);      // i64 stays 8 bytes
  EXPECT_EQ(m.activation_bytes.at(emb), 4 * 7 * 3 * 2);  // f16
  o.batch = 0;
  EXPECT_THROW(estimate_memory(g, a, o), ValueError);
  o.batch = 1;
  o.dtype = DType::i32;
  EXPECT_THROW(estimate_memory(g, a, o), ValueError);
  o.dtype = DType::f32;
  o.optimizer = "lion";
  EXPECT_THROW(estimate_memory(g, a, o), ValueError);
  EXPECT_EQ(optimizer_state_slots("rmsprop", 0.9), 2);
  EXPECT_EQ(optimizer_state_slots("sgd", 0.9), 1);
}

TEST(GraphFootprint, DominantMacsWarning) {
  SmallCnn s;  // conv: 2*4*4 outputs * 27 = 864 MACs, fc 160: conv does 84%
  const Analysis a = analyze(s.g);
  const MemoryEstimate m = estimate_memory(s.g, a, {});
  const std::vector<Warning> w = network_warnings(s.g, a, m, 1, {});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].kind, "dominant_macs");
  EXPECT_EQ(w[0].node, s.conv);
  EXPECT_NE(w[0].message.find("'conv' does 84% of the model's multiply-adds (864 of 1,024"), std::string::npos)
      << w[0].message;
  // Two equal layers (50% each) and a single layer: no warning.
  const Graph even = linear_graph({10}, false, 10, 10);
  const Analysis ea = analyze(even);
  EXPECT_TRUE(network_warnings(even, ea, estimate_memory(even, ea, {}), 1, {}).empty());
  Graph one;
  NodeId x = one.add_node("Input", "x", {{"shape", I{4}}});
  NodeId l = one.add_node("Linear", "l", {{"in_features", int64_t{4}}, {"out_features", int64_t{3}}});
  NodeId y = one.add_node("Output", "y");
  one.connect({x, 0}, {l, 0});
  one.connect({l, 0}, {y, 0});
  const Analysis oa = analyze(one);
  EXPECT_TRUE(network_warnings(one, oa, estimate_memory(one, oa, {}), 1, {}).empty());
}

TEST(GraphFootprint, LargeLinearAfterFlattenWarning) {
  // 64*32*32 = 65,536 features -> 256: 16,777,472 parameters > 10M.
  const Graph huge = linear_graph({64, 32, 32}, true, 65536, 256);
  const Analysis ha = analyze(huge);
  ASSERT_TRUE(ha.ok());
  std::vector<Warning> w = network_warnings(huge, ha, estimate_memory(huge, ha, {}), 1, {});
  ASSERT_EQ(kinds(w), (std::vector<std::string>{"dominant_macs", "large_linear_after_flatten"}));
  EXPECT_EQ(huge.node(w[1].node).name, "big");
  EXPECT_NE(w[1].message.find("16,777,472 parameters"), std::string::npos) << w[1].message;
  EXPECT_NE(w[1].message.find("after Flatten 'flat'"), std::string::npos) << w[1].message;
  // 10,000 -> 100 (1,000,100 parameters) in a 1,001,110-parameter model: > 80% of >= 1M.
  const Graph bulk = linear_graph({1, 100, 100}, true, 10000, 100);
  const Analysis ba = analyze(bulk);
  w = network_warnings(bulk, ba, estimate_memory(bulk, ba, {}), 1, {});
  EXPECT_EQ(kinds(w), (std::vector<std::string>{"dominant_macs", "large_linear_after_flatten"}));
  // The same share below 1M parameters, and a huge Linear that no Flatten feeds: no warning.
  const Graph small = linear_graph({1, 30, 30}, true, 900, 100);
  const Analysis sa = analyze(small);
  EXPECT_EQ(kinds(network_warnings(small, sa, estimate_memory(small, sa, {}), 1, {})),
            std::vector<std::string>{"dominant_macs"});
  const Graph direct = linear_graph({65536}, false, 65536, 256);
  const Analysis da = analyze(direct);
  EXPECT_EQ(kinds(network_warnings(direct, da, estimate_memory(direct, da, {}), 1, {})),
            std::vector<std::string>{"dominant_macs"});
}

TEST(GraphFootprint, MemoryWarningPerDevice) {
  SmallCnn s;
  const Analysis a = analyze(s.g);
  MemoryOptions o;
  o.batch = 2;
  const MemoryEstimate m = estimate_memory(s.g, a, o);  // 4,728 bytes
  DeviceInfo small{Device(DeviceType::cuda, 0), "tiny GPU", "discrete GPU", 4000, 1, 1};
  DeviceInfo enough{Device(DeviceType::cpu, 0), "CPU", "cpu", 4728, 1, 1};
  DeviceInfo unknown{Device(DeviceType::vulkan, 0), "no size", "software", 0, 1, 1};
  std::vector<Warning> w = network_warnings(s.g, a, m, 2, {small, enough, unknown});
  ASSERT_EQ(kinds(w), (std::vector<std::string>{"dominant_macs", "memory"}));
  EXPECT_EQ(w[1].node, s.x);  // the largest activation: the input batch, 384 bytes
  EXPECT_NE(w[1].message.find("training at batch 2 needs an estimated 4.6 KiB but cuda:0 (tiny GPU) has 3.9 KiB"),
            std::string::npos)
      << w[1].message;
  EXPECT_EQ(kinds(network_warnings(s.g, a, m, 2, {enough, unknown})), std::vector<std::string>{"dominant_macs"});
}

TEST(GraphFootprint, StepTimeOnTheCpu) {
  SmallCnn s;
  StepTimeOptions o;
  o.batch = 4;
  o.steps = 2;
  o.warmup = 1;
  const StepTime t = measure_step_time(s.g, Device(), o);
  EXPECT_EQ(t.steps, 2);
  EXPECT_FALSE(t.cancelled);
  EXPECT_GT(t.ms_per_step, 0);
  EXPECT_NEAR(t.images_per_second, 4 * 1000.0 / t.ms_per_step, 1e-6 * t.images_per_second);
  // Cancelled before the first timed step (after the warm-up one): nothing timed.
  std::atomic<int> asked{0};
  const StepTime c = measure_step_time(s.g, Device(), o, [&] { return ++asked > 1; });
  EXPECT_TRUE(c.cancelled);
  EXPECT_EQ(c.steps, 0);
  EXPECT_EQ(c.ms_per_step, 0);
}

TEST(GraphFootprint, StepTimeBadInput) {
  SmallCnn s;
  StepTimeOptions o;
  o.batch = 0;
  EXPECT_THROW(measure_step_time(s.g, Device(), o), ValueError);
  o.batch = 2;
  EXPECT_THROW(measure_step_time(s.g, Device(DeviceType::cuda, 7), o), DeviceError);
  s.g.disconnect({s.fc, 0});
  try {
    measure_step_time(s.g, Device(), o);
    FAIL() << "a graph with an open input was measured";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("fc"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::graph
