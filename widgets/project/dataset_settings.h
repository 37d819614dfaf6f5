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

  std::string name = "fashion-mnist";
  std::string dir = "/usr/share/datasets/fashion-mnist";  // Debian package dataset-fashion-mnist
  int64_t train_size = 55000;      // images trained on, taken from the 60000 training images
  int64_t validation_size = 5000;  // held out of the training images for validation

  // ValueError naming the field: unknown name, train_size < 1, validation_size < 0, or
  // train_size + validation_size > 60000.
  void validate() const;
  // {"dir":"...","name":"fashion-mnist","train_size":55000,"validation_size":5000} (sorted keys).
  std::string to_json() const;
  // Missing keys keep their defaults; ValueError "dataset settings: 'train_size' must be an
  // integer, got ..." for a wrong type, for text that is not a JSON object, or validate()'s.
  static DatasetSettings from_json(const std::string& json);
  bool operator==(const DatasetSettings&) const = default;
};

}  // namespace kiln::studio
