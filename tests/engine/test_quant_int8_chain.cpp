// The fast int8 path on the CPU: the int8 linear layer on oneDNN's int8 matmul against a
// reference computed in double from the same quantized values (at batch 1 and 64, f32 and u8
// outputs, with ReLU and zero points), the int8 convolution's cached weight following a weight
// changed in place, u8 max pooling against the f32 pool, the f32 2x2 max
// pool's written-out row against PyTorch's rule,
// and Note [u8 chain] of engine/quant/int8_model.h: a layer's kernel writing u8 for the next
// layer agrees with the f32 round trip (f32 out, pool, quantize) within one quantization step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/graph/graph_module.h"
#include "engine/quant/int8_model.h"
#include "engine/core/qops.h"

namespace kiln::quant {
namespace {

using graph::Graph;
using graph::NodeId;

Tensor random_u8(const Shape& s) { return uniform(s, 0, 255.99).to(DType::u8); }
Tensor random_i8(const Shape& s) { return uniform(s, -127.99, 127.99).to(DType::i8); }  // truncates toward 0

// backend.h's QuantizedParams arithmetic in double: x u8 [M, K], w i8 [N, K], b i32 [N] -> the
// real output [M, N] (before any u8 requantization).
std::vector<double> reference_linear(const Tensor& x, const Tensor& w, const Tensor& b, const QuantizedParams& q) {
  const auto xv = x.to_vector<uint8_t>();
  const auto wv = w.to_vector<int8_t>();
  const auto bv = b.to_vector<int32_t>();
  const int64_t M = x.size(0), K = x.size(1), N = w.size(0);
  std::vector<double> y(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      int64_t acc = bv[n];
      for (int64_t k = 0; k < K; ++k) acc += (int64_t{xv[m * K + k]} - q.in_zero_point) * wv[n * K + k];
      double r = static_cast<double>(q.in_scale) * static_cast<double>(q.weight_scales[n]) * static_cast<double>(acc);
      y[m * N + n] = q.relu ? std::max(r, 0.0) : r;
    }
  return y;
}

TEST(CpuQuantized, LinearOnMatmulMatchesTheReference) {
  manual_seed(41);
  for (int64_t M : {1, 64})
    for (bool relu : {false, true}) {
      const int64_t K = 300, N = 24;
      const Tensor x = random_u8({M, K}), b = uniform({N}, -4000, 4000).to(DType::i32);
      QuantizedParams q;
      q.in_scale = 0.03f;
      q.in_zero_point = 100;
      for (int64_t c = 0; c < N; ++c) q.weight_scales.push_back(0.0005f * static_cast<float>(c + 1));
      q.relu = relu;
      q.out_scale = 0.4f;
      q.out_zero_point = 20;
      // Two weights of one shape and scales: the second call reuses the first's cached plan and
      // must read its own weight.
      for (int round = 0; round < 2; ++round) {
        const Tensor w = random_i8({N, K});
        const std::vector<double> ref = reference_linear(x, w, b, q);
        const auto f = quantized_linear(x, w, b, q, DType::f32).to_vector<float>();
        const auto u = quantized_linear(x, w, b, q, DType::u8).to_vector<uint8_t>();
        ASSERT_EQ(f.size(), ref.size());
        size_t clipped = 0;
        for (size_t i = 0; i < ref.size(); ++i) {
          ASSERT_NEAR(f[i], ref[i], 1e-5 * std::max(1.0, std::fabs(ref[i]))) << "M=" << M << " i=" << i;
          const double r = std::clamp(std::nearbyint(ref[i] / q.out_scale) + q.out_zero_point, 0.0, 255.0);
          ASSERT_LE(std::fabs(u[i] - r), 1.0) << "M=" << M << " i=" << i;  // a tie may round either way
          clipped += r == 0 || r == 255;
        }
        EXPECT_LT(clipped, ref.size() / 2);  // the u8 check sees unsaturated values
      }
    }
}

// cpu_qconv.cpp's Note [Reordered weight]: a plan keeps its reordered weight, checked by content.
TEST(CpuQuantized, ConvFollowsAWeightChangedInPlace) {
  manual_seed(45);
  const Tensor x = random_u8({1, 8, 6, 6});
  Tensor w = random_i8({16, 8, 3, 3});
  QuantizedParams q;
  q.in_scale = 0.02f;
  q.in_zero_point = 7;
  q.weight_scales.assign(16, 0.01f);
  const auto first = quantized_conv2d(x, w, Tensor(), Conv2dParams{}, q, DType::f32).to_vector<float>();
  const Tensor other = random_i8({16, 8, 3, 3});
  w.copy_(other);  // same address, shape and scales: the same plan
  const auto changed = quantized_conv2d(x, w, Tensor(), Conv2dParams{}, q, DType::f32).to_vector<float>();
  const auto fresh = quantized_conv2d(x, other, Tensor(), Conv2dParams{}, q, DType::f32).to_vector<float>();
  EXPECT_EQ(changed, fresh);
  EXPECT_NE(changed, first);
  // The same content at another address: the same result.
  const auto again = quantized_conv2d(x, w.clone(), Tensor(), Conv2dParams{}, q, DType::f32).to_vector<float>();
  EXPECT_EQ(again, changed);
}

TEST(CpuQuantized, U8MaxPoolEqualsTheFloatPool) {
  manual_seed(42);
  const Tensor x = random_u8({2, 3, 11, 10});
  Pool2dParams two;
  two.kernel[0] = two.kernel[1] = two.stride[0] = two.stride[1] = 2;
  Pool2dParams padded = two;
  padded.kernel[0] = padded.kernel[1] = 3;
  padded.padding[0] = padded.padding[1] = 1;
  padded.ceil_mode = true;
  Pool2dParams dilated;
  dilated.kernel[0] = dilated.kernel[1] = 2;
  dilated.dilation[0] = 2;
  dilated.stride[1] = 3;
  for (const Pool2dParams& p : {two, padded, dilated}) {
    const Tensor got = quantized_max_pool2d(x, p);
    const Tensor want = max_pool2d(x.to(DType::f32), p);
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_EQ(got.dtype(), DType::u8);
    const auto g = got.to_vector<uint8_t>();
    const auto w = want.to_vector<float>();
    for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(static_cast<float>(g[i]), w[i]) << i;
  }
  EXPECT_THROW(quantized_max_pool2d(x.to(DType::f32), two), DTypeError);
}

// The f32 2x2 / stride-2 max pool (cpu_pool.cpp's written-out row) against PyTorch's rule computed
// here: the first maximum in window order, a NaN wins (the last NaN), its flat h * W + w index;
// with ceil_mode the partial last row and column take the general loop.
TEST(CpuQuantized, FloatMaxPool2x2KeepsPyTorchsRule) {
  manual_seed(44);
  for (bool ceil : {false, true}) {
    std::vector<float> v = uniform({2, 3, 7, 9}, -2, 2).to_vector<float>();
    for (size_t i = 0; i < v.size(); i += 5) v[i] = std::round(v[i]);  // ties
    v[10] = NAN;
    v[11] = NAN;
    v[70] = -INFINITY;
    const Tensor x = Tensor::from_vector<float>(v, {2, 3, 7, 9});
    Pool2dParams p;
    p.kernel[0] = p.kernel[1] = p.stride[0] = p.stride[1] = 2;
    p.ceil_mode = ceil;
    const int64_t Ho = ceil ? 4 : 3, Wo = ceil ? 5 : 4;
    Tensor out = Tensor::empty({2, 3, Ho, Wo}, DType::f32), idx = Tensor::empty({2, 3, Ho, Wo}, DType::i64);
    x.backend()->max_pool2d_forward(out.arg(), idx.arg(), x.arg(), p);
    const auto y = out.to_vector<float>();
    const auto ix = idx.to_vector<int64_t>();
    for (int64_t plane = 0; plane < 6; ++plane)
      for (int64_t oh = 0; oh < Ho; ++oh)
        for (int64_t ow = 0; ow < Wo; ++ow) {
          float best = -INFINITY;
          int64_t at = 2 * oh * 9 + 2 * ow;
          for (int64_t h = 2 * oh; h < std::min<int64_t>(2 * oh + 2, 7); ++h)
            for (int64_t w = 2 * ow; w < std::min<int64_t>(2 * ow + 2, 9); ++w) {
              const float e = v[plane * 63 + h * 9 + w];
              if (e > best || std::isnan(e)) {
                best = e;
                at = h * 9 + w;
              }
            }
          const size_t o = (plane * Ho + oh) * Wo + ow;
          if (std::isnan(best)) EXPECT_TRUE(std::isnan(y[o])) << o;
          else EXPECT_EQ(y[o], best) << o;
          EXPECT_EQ(ix[o], at) << o;
        }
  }
}

// image [1, 16, 16] -> conv1 -> relu1 -> pool1 -> conv2 -> relu2 -> pool2 -> flatten -> fc1 -> relu3 -> fc2
Graph two_conv_cnn() {
  Graph g;
  const std::vector<NodeId> ids{
      g.add_node("Input", "image", {{"shape", std::vector<int64_t>{1, 16, 16}}}),
      g.add_node("Conv2d", "conv1",
                 {{"in_channels", int64_t{1}}, {"out_channels", int64_t{8}}, {"padding", std::vector<int64_t>{1, 1}}}),
      g.add_node("ReLU", "relu1"),
      g.add_node("MaxPool2d", "pool1", {{"kernel_size", std::vector<int64_t>{2, 2}}}),
      g.add_node("Conv2d", "conv2",
                 {{"in_channels", int64_t{8}}, {"out_channels", int64_t{16}}, {"padding", std::vector<int64_t>{1, 1}}}),
      g.add_node("ReLU", "relu2"),
      g.add_node("MaxPool2d", "pool2", {{"kernel_size", std::vector<int64_t>{2, 2}}}),
      g.add_node("Flatten", "flatten"),
      g.add_node("Linear", "fc1", {{"in_features", int64_t{256}}, {"out_features", int64_t{32}}}),
      g.add_node("ReLU", "relu3"),
      g.add_node("Linear", "fc2", {{"in_features", int64_t{32}}, {"out_features", int64_t{5}}}),
      g.add_node("Output", "out")};
  for (size_t i = 0; i + 1 < ids.size(); ++i) g.connect({ids[i], 0}, {ids[i + 1], 0});
  manual_seed(43);
  graph::GraphModule m(g);
  graph::store_state(g, m.state_dict());
  return g;
}

TEST(QuantInt8Chain, U8OutputIsTheRoundTripWithinOneStep) {
  const Graph g = two_conv_cnn();
  Calibrator cal(g, {Calibration::minmax, {}});
  for (int b = 0; b < 4; ++b) cal.observe(normal({32, 1, 16, 16}, 0, 1));
  auto m = cal.convert();
  ASSERT_EQ(m->u8_chained_layers(), (std::vector<std::string>{"conv1", "conv2", "fc1"}));
  const auto& layers = m->layers();
  ASSERT_EQ(layers.size(), 4u);
  Pool2dParams pool;
  pool.kernel[0] = pool.kernel[1] = pool.stride[0] = pool.stride[1] = 2;
  const Tensor x = normal({16, 1, 16, 16}, 0, 1);
  // conv1 -> (relu) -> pool1, as conv2's u8 input, both ways.
  const ActivationQParams next = layers[1]->input_qparams();
  const Tensor chained = quantized_max_pool2d(layers[0]->run(x, &next), pool);
  const Tensor round_trip = quantize_activation(max_pool2d(layers[0]->run(x, nullptr), pool), next);
  ASSERT_EQ(chained.shape(), round_trip.shape());
  const auto a = chained.to_vector<uint8_t>(), b = round_trip.to_vector<uint8_t>();
  size_t differ = 0, nonzero = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_LE(std::abs(int{a[i]} - int{b[i]}), 1) << i;
    differ += a[i] != b[i];
    nonzero += a[i] != next.zero_point;
  }
  EXPECT_LE(differ, a.size() / 100 + 1);  // only float ties round differently
  EXPECT_GT(nonzero, a.size() / 4);       // the values are not all clipped to one

