// ONNX op semantics that the backend test data (ONNX 1.12, opsets <= 17) does not reach:
// opset-18 forms (axes and sizes as inputs), and attribute/input variants, each checked
// against values worked out by hand from ONNX's Operators.md.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "engine/core/error.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/tensor_proto.h"
#include "model_builder.h"

using namespace kiln;
using namespace kiln::onnx::test;

namespace {

// Runs one node whose inputs are initializers in0, in1 ... ("" = omitted).
std::vector<Tensor> run_node(const std::string& op, int64_t opset, const std::vector<Tensor>& inputs, size_t outputs,
                             const std::function<void(::onnx::NodeProto*)>& attrs = {}) {
  ::onnx::GraphProto g;
  std::vector<std::string> in, out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      in.push_back("");
      continue;
    }
    in.push_back("in" + std::to_string(i));
    ::onnx::TensorProto* t = g.add_initializer();
    kiln::onnx::tensor_to_proto(inputs[i], *t);
    t->set_name(in.back());
  }
  for (size_t i = 0; i < outputs; ++i) {
    out.push_back("out" + std::to_string(i));
    g.add_output()->set_name(out.back());
  }
  ::onnx::NodeProto* n = add_node(g, op, in, out, "n");
  if (attrs) attrs(n);
  kiln::onnx::Session s(kiln::onnx::parse_model(model_with(g, opset).SerializeAsString(), ""));
  return s.run({});
}

Tensor f32(std::vector<float> v, Shape s) { return Tensor::from_vector(v, s); }
Tensor i64(std::vector<int64_t> v) { return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}); }

}  // namespace

TEST(OnnxOps, ReduceMeanAxesAsAttributeAndAsInput) {
  Tensor x = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor a = run_node("ReduceMean", 13, {x}, 1, [](auto* n) { set_ints(n, "axes", {1}); set_int(n, "keepdims", 0); })[0];
  Tensor b = run_node("ReduceMean", 18, {x, i64({1})}, 1, [](auto* n) { set_int(n, "keepdims", 0); })[0];
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{2, 5}));
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{2, 5}));
  // opset 18 without axes reduces everything, unless noop_with_empty_axes
  EXPECT_EQ(run_node("ReduceMean", 18, {x}, 1)[0].to_vector<float>(), (std::vector<float>{3.5f}));
  Tensor same = run_node("ReduceMean", 18, {x}, 1, [](auto* n) { set_int(n, "noop_with_empty_axes", 1); })[0];
  EXPECT_EQ(same.shape(), (Shape{2, 3}));
}

TEST(OnnxOps, SplitBySizesAndByNumOutputs) {
  Tensor x = f32({1, 2, 3, 4, 5}, {5});
  auto parts = run_node("Split", 13, {x, i64({2, 3})}, 2);
  EXPECT_EQ(parts[1].to_vector<float>(), (std::vector<float>{3, 4, 5}));
  parts = run_node("Split", 11, {x}, 2, [](auto* n) { set_ints(n, "split", {4, 1}); });
  EXPECT_EQ(parts[1].to_vector<float>(), (std::vector<float>{5}));
  parts = run_node("Split", 18, {x}, 2, [](auto* n) { set_int(n, "num_outputs", 2); });  // ceil: 3 + 2
  EXPECT_EQ(parts[0].to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(parts[1].to_vector<float>(), (std::vector<float>{4, 5}));
  EXPECT_THROW(run_node("Split", 13, {x, i64({2, 2})}, 2), ValueError);
}

TEST(OnnxOps, SliceWithNegativeStepsAndClamping) {
  Tensor x = f32({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {10});
  auto y = run_node("Slice", 13, {x, i64({-1}), i64({-1000}), i64({0}), i64({-3})}, 1)[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{9, 6, 3, 0}));
  y = run_node("Slice", 13, {x, i64({2}), i64({1000}), Tensor(), i64({3})}, 1)[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{2, 5, 8}));
  y = run_node("Slice", 9, {x}, 1, [](auto* n) { set_ints(n, "starts", {1}); set_ints(n, "ends", {3}); })[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 2}));
}

