// Initializers: PyTorch's default bounds and statistics, and seed reproducibility.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/error.h"
#include "engine/core/random.h"
#include "engine/nn/nn.h"

using namespace kiln;
using namespace kiln::nn;

namespace {

struct Stats {
  double min = 1e300, max = -1e300, mean = 0, std = 0;
};
Stats stats(const Tensor& t) {
  std::vector<double> v = t.to(DType::f64).contiguous().to_vector<double>();
  Stats s;
  for (double x : v) s.min = std::min(s.min, x), s.max = std::max(s.max, x), s.mean += x;
  s.mean /= static_cast<double>(v.size());
  for (double x : v) s.std += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(s.std / static_cast<double>(v.size() - 1));
  return s;
}

}  // namespace

TEST(NnInit, LinearDefaultsAreTorchResetParameters) {
  manual_seed(0);
  Linear lin(400, 300);
  double bound = 1 / std::sqrt(400.0);  // kaiming_uniform_(a = sqrt(5)) on fan_in 400
  Stats w = stats(lin.weight), b = stats(lin.bias);
  EXPECT_GE(w.min, -bound);
  EXPECT_LT(w.max, bound);
  EXPECT_GT(w.max, 0.99 * bound);  // the whole range is used
  EXPECT_NEAR(w.std, bound / std::sqrt(3.0), 0.01 * bound);
  EXPECT_NEAR(w.mean, 0, 0.01 * bound);
  EXPECT_GE(b.min, -bound);
  EXPECT_LT(b.max, bound);
}

TEST(NnInit, Conv2dBoundUsesFanInOfTheKernel) {
  Conv2d conv(8, 16, 3, 1, 0, 1, /*groups=*/2);  // fan_in = 8/2 * 3 * 3 = 36
  Stats w = stats(conv.weight), b = stats(conv.bias);
  EXPECT_GE(w.min, -1 / 6.0);
  EXPECT_LT(w.max, 1 / 6.0);
  EXPECT_GT(w.max, 0.9 / 6.0);
  EXPECT_LT(b.max, 1 / 6.0);
  EXPECT_GE(b.min, -1 / 6.0);
}

TEST(NnInit, SameSeedSameWeights) {
  manual_seed(42);
  Linear a(16, 8);
  Conv2d ca(3, 4, 3);
  manual_seed(42);
  Linear b(16, 8);
  Conv2d cb(3, 4, 3);
  EXPECT_EQ(a.weight.to_vector<float>(), b.weight.to_vector<float>());
  EXPECT_EQ(a.bias.to_vector<float>(), b.bias.to_vector<float>());
  EXPECT_EQ(ca.weight.to_vector<float>(), cb.weight.to_vector<float>());
  manual_seed(43);
  Linear c(16, 8);
  EXPECT_NE(a.weight.to_vector<float>(), c.weight.to_vector<float>());
  // An explicit generator leaves the default one alone.
  Generator g1(5), g2(5);
  Tensor t1 = Tensor::empty({10}), t2 = Tensor::empty({10});
  init::normal_(t1, 0, 1, &g1);
  init::normal_(t2, 0, 1, &g2);
  EXPECT_EQ(t1.to_vector<float>(), t2.to_vector<float>());
}

TEST(NnInit, EmbeddingAndNormDefaults) {
  manual_seed(1);
  Embedding emb(1000, 50);
  Stats e = stats(emb.weight);
  EXPECT_NEAR(e.mean, 0, 0.02);
  EXPECT_NEAR(e.std, 1, 0.02);
  BatchNorm2d bn(4);
  EXPECT_EQ(bn.weight.to_vector<float>(), std::vector<float>(4, 1.0f));
  EXPECT_EQ(bn.bias.to_vector<float>(), std::vector<float>(4, 0.0f));
  EXPECT_EQ(bn.running_var.to_vector<float>(), std::vector<float>(4, 1.0f));
  LayerNorm ln(6);
  EXPECT_EQ(ln.weight.to_vector<float>(), std::vector<float>(6, 1.0f));
}

TEST(NnInit, XavierAndKaiming) {
  manual_seed(3);
  Tensor t = Tensor::empty({200, 300});
  init::xavier_uniform_(t);
  double b = std::sqrt(6.0 / 500.0);
  Stats s = stats(t);
  EXPECT_GE(s.min, -b);
  EXPECT_LT(s.max, b);
  EXPECT_NEAR(s.std, b / std::sqrt(3.0), 0.01 * b);
  init::xavier_normal_(t, 2.0);
  EXPECT_NEAR(stats(t).std, 2.0 * std::sqrt(2.0 / 500.0), 0.01 * 2.0 * std::sqrt(2.0 / 500.0));
  init::kaiming_normal_(t, 0, init::FanMode::fan_in, "relu");
  EXPECT_NEAR(stats(t).std, std::sqrt(2.0 / 300.0), 0.01 * std::sqrt(2.0 / 300.0));
  init::kaiming_uniform_(t, 0, init::FanMode::fan_out, "relu");
  double kb = std::sqrt(3.0) * std::sqrt(2.0) / std::sqrt(200.0);
  s = stats(t);
  EXPECT_GE(s.min, -kb);
  EXPECT_LT(s.max, kb);
  EXPECT_GT(s.max, 0.99 * kb);
  init::constant_(t, 0.25);
  EXPECT_EQ(stats(t).min, 0.25);
  init::zeros_(t);
  EXPECT_EQ(stats(t).max, 0.0);
  init::ones_(t);
  EXPECT_EQ(stats(t).min, 1.0);
}

TEST(NnInit, GainAndFans) {
  EXPECT_DOUBLE_EQ(init::calculate_gain("linear"), 1.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain("relu"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(init::calculate_gain("tanh"), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain("leaky_relu"), std::sqrt(2.0 / (1 + 0.01 * 0.01)));
  EXPECT_DOUBLE_EQ(init::calculate_gain("leaky_relu", std::sqrt(5.0)), std::sqrt(1.0 / 3.0));
  EXPECT_DOUBLE_EQ(init::calculate_gain("selu"), 0.75);
  EXPECT_THROW(init::calculate_gain("swish"), ValueError);
  auto [fi, fo] = init::calculate_fan_in_and_fan_out(Tensor::empty({16, 8, 3, 5}));
  EXPECT_EQ(fi, 8 * 15);
  EXPECT_EQ(fo, 16 * 15);
  EXPECT_THROW(init::calculate_fan_in_and_fan_out(Tensor::empty({4})), ValueError);
}
