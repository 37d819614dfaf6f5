// The ONNX executor's inference passes (engine/onnx/rewrite.h): each fused pattern gives the
// unfused graph's outputs (the same session options but optimize off), and the almost-matching
// patterns stay unfused and correct. Also the executor's batch-1 fast paths of MatMul (a
// [..., M, K] @ [K, N] product folded into one) and MaxPool (the kernel pads), against
// references computed without them, and read-only convolution weights (engine/core/read_only.h),
// which the CPU backend packs once: the same numbers, the copy gone with the allocation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/core/read_only.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/rewrite.h"
#include "model_builder.h"

using namespace kiln;
using namespace kiln::onnx::test;

namespace {

constexpr int32_t kFloat = ::onnx::TensorProto::FLOAT;

// A 0-d float Constant node, as torch.onnx (PyTorch 1.13) writes the scalars of F.gelu.
void add_constant(::onnx::GraphProto& g, const std::string& name, float v) {
  auto* n = add_node(g, "Constant", {}, {name}, name + "_node");
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(kFloat);
  a->mutable_t()->add_float_data(v);
}

// The graph as written and after the inference passes: their nodes, and max |fused - plain| /
// max |plain| over every output for a normal random input x of `shape`.
struct Compared {
  std::vector<std::string> plain_ops, fused_ops;  // op types, "kiln.fused.SiLU" for fused ones
  std::vector<std::string> log;
  double rel = 0;
};

Compared compare(const ::onnx::GraphProto& g, const Shape& shape) {
  kiln::onnx::Model m = kiln::onnx::parse_model(model_with(g, 17).SerializeAsString(), "");
  kiln::onnx::SessionOptions on;
  on.optimize = true;
  kiln::onnx::Session plain(m), fused(m, Device{}, on);
  Compared c;
  for (const auto& n : plain.model().graph.nodes) c.plain_ops.push_back(kiln::onnx::op_key(n));
  for (const auto& n : fused.model().graph.nodes) c.fused_ops.push_back(kiln::onnx::op_key(n));
  c.log = fused.rewrite_log();
  manual_seed(7);
  Tensor x = normal(shape, 0, 2);
  std::vector<Tensor> a = plain.run({{"x", x}}), b = fused.run({{"x", x}});
  EXPECT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    EXPECT_EQ(a[i].shape(), b[i].shape());
    std::vector<float> va = a[i].to_vector<float>(), vb = b[i].to_vector<float>();
    double scale = 0, diff = 0;
    for (size_t k = 0; k < va.size(); ++k) {
      scale = std::max(scale, std::abs(double(va[k])));
      diff = std::max(diff, std::abs(double(va[k]) - double(vb[k])));
    }
    c.rel = std::max(c.rel, scale > 0 ? diff / scale : diff);
  }
  return c;
}

size_t count(const std::vector<std::string>& ops, const std::string& op) {
  return static_cast<size_t>(std::count(ops.begin(), ops.end(), op));
}

// y = x * sigmoid(x) with the Mul's operands in either order, then z = y + 1.
::onnx::GraphProto silu_graph(bool sigmoid_first) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", kFloat, {2, 3, 4});
  add_node(g, "Sigmoid", {"x"}, {"s"}, "sig");
  add_node(g, "Mul", sigmoid_first ? std::vector<std::string>{"s", "x"} : std::vector<std::string>{"x", "s"}, {"y"}, "mul");
  add_float_initializer(g, "one", {}, {1.0f});
  add_node(g, "Add", {"y", "one"}, {"z"}, "add");
  *g.add_output() = value_info("z", kFloat, {2, 3, 4});
  return g;
}

