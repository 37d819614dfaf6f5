// Losses against values derived by hand / by PyTorch's formulas (written out here
// in doubles), and their gradchecks.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/engine/test_util.h"
#include "engine/autograd/gradcheck.h"
#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/nn/functional.h"

using namespace kiln;
using namespace kiln::test;
namespace F = kiln::nn::functional;
using F::Reduction;

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

namespace {

Tensor f32(std::vector<float> v, const Shape& s) { return Tensor::from_vector(v, s); }
Tensor i64(std::vector<int64_t> v) { return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}); }

// PyTorch's cross_entropy written out for logits rows [N][C]:
// (1 - ls) * nll + ls / C * smooth, both normalized by the summed weight of kept targets.
std::vector<double> ref_ce(const std::vector<std::vector<double>>& x, const std::vector<int64_t>& t,
                           const std::vector<double>& w, int64_t ignore, double ls, Reduction r) {
  size_t C = x[0].size();
  double nll_sum = 0, smooth_sum = 0, wsum = 0;
  std::vector<double> per;
  for (size_t i = 0; i < x.size(); ++i) {
    double m = *std::max_element(x[i].begin(), x[i].end()), z = 0;
    for (double v : x[i]) z += std::exp(v - m);
    double lse = m + std::log(z);
    if (t[i] == ignore) {
      per.push_back(0);
      continue;
    }
    double wt = w.empty() ? 1 : w[static_cast<size_t>(t[i])];
    double nll = -wt * (x[i][static_cast<size_t>(t[i])] - lse), smooth = 0;
    for (size_t c = 0; c < C; ++c) smooth -= (w.empty() ? 1 : w[c]) * (x[i][c] - lse);
    per.push_back((1 - ls) * nll + ls / static_cast<double>(C) * smooth);
    nll_sum += nll, smooth_sum += smooth, wsum += wt;
  }
  double total = (1 - ls) * nll_sum + ls / static_cast<double>(C) * smooth_sum;
  if (r == Reduction::none) return per;
  if (r == Reduction::sum) return {total};
  return {total / wsum};
}

Tensor logits_of(const std::vector<std::vector<double>>& x) {
  std::vector<float> flat;
  for (auto& row : x) flat.insert(flat.end(), row.begin(), row.end());
  return f32(flat, {static_cast<int64_t>(x.size()), static_cast<int64_t>(x[0].size())});
}

const std::vector<std::vector<double>> kLogits{{1, 2, 3}, {1, 0, -1}, {0.5, -0.5, 2}, {-1, 3, 0}};

}  // namespace

TEST(LossCrossEntropy, KnownPyTorchValues) {
  // torch.nn.functional.cross_entropy(torch.tensor([[1., 2., 3.]]), torch.tensor([2])) = 0.4076059644
  expect_values(F::cross_entropy(f32({1, 2, 3}, {1, 3}), i64({2})), {0.4076059644});
  // ... label_smoothing=0.1: 0.9 * 0.4076 + 0.1 / 3 * (2.4076 + 1.4076 + 0.4076) = 0.5076059644
  expect_values(F::cross_entropy(f32({1, 2, 3}, {1, 3}), i64({2}), Tensor(), -100, Reduction::mean, 0.1),
                {0.5076059644});
  // Unbatched: logits [C], 0-d target.
  expect_values(F::cross_entropy(f32({1, 2, 3}, {3}), Tensor::scalar(2, DType::i64)), {0.4076059644});
}

TEST(LossCrossEntropy, ReductionsMatchTheFormula) {
  std::vector<int64_t> t{2, 0, 1, 1};
  Tensor x = logits_of(kLogits), target = i64(t);
  for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
    Tensor out = F::cross_entropy(x, target, Tensor(), -100, r);
    expect_values(out, ref_ce(kLogits, t, {}, -100, 0, r));
  }
  EXPECT_EQ(F::cross_entropy(x, target, Tensor(), -100, Reduction::none).shape(), (Shape{4}));
  EXPECT_EQ(F::cross_entropy(x, target).dim(), 0);
}

