// The convolution passes of the ONNX executor (engine/onnx/rewrite_conv.cpp): FuseConvBatchNorm
// and FuseConvActivation give the unfused graph's outputs (the same model without optimize)
// within 1e-5 relative, say in the log what they fused, and leave the almost-matching patterns
// (a Conv output read twice, BN with a non-constant parameter or in training mode, Clip to other
// bounds, an Add of a broadcast constant) as written, saying why.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/rewrite.h"
#include "model_builder.h"

using namespace kiln;
using namespace kiln::onnx::test;

namespace {

constexpr int32_t kFloat = ::onnx::TensorProto::FLOAT;

// n values in [lo, hi) from a fixed sequence (seeded), for initializers.
std::vector<float> values(size_t n, unsigned seed, float lo, float hi) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 12345u;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = lo + (hi - lo) * static_cast<float>(s >> 8) / static_cast<float>(1u << 24);
  }
  return v;
}

// A FLOAT value of unknown shape (the graph outputs here).
::onnx::ValueInfoProto output_info(const std::string& name) {
  ::onnx::ValueInfoProto v;
  v.set_name(name);
  v.mutable_type()->mutable_tensor_type()->set_elem_type(kFloat);
  return v;
}

struct ConvSpec {
  int64_t cin, cout, k = 3, pad = 1, stride = 1, group = 1;
  bool bias = true;
};

// Conv `name`: x -> y with weight `name`_w (or `weight` when given) and bias `name`_b.
::onnx::NodeProto* add_conv(::onnx::GraphProto& g, const std::string& name, const std::string& x,
                            const std::string& y, const ConvSpec& s, unsigned seed, std::string weight = "") {
  if (weight.empty()) weight = name + "_w";
  const int64_t per = s.cin / s.group * s.k * s.k;
  add_float_initializer(g, weight, {s.cout, s.cin / s.group, s.k, s.k},
                        values(static_cast<size_t>(s.cout * per), seed, -1.0f / std::sqrt(float(per)), 1.0f / std::sqrt(float(per))));
  std::vector<std::string> in{x, weight};
  if (s.bias) {
    add_float_initializer(g, name + "_b", {s.cout}, values(static_cast<size_t>(s.cout), seed + 1, -0.5f, 0.5f));
    in.push_back(name + "_b");
  }
  auto* n = add_node(g, "Conv", in, {y}, name);
  set_ints(n, "kernel_shape", {s.k, s.k});
  set_ints(n, "pads", {s.pad, s.pad, s.pad, s.pad});
  set_ints(n, "strides", {s.stride, s.stride});
  set_int(n, "group", s.group);
  return n;
}

// BatchNormalization `name` of c channels with per-channel parameters (initializers `name`_scale ...).
::onnx::NodeProto* add_bn(::onnx::GraphProto& g, const std::string& name, const std::string& x, const std::string& y,
                          int64_t c, unsigned seed, float eps = 1e-3f) {
  const auto n = static_cast<size_t>(c);
  add_float_initializer(g, name + "_scale", {c}, values(n, seed, 0.5f, 2.0f));
  add_float_initializer(g, name + "_B", {c}, values(n, seed + 1, -1.0f, 1.0f));
  add_float_initializer(g, name + "_mean", {c}, values(n, seed + 2, -0.5f, 0.5f));
  add_float_initializer(g, name + "_var", {c}, values(n, seed + 3, 0.05f, 3.0f));
  auto* bn = add_node(g, "BatchNormalization", {x, name + "_scale", name + "_B", name + "_mean", name + "_var"}, {y}, name);
  set_float(bn, "epsilon", eps);
  return bn;
}

struct Compared {
  std::vector<std::string> plain_ops, fused_ops;
  std::vector<std::string> log;
  double rel = 0;  // max |fused - plain| / max |plain| over the outputs
};

