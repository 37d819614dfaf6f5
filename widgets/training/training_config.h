// The settings of one training run as the Studio edits and stores them (the
// project's "training" setting and each run's config_json).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/optim/factory.h"

namespace kiln::studio {

struct TrainingConfig {
  std::string optimizer = "adam";   // optim::optimizer_names(): sgd | adam | adamw | rmsprop
  double lr = 1e-3;                 // initial learning rate (Adam's default, Kingma & Ba 2015)
  double momentum = 0.9;            // sgd and rmsprop only
  double weight_decay = 0;          // L2 (sgd, adam, rmsprop) or decoupled (adamw)
  std::string scheduler = "cosine"; // optim::scheduler_names(): none | step (x0.1 after each
                                    // third of the epochs) | cosine | onecycle
  int epochs = 5;                   // >= 1
  int batch_size = 128;             // images per step, >= 1
  uint64_t seed = 0;                // model init, split and shuffle order
  std::string device = "auto";      // "auto" (the registry's best) or "cpu", "cuda:0", ...
  // Checkpoints in the middle of an epoch, stored in the project so that a run killed or
  // stopped mid-epoch can be continued (Project::resume_point): every checkpoint_steps optimizer
  // steps when > 0, else after every checkpoint_minutes of training (0: at epoch ends only; the
  // default, 10, is `kiln train --checkpoint-every`'s). A Stop checkpoints where it stops.
  double checkpoint_minutes = 10;
  int64_t checkpoint_steps = 0;

  // Throws ValueError naming the field and the allowed values when a field is out of range.
  void validate() const;
  // What the engine's factory (engine/optim/factory.h) builds the run's optimizer and
  // scheduler from, as `kiln train` does from the same names and values.
  optim::OptimizerConfig optimizer_config() const;
  optim::SchedulerConfig scheduler_config(int64_t batches_per_epoch) const;
  // {"batch_size":128,"device":"auto",...} with sorted keys.
  std::string to_json() const;
  // Missing keys keep their defaults; ValueError "training settings: 'epochs' must be
  // an integer >= 1, got ..." for a wrong type or value, or for text that is not JSON.
  static TrainingConfig from_json(const std::string& json);
};

// The test images a run evaluates when it takes n of `available` (DatasetSettings::test_size and
// test_seed, widgets/project/dataset_settings.h): n distinct indices in
// [0, available), ascending, the first n of data::seeded_permutation(available, seed) (so the
// same (available, n, seed) always gives the same subset); all of [0, available) when n <= 0
// or n >= available. Ascending, so that predictions are stored in test-split order.
std::vector<int64_t> test_subset_indices(int64_t available, int64_t n, uint64_t seed);

}  // namespace kiln::studio
