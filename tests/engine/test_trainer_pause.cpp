// Trainer::pause / resume / cancel from another thread while fit() runs.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/data/dataloader.h"
#include "engine/data/dataset.h"
#include "engine/nn/activation.h"
#include "engine/nn/functional.h"
#include "engine/nn/linear.h"
#include "engine/optim/sgd.h"
#include "engine/train/trainer.h"

using namespace kiln;
using namespace std::chrono_literals;

namespace {

struct Fixture {
  std::shared_ptr<data::TensorDataset> dataset;
  std::shared_ptr<train::Trainer> trainer;
  std::unique_ptr<data::DataLoader> loader;

  explicit Fixture(int epochs) {
    manual_seed(3);
    Tensor x = normal({256, 2}, 0, 1, DType::f32);
    std::vector<int64_t> labels(256);
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i % 2);
    dataset = std::make_shared<data::TensorDataset>(x, Tensor::from_vector(labels, {256}));
    auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(2, 8), std::make_shared<nn::ReLU>(),
                                                  std::make_shared<nn::Linear>(8, 2));
    auto opt = std::make_shared<optim::SGD>(model->parameters(), optim::SGDOptions{.lr = 0.01});
    train::TrainerOptions o;
    o.epochs = epochs;
    o.num_classes = 2;
    o.top_k = 1;
    trainer = std::make_shared<train::Trainer>(
        model, opt, nullptr, [](const Tensor& l, const Tensor& t) { return nn::functional::cross_entropy(l, t); }, o);
    loader = std::make_unique<data::DataLoader>(dataset, data::DataLoader::Options{.batch_size = 16});  // 16 batches
  }
};

struct Counts {
  int batches = 0, epochs = 0, finished = 0;
  bool cancelled = false;
};

void count(train::Trainer& t, Counts& c) {
  for (auto& e : t.events().drain()) {
    if (std::holds_alternative<train::BatchEnd>(e)) ++c.batches;
    if (std::holds_alternative<train::EpochEnd>(e)) ++c.epochs;
    if (auto* f = std::get_if<train::Finished>(&e)) {
      ++c.finished;
      c.cancelled = f->cancelled;
    }
  }
}

}  // namespace

TEST(TrainerPause, PausedBeforeFitRunsNoBatchUntilResumed) {
  Fixture f(2);
  f.trainer->pause();
  EXPECT_TRUE(f.trainer->paused());
  std::thread worker([&] { f.trainer->fit(*f.loader, nullptr); });
  std::this_thread::sleep_for(200ms);
  Counts c;
  count(*f.trainer, c);
  EXPECT_EQ(c.batches, 0);
  EXPECT_EQ(f.trainer->step(), 0);
  f.trainer->resume();
  EXPECT_FALSE(f.trainer->paused());
  worker.join();
  count(*f.trainer, c);
  EXPECT_EQ(c.batches, 32);
  EXPECT_EQ(c.epochs, 2);
  EXPECT_EQ(c.finished, 1);
  EXPECT_FALSE(c.cancelled);
}

TEST(TrainerPause, PauseMidRunHoldsTheStepCountThenContinues) {
  Fixture f(50);  // 800 steps: long enough to pause in the middle
  std::thread worker([&] { f.trainer->fit(*f.loader, nullptr); });
  while (f.trainer->step() < 3) std::this_thread::sleep_for(1ms);
  f.trainer->pause();
  std::this_thread::sleep_for(50ms);  // the batch in flight ends
  const int64_t held = f.trainer->step();
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(f.trainer->step(), held);
  EXPECT_LT(held, 800);
  f.trainer->resume();
  worker.join();
  EXPECT_EQ(f.trainer->step(), 800);
  Counts c;
  count(*f.trainer, c);
  EXPECT_EQ(c.batches, 800);
  EXPECT_EQ(c.finished, 1);
}

TEST(TrainerPause, CancelEndsAPause) {
  Fixture f(3);
  f.trainer->pause();
  std::thread worker([&] { f.trainer->fit(*f.loader, nullptr); });
  std::this_thread::sleep_for(100ms);
  f.trainer->cancel();
  worker.join();  // would hang if cancel did not wake the paused loop
  Counts c;
  count(*f.trainer, c);
  EXPECT_EQ(c.batches, 0);
  EXPECT_EQ(c.finished, 1);
  EXPECT_TRUE(c.cancelled);
  EXPECT_EQ(f.trainer->epoch(), 0);
}

TEST(TrainerPause, PausedTimeIsNotCountedInEpochSeconds) {
  Fixture f(1);
  f.trainer->pause();
  const auto t0 = std::chrono::steady_clock::now();
  std::thread worker([&] { f.trainer->fit(*f.loader, nullptr); });
  std::this_thread::sleep_for(1000ms);
  f.trainer->resume();
  worker.join();
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double seconds = -1;
  for (auto& e : f.trainer->events().drain())
    if (auto* end = std::get_if<train::EpochEnd>(&e)) seconds = end->seconds;
  EXPECT_GE(seconds, 0.0);
  // The epoch's seconds are the fit's wall time less the pause (1 s, less the worker's
  // start): a bound relative to the measured total, so a loaded machine does not fail it.
  EXPECT_LT(seconds, total - 0.5) << "total " << total;
}