// Runs g as written and with the inference passes on x (normal, std 2) and the extra inputs.
Compared compare(const ::onnx::GraphProto& g, const Shape& shape, std::map<std::string, Tensor> extra = {},
                 int64_t opset = 17) {
  kiln::onnx::Model m = kiln::onnx::parse_model(model_with(g, opset).SerializeAsString(), "");
  kiln::onnx::SessionOptions on;
  on.optimize = true;
  kiln::onnx::Session plain(m), fused(m, Device{}, on);
  Compared c;
  for (const auto& n : plain.model().graph.nodes) c.plain_ops.push_back(kiln::onnx::op_key(n));
  for (const auto& n : fused.model().graph.nodes) c.fused_ops.push_back(kiln::onnx::op_key(n));
  c.log = fused.rewrite_log();
  manual_seed(11);
  extra["x"] = normal(shape, 0, 2);
  std::vector<Tensor> a = plain.run(extra), b = fused.run(extra);
  EXPECT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    EXPECT_EQ(a[i].shape(), b[i].shape());
    std::vector<float> va = a[i].to_vector<float>(), vb = b[i].to_vector<float>();
    double scale = 0, diff = 0;
    for (size_t k = 0; k < va.size() && k < vb.size(); ++k) {
      scale = std::max(scale, std::abs(double(va[k])));
      diff = std::max(diff, std::abs(double(va[k]) - double(vb[k])));
    }
    c.rel = std::max(c.rel, scale > 0 ? diff / scale : diff);
  }
  return c;
}

// The ops after the passes where each Conv they did not fuse runs on the fused kernel without an
// epilogue (ConvOnFusedKernel), as every Conv the kernel takes does.
std::vector<std::string> on_fused_kernel(std::vector<std::string> ops) {
  for (std::string& op : ops)
    if (op == "Conv") op = "kiln.fused.Conv";
  return ops;
}

// Whether some log line contains every one of `parts`.
bool logged(const std::vector<std::string>& log, std::initializer_list<const char*> parts) {
  return std::any_of(log.begin(), log.end(), [&](const std::string& line) {
    return std::all_of(parts.begin(), parts.end(), [&](const char* p) { return line.find(p) != std::string::npos; });
  });
}

std::string joined(const std::vector<std::string>& log) {
  std::string s;
  for (const auto& l : log) s += l + "\n";
  return s;
}

// x [2, 3, 9, 9] -> Conv -> BN -> y
::onnx::GraphProto conv_bn_graph(const ConvSpec& s) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", kFloat, {2, s.cin, 9, 9});
  add_conv(g, "conv", "x", "c", s, 1);
  add_bn(g, "bn", "c", "y", s.cout, 5);
  *g.add_output() = output_info("y");
  return g;
}

}  // namespace

TEST(OnnxRewriteConv, BatchNormFoldsIntoTheConvWithAndWithoutBias) {
  for (bool bias : {true, false})
    for (int64_t group : {1, 3}) {
      ConvSpec s{3, 6};
      s.bias = bias;
      s.group = group;
      Compared c = compare(conv_bn_graph(s), {2, 3, 9, 9});
      EXPECT_EQ(c.fused_ops, std::vector<std::string>{"kiln.fused.Conv"}) << "bias " << bias << " group " << group;
      EXPECT_LE(c.rel, 1e-5);
      EXPECT_TRUE(logged(c.log, {"FuseConvBatchNorm: 'conv' + 'bn' -> Conv"})) << joined(c.log);
    }
}

TEST(OnnxRewriteConv, ConvBatchNormReluBecomesOneFusedConv) {
  ::onnx::GraphProto g = conv_bn_graph({3, 8});
  g.mutable_node(1)->set_output(0, "b");
  add_node(g, "Relu", {"b"}, {"y"}, "relu");
  Compared c = compare(g, {2, 3, 9, 9});
  EXPECT_EQ(c.fused_ops, std::vector<std::string>{"kiln.fused.Conv"}) << joined(c.log);
  EXPECT_LE(c.rel, 1e-5);
  EXPECT_TRUE(logged(c.log, {"FuseConvBatchNorm"})) << joined(c.log);
  EXPECT_TRUE(logged(c.log, {"FuseConvActivation: 'conv' + 'relu' -> Conv + Relu"})) << joined(c.log);
}