// GELU as torch.onnx writes it: y = (x * (erf(x / sqrt 2) + 1)) * 0.5; half_first: (x * 0.5) * (...)
// as some exporters write it; mul_form: x * (1 / sqrt 2) instead of the Div. `sqrt2` and `one`
// are the constants written (an almost-GELU when they differ).
::onnx::GraphProto gelu_graph(bool half_first, bool mul_form, float sqrt2 = std::sqrt(2.0f), float one = 1.0f) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", kFloat, {3, 8});
  add_constant(g, "c_sqrt2", mul_form ? 1.0f / sqrt2 : sqrt2);
  add_constant(g, "c_one", one);
  add_constant(g, "c_half", 0.5f);
  add_node(g, mul_form ? "Mul" : "Div", {"x", "c_sqrt2"}, {"d"}, "div");
  add_node(g, "Erf", {"d"}, {"e"}, "erf");
  add_node(g, "Add", {"e", "c_one"}, {"a"}, "add");
  if (half_first) {
    add_node(g, "Mul", {"x", "c_half"}, {"h"}, "half");
    add_node(g, "Mul", {"h", "a"}, {"y"}, "mul");
  } else {
    add_node(g, "Mul", {"x", "a"}, {"m"}, "mul");
    add_node(g, "Mul", {"m", "c_half"}, {"y"}, "half");
  }
  *g.add_output() = value_info("y", kFloat, {3, 8});
  return g;
}

}  // namespace

TEST(OnnxRewrite, FuseSiLUEitherOperandOrder) {
  for (bool first : {false, true}) {
    Compared c = compare(silu_graph(first), {2, 3, 4});
    EXPECT_EQ(count(c.fused_ops, "kiln.fused.SiLU"), 1u) << "sigmoid first " << first;
    EXPECT_EQ(count(c.fused_ops, "Sigmoid") + count(c.fused_ops, "Mul"), 0u);
    EXPECT_EQ(c.fused_ops.size(), 2u);  // SiLU, Add
    EXPECT_LE(c.rel, 1e-6);
  }
}

TEST(OnnxRewrite, SiLUWhoseSigmoidHasASecondReaderStaysUnfused) {
  ::onnx::GraphProto g = silu_graph(false);
  add_node(g, "Neg", {"s"}, {"n"}, "neg");  // the sigmoid is read twice
  *g.add_output() = value_info("n", kFloat, {2, 3, 4});
  Compared c = compare(g, {2, 3, 4});
  EXPECT_EQ(c.fused_ops, c.plain_ops);
  EXPECT_EQ(c.rel, 0.0);
  ASSERT_EQ(c.log.size(), 1u);
  EXPECT_NE(c.log[0].find("2 readers"), std::string::npos) << c.log[0];
}

TEST(OnnxRewrite, SigmoidAsAGraphOutputStaysUnfused) {
  ::onnx::GraphProto g = silu_graph(true);
  *g.add_output() = value_info("s", kFloat, {2, 3, 4});
  Compared c = compare(g, {2, 3, 4});
  EXPECT_EQ(c.fused_ops, c.plain_ops);
  EXPECT_EQ(c.rel, 0.0);
}

TEST(OnnxRewrite, MulOfAnotherTensorBySigmoidStaysUnfused) {
  // y = (x + 1) * sigmoid(x): not a SiLU
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", kFloat, {5});
  add_float_initializer(g, "one", {}, {1.0f});
  add_node(g, "Add", {"x", "one"}, {"x1"}, "add");
  add_node(g, "Sigmoid", {"x"}, {"s"}, "sig");
  add_node(g, "Mul", {"x1", "s"}, {"y"}, "mul");
  *g.add_output() = value_info("y", kFloat, {5});
  Compared c = compare(g, {5});
  EXPECT_EQ(c.fused_ops, c.plain_ops);
  EXPECT_EQ(c.rel, 0.0);
}

TEST(OnnxRewrite, FuseGeluInEachWrittenForm) {
  for (bool half_first : {false, true})
    for (bool mul_form : {false, true}) {
      Compared c = compare(gelu_graph(half_first, mul_form), {3, 8});
      EXPECT_EQ(count(c.fused_ops, "kiln.fused.Gelu"), 1u) << "half first " << half_first << ", mul " << mul_form;
      EXPECT_EQ(count(c.fused_ops, "Erf") + count(c.fused_ops, "Mul") + count(c.fused_ops, "Div") +
                    count(c.fused_ops, "Add"),
                0u);
      EXPECT_LE(c.rel, 1e-6);
    }
}

