// Trainer: convergence, events, same-seed reproducibility, checkpoint/resume,
// NaN loss, cancel, checkpoints from another model.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <thread>

#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/data/dataloader.h"
#include "engine/data/dataset.h"
#include "engine/nn/activation.h"
#include "engine/nn/functional.h"
#include "engine/nn/linear.h"
#include "engine/optim/adam.h"
#include "engine/optim/lr_scheduler.h"
#include "engine/train/trainer.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

// Four Gaussian blobs in 2-d, one per class.
std::shared_ptr<data::TensorDataset> blobs(int64_t n, uint64_t seed) {
  Generator gen(seed);
  Tensor labels = Tensor::from_vector(
      [&] {
        std::vector<int64_t> v(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) v[i] = i % 4;
        return v;
      }(),
      {n});
  std::vector<float> centers{2, 2, -2, 2, -2, -2, 2, -2};
  Tensor c = Tensor::from_vector(centers, {4, 2});
  Tensor x = add(index_select(c, 0, labels), normal({n, 2}, 0, 0.7, DType::f32, {}, &gen));
  return std::make_shared<data::TensorDataset>(x, labels);
}

std::shared_ptr<nn::Module> mlp() {
  return std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(2, 16), std::make_shared<nn::ReLU>(),
                                          std::make_shared<nn::Linear>(16, 4));
}

train::LossFn ce() {
  return [](const Tensor& logits, const Tensor& target) { return nn::functional::cross_entropy(logits, target); };
}

struct TrainRun {
  std::shared_ptr<nn::Module> model;
  std::shared_ptr<optim::Adam> opt;
  std::shared_ptr<train::Trainer> trainer;
  std::vector<double> losses;
};

TrainRun make_run(uint64_t seed, int epochs, const std::string& ckpt = "", double lr = 0.05) {
  manual_seed(seed);
  TrainRun r;
  r.model = mlp();
  optim::AdamOptions o;
  o.lr = lr;
  r.opt = std::make_shared<optim::Adam>(r.model->parameters(), o);
  train::TrainerOptions t;
  t.epochs = epochs;
  t.num_classes = 4;
  t.top_k = 2;
  t.checkpoint_dir = ckpt;
  r.trainer = std::make_shared<train::Trainer>(r.model, r.opt, nullptr, ce(), t);
  return r;
}

void collect(TrainRun& r) {
  for (auto& e : r.trainer->events().drain())
    if (auto* b = std::get_if<train::BatchEnd>(&e)) r.losses.push_back(b->loss);
}

data::DataLoader::Options loader_options(uint64_t seed) {
  data::DataLoader::Options o;
  o.batch_size = 32;
  o.shuffle = true;
  o.seed = seed;
  return o;
}

fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("kiln_trainer_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p;
}

}  // namespace

TEST(Trainer, LearnsAndReportsEvents) {
  auto ds = blobs(512, 1);
  data::DataLoader train(ds, loader_options(3)), val(blobs(256, 2), 64);
  TrainRun r = make_run(0, 3);
  r.trainer->fit(train, &val);
  auto events = r.trainer->events().drain();
  int batches = 0, epochs = 0;
  bool finished = false;
  double last_val = 0;
  for (auto& e : events) {
    if (auto* b = std::get_if<train::BatchEnd>(&e)) {
      ++batches;
      EXPECT_GT(b->samples_per_second, 0);
      EXPECT_EQ(b->batches_per_epoch, 16);
      // Read a step late, yet each batch's event comes in order, before its epoch's end.
      EXPECT_EQ(b->step, batches);
      EXPECT_EQ(b->epoch, epochs);
      EXPECT_EQ(b->batch, (batches - 1) % 16 + 1);
    } else if (auto* ep = std::get_if<train::EpochEnd>(&e)) {
      ++epochs;
      EXPECT_EQ(batches, 16 * epochs);
      last_val = ep->val_accuracy;
    } else if (auto* f = std::get_if<train::Finished>(&e)) {
      finished = !f->cancelled && f->error.empty();
    }
  }
  EXPECT_EQ(batches, 48);
  EXPECT_EQ(epochs, 3);
  EXPECT_TRUE(finished);
  EXPECT_GT(last_val, 0.95);
  auto m = r.trainer->evaluate(val);
  EXPECT_EQ(m.count(), 256);
  EXPECT_GT(m.accuracy(), 0.95);
  EXPECT_GE(m.top_k_accuracy(), m.accuracy());
  int64_t total = 0;
  for (int64_t c : m.confusion()) total += c;
  EXPECT_EQ(total, 256);
  EXPECT_EQ(r.trainer->samples_trained(), 3 * 512);
}