TEST(OnnxRewriteConv, BatchNormWithANonConstantScaleStaysUnfolded) {
  ::onnx::GraphProto g = conv_bn_graph({3, 4});
  g.mutable_node(1)->set_input(1, "s");  // the scale is a graph input
  *g.add_input() = value_info("s", kFloat, {4});
  Compared c = compare(g, {2, 3, 9, 9}, {{"s", Tensor::from_vector<float>({0.5f, 1, 1.5f, 2}, {4})}});
  EXPECT_EQ(c.fused_ops, on_fused_kernel(c.plain_ops));
  EXPECT_LE(c.rel, 1e-5);
  EXPECT_TRUE(logged(c.log, {"left 'bn'", "scale is not constant"})) << joined(c.log);
}

TEST(OnnxRewriteConv, TrainingModeBatchNormStaysUnfolded) {
  ::onnx::GraphProto g = conv_bn_graph({3, 4});
  auto* bn = g.mutable_node(1);
  bn->add_output("running_mean");
  bn->add_output("running_var");
  set_int(bn, "training_mode", 1);
  Compared c = compare(g, {2, 3, 9, 9});
  EXPECT_EQ(c.fused_ops, on_fused_kernel(c.plain_ops));
  EXPECT_LE(c.rel, 1e-5);
  EXPECT_TRUE(logged(c.log, {"left 'bn'", "3 outputs (training mode)"})) << joined(c.log);
}

TEST(OnnxRewriteConv, ConvOutputReadTwiceStaysUnfused) {
  ::onnx::GraphProto g = conv_bn_graph({3, 4});
  *g.add_output() = output_info("c");  // the Conv's output is also a graph output
  Compared c = compare(g, {2, 3, 9, 9});
  EXPECT_EQ(c.fused_ops, on_fused_kernel(c.plain_ops));
  EXPECT_LE(c.rel, 1e-5);
  EXPECT_TRUE(logged(c.log, {"left 'bn'", "2 readers"})) << joined(c.log);
  // and a Conv -> Relu whose Conv output is read twice
  ::onnx::GraphProto h;
  *h.add_input() = value_info("x", kFloat, {2, 3, 9, 9});
  add_conv(h, "conv", "x", "c", {3, 4}, 1);
  add_node(h, "Relu", {"c"}, {"y"}, "relu");
  add_node(h, "Neg", {"c"}, {"n"}, "neg");
  *h.add_output() = output_info("y");
  *h.add_output() = output_info("n");
  c = compare(h, {2, 3, 9, 9});
  EXPECT_EQ(c.fused_ops, on_fused_kernel(c.plain_ops));
  EXPECT_TRUE(logged(c.log, {"FuseConvActivation: left 'conv' unfused", "2 readers"})) << joined(c.log);
}

// Two Conv -> BN chains, the second one's weight named as the first one's folded weight would be.
TEST(OnnxRewriteConv, FoldedInitializersTakeNamesNothingElseHas) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", kFloat, {1, 3, 9, 9});
  add_conv(g, "conv", "x", "c", {3, 4}, 1);
  add_bn(g, "bn", "c", "b", 4, 5);
  add_conv(g, "conv2", "b", "c2", {4, 4}, 9, "conv_w_bn_folded");
  add_bn(g, "bn2", "c2", "y", 4, 13);
  *g.add_output() = output_info("y");
  Compared c = compare(g, {1, 3, 9, 9});
  EXPECT_EQ(c.fused_ops, (std::vector<std::string>{"kiln.fused.Conv", "kiln.fused.Conv"}));
  EXPECT_LE(c.rel, 1e-5);
}