TEST(OnnxRewrite, AlmostGeluStaysUnfused) {
  // x / 2 instead of x / sqrt 2, and erf(...) + 2 instead of + 1: other functions
  for (auto g : {gelu_graph(false, false, 2.0f), gelu_graph(false, false, std::sqrt(2.0f), 2.0f)}) {
    Compared c = compare(g, {3, 8});
    EXPECT_EQ(c.fused_ops, c.plain_ops);
    EXPECT_EQ(c.rel, 0.0);
  }
  // the erf read a second time
  ::onnx::GraphProto g = gelu_graph(false, false);
  *g.add_output() = value_info("e", kFloat, {3, 8});
  Compared c = compare(g, {3, 8});
  EXPECT_EQ(c.fused_ops, c.plain_ops);
  EXPECT_EQ(c.rel, 0.0);
  EXPECT_FALSE(c.log.empty());
}

TEST(OnnxRewrite, ReadersInsideASubgraphCount) {
  // The sigmoid is also read inside an If branch: it must stay.
  ::onnx::GraphProto g = silu_graph(false);
  add_float_initializer(g, "zero", {}, {0.0f});
  add_node(g, "ReduceSum", {"x"}, {"sx"}, "sum");
  add_node(g, "Greater", {"sx", "zero"}, {"cond"}, "gt");
  ::onnx::GraphProto then_g, else_g;
  then_g.set_name("then");
  add_node(then_g, "Neg", {"s"}, {"t_out"}, "neg_s");
  *then_g.add_output() = value_info("t_out", kFloat, {2, 3, 4});
  else_g.set_name("else");
  add_node(else_g, "Identity", {"s"}, {"e_out"}, "id_s");
  *else_g.add_output() = value_info("e_out", kFloat, {2, 3, 4});
  auto* iff = add_node(g, "If", {"cond"}, {"branch"}, "if");
  for (auto [name, body] : {std::pair{"then_branch", &then_g}, std::pair{"else_branch", &else_g}}) {
    auto* a = iff->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::GRAPH);
    *a->mutable_g() = *body;
  }
  *g.add_output() = value_info("branch", kFloat, {2, 3, 4});
  EXPECT_EQ(kiln::onnx::reader_counts(
                kiln::onnx::parse_model(model_with(g, 17).SerializeAsString(), "").graph)["s"],
            3);
  Compared c = compare(g, {2, 3, 4});
  EXPECT_EQ(c.fused_ops, c.plain_ops);
  EXPECT_EQ(c.rel, 0.0);
}

TEST(OnnxRewrite, OptimizeOffLeavesTheGraphAsWritten) {
  kiln::onnx::Model m = kiln::onnx::parse_model(model_with(silu_graph(false), 17).SerializeAsString(), "");
  kiln::onnx::Session s(m);
  EXPECT_EQ(s.model().graph.nodes.size(), 3u);
  EXPECT_TRUE(s.rewrite_log().empty());
}

