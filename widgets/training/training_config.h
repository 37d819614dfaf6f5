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

// Dataset settings (the project's "dataset" setting): how much of Fashion-MNIST to use.
// The same JSON as DatasetSettings (widgets/project/dataset_settings.h), the same rules.
struct DatasetConfig {
  static constexpr int64_t kTrainPerClass = 6000, kTestPerClass = 1000;  // Fashion-MNIST is balanced
  std::string name = "fashion-mnist";
  std::string dir = "/usr/share/datasets/fashion-mnist";
  int64_t train_size = 55000;       // images trained on (taken from the training images of `classes`)
  int64_t validation_size = 5000;   // held out of the training images for validation
  int64_t test_size = 0;            // test images evaluated: a random subset of the test split
                                    // (of `classes`) drawn with test_seed; 0 = all (10000, or
                                    // 1000 per class)
  std::string classes;              // "" = all ten; else a spec of data::parse_classes ("5-9",
                                    // "0,2,5"): those classes only, relabelled 0..k-1
  uint64_t test_seed = 0;           // seed of that subset (test_subset_indices): the same seed
                                    // gives the same test images, whatever the training seed
  // Another source than Fashion-MNIST (name "imagefolder", "images" or "csv"): the folder or file,
  // the CSV's label column (name or index, "" = the last), header row and rows skipped before it,
  // and the stratified shares held out for testing and validation. Fashion-MNIST's fields above
  // (dir, sizes, classes) do not apply to it.
  std::string path;
  std::string label;
  bool header = true;
  int64_t skip_rows = 0;
  double test_fraction = 0.2, validation_fraction = 0.1;
  bool is_fashion_mnist() const { return name == "fashion-mnist"; }
  // "imagefolder:PATH", "images:PATH" or "csv:PATH" (engine/data/image_source.h, table_source.h); "" for Fashion-MNIST.
  std::string spec() const;
  // ValueError: an unknown name; for Fashion-MNIST negative sizes, train_size 0, a malformed
  // `classes`, train_size + validation_size over the training images of the classes (6000 each),
  // test_size over 10000; for another source an empty path, skip_rows < 0, a fraction outside
  // [0, 0.9] or the two over 0.9 together.
  void validate() const;
  int64_t num_classes() const;      // k (10 without a class filter); validate()'s errors
  std::vector<int64_t> class_list() const;  // the kept classes ascending (all ten when `classes` is "")
  // Without `test_size`, `test_seed` and `classes` when they are 0 and "" (the JSON of projects
  // before them).
  std::string to_json() const;
  static DatasetConfig from_json(const std::string& json);  // same rules as TrainingConfig
};

// The test images a run evaluates when it takes n of `available`: n distinct indices in
// [0, available), ascending, the first n of data::seeded_permutation(available, seed) (so the
// same (available, n, seed) always gives the same subset); all of [0, available) when n <= 0
// or n >= available. Ascending, so that predictions are stored in test-split order.
std::vector<int64_t> test_subset_indices(int64_t available, int64_t n, uint64_t seed);

}  // namespace kiln::studio
