// One entry point for a user's own dataset given as a spec, "imagefolder:DIR", "images:FILE.csv"
// (image_source.h) or "csv:FILE" (table_source.h): the three splits, the per-sample input shape
// a model needs, the class names and counts, and the files left out. Kiln Studio trains and
// previews through it; `kiln train` loads through the same image_source / table_source calls.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/data/dataset.h"
#include "engine/data/image_source.h"
#include "engine/data/table_source.h"

namespace kiln::data {

struct DatasetSource {
  std::string spec;               // imagefolder:DIR | images:FILE.csv | csv:FILE
  // csv: the label column (header name or 0-based index, negative from the end; "" = the last),
  // whether the first row (after skip_rows) is a header, lines skipped before it.
  std::string label;
  bool header = true;
  int64_t skip_rows = 0;
  // Stratified by class (images: unless the folder has train/ and test/ subfolders): the share of
  // the samples held out for testing, and the share of all samples taken out of the training
  // split for validation (by seed; none when 0; a val/ subfolder is used instead when present).
  double test_fraction = 0.2, validation_fraction = 0.1;
  uint64_t seed = 0;
  int workers = 2;          // image decoding threads
  int64_t cache_mb = 1024;  // decoded-image cache (image_source.h)
};

struct OpenedDataset {
  std::string kind;  // "imagefolder", "images" or "csv"
  std::string path;
  std::shared_ptr<const Dataset> train, validation, test;  // validation null when there is none
  // Per sample: images [channels, height, width] f32 (normalized), tables [features] f32 (standardized).
  std::vector<int64_t> sample_shape;
  std::vector<std::string> classes;
  std::vector<int64_t> class_counts;  // samples per class over train, validation and test
  std::vector<std::string> skipped;   // images: "PATH: REASON" of every file left out
  std::optional<ImageData> images;    // the image loading's results (run description, summary)
  std::optional<TabularData> table;   // the table's (schema, rows)
  std::optional<TableConfig> table_config;
  // "the image folder DIR: 3 classes, 27 images (1 skipped), 3 x 32 x 32" / "the table FILE: ...".
  std::string description() const;
};

// Opens the dataset of `source`. ValueError for a spec of another kind, a regression label (the
// Studio trains classifiers), a dataset with fewer than two classes, and image_source.h's and
// table_source.h's errors (IoError naming the file, line and column for bad data, a missing
// folder or file) unchanged.
OpenedDataset open_dataset(const DatasetSource& source);

// The number of samples of each class in `dataset` (i64 targets in [0, classes)), read in batches.
std::vector<int64_t> count_classes(const Dataset& dataset, int64_t classes);

}  // namespace kiln::data