TEST(Trainer, SameSeedGivesTheSameLossCurveBitForBit) {
  auto ds = blobs(256, 1);
  TrainRun a = make_run(7, 2), b = make_run(7, 2), c = make_run(8, 2);
  for (TrainRun* r : {&a, &b, &c}) {
    data::DataLoader loader(ds, loader_options(11));
    r->trainer->fit(loader, nullptr);
    collect(*r);
  }
  ASSERT_EQ(a.losses.size(), 16u);
  EXPECT_EQ(a.losses, b.losses);  // exact equality, not a tolerance
  EXPECT_NE(a.losses, c.losses);
}

TEST(Trainer, ResumeContinuesTheSameCurve) {
  auto ds = blobs(256, 1);
  fs::path dir = temp_dir("resume");
  TrainRun full = make_run(5, 4);
  {
    data::DataLoader loader(ds, loader_options(2));
    full.trainer->fit(loader, nullptr);
    collect(full);
  }
  TrainRun first = make_run(5, 2, dir.string());
  {
    data::DataLoader loader(ds, loader_options(2));
    first.trainer->fit(loader, nullptr);
    collect(first);
  }
  ASSERT_TRUE(fs::exists(dir / "model.safetensors"));
  TrainRun resumed = make_run(99, 4);  // different init: everything must come from the checkpoint
  resumed.trainer->load_checkpoint(dir.string());
  EXPECT_EQ(resumed.trainer->epoch(), 2);
  {
    data::DataLoader loader(ds, loader_options(2));
    resumed.trainer->fit(loader, nullptr);
    collect(resumed);
  }
  std::vector<double> joined = first.losses;
  joined.insert(joined.end(), resumed.losses.begin(), resumed.losses.end());
  EXPECT_EQ(joined, full.losses);
  fs::remove_all(dir);
}

TEST(Trainer, NonFiniteLossStopsWithStepAndAdvice) {
  auto ds = blobs(128, 1);
  data::DataLoader loader(ds, loader_options(1));
  manual_seed(0);
  auto model = mlp();
  auto opt = std::make_shared<optim::Adam>(model->parameters(), optim::AdamOptions{});
  train::TrainerOptions t;
  t.num_classes = 4;
  t.top_k = 2;
  int calls = 0;
  train::LossFn nan_on_third = [&](const Tensor& logits, const Tensor& target) {
    Tensor l = nn::functional::cross_entropy(logits, target);
    return ++calls == 3 ? mul(l, Tensor::scalar(NAN)) : l;
  };
  train::Trainer trainer(model, opt, nullptr, nan_on_third, t);
  try {
    trainer.fit(loader, nullptr);
    FAIL() << "a NaN loss must stop training";
  } catch (const train::NonFiniteLossError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("step 3"), std::string::npos) << m;
    EXPECT_NE(m.find("lower learning rate"), std::string::npos) << m;
  }
  EXPECT_EQ(trainer.step(), 4);  // a step's loss is read once the next step is enqueued
  bool error_event = false;
  for (auto& e : trainer.events().drain())
    if (auto* f = std::get_if<train::Finished>(&e)) error_event = !f->error.empty();
  EXPECT_TRUE(error_event);
}

TEST(Trainer, CancelFromAnotherThread) {
  auto ds = blobs(4096, 1);
  data::DataLoader loader(ds, loader_options(1));
  TrainRun r = make_run(0, 1000);
  std::thread t([&] { r.trainer->fit(loader, nullptr); });
  while (r.trainer->step() < 5) std::this_thread::yield();
  r.trainer->cancel();
  t.join();
  EXPECT_LT(r.trainer->epoch(), 1000);
  bool cancelled = false;
  for (auto& e : r.trainer->events().drain())
    if (auto* f = std::get_if<train::Finished>(&e)) cancelled = f->cancelled;
  EXPECT_TRUE(cancelled);
}

