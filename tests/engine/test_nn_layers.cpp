// Layers: forward values computed by hand, BatchNorm running statistics, Dropout,
// and gradchecks (f64) of Linear, Conv2d, ConvTranspose2d, BatchNorm and LayerNorm.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/engine/test_util.h"
#include "engine/autograd/gradcheck.h"
#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/nn/nn.h"

using namespace kiln;
using namespace kiln::test;
using namespace kiln::nn;

namespace {

Tensor f32(std::vector<float> v, const Shape& s) { return Tensor::from_vector(v, s); }
Tensor f64(std::vector<double> v, const Shape& s) { return Tensor::from_vector(v, s); }

}  // namespace

TEST(NnLayers, LinearComputesXWtPlusB) {
  Linear lin(2, 3);
  lin.load_state_dict({{"weight", f32({1, 2, 3, 4, 5, 6}, {3, 2})}, {"bias", f32({0.1f, 0.2f, 0.3f}, {3})}});
  expect_values(lin(f32({1, 1, 0, -1}, {2, 2})), {3.1, 7.2, 11.3, -1.9, -3.8, -5.7});
  EXPECT_EQ(lin(Tensor::zeros({4, 5, 2})).shape(), (Shape{4, 5, 3}));
  EXPECT_THROW(lin(Tensor::zeros({4, 3})), ShapeError);
}

TEST(NnLayers, LinearAndConvGradcheck) {
  expect_gradcheck([](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); },
                   {randn64({4, 3}, 1), randn64({2, 3}, 2), randn64({2}, 3)});
  Conv2dParams p;
  p.stride[0] = 2, p.padding[0] = 1, p.padding[1] = 1;
  expect_gradcheck([&](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], in[2], p); },
                   {randn64({2, 2, 5, 4}, 4), randn64({3, 2, 3, 3}, 5), randn64({3}, 6)});
  // The modules, in f64, with respect to their input.
  Linear lin(3, 2);
  lin.to(DType::f64);
  expect_gradcheck([&](const std::vector<Tensor>& in) { return lin(in[0]); }, {randn64({4, 3}, 7)});
  Conv2d conv(4, 4, 3, 1, 1, 1, /*groups=*/2);
  conv.to(DType::f64);
  expect_gradcheck([&](const std::vector<Tensor>& in) { return conv(in[0]); }, {randn64({1, 4, 4, 4}, 8)});
}

TEST(NnLayers, Conv2dShapesAndValues) {
  Conv2d conv(1, 1, 2);
  conv.load_state_dict({{"weight", Tensor::ones({1, 1, 2, 2})}, {"bias", f32({0.5f}, {1})}});
  Tensor x = Tensor::arange(0, 9, 1, DType::f32).reshape({1, 1, 3, 3});
  expect_values(conv(x), {8.5, 12.5, 20.5, 24.5});
  Conv2d strided(3, 8, {3, 5}, 2, {1, 2});
  EXPECT_EQ(strided.weight.shape(), (Shape{8, 3, 3, 5}));
  EXPECT_EQ(strided(Tensor::zeros({2, 3, 9, 9})).shape(), (Shape{2, 8, 5, 5}));
  EXPECT_THROW(Conv2d(3, 4, 3, 1, 0, 1, 2), ValueError);  // 3 channels in 2 groups
  EXPECT_FALSE(Conv2d(2, 2, 1, 1, 0, 1, 1, false).bias.defined());
}

