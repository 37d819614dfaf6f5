// The captured training step (engine/train/captured_step.h) and the Trainer's use of it:
// the optimizer's step counts, its replay mode, the eager fallback with its note on the
// CPU, the Trainer bit for bit the same on the CPU with TrainerOptions::cuda_graph on and
// off; on a CUDA device (skipped without one): replays that follow a per-step learning
// rate and count their steps, SGD recorded again per lr change or left eager when the lr
// moves every step, the Trainer replaying with a partial last batch, and dropout masks drawn
// anew at each replay.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/core/registry.h"
#include "engine/data/dataloader.h"
#include "engine/data/dataset.h"
#include "engine/nn/activation.h"
#include "engine/nn/functional.h"
#include "engine/nn/linear.h"
#include "engine/optim/adam.h"
#include "engine/optim/lr_scheduler.h"
#include "engine/optim/sgd.h"
#include "engine/train/captured_step.h"
#include "engine/train/trainer.h"

using namespace kiln;

namespace {

bool have_cuda() {
  for (const DeviceInfo& d : list_devices())
    if (d.device.type == DeviceType::cuda) return true;
  return false;
}
const Device kGpu(DeviceType::cuda, 0);
#define REQUIRE_CUDA() \
  if (!have_cuda()) GTEST_SKIP() << "no CUDA device (cuda:0)"

std::shared_ptr<nn::Module> mlp() {
  return std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(6, 32), std::make_shared<nn::ReLU>(),
                                          std::make_shared<nn::Linear>(32, 4));
}

// n points of 6 features, label = sign pattern of the first two (learnable).
std::shared_ptr<data::TensorDataset> points(int64_t n, uint64_t seed) {
  Generator g(seed);
  Tensor x = normal({n, 6}, 0, 1, DType::f32, Device(), &g);
  std::vector<float> xv = x.to_vector<float>();
  std::vector<int64_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) y[i] = (xv[i * 6] > 0 ? 1 : 0) + (xv[i * 6 + 1] > 0 ? 2 : 0);
  return std::make_shared<data::TensorDataset>(x, Tensor::from_vector(y, {n}));
}

// A step of `model` with `opt` on fixed tensors (x, y), as the Trainer's.
struct Fixture {
  Fixture(Device d, uint64_t seed) : device(d) {
    manual_seed(seed);
    model = mlp();
    model->to(d);
    auto ds = points(64, seed + 1);
    data::Batch b = ds->get_batch([] {
      std::vector<int64_t> idx(64);
      for (int64_t i = 0; i < 64; ++i) idx[static_cast<size_t>(i)] = i;
      return idx;
    }());
    x = b.input.to(d), y = b.target.to(d);
  }
  void step(optim::Optimizer& opt) {
    opt.zero_grad();
    loss = nn::F::cross_entropy((*model)(x), y);
    loss.backward();
    opt.step();
  }
  Device device;
  std::shared_ptr<nn::Module> model;
  Tensor x, y, loss;
};

std::vector<int64_t> counts_of(const optim::Optimizer& opt) { return opt.step_counts(); }

}  // namespace

TEST(OptimizerStepCounts, SetAndValidated) {
  Fixture f(Device(), 1);
  optim::Adam opt(f.model->parameters(), {});
  EXPECT_EQ(counts_of(opt), std::vector<int64_t>(4, 0));
  f.step(opt);
  EXPECT_EQ(counts_of(opt), std::vector<int64_t>(4, 1));
  opt.set_step_counts({5, 5, 5, 7});
  EXPECT_EQ(opt.state_dict().scalars.at("state.3.step"), 7.0);
  f.step(opt);
  EXPECT_EQ(counts_of(opt), (std::vector<int64_t>{6, 6, 6, 8}));
  try {
    opt.set_step_counts({1, 2});
    FAIL() << "a wrong number of counts was taken";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("2 counts for 4 parameters"), std::string::npos) << e.what();
  }
  try {
    opt.set_step_counts({1, 2, -1, 0});
    FAIL() << "a negative count was taken";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("parameter 2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(counts_of(opt), (std::vector<int64_t>{6, 6, 6, 8})) << "a refused call changed the counts";
}

TEST(OptimizerReplayMode, PerOptimizer) {
  Fixture f(Device(), 2);
  optim::Adam adam(f.model->parameters(), {});
  f.step(adam);  // the CPU backend fuses f32 Adam (adam_step)
  EXPECT_EQ(adam.replay_mode(), optim::Optimizer::ReplayMode::follows_lr);
  optim::AdamOptions ams;
  ams.amsgrad = true;
  optim::Adam amsgrad(f.model->parameters(), ams);
  f.step(amsgrad);
  EXPECT_EQ(amsgrad.replay_mode(), optim::Optimizer::ReplayMode::not_replayable);
  optim::SGD sgd(f.model->parameters(), {0.1, 0.9});
  EXPECT_EQ(sgd.replay_mode(), optim::Optimizer::ReplayMode::fixed_lr);
}

TEST(CapturedStep, EagerOnTheCpuWithTheReason) {
  Fixture f(Device(), 3);
  optim::Adam opt(f.model->parameters(), {});
  train::CapturedStep graph(Device(), opt, 2);
  int calls = 0;
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(graph.eager_for_good(), i > 2) << "after 2 warm-up steps and the failed recording, call " << i;
    graph.run([&] {
      EXPECT_FALSE(graph.recording());
      ++calls;
      f.step(opt);
    });
    EXPECT_TRUE(std::isfinite(f.loss.item<double>()));
  }
  EXPECT_EQ(calls, 6) << "every step runs eagerly";
  EXPECT_FALSE(graph.replaying());
  EXPECT_EQ(graph.recordings(), 0);
  EXPECT_EQ(graph.note(), "cpu cannot record work for replay");
  EXPECT_EQ(counts_of(opt), std::vector<int64_t>(4, 6));
}