TEST(OnnxExecutorFastPaths, MatMulOfABatchByAMatrixMatchesTheBatchedProduct) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", kFloat, {2, 3, 4, 5});
  manual_seed(3);
  Tensor w = normal({5, 6}, 0, 1);
  add_float_initializer(g, "w", {5, 6}, w.to_vector<float>());
  add_node(g, "MatMul", {"x", "w"}, {"y"}, "mm");
  *g.add_output() = value_info("y", kFloat, {2, 3, 4, 6});
  kiln::onnx::Session s(kiln::onnx::parse_model(model_with(g, 17).SerializeAsString(), ""));
  Tensor x = normal({2, 3, 4, 5}, 0, 1);
  Tensor y = s.run({{"x", x}})[0];
  ASSERT_EQ(y.shape(), (Shape{2, 3, 4, 6}));
  // the reference: each [4, 5] matrix of x times w on its own
  std::vector<float> got = y.to_vector<float>();
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      std::vector<float> want = matmul(x.select(0, i).select(0, j).contiguous(), w).to_vector<float>();
      for (size_t k = 0; k < want.size(); ++k)
        EXPECT_NEAR(got[static_cast<size_t>((i * 3 + j) * 24) + k], want[k], 1e-5f * (1 + std::abs(want[k])));
    }
  // a transposed left operand (a strided view, not folded) gives the same numbers
  ::onnx::GraphProto g2;
  *g2.add_input() = value_info("x", kFloat, {2, 3, 5, 4});
  add_float_initializer(g2, "w", {5, 6}, w.to_vector<float>());
  set_ints(add_node(g2, "Transpose", {"x"}, {"xt"}, "t"), "perm", {0, 1, 3, 2});
  add_node(g2, "MatMul", {"xt", "w"}, {"y"}, "mm");
  *g2.add_output() = value_info("y", kFloat, {2, 3, 4, 6});
  kiln::onnx::Session s2(kiln::onnx::parse_model(model_with(g2, 17).SerializeAsString(), ""));
  std::vector<float> got2 = s2.run({{"x", x.transpose(2, 3).contiguous()}})[0].to_vector<float>();
  ASSERT_EQ(got2.size(), got.size());
  for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got2[k], got[k], 1e-5f * (1 + std::abs(got[k])));
}

TEST(OnnxExecutorFastPaths, MaxPoolPaddedByTheKernelMatchesMinusInfinityPadding) {
  // ResNet's stem pool: 3x3, stride 2, pads 1 on every side; and pads that differ per side (the
  // padded-copy path) on the same input
  for (std::vector<int64_t> pads : {std::vector<int64_t>{1, 1, 1, 1}, std::vector<int64_t>{0, 1, 1, 0}}) {
    ::onnx::GraphProto g;
    *g.add_input() = value_info("x", kFloat, {1, 2, 7, 6});
    auto* n = add_node(g, "MaxPool", {"x"}, {"y"}, "pool");
    set_ints(n, "kernel_shape", {3, 3});
    set_ints(n, "strides", {2, 2});
    set_ints(n, "pads", pads);
    g.add_output()->set_name("y");
    kiln::onnx::Session s(kiln::onnx::parse_model(model_with(g, 17).SerializeAsString(), ""));
    manual_seed(5);
    Tensor x = normal({1, 2, 7, 6}, 0, 1);
    Tensor y = s.run({{"x", x}})[0];
    std::vector<float> xv = x.to_vector<float>(), got = y.to_vector<float>();
    const int64_t H = 7, W = 6, Ho = (H + pads[0] + pads[2] - 3) / 2 + 1, Wo = (W + pads[1] + pads[3] - 3) / 2 + 1;
    ASSERT_EQ(y.shape(), (Shape{1, 2, Ho, Wo}));
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t oh = 0; oh < Ho; ++oh)
        for (int64_t ow = 0; ow < Wo; ++ow) {
          float want = -std::numeric_limits<float>::infinity();
          for (int64_t h = oh * 2 - pads[0]; h < oh * 2 - pads[0] + 3; ++h)
            for (int64_t w = ow * 2 - pads[1]; w < ow * 2 - pads[1] + 3; ++w)
              if (h >= 0 && h < H && w >= 0 && w < W) want = std::max(want, xv[static_cast<size_t>((c * H + h) * W + w)]);
          EXPECT_EQ(got[static_cast<size_t>((c * Ho + oh) * Wo + ow)], want) << c << " " << oh << " " << ow;
        }
  }
}

namespace kiln::cpu {
size_t packed_count();  // backends/cpu/cpu_packed.h (internal to the CPU backend)
}