// A 2x2 kernel of ones with stride 2 copies each input pixel into its own 2x2 block.
TEST(NnLayers, ConvTranspose2dShapesValuesAndBadInput) {
  ConvTranspose2d up(1, 1, 2, 2);
  up.load_state_dict({{"weight", Tensor::ones({1, 1, 2, 2})}, {"bias", f32({0.5f}, {1})}});
  expect_values(up(f32({1, 2, 3, 4}, {1, 1, 2, 2})),
                {1.5, 1.5, 2.5, 2.5, 1.5, 1.5, 2.5, 2.5, 3.5, 3.5, 4.5, 4.5, 3.5, 3.5, 4.5, 4.5});
  // PyTorch's shapes: weight [in, out / groups, kH, kW]; Ho = (H - 1) s - 2 p + d (k - 1) + output_padding + 1.
  ConvTranspose2d t(4, 6, {3, 2}, 2, 1, {1, 0}, /*groups=*/2, true, {1, 2});
  EXPECT_EQ(t.weight.shape(), (Shape{4, 3, 3, 2}));
  EXPECT_EQ(t(Tensor::zeros({2, 4, 5, 7})).shape(), (Shape{2, 6, 10, 13}));
  EXPECT_EQ(t.extra_repr(), "4, 6, kernel_size=(3, 2), stride=(2, 2), padding=(1, 1), dilation=(1, 2), "
                            "output_padding=(1, 0), groups=2");
  t.to(DType::f64);
  expect_gradcheck([&](const std::vector<Tensor>& in) { return t(in[0]); }, {randn64({1, 4, 2, 3}, 9)});
  EXPECT_THROW(ConvTranspose2d(4, 3, 3, 1, 0, 0, 2), ValueError);  // 3 output channels in 2 groups
  EXPECT_THROW(ConvTranspose2d(2, 2, 3, 2, 0, 2), ValueError);     // output_padding not below the stride
  EXPECT_THROW(t(Tensor::zeros({1, 3, 5, 5}, DType::f64)), ShapeError);  // 3 channels, the weight takes 4
  ConvTranspose2dParams p;
  p.padding[0] = 2;
  EXPECT_THROW(conv_transpose2d(Tensor::zeros({1, 1, 1, 3}), Tensor::zeros({1, 1, 3, 3}), Tensor(), p), ShapeError);
  EXPECT_THROW(conv_transpose2d(Tensor::zeros({1, 1, 3, 3}), Tensor::zeros({1, 1, 3, 3}), Tensor::zeros({2}), {}),
               ShapeError);  // a bias of 2 for 1 output channel
}

TEST(NnLayers, BatchNormTrainingUsesBatchStatsAndUpdatesRunningStats) {
  BatchNorm2d bn(2);
  // [N=2, C=2, H=1, W=2]; channel 0: 1, 2, 3, 4; channel 1: 0, 0, 2, 6.
  Tensor x = f32({1, 2, 0, 0, 3, 4, 2, 6}, {2, 2, 1, 2});
  Tensor y = bn(x);
  double eps = 1e-5;
  // Normalization by the biased variance: 1.25 (channel 0) and 6 (channel 1).
  double s0 = 1 / std::sqrt(1.25 + eps), s1 = 1 / std::sqrt(6.0 + eps);
  expect_values(y, {-1.5 * s0, -0.5 * s0, -2 * s1, -2 * s1, 0.5 * s0, 1.5 * s0, 0 * s1, 4 * s1});
  // Running stats: 0.9 * init + 0.1 * batch, with the unbiased variance 5/3 and 8.
  expect_values(bn.running_mean, {0.25, 0.2});
  expect_values(bn.running_var, {0.9 + 0.1 * 5.0 / 3.0, 0.9 + 0.1 * 8.0});
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  // Evaluation normalizes by the running stats and changes nothing.
  bn.eval();
  Tensor ye = bn(x);
  double rv0 = 0.9 + 0.1 * 5.0 / 3.0;
  EXPECT_NEAR(ye.to_vector<float>()[0], (1 - 0.25) / std::sqrt(rv0 + eps), 1e-5);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  expect_values(bn.running_mean, {0.25, 0.2});
}

