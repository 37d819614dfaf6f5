// Imbalanced classes: scikit-learn's balanced class weights, the weighted cross_entropy kiln
// train uses with them (against PyTorch's value and gradient), and the weighted sampler's class
// frequencies and determinism (engine/data/class_balance.h, DataLoader::Options::sample_weights).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "engine/autograd/gradcheck.h"
#include "engine/core/error.h"
#include "engine/data/class_balance.h"
#include "engine/data/dataloader.h"
#include "engine/nn/functional.h"
#include "tests/engine/test_util.h"

using namespace kiln;
using namespace kiln::data;
namespace F = kiln::nn::functional;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// n samples; sample i has input i and class labels[i].
std::shared_ptr<TensorDataset> labelled(const std::vector<int64_t>& labels) {
  std::vector<int64_t> ids(labels.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
  const auto n = static_cast<int64_t>(labels.size());
  return std::make_shared<TensorDataset>(Tensor::from_vector(ids, {n}), Tensor::from_vector(labels, {n}));
}

std::vector<int64_t> epoch_ids(DataLoader& loader) {
  std::vector<int64_t> v;
  for (const Batch& b : loader)
    for (int64_t i : b.input.to_vector<int64_t>()) v.push_back(i);
  return v;
}

}  // namespace

TEST(ClassBalance, BalancedWeightsAreScikitLearns) {
  // compute_class_weight("balanced", classes=[0, 1, 2], y=[2, 0, 1, 1]) = [4/3, 2/3, 4/3].
  const std::vector<double> w = balanced_class_weights(class_counts({2, 0, 1, 1}, 3));
  ASSERT_EQ(w.size(), 3u);
  EXPECT_DOUBLE_EQ(w[0], 4.0 / 3);
  EXPECT_DOUBLE_EQ(w[1], 2.0 / 3);
  EXPECT_DOUBLE_EQ(w[2], 4.0 / 3);
  EXPECT_EQ(class_weights("balanced", {1, 2, 1}, "--class-weights"), w);
  EXPECT_TRUE(class_weights("none", {1, 2, 1}, "--class-weights").empty());
  EXPECT_EQ(class_weights("1,2.5,0.25", {1, 2, 1}, "--class-weights"), (std::vector<double>{1, 2.5, 0.25}));
}

TEST(ClassBalance, BadWeightsNameTheFlag) {
  const std::vector<int64_t> counts{5, 1, 3};
  auto bad = [&](const std::string& spec) { return error_of([&] { class_weights(spec, counts, "--class-weights"); }); };
  EXPECT_CONTAINS(bad("1,2"), "--class-weights gives 2 weights for 3 classes");
  EXPECT_CONTAINS(bad("1,2,3,4"), "gives 4 weights for 3 classes");
  EXPECT_CONTAINS(bad("1,-2,3"), "weight 1 is -2; class weights must be finite and positive");
  EXPECT_CONTAINS(bad("1,nan,3"), "weight 1 is nan");
  EXPECT_CONTAINS(bad("inf,1,3"), "weight 0 is inf");
  EXPECT_CONTAINS(bad("1,0,3"), "weight 1 is 0");
  EXPECT_CONTAINS(bad("1,,3"), "'' is not a number");
  EXPECT_CONTAINS(bad("balance"), "--class-weights expects none, balanced or one weight per class");
  EXPECT_CONTAINS(error_of([] { class_weights("balanced", {4, 0, 2}, "--class-weights"); }),
                  "--class-weights balanced: balanced class weights: class 1 has no training sample");
}

TEST(ClassBalance, WeightedCrossEntropyMatchesPyTorch) {
  // torch.nn.functional.cross_entropy(x, [2, 0, 1, 1], weight=[4/3, 2/3, 4/3]) in float64
  // (Debian's python3-torch 1.13) and its gradient x.grad.
  const std::vector<double> x{1, 2, 3, 1, 0, -1, 0.5, -0.5, 2, -1, 3, 0};
  const std::vector<int64_t> t{2, 0, 1, 1};
  const std::vector<double> w = balanced_class_weights(class_counts(t, 3));
  const double torch_loss = 0.7437792768903474;
  const std::vector<double> torch_grad{0.030010191056793478,  0.08157615701826587,   -0.1115863480750594,
                                       -0.1115863480750594,   0.08157615701826587,   0.030010191056793478,
                                       0.02849213003296504,   -0.1561849977923554,   0.12769286775939037,
                                       0.002857970924253398,  -0.010626741353915706, 0.007768770429662315};
  // By hand: loss = sum_i w[t_i] (lse_i - x_i[t_i]) / sum_i w[t_i]; d/dx_ic = w[t_i] (softmax_ic - [c = t_i]) / W.
  double num = 0, den = 0;
  std::vector<double> hand_grad(12);
  for (int i = 0; i < 4; ++i) {
    double z = 0;
    for (int c = 0; c < 3; ++c) z += std::exp(x[i * 3 + c]);
    const double wt = w[static_cast<size_t>(t[i])];
    num += wt * (std::log(z) - x[i * 3 + t[i]]);
    den += wt;
    for (int c = 0; c < 3; ++c) hand_grad[i * 3 + c] = wt * (std::exp(x[i * 3 + c]) / z - (c == t[i]));
  }
  for (double& g : hand_grad) g /= den;
  EXPECT_NEAR(num / den, torch_loss, 1e-12);

  Tensor logits = Tensor::from_vector(x, {4, 3}).requires_grad_(true);
  Tensor weight = Tensor::from_vector(w, {3});
  Tensor loss = F::cross_entropy(logits, Tensor::from_vector(t, {4}), weight);
  EXPECT_NEAR(loss.item<double>(), torch_loss, 1e-12);
  loss.backward();
  const std::vector<double> grad = logits.grad().to_vector<double>();
  for (size_t k = 0; k < grad.size(); ++k) {
    EXPECT_NEAR(grad[k], torch_grad[k], 1e-12) << k;
    EXPECT_NEAR(grad[k], hand_grad[k], 1e-12) << k;
  }
  // And against finite differences of the same loss.
  test::expect_gradcheck(
      [&](const std::vector<Tensor>& in) { return F::cross_entropy(in[0], Tensor::from_vector(t, {4}), weight); },
      {Tensor::from_vector(x, {4, 3}).requires_grad_(true)});
}