TEST(ReadOnlyWeights, ConvOfAPackedWeightMatchesAndTheCopyGoesWithTheAllocation) {
  manual_seed(11);
  Tensor x = normal({1, 8, 9, 9}, 0, 1);
  Conv2dParams p;
  p.padding[0] = p.padding[1] = 1;
  const size_t before = kiln::cpu::packed_count();
  std::vector<float> first;
  {
    Tensor w = normal({16, 8, 3, 3}, 0, 1);
    std::vector<float> want = conv2d(x, w.clone(), Tensor(), p).to_vector<float>();
    mark_read_only(w);
    EXPECT_TRUE(is_read_only(w.arg().data));
    first = conv2d(x, w, Tensor(), p).to_vector<float>();
    EXPECT_EQ(first, want);
    EXPECT_EQ(conv2d(x, w, Tensor(), p).to_vector<float>(), want);  // from the packed copy
    EXPECT_EQ(kiln::cpu::packed_count(), before + 1);
  }
  EXPECT_EQ(kiln::cpu::packed_count(), before);  // released with w
  // A new weight, likely at the freed address (the CPU allocator reuses blocks of its size),
  // marked again: its own values, not the old copy.
  Tensor w2 = normal({16, 8, 3, 3}, 0, 1);
  std::vector<float> want2 = conv2d(x, w2.clone(), Tensor(), p).to_vector<float>();
  mark_read_only(w2);
  EXPECT_EQ(conv2d(x, w2, Tensor(), p).to_vector<float>(), want2);
  EXPECT_NE(want2, first);
}

TEST(ReadOnlyWeights, AViewInsideAnAllocationCannotBeMarked) {
  Tensor w = normal({4, 4}, 0, 1);
  EXPECT_THROW(mark_read_only(w.slice(0, 1, 3)), ValueError);
}

TEST(OnnxExecutorFastPaths, OptimizedConvSessionMatchesThePlainOneRunAfterRun) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", kFloat, {1, 4, 10, 10});
  manual_seed(13);
  Tensor w = normal({8, 4, 3, 3}, 0, 1), b = normal({8}, 0, 1);
  add_float_initializer(g, "w", {8, 4, 3, 3}, w.to_vector<float>());
  add_float_initializer(g, "b", {8}, b.to_vector<float>());
  auto* conv = add_node(g, "Conv", {"x", "w", "b"}, {"c"}, "conv");
  set_ints(conv, "pads", {1, 1, 1, 1});
  auto* conv2 = add_node(g, "Conv", {"c", "w2"}, {"y"}, "conv2");  // the second reads a weight of its own
  set_ints(conv2, "kernel_shape", {1, 1});
  add_float_initializer(g, "w2", {8, 8, 1, 1}, normal({8, 8, 1, 1}, 0, 1).to_vector<float>());
  *g.add_output() = value_info("y", kFloat, {1, 8, 10, 10});
  kiln::onnx::Model m = kiln::onnx::parse_model(model_with(g, 17).SerializeAsString(), "");
  kiln::onnx::SessionOptions on;
  on.optimize = true;
  const size_t before = kiln::cpu::packed_count();
  {
    kiln::onnx::Session plain(m), fast(m, Device{}, on);
    for (int run = 0; run < 3; ++run) {
      Tensor x = normal({1, 4, 10, 10}, 0, 1);
      // the optimized session's convolutions run on the fused NHWC inference kernel (Note
      // [Channels last]), which may sum in another order than conv2d's
      const std::vector<float> a = fast.run({{"x", x}})[0].to_vector<float>(), e = plain.run({{"x", x}})[0].to_vector<float>();
      ASSERT_EQ(a.size(), e.size());
      for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], e[i], 1e-5 * (1 + std::abs(e[i]))) << run << " at " << i;
    }
    EXPECT_GE(kiln::cpu::packed_count(), before + 1);  // the 3x3 weight at least (a 1x1 may need no reorder)
  }
  EXPECT_EQ(kiln::cpu::packed_count(), before);
}