TEST(OnnxOps, PadModesAndOpsetForms) {
  Tensor x = f32({1, 2, 3}, {3});
  auto pad = [&](const std::string& mode, int64_t opset) {
    if (opset < 11)
      return run_node("Pad", opset, {x}, 1, [&](auto* n) {
        set_ints(n, "pads", {2, 1});
        set_float(n, "value", 9.0f);
        auto* a = n->add_attribute();
        a->set_name("mode");
        a->set_type(::onnx::AttributeProto::STRING);
        a->set_s(mode);
      })[0];
    return run_node("Pad", opset, {x, i64({2, 1}), f32({9}, {})}, 1, [&](auto* n) {
      auto* a = n->add_attribute();
      a->set_name("mode");
      a->set_type(::onnx::AttributeProto::STRING);
      a->set_s(mode);
    })[0];
  };
  EXPECT_EQ(pad("constant", 2).to_vector<float>(), (std::vector<float>{9, 9, 1, 2, 3, 9}));
  EXPECT_EQ(pad("constant", 13).to_vector<float>(), (std::vector<float>{9, 9, 1, 2, 3, 9}));
  EXPECT_EQ(pad("reflect", 13).to_vector<float>(), (std::vector<float>{3, 2, 1, 2, 3, 2}));
  EXPECT_EQ(pad("edge", 13).to_vector<float>(), (std::vector<float>{1, 1, 1, 2, 3, 3}));
  // Pad-18 axes input: pad only the last axis of a [2, 2]
  Tensor m = f32({1, 2, 3, 4}, {2, 2});
  Tensor y = run_node("Pad", 18, {m, i64({1, 0}), Tensor(), i64({-1})}, 1)[0];
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 1, 2, 0, 3, 4}));
}

TEST(OnnxOps, ClipBoundsAsAttributesOrInputs) {
  Tensor x = f32({-2, 0, 2}, {3});
  auto y = run_node("Clip", 6, {x}, 1, [](auto* n) { set_float(n, "min", -1); set_float(n, "max", 1); })[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{-1, 0, 1}));
  y = run_node("Clip", 13, {x, f32({-1}, {})}, 1)[0];  // min only
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{-1, 0, 2}));
  y = run_node("Clip", 13, {x, Tensor(), f32({1}, {})}, 1)[0];  // max only
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{-2, 0, 1}));
  Tensor xi = Tensor::from_vector(std::vector<int32_t>{-5, 5}, {2});
  Tensor yi = run_node("Clip", 13, {xi, Tensor::scalar(-1, DType::i32), Tensor::scalar(1, DType::i32)}, 1)[0];
  EXPECT_EQ(yi.dtype(), DType::i32);
  EXPECT_EQ(yi.to_vector<int32_t>(), (std::vector<int32_t>{-1, 1}));
}

TEST(OnnxOps, IntegerArithmeticKeepsTheType) {
  Tensor a = Tensor::from_vector(std::vector<int32_t>{7, -7, 9}, {3});
  Tensor b = Tensor::from_vector(std::vector<int32_t>{2, 2, 3}, {3});
  Tensor d = run_node("Div", 14, {a, b}, 1)[0];
  EXPECT_EQ(d.dtype(), DType::i32);
  EXPECT_EQ(d.to_vector<int32_t>(), (std::vector<int32_t>{3, -3, 3}));  // truncation
  Tensor m = run_node("Mod", 13, {a, b}, 1)[0];
  EXPECT_EQ(m.to_vector<int32_t>(), (std::vector<int32_t>{1, 1, 0}));  // Python sign rule
  Tensor mm = run_node("MatMul", 13, {a.reshape({1, 3}), b.reshape({3, 1})}, 1)[0];
  EXPECT_EQ(mm.dtype(), DType::i32);
  EXPECT_EQ(mm.to_vector<int32_t>(), (std::vector<int32_t>{27}));
}