TEST(LossCrossEntropy, IgnoreIndexAndClassWeights) {
  std::vector<int64_t> t{2, -100, 1, 0};
  std::vector<double> w{0.5, 2.0, 1.5};
  Tensor x = logits_of(kLogits), target = i64(t), weight = f32({0.5f, 2.0f, 1.5f}, {3});
  for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
    expect_values(F::cross_entropy(x, target, Tensor(), -100, r), ref_ce(kLogits, t, {}, -100, 0, r));
    expect_values(F::cross_entropy(x, target, weight, -100, r), ref_ce(kLogits, t, w, -100, 0, r));
  }
  // Mean divides by the summed weight of the kept targets: (1.5 + 2 + 0.5), not by N.
  double sum = ref_ce(kLogits, t, w, -100, 0, Reduction::sum)[0];
  expect_values(F::cross_entropy(x, target, weight), {sum / 4.0});
  // A custom ignore_index.
  std::vector<int64_t> t2{2, 1, 1, 0};
  expect_values(F::cross_entropy(x, i64(t2), Tensor(), 1), ref_ce(kLogits, t2, {}, 1, 0, Reduction::mean));
}

TEST(LossCrossEntropy, LabelSmoothingWithWeightsAndIgnoreIndex) {
  std::vector<int64_t> t{2, -100, 1, 0};
  std::vector<double> w{0.5, 2.0, 1.5};
  Tensor x = logits_of(kLogits), target = i64(t), weight = f32({0.5f, 2.0f, 1.5f}, {3});
  for (double ls : {0.1, 0.3, 1.0})
    for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
      expect_values(F::cross_entropy(x, target, weight, -100, r, ls), ref_ce(kLogits, t, w, -100, ls, r));
      expect_values(F::cross_entropy(x, target, Tensor(), -100, r, ls), ref_ce(kLogits, t, {}, -100, ls, r));
    }
  EXPECT_THROW(F::cross_entropy(x, target, Tensor(), -100, Reduction::mean, 1.5), ValueError);
}

TEST(LossCrossEntropy, SpatialDimensions) {
  // logits [N=2, C=3, d=2]: position (n, j) has logits x[n, :, j].
  Tensor x = f32({1, 2, 0, -1, 3, 0.5f, /**/ 2, 2, 1, 0, -1, 4}, {2, 3, 2});
  std::vector<std::vector<double>> rows{{1, 0, 3}, {2, -1, 0.5}, {2, 1, -1}, {2, 0, 4}};
  std::vector<int64_t> t{0, 2, 1, -100};
  Tensor target = Tensor::from_vector(t, {2, 2});
  expect_values(F::cross_entropy(x, target, Tensor(), -100, Reduction::mean, 0.2),
                ref_ce(rows, t, {}, -100, 0.2, Reduction::mean));
  Tensor none = F::cross_entropy(x, target, Tensor(), -100, Reduction::none);
  EXPECT_EQ(none.shape(), (Shape{2, 2}));
  expect_values(none, ref_ce(rows, t, {}, -100, 0, Reduction::none));
}

TEST(LossCrossEntropy, ProbabilityTargets) {
  Tensor x = logits_of(kLogits);
  std::vector<int64_t> t{2, 0, 1, 1};
  Tensor probs = one_hot(i64(t), 3);
  expect_values(F::cross_entropy(x, probs), ref_ce(kLogits, t, {}, -100, 0, Reduction::mean));
  // Label smoothing on probabilities mixes in the uniform distribution; with no weights it
  // equals the class-index form.
  expect_values(F::cross_entropy(x, probs, Tensor(), -100, Reduction::mean, 0.2),
                ref_ce(kLogits, t, {}, -100, 0.2, Reduction::mean));
}

TEST(LossCrossEntropy, BadTargetsNameTheClassAndCount) {
  Tensor x = logits_of(kLogits);
  try {
    F::cross_entropy(x, i64({0, 3, 1, 1}));
    FAIL() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_CONTAINS(e.what(), "target 3 is out of bounds for 3 classes");
  }
  EXPECT_THROW(F::cross_entropy(x, i64({0, -1, 1, 1})), IndexError);
  EXPECT_THROW(F::cross_entropy(x, i64({0, 1, 1})), ShapeError);
  EXPECT_THROW(F::cross_entropy(x, i64({0, 1, 1, 1}).to(DType::i32)), DTypeError);
  EXPECT_THROW(F::cross_entropy(x, i64({0, 1, 1, 1}), f32({1, 1}, {2})), ShapeError);
}

TEST(LossNll, MatchesCrossEntropyOnLogSoftmax) {
  Tensor x = logits_of(kLogits), target = i64({2, -100, 1, 0}), weight = f32({0.5f, 2.0f, 1.5f}, {3});
  for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none})
    expect_values(F::nll_loss(log_softmax(x, 1), target, weight, -100, r),
                  F::cross_entropy(x, target, weight, -100, r).to(DType::f64).to_vector<double>());
  // -x[i, t_i] directly.
  expect_values(F::nll_loss(f32({-1, -2, -3, -4}, {2, 2}), i64({1, 0})), {(2.0 + 3.0) / 2});
}