TEST(OnnxRewriteConv, ConvAndItsActivationBecomeOneFusedConv) {
  for (const char* act : {"Relu", "Clip", "HardSwish", "SiLU"}) {
    ::onnx::GraphProto g;
    *g.add_input() = value_info("x", kFloat, {2, 8, 10, 10});
    ConvSpec dw{8, 8};  // depthwise, stride 2, no bias: MobileNet's shape
    dw.group = 8;
    dw.stride = 2;
    dw.bias = false;
    add_conv(g, "conv", "x", "c", dw, 3);
    if (std::string(act) == "SiLU") {  // as PyTorch exports it; FuseSiLU makes it kiln.fused.SiLU
      add_node(g, "Sigmoid", {"c"}, {"s"}, "sigmoid");
      add_node(g, "Mul", {"c", "s"}, {"y"}, "act");
    } else if (std::string(act) != "Clip") {
      add_node(g, act, {"c"}, {"y"}, "act");
    } else {
      add_float_initializer(g, "lo", {}, {0.0f});
      add_float_initializer(g, "hi", {}, {6.0f});
      add_node(g, "Clip", {"c", "lo", "hi"}, {"y"}, "act");
    }
    *g.add_output() = output_info("y");
    Compared c = compare(g, {2, 8, 10, 10});
    EXPECT_EQ(c.fused_ops, std::vector<std::string>{"kiln.fused.Conv"}) << act << "\n" << joined(c.log);
    EXPECT_LE(c.rel, 1e-5);
    EXPECT_TRUE(logged(c.log, {"'conv' + 'act' -> Conv + ", act})) << joined(c.log);
  }
}

TEST(OnnxRewriteConv, ClipInTheOlderAttributeFormIsFusedToo) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", kFloat, {1, 3, 8, 8});
  add_conv(g, "conv", "x", "c", {3, 5}, 3);
  auto* clip = add_node(g, "Clip", {"c"}, {"y"}, "relu6");
  set_float(clip, "min", 0);
  set_float(clip, "max", 6);
  *g.add_output() = output_info("y");
  Compared c = compare(g, {1, 3, 8, 8}, {}, 9);
  EXPECT_EQ(c.fused_ops, std::vector<std::string>{"kiln.fused.Conv"}) << joined(c.log);
  EXPECT_LE(c.rel, 1e-5);
}

TEST(OnnxRewriteConv, ClipToOtherBoundsStaysUnfused) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", kFloat, {1, 3, 8, 8});
  add_conv(g, "conv", "x", "c", {3, 5}, 3);
  add_float_initializer(g, "lo", {}, {0.0f});
  add_float_initializer(g, "hi", {}, {5.0f});
  add_node(g, "Clip", {"c", "lo", "hi"}, {"y"}, "clip");
  *g.add_output() = output_info("y");
  Compared c = compare(g, {1, 3, 8, 8});
  EXPECT_EQ(c.fused_ops, on_fused_kernel(c.plain_ops));
  EXPECT_LE(c.rel, 1e-5);
  EXPECT_TRUE(logged(c.log, {"left 'conv' unfused", "not a constant clip to [0, 6]"})) << joined(c.log);
}

// A ResNet basic block: r = relu(conv_a(x)); y = relu(conv_b(r) + r), the Add's operands in either
// order; and the same without the last Relu.
TEST(OnnxRewriteConv, ResidualAddAndReluBecomeTheConvsEpilogue) {
  for (bool conv_first : {true, false})
    for (bool relu : {true, false}) {
      ::onnx::GraphProto g;
      *g.add_input() = value_info("x", kFloat, {2, 3, 12, 12});
      add_conv(g, "conv_a", "x", "a", {3, 8}, 3);
      add_node(g, "Relu", {"a"}, {"r"}, "relu_a");
      add_conv(g, "conv_b", "r", "b", {8, 8}, 7);
      add_node(g, "Add", conv_first ? std::vector<std::string>{"b", "r"} : std::vector<std::string>{"r", "b"},
               {relu ? "s" : "y"}, "add");
      if (relu) add_node(g, "Relu", {"s"}, {"y"}, "relu_b");
      *g.add_output() = output_info("y");
      Compared c = compare(g, {2, 3, 12, 12});
      EXPECT_EQ(c.fused_ops, (std::vector<std::string>{"kiln.fused.Conv", "kiln.fused.Conv"})) << joined(c.log);
      EXPECT_LE(c.rel, 1e-5);
      if (relu)
        EXPECT_TRUE(logged(c.log, {"'conv_b' + 'add' + 'relu_b' -> Conv + residual + Relu"})) << joined(c.log);
      else
        EXPECT_TRUE(logged(c.log, {"'conv_b' + 'add' -> Conv + residual"})) << joined(c.log);
    }
}