TEST(Trainer, CheckpointFromAnotherModelIsRejected) {
  auto ds = blobs(64, 1);
  fs::path dir = temp_dir("other");
  TrainRun r = make_run(0, 1, dir.string());
  data::DataLoader loader(ds, loader_options(1));
  r.trainer->fit(loader, nullptr);
  manual_seed(0);
  auto other = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(2, 8), std::make_shared<nn::ReLU>(),
                                                std::make_shared<nn::Linear>(8, 4));
  auto opt = std::make_shared<optim::Adam>(other->parameters(), optim::AdamOptions{});
  train::TrainerOptions t;
  t.num_classes = 4;
  train::Trainer trainer(other, opt, nullptr, ce(), t);
  try {
    trainer.load_checkpoint(dir.string());
    FAIL() << "a checkpoint of another model must be rejected";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("0.weight"), std::string::npos) << e.what();
  }
  EXPECT_THROW(trainer.load_checkpoint((dir / "missing").string()), IoError);
  fs::remove_all(dir);
}

TEST(Trainer, ResumeWithOtherSettingsIsRejected) {
  auto ds = blobs(64, 1);
  fs::path dir = temp_dir("settings");
  auto trainer_with = [&](const std::string& batch_size, const std::string& ckpt) {
    manual_seed(0);
    auto model = mlp();
    auto opt = std::make_shared<optim::Adam>(model->parameters(), optim::AdamOptions{});
    train::TrainerOptions t;
    t.epochs = 2;
    t.num_classes = 4;
    t.top_k = 2;
    t.checkpoint_dir = ckpt;
    t.run_settings = {{"batch_size", batch_size}, {"optimizer", "adam"}};
    return std::make_shared<train::Trainer>(model, opt, nullptr, ce(), t);
  };
  {
    auto first = trainer_with("32", dir.string());
    data::DataLoader loader(ds, loader_options(1));
    first->fit(loader, nullptr);
  }
  try {
    trainer_with("64", "")->load_checkpoint(dir.string());
    FAIL() << "a resume with another batch size must be rejected";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("batch_size = 32, not 64"), std::string::npos) << e.what();
  }
  auto same = trainer_with("32", "");
  same->load_checkpoint(dir.string());
  EXPECT_EQ(same->epoch(), 2);
  fs::remove_all(dir);
}

