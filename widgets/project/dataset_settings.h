// The project's "dataset" setting (Project::set_setting("dataset", to_json())): which data set
// and how much of it a run uses. One type for the Dataset panel that edits it, the training
// session and job that read it, and headless mode; source() is the one place that turns it into
// what engine/data's open_dataset reads.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/data/dataset_source.h"

namespace kiln::studio {

struct DatasetSettings {
  static constexpr int64_t kTrainImages = 60000;  // Fashion-MNIST's training split
  static constexpr int64_t kTestImages = 10000;
  // Fashion-MNIST is balanced: 6000 training and 1000 test images per class.
  static constexpr int64_t kTrainPerClass = 6000, kTestPerClass = 1000;

  std::string name = "fashion-mnist";
  std::string dir = "/usr/share/datasets/fashion-mnist";  // Debian package dataset-fashion-mnist
  int64_t train_size = 55000;      // images trained on (taken from the training images of `classes`)
  int64_t validation_size = 5000;  // held out of the training images for validation
  int64_t test_size = 0;           // test images evaluated: a random subset of the test split (of
                                   // `classes`) drawn with test_seed; 0 = all (10000, or 1000 a class)
  std::string classes;             // "" = all ten, else "5-9", "0,2,5" (data::parse_classes):
                                   // only those classes, relabelled 0..k-1
  uint64_t test_seed = 0;          // seed of that subset (test_subset_indices in
                                   // widgets/training/training_config.h): the same seed gives the
                                   // same test images, whatever the training seed
  // Another source than Fashion-MNIST (name "imagefolder", "images", "csv" or "text"): the folder or file,
  // the CSV's label column (name or index, "" = the last), header row and rows skipped before it,
  // and the stratified shares held out for testing and validation. Fashion-MNIST's fields above
  // (dir, sizes, classes) do not apply to it.
  std::string path;
  std::string label;
  bool header = true;
  int64_t skip_rows = 0;
  // csv: classification (classes from the label's values) or regression (a numeric label, one
  // output, mse_loss), as `kiln train --task`.
  std::string task = "classification";
  // csv: missing values (empty, NA, NaN, ?, ...): error (names the line), drop (the row) or fill
  // (the training split's mean or mode), as `kiln train --missing` (data::MissingPolicy).
  std::string missing = "error";
  double test_fraction = 0.2, validation_fraction = 0.1;
  // name "text" (engine/data/text: a folder of class subfolders of .txt files, or a CSV/TSV/
  // JSON-lines file): the text column of a table or JSON key (the label column is `label`, "" =
  // "label"), the tokenizer fitted on the training split (word | char | sentencepiece), the tokens
  // per sample (longer texts truncated) and the most vocabulary entries; as `kiln train
  // --dataset text:...`'s --text-column, --tokenizer, --max-length and --vocab-size defaults.
  std::string text_column = "text";
  std::string tokenizer = "word";
  int64_t max_length = 256;
  int64_t vocab_size = 20000;

  // name "imagefolder" or "images": the model's input size (0 x 0: the most common size of the
  // training images, at most 224 on its shorter side: ImageConfig), the training augmentation (none | flip | standard = RandomResizedCrop +
  // flip + ColorJitter) and RandomRotation of up to `rotation` degrees; as `kiln train
  // --image-size HxW --augment A --rotation DEG` (app/cli/image_data.cpp) and their defaults.
  int64_t image_height = 0, image_width = 0;
  std::string augment = "none";
  double rotation = 0;

  bool is_fashion_mnist() const { return name == "fashion-mnist"; }
  bool is_regression() const { return task == "regression"; }
  // "imagefolder:PATH", "images:PATH", "csv:PATH" or "text:PATH" (engine/data/image_source.h,
  // table_source.h, dataset_source.h); "" for Fashion-MNIST.
  std::string spec() const { return is_fashion_mnist() ? std::string() : name + ":" + path; }
  // What data::open_dataset opens for another source than Fashion-MNIST: spec(), the CSV options,
  // the text columns and tokenizer, the image size and augmentation, the split fractions and
  // `seed` (the stratified split's and the augmentation draws'); the engine's default cache size.
  data::DatasetSource source(uint64_t seed) const;

  // ValueError naming the field: unknown name; for another source than Fashion-MNIST an empty
  // path, skip_rows < 0 or fractions outside [0, 0.9] (together at most 0.9); text: an unknown
  // tokenizer, max_length outside [1, 65536], vocab_size outside [3, 10000000]; a missing policy
  // other than error, drop or fill; a task other than
  // classification or regression, regression for another source than csv; images: an
  // image size outside [1, 8192] unless both are 0, an unknown augment, a rotation outside
  // [0, 180]; train_size < 1,
  // validation_size < 0, train_size + validation_size over the training images of the classes
  // (60000, 6000 a class), test_size outside [0, 10000], or a malformed classes spec.
  void validate() const;
  int64_t num_classes() const;              // k: 10 without a class filter (validate()'s errors)
  std::vector<int64_t> class_list() const;  // the kept classes ascending (all ten when `classes` is "")
  // {"dir":"...","name":"fashion-mnist","train_size":55000,"validation_size":5000} (sorted keys;
  // "classes", "test_size" and "test_seed" only when set, as projects before them wrote it; so
  // are an image source's "image_height", "image_width", "augment" and "rotation", and a
  // table's "task" when regression).
  std::string to_json() const;
  // "missing" only for a csv whose policy is not error.
  // Missing keys keep their defaults; ValueError "dataset settings: 'train_size' must be an
  // integer, got ..." for a wrong type, for text that is not a JSON object, or validate()'s.
  static DatasetSettings from_json(const std::string& json);
  // "" when the dataset's folder or file is there (Fashion-MNIST: not checked, its loader names
  // the files), else why not in plain words naming the path: "the image folder '/data/pets' is
  // gone (no such file or folder); ...". TrainingSession::start refuses such a run before it is
  // recorded.
  std::string unavailable() const;
  bool operator==(const DatasetSettings&) const = default;
};

}  // namespace kiln::studio