  // The whole model: the u8 chain against f32 between every layer.
  const auto on = m->forward(x).to_vector<float>();
  m->set_u8_chain(false);
  const auto off = m->forward(x).to_vector<float>();
  m->set_u8_chain(true);
  ASSERT_EQ(on.size(), off.size());
  double err = 0, ref = 0;
  for (size_t i = 0; i < on.size(); ++i) {
    err += (on[i] - off[i]) * (on[i] - off[i]);
    ref += off[i] * off[i];
  }
  EXPECT_LT(std::sqrt(err / ref), 0.01);  // a rare one-step difference, carried through two layers
  EXPECT_EQ(m->forward(x).to_vector<float>(), on);  // the cached plans and weights give the same again
}

TEST(QuantInt8Chain, AKeptFloatLayerEndsTheChain) {
  const Graph g = two_conv_cnn();
  Calibrator cal(g, {Calibration::minmax, {"conv2"}});
  cal.observe(normal({8, 1, 16, 16}, 0, 1));
  auto m = cal.convert();
  EXPECT_EQ(m->u8_chained_layers(), (std::vector<std::string>{"fc1"}));  // conv1 feeds the float conv2
  const Tensor x = normal({4, 1, 16, 16}, 0, 1);
  const auto on = m->forward(x).to_vector<float>();
  m->set_u8_chain(false);
  const auto off = m->forward(x).to_vector<float>();
  ASSERT_EQ(on.size(), off.size());
  for (size_t i = 0; i < on.size(); ++i) EXPECT_NEAR(on[i], off[i], 0.05 * (std::fabs(off[i]) + 0.1)) << i;
}

}  // namespace
}  // namespace kiln::quant