// A run stopped after step 13 with a checkpoint every 5 steps resumes from step 10 (batch 2 of
// epoch 2): the losses of steps 11 to 24 and the epochs' mean losses are the uninterrupted run's.
TEST(Trainer, MidEpochCheckpointResumesAtTheNextBatch) {
  auto ds = blobs(256, 1);  // 8 batches an epoch
  fs::path dir = temp_dir("mid_epoch");
  TrainRun full = make_run(5, 3);
  std::vector<double> full_epoch_losses;
  {
    data::DataLoader loader(ds, loader_options(2));
    full.trainer->fit(loader, nullptr);
    for (auto& e : full.trainer->events().drain()) {
      if (auto* b = std::get_if<train::BatchEnd>(&e)) full.losses.push_back(b->loss);
      if (auto* ep = std::get_if<train::EpochEnd>(&e)) full_epoch_losses.push_back(ep->train_loss);
    }
  }
  ASSERT_EQ(full.losses.size(), 24u);

  manual_seed(5);
  auto model = mlp();
  optim::AdamOptions o;
  o.lr = 0.05;
  auto opt = std::make_shared<optim::Adam>(model->parameters(), o);
  train::TrainerOptions t;
  t.epochs = 3;
  t.num_classes = 4;
  t.top_k = 2;
  t.checkpoint_dir = dir.string();
  t.checkpoint_every_steps = 5;
  int calls = 0;
  std::shared_ptr<train::Trainer> stopped;
  train::LossFn stop_at_13 = [&](const Tensor& logits, const Tensor& target) {
    if (++calls == 13) stopped->cancel();  // stops after this step
    return nn::functional::cross_entropy(logits, target);
  };
  stopped = std::make_shared<train::Trainer>(model, opt, nullptr, stop_at_13, t);
  {
    data::DataLoader loader(ds, loader_options(2));
    stopped->fit(loader, nullptr);
  }
  ASSERT_EQ(stopped->step(), 13);
  std::vector<int64_t> saved_steps;
  for (auto& e : stopped->events().drain())
    if (auto* c = std::get_if<train::CheckpointSaved>(&e)) saved_steps.push_back(c->step);
  EXPECT_EQ(saved_steps, (std::vector<int64_t>{5, 8, 10}));  // every 5 steps, and epoch 1's end

  TrainRun resumed = make_run(99, 3);  // different init: everything must come from the checkpoint
  EXPECT_EQ(resumed.trainer->load_checkpoint(dir.string()), "");
  EXPECT_EQ(resumed.trainer->epoch(), 1);
  EXPECT_EQ(resumed.trainer->step(), 10);
  EXPECT_EQ(resumed.trainer->batch_in_epoch(), 2);
  std::vector<double> resumed_epoch_losses;
  {
    data::DataLoader loader(ds, loader_options(2));
    resumed.trainer->fit(loader, nullptr);
    for (auto& e : resumed.trainer->events().drain()) {
      if (auto* b = std::get_if<train::BatchEnd>(&e)) {
        resumed.losses.push_back(b->loss);
        if (resumed.losses.size() == 1) {
          EXPECT_EQ(b->batch, 3);
        }
      }
      if (auto* ep = std::get_if<train::EpochEnd>(&e)) resumed_epoch_losses.push_back(ep->train_loss);
    }
  }
  EXPECT_EQ(resumed.losses, std::vector<double>(full.losses.begin() + 10, full.losses.end()));  // exact
  EXPECT_EQ(resumed_epoch_losses, std::vector<double>(full_epoch_losses.begin() + 1, full_epoch_losses.end()));
  EXPECT_EQ(resumed.trainer->samples_trained(), full.trainer->samples_trained());
  fs::remove_all(dir);
}

// Data parallelism: a mid-epoch checkpoint's batch position counts batches of its number of ranks,
// so it resumes on that number only; the message names both.
TEST(Trainer, MidEpochCheckpointResumesOnAsManyRanksOnly) {
  auto ds = blobs(256, 1);
  fs::path dir = temp_dir("ranks");
  auto sharded = [](int world) {
    data::DataLoader::Options o = loader_options(2);
    o.world_size = world;  // this process as rank 0 of `world`: 128 samples, 4 batches, for 2
    return o;
  };
  {
    TrainRun r = make_run(5, 1, dir.string());
    int calls = 0;
    train::TrainerOptions t;
    t.epochs = 1, t.num_classes = 4, t.top_k = 2, t.checkpoint_dir = dir.string(), t.checkpoint_every_steps = 3;
    std::shared_ptr<train::Trainer> trainer;
    trainer = std::make_shared<train::Trainer>(r.model, r.opt, nullptr, [&](const Tensor& l, const Tensor& y) {
      if (++calls == 3) trainer->cancel();
      return nn::functional::cross_entropy(l, y);
    }, t);
    data::DataLoader loader(ds, sharded(2));
    trainer->fit(loader, nullptr);
    ASSERT_EQ(trainer->step(), 3);
  }
  TrainRun one = make_run(5, 1);
  one.trainer->load_checkpoint(dir.string());
  EXPECT_EQ(one.trainer->checkpoint_world_size(), 2);
  data::DataLoader whole(ds, sharded(1));
  try {
    one.trainer->fit(whole, nullptr);
    FAIL() << "resumed a 2-rank mid-epoch checkpoint on 1 rank";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("after 3 batches of epoch 1 on 2 rank(s), and this run has 1"),
              std::string::npos) << e.what();
  }
  TrainRun two = make_run(5, 1);
  two.trainer->load_checkpoint(dir.string());
  data::DataLoader half(ds, sharded(2));
  two.trainer->fit(half, nullptr);
  EXPECT_EQ(two.trainer->step(), 4);  // the epoch's last batch of rank 0
  fs::remove_all(dir);
}