TEST(NnLayers, BatchNormCumulativeAverageAndUntrackedStats) {
  BatchNorm1d bn(1, 1e-5, std::nullopt);
  bn(f32({1, 3}, {2, 1}));
  bn(f32({5, 7, 9}, {3, 1}));
  expect_values(bn.running_mean, {(2.0 + 7.0) / 2});  // factor 1/num_batches_tracked
  expect_values(bn.running_var, {(2.0 + 4.0) / 2});
  BatchNorm1d untracked(2, 1e-5, 0.1, /*affine=*/false, /*track_running_stats=*/false);
  EXPECT_TRUE(untracked.state_dict().empty());
  untracked.eval();  // still batch statistics
  expect_values(untracked(f32({1, 10, 3, 30}, {2, 2})), {-1, -1, 1, 1}, 1e-4);
  // [N, C, L] input; wrong rank; single value per channel in training.
  EXPECT_EQ(bn(Tensor::ones({2, 1, 5})).shape(), (Shape{2, 1, 5}));
  EXPECT_THROW(bn(Tensor::ones({2, 1, 2, 2})), ShapeError);
  EXPECT_THROW(BatchNorm2d(3)(Tensor::ones({2, 3, 4})), ShapeError);
  EXPECT_THROW(bn(Tensor::ones({1, 1})), ValueError);
  EXPECT_THROW(BatchNorm1d(3)(Tensor::ones({4, 2})), ShapeError);
}

TEST(NnLayers, BatchNormAndLayerNormGradcheck) {
  namespace F = kiln::nn::functional;
  expect_gradcheck(
      [](const std::vector<Tensor>& in) { return F::batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], true); },
      {randn64({3, 2, 2, 2}, 11), randn64({2}, 12), randn64({2}, 13)});
  Tensor rm = f64({0.5, -0.5}, {2}), rv = f64({2.0, 0.5}, {2});
  expect_gradcheck([&](const std::vector<Tensor>& in) { return F::batch_norm(in[0], rm, rv, in[1], in[2], false); },
                   {randn64({4, 2}, 14), randn64({2}, 15), randn64({2}, 16)});
  expect_gradcheck([](const std::vector<Tensor>& in) { return F::layer_norm(in[0], {3, 4}, in[1], in[2]); },
                   {randn64({2, 3, 4}, 17), randn64({3, 4}, 18), randn64({3, 4}, 19)});
  BatchNorm2d bn(3);
  bn.to(DType::f64);
  expect_gradcheck([&](const std::vector<Tensor>& in) { return bn(in[0]); }, {randn64({2, 3, 2, 2}, 20)});
  LayerNorm ln(5);
  ln.to(DType::f64);
  expect_gradcheck([&](const std::vector<Tensor>& in) { return ln(in[0]); }, {randn64({3, 5}, 21)});
}

TEST(NnLayers, LayerNormNormalizesTheLastDims) {
  LayerNorm ln(3);
  double a = 1 / std::sqrt(2.0 / 3.0 + 1e-5), b = 2 / std::sqrt(8.0 / 3.0 + 1e-5);
  expect_values(ln(f32({1, 2, 3, 2, 4, 6}, {2, 3})), {-a, 0, a, -b, 0, b});
  EXPECT_EQ(ln.weight.shape(), (Shape{3}));
  EXPECT_THROW(ln(Tensor::ones({2, 4})), ShapeError);
  LayerNorm ln2({2, 2}, 1e-5, false);
  EXPECT_TRUE(ln2.parameters().empty());
  EXPECT_EQ(ln2(Tensor::ones({3, 2, 2})).shape(), (Shape{3, 2, 2}));
}

TEST(NnLayers, DropoutScalesInTrainingAndIsIdentityInEval) {
  manual_seed(0);
  Dropout drop(0.3);
  Tensor x = Tensor::ones({100000});
  std::vector<float> y = drop(x).to_vector<float>();
  int64_t zeros = 0;
  for (float v : y) {
    if (v == 0) ++zeros;
    else EXPECT_FLOAT_EQ(v, 1.0f / 0.7f);
  }
  EXPECT_NEAR(static_cast<double>(zeros) / 100000.0, 0.3, 0.01);
  // Same seed, same mask.
  manual_seed(7);
  std::vector<float> m1 = drop(x).to_vector<float>();
  manual_seed(7);
  EXPECT_EQ(drop(x).to_vector<float>(), m1);
  drop.eval();
  Tensor r = f32({1, -2, 3}, {3});
  EXPECT_EQ(drop(r).to_vector<float>(), r.to_vector<float>());
  EXPECT_EQ(Dropout(1.0)(r).to_vector<float>(), std::vector<float>(3, 0.0f));
  EXPECT_EQ(Dropout(0.0)(r).to_vector<float>(), r.to_vector<float>());
  EXPECT_THROW(Dropout(1.5), ValueError);
  // The gradient flows through the kept elements only, scaled by 1 / (1 - p).
  drop.train();
  Tensor leaf = Tensor::ones({1000}).requires_grad_(true);
  Tensor out = drop(leaf);
  sum(out).backward();
  EXPECT_EQ(leaf.grad().to_vector<float>(), out.detach().to_vector<float>());
}