TEST(LossRegression, MseAndL1) {
  Tensor x = f32({1, 2, 3}, {3}), y = f32({1, 0, 5}, {3});
  expect_values(F::mse_loss(x, y), {8.0 / 3});
  expect_values(F::mse_loss(x, y, Reduction::sum), {8});
  expect_values(F::mse_loss(x, y, Reduction::none), {0, 4, 4});
  expect_values(F::l1_loss(x, y), {4.0 / 3});
  expect_values(F::l1_loss(x, y, Reduction::sum), {4});
}

TEST(LossBce, WithLogitsIsStableAndHandlesWeights) {
  Tensor x = f32({0.5f, -1, 100, -100}, {4}), y = f32({1, 0, 0, 1}, {4});
  double a = std::log1p(std::exp(-0.5)), b = std::log1p(std::exp(-1.0));
  expect_values(F::binary_cross_entropy_with_logits(x, y, Tensor(), Reduction::none), {a, b, 100, 100}, 1e-4);
  // torch: binary_cross_entropy_with_logits(tensor([0.5]), tensor([1.])) = 0.4740769841
  expect_values(F::binary_cross_entropy_with_logits(f32({0.5f}, {1}), f32({1}, {1})), {0.4740769841});
  // pos_weight multiplies the positive term; weight multiplies everything.
  Tensor pw = f32({2, 2, 2, 3}, {4}), w = f32({1, 0.5f, 1, 1}, {4});
  expect_values(F::binary_cross_entropy_with_logits(x, y, w, Reduction::none, pw), {2 * a, 0.5 * b, 100, 300},
                1e-4);
  expect_values(F::binary_cross_entropy_with_logits(x, y, Tensor(), Reduction::sum), {a + b + 200}, 1e-3);
  // Soft targets: max(x, 0) - x*y + log1p(exp(-|x|)).
  expect_values(F::binary_cross_entropy_with_logits(f32({2}, {1}), f32({0.25f}, {1})),
                {2 - 0.5 + std::log1p(std::exp(-2.0))});
  EXPECT_THROW(F::binary_cross_entropy_with_logits(x, f32({1}, {1})), ShapeError);
}

TEST(LossGradcheck, EveryLoss) {
  Tensor target = i64({2, -100, 1, 0});
  Tensor weight = Tensor::from_vector(std::vector<double>{0.5, 2.0, 1.5}, {3});
  for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
    expect_gradcheck(
        [&](const std::vector<Tensor>& in) { return F::cross_entropy(in[0], target, weight, -100, r, 0.2); },
        {randn64({4, 3}, 1)});
    expect_gradcheck([&](const std::vector<Tensor>& in) { return F::cross_entropy(in[0], target, Tensor(), -100, r); },
                     {randn64({4, 3}, 2)});
    expect_gradcheck([&](const std::vector<Tensor>& in) { return F::nll_loss(in[0], target, weight, -100, r); },
                     {randn64({4, 3}, 3)});
    expect_gradcheck([&](const std::vector<Tensor>& in) { return F::mse_loss(in[0], in[1], r); },
                     {randn64({3, 2}, 4), randn64({3, 2}, 5)});
    expect_gradcheck([&](const std::vector<Tensor>& in) { return F::l1_loss(in[0], in[1], r); },
                     {randn64({3, 2}, 6), randn64({3, 2}, 7)});
  }
  Tensor spatial_target = Tensor::from_vector(std::vector<int64_t>{0, 2, 1, -100}, {2, 2});
  expect_gradcheck(
      [&](const std::vector<Tensor>& in) {
        return F::cross_entropy(in[0], spatial_target, weight, -100, Reduction::mean, 0.1);
      },
      {randn64({2, 3, 2}, 8)});
  Tensor probs = softmax(randn64({4, 3}, 9, false), 1);
  expect_gradcheck([&](const std::vector<Tensor>& in) { return F::cross_entropy(in[0], probs); },
                   {randn64({4, 3}, 10)});
  Tensor y = Tensor::from_vector(std::vector<double>{1, 0, 0.3, 1, 0, 0.7}, {2, 3});
  Tensor pw = Tensor::from_vector(std::vector<double>{2, 0.5, 1}, {3});
  expect_gradcheck(
      [&](const std::vector<Tensor>& in) {
        return F::binary_cross_entropy_with_logits(in[0], y, in[1], Reduction::mean, pw);
      },
      {randn64({2, 3}, 11), randn64({2, 3}, 12)});
}