TEST(ClassBalance, WeightedSampleFollowsTheWeights) {
  const std::vector<double> w{1, 0, 2, 5};
  const int64_t n = 80000;
  const std::vector<int64_t> draws = weighted_sample(w, n, 7, 3);
  ASSERT_EQ(static_cast<int64_t>(draws.size()), n);
  std::map<int64_t, int64_t> seen;
  for (int64_t d : draws) ++seen[d];
  EXPECT_EQ(seen.count(1), 0u);  // weight 0: never drawn
  for (int64_t i : {0, 2, 3}) {
    const double p = w[static_cast<size_t>(i)] / 8, sd = std::sqrt(p * (1 - p) / static_cast<double>(n));
    EXPECT_NEAR(static_cast<double>(seen[i]) / static_cast<double>(n), p, 5 * sd) << i;
  }
  // Only (seed, stream) decides the draws.
  EXPECT_EQ(weighted_sample(w, n, 7, 3), draws);
  EXPECT_NE(weighted_sample(w, n, 7, 4), draws);
  EXPECT_NE(weighted_sample(w, n, 8, 3), draws);
  EXPECT_CONTAINS(error_of([] { weighted_sample({1, -1}, 3, 0, 0); }), "weight 1 is -1");
  EXPECT_CONTAINS(error_of([] { weighted_sample({1, NAN}, 3, 0, 0); }), "weight 1 is nan");
  EXPECT_CONTAINS(error_of([] { weighted_sample({0, 0}, 3, 0, 0); }), "the weights sum to 0");
  EXPECT_CONTAINS(error_of([] { weighted_sample({}, 3, 0, 0); }), "no weights");
}

TEST(ClassBalance, WeightedLoaderBalancesClassesAndResumesMidEpoch) {
  // 90 samples of class 0, 10 of class 1: the inverse-frequency sampler draws both about equally.
  std::vector<int64_t> labels(100, 0);
  for (int i = 0; i < 10; ++i) labels[static_cast<size_t>(i * 10 + 3)] = 1;
  auto dataset = labelled(labels);
  const std::vector<int64_t> read = sample_labels(*dataset);
  EXPECT_EQ(read, labels);
  const std::vector<double> sw = inverse_frequency_sample_weights(read, 2);
  EXPECT_DOUBLE_EQ(sw[0], 1.0 / 90);
  EXPECT_DOUBLE_EQ(sw[3], 1.0 / 10);

  DataLoader::Options o{.batch_size = 16, .shuffle = true, .seed = 5, .num_workers = 2, .sample_weights = sw};
  DataLoader loader(dataset, o);
  int64_t ones = 0, total = 0;
  std::vector<std::vector<int64_t>> epochs;
  for (int e = 0; e < 20; ++e) {
    epochs.push_back(epoch_ids(loader));
    ASSERT_EQ(epochs.back().size(), 100u);  // len(dataset) draws per epoch
    for (int64_t i : epochs.back()) ones += labels[static_cast<size_t>(i)], ++total;
  }
  // 2000 draws of p = 0.5: within 5 standard deviations (0.056) of a half.
  EXPECT_NEAR(static_cast<double>(ones) / static_cast<double>(total), 0.5, 0.056);
  EXPECT_NE(epochs[0], epochs[1]);  // a new draw each epoch

  // Another loader (no workers), resumed in the middle of epoch 3: the same samples from batch 2 on.
  o.num_workers = 0;
  DataLoader resumed(dataset, o);
  resumed.set_epoch(3, 2);
  const std::vector<int64_t> rest = epoch_ids(resumed);
  EXPECT_EQ(rest, std::vector<int64_t>(epochs[3].begin() + 32, epochs[3].end()));
  EXPECT_EQ(epoch_ids(resumed), epochs[4]);
}

TEST(ClassBalance, BadSamplerInput) {
  auto dataset = labelled({0, 1, 1});
  EXPECT_CONTAINS(error_of([&] { DataLoader(dataset, DataLoader::Options{.sample_weights = {1, 2}}); }),
                  "2 sample weights for a dataset of 3 samples");
  EXPECT_CONTAINS(error_of([&] { DataLoader(dataset, DataLoader::Options{.sample_weights = {1, -2, 1}}); }),
                  "weight 1 is -2");
  // Labels through a Subset; targets that are not class indices are refused.
  auto sub = std::make_shared<Subset>(dataset, std::vector<int64_t>{2, 0});
  EXPECT_EQ(sample_labels(*sub), (std::vector<int64_t>{1, 0}));
  TensorDataset regression(Tensor::from_vector(std::vector<float>{1, 2}, {2}),
                           Tensor::from_vector(std::vector<float>{0.5f, 1.5f}, {2}));
  EXPECT_CONTAINS(error_of([&] { sample_labels(regression); }), "not one class index (i64) per sample");
}
