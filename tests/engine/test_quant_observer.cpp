// engine/quant observers (observer.h, histogram.h) and schemes (scheme.h): ranges of known
// data, bounded streaming histograms, percentile and entropy calibration, and bad input
// (NaN activations, empty calibration, all-zero weights).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/error.h"
#include "engine/core/random.h"
#include "engine/quant/observer.h"
#include "engine/quant/scheme.h"
#include "tests/common/error_of.h"

namespace kiln::quant {
namespace {

Tensor vec(const std::vector<float>& v) { return Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())}); }

using kiln::test::error_of;

TEST(QuantObserver, MinMaxAndMovingAverage) {
  MinMaxObserver mm("conv1");
  mm.observe(vec({-1, 2, 0.5f}));
  mm.observe(vec({3, -0.5f}));
  EXPECT_EQ(mm.range(), (Range{-1, 3}));
  EXPECT_EQ(mm.batches(), 2);
  MovingAverageMinMaxObserver ma("fc1", 0.5);
  ma.observe(vec({0, 4}));
  ma.observe(vec({-2, 2}));
  EXPECT_EQ(ma.range(), (Range{-1, 3}));  // 0 + 0.5 (-2 - 0), 4 + 0.5 (2 - 4)
  EXPECT_THROW(MovingAverageMinMaxObserver("x", 0), ValueError);
}

TEST(QuantObserver, BadInputNamesTheLayer) {
  MinMaxObserver mm("conv2");
  mm.observe(vec({1, 2}));
  const std::string nan = error_of([&] { mm.observe(vec({0, NAN})); });
  EXPECT_NE(nan.find("layer 'conv2': activation holds NaN (calibration batch 2, element 1)"), std::string::npos) << nan;
  EXPECT_EQ(mm.range(), (Range{1, 2}));  // the bad batch left it unchanged
  for (Calibration c : {Calibration::minmax, Calibration::percentile, Calibration::entropy}) {
    auto empty = make_observer("fc2", c);
    empty->observe(Tensor::zeros({0, 10}));
    const std::string e = error_of([&] { empty->range(); });
    EXPECT_NE(e.find("layer 'fc2': no calibration data observed (1 batches; empty calibration set?)"),
              std::string::npos)
        << e;
    EXPECT_NE(error_of([&] { empty->observe(vec({INFINITY})); }).find("holds Inf"), std::string::npos);
  }
  EXPECT_THROW(MinMaxObserver("x").observe(Tensor::zeros({2}, DType::i64)), DTypeError);
  EXPECT_THROW(parse_calibration("kl"), ValueError);
  EXPECT_EQ(parse_calibration("entropy"), Calibration::entropy);
}

// Thousands of batches with a growing range: the bin count never changes, counts are exact,
// and quantiles stay within one (final) bin width of the truth.
TEST(QuantHistogram, StreamingIsBoundedAndExact) {
  Histogram h(512);
  std::vector<float> all;
  for (int b = 0; b < 2000; ++b) {
    const float s = 1.0f + static_cast<float>(b) * 0.01f;  // the range keeps growing
    std::vector<float> v = {-s, 0.25f * s, 0.5f * s, s};
    h.add(v.data(), 4);
    all.insert(all.end(), v.begin(), v.end());
  }
  EXPECT_EQ(h.bins(), 512);
  EXPECT_EQ(h.total(), 8000);
  int64_t sum = 0;
  for (int64_t c : h.counts()) sum += c;
  EXPECT_EQ(sum, 8000);
  EXPECT_LE(h.lo(), h.min_seen());
  EXPECT_GT(h.hi(), h.max_seen());
  EXPECT_FLOAT_EQ(h.min_seen(), -20.99f);
  EXPECT_FLOAT_EQ(h.max_seen(), 20.99f);
  std::sort(all.begin(), all.end());
  for (double q : {0.1, 0.5, 0.9}) EXPECT_NEAR(h.quantile(q), all[static_cast<size_t>(q * 8000)], h.width()) << q;
  EXPECT_EQ(h.quantile(1.0), h.max_seen());
}

TEST(QuantHistogram, PercentileClipsOutliers) {
  manual_seed(11);
  HistogramObserver obs("relu1", Calibration::percentile, 2048, 99.9);
  for (int b = 0; b < 20; ++b) obs.observe(uniform({1000}, 0, 1));
  obs.observe(vec({50}));  // one outlier among 20001 values
  const Range r = obs.range();
  EXPECT_NEAR(r.min, 0.0, 0.01);
  EXPECT_NEAR(r.max, 0.999, 0.03);
  MinMaxObserver mm("relu1");
  mm.observe(vec({50}));
  EXPECT_EQ(mm.range().max, 50);
}