TEST(NnLayers, PoolingLayers) {
  Tensor x = Tensor::arange(0, 16, 1, DType::f32).reshape({1, 1, 4, 4});
  expect_values(MaxPool2d(2)(x), {5, 7, 13, 15});
  expect_values(AvgPool2d(2)(x), {2.5, 4.5, 10.5, 12.5});
  expect_values(MaxPool2d(3, 1)(x), {10, 11, 14, 15});
  expect_values(AdaptiveAvgPool2d(1, 1)(x), {7.5});
  Tensor a = AdaptiveAvgPool2d(3, 3)(x);  // overlapping bins [0, 2), [1, 3), [2, 4)
  expect_values(a, {2.5, 3.5, 4.5, 6.5, 7.5, 8.5, 10.5, 11.5, 12.5});
  EXPECT_EQ(MaxPool2d(2, 2, 1)(Tensor::zeros({2, 3, 5, 5})).shape(), (Shape{2, 3, 3, 3}));
}

TEST(NnLayers, Activations) {
  Tensor x = f32({-2, 0, 1}, {3});
  expect_values(ReLU()(x), {0, 0, 1});
  expect_values(LeakyReLU()(x), {-0.02, 0, 1});
  expect_values(LeakyReLU(0.2)(x), {-0.4, 0, 1});
  expect_values(GELU()(x), {-2 * 0.0227501319481792, 0, 0.8413447460685429});
  expect_values(SiLU()(x), {-2 / (1 + std::exp(2.0)), 0, 1 / (1 + std::exp(-1.0))});
  expect_values(Sigmoid()(x), {1 / (1 + std::exp(2.0)), 0.5, 1 / (1 + std::exp(-1.0))});
  expect_values(Tanh()(x), {std::tanh(-2.0), 0, std::tanh(1.0)});
  double z = std::exp(-2.0) + 1 + std::exp(1.0);
  expect_values(Softmax(0)(x), {std::exp(-2.0) / z, 1 / z, std::exp(1.0) / z});
  expect_values(LogSoftmax(-1)(x), {-2 - std::log(z), -std::log(z), 1 - std::log(z)});
  EXPECT_EQ(Flatten()(Tensor::zeros({2, 3, 4, 5})).shape(), (Shape{2, 60}));
  EXPECT_EQ(Flatten(0, 1)(Tensor::zeros({2, 3, 4})).shape(), (Shape{6, 4}));
  EXPECT_EQ(Identity()(x).to_vector<float>(), x.to_vector<float>());
}

TEST(NnLayers, EmbeddingLooksUpRows) {
  Embedding emb(3, 2);
  emb.load_state_dict({{"weight", f32({0, 1, 10, 11, 20, 21}, {3, 2})}});
  Tensor idx = Tensor::from_vector(std::vector<int64_t>{0, 2, 1, 0}, {2, 2});
  Tensor y = emb(idx);
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2}));
  expect_values(y, {0, 1, 20, 21, 10, 11, 0, 1});
  sum(y).backward();
  expect_values(emb.weight.grad(), {2, 2, 1, 1, 1, 1});  // row 0 is used twice
  EXPECT_THROW(emb(f32({0}, {1})), DTypeError);
  EXPECT_THROW(emb(Tensor::from_vector(std::vector<int64_t>{3}, {1})), IndexError);
}