TEST(CapturedStep, OffByFlagOrEnvironmentAndRefusesAmsgrad) {
  Fixture f(Device(), 4);
  optim::Adam opt(f.model->parameters(), {});
  EXPECT_EQ(train::CapturedStep(Device(), opt, 3, false).note(), "recording turned off");
  EXPECT_TRUE(train::CapturedStep(Device(), opt, 3, false).eager_for_good());
  ::setenv("KILN_CUDA_GRAPH", "0", 1);
  EXPECT_EQ(train::CapturedStep(Device(), opt).note(), "recording turned off (KILN_CUDA_GRAPH=0)");
  ::unsetenv("KILN_CUDA_GRAPH");
  optim::AdamOptions ams;
  ams.amsgrad = true;
  optim::Adam amsgrad(f.model->parameters(), ams);
  train::CapturedStep graph(Device(), amsgrad, 1);
  for (int i = 0; i < 3; ++i) graph.run([&] { f.step(amsgrad); });
  EXPECT_NE(graph.note().find("amsgrad"), std::string::npos) << graph.note();
  EXPECT_EQ(counts_of(amsgrad), std::vector<int64_t>(4, 3));
}

namespace {

struct TrainerRun {
  std::vector<double> losses;
  std::vector<int64_t> steps;
  std::string note;
  std::vector<float> weights;
};

// 2 epochs of 400 points in batches of 32 (12 full, one of 16), AdamW + OneCycleLR per batch
// or SGD + StepLR per epoch.
TrainerRun train_points(Device device, bool cuda_graph, bool sgd, int64_t n = 400) {
  manual_seed(7);
  auto model = mlp();
  model->to(device);
  std::shared_ptr<optim::Optimizer> opt;
  if (sgd) opt = std::make_shared<optim::SGD>(model->parameters(), optim::SGDOptions{0.05, 0.9});
  else opt = std::make_shared<optim::AdamW>(model->parameters(), optim::AdamWOptions{0.01});
  train::TrainerOptions o;
  o.epochs = 2;
  o.num_classes = 4;
  o.top_k = 2;
  o.device = device;
  o.cuda_graph = cuda_graph;
  o.scheduler_per_batch = !sgd;
  std::shared_ptr<optim::LRScheduler> sched;
  if (sgd) sched = std::make_shared<optim::StepLR>(*opt, 1, 0.5);
  else sched = std::make_shared<optim::OneCycleLR>(*opt, 0.02, 26);
  train::Trainer trainer(model, opt, sched, [](const Tensor& l, const Tensor& t) { return nn::F::cross_entropy(l, t); },
                         o);
  data::DataLoader::Options lo;
  lo.batch_size = 32;
  lo.shuffle = true;
  lo.seed = 5;
  data::DataLoader loader(points(n, 11), lo);
  trainer.fit(loader, nullptr);
  TrainerRun r;
  for (auto& e : trainer.events().drain()) {
    if (auto* b = std::get_if<train::BatchEnd>(&e)) r.losses.push_back(b->loss);
    if (auto* fin = std::get_if<train::Finished>(&e)) r.note = fin->cuda_graph;
  }
  EXPECT_EQ(r.note, trainer.cuda_graph_note());
  r.steps = opt->step_counts();
  r.weights = model->parameters()[0].to(Device()).contiguous().to_vector<float>();
  return r;
}

}  // namespace

