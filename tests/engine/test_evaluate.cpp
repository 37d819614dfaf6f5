// engine/train/evaluate.h: the one evaluation loop (Trainer, `kiln eval`, `kiln train`'s test
// figures, Kiln Studio's evaluation) against hand-computed loss, accuracy, top-k, confusion
// matrix and per-sample predictions; eval mode and no grad inside, the mode restored after;
// should_stop; a fresh pass each call.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/data/dataloader.h"
#include "engine/data/dataset.h"
#include "engine/nn/module.h"
#include "engine/train/evaluate.h"

using namespace kiln;

namespace {

// logits = the input; records the mode it ran in.
struct Passthrough : nn::Module {
  Tensor forward(const Tensor& x) override {
    ++calls;
    saw_training = saw_training || is_training();
    saw_grad = saw_grad || GradMode::is_enabled();
    return x;
  }
  int calls = 0;
  bool saw_training = false, saw_grad = false;
};

// Five samples of three classes: the rows are the logits.
//   row        target  top-1 (first largest)
//   [2, 0, 0]  0       0  hit
//   [0, 1, 0]  1       1  hit
//   [0, 0, 3]  1       2
//   [1, 1, 0]  1       0  (a tie: the first class)
//   [0, 0, 0]  2       0  (a tie)
const std::vector<float> kLogits{2, 0, 0, 0, 1, 0, 0, 0, 3, 1, 1, 0, 0, 0, 0};
const std::vector<int64_t> kTargets{0, 1, 1, 1, 2};

std::shared_ptr<data::TensorDataset> samples() {
  return std::make_shared<data::TensorDataset>(Tensor::from_vector(kLogits, {5, 3}), Tensor::from_vector(kTargets, {5}));
}

// Cross entropy of one row: log(sum(exp(row))) - row[target].
double ce(std::initializer_list<double> row, int target) {
  double s = 0;
  for (double v : row) s += std::exp(v);
  return std::log(s) - row.begin()[target];
}

}  // namespace

TEST(Evaluate, LossAccuracyTopKConfusionAndPredictions) {
  Passthrough model;
  model.train();
  data::DataLoader loader(samples(), 2);  // batches of 2, 2, 1: the mean weights them by size
  train::EvaluateOptions o;
  o.num_classes = 3;
  o.top_k = 2;
  o.keep_predictions = true;
  train::Evaluation e = train::evaluate(model, loader, o);
  const double loss = (ce({2, 0, 0}, 0) + ce({0, 1, 0}, 1) + ce({0, 0, 3}, 1) + ce({1, 1, 0}, 1) + ce({0, 0, 0}, 2)) / 5;
  EXPECT_FALSE(e.stopped);
  EXPECT_EQ(e.metrics.count(), 5);
  EXPECT_NEAR(e.metrics.loss(), loss, 1e-6);
  EXPECT_DOUBLE_EQ(e.metrics.accuracy(), 2.0 / 5);
  EXPECT_DOUBLE_EQ(e.metrics.top_k_accuracy(), 1.0);  // every target is within the two largest
  EXPECT_EQ(e.metrics.confusion(), (std::vector<int64_t>{1, 0, 0,  //
                                                         1, 1, 1,  //
                                                         1, 0, 0}));
  EXPECT_EQ(e.predictions, (std::vector<int64_t>{0, 1, 2, 0, 0}));
  EXPECT_EQ(e.targets, kTargets);
  EXPECT_EQ(model.calls, 3);
  EXPECT_FALSE(model.saw_training);  // eval mode inside
  EXPECT_FALSE(model.saw_grad);      // under NoGradGuard
  EXPECT_TRUE(model.is_training());  // and the mode it had afterwards
  EXPECT_TRUE(GradMode::is_enabled());
}

TEST(Evaluate, CustomLossAndNoPredictionsUnlessAsked) {
  Passthrough model;
  model.eval();
  data::DataLoader loader(samples(), 5);
  train::EvaluateOptions o;
  o.num_classes = 3;
  o.loss = [](const Tensor& logits, const Tensor&) { return Tensor::scalar(0.25); };
  train::Evaluation e = train::evaluate(model, loader, o);
  EXPECT_DOUBLE_EQ(e.metrics.loss(), 0.25);
  EXPECT_EQ(e.metrics.top_k(), 3);  // top_k 5 capped at the class count
  EXPECT_TRUE(e.predictions.empty());
  EXPECT_TRUE(e.targets.empty());
  EXPECT_FALSE(model.is_training());
}

TEST(Evaluate, ShouldStopEndsThePassBetweenBatches) {
  Passthrough model;
  data::DataLoader loader(samples(), 2);
  train::EvaluateOptions o;
  o.num_classes = 3;
  o.keep_predictions = true;
  int asked = 0;
  o.should_stop = [&] { return ++asked == 3; };  // before the third batch
  train::Evaluation e = train::evaluate(model, loader, o);
  EXPECT_TRUE(e.stopped);
  EXPECT_EQ(e.metrics.count(), 4);
  EXPECT_EQ(e.predictions, (std::vector<int64_t>{0, 1, 2, 0}));
  EXPECT_EQ(model.calls, 2);
  // The next call starts a fresh pass from the first batch.
  o.should_stop = nullptr;
  e = train::evaluate(model, loader, o);
  EXPECT_FALSE(e.stopped);
  EXPECT_EQ(e.metrics.count(), 5);
}

TEST(Evaluate, SameOrderEveryCallOnAShuffledLoader) {
  Passthrough model;
  data::DataLoader loader(samples(), data::DataLoader::Options{.batch_size = 2, .shuffle = true, .seed = 3});
  train::EvaluateOptions o;
  o.num_classes = 3;
  o.keep_predictions = true;
  const train::Evaluation a = train::evaluate(model, loader, o);
  const train::Evaluation b = train::evaluate(model, loader, o);
  EXPECT_EQ(a.targets, b.targets);
  EXPECT_EQ(a.predictions, b.predictions);
}

TEST(Evaluate, LogitsThatDoNotFitTheClassesNameBothShapes) {
  Passthrough model;
  data::DataLoader loader(samples(), 5);
  train::EvaluateOptions o;
  o.num_classes = 4;
  o.loss = [](const Tensor&, const Tensor&) { return Tensor::scalar(0); };
  model.train();
  try {
    train::evaluate(model, loader, o);
    FAIL() << "no ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[5, 3]"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(model.is_training());  // restored on the way out too
}