TEST(OnnxRewriteConv, AddOfABroadcastConstantStaysUnfused) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", kFloat, {1, 3, 8, 8});
  add_conv(g, "conv", "x", "c", {3, 4}, 3);
  add_float_initializer(g, "shift", {4, 1, 1}, {1, -1, 2, -2});
  add_node(g, "Add", {"c", "shift"}, {"s"}, "add");
  add_node(g, "Relu", {"s"}, {"y"}, "relu");
  *g.add_output() = output_info("y");
  Compared c = compare(g, {1, 3, 8, 8});
  EXPECT_EQ(c.fused_ops, on_fused_kernel(c.plain_ops));
  EXPECT_LE(c.rel, 1e-5);
  EXPECT_TRUE(logged(c.log, {"left 'conv' unfused", "is a constant (broadcast)"})) << joined(c.log);
}

// An Add of a graph input that broadcasts ([1, 4, 1, 1] over [1, 4, 8, 8]): the pass cannot see
// the shape, so it fuses; the node sees it and adds with broadcasting, as the Add did.
TEST(OnnxRewriteConv, AResidualThatBroadcastsIsAddedAsTheAddDid) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", kFloat, {1, 3, 8, 8});
  *g.add_input() = value_info("z", kFloat, {1, 4, 1, 1});
  add_conv(g, "conv", "x", "c", {3, 4}, 3);
  add_node(g, "Add", {"z", "c"}, {"s"}, "add");
  add_node(g, "Relu", {"s"}, {"y"}, "relu");
  *g.add_output() = output_info("y");
  Compared c = compare(g, {1, 3, 8, 8}, {{"z", Tensor::from_vector<float>({1, -1, 2, -2}, {1, 4, 1, 1})}});
  EXPECT_EQ(c.fused_ops, std::vector<std::string>{"kiln.fused.Conv"});
  EXPECT_LE(c.rel, 1e-6);
}

// A Conv with nothing to absorb (here read by a HardSwish, then a second Conv read by two nodes)
// runs on the fused kernel without an epilogue, so the value between them stays channels last.
TEST(OnnxRewriteConv, ConvsWithNothingToFuseRunOnTheFusedKernel) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", kFloat, {2, 3, 9, 9});
  add_conv(g, "conv", "x", "c", {3, 8}, 3);
  add_node(g, "Tanh", {"c"}, {"h"}, "tanh");
  add_conv(g, "conv2", "h", "d", {8, 4}, 1);
  add_node(g, "Neg", {"d"}, {"n"}, "neg");
  add_node(g, "Sigmoid", {"d"}, {"s"}, "sigmoid");
  *g.add_output() = output_info("n");
  *g.add_output() = output_info("s");
  Compared c = compare(g, {2, 3, 9, 9});
  EXPECT_EQ(c.fused_ops, (std::vector<std::string>{"kiln.fused.Conv", "Tanh", "kiln.fused.Conv", "Neg", "Sigmoid"}));
  EXPECT_LE(c.rel, 1e-5);
  EXPECT_TRUE(logged(c.log, {"ConvOnFusedKernel: 'conv' -> Conv (no epilogue)"})) << joined(c.log);
  EXPECT_TRUE(logged(c.log, {"ConvOnFusedKernel: 'conv2'"})) << joined(c.log);
}

TEST(OnnxRewriteConv, ConvWithAsymmetricPadsStaysUnfused) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", kFloat, {1, 3, 8, 8});
  auto* conv = add_conv(g, "conv", "x", "c", {3, 4}, 3);
  conv->mutable_attribute(1)->set_ints(2, 2);  // pads 1, 1, 2, 1
  add_node(g, "Relu", {"c"}, {"y"}, "relu");
  *g.add_output() = output_info("y");
  Compared c = compare(g, {1, 3, 8, 8});
  EXPECT_EQ(c.fused_ops, c.plain_ops);
  EXPECT_EQ(c.rel, 0.0);
  EXPECT_TRUE(logged(c.log, {"left 'conv' unfused", "pads are not symmetric"})) << joined(c.log);
}
