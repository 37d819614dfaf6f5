// Int8 conv2d and linear on the CPU (engine/core/qops.h -> backends/cpu/cpu_qconv.cpp, oneDNN):
// against a reference of the same quantized arithmetic (backend.h's QuantizedParams) computed
// here in double: s32 accumulation of (q_x - zp) * q_w + q_bias, per-channel output scales,
// ReLU, and requantization to u8 (ties to even).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/core/random.h"
#include "engine/core/qops.h"

namespace kiln::quant {
namespace {

Tensor random_u8(const Shape& s) { return uniform(s, 0, 255.99).to(DType::u8); }
Tensor random_i8(const Shape& s) { return uniform(s, -127.99, 127.99).to(DType::i8); }  // truncates toward 0

QuantizedParams params(int64_t cout, bool relu) {
  QuantizedParams q;
  q.in_scale = 0.02f;
  q.in_zero_point = 37;
  for (int64_t c = 0; c < cout; ++c) q.weight_scales.push_back(0.001f * static_cast<float>(c + 1));
  q.relu = relu;
  q.out_scale = 0.05f;
  q.out_zero_point = 11;
  return q;
}

// The reference conv: x u8 [N, C, H, W], w i8 [O, C/G, kH, kW] -> the real output (before u8 requantization).
std::vector<double> reference_conv(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p,
                                   const QuantizedParams& q, int64_t Ho, int64_t Wo) {
  const auto xv = x.to_vector<uint8_t>();
  const auto wv = w.to_vector<int8_t>();
  const auto bv = b.defined() ? b.to_vector<int32_t>() : std::vector<int32_t>(w.size(0), 0);
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), O = w.size(0), kH = w.size(2),
                kW = w.size(3), Cg = C / p.groups, Og = O / p.groups;
  std::vector<double> y(static_cast<size_t>(N * O * Ho * Wo));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < Ho; ++oh)
        for (int64_t ow = 0; ow < Wo; ++ow) {
          int64_t acc = bv[o];
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t i = 0; i < kH; ++i)
              for (int64_t j = 0; j < kW; ++j) {
                const int64_t ih = oh * p.stride[0] - p.padding[0] + i * p.dilation[0];
                const int64_t iw = ow * p.stride[1] - p.padding[1] + j * p.dilation[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;  // padding is real 0 = zero point
                const int64_t xi = ((n * C + o / Og * Cg + c) * H + ih) * W + iw;
                acc += (int64_t{xv[xi]} - q.in_zero_point) * wv[((o * Cg + c) * kH + i) * kW + j];
              }
          double r = static_cast<double>(q.in_scale * q.weight_scales[o]) * static_cast<double>(acc);
          if (q.relu) r = std::max(r, 0.0);
          y[((n * O + o) * Ho + oh) * Wo + ow] = r;
        }
  return y;
}

void expect_matches(const Tensor& got_f32, const Tensor& got_u8, const std::vector<double>& ref,
                    const QuantizedParams& q) {
  const auto f = got_f32.to_vector<float>();
  const auto u = got_u8.to_vector<uint8_t>();
  ASSERT_EQ(f.size(), ref.size());
  size_t off_by_one = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    EXPECT_NEAR(f[i], ref[i], 1e-5 * std::max(1.0, std::fabs(ref[i]))) << i;
    const double r = std::clamp(std::nearbyint(ref[i] / q.out_scale) + q.out_zero_point, 0.0, 255.0);
    const double d = std::fabs(u[i] - r);
    EXPECT_LE(d, 1.0) << i;  // a tie may round either way in float
    off_by_one += d != 0;
  }
  EXPECT_LE(off_by_one, ref.size() / 100 + 1);
}

TEST(CpuQuantized, Conv2dMatchesTheQuantizedArithmetic) {
  manual_seed(21);
  struct Case {
    Shape x, w;
    Conv2dParams p;
    bool bias, relu;
  };
  Conv2dParams pad1;
  pad1.padding[0] = pad1.padding[1] = 1;
  Conv2dParams strided;
  strided.stride[0] = strided.stride[1] = 2;
  strided.groups = 2;
  strided.padding[1] = 1;
  for (const Case& c : {Case{{2, 3, 9, 9}, {8, 3, 3, 3}, pad1, true, true},
                        Case{{3, 4, 8, 7}, {6, 2, 3, 2}, strided, false, false},
                        Case{{1, 32, 14, 14}, {64, 32, 3, 3}, pad1, true, false}}) {
    const Tensor x = random_u8(c.x), w = random_i8(c.w);
    const Tensor b = c.bias ? uniform({c.w[0]}, -5000, 5000).to(DType::i32) : Tensor();
    const QuantizedParams q = params(c.w[0], c.relu);
    const Tensor yf = quantized_conv2d(x, w, b, c.p, q, DType::f32);
    const Tensor yu = quantized_conv2d(x, w, b, c.p, q, DType::u8);
    ASSERT_EQ(yf.shape(), yu.shape());
    expect_matches(yf, yu, reference_conv(x, w, b, c.p, q, yf.size(2), yf.size(3)), q);
  }
}

TEST(CpuQuantized, LinearMatchesTheQuantizedArithmetic) {
  manual_seed(22);
  for (bool relu : {false, true}) {
    const Tensor x = random_u8({2, 3, 40}), w = random_i8({10, 40});
    const Tensor b = uniform({10}, -3000, 3000).to(DType::i32);
    const QuantizedParams q = params(10, relu);
    const Tensor yf = quantized_linear(x, w, b, q, DType::f32), yu = quantized_linear(x, w, b, q, DType::u8);
    EXPECT_EQ(yf.shape(), (Shape{2, 3, 10}));
    // The reference: the linear layer as the 1x1 convolution of [rows, K, 1, 1].
    const auto ref = reference_conv(x.reshape({6, 40, 1, 1}), w.reshape({10, 40, 1, 1}), b, Conv2dParams{}, q, 1, 1);
    expect_matches(yf, yu, ref, q);
  }
}

TEST(CpuQuantized, BadInputIsAClearError) {
  EXPECT_TRUE(int8_supported(Device()));
  const Tensor x = random_u8({1, 4}), w = random_i8({3, 4});
  QuantizedParams q = params(3, false);
  q.in_zero_point = 300;
  EXPECT_THROW(quantized_linear(x, w, Tensor(), q, DType::f32), ValueError);
  EXPECT_THROW(quantized_linear(x, w, Tensor(), params(2, false), DType::f32), ValueError);  // 2 scales, 3 channels
  EXPECT_THROW(quantized_linear(x.to(DType::f32), w, Tensor(), params(3, false), DType::f32), DTypeError);
  EXPECT_THROW(quantized_linear(x, w, Tensor(), params(3, false), DType::i8), DTypeError);
  EXPECT_THROW(quantized_linear(random_u8({1, 5}), w, Tensor(), params(3, false), DType::f32), ShapeError);
  EXPECT_THROW(quantized_linear(x, w, Tensor::zeros({3}, DType::f32), params(3, false), DType::f32), ShapeError);
  EXPECT_THROW(quantized_conv2d(random_u8({1, 4, 2, 2}), random_i8({3, 4, 3, 3}), Tensor(), Conv2dParams{},
                                params(3, false), DType::f32),
               ShapeError);
}

}  // namespace
}  // namespace kiln::quant