// A Stop (with checkpoint_on_cancel) right after a mid-epoch checkpoint stores no second one of the
// same step; the checkpoints carry the run's seconds, which a resumed trainer reports.
TEST(Trainer, AStopRightAfterACheckpointSavesItOnce) {
  auto ds = blobs(256, 1);  // 8 batches an epoch
  fs::path dir = temp_dir("stop_after_checkpoint");
  manual_seed(5);
  auto model = mlp();
  auto opt = std::make_shared<optim::Adam>(model->parameters(), optim::AdamOptions{});
  train::TrainerOptions t;
  t.epochs = 3;
  t.num_classes = 4;
  t.top_k = 2;
  t.checkpoint_dir = dir.string();
  t.checkpoint_every_steps = 5;
  t.checkpoint_on_cancel = true;
  int calls = 0;
  std::shared_ptr<train::Trainer> stopped;
  train::LossFn stop_at_10 = [&](const Tensor& logits, const Tensor& target) {
    if (++calls == 10) stopped->cancel();  // stops after step 10, which checkpoints
    return nn::functional::cross_entropy(logits, target);
  };
  stopped = std::make_shared<train::Trainer>(model, opt, nullptr, stop_at_10, t);
  {
    data::DataLoader loader(ds, loader_options(2));
    stopped->fit(loader, nullptr);
  }
  std::vector<int64_t> saved_steps;
  for (auto& e : stopped->events().drain())
    if (auto* c = std::get_if<train::CheckpointSaved>(&e)) saved_steps.push_back(c->step);
  EXPECT_EQ(saved_steps, (std::vector<int64_t>{5, 8, 10}));
  TrainRun resumed = make_run(99, 3);
  EXPECT_EQ(resumed.trainer->resumed_seconds(), 0.0);
  resumed.trainer->load_checkpoint(dir.string());
  EXPECT_EQ(resumed.trainer->step(), 10);
  EXPECT_GT(resumed.trainer->resumed_seconds(), 0.0);
  EXPECT_GE(resumed.trainer->resumed_seconds(), resumed.trainer->seconds_training());
  fs::remove_all(dir);
}

// A dataset description (a JSON run setting) that differs is named by its keys, not printed whole;
// when only its fingerprint differs, the message says the files changed.
TEST(Trainer, ResumeOnChangedDataNamesWhatChanged) {
  auto ds = blobs(64, 1);
  fs::path dir = temp_dir("changed_data");
  auto trainer_with = [&](const std::string& images, const std::string& ckpt) {
    manual_seed(0);
    auto model = mlp();
    auto opt = std::make_shared<optim::Adam>(model->parameters(), optim::AdamOptions{});
    train::TrainerOptions t;
    t.epochs = 1;
    t.num_classes = 4;
    t.checkpoint_dir = ckpt;
    t.run_settings = {{"images", images}};
    return std::make_shared<train::Trainer>(model, opt, nullptr, ce(), t);
  };
  const std::string saved = R"({"source": {"path": "/d", "seed": 0}, "classes": ["a", "b"], "fingerprint": "0123"})";
  {
    auto first = trainer_with(saved, dir.string());
    data::DataLoader loader(ds, loader_options(1));
    first->fit(loader, nullptr);
  }
  auto message = [&](const std::string& images) {
    try {
      trainer_with(images, "")->load_checkpoint(dir.string());
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string files = message(R"({"source": {"path": "/d", "seed": 0}, "classes": ["a", "b"], "fingerprint": "4567"})");
  EXPECT_NE(files.find("the image folder's files changed since the run started (fingerprint \"0123\", now \"4567\""),
            std::string::npos) << files;
  const std::string other = message(R"({"source": {"path": "/e", "seed": 0}, "classes": ["a", "b"], "fingerprint": "4567"})");
  EXPECT_NE(other.find("other images settings: 'fingerprint' (was \"0123\", now \"4567\"), 'source.path' (was \"/d\", "
                       "now \"/e\") differ"), std::string::npos) << other;
  EXPECT_EQ(other.find("classes"), std::string::npos) << other;
  fs::remove_all(dir);
}