TEST(OnnxOps, BroadcastingAddAndBadShapesNameTheNode) {
  Tensor y = run_node("Add", 14, {f32({1, 2, 3}, {3, 1}), f32({10, 20}, {2})}, 1)[0];
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{11, 21, 12, 22, 13, 23}));
  try {
    run_node("Add", 14, {f32({1, 2, 3}, {3}), f32({1, 2}, {2})}, 1);
    FAIL() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'n' (Add)"), std::string::npos) << e.what();
  }
}

TEST(OnnxOps, ConvWithAsymmetricPadsAndGroups) {
  // 1-d: x [1, 2, 4], w [2, 1, 2] (groups 2), pads [1, 0]
  Tensor x = f32({1, 2, 3, 4, 10, 20, 30, 40}, {1, 2, 4});
  Tensor w = f32({1, 1, 1, -1}, {2, 1, 2});
  Tensor y = run_node("Conv", 11, {x, w}, 1, [](auto* n) { set_int(n, "group", 2); set_ints(n, "pads", {1, 0}); })[0];
  EXPECT_EQ(y.shape(), (Shape{1, 2, 4}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 3, 5, 7, -10, -10, -10, -10}));
}

// LayerNormalization with Y alone (one kernel, ops_nn.cpp) and with Mean and InvStdDev (the
// decomposition) against the definition, normalizing over the last dim (13 elements, not a
// multiple of the kernel's 8 lanes) and over the last two.
TEST(OnnxOps, LayerNormalizationWithAndWithoutItsStatistics) {
  std::vector<float> xv(2 * 3 * 13), wv(3 * 13), bv(3 * 13);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>((i * 37) % 23) * 0.25f - 2.0f;
  for (size_t i = 0; i < wv.size(); ++i) {
    wv[i] = 0.5f + static_cast<float>(i % 5) * 0.1f;
    bv[i] = static_cast<float>(i % 3) - 1.0f;
  }
  for (int64_t axis : {-1, 1}) {
    const int64_t d = axis == -1 ? 13 : 39;
    Tensor x = f32(xv, {2, 3, 13});
    Tensor w = f32(std::vector<float>(wv.begin(), wv.begin() + d), axis == -1 ? Shape{13} : Shape{3, 13});
    Tensor b = f32(std::vector<float>(bv.begin(), bv.begin() + d), w.shape());
    auto attrs = [axis](::onnx::NodeProto* n) { set_int(n, "axis", axis); };
    std::vector<float> y1 = run_node("LayerNormalization", 17, {x, w, b}, 1, attrs)[0].to_vector<float>();
    std::vector<Tensor> all = run_node("LayerNormalization", 17, {x, w, b}, 3, attrs);
    std::vector<float> y3 = all[0].to_vector<float>(), inv = all[2].to_vector<float>();
    ASSERT_EQ(y1.size(), xv.size());
    for (size_t r = 0; r < xv.size() / static_cast<size_t>(d); ++r) {
      double mean = 0, var = 0;
      for (int64_t j = 0; j < d; ++j) mean += xv[r * d + j];
      mean /= static_cast<double>(d);
      for (int64_t j = 0; j < d; ++j) var += (xv[r * d + j] - mean) * (xv[r * d + j] - mean);
      const double is = 1 / std::sqrt(var / static_cast<double>(d) + 1e-5);
      EXPECT_NEAR(inv[r], is, 1e-5 * is) << "axis " << axis << " row " << r;
      for (int64_t j = 0; j < d; ++j) {
        const size_t k = r * static_cast<size_t>(d) + static_cast<size_t>(j);
        const double want = (xv[k] - mean) * is * wv[static_cast<size_t>(j)] + bv[static_cast<size_t>(j)];
        ASSERT_NEAR(y1[k], want, 1e-5) << "Y alone, axis " << axis << " element " << k;
        ASSERT_NEAR(y3[k], want, 1e-5) << "Y with statistics, axis " << axis << " element " << k;
      }
    }
  }
}
