// Checkpoints: round trip and missing or malformed files.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "tests/engine/test_util.h"
#include "engine/core/error.h"
#include "engine/io/checkpoint.h"

using namespace kiln;
using namespace kiln::test;
using namespace kiln::io;
namespace fs = std::filesystem;

namespace {

Checkpoint sample() {
  Checkpoint c;
  c.model = {{"fc.weight", Tensor::arange(0, 6, 1, DType::f32).reshape({2, 3})}, {"fc.bias", Tensor::ones({2})}};
  c.optimizer = {{"fc.weight.exp_avg", Tensor::full({2, 3}, 0.25)}, {"fc.weight.step", Tensor::scalar(7, DType::i64)}};
  c.optimizer_scalars = {{"lr", 0.1}, {"tiny", 1e-300}, {"third", 1.0 / 3}, {"step", 7}};
  c.trainer = {{"run", "fashion \"mnist\""}, {"generator", "5489 123 456"}};
  c.trainer_scalars = {{"epoch", 3},
                       {"best_val_loss", std::numeric_limits<double>::infinity()},
                       {"worst", -std::numeric_limits<double>::infinity()},
                       {"undefined", std::nan("")},
                       {"acc", 0.8765432109876543}};
  return c;
}

}  // namespace

TEST(IoCheckpoint, RoundTrip) {
  TempDir dir("kiln-ckpt");
  std::string d = dir / "run/epoch-3";  // parents are created
  Checkpoint c = sample();
  save_checkpoint(d, c);
  EXPECT_TRUE(fs::exists(d + "/model.safetensors"));
  EXPECT_TRUE(fs::exists(d + "/optimizer.safetensors"));
  EXPECT_TRUE(fs::exists(d + "/trainer.json"));
  Checkpoint r = load_checkpoint(d);
  ASSERT_EQ(r.model.size(), 2u);
  EXPECT_EQ(r.model[0].first, "fc.bias");  // file order: by dtype size, then name
  EXPECT_EQ(r.model[1].second.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  ASSERT_EQ(r.optimizer.size(), 2u);
  EXPECT_EQ(r.optimizer[0].first, "fc.weight.step");
  EXPECT_EQ(r.optimizer[0].second.item<int64_t>(), 7);
  EXPECT_EQ(r.optimizer_scalars, c.optimizer_scalars);  // exact, to the last bit
  EXPECT_EQ(r.trainer, c.trainer);
  ASSERT_EQ(r.trainer_scalars.size(), c.trainer_scalars.size());
  for (const auto& [k, v] : c.trainer_scalars) {
    if (std::isnan(v))
      EXPECT_TRUE(std::isnan(r.trainer_scalars.at(k))) << k;
    else
      EXPECT_EQ(r.trainer_scalars.at(k), v) << k;
  }
  save_checkpoint(d, r);  // overwriting an existing checkpoint
  EXPECT_EQ(load_checkpoint(d).trainer, c.trainer);
}

TEST(IoCheckpoint, MissingFileIsNamed) {
  TempDir dir("kiln-ckpt");
  save_checkpoint(dir.path.string(), sample());
  fs::remove(dir / "optimizer.safetensors");
  try {
    load_checkpoint(dir.path.string());
    FAIL() << "no IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "optimizer.safetensors"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_checkpoint(dir / "absent"), IoError);
}

TEST(IoCheckpoint, MalformedTrainerState) {
  TempDir dir("kiln-ckpt");
  save_checkpoint(dir.path.string(), sample());
  std::ofstream(dir / "trainer.json") << R"({"format": "kiln-trainer", "version": 1, "scalars": {"epoch": [1]}})";
  try {
    load_checkpoint(dir.path.string());
    FAIL() << "no IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("trainer.json: scalars.epoch must be a number"), std::string::npos)
        << e.what();
  }
  std::ofstream(dir / "trainer.json") << R"({"format": 3})";
  EXPECT_THROW(load_checkpoint(dir.path.string()), IoError);
  std::ofstream(dir / "trainer.json") << "{";
  EXPECT_THROW(load_checkpoint(dir.path.string()), IoError);
}

// A save replaces the directory as a whole: a half-written DIR.new (a kill during a save) is
// never read, and DIR.old (a kill between the renames) is read when DIR is missing, with a note.
TEST(IoCheckpoint, InterruptedSavesLeaveAReadableCheckpoint) {
  TempDir root("kiln-ckpt");
  const std::string d = (root.path / "checkpoint").string();
  Checkpoint c = sample();
  save_checkpoint(d, c);
  fs::create_directories(d + ".new");
  std::ofstream(d + ".new/model.safetensors") << "half";
  EXPECT_EQ(load_checkpoint(d).trainer, c.trainer);
  EXPECT_EQ(load_checkpoint(d).note, "");
  c.trainer["run_name"] = "second";
  save_checkpoint(d, c);  // removes the stale DIR.new first
  EXPECT_FALSE(fs::exists(d + ".new"));
  EXPECT_FALSE(fs::exists(d + ".old"));
  fs::rename(d, d + ".old");
  Checkpoint r = load_checkpoint(d);
  EXPECT_EQ(r.trainer.at("run_name"), "second");
  EXPECT_NE(r.note.find("read the previous checkpoint, " + d + ".old"), std::string::npos) << r.note;
  c.trainer["run_name"] = "third";
  save_checkpoint(d, c);
  EXPECT_EQ(load_checkpoint(d).trainer.at("run_name"), "third");
  EXPECT_FALSE(fs::exists(d + ".old"));
}
