// One entry point for a user's own dataset given as a spec, "imagefolder:DIR", "images:FILE.csv"
// (image_source.h), "csv:FILE" (table_source.h) or "text:DIR|FILE" (text/text_dataset.h: a folder
// per class of .txt files, a CSV/TSV with a text and a label column, or JSON lines): the three
// splits, the per-sample input shape a model needs, the class names and counts, and the files left
// out. Kiln Studio trains and previews through it; `kiln train` loads through the same
// image_source / table_source / text_dataset calls.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/data/dataset.h"
#include "engine/data/image_source.h"
#include "engine/data/index_store.h"
#include "engine/data/table_source.h"
#include "engine/data/text/text_dataset.h"

namespace kiln::data {

struct DatasetSource {
  std::string spec;               // imagefolder:DIR | images:FILE.csv | csv:FILE | text:DIR|FILE
  // csv: the label column (header name or 0-based index, negative from the end; "" = the last),
  // whether the first row (after skip_rows) is a header, lines skipped before it.
  std::string label;
  std::string task = "classification";  // csv: classification | regression (`table`, when set, has its own)
  std::string missing = "error";        // csv: error | drop | fill (tabular.h MissingPolicy; `table` has its own)
  bool header = true;
  int64_t skip_rows = 0;
  // Stratified by class (images: unless the folder has train/ and test/ subfolders): the share of
  // the samples held out for testing, and the share of all samples taken out of the training
  // split for validation (by seed; none when 0; a val/ subfolder is used instead when present).
  double test_fraction = 0.2, validation_fraction = 0.1;
  // Whether validation_fraction is a share of the training split (kiln train --val-fraction)
  // rather than of all samples (the Studio's).
  bool validation_of_train = false;
  uint64_t seed = 0;
  // images: the input size (0 x 0: ImageConfig's automatic size), the training
  // augmentation (none | flip | standard) and RandomRotation of up to `rotation` degrees, as
  // `kiln train --image-size HxW --augment A --rotation DEG` (ImageConfig, image_source.h).
  int64_t image_height = 0, image_width = 0;
  std::string augment = "none";
  double rotation = 0;
  int workers = 2;          // image decoding threads
  int64_t cache_mb = 1024;  // decoded-image cache (image_source.h)
  // text: the columns (or JSON keys) of a table, whether identical texts are dropped before the
  // split (text_index.h), the tokenizer fitted on the training split, and the tokens per sample
  // (longer texts truncated, shorter padded; 256 as `kiln train --max-length`).
  TextReadOptions text_read;
  TokenizerOptions tokenizer;
  int64_t max_length = 256;
  // kiln train's full reading settings (size, channels, augmentation, normalization; column types,
  // missing values, task, ...): when set, they are used instead of the spec's defaults and the
  // fields above (test_fraction, seed, workers, label ...) for that kind of dataset.
  std::optional<ImageConfig> image;
  std::optional<TableConfig> table;
  // images: where the verified file index is kept between openings (Kiln Studio: the project;
  // null: none), and whether to scan again whatever it holds (image_source.h load_images).
  std::shared_ptr<IndexStore> index_store;
  bool rescan = false;
};

// A text dataset as opened: what the Studio previews (samples with their tokens, the length
// histogram) and what names a misclassified test text.
struct OpenedText {
  std::shared_ptr<const TextIndex> index;
  std::shared_ptr<const Tokenizer> tokenizer;        // fitted on `train` only
  std::shared_ptr<const TextDataset> train, test;    // train before the validation split
  int64_t max_length = 0;
};

struct OpenedDataset {
  std::string kind;  // "imagefolder", "images", "csv" or "text"
  std::string path;
  std::shared_ptr<const Dataset> train, validation, test;  // validation null when there is none
  // Per sample: images [channels, height, width] f32 (normalized), tables [features] f32
  // (standardized), text [max_length] i64 token ids (0 = padding).
  std::vector<int64_t> sample_shape;
  std::vector<std::string> classes;   // empty for regression
  std::vector<int64_t> class_counts;  // samples per class over train, validation and test
  bool regression = false;            // csv with task regression: f32 targets [1], one output
  std::vector<std::string> skipped;   // images: "PATH: REASON" of every file left out
  std::vector<std::string> notes;     // images: what the index store said (ImageData::notes); tables:
                                      // the CSV reader's (CsvTable::notes, e.g. a header of numbers)
  std::optional<ImageData> images;    // the image loading's results (run description, summary)
  std::optional<TabularData> table;   // the table's (schema, rows)
  std::optional<TableConfig> table_config;
  std::optional<OpenedText> text;     // a text dataset's index, tokenizer and splits
  // "the image folder DIR: 3 classes, 27 images (1 skipped), 3 x 32 x 32" / "the table FILE: ...".
  std::string description() const;
};

// Opens the dataset of `source`. ValueError for a spec of another kind, a task other than
// classification or regression (regression: csv only), a classification dataset with fewer than
// two classes, and image_source.h's,
// table_source.h's and text_index.h's errors (IoError naming the file, line and column for bad
// data, a missing folder or file) unchanged. Text: the tokenizer is fitted on the training split
// only (validation taken out of it afterwards); ValueError for max_length < 1.
OpenedDataset open_dataset(const DatasetSource& source);

// Whether `spec` is "text:DIR|FILE".
bool is_text_spec(const std::string& spec);
inline constexpr const char* kTextSpecPrefix = "text:";

// The training and validation splits: round(fraction * of) samples taken out of `train` by seed
// (random_split; at least 1 when fraction > 0, and at most all but one), the rest stays training.
// `of`: the count the fraction is a share of (all samples, or train->size()). validation is null
// when fraction <= 0 or `train` has fewer than two samples. Shared by open_dataset and kiln
// train's Fashion-MNIST.
struct TrainValidation {
  std::shared_ptr<const Dataset> train, validation;
};
TrainValidation split_validation(std::shared_ptr<const Dataset> train, double fraction, int64_t of, uint64_t seed);

// The number of samples of each class in `dataset` (i64 targets in [0, classes)): class_balance.h's
// sample_labels (an image index, else the targets read in batches) counted.
std::vector<int64_t> count_classes(const Dataset& dataset, int64_t classes);

}  // namespace kiln::data
