// The project's "dataset" setting (Project::set_setting("dataset", to_json())): which
// data set and how much of it a run uses. The JSON is the one of
// kiln::studio::DatasetConfig (widgets/training/training_config.h), so either type
// reads what the other wrote.
#pragma once
#include <cstdint>
#include <string>

namespace kiln::studio {

struct DatasetSettings {
  static constexpr int64_t kTrainImages = 60000;  // Fashion-MNIST's training split
  static constexpr int64_t kTestImages = 10000;
  static constexpr int64_t kTrainPerClass = 6000;  // Fashion-MNIST is balanced: 6000 + 1000 per class

  std::string name = "fashion-mnist";
  std::string dir = "/usr/share/datasets/fashion-mnist";  // Debian package dataset-fashion-mnist
  int64_t train_size = 55000;      // images trained on, taken from the 60000 training images
  int64_t validation_size = 5000;  // held out of the training images for validation
  int64_t test_size = 0;           // test images evaluated (a random subset); 0 = all
  std::string classes;             // "" = all ten, else "5-9", "0,2,5" (data::parse_classes):
                                   // only those classes, relabelled 0..k-1
  uint64_t test_seed = 0;          // seed of that subset (DatasetConfig::test_seed)
  // Another source (name "imagefolder", "images" or "csv"), as DatasetConfig's: the folder or
  // file, the CSV's label column ("" = the last), header row, rows skipped before it, and the
  // stratified shares held out for testing and validation.
  std::string path;
  std::string label;
  bool header = true;
  int64_t skip_rows = 0;
  double test_fraction = 0.2, validation_fraction = 0.1;
  bool is_fashion_mnist() const { return name == "fashion-mnist"; }
  std::string spec() const { return is_fashion_mnist() ? std::string() : name + ":" + path; }

  // ValueError naming the field: unknown name; for another source than Fashion-MNIST an empty
  // path, skip_rows < 0 or fractions outside [0, 0.9] (together at most 0.9); train_size < 1, validation_size < 0,
  // train_size + validation_size over the training images of the classes (60000, 6000 a
  // class), test_size outside [0, 10000], or a malformed classes spec.
  void validate() const;
  int64_t num_classes() const;  // k: 10 without a class filter (validate()'s errors)
  // {"dir":"...","name":"fashion-mnist","train_size":55000,"validation_size":5000} (sorted keys;
  // "classes", "test_size" and "test_seed" only when set).
  std::string to_json() const;
  // Missing keys keep their defaults; ValueError "dataset settings: 'train_size' must be an
  // integer, got ..." for a wrong type, for text that is not a JSON object, or validate()'s.
  static DatasetSettings from_json(const std::string& json);
  bool operator==(const DatasetSettings&) const = default;
};

}  // namespace kiln::studio