TEST(TrainerCudaGraph, CpuRunIsTheEagerRunBitForBit) {
  for (bool sgd : {false, true}) {
    TrainerRun on = train_points(Device(), true, sgd), off = train_points(Device(), false, sgd);
    ASSERT_EQ(on.losses.size(), 26u);
    EXPECT_EQ(on.losses, off.losses) << (sgd ? "sgd" : "adamw");
    EXPECT_EQ(on.weights, off.weights);
    EXPECT_EQ(on.steps, off.steps);
    EXPECT_EQ(on.note, "cpu cannot record work for replay");
    EXPECT_EQ(off.note, "turned off");
  }
  EXPECT_EQ(train_points(Device(), true, false).steps, std::vector<int64_t>(4, 26));
}

TEST(TrainerCudaGraph, RunShorterThanTheWarmUpSaysSo) {
  // 2 epochs of 2 batches (64 points): 4 steps, one more than the 3 eager warm-up steps on the
  // CPU (where the recording then fails); 32 points (2 steps) end inside the warm-up.
  EXPECT_EQ(train_points(Device(), true, false, 64).note, "cpu cannot record work for replay");
  EXPECT_EQ(train_points(Device(), true, false, 32).note,
            "not recorded: training ended during the eager warm-up steps");
}

TEST(TrainerCudaGraph, CudaReplaysFollowTheScheduleAndCountSteps) {
  REQUIRE_CUDA();
  for (bool sgd : {false, true}) {
    TrainerRun on = train_points(kGpu, true, sgd), off = train_points(kGpu, false, sgd);
    ASSERT_EQ(on.losses.size(), off.losses.size());
    for (size_t i = 0; i < on.losses.size(); ++i)
      EXPECT_NEAR(on.losses[i], off.losses[i], 1e-4) << (sgd ? "sgd" : "adamw") << " batch " << i;
    for (size_t i = 0; i < on.weights.size(); ++i) EXPECT_NEAR(on.weights[i], off.weights[i], 1e-4);
    EXPECT_EQ(on.steps, off.steps);
    EXPECT_EQ(on.note, "replaying") << (sgd ? "sgd (recorded again each epoch)" : "adamw");
  }
}

TEST(CapturedStep, CudaSgdRecordsAgainPerLrOrStaysEager) {
  REQUIRE_CUDA();
  Fixture f(kGpu, 8);
  optim::SGD opt(f.model->parameters(), {0.05});
  train::CapturedStep graph(kGpu, opt, 1);
  for (int i = 0; i < 24; ++i) {
    if (i == 12) opt.set_lr(0.02);  // a per-epoch schedule: one more recording
    graph.run([&] { f.step(opt); });
  }
  EXPECT_TRUE(graph.replaying());
  EXPECT_EQ(graph.recordings(), 2);
  for (int i = 0; i < 6; ++i) {  // the lr moves every step: eager from then on
    opt.set_lr(0.01 + 0.001 * i);
    graph.run([&] { f.step(opt); });
  }
  EXPECT_FALSE(graph.replaying());
  EXPECT_NE(graph.note().find("changes every step"), std::string::npos) << graph.note();
}

// Dropout in a recorded step: the masks are drawn on the device from the key each replay
// passes (Backend::bernoulli), so every replay draws a new mask at the requested rate.
TEST(CapturedStep, CudaDropoutDrawsNewMasksAtEachReplay) {
  REQUIRE_CUDA();
  Fixture f(kGpu, 9);
  optim::Adam opt(f.model->parameters(), {});
  train::CapturedStep graph(kGpu, opt, 1);
  const Tensor ones = Tensor::ones({1 << 14}, DType::f32, kGpu);
  Tensor mask;
  std::vector<std::vector<float>> masks;
  for (int i = 0; i < 6; ++i) {
    graph.run([&] {
      mask = nn::F::dropout(ones, 0.25, true);
      f.step(opt);
    });
    masks.push_back(mask.to(Device()).to_vector<float>());
  }
  ASSERT_TRUE(graph.replaying()) << graph.note();
  for (size_t i = 1; i < masks.size(); ++i) {
    double kept = 0;
    for (float v : masks[i]) {
      ASSERT_TRUE(v == 0.0f || v == 1 / 0.75f) << v;
      kept += v != 0.0f;
    }
    EXPECT_NEAR(kept / static_cast<double>(masks[i].size()), 0.75, 0.017) << "launch " << i;  // 5 sigma
    EXPECT_NE(masks[i], masks[i - 1]) << "launch " << i << " repeated the mask before it";
  }
}