// Post-ReLU-like data: a half-normal body with rare large outliers. KL picks a threshold well
// inside the outliers and beyond the body's bulk (TensorRT's behaviour).
TEST(QuantHistogram, EntropyClipsTheTailNotTheBody) {
  manual_seed(12);
  HistogramObserver obs("relu2", Calibration::entropy);
  for (int b = 0; b < 10; ++b) {
    std::vector<float> v = normal({4000}, 0, 1).to_vector<float>();
    for (float& x : v) x = std::fabs(x);
    v[0] = 40.0f;  // outliers
    obs.observe(vec(v));
  }
  const Range r = obs.range();
  EXPECT_NEAR(r.min, 0.0, 1e-3);  // the smallest value seen
  EXPECT_GT(r.max, 2.5);
  EXPECT_LT(r.max, 20.0);
  // Signed data: the window keeps 0 inside and clips both tails.
  HistogramObserver signed_obs("conv3", Calibration::entropy);
  for (int b = 0; b < 10; ++b) {
    std::vector<float> v = normal({4000}, 0, 1).to_vector<float>();
    v[0] = -60.0f;
    v[1] = 60.0f;
    signed_obs.observe(vec(v));
  }
  const Range s = signed_obs.range();
  EXPECT_LT(s.min, -2.5);
  EXPECT_GT(s.max, 2.5);
  EXPECT_GT(s.min, -30.0);
  EXPECT_LT(s.max, 30.0);
  EXPECT_THROW(entropy_range(Histogram(256), 256), ValueError);  // empty
}

TEST(QuantScheme, ActivationZeroIsExact) {
  for (Range r : {Range{-1.3, 2.7}, Range{0.2, 5}, Range{-4, -1}, Range{0, 6.1}}) {
    const ActivationQParams p = activation_qparams(r, "x");
    EXPECT_GE(p.zero_point, 0);
    EXPECT_LE(p.zero_point, 255);
    const Tensor q = quantize_activation(vec({0.0f, static_cast<float>(r.min), static_cast<float>(r.max)}), p);
    const auto d = dequantize_activation(q, p).to_vector<float>();
    EXPECT_EQ(d[0], 0.0f) << r.min << " " << r.max;
    EXPECT_NEAR(d[1], r.min, p.scale / 2 + 1e-6);
    EXPECT_NEAR(d[2], r.max, p.scale / 2 + 1e-6);
  }
  EXPECT_EQ(activation_qparams({0, 0}, "dead"), (ActivationQParams{1.0f, 0}));
  EXPECT_FLOAT_EQ(activation_qparams({0, 2.55}, "relu").scale, 0.01f);
  EXPECT_EQ(activation_qparams({0, 2.55}, "relu").zero_point, 0);
  EXPECT_EQ(activation_qparams({-2.55, 0}, "neg").zero_point, 255);
  EXPECT_NE(error_of([] { activation_qparams({2, 1}, "fc1"); }).find("layer 'fc1': range [2, 1] is inverted"),
            std::string::npos);
}

TEST(QuantScheme, WeightsPerChannelSymmetricAndBias) {
  const Tensor w = Tensor::from_vector<float>({1.27f, -0.5f, 0, 0, 0, 0, -2.54f, 1}, {4, 2});
  const QuantizedWeight qw = quantize_weight(w, "conv1");
  EXPECT_EQ(qw.q.dtype(), DType::i8);
  ASSERT_EQ(qw.scales.size(), 4u);
  EXPECT_FLOAT_EQ(qw.scales[0], 0.01f);
  EXPECT_EQ(qw.scales[1], 1.0f);  // all-zero channel: scale 1, no division by zero
  EXPECT_EQ(qw.scales[2], 1.0f);
  EXPECT_FLOAT_EQ(qw.scales[3], 0.02f);
  EXPECT_EQ(qw.q.to_vector<int8_t>(), (std::vector<int8_t>{127, -50, 0, 0, 0, 0, -127, 50}));
  const auto d = dequantize_weight(qw).to_vector<float>();
  EXPECT_EQ(d[2], 0.0f);
  EXPECT_NEAR(d[7], 1.0f, 1e-6);
  const Tensor qb = quantize_bias(vec({0.1f, 0, -0.3f, 2}), 0.5f, qw.scales, "conv1");
  EXPECT_EQ(qb.dtype(), DType::i32);
  EXPECT_EQ(qb.to_vector<int32_t>(), (std::vector<int32_t>{20, 0, -1, 200}));  // scale 0.005, 0.5, 0.5, 0.01
  const Tensor zeros = Tensor::zeros({3, 2, 3, 3});
  const QuantizedWeight qz = quantize_weight(zeros, "conv_dead");
  EXPECT_EQ(qz.scales, (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(dequantize_weight(qz).to_vector<float>(), zeros.to_vector<float>());
  EXPECT_NE(error_of([] { quantize_weight(vec({1, NAN}), "fc3"); }).find("layer 'fc3': weight of output channel 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { quantize_bias(vec({1}), 0.5f, qw.scales, "fc4"); })
                .find("layer 'fc4': bias has 1 elements but the weight has 4 output channels"),
            std::string::npos);
  EXPECT_NE(error_of([&] { quantize_bias(vec({1e9f}), 1e-3f, {1e-6f}, "fc5"); }).find("does not fit s32"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln::quant
